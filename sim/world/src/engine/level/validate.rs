//! The checks serde cannot make: references, limits, amounts, and a tape against its level.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::{
    ACTIONS_MAX, AUDIT_AT_MS_MAX, CALLS_PER_RUN_MAX, CardKind, HONEST_CHECK_MS_MAX, Level, OWNER_CHANGE_AT_MS_MAX,
    OWNER_CHANGES_MAX, PHASES_MAX, RUNS_MAX, Tape, TimedAction,
};
use crate::billing_tools::Operation;
use crate::error::InputError;
use crate::runtime::tool::ToolDeclaration;
use crate::runtime::worker::Phase;

fn is_identifier(text: &str) -> bool {
    !text.is_empty() && text.len() <= 64 && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Where a level's problems are reported: its file and text, so an error names the line.
struct Source<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Source<'_> {
    /// The problem `message`, placed at the `nth` occurrence of `needle` in the file.
    fn error(&self, needle: &str, nth: usize, message: impl Into<String>) -> InputError {
        InputError::at(self.path, self.text, needle, nth, message)
    }
}

/// Checks what serde cannot: references, limits, amounts.
pub fn validate_level(path: &Path, text: &str, level: &Level) -> Result<(), InputError> {
    let source = Source { path, text };
    check_limits(&source, level)?;
    let accounts = check_accounts(&source, level)?;
    check_owner_changes(&source, level, &accounts)?;
    let tools = check_tools(&source, level)?;
    check_declarable_tools(&source, level, &tools)?;
    check_runs(&source, level, &accounts, &tools)?;
    check_cards(&source, level)?;
    check_honest_operator(&source, level)?;
    check_auditor(&source, level)?;
    // The move hint's own moves are legal moves of this level, as a tape's are.
    if let Some((nth, message)) = actions_problem(&level.hints.move_actions, level) {
        return Err(source.error("at_phase", nth, format!("hints.move_actions: {message}")));
    }
    if level.requires.contains(&level.id) {
        return Err(source.error("requires", 0, "a level cannot require itself"));
    }
    Ok(())
}

/// The level's id, its number of runs and phases, its workflow and its clock.
fn check_limits(source: &Source, level: &Level) -> Result<(), InputError> {
    if !is_identifier(&level.id) {
        return Err(source.error(
            "id",
            0,
            format!("level id `{}` must be 1 to 64 letters, digits, `-` or `_`", level.id),
        ));
    }
    if level.runs.is_empty() || level.runs.len() > RUNS_MAX {
        return Err(source.error(
            "runs",
            0,
            format!("a level has 1 to {RUNS_MAX} runs, this one has {}", level.runs.len()),
        ));
    }
    if level.max_phases == 0 || level.max_phases > PHASES_MAX {
        return Err(source.error(
            "max_phases",
            0,
            format!("max_phases must be 1 to {PHASES_MAX}, not {}", level.max_phases),
        ));
    }
    if let Some(problem) = level.workflow.problem() {
        return Err(source.error("workflow", 0, problem));
    }
    if level.world.timeout_ms == 0 {
        return Err(source.error("timeout_ms", 0, "timeout_ms must be positive"));
    }
    if level.world.slow_response_ms <= level.world.timeout_ms {
        return Err(source.error(
            "slow_response_ms",
            0,
            format!(
                "slow_response_ms ({}) must be more than timeout_ms ({}), or a slowed response is not late",
                level.world.slow_response_ms, level.world.timeout_ms
            ),
        ));
    }
    if let Some(problem) = level.world.billing_terms().problem() {
        let needle = if level.world.billing_key_retention_ms == Some(0) {
            "billing_key_retention_ms"
        } else {
            "billing_lookup_settle_ms"
        };
        return Err(source.error(needle, 0, problem));
    }
    if level.world.recovery_attempts_max == Some(0) {
        return Err(source.error(
            "recovery_attempts_max",
            0,
            "recovery_attempts_max is 0: a run would be dead-lettered before its first recovery",
        ));
    }
    if let Some(phase) = level.world.recovery_crashes_at {
        if level.world.restart_after_crash_ms.is_none() {
            return Err(source.error(
                "recovery_crashes_at",
                0,
                format!(
                    "recovery_crashes_at is \"{phase}\" but restart_after_crash_ms is None: no run is ever \
                     recovered, so no recovery can crash"
                ),
            ));
        }
        if matches!(phase, Phase::Start | Phase::LoadCheckpoint | Phase::Exit) {
            return Err(source.error(
                "recovery_crashes_at",
                0,
                format!(
                    "recovery_crashes_at is \"{phase}\": a recovery must have loaded its checkpoint (which counts it) \
                     before it dies, and a worker that exits has nothing left to crash"
                ),
            ));
        }
    }
    Ok(())
}

