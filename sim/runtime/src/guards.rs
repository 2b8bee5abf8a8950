//! The runtime's guards: each rule that makes a side effect happen once, by name. A worker
//! reports which guard held at each step ([`crate::worker::Held`]), and every guard is on.
//!
//! With the `simulation` feature (Twice's simulator; never an agent's), guards can be switched
//! off to show what each one prevents: `Guards::set`, `Guards::with`, `Guards::all_off`,
//! `Guards::only`, `Guards::parse_list`, reading `Guards` with serde, and the naive runtimes of
//! `NaiveRefusal`.
//!
//! ```
//! use twice_runtime::{Guard, Guards};
//! let guards = Guards::all_on();
//! assert!(guards.is_on(Guard::Ledger));
//! assert!(guards.off().is_empty());
//! assert_eq!(Guard::from_name("key_per_call"), Some(Guard::KeyPerCall));
//! ```

use serde::{Deserialize, Serialize};

/// One guard of the runtime. The order is the order the rules build on each other, but for
/// `RefusalIsFailed`, added last so that each guard's number stays what it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Guard {
    /// Writes get one attempt; a timeout on a write is an unknown, not a failure.
    WriteRetryRule,
    /// `assert_tool_contract` before a run starts: a run whose tools declare a write with
    /// more than one attempt, or without the idempotency key, is refused before anything is sent.
    /// That is all it checks: the contract rule, word for word.
    ToolContract,
    /// `on_indeterminate: pause`: the model never hears "failed" while the answer is "unknown".
    PauseOnIndeterminate,
    /// `assert_ambiguity_policy` before a run starts: an external or destructive tool with
    /// neither a reconcile hook nor the pause (`PauseOnIndeterminate`) is refused before anything
    /// is sent. A policy beyond the contract rule, whose default handles an unknown call like any failed
    /// call: a lost answer would reach the model as "failed".
    AmbiguityPolicy,
    /// Reserve the key in the ledger before the tool runs.
    Ledger,
    /// The reservation is one transaction (no check-then-insert race).
    AtomicReservation,
    /// The idempotency key is handed to the tool and passed to the system it changes.
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
    /// The guards in the order they build on each other: a simulation that shows what each
    /// prevents goes over them in this order.
    pub const ALL: [Guard; 16] = [
        Guard::WriteRetryRule,
        Guard::ToolContract,
        Guard::PauseOnIndeterminate,
        Guard::AmbiguityPolicy,
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

    /// Guards a simulation may switch off by name but does not show yet, so searches over
    /// [`Guard::ALL`] leave them out. None today.
    pub const NOT_YET_TAUGHT: [Guard; 0] = [];

    /// Every guard: [`Guard::ALL`] in its order, then [`Guard::NOT_YET_TAUGHT`]. Made
    /// from the two lists, so a guard is listed once and moving one from `NOT_YET_TAUGHT`
    /// into `ALL` is a change to those two lines alone; building fails if a guard would be
    /// in both.
    pub const EVERY: [Guard; Guard::ALL.len() + Guard::NOT_YET_TAUGHT.len()] = {
        let every = concatenated(Guard::ALL, Guard::NOT_YET_TAUGHT);
        assert!(each_once(&every), "a guard is both taught and not yet taught");
        every
    };

    /// The guard's name, as files and command lines write it (`write_retry_rule`).
    pub const fn name(self) -> &'static str {
        match self {
            Guard::WriteRetryRule => "write_retry_rule",
            Guard::ToolContract => "tool_contract",
            Guard::PauseOnIndeterminate => "pause_on_indeterminate",
            Guard::AmbiguityPolicy => "ambiguity_policy",
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

/// Which guards are on: a set over [`Guard`], every guard on unless a simulation switches one
/// off (feature `simulation`). Written as a struct of switches, `(ledger: false, key_per_call:
/// false)` (a guard left out is on); a name that is no guard is refused with the list of guards.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Guards {
    /// Bit `guard as u32` is set when `guard` is on.
    on: u32,
    /// What the naive runtime records a refused call as while `refusal_is_failed` is off. Not
    /// a guard: which of the two naive runtimes the simulator shows.
    pub(crate) naive_refusal: NaiveRefusal,
}

/// The set has one bit per guard.
const _: () = assert!(Guard::EVERY.len() <= u32::BITS as usize, "one bit per guard");

simulation_api! {
    /// How a runtime without guard `refusal_is_failed` records a call its tool refused before
    /// sending anything (`ToolNotAttemptedError`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
}

impl Default for Guards {
    fn default() -> Self {
        Guards::all_on()
    }
}

impl Guard {
    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

impl Guards {
    /// Every guard on: the runtime as it always runs without the `simulation` feature.
    pub fn all_on() -> Self {
        Guards {
            on: Guard::EVERY.into_iter().fold(0, |on, guard| on | guard.bit()),
            naive_refusal: NaiveRefusal::default(),
        }
    }

    simulation_api! {
        /// Every guard off: the most naive runtime the simulator can run.
        pub fn all_off() -> Self {
            Guards {
                on: 0,
                naive_refusal: NaiveRefusal::default(),
            }
        }
    }

    simulation_api! {
        /// Exactly `on` switched on, every other guard off.
        pub fn only(on: impl IntoIterator<Item = Guard>) -> Self {
            let mut guards = Guards::all_off();
            for guard in on {
                guards.set(guard, true);
            }
            guards
        }
    }

    /// Whether `guard` is on.
    pub fn is_on(&self, guard: Guard) -> bool {
        self.on & guard.bit() != 0
    }

    simulation_api! {
        /// Switches `guard` on or off.
        pub fn set(&mut self, guard: Guard, on: bool) {
            if on {
                self.on |= guard.bit();
            } else {
                self.on &= !guard.bit();
            }
            debug_assert_eq!(self.is_on(guard), on);
        }
    }

    simulation_api! {
        /// These guards with `guard` switched on or off.
        #[must_use]
        pub fn with(mut self, guard: Guard, on: bool) -> Self {
            self.set(guard, on);
            self
        }
    }

    simulation_api! {
        /// Which naive runtime records a refused call while `refusal_is_failed` is off.
        pub fn naive_refusal(&self) -> NaiveRefusal {
            self.naive_refusal
        }
    }

    simulation_api! {
        /// These guards with the naive runtime `naive_refusal` (it acts only while
        /// `refusal_is_failed` is off).
        #[must_use]
        pub fn with_naive_refusal(mut self, naive_refusal: NaiveRefusal) -> Self {
            self.naive_refusal = naive_refusal;
            self
        }
    }

    /// The guards that are on, in teaching order.
    pub fn on(&self) -> Vec<Guard> {
        Guard::EVERY.into_iter().filter(|guard| self.is_on(*guard)).collect()
    }

    /// The guards that are off, in teaching order.
    pub fn off(&self) -> Vec<Guard> {
        Guard::EVERY.into_iter().filter(|guard| !self.is_on(*guard)).collect()
    }

    simulation_api! {
        /// Parses `all`, `none`, or a comma-separated list of guard names to leave on.
        ///
        /// # Errors
        ///
        /// [`UnknownGuard`] for a name that is no guard's.
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
}

impl std::fmt::Debug for Guards {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Guards")
            .field("off", &self.off())
            .field("naive_refusal", &self.naive_refusal)
            .finish()
    }
}

/// The name under which a simulation writes which naive runtime it shows (not a guard).
const NAIVE_REFUSAL: &str = "naive_refusal";

/// Every name a written `guards: (…)` may hold: the guards, then `naive_refusal`.
#[cfg(feature = "simulation")]
const FIELDS: [&str; Guard::EVERY.len() + 1] = {
    let mut fields = [NAIVE_REFUSAL; Guard::EVERY.len() + 1];
    let mut index = 0;
    while index < Guard::EVERY.len() {
        fields[index] = Guard::EVERY[index].name();
        index += 1;
    }
    fields
};

impl Serialize for Guards {
    /// Every guard's switch by name, then `naive_refusal` when it is not the default: what the
    /// struct of bools this replaced wrote, so files written before read the same.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let naive = self.naive_refusal != NaiveRefusal::default();
        let mut fields = serializer.serialize_struct("Guards", Guard::EVERY.len() + usize::from(naive))?;
        for guard in Guard::EVERY {
            fields.serialize_field(guard.name(), &self.is_on(guard))?;
        }
        if naive {
            fields.serialize_field(NAIVE_REFUSAL, &self.naive_refusal)?;
        } else {
            fields.skip_field(NAIVE_REFUSAL)?;
        }
        fields.end()
    }
}

/// Reading guards can switch them off, so only a simulation reads them.
#[cfg(feature = "simulation")]
impl<'de> Deserialize<'de> for Guards {
    /// A struct (or map) of switches by guard name, each `true` or `false`; a guard left out is
    /// on; a name that is no guard, or a guard named twice, is an error naming it.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Switches;
        impl<'de> serde::de::Visitor<'de> for Switches {
            type Value = Guards;

            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("guards switched by name, like `(ledger: false)`")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Guards, A::Error> {
                let mut guards = Guards::all_on();
                let mut seen = 0_u32;
                let mut naive_seen = false;
                while let Some(FieldName(name)) = map.next_key::<FieldName>()? {
                    if name == NAIVE_REFUSAL {
                        if naive_seen {
                            return Err(serde::de::Error::duplicate_field(NAIVE_REFUSAL));
                        }
                        naive_seen = true;
                        guards.naive_refusal = map.next_value()?;
                        continue;
                    }
                    let Some(guard) = Guard::from_name(&name) else {
                        return Err(serde::de::Error::unknown_field(&name, &FIELDS));
                    };
                    if seen & guard.bit() != 0 {
                        return Err(serde::de::Error::duplicate_field(guard.name()));
                    }
                    seen |= guard.bit();
                    guards.set(guard, map.next_value()?);
                }
                Ok(guards)
            }
        }
        deserializer.deserialize_struct("Guards", &FIELDS, Switches)
    }
}

