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
use twice_world::checker::Outcome;
use twice_world::counterfactual::{Answer, CustomerMoney, Role, RunResult};
use twice_world::debrief::{self, Debrief, Decider, LinePart, RuleSource, Tone};
use twice_world::ledger::LedgerStore;
use twice_world::level::{Level, Play, TimedAction, WireRule};
use twice_world::prediction;
use twice_world::runtime::guards::{Guard, Guards};
use twice_world::simulator::{Simulation, SimulationBuilder};
use twice_world::text::dollars;

fn campaign() -> Campaign {
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../levels");
    Campaign::load(&folder).unwrap_or_else(|problems| {
        panic!(
            "the campaign does not load:\n{}",
            problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
        )
    })
}

/// What a run came to, made here: whether the goal was reached, and each customer's money.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Came {
    goal: bool,
    money: Vec<CustomerMoney>,
}

/// The same level, seed and moves with `guards`, from scratch: what it came to, or `None` when
/// a move did not play.
fn rerun(level: &Level, seed: u64, rule: WireRule, guards: Guards, moves: &[TimedAction]) -> Option<Came> {
    let mut simulation = SimulationBuilder::new(level.clone(), seed)
        .guards(guards)
        .actions(moves.to_vec())
        .wire_rule(rule)
        .ledger_store(LedgerStore::Memory)
        .build()
        .expect("the run builds");
    simulation.run().expect("the run simulates");
    (simulation.played().len() == moves.len()).then(|| came_of(&simulation))
}

