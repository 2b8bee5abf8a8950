//! `twice-sim explore`: the explorer on the command line.

use super::bad_input;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use serde::Serialize;

use twice_world::checker;
use twice_world::error::InputError;
use twice_world::explore::{Explorer, Found, JOBS_MAX, Outcome, Progress, SCHEDULES_MAX, Stage};
use twice_world::ledger::LedgerStore;
use twice_world::level::{self, TimedAction};
use twice_world::replay::ReplayError;
use twice_world::replay::replay_tape;
use twice_world::runtime::guards::{Guard, Guards, UnknownGuard};
use twice_world::text::counted;

/// Schedules tried when `--schedules` is not given.
pub const SCHEDULES_DEFAULT: u64 = 100_000;
/// How often progress is printed when standard error is not a terminal (a log, CI).
const PROGRESS_LINE_INTERVAL: Duration = Duration::from_secs(5);

#[derive(Debug, clap::Args)]
pub struct ExploreArgs {
    /// The level file (`levels/*.level.ron`).
    pub level: PathBuf,
    /// How many random fault schedules to try at most.
    #[arg(long, default_value_t = SCHEDULES_DEFAULT,
          value_parser = clap::value_parser!(u64).range(1..=SCHEDULES_MAX))]
    pub schedules: u64,
    /// The explorer's seed: the same seed finds the same heist, whatever --jobs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Worker threads (default: the machine's available parallelism).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=JOBS_MAX as u64))]
    pub jobs: Option<u64>,
    /// Guards to leave on: `all`, `none`, or a comma-separated list (default: the level's).
    #[arg(long)]
    pub guards: Option<String>,
    /// Guards to switch off, after --guards: a comma-separated list (say `ledger`).
    #[arg(long)]
    pub guards_off: Option<String>,
    /// Look for this outcome instead of the level's goal: paid_twice, not_paid_but_owed,
    /// unknown_flagged or paid_once.
    #[arg(long)]
    pub goal: Option<String>,
    /// Where to write the found tape: a file, or a folder to write `<level stem>.explored.tape.ron`
    /// in (default: that name here).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Overwrite the --out file if it exists.
    #[arg(long)]
    pub force: bool,
    /// Where each schedule's ledger lives: `memory` (a pure-Rust store with the same answers
    /// as SQLite, much faster) or `sqlite` (an in-memory SQLite database). A find is confirmed
    /// on SQLite either way, by replaying the written tape as `twice-sim replay` does.
    #[arg(long, default_value_t = LedgerStore::Memory)]
    pub store: LedgerStore,
    /// What the search is expected to find: `found` (exit 0 when a heist is found, the
    /// default) or `none` (exit 0 when none is: a defence held in CI). A heist found is
    /// written to --out either way.
    #[arg(long, default_value = "found", value_parser = twice_world::exit::Expect::parse)]
    pub expect: twice_world::exit::Expect,
    /// Machine-readable output (no progress lines).
    #[arg(long)]
    pub json: bool,
    /// With --runtime: the most dealt schedules played on the runtime (each costs real
    /// processes and time; a schedule is played there only if it is a heist, in the simulator,
    /// against the level's own runtime or against one with every guard off).
    #[arg(long, requires = "runtime", default_value_t = super::runtime_explore::CANDIDATES_DEFAULT,
          value_parser = clap::value_parser!(u64).range(1..=super::runtime_explore::CANDIDATES_MAX))]
    pub candidates: u64,
    #[command(flatten)]
    pub runtime: super::runtime::RuntimeOptions,
}

