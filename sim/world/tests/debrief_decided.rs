//! The debrief's "decided by" against the runs themselves: for every shipped tape, for the
//! winning and losing single moves the campaign sweep plays in each beatable level, and for
//! the pairs of moves it plays where no single move wins, the guards the debrief names are
//! exactly those whose switch — simulated here again, from scratch, with the moves where the
//! other run played them — reaches the other verdict, every guard it does not name reaches the
//! same one (or its run cannot say: a move never met what it hit here, or an operator's
//! decision is refused in one run only), and the rule line is the deciding guard's own.
//!
//! Nothing is sampled: every single move the sweep plays (370 today: 49 winning, 321 losing)
//! and every pair of moves at each moment the sweep finds a winning pair (126 today in five
//! levels: 92 winning, 34 losing), each with up to 67 runs again; the file's three tests run
//! in about 20 s (the workspace's test profile, two cores shared).

use std::collections::BTreeSet;
use std::path::PathBuf;
use twice_world::cards::{LoseRequest, LoseResponse, OperatorCompensate, OperatorResolve, SlowResponse};

use twice_world::campaign::Campaign;
use twice_world::campaign_sweep;
use twice_world::counterfactual::{Answer, Role};
use twice_world::debrief::{self, Debrief, Decider, RuleSource, Tone};
use twice_world::ledger::LedgerStore;
use twice_world::level::{CardKind, Level, Play, TimedAction, WireRule};
use twice_world::prediction;
use twice_world::runtime::guards::Guards;
use twice_world::simulator::{Simulation, SimulationBuilder};

fn campaign() -> Campaign {
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../levels");
    Campaign::load(&folder).unwrap_or_else(|problems| {
        panic!(
            "the campaign does not load:\n{}",
            problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
        )
    })
}

/// The same level, seed and moves with `guards`, from scratch: the goal reached, or `None` when
/// a move did not play.
fn goal_reached_with(level: &Level, seed: u64, rule: WireRule, guards: Guards, moves: &[TimedAction]) -> Option<bool> {
    let mut simulation = SimulationBuilder::new(level.clone(), seed)
        .guards(guards)
        .actions(moves.to_vec())
        .wire_rule(rule)
        .ledger_store(LedgerStore::Memory)
        .build()
        .expect("the run builds");
    simulation.run().expect("the run simulates");
    (simulation.played().len() == moves.len()).then(|| simulation.verdict().expect("the run is judged").goal_reached)
}

/// The operators' refused decisions (409s) in a run with `guards` and `moves`, from scratch.
fn refused_count(level: &Level, seed: u64, rule: WireRule, guards: Guards, moves: &[TimedAction]) -> usize {
    let mut simulation = SimulationBuilder::new(level.clone(), seed)
        .guards(guards)
        .actions(moves.to_vec())
        .wire_rule(rule)
        .ledger_store(LedgerStore::Memory)
        .build()
        .expect("the run builds");
    simulation.run().expect("the run simulates");
    simulation
        .timeline()
        .iter()
        .filter(|entry| entry.text.starts_with("409"))
        .count()
}

/// An operator's decision is refused in one run and not in the other.
fn refused_decisions(level: &Level, simulation: &Simulation, guards: Guards, moves: &[TimedAction]) -> bool {
    let seed = simulation.seed();
    let rule = simulation.wire_rule();
    refused_count(level, seed, rule, simulation.guards(), simulation.played())
        != refused_count(level, seed, rule, guards, moves)
}

/// A move with the key it names removed: what is left must be the move as made.
fn without_key(play: &Play) -> Play {
    match play {
        Play::LoseRequest(LoseRequest { .. }) => Play::LoseRequest(LoseRequest { key: None }),
        Play::LoseResponse(LoseResponse { .. }) => Play::LoseResponse(LoseResponse { key: None }),
        Play::SlowResponse(SlowResponse { .. }) => Play::SlowResponse(SlowResponse { key: None }),
        Play::OperatorResolve(OperatorResolve {
            status,
            reason,
            operator,
            expected_status,
            ..
        }) => Play::OperatorResolve(OperatorResolve {
            key: String::new(),
            status: *status,
            reason: reason.clone(),
            operator: operator.clone(),
            expected_status: *expected_status,
        }),
        Play::OperatorCompensate(OperatorCompensate { reason, operator, .. }) => {
            Play::OperatorCompensate(OperatorCompensate {
                key: String::new(),
                reason: reason.clone(),
                operator: operator.clone(),
            })
        }
        other => other.clone(),
    }
}

