//! The faults a regression author needs beyond lost and slow messages: a worker stopped for a
//! while (`PauseWorker`, SIGSTOP) and a request billing holds before applying it
//! (`DelayApply`). Each shipped regression tape is checked against the same tape without the
//! card: the verdict must differ, so the card is what the tape tests.

use std::path::{Path, PathBuf};

use twice_world::level::{self, LoadedTape, Play};
use twice_world::outcome::Outcome;
use twice_world::replay::{replay_tape, simulation_of};
use twice_world::simulator::TimelineEntry;

fn regressions() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../levels/regressions")
}

fn tape(name: &str) -> LoadedTape {
    level::load_tape(&regressions().join(name)).unwrap_or_else(|error| panic!("{name}: {error}"))
}

fn outcome(tape: &LoadedTape) -> Outcome {
    let result = replay_tape(tape).unwrap_or_else(|error| panic!("{}: {error}", tape.path.display()));
    result.verdict.outcome
}

/// The same tape without its moves of `card`.
fn without(tape: &LoadedTape, card: &str) -> LoadedTape {
    let mut tape = tape.clone();
    let before = tape.tape.actions.len();
    tape.tape.actions.retain(|action| action.play.card().name() != card);
    assert!(tape.tape.actions.len() < before, "the tape plays {card}");
    tape
}

fn timeline(tape: &LoadedTape) -> Vec<TimelineEntry> {
    let mut simulation = simulation_of(tape, twice_world::ledger::LedgerStore::Memory).unwrap();
    simulation.run().unwrap();
    simulation.timeline().to_vec()
}

#[test]
fn a_paused_worker_is_paid_twice_for_only_because_it_was_paused() {
    let reproduced = tape("paused-worker-lease.reproduced.tape.ron");
    assert_eq!(outcome(&reproduced), Outcome::PaidTwice);
    // Without the pause w1 hears its answer and records the call long before the twin looks:
    // the twin finds it completed and pays nothing.
    assert_eq!(outcome(&without(&reproduced, "PauseWorker")), Outcome::PaidOnce);
    let held = tape("paused-worker-lease.held.tape.ron");
    assert_eq!(outcome(&held), Outcome::PaidOnce);
}

#[test]
fn a_stopped_worker_runs_nothing_until_it_resumes_and_then_hears_what_waited() {
    let entries = timeline(&tape("paused-worker-lease.reproduced.tape.ron"));
    let paused = entries
        .iter()
        .find(|entry| entry.kind == "pause a worker")
        .expect("the pause is on the timeline");
    let resumed = entries
        .iter()
        .find(|entry| entry.kind == "resume")
        .expect("the worker resumes");
    assert_eq!(resumed.time_ms, paused.time_ms + 500, "{resumed:?}");
    let w1 = twice_world::simulator::Actor::Worker(1);
    let meanwhile: Vec<&TimelineEntry> = entries
        .iter()
        .filter(|entry| entry.actor == w1 && entry.time_ms > paused.time_ms && entry.time_ms < resumed.time_ms)
        .collect();
    assert!(meanwhile.is_empty(), "w1 ran while stopped: {meanwhile:#?}");
    // Its answer arrived at billing's usual pace but waited for it; its timer (300 ms) fell
    // due while it slept and was no longer wanted once the answer was heard.
    assert!(
        resumed.text.contains("the answer for r1:c1") && resumed.text.contains("attempt 1's timer"),
        "{}",
        resumed.text
    );
    let heard = entries
        .iter()
        .position(|entry| entry.kind == "response travels" && entry.text.starts_with("w1 receives"))
        .expect("w1 hears its answer");
    assert_eq!(entries[heard].time_ms, resumed.time_ms, "heard when it resumed");
    assert!(
        !entries.iter().any(|entry| entry.actor == w1 && entry.kind == "timeout"),
        "the answer came first"
    );
}

#[test]
fn a_credit_billing_holds_is_paid_again_only_because_it_was_held() {
    let paid_again = tape("delayed-apply-retry.paid-again.tape.ron");
    assert_eq!(outcome(&paid_again), Outcome::PaidTwice);
    // Applied at once, the credit is answered before the timeout: nothing is sent again.
    assert_eq!(outcome(&without(&paid_again, "DelayApply")), Outcome::PaidOnce);
    let held = replay_tape(&tape("delayed-apply-retry.held.tape.ron")).unwrap();
    assert!(held.as_expected, "{:?}", held.differences);
    assert_eq!(held.paid_cents.get("Ada"), Some(&2500));
}

