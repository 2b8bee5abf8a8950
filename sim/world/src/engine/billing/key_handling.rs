//! What billing does with an idempotency key, and its one name for flags and files.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What billing does with an idempotency key it receives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyHandling {
    /// A repeat of a key gets the first answer; the same key with another body is refused.
    #[default]
    Honour,
    /// The key is stored in the credit's metadata (so a reconcile hook can look it up) but not checked.
    MetadataOnly,
    /// The key is dropped on the floor.
    Ignore,
}

impl KeyHandling {
    /// Every key handling, in the order the flags list them.
    pub const ALL: [KeyHandling; 3] = [KeyHandling::Honour, KeyHandling::MetadataOnly, KeyHandling::Ignore];

    /// The name flags, the billing server's file and its stats spell: `honour`,
    /// `metadata-only` or `ignore`. (Level files and JSON views spell the serde name,
    /// `metadata_only`; [`str::parse`] reads both.)
    pub fn name(self) -> &'static str {
        match self {
            KeyHandling::Honour => "honour",
            KeyHandling::MetadataOnly => "metadata-only",
            KeyHandling::Ignore => "ignore",
        }
    }
}

impl fmt::Display for KeyHandling {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// A key handling's name that is none of `honour`, `metadata-only` or `ignore`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown billing key handling `{0}`; use honour, metadata-only or ignore")]
pub struct UnknownKeyHandling(pub String);

impl FromStr for KeyHandling {
    type Err = UnknownKeyHandling;

    /// Reads `honour` (or `honor`), `metadata-only` (or `metadata_only`, the serde name) or
    /// `ignore`, around any whitespace.
    fn from_str(text: &str) -> Result<KeyHandling, UnknownKeyHandling> {
        match text.trim() {
            "honour" | "honor" => Ok(KeyHandling::Honour),
            "metadata-only" | "metadata_only" => Ok(KeyHandling::MetadataOnly),
            "ignore" => Ok(KeyHandling::Ignore),
            other => Err(UnknownKeyHandling(other.to_owned())),
        }
    }
}

/// Serde by [`KeyHandling::name`] (`metadata-only`), for the formats that spell it so — the
/// billing server's stats and the drill's report — where the derived serde name would be
/// `metadata_only`. Reading accepts every spelling [`str::parse`] does.
pub mod by_name {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::KeyHandling;

    pub fn serialize<S: Serializer>(key_handling: &KeyHandling, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(key_handling.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<KeyHandling, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}
