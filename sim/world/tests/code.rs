//! The program on screen against the runtime it describes, for every shipped level: every phase
//! a worker meets is on exactly one line (so its cursor is always on one line), and switching a
//! guard changes that guard's lines and nothing else.

// This test reads only the levels folder of the shared support.
#[allow(dead_code)]
mod support;

use std::collections::{BTreeMap, BTreeSet};

use support::levels_folder;
use twice_world::cards::CrashWorker;
use twice_world::code::{self, Program, Slot};
use twice_world::level::{self, LEVEL_SUFFIX, Level, LoadedTape, TAPE_SUFFIX, TimedAction};
use twice_world::runtime::guards::{Guard, Guards};
use twice_world::runtime::worker::Phase;
use twice_world::simulator::SimulationBuilder;

struct Shipped {
    file: String,
    level: Level,
    tapes: Vec<LoadedTape>,
}

fn shipped() -> Vec<Shipped> {
    let folder = levels_folder();
    let tapes: Vec<LoadedTape> = level::files_below(&folder, TAPE_SUFFIX)
        .expect("the tapes are listed")
        .iter()
        .map(|path| level::load_tape(path).expect("a shipped tape loads"))
        .collect();
    let levels: Vec<Shipped> = level::files_below(&folder, LEVEL_SUFFIX)
        .expect("the levels are listed")
        .into_iter()
        .map(|path| {
            let loaded = level::load_level(&path).expect("a shipped level loads");
            Shipped {
                file: path.file_name().expect("a file").to_string_lossy().into_owned(),
                tapes: tapes
                    .iter()
                    .filter(|tape| tape.level.path == loaded.path)
                    .cloned()
                    .collect(),
                level: loaded.level,
            }
        })
        .collect();
    assert!(levels.len() >= 30, "the campaign was read: {} levels", levels.len());
    assert!(
        levels.iter().all(|level| !level.tapes.is_empty()),
        "every level has a tape"
    );
    levels
}

/// The guards whose switch can change this level's program: those it shows, and those they need.
fn relevant_guards(level: &Level) -> Vec<Guard> {
    let mut relevant = BTreeSet::new();
    for guard in Guard::EVERY {
        let code = code::guard_code(guard);
        if (code.shown)(level) {
            relevant.insert(guard);
            relevant.extend(code.needs.iter().copied());
        }
    }
    relevant.into_iter().collect()
}

/// Every set of `relevant` switches, the other guards as the level has them.
fn guard_sets(level: &Level, relevant: &[Guard]) -> Vec<Guards> {
    (0u32..1 << relevant.len())
        .map(|bits| {
            let mut guards = level.guards;
            for (index, guard) in relevant.iter().enumerate() {
                guards.set(*guard, bits & (1 << index) != 0);
            }
            guards
        })
        .collect()
}

/// The guards whose lines go with `guard`'s switch: itself, and those that need it.
fn goes_with(guard: Guard) -> BTreeSet<Guard> {
    Guard::EVERY
        .into_iter()
        .filter(|other| *other == guard || code::guard_code(*other).needs.contains(&guard))
        .collect()
}

#[test]
fn no_phase_is_on_two_lines_and_switching_a_guard_changes_only_its_lines() {
    let mut programs_checked = 0;
    for shipped in shipped() {
        let level = &shipped.level;
        let relevant = relevant_guards(level);
        let sets = guard_sets(level, &relevant);
        let programs: BTreeMap<u32, Program> = sets
            .iter()
            .copied()
            .enumerate()
            .map(|(bits, guards)| (u32::try_from(bits).expect("few guards"), code::program(level, guards)))
            .collect();
        for (bits, program) in &programs {
            programs_checked += 1;
            let file = &shipped.file;
            assert!(
                (15..=code::PROGRAM_LINES_MAX).contains(&program.lines.len()),
                "{file} with switches {bits:b} of {relevant:?}: {} lines\n{}",
                program.lines.len(),
                program.numbered_text()
            );
            for phase in Phase::ALL {
                assert!(
                    program.lines_running(phase) <= 1,
                    "{file}: `{phase}` is on {} lines\n{}",
                    program.lines_running(phase),
                    program.numbered_text()
                );
            }
            for (index, guard) in relevant.iter().enumerate() {
                let other = &programs[&(bits ^ (1 << index))];
                let diff = code::diff(program, other);
                let allowed = goes_with(*guard);
                for line in diff.iter().filter(|line| line.change != code::Change::Same) {
                    let owner = line.line.guard.map(|mark| mark.guard);
                    assert!(
                        owner.is_some_and(|owner| allowed.contains(&owner)),
                        "{file}: switching {guard} changes a line of {owner:?}: {:?}",
                        line.line.text()
                    );
                }
                // Its own lines change whenever it shows at all.
                let own = |program: &Program| -> Vec<String> {
                    program
                        .lines_of(*guard)
                        .iter()
                        .map(|line| program.lines[*line].text())
                        .collect()
                };
                if !own(program).is_empty() || !own(other).is_empty() {
                    assert_ne!(
                        own(program),
                        own(other),
                        "{file}: switching {guard} changes none of its lines"
                    );
                }
            }
        }
        // The debrief's fix is that diff, for the level's own guards.
        for guard in &relevant {
            let fix = code::fix(level, level.guards, &[*guard]);
            let other = code::program(level, level.guards.with(*guard, !level.guards.is_on(*guard)));
            assert_eq!(fix.lines, code::diff(&code::program(level, level.guards), &other));
        }
        // A guard the level gives nothing to do changes nothing, whatever the others are.
        for guard in Guard::EVERY.into_iter().filter(|guard| !relevant.contains(guard)) {
            for base in [level.guards, Guards::all_on(), Guards::all_off()] {
                assert_eq!(
                    code::program(level, base.with(guard, true)),
                    code::program(level, base.with(guard, false)),
                    "{}: {guard} is not shown, yet switching it changes the program",
                    shipped.file
                );
            }
        }
    }
    assert!(programs_checked > 1_000, "{programs_checked} programs checked");
}

