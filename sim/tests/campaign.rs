//! The campaign in `levels/`: every file loads and checks clean, every tape replays to the
//! verdict it expects, the level select is consistent, every level ships the tapes it owes,
//! and every guard is shown to matter — switched off in the vault, or in its own lesson.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use std::sync::atomic::AtomicBool;

use twice_sim::campaign::{self, Campaign};
use twice_sim::checker::Outcome;
use twice_sim::debrief::Standing;
use twice_sim::defend;
use twice_sim::ledger::LedgerStore;
use twice_sim::level::{self, LoadedLevel, LoadedTape, TAPE_VERSION};
use twice_sim::replay::{replay_tape, simulation_of};
use twice_sim::runtime::guards::{Guard, Guards};
use twice_sim::simulator::SimulationBuilder;

/// The id of the level that closes the chapters about the runtime, where every guard is on.
const VAULT: &str = "vault";
/// The chapter after the vault: what the runtime cannot do by itself.
const BEYOND_THE_RUNTIME: &str = "Beyond the runtime";
/// The chapter after it: the seed's other side effects (an email, an owner change, a delete).
const NOT_ONLY_MONEY: &str = "Not only money";

/// Guards that cannot be load-bearing on their own in the vault, and why. Each is proven in
/// its own lesson level instead (`lesson_proofs`).
const BEHIND_ANOTHER_GUARD: [(Guard, &str); 7] = [
    (
        Guard::ToolContract,
        "the vault's tool is declared honestly (one attempt, the key) and the vault lets no tool be declared, \
         so the check has nothing to refuse there",
    ),
    (
        Guard::AmbiguityPolicy,
        "the vault's tool has a reconcile hook and the vault pauses on an unknown call, so the check has nothing \
         to refuse there",
    ),
    (
        Guard::KeyDownstream,
        "with every other guard on the runtime never sends one key twice, so billing never has a repeat to refuse; \
         the reconcile hook's lookup by key only changes the money when the pause is off",
    ),
    (
        Guard::ReconcileHook,
        "with the pause on, a call the hook cannot settle waits for an operator instead of being reported failed",
    ),
    (
        Guard::KeyRetention,
        "the vault's tool declares no key retention and its billing keeps keys for ever, so the guard has nothing \
         to weigh there",
    ),
    (
        Guard::LookupSettle,
        "the vault's tool declares no lookup settle time, so a lookup that finds nothing never proves anything \
         there, guard or not",
    ),
    (
        Guard::DeadLetter,
        "the vault declares no recovery_attempts_max and no recovery crashes there, so no run's recoveries keep \
         failing and the guard has no limit to count against",
    ),
];

fn levels_folder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../levels")
}

fn campaign() -> Campaign {
    match Campaign::load(&levels_folder()) {
        Ok(campaign) => campaign,
        Err(problems) => panic!(
            "the campaign does not load:\n{}",
            problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
        ),
    }
}

/// The outcomes a heist against this guard is after: the goals of the levels that teach it by
/// switching it off (two honest credits merged under one hashed key under-pay; a reflex
/// compensation takes money back; everything else pays twice).
fn broken_outcomes(campaign: &Campaign, guard: Guard) -> BTreeSet<Outcome> {
    let goals: BTreeSet<Outcome> = campaign
        .levels
        .iter()
        .filter(|loaded| loaded.level.lesson.guards.contains(&guard) && !loaded.level.guards.is_on(guard))
        .map(|loaded| loaded.level.goal)
        .collect();
    if goals.is_empty() {
        BTreeSet::from([Outcome::PaidTwice])
    } else {
        goals
    }
}

fn outcome_of(level: &LoadedLevel, tape: &LoadedTape, guards: Guards) -> Outcome {
    let mut simulation = SimulationBuilder::new(level.level.clone(), tape.tape.seed)
        .guards(guards)
        .actions(tape.tape.actions.clone())
        .wire_rule(tape.tape.wire_rule())
        .build()
        .expect("a simulation builds");
    simulation.run().expect("a simulation runs");
    simulation.verdict().expect("a verdict").outcome
}

fn tape_name(tape: &LoadedTape) -> String {
    tape.path
        .file_name()
        .map_or_else(String::new, |name| name.to_string_lossy().into_owned())
}

/// Tapes recorded against the level as it is (not sandbox tapes with other guards).
fn own_tapes<'a>(campaign: &'a Campaign, id: &'a str) -> Vec<&'a LoadedTape> {
    campaign
        .tapes_for(id)
        .filter(|tape| tape.tape.guards.is_none())
        .collect()
}

