//! The guards a level can switch off, so the player sees what each one prevents.

use serde::{Deserialize, Serialize};

/// One guard of the runtime. The order here is the order the campaign teaches them, but for
/// `RefusalIsFailed`: added last, so the game's number keys keep switching the guards they did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Guard {
    /// Writes get one attempt; a timeout on a write is an unknown, not a failure.
    WriteRetryRule,
    /// `assert_tool_contract` before a run starts: a run whose tools declare a write with
    /// more than one attempt, or without the idempotency key, is refused before anything is sent.
    ToolContract,
    /// `on_indeterminate: pause`: the model never hears "failed" while the answer is "unknown".
    PauseOnIndeterminate,
    /// Reserve the key in the ledger before the tool runs.
    Ledger,
    /// The reservation is one transaction (no check-then-insert race).
    AtomicReservation,
    /// The idempotency key is handed to the tool and passed to billing.
    KeyDownstream,
    /// A save with a stale checkpoint version fails and that worker stands down.
    CheckpointVersion,
    /// A recovered run asks the tool's reconcile hook before anything else.
    ReconcileHook,
    /// The key is `<run_id>:<tool_call_id>`, never derived from the arguments.
    KeyPerCall,
    /// A `started` record is never reclaimed because a lease ran out.
    NoLeaseExpiry,
    /// The runtime never compensates by itself.
    NoReflexCompensation,
    /// A tool that refuses before sending anything (`ToolNotAttemptedError`) is recorded
    /// `failed`: nothing happened, so the call may run again. A naive runtime that swallows the
    /// refusal records it as a success instead.
    RefusalIsFailed,
    /// A key older than the tool's declared `key_retention_ms` is never resent as if it were
    /// safe, and a lookup that finds nothing under it says "expired", not "absent".
    KeyRetention,
    /// A lookup that finds nothing within the tool's declared `lookup_settle_ms` of the last
    /// send proves nothing: the hook asks again after it before anyone settles `failed`.
    LookupSettle,
    /// A run whose recovery failed its declared number of times stops as `dead_lettered` and
    /// resumes only when an operator asks.
    DeadLetter,
}

/// `first` then `second`, in a `const`: `N` must be their lengths added.
const fn concatenated<const FIRST: usize, const SECOND: usize, const N: usize>(
    first: [Guard; FIRST],
    second: [Guard; SECOND],
) -> [Guard; N] {
    assert!(
        FIRST + SECOND == N,
        "the joined list's length is its parts' lengths added"
    );
    let mut joined = [Guard::WriteRetryRule; N];
    let mut index = 0;
    while index < N {
        joined[index] = if index < FIRST {
            first[index]
        } else {
            second[index - FIRST]
        };
        index += 1;
    }
    joined
}

/// No guard stands twice in `guards` (the guards' lists are read as sets of switches).
const fn each_once(guards: &[Guard]) -> bool {
    let mut index = 0;
    while index < guards.len() {
        let mut later = index + 1;
        while later < guards.len() {
            if guards[index] as u8 == guards[later] as u8 {
                return false;
            }
            later += 1;
        }
        index += 1;
    }
    true
}

impl Guard {
    /// The guards the campaign teaches, in its order: each has a level that switches it off
    /// and a tape that only wins without it (`sim/tests/campaign.rs` holds that), and the
    /// defender's search goes over them.
    pub const ALL: [Guard; 15] = [
        Guard::WriteRetryRule,
        Guard::ToolContract,
        Guard::PauseOnIndeterminate,
        Guard::Ledger,
        Guard::AtomicReservation,
        Guard::KeyDownstream,
        Guard::CheckpointVersion,
        Guard::ReconcileHook,
        Guard::KeyPerCall,
        Guard::NoLeaseExpiry,
        Guard::NoReflexCompensation,
        Guard::RefusalIsFailed,
        Guard::KeyRetention,
        Guard::LookupSettle,
        Guard::DeadLetter,
    ];

    /// Guards a level may switch off by name that no level teaches yet, so the campaign's
    /// checks and the defender's search leave them out. None today: the dead letter, the
    /// last, is taught by level 36's crash loop (a level's `recovery_crashes_at`).
    pub const NOT_YET_TAUGHT: [Guard; 0] = [];

    /// Every guard: the taught ones in teaching order, then the ones not yet taught. Made
    /// from the two lists, so a guard is listed once and moving one from `NOT_YET_TAUGHT`
    /// into `ALL` is a change to those two lines alone; building fails if a guard would be
    /// in both.
    pub const EVERY: [Guard; Guard::ALL.len() + Guard::NOT_YET_TAUGHT.len()] = {
        let every = concatenated(Guard::ALL, Guard::NOT_YET_TAUGHT);
        assert!(each_once(&every), "a guard is both taught and not yet taught");
        every
    };