/// Every phase worker `w<n>` was in while the level ran, stepping one phase at a time.
fn phases_met(level: &Level, guards: Guards, tape: Option<&LoadedTape>) -> BTreeSet<Phase> {
    let mut builder = SimulationBuilder::new(level.clone(), tape.map_or(1, |tape| tape.tape.seed)).guards(guards);
    let actions: Vec<TimedAction> = tape.map(|tape| tape.tape.actions.clone()).unwrap_or_default();
    if let Some(tape) = tape {
        builder = builder.wire_rule(tape.tape.wire_rule());
    }
    let mut simulation = builder.actions(actions).build().expect("the level builds");
    let mut met = BTreeSet::new();
    loop {
        met.extend(simulation.workers().iter().map(|worker| worker.phase));
        if !simulation.step().expect("the level runs") {
            break;
        }
    }
    let workers: Vec<u32> = simulation.workers().iter().map(|worker| worker.number).collect();
    for number in workers {
        met.extend(simulation.worker_phases(number).unwrap_or_default().iter().copied());
    }
    met
}

#[test]
fn every_phase_a_worker_meets_is_on_exactly_one_line() {
    let mut met_anywhere = BTreeSet::new();
    for shipped in shipped() {
        let level = &shipped.level;
        let mut guard_sets = vec![level.guards, Guards::all_on(), Guards::all_off()];
        guard_sets.extend(Guard::EVERY.map(|guard| level.guards.with(guard, !level.guards.is_on(guard))));
        for guards in guard_sets {
            let tapes = shipped.tapes.iter().map(Some).chain([None]);
            for tape in tapes {
                // A tape's own guards are the sandbox's: play it under those too.
                let guards = tape
                    .and_then(|tape| tape.tape.guards)
                    .filter(|_| guards == level.guards)
                    .unwrap_or(guards);
                let program = code::program(level, guards);
                for phase in phases_met(level, guards, tape) {
                    met_anywhere.insert(phase);
                    assert_eq!(
                        program.lines_running(phase),
                        1,
                        "{} under {:?} ({}): a worker was at `{phase}`, on {} lines\n{}",
                        shipped.file,
                        guards.off(),
                        tape.map_or("no moves".to_owned(), |tape| tape.path.display().to_string()),
                        program.lines_running(phase),
                        program.numbered_text()
                    );
                }
            }
        }
    }
    // The campaign meets (nearly) every phase the runtime has; the ones it never meets are named.
    let never: Vec<Phase> = Phase::ALL
        .into_iter()
        .filter(|phase| !met_anywhere.contains(phase))
        .collect();
    assert!(never.len() <= 2, "phases no level ever met: {never:?}");
}

