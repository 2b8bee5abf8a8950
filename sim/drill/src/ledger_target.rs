//! `--ledger`: a SQLite file or a PostgreSQL URL, parsed once for every command that takes
//! one (`serve`, `worker`, `drill`, `bench`), so they all read the same forms and say the
//! same things about them. `play` and the game keep their SQLite files.
//!
//! A URL's password is never printed: `Display` and `Debug` show the redacted form
//! (`postgres://twice:***@host:5432/db`), and a URL the parser refuses is not echoed back
//! (clap's own value errors would print the text as given, password and all).

use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};

use twice_ledger_postgres::{PostgresUrl, UrlError};

use twice_world::ledger::{Ledger, LedgerError};

/// Where a ledger is.
#[derive(Clone, PartialEq, Eq)]
pub enum LedgerTarget {
    /// A SQLite file.
    File(PathBuf),
    /// A schema in a PostgreSQL database.
    Postgres(PostgresUrl),
}

/// Why `--ledger` was refused; never carries a password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("{0}")]
    Url(#[from] UrlError),
    #[error("`{0}://` is not a ledger this build opens: give a SQLite file's path or a postgres:// URL")]
    Scheme(String),
    #[error("give a SQLite file's path or a postgres:// URL, not an empty text")]
    Empty,
}

impl LedgerTarget {
    pub fn parse(text: &str) -> Result<LedgerTarget, TargetError> {
        if text.trim().is_empty() {
            return Err(TargetError::Empty);
        }
        if PostgresUrl::looks_like(text) {
            return Ok(LedgerTarget::Postgres(PostgresUrl::parse(text)?));
        }
        if let Some((scheme, _)) = text.split_once("://")
            && !scheme.is_empty()
            && scheme
                .chars()
                .all(|character| character.is_ascii_alphanumeric() || "+-.".contains(character))
        {
            return Err(TargetError::Scheme(scheme.to_owned()));
        }
        Ok(LedgerTarget::File(PathBuf::from(text)))
    }

    /// Opens the ledger, creating it (the file, or the tables in the schema) if missing.
    pub fn open(&self) -> Result<Ledger, LedgerError> {
        match self {
            LedgerTarget::File(path) => Ledger::open(path),
            LedgerTarget::Postgres(url) => twice_ledger_postgres::open(url),
        }
    }

    /// Opens a ledger that must already exist; never creates one.
    pub fn open_existing(&self) -> Result<Ledger, LedgerError> {
        match self {
            LedgerTarget::File(path) => Ledger::open_existing(path),
            LedgerTarget::Postgres(url) => twice_ledger_postgres::open_existing(url),
        }
    }

    /// The same ledger as the operator API serves it: a file, or an opener for PostgreSQL.
    pub fn served(&self) -> twice_serve::api::ServedLedger {
        match self {
            LedgerTarget::File(path) => twice_serve::api::ServedLedger::File(path.clone()),
            LedgerTarget::Postgres(url) => {
                let connect_to = url.clone();
                twice_serve::api::ServedLedger::Store {
                    description: url.to_string(),
                    open_existing: std::sync::Arc::new(move || twice_ledger_postgres::open_existing(&connect_to)),
                }
            }
        }
    }

    pub fn path(&self) -> Option<&Path> {
        match self {
            LedgerTarget::File(path) => Some(path),
            LedgerTarget::Postgres(_) => None,
        }
    }

    pub fn postgres(&self) -> Option<&PostgresUrl> {
        match self {
            LedgerTarget::File(_) => None,
            LedgerTarget::Postgres(url) => Some(url),
        }
    }
}

impl fmt::Display for LedgerTarget {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LedgerTarget::File(path) => write!(formatter, "{}", path.display()),
            LedgerTarget::Postgres(url) => write!(formatter, "{url}"),
        }
    }
}

impl fmt::Debug for LedgerTarget {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LedgerTarget::File(path) => write!(formatter, "LedgerTarget::File({})", path.display()),
            LedgerTarget::Postgres(url) => write!(formatter, "LedgerTarget::Postgres({url})"),
        }
    }
}

/// clap's parser for `--ledger`: refuses with this module's words and without echoing the
/// text (which may hold a password).
#[derive(Clone, Copy, Debug, Default)]
pub struct LedgerTargetParser;

impl clap::builder::TypedValueParser for LedgerTargetParser {
    type Value = LedgerTarget;

    fn parse_ref(
        &self,
        command: &clap::Command,
        argument: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<LedgerTarget, clap::Error> {
        let flag = argument
            .and_then(|argument| argument.get_long())
            .map_or_else(|| "the ledger".to_owned(), |long| format!("--{long}"));
        let refuse = |detail: String| {
            clap::Error::raw(clap::error::ErrorKind::ValueValidation, format!("{flag}: {detail}\n")).with_cmd(command)
        };
        let text = value
            .to_str()
            .ok_or_else(|| refuse("the value is not valid UTF-8".into()))?;
        LedgerTarget::parse(text).map_err(|error| refuse(error.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_urls_are_told_apart_and_urls_never_show_their_password() {
        assert_eq!(
            LedgerTarget::parse("ledger.sqlite").unwrap(),
            LedgerTarget::File(PathBuf::from("ledger.sqlite"))
        );
        assert_eq!(
            LedgerTarget::parse("/tmp/a:b.sqlite").unwrap(),
            LedgerTarget::File(PathBuf::from("/tmp/a:b.sqlite"))
        );
        let target = LedgerTarget::parse("postgres://twice:hunter2@127.0.0.1:55432/twice").unwrap();
        assert!(target.postgres().is_some());
        for shown in [target.to_string(), format!("{target:?}")] {
            assert!(shown.contains("postgres://twice:***@127.0.0.1:55432/twice"), "{shown}");
            assert!(!shown.contains("hunter2"), "{shown}");
        }
        assert_eq!(
            LedgerTarget::parse("mysql://root:hunter2@db/x"),
            Err(TargetError::Scheme("mysql".into()))
        );
        assert_eq!(LedgerTarget::parse("  "), Err(TargetError::Empty));
        let error = LedgerTarget::parse("postgres://twice:hunter2@db:99999/x").unwrap_err();
        assert!(!error.to_string().contains("hunter2"), "{error}");
    }

    #[test]
    fn clap_refuses_a_bad_url_without_echoing_it() {
        #[derive(Debug, clap::Parser)]
        struct Flags {
            #[arg(long, value_parser = LedgerTargetParser)]
            ledger: LedgerTarget,
        }
        let error =
            <Flags as clap::Parser>::try_parse_from(["twice-sim", "--ledger", "postgres://twice:hunter2@db:0/x"])
                .unwrap_err()
                .to_string();
        assert!(error.contains("--ledger: port `0`"), "{error}");
        assert!(!error.contains("hunter2"), "{error}");
    }
}
