//! Replaying a tape: the level, the seed and the moves, run to the end and judged, then
//! compared with what the tape expects — the verdict, the guards that held, the checker's
//! violations (a tape that does not expect one fails on it), and, when the tape names them,
//! the money per customer and the ledger status of chosen keys.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::Serialize;

use crate::checker::Verdict;
use crate::error::InputError;
use crate::ledger::{ExecutionRecord, LedgerError, LedgerStore};
use crate::level::{Expectation, LoadedTape};
use crate::runtime::guards::Guard;
use crate::runtime::rules::Status;
use crate::simulator::{SimError, Simulation, SimulationBuilder};
use crate::text::dollars;

/// Why a tape could not be replayed at all.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("{}: cannot simulate: {source}", tape.display())]
    Simulation {
        tape: PathBuf,
        #[source]
        source: Box<SimError>,
    },
    #[error("{}: cannot judge: {source}", tape.display())]
    Verdict {
        tape: PathBuf,
        #[source]
        source: Box<LedgerError>,
    },
    /// The tape asks about something the run never had (a key no message carries): it no
    /// longer tests what it was written for.
    #[error("{0}")]
    Tape(Box<InputError>),
}

/// What a replayed run came to, as far as a tape can expect it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Actual {
    pub verdict: Verdict,
    /// Net cents billing credited per customer (owner name), every customer of the level.
    pub paid_cents: BTreeMap<String, i64>,
    /// The ledger status of each key the expectation names (`None`: no record).
    pub keys: BTreeMap<String, Option<Status>>,
}

/// Whether the run is what the tape expects (see [`differences`]).
pub fn matches(expected: &Expectation, actual: &Actual) -> bool {
    differences(expected, actual).is_empty()
}

/// What differs between the expectation and the run, one sentence each: the outcome, guards
/// named that did not hold, the violation kinds, each named customer's money and each named
/// key's status.
pub fn differences(expected: &Expectation, actual: &Actual) -> Vec<String> {
    let verdict = &actual.verdict;
    let mut found = Vec::new();
    if expected.verdict != verdict.outcome {
        found.push(format!(
            "verdict: expected {}, got {}",
            expected.verdict, verdict.outcome
        ));
    }
    let missing: Vec<_> = expected
        .stopped_by
        .iter()
        .copied()
        .filter(|guard| !verdict.stopped_by.contains(guard))
        .collect();
    if !missing.is_empty() {
        found.push(format!(
            "stopped_by: expected {} to hold, got [{}]",
            guard_names(&missing),
            guard_names(&verdict.stopped_by)
        ));
    }
    let violations = verdict.violation_kinds();
    if expected.violations != violations {
        let names = |kinds: &[crate::outcome::ViolationKind]| {
            kinds.iter().map(|kind| kind.name()).collect::<Vec<_>>().join(", ")
        };
        found.push(format!(
            "violations: expected [{}], got [{}]",
            names(&expected.violations),
            names(&violations)
        ));
    }
    for (customer, cents) in &expected.paid_cents {
        let got = actual.paid_cents.get(customer).copied().unwrap_or(0);
        if got != *cents {
            found.push(format!(
                "paid_cents: expected {customer} {} ({cents}), got {} ({got})",
                dollars(*cents),
                dollars(got)
            ));
        }
    }
    for (key, status) in &expected.keys {
        let got = actual.keys.get(key).copied().flatten();
        if got != *status {
            found.push(format!(
                "keys: expected {key} {}, got {}",
                status_name(*status),
                status_name(got)
            ));
        }
    }
    found
}

fn guard_names(guards: &[Guard]) -> String {
    guards.iter().map(|guard| guard.name()).collect::<Vec<_>>().join(", ")
}

/// A key's status as a tape writes it.
pub fn status_name(status: Option<Status>) -> &'static str {
    status.map_or("None (no ledger record)", Status::name)
}

/// One tape's replay.
#[derive(Debug, Serialize)]
pub struct ReplayResult {
    pub tape: PathBuf,
    pub level: String,
    pub expected: Expectation,
    pub verdict: Verdict,
    pub paid_cents: BTreeMap<String, i64>,
    pub keys: BTreeMap<String, Option<Status>>,
    pub as_expected: bool,
    /// What differs from the expectation (empty when as expected).
    pub differences: Vec<String>,
}

