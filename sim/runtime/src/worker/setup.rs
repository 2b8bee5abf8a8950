//! Who a worker is and the rules it runs under, checked once when the worker is made: every
//! name a ledger row will hold is usable, every tool is declared once and within the
//! runtime's limits. What passes here cannot make the machine, the executor or the ledger
//! panic later.

use crate::guards::{Guard, Guards};
use crate::ids::{NameError, RunId, Tenant, ToolName, WorkerId, check_key_part, check_name, check_unambiguous};
use crate::tool::{ContractViolation, READ_ATTEMPTS_MAX, ToolDeclaration};

use super::Words;

/// Who the worker is and the rules it runs under. Made with [`WorkerSetup::new`] and checked
/// by [`super::Worker::new`].
///
/// ```
/// use twice_runtime::tool::{SideEffect, ToolDeclaration};
/// use twice_runtime::worker::{Worker, WorkerSetup};
/// let tools = vec![ToolDeclaration::new("send_email", SideEffect::External).with_reconcile()];
/// let setup = WorkerSetup::new("worker-1", "run-42", tools).with_tenant("acme");
/// assert!(Worker::new(setup).is_ok());
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct WorkerSetup {
    /// This worker's name in the ledger (`owner`, `saved_by`).
    pub worker_id: WorkerId,
    /// The run it drives.
    pub run_id: RunId,
    /// The tenant whose run it is: operators see only their own tenant's calls and runs.
    pub tenant: Tenant,
    /// The tools the run may call, as declared; each name once.
    pub tools: Vec<ToolDeclaration>,
    /// How many recoveries of the run may fail (start from the same checkpoint and make no
    /// progress past it) before the next is not tried: the run stops as `dead_lettered` until
    /// an operator resumes it. `None`: no limit, and recoveries are not counted.
    pub recovery_attempts_max: Option<u32>,
    /// The most model decisions one start of the run may take (every call, and the end, is
    /// one): a model that repeats one call id, or never decides to end, stops here and the run
    /// waits for a person ([`super::WaitReason::DecisionLimit`]) instead of looping. Counted
    /// from each start; [`WorkerSetup::recovery_attempts_max`] bounds the starts.
    pub decisions_max: u32,
    /// The application's words for what the runtime writes down for people (the machine and
    /// its executor make no sentences of their own).
    pub words: Words,
    /// Workers this one takes over from, whose processes are known to have ended (their
    /// supervisor saw them exit): see [`WorkerSetup::replacing`].
    pub replaces: Vec<WorkerId>,
    /// The guards it runs under: every one on, unless the `simulation` feature switches some off.
    pub(crate) guards: Guards,
    /// The lease a naive runtime puts on `started` records (only with guard `no_lease_expiry`
    /// off; `simulation` feature).
    pub(crate) lease_ms: Option<u64>,
}

impl WorkerSetup {
    /// A worker named `worker_id` driving `run_id` with `tools`: tenant `default`, no recovery
    /// limit, [`DECISIONS_MAX_DEFAULT`] model decisions per start, the plain English words ([`Words::ENGLISH`]) and every guard on.
    pub fn new(worker_id: impl Into<WorkerId>, run_id: impl Into<RunId>, tools: Vec<ToolDeclaration>) -> WorkerSetup {
        WorkerSetup {
            worker_id: worker_id.into(),
            run_id: run_id.into(),
            tenant: Tenant::new(DEFAULT_TENANT),
            tools,
            recovery_attempts_max: None,
            decisions_max: DECISIONS_MAX_DEFAULT,
            words: Words::ENGLISH,
            replaces: Vec::new(),
            guards: Guards::all_on(),
            lease_ms: None,
        }
    }

