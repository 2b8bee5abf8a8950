//! `twice-sim play`: a level played headless, with its debrief — what decided the run, found
//! by running it again with each guard switched (the counterfactual), and the other runs side
//! by side.

use std::path::{Path, PathBuf};

use serde::Serialize;

use twice_world::checker::Verdict;
use twice_world::code;
use twice_world::debrief::Debrief;
use twice_world::level::{self, LoadedLevel, LoadedTape};
use twice_world::report;
use twice_world::runtime::guards::Guards;
use twice_world::simulator::{Simulation, SimulationBuilder};

use super::bad_input;
use crate::cli::{EXIT_DIFFERS, EXIT_OK, guard_list};

fn same_file(left: &Path, right: &Path) -> bool {
    match (left.canonicalize(), right.canonicalize()) {
        (Ok(left), Ok(right)) => left == right,
        _ => false,
    }
}

#[derive(Serialize)]
struct PlayReport<'a> {
    level: &'a str,
    seed: u64,
    phases: u32,
    /// The timeline as the text form and the screens tell it: a guard's row re-told by the
    /// finished run's money and debrief (never "guard held" while a customer is owed).
    timeline: Vec<TimelineRow>,
    /// The moves as made: the messages they hit, the workers they killed and where.
    played: &'a [twice_world::level::TimedAction],
    ledger: Vec<twice_world::ledger::ExecutionRecord>,
    checkpoints: Vec<twice_world::ledger::Checkpoint>,
    billing: &'a twice_world::billing::Billing,
    verdict: Verdict,
    debrief: twice_world::debrief::Debrief,
    expected: Option<&'a twice_world::level::Expectation>,
    as_expected: Option<bool>,
    /// With `--code`: the loop with each worker's cursor, the tools, and the fix.
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<CodeReport>,
}

/// One timeline entry with its guard's row as told: `kind` is the told kind ("guard noted"
/// where the money says the guard did not hold), `guard_row` what the screens draw.
#[derive(Serialize)]
struct TimelineRow {
    #[serde(flatten)]
    entry: twice_world::simulator::TimelineEntry,
    #[serde(skip_serializing_if = "Option::is_none")]
    guard_row: Option<twice_world::checker::GuardRow>,
}

impl TimelineRow {
    fn all(simulation: &Simulation, telling: &twice_world::checker::RowTelling) -> Vec<TimelineRow> {
        simulation
            .timeline()
            .iter()
            .map(|entry| {
                let guard_row = entry.guard_row(telling);
                let mut entry = entry.clone();
                if let Some(row) = &guard_row {
                    row.kind.clone_into(&mut entry.kind);
                }
                TimelineRow { entry, guard_row }
            })
            .collect()
    }
}

/// The code of the run, with `--code`.
#[derive(Serialize)]
struct CodeReport {
    #[serde(flatten)]
    view: code::CodeView,
    /// The deciding guards switched: this run's lines struck, the other run's added.
    fix: Option<code::Fix>,
}

impl CodeReport {
    fn of(simulation: &Simulation, debrief: &Debrief) -> CodeReport {
        // The same other run the game and the browser diff: the debrief's first deciding line.
        let switched = debrief.fix_guards(None);
        CodeReport {
            view: code::view(simulation),
            fix: (!switched.is_empty()).then(|| code::fix(simulation.level(), simulation.guards(), &switched)),
        }
    }
}