impl ReplayResult {
    /// The expectation that would pass, at the tape's level of detail: the outcome and the
    /// violations; the guards it names if they all held, else every guard that held (none if
    /// it names none); the money of the customers and the statuses of the keys it names (what
    /// `replay --update` writes).
    pub fn updated_expectation(&self) -> Expectation {
        let named_held = self
            .expected
            .stopped_by
            .iter()
            .all(|guard| self.verdict.stopped_by.contains(guard));
        let stopped_by = if named_held {
            self.expected.stopped_by.clone()
        } else {
            self.verdict.stopped_by.clone()
        };
        Expectation {
            verdict: self.verdict.outcome,
            stopped_by,
            violations: self.verdict.violation_kinds(),
            paid_cents: self
                .expected
                .paid_cents
                .keys()
                .map(|customer| (customer.clone(), self.paid_cents.get(customer).copied().unwrap_or(0)))
                .collect(),
            keys: self
                .expected
                .keys
                .keys()
                .map(|key| (key.clone(), self.keys.get(key).copied().flatten()))
                .collect(),
        }
    }
}

/// Builds the tape's simulation (on `store`) without running it.
pub fn simulation_of(tape: &LoadedTape, store: LedgerStore) -> Result<Simulation, SimError> {
    let mut builder = SimulationBuilder::new(tape.level.level.clone(), tape.tape.seed)
        .actions(tape.tape.actions.clone())
        .wire_rule(tape.tape.wire_rule())
        .ledger_store(store);
    if let Some(guards) = tape.tape.guards {
        builder = builder.guards(guards);
    }
    builder.build()
}

/// Replays one loaded tape on SQLite, as `twice-sim replay` does.
pub fn replay_tape(tape: &LoadedTape) -> Result<ReplayResult, ReplayError> {
    replay_tape_on(tape, LedgerStore::Sqlite)
}

/// Replays one loaded tape on the given store.
pub fn replay_tape_on(tape: &LoadedTape, store: LedgerStore) -> Result<ReplayResult, ReplayError> {
    let simulation_error = |source| ReplayError::Simulation {
        tape: tape.path.clone(),
        source: Box::new(source),
    };
    let verdict_error = |source| ReplayError::Verdict {
        tape: tape.path.clone(),
        source: Box::new(source),
    };
    let mut simulation = simulation_of(tape, store).map_err(simulation_error)?;
    simulation.run().map_err(simulation_error)?;
    misplayed(tape, &simulation).map_err(|error| ReplayError::Tape(Box::new(error)))?;
    let verdict = simulation.verdict().map_err(verdict_error)?;
    let expected = &tape.tape.expect;
    let keys = key_statuses(tape, &simulation).map_err(verdict_error)?;
    let (keys, disagreements) = keys.map_err(|error| ReplayError::Tape(Box::new(error)))?;
    let actual = Actual {
        verdict,
        paid_cents: paid_cents(&simulation),
        keys,
    };
    let mut differences = differences(expected, &actual);
    differences.extend(disagreements);
    differences.extend(unfizzled(tape, &simulation));
    Ok(ReplayResult {
        tape: tape.path.clone(),
        level: tape.level.level.id.clone(),
        expected: expected.clone(),
        as_expected: differences.is_empty(),
        differences,
        verdict: actual.verdict,
        paid_cents: actual.paid_cents,
        keys: actual.keys,
    })
}

/// Whether a run played from a tape (in the game, step by step) is what the tape expects:
/// the same judgement as [`replay_tape`]'s, a named key the run never had counting as a
/// difference.
pub fn run_as_expected(
    expected: &Expectation,
    simulation: &Simulation,
    verdict: &Verdict,
) -> Result<bool, LedgerError> {
    let records = if expected.keys.is_empty() {
        Vec::new()
    } else {
        simulation.ledger_records_every_node()?
    };
    let mut disagreements = Vec::new();
    let keys = expected
        .keys
        .keys()
        .map(|key| {
            let (status, disagreement) = key_status(&records, key);
            disagreements.extend(disagreement);
            (key.clone(), status)
        })
        .collect();
    let actual = Actual {
        verdict: verdict.clone(),
        paid_cents: paid_cents(simulation),
        keys,
    };
    Ok(disagreements.is_empty() && matches(expected, &actual))
}

/// A move that fizzled or met a quiet run, unless the tape marks it `fizzles: true`: an error
/// at the move's line — the tape no longer tests what it was written for.
fn misplayed(tape: &LoadedTape, simulation: &Simulation) -> Result<(), InputError> {
    let actions = &tape.tape.actions;
    let Some(misplay) = simulation
        .misplays()
        .iter()
        .find(|misplay| !actions.get(misplay.index).is_some_and(|action| action.fizzles))
    else {
        return Ok(());
    };
    let what = if misplay.fizzled {
        format!(
            "this move (for phase {}) fizzled at phase {}",
            misplay.at_phase, misplay.met_phase
        )
    } else {
        "this move was not played at its phase".to_owned()
    };
    Err(InputError::at(
        &tape.path,
        &tape.text,
        "at_phase",
        misplay.index,
        format!(
            "{what}: {}. Aim it where it takes effect, or mark it `fizzles: true` if it is meant to be refused",
            misplay.why
        ),
    ))
}

