//! `twice-sim explore --runtime 'CMD …' LEVEL`: the explorer's search for a heist, played on a
//! runtime that brings its own. A schedule played on real processes costs real time, so the
//! explorer deals its schedules as ever, simulates each against the level's own runtime and
//! against the most naive one the simulator has, and plays on the runtime only those that are
//! a heist against one of them — until one beats the runtime too. The find is
//! written as a tape (not shrunk: each try is real processes), which `replay --runtime` plays
//! again.

use std::path::Path;

use serde::Serialize;

use super::bad_input;
use super::explore::{ExploreArgs, write_tape};
use super::runtime::RuntimeOptions;
use twice_drill::runtime_protocol::{LIMITS, Limits, RuntimeUnderTest, TapeOutcome, TapeReport, run_tape};
use twice_world::checker;
use twice_world::counterfactual;
use twice_world::exit::{EXIT_BAD_INPUT, EXIT_FAILED};
use twice_world::explore::Explorer;
use twice_world::level::{self, Expectation, LoadedLevel, LoadedTape, TAPE_VERSION, Tape};
use twice_world::replay;
use twice_world::runtime::guards::Guards;
use twice_world::runtime::ledger::LedgerStore;
use twice_world::text::counted;

/// Schedules played on the runtime at most, by default.
pub const CANDIDATES_DEFAULT: u64 = 20;
/// The most `--candidates` may ask for.
pub const CANDIDATES_MAX: u64 = 10_000;

/// What the command line settled before the search.
#[derive(Debug)]
pub struct Search<'a> {
    pub loaded: &'a LoadedLevel,
    pub goal: checker::Outcome,
    pub out: &'a Path,
    /// The level's path as the written tape names it.
    pub level_file: &'a str,
}

#[derive(Serialize)]
struct Found<'a> {
    schedule_index: u64,
    tape: &'a Path,
    report: &'a TapeReport,
    /// The simulator's runtime with the guards this runtime claims falls to it too.
    beats_its_guards: bool,
}

#[derive(Serialize)]
struct Summary<'a> {
    level: &'a str,
    runtime: &'a str,
    goal: checker::Outcome,
    schedules_dealt: u64,
    not_expressible: u64,
    candidates_played: u64,
    found: Option<Found<'a>>,
}

fn limits(options: &RuntimeOptions) -> Limits {
    Limits {
        step_ms: options.step_timeout_ms,
        tape_ms: options.tape_timeout_ms,
        ..LIMITS
    }
}

/// A dealt schedule as a tape of the level (its expectation: the simulator's own verdict).
fn tape_of(search: &Search<'_>, seed: u64, actions: Vec<level::TimedAction>, index: u64) -> LoadedTape {
    let mut level = search.loaded.clone();
    level.level.goal = search.goal;
    LoadedTape {
        path: search.out.to_path_buf(),
        text: String::new(),
        tape: Tape {
            version: TAPE_VERSION,
            level: search.level_file.to_owned(),
            seed,
            title: format!(
                "Found by `twice-sim explore --runtime` (schedule {index}), goal {}",
                search.goal
            ),
            guards: None,
            actions,
            expect: Expectation {
                verdict: search.goal,
                stopped_by: Vec::new(),
                paid_cents: Default::default(),
                keys: Default::default(),
                violations: Vec::new(),
            },
        },
        level,
    }
}

/// The tape's own verdict, if the schedule is a heist somewhere: against the level's own
/// runtime, or against the most naive runtime the simulator has (every guard off, each move
/// played where it meets what it hit). Only such a schedule is worth a runtime's real time.
fn heist_somewhere(tape: &LoadedTape) -> Option<checker::Verdict> {
    let mut own = replay::simulation_of(tape, LedgerStore::Memory).ok()?;
    own.run().ok()?;
    // A schedule with a move that fizzled or that the quiet run played early would be written
    // as a tape `replay` refuses (it says so at the move's line): not a tape worth finding.
    if !own.misplays().is_empty() {
        return None;
    }
    let verdict = own.verdict().ok()?;
    let naive = || {
        counterfactual::under_guards(&own, Guards::all_off())
            .ok()
            .and_then(|other| other.result().map(|result| result.goal_reached))
            .unwrap_or(false)
    };
    (verdict.goal_reached || naive()).then_some(verdict)
}