/// Why `explore`'s input or its written tape is refused; each names the flag or file.
#[derive(Debug, thiserror::Error)]
pub(super) enum ExploreInputError {
    #[error("unknown outcome `{0}`; known outcomes: paid_twice, not_paid_but_owed, unknown_flagged, paid_once")]
    UnknownGoal(String),
    #[error("{path}: {error}")]
    LevelPath { path: String, error: std::io::Error },
    #[error("--out folder {folder}: {error}")]
    OutFolder { folder: String, error: std::io::Error },
    #[error("the level's path {0} is not UTF-8, so a tape cannot name it")]
    NotUtf8(String),
    #[error("--guards: {0}")]
    Guards(#[source] UnknownGuard),
    #[error("--guards-off: unknown guard `{0}`; known guards: {known}", known = known_guards())]
    GuardOff(String),
    #[error("cannot write {path}: {error}")]
    CannotWrite { path: String, error: std::io::Error },
    #[error("the written tape does not replay: {0}")]
    TapeUnreadable(#[source] InputError),
    #[error("the written tape does not replay: {0}")]
    TapeNotReplayed(#[source] ReplayError),
    #[error("{path}: the written tape replays to {replayed}, not the {found} it was found with")]
    ReplaysOtherwise {
        path: String,
        replayed: checker::Outcome,
        found: checker::Outcome,
    },
}

fn known_guards() -> String {
    let known: Vec<&str> = Guard::ALL.iter().map(|guard| guard.name()).collect();
    known.join(", ")
}

fn parse_goal(text: &str) -> Result<checker::Outcome, ExploreInputError> {
    use checker::Outcome::*;
    [PaidTwice, NotPaidButOwed, UnknownFlagged, PaidOnce]
        .into_iter()
        .find(|outcome| outcome.name() == text.trim())
        .ok_or_else(|| ExploreInputError::UnknownGoal(text.to_owned()))
}

/// `19-vault.level.ron` → `19-vault.explored.tape.ron`, in the current folder.
fn default_out(level_path: &Path) -> PathBuf {
    let name = level_path
        .file_name()
        .map_or_else(|| "level".to_owned(), |name| name.to_string_lossy().into_owned());
    let stem = name.strip_suffix(twice_world::campaign::LEVEL_SUFFIX).unwrap_or(&name);
    PathBuf::from(format!("{stem}.explored{}", twice_world::campaign::TAPE_SUFFIX))
}

/// The level's path as the tape names it: relative to the folder the tape is written to.
pub(super) fn level_reference(level_path: &Path, out: &Path) -> Result<String, ExploreInputError> {
    let level_path = level_path
        .canonicalize()
        .map_err(|error| ExploreInputError::LevelPath {
            path: level_path.display().to_string(),
            error,
        })?;
    let out_folder = match out.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let out_folder = out_folder
        .canonicalize()
        .map_err(|error| ExploreInputError::OutFolder {
            folder: out_folder.display().to_string(),
            error,
        })?;
    let relative = pathdiff::diff_paths(&level_path, &out_folder).unwrap_or(level_path);
    relative
        .to_str()
        .map(str::to_owned)
        .ok_or_else(|| ExploreInputError::NotUtf8(relative.display().to_string()))
}

fn play_text(action: &TimedAction) -> String {
    let play = ron::to_string(&action.play).unwrap_or_else(|error| format!("{:?} ({error})", action.play));
    format!("phase {:>3}: {play}", action.at_phase)
}

fn guard_names(guards: &[Guard]) -> String {
    if guards.is_empty() {
        "none".into()
    } else {
        guards.iter().map(|guard| guard.name()).collect::<Vec<_>>().join(", ")
    }
}

#[derive(Serialize)]
struct FoundReport<'a> {
    schedule_index: u64,
    simulation_seed: u64,
    dealt_actions: usize,
    actions: &'a [TimedAction],
    verdict: checker::Outcome,
    stopped_by: &'a [Guard],
    shrink_simulations: u64,
    shrink_cancelled: bool,
    tape: &'a Path,
}

#[derive(Serialize)]
struct Report<'a> {
    level: &'a str,
    level_file: &'a Path,
    seed: u64,
    jobs: usize,
    store: LedgerStore,
    guards_off: Vec<Guard>,
    goal: checker::Outcome,
    schedules_total: u64,
    schedules_run: u64,
    search_elapsed_ms: u128,
    elapsed_ms: u128,
    schedules_per_second: f64,
    cancelled: bool,
    found: Option<FoundReport<'a>>,
}

/// Runs `twice-sim explore`: exit 0 when the search came to what `--expect` says (by
/// default: a heist found, its tape written), 1 when it did not, 2 for bad input.
pub fn explore_command(args: ExploreArgs) -> u8 {
    let loaded = match level::load_level(&args.level) {
        Ok(loaded) => loaded,
        Err(error) => return bad_input(error),
    };
    let guards = match guards_of(&args, loaded.level.guards) {
        Ok(guards) => guards,
        Err(error) => return bad_input(error),
    };
    let goal = match args.goal.as_deref().map(parse_goal).transpose() {
        Ok(goal) => goal.unwrap_or(loaded.level.goal),
        Err(error) => return bad_input(format!("--goal: {error}")),
    };
    // A folder given as --out gets the default name inside it.
    let out = match &args.out {
        Some(folder) if folder.is_dir() => folder.join(default_out(&args.level)),
        Some(file) => file.clone(),
        None => default_out(&args.level),
    };
    if out.exists() && !args.force {
        return bad_input(format!(
            "{} already exists; pass --force to overwrite it, or choose another --out",
            out.display()
        ));
    }
    // Checked before the search, so a bad --out does not waste a long run.
    let level_file = match level_reference(&args.level, &out) {
        Ok(reference) => reference,
        Err(error) => return bad_input(error),
    };
    if let Some(command) = &args.runtime.runtime {
        if args.guards.is_some() || args.guards_off.is_some() {
            return bad_input(
                "--guards and --guards-off do not go with --runtime: the runtime says which guards it implements",
            );
        }
        let search = super::runtime_explore::Search {
            loaded: &loaded,
            goal,
            out: &out,
            level_file: &level_file,
        };
        return super::runtime_explore::explore_runtime(&args, command, &search);
    }
    let jobs = args.jobs.map_or_else(
        || {
            std::thread::available_parallelism()
                .map_or(1, |count| count.get())
                .min(JOBS_MAX)
        },
        |jobs| jobs as usize,
    );
    let explorer = Explorer::new(loaded.level.clone(), guards, args.seed)
        .schedules(args.schedules)
        .jobs(jobs)
        .ledger_store(args.store)
        .goal(goal);
    if !args.json {
        println!(
            "exploring {} ({}): up to {}, seed {}, {}, {} store, guards off: [{}], goal {goal}",
            loaded.level.id,
            args.level.display(),
            counted(args.schedules, "schedule", "schedules"),
            args.seed,
            counted(jobs as u64, "job", "jobs"),
            args.store,
            guard_names(&guards.off()),
        );
    }
    let terminal = std::io::stderr().is_terminal();
    let quiet = args.json;
    let progress = progress_lines(terminal, quiet);
    let cancel = AtomicBool::new(false);
    let outcome = match explorer.run(&progress, &cancel) {
        Ok(outcome) => outcome,
        Err(error) => return bad_input(error),
    };
    if terminal && !quiet {
        eprintln!();
    }
    let written = match &outcome.found {
        Some(found) => {
            if let Err(error) = write_found(found, &args, goal, &guards, &level_file, &out) {
                return bad_input(error);
            }
            true
        }
        None => false,
    };
    if args.json {
        print_json(&args, &loaded.level.id, jobs, guards, goal, &outcome, &out);
    } else {
        print_human(&args, goal, &outcome, &out);
    }
    args.expect.exit(written)
}

/// The guards the search runs with: `--guards` (or the level's), then `--guards-off`.
fn guards_of(args: &ExploreArgs, level_guards: Guards) -> Result<Guards, ExploreInputError> {
    let mut guards = args
        .guards
        .as_deref()
        .map(Guards::parse_list)
        .transpose()
        .map_err(ExploreInputError::Guards)?
        .unwrap_or(level_guards);
    if let Some(off) = &args.guards_off {
        for name in off.split(',').map(str::trim).filter(|name| !name.is_empty()) {
            let Some(guard) = Guard::from_name(name) else {
                return Err(ExploreInputError::GuardOff(name.to_owned()));
            };
            guards.set(guard, false);
        }
    }
    Ok(guards)
}

/// The search's progress on standard error: one line rewritten in place on a terminal, a
/// line every [`PROGRESS_LINE_INTERVAL`] elsewhere, nothing with `--json`.
fn progress_lines(terminal: bool, quiet: bool) -> impl Fn(Progress) {
    let last_line = std::cell::Cell::new(Instant::now());
    move |progress: Progress| {
        if quiet || (!terminal && last_line.get().elapsed() < PROGRESS_LINE_INTERVAL) {
            return;
        }
        last_line.set(Instant::now());
        let seconds = progress.elapsed.as_secs_f64().max(f64::EPSILON);
        let line = match progress.stage {
            Stage::Searching => format!(
                "  {}/{} schedules, {:.0}/s{}",
                progress.schedules_done,
                progress.schedules_total,
                progress.schedules_done as f64 / seconds,
                progress
                    .lowest_find
                    .map_or_else(String::new, |index| format!(", found at schedule {index}"))
            ),
            Stage::Shrinking => format!(
                "  shrinking: {}",
                counted(progress.schedules_done, "simulation", "simulations")
            ),
        };
        if terminal {
            eprint!("\r{line:<60}");
        } else {
            eprintln!("{line}");
        }
        let _ = std::io::stderr().flush();
    }
}

/// Writes the heist found as a tape at `out`, then reads it back through the same path as
/// `twice-sim replay`, so what was written is known to load and to replay to the verdict it
/// names.
fn write_found(
    found: &Found,
    args: &ExploreArgs,
    goal: checker::Outcome,
    guards: &Guards,
    level_file: &str,
    out: &Path,
) -> Result<(), ExploreInputError> {
    let title = format!(
        "Found by `twice-sim explore` (seed {}, schedule {}), goal {goal}, guards off: [{}]",
        args.seed,
        found.schedule_index,
        guard_names(&guards.off())
    );
    let tape = found.to_tape(level_file, &title);
    let text = format!("// {title}\n{}\n", level::tape_to_ron(&tape));
    write_tape(out, &text, args.force)?;
    let tape = level::load_tape(out).map_err(ExploreInputError::TapeUnreadable)?;
    let result = replay_tape(&tape).map_err(ExploreInputError::TapeNotReplayed)?;
    if !result.as_expected {
        return Err(ExploreInputError::ReplaysOtherwise {
            path: out.display().to_string(),
            replayed: result.verdict.outcome,
            found: found.verdict.outcome,
        });
    }
    Ok(())
}

pub(super) fn write_tape(out: &Path, text: &str, force: bool) -> Result<(), ExploreInputError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if force {
        options.create(true).truncate(true);
    } else {
        // Not `create`: a file that appeared during the search is not overwritten either.
        options.create_new(true);
    }
    let cannot_write = |error| ExploreInputError::CannotWrite {
        path: out.display().to_string(),
        error,
    };
    let mut file = options.open(out).map_err(cannot_write)?;
    file.write_all(text.as_bytes()).map_err(cannot_write)
}

