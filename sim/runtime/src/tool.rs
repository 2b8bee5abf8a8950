//! Tool declarations: the side effect a tool declares sets its retry rule.

use serde::{Deserialize, Serialize};

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
    pub fn changes_something(self) -> bool {
        !matches!(self, SideEffect::Read)
    }

    pub fn name(self) -> &'static str {
        match self {
            SideEffect::Read => "read",
            SideEffect::Write => "write",
            SideEffect::External => "external",
            SideEffect::Destructive => "destructive",
        }
    }

    pub fn parse(text: &str) -> Option<SideEffect> {
        [
            SideEffect::Read,
            SideEffect::Write,
            SideEffect::External,
            SideEffect::Destructive,
        ]
        .into_iter()
        .find(|side_effect| side_effect.name() == text)
    }
}

/// The most attempts any tool may be given: a read's three.
pub const READ_ATTEMPTS_MAX: u32 = 3;
/// Backoff before the second attempt of a read; doubled for each later attempt.
pub const READ_BACKOFF_BASE_MS: u64 = 50;

/// What the billing world does when the tool runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    /// Credit an account (`issue_credit`).
    Credit,
    /// Read an account's balance (`lookup_balance`).
    LookupBalance,
}

/// A tool as the runtime knows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolDeclaration {
    pub name: String,
    pub side_effect: SideEffect,
    pub operation: Operation,
    /// The tool takes the idempotency key from its context and passes it on.
    #[serde(default = "yes")]
    pub takes_key: bool,
    /// Has a read-only reconcile hook that looks the call up by key.
    #[serde(default)]
    pub reconcile: bool,
    /// Has a compensation (voiding the credit) an operator may ask for.
    #[serde(default)]
    pub compensation: bool,
}

fn yes() -> bool {
    true
}

impl ToolDeclaration {
    /// Attempts the retry rule allows. With the write retry rule off, a naive runtime
    /// treats every tool like a read.
    pub fn attempts_allowed(&self, write_retry_rule: bool) -> u32 {
        if self.side_effect.changes_something() && write_retry_rule {
            1
        } else {
            READ_ATTEMPTS_MAX
        }
    }
}

/// Why a tool fails the contract check.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ContractViolation {
    #[error(
        "tool `{tool}` is declared {side_effect} but is allowed {attempts} attempts; anything that changes the world gets exactly 1"
    )]
    TooManyAttempts {
        tool: String,
        side_effect: &'static str,
        attempts: u32,
    },
    #[error("tool `{tool}` is declared {side_effect} but takes no idempotency key; it cannot pass one downstream")]
    NoIdempotencyKey { tool: String, side_effect: &'static str },
}

/// The seed's `assert_tool_contract`: fails any tool that writes, sends or deletes and
/// is allowed more than one attempt or has no idempotency key. `attempts` is what the
/// runtime is configured to allow it.
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
            operation: Operation::Credit,
            takes_key,
            reconcile: false,
            compensation: false,
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
}