#[test]
fn every_level_and_tape_file_loads_and_checks_clean() {
    let report = campaign::check(&[levels_folder()]);
    assert!(
        report.problems.is_empty(),
        "`twice-sim check levels` finds problems:\n{}",
        report
            .problems
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    );
    let on_disk = |suffix| {
        level::files_below(&levels_folder(), suffix)
            .expect("levels/ is readable")
            .len()
    };
    assert_eq!(report.levels, on_disk(campaign::LEVEL_SUFFIX));
    assert_eq!(report.tapes, on_disk(campaign::TAPE_SUFFIX));
    // The campaign is every level and tape but the regression cases, which `check` checks too.
    let regression = |suffix, is_regression: &dyn Fn(&std::path::Path) -> bool| {
        level::files_below(&levels_folder(), suffix)
            .expect("levels/ is readable")
            .iter()
            .filter(|path| is_regression(path))
            .count()
    };
    let regression_levels = regression(campaign::LEVEL_SUFFIX, &|path| {
        level::load_level(path).expect("a shipped level loads").level.regression
    });
    let regression_tapes = regression(campaign::TAPE_SUFFIX, &|path| {
        level::load_tape(path)
            .expect("a shipped tape loads")
            .level
            .level
            .regression
    });
    assert!(
        regression_levels >= 2 && regression_tapes >= 4,
        "levels/regressions/ ships its cases"
    );
    let campaign = campaign();
    assert_eq!(campaign.levels.len() + regression_levels, report.levels);
    assert_eq!(campaign.tapes.len() + regression_tapes, report.tapes);
}

#[test]
fn every_tape_replays_to_its_expected_verdict() {
    let campaign = campaign();
    let mut differ = Vec::new();
    for tape in &campaign.tapes {
        let result = replay_tape(tape).unwrap_or_else(|error| panic!("{}: {error}", tape.path.display()));
        if !result.as_expected {
            differ.push(format!(
                "{}: expected {} [{}], got {} [{}]",
                tape_name(tape),
                result.expected.verdict,
                guard_names(&result.expected.stopped_by),
                result.verdict.outcome,
                guard_names(&result.verdict.stopped_by)
            ));
        }
    }
    assert!(differ.is_empty(), "tapes that differ:\n{}", differ.join("\n"));
}

#[test]
fn replaying_a_tape_twice_gives_the_same_history_byte_for_byte() {
    let campaign = campaign();
    for tape in campaign.tapes_for(VAULT) {
        let history = || {
            let mut simulation = SimulationBuilder::new(tape.level.level.clone(), tape.tape.seed)
                .actions(tape.tape.actions.clone())
                .wire_rule(tape.tape.wire_rule())
                .build()
                .expect("builds");
            simulation.run().expect("runs");
            simulation.history_text().expect("history")
        };
        assert_eq!(history(), history(), "{}", tape_name(tape));
    }
}

fn guard_names(guards: &[Guard]) -> String {
    guards.iter().map(|guard| guard.name()).collect::<Vec<_>>().join(", ")
}

#[test]
fn the_campaign_is_big_enough_and_its_level_select_is_consistent() {
    let campaign = campaign();
    assert!(campaign.levels.len() >= 14, "{} levels", campaign.levels.len());
    let unbeatable = campaign.levels.iter().filter(|loaded| loaded.level.unbeatable).count();
    assert!(unbeatable >= 2, "{unbeatable} unbeatable levels");
    let mut ids = BTreeSet::new();
    for loaded in &campaign.levels {
        assert!(
            ids.insert(loaded.level.id.as_str()),
            "level id `{}` twice",
            loaded.level.id
        );
    }
    // Levels come in level-select order; each requirement is a known level shown earlier,
    // so the campaign teaches in order and every level can be unlocked.
    let mut earlier = BTreeSet::new();
    for loaded in &campaign.levels {
        let level = &loaded.level;
        assert!(
            level.chapter > 0 && level.order > 0,
            "`{}` has no chapter/order",
            level.id
        );
        assert!(
            !level.chapter_title.trim().is_empty(),
            "`{}` has no chapter title",
            level.id
        );
        for required in &level.requires {
            assert!(
                ids.contains(required.as_str()),
                "`{}` requires unknown `{required}`",
                level.id
            );
            assert!(
                earlier.contains(required.as_str()),
                "`{}` requires `{required}`, which comes later",
                level.id
            );
        }
        earlier.insert(level.id.as_str());
    }
    assert!(
        campaign.levels[0].level.requires.is_empty(),
        "the first level must be open from the start"
    );
    // The vault closes the chapters about the runtime's guards on money; only the chapter about
    // what the runtime cannot do and the one about side effects that are not money come after
    // it, and each of their levels is unlocked by the vault.
    let vault = campaign
        .levels
        .iter()
        .position(|loaded| loaded.level.id == VAULT)
        .expect("the vault");
    for loaded in &campaign.levels[vault + 1..] {
        assert!(
            [BEYOND_THE_RUNTIME, NOT_ONLY_MONEY].contains(&loaded.level.chapter_title.as_str()),
            "`{}` comes after the vault but is in neither the chapter about the runtime's limits nor the one \
             about side effects beyond money",
            loaded.level.id
        );
        assert!(
            requires_transitively(&campaign, &loaded.level.id, VAULT),
            "`{}` comes after the vault but does not require it",
            loaded.level.id
        );
    }
    assert!(
        campaign.levels[..vault]
            .iter()
            .all(|loaded| ![BEYOND_THE_RUNTIME, NOT_ONLY_MONEY].contains(&loaded.level.chapter_title.as_str())),
        "a level about the runtime's limits or beyond money comes before the vault"
    );
}