/// A switch's name as the format gives it: formats hand a struct's field names over as
/// identifiers (RON) or strings (JSON), and either is taken.
#[cfg(feature = "simulation")]
struct FieldName(String);

#[cfg(feature = "simulation")]
impl<'de> Deserialize<'de> for FieldName {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name;
        impl serde::de::Visitor<'_> for Name {
            type Value = FieldName;

            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("a guard's name")
            }

            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<FieldName, E> {
                Ok(FieldName(name.to_owned()))
            }
        }
        deserializer.deserialize_identifier(Name)
    }
}

simulation_api! {
    /// A guard list names a guard there is none of.
    #[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
    #[error("unknown guard `{name}`; known guards: {}", Guard::EVERY.map(Guard::name).join(", "))]
    pub struct UnknownGuard {
        /// The name given.
        pub name: String,
    }
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
        assert!(guards.is_on(Guard::Ledger) && guards.is_on(Guard::KeyPerCall) && !guards.is_on(Guard::WriteRetryRule));
        let error = Guards::parse_list("ledger,moat").expect_err("unknown guard");
        assert_eq!(error.name, "moat");
        let message = error.to_string();
        assert!(message.starts_with("unknown guard `moat`; known guards: "), "{message}");
        for guard in Guard::EVERY {
            assert!(message.contains(guard.name()), "{message} names {}", guard.name());
        }
    }

    #[cfg(feature = "simulation")]
    #[test]
    fn guards_are_a_set_written_as_switches_by_name() {
        let guards = Guards::all_on()
            .with(Guard::Ledger, false)
            .with(Guard::KeyPerCall, false);
        assert_eq!(guards.off(), vec![Guard::Ledger, Guard::KeyPerCall]);
        assert_eq!(guards.on().len() + 2, Guard::EVERY.len());
        assert_eq!(Guards::only([Guard::Ledger]).on(), vec![Guard::Ledger]);
        let json = serde_json::to_value(guards).expect("guards serialize");
        assert_eq!(json["ledger"], false);
        assert_eq!(json["write_retry_rule"], true);
        assert!(
            json.get("naive_refusal").is_none(),
            "the default naive runtime is not written"
        );
        assert_eq!(serde_json::from_value::<Guards>(json).expect("read back"), guards);
        // A guard left out is on; the naive runtime is read by name.
        let read: Guards =
            serde_json::from_str(r#"{"refusal_is_failed": false, "naive_refusal": "indeterminate"}"#).expect("reads");
        assert_eq!(read.off(), vec![Guard::RefusalIsFailed]);
        assert_eq!(read.naive_refusal, NaiveRefusal::Indeterminate);
        let written = serde_json::to_string(&read).expect("serializes");
        assert!(written.ends_with(r#""naive_refusal":"indeterminate"}"#), "{written}");
    }

    #[cfg(feature = "simulation")]
    #[test]
    fn a_switch_that_is_no_guard_or_named_twice_is_refused_by_name() {
        let error = serde_json::from_str::<Guards>(r#"{"moat": false}"#).expect_err("no such guard");
        let message = error.to_string();
        assert!(
            message.contains("unknown field `moat`") && message.contains("key_per_call"),
            "{message}"
        );
        let error = serde_json::from_str::<Guards>(r#"{"ledger": false, "ledger": true}"#).expect_err("twice");
        assert!(error.to_string().contains("duplicate field `ledger`"), "{error}");
        let error = serde_json::from_str::<Guards>(r#"{"ledger": 3}"#).expect_err("not a switch");
        assert!(error.to_string().contains("expected a boolean"), "{error}");
    }
}