fn came_of(simulation: &Simulation) -> Came {
    let verdict = simulation.verdict().expect("the run is judged");
    Came {
        goal: verdict.goal_reached,
        money: RunResult::of(&verdict, simulation.phase()).customers(),
    }
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
    // The explorer's shortcut says what the verdict says, on every run this file makes.
    assert_eq!(
        simulation.goal_reached().expect("the ledger reads"),
        verdict.goal_reached,
        "{what}: goal_reached() and the verdict disagree"
    );
    let told = debrief::of(simulation, &verdict);
    let counterfactual = told
        .counterfactual
        .as_ref()
        .unwrap_or_else(|| panic!("{what}: no counterfactual"));
    assert!(
        counterfactual.reproduced,
        "{what}: the same moves did not give the run again"
    );
    // What decided, told on a win and on a loss, never says one clause twice (a loss's
    // "no guard was shown to stop you: no guard was shown to decide; …" did).
    for won in [false, true] {
        let said = told.decided_by.told(won);
        let words: Vec<&str> = said.split_whitespace().collect();
        let windows: Vec<&[&str]> = words.windows(4).collect();
        for (index, window) in windows.iter().enumerate() {
            assert!(
                !windows[index + 1..].contains(window),
                "{what}: \"{}\" said twice in \"{said}\"",
                window.join(" ")
            );
        }
    }
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
    // This run, made here; and every guard whose switch alone changes the goal or the money,
    // with what its run came to.
    let this = came_of(simulation);
    let mut money_or_goal: std::collections::BTreeMap<Guard, Came> = std::collections::BTreeMap::new();
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
        let came = rerun(
            &level,
            simulation.seed(),
            simulation.wire_rule(),
            alternative.guards,
            &alternative.moves,
        );
        if let (Some(came), Role::Decided | Role::NoDifference) = (&came, finding.role)
            && (came.money != this.money || came.goal != this.goal)
        {
            money_or_goal.insert(finding.guard, came.clone());
        }
        let again = came.map(|came| came.goal);
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
        let again = rerun(
            &level,
            simulation.seed(),
            simulation.wire_rule(),
            alternative.guards,
            &alternative.moves,
        )
        .map(|came| came.goal);
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
    check_money(what, simulation, &told, &this, &money_or_goal, &decided);
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
        RuleSource::Lesson => {
            assert!(
                verdict.goal_reached,
                "{what}: the lesson's rule for a heist that failed"
            );
            let Decider::Guards { deciding, .. } = &told.decided_by else {
                panic!("{what}: the lesson's rule, but no guard decided")
            };
            assert!(
                deciding
                    .iter()
                    .all(|found| found.was_on && !level.lesson.guards.contains(&found.guard)),
                "{what}: a guard that was off, or the lesson's own, decided: its rule is the one to quote"
            );
        }
        RuleSource::Decider | RuleSource::Level => {
            assert!(
                decided.is_empty(),
                "{what}: a guard decided, but the rule line is not its own"
            )
        }
        RuleSource::LevelUnsaid => {
            assert!(
                decided.is_empty(),
                "{what}: a guard decided, but the rule line says none was shown to"
            );
            assert!(
                !counterfactual.cannot_say().is_empty(),
                "{what}: the rule line says switching a guard cannot say, but every re-run says"
            );
        }
    }
    // "Nothing this run shows turned the heist: no guard's switch …" is said only when every
    // guard's re-run says (22's contract check, off in a won run, cannot: it was dropped).
    if matches!(told.decided_by, Decider::Unexplained) {
        assert!(
            counterfactual.cannot_say().is_empty(),
            "{what}: told nothing turned the heist, but switching {:?} cannot say",
            counterfactual.cannot_say()
        );
    }
    // Every guard whose re-run cannot say has a line of its own, on or off.
    for guard in counterfactual.cannot_say() {
        assert!(
            told.guard_lines.iter().any(|line| line.guards.contains(&guard)),
            "{what}: {guard}'s re-run cannot say, and no line of the debrief names it"
        );
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
    let actions_count = actions.len();
    let mut simulation = SimulationBuilder::new(level.clone(), campaign_sweep::SWEEP_SEED)
        .actions(actions)
        .ledger_store(LedgerStore::Memory)
        .build()
        .expect("the level builds");
    simulation.run().expect("the moves simulate");
    assert_eq!(
        simulation.played().len(),
        actions_count,
        "{what}: the sweep played these moves, but not every one plays here"
    );
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
        for swept in campaign_sweep::single_moves(level).expect("the level sweeps") {
            let what = format!("{} {:?} before phase {}", level.id, swept.play, swept.at_phase);
            let actions = vec![TimedAction {
                at_phase: swept.at_phase,
                play: swept.play,
                fizzles: false,
            }];
            check_sweep_moves(level, actions, &what, swept.wins, (&mut wins, &mut losses));
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

/// The money half of a debrief against the runs made here (`this`; `changers`: every guard whose
/// switch alone changes the goal or some customer's money, with what its run came to;
/// `decided`: the guards that decided the heist, alone or in a pair).
fn check_money(
    what: &str,
    simulation: &Simulation,
    told: &Debrief,
    this: &Came,
    changers: &std::collections::BTreeMap<Guard, Came>,
    decided: &BTreeSet<Guard>,
) {
    let level = simulation.level();
    let lines = &told.guard_lines;
    // Not needed: no switch that changes the heist or anyone's money.
    for guard in &told.not_needed {
        assert!(
            !changers.contains_key(guard),
            "{what}: {guard} is listed as not needed, but switched alone it changes the goal or the money: {:?} against {:?}",
            changers[guard],
            this
        );
    }
    let not_needed: Vec<_> = lines.iter().filter(|line| line.part == LinePart::NotNeeded).collect();
    match not_needed.as_slice() {
        [] => assert!(told.not_needed.is_empty(), "{what}: not needed, but no line says so"),
        [line] => assert_eq!(line.guards, told.not_needed, "{what}"),
        more => panic!("{what}: {} not-needed lines", more.len()),
    }
    // Every guard that was on is told by some line — deciding, changing the money, held or
    // unsaid where its run cannot say, or not needed: a guard whose note the timeline shows
    // (06: "the ledger held started for key r1:c1") never vanishes from the debrief.
    let on = simulation.guards();
    for guard in Guard::ALL.into_iter().filter(|guard| on.is_on(*guard)) {
        assert!(
            lines.iter().any(|line| line.guards.contains(&guard)),
            "{what}: {guard} was on, and no line of the debrief tells it: {:#?}",
            lines.iter().map(|line| &line.sentence).collect::<Vec<_>>()
        );
    }
    // Every guard whose switch changes something has its line, saying which it changes, and
    // naming each customer whose money changes with what that run pays them.
    for (guard, came) in changers {
        let part = if came.goal != this.goal {
            LinePart::DecidedTheHeist
        } else {
            LinePart::ProtectedTheMoney
        };
        let line = lines
            .iter()
            .find(|line| line.part == part && line.guards == [*guard])
            .unwrap_or_else(|| {
                panic!("{what}: switching {guard} changes {came:?} against {this:?}, but no {part:?} line says so")
            });
        let changed: Vec<&CustomerMoney> = came
            .money
            .iter()
            .filter(|customer| !this.money.contains(customer))
            .collect();
        let named = if changed.is_empty() {
            came.money.iter().collect()
        } else {
            changed
        };
        for customer in named {
            let name = level.world.owner_of(&customer.account);
            if moneyless(customer) {
                // An email, owner change or delete: the line names the customer and what came of it.
                for outcome in &customer.outcomes {
                    assert!(
                        line.sentence.contains(&name) && line.sentence.contains(outcome.words()),
                        "{what}: {guard}'s line does not say {name}'s effect came to {}: {}",
                        outcome.words(),
                        line.sentence
                    );
                }
                continue;
            }
            let net = dollars(customer.net_cents);
            assert!(
                line.sentence.contains(&name) && line.sentence.contains(&net),
                "{what}: {guard}'s line does not say {name} holds {net} in its run: {}",
                line.sentence
            );
        }
    }
    for line in lines {
        match line.part {
            LinePart::DecidedTheHeist | LinePart::ProtectedTheMoney => {
                let [guard] = line.guards[..] else {
                    panic!("{what}: a single guard's line names {:?}", line.guards)
                };
                let came = changers.get(&guard).unwrap_or_else(|| {
                    panic!(
                        "{what}: {guard}'s line says it changes something, but switched here it changes nothing: {}",
                        line.sentence
                    )
                });
                assert_eq!(
                    came.goal != this.goal,
                    line.part == LinePart::DecidedTheHeist,
                    "{what}: {}",
                    line.sentence
                );
                // A guard that was on and whose absence pays some customer right where this run
                // does not (and nobody wrong who is right here) cost them: never told as if it
                // protected the money ("— but without it …"), never drawn holding.
                if line.part == LinePart::ProtectedTheMoney && line.was_on {
                    let right = |customer: &CustomerMoney| {
                        customer.net_cents == customer.owed_cents
                            && customer.outcomes.iter().all(|outcome| *outcome == Outcome::PaidOnce)
                    };
                    let standing = |all: &[CustomerMoney], account: &str| {
                        all.iter().find(|customer| customer.account == account).map(right)
                    };
                    let helped = came
                        .money
                        .iter()
                        .any(|customer| right(customer) && standing(&this.money, &customer.account) == Some(false));
                    let hurt = this
                        .money
                        .iter()
                        .any(|customer| right(customer) && standing(&came.money, &customer.account) == Some(false));
                    if helped && !hurt {
                        assert!(
                            !line.sentence.contains(" — but ") && !line.holding,
                            "{what}: {guard} cost a customer here, but its line reads as protection: {}",
                            line.sentence
                        );
                    }
                }
            }
            LinePart::DecidedTogether => assert!(
                line.guards.iter().all(|guard| decided.contains(guard)),
                "{what}: {}",
                line.sentence
            ),
            LinePart::HeldCannotSay | LinePart::NotNeeded => {}
            // Told as "cannot be said" only where its run truly cannot say, and never drawn
            // as holding (it left no note in this run); on or off (22's contract check, off,
            // is what its lesson is about).
            LinePart::CannotSay => {
                let cannot_say = told
                    .counterfactual
                    .as_ref()
                    .map(|counterfactual| counterfactual.cannot_say())
                    .unwrap_or_default();
                assert!(
                    !line.holding && line.guards.iter().all(|guard| cannot_say.contains(guard)),
                    "{what}: {line:?}"
                );
            }
        }
        // A guard that was on is never named as what the other run lacked ("without no reflex
        // compensation"): the other run is told by what the runtime does without it.
        for guard in Guard::ALL {
            let named = format!("without {}", twice_world::guards::words(guard));
            assert!(
                !line.sentence.to_lowercase().contains(&named),
                "{what}: {}",
                line.sentence
            );
        }
        if line.holding {
            assert!(line.was_on && line.part != LinePart::NotNeeded, "{what}: {line:?}");
            assert!(
                this.money.iter().all(|customer| !customer
                    .outcomes
                    .iter()
                    .any(|outcome| matches!(outcome, Outcome::PaidTwice | Outcome::NotPaidButOwed))),
                "{what}: a customer is owed or paid twice, but {:?} is drawn holding",
                line.guards
            );
        }
    }
    let told_sentences: Vec<&String> = std::iter::once(&told.headline)
        .chain(&told.diagnosis)
        .chain(lines.iter().map(|line| &line.sentence))
        .chain(told.what_if.iter().map(|what_if| &what_if.sentence))
        .collect();
    // A customer left owed: no guard is told as holding, in any sentence.
    let owed = this
        .money
        .iter()
        .any(|customer| customer.outcomes.contains(&Outcome::NotPaidButOwed));
    // "None decided" only when no switch changes the money; an unknown is never worded as good.
    for sentence in &told_sentences {
        for guard in Guard::ALL {
            let words = twice_world::guards::words(guard);
            let mut capital = words.chars();
            let capitalised: String = capital
                .next()
                .into_iter()
                .flat_map(char::to_uppercase)
                .chain(capital)
                .collect();
            assert!(
                !owed
                    || !(sentence.contains(&format!("{words} held"))
                        || sentence.contains(&format!("{capitalised} held"))),
                "{what}: a customer is left owed, but {guard} is told as holding: {sentence}"
            );
        }
        assert!(
            changers.is_empty() || !sentence.contains("none decided"),
            "{what}: a switch changes the money, but: {sentence}"
        );
        assert!(!sentence.contains("honestly"), "{what}: {sentence}");
    }
    // Sums and names: every "$X of $Y" is one customer's, named just before it, in this run or
    // in a run the debrief offers.
    let mut runs: Vec<Vec<CustomerMoney>> = vec![this.money.clone()];
    runs.extend(changers.values().map(|came| came.money.clone()));
    if let Some(counterfactual) = &told.counterfactual {
        runs.extend(
            told.what_if
                .iter()
                .filter_map(|what_if| counterfactual.alternatives[what_if.alternative].result())
                .map(RunResult::customers),
        );
    }
    let names: Vec<String> = level
        .world
        .accounts
        .iter()
        .map(|account| account.owner.clone())
        .collect();
    for sentence in &told_sentences {
        for (name, net, owed) in amounts_in(sentence, &names) {
            let name = name
                .unwrap_or_else(|| panic!("{what}: an amount ({net} of {owed}) with no customer named: {sentence}"));
            assert!(
                runs.iter()
                    .flatten()
                    .any(|customer| level.world.owner_of(&customer.account) == name
                        && dollars(customer.net_cents) == net
                        && dollars(customer.owed_cents) == owed),
                "{what}: {name} never holds {net} of {owed} owed in this run or one offered: {sentence}"
            );
        }
    }
    // The money sentence names every customer of this run with what they hold (or, for an
    // email, owner change or delete, what they got).
    for customer in &this.money {
        if moneyless(customer) {
            let name = level.world.owner_of(&customer.account);
            assert!(
                told.diagnosis
                    .first()
                    .is_some_and(|sentence| sentence.starts_with(&name)),
                "{what}: the first sentence does not say what {name} got: {:?}",
                told.diagnosis.first()
            );
            continue;
        }
        let expected = format!(
            "{} {} of {}",
            level.world.owner_of(&customer.account),
            dollars(customer.net_cents),
            dollars(customer.owed_cents)
        );
        assert!(
            told.diagnosis
                .first()
                .is_some_and(|sentence| sentence.contains(&expected)),
            "{what}: the money sentence does not say {expected}: {:?}",
            told.diagnosis.first()
        );
    }
}

/// A customer no money is owed to or moved for, judged only by emails, owner changes or deletes.
fn moneyless(customer: &CustomerMoney) -> bool {
    customer.owed_cents == 0
        && customer.net_cents == 0
        && !customer.outcomes.iter().any(|outcome| {
            matches!(
                outcome,
                Outcome::PaidTwice | Outcome::PaidOnce | Outcome::NotPaidButOwed
            )
        })
}

/// Every "$X of $Y" in `sentence`, with the last customer named before it (among `names`).
fn amounts_in(sentence: &str, names: &[String]) -> Vec<(Option<String>, String, String)> {
    let amount_at = |text: &str| -> Option<String> {
        let body: String = text
            .chars()
            .skip(1)
            .take_while(|character| character.is_ascii_digit() || *character == '.')
            .collect();
        // "$25.00." at a sentence's end: the amount is its two decimals, not the full stop.
        let dot = body.find('.')?;
        Some(format!("${}", &body[..(dot + 3).min(body.len())]))
    };
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = sentence[from..].find(" of $") {
        let at = from + at;
        from = at + 5;
        let Some(start) = sentence[..at].rfind('$') else {
            continue;
        };
        if sentence[start..at].contains(' ') {
            continue;
        }
        let (Some(net), Some(owed)) = (amount_at(&sentence[start..]), amount_at(&sentence[at + 4..])) else {
            continue;
        };
        let name = names
            .iter()
            .filter_map(|name| sentence[..start].rfind(name.as_str()).map(|position| (position, name)))
            .max()
            .map(|(_, name)| name.clone());
        found.push((name, net, owed));
    }
    found
}