/// Whether level `id` requires `required`, directly or through the levels it requires.
fn requires_transitively(campaign: &Campaign, id: &str, required: &str) -> bool {
    let mut to_visit = vec![id.to_owned()];
    let mut seen = BTreeSet::new();
    while let Some(next) = to_visit.pop() {
        if !seen.insert(next.clone()) {
            continue;
        }
        let Some(loaded) = campaign.level(&next) else {
            continue;
        };
        if loaded.level.requires.iter().any(|name| name == required) {
            return true;
        }
        to_visit.extend(loaded.level.requires.iter().cloned());
    }
    false
}

/// How a briefing names a guard that is off, in the player's words.
fn briefing_words(guard: Guard) -> &'static str {
    twice_sim::guards::words(guard)
}

#[test]
fn every_level_explains_itself() {
    let campaign = campaign();
    for loaded in &campaign.levels {
        let level = &loaded.level;
        assert!(!level.title.trim().is_empty(), "`{}` has no title", level.id);
        // The guards are named in the briefing's "more" when its first words are the story.
        let briefing = format!("{} {}", level.briefing, level.briefing_more);
        assert!(
            briefing.contains("Guards"),
            "`{}`'s briefing does not say which guards are on",
            level.id
        );
        let off = level.guards.off();
        if off.is_empty() {
            assert!(
                briefing.contains("Guards: all on"),
                "`{}`'s briefing hides that all guards are on",
                level.id
            );
        }
        for guard in off {
            assert!(
                briefing.contains(briefing_words(guard)),
                "`{}` switches {guard} off and its briefing does not say \"{}\"",
                level.id,
                briefing_words(guard)
            );
        }
        // A lesson names the guards it teaches; the operators' lessons (compare-and-set, a late
        // answer logged and ignored) are about the ledger's rules for people, not about a guard.
        let teaches_operators = level.cards.iter().any(|allowance| {
            matches!(
                allowance.card,
                level::CardKind::OperatorResolve | level::CardKind::OperatorCompensate
            )
        });
        assert!(
            !level.lesson.guards.is_empty() || teaches_operators,
            "`{}`'s lesson names no guard",
            level.id
        );
        assert!(
            !level.lesson.rule.trim().is_empty(),
            "`{}`'s lesson quotes no rule",
            level.id
        );
        assert!(!level.cards.is_empty(), "`{}` gives no cards", level.id);
        if level.unbeatable {
            assert!(
                !level.debrief.trim().is_empty(),
                "`{}` is unbeatable without a debrief",
                level.id
            );
        }
    }
}

#[test]
fn every_beatable_level_ships_a_winning_tape_and_a_failing_attempt() {
    let campaign = campaign();
    for loaded in campaign.levels.iter().filter(|loaded| !loaded.level.unbeatable) {
        let level = &loaded.level;
        // A win must be played against the level as it is; a failing attempt may also be a
        // sandbox tape that plays the same moves against the guard the level switches off.
        let wins = own_tapes(&campaign, &level.id)
            .iter()
            .filter(|tape| tape.tape.expect.verdict == level.goal)
            .count();
        let fails = campaign
            .tapes_for(&level.id)
            .filter(|tape| tape.tape.expect.verdict != level.goal)
            .count();
        assert!(wins >= 1, "`{}` ships no winning tape", level.id);
        assert!(fails >= 1, "`{}` ships no failing attempt", level.id);
    }
}

