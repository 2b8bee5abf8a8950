//! The billing server's SQLite file: every applied entry, appended, and replayed on start.
//!
//! There is one implementation of billing's rules — [`Billing`] — and this file does not
//! repeat them. It stores each request that changed billing (a credit or a void) next to the
//! entry it made; opening the file replays those requests through a fresh `Billing` in
//! order and checks that each makes the same entry again. So the honoured keys, balances
//! and credit ids after a restart are exactly what `Billing` computes, not a second copy of
//! its logic, and a file that does not replay is refused rather than half-trusted.

use std::path::{Path, PathBuf};

mod records;

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use twice_world::billing::{Account, Answer, Billing, CreditRequest, EntryKind, KeyHandling, RecordRequest, Terms};
use twice_world::sqlite_file::{self, DurabilityError, Failure};

const SCHEMA_NAME: &str = "twice-billing";
/// The schema this code writes and reads.
pub const SCHEMA_VERSION: u32 = 1;
/// How long a connection waits for another's write lock (shared by every Twice database).
pub use twice_world::sqlite_file::BUSY_TIMEOUT_MS;

const SCHEMA: &str = r#"
CREATE TABLE billing_meta (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE accounts (
    id                    TEXT PRIMARY KEY,
    owner                 TEXT NOT NULL,
    opening_balance_cents INTEGER NOT NULL
);
CREATE TABLE entries (
    seq             INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    kind            TEXT NOT NULL CHECK (kind IN ('credit', 'reversal')),
    account         TEXT NOT NULL,
    amount_cents    INTEGER NOT NULL,
    memo            TEXT NOT NULL,
    idempotency_key TEXT,
    intent          TEXT,
    metadata        TEXT NOT NULL,
    at_ms           INTEGER NOT NULL,
    reverses        TEXT,
    request         TEXT NOT NULL
);
CREATE INDEX entries_by_key ON entries (idempotency_key);
CREATE INDEX entries_by_intent ON entries (intent);
"#;

/// A request to void a credit (the compensation `void_credit`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VoidRequest {
    pub idempotency_key: String,
    pub account: String,
    pub amount_cents: u32,
    pub intent: String,
}

/// A request to void one credit by its id (what an operator's compensation sends, after
/// looking the credit up by key): idempotent, and never a reversal of money not paid.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VoidByIdRequest {
    pub credit_id: String,
}

/// A request that may change billing, as stored for replay.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    Credit(CreditRequest),
    Void(VoidRequest),
    VoidById(VoidByIdRequest),
    /// `POST /v1/emails`: [`Billing::send_email`].
    Email(RecordRequest),
    /// `PUT /v1/accounts/{id}/owner`: [`Billing::change_owner`].
    OwnerChange(RecordRequest),
    /// `DELETE /v1/records/{id}`: [`Billing::delete_record`].
    Delete(RecordRequest),
    /// Someone outside the agent sets an account's owner (a level's scripted change, played by
    /// the runtime protocol): [`Billing::owner_changed_by`].
    OwnerChangedBy(OwnerChangedBy),
}

/// An owner change by someone outside the agent, as stored for replay.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnerChangedBy {
    pub account: String,
    pub owner: String,
    /// Who, as the owner history records it (`support`).
    pub by: String,
}

impl Operation {
    /// Whether it acts on the records (an email, an owner, a record) rather than on money.
    pub fn is_record(&self) -> bool {
        matches!(
            self,
            Operation::Email(_) | Operation::OwnerChange(_) | Operation::Delete(_)
        )
    }

    /// The idempotency key the request carries.
    pub fn idempotency_key(&self) -> Option<&str> {
        match self {
            Operation::Credit(request) => request.idempotency_key.as_deref(),
            Operation::Email(request) | Operation::OwnerChange(request) | Operation::Delete(request) => {
                request.idempotency_key.as_deref()
            }
            Operation::Void(_) | Operation::VoidById(_) | Operation::OwnerChangedBy(_) => None,
        }
    }
}

