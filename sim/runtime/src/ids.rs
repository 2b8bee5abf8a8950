//! The names the runtime passes around — a run, a tenant, a tool, a worker — as types, so a
//! tenant cannot be handed where a run id is meant (the compiler checks the order of four
//! string arguments that used to look alike).
//!
//! Each is its text and nothing more: serialized (serde, ledger columns, JSON) exactly as the
//! string it wraps, so every stored ledger, file and API answer reads and writes byte for byte
//! as before. Reading one as `&str` is free (`Deref`); making one takes the text on purpose
//! (`From`), since the runtime never invents names, it only carries what a configuration, a process's
//! flags or a stored row gave it.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Serialize};

macro_rules! name_type {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The name from its text, as given (a configuration, a flag, a stored row).
            pub fn new(text: impl Into<String>) -> Self {
                $name(text.into())
            }

            /// The text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The text, owned.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(text: &str) -> Self {
                $name(text.to_owned())
            }
        }

        impl From<String> for $name {
            fn from(text: String) -> Self {
                $name(text)
            }
        }

        impl From<&String> for $name {
            fn from(text: &String) -> Self {
                $name(text.clone())
            }
        }

        impl From<$name> for String {
            fn from(name: $name) -> String {
                name.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }

        impl PartialEq<$name> for str {
            fn eq(&self, other: &$name) -> bool {
                self == other.0
            }
        }

        impl PartialEq<$name> for &str {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }
    };
}

name_type!(
    /// A run's id: the first half of the runtime's idempotency key (`<run_id>:<tool_call_id>`),
    /// the key of its checkpoint and of its history lines.
    RunId
);

name_type!(
    /// Whose run and calls they are: operators see only their own tenant's.
    Tenant
);

name_type!(
    /// A tool's name as declared and as a call names it; the same key for another tool is
    /// refused like other arguments.
    ToolName
);

name_type!(
    /// A worker's name in the ledger: a record's `owner`, a checkpoint's `saved_by`.
    WorkerId
);

/// The most bytes a name the ledger stores may have (a worker id, a run id, a tenant, a
/// tool name).
pub const NAME_BYTES_MAX: usize = 128;

/// Why a name cannot be stored in the ledger.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// Nothing, or only spaces.
    #[error("is empty")]
    Empty,
    /// Longer than [`NAME_BYTES_MAX`].
    #[error("`{text}` has {bytes} bytes, more than the {NAME_BYTES_MAX} allowed")]
    TooLong {
        /// The name, cut to the limit.
        text: String,
        /// Its length in bytes.
        bytes: usize,
    },
    /// A control character, or (in a run id, which is half of every key) a space.
    #[error("`{text}` holds {what}; a name is visible text")]
    Unprintable {
        /// The name, with the character escaped.
        text: String,
        /// What was found: `a control character` or `a space`.
        what: &'static str,
    },
    /// A run id or tenant holding the key's separator: run `a:b` with call `c` and run `a`
    /// with call `b:c` would make one key, `a:b:c`.
    #[error(
        "`{text}` holds `{character}`, the separator of the keys it makes (`<run_id>:<call_id>`), which would let two runs' keys be one"
    )]
    Ambiguous {
        /// The name, as given.
        text: String,
        /// The character refused.
        character: char,
    },
}

/// The character between a key's parts (`<run_id>:<call_id>`): never inside a part, so a key
/// reads back into one run and one call.
pub const KEY_SEPARATOR: char = ':';

/// Checks a name the ledger stores (a worker id, a tenant, a tool name): 1 to
/// [`NAME_BYTES_MAX`] bytes, not only spaces, no control character.
///
/// # Errors
///
/// What is wrong with the name.
///
/// ```
/// use twice_runtime::ids::{NameError, check_name};
/// assert_eq!(check_name("worker 1"), Ok(()));
/// assert_eq!(check_name(" "), Err(NameError::Empty));
/// ```
pub fn check_name(text: &str) -> Result<(), NameError> {
    if text.trim().is_empty() {
        return Err(NameError::Empty);
    }
    if text.len() > NAME_BYTES_MAX {
        let cut = (0..=NAME_BYTES_MAX)
            .rev()
            .find(|end| text.is_char_boundary(*end))
            .unwrap_or(0);
        return Err(NameError::TooLong {
            text: text[..cut].to_owned(),
            bytes: text.len(),
        });
    }
    if text.chars().any(char::is_control) {
        return Err(NameError::Unprintable {
            text: text.escape_debug().to_string(),
            what: "a control character",
        });
    }
    Ok(())
}

/// Checks a run id, which is the first half of every key it makes (`<run_id>:<tool_call_id>`):
/// a name ([`check_name`]) with no spaces, as keys have none, and no [`KEY_SEPARATOR`].
///
/// # Errors
///
/// What is wrong with the id.
///
/// ```
/// use twice_runtime::ids::{NameError, check_key_part};
/// assert_eq!(check_key_part("welcome-ada"), Ok(()));
/// assert_eq!(
///     check_key_part("a:b"),
///     Err(NameError::Ambiguous { text: "a:b".into(), character: ':' })
/// );
/// ```
pub fn check_key_part(text: &str) -> Result<(), NameError> {
    check_name(text)?;
    if text.chars().any(char::is_whitespace) {
        return Err(NameError::Unprintable {
            text: text.escape_debug().to_string(),
            what: "a space",
        });
    }
    check_unambiguous(text)
}

/// Checks that `text` holds no [`KEY_SEPARATOR`]: a run id, or a tenant (which a listing or a
/// future key may join to a run id the same way).
///
/// # Errors
///
/// [`NameError::Ambiguous`] naming the text and the character.
pub fn check_unambiguous(text: &str) -> Result<(), NameError> {
    match text.chars().find(|character| *character == KEY_SEPARATOR) {
        Some(character) => Err(NameError::Ambiguous {
            text: text.to_owned(),
            character,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_before_the_ledger_stores_them() {
        assert_eq!(check_name("w1"), Ok(()));
        assert_eq!(check_name(""), Err(NameError::Empty));
        assert!(matches!(check_name("a\u{1b}b"), Err(NameError::Unprintable { .. })));
        let long = "é".repeat(NAME_BYTES_MAX);
        let Err(NameError::TooLong { text, bytes }) = check_name(&long) else {
            panic!("too long")
        };
        assert_eq!((text.len(), bytes), (NAME_BYTES_MAX, 2 * NAME_BYTES_MAX));
        assert_eq!(check_key_part("r1"), Ok(()));
        assert!(check_key_part("r 1").is_err());
    }

    #[test]
    fn a_name_serializes_as_its_bare_text() {
        let run = RunId::new("r1");
        assert_eq!(serde_json::to_string(&run).unwrap(), "\"r1\"");
        assert_eq!(serde_json::from_str::<RunId>("\"r1\"").unwrap(), run);
        assert_eq!(
            serde_json::to_string(&Tenant::new("acme")).unwrap(),
            serde_json::to_string("acme").unwrap()
        );
    }
}