#[test]
fn every_unbeatable_level_ships_three_attempts_each_stopped_by_named_guards() {
    let campaign = campaign();
    for loaded in campaign.levels.iter().filter(|loaded| loaded.level.unbeatable) {
        let level = &loaded.level;
        let tapes = own_tapes(&campaign, &level.id);
        assert!(tapes.len() >= 3, "`{}` ships {} attempts", level.id, tapes.len());
        for tape in tapes {
            assert_ne!(
                tape.tape.expect.verdict,
                level.goal,
                "{} wins an unbeatable level",
                tape_name(tape)
            );
            assert!(
                !tape.tape.expect.stopped_by.is_empty(),
                "{} does not name the guard that stopped it",
                tape_name(tape)
            );
            assert!(!tape.tape.actions.is_empty(), "{} plays no card", tape_name(tape));
        }
    }
}

/// Every shipped tape whose moves are legal in the vault (its cards, counts, runs and end).
fn tapes_legal_in_the_vault<'a>(campaign: &'a Campaign, vault: &LoadedLevel) -> Vec<&'a LoadedTape> {
    campaign
        .tapes
        .iter()
        .filter(|tape| level::validate_tape(&tape.path, &tape.text, &tape.tape, &vault.level).is_ok())
        .collect()
}

#[test]
fn the_vault_holds_against_every_shipped_tape_that_is_legal_in_it() {
    let campaign = campaign();
    let vault = campaign.level(VAULT).expect("the vault");
    assert!(vault.level.unbeatable);
    assert_eq!(vault.level.guards, Guards::all_on(), "the vault has every guard on");
    let tapes = tapes_legal_in_the_vault(&campaign, vault);
    assert!(
        tapes.len() >= 20,
        "only {} shipped tapes are legal in the vault",
        tapes.len()
    );
    for tape in tapes {
        let outcome = outcome_of(vault, tape, Guards::all_on());
        assert_ne!(outcome, vault.level.goal, "{} beats the vault", tape_name(tape));
        assert_ne!(
            outcome,
            Outcome::NotPaidButOwed,
            "{} under-pays in the vault",
            tape_name(tape)
        );
    }
}

/// The tapes that, in the vault with only `guard` off, reach a heist that guard prevents —
/// and do not reach it with every guard on.
fn vault_proofs(campaign: &Campaign, vault: &LoadedLevel, guard: Guard) -> Vec<String> {
    let broken = broken_outcomes(campaign, guard);
    tapes_legal_in_the_vault(campaign, vault)
        .into_iter()
        .filter(|tape| {
            !broken.contains(&outcome_of(vault, tape, Guards::all_on()))
                && broken.contains(&outcome_of(vault, tape, vault.level.guards.with(guard, false)))
        })
        .map(tape_name)
        .collect()
}

/// The winning tapes of levels that teach `guard` by switching it off, which no longer win
/// once the guard is switched back on.
fn lesson_proofs(campaign: &Campaign, guard: Guard) -> Vec<String> {
    let mut proofs = Vec::new();
    for loaded in &campaign.levels {
        let level = &loaded.level;
        if !level.lesson.guards.contains(&guard) || level.guards.is_on(guard) {
            continue;
        }
        for tape in own_tapes(campaign, &level.id) {
            let wins = tape.tape.expect.verdict == level.goal;
            if wins && outcome_of(loaded, tape, level.guards.with(guard, true)) != level.goal {
                proofs.push(tape_name(tape));
            }
        }
    }
    proofs
}

#[test]
fn every_guard_is_proven_by_a_shipped_tape() {
    let campaign = campaign();
    let vault = campaign.level(VAULT).expect("the vault");
    let behind: BTreeMap<Guard, &str> = BEHIND_ANOTHER_GUARD.into_iter().collect();
    let mut unproven = Vec::new();
    for guard in Guard::ALL {
        let in_vault = vault_proofs(&campaign, vault, guard);
        if let Some(why) = behind.get(&guard) {
            assert!(
                in_vault.is_empty(),
                "{guard} is now load-bearing in the vault ({in_vault:?}); take it out of BEHIND_ANOTHER_GUARD ({why})"
            );
            if lesson_proofs(&campaign, guard).is_empty() {
                unproven.push(format!("{guard}: no lesson tape needs it ({why})"));
            }
        } else if in_vault.is_empty() {
            unproven.push(format!(
                "{guard}: switched off in the vault, no shipped tape reaches {:?}",
                broken_outcomes(&campaign, guard)
            ));
        }
    }
    assert!(
        unproven.is_empty(),
        "guards the campaign does not teach:\n{}",
        unproven.join("\n")
    );
}

