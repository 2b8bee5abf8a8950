//! `twice-sim defend`: a defence of a level judged by the known heists that fire there and the
//! explorer; when it falls, the counter-example as a tape (written to `--out`, and replayed
//! from there to the verdict it was found with).

use std::path::{Path, PathBuf};

use twice_world::level::{self, LoadedTape};
use twice_world::runtime::guards::{Guard, Guards};

use super::bad_input;
use super::explore::{ExploreInputError, level_reference, write_tape};
use crate::cli::{EXIT_DIFFERS, EXIT_OK, guard_list, violation_list};

#[derive(Debug, clap::Args)]
pub struct DefendArgs {
    /// The level file (any level; its folder is the campaign whose tapes are the known heists).
    pub level: PathBuf,
    /// The guards to switch on (all others off): a comma-separated list, `none` or `all`.
    #[arg(long, default_value = "none")]
    pub guards: String,
    /// Find the smallest sets of guards that hold instead.
    #[arg(long)]
    pub minimum: bool,
    /// Schedules the explorer deals per check.
    #[arg(long, default_value_t = twice_world::defend::DEFENCE_SCHEDULES)]
    pub schedules: u64,
    /// Explorer threads.
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
    /// What the check is expected to find: `none` (exit 0 when the defence holds, the
    /// default) or `found` (exit 0 when a heist gets through).
    #[arg(long, default_value = "none", value_parser = twice_world::exit::Expect::parse)]
    pub expect: twice_world::exit::Expect,
    /// Where to write the counter-example when a heist gets through: a tape file, or a folder
    /// to write `<level stem>.counter.tape.ron` in. The tape is replayed from there.
    #[arg(long, conflicts_with = "minimum")]
    pub out: Option<PathBuf>,
    /// Overwrite the --out file if it exists.
    #[arg(long, requires = "out")]
    pub force: bool,
    #[arg(long)]
    pub json: bool,
}

/// The suffix of a defence's counter-example written into a folder.
const COUNTER_SUFFIX: &str = ".counter.tape.ron";

/// Runs `twice-sim defend`: exit by `--expect` (by default 0 when the defence holds), 2 for bad
/// input or a counter-example that could not be written and replayed.
pub fn defend(args: &DefendArgs) -> u8 {
    use twice_world::defend;
    let loaded = match level::load_level(&args.level) {
        Ok(loaded) => loaded,
        Err(error) => return bad_input(error),
    };
    // A bare file name's parent is the empty path: its folder is the current one.
    let folder = args
        .level
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let campaign = match twice_world::campaign::Campaign::load(folder) {
        Ok(campaign) => campaign,
        Err(problems) => {
            return bad_input(problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"));
        }
    };
    let own = match own_regression_tapes(&loaded, folder) {
        Ok(own) => own,
        Err(error) => return bad_input(error),
    };
    let mut heists = defend::heists(&campaign, &loaded.level);
    heists.extend(own.iter());
    let search = defend::Search {
        schedules: args.schedules,
        jobs: args.jobs,
        seed: defend::DEFENCE_SEED,
    };
    let cancel = std::sync::atomic::AtomicBool::new(false);
    if args.minimum {
        return match defend::minimum(&loaded, &heists, search, Guard::ALL.len(), &cancel) {
            Ok(sets) => {
                print_minimum(&loaded.level.id, heists.len(), &sets, args.json);
                EXIT_OK
            }
            Err(error) => bad_input(error),
        };
    }
    let on = match Guards::parse_list(&args.guards) {
        Ok(parsed) => Guard::ALL
            .into_iter()
            .filter(|guard| parsed.is_on(*guard))
            .collect::<Vec<_>>(),
        Err(error) => return bad_input(format!("--guards: {error}")),
    };
    // Checked before the search, so a bad --out does not waste it.
    let out = match args
        .out
        .as_deref()
        .map(|out| out_file(out, &args.level, args.force))
        .transpose()
    {
        Ok(out) => out,
        Err(error) => return bad_input(error),
    };
    let report = match defend::check(&loaded, &heists, &on, search, &cancel) {
        Ok(report) => report,
        Err(error) => return bad_input(error),
    };
    let written = match (&out, &report.counter_example) {
        (Some(out), Some(counter)) => match write_counter(counter, &loaded, &args.level, out, args.force) {
            Ok(()) => Some(out.as_path()),
            Err(error) => return bad_input(error),
        },
        _ => None,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).expect("reports serialize"));
    } else {
        print_report(&loaded, &report, written);
    }
    let got_in = !report.stops_every_heist();
    match args.expect {
        // Every heist stopped, but by more guards than the budget: not a defence that holds.
        twice_world::exit::Expect::None if !got_in && !report.holds() => EXIT_DIFFERS,
        expect => expect.exit(got_in),
    }
}

/// A regression level's own tapes: the campaign leaves regression cases out, but the bugs a
/// regression level's tapes reproduce are exactly the heists its defence must stop.
fn own_regression_tapes(loaded: &level::LoadedLevel, folder: &Path) -> Result<Vec<LoadedTape>, String> {
    if !loaded.level.regression {
        return Ok(Vec::new());
    }
    let same = |one: &Path, other: &Path| one.canonicalize().ok() == other.canonicalize().ok();
    let mut own = Vec::new();
    for file in level::files_below(folder, twice_world::campaign::TAPE_SUFFIX).map_err(|error| error.to_string())? {
        let tape = level::load_tape(&file).map_err(|error| error.to_string())?;
        if same(&tape.level.path, &loaded.path) {
            own.push(tape);
        }
    }
    Ok(own)
}

