//! `twice-sim replay --runtime 'CMD …' PATHS`: the tapes played against a runtime that brings
//! its own (see `twice_drill::runtime_protocol`), and `twice-sim runtime-adapter`, Twice's own
//! runtime through the protocol. Each tape the protocol can express is played with exactly the
//! guards the runtime claims, and its money judged per customer against what a correct
//! runtime with those guards must do; the others are counted, each with why.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use super::bad_input;
use twice_drill::runtime_protocol::{LIMITS, Limits, RuntimeUnderTest, TapeOutcome, TapeReport, run_tape};
use twice_world::exit::{EXIT_BAD_INPUT, EXIT_DIFFERS, EXIT_FAILED, EXIT_OK};
use twice_world::level;
use twice_world::text::counted;

/// The longest step or tape limit `--step-timeout-ms` and `--tape-timeout-ms` accept, in ms.
pub const TIMEOUT_MS_MAX: u64 = 3_600_000;

/// `replay`'s options for a runtime of one's own.
#[derive(Debug, clap::Args)]
pub struct RuntimeOptions {
    /// Play the tapes against this runtime instead of Twice's own: a command, run by `sh -c`
    /// once per worker, that speaks the runtime protocol on its standard input and output
    /// (see the book's chapter "Bring your own runtime").
    #[arg(long, value_name = "CMD")]
    pub runtime: Option<String>,
    /// With --runtime: print each tape's protocol session.
    #[arg(long, requires = "runtime")]
    pub verbose: bool,
    /// With --runtime: the longest a runtime's process may take to reach its next step, in
    /// milliseconds (past it, it hangs).
    #[arg(long, requires = "runtime", default_value_t = LIMITS.step_ms,
          value_parser = clap::value_parser!(u64).range(1..=TIMEOUT_MS_MAX))]
    pub step_timeout_ms: u64,
    /// With --runtime: the longest one tape may take, in milliseconds.
    #[arg(long, requires = "runtime", default_value_t = LIMITS.tape_ms,
          value_parser = clap::value_parser!(u64).range(1..=TIMEOUT_MS_MAX))]
    pub tape_timeout_ms: u64,
}

/// What the whole replay came to, for `--json`.
#[derive(Serialize)]
struct Summary<'a> {
    runtime: &'a str,
    tapes: usize,
    expressible: usize,
    passed: usize,
    failed: usize,
    broken: usize,
    not_expressible: BTreeMap<&'static str, usize>,
    errors: &'a [String],
    reports: &'a [TapeReport],
}

