//! `twice-sim drill-batch-crash`: group commit under SIGKILL, on a real process.
//!
//! A process of many runs writes its ledger through a commit group (one transaction and one
//! fsync per batch; every write answered only once its batch is durable). This drill starts
//! such a process (`twice-sim batch-crash-child`, hidden) on a SQLite file or a PostgreSQL
//! schema, lets it call until its chosen batch is complete and about to commit, SIGKILLs it
//! there — mid-batch, nothing of the batch durable, nobody in it answered — and checks the
//! ledger against billing:
//!
//! - billing is the tool's own durable record: the child's "tool" appends the call's key to a
//!   billing file (and syncs it) only after the folded reservation was answered. Every key in
//!   billing must be in the ledger with its attempt counted: no tool ran on a reservation the
//!   crash took back.
//! - every outcome the child acknowledged (printed after `record_outcome` returned) must be in
//!   the ledger as completed: nothing acknowledged is missing.
//!
//! Each round kills at a different batch, on fresh run names, on the same ledger.

use std::collections::BTreeSet;
use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use twice_world::exit::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK};
use twice_world::ledger::{GroupSettings, Ledger, LedgerError, Recorded, Reservation, ReserveRequest};
use twice_world::runtime::key::{IdempotencyKey, KeyError};
use twice_world::runtime::rules::{Outcome, ReservationAction, Status};
use twice_world::runtime::tool::SideEffect;
use twice_world::runtime::worker::counted;

use crate::ledger_target::{LedgerTarget, LedgerTargetParser};

/// The most runs one child drives.
pub const RUNS_MAX: u32 = 256;
/// The most rounds (kills) one drill makes.
pub const ROUNDS_MAX: u32 = 100;
/// The arguments every call carries.
const ARGUMENTS: &str = r#"{"account":"acct_ada","amount_cents":2500}"#;
/// The child's line at its mid-batch moment, with the batch's member count after it.
const MID_BATCH: &str = "mid-batch ";
const ACTED: &str = "acted ";
const RECORDED: &str = "recorded ";

#[derive(Debug, clap::Args)]
pub struct BatchCrashArgs {
    /// The ledger: a SQLite file (created) or a postgres:// URL (its schema created).
    #[arg(long, value_parser = LedgerTargetParser)]
    pub ledger: LedgerTarget,
    /// The billing file the child's tool appends to (created; must not exist).
    #[arg(long)]
    pub billing: PathBuf,
    /// Concurrent runs in the child process.
    #[arg(long, default_value_t = 16)]
    pub runs: u32,
    /// Rounds: each starts a child and kills it mid-batch.
    #[arg(long, default_value_t = 4)]
    pub rounds: u32,
}

#[derive(Debug, clap::Args)]
pub struct BatchCrashChildArgs {
    /// The ledger; a PostgreSQL password (if any) comes in `PGPASSWORD`.
    #[arg(long, value_parser = LedgerTargetParser)]
    pub ledger: LedgerTarget,
    #[arg(long)]
    pub billing: PathBuf,
    #[arg(long)]
    pub runs: u32,
    /// The round: run names are `r<round>-run<n>`, new in every round.
    #[arg(long)]
    pub round: u32,
    /// The batch (counting from 1) whose commit the child stops before.
    #[arg(long)]
    pub stop_at_batch: u64,
}

/// What one round found.
#[derive(Debug, Default)]
struct RoundFinding {
    acted: BTreeSet<String>,
    recorded: BTreeSet<String>,
    batch_members: u32,
    problems: Vec<String>,
}

