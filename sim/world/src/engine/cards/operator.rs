//! What the two operator cards share: who the player is as an operator, and who the explorer
//! plays as.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::runtime::key::IdempotencyKey;
use crate::runtime::rules::Status;
use crate::simulator::PlayError;

/// The player's operator id, unless a move names another.
pub fn default_operator() -> String {
    "op-crew".into()
}

/// The operators the explorer plays as: two, because two operators acting on one call is a
/// heist of its own (level 17).
const EXPLORER_OPERATORS: [&str; 2] = ["op-crew", "op-other"];

/// What an explorer's decision may expect the record to be: nothing (any unknown status) or any
/// status at all — a stale expectation is a move that fails, which a crew may well make.
pub(super) const EXPECTATIONS: [Option<Status>; 7] = [
    None,
    Some(Status::Started),
    Some(Status::Completed),
    Some(Status::Failed),
    Some(Status::Indeterminate),
    Some(Status::Compensating),
    Some(Status::Compensated),
];

/// One of the operators the explorer plays as.
pub(super) fn explorer_operator(rng: &mut ChaCha8Rng) -> String {
    EXPLORER_OPERATORS[rng.random_range(0..EXPLORER_OPERATORS.len())].to_owned()
}

/// `key` read as an idempotency key, or the move is refused naming it.
pub(super) fn parse_key(key: &str) -> Result<IdempotencyKey, PlayError> {
    IdempotencyKey::parse(key).map_err(|_| PlayError::BadKey(key.to_owned()))
}

/// Why a tape's operator move names no real key, if it does not.
pub(super) fn key_doubt(key: &str) -> Option<String> {
    IdempotencyKey::parse(key).err().map(|error| error.to_string())
}

/// The two problems both operator moves can have on their own: no reason, no operator.
pub(super) fn signature_problem(what: &str, key: &str, reason: &str, operator: &str) -> Option<String> {
    if reason.trim().is_empty() {
        return Some(format!("{what} {key} needs a reason"));
    }
    if operator.trim().is_empty() {
        return Some("an operator id is required".into());
    }
    None
}
