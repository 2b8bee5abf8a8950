//! The guards, one place each. A guard is a switch of the runtime (`twice_runtime::guards::Guard`,
//! which is only its name and its bit); everything else Twice knows about it lives in its own
//! file here: how the player calls it, the rule it enforces (quoted from the seed, or its own
//! rule with where it comes from), what it promises, the runtime's decision-table rows it
//! changes, the rulebook rows it provides, the words the debrief builds its sentences from, the
//! key that switches it in defender mode, the lines of code it adds or replaces, and when it can
//! change anything in a level at all.
//!
//! Everything that talks about a guard — the debrief, the counterfactual, the rulebook, the
//! defender, predictions, the game and the browser — reads [`spec`]; none matches on the guard
//! itself. Adding a guard is its own file here, one line in [`REGISTRY`], and its level, tapes
//! and tests; the registry's tests hold every guard to having every part.

mod code;
mod hand;
mod rows;
mod sentences;

mod ambiguity_policy;
mod atomic_reservation;
mod checkpoint_version;
mod dead_letter;
mod key_downstream;
mod key_per_call;
mod key_retention;
mod ledger;
mod lookup_settle;
mod no_lease_expiry;
mod no_reflex_compensation;
mod pause_on_indeterminate;
mod reconcile_hook;
mod refusal_is_failed;
mod tool_contract;
mod write_retry_rule;

use serde::Serialize;

pub use code::{Context, GuardCode, Piece, Slot};
pub use hand::Hand;
pub use rows::{Row, RowId, Table};
pub use sentences::{OtherRun, Switched, decided_the_heist, held, not_needed, protected_the_money, switched};

use crate::level::Level;
use crate::runtime::guards::Guard;

/// Where a guard's rule comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Origin {
    /// The seed (`side-effects-once`): every excerpt of the quote is the seed's own words.
    Seed,
    /// A policy beyond the seed: the rule is Twice's own words, and `source` says where the
    /// policy comes from.
    Beyond { source: &'static str },
}

/// The rule a guard enforces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// Excerpts, in order: verbatim from the seed when [`Origin::Seed`] (they are shown joined
    /// by " … " where they were apart in it).
    pub quote: &'static [&'static str],
    pub origin: Origin,
}

impl Rule {
    /// The rule as one line: its excerpts joined.
    pub fn text(&self) -> String {
        self.quote.join(" … ")
    }

    /// Where it comes from, for the line under it: "the seed" or the policy's source.
    pub fn source(&self) -> &'static str {
        match self.origin {
            Origin::Seed => "the seed, side-effects-once",
            Origin::Beyond { source } => source,
        }
    }
}

/// A row of the runtime's decision logic the guard changes: which table, the function in
/// `twice-runtime` that decides it (`rules::outcome_action`), and the row in words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct DecisionRow {
    /// "Table 2 — outcome", or "Start" for the check before a run.
    pub table: &'static str,
    /// The deciding function, as `module::function` in the runtime crate.
    pub function: &'static str,
    /// What the guard changes in it.
    pub row: &'static str,
}

