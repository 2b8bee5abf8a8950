//! The billing world's tools as the runtime sees them: a thin adapter. The runtime takes any
//! tool with any JSON arguments; the billing world's `issue_credit` (and its compensation
//! `void_credit`), `lookup_balance`, and the customer-facing `send_email`, `change_owner` and
//! `delete_record` are one set of such tools — the seed's four side effects, each with the
//! operation its table names. This file says what their arguments are and which of the world's
//! operations a declared tool runs, so the rest of the world reads typed calls while the runtime
//! stores canonical JSON.

use serde::{Deserialize, Serialize};

use crate::runtime::run::{Arguments, ToolCall};
use crate::runtime::tool::{SideEffect, ToolDeclaration};

/// What the billing world does when one of its tools runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    /// Credit an account (`issue_credit`).
    Credit,
    /// Read an account's balance (`lookup_balance`).
    LookupBalance,
    /// Send the account's owner an email (`send_email`): it lands in their outbox, and an
    /// email once sent cannot be taken back.
    SendEmail,
    /// Set the account's owner (`change_owner`): a write that replaces whatever is there.
    ChangeOwner,
    /// Delete the account's record (`delete_record`): a second delete finds nothing.
    DeleteRecord,
}

impl Operation {
    /// Every operation the world has.
    pub const ALL: [Operation; 5] = [
        Operation::Credit,
        Operation::LookupBalance,
        Operation::SendEmail,
        Operation::ChangeOwner,
        Operation::DeleteRecord,
    ];

    /// The name a level writes (`operation: credit`).
    pub fn name(self) -> &'static str {
        match self {
            Operation::Credit => "credit",
            Operation::LookupBalance => "lookup_balance",
            Operation::SendEmail => "send_email",
            Operation::ChangeOwner => "change_owner",
            Operation::DeleteRecord => "delete_record",
        }
    }

    /// The side effect the seed's table gives this operation: what an honest declaration of a
    /// tool that runs it says (a lookup is a read, an owner change a write, a credit or an email
    /// external, a delete destructive).
    pub fn side_effect(self) -> SideEffect {
        match self {
            Operation::LookupBalance => SideEffect::Read,
            Operation::ChangeOwner => SideEffect::Write,
            Operation::Credit | Operation::SendEmail => SideEffect::External,
            Operation::DeleteRecord => SideEffect::Destructive,
        }
    }

    /// Whether the world can look this operation's effect up by key (a reconcile hook) and
    /// undo it (a compensation): only credits. An email is not unsent; an owner change or a
    /// delete carries no key the world stores.
    pub fn has_lookup(self) -> bool {
        self == Operation::Credit
    }

    /// What is wrong with a tool's declaration for its operation, in words: a side effect the
    /// operation does not have (a `delete_record` declared `read` would be retried as a read),
    /// or a hook the world cannot serve. `None` when it is honest, or names no operation
    /// ([`Operation::problem`] says that).
    pub fn declaration_problem(tool: &ToolDeclaration) -> Option<String> {
        let operation = Operation::of(tool)?;
        if tool.side_effect != operation.side_effect() {
            return Some(format!(
                "tool `{}` runs `{}`, which is {}, but is declared side_effect: {}",
                tool.name,
                operation.name(),
                operation.side_effect().name(),
                tool.side_effect.name()
            ));
        }
        if !operation.has_lookup() && (tool.reconcile || tool.compensation) {
            return Some(format!(
                "tool `{}` runs `{}`, which the world cannot look up by key or undo: it takes no reconcile or \
                 compensation",
                tool.name,
                operation.name()
            ));
        }
        None
    }

    /// The operation the tool named `tool` runs among `tools` (a level's declarations).
    pub fn of_tool(tools: &[ToolDeclaration], tool: &str) -> Option<Operation> {
        tools
            .iter()
            .find(|declared| declared.name == tool)
            .and_then(Operation::of)
    }

    /// What a call of this operation asks for, in the player's words, as the task list and the
    /// wire draw it: a credit names its amount, a lookup is a lookup (it moves no money, so it
    /// carries no amount to draw), and the others name what they do to `account`.
    pub fn asks(self, arguments: &CreditArguments) -> String {
        let account = &arguments.account;
        match self {
            Operation::Credit => format!(
                "{} to {account}",
                crate::text::dollars(i64::from(arguments.amount_cents))
            ),
            Operation::LookupBalance => format!("look up {account}'s balance (no money moves)"),
            Operation::SendEmail => format!("an email \"{}\" to {account}", arguments.memo),
            Operation::ChangeOwner => match &arguments.owner {
                Some(owner) => format!("make {owner} the owner of {account}"),
                None => format!("change the owner of {account}"),
            },
            Operation::DeleteRecord => format!("delete {account}'s record"),
        }
    }

    /// The operation a declared tool runs; `None` when it names none billing has (a level
    /// refuses such a tool when it loads, see [`Operation::problem`]).
    pub fn of(tool: &ToolDeclaration) -> Option<Operation> {
        let name = tool.operation.as_deref()?;
        Operation::ALL.into_iter().find(|operation| operation.name() == name)
    }

    /// What is wrong with a tool's operation for the billing world, in words.
    pub fn problem(tool: &ToolDeclaration) -> Option<String> {
        if Operation::of(tool).is_some() {
            return None;
        }
        let names: Vec<&str> = Operation::ALL.into_iter().map(Operation::name).collect();
        Some(match &tool.operation {
            None => format!(
                "tool `{}` names no operation; billing has {}",
                tool.name,
                names.join(", ")
            ),
            Some(other) => format!(
                "tool `{}` names operation `{other}`; billing has {}",
                tool.name,
                names.join(", ")
            ),
        })
    }

    /// True when `tool` is declared with this operation.
    pub fn is_of(self, tool: &ToolDeclaration) -> bool {
        Operation::of(tool) == Some(self)
    }
}