/// `--out` as a file: a folder given gets `<level stem>.counter.tape.ron` inside it. An existing
/// file is refused without `--force`.
fn out_file(out: &Path, level_path: &Path, force: bool) -> Result<PathBuf, String> {
    let file = if out.is_dir() {
        let name = level_path
            .file_name()
            .map_or_else(|| "level".to_owned(), |name| name.to_string_lossy().into_owned());
        let stem = name.strip_suffix(twice_world::campaign::LEVEL_SUFFIX).unwrap_or(&name);
        out.join(format!("{stem}{COUNTER_SUFFIX}"))
    } else {
        out.to_path_buf()
    };
    if file.exists() && !force {
        return Err(format!(
            "--out: {} already exists; pass --force to overwrite it, or choose another --out",
            file.display()
        ));
    }
    level_reference(level_path, &file).map_err(|error| format!("--out: {error}"))?;
    Ok(file)
}

/// Writes the counter-example as a tape at `out` (naming the level from there), then replays
/// it as `twice-sim replay` would: what was written must come to the verdict it was found with.
fn write_counter(
    counter: &twice_world::defend::CounterExample,
    loaded: &level::LoadedLevel,
    level_path: &Path,
    out: &Path,
    force: bool,
) -> Result<(), ExploreInputError> {
    let mut tape = counter
        .replayable_tape(&loaded.level)
        .map_err(|error| ExploreInputError::CannotWrite {
            path: out.display().to_string(),
            error: std::io::Error::other(error.to_string()),
        })?;
    tape.level = level_reference(level_path, out)?;
    let text = format!(
        "// The counter-example to a defence, from {}\n{}\n",
        counter.source_words(),
        level::tape_to_ron(&tape)
    );
    write_tape(out, &text, force)?;
    let written = level::load_tape(out).map_err(ExploreInputError::TapeUnreadable)?;
    let result = twice_world::replay::replay_tape(&written).map_err(ExploreInputError::TapeNotReplayed)?;
    if !result.as_expected || result.verdict.outcome != counter.outcome {
        return Err(ExploreInputError::ReplaysOtherwise {
            path: out.display().to_string(),
            replayed: result.verdict.outcome,
            found: counter.outcome,
        });
    }
    Ok(())
}

/// `--minimum`'s answer: the smallest sets of guards that hold.
fn print_minimum(level_id: &str, heists: usize, sets: &[Vec<Guard>], json: bool) {
    if json {
        let names: Vec<Vec<&str>> = sets
            .iter()
            .map(|set| set.iter().map(|guard| guard.name()).collect())
            .collect();
        println!("{}", serde_json::to_string_pretty(&names).expect("names serialize"));
        return;
    }
    println!("{level_id}: {heists} known heists; the smallest sets of guards that hold:");
    for set in sets {
        println!("  [{}]", guard_list(set));
    }
    if sets.is_empty() {
        println!("  none: even every guard together lets a heist through");
    }
}

/// The defence's report in words: each known heist, the explorer's search, any counter-example.
fn print_report(loaded: &level::LoadedLevel, report: &twice_world::defend::DefenceReport, written: Option<&Path>) {
    use twice_world::defend;
    println!(
        "{}: guards on [{}] ({} of a budget of {})",
        loaded.level.id,
        guard_list(&report.on),
        report.on.len(),
        report.budget
    );
    for heist in &report.heists {
        // A heist that does not fire with every guard off proves nothing either way.
        let status = match heist.standing() {
            defend::HeistStanding::Held => "held   ",
            defend::HeistStanding::NoFire => "no fire",
            defend::HeistStanding::GotIn => "GOT IN ",
        };
        println!(
            "  {status} {}  {}{}",
            if heist.tape.as_os_str().is_empty() {
                heist.title.clone()
            } else {
                heist.tape.display().to_string()
            },
            heist.outcome,
            violation_list(&heist.violations)
        );
    }
    match &report.search {
        Some(search) if search.found.is_none() => println!(
            "  held    the explorer found nothing in {} schedules (bound: {} per goal, paid twice and owed)",
            search.schedules, search.schedules_bound
        ),
        Some(_) => println!("  GOT IN  the explorer found a schedule that beats it"),
        None => println!("  (the explorer was not needed: a known heist got through)"),
    }
    match (&report.counter_example, written) {
        (Some(counter), Some(out)) => println!(
            "wrote the counter-example ({}, {}) to {}: it replays to that verdict with `twice-sim replay {}`",
            counter.outcome,
            counter.source_words(),
            out.display(),
            out.display()
        ),
        (Some(counter), None) => println!(
            "\nthe counter-example ({}), a tape to save beside the level and replay (or pass --out):\n{}",
            counter.outcome,
            level::tape_to_ron(
                &counter
                    .replayable_tape(&loaded.level)
                    .unwrap_or_else(|_| counter.tape.clone())
            )
        ),
        _ => {}
    }
    println!(
        "{}",
        if report.holds() {
            "the defence holds"
        } else if report.stops_every_heist() {
            "every heist is stopped, but over the budget"
        } else {
            "the defence does not hold"
        }
    );
}