/// Everything that can go wrong with a billing file, each naming the file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: cannot open the billing database: {detail}")]
    Open { path: PathBuf, detail: String },
    #[error("{path}: not a Twice billing database ({detail})")]
    NotABillingDatabase { path: PathBuf, detail: String },
    #[error("{path}: billing schema version {found}, but this build reads version {SCHEMA_VERSION}")]
    SchemaVersion { path: PathBuf, found: String },
    #[error(
        "{path}: the database was made with billing keys `{stored}`, not `{asked}`; replaying it under other key rules would change its history, so use a new file"
    )]
    KeyHandlingDiffers {
        path: PathBuf,
        stored: KeyHandling,
        asked: KeyHandling,
    },
    #[error(
        "{path}: the database was made with billing's terms {stored}, not {asked}; replaying it under other terms would change its history, so use a new file"
    )]
    TermsDiffer {
        path: PathBuf,
        stored: String,
        asked: String,
    },
    #[error("{path}: entry {seq} does not replay: {detail}")]
    Replay { path: PathBuf, seq: i64, detail: String },
    #[error("{path}: the billing database is locked by another process (waited {BUSY_TIMEOUT_MS} ms)")]
    Locked { path: PathBuf },
    #[error("{path}: {context}: {source}")]
    Sqlite {
        path: PathBuf,
        context: &'static str,
        #[source]
        source: rusqlite::Error,
    },
}

/// The billing server's file. One connection, used under the server's lock.
#[derive(Debug)]
pub struct BillingStore {
    connection: Connection,
    path: PathBuf,
    key_handling: KeyHandling,
    /// How long billing keeps keys and how long its lookups lag: stored with the file, so a
    /// replay pays again exactly where the live billing did.
    terms: Terms,
    accounts: Vec<Account>,
}

impl BillingStore {
    /// Opens (or creates) a billing file for a server that applies `key_handling` to `accounts`,
    /// and returns the billing state its entries replay to.
    pub fn open(
        path: &Path,
        key_handling: KeyHandling,
        accounts: &[Account],
    ) -> Result<(BillingStore, Billing), StoreError> {
        BillingStore::open_with_terms(path, key_handling, Terms::default(), accounts)
    }

    /// [`BillingStore::open`] for a billing with `terms` (how long it keeps keys, how long its
    /// lookups lag); an existing file must have been made with the same terms.
    pub fn open_with_terms(
        path: &Path,
        key_handling: KeyHandling,
        terms: Terms,
        accounts: &[Account],
    ) -> Result<(BillingStore, Billing), StoreError> {
        let connection = sqlite_file::open(path, true).map_err(|error| StoreError::Open {
            path: path.to_path_buf(),
            detail: error.to_string(),
        })?;
        let mut store = BillingStore {
            connection,
            path: path.to_path_buf(),
            key_handling,
            terms,
            accounts: accounts.to_vec(),
        };
        store.configure()?;
        if store.table_names()?.is_empty() {
            store.create(key_handling, accounts)?;
        }
        store.identify(Some((key_handling, terms)))?;
        store
            .connection
            .execute_batch(records::RECORDS_SCHEMA)
            .map_err(|error| store.classify(error, "creating the record requests' table"))?;
        let billing = store.replay()?;
        Ok((store, billing))
    }

