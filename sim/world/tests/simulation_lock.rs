//! The play session's simulation asked for twice on one thread: a panic that says so, never
//! the hang CI met in stop 29 (a view helper locked it again under its caller's guard).

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use twice_world::level;
use twice_world::play_session::{Mode, PlaySession, Recipe};

fn session() -> PlaySession {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../levels/01-naive-retry.level.ron");
    let recipe = Recipe {
        level: level::load_level(&path).expect("level 01 loads"),
        seed: 1,
        guards: None,
        tape: None,
    };
    PlaySession::open(Mode::Campaign, recipe, None).expect("level 01 opens")
}

#[test]
fn asking_again_under_a_held_guard_panics_instead_of_waiting_forever() {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let session = session();
        let nested = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let held = session.simulation();
            let again = session.simulation();
            (held.phase(), again.phase())
        }));
        let message = nested.err().map(|panic| {
            panic
                .downcast_ref::<&str>()
                .map(|text| (*text).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default()
        });
        // The lock is free again after the panic: the guard that was held dropped as it unwound.
        let phase_after = session.simulation().phase();
        sender.send((message, phase_after)).expect("the test waits");
    });
    let (message, phase_after) = receiver
        .recv_timeout(Duration::from_secs(20))
        .expect("a second lock on the same thread waited forever: the deadlock is back");
    let message = message.expect("a second lock on the same thread was allowed");
    assert!(message.contains("already held by this thread"), "{message}");
    assert_eq!(phase_after, 0);
}

#[test]
fn one_guard_at_a_time_and_other_threads_take_turns() {
    let session = session();
    let first = session.simulation().phase();
    let second = session.simulation().phase();
    assert_eq!(first, second);
    std::thread::scope(|scope| {
        let held = session.simulation();
        let other = scope.spawn(|| session.simulation().phase());
        let phase = held.phase();
        drop(held);
        assert_eq!(other.join().expect("another thread waits its turn"), phase);
    });
}
