//! What each drill run owes: derived from the run id, so every process agrees without a file.
//!
//! A run credits one to three customers. The script of run `run-0042` is the same in the
//! worker that drives it, in the drill that checks it, and in any later process that
//! recovers it, because it is a pure function of the id (FNV-1a, stable across platforms).

use twice_world::billing::Account;
use twice_world::billing_tools::{CreditArguments, Operation};
use twice_world::model::{ModelPolicy, OnCompensated, OnFailed, RunScript, ScriptCall};
use twice_world::runtime::key::fnv1a64;
use twice_world::runtime::tool::{SideEffect, ToolDeclaration};

/// Every drill run belongs to this tenant.
pub const TENANT: &str = "default";
/// The one tool a drill run calls.
pub const TOOL_NAME: &str = "issue_credit";
/// The most credits one run owes.
pub const CALLS_PER_RUN_MAX: u64 = 3;
/// The longest run id a worker accepts.
pub const RUN_ID_CHARS_MAX: usize = 64;

/// The customers billing knows, as (account id, owner).
pub const ACCOUNTS: [(&str, &str); 6] = [
    ("acct_ada", "Ada"),
    ("acct_grace", "Grace"),
    ("acct_alan", "Alan"),
    ("acct_edsger", "Edsger"),
    ("acct_barbara", "Barbara"),
    ("acct_ken", "Ken"),
];

/// The most calls the model makes for one credit. A call that truly did not take effect
/// (billing refused it, or an operator found it never landed) is made again with a new
/// key; with every guard on the model never hears "failed" for a call that may have landed.
pub const CALLS_PER_ITEM_MAX: u32 = 64;

/// Penny's policy in a drill: told a call did not take effect, she calls again, so a credit
/// owed is paid even when a kill stranded its first call before it left.
pub fn model_policy() -> ModelPolicy {
    ModelPolicy {
        on_failed: OnFailed::CallAgain,
        on_compensated: OnCompensated::AsFailed,
        max_calls_per_item: CALLS_PER_ITEM_MAX,
        reword_on_repeat: false,
        reword_on_replay: false,
    }
}

/// Billing's accounts, all starting at zero.
pub fn accounts() -> Vec<Account> {
    ACCOUNTS
        .iter()
        .map(|(id, owner)| Account {
            id: (*id).to_owned(),
            owner: (*owner).to_owned(),
            balance_cents: 0,
        })
        .collect()
}

/// `issue_credit`: external, takes the key, has a reconcile hook (look the credit up by key)
/// and a compensation (void it) — the seed's example tool.
pub fn tools() -> Vec<ToolDeclaration> {
    tools_with_terms(None, None)
}

/// [`tools`], declaring billing's terms: how long it keeps keys and how long its lookups lag
/// (a drill gives the worker the terms it gives billing).
pub fn tools_with_terms(key_retention_ms: Option<u64>, lookup_settle_ms: Option<u64>) -> Vec<ToolDeclaration> {
    let mut credit = ToolDeclaration::new(TOOL_NAME, SideEffect::External)
        .with_operation(Operation::Credit.name())
        .with_reconcile()
        .with_compensation();
    credit.key_retention_ms = key_retention_ms;
    credit.lookup_settle_ms = lookup_settle_ms;
    vec![credit]
}

/// The drill's name for its `number`th run (from 1).
pub fn run_id(number: u32) -> String {
    format!("run-{number:04}")
}

/// Why a run id is not a drill's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RunIdError {
    /// Not `run-` and a number.
    #[error("run id `{0}` is not a drill's run: it is `run-` and a number of 1 to 9 digits, as `run-0001`")]
    NotADrillRun(String),
    /// Empty or too long.
    #[error("run id `{0}` must have 1 to {max} characters", max = RUN_ID_CHARS_MAX)]
    Length(String),
    /// A character a key should not hold.
    #[error("run id `{run_id}` contains `{bad}`; use letters, digits, `-`, `_` and `.`")]
    Character {
        /// The run id.
        run_id: String,
        /// The first such character.
        bad: char,
    },
}

