//! Money in words, customer by customer: what each customer holds against what they are
//! owed, never a sum over several customers labelled with one name.

use crate::checker::{Outcome, Verdict};
use crate::counterfactual::{CustomerMoney, RunResult};
use crate::guards::OtherRun;
use crate::level::Level;
use crate::text::dollars;

/// Each customer's money in `verdict`'s run.
pub(super) fn customers_of(verdict: &Verdict) -> Vec<CustomerMoney> {
    RunResult::of(verdict, 0).customers()
}

pub(super) use crate::text::and_list as listed;

/// What a customer's credits came to, when they did not all come to the same: "1 paid twice,
/// 1 owed". Empty when every credit of theirs came to one outcome (the sum then says it).
fn mixed(customer: &CustomerMoney) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut outcomes = customer.outcomes.clone();
    outcomes.dedup();
    if outcomes.len() < 2 {
        return String::new();
    }
    for outcome in outcomes {
        let count = customer.outcomes.iter().filter(|known| **known == outcome).count();
        let words = match outcome {
            Outcome::PaidTwice => "paid twice",
            Outcome::PaidOnce => "paid once",
            Outcome::NotPaidButOwed => "owed",
            Outcome::UnknownFlagged => "unknown",
            // A credit is never judged by another side effect's outcome; named as it is anyway.
            Outcome::EmailedTwice
            | Outcome::ChangeUndone
            | Outcome::ActedAgain
            | Outcome::NotDone
            | Outcome::DoneOnce => outcome.words(),
        };
        parts.push(format!("{count} {words}"));
    }
    format!(" (its credits: {})", parts.join(", "))
}

/// One customer's money as a clause: "Ada is paid $50.00 of $25.00 owed", "Bob is not paid at
/// all ($0.00 of $40.00 owed)", "Ada holds $0.00 of $25.00 owed, flagged for a person to find out
/// the rest". An unknown is never worded as a good end.
pub(super) fn clause(level: &Level, customer: &CustomerMoney) -> String {
    let name = level.world.owner_of(&customer.account);
    let (net, owed) = (dollars(customer.net_cents), dollars(customer.owed_cents));
    let mixed = mixed(customer);
    let moneyless = |outcome: &Outcome| {
        !matches!(
            outcome,
            Outcome::PaidTwice | Outcome::PaidOnce | Outcome::NotPaidButOwed
        )
    };
    if customer.owed_cents == 0 && customer.net_cents == 0 && customer.outcomes.iter().all(moneyless) {
        // An email, owner change or delete: no money to count, only what came of it.
        let mut words: Vec<String> = customer
            .outcomes
            .iter()
            .map(|outcome| outcome.words().to_owned())
            .collect();
        words.dedup();
        return format!("what Penny did for {name} comes to {}", listed(&words));
    }
    if customer.outcomes.contains(&Outcome::UnknownFlagged) {
        return format!("{name} holds {net} of {owed} owed, flagged for a person to find out the rest{mixed}");
    }
    if customer.net_cents <= 0 && customer.owed_cents > 0 {
        return format!("{name} is not paid at all ({net} of {owed} owed){mixed}");
    }
    format!("{name} is paid {net} of {owed} owed{mixed}")
}

/// The customers of `accounts` (all of `run`'s when it is empty) as clauses, listed.
pub(super) fn clauses(level: &Level, run: &RunResult, accounts: &[String]) -> String {
    let clauses: Vec<String> = run
        .customers()
        .iter()
        .filter(|customer| accounts.is_empty() || accounts.contains(&customer.account))
        .map(|customer| clause(level, customer))
        .collect();
    listed(&clauses)
}

/// What changed for the customers between `this` run and `other`, told of `other`: the
/// customers whose money differs, or every customer when none does.
pub(super) fn changed(level: &Level, this: &RunResult, other: &RunResult) -> String {
    clauses(level, other, &this.changed_accounts(other))
}

