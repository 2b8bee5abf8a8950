//! Idempotency keys: one per tool call, `<run_id>:<tool_call_id>`.
//!
//! ```
//! use twice_runtime::IdempotencyKey;
//!
//! let key = IdempotencyKey::per_call("refund-7", "c1")?;
//! assert_eq!(key.as_str(), "refund-7:c1");
//! // Stable across replays: the same run and call give the same key, whatever the arguments.
//! assert_eq!(IdempotencyKey::parse("refund-7:c1")?, key);
//! assert!(IdempotencyKey::per_call("refund-7", "").is_err(), "an error, never a panic");
//! # Ok::<(), twice_runtime::key::KeyError>(())
//! ```

use serde::{Deserialize, Serialize};

use crate::ids::KEY_SEPARATOR;

/// The key of one tool call. Stable across every replay of that call, because both
/// parts come from the run's checkpointed state, never from the arguments.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct IdempotencyKey(String);

/// Why a text or a pair of parts is not an idempotency key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// A per-call key's run id or tool call id is empty (`part` says which).
    #[error("a key is `<run_id>:<tool_call_id>`, and the {part} is empty")]
    EmptyPart {
        /// Which part: `run id` or `tool call id`.
        part: &'static str,
    },
    /// A part holds the key's separator (`:`): run `a:b` with call `c` and run `a` with call
    /// `b:c` would make one key.
    #[error(
        "the {part} `{text}` holds `{character}`, the key's separator (`<run_id>:<tool_call_id>`): two calls could make one key"
    )]
    AmbiguousPart {
        /// Which part: `run id` or `tool call id`.
        part: &'static str,
        /// The part, as given.
        text: String,
        /// The character refused.
        character: char,
    },
    /// Empty, longer than 200 bytes, or holding a control or whitespace character.
    #[error("`{text}` is not an idempotency key (1 to 200 visible characters)")]
    Malformed {
        /// The text given.
        text: String,
    },
}

/// How keys are made. Only `PerCall` is correct; `ArgumentsHash` (feature `simulation`) exists
/// so a simulation can show what a key derived from the arguments gets wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyScheme {
    /// `<run_id>:<tool_call_id>`: stable across replays, distinct for two calls with the same arguments.
    PerCall,
    /// A hash of the tool and its arguments: merges two honest calls and misses a reworded replay.
    #[cfg(feature = "simulation")]
    ArgumentsHash,
}

impl IdempotencyKey {
    /// The runtime's key: `<run_id>:<tool_call_id>`. Both parts come from stored state (a
    /// checkpoint, a model's call), so a bad part is an error, never a panic.
    ///
    /// # Errors
    ///
    /// [`KeyError::EmptyPart`] for an empty run or call id; [`KeyError::AmbiguousPart`] for a
    /// part holding `:`, the separator; [`KeyError::Malformed`] when the key
    /// would be longer than 200 bytes or hold whitespace or a control character.
    pub fn per_call(run_id: &str, tool_call_id: &str) -> Result<Self, KeyError> {
        if run_id.is_empty() || tool_call_id.is_empty() {
            return Err(KeyError::EmptyPart {
                part: if run_id.is_empty() { "run id" } else { "tool call id" },
            });
        }
        for (part, text) in [("run id", run_id), ("tool call id", tool_call_id)] {
            if let Some(character) = text.chars().find(|character| *character == KEY_SEPARATOR) {
                return Err(KeyError::AmbiguousPart {
                    part,
                    text: text.to_owned(),
                    character,
                });
            }
        }
        IdempotencyKey::parse(&format!("{run_id}{KEY_SEPARATOR}{tool_call_id}"))
    }

    simulation_api! {
        /// The naive key: a hash of the tool name and its canonical arguments. Two honest
        /// calls with equal arguments share it; a reworded argument changes it.
        pub fn from_arguments(tool: &str, canonical_arguments: &str) -> Self {
            IdempotencyKey(format!(
                "h:{:016x}",
                fnv1a64(&[tool.as_bytes(), b"\0", canonical_arguments.as_bytes()])
            ))
        }
    }

    /// The key of one call under `scheme`.
    ///
    /// # Errors
    ///
    /// [`KeyError`] names a run or call id that cannot be part of a key.
    #[cfg_attr(
        not(feature = "simulation"),
        allow(
            unused_variables,
            reason = "only the simulation's argument hash reads the tool and its arguments"
        )
    )]
    pub fn make(
        scheme: KeyScheme,
        run_id: &str,
        tool_call_id: &str,
        tool: &str,
        canonical_arguments: &str,
    ) -> Result<Self, KeyError> {
        match scheme {
            KeyScheme::PerCall => IdempotencyKey::per_call(run_id, tool_call_id),
            #[cfg(feature = "simulation")]
            KeyScheme::ArgumentsHash => Ok(IdempotencyKey::from_arguments(tool, canonical_arguments)),
        }
    }

    /// Wraps a key read back from the ledger or an operator's request.
    ///
    /// # Errors
    ///
    /// [`KeyError::Malformed`] for an empty text, one longer than 200 bytes, or one holding
    /// whitespace or a control character.
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        if text.is_empty() || text.len() > 200 || text.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(KeyError::Malformed { text: text.to_owned() });
        }
        Ok(IdempotencyKey(text.to_owned()))
    }

    /// The key as text, as it travels downstream and is stored in the ledger.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for IdempotencyKey {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

/// FNV-1a, 64 bits: stable across platforms and crate versions, unlike `DefaultHasher`.
pub fn fnv1a64(parts: &[&[u8]]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in *part {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_per_call_is_run_id_colon_tool_call_id() {
        assert_eq!(IdempotencyKey::per_call("r1", "c2").unwrap().as_str(), "r1:c2");
        assert!(
            IdempotencyKey::per_call("r1", "").is_err(),
            "an empty call id is an error, not a panic"
        );
        assert!(IdempotencyKey::per_call("", "c1").is_err());
    }

    #[test]
    fn key_per_call_ignores_arguments_so_identical_honest_credits_stay_apart() {
        let first = IdempotencyKey::make(
            KeyScheme::PerCall,
            "r1",
            "c1",
            "issue_credit",
            "{\"amount_cents\":2500}",
        )
        .unwrap();
        let second = IdempotencyKey::make(
            KeyScheme::PerCall,
            "r1",
            "c2",
            "issue_credit",
            "{\"amount_cents\":2500}",
        )
        .unwrap();
        assert_ne!(first, second);
    }

    #[test]
    fn key_from_arguments_merges_equal_calls_and_splits_reworded_ones() {
        let first = IdempotencyKey::from_arguments("issue_credit", "{\"memo\":\"refund\"}");
        let same = IdempotencyKey::from_arguments("issue_credit", "{\"memo\":\"refund\"}");
        let reworded = IdempotencyKey::from_arguments("issue_credit", "{\"memo\":\"a refund\"}");
        assert_eq!(first, same);
        assert_ne!(first, reworded);
    }

    #[test]
    fn fnv_is_stable() {
        // Pinned so that a change of hash (and so of every argument-derived key) is noticed.
        assert_eq!(fnv1a64(&[b"a"]), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn keys_with_spaces_or_nothing_are_refused() {
        assert!(IdempotencyKey::parse("").is_err());
        assert!(IdempotencyKey::parse("r1 c1").is_err());
        assert!(IdempotencyKey::parse("r1:c1").is_ok());
    }
}
