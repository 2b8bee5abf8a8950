//! The names the runtime passes around — a run, a tenant, a tool, a worker — as types, so a
//! tenant cannot be handed where a run id is meant (the compiler checks the order of four
//! string arguments that used to look alike).
//!
//! Each is its text and nothing more: serialized (serde, ledger columns, JSON) exactly as the
//! string it wraps, so every stored ledger, tape and API answer reads and writes byte for byte
//! as before. Reading one as `&str` is free (`Deref`); making one takes the text on purpose
//! (`From`), since the runtime never invents names, it only carries what a level, a process's
//! flags or a stored row gave it.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;

use rusqlite::types::{FromSql, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use serde::{Deserialize, Serialize};

macro_rules! name_type {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The name from its text, as given (a level, a flag, a stored row).
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

        /// Stored as the TEXT column it always was.
        impl ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                self.0.to_sql()
            }
        }

        /// Read from the TEXT column it always was.
        impl FromSql for $name {
            fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
                String::column_result(value).map($name)
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_name_is_stored_as_text_and_read_back() {
        let connection = rusqlite::Connection::open_in_memory().unwrap();
        connection.execute_batch("CREATE TABLE t (name TEXT NOT NULL)").unwrap();
        connection
            .execute("INSERT INTO t (name) VALUES (?1)", [&WorkerId::new("w1")])
            .unwrap();
        let (stored, typed): (String, String) = connection
            .query_row("SELECT name, typeof(name) FROM t", [], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .unwrap();
        assert_eq!((stored.as_str(), typed.as_str()), ("w1", "text"));
        let read: WorkerId = connection
            .query_row("SELECT name FROM t", [], |row| row.get(0))
            .unwrap();
        assert_eq!(read, "w1");
    }
}