/// Plays the tapes under `paths` against the runtime `options.runtime` names.
pub fn replay_runtime(files: &[PathBuf], command: &str, options: &RuntimeOptions, json: bool) -> u8 {
    if command.trim().is_empty() {
        return bad_input("--runtime: give the command that starts one of your runtime's processes");
    }
    let runtime = RuntimeUnderTest {
        command: command.to_owned(),
        limits: Limits {
            step_ms: options.step_timeout_ms,
            tape_ms: options.tape_timeout_ms,
            ..LIMITS
        },
    };
    let tokio = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(tokio) => tokio,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return EXIT_FAILED;
        }
    };
    let mut reports = Vec::new();
    let mut errors = Vec::new();
    for file in files {
        match level::load_tape(file) {
            Ok(tape) => {
                let report = tokio.block_on(run_tape(&runtime, &tape));
                if !json {
                    print_report(&report, options.verbose);
                }
                reports.push(report);
            }
            Err(error) => {
                if !json {
                    eprintln!("error: {error}");
                }
                errors.push(error.to_string());
            }
        }
    }
    let count = |wanted: fn(&TapeOutcome) -> bool| reports.iter().filter(|report| wanted(&report.outcome)).count();
    let passed = count(|outcome| matches!(outcome, TapeOutcome::Passed));
    let failed = count(|outcome| matches!(outcome, TapeOutcome::Failed { .. }));
    let broken = count(|outcome| matches!(outcome, TapeOutcome::Broken { .. } | TapeOutcome::Trouble { .. }));
    let mut not_expressible: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut explained: BTreeMap<&'static str, String> = BTreeMap::new();
    for report in &reports {
        if let TapeOutcome::NotExpressible(reason) = &report.outcome {
            *not_expressible.entry(reason.short()).or_default() += 1;
            explained.entry(reason.short()).or_insert_with(|| reason.explain());
        }
    }
    let skipped: usize = not_expressible.values().sum();
    let expressible = reports.len() - skipped;
    if json {
        let summary = Summary {
            runtime: command,
            tapes: files.len(),
            expressible,
            passed,
            failed,
            broken,
            not_expressible,
            errors: &errors,
            reports: &reports,
        };
        println!("{}", serde_json::to_string_pretty(&summary).expect("reports serialize"));
    } else {
        println!(
            "{}: the protocol can express {expressible} ({passed} paid as a correct runtime with its guards must, {failed} not, {broken} broken){}",
            counted(files.len() as u64, "tape", "tapes"),
            if errors.is_empty() {
                String::new()
            } else {
                format!(", {} could not be read", errors.len())
            }
        );
        if skipped > 0 {
            println!("{} it cannot:", counted(skipped as u64, "tape", "tapes"));
            for (short, tapes) in &not_expressible {
                println!("  {tapes} {short}: {}", explained[short]);
            }
        }
    }
    if !errors.is_empty() || broken > 0 {
        EXIT_BAD_INPUT
    } else if failed > 0 {
        EXIT_DIFFERS
    } else if expressible == 0 {
        eprintln!("error: none of these tapes is one the protocol can play against this runtime");
        EXIT_BAD_INPUT
    } else {
        EXIT_OK
    }
}

fn print_report(report: &TapeReport, verbose: bool) {
    let tape = report.tape.display();
    match &report.outcome {
        TapeOutcome::Passed => {
            let money = report.actual.as_ref().map(|actual| {
                format!(
                    "{} ({}), as a correct runtime with its guards pays",
                    actual.money_words(),
                    actual.outcome
                )
            });
            println!("ok      {tape}  {}", money.unwrap_or_default());
        }
        TapeOutcome::Failed { differences } => {
            println!("FAILS   {tape}  {}", differences.join("; "));
        }
        TapeOutcome::Broken { worker, what, stderr } => {
            let _ = worker;
            println!("ERROR   {tape}  {what}");
            if !stderr.is_empty() {
                for line in stderr.lines().rev().take(5).collect::<Vec<_>>().into_iter().rev() {
                    println!("        stderr: {line}");
                }
            }
        }
        TapeOutcome::Trouble { what } => println!("ERROR   {tape}  Twice could not play it: {what}"),
        TapeOutcome::NotExpressible(reason) => println!("skip    {tape}  {}", reason.short()),
    }
    let playing = matches!(report.outcome, TapeOutcome::Passed | TapeOutcome::Failed { .. });
    if playing || verbose {
        if let Some(diverged) = &report.diverged
            && (verbose || !matches!(report.outcome, TapeOutcome::Passed))
        {
            println!("        left the expected run {diverged}");
        }
        for unplayed in &report.unplayed {
            println!("        not played: {unplayed}");
        }
        for unannounced in &report.unannounced {
            println!("        {unannounced}");
        }
        for contradiction in &report.contradictions {
            println!("        {contradiction}");
        }
    }
    if verbose {
        if let Some(claimed) = &report.claimed {
            println!(
                "        runtime {} claims [{}]",
                report.runtime.as_deref().unwrap_or("?"),
                claimed.join(", ")
            );
        }
        if let (Some(expected), Some(actual)) = (&report.expected, &report.actual) {
            println!("        must: {} ({})", expected.money_words(), expected.outcome);
            println!("        got:  {} ({})", actual.money_words(), actual.outcome);
        }
        for line in &report.session {
            println!("        | {line}");
        }
    } else if matches!(report.outcome, TapeOutcome::Broken { .. }) {
        for line in report
            .session
            .iter()
            .rev()
            .take(6)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            println!("        | {line}");
        }
    }
}