/// Everything about one guard.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct GuardSpec {
    pub guard: Guard,
    /// How the player calls it: "the write retry rule".
    pub words: &'static str,
    /// What it does, in the player's words (the lobby, the defender's choice, a debrief): true
    /// of any run it is on in.
    pub promise: &'static str,
    /// The runtime without it, to follow "With ": "writes retried after a timeout". Never the
    /// guard's own name with a "no" or a "without" in front.
    pub without: &'static str,
    pub rule: Rule,
    pub decision_rows: &'static [DecisionRow],
    /// The rows of the rulebook it provides (live with it on) or leaves (live with it off).
    pub rulebook_rows: &'static [Row],
    /// The key that switches it in defender mode and the sandbox (an `egui::Key` name).
    pub defender_key: &'static str,
    /// Its lines in the runtime's loop on screen, on and off, and when a level shows them.
    #[serde(skip)]
    pub code: GuardCode,
    /// Words that name it in a sentence a player reads: its words in full and the shortest name
    /// players use for it ("write retry rule", "retry rule"). The campaign reads a defended
    /// level's texts for them, so no hint hands the defence over.
    pub mentions: &'static [&'static str],
    /// Whether something `level` can do — its cards, model, tools and people ([`Hand`]) — can
    /// put the guard to the test: predictions offer a guard left on only then.
    #[serde(skip)]
    pub tested_by: fn(&Hand) -> bool,
    /// Whether switching it can change anything in `level` (its tools, terms and limits):
    /// `false` only when it provably cannot, so a search may leave it out and a re-run with it
    /// switched is this run again.
    #[serde(skip)]
    pub matters_in: fn(&Level) -> bool,
}

/// Every guard's spec, in [`Guard::EVERY`] order (a test holds the order).
pub const REGISTRY: [&GuardSpec; Guard::EVERY.len()] = [
    &write_retry_rule::SPEC,
    &tool_contract::SPEC,
    &pause_on_indeterminate::SPEC,
    &ambiguity_policy::SPEC,
    &ledger::SPEC,
    &atomic_reservation::SPEC,
    &key_downstream::SPEC,
    &checkpoint_version::SPEC,
    &reconcile_hook::SPEC,
    &key_per_call::SPEC,
    &no_lease_expiry::SPEC,
    &no_reflex_compensation::SPEC,
    &refusal_is_failed::SPEC,
    &key_retention::SPEC,
    &lookup_settle::SPEC,
    &dead_letter::SPEC,
];

/// The spec of `guard`.
pub fn spec(guard: Guard) -> &'static GuardSpec {
    let found = REGISTRY[Guard::EVERY
        .iter()
        .position(|known| *known == guard)
        .expect("Guard::EVERY lists every guard")];
    debug_assert_eq!(found.guard, guard, "the registry is in Guard::EVERY order");
    found
}

/// How the player calls `guard`: "the write retry rule".
pub fn words(guard: Guard) -> &'static str {
    spec(guard).words
}

/// A timeline's guard row as a player reads it: the guard in words ("the tool contract check
/// held"), never its identifier.
pub fn row_words(row: &crate::checker::GuardRow) -> String {
    row.told_as(words(row.guard))
}

/// What `guard` does, in the player's words.
pub fn promise(guard: Guard) -> &'static str {
    spec(guard).promise
}

/// The rule `guard` enforces, as one line.
pub fn rule(guard: Guard) -> String {
    spec(guard).rule.text()
}

/// The key that switches `guard` in defender mode and the sandbox.
pub fn defender_key(guard: Guard) -> &'static str {
    spec(guard).defender_key
}

/// The guard the key `key` switches, if any.
pub fn guard_for_key(key: &str) -> Option<Guard> {
    REGISTRY
        .iter()
        .find(|spec| spec.defender_key == key)
        .map(|spec| spec.guard)
}

/// The taught guards ([`Guard::ALL`]) whose switch can change anything in `level`, in teaching
/// order: the defender's search and the counterfactual leave the others out, exactly.
pub fn that_matter(level: &Level) -> Vec<Guard> {
    Guard::ALL
        .into_iter()
        .filter(|guard| (spec(*guard).matters_in)(level))
        .collect()
}

/// A guard that can change any level.
pub(crate) fn always(_: &Level) -> bool {
    true
}

/// Whether some tool of `level` — as declared, or as the player may declare it — is one a
/// start check could judge: the level lets the player declare tools, or `fails` holds for one.
pub(crate) fn any_tool(level: &Level, fails: impl Fn(&crate::runtime::tool::ToolDeclaration) -> bool) -> bool {
    !level.declarable_tools.is_empty() || level.tools.iter().any(fails)
}

#[cfg(test)]
mod tests;