#[test]
fn a_lookup_while_billing_holds_the_request_finds_nothing() {
    let tape = tape("delayed-apply-retry.lookup-finds-nothing.tape.ron");
    let entries = timeline(&tape);
    let held = entries
        .iter()
        .find(|entry| entry.kind == "request held")
        .expect("billing holds the request");
    let looked = entries
        .iter()
        .find(|entry| entry.kind == "reconcile")
        .expect("the hook looks");
    let applied = entries
        .iter()
        .find(|entry| entry.kind == "billing applies")
        .expect("billing applies it in the end");
    assert!(held.time_ms < looked.time_ms && looked.time_ms < applied.time_ms);
    assert_eq!(applied.time_ms, held.time_ms + 1000, "{applied:?}");
    assert!(looked.text.contains("finds nothing under r1:c1"), "{}", looked.text);
    assert_eq!(outcome(&tape), Outcome::PaidOnce);
}

/// `text` as a tape of the pause level beside the shipped ones, loaded (then removed).
fn load_edited(name: &str, text: &str) -> Result<LoadedTape, twice_world::error::InputError> {
    let path = regressions().join(format!("test-{}-{name}", std::process::id()));
    std::fs::write(&path, text).unwrap();
    let loaded = level::load_tape(&path);
    std::fs::remove_file(&path).unwrap();
    loaded
}

#[test]
fn a_pause_or_a_delay_over_its_limit_is_refused_at_its_line_and_field() {
    for (name, shipped, from, to, words) in [
        (
            "pause.tape.ron",
            "paused-worker-lease.reproduced.tape.ron",
            "ms: 500,",
            "ms: 600001,",
            "ms: a worker is paused for 1 to 600000 ms, not 600001",
        ),
        (
            "delay.tape.ron",
            "delayed-apply-retry.paid-again.tape.ron",
            "ms: 1000)",
            "ms: 0)",
            "ms: billing holds a request for 1 to 600000 ms, not 0",
        ),
    ] {
        let text = std::fs::read_to_string(regressions().join(shipped)).unwrap();
        assert!(text.contains(from), "{shipped} says {from}");
        let edited = text.replacen(from, to, 1);
        let line = edited.lines().position(|line| line.contains(to)).unwrap() + 1;
        let error = load_edited(name, &edited).expect_err("over the limit");
        let said = error.to_string();
        assert!(said.contains(words), "{said}");
        assert!(said.contains(name), "names the file: {said}");
        assert_eq!(error.position.map(|(at, _)| at), Some(line), "{said}");
    }
}

#[test]
fn a_pause_aimed_at_a_worker_already_stopped_fizzles_and_a_crash_ends_a_pause() {
    let shipped = tape("paused-worker-lease.reproduced.tape.ron");
    let mut twice = shipped.clone();
    for allowance in &mut twice.level.level.cards {
        if allowance.card == twice_world::level::CardKind::PauseWorker {
            allowance.count = 2;
        }
    }
    let mut again = twice.tape.actions[0].clone();
    again.at_phase = 5;
    twice.tape.actions.insert(1, again);
    let mut simulation = simulation_of(&twice, twice_world::ledger::LedgerStore::Memory).unwrap();
    simulation.run().unwrap();
    let misplays = simulation.misplays();
    assert_eq!(misplays.len(), 1, "{misplays:?}");
    assert!(
        misplays[0].why.contains("w1 is stopped already, until 535 ms"),
        "{misplays:?}"
    );

    // SIGKILL ends a stopped process: no resume follows, and its recovery runs.
    let mut killed = shipped.clone();
    killed.level.level.cards.push(twice_world::level::CardAllowance {
        card: twice_world::level::CardKind::CrashWorker,
        count: 1,
    });
    killed.tape.actions = vec![
        killed.tape.actions[0].clone(),
        level::TimedAction {
            at_phase: 5,
            play: Play::CrashWorker(twice_world::cards::CrashWorker {
                worker: Some(1),
                in_phase: None,
            }),
            fizzles: false,
        },
    ];
    let mut simulation = simulation_of(&killed, twice_world::ledger::LedgerStore::Memory).unwrap();
    simulation.run().unwrap();
    assert!(simulation.misplays().is_empty(), "{:?}", simulation.misplays());
    let entries = simulation.timeline();
    assert!(
        entries.iter().any(|entry| entry.kind == "crash a worker"),
        "{entries:#?}"
    );
    assert!(!entries.iter().any(|entry| entry.kind == "resume"), "{entries:#?}");
    assert!(
        entries
            .iter()
            .any(|entry| entry.text.contains("recovers the run after a crash")),
        "{entries:#?}"
    );
}