/// The drill: `rounds` children, each killed in its chosen batch, each checked.
pub fn batch_crash_command(args: BatchCrashArgs) -> u8 {
    if args.runs == 0 || args.runs > RUNS_MAX || args.rounds == 0 || args.rounds > ROUNDS_MAX {
        eprintln!("error: --runs from 1 to {RUNS_MAX}, --rounds from 1 to {ROUNDS_MAX}");
        return EXIT_BAD_INPUT;
    }
    if args.billing.exists() {
        eprintln!(
            "error: --billing {}: already exists; the drill starts a new one",
            args.billing.display()
        );
        return EXIT_BAD_INPUT;
    }
    // The ledger made once, before any child: a child only connects.
    if let Err(error) = args.ledger.open().map(drop) {
        eprintln!("error: --ledger: {error}");
        return EXIT_BAD_INPUT;
    }
    let executable = match std::env::current_exe() {
        Ok(executable) => executable,
        Err(error) => {
            eprintln!("error: cannot find this executable to start the child: {error}");
            return EXIT_FAILED;
        }
    };
    let mut failed = false;
    for round in 1..=args.rounds {
        // Early, middle and late in the child's life: batch 2, then further out each round.
        let stop_at_batch = 2 + u64::from(round - 1) * 17;
        match run_round(&executable, &args, round, stop_at_batch) {
            Ok(finding) => {
                println!(
                    "round {round}: killed before batch {stop_at_batch}'s commit ({} in it); {} acted on by the \
                     tool, {} acknowledged; {}",
                    counted(u64::from(finding.batch_members), "write", "writes"),
                    counted(finding.acted.len() as u64, "call", "calls"),
                    counted(finding.recorded.len() as u64, "outcome", "outcomes"),
                    if finding.problems.is_empty() {
                        "every one is in the ledger".to_owned()
                    } else {
                        counted(finding.problems.len() as u64, "PROBLEM", "PROBLEMS")
                    }
                );
                for problem in &finding.problems {
                    println!("  {problem}");
                }
                failed |= !finding.problems.is_empty();
            }
            Err(error) => {
                eprintln!("error: round {round}: {error}");
                return EXIT_FAILED;
            }
        }
    }
    if failed { EXIT_FAILED } else { EXIT_OK }
}