/// Each account listed once; returns their ids.
fn check_accounts<'a>(source: &Source, level: &'a Level) -> Result<BTreeSet<&'a str>, InputError> {
    let mut accounts = BTreeSet::new();
    for (index, account) in level.world.accounts.iter().enumerate() {
        if !accounts.insert(account.id.as_str()) {
            return Err(source.error(
                &format!("\"{}\"", account.id),
                1,
                format!("account `{}` is listed twice (account {index})", account.id),
            ));
        }
    }
    Ok(accounts)
}

/// The world's scripted owner changes: each on a known account, to a named owner, by a named
/// someone, at a moment inside the limit. An error points at the change's own field.
fn check_owner_changes(source: &Source, level: &Level, accounts: &BTreeSet<&str>) -> Result<(), InputError> {
    let changes = &level.world.owner_changes;
    if changes.len() > OWNER_CHANGES_MAX {
        return Err(source.error(
            "owner_changes",
            0,
            format!(
                "a world holds at most {OWNER_CHANGES_MAX} owner changes, this one has {}",
                changes.len()
            ),
        ));
    }
    // The nth change's field is the nth occurrence of `field:` after `owner_changes`.
    let field = |name: &str, index: usize, message: String| {
        let anchor = crate::error::locate(source.text, "owner_changes", 0);
        let before = anchor.map_or(0, |(line, column)| occurrences_before(source.text, name, line, column));
        source.error(name, before + index, format!("owner_changes[{index}].{message}"))
    };
    for (index, change) in changes.iter().enumerate() {
        if change.at_ms == 0 || change.at_ms > OWNER_CHANGE_AT_MS_MAX {
            return Err(field(
                "at_ms:",
                index,
                format!("at_ms must be 1 to {OWNER_CHANGE_AT_MS_MAX}, not {}", change.at_ms),
            ));
        }
        if !accounts.contains(change.account.as_str()) {
            return Err(field(
                "account:",
                index,
                format!("account `{}` is not one of the world's accounts", change.account),
            ));
        }
        if change.owner.trim().is_empty() || change.owner.chars().count() > 64 {
            return Err(field(
                "owner:",
                index,
                format!("owner must be a name of 1 to 64 characters, not `{}`", change.owner),
            ));
        }
        if !is_identifier(&change.by) {
            return Err(field(
                "by:",
                index,
                format!(
                    "by `{}` must be 1 to 64 letters, digits, `-` or `_` (who made the change)",
                    change.by
                ),
            ));
        }
    }
    Ok(())
}

/// How many times `needle` occurs (outside comments) before line `line`, column `column`.
fn occurrences_before(text: &str, needle: &str, line: usize, column: usize) -> usize {
    let mut count = 0;
    while let Some(found) = crate::error::locate(text, needle, count) {
        if found >= (line, column) {
            break;
        }
        count += 1;
    }
    count
}

