//! What operators do: resolve an unknown call, or ask for its compensation.
//!
//! One implementation, used by the game's operator console, the simulator's operator
//! cards and the HTTP API. Every decision is compare-and-set on the ledger status,
//! needs a reason and an operator id, and is appended to the record's history.

use super::key::IdempotencyKey;
use super::rules::Status;
use super::worker::Reconciled;
use crate::ledger::{ExecutionRecord, Ledger, LedgerError, SettleError, Settlement};

/// The most characters (Unicode scalar values) a reason may have.
pub const REASON_CHARS_MAX: usize = 2_000;

/// Why a reason is refused. A reason goes into the record's history and is shown later, raw,
/// in terminals (`sqlite3`, `curl`), the game's console and logs, so it must be printable text:
///
/// - 1 to [`REASON_CHARS_MAX`] characters;
/// - no control character but tab and line feed, which lay text out and move nothing already
///   shown (carriage return overwrites a line, ESC starts a terminal command, NUL cuts C strings);
/// - no bidirectional formatting character (U+202A–U+202E, U+2066–U+2069): they reorder how
///   the rest of the line reads;
/// - at least one character that shows: a reason of only spaces and invisible characters
///   (zero-width space, byte order mark, word joiner, …) says nothing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReasonError {
    #[error("say why (it goes into the record's history); it must not be empty")]
    Empty,
    #[error("{chars} characters, more than the {REASON_CHARS_MAX} allowed")]
    TooLong { chars: usize },
    #[error(
        "character {position} is the control character U+{code_point:04X}; a reason is printable text \
         (tab and line feed are the only control characters allowed)"
    )]
    ControlCharacter { position: usize, code_point: u32 },
    #[error(
        "character {position} is U+{code_point:04X}, a bidirectional formatting character that \
         reorders how the text is shown"
    )]
    BidirectionalFormatting { position: usize, code_point: u32 },
    #[error("only spaces and invisible characters: say why in words someone can read")]
    Invisible,
}

/// Checks that `reason` is printable text an operator can read back later (see [`ReasonError`]).
/// Every console (the game's, the simulator's cards, the HTTP API) goes through this one rule.
pub fn check_reason(reason: &str) -> Result<(), ReasonError> {
    if reason.is_empty() {
        return Err(ReasonError::Empty);
    }
    let chars = reason.chars().count();
    if chars > REASON_CHARS_MAX {
        return Err(ReasonError::TooLong { chars });
    }
    let mut shows = false;
    // Positions count from 1, as a person counts characters.
    for (position, character) in (1..).zip(reason.chars()) {
        let code_point = u32::from(character);
        if character.is_control() && !matches!(character, '\t' | '\n') {
            return Err(ReasonError::ControlCharacter { position, code_point });
        }
        if is_bidirectional_formatting(character) {
            return Err(ReasonError::BidirectionalFormatting { position, code_point });
        }
        shows |= !character.is_whitespace() && !is_invisible(character);
    }
    if shows { Ok(()) } else { Err(ReasonError::Invisible) }
}

/// Embeddings, overrides and isolates: they change the order in which the text around them is
/// drawn ("Trojan Source").
fn is_bidirectional_formatting(character: char) -> bool {
    matches!(character, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Characters that draw nothing: Unicode's `Default_Ignorable_Code_Point` (DerivedCoreProperties,
/// Unicode 15.1; zero-width spaces and joiners, the byte order mark, soft hyphen, variation
/// selectors, tags, fillers), plus the braille blank U+2800, which renders as an empty cell.
/// Whitespace is told apart by `char::is_whitespace`.
fn is_invisible(character: char) -> bool {
    matches!(
        character,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{2800}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFF8}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// An operator's resolve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolveRequest {
    pub status: Status,
    pub reason: String,
    pub operator: String,
    /// Compare-and-set: the status the operator saw; `None`: any unknown status.
    pub expected_status: Option<Status>,
    /// The result to record for a `completed` call (a receipt the operator found).
    pub result: Option<String>,
}

/// What the tool's world holds for a call, looked up by the call's idempotency key before
/// anything is undone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// The effect is there. `reference` is what the compensation acts on (billing: the
    /// credit's id); `detail` says what was found.
    Found { reference: String, detail: String },
    /// The world holds no effect under the key and is applying none: the call did not
    /// take effect. `detail` says what was asked and what was found, for the history.
    Absent { detail: String },
}

/// Why the effect could not be looked up, or could not be trusted to be the call's. In
/// every case nothing is undone and nothing is recorded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    /// The world cannot find effects by key (billing that ignores keys): nobody can tell
    /// what to undo, or whether there is anything (409 `cannot_look_up`).
    #[error("{0}")]
    CannotLookUp(String),
    /// A request with the key is still being applied: the answer is not settled yet
    /// (409 `effect_in_flight`; ask again shortly).
    #[error("{0}")]
    InFlight(String),
    /// What the world holds does not match one call (several effects under one key, or
    /// one unlike the call's arguments): a person decides (409 `effect_ambiguous`).
    #[error("{0}")]
    Ambiguous(String),
    /// The world could not be asked: unreachable, too slow, or an answer that makes no
    /// sense (502 `target_unavailable`).
    #[error("{0}")]
    Unavailable(String),
}