#[test]
fn every_guard_is_taught_by_a_level_that_switches_it_off() {
    let campaign = campaign();
    for guard in Guard::ALL {
        assert!(
            !lesson_proofs(&campaign, guard).is_empty(),
            "no level teaches {guard} by switching it off and shipping a tape that only wins without it"
        );
    }
}

#[test]
fn twice_sim_check_exits_zero_on_the_campaign_and_two_on_a_problem() {
    let check = |path: &std::path::Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_twice-sim"))
            .arg("check")
            .arg(path)
            .output()
            .expect("twice-sim runs")
    };
    let clean = check(&levels_folder());
    assert_eq!(
        clean.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&clean.stderr)
    );
    let folder = tempfile::tempdir().expect("a temporary folder");
    let vault = std::fs::read_to_string(levels_folder().join("19-vault.level.ron")).expect("the vault");
    let copy = vault.replace("goal: paid_twice", "goal: paid_twice, gaol: 1");
    assert_ne!(copy, vault, "the vault names its goal");
    std::fs::write(folder.path().join("vault.level.ron"), copy).expect("write");
    let broken = check(folder.path());
    assert_eq!(broken.status.code(), Some(2));
    let printed = String::from_utf8_lossy(&broken.stderr);
    assert!(
        printed.contains("vault.level.ron:") && printed.contains("gaol"),
        "{printed}"
    );
}

/// Runs the tape's own moves to the end, on the memory store.
fn run_tape(tape: &LoadedTape) -> twice_sim::simulator::Simulation {
    let mut simulation = simulation_of(tape, LedgerStore::Memory).expect("a simulation builds");
    simulation.run().expect("a simulation runs");
    simulation
}

#[test]
fn every_level_needs_a_move() {
    let campaign = campaign();
    for loaded in &campaign.levels {
        let level = &loaded.level;
        let mut simulation = SimulationBuilder::new(level.clone(), 1).build().expect("builds");
        simulation.run().expect("runs");
        let verdict = simulation.verdict().expect("a verdict");
        assert!(
            !verdict.goal_reached,
            "`{}` is won with no card played: {}",
            level.id, verdict.summary
        );
        let standing = Standing::of(level, &verdict, simulation.hand().values().sum());
        assert!(
            !standing.finishes_level(),
            "`{}` is finished with no card played ({standing:?})",
            level.id
        );
    }
}

#[test]
fn every_shipped_tape_is_in_the_current_format() {
    let campaign = campaign();
    for tape in &campaign.tapes {
        assert_eq!(
            tape.tape.version,
            TAPE_VERSION,
            "{} is an old tape: `twice-sim upgrade` rewrites it",
            tape_name(tape)
        );
    }
}

/// A level the crew cannot beat is not finished by spending the hand (no choice in that can
/// fail): every play of it, the whole hand included, leaves it unfinished, and it is finished by
/// a defence, which can fail: with no guard on, a known heist or the explorer's find gets in.
#[test]
fn no_unbeatable_level_is_finished_by_spending_the_hand_only_by_a_defence_that_can_fail() {
    let campaign = campaign();
    for loaded in campaign.levels.iter().filter(|loaded| loaded.level.unbeatable) {
        let level = &loaded.level;
        let hand: u32 = level.cards.iter().map(|allowance| allowance.count).sum();
        let mut whole_hands = 0;
        for tape in own_tapes(&campaign, &level.id) {
            let simulation = run_tape(tape);
            let verdict = simulation.verdict().expect("a verdict");
            let cards_left: u32 = simulation.hand().values().sum();
            let standing = Standing::of(level, &verdict, cards_left);
            assert!(
                !standing.finishes_level(),
                "{} finishes `{}` by a play ({standing:?})",
                tape_name(tape),
                level.id
            );
            if simulation.played().len() as u32 == hand {
                assert_eq!(cards_left, 0);
                assert_eq!(
                    standing,
                    Standing::HeldAgainstTheWholeHand,
                    "{} plays the whole hand",
                    tape_name(tape)
                );
                let told = twice_sim::debrief::of(&simulation, &verdict);
                assert!(
                    told.diagnosis.iter().any(|sentence| sentence.contains("defend it")),
                    "{}: the debrief says how the level is finished: {:?}",
                    tape_name(tape),
                    told.diagnosis
                );
                whole_hands += 1;
            }
        }
        assert!(
            whole_hands >= 1,
            "`{}` ships no tape that plays its whole hand of {hand} card(s): show that it can be spent",
            level.id
        );
        let defender = level
            .defender
            .as_ref()
            .unwrap_or_else(|| panic!("`{}` cannot be beaten and has no defender's challenge", level.id));
        assert!(defender.minimum.len() <= defender.budget as usize, "`{}`", level.id);
        let heists = defend::heists(&campaign, level);
        // No guard at all: a known heist or the explorer's find gets through.
        let unguarded = defend::check(loaded, &heists, &[], defend::Search::default(), &AtomicBool::new(false))
            .expect("the check runs");
        assert!(
            !unguarded.stops_every_heist() && unguarded.counter_example.is_some(),
            "`{}`: a defence with no guard holds, so the defence is no choice",
            level.id
        );
    }
}