/// Each tool declared once, with attempts and an operation that make sense; returns them by name.
fn check_tools<'a>(source: &Source, level: &'a Level) -> Result<BTreeMap<&'a str, &'a ToolDeclaration>, InputError> {
    let mut tools = BTreeMap::new();
    for tool in &level.tools {
        if tools.insert(tool.name.as_str(), tool).is_some() {
            return Err(source.error(
                &format!("\"{}\"", tool.name),
                1,
                format!("tool `{}` is declared twice", tool.name),
            ));
        }
        if let Some(problem) = tool.attempts_problem() {
            return Err(source.error("attempts", 0, problem));
        }
        if let Some(problem) = tool.terms_problem() {
            let needle = if tool.key_retention_ms == Some(0) {
                "key_retention_ms"
            } else {
                "lookup_settle_ms"
            };
            return Err(source.error(needle, 0, problem));
        }
        if let Some(problem) = Operation::problem(tool) {
            return Err(source.error(&format!("\"{}\"", tool.name), 1, problem));
        }
        // A declaration that lies about its operation's side effect gets the wrong retry rule
        // (a delete declared `read` is retried as a read). A level about that lie lets the
        // player write the declaration (`declarable_tools`), played as a move, not loaded.
        if let Some(problem) = Operation::declaration_problem(tool) {
            return Err(source.error(&format!("name: \"{}\"", tool.name), 0, problem));
        }
    }
    Ok(tools)
}

/// `declarable_tools` names declared tools, each once, and comes with the DeclareTool card.
fn check_declarable_tools(
    source: &Source,
    level: &Level,
    tools: &BTreeMap<&str, &ToolDeclaration>,
) -> Result<(), InputError> {
    let mut declarable = BTreeSet::new();
    for name in &level.declarable_tools {
        if !tools.contains_key(name.as_str()) {
            let known: Vec<&str> = tools.keys().copied().collect();
            return Err(source.error(
                "declarable_tools",
                0,
                format!(
                    "declarable_tools names `{name}`, which the level does not declare; its tools: {}",
                    known.join(", ")
                ),
            ));
        }
        if !declarable.insert(name.as_str()) {
            return Err(source.error("declarable_tools", 0, format!("declarable_tools names `{name}` twice")));
        }
    }
    let deals_declarations = level
        .cards
        .iter()
        .any(|allowance| allowance.card.aims() == crate::cards::Aims::Tool);
    let names_declarable_tools = !level.declarable_tools.is_empty();
    if deals_declarations != names_declarable_tools {
        return Err(source.error(
            if deals_declarations {
                "DeclareTool"
            } else {
                "declarable_tools"
            },
            0,
            "a level that deals the DeclareTool card names the tools it may declare in declarable_tools, and \
             a level with declarable_tools deals the card",
        ));
    }
    Ok(())
}

/// Each run has a unique id and a bounded number of calls, each to a declared tool and an
/// account of the world; a credit moves money.
fn check_runs(
    source: &Source,
    level: &Level,
    accounts: &BTreeSet<&str>,
    tools: &BTreeMap<&str, &ToolDeclaration>,
) -> Result<(), InputError> {
    let mut run_ids = BTreeSet::new();
    let mut call_index = 0;
    for run in &level.runs {
        if !is_identifier(&run.id) || !run_ids.insert(run.id.as_str()) {
            return Err(source.error(
                &format!("\"{}\"", run.id),
                0,
                format!("run id `{}` must be a unique identifier", run.id),
            ));
        }
        if run.calls.is_empty() || run.calls.len() > CALLS_PER_RUN_MAX {
            return Err(source.error(
                &format!("\"{}\"", run.id),
                0,
                format!("run `{}` must make 1 to {CALLS_PER_RUN_MAX} calls", run.id),
            ));
        }
        if let Some(problem) = run.parallel_problem(&level.model) {
            let nth = level
                .runs
                .iter()
                .take_while(|earlier| earlier.id != run.id)
                .filter(|earlier| earlier.parallel)
                .count();
            return Err(source.error("parallel:", nth, format!("run `{}`: {problem}", run.id)));
        }
        for call in &run.calls {
            let Some(tool) = tools.get(call.tool.as_str()) else {
                let known: Vec<&str> = tools.keys().copied().collect();
                return Err(source.error(
                    "tool:",
                    call_index,
                    format!(
                        "run `{}` calls undeclared tool `{}`; declared: {}",
                        run.id,
                        call.tool,
                        known.join(", ")
                    ),
                ));
            };
            if !accounts.contains(call.account.as_str()) {
                return Err(source.error(
                    "account:",
                    call_index,
                    format!(
                        "run `{}` names account `{}`, which the world does not have",
                        run.id, call.account
                    ),
                ));
            }
            if Operation::Credit.is_of(tool) && call.amount_cents == 0 {
                return Err(source.error("amount_cents", call_index, "a credit's amount_cents must be positive"));
            }
            if let Some(problem) = call_arguments_problem(tool, call) {
                return Err(source.error("tool:", call_index, format!("run `{}`: {problem}", run.id)));
            }
            call_index += 1;
        }
    }
    Ok(())
}