    /// The guard as levels, tapes and `--guards` name it (`write_retry_rule`).
    pub fn name(self) -> &'static str {
        match self {
            Guard::WriteRetryRule => "write_retry_rule",
            Guard::ToolContract => "tool_contract",
            Guard::PauseOnIndeterminate => "pause_on_indeterminate",
            Guard::Ledger => "ledger",
            Guard::AtomicReservation => "atomic_reservation",
            Guard::KeyDownstream => "key_downstream",
            Guard::CheckpointVersion => "checkpoint_version",
            Guard::ReconcileHook => "reconcile_hook",
            Guard::KeyPerCall => "key_per_call",
            Guard::NoLeaseExpiry => "no_lease_expiry",
            Guard::NoReflexCompensation => "no_reflex_compensation",
            Guard::RefusalIsFailed => "refusal_is_failed",
            Guard::KeyRetention => "key_retention",
            Guard::LookupSettle => "lookup_settle",
            Guard::DeadLetter => "dead_letter",
        }
    }

    /// The guard named `name` (see [`Guard::name`]), if there is one.
    pub fn from_name(name: &str) -> Option<Guard> {
        Guard::EVERY.into_iter().find(|guard| guard.name() == name)
    }
}

impl std::fmt::Display for Guard {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.name())
    }
}

/// Which guards are on. Every field defaults to on: a level switches guards off by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Guards {
    /// [`Guard::WriteRetryRule`].
    pub write_retry_rule: bool,
    /// [`Guard::ToolContract`].
    pub tool_contract: bool,
    /// [`Guard::PauseOnIndeterminate`].
    pub pause_on_indeterminate: bool,
    /// [`Guard::Ledger`].
    pub ledger: bool,
    /// [`Guard::AtomicReservation`].
    pub atomic_reservation: bool,
    /// [`Guard::KeyDownstream`].
    pub key_downstream: bool,
    /// [`Guard::CheckpointVersion`].
    pub checkpoint_version: bool,
    /// [`Guard::ReconcileHook`].
    pub reconcile_hook: bool,
    /// [`Guard::KeyPerCall`].
    pub key_per_call: bool,
    /// [`Guard::NoLeaseExpiry`].
    pub no_lease_expiry: bool,
    /// [`Guard::NoReflexCompensation`].
    pub no_reflex_compensation: bool,
    /// [`Guard::RefusalIsFailed`].
    pub refusal_is_failed: bool,
    /// [`Guard::KeyRetention`].
    pub key_retention: bool,
    /// [`Guard::LookupSettle`].
    pub lookup_settle: bool,
    /// [`Guard::DeadLetter`].
    pub dead_letter: bool,
    /// What the naive runtime records a refused call as while `refusal_is_failed` is off. Not
    /// a guard: which of the two naive runtimes a level shows.
    #[serde(skip_serializing_if = "NaiveRefusal::is_default")]
    pub naive_refusal: NaiveRefusal,
}

/// How a runtime without guard `refusal_is_failed` records a call its tool refused before
/// sending anything (`ToolNotAttemptedError`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NaiveRefusal {
    /// It swallows the exception: the call returned, so it is recorded `completed`, and
    /// nobody ever runs it again.
    #[default]
    Completed,
    /// It treats every exception like a timeout: a read is tried again, a write is recorded
    /// `indeterminate`, and the run waits for a lookup of a call that never left.
    Indeterminate,
}

impl NaiveRefusal {
    fn is_default(&self) -> bool {
        *self == NaiveRefusal::default()
    }
}

impl Default for Guards {
    fn default() -> Self {
        Guards::all_on()
    }
}

impl Guards {
    /// Every guard on: the seed's runtime.
    pub fn all_on() -> Self {
        Guards {
            write_retry_rule: true,
            tool_contract: true,
            pause_on_indeterminate: true,
            ledger: true,
            atomic_reservation: true,
            key_downstream: true,
            checkpoint_version: true,
            reconcile_hook: true,
            key_per_call: true,
            no_lease_expiry: true,
            no_reflex_compensation: true,
            refusal_is_failed: true,
            key_retention: true,
            lookup_settle: true,
            dead_letter: true,
            naive_refusal: NaiveRefusal::default(),
        }
    }

    /// Every guard off: the most naive runtime the simulator can run.
    pub fn all_off() -> Self {
        let mut guards = Guards::all_on();
        for guard in Guard::EVERY {
            guards.set(guard, false);
        }
        guards
    }

    /// Whether `guard` is on.
    pub fn is_on(&self, guard: Guard) -> bool {
        match guard {
            Guard::WriteRetryRule => self.write_retry_rule,
            Guard::ToolContract => self.tool_contract,
            Guard::PauseOnIndeterminate => self.pause_on_indeterminate,
            Guard::Ledger => self.ledger,
            Guard::AtomicReservation => self.atomic_reservation,
            Guard::KeyDownstream => self.key_downstream,
            Guard::CheckpointVersion => self.checkpoint_version,
            Guard::ReconcileHook => self.reconcile_hook,
            Guard::KeyPerCall => self.key_per_call,
            Guard::NoLeaseExpiry => self.no_lease_expiry,
            Guard::NoReflexCompensation => self.no_reflex_compensation,
            Guard::RefusalIsFailed => self.refusal_is_failed,
            Guard::KeyRetention => self.key_retention,
            Guard::LookupSettle => self.lookup_settle,
            Guard::DeadLetter => self.dead_letter,
        }
    }

