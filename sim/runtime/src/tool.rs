//! Tool declarations: the side effect a tool declares sets its retry rule.

use serde::{Deserialize, Serialize};

use crate::ids::ToolName;

/// What a tool does to the world. The side effect sets how often it may be attempted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SideEffect {
    /// Looks something up; safe to repeat.
    Read,
    /// Changes a record (an account's owner).
    Write,
    /// Reaches another system (send an email, issue a credit).
    External,
    /// Deletes something.
    Destructive,
}

impl SideEffect {
    /// Every side effect, from the harmless to the destructive.
    pub const ALL: [SideEffect; 4] = [
        SideEffect::Read,
        SideEffect::Write,
        SideEffect::External,
        SideEffect::Destructive,
    ];

    /// Anything but a read: one attempt, a key downstream, and an unknown outcome on a timeout.
    pub fn changes_something(self) -> bool {
        !matches!(self, SideEffect::Read)
    }

    /// Whether its effect lands outside the runtime's reach (external, destructive): the
    /// runtime cannot find out by itself whether an unknown call took effect, so the
    /// ambiguity policy ([`assert_ambiguity_policy`]) asks it for a way to settle one.
    pub fn reaches_out(self) -> bool {
        matches!(self, SideEffect::External | SideEffect::Destructive)
    }

    /// The side effect as declarations write it (`external`).
    pub fn name(self) -> &'static str {
        match self {
            SideEffect::Read => "read",
            SideEffect::Write => "write",
            SideEffect::External => "external",
            SideEffect::Destructive => "destructive",
        }
    }

    /// The side effect named `text` (see [`SideEffect::name`]), if there is one.
    pub fn parse(text: &str) -> Option<SideEffect> {
        SideEffect::ALL
            .into_iter()
            .find(|side_effect| side_effect.name() == text)
    }
}

/// The most attempts any tool may be given: a read's three.
pub const READ_ATTEMPTS_MAX: u32 = 3;
/// Backoff before the second attempt of a read; doubled for each later attempt.
pub const READ_BACKOFF_BASE_MS: u64 = 50;

/// A tool as the runtime knows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ToolDeclaration {
    /// The tool's name, as the model calls it and the ledger records it.
    pub name: ToolName,
    /// What the tool does to the world: it sets the retry rule.
    pub side_effect: SideEffect,
    /// What the tool's world does when the tool runs, in the driver's own words (a payment provider's
    /// world's `credit` or `lookup_balance`); the runtime never reads it. `None`: the driver
    /// goes by the tool's name. In RON it is written bare (`operation: credit`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "operation_name"
    )]
    pub operation: Option<String>,
    /// The tool takes the idempotency key from its context and passes it on.
    #[serde(default = "yes")]
    pub takes_key: bool,
    /// Has a read-only reconcile hook that looks the call up by key.
    #[serde(default)]
    pub reconcile: bool,
    /// Has a compensation (voiding the credit) an operator may ask for.
    #[serde(default)]
    pub compensation: bool,
    /// The framework's retry policy as the developer configured it: how many attempts the
    /// runtime gives the tool, 1 to [`READ_ATTEMPTS_MAX`]. `None`: its side effect's rule (a
    /// read three, anything that changes something one). A write given three is the mistake
    /// the contract check ([`assert_tool_contract`], guard `tool_contract`) is there to catch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
    /// How long the system the tool changes keeps an idempotency key, from its documentation
    /// (Stripe: 24 hours, `86_400_000`), counted from the call's reservation. Past it, a resend
    /// under the key is not recognised (the system pays again) and a lookup by the key finds
    /// nothing whatever happened: the runtime never resends such a key as if it were safe, and
    /// reads "nothing found" as "expired", not "absent" (guard `key_retention`). `None`: the
    /// system keeps keys for as long as the runtime needs them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_retention_ms: Option<u64>,
    /// How long after a request the system's lookups may still not show its effect (an
    /// eventually consistent read). Declaring it also says the lookup is authoritative after
    /// that: "nothing found" that long after the last send proves the call did not take
    /// effect, so the reconcile hook settles it `failed`; sooner, it is asked again (guard
    /// `lookup_settle`). `None`: a lookup that finds nothing proves nothing (the call stays
    /// unknown, for a pause or a person). It is counted from the ledger's record of the last
    /// send, so declare it only for a system that refuses a request arriving too long after
    /// that record (stamp requests with [`crate::execution::Sending::recorded_at_ms`]) and
    /// include that window: otherwise a request held by a paused process or a cut network can
    /// land after the call was settled `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lookup_settle_ms: Option<u64>,
}