/// Checks one finished run's debrief against runs made here; `what` names it in failures.
fn check_run(what: &str, simulation: &Simulation) -> Debrief {
    let verdict = simulation.verdict().expect("a verdict");
    let told = debrief::of(simulation, &verdict);
    let counterfactual = told
        .counterfactual
        .as_ref()
        .unwrap_or_else(|| panic!("{what}: no counterfactual"));
    assert!(
        counterfactual.reproduced,
        "{what}: the same moves did not give the run again"
    );
    let level = simulation.authored_level();
    // Predict offers this run's answer: a guard that decided it, or "no guard" when none did.
    let offered = prediction::choices(&level, simulation.guards());
    let deciding = told.deciding_guards();
    assert!(
        deciding.is_empty()
            || deciding.iter().any(|guard| offered
                .iter()
                .any(|choice| choice.pick == prediction::Pick::Guard(*guard))),
        "{what}: decided by {deciding:?}, and Predict offers none of them: {:?}",
        offered.iter().map(|choice| choice.value).collect::<Vec<_>>()
    );
    assert!(offered.iter().any(|choice| choice.pick == prediction::Pick::NoGuard));
    let mut decided = BTreeSet::new();
    for finding in &counterfactual.guards {
        let alternative = &counterfactual.alternatives[finding.alternative];
        assert_eq!(
            alternative.guards,
            simulation.guards().with(finding.guard, !finding.was_on),
            "{what}"
        );
        // The same moves, each where it met what it hit in this run (its phase may differ).
        let same_moves: Vec<Play> = alternative
            .moves
            .iter()
            .map(|action| without_key(&action.play))
            .collect();
        let played: Vec<Play> = simulation
            .played()
            .iter()
            .map(|action| without_key(&action.play))
            .collect();
        if alternative.result().is_some() {
            assert_eq!(same_moves, played, "{what}: the other run plays other moves");
        } else {
            assert!(
                played.starts_with(&same_moves),
                "{what}: the other run plays other moves"
            );
        }
        let again = goal_reached_with(
            &level,
            simulation.seed(),
            simulation.wire_rule(),
            alternative.guards,
            &alternative.moves,
        );
        match (finding.role, again) {
            (Role::Decided, Some(reached)) => {
                assert_ne!(
                    reached, verdict.goal_reached,
                    "{what}: {} named, but changes nothing",
                    finding.guard
                );
                decided.insert(finding.guard);
            }
            (Role::NoDifference, Some(reached)) => assert_eq!(
                reached, verdict.goal_reached,
                "{what}: {} changes the verdict, but the debrief does not name it",
                finding.guard
            ),
            (Role::CannotSay, None) => assert!(matches!(alternative.answer, Answer::CannotSay { .. })),
            // A move never met what it hit here (it is left out), or an operator's decision is
            // refused in one run and not the other: seen here too.
            (Role::CannotSay, Some(_)) => assert!(
                alternative.moves.len() < simulation.played().len()
                    || refused_decisions(&level, simulation, alternative.guards, &alternative.moves),
                "{what}: {} cannot say, but every move plays and meets the same decisions here",
                finding.guard
            ),
            (role, again) => panic!("{what}: {} is {role:?}, but run again here: {again:?}", finding.guard),
        }
    }
    for pair in &counterfactual.pairs {
        let alternative = &counterfactual.alternatives[pair.alternative];
        let again = goal_reached_with(
            &level,
            simulation.seed(),
            simulation.wire_rule(),
            alternative.guards,
            &alternative.moves,
        );
        assert_eq!(
            again,
            Some(!verdict.goal_reached),
            "{what}: the pair {:?} does not decide",
            pair.guards
        );
        decided.extend(pair.guards);
    }
    assert_eq!(
        told.deciding_guards().into_iter().collect::<BTreeSet<_>>(),
        decided,
        "{what}: the debrief's decided-by is not the counterfactual's"
    );
    match told.rule_from {
        RuleSource::Guard { guard } => {
            assert!(
                decided.contains(&guard),
                "{what}: the rule is {guard}'s, which did not decide"
            );
            assert_eq!(told.rule, twice_world::guards::rule(guard), "{what}");
        }
        RuleSource::HeldGuard { guard } => {
            assert!(
                decided.is_empty(),
                "{what}: a guard decided, but the rule line is {guard}'s"
            );
            assert_eq!(
                counterfactual.finding(guard).map(|finding| finding.role),
                Some(Role::CannotSay),
                "{what}"
            );
            assert!(
                simulation.guard_notes().iter().any(|note| note.guard == guard),
                "{what}: {guard} never held"
            );
            assert_eq!(told.rule, twice_world::guards::rule(guard), "{what}");
        }
        RuleSource::Decider | RuleSource::Level => {
            assert!(
                decided.is_empty(),
                "{what}: a guard decided, but the rule line is not its own"
            )
        }
    }
    if !verdict.goal_reached {
        assert!(
            told.story.is_empty() || told.tone == Tone::Held,
            "{what}: a loss tells a story"
        );
    }
    if told.tone == Tone::Owed {
        assert!(
            !told.headline.contains(" held"),
            "{what}: owed money headlined as held: {}",
            told.headline
        );
    }
    if decided.is_empty() && !verdict.goal_reached {
        assert!(
            !matches!(told.decided_by, Decider::Guards { .. }),
            "{what}: no guard decided, but the debrief says one did"
        );
        let held: Vec<_> = match &told.decided_by {
            Decider::Held { guards } => guards.clone(),
            _ => Vec::new(),
        };
        for guard in twice_world::runtime::guards::Guard::ALL
            .into_iter()
            .filter(|guard| !held.contains(guard))
        {
            let words = twice_world::guards::words(guard);
            assert!(
                !told.headline.contains(&format!("{words} held")),
                "{what}: {} is headlined as holding, but did not decide: {}",
                guard,
                told.headline
            );
        }
    }
    told
}

