//! A guard's debrief sentences — it held; it decided the heist; it protected the money; it was
//! not needed — made from its own spec (its words, what it promises, the runtime without it)
//! and from what the run and its re-runs showed (`money`: what happens to each customer, as a
//! clause: "Ada is paid $50.00 of $25.00 owed"). Every guard says these four things the same
//! way, so none can say one that another would not.

use serde::Serialize;

use super::spec;
use crate::runtime::guards::Guard;

/// A guard as it was in this run: its re-run switched it the other way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Switched {
    pub guard: Guard,
    pub was_on: bool,
}

/// The other run's switch, to start a sentence after it: "with writes retried after a
/// timeout" (it was on here), "with the pause on unknown calls on" (it was off). A guard that
/// was on is never named as what the other run had ("without no reflex compensation").
pub fn switched(switch: Switched) -> String {
    let spec = spec(switch.guard);
    if switch.was_on {
        format!("with {}", spec.without)
    } else {
        format!("with {} on", spec.words)
    }
}

/// It held, in this run's words (`detail`: what the runtime noted it did, "the write r1:c2
/// timed out after its request left: recorded indeterminate, not retried").
pub fn held(guard: Guard, detail: &str) -> String {
    let words = spec(guard).words;
    let detail = detail.trim_end_matches('.');
    if detail.to_lowercase().starts_with(words) {
        // "the ledger held started for r1:c1…" already names its guard.
        format!("{}.", capitalised(detail))
    } else {
        format!("{} held: {detail}.", capitalised(words))
    }
}

/// Its switch alone turns the heist: `heist_worked` is this run's, `money` what the re-run paid
/// each customer.
pub fn decided_the_heist(switch: Switched, heist_worked: bool, money: &str) -> String {
    let spec = spec(switch.guard);
    let other = if heist_worked { "fails" } else { "works" };
    match (switch.was_on, heist_worked) {
        (true, false) => format!(
            "{} stopped this heist ({}): {}, {money}, and the heist {other}.",
            capitalised(spec.words),
            spec.promise,
            switched(switch)
        ),
        // On, and the heist relied on it: the guard did its ordinary work, which the crew used.
        (true, true) => format!(
            "This heist relied on {} being on: {}, {money}, and the heist {other}.",
            spec.words,
            switched(switch)
        ),
        (false, true) => format!(
            "{} was off, and that let the heist in: {}, {money}, and the heist {other}.",
            capitalised(spec.words),
            switched(switch)
        ),
        (false, false) => format!(
            "{} was off: {}, {money}, and the heist {other}.",
            capitalised(spec.words),
            switched(switch)
        ),
    }
}

/// How the other run's money compares with this run's, for the customers whose money differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum OtherRun {
    /// Some customer fares worse there and nobody better: the guard as it was kept them right.
    Worse,
    /// Some customer fares better there and nobody worse: the guard as it was cost them.
    Better,
    /// Some better, some worse.
    Mixed,
}

/// Its switch alone leaves the heist as it is but changes what a customer gets: never "not
/// needed". `money` says what changes, customer by customer; `other` which way. A guard that was
/// on and cost a customer (22's contract check refuses the run, so the refund waits) is told as
/// that guard's price, never as if it protected them.
pub fn protected_the_money(switch: Switched, heist_worked: bool, other: OtherRun, money: &str) -> String {
    let spec = spec(switch.guard);
    let still = if heist_worked { "still works" } else { "still fails" };
    match (switch.was_on, other) {
        (true, OtherRun::Worse) => {
            let heist = if heist_worked {
                "the heist works either way"
            } else {
                "not needed to stop this heist"
            };
            format!(
                "{}: {heist} — but {}, {money}.",
                capitalised(spec.words),
                switched(switch)
            )
        }
        (true, OtherRun::Better) => format!(
            "{} cost a customer here, the price of what it promises ({}): {}, the heist {still} and {money}.",
            capitalised(spec.words),
            promised(spec.promise),
            switched(switch)
        ),
        (true, OtherRun::Mixed) => format!(
            "{} changed who gets what: {}, the heist {still} and {money}.",
            capitalised(spec.words),
            switched(switch)
        ),
        (false, _) => format!(
            "{} was off: {}, the heist {still} — but {money}.",
            capitalised(spec.words),
            switched(switch)
        ),
    }
}

/// A promise without its guard's name in front: "the ledger: a started call is never sent again"
/// gives "a started call is never sent again".
fn promised(promise: &str) -> &str {
    promise.split_once(": ").map_or(promise, |(_, what)| what)
}

/// The guards that were on and whose switch alone changes neither the heist nor anyone's
/// money, in one sentence; `None` when there are none. `named` are told by name: those the
/// level's screen names (its lesson, its guards off), so a first-time player meets no name the
/// campaign has not introduced; the `others` of them are counted, as the level screen counts
/// the guards it does not name ("and 14 other guards on here that this level is not about").
pub fn not_needed(named: &[Guard], others: usize) -> Option<String> {
    let counted = |other: &str| {
        let plural = format!("{other}guards");
        crate::text::counted(others as u64, &format!("{other}guard"), &plural)
    };
    let mut words: Vec<String> = named.iter().map(|guard| spec(*guard).words.to_owned()).collect();
    if others > 0 {
        let unnamed = if named.is_empty() {
            counted("")
        } else {
            counted("other ")
        };
        words.push(format!("{unnamed} on here that this level is not about"));
    }
    let each = match words.len() {
        0 => return None,
        1 if named.len() + others == 1 => "it",
        _ => "each",
    };
    let listed = crate::text::and_list(&words);
    Some(format!(
        "Not needed this time: {listed} — switched off alone, {each} leaves the heist and every customer's money as they are."
    ))
}

fn capitalised(text: &str) -> String {
    let mut characters = text.chars();
    match characters.next() {
        Some(first) => first.to_uppercase().chain(characters).collect(),
        None => String::new(),
    }
}