fn yes() -> bool {
    true
}

/// An operation's name, bare (a RON identifier) or quoted (JSON).
fn operation_name<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    struct Name;
    impl serde::de::Visitor<'_> for Name {
        type Value = String;
        fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
            formatter.write_str("an operation's name")
        }
        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<String, E> {
            Ok(text.to_owned())
        }
    }
    deserializer.deserialize_identifier(Name).map(Some)
}

impl SideEffect {
    /// The attempts the side effect's own rule gives: a read three, anything else one.
    pub fn rule_attempts(self) -> u32 {
        if self.changes_something() { 1 } else { READ_ATTEMPTS_MAX }
    }
}

impl ToolDeclaration {
    /// A tool named `name` doing `side_effect`: it takes the idempotency key, has no reconcile
    /// hook or compensation, gets its side effect's attempts, and declares no provider terms.
    /// The `with_` methods declare the rest.
    ///
    /// ```
    /// use twice_runtime::tool::{SideEffect, ToolDeclaration};
    /// let credit = ToolDeclaration::new("issue_credit", SideEffect::External)
    ///     .with_reconcile()
    ///     .with_compensation()
    ///     .with_key_retention_ms(86_400_000);
    /// assert_eq!(credit.summary(), "external, 1 attempt, takes the key");
    /// assert!(credit.check_contract().is_ok());
    /// ```
    pub fn new(name: impl Into<ToolName>, side_effect: SideEffect) -> ToolDeclaration {
        ToolDeclaration {
            name: name.into(),
            side_effect,
            operation: None,
            takes_key: true,
            reconcile: false,
            compensation: false,
            attempts: None,
            key_retention_ms: None,
            lookup_settle_ms: None,
        }
    }

    /// The tool has a read-only reconcile hook that looks a call up by its key.
    #[must_use]
    pub fn with_reconcile(mut self) -> ToolDeclaration {
        self.reconcile = true;
        self
    }

    /// The tool has a compensation an operator may ask for.
    #[must_use]
    pub fn with_compensation(mut self) -> ToolDeclaration {
        self.compensation = true;
        self
    }

    /// The tool takes no idempotency key (the contract check refuses this for anything that
    /// changes the world).
    #[must_use]
    pub fn without_key(mut self) -> ToolDeclaration {
        self.takes_key = false;
        self
    }

    /// The retry policy: `attempts` attempts (1 to [`READ_ATTEMPTS_MAX`]).
    #[must_use]
    pub fn with_attempts(mut self, attempts: u32) -> ToolDeclaration {
        self.attempts = Some(attempts);
        self
    }

    /// How long the system the tool changes keeps an idempotency key.
    #[must_use]
    pub fn with_key_retention_ms(mut self, key_retention_ms: u64) -> ToolDeclaration {
        self.key_retention_ms = Some(key_retention_ms);
        self
    }

    /// How long the system's lookups may lag behind its effects (see
    /// [`ToolDeclaration::lookup_settle_ms`]).
    #[must_use]
    pub fn with_lookup_settle_ms(mut self, lookup_settle_ms: u64) -> ToolDeclaration {
        self.lookup_settle_ms = Some(lookup_settle_ms);
        self
    }

    /// The driver's own name for what the tool does (see [`ToolDeclaration::operation`]).
    #[must_use]
    pub fn with_operation(mut self, operation: impl Into<String>) -> ToolDeclaration {
        self.operation = Some(operation.into());
        self
    }