/// Every customer's amounts, in the short form: "Ada $25.00 of $25.00 owed",
/// "Ada $25.00 of $25.00, Bob $40.00 of $40.00 owed".
pub(super) fn amounts(level: &Level, customers: &[CustomerMoney]) -> String {
    let parts: Vec<String> = customers
        .iter()
        .map(|customer| {
            format!(
                "{} {} of {}{}",
                level.world.owner_of(&customer.account),
                dollars(customer.net_cents),
                dollars(customer.owed_cents),
                mixed(customer)
            )
        })
        .collect();
    if parts.is_empty() {
        return "nobody anything".to_owned();
    }
    format!("{} owed", parts.join(", "))
}

/// What is owed and unpaid, customer by customer: "Ada is owed $25.00", "Ada is owed $25.00
/// and Bob $40.00". Counted per credit (a refund paid twice does not pay another one owed).
/// `None` when nobody is short.
pub(super) fn shortfall(level: &Level, verdict: &Verdict) -> Option<String> {
    let mut short: Vec<(String, i64)> = Vec::new();
    for credit in &verdict.credits {
        let missing = credit.owed_cents - credit.net_cents.min(credit.owed_cents);
        if missing <= 0 {
            continue;
        }
        let name = level.world.owner_of(&credit.account);
        match short.iter_mut().find(|(known, _)| *known == name) {
            Some((_, cents)) => *cents += missing,
            None => short.push((name, missing)),
        }
    }
    let mut parts = short.iter().map(|(name, cents)| (name, dollars(*cents)));
    let (first, cents) = parts.next()?;
    let mut all = vec![format!("{first} is owed {cents}")];
    all.extend(parts.map(|(name, cents)| format!("{name} {cents}")));
    Some(listed(&all))
}

/// The customers whose credits came to `outcome` in `verdict`, named: "Ada", "Ada and Bob".
pub(super) fn named_with(level: &Level, verdict: &Verdict, outcome: Outcome) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for credit in verdict.credits.iter().filter(|credit| credit.outcome == outcome) {
        let name = level.world.owner_of(&credit.account);
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// How bad a customer's money is: paid once is right, unknown is waiting on a person, owed or
/// paid twice is wrong.
fn badness(customer: &CustomerMoney) -> u8 {
    let worst = |outcome: &Outcome| match outcome {
        Outcome::PaidOnce | Outcome::DoneOnce => 0,
        Outcome::UnknownFlagged => 1,
        Outcome::NotPaidButOwed
        | Outcome::PaidTwice
        | Outcome::EmailedTwice
        | Outcome::ChangeUndone
        | Outcome::ActedAgain
        | Outcome::NotDone => 2,
    };
    let outcome = customer.outcomes.iter().map(worst).max().unwrap_or(0);
    // A sum off by what was owed is wrong, whatever each credit was judged, unless a call of
    // theirs is still unknown (then the sum is not final).
    let off = customer.net_cents != customer.owed_cents && !customer.outcomes.contains(&Outcome::UnknownFlagged);
    if off { 2 } else { outcome }
}

/// Which way `other`'s money differs from `this` run's, for the customers it changes: worse
/// (the guard switched in `other` kept the money right), better (it cost a customer), or both.
pub(super) fn compared(this: &RunResult, other: &RunResult) -> OtherRun {
    let (mine, theirs) = (this.customers(), other.customers());
    let bad = |all: &[CustomerMoney], account: &str| {
        all.iter()
            .find(|customer| customer.account == account)
            .map_or(0, badness)
    };
    let accounts = this.changed_accounts(other);
    let worse = accounts
        .iter()
        .any(|account| bad(&theirs, account) > bad(&mine, account));
    let better = accounts
        .iter()
        .any(|account| bad(&theirs, account) < bad(&mine, account));
    match (worse, better) {
        (true, false) => OtherRun::Worse,
        (false, true) => OtherRun::Better,
        // Amounts changed with no customer's standing changing (both wrong, differently): say
        // only that it changed.
        _ => OtherRun::Mixed,
    }
}
