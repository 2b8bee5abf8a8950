//! The ledger as the ledger panel draws it: rows read from the SQLite file, kept between
//! frames and brought up to date incrementally after each change — never a full query per frame.

use std::collections::HashMap;

use twice_world::ledger::{Checkpoint, ExecutionRecord, LIST_LIMIT_MAX, Ledger, RecordFilter};

/// The most rows the panel holds (a limit on everything; the bench uses 10,000).
pub const LEDGER_ROWS_MAX: usize = 200_000;

#[derive(Clone, Debug, Default)]
pub struct LedgerView {
    rows: Vec<ExecutionRecord>,
    by_key: HashMap<String, usize>,
    /// The newest `updated_at_ms` read so far. Rows touched at or after it are read again,
    /// so a row written later in the same millisecond is not missed.
    newest_ms: Option<u64>,
    /// Indexes of rows whose outcome is unknown, longest waiting first (the operator's queue).
    unknown: Vec<usize>,
    checkpoints: Vec<Checkpoint>,
    /// Rows read by the last refresh (to show the reading is incremental).
    pub last_read_rows: usize,
    pub problem: Option<String>,
}

impl LedgerView {
    /// Everything, read fresh.
    pub fn read(ledger: &Ledger) -> LedgerView {
        let mut view = LedgerView::default();
        view.refresh(ledger);
        view
    }

    pub fn rows(&self) -> &[ExecutionRecord] {
        &self.rows
    }

    pub fn row(&self, key: &str) -> Option<&ExecutionRecord> {
        self.by_key.get(key).map(|index| &self.rows[*index])
    }

    /// Unknown calls (`started`, `indeterminate`), longest waiting first.
    pub fn unknown(&self) -> impl ExactSizeIterator<Item = &ExecutionRecord> {
        self.unknown.iter().map(|index| &self.rows[*index])
    }

    pub fn checkpoints(&self) -> &[Checkpoint] {
        &self.checkpoints
    }

    /// Reads the rows changed since the last refresh, and the checkpoints.
    pub fn refresh(&mut self, ledger: &Ledger) {
        self.problem = None;
        let after_ms = self.newest_ms.and_then(|newest| newest.checked_sub(1));
        // `char::MAX` sorts after every key, so the cursor starts at `newest_ms` itself.
        let mut cursor: Option<(u64, String)> = after_ms.map(|ms| (ms, char::MAX.to_string()));
        let mut read = 0;
        let mut changed = false;
        loop {
            let page = match ledger.records(
                RecordFilter::default()
                    .with_after(cursor.as_ref().map(|(ms, key)| (*ms, key.as_str())))
                    .with_limit(LIST_LIMIT_MAX),
            ) {
                Ok(page) => page,
                Err(error) => {
                    self.problem = Some(error.to_string());
                    break;
                }
            };
            let full_page = page.len() == LIST_LIMIT_MAX as usize;
            read += page.len();
            if let Some(last) = page.last() {
                cursor = Some((last.updated_at_ms, last.key.as_str().to_owned()));
            }
            for record in page {
                self.newest_ms = Some(
                    self.newest_ms
                        .map_or(record.updated_at_ms, |newest| newest.max(record.updated_at_ms)),
                );
                changed |= self.upsert(record);
            }
            if self.rows.len() >= LEDGER_ROWS_MAX {
                self.problem = Some(format!(
                    "the ledger has more than {LEDGER_ROWS_MAX} rows; the panel shows the first {LEDGER_ROWS_MAX}"
                ));
                break;
            }
            if !full_page {
                break;
            }
        }
        self.last_read_rows = read;
        if changed {
            let mut unknown: Vec<usize> = (0..self.rows.len())
                .filter(|index| self.rows[*index].status.is_unknown())
                .collect();
            unknown.sort_by(|left, right| {
                let (left, right) = (&self.rows[*left], &self.rows[*right]);
                (left.updated_at_ms, left.key.as_str()).cmp(&(right.updated_at_ms, right.key.as_str()))
            });
            self.unknown = unknown;
        }
        match ledger.checkpoints() {
            Ok(checkpoints) => self.checkpoints = checkpoints,
            Err(error) => self.problem = Some(error.to_string()),
        }
    }

    /// Returns whether anything changed.
    fn upsert(&mut self, record: ExecutionRecord) -> bool {
        match self.by_key.get(record.key.as_str()) {
            Some(index) if self.rows[*index] == record => false,
            Some(index) => {
                self.rows[*index] = record;
                true
            }
            None if self.rows.len() >= LEDGER_ROWS_MAX => false,
            None => {
                self.by_key.insert(record.key.as_str().to_owned(), self.rows.len());
                self.rows.push(record);
                true
            }
        }
    }
}