#[test]
fn a_cursor_follows_its_worker_from_line_to_line() {
    let shipped = shipped();
    let retry = shipped
        .iter()
        .find(|level| level.file.starts_with("01-"))
        .expect("level 01 ships");
    let mut simulation = SimulationBuilder::new(retry.level.clone(), 1).build().expect("builds");
    let program = code::program_of(&simulation);
    let mut lines_visited = Vec::new();
    loop {
        let cursors = code::cursors(&simulation, &program);
        assert_eq!(cursors.len(), 1, "one worker, one cursor");
        let line = cursors[0].line.expect("a worker's cursor is always on a line");
        if lines_visited.last() != Some(&line) {
            lines_visited.push(line);
        }
        if !simulation.step().expect("runs") {
            break;
        }
    }
    let slot_of = |line: usize| program.lines[line].slot;
    let slots: Vec<Slot> = lines_visited.iter().map(|line| slot_of(*line)).collect();
    // Load, decide, reserve, send, wait, record, save for the first lookup, and so on: the
    // cursor walks the loop, and ends on `return`.
    assert_eq!(
        &slots[..8],
        [
            Slot::Load,
            Slot::Decide,
            Slot::Reserve,
            Slot::Send,
            Slot::Wait,
            Slot::Record,
            Slot::Save,
            Slot::Decide
        ],
        "{lines_visited:?}"
    );
    assert_eq!(slots.last(), Some(&Slot::Exit));
    let cursor = &code::cursors(&simulation, &program)[0];
    assert_eq!(cursor.state, code::CursorState::Done);
    assert_eq!(cursor.tag(), "■ w1");
}

#[test]
fn a_crash_aimed_at_a_line_lands_there_as_the_move_a_tape_records() {
    use twice_world::checker::Outcome;
    use twice_world::code::{AimReport, Aimed};
    use twice_world::level::Play;
    use twice_world::play_session::{Mode, PlaySession, Recipe, SessionError};

    let path = levels_folder().join("05-crash-replay.level.ron");
    let recipe = Recipe {
        level: level::load_level(&path).expect("level 05 loads"),
        seed: 1,
        guards: None,
        tape: None,
    };
    let mut session = PlaySession::open(Mode::Campaign, recipe.clone(), None).expect("opens");
    let program = code::program_of(&session.simulation());
    let save = program.line_of(Phase::SaveCheckpoint).expect("a save line");
    let header = program.line_of(Phase::Start).expect("the header");
    // A line that runs no phase, a worker that is not there, a line past the end: refused.
    let no_phase = program
        .lines
        .iter()
        .position(|line| line.phases.is_empty())
        .expect("a plain line");
    assert!(matches!(session.aim_crash(1, no_phase), Err(SessionError::Aim(_))));
    assert!(matches!(session.aim_crash(7, save), Err(SessionError::Aim(_))));
    assert!(matches!(
        session.aim_crash(1, program.lines.len()),
        Err(SessionError::Aim(_))
    ));
    // Aimed twice at the same line: taken back; then aimed again.
    assert_eq!(session.aim_crash(1, save).expect("aims").0, Aimed::Armed);
    assert_eq!(session.aim_crash(1, save).expect("takes back").0, Aimed::TakenBack);
    assert!(session.crash_aims().is_empty());
    assert_eq!(session.aim_crash(1, header).expect("aims").0, Aimed::Armed);
    assert_eq!(
        session.aim_crash(1, save).expect("re-aims").0,
        Aimed::Armed,
        "another line replaces the aim"
    );
    assert_eq!(session.crash_aims().aims().len(), 1);
    session.run_to_end().expect("runs");
    let played = session.simulation().played().to_vec();
    assert_eq!(played.len(), 1, "{played:?}");
    assert_eq!(
        played[0].play,
        Play::CrashWorker(CrashWorker {
            worker: Some(1),
            in_phase: Some(Phase::SaveCheckpoint)
        })
    );
    assert!(matches!(
        session.take_aim_reports().as_slice(),
        [AimReport::Crashed {
            worker: 1,
            phase: Phase::SaveCheckpoint,
            ..
        }]
    ));
    let conclusion = session.conclusion().expect("the level is over");
    assert_eq!(conclusion.verdict.outcome, Outcome::PaidTwice, "the level's own heist");
    // The tape of it replays the same way, knowing nothing of aims.
    let tape = session
        .tape("05-crash-replay.level.ron".into(), "aimed".into())
        .expect("a tape");
    assert_eq!(tape.actions, played);
    assert_eq!(tape.expect.verdict, Outcome::PaidTwice);
    // A replay's moves are fixed: nothing is aimed there.
    let loaded = level::load_tape(&levels_folder().join("05-crash-replay.win.tape.ron")).expect("loads");
    let replay = Recipe {
        tape: Some(twice_world::play_session::TapeSource {
            path: loaded.path.clone(),
            tape: loaded.tape.clone(),
        }),
        ..recipe
    };
    let mut replay = PlaySession::open(Mode::Replay, replay, None).expect("opens");
    assert!(matches!(replay.aim_crash(1, save), Err(SessionError::ReplayAims)));
}