/// The arguments of every world tool: an account, an amount, a memo, and for an owner change
/// the new owner. Serialized in this field order, which is also the canonical (sorted) order,
/// and `owner` only when there is one, so the ledger's text and the keys of every stored tape
/// are what they were when the first three were the runtime's own fields.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreditArguments {
    /// The account credited, looked up, emailed, changed or deleted.
    pub account: String,
    /// The amount in cents (0 for anything but a credit).
    pub amount_cents: u32,
    /// The memo on the credit; an email's subject; why a record is changed or deleted.
    pub memo: String,
    /// The account's new owner (`change_owner` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// A call's arguments that do not fit a billing tool.
#[derive(Debug, thiserror::Error)]
#[error("the arguments {canonical} are not a billing tool's: {source}")]
pub struct NotBillingArguments {
    /// The arguments, as the ledger stores them.
    pub canonical: String,
    #[source]
    pub source: serde_json::Error,
}

impl CreditArguments {
    /// As the runtime's arguments.
    pub fn to_arguments(&self) -> Arguments {
        Arguments::from_typed(self).expect("credit arguments serialize")
    }

    /// Read from a call's arguments; the error says what does not fit a billing tool.
    pub fn from_arguments(arguments: &Arguments) -> Result<CreditArguments, NotBillingArguments> {
        arguments.to_typed().map_err(|source| NotBillingArguments {
            canonical: arguments.canonical(),
            source,
        })
    }

    /// Read from a call the world's own model made. Its model builds every call from the
    /// level's script, so arguments that do not fit are a bug here, not an input to refuse.
    pub fn of_call(call: &ToolCall) -> CreditArguments {
        CreditArguments::from_arguments(&call.arguments)
            .unwrap_or_else(|problem| panic!("call {} of tool `{}`: {problem}", call.id, call.tool))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credit_arguments_keep_the_canonical_text_the_ledger_stored_before() {
        let arguments = CreditArguments {
            account: "acct_ada".into(),
            amount_cents: 2500,
            memo: "Refund".into(),
            owner: None,
        };
        assert_eq!(
            arguments.to_arguments().canonical(),
            r#"{"account":"acct_ada","amount_cents":2500,"memo":"Refund"}"#
        );
        assert_eq!(
            CreditArguments::from_arguments(&arguments.to_arguments()).expect("a credit's arguments"),
            arguments
        );
        let other = Arguments::new(serde_json::json!({"to": "ada@example.com"}));
        let problem = CreditArguments::from_arguments(&other)
            .expect_err("an email is not a credit")
            .to_string();
        assert!(
            problem.contains("ada@example.com") && problem.contains("account"),
            "{problem}"
        );
    }

    #[test]
    fn an_operation_billing_does_not_have_is_named() {
        let tool = ToolDeclaration::new("send_email", crate::runtime::tool::SideEffect::External)
            .with_operation("email")
            .with_reconcile();
        assert_eq!(Operation::of(&tool), None);
        let problem = Operation::problem(&tool).expect("billing has no email");
        assert!(
            problem.contains("send_email") && problem.contains("`email`"),
            "{problem}"
        );
        let credit = tool.with_operation("credit");
        assert!(Operation::Credit.is_of(&credit));
        assert_eq!(Operation::problem(&credit), None);
    }

    #[test]
    fn a_lookup_is_drawn_as_a_lookup_and_a_credit_with_its_amount() {
        let arguments = CreditArguments {
            account: "acct_ada".into(),
            amount_cents: 0,
            memo: String::new(),
            owner: None,
        };
        let lookup = Operation::LookupBalance.asks(&arguments);
        assert!(lookup.contains("look up acct_ada") && !lookup.contains('$'), "{lookup}");
        let credit = CreditArguments {
            amount_cents: 2500,
            ..arguments
        };
        assert_eq!(Operation::Credit.asks(&credit), "$25.00 to acct_ada");
    }
}