    /// Opens an existing billing file to read it (the drill's checker), under the key
    /// handling it was made with.
    pub fn open_existing(path: &Path) -> Result<(BillingStore, Billing), StoreError> {
        if !path.is_file() {
            return Err(StoreError::Open {
                path: path.to_path_buf(),
                detail: "no such file".into(),
            });
        }
        let connection = sqlite_file::open(path, false).map_err(|error| StoreError::Open {
            path: path.to_path_buf(),
            detail: error.to_string(),
        })?;
        let mut store = BillingStore {
            connection,
            path: path.to_path_buf(),
            key_handling: KeyHandling::Honour,
            terms: Terms::default(),
            accounts: Vec::new(),
        };
        sqlite_file::wait_when_busy(&store.connection)
            .map_err(|error| store.classify(error, "setting the busy timeout"))?;
        store.identify(None)?;
        let billing = store.replay()?;
        Ok((store, billing))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn key_handling(&self) -> KeyHandling {
        self.key_handling
    }

    fn classify(&self, error: rusqlite::Error, context: &'static str) -> StoreError {
        let path = self.path.clone();
        match sqlite_file::failure_of(&error) {
            Failure::NotADatabase => StoreError::NotABillingDatabase {
                path,
                detail: "not a SQLite database".into(),
            },
            Failure::Locked => StoreError::Locked { path },
            Failure::Corrupt | Failure::Other => StoreError::Sqlite {
                path,
                context,
                source: error,
            },
        }
    }

    fn configure(&self) -> Result<(), StoreError> {
        sqlite_file::wait_when_busy(&self.connection)
            .map_err(|error| self.classify(error, "setting the busy timeout"))?;
        // Identify before changing anything: another application's database is left as it was.
        let tables = self.table_names()?;
        if !tables.is_empty() && !tables.iter().any(|table| table == "billing_meta") {
            return Err(StoreError::NotABillingDatabase {
                path: self.path.clone(),
                detail: format!(
                    "a SQLite database with tables {} but no billing_meta",
                    tables.join(", ")
                ),
            });
        }
        // A credit that billing applied and then forgot would be a payment nobody can find:
        // every entry is durable before billing answers.
        sqlite_file::make_durable(&self.connection).map_err(|error| match error {
            DurabilityError::Sqlite { context, error } => self.classify(error, context),
            DurabilityError::NotWal { mode } => StoreError::Open {
                path: self.path.clone(),
                detail: DurabilityError::not_wal_detail(&mode),
            },
        })
    }

    fn table_names(&self) -> Result<Vec<String>, StoreError> {
        sqlite_file::table_names(&self.connection).map_err(|error| self.classify(error, "reading the schema"))
    }

    fn create(&mut self, key_handling: KeyHandling, accounts: &[Account]) -> Result<(), StoreError> {
        let path = self.path.clone();
        let sqlite = |error: rusqlite::Error| StoreError::Sqlite {
            path: path.clone(),
            context: "creating the billing schema",
            source: error,
        };
        let transaction = self
            .connection
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sqlite)?;
        let exists: i64 = transaction
            .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table'", [], |row| {
                row.get(0)
            })
            .map_err(sqlite)?;
        if exists == 0 {
            transaction.execute_batch(SCHEMA).map_err(sqlite)?;
            transaction
                .execute(
                    "INSERT INTO billing_meta (name, value) VALUES ('schema', ?1), ('schema_version', ?2), ('key_handling', ?3)",
                    params![SCHEMA_NAME, SCHEMA_VERSION.to_string(), key_handling.name()],
                )
                .map_err(sqlite)?;
            let terms = [
                ("key_retention_ms", self.terms.key_retention_ms),
                ("lookup_settle_ms", self.terms.lookup_settle_ms),
            ];
            for (name, value) in terms.into_iter().filter_map(|(name, value)| Some((name, value?))) {
                transaction
                    .execute(
                        "INSERT INTO billing_meta (name, value) VALUES (?1, ?2)",
                        params![name, value.to_string()],
                    )
                    .map_err(sqlite)?;
            }
            for account in accounts {
                transaction
                    .execute(
                        "INSERT INTO accounts (id, owner, opening_balance_cents) VALUES (?1, ?2, ?3)",
                        params![account.id, account.owner, account.balance_cents],
                    )
                    .map_err(sqlite)?;
            }
        }
        transaction.commit().map_err(sqlite)
    }

    /// Checks the file is a billing database of this version; reads its key handling, terms
    /// and accounts. With `asked`, the stored key handling and terms must be the same.
    fn identify(&mut self, asked: Option<(KeyHandling, Terms)>) -> Result<(), StoreError> {
        let read = |name: &str| -> Result<Option<String>, StoreError> {
            self.connection
                .query_row("SELECT value FROM billing_meta WHERE name = ?1", [name], |row| {
                    row.get(0)
                })
                .optional()
                .map_err(|error| self.classify(error, "reading billing_meta"))
        };
        let tables = self.table_names()?;
        if !tables.iter().any(|table| table == "billing_meta") {
            return Err(StoreError::NotABillingDatabase {
                path: self.path.clone(),
                detail: "no billing_meta table".into(),
            });
        }
        if read("schema")?.as_deref() != Some(SCHEMA_NAME) {
            return Err(StoreError::NotABillingDatabase {
                path: self.path.clone(),
                detail: "billing_meta does not name the twice-billing schema".into(),
            });
        }
        let found = read("schema_version")?.unwrap_or_else(|| "none".into());
        if found != SCHEMA_VERSION.to_string() {
            return Err(StoreError::SchemaVersion {
                path: self.path.clone(),
                found,
            });
        }
        let stored = read("key_handling")?.unwrap_or_default();
        let stored = stored
            .parse::<KeyHandling>()
            .map_err(|error| StoreError::NotABillingDatabase {
                path: self.path.clone(),
                detail: error.to_string(),
            })?;
        let number = |name: &str| -> Result<Option<u64>, StoreError> {
            read(name)?
                .map(|value| value.parse::<u64>())
                .transpose()
                .map_err(|error| StoreError::NotABillingDatabase {
                    path: self.path.clone(),
                    detail: format!("billing_meta's {name} is not a number: {error}"),
                })
        };
        let stored_terms = Terms {
            key_retention_ms: number("key_retention_ms")?,
            lookup_settle_ms: number("lookup_settle_ms")?,
        };
        if let Some((asked, _)) = asked
            && asked != stored
        {
            return Err(StoreError::KeyHandlingDiffers {
                path: self.path.clone(),
                stored,
                asked,
            });
        }
        if let Some((_, asked_terms)) = asked
            && asked_terms != stored_terms
        {
            return Err(StoreError::TermsDiffer {
                path: self.path.clone(),
                stored: format!("{stored_terms:?}"),
                asked: format!("{asked_terms:?}"),
            });
        }
        self.key_handling = stored;
        self.terms = stored_terms;
        let accounts = {
            let mut statement = self
                .connection
                .prepare("SELECT id, owner, opening_balance_cents FROM accounts ORDER BY id")
                .map_err(|error| self.classify(error, "reading accounts"))?;
            let rows = statement
                .query_map([], |row| {
                    Ok(Account {
                        id: row.get(0)?,
                        owner: row.get(1)?,
                        balance_cents: row.get(2)?,
                    })
                })
                .map_err(|error| self.classify(error, "reading accounts"))?;
            rows.collect::<Result<Vec<_>, _>>()
                .map_err(|error| self.classify(error, "reading accounts"))?
        };
        self.accounts = accounts;
        Ok(())
    }

    /// The rows of `sql`: (seq, a text, the stored request, at_ms), in order.
    fn stored(&self, sql: &str, context: &'static str) -> Result<Vec<(i64, String, String, i64)>, StoreError> {
        let mut statement = self
            .connection
            .prepare(sql)
            .map_err(|error| self.classify(error, context))?;
        let rows = statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)))
            .map_err(|error| self.classify(error, context))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|error| self.classify(error, context))
    }

    /// Replays every stored request through a fresh [`Billing`], checking each makes the
    /// entry it made the first time.
    fn replay(&self) -> Result<Billing, StoreError> {
        let mut billing = Billing::new(self.key_handling, &self.accounts).with_terms(self.terms);
        let rows = self.stored(
            "SELECT seq, id, request, at_ms FROM entries ORDER BY seq",
            "reading entries",
        )?;
        for (seq, id, request, at_ms) in rows {
            let replay_error = |detail: String| StoreError::Replay {
                path: self.path.clone(),
                seq,
                detail,
            };
            let operation: Operation = serde_json::from_str(&request)
                .map_err(|error| replay_error(format!("its request does not parse: {error}")))?;
            let before = billing.entries.len();
            let answer = apply_to(&mut billing, &operation, u64::try_from(at_ms).unwrap_or(0));
            match billing.entries.get(before) {
                Some(entry) if entry.id == id => {}
                Some(entry) => {
                    return Err(replay_error(format!("it made {} again, not {id}", entry.id)));
                }
                None => {
                    return Err(replay_error(format!(
                        "it made no entry again (billing answered {})",
                        answer.receipt()
                    )));
                }
            }
        }
        self.replay_records(&mut billing)?;
        Ok(billing)
    }

    /// Applies `operation` to `billing` (billing's own rules) and, if it made an entry, makes
    /// that entry durable before returning the answer. If the write fails, `billing` is
    /// rebuilt from the file, so the entry is neither kept in memory nor answered as applied.
    pub fn apply(&mut self, billing: &mut Billing, operation: &Operation, now_ms: u64) -> Result<Answer, StoreError> {
        let before = billing.entries.len();
        let effects_before = records::effects(billing);
        let lengths = records::lengths(billing);
        let answer = apply_to(billing, operation, now_ms);
        let stored = if records::effects(billing) != effects_before {
            self.append_record(operation, &answer, now_ms)
        } else if billing.entries.len() != before {
            self.append(billing, before, operation)
        } else {
            return Ok(answer);
        };
        match stored {
            Ok(()) => Ok(answer),
            Err(error) => {
                if let Ok(rebuilt) = self.replay() {
                    *billing = rebuilt;
                } else {
                    billing.entries.truncate(before);
                    records::truncate(billing, lengths);
                }
                Err(error)
            }
        }
    }

    fn append(&mut self, billing: &Billing, index: usize, operation: &Operation) -> Result<(), StoreError> {
        let entry = &billing.entries[index];
        let request = serde_json::to_string(operation).expect("requests serialize");
        let metadata = serde_json::to_string(&entry.metadata).expect("metadata serializes");
        let kind = match entry.kind {
            EntryKind::Credit => "credit",
            EntryKind::Reversal => "reversal",
        };
        self.connection
            .execute(
                "INSERT INTO entries (seq, id, kind, account, amount_cents, memo, idempotency_key, intent, metadata, at_ms, reverses, request)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                params![
                    index as i64 + 1,
                    entry.id,
                    kind,
                    entry.account,
                    entry.amount_cents,
                    entry.memo,
                    entry.idempotency_key,
                    entry.metadata.get("intent"),
                    metadata,
                    entry.at_ms as i64,
                    entry.reverses,
                    request,
                ],
            )
            .map_err(|error| self.classify(error, "recording an entry"))?;
        Ok(())
    }
}