    /// The same setup for `tenant`'s run: its records and checkpoint carry the tenant, so an
    /// operator can list one tenant's calls ([`crate::ledger::Ledger::records`]). Run ids stay
    /// unique across tenants (keys are `<run_id>:<call_id>`): a run id another tenant's run
    /// has is refused when the run starts ([`crate::ledger::LedgerError::RunOfAnotherTenant`]).
    #[must_use]
    pub fn with_tenant(mut self, tenant: impl Into<Tenant>) -> WorkerSetup {
        self.tenant = tenant.into();
        self
    }

    /// The same setup with a recovery limit: after `limit` failed recoveries the run is
    /// dead-lettered (a limit of 0 is refused by [`super::Worker::new`]).
    #[must_use]
    pub fn with_recovery_attempts_max(mut self, limit: u32) -> WorkerSetup {
        self.recovery_attempts_max = Some(limit);
        self
    }

    /// The same setup with another limit on model decisions per start (0 is refused by
    /// [`super::Worker::new`]).
    #[must_use]
    pub fn with_decisions_max(mut self, limit: u32) -> WorkerSetup {
        self.decisions_max = limit;
        self
    }

    /// The same setup writing the application's own words.
    #[must_use]
    pub fn with_words(mut self, words: Words) -> WorkerSetup {
        self.words = words;
        self
    }

    /// The same setup for a worker that takes over from `worker`, whose process is known to
    /// have ended — its supervisor saw it exit, or the host it ran on is gone.
    ///
    /// A call the crashed worker reserved and left `started` has nobody left to send it or
    /// hear its answer: when this worker's run meets it, the ledger records it
    /// `indeterminate` (the reconcile hook is asked, the run pauses, and an operator who lists
    /// the `indeterminate` calls finds it and settles it). A process restarted under its own
    /// worker id needs no such word: one live process per worker id is the rule, so a worker
    /// meeting its own id's `started` call knows it is its predecessor's. A worker that is
    /// not told leaves another worker's `started` call as it is — that worker may be alive, its
    /// request on its way, and its own outcome must still land — and an operator settles it
    /// only acknowledging it may be in flight.
    ///
    /// ```
    /// use twice_runtime::worker::WorkerSetup;
    /// let setup = WorkerSetup::new("worker-7b", "welcome-ada", Vec::new()).replacing("worker-7");
    /// assert_eq!(setup.replaces[0].as_str(), "worker-7");
    /// assert!(setup.check().is_ok());
    /// ```
    #[must_use]
    pub fn replacing(mut self, worker: impl Into<WorkerId>) -> WorkerSetup {
        self.replaces.push(worker.into());
        self
    }

    /// The guards the worker runs under.
    pub fn guards(&self) -> &Guards {
        &self.guards
    }

    /// The same setup under `guards`: the simulator switches guards off to show what each
    /// prevents. Not for production: with a guard off the runtime is the naive one.
    #[cfg(feature = "simulation")]
    #[must_use]
    pub fn with_guards(mut self, guards: Guards) -> WorkerSetup {
        self.guards = guards;
        self
    }

    /// The same setup with the lease a naive runtime puts on `started` records, used only
    /// with guard `no_lease_expiry` off (with it on, a lease that ran out is only noted).
    #[cfg(feature = "simulation")]
    #[must_use]
    pub fn with_lease_ms(mut self, lease_ms: u64) -> WorkerSetup {
        self.lease_ms = Some(lease_ms);
        self
    }

    /// The lease a naive runtime puts on `started` records, if one was given.
    pub fn lease_ms(&self) -> Option<u64> {
        self.lease_ms
    }

    /// The tool declared as `name`.
    pub fn tool(&self, name: &str) -> Option<&ToolDeclaration> {
        self.tools.iter().find(|tool| tool.name == name)
    }

