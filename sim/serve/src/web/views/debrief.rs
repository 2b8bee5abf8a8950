//! The debrief: the verdict of a run, what it means for progress, and the lesson.

use serde::Serialize;

use super::super::game::{Conclusion, Game, Mode};
use super::super::levels::Catalogue;
use super::{CreditView, KeyLooks, Look, StopView, VerdictView, look, outcome_look};
use twice_world::checker::{Outcome, Verdict, Violation};
use twice_world::debrief::Tone;
use twice_world::level::Level;
use twice_world::simulator::dollars;

/// A credit in words for people: the call's memo, then the step of Penny's script it is, named
/// as the task list and the window name it ("Refund for order #1001 — r1/2").
fn credit_label(level: &Level, run: &str, item: u32) -> String {
    let script = level.runs.iter().find(|script| script.id.as_str() == run);
    let call = script.and_then(|script| script.calls.get(usize::try_from(item).ok()?));
    let place = twice_world::text::step_name(run, item);
    match call {
        Some(call) if !call.memo.trim().is_empty() => format!("{} — {place}", call.memo),
        _ => place,
    }
}

pub(super) fn verdict_view(verdict: &Verdict, level: &Level, looks: &KeyLooks) -> VerdictView {
    VerdictView {
        outcome: outcome_look(verdict.outcome),
        outcome_name: verdict.outcome.name(),
        goal: outcome_look(verdict.goal),
        goal_reached: verdict.goal_reached,
        credits: verdict
            .credits
            .iter()
            .map(|credit| CreditView {
                label: credit_label(level, &credit.run, credit.item),
                owner: level
                    .world
                    .accounts
                    .iter()
                    .find(|account| account.id == credit.account)
                    .map_or_else(|| credit.account.clone(), |account| account.owner.clone()),
                run: credit.run.clone(),
                item: credit.item,
                account: credit.account.clone(),
                owed: dollars(credit.owed_cents),
                credits_applied: credit.credits_applied,
                net: dollars(credit.net_cents),
                keys: credit.keys.iter().map(|key| looks.look(key)).collect(),
                outcome: outcome_look(credit.outcome),
            })
            .collect(),
        stopped_by: verdict
            .stopped_by
            .iter()
            .enumerate()
            .map(|(index, guard)| StopView {
                guard: guard.name(),
                describe: twice_world::guards::promise(*guard),
                what: verdict.stops.get(index).cloned(),
            })
            .collect(),
        violations: verdict.violations.iter().map(Violation::sentence).collect(),
        summary: verdict.summary.clone(),
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct LessonView {
    pub guards: Vec<&'static str>,
    pub rule: String,
    pub text: String,
    pub debrief: String,
}

/// The debrief: the verdict, what it means for progress, and the lesson.
#[derive(Clone, Debug, Serialize)]
pub struct EndView {
    pub verdict: VerdictView,
    /// The verdict as the player's goal reads it (the window's headline): a win in the crew's
    /// ★, a loss a ✖ (never the money's green ✔: a lost heist that paid once is no win), an
    /// unbeatable level that held a 🛡, a customer owed money a ⚠ — with the outcome's words.
    pub headline: Look,
    /// The goal was reached (a level that cannot be beaten is finished by its defence).
    pub finished: bool,
    /// The play counts for progress and the scoreboard (a campaign play, not a sandbox).
    pub counted: bool,
    pub cards: u32,
    pub phases: u32,
    pub lesson: LessonView,
    /// The debrief drawn from the run: headline, diagnosis, the story only when it happened, par.
    pub debrief: twice_world::debrief::Debrief,
    /// What decided the run, and the rule line that goes with it (the counterfactual's answer).
    pub decided: DecidedView,
    /// The next level in level-select order, by stem.
    pub next: Option<String>,
    /// The lines of the guards that decided, and the fix as a diff (filled by the level
    /// screen, which holds the simulation: [`super::debrief_code`]).
    pub code: Option<super::DebriefCodeView>,
    /// "Take it home": the run's project to download, or why it cannot be exported.
    pub take_home: super::super::take_home::TakeHomeView,
}

/// What decided a run, as the browser shows it: the world's guard lines (the game draws the
/// same list), else what the run's events name; the rule line for it; the other runs.
#[derive(Clone, Debug, Serialize)]
pub struct DecidedView {
    /// Each guard's line, in the world's words, with whether it may be drawn as holding.
    pub lines: Vec<twice_world::debrief::GuardLine>,
    /// When no guard decided: what did, in words ("op-crew's decision on r1:c1 (failed), not a guard").
    pub otherwise: Option<String>,
    /// The rule line: the deciding guard's own, else what decided it, else the level's.
    pub rule: String,
    /// Each other run in words ("With writes retried after a timeout, in this same run Ada is
    /// paid $50.00 of $25.00 owed: the heist works."); a line's `what_if` indexes it.
    pub what_if: Vec<String>,
    /// win, loss, held or owed: the look of the page follows the player's goal.
    pub tone: twice_world::debrief::Tone,
}

fn decided_view(told: &twice_world::debrief::Debrief) -> DecidedView {
    let by_guards = told.decided_by.told_by_guard_lines();
    DecidedView {
        lines: told.guard_lines.clone(),
        otherwise: (!by_guards).then(|| told.decided_by.told(told.tone == twice_world::debrief::Tone::Win)),
        rule: told.rule.clone(),
        what_if: told.what_if.iter().map(|what_if| what_if.sentence.clone()).collect(),
        tone: told.tone,
    }
}

/// The debrief's tone drawn as the window draws it (`tone_look` in the game; a win's ★ where
/// the window has 💰), with `outcome`'s words.
pub fn headline_look(tone: Tone, outcome: Outcome) -> Look {
    match tone {
        // The banner's star ("★ the heist worked"): a browser without an emoji font drew the
        // window's 💰 as an empty box.
        Tone::Win => look("★", outcome.words(), "crew"),
        Tone::Loss => look("✖", outcome.words(), "bad"),
        Tone::Held => look("🛡", outcome.words(), "runtime"),
        Tone::Owed => look("⚠", outcome.words(), "warn"),
    }
}

/// `played`: the simulation's moves (the caller holds the simulation's lock).
pub(super) fn end_view(
    game: &Game,
    played: &[twice_world::level::TimedAction],
    conclusion: &Conclusion,
    catalogue: &Catalogue,
    looks: &KeyLooks,
) -> EndView {
    let level = game.level();
    EndView {
        verdict: verdict_view(&conclusion.verdict, level, looks),
        headline: headline_look(conclusion.debrief.tone, conclusion.verdict.outcome),
        finished: conclusion.finished,
        counted: game.mode == Mode::Campaign,
        cards: conclusion.cards,
        phases: conclusion.phases,
        lesson: LessonView {
            // In the player's words ("the write retry rule"): the page says "About: …" with them.
            guards: level
                .lesson
                .guards
                .iter()
                .map(|guard| twice_world::guards::words(*guard))
                .collect(),
            rule: level.lesson.rule.clone(),
            text: level.lesson.text.clone(),
            debrief: level.debrief.clone(),
        },
        decided: decided_view(&conclusion.debrief),
        debrief: conclusion.debrief.clone(),
        next: catalogue.next(game.level_index).map(|next| next.stem.clone()),
        code: None,
        take_home: super::super::take_home::view(&game.stem, game.take_home_why_not(played)),
    }
}

/// The name a downloaded tape gets: the level's stem, then the player, so saved beside
/// `levels/` it sits with the level's other tapes (`01-naive-retry.web-ada.tape.ron`).
pub fn tape_file_name(stem: &str, player: &str) -> String {
    let player: String = player
        .chars()
        .map(|character| {
            if character.is_ascii_alphanumeric() {
                character.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let player = player.trim_matches('-');
    let player = if player.is_empty() { "player" } else { player };
    format!("{stem}.web-{player}{}", twice_world::campaign::TAPE_SUFFIX)
}