/// What a call's arguments lack or carry that its operation does not take: an owner change
/// names the new owner; only a credit moves money and only an owner change names an owner.
fn call_arguments_problem(tool: &ToolDeclaration, call: &crate::model::ScriptCall) -> Option<String> {
    let operation = Operation::of(tool)?;
    let takes_amount = matches!(operation, Operation::Credit | Operation::LookupBalance);
    if !takes_amount && call.amount_cents != 0 {
        return Some(format!(
            "`{}` runs `{}`, which moves no money: leave out amount_cents",
            call.tool,
            operation.name()
        ));
    }
    match (operation == Operation::ChangeOwner, &call.owner) {
        (true, None) => Some(format!(
            "`{}` changes an owner: the call names the new owner (owner: \"…\")",
            call.tool
        )),
        (true, Some(owner)) if owner.trim().is_empty() => Some(format!("`{}`'s owner is empty", call.tool)),
        (false, Some(_)) => Some(format!(
            "`{}` runs `{}`, which takes no owner: leave out owner",
            call.tool,
            operation.name()
        )),
        _ => None,
    }
}

/// Each card in the hand once, 1 to 99 of it.
fn check_cards(source: &Source, level: &Level) -> Result<(), InputError> {
    let mut kinds = BTreeSet::new();
    for (index, allowance) in level.cards.iter().enumerate() {
        if !kinds.insert(allowance.card) {
            return Err(source.error(
                "card:",
                index,
                format!("card {} is listed twice", allowance.card.name()),
            ));
        }
        if allowance.count == 0 || allowance.count > 99 {
            return Err(source.error(
                "count",
                index,
                format!("a card's count must be 1 to 99, not {}", allowance.count),
            ));
        }
    }
    Ok(())
}

/// The scripted operator's id and their delay.
fn check_honest_operator(source: &Source, level: &Level) -> Result<(), InputError> {
    let Some(honest) = &level.honest_operator else {
        return Ok(());
    };
    if !is_identifier(&honest.name) {
        return Err(source.error(
            "honest_operator",
            0,
            format!(
                "the honest operator's name `{}` must be 1 to 64 letters, digits, `-` or `_`",
                honest.name
            ),
        ));
    }
    if honest.checks_after_ms == 0 || honest.checks_after_ms > HONEST_CHECK_MS_MAX {
        return Err(source.error(
            "checks_after_ms",
            0,
            format!(
                "checks_after_ms must be 1 to {HONEST_CHECK_MS_MAX}, not {}",
                honest.checks_after_ms
            ),
        ));
    }
    Ok(())
}