    /// The start checks a worker puts every tool to before its run starts — the contract (a
    /// tool that changes something gets one attempt and passes the key), then the ambiguity
    /// policy (a tool that reaches out has a reconcile hook, or the run pauses on an unknown
    /// call) — called when the setup is made, so a declaration the worker will refuse fails
    /// here, in a test or at boot, rather than as a run that waits for a person.
    ///
    /// [`super::Worker::new`] does not refuse these: a worker made from such a setup still
    /// starts, records the refusal in the run's history and waits for a person
    /// ([`super::WaitReason::ContractRefused`]) before anything is loaded or sent — the refusal
    /// an operator sees when a declaration changed under a running fleet.
    ///
    /// ```
    /// use twice_runtime::tool::{SideEffect, ToolDeclaration};
    /// use twice_runtime::worker::WorkerSetup;
    /// let keyless = ToolDeclaration::new("send_email", SideEffect::External).without_key();
    /// let setup = WorkerSetup::new("worker-1", "welcome-ada", vec![keyless]);
    /// assert!(setup.check().is_ok(), "a worker can be made");
    /// let refused = setup.check_contracts().unwrap_err();
    /// assert!(refused.to_string().contains("takes no idempotency key"), "{refused}");
    /// ```
    ///
    /// # Errors
    ///
    /// The first tool's [`ContractViolation`], in the order the tools are declared.
    pub fn check_contracts(&self) -> Result<(), ContractViolation> {
        match self.contract_problem() {
            Some((_, _, violation)) => Err(violation),
            None => Ok(()),
        }
    }

    /// The first tool that fails a start check that is on, with the guard that holds it.
    pub(super) fn contract_problem(&self) -> Option<(Guard, ToolName, ContractViolation)> {
        let contract = self.guards.is_on(Guard::ToolContract);
        let policy = self.guards.is_on(Guard::AmbiguityPolicy);
        let pauses = self.guards.is_on(Guard::PauseOnIndeterminate);
        self.tools.iter().find_map(|tool| {
            let refused = |guard: Guard, check: Result<(), ContractViolation>| {
                check.err().map(|violation| (guard, tool.name.clone(), violation))
            };
            contract
                .then(|| refused(Guard::ToolContract, tool.check_contract()))
                .flatten()
                .or_else(|| {
                    policy
                        .then(|| {
                            refused(
                                Guard::AmbiguityPolicy,
                                crate::tool::assert_ambiguity_policy(tool, pauses),
                            )
                        })
                        .flatten()
                })
        })
    }

    /// Checks everything [`super::Worker::new`] checks, without making a worker.
    ///
    /// # Errors
    ///
    /// The first problem found, in the order: the worker id, the ids of the workers it
    /// replaces, the run id, the tenant, each
    /// tool in turn (its name, a second tool of that name, its attempts, its terms), the
    /// recovery limit, the decision limit.
    pub fn check(&self) -> Result<(), SetupError> {
        let named = |what: &'static str, result: Result<(), NameError>| {
            result.map_err(|problem| SetupError::Name { what, problem })
        };
        named("worker id", check_name(&self.worker_id))?;
        for replaced in &self.replaces {
            named("replaced worker id", check_name(replaced))?;
        }
        named("run id", check_key_part(&self.run_id))?;
        named(
            "tenant",
            check_name(&self.tenant).and_then(|()| check_unambiguous(&self.tenant)),
        )?;
        for (index, tool) in self.tools.iter().enumerate() {
            named("tool name", check_name(&tool.name))?;
            if self.tools[..index].iter().any(|earlier| earlier.name == tool.name) {
                return Err(SetupError::DuplicateTool {
                    name: tool.name.clone(),
                });
            }
            if let Some(attempts) = tool.attempts
                && !(1..=READ_ATTEMPTS_MAX).contains(&attempts)
            {
                return Err(SetupError::Attempts {
                    tool: tool.name.clone(),
                    attempts,
                });
            }
            if let Some(problem) = tool.terms_problem() {
                return Err(SetupError::Terms {
                    tool: tool.name.clone(),
                    problem,
                });
            }
        }
        if self.recovery_attempts_max == Some(0) {
            return Err(SetupError::RecoveryLimitZero);
        }
        if self.decisions_max == 0 {
            return Err(SetupError::DecisionLimitZero);
        }
        Ok(())
    }
}