    /// Attempts the runtime gives the tool. A retry policy the developer declared is obeyed
    /// as declared (checking it is the contract check's job, not the retry rule's). Without
    /// one, the side effect sets it; with the write retry rule off, a naive runtime treats
    /// every tool like a read.
    /// A retry policy out of range ([`ToolDeclaration::attempts_problem`]) is refused by
    /// [`crate::worker::Worker::new`]; asked here, it is answered as declared.
    #[must_use]
    pub fn attempts_allowed(&self, write_retry_rule: bool) -> u32 {
        if let Some(attempts) = self.attempts {
            return attempts;
        }
        if self.side_effect.changes_something() && write_retry_rule {
            1
        } else {
            READ_ATTEMPTS_MAX
        }
    }

    /// Attempts the declaration asks for: its retry policy, or else its side effect's rule.
    /// This is what the contract check judges — the tool as declared, whatever the runtime
    /// running it does with writes.
    pub fn declared_attempts(&self) -> u32 {
        self.attempts.unwrap_or(self.side_effect.rule_attempts())
    }

    /// A declared retry policy out of range, in words; `None` when it is fine.
    pub fn attempts_problem(&self) -> Option<String> {
        let attempts = self.attempts?;
        (!(1..=READ_ATTEMPTS_MAX).contains(&attempts)).then(|| {
            format!(
                "tool `{}` declares {attempts} attempts; a tool gets 1 to {READ_ATTEMPTS_MAX}",
                self.name
            )
        })
    }

    /// A declared key retention or lookup settle time that cannot be meant, in words; `None`
    /// when both are fine. A retention must outlast the settle time: a key forgotten before
    /// its effect shows could never be looked up.
    pub fn terms_problem(&self) -> Option<String> {
        let name = &self.name;
        match (self.key_retention_ms, self.lookup_settle_ms) {
            (Some(0), _) => Some(format!(
                "tool `{name}` declares key_retention_ms: 0; a key must be kept for some time"
            )),
            // Decision table 6 reads a settle time as a lag: none is said by leaving it out.
            (_, Some(0)) => Some(format!(
                "tool `{name}` declares lookup_settle_ms: 0; leave it out for lookups that show a call at once"
            )),
            (Some(retention), Some(settle)) if settle >= retention => Some(format!(
                "tool `{name}` declares lookup_settle_ms: {settle}, not less than its key_retention_ms: {retention}; \
                 its lookups could never find a call by key"
            )),
            _ => None,
        }
    }

    /// The same tool declared otherwise.
    pub fn declared_as(&self, side_effect: SideEffect, attempts: u32, takes_key: bool) -> ToolDeclaration {
        ToolDeclaration {
            side_effect,
            attempts: Some(attempts),
            takes_key,
            ..self.clone()
        }
    }

    /// The contract check ([`assert_tool_contract`]) on this declaration.
    ///
    /// # Errors
    ///
    /// The [`ContractViolation`] found: more than one attempt for a tool that changes something, or
    /// no idempotency key.
    pub fn check_contract(&self) -> Result<(), ContractViolation> {
        assert_tool_contract(self, self.declared_attempts())
    }

    /// The declaration in a few words: `external, 3 attempts, takes the key`.
    pub fn summary(&self) -> String {
        let attempts = self.declared_attempts();
        format!(
            "{}, {attempts} attempt{}, {}",
            self.side_effect.name(),
            if attempts == 1 { "" } else { "s" },
            if self.takes_key {
                "takes the key"
            } else {
                "takes no key"
            }
        )
    }
}