/// Moves marked `fizzles: true` that took effect after all: each a difference.
fn unfizzled(tape: &LoadedTape, simulation: &Simulation) -> Vec<String> {
    let fizzled: BTreeSet<usize> = simulation
        .misplays()
        .iter()
        .filter(|misplay| misplay.fizzled)
        .map(|misplay| misplay.index)
        .collect();
    tape.tape
        .actions
        .iter()
        .enumerate()
        .filter(|(index, action)| action.fizzles && !fizzled.contains(index))
        .map(|(index, action)| {
            format!(
                "fizzles: move {} ({} at phase {}) is marked to fizzle but took effect",
                index + 1,
                action.play.card().name(),
                action.at_phase
            )
        })
        .collect()
}

/// Net cents billing credited per customer: every entry (credits, and reversals as negative
/// amounts) on the accounts each owner holds, every owner listed.
pub fn paid_cents(simulation: &Simulation) -> BTreeMap<String, i64> {
    let billing = simulation.billing();
    let mut paid: BTreeMap<String, i64> = BTreeMap::new();
    for account in billing.accounts.values() {
        paid.entry(account.owner.clone()).or_default();
    }
    for entry in &billing.entries {
        if let Some(account) = billing.accounts.get(&entry.account) {
            *paid.entry(account.owner.clone()).or_default() += entry.amount_cents;
        }
    }
    paid
}

/// The statuses of the keys a tape names, and a sentence for each key whose ledgers disagree.
type KeyStatuses = (BTreeMap<String, Option<Status>>, Vec<String>);

/// A key's status across every node's ledger (`records` in node order): the status of its
/// record, `None` when no ledger holds one. When two nodes' ledgers hold it with different
/// statuses, the first node's is returned with a sentence saying the ledgers disagree (a
/// difference of its own: one status cannot be expected of both).
fn key_status(records: &[(u32, ExecutionRecord)], key: &str) -> (Option<Status>, Option<String>) {
    let held: Vec<(u32, Status)> = records
        .iter()
        .filter(|(_, record)| record.key.as_str() == key)
        .map(|(node, record)| (*node, record.status))
        .collect();
    let status = held.first().map(|(_, status)| *status);
    let disagree = held.iter().any(|(_, other)| Some(*other) != status);
    let sentence = disagree.then(|| {
        let each: Vec<String> = held
            .iter()
            .map(|(node, status)| format!("{} in node {node}'s ledger", status.name()))
            .collect();
        format!("keys: {key} is {}: the ledgers disagree", crate::text::and_list(&each))
    });
    (status, sentence)
}

/// The ledger status of each key the tape's expectation names, read from every node's ledger,
/// and the keys whose ledgers disagree. A key that no message carried and no ledger record
/// holds is an error naming the tape's line: the tape asks about a call the run never made.
fn key_statuses(tape: &LoadedTape, simulation: &Simulation) -> Result<Result<KeyStatuses, InputError>, LedgerError> {
    let named = &tape.tape.expect.keys;
    if named.is_empty() {
        return Ok(Ok((BTreeMap::new(), Vec::new())));
    }
    let records = simulation.ledger_records_every_node()?;
    let carried: BTreeSet<&str> = simulation
        .timeline()
        .iter()
        .filter_map(|entry| entry.key.as_deref())
        .collect();
    let mut statuses = BTreeMap::new();
    let mut disagreements = Vec::new();
    for key in named.keys() {
        let (status, disagreement) = key_status(&records, key);
        if status.is_none() && !carried.contains(key.as_str()) {
            let mut seen: Vec<&str> = carried.iter().copied().collect();
            seen.extend(records.iter().map(|(_, record)| record.key.as_str()));
            seen.sort_unstable();
            seen.dedup();
            return Ok(Err(expectation_error(
                tape,
                &format!("\"{key}\""),
                format!(
                    "expects key {key}, which no message of this run carries and no ledger record holds (the run's keys: {})",
                    if seen.is_empty() {
                        "none".to_owned()
                    } else {
                        seen.join(", ")
                    }
                ),
            )));
        }
        statuses.insert(key.clone(), status);
        disagreements.extend(disagreement);
    }
    Ok(Ok((statuses, disagreements)))
}

/// An error at `needle` inside the tape's `expect` block (or at `expect` if it is not found).
fn expectation_error(tape: &LoadedTape, needle: &str, message: String) -> InputError {
    let text = &tape.text;
    let before = text.find("expect:").map_or(0, |at| text[..at].matches(needle).count());
    match crate::error::locate(text, needle, before) {
        Some(position) => InputError::new(&tape.path, Some(position), message),
        None => InputError::at(&tape.path, text, "expect:", 0, message),
    }
}
