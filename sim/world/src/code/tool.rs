//! Penny's tools as the level declares them, in the seed's decorator form
//! (`@billing.tool(external(), reconcile=find_credit)`): the side effect, a declared retry
//! policy, whether the key is passed on, the reconcile hook and the compensation, the
//! provider's terms. Above them, billing's behaviour as a comment: whether it honours keys,
//! keeps them in metadata or ignores them, how long it keeps them, how far its lookups lag.
//! A level that lets the player declare a tool shows the declaration as it stands; the game's
//! declaration window previews a draft through [`declaration_code`].

use serde::Serialize;

use crate::billing::KeyHandling;
use crate::billing_tools::Operation;
use crate::level::Level;
use crate::runtime::guards::{Guard, Guards};
use crate::runtime::tool::{SideEffect, ToolDeclaration};
use crate::text::duration_words;

/// The widest a decorator is written on one line, in characters; a longer one puts each
/// argument on its own line.
const DECORATOR_WIDTH_MAX: usize = 64;

/// One line of the tools' code, its indent included.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ToolLine {
    pub text: String,
    /// Only a comment (drawn dim).
    pub comment: bool,
}

impl ToolLine {
    fn code(text: impl Into<String>) -> ToolLine {
        ToolLine {
            text: text.into(),
            comment: false,
        }
    }

    fn comment(text: impl Into<String>) -> ToolLine {
        ToolLine {
            text: format!("# {}", text.into()),
            comment: true,
        }
    }
}

/// Billing's behaviour, as comments: its keys, how long it keeps them, how its lookups lag.
pub fn billing_comment(level: &Level) -> Vec<String> {
    let world = &level.world;
    // A world with no credit tool sends, writes or deletes: its repeats are not payments.
    let pays = level.tools.iter().any(|tool| Operation::Credit.is_of(tool));
    let mut lines = vec![match (world.billing_keys, pays) {
        (KeyHandling::Honour, _) => "billing honours idempotency keys: a repeat gets the first answer".to_owned(),
        (KeyHandling::MetadataOnly, true) => {
            "billing keeps a key in the credit's metadata, unchecked: a repeat pays again".to_owned()
        }
        (KeyHandling::Ignore, true) => "billing ignores idempotency keys: a repeat pays again".to_owned(),
        (KeyHandling::MetadataOnly, false) => {
            "billing keeps a key in the record's metadata, unchecked: a repeat is done again".to_owned()
        }
        (KeyHandling::Ignore, false) => "billing ignores idempotency keys: a repeat is done again".to_owned(),
    }];
    if let Some(retention_ms) = world.billing_key_retention_ms {
        lines.push(format!(
            "billing forgets a key {} after it first saw it",
            duration_words(retention_ms)
        ));
    }
    if let Some(settle_ms) = world.billing_lookup_settle_ms {
        lines.push(format!(
            "billing's lookups by key show a credit only {} after it",
            duration_words(settle_ms)
        ));
    }
    if world.second_node {
        lines.push("a twin runs on a second node, with a ledger of its own".to_owned());
    }
    lines
}

/// The level's tools as code: billing's behaviour, each tool's declaration and body, then
/// the reconcile hooks and compensations they name.
pub fn tool_code(level: &Level) -> Vec<ToolLine> {
    tool_code_under(level, level.guards)
}

/// The level's tools as code under `guards`: [`tool_code`], with a comment under each
/// declaration whose promise this runtime does not keep. A declaration says what the tool can
/// do with a key or a hook; the runtime decides whether it gets the chance. Without the comment
/// a player reads `idempotency_key=key` beside a wire that says "key sent: none".
pub fn tool_code_under(level: &Level, guards: Guards) -> Vec<ToolLine> {
    let mut lines: Vec<ToolLine> = billing_comment(level).into_iter().map(ToolLine::comment).collect();
    for tool in &level.tools {
        lines.extend(declaration_code(tool));
        lines.extend(runtime_comment(tool, guards).into_iter().map(ToolLine::comment));
    }
    let mut hooks_written = Vec::new();
    for tool in &level.tools {
        let names = HookNames::of(tool);
        if tool.reconcile && !hooks_written.contains(&names.find) {
            lines.extend(reconcile_hook(&names));
            hooks_written.push(names.find.clone());
        }
        if tool.compensation && !hooks_written.contains(&names.undo) {
            lines.extend(compensation(&names));
            hooks_written.push(names.undo.clone());
        }
    }
    lines
}

/// The names the tool's world gives things: what a call changes, and the tool's hooks.
struct HookNames {
    /// The billing client's method (`credit`).
    method: String,
    /// The arguments it takes.
    arguments: &'static str,
    find: String,
    undo: String,
}

impl HookNames {
    fn of(tool: &ToolDeclaration) -> HookNames {
        match Operation::of(tool) {
            Some(Operation::Credit) => HookNames {
                method: "credit".into(),
                arguments: "account, cents",
                find: "find_credit".into(),
                undo: "void_credit".into(),
            },
            Some(Operation::LookupBalance) => HookNames {
                method: "balance".into(),
                arguments: "account",
                find: "find_balance".into(),
                undo: "undo_balance".into(),
            },
            Some(Operation::SendEmail) => HookNames {
                method: "send_email".into(),
                arguments: "account, subject",
                find: "find_email".into(),
                undo: "unsend_email".into(),
            },
            Some(Operation::ChangeOwner) => HookNames {
                method: "change_owner".into(),
                arguments: "account, owner",
                find: "find_owner_change".into(),
                undo: "undo_owner_change".into(),
            },
            Some(Operation::DeleteRecord) => HookNames {
                method: "delete_record".into(),
                arguments: "account",
                find: "find_deletion".into(),
                undo: "restore_record".into(),
            },
            None => {
                let name = tool.operation.clone().unwrap_or_else(|| tool.name.to_string());
                HookNames {
                    find: format!("find_{name}"),
                    undo: format!("undo_{name}"),
                    method: name,
                    arguments: "**arguments",
                }
            }
        }
    }
}