/// Why a round gave no finding: the child could not be started, read, killed or waited for,
/// or the ledger could not be read after the kill.
#[derive(Debug, thiserror::Error)]
enum RoundError {
    #[error("cannot start the child: {0}")]
    Start(#[source] std::io::Error),
    #[error("the child has no output")]
    NoOutput,
    #[error("reading the child: {0}")]
    Read(#[source] std::io::Error),
    #[error("cannot kill the child: {0}")]
    Kill(#[source] std::io::Error),
    #[error("waiting for the child: {0}")]
    Wait(#[source] std::io::Error),
    #[error("the child ended ({status}) before batch {stop_at_batch}")]
    EndedEarly { status: ExitStatus, stop_at_batch: u64 },
    #[error("reading the ledger: {0}")]
    Ledger(#[source] LedgerError),
}

/// Why one of the child's runs stopped calling (the kill aside): each names the key at fault.
#[derive(Debug, thiserror::Error)]
enum RunError {
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error("{key}: {source}")]
    Ledger {
        key: IdempotencyKey,
        /// Boxed: a ledger error is large, and every run returns this.
        #[source]
        source: Box<LedgerError>,
    },
    #[error("{key}: a new key was not reserved to run: {reservation}")]
    NotReserved { key: IdempotencyKey, reservation: String },
    #[error("billing's lock was poisoned")]
    Poisoned,
    #[error("billing: {0}")]
    Billing(#[source] std::io::Error),
    #[error("{key}: the outcome was not recorded: {recorded}")]
    NotRecorded { key: IdempotencyKey, recorded: String },
    #[error("a run panicked")]
    Panicked,
}

/// One round: the child started, killed at its mid-batch moment, the ledger checked.
fn run_round(
    executable: &Path,
    args: &BatchCrashArgs,
    round: u32,
    stop_at_batch: u64,
) -> Result<RoundFinding, RoundError> {
    let mut command = Command::new(executable);
    let ledger_text = match &args.ledger {
        LedgerTarget::File(path) => path.display().to_string(),
        LedgerTarget::Postgres(url) => {
            if let Some(password) = url.password() {
                command.env(twice_ledger_postgres::PASSWORD_VARIABLE, password);
            }
            url.without_password()
        }
    };
    let mut child = command
        .args(["batch-crash-child", "--ledger", &ledger_text, "--billing"])
        .arg(&args.billing)
        .args(["--runs", &args.runs.to_string(), "--round", &round.to_string()])
        .args(["--stop-at-batch", &stop_at_batch.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(RoundError::Start)?;
    let stdout = child.stdout.take().ok_or(RoundError::NoOutput)?;
    let mut finding = RoundFinding::default();
    let mut killed = false;
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(RoundError::Read)?;
        if let Some(key) = line.strip_prefix(ACTED) {
            finding.acted.insert(key.to_owned());
        } else if let Some(key) = line.strip_prefix(RECORDED) {
            finding.recorded.insert(key.to_owned());
        } else if let Some(members) = line.strip_prefix(MID_BATCH)
            && !killed
        {
            finding.batch_members = members.parse().unwrap_or(0);
            // SIGKILL: nothing of the child runs after this, as in a power cut of the process.
            child.kill().map_err(RoundError::Kill)?;
            killed = true;
        }
    }
    let status = child.wait().map_err(RoundError::Wait)?;
    if !killed {
        return Err(RoundError::EndedEarly { status, stop_at_batch });
    }
    check(args, &mut finding).map_err(RoundError::Ledger)?;
    Ok(finding)
}

/// The ledger against billing and against what the child acknowledged.
fn check(args: &BatchCrashArgs, finding: &mut RoundFinding) -> Result<(), LedgerError> {
    let ledger = args.ledger.open_existing()?;
    let billed = billed_keys(&args.billing).map_err(|error| LedgerError::Store {
        location: args.billing.display().to_string(),
        context: "reading billing",
        detail: error.to_string(),
    })?;
    for key in &billed {
        let record = IdempotencyKey::parse(key)
            .map_err(|detail| LedgerError::Store {
                location: args.billing.display().to_string(),
                context: "reading billing",
                detail: format!("{key}: {detail}"),
            })
            .and_then(|key| ledger.record(&key))?;
        match record {
            None => finding.problems.push(format!(
                "{key}: billing has it, the ledger does not (a reservation the crash took back)"
            )),
            Some(record) if record.attempts == 0 => finding
                .problems
                .push(format!("{key}: billing has it, the ledger counts no attempt")),
            Some(_) => {}
        }
    }
    for key in &finding.recorded {
        let status = ledger
            .record(&IdempotencyKey::parse(key).map_err(|detail| LedgerError::Store {
                location: "the child's output".into(),
                context: "reading an acknowledged key",
                detail: detail.to_string(),
            })?)?
            .map(|record| record.status);
        if status != Some(Status::Completed) {
            finding
                .problems
                .push(format!("{key}: acknowledged as completed, the ledger has {status:?}"));
        }
    }
    // What the child said it acted on must be in billing (the tool wrote before it said so).
    for key in finding.acted.difference(&billed) {
        finding.problems.push(format!("{key}: acted on, missing from billing"));
    }
    Ok(())
}

/// The keys in the billing file, one a line; a last line without its newline was cut by the
/// kill mid-write and is no entry.
fn billed_keys(path: &Path) -> Result<BTreeSet<String>, std::io::Error> {
    let text = std::fs::read_to_string(path).or_else(|error| match error.kind() {
        std::io::ErrorKind::NotFound => Ok(String::new()),
        _ => Err(error),
    })?;
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    Ok(complete.lines().map(str::to_owned).collect())
}

// ----- the child -----

static STOP_AT_BATCH: OnceLock<u64> = OnceLock::new();
static COMMITS: AtomicU64 = AtomicU64::new(0);

/// Prints one line whole, flushed (the drill reads them as they come).
fn say(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

/// The mid-batch moment: at the chosen batch, say so and wait for the kill.
fn stop_in_the_chosen_batch(members: u32) {
    let commit = COMMITS.fetch_add(1, Ordering::SeqCst) + 1;
    if Some(&commit) == STOP_AT_BATCH.get() {
        say(&format!("{MID_BATCH}{members}"));
        loop {
            std::thread::park();
        }
    }
}

/// The child: `runs` runs on one commit group, calling until killed.
pub fn batch_crash_child_command(args: BatchCrashChildArgs) -> u8 {
    let _ = STOP_AT_BATCH.set(args.stop_at_batch);
    let settings = GroupSettings::default().with_before_commit(stop_in_the_chosen_batch);
    let opened = match &args.ledger {
        LedgerTarget::File(path) => Ledger::open_grouped(path, settings),
        LedgerTarget::Postgres(url) => twice_ledger_postgres::open_grouped(url, settings),
    };
    let billing = OpenOptions::new().create(true).append(true).open(&args.billing);
    let (ledger, billing) = match (opened, billing) {
        (Ok(ledger), Ok(billing)) => (ledger, Mutex::new(billing)),
        (Err(error), _) => {
            eprintln!("error: --ledger: {error}");
            return EXIT_BAD_INPUT;
        }
        (_, Err(error)) => {
            eprintln!("error: --billing {}: {error}", args.billing.display());
            return EXIT_BAD_INPUT;
        }
    };
    let handles = match (0..args.runs)
        .map(|_| ledger.connect_again())
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(handles) => handles,
        Err(error) => {
            eprintln!("error: --ledger: {error}");
            return EXIT_FAILED;
        }
    };
    let failure = std::thread::scope(|scope| {
        let runs: Vec<_> = handles
            .into_iter()
            .zip(0..)
            .map(|(handle, run)| {
                let billing = &billing;
                scope.spawn(move || drive_run(handle, billing, args.round, run))
            })
            .collect();
        runs.into_iter()
            .find_map(|run| run.join().unwrap_or(Err(RunError::Panicked)).err())
    });
    match failure {
        Some(error) => eprintln!("error: {error}"),
        None => eprintln!("error: every run stopped"),
    }
    EXIT_FAILED
}

/// One run: calls until an error (or the kill). Returns only with an error.
fn drive_run(mut ledger: Ledger, billing: &Mutex<std::fs::File>, round: u32, run: u32) -> Result<(), RunError> {
    let run_id = format!("r{round}-run{run}");
    for call in 0_u64.. {
        let key = IdempotencyKey::per_call(&run_id, &format!("c{call}"))?;
        let request = ReserveRequest::new(
            &key,
            &run_id,
            "c",
            "issue_credit",
            SideEffect::External,
            ARGUMENTS,
            &run_id,
        )
        .with_tenant("drill");
        let folded = ledger
            .reserve_and_begin(&request, 1, crate::now_ms())
            .map_err(|source| RunError::Ledger {
                key: key.clone(),
                source: Box::new(source),
            })?;
        if !matches!(
            folded.reservation,
            Reservation::Decided {
                action: ReservationAction::RunNew,
                ..
            }
        ) {
            return Err(RunError::NotReserved {
                key,
                reservation: format!("{folded:?}"),
            });
        }
        // The tool acts: billing's own durable record of the effect.
        {
            let mut billing = billing.lock().map_err(|_| RunError::Poisoned)?;
            billing
                .write_all(format!("{key}\n").as_bytes())
                .and_then(|()| billing.sync_data())
                .map_err(RunError::Billing)?;
        }
        say(&format!("{ACTED}{key}"));
        match ledger.record_outcome(&key, Outcome::Completed, Some("cr"), &run_id, 1, crate::now_ms()) {
            Ok(Recorded::Recorded(_)) => say(&format!("{RECORDED}{key}")),
            Ok(other) => {
                return Err(RunError::NotRecorded {
                    key,
                    recorded: format!("{other:?}"),
                });
            }
            Err(source) => {
                return Err(RunError::Ledger {
                    key,
                    source: Box::new(source),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn billing_cut_mid_line_or_missing_is_read_and_a_folder_is_refused() {
        let folder = tempfile::tempdir().expect("temp dir");
        let billing = folder.path().join("billing");
        assert!(billed_keys(&billing).expect("no file yet: nothing billed").is_empty());
        std::fs::write(&billing, "r1-run0:c0\nr1-run0:c1").expect("write");
        let keys = billed_keys(&billing).expect("reads");
        assert_eq!(
            keys.into_iter().collect::<Vec<_>>(),
            ["r1-run0:c0"],
            "the cut line is no entry"
        );
        let error = billed_keys(folder.path()).expect_err("a folder is not a billing file");
        assert_ne!(error.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn a_run_error_names_its_key() {
        let key = IdempotencyKey::per_call("r1-run0", "c3").expect("a key");
        let error = RunError::NotRecorded {
            key,
            recorded: "AlreadySettled".into(),
        };
        assert_eq!(
            error.to_string(),
            "r1-run0:c3: the outcome was not recorded: AlreadySettled"
        );
        let error = RunError::from(IdempotencyKey::per_call("", "c0").expect_err("an empty run id"));
        assert!(!error.to_string().is_empty());
    }
}