/// Runs the search; exit 0 with a heist found (its tape written), 1 with none, 2 for bad input
/// or a runtime that broke the protocol.
pub fn explore_runtime(args: &ExploreArgs, command: &str, search: &Search<'_>) -> u8 {
    let runtime = RuntimeUnderTest {
        command: command.to_owned(),
        limits: limits(&args.runtime),
    };
    let explorer = Explorer::new(search.loaded.level.clone(), search.loaded.level.guards, args.seed).goal(search.goal);
    let dealer = match explorer.dealer() {
        Ok(dealer) => dealer,
        Err(error) => return bad_input(error),
    };
    let tokio = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(tokio) => tokio,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return EXIT_FAILED;
        }
    };
    if !args.json {
        println!(
            "exploring {} against `{command}`: up to {} dealt (seed {}), at most {} played on the runtime, goal {}",
            search.loaded.level.id,
            counted(args.schedules, "schedule", "schedules"),
            args.seed,
            args.candidates,
            search.goal
        );
    }
    let (mut dealt, mut not_expressible, mut played) = (0, 0, 0);
    let mut found = None;
    for index in 0..args.schedules {
        if played >= args.candidates {
            break;
        }
        let (seed, actions) = match dealer.deal(index) {
            Ok(dealt) => dealt,
            Err(error) => return bad_input(error),
        };
        dealt += 1;
        let mut tape = tape_of(search, seed, actions, index);
        if twice_drill::runtime_protocol::expressible::why_not(&tape).is_some() {
            not_expressible += 1;
            continue;
        }
        let Some(verdict) = heist_somewhere(&tape) else {
            continue;
        };
        tape.tape.expect = Expectation::of(&verdict);
        played += 1;
        let report = tokio.block_on(run_tape(&runtime, &tape));
        match &report.outcome {
            TapeOutcome::Broken { what, .. } | TapeOutcome::Trouble { what } => {
                eprintln!("error: schedule {index}: {what}");
                return EXIT_BAD_INPUT;
            }
            _ if report.actual.as_ref().is_some_and(|actual| actual.goal_reached) => {
                found = Some((index, tape, report));
                break;
            }
            _ if !args.json => println!(
                "schedule {index}: held ({})",
                report
                    .actual
                    .as_ref()
                    .map(|actual| actual.money_words())
                    .unwrap_or_default()
            ),
            _ => {}
        }
    }
    let found = match found {
        Some((index, tape, report)) => {
            let text = format!("// {}\n{}\n", tape.tape.title, level::tape_to_ron(&tape.tape));
            if let Err(error) = write_tape(search.out, &text, args.force) {
                return bad_input(error);
            }
            let beats_its_guards = report.expected.as_ref().is_some_and(|expected| expected.goal_reached);
            Some((index, report, beats_its_guards))
        }
        None => None,
    };
    let summary = Summary {
        level: &search.loaded.level.id,
        runtime: command,
        goal: search.goal,
        schedules_dealt: dealt,
        not_expressible,
        candidates_played: played,
        found: found.as_ref().map(|(index, report, beats_its_guards)| Found {
            schedule_index: *index,
            tape: search.out,
            report,
            beats_its_guards: *beats_its_guards,
        }),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary).expect("reports serialize"));
    } else {
        print_human(&summary);
    }
    args.expect.exit(found.is_some())
}

fn print_human(summary: &Summary<'_>) {
    println!(
        "{} dealt, {} the protocol cannot play, {} played on the runtime",
        counted(summary.schedules_dealt, "schedule", "schedules"),
        summary.not_expressible,
        summary.candidates_played
    );
    let Some(found) = &summary.found else {
        println!(
            "no heist ({}) against the runtime in the schedules played",
            summary.goal
        );
        return;
    };
    let report = found.report;
    let actual = report
        .actual
        .as_ref()
        .map(|actual| actual.money_words())
        .unwrap_or_default();
    let expected = report
        .expected
        .as_ref()
        .map(|expected| expected.money_words())
        .unwrap_or_default();
    println!("HEIST   schedule {}: the runtime paid {actual}", found.schedule_index);
    if found.beats_its_guards {
        println!(
            "        a runtime with the guards it claims pays {expected} too: those guards do not stop this heist"
        );
    } else {
        println!("        a runtime with the guards it claims pays {expected}: the runtime does not do what it claims");
    }
    if let Some(diverged) = &report.diverged {
        println!("        it left the expected run {diverged}");
    }
    println!(
        "        written to {} (replay it: twice-sim replay --runtime '{}' {})",
        found.tape.display(),
        summary.runtime,
        found.tape.display()
    );
}