/// The model decisions one start of a run may take unless the setup says otherwise: far more
/// than an agent's run makes, few enough that a model stuck on one call stops within seconds.
pub const DECISIONS_MAX_DEFAULT: u32 = 1_000;

/// The tenant of a setup that names none.
pub const DEFAULT_TENANT: &str = "default";

/// Why a [`WorkerSetup`] cannot make a worker. Nothing was written anywhere.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// A name the ledger would store is not usable.
    #[error("the {what} {problem}")]
    Name {
        /// Which name: `worker id`, `replaced worker id`, `run id`, `tenant` or `tool name`.
        what: &'static str,
        /// What is wrong with it.
        problem: NameError,
    },
    /// Two tools are declared with one name: a call could not tell which it means.
    #[error("tool `{name}` is declared twice; each tool is declared once")]
    DuplicateTool {
        /// The name declared twice.
        name: ToolName,
    },
    /// A tool's retry policy asks for attempts the runtime never gives.
    #[error("tool `{tool}` declares {attempts} attempts; a tool gets 1 to {READ_ATTEMPTS_MAX}")]
    Attempts {
        /// The tool.
        tool: ToolName,
        /// The attempts it declares.
        attempts: u32,
    },
    /// A tool's key retention or lookup settle time cannot be meant.
    #[error("{problem}")]
    Terms {
        /// The tool.
        tool: ToolName,
        /// What is wrong, in words.
        problem: String,
    },
    /// A recovery limit of 0 would dead-letter a run before its first recovery.
    #[error(
        "recovery_attempts_max is 0: a run would be dead-lettered before its first recovery; leave it out for no limit"
    )]
    RecoveryLimitZero,
    /// A decision limit of 0 would stop a run before the model decides anything.
    #[error("decisions_max is 0: a run would stop before its model decides anything")]
    DecisionLimitZero,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::SideEffect;

    fn setup() -> WorkerSetup {
        WorkerSetup::new(
            "w1",
            "r1",
            vec![
                ToolDeclaration::new("lookup_order", SideEffect::Read),
                ToolDeclaration::new("send_email", SideEffect::External).with_reconcile(),
            ],
        )
    }

    #[test]
    fn a_setup_with_usable_names_and_tools_passes() {
        assert_eq!(setup().check(), Ok(()));
    }

    #[test]
    fn every_problem_is_named() {
        let empty_worker = WorkerSetup {
            worker_id: "".into(),
            ..setup()
        };
        assert!(matches!(
            empty_worker.check(),
            Err(SetupError::Name {
                what: "worker id",
                problem: NameError::Empty
            })
        ));
        let spaced_run = WorkerSetup {
            run_id: "run 1".into(),
            ..setup()
        };
        assert!(matches!(
            spaced_run.check(),
            Err(SetupError::Name { what: "run id", .. })
        ));
        let mut twice = setup();
        twice.tools.push(ToolDeclaration::new("send_email", SideEffect::Read));
        assert_eq!(
            twice.check(),
            Err(SetupError::DuplicateTool {
                name: "send_email".into()
            })
        );
        for attempts in [0, READ_ATTEMPTS_MAX + 1] {
            let mut retried = setup();
            retried.tools[0].attempts = Some(attempts);
            assert_eq!(
                retried.check(),
                Err(SetupError::Attempts {
                    tool: "lookup_order".into(),
                    attempts
                })
            );
        }
        let mut unnamed = setup();
        unnamed.tools[1].name = "".into();
        assert!(matches!(
            unnamed.check(),
            Err(SetupError::Name { what: "tool name", .. })
        ));
        let mut zero_retention = setup();
        zero_retention.tools[1].key_retention_ms = Some(0);
        assert!(matches!(zero_retention.check(), Err(SetupError::Terms { .. })));
        assert_eq!(
            setup().with_recovery_attempts_max(0).check(),
            Err(SetupError::RecoveryLimitZero)
        );
    }
}
