//! [`ReserveRequest`]: a reservation's request, built with [`ReserveRequest::new`] and its
//! `with_*` so it can grow without breaking the code that makes one.

use crate::key::IdempotencyKey;
use crate::tool::SideEffect;

/// What a worker asks to reserve. Borrowed text, as every request to the ledger: the typed
/// names ([`crate::RunId`], [`crate::Tenant`], [`crate::ToolName`], [`crate::WorkerId`]) lend
/// it theirs, and what the ledger stores from it comes back typed in the
/// [`super::ExecutionRecord`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ReserveRequest<'a> {
    /// The call's idempotency key.
    pub key: &'a IdempotencyKey,
    /// Whose call it is.
    pub tenant: &'a str,
    /// The run making the call.
    pub run_id: &'a str,
    /// The call's id within its run.
    pub tool_call_id: &'a str,
    /// The tool to call; the same key for another tool is refused like other arguments.
    pub tool: &'a str,
    /// What the tool does to the world: decides what an unknown earlier attempt allows.
    pub side_effect: SideEffect,
    /// Canonical JSON of the arguments; the same key with other arguments is refused.
    pub arguments: &'a str,
    /// The worker reserving: the record's owner if the call is to run.
    pub owner: &'a str,
    /// `Some` only for a naive runtime with leases (guard `no_lease_expiry` off).
    pub lease_ms: Option<u64>,
    /// Fencing (guard `checkpoint_version`): the run's checkpoint version this worker loaded.
    /// If someone saved since, the reservation is refused and this worker stands down
    /// before it sends anything.
    pub checkpoint_version: Option<u32>,
    /// Workers whose process is known to have ended and which this worker replaces (its
    /// supervisor saw them exit). A `started` call one of them holds — or `owner` itself held
    /// before a restart — has no one left to send or hear it: the reservation records it
    /// `indeterminate` (the seed's "a restarted worker that finds a started record with no
    /// outcome treats it as indeterminate"). A `started` call of any other worker stays as it
    /// is: that worker may be alive and its answer on its way.
    pub replaces: &'a [crate::WorkerId],
}

impl<'a> ReserveRequest<'a> {
    /// A reservation of call `tool_call_id` of run `run_id` under `key`, by worker `owner`:
    /// the default tenant ([`crate::worker::DEFAULT_TENANT`]), no lease, no checkpoint fence.
    /// `arguments` is the canonical JSON ([`crate::run::Arguments::canonical`]).
    pub fn new(
        key: &'a IdempotencyKey,
        run_id: &'a str,
        tool_call_id: &'a str,
        tool: &'a str,
        side_effect: SideEffect,
        arguments: &'a str,
        owner: &'a str,
    ) -> ReserveRequest<'a> {
        ReserveRequest {
            key,
            tenant: crate::worker::DEFAULT_TENANT,
            run_id,
            tool_call_id,
            tool,
            side_effect,
            arguments,
            owner,
            lease_ms: None,
            checkpoint_version: None,
            replaces: &[],
        }
    }

    /// The same request by a worker that replaces `workers`, whose processes are known to
    /// have ended (see [`ReserveRequest::replaces`]).
    #[must_use]
    pub fn with_replaces(mut self, workers: &'a [crate::WorkerId]) -> ReserveRequest<'a> {
        self.replaces = workers;
        self
    }

    /// The same request for `tenant`'s call.
    #[must_use]
    pub fn with_tenant(mut self, tenant: &'a str) -> ReserveRequest<'a> {
        self.tenant = tenant;
        self
    }

    /// The same request fenced on the run's checkpoint version this worker loaded (`None`:
    /// not fenced).
    #[must_use]
    pub fn with_checkpoint_version(mut self, version: impl Into<Option<u32>>) -> ReserveRequest<'a> {
        self.checkpoint_version = version.into();
        self
    }

    /// The same request with a naive runtime's lease on the `started` record (honoured only
    /// with guard `no_lease_expiry` off; `None`: no lease).
    #[must_use]
    pub fn with_lease_ms(mut self, lease_ms: impl Into<Option<u64>>) -> ReserveRequest<'a> {
        self.lease_ms = lease_ms.into();
        self
    }

    /// The same request under another key.
    #[must_use]
    pub fn with_key(mut self, key: &'a IdempotencyKey) -> ReserveRequest<'a> {
        self.key = key;
        self
    }

    /// The same request for another run.
    #[must_use]
    pub fn with_run_id(mut self, run_id: &'a str) -> ReserveRequest<'a> {
        self.run_id = run_id;
        self
    }

    /// The same request with another call id.
    #[must_use]
    pub fn with_tool_call_id(mut self, tool_call_id: &'a str) -> ReserveRequest<'a> {
        self.tool_call_id = tool_call_id;
        self
    }

    /// The same request for another tool.
    #[must_use]
    pub fn with_tool(mut self, tool: &'a str) -> ReserveRequest<'a> {
        self.tool = tool;
        self
    }

    /// The same request with another side effect.
    #[must_use]
    pub fn with_side_effect(mut self, side_effect: SideEffect) -> ReserveRequest<'a> {
        self.side_effect = side_effect;
        self
    }

    /// The same request with other (canonical) arguments.
    #[must_use]
    pub fn with_arguments(mut self, arguments: &'a str) -> ReserveRequest<'a> {
        self.arguments = arguments;
        self
    }

    /// The same request by another worker.
    #[must_use]
    pub fn with_owner(mut self, owner: &'a str) -> ReserveRequest<'a> {
        self.owner = owner;
        self
    }
}
