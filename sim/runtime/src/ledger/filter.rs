//! [`RecordFilter`]: which records a listing returns, named rather than positional.

use crate::rules::Status;

/// Which records a listing returns ([`super::Ledger::records`]): filters, a cursor, a limit.
/// Start from [`RecordFilter::default`] (every record, [`RecordFilter::LIMIT_DEFAULT`] of
/// them) and narrow it:
///
/// ```
/// use twice_runtime::Status;
/// use twice_runtime::ledger::RecordFilter;
/// let waiting = RecordFilter::default().with_tenant("acme").with_status(Status::Started).with_limit(50);
/// assert_eq!((waiting.tenant, waiting.status, waiting.limit), (Some("acme"), Some(Status::Started), 50));
/// ```
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct RecordFilter<'a> {
    /// Only this tenant's records.
    pub tenant: Option<&'a str>,
    /// Only records with this status.
    pub status: Option<Status>,
    /// The (updated_at_ms, key) of the last row of the previous page: rows after it.
    pub after: Option<(u64, &'a str)>,
    /// The most rows to return (1 to [`super::LIST_LIMIT_MAX`]).
    pub limit: u32,
}

impl Default for RecordFilter<'_> {
    fn default() -> Self {
        RecordFilter {
            tenant: None,
            status: None,
            after: None,
            limit: RecordFilter::LIMIT_DEFAULT,
        }
    }
}

impl<'a> RecordFilter<'a> {
    /// The rows a listing returns unless told otherwise.
    pub const LIMIT_DEFAULT: u32 = 100;

    /// Only `tenant`'s records (`None`: every tenant's).
    #[must_use]
    pub fn with_tenant(mut self, tenant: impl Into<Option<&'a str>>) -> Self {
        self.tenant = tenant.into();
        self
    }

    /// Only records with `status` (`None`: any status).
    #[must_use]
    pub fn with_status(mut self, status: impl Into<Option<Status>>) -> Self {
        self.status = status.into();
        self
    }

    /// Only rows after the cursor `(updated_at_ms, key)`: the last row of the previous page.
    #[must_use]
    pub fn with_after(mut self, after: impl Into<Option<(u64, &'a str)>>) -> Self {
        self.after = after.into();
        self
    }

    /// At most `limit` rows (held to 1 to [`super::LIST_LIMIT_MAX`] when listed).
    #[must_use]
    pub fn with_limit(mut self, limit: u32) -> Self {
        self.limit = limit;
        self
    }
}