#[test]
fn the_hand_offers_a_pause_and_a_delay_for_the_levels_slow_answer() {
    let loaded = level::load_level(Path::new(&regressions().join("paused-worker-lease.level.ron"))).unwrap();
    let mut simulation = twice_world::simulator::SimulationBuilder::new(loaded.level, 1)
        .build()
        .unwrap();
    simulation.run_until(|simulation| simulation.now_ms() >= 35).unwrap();
    let kind = twice_world::level::CardKind::PauseWorker;
    let targets = kind.targets(&simulation);
    assert_eq!(targets.len(), 1, "{targets:?}");
    assert!(targets[0].label.ends_with(": 500 ms"), "{}", targets[0].label);
    assert!(kind.effect(&simulation).contains("for 500 ms"));
}

/// The `ms` of a pause or a held apply, to change.
fn lasting_ms(play: &mut Play) -> Option<&mut u32> {
    match play {
        Play::PauseWorker(pause) => Some(&mut pause.ms),
        Play::DelayApply(delay) => Some(&mut delay.ms),
        _ => None,
    }
}

#[test]
fn the_shrinker_shortens_a_found_pause_or_delay_until_one_ms_less_would_not_win() {
    for (name, card) in [
        ("paused-worker-lease.reproduced.tape.ron", "PauseWorker"),
        ("delayed-apply-retry.paid-again.tape.ron", "DelayApply"),
    ] {
        let loaded = tape(name);
        let level = loaded.level.level.clone();
        let guards = loaded.tape.guards.unwrap_or(level.guards);
        let outcome = twice_world::explore::Explorer::new(level.clone(), guards, 1)
            .schedules(3_000)
            .run(&|_| {}, &std::sync::atomic::AtomicBool::new(false))
            .expect("the explorer runs");
        let found = outcome.found.unwrap_or_else(|| panic!("{name}: no heist found"));
        assert!(!found.shrink_cancelled);
        let reaches = |actions: &[twice_world::level::TimedAction]| {
            let mut replay = twice_world::simulator::SimulationBuilder::new(level.clone(), found.simulation_seed)
                .guards(guards)
                .actions(actions.to_vec())
                .build()
                .expect("builds");
            replay.run().expect("runs");
            replay.verdict().expect("judged").outcome == level.goal
        };
        assert!(reaches(&found.actions), "{name}: the find replays to its goal");
        let mut lasting = 0;
        for position in 0..found.actions.len() {
            let mut shorter = found.actions.clone();
            let Some(ms) = lasting_ms(&mut shorter[position].play) else {
                continue;
            };
            lasting += 1;
            if *ms == 1 {
                continue;
            }
            let kept = *ms;
            *ms -= 1;
            // Dealt lengths are any in a wide range (e.g. 377 ms); kept is the shortest the
            // shrinker's bisection reached, so one less must no longer reach the goal.
            assert!(
                !reaches(&shorter),
                "{name}: {card} kept at {kept} ms, and {} ms wins too",
                kept - 1
            );
        }
        assert!(lasting > 0, "{name}: the find needs its {card}: {:?}", found.actions);
    }
}

/// Both stages draw a stopped worker as stopped, with when it runs again, from the world's
/// words: its state alone still says what it will do next, as if it were only waiting.
#[test]
fn a_stopped_worker_is_drawn_stopped_until_it_resumes() {
    let reproduced = tape("paused-worker-lease.reproduced.tape.ron");
    let mut simulation = simulation_of(&reproduced, twice_world::ledger::LedgerStore::Memory).unwrap();
    let stopped = |simulation: &twice_world::simulator::Simulation| {
        simulation
            .workers()
            .into_iter()
            .filter_map(|worker| worker.stopped_words().map(|words| (worker.id, words)))
            .collect::<Vec<_>>()
    };
    simulation
        .run_until(|simulation| !stopped(simulation).is_empty())
        .unwrap();
    let now = stopped(&simulation);
    assert_eq!(now.len(), 1, "{now:?}");
    assert_eq!(now[0].0.as_str(), "w1");
    let until_ms = simulation.workers()[0].paused_until_ms.expect("w1 is stopped");
    assert!(until_ms > simulation.now_ms(), "{until_ms}");
    assert_eq!(now[0].1, format!("stopped until {until_ms} ms"));
    simulation
        .run_until(|simulation| stopped(simulation).is_empty())
        .unwrap();
    assert!(
        simulation.now_ms() >= until_ms,
        "resumed early, at {} ms",
        simulation.now_ms()
    );
}