#[test]
fn every_shipped_tape_is_debriefed_by_the_guards_that_decided_it() {
    let campaign = campaign();
    let mut named = 0;
    for loaded in &campaign.tapes {
        let tape = &loaded.tape;
        let mut builder = SimulationBuilder::new(loaded.level.level.clone(), tape.seed)
            .actions(tape.actions.clone())
            .wire_rule(tape.wire_rule())
            .ledger_store(LedgerStore::Memory);
        if let Some(guards) = tape.guards {
            builder = builder.guards(guards);
        }
        let mut simulation = builder.build().expect("the tape builds");
        simulation.run().expect("the tape simulates");
        let told = check_run(&loaded.path.display().to_string(), &simulation);
        named += usize::from(!told.deciding_guards().is_empty());
    }
    assert!(campaign.tapes.len() >= 90, "the campaign ships its tapes");
    // Most tapes turn on a guard: if none were named, the counterfactual would be asleep.
    assert!(
        named * 2 > campaign.tapes.len(),
        "only {named} tapes named a deciding guard"
    );
}

/// Every single move the sweep plays in `level`, as (phase, move), with whether it wins.
fn single_moves(level: &Level) -> Vec<(u32, Play, bool)> {
    let quiet = {
        let mut simulation = SimulationBuilder::new(level.clone(), campaign_sweep::SWEEP_SEED)
            .ledger_store(LedgerStore::Memory)
            .build()
            .expect("the level builds");
        simulation.run().expect("the level simulates")
    };
    let mut moves = Vec::new();
    let cards: BTreeSet<CardKind> = level.cards.iter().map(|allowance| allowance.card).collect();
    for card in cards {
        for phase in 0..=quiet {
            let mut probe = SimulationBuilder::new(level.clone(), campaign_sweep::SWEEP_SEED)
                .ledger_store(LedgerStore::Memory)
                .build()
                .expect("the level builds");
            probe
                .run_until(|simulation| simulation.phase() >= phase)
                .expect("the level simulates");
            if probe.phase() != phase {
                continue;
            }
            for play in campaign_sweep::candidate_plays(card, &probe).expect("the candidates") {
                let mut simulation = SimulationBuilder::new(level.clone(), campaign_sweep::SWEEP_SEED)
                    .actions(vec![TimedAction {
                        at_phase: phase,
                        play: play.clone(),
                        fizzles: false,
                    }])
                    .ledger_store(LedgerStore::Memory)
                    .build()
                    .expect("the level builds");
                simulation.run().expect("the move simulates");
                if simulation.played().len() != 1 {
                    continue;
                }
                let wins = simulation.verdict().expect("a verdict").goal_reached;
                moves.push((phase, play, wins));
            }
        }
    }
    moves
}

/// Plays `actions` on `level` from the sweep's seed, checks its debrief (`what` names the
/// moves), asserts it wins exactly when the sweep says it does, and counts it in `tally`
/// (wins, losses). The singles and the pairs are checked the same way.
fn check_sweep_moves(
    level: &Level,
    actions: Vec<TimedAction>,
    what: &str,
    wins_here: bool,
    (wins, losses): (&mut usize, &mut usize),
) {
    let mut simulation = SimulationBuilder::new(level.clone(), campaign_sweep::SWEEP_SEED)
        .actions(actions)
        .ledger_store(LedgerStore::Memory)
        .build()
        .expect("the level builds");
    simulation.run().expect("the moves simulate");
    let told = check_run(what, &simulation);
    assert_eq!(told.tone == Tone::Win, wins_here, "{what}");
    if wins_here {
        *wins += 1;
    } else {
        *losses += 1;
    }
}