/// Billing's rules, applied: the one place a stored request turns into a call on [`Billing`].
fn apply_to(billing: &mut Billing, operation: &Operation, now_ms: u64) -> Answer {
    match operation {
        Operation::Credit(request) => billing.credit(request, now_ms),
        Operation::Void(request) => billing.void_credit(
            &request.idempotency_key,
            &request.account,
            request.amount_cents,
            &request.intent,
            now_ms,
        ),
        Operation::VoidById(request) => billing.void_by_id(&request.credit_id, now_ms),
        Operation::Email(request) => billing.send_email(request, now_ms),
        Operation::OwnerChange(request) => billing.change_owner(request, now_ms),
        Operation::Delete(request) => billing.delete_record(request, now_ms),
        Operation::OwnerChangedBy(change) => {
            billing.owner_changed_by(&change.account, &change.owner, &change.by, now_ms)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credit(key: Option<&str>, amount_cents: u32) -> Operation {
        Operation::Credit(CreditRequest {
            account: "acct_ada".into(),
            amount_cents,
            memo: "refund".into(),
            idempotency_key: key.map(str::to_owned),
            intent: "run-0001/0".into(),
        })
    }

    fn accounts() -> Vec<Account> {
        crate::script::accounts()
    }

    #[test]
    fn a_reopened_file_replays_to_the_same_billing_and_still_recognises_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("billing.sqlite");
        let (mut store, mut billing) = BillingStore::open(&path, KeyHandling::Honour, &accounts()).unwrap();
        store
            .apply(&mut billing, &credit(Some("run-0001:c1"), 2500), 10)
            .unwrap();
        store
            .apply(
                &mut billing,
                &Operation::Void(VoidRequest {
                    idempotency_key: "run-0001:c9".into(),
                    account: "acct_ada".into(),
                    amount_cents: 100,
                    intent: "run-0001/1".into(),
                }),
                20,
            )
            .unwrap();
        store
            .apply(
                &mut billing,
                &Operation::VoidById(VoidByIdRequest {
                    credit_id: "cr_0001".into(),
                }),
                25,
            )
            .unwrap();
        drop(store);
        let (mut store, mut reopened) = BillingStore::open(&path, KeyHandling::Honour, &accounts()).unwrap();
        assert_eq!(reopened, billing);
        let again = store
            .apply(&mut reopened, &credit(Some("run-0001:c1"), 2500), 30)
            .unwrap();
        assert!(matches!(again, Answer::Repeat { .. }), "{again:?}");
        let conflict = store
            .apply(&mut reopened, &credit(Some("run-0001:c1"), 9900), 40)
            .unwrap();
        assert!(conflict.is_rejection());
        assert_eq!(
            reopened.balance("acct_ada"),
            Some(-100),
            "credited, voided by id, and a stray void"
        );
        let void_again = store
            .apply(
                &mut reopened,
                &Operation::VoidById(VoidByIdRequest {
                    credit_id: "cr_0001".into(),
                }),
                50,
            )
            .unwrap();
        assert!(matches!(void_again, Answer::Repeat { .. }), "{void_again:?}");
        let (_, read) = BillingStore::open_existing(&path).unwrap();
        assert_eq!(read.entries.len(), 3);
    }

    #[test]
    fn other_key_rules_other_applications_and_edited_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("billing.sqlite");
        let (mut store, mut billing) = BillingStore::open(&path, KeyHandling::Ignore, &accounts()).unwrap();
        store.apply(&mut billing, &credit(Some("k"), 2500), 10).unwrap();
        drop(store);
        let error = BillingStore::open(&path, KeyHandling::Honour, &accounts()).unwrap_err();
        assert!(matches!(error, StoreError::KeyHandlingDiffers { .. }), "{error}");
        assert!(error.to_string().contains("billing.sqlite"), "{error}");

        let connection = Connection::open(&path).unwrap();
        connection.execute("UPDATE entries SET id = 'cr_9999'", []).unwrap();
        drop(connection);
        let error = BillingStore::open(&path, KeyHandling::Ignore, &accounts()).unwrap_err();
        assert!(matches!(error, StoreError::Replay { seq: 1, .. }), "{error}");

        let other = dir.path().join("other.sqlite");
        Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE notes (text TEXT);")
            .unwrap();
        let error = BillingStore::open(&other, KeyHandling::Honour, &accounts()).unwrap_err();
        assert!(matches!(error, StoreError::NotABillingDatabase { .. }), "{error}");

        let text = dir.path().join("text.sqlite");
        // Longer than a SQLite header, so SQLite reads it rather than taking it for an empty file.
        std::fs::write(&text, "this is not a database. ".repeat(64)).unwrap();
        let error = BillingStore::open(&text, KeyHandling::Honour, &accounts()).unwrap_err();
        assert!(matches!(error, StoreError::NotABillingDatabase { .. }), "{error}");
        assert!(BillingStore::open_existing(&dir.path().join("missing.sqlite")).is_err());
    }
}
