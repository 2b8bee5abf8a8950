//! Who may call the operator API: bearer tokens mapped to an operator id and the
//! tenants that operator may act for.
//!
//! The tokens file holds SHA-256 hashes, never tokens, so a copy of the file (or of a
//! backup) does not let anyone in. `twice-sim hash-token` makes a token and its hash.
//!
//! ```ron
//! (
//!     operators: [
//!         (id: "ada", token_sha256: "<64 hex digits>", tenants: ["default"]),
//!     ],
//! )
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use twice_world::error::InputError;

/// The most operators one tokens file may name.
pub const OPERATORS_MAX: usize = 256;
/// The most tenants one operator may act for.
pub const TENANTS_PER_OPERATOR_MAX: usize = 64;
/// The most characters an operator id or a tenant name may have.
pub const NAME_CHARS_MAX: usize = 128;
/// The fewest characters a token may have: shorter ones can be guessed.
pub const TOKEN_CHARS_MIN: usize = 16;
/// The most characters a token may have (it travels in an HTTP header).
pub const TOKEN_CHARS_MAX: usize = 512;
/// The most bytes a tokens file may be.
pub const TOKENS_FILE_BYTES_MAX: u64 = 1 << 20;
/// Random bytes in a token made by [`generate_token`]: 256 bits.
pub const GENERATED_TOKEN_BYTES: usize = 32;

/// The tokens file as written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokensFile {
    pub operators: Vec<OperatorEntry>,
}

/// One operator in the tokens file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorEntry {
    /// Written into the ledger's history for every decision this operator makes.
    pub id: String,
    /// SHA-256 of the token, 64 hexadecimal digits (see [`hash_token`]).
    pub token_sha256: String,
    /// The tenants whose tool executions this operator may see and settle.
    pub tenants: Vec<String>,
}

/// An operator the API let in: who they are and whose records they may touch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operator {
    pub id: String,
    pub tenants: BTreeSet<String>,
}

impl Operator {
    pub fn may_see(&self, tenant: &str) -> bool {
        self.tenants.contains(tenant)
    }
}

#[derive(Clone)]
struct Credential {
    token_sha256: [u8; 32],
    operator: Operator,
}

/// The operators the API knows, by token hash.
#[derive(Clone)]
pub struct Operators {
    credentials: Vec<Credential>,
}

impl std::fmt::Debug for Operators {
    // The hashes stay out of logs: they are not secrets, but there is no reason to spread them.
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_list()
            .entries(self.credentials.iter().map(|credential| &credential.operator))
            .finish()
    }
}

/// The SHA-256 of a token, as the 64 lowercase hexadecimal digits a tokens file holds.
pub fn hash_token(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// Why a token cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Too short to resist guessing, or too long for a header.
    #[error(
        "a token has {} to {} characters; this one has {chars}",
        TOKEN_CHARS_MIN,
        TOKEN_CHARS_MAX
    )]
    Length {
        /// The characters it has.
        chars: usize,
    },
    /// A character an HTTP header would not carry unchanged.
    #[error("a token is made of visible ASCII characters (no spaces); this one holds {bad:?}")]
    NotVisible {
        /// The first such character.
        bad: char,
    },
}

/// The operating system gave no random bytes to make a token from.
#[derive(Debug, thiserror::Error)]
#[error("the operating system gave no random bytes: {0}")]
pub struct NoRandomness(pub getrandom::Error);

/// An operator id or a tenant name that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// Empty or too long.
    #[error("{what} has 1 to {} characters, not {chars}", NAME_CHARS_MAX)]
    Length {
        /// What the name is of ("an operator id").
        what: &'static str,
        /// The characters it has.
        chars: usize,
    },
    /// A space or a control character.
    #[error("{what} `{name}` holds a space or a control character")]
    Blank {
        /// What the name is of.
        what: &'static str,
        /// The name.
        name: String,
    },
}

/// Checks that a token can be used: long enough to resist guessing, and made of the
/// visible ASCII characters an HTTP header carries unchanged.
pub fn check_token(token: &str) -> Result<(), TokenError> {
    let chars = token.chars().count();
    if !(TOKEN_CHARS_MIN..=TOKEN_CHARS_MAX).contains(&chars) {
        return Err(TokenError::Length { chars });
    }
    if let Some(bad) = token.chars().find(|character| !character.is_ascii_graphic()) {
        return Err(TokenError::NotVisible { bad });
    }
    Ok(())
}

/// A new token from the operating system's random source: 256 bits as 64 hex digits.
pub fn generate_token() -> Result<String, NoRandomness> {
    let mut bytes = [0_u8; GENERATED_TOKEN_BYTES];
    getrandom::fill(&mut bytes).map_err(NoRandomness)?;
    Ok(hex(&bytes))
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        text.push(DIGITS[usize::from(byte >> 4)] as char);
        text.push(DIGITS[usize::from(byte & 0x0f)] as char);
    }
    text
}

fn parse_hash(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let mut hash = [0_u8; 32];
    for (index, pair) in text.as_bytes().chunks(2).enumerate() {
        let pair = std::str::from_utf8(pair).ok()?;
        hash[index] = u8::from_str_radix(pair, 16).ok()?;
    }
    Some(hash)
}