    /// Switches `guard` on or off.
    pub fn set(&mut self, guard: Guard, on: bool) {
        let field = match guard {
            Guard::WriteRetryRule => &mut self.write_retry_rule,
            Guard::ToolContract => &mut self.tool_contract,
            Guard::PauseOnIndeterminate => &mut self.pause_on_indeterminate,
            Guard::Ledger => &mut self.ledger,
            Guard::AtomicReservation => &mut self.atomic_reservation,
            Guard::KeyDownstream => &mut self.key_downstream,
            Guard::CheckpointVersion => &mut self.checkpoint_version,
            Guard::ReconcileHook => &mut self.reconcile_hook,
            Guard::KeyPerCall => &mut self.key_per_call,
            Guard::NoLeaseExpiry => &mut self.no_lease_expiry,
            Guard::NoReflexCompensation => &mut self.no_reflex_compensation,
            Guard::RefusalIsFailed => &mut self.refusal_is_failed,
            Guard::KeyRetention => &mut self.key_retention,
            Guard::LookupSettle => &mut self.lookup_settle,
            Guard::DeadLetter => &mut self.dead_letter,
        };
        *field = on;
    }

    /// These guards with `guard` switched on or off.
    pub fn with(mut self, guard: Guard, on: bool) -> Self {
        self.set(guard, on);
        self
    }

    /// The guards that are off, in teaching order.
    pub fn off(&self) -> Vec<Guard> {
        Guard::EVERY.into_iter().filter(|guard| !self.is_on(*guard)).collect()
    }

    /// Parses `all`, `none`, or a comma-separated list of guard names to leave on.
    pub fn parse_list(text: &str) -> Result<Guards, UnknownGuard> {
        match text.trim() {
            "all" => return Ok(Guards::all_on()),
            "none" => return Ok(Guards::all_off()),
            _ => {}
        }
        let mut guards = Guards::all_off();
        for name in text.split(',').map(str::trim).filter(|name| !name.is_empty()) {
            let guard = Guard::from_name(name).ok_or_else(|| UnknownGuard { name: name.to_owned() })?;
            guards.set(guard, true);
        }
        Ok(guards)
    }
}

/// A guard list names a guard there is none of.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown guard `{name}`; known guards: {}", Guard::EVERY.map(Guard::name).join(", "))]
pub struct UnknownGuard {
    /// The name given.
    pub name: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_guard_round_trips_through_its_name_and_setter() {
        for guard in Guard::EVERY {
            assert_eq!(Guard::from_name(guard.name()), Some(guard));
            let guards = Guards::all_on().with(guard, false);
            assert!(!guards.is_on(guard));
            assert_eq!(guards.off(), vec![guard]);
        }
        assert_eq!(Guards::all_off().off().len(), Guard::EVERY.len());
        for guard in Guard::NOT_YET_TAUGHT {
            assert!(!Guard::ALL.contains(&guard) && Guard::EVERY.contains(&guard));
        }
        assert_eq!(Guard::ALL.len() + Guard::NOT_YET_TAUGHT.len(), Guard::EVERY.len());
        // Taught first, in teaching order, then the rest.
        assert_eq!(Guard::EVERY[..Guard::ALL.len()], Guard::ALL);
        assert_eq!(Guard::EVERY[Guard::ALL.len()..], Guard::NOT_YET_TAUGHT);
    }

    #[test]
    fn a_guard_listed_twice_is_caught() {
        assert!(each_once(&Guard::EVERY));
        assert!(each_once(&[]));
        assert!(!each_once(&[Guard::Ledger, Guard::KeyPerCall, Guard::Ledger]));
        let joined: [Guard; 3] = concatenated([Guard::Ledger], [Guard::KeyPerCall, Guard::DeadLetter]);
        assert_eq!(joined, [Guard::Ledger, Guard::KeyPerCall, Guard::DeadLetter]);
    }

    #[test]
    fn guard_lists_parse_and_unknown_names_are_refused() {
        assert_eq!(Guards::parse_list("all"), Ok(Guards::all_on()));
        assert_eq!(Guards::parse_list("none"), Ok(Guards::all_off()));
        let guards = Guards::parse_list("ledger, key_per_call").expect("valid list");
        assert!(guards.ledger && guards.key_per_call && !guards.write_retry_rule);
        let error = Guards::parse_list("ledger,moat").expect_err("unknown guard");
        assert_eq!(error.name, "moat");
        let message = error.to_string();
        assert!(message.starts_with("unknown guard `moat`; known guards: "), "{message}");
        for guard in Guard::EVERY {
            assert!(message.contains(guard.name()), "{message} names {}", guard.name());
        }
    }
}