fn print_human(args: &ExploreArgs, goal: checker::Outcome, outcome: &Outcome, out: &Path) {
    let figures = format!(
        "{} in {:.2} s, {:.0} schedules/s",
        counted(outcome.schedules_run, "schedule", "schedules"),
        outcome.search_elapsed.as_secs_f64(),
        outcome.schedules_per_second()
    );
    match &outcome.found {
        None if outcome.cancelled => println!("cancelled: nothing found ({figures})"),
        None => println!(
            "nothing reached {goal} in {} ({figures})",
            counted(args.schedules, "schedule", "schedules")
        ),
        Some(found) => {
            println!(
                "found: schedule {} (simulation seed {}) reaches {goal} ({figures})",
                found.schedule_index, found.simulation_seed
            );
            println!(
                "shrunk from {} to {} in {}{}:",
                counted(found.dealt.len() as u64, "action", "actions"),
                counted(found.actions.len() as u64, "action", "actions"),
                counted(found.shrink_simulations, "simulation", "simulations"),
                if found.shrink_cancelled {
                    " (cancelled early)"
                } else {
                    ""
                }
            );
            for action in &found.actions {
                println!("  {}", play_text(action));
            }
            println!(
                "verdict: {} [stopped by: {}]",
                found.verdict.outcome,
                guard_names(&found.verdict.stopped_by)
            );
            println!(
                "wrote {}: replay it with `twice-sim replay {}`",
                out.display(),
                out.display()
            );
        }
    }
}

fn print_json(
    args: &ExploreArgs,
    level_id: &str,
    jobs: usize,
    guards: Guards,
    goal: checker::Outcome,
    outcome: &Outcome,
    out: &Path,
) {
    let report = Report {
        level: level_id,
        level_file: &args.level,
        seed: args.seed,
        jobs,
        store: args.store,
        guards_off: guards.off(),
        goal,
        schedules_total: outcome.schedules_total,
        schedules_run: outcome.schedules_run,
        search_elapsed_ms: outcome.search_elapsed.as_millis(),
        elapsed_ms: outcome.elapsed.as_millis(),
        schedules_per_second: outcome.schedules_per_second(),
        cancelled: outcome.cancelled,
        found: outcome.found.as_ref().map(|found| FoundReport {
            schedule_index: found.schedule_index,
            simulation_seed: found.simulation_seed,
            dealt_actions: found.dealt.len(),
            actions: &found.actions,
            verdict: found.verdict.outcome,
            stopped_by: &found.verdict.stopped_by,
            shrink_simulations: found.shrink_simulations,
            shrink_cancelled: found.shrink_cancelled,
            tape: out,
        }),
    };
    println!("{}", serde_json::to_string_pretty(&report).expect("reports serialize"));
}