pub fn play(
    level_path: &Path,
    seed: Option<u64>,
    tape_path: Option<&Path>,
    ledger: Option<PathBuf>,
    guards: Option<String>,
    show_code: bool,
    json: bool,
) -> u8 {
    let loaded: LoadedLevel = match level::load_level(level_path) {
        Ok(loaded) => loaded,
        Err(error) => return bad_input(error),
    };
    let tape: Option<LoadedTape> = match tape_path.map(level::load_tape).transpose() {
        Ok(tape) => tape,
        Err(error) => return bad_input(error),
    };
    if let Some(tape) = &tape
        && !same_file(&tape.level.path, level_path)
    {
        return bad_input(format!(
            "{}: the tape was recorded for level {}, not {}",
            tape.path.display(),
            tape.level.path.display(),
            level_path.display()
        ));
    }
    let guards = match guards.as_deref().map(Guards::parse_list).transpose() {
        Ok(guards) => guards,
        Err(error) => return bad_input(format!("--guards: {error}")),
    };
    // SQLite would only say "unable to open database file": say which folder is missing.
    if let Some(path) = &ledger
        && let Some(folder) = path
            .parent()
            .filter(|folder| !folder.as_os_str().is_empty() && !folder.is_dir())
    {
        return bad_input(format!(
            "--ledger {}: the folder {} does not exist; make it first (`mkdir -p {}`)",
            path.display(),
            folder.display(),
            folder.display()
        ));
    }
    let seed = seed.or(tape.as_ref().map(|tape| tape.tape.seed)).unwrap_or(1);
    let mut builder = SimulationBuilder::new(loaded.level.clone(), seed);
    if let Some(guards) = guards.or(tape.as_ref().and_then(|tape| tape.tape.guards)) {
        builder = builder.guards(guards);
    }
    if let Some(tape) = &tape {
        builder = builder
            .actions(tape.tape.actions.clone())
            .wire_rule(tape.tape.wire_rule());
    }
    if let Some(path) = &ledger {
        builder = builder.ledger_file(path);
    }
    let simulation = match builder
        .build()
        .and_then(|mut simulation| simulation.run().map(|_| simulation))
    {
        Ok(simulation) => simulation,
        Err(error) => return bad_input(error),
    };
    let verdict = match simulation.verdict() {
        Ok(verdict) => verdict,
        Err(error) => return bad_input(error),
    };
    let expected = tape.as_ref().map(|tape| &tape.tape.expect);
    let as_expected =
        match expected.map(|expected| twice_world::replay::run_as_expected(expected, &simulation, &verdict)) {
            Some(Ok(as_expected)) => Some(as_expected),
            Some(Err(error)) => return bad_input(error),
            None => None,
        };
    let counterfactual = match twice_world::counterfactual::of(&simulation) {
        Ok(counterfactual) => Some(counterfactual),
        Err(error) => {
            // The run itself stands; only what decided it cannot be told.
            eprintln!("warning: no counterfactual debrief: {error}");
            None
        }
    };
    let debrief = twice_world::debrief::with_counterfactual(&simulation, &verdict, counterfactual);
    if json {
        let code = show_code.then(|| CodeReport::of(&simulation, &debrief));
        let report = PlayReport {
            level: &loaded.level.id,
            seed,
            phases: simulation.phase(),
            timeline: TimelineRow::all(&simulation, &debrief.row_telling(&verdict)),
            played: simulation.played(),
            ledger: simulation.ledger_records().unwrap_or_default(),
            checkpoints: simulation.checkpoints().unwrap_or_default(),
            billing: simulation.billing(),
            verdict: verdict.clone(),
            debrief,
            expected,
            as_expected,
            code,
        };
        println!("{}", serde_json::to_string_pretty(&report).expect("reports serialize"));
    } else {
        print_play(&simulation, &loaded, seed, &verdict, &debrief);
        if show_code {
            print_code(&CodeReport::of(&simulation, &debrief), &simulation);
        }
        print_after(ledger.as_deref(), expected, as_expected);
    }
    if as_expected == Some(false) {
        EXIT_DIFFERS
    } else {
        EXIT_OK
    }
}

fn print_play(simulation: &Simulation, loaded: &LoadedLevel, seed: u64, verdict: &Verdict, debrief: &Debrief) {
    println!(
        "{} — {} (seed {seed}, guards off: [{}])\n",
        loaded.level.id,
        loaded.level.title,
        guard_list(&simulation.guards().off())
    );
    println!(
        "== timeline ==\n{}",
        report::timeline(simulation.timeline(), &debrief.row_telling(verdict))
    );
    println!(
        "== ledger ({}) ==\n{}",
        simulation.ledger().location(),
        report::ledger(
            &simulation.ledger_records().unwrap_or_default(),
            &simulation.checkpoints().unwrap_or_default()
        )
    );
    if let Some(second) = simulation.second_node_ledger() {
        println!(
            "== the second node's ledger ({}) ==\n{}",
            second.location(),
            report::ledger(
                &second.all_records().unwrap_or_default(),
                &second.checkpoints().unwrap_or_default()
            )
        );
    }
    println!("== billing ==\n{}", report::billing(simulation.billing()));
    println!("== verdict ==\n{}", report::verdict(verdict));
    if let Some(counterfactual) = &debrief.counterfactual {
        println!("== counterfactual ==\n{}", report::counterfactual(counterfactual));
    }
    println!("== debrief ==\n{}", report::debrief(debrief));
}

/// `--code`: the loop with each worker's line, the run line by line, the tools, the fix.
fn print_code(report: &CodeReport, simulation: &Simulation) {
    let view = &report.view;
    println!("\n== the code: {} ==", code::ABOUT);
    print!("{}", code::listing(&view.program, &view.cursors));
    println!("\n== the loop, phase by phase: each worker's phase and the line it ran ==");
    print!("{}", code::trace(simulation.timeline(), &view.program));
    println!("\n== Penny's tools, as declared ==");
    for line in &view.tools {
        println!("{}", line.text);
    }
    if let Some(fix) = &report.fix {
        println!(
            "\n== the fix: {} (switched: {}; - this run, + the other run) ==",
            fix.caption,
            guard_list(&fix.switched)
        );
        print!("{}", fix.text());
    }
}

/// Where the ledger file is, and whether the tape's verdict came out as it expects.
fn print_after(ledger: Option<&Path>, expected: Option<&twice_world::level::Expectation>, as_expected: Option<bool>) {
    if let Some(path) = ledger {
        println!(
            "\nThe ledger is in {}: open it with `sqlite3 {} 'select * from tool_executions'`",
            path.display(),
            path.display()
        );
    }
    if let (Some(expected), Some(ok)) = (expected, as_expected) {
        println!(
            "\nexpected {} stopped by [{}]: {}",
            expected.verdict,
            guard_list(&expected.stopped_by),
            if ok { "as expected" } else { "DIFFERS" }
        );
    }
}