/// Why a tool fails the contract check.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ContractViolation {
    #[error(
        "tool `{tool}` is declared {side_effect} but is allowed {attempts} attempts; anything that changes the world gets exactly 1"
    )]
    /// A tool that changes something is allowed more than one attempt.
    TooManyAttempts {
        /// The tool.
        tool: ToolName,
        /// Its tool's side effect (table 1 reads it).
        side_effect: &'static str,
        /// The attempts noted.
        attempts: u32,
    },
    #[error("tool `{tool}` is declared {side_effect} but takes no idempotency key; it cannot pass one downstream")]
    /// A tool that changes something takes no idempotency key.
    NoIdempotencyKey {
        /// The tool.
        tool: ToolName,
        /// Its declared side effect.
        side_effect: &'static str,
    },
    /// An external or destructive tool whose unknown outcome nobody would resolve: it has no
    /// reconcile hook and the runtime does not pause on `indeterminate`, so a lost answer
    /// would be told to the model as "failed" and the model could pay again.
    #[error(
        "tool `{tool}` is declared {side_effect} but declares no ambiguity policy: it has no reconcile hook and the runtime does not pause on an unknown outcome (`on_indeterminate: pause`); a lost answer would reach the model as \"failed\""
    )]
    NoAmbiguityPolicy {
        /// The tool.
        tool: ToolName,
        /// Its declared side effect.
        side_effect: &'static str,
    },
}

/// The ambiguity policy (guard `ambiguity_policy`): an external or destructive tool needs a
/// reconcile hook, or a runtime that pauses on an unknown outcome (`pauses_on_indeterminate`,
/// guard `pause_on_indeterminate`). A read or a write inside the runtime's own reach passes.
/// A policy beyond the contract check, whose default handles an unknown call like any failed
/// call (and whose [`assert_tool_contract`] passes such a tool): agent runtimes such as zeph-durable
/// refuse to build a money-moving tool that declares none.
///
/// ```
/// use twice_runtime::tool::{ContractViolation, SideEffect, ToolDeclaration, assert_ambiguity_policy};
/// let mut email = ToolDeclaration::new("send_email", SideEffect::External);
/// assert!(matches!(assert_ambiguity_policy(&email, false), Err(ContractViolation::NoAmbiguityPolicy { .. })));
/// assert!(assert_ambiguity_policy(&email, true).is_ok(), "the run pauses on an unknown outcome");
/// email.reconcile = true;
/// assert!(assert_ambiguity_policy(&email, false).is_ok(), "the hook looks the email up");
/// ```
///
/// # Errors
///
/// [`ContractViolation`] for an external or destructive tool with neither a reconcile hook nor the
/// pause.
pub fn assert_ambiguity_policy(tool: &ToolDeclaration, pauses_on_indeterminate: bool) -> Result<(), ContractViolation> {
    if tool.side_effect.reaches_out() && !tool.reconcile && !pauses_on_indeterminate {
        return Err(ContractViolation::NoAmbiguityPolicy {
            tool: tool.name.clone(),
            side_effect: tool.side_effect.name(),
        });
    }
    Ok(())
}