/// The kinds of card a move plays, in order of kind: what "the same move" means across levels.
fn move_of(actions: &[level::TimedAction]) -> Vec<twice_sim::level::CardKind> {
    let mut cards: Vec<_> = actions.iter().map(|action| action.play.card()).collect();
    cards.sort();
    cards
}

/// Each beatable level's own move: the cards its win tape plays.
fn own_moves(campaign: &Campaign) -> BTreeMap<String, Vec<twice_sim::level::CardKind>> {
    campaign
        .tapes
        .iter()
        .filter(|tape| tape.tape.guards.is_none() && tape_name(tape).ends_with(campaign::WIN_TAPE_SUFFIX))
        .map(|tape| (tape.level.level.id.clone(), move_of(&tape.tape.actions)))
        .collect()
}

/// A win with fewer cards (or as many, in fewer phases) than par must be another level's move.
fn assert_beats_par_only_by_another_levels_move(
    moves: &BTreeMap<String, Vec<twice_sim::level::CardKind>>,
    id: &str,
    what: &str,
    actions: &[level::TimedAction],
) {
    let played = move_of(actions);
    let lesson = moves
        .iter()
        .find(|(other, cards)| other.as_str() != id && **cards == played);
    assert!(
        lesson.is_some(),
        "`{id}` is won below its par by {what} ({played:?}), which is no other level's move: par must be the best win"
    );
}

#[test]
fn every_beatable_level_states_its_par_and_its_win_tape_reaches_it() {
    let campaign = campaign();
    let moves = own_moves(&campaign);
    for loaded in campaign.levels.iter().filter(|loaded| !loaded.level.unbeatable) {
        let level = &loaded.level;
        let par = level.par.unwrap_or_else(|| panic!("`{}` has no par", level.id));
        // Par is reached on the path the hints teach: the level's own win tape.
        let win = own_tapes(&campaign, &level.id)
            .into_iter()
            .find(|tape| tape_name(tape).ends_with(campaign::WIN_TAPE_SUFFIX))
            .unwrap_or_else(|| panic!("`{}` ships no win tape", level.id));
        let simulation = run_tape(win);
        assert!(
            simulation.verdict().expect("a verdict").goal_reached,
            "{} wins",
            tape_name(win)
        );
        assert_eq!(
            (simulation.played().len() as u32, simulation.phase()),
            (par.cards, par.phases),
            "`{}`'s win tape {} takes {} card(s) and {} phases; its par says {} and {}",
            level.id,
            tape_name(win),
            simulation.played().len(),
            simulation.phase(),
            par.cards,
            par.phases
        );
        // A shipped win that beats par plays another level's lesson (09's resolve in flight is 18's).
        for tape in own_tapes(&campaign, &level.id) {
            let simulation = run_tape(tape);
            let score = (simulation.played().len() as u32, simulation.phase());
            if simulation.verdict().expect("a verdict").goal_reached && score < (par.cards, par.phases) {
                assert_beats_par_only_by_another_levels_move(&moves, &level.id, &tape_name(tape), simulation.played());
            }
        }
        // So does any find of the explorer with fewer cards.
        let outcome = twice_sim::explore::Explorer::new(level.clone(), level.guards, 1)
            .schedules(2_000)
            .run(&|_| {}, &AtomicBool::new(false))
            .expect("the explorer runs");
        if let Some(found) = outcome.found
            && (found.actions.len() as u32) < par.cards
        {
            assert_beats_par_only_by_another_levels_move(&moves, &level.id, "the explorer's find", &found.actions);
        }
    }
}

#[test]
fn every_level_has_three_tiers_of_hints() {
    let campaign = campaign();
    for loaded in &campaign.levels {
        let hints = &loaded.level.hints;
        assert_eq!(
            hints.tiers().len(),
            3,
            "`{}` needs a nudge, the idea and the move",
            loaded.level.id
        );
    }
}

/// One defender check: a level's guard set, and whether it must stop every heist.
struct DefenceCheck<'a> {
    loaded: &'a LoadedLevel,
    heists: Vec<&'a LoadedTape>,
    set: Vec<Guard>,
    kind: DefenceSet,
}