fn check_name(what: &'static str, name: &str) -> Result<(), NameError> {
    let chars = name.chars().count();
    if chars == 0 || chars > NAME_CHARS_MAX {
        return Err(NameError::Length { what, chars });
    }
    if name
        .chars()
        .any(|character| character.is_control() || character.is_whitespace())
    {
        return Err(NameError::Blank {
            what,
            name: name.to_owned(),
        });
    }
    Ok(())
}

impl Operators {
    /// Reads and checks a tokens file. Every problem names the file, and the line and
    /// column where it can be placed.
    pub fn load(path: &Path) -> Result<Operators, InputError> {
        let metadata =
            std::fs::metadata(path).map_err(|error| InputError::new(path, None, format!("cannot read: {error}")))?;
        if metadata.len() > TOKENS_FILE_BYTES_MAX {
            return Err(InputError::new(
                path,
                None,
                format!(
                    "{} bytes, more than the {TOKENS_FILE_BYTES_MAX} a tokens file may be",
                    metadata.len()
                ),
            ));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|error| InputError::new(path, None, format!("cannot read: {error}")))?;
        Operators::parse(path, &text)
    }

    /// Parses and checks the text of a tokens file; `path` is only used in messages.
    pub fn parse(path: &Path, text: &str) -> Result<Operators, InputError> {
        let file: TokensFile = twice_world::level::parse_ron(path, text)?;
        Operators::from_entries(&file.operators).map_err(|(index, field, message)| match field {
            // Place the error at the entry's own `field:`: entry `index` holds its `index`th one.
            Some(field) => InputError::at(path, text, &format!("{field}:"), index, message),
            None => InputError::new(path, None, message),
        })
    }

    /// Checks entries made in code (the game's own operator, say). An error gives the
    /// entry's index, the field at fault and what is wrong.
    pub fn from_entries(entries: &[OperatorEntry]) -> Result<Operators, (usize, Option<&'static str>, String)> {
        if entries.is_empty() {
            return Err((
                0,
                None,
                "no operators: name at least one, or nobody can call the API".into(),
            ));
        }
        if entries.len() > OPERATORS_MAX {
            return Err((
                0,
                None,
                format!("{} operators, more than the {OPERATORS_MAX} allowed", entries.len()),
            ));
        }
        let mut ids: BTreeMap<&str, usize> = BTreeMap::new();
        let mut hashes: BTreeMap<[u8; 32], usize> = BTreeMap::new();
        let mut credentials = Vec::with_capacity(entries.len());
        for (index, entry) in entries.iter().enumerate() {
            let place = |field: &'static str, message: String| (index, Some(field), message);
            check_name("an operator id", &entry.id).map_err(|error| place("id", error.to_string()))?;
            if let Some(first) = ids.insert(&entry.id, index) {
                return Err(place(
                    "id",
                    format!(
                        "operator `{}` is named twice (entries {} and {})",
                        entry.id,
                        first + 1,
                        index + 1
                    ),
                ));
            }
            let token_sha256 = parse_hash(&entry.token_sha256).ok_or_else(|| {
                place(
                    "token_sha256",
                    format!(
                        "operator `{}`: token_sha256 is 64 hexadecimal digits (the SHA-256 of the token; \
                         `twice-sim hash-token` makes one), not `{}`",
                        entry.id, entry.token_sha256
                    ),
                )
            })?;
            if let Some(first) = hashes.insert(token_sha256, index) {
                return Err(place(
                    "token_sha256",
                    format!(
                        "operator `{}` has the same token as operator `{}`: each operator needs its own token",
                        entry.id, entries[first].id
                    ),
                ));
            }
            if entry.tenants.is_empty() || entry.tenants.len() > TENANTS_PER_OPERATOR_MAX {
                return Err(place(
                    "tenants",
                    format!(
                        "operator `{}` acts for 1 to {TENANTS_PER_OPERATOR_MAX} tenants, not {}",
                        entry.id,
                        entry.tenants.len()
                    ),
                ));
            }
            let mut tenants = BTreeSet::new();
            for tenant in &entry.tenants {
                check_name("a tenant", tenant)
                    .map_err(|message| place("tenants", format!("operator `{}`: {message}", entry.id)))?;
                if !tenants.insert(tenant.clone()) {
                    return Err(place(
                        "tenants",
                        format!("operator `{}` lists tenant `{tenant}` twice", entry.id),
                    ));
                }
            }
            credentials.push(Credential {
                token_sha256,
                operator: Operator {
                    id: entry.id.clone(),
                    tenants,
                },
            });
        }
        Ok(Operators { credentials })
    }

    /// How many operators are known.
    pub fn len(&self) -> usize {
        self.credentials.len()
    }

    pub fn is_empty(&self) -> bool {
        self.credentials.is_empty()
    }