#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    #[error("reason: {0}")]
    Reason(#[from] ReasonError),
    #[error("an operator id is required")]
    MissingOperator,
    #[error("an operator resolves a call to completed or failed, not {0}")]
    BadStatus(Status),
    #[error("tool `{0}` has no compensation")]
    NoCompensation(String),
    #[error("{key} is {status}: it did not take effect, so there is nothing to compensate")]
    NothingToCompensate { key: IdempotencyKey, status: Status },
    #[error("{0} was already compensated; it is not compensated again")]
    AlreadyCompensated(IdempotencyKey),
    #[error(
        "{key} is completed in the ledger, but {finding}. The ledger and the tool's world disagree: \
         nothing was undone and nothing recorded; a person checks by hand"
    )]
    EffectMissing { key: IdempotencyKey, finding: String },
    #[error("the compensation of {key} failed: {detail}")]
    CompensationFailed { key: IdempotencyKey, detail: String },
    #[error(transparent)]
    Settle(#[from] SettleError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

fn check_who_and_why(reason: &str, operator: &str) -> Result<(), OperatorError> {
    check_reason(reason)?;
    if operator.trim().is_empty() {
        return Err(OperatorError::MissingOperator);
    }
    Ok(())
}

/// Records what the operator found: compare-and-set, appended to the history.
pub fn resolve(
    ledger: &mut Ledger,
    key: &IdempotencyKey,
    request: &ResolveRequest,
    now_ms: u64,
) -> Result<ExecutionRecord, OperatorError> {
    check_who_and_why(&request.reason, &request.operator)?;
    if !matches!(request.status, Status::Completed | Status::Failed) {
        return Err(OperatorError::BadStatus(request.status));
    }
    let settlement = Settlement {
        to: request.status,
        expected: request.expected_status,
        actor: &request.operator,
        event: "resolved",
        reason: Some(&request.reason),
        result: request.result.as_deref(),
    };
    Ok(ledger.settle(key, &settlement, now_ms)?)
}

/// Whether a compensation may be asked for at all, without changing anything: a reason
/// and an operator, a record under `key`, a tool with a compensation, and a status that
/// may have taken effect and was not compensated yet. Returns the record as it stands, so
/// a caller can look the effect up in the tool's world before [`compensate`] claims it.
pub fn check_compensable(
    ledger: &Ledger,
    key: &IdempotencyKey,
    reason: &str,
    operator: &str,
    has_compensation: impl FnOnce(&str) -> bool,
) -> Result<ExecutionRecord, OperatorError> {
    check_who_and_why(reason, operator)?;
    let current = ledger.record(key)?.ok_or_else(|| SettleError::NotFound(key.clone()))?;
    if !has_compensation(&current.tool) {
        return Err(OperatorError::NoCompensation(current.tool));
    }
    match current.status {
        Status::Compensated => Err(OperatorError::AlreadyCompensated(key.clone())),
        Status::Failed => Err(OperatorError::NothingToCompensate {
            key: key.clone(),
            status: current.status,
        }),
        Status::Completed | Status::Started | Status::Indeterminate => Ok(current),
    }
}

/// Runs the tool's compensation once. The status moves to `compensated` first
/// (compare-and-set, so of two requests exactly one compensates). If the effect then
/// fails, the record stays claimed with a `compensation_failed` history entry: running
/// a compensation twice can be worse than not at all, so a person looks.
pub fn compensate(
    ledger: &mut Ledger,
    key: &IdempotencyKey,
    reason: &str,
    operator: &str,
    has_compensation: impl FnOnce(&str) -> bool,
    effect: impl FnOnce(&ExecutionRecord) -> Result<String, String>,
    now_ms: u64,
) -> Result<ExecutionRecord, OperatorError> {
    let current = check_compensable(ledger, key, reason, operator, has_compensation)?;
    let claim = Settlement {
        to: Status::Compensated,
        expected: Some(current.status),
        actor: operator,
        event: "compensated",
        reason: Some(reason),
        result: None,
    };
    let claimed = match ledger.settle(key, &claim, now_ms) {
        Ok(record) => record,
        Err(SettleError::Stale { current, .. }) if current.status == Status::Compensated => {
            return Err(OperatorError::AlreadyCompensated(key.clone()));
        }
        Err(error) => return Err(error.into()),
    };
    match effect(&claimed) {
        Ok(detail) => {
            ledger.note(key, operator, "compensation_applied", &detail, now_ms)?;
            Ok(ledger.record(key)?.unwrap_or(claimed))
        }
        Err(detail) => {
            ledger.note(key, operator, "compensation_failed", &detail, now_ms)?;
            Err(OperatorError::CompensationFailed {
                key: key.clone(),
                detail,
            })
        }
    }
}

/// An operator asked for a compensation, and the tool's world, asked by the call's key,
/// holds no effect of it and is applying none: the call did not take effect. Undoing it
/// anyway would be a side effect of its own (voiding a credit never issued takes the
/// customer's money), so nothing is undone. The call is settled `failed` — compare-and-set
/// from `seen`, the status it had when the world was asked — and the finding goes into the
/// history, so a paused run resumes hearing the truth: the call did not take effect.
///
/// A call the ledger holds `completed` is refused ([`OperatorError::EffectMissing`]): the
/// ledger and the world disagree, and a settled decision is never overwritten.
pub fn record_nothing_to_compensate(
    ledger: &mut Ledger,
    key: &IdempotencyKey,
    reason: &str,
    operator: &str,
    seen: Status,
    finding: &str,
    now_ms: u64,
) -> Result<ExecutionRecord, OperatorError> {
    check_who_and_why(reason, operator)?;
    match seen {
        Status::Completed => {
            return Err(OperatorError::EffectMissing {
                key: key.clone(),
                finding: finding.to_owned(),
            });
        }
        Status::Compensated => return Err(OperatorError::AlreadyCompensated(key.clone())),
        Status::Failed => {
            return Err(OperatorError::NothingToCompensate {
                key: key.clone(),
                status: seen,
            });
        }
        Status::Started | Status::Indeterminate => {}
    }
    let settlement = Settlement {
        to: Status::Failed,
        expected: Some(seen),
        actor: operator,
        event: "nothing_to_compensate",
        reason: Some(reason),
        result: None,
    };
    let settled = match ledger.settle(key, &settlement, now_ms) {
        Ok(record) => record,
        Err(SettleError::Stale { current, .. }) if current.status == Status::Compensated => {
            return Err(OperatorError::AlreadyCompensated(key.clone()));
        }
        Err(error) => return Err(error.into()),
    };
    ledger.note(key, operator, "compensation_not_applied", finding, now_ms)?;
    Ok(ledger.record(key)?.unwrap_or(settled))
}

/// Records what a reconcile hook found in the other system: `completed` with its receipt,
/// compare-and-set from whatever unknown status the call has. One implementation for
/// every driver (the simulator and real worker processes). A call someone settled first
/// keeps their decision, which the worker then hears.
pub fn record_reconciled(
    ledger: &mut Ledger,
    key: &IdempotencyKey,
    receipt: &str,
    now_ms: u64,
) -> Result<Reconciled, LedgerError> {
    let settlement = Settlement {
        to: Status::Completed,
        expected: None,
        actor: "reconcile-hook",
        event: "reconciled",
        reason: Some("found in billing by its idempotency key"),
        result: Some(receipt),
    };
    Ok(match ledger.settle(key, &settlement, now_ms) {
        Ok(_) => Reconciled::Completed {
            result: receipt.to_owned(),
        },
        Err(SettleError::AlreadySettled { current, .. } | SettleError::Stale { current, .. }) => {
            Reconciled::AlreadySettled(current)
        }
        Err(SettleError::NotFound(_) | SettleError::NotADecision { .. }) => Reconciled::Unknown,
        Err(SettleError::Ledger(error)) => return Err(error),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_is_printable_text() {
        for reason in [
            "billing shows cr_0001",
            "x",
            "checked with Ada\n\tshe confirmed",
            "é ✓ 中文 🙂",
            "a\u{200B}b",
            &"x".repeat(REASON_CHARS_MAX),
        ] {
            assert_eq!(check_reason(reason), Ok(()), "{reason:?}");
        }
    }

    #[test]
    fn control_invisible_reordering_and_overlong_reasons_are_refused() {
        let too_long = "é".repeat(REASON_CHARS_MAX + 1);
        let cases: [(&str, ReasonError); 14] = [
            ("", ReasonError::Empty),
            (" \n\t ", ReasonError::Invisible),
            ("\u{200B}", ReasonError::Invisible),
            ("\u{FEFF}\u{2060}\u{00A0}\u{3000}", ReasonError::Invisible),
            ("\u{E0020}\u{FE0F}\u{2800}", ReasonError::Invisible),
            (
                "ok\r",
                ReasonError::ControlCharacter {
                    position: 3,
                    code_point: 0x0D,
                },
            ),
            (
                "\u{1B}[2Jok",
                ReasonError::ControlCharacter {
                    position: 1,
                    code_point: 0x1B,
                },
            ),
            (
                "a\0b",
                ReasonError::ControlCharacter {
                    position: 2,
                    code_point: 0,
                },
            ),
            (
                "a\u{7F}",
                ReasonError::ControlCharacter {
                    position: 2,
                    code_point: 0x7F,
                },
            ),
            (
                "a\u{9B}31m",
                ReasonError::ControlCharacter {
                    position: 2,
                    code_point: 0x9B,
                },
            ),
            (
                "a\u{0B}b",
                ReasonError::ControlCharacter {
                    position: 2,
                    code_point: 0x0B,
                },
            ),
            (
                "paid \u{202E}0001rc",
                ReasonError::BidirectionalFormatting {
                    position: 6,
                    code_point: 0x202E,
                },
            ),
            (
                "\u{2067}x",
                ReasonError::BidirectionalFormatting {
                    position: 1,
                    code_point: 0x2067,
                },
            ),
            (
                too_long.as_str(),
                ReasonError::TooLong {
                    chars: REASON_CHARS_MAX + 1,
                },
            ),
        ];
        for (reason, expected) in cases {
            assert_eq!(check_reason(reason), Err(expected), "{reason:?}");
        }
    }

    #[test]
    fn every_operator_move_applies_the_reason_rule() {
        let mut ledger = Ledger::open_memory_store();
        let key = IdempotencyKey::per_call("r1", "c1");
        let request = ResolveRequest {
            status: Status::Failed,
            reason: "\u{1B}]0;owned\u{7}".into(),
            operator: "ada".into(),
            expected_status: None,
            result: None,
        };
        assert!(matches!(
            resolve(&mut ledger, &key, &request, 1),
            Err(OperatorError::Reason(ReasonError::ControlCharacter { position: 1, .. }))
        ));
        assert!(matches!(
            check_compensable(&ledger, &key, "\u{200B}", "ada", |_| true),
            Err(OperatorError::Reason(ReasonError::Invisible))
        ));
        assert!(matches!(
            record_nothing_to_compensate(&mut ledger, &key, "ok\r", "ada", Status::Started, "none", 1),
            Err(OperatorError::Reason(ReasonError::ControlCharacter { .. }))
        ));
    }
}