/// What a defender check's set is, and so what it must do.
#[derive(Clone, Copy, Debug)]
enum DefenceSet {
    /// The level's stated minimum: it holds.
    Minimum,
    /// Smaller than the minimum: some heist gets through.
    Smaller,
    /// The minimum without its first guard: it does not hold.
    AllButOne,
}

/// The suite's slowest test (the vault alone searches hundreds of smaller guard sets), so the
/// checks are shared out to every core from one queue; any failed assertion still fails it.
#[test]
fn every_defender_minimum_holds_and_no_smaller_set_does() {
    let campaign = campaign();
    let mut checks = Vec::new();
    for loaded in campaign.levels.iter().filter(|loaded| loaded.level.unbeatable) {
        let level = &loaded.level;
        let defender = level.defender.as_ref().expect("an unbeatable level is defended");
        let heists = defend::heists(&campaign, level);
        assert!(
            !heists.is_empty(),
            "`{}` has no known heist to defend against",
            level.id
        );
        let check = |set: &[Guard], kind| DefenceCheck {
            loaded,
            heists: heists.clone(),
            set: set.to_vec(),
            kind,
        };
        checks.push(check(&defender.minimum, DefenceSet::Minimum));
        // Guards that cannot change anything in the level (the contract check, when every
        // tool passes it) are left out: a set with one holds exactly when it does without.
        let guards = defend::guards_that_matter(level);
        for size in 0..defender.minimum.len() {
            for set in defend::sets_of_in(&guards, size) {
                checks.push(check(&set, DefenceSet::Smaller));
            }
        }
        // One guard fewer than the minimum, whichever: a heist gets through.
        checks.push(check(&defender.minimum[1..], DefenceSet::AllButOne));
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let cancel = AtomicBool::new(false);
    let threads = std::thread::available_parallelism().map_or(2, usize::from);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                while let Some(check) = checks.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
                    run_defence_check(check, &cancel);
                }
            });
        }
    });
}

fn run_defence_check(check: &DefenceCheck, cancel: &AtomicBool) {
    let level = &check.loaded.level;
    // A set smaller than the minimum only needs one heist through: most meet one among the
    // known heists, and the explorer searches only for the rest.
    if matches!(check.kind, DefenceSet::Smaller)
        && defend::a_known_heist_gets_through(level, &check.heists, &check.set).expect("the heists replay")
    {
        return;
    }
    let minimum = &level
        .defender
        .as_ref()
        .expect("an unbeatable level is defended")
        .minimum;
    let report = defend::check(
        check.loaded,
        &check.heists,
        &check.set,
        defend::Search::default(),
        cancel,
    )
    .expect("the check runs");
    match check.kind {
        DefenceSet::Minimum => {
            assert!(
                report.holds(),
                "`{}`'s minimum [{}] does not hold: {:?}",
                level.id,
                guard_names(minimum),
                report
            );
            assert!(
                !defend::a_known_heist_gets_through(level, &check.heists, minimum).expect("the heists replay"),
                "`{}`: the quick replay disagrees with the full check on its minimum",
                level.id
            );
        }
        DefenceSet::Smaller => assert!(
            !report.stops_every_heist(),
            "`{}` holds with only [{}], smaller than its stated minimum [{}]",
            level.id,
            guard_names(&check.set),
            guard_names(minimum)
        ),
        DefenceSet::AllButOne => assert!(
            !report.holds()
                && defend::a_known_heist_gets_through(level, &check.heists, &check.set).expect("the heists replay")
                    == report.heists.iter().any(|heist| !heist.stopped),
            "`{}` holds without {}",
            level.id,
            guard_names(&minimum[..1])
        ),
    }
}

#[test]
fn the_presenter_notes_parse_and_cover_every_chapter() {
    let campaign = campaign();
    let levels: Vec<&level::Level> = campaign.levels.iter().map(|loaded| &loaded.level).collect();
    let notes = twice_sim::presenter_notes::load(&levels_folder(), &levels)
        .expect("the notes parse")
        .expect("the campaign ships presenter notes");
    for loaded in &campaign.levels {
        let chapter = loaded.level.chapter;
        let notes = notes
            .chapter(chapter)
            .unwrap_or_else(|| panic!("chapter {chapter} has no presenter notes"));
        assert!(!notes.ask.is_empty(), "chapter {chapter} asks the room nothing");
    }
    // A chapter no level has is refused, with its line.
    let text = std::fs::read_to_string(twice_sim::presenter_notes::path_in(&levels_folder())).expect("reads");
    let broken = text.replacen("chapter: 10,", "chapter: 99,", 1);
    let error =
        twice_sim::presenter_notes::parse(std::path::Path::new("notes.ron"), &broken, &levels).expect_err("chapter 99");
    assert!(error.to_string().contains("no level is in chapter 99"), "{error}");
}