/// One tool's declaration and body, as the developer writes it.
pub fn declaration_code(tool: &ToolDeclaration) -> Vec<ToolLine> {
    let names = HookNames::of(tool);
    let mut arguments = vec![format!("{}()", tool.side_effect.name())];
    if let Some(attempts) = tool.attempts {
        arguments.push(format!("attempts={attempts}"));
    }
    if tool.reconcile {
        arguments.push(format!("reconcile={}", names.find));
    }
    if tool.compensation {
        arguments.push(format!("compensation={}", names.undo));
    }
    if let Some(retention_ms) = tool.key_retention_ms {
        arguments.push(format!("key_retention_ms={}", python_int(retention_ms)));
    }
    if let Some(settle_ms) = tool.lookup_settle_ms {
        arguments.push(format!("lookup_settle_ms={}", python_int(settle_ms)));
    }
    let one_line = format!("@billing.tool({})", arguments.join(", "));
    let mut lines = if one_line.chars().count() <= DECORATOR_WIDTH_MAX {
        vec![ToolLine::code(one_line)]
    } else {
        let mut lines = vec![ToolLine::code("@billing.tool(")];
        lines.extend(
            arguments
                .iter()
                .map(|argument| ToolLine::code(format!("    {argument},"))),
        );
        lines.push(ToolLine::code(")"));
        lines
    };
    lines.push(ToolLine::code(format!(
        "async def {}({}, context):",
        tool.name, names.arguments
    )));
    let call = format!("billing.{}({}", names.method, names.arguments);
    // A tool that takes the key passes it on whatever its side effect: the runtime hands a
    // read's key downstream too (`worker::invoke`), and the declaration's summary says "takes
    // the key" for it, so the code never drops the line the declaration asks for.
    if tool.takes_key {
        lines.push(ToolLine::code("    key = context.idempotency_key"));
        lines.push(ToolLine::code(format!("    return await {call}, idempotency_key=key)")));
    } else if tool.side_effect == SideEffect::Read {
        lines.push(ToolLine::code(format!("    return await {call})")));
    } else {
        lines.push(ToolLine::code(format!(
            "    return await {call})  # the key is not passed on"
        )));
    }
    lines
}

/// What the runtime under `guards` does not do with what `tool` declares, one comment line
/// each; empty when it keeps every promise the declaration's code makes.
pub fn runtime_comment(tool: &ToolDeclaration, guards: Guards) -> Vec<String> {
    let mut said = Vec::new();
    // The worker hands the key on exactly when the guard is on and the tool takes it
    // (`worker/call.rs`), whatever the tool's side effect.
    if tool.takes_key && !guards.is_on(Guard::KeyDownstream) {
        said.push(format!(
            "the runtime here hands the tool no key ({} is off): context.idempotency_key is None",
            crate::guards::spec(Guard::KeyDownstream).words
        ));
    }
    if tool.reconcile {
        // The worker asks the hook only with both on (`worker/settle.rs`): the hook looks a
        // call up by the key the ledger recorded.
        let off: Vec<&str> = [Guard::ReconcileHook, Guard::Ledger]
            .into_iter()
            .filter(|guard| !guards.is_on(*guard))
            .map(|guard| crate::guards::spec(guard).words)
            .collect();
        if !off.is_empty() {
            said.push(format!(
                "the runtime here never calls {} ({} {} off)",
                HookNames::of(tool).find,
                crate::text::and_list(&off),
                if off.len() == 1 { "is" } else { "are" }
            ));
        }
    }
    said
}

fn reconcile_hook(names: &HookNames) -> Vec<ToolLine> {
    vec![
        ToolLine::code(format!("async def {}(record, context):", names.find)),
        ToolLine::code(format!(
            "    found = await billing.{}(idempotency_key=record.key)",
            names.find
        )),
        ToolLine::code("    return completed(found) if found else UNKNOWN"),
    ]
}

fn compensation(names: &HookNames) -> Vec<ToolLine> {
    vec![
        ToolLine::comment("run only when an operator asks for it"),
        ToolLine::code(format!("async def {}(record, context):", names.undo)),
        ToolLine::code(format!("    return await billing.{}(record.result)", names.undo)),
    ]
}

/// A number as Python writes a long literal: `86_400_000`.
fn python_int(value: u64) -> String {
    let digits = value.to_string();
    let mut grouped = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            grouped.push('_');
        }
        grouped.push(digit);
    }
    grouped
}

#[cfg(test)]
mod tests {
    use super::python_int;

    #[test]
    fn long_numbers_are_grouped_as_python_writes_them() {
        assert_eq!(python_int(0), "0");
        assert_eq!(python_int(999), "999");
        assert_eq!(python_int(1_500), "1_500");
        assert_eq!(python_int(86_400_000), "86_400_000");
    }
}