/// The scripted auditor's id, their moment, and a name no other operator of the level uses.
fn check_auditor(source: &Source, level: &Level) -> Result<(), InputError> {
    let Some(auditor) = &level.auditor else {
        return Ok(());
    };
    if !is_identifier(&auditor.name) {
        return Err(source.error(
            "auditor",
            0,
            format!(
                "the auditor's name `{}` must be 1 to 64 letters, digits, `-` or `_`",
                auditor.name
            ),
        ));
    }
    if level
        .honest_operator
        .as_ref()
        .is_some_and(|honest| honest.name == auditor.name)
    {
        return Err(source.error(
            "auditor",
            0,
            format!(
                "the auditor `{}` has the honest operator's name: give each scripted operator their own",
                auditor.name
            ),
        ));
    }
    if auditor.audits_at_ms == 0 || auditor.audits_at_ms > AUDIT_AT_MS_MAX {
        return Err(source.error(
            "audits_at_ms",
            0,
            format!(
                "audits_at_ms must be 1 to {AUDIT_AT_MS_MAX}, not {}",
                auditor.audits_at_ms
            ),
        ));
    }
    if !level.tools.iter().any(|tool| tool.compensation) {
        return Err(source.error(
            "auditor",
            0,
            "an auditor compensates doubles through a tool's compensation, and no tool here declares one",
        ));
    }
    Ok(())
}

/// Checks a tape against its level: cards allowed, counts, phases, references.
pub fn validate_tape(path: &Path, text: &str, tape: &Tape, level: &Level) -> Result<(), InputError> {
    if let Some((nth, message)) = actions_problem(&tape.actions, level) {
        return Err(InputError::at(path, text, "at_phase", nth, message));
    }
    // The money a tape expects is a customer's: a name no account has would never be paid.
    for customer in tape.expect.paid_cents.keys() {
        if !level.world.accounts.iter().any(|account| &account.owner == customer) {
            let owners: Vec<&str> = level
                .world
                .accounts
                .iter()
                .map(|account| account.owner.as_str())
                .collect();
            let needle = format!("\"{customer}\"");
            let before = text.find("expect:").map_or(0, |at| text[..at].matches(&needle).count());
            return Err(InputError::at(
                path,
                text,
                &needle,
                before,
                format!(
                    "paid_cents names {customer}, who holds no account in level `{}` (its customers: {})",
                    level.id,
                    owners.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// What is wrong with moves (a tape's, a hint's) in `level`, with the index of the first move
/// that has the problem: cards not in hand or played too often, phases out of order or past
/// the level's end, runs it does not have, and each card's own problems.
pub fn actions_problem(actions: &[TimedAction], level: &Level) -> Option<(usize, String)> {
    if actions.len() > ACTIONS_MAX {
        return Some((ACTIONS_MAX, format!("a tape holds at most {ACTIONS_MAX} actions")));
    }
    let allowed: BTreeMap<CardKind, u32> = level
        .cards
        .iter()
        .map(|allowance| (allowance.card, allowance.count))
        .collect();
    let mut used: BTreeMap<CardKind, u32> = BTreeMap::new();
    let mut previous_phase = 0;
    for (index, action) in actions.iter().enumerate() {
        let card = action.play.card();
        let Some(count) = allowed.get(&card) else {
            let hand: Vec<&str> = allowed.keys().map(|card| card.name()).collect();
            return Some((
                index,
                format!(
                    "card {} is not in level `{}`'s hand (the hand: {})",
                    card.name(),
                    level.id,
                    if hand.is_empty() {
                        "no cards".into()
                    } else {
                        hand.join(", ")
                    }
                ),
            ));
        };
        let used_now = used.entry(card).or_default();
        *used_now += 1;
        if *used_now > *count {
            return Some((
                index,
                format!(
                    "card {} played {} times; the level gives {count}",
                    card.name(),
                    used_now
                ),
            ));
        }
        if action.at_phase > level.max_phases {
            return Some((
                index,
                format!(
                    "action at phase {} is after the level's end (max_phases {})",
                    action.at_phase, level.max_phases
                ),
            ));
        }
        if action.at_phase < previous_phase {
            return Some((
                index,
                format!(
                    "actions must be in phase order; {} comes after {previous_phase}",
                    action.at_phase
                ),
            ));
        }
        previous_phase = action.at_phase;
        if let Some(run) = action.play.run()
            && !level.runs.iter().any(|script| script.id == run)
        {
            return Some((index, format!("no run `{run}` in level `{}`", level.id)));
        }
        if let Some(problem) = action.play.problem(level) {
            return Some((index, problem));
        }
    }
    None
}
