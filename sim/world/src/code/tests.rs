use std::path::Path;

use super::*;
use crate::level::load_level;
use crate::runtime::guards::NaiveRefusal;
use crate::runtime::tool::SideEffect;

fn level(name: &str) -> Level {
    load_level(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../levels").join(name))
        .expect("the level loads")
        .level
}

fn codes(program: &Program) -> Vec<String> {
    program.lines.iter().map(|line| line.code.clone()).collect()
}

#[test]
fn every_guard_has_its_code_and_needs_only_others() {
    let level = level("01-naive-retry.level.ron");
    let context = super::Context {
        level: &level,
        guards: level.guards,
    };
    for guard in Guard::EVERY {
        let code = guard_code(guard);
        assert!(!code.needs.contains(&guard), "{guard} needs itself");
        for on in [true, false] {
            assert!(
                !(code.lines)(&context, on).is_empty(),
                "{guard} has no line when on is {on}"
            );
        }
    }
}

#[test]
fn a_guard_off_shows_the_naive_line_it_replaces() {
    let retry = level("01-naive-retry.level.ron");
    let naive = codes(&program(&retry, retry.guards));
    assert!(naive.contains(&"for attempt in range(3):".to_owned()), "{naive:#?}");
    assert!(naive.contains(&"sent = tool.send(call)".to_owned()), "{naive:#?}");
    assert!(naive.contains(&"state.tell(FAILED)".to_owned()), "{naive:#?}");
    let guarded = codes(&program(&retry, Guards::all_on()));
    assert!(guarded.contains(&"for attempt in range(1 if tool.writes else 3):".to_owned()));
    assert!(guarded.contains(&"key = f\"{run_id}:{call.id}\"".to_owned()));
    assert!(guarded.contains(&"record = ledger.reserve(key, call)".to_owned()));
    let hashed = codes(&program(&retry, Guards::all_on().with(Guard::KeyPerCall, false)));
    assert!(hashed.contains(&"key = hash(call.tool, call.arguments)".to_owned()));
    // No ledger: no reservation at all, and nothing the atomic reservation adds.
    let no_ledger = program(&retry, Guards::all_on().with(Guard::Ledger, false));
    assert!(no_ledger.lines_of(Guard::AtomicReservation).is_empty());
    assert_eq!(no_ledger.line_of(Phase::Reserve), None);
    assert!(codes(&no_ledger).contains(&"record = NEW".to_owned()));
}

#[test]
fn every_line_a_guard_adds_is_marked_and_commented_with_it() {
    let vault = level("19-vault.level.ron");
    let program = program(&vault, vault.guards);
    for line in &program.lines {
        match line.guard {
            Some(mark) => {
                let comment = line.comment();
                assert!(comment.starts_with(&format!("# {} {}", mark.glyph(), mark.guard.name())));
                assert!(line.text().ends_with(&comment));
                assert!(line.hover().is_some_and(|hover| hover.contains(mark.guard.name())));
                if line.code.is_empty() {
                    // A line that is only a comment names its guard on screen too.
                    let shown = line.shown();
                    assert!(
                        shown.trim_start().starts_with(&format!("# {}", mark.guard.name())),
                        "{shown}"
                    );
                }
            }
            None => assert!(line.comment().is_empty() && !line.code.is_empty()),
        }
    }
    let text = program.numbered_text();
    assert!(text.starts_with(" 1  def run(run_id):\n"), "{text}");
    assert!(text.contains("# ✔ atomic_reservation: one transaction"), "{text}");
    assert!(program.lines.len() <= PROGRAM_LINES_MAX, "{text}");
}

#[test]
fn the_naive_refusal_shows_which_naive_runtime_it_is() {
    let refusal = level("28-waiting-on-nothing.level.ron");
    let mut guards = refusal.guards;
    assert!(!guards.is_on(Guard::RefusalIsFailed));
    let line = |guards: Guards| {
        let program = program(&refusal, guards);
        program.lines[program.lines_of(Guard::RefusalIsFailed)[0]].code.clone()
    };
    guards = guards.with_naive_refusal(NaiveRefusal::Indeterminate);
    assert_eq!(line(guards), "if sent.not_attempted: answer = TIMEOUT");
    guards = guards.with_naive_refusal(NaiveRefusal::Completed);
    assert_eq!(line(guards), "if sent.not_attempted: answer = COMPLETED");
    assert_eq!(
        line(guards.with(Guard::RefusalIsFailed, true)),
        "if sent.not_attempted: answer = FAILED"
    );
}

#[test]
fn a_guard_the_level_gives_nothing_to_do_shows_no_line() {
    let retry = level("01-naive-retry.level.ron");
    for guard in [
        Guard::DeadLetter,
        Guard::LookupSettle,
        Guard::KeyRetention,
        Guard::RefusalIsFailed,
    ] {
        for on in [true, false] {
            assert!(
                program(&retry, retry.guards.with(guard, on)).lines_of(guard).is_empty(),
                "{guard}"
            );
        }
    }
}

#[test]
fn the_fix_strikes_this_runs_lines_and_adds_the_other_runs() {
    let retry = level("01-naive-retry.level.ron");
    let fix = fix(&retry, retry.guards, &[Guard::WriteRetryRule]);
    let removed: Vec<&str> = fix
        .lines
        .iter()
        .filter(|line| line.change == Change::Removed)
        .map(|line| line.line.code.as_str())
        .collect();
    let added: Vec<&str> = fix
        .lines
        .iter()
        .filter(|line| line.change == Change::Added)
        .map(|line| line.line.code.as_str())
        .collect();
    assert_eq!(removed, ["for attempt in range(3):"]);
    assert_eq!(added, ["for attempt in range(1 if tool.writes else 3):"]);
    let text = fix.text();
    assert!(text.contains("\n-             for attempt in range(3):"), "{text}");
    let excerpt = fix.excerpt(1);
    assert!(matches!(excerpt.first(), Some(Excerpt::Gap { .. })), "{excerpt:#?}");
    let shown = excerpt.iter().filter(|piece| matches!(piece, Excerpt::Line(_))).count();
    assert_eq!(shown, 4, "the two changed lines and one on each side: {excerpt:#?}");
    // Switching a guard back and forth is no change.
    assert!(!super::fix(&retry, retry.guards, &[]).changes_anything());
}

/// The caption over the diff is a whole sentence (a playtester read "The loop with …, against
/// this run's" as cut off): it says which loop is shown and how to read its signs.
#[test]
fn the_fix_caption_is_a_whole_sentence_that_reads_the_signs() {
    let retry = level("01-naive-retry.level.ron");
    let caption = fix(&retry, retry.guards, &[Guard::WriteRetryRule]).caption;
    assert_eq!(
        caption,
        "How the loop changes with the write retry rule on: lines marked - are this run's, \
         lines marked + take their place."
    );
}

#[test]
fn the_tool_is_written_as_declared_with_billings_behaviour_above_it() {
    let retry = level("01-naive-retry.level.ron");
    let text: Vec<String> = tool_code(&retry).into_iter().map(|line| line.text).collect();
    assert_eq!(text[0], "# billing ignores idempotency keys: a repeat pays again");
    assert!(
        text.contains(&"@billing.tool(external(), reconcile=find_credit)".to_owned()),
        "{text:#?}"
    );
    assert!(text.contains(&"    return await billing.credit(account, cents, idempotency_key=key)".to_owned()));
    assert!(text.contains(&"@billing.tool(read())".to_owned()));
    assert!(text.contains(&"async def find_credit(record, context):".to_owned()));
    let terms = level("33-lookup-settle.level.ron");
    let text: Vec<String> = tool_code(&terms).into_iter().map(|line| line.text).collect();
    let settle_ms = terms.tools[0]
        .lookup_settle_ms
        .expect("level 33's credit declares a settle time");
    assert_eq!(settle_ms, 2_000, "the level as this test reads it");
    assert!(text.contains(&"    lookup_settle_ms=2_000,".to_owned()), "{text:#?}");
    assert!(
        text.iter().any(|line| line.starts_with("# billing forgets a key 24 h")),
        "{text:#?}"
    );
    let mut keyless = terms.tools[0].clone();
    keyless.takes_key = false;
    let text: Vec<String> = declaration_code(&keyless).into_iter().map(|line| line.text).collect();
    assert!(
        text.iter().any(|line| line.ends_with("# the key is not passed on")),
        "{text:#?}"
    );
}

#[test]
fn the_tools_code_says_what_this_runtime_does_with_the_declaration() {
    // Level 01 keeps the key back and never asks the hook: its tool still declares both.
    let retry = level("01-naive-retry.level.ron");
    let text: Vec<String> = tool_code_under(&retry, retry.guards)
        .into_iter()
        .map(|line| line.text)
        .collect();
    assert!(
        text.contains(
            &"# the runtime here hands the tool no key (passing the key is off): context.idempotency_key is None"
                .to_owned()
        ),
        "{text:#?}"
    );
    assert!(
        text.contains(&"# the runtime here never calls find_credit (the reconcile hook is off)".to_owned()),
        "{text:#?}"
    );
    // The comment sits under the declaration it qualifies, not among billing's.
    let declared = text
        .iter()
        .position(|line| line.starts_with("@billing.tool(external()"))
        .expect("01 declares its credit");
    let said = text
        .iter()
        .position(|line| line.starts_with("# the runtime here hands"))
        .expect("said above");
    assert!(said > declared, "{text:#?}");
    // With every guard on the runtime keeps each promise: no comment, and `tool_code` is that.
    let every = Guards::all_on();
    let text: Vec<String> = tool_code_under(&retry, every)
        .into_iter()
        .map(|line| line.text)
        .collect();
    assert!(!text.iter().any(|line| line.contains("the runtime here")), "{text:#?}");
    // The ledger off leaves the hook nothing to look up, whatever the hook's own switch.
    let no_ledger = every.with(Guard::Ledger, false);
    assert_eq!(
        runtime_comment(&retry.tools[0], no_ledger),
        vec!["the runtime here never calls find_credit (the ledger is off)".to_owned()]
    );
    // A tool that takes no key and names no hook is promised nothing to keep back.
    let mut plain = retry.tools[0].clone();
    plain.takes_key = false;
    plain.reconcile = false;
    assert!(runtime_comment(&plain, retry.guards).is_empty());
    // The code view both editions draw says it too.
    let simulation = crate::simulator::SimulationBuilder::new(retry.clone(), 1)
        .ledger_store(crate::ledger::LedgerStore::Memory)
        .build()
        .expect("01 simulates");
    let drawn: Vec<String> = view(&simulation).tools.into_iter().map(|line| line.text).collect();
    assert!(
        drawn.iter().any(|line| line.contains("hands the tool no key")),
        "{drawn:#?}"
    );
}

/// A tool declared a read that takes the key passes it on, as the runtime does (it sends a
/// read's key downstream) and as the declaration's summary says; a read that takes none says
/// nothing of a key. A playtest found level 22's panel saying "takes the key" for a read while
/// its code dropped the key line.
#[test]
fn a_read_that_takes_the_key_shows_the_key_line_its_summary_names() {
    let print = level("22-fine-print.level.ron");
    let credit = &print.tools[0];
    let read = credit.declared_as(SideEffect::Read, 3, true);
    let text: Vec<String> = declaration_code(&read).into_iter().map(|line| line.text).collect();
    assert_eq!(read.summary(), "read, 3 attempts, takes the key");
    assert!(
        text.contains(&"    key = context.idempotency_key".to_owned()),
        "{text:#?}"
    );
    assert!(
        text.iter().any(|line| line.ends_with("idempotency_key=key)")),
        "{text:#?}"
    );
    let keyless = credit.declared_as(SideEffect::Read, 3, false);
    let text: Vec<String> = declaration_code(&keyless).into_iter().map(|line| line.text).collect();
    assert_eq!(keyless.summary(), "read, 3 attempts, takes no key");
    assert!(!text.iter().any(|line| line.contains("key")), "{text:#?}");
}