/// A drill's run id is `run-` and its number, as [`run_id`] makes it: the run's script follows
/// from the id, so an id no drill makes (`foo`) would drive a run nobody owes, and is refused.
/// It also becomes half of every key (`<run_id>:<tool_call_id>`).
pub fn validate_run_id(run_id: &str) -> Result<(), RunIdError> {
    let number = run_id.strip_prefix("run-").unwrap_or("");
    if number.is_empty() || number.len() > 9 || !number.chars().all(|character| character.is_ascii_digit()) {
        return Err(RunIdError::NotADrillRun(run_id.to_owned()));
    }
    if run_id.is_empty() || run_id.chars().count() > RUN_ID_CHARS_MAX {
        return Err(RunIdError::Length(run_id.to_owned()));
    }
    if let Some(bad) = run_id
        .chars()
        .find(|character| !(character.is_ascii_alphanumeric() || matches!(character, '-' | '_' | '.')))
    {
        return Err(RunIdError::Character {
            run_id: run_id.to_owned(),
            bad,
        });
    }
    Ok(())
}

/// The run's script: one to three credits, each to a customer for an amount between
/// $5.00 and $53.75, with a memo naming the run and the item (so equal arguments never
/// appear in two items, and an argument-derived key never merges two runs).
pub fn script_for(run_id: &str) -> RunScript {
    let hash = fnv1a64(&[b"twice-drill\0", run_id.as_bytes()]);
    let calls = 1 + hash % CALLS_PER_RUN_MAX;
    let calls = (0..calls)
        .map(|item| {
            let bits = hash.rotate_right(8 * (item as u32 + 1)) ^ (item.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let (account, _) = ACCOUNTS[(bits % ACCOUNTS.len() as u64) as usize];
            let amount_cents = 500 + ((bits >> 16) % 40) as u32 * 125;
            ScriptCall {
                tool: TOOL_NAME.into(),
                account: account.to_owned(),
                amount_cents,
                memo: format!("Refund {} of {calls} for {run_id}", item + 1),
                owner: None,
                rewordings: Vec::new(),
            }
        })
        .collect();
    RunScript {
        id: run_id.into(),
        tenant: TENANT.into(),
        calls,
        parallel: false,
    }
}

/// The intent a credit serves, as billing records it: `<run_id>/<item>` (as the simulator does).
pub fn intent(run_id: &str, item: u32) -> String {
    format!("{run_id}/{item}")
}

/// Which item of `script` a call with these canonical arguments serves.
pub fn item_of(script: &RunScript, canonical_arguments: &str) -> Option<u32> {
    script
        .calls
        .iter()
        .position(|call| {
            let arguments = CreditArguments {
                account: call.account.clone(),
                amount_cents: call.amount_cents,
                memo: call.memo.clone(),
                owner: call.owner.clone(),
            };
            arguments.to_arguments().canonical() == canonical_arguments
        })
        .map(|item| item as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_are_a_pure_function_of_the_run_id() {
        assert_eq!(script_for("run-0001"), script_for("run-0001"));
        assert_ne!(script_for("run-0001"), script_for("run-0002"));
        let sizes: std::collections::BTreeSet<usize> =
            (1..=50).map(|number| script_for(&run_id(number)).calls.len()).collect();
        assert_eq!(sizes, [1, 2, 3].into_iter().collect(), "runs owe one to three credits");
    }

    #[test]
    fn every_item_has_its_own_arguments_and_is_found_again_from_them() {
        for number in 1..=50 {
            let script = script_for(&run_id(number));
            for (item, call) in script.calls.iter().enumerate() {
                assert!(ACCOUNTS.iter().any(|(id, _)| *id == call.account));
                assert!((500..=5375).contains(&call.amount_cents));
                let arguments = CreditArguments {
                    account: call.account.clone(),
                    amount_cents: call.amount_cents,
                    memo: call.memo.clone(),
                    owner: None,
                };
                assert_eq!(
                    item_of(&script, &arguments.to_arguments().canonical()),
                    Some(item as u32)
                );
            }
        }
        assert_eq!(item_of(&script_for("run-0001"), "{}"), None);
    }

    #[test]
    fn run_ids_that_would_make_odd_keys_are_refused() {
        assert!(validate_run_id("run-0001").is_ok());
        for bad in [
            "",
            "a:b",
            "a b",
            "ü",
            &"x".repeat(65),
            "foo",
            "run-",
            "run-12a",
            "run-1234567890",
        ] {
            let error = validate_run_id(bad).expect_err(bad).to_string();
            assert!(error.contains("run id"), "{error}");
        }
    }
}