#[test]
fn every_winning_and_losing_sweep_move_is_debriefed_by_the_guards_that_decided_it() {
    let campaign = campaign();
    let (mut wins, mut losses) = (0, 0);
    for loaded in campaign.levels.iter().filter(|loaded| !loaded.level.unbeatable) {
        let level = &loaded.level;
        for (phase, play, wins_here) in single_moves(level) {
            let what = format!("{} {play:?} before phase {phase}", level.id);
            let actions = vec![TimedAction {
                at_phase: phase,
                play,
                fizzles: false,
            }];
            check_sweep_moves(level, actions, &what, wins_here, (&mut wins, &mut losses));
        }
    }
    println!("checked {wins} winning and {losses} losing single moves");
    assert!(
        wins > 0 && losses > 0,
        "the sweep found {wins} winning and {losses} losing moves"
    );
}

/// The level's pairs of moves where no single move wins it: for every pair of cards and moment
/// at which the campaign sweep finds a pair that wins, every pair of moves the game offers
/// there (each card on each of its targets), with whether it wins. Empty for a level a single
/// move wins (the sweep looks at pairs only there).
fn pair_moves(level: &Level) -> Vec<(Vec<TimedAction>, bool)> {
    let sweep = campaign_sweep::sweep_level(level).expect("the level sweeps");
    if sweep.cards_per_move != 2 {
        return Vec::new();
    }
    let build = |actions: Vec<TimedAction>| {
        SimulationBuilder::new(level.clone(), campaign_sweep::SWEEP_SEED)
            .actions(actions)
            .ledger_store(LedgerStore::Memory)
            .build()
            .expect("the level builds")
    };
    let mut moves = Vec::new();
    for pair in sweep.moves.iter().filter(|pair| pair.wins()) {
        let (first, second) = (pair.cards[0], pair.cards[1]);
        for (first_phase, second_phase) in &pair.winning {
            let second_phase = second_phase.expect("a pair's moment has two phases");
            let mut probe = build(Vec::new());
            probe
                .run_until(|simulation| simulation.phase() >= *first_phase)
                .expect("the level simulates");
            if probe.phase() != *first_phase {
                continue;
            }
            for first_play in campaign_sweep::candidate_plays(first, &probe).expect("the candidates") {
                let first_move = TimedAction {
                    at_phase: *first_phase,
                    play: first_play,
                    fizzles: false,
                };
                let mut after = build(vec![first_move.clone()]);
                after
                    .run_until(|simulation| simulation.phase() >= second_phase)
                    .expect("the move simulates");
                if after.phase() != second_phase || after.played().len() != 1 {
                    continue;
                }
                for second_play in campaign_sweep::candidate_plays(second, &after).expect("the candidates") {
                    let actions = vec![
                        first_move.clone(),
                        TimedAction {
                            at_phase: second_phase,
                            play: second_play,
                            fizzles: false,
                        },
                    ];
                    let mut simulation = build(actions.clone());
                    simulation.run().expect("the moves simulate");
                    if simulation.played().len() != 2 || moves.iter().any(|(known, _)| *known == actions) {
                        continue;
                    }
                    let wins = simulation.verdict().expect("a verdict").goal_reached;
                    moves.push((actions, wins));
                }
            }
        }
    }
    moves
}

#[test]
#[expect(
    clippy::disallowed_methods,
    reason = "the test reports how long it took; no simulation sees the clock"
)]
fn every_pair_of_sweep_moves_that_wins_where_no_single_move_does_is_debriefed_by_the_guards_that_decided_it() {
    let started = std::time::Instant::now();
    let campaign = campaign();
    let (mut levels, mut wins, mut losses) = (Vec::new(), 0, 0);
    for loaded in campaign.levels.iter().filter(|loaded| !loaded.level.unbeatable) {
        let level = &loaded.level;
        let moves = pair_moves(level);
        if moves.is_empty() {
            continue;
        }
        levels.push(level.id.clone());
        for (actions, wins_here) in moves {
            let what = format!("{} {actions:?}", level.id);
            check_sweep_moves(level, actions, &what, wins_here, (&mut wins, &mut losses));
        }
    }
    println!(
        "checked {wins} winning and {losses} losing pairs of moves in {} ({:.1} s)",
        levels.join(", "),
        started.elapsed().as_secs_f64()
    );
    assert!(wins > 0, "the sweep found winning pairs in {levels:?}");
}