    /// The operator a token belongs to. Every stored hash is compared in constant time,
    /// and all of them are compared whatever matches, so timing tells nothing about
    /// which hash (or how much of one) a guess came close to.
    pub fn authenticate(&self, token: &str) -> Option<Operator> {
        if token.is_empty() || token.len() > TOKEN_CHARS_MAX {
            return None;
        }
        let presented: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let mut found = None;
        for credential in &self.credentials {
            if bool::from(credential.token_sha256.ct_eq(&presented)) {
                found = Some(&credential.operator);
            }
        }
        found.cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADA: &str = "ada-token-0123456789";

    fn file(entries: &str) -> String {
        format!("(\n    operators: [\n{entries}\n    ],\n)\n")
    }

    fn entry(id: &str, hash: &str, tenants: &str) -> String {
        format!("        (id: \"{id}\", token_sha256: \"{hash}\", tenants: [{tenants}]),")
    }

    #[test]
    fn hash_is_sha256_hex() {
        // The SHA-256 of "abc", from FIPS 180-2's examples.
        assert_eq!(
            hash_token("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn authenticates_by_token_and_only_by_token() {
        let text = file(&entry("ada", &hash_token(ADA), "\"default\", \"acme\""));
        let operators = Operators::parse(Path::new("tokens.ron"), &text).unwrap();
        let ada = operators.authenticate(ADA).expect("ada's token lets ada in");
        assert_eq!(ada.id, "ada");
        assert!(ada.may_see("acme") && ada.may_see("default") && !ada.may_see("globex"));
        assert_eq!(operators.authenticate("ada-token-012345678"), None);
        assert_eq!(operators.authenticate(""), None);
        assert_eq!(
            operators.authenticate(&hash_token(ADA)),
            None,
            "the hash is not the token"
        );
        assert_eq!(operators.authenticate(&"x".repeat(TOKEN_CHARS_MAX + 1)), None);
    }

    #[test]
    fn uppercase_hashes_are_accepted() {
        let text = file(&entry("ada", &hash_token(ADA).to_uppercase(), "\"default\""));
        let operators = Operators::parse(Path::new("tokens.ron"), &text).unwrap();
        assert!(operators.authenticate(ADA).is_some());
    }

    #[test]
    fn a_bad_hash_is_placed_at_its_line() {
        let text = file(&format!(
            "{}\n{}",
            entry("ada", &hash_token(ADA), "\"default\""),
            entry("grace", "not-a-hash", "\"default\"")
        ));
        let error = Operators::parse(Path::new("tokens.ron"), &text).unwrap_err();
        assert_eq!(error.position.map(|(line, _)| line), Some(4), "{error}");
        assert!(error.message.contains("64 hexadecimal digits"), "{error}");
        assert!(error.to_string().starts_with("tokens.ron:4:"), "{error}");
    }

    #[test]
    fn syntax_errors_name_line_and_column() {
        let error = Operators::parse(Path::new("tokens.ron"), "(operators: [(id: \"ada\",]").unwrap_err();
        assert!(error.position.is_some(), "{error}");
        let error = Operators::parse(
            Path::new("tokens.ron"),
            &file("        (id: \"ada\", token: \"x\", tenants: []),"),
        )
        .unwrap_err();
        assert!(error.message.contains("token"), "unknown fields are refused: {error}");
    }

    #[test]
    fn refuses_duplicates_empty_lists_and_bad_names() {
        let hash = hash_token(ADA);
        let other = hash_token("grace-token-0123456789");
        let cases = [
            (file(""), "no operators"),
            (
                file(&format!(
                    "{}\n{}",
                    entry("ada", &hash, "\"a\""),
                    entry("ada", &other, "\"a\"")
                )),
                "named twice",
            ),
            (
                file(&format!(
                    "{}\n{}",
                    entry("ada", &hash, "\"a\""),
                    entry("grace", &hash, "\"a\"")
                )),
                "same token",
            ),
            (file(&entry("ada", &hash, "")), "1 to 64 tenants"),
            (file(&entry("ada", &hash, "\"a\", \"a\"")), "twice"),
            (file(&entry("ada", &hash, "\"a b\"")), "space"),
            (file(&entry("", &hash, "\"a\"")), "1 to 128 characters"),
        ];
        for (text, expected) in cases {
            let error = Operators::parse(Path::new("tokens.ron"), &text).unwrap_err();
            assert!(error.message.contains(expected), "expected `{expected}` in: {error}");
        }
    }

    #[test]
    fn tokens_must_be_long_and_visible() {
        assert!(check_token("short").is_err());
        assert!(check_token("has a space in it, sadly").is_err());
        assert!(check_token(&"a".repeat(TOKEN_CHARS_MAX + 1)).is_err());
        assert!(check_token(ADA).is_ok());
        let generated = generate_token().unwrap();
        assert_eq!(generated.len(), GENERATED_TOKEN_BYTES * 2);
        assert!(check_token(&generated).is_ok());
        assert_ne!(generated, generate_token().unwrap());
    }

    #[test]
    fn debug_output_leaves_hashes_out() {
        let operators =
            Operators::parse(Path::new("tokens.ron"), &file(&entry("ada", &hash_token(ADA), "\"a\""))).unwrap();
        let shown = format!("{operators:?}");
        assert!(shown.contains("ada") && !shown.contains(&hash_token(ADA)), "{shown}");
    }
}