/// What a player reads during a level is text, not markup: no timeline line of any shipped
/// tape (the runtime's words, the guards' notes, the crew's and the operators' lines) shows a
/// backtick, and none names a level by its id where its title belongs.
#[test]
fn every_timeline_line_a_player_reads_is_plain_text() {
    let campaign = campaign();
    let ids: Vec<&str> = campaign.levels.iter().map(|loaded| loaded.level.id.as_str()).collect();
    for tape in &campaign.tapes {
        let simulation = run_tape(tape);
        for entry in simulation.timeline() {
            assert!(
                !entry.text.contains('`'),
                "{}: phase {} says {:?}",
                tape.path.display(),
                entry.phase,
                entry.text
            );
            for id in &ids {
                assert!(
                    !entry.text.contains(&format!("level {id}")) && !entry.text.contains(&format!("`{id}`")),
                    "{}: phase {} names level {id} by its id: {:?}",
                    tape.path.display(),
                    entry.phase,
                    entry.text
                );
            }
        }
    }
}

/// The defence levels, met one after another in level-select order, ask for different
/// answers: a player who found the last minimum cannot reuse it on the next defence (it is not
/// the next level's minimum, and it does not hold there: the next level's check fails it).
#[test]
fn consecutive_defence_levels_ask_for_different_minimal_defences() {
    let campaign = campaign();
    let defences: Vec<(&LoadedLevel, BTreeSet<Guard>)> = campaign
        .levels
        .iter()
        .filter_map(|loaded| {
            let defender = loaded.level.defender.as_ref()?;
            Some((loaded, defender.minimum.iter().copied().collect()))
        })
        .collect();
    assert!(defences.len() >= 2, "{} defence levels", defences.len());
    let cancel = AtomicBool::new(false);
    for pair in defences.windows(2) {
        let ((first, first_minimum), (second, second_minimum)) = (&pair[0], &pair[1]);
        let (first, second) = (&first.level.id, *second);
        assert_ne!(
            first_minimum, second_minimum,
            "`{first}` and `{}` are defended one after the other by the same guards: vary the answers",
            second.level.id
        );
        let reused: Vec<Guard> = first_minimum.iter().copied().collect();
        let heists = defend::heists(&campaign, &second.level);
        let report =
            defend::check(second, &heists, &reused, defend::Search::default(), &cancel).expect("the check runs");
        assert!(
            !report.holds(),
            "`{first}`'s minimum [{}] also holds `{}`: the answer carries over",
            guard_names(&reused),
            second.level.id
        );
    }
}

/// The first hour (chapters 1 to 3) is a path: no two defend-only levels in a row, and every
/// level won by a new move — never the cards that won the level won before it, into the first
/// level after the first hour. The rule is not empty: the first hour has levels of both kinds.
#[test]
fn the_first_hour_asks_for_something_new_at_every_level() {
    let campaign = campaign();
    let levels: Vec<&level::Level> = campaign.levels.iter().map(|loaded| &loaded.level).collect();
    let problems = twice_sim::campaign::path::first_hour_repeats(&levels, &campaign.tapes);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let first_hour: Vec<&&level::Level> = levels
        .iter()
        .filter(|level| level.chapter <= twice_sim::campaign::path::FIRST_HOUR_CHAPTERS)
        .collect();
    let defended = first_hour.iter().filter(|level| level.unbeatable).count();
    assert!(
        defended >= 2 && first_hour.len() - defended >= 4,
        "{defended} defend-only levels of {}",
        first_hour.len()
    );
    // No defend-only level opens the campaign, and none closes the first hour on a repeat.
    assert!(!first_hour[0].unbeatable, "the first level is a heist to win");
}

/// A defended level's debrief, lesson and hints, read before the defence, never say which
/// guards to switch on: the defence is the level's puzzle.
#[test]
fn no_defended_level_hands_over_its_defence_before_the_player_defends() {
    let campaign = campaign();
    let defended: Vec<&LoadedLevel> = campaign
        .levels
        .iter()
        .filter(|loaded| loaded.level.defender.is_some())
        .collect();
    assert!(defended.len() >= 5, "{} defended levels", defended.len());
    for loaded in defended {
        if let Some((field, sentence)) = twice_sim::campaign::path::defence_handed_over(&loaded.level) {
            panic!("`{}`'s {field} hands over the defence: \"{sentence}\"", loaded.level.id);
        }
    }
}