/// The tool contract: fails any tool that writes, sends or deletes and
/// is allowed more than one attempt or has no idempotency key. `attempts` is what the
/// runtime is configured to allow it.
///
/// # Errors
///
/// [`ContractViolation`] for a tool that writes, sends or deletes and is allowed more than one
/// attempt or takes no idempotency key.
pub fn assert_tool_contract(tool: &ToolDeclaration, attempts: u32) -> Result<(), ContractViolation> {
    if !tool.side_effect.changes_something() {
        return Ok(());
    }
    if attempts > 1 {
        return Err(ContractViolation::TooManyAttempts {
            tool: tool.name.clone(),
            side_effect: tool.side_effect.name(),
            attempts,
        });
    }
    if !tool.takes_key {
        return Err(ContractViolation::NoIdempotencyKey {
            tool: tool.name.clone(),
            side_effect: tool.side_effect.name(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(side_effect: SideEffect, takes_key: bool) -> ToolDeclaration {
        ToolDeclaration {
            name: "issue_credit".into(),
            side_effect,
            operation: None,
            takes_key,
            reconcile: false,
            compensation: false,
            attempts: None,
            key_retention_ms: None,
            lookup_settle_ms: None,
        }
    }

    #[test]
    fn reads_get_three_attempts_and_writes_one() {
        assert_eq!(tool(SideEffect::Read, true).attempts_allowed(true), 3);
        for side_effect in [SideEffect::Write, SideEffect::External, SideEffect::Destructive] {
            assert_eq!(tool(side_effect, true).attempts_allowed(true), 1);
            assert_eq!(
                tool(side_effect, true).attempts_allowed(false),
                3,
                "naive runtime retries writes"
            );
        }
    }

    #[test]
    fn contract_fails_writes_with_retries_or_without_a_key() {
        for side_effect in [SideEffect::Write, SideEffect::External, SideEffect::Destructive] {
            assert!(assert_tool_contract(&tool(side_effect, true), 1).is_ok());
            assert!(matches!(
                assert_tool_contract(&tool(side_effect, true), 3),
                Err(ContractViolation::TooManyAttempts { attempts: 3, .. })
            ));
            assert!(matches!(
                assert_tool_contract(&tool(side_effect, false), 1),
                Err(ContractViolation::NoIdempotencyKey { .. })
            ));
        }
        assert!(assert_tool_contract(&tool(SideEffect::Read, false), 3).is_ok());
    }

    #[test]
    fn a_declared_retry_policy_is_obeyed_and_judged_by_the_contract() {
        let mut credit = tool(SideEffect::External, true);
        assert_eq!(credit.declared_attempts(), 1);
        assert!(credit.check_contract().is_ok());
        credit.attempts = Some(3);
        // The runtime obeys the declaration, retry rule or not: the check has to catch it.
        assert_eq!(credit.attempts_allowed(true), 3);
        assert_eq!(credit.attempts_allowed(false), 3);
        let violation = credit.check_contract().expect_err("a write given three attempts");
        assert!(
            violation.to_string().contains("issue_credit") && violation.to_string().contains("3 attempts"),
            "{violation}"
        );
        credit.attempts = Some(1);
        assert!(credit.check_contract().is_ok());
        credit.takes_key = false;
        assert!(matches!(
            credit.check_contract(),
            Err(ContractViolation::NoIdempotencyKey { .. })
        ));
        // A read may be given three, declared or by its rule.
        let mut read = tool(SideEffect::Read, false);
        assert_eq!(read.declared_attempts(), READ_ATTEMPTS_MAX);
        read.attempts = Some(2);
        assert!(read.check_contract().is_ok());
        // Out of range is a problem, named.
        read.attempts = Some(0);
        assert!(
            read.attempts_problem()
                .is_some_and(|problem| problem.contains("0 attempts"))
        );
        read.attempts = Some(READ_ATTEMPTS_MAX + 1);
        assert!(read.attempts_problem().is_some());
        read.attempts = Some(READ_ATTEMPTS_MAX);
        assert_eq!(read.attempts_problem(), None);
    }

    #[test]
    fn key_retention_and_lookup_settle_are_checked_together() {
        let mut credit = tool(SideEffect::External, true);
        assert_eq!(credit.terms_problem(), None);
        credit.key_retention_ms = Some(86_400_000);
        credit.lookup_settle_ms = Some(2_000);
        assert_eq!(credit.terms_problem(), None);
        credit.lookup_settle_ms = Some(86_400_000);
        assert!(
            credit
                .terms_problem()
                .is_some_and(|problem| problem.contains("lookup_settle_ms: 86400000"))
        );
        credit.key_retention_ms = Some(0);
        assert!(
            credit
                .terms_problem()
                .is_some_and(|problem| problem.contains("key_retention_ms: 0"))
        );
        // A settle time of 0 would reach decision table 6, which refuses it (an assertion).
        credit.key_retention_ms = None;
        credit.lookup_settle_ms = Some(0);
        assert!(
            credit
                .terms_problem()
                .is_some_and(|problem| problem.contains("lookup_settle_ms: 0")),
            "{:?}",
            credit.terms_problem()
        );
    }
}
