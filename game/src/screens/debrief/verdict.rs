//! The debrief's verdict column: the verdict as the player's goal reads it, the headline and
//! what happened to the money, what decided this run and the other outcome side by side, the
//! prediction's score, every credit, and the rule of the guard that decided.
//!
//! Colours and glyphs follow the debrief's tone, never the outcome alone: a win is the crew's
//! gold, a loss a cross (never a green tick), a customer owed money a warning whatever held,
//! an unbeatable level held a shield.

use bevy_egui::egui::{self, Color32, RichText};
use twice_world::checker::{Outcome, Verdict};
use twice_world::debrief::{Debrief, LinePart, Tone};
use twice_world::prediction::{GuardScore, Score};
use twice_world::simulator::{Simulation, dollars};
use twice_world::text::counted;

use super::Chosen;
use super::other_run::OtherRun;
use crate::session::Session;
use crate::ui::{self, theme};

/// The glyph and colour of a debrief's tone.
pub(crate) fn tone_look(tone: Tone) -> (&'static str, Color32) {
    match tone {
        Tone::Win => ("💰", theme::CREW),
        Tone::Loss => ("✖", theme::BAD),
        Tone::Held => ("🛡", theme::RUNTIME),
        Tone::Owed => ("⚠", theme::WARN),
    }
}

/// The column, top to bottom.
pub fn draw(ui: &mut egui::Ui, session: &Session, scored: Option<&Score>, other: &OtherRun, chosen: &mut Chosen) {
    let conclusion = session.conclusion.as_ref();
    let verdict = match conclusion.map(|conclusion| &conclusion.verdict) {
        Some(Ok(verdict)) => verdict,
        Some(Err(error)) => {
            ui.label(RichText::new(format!("⚠ The checker could not judge this run: {error}")).color(theme::BAD));
            return;
        }
        None => {
            ui.spinner();
            return;
        }
    };
    match conclusion.and_then(|conclusion| conclusion.debrief.as_ref()) {
        // A short column (the projector's zoom: about 330 points) puts what decided, with its
        // "See it", right under the verdict, the headline's sentence after it: after the money's
        // story it was below the fold, and the room saw neither the deciding guard nor the way
        // to its other run; after the headline's three lines, 04's second "See it" still was.
        Some(told) if ui.clip_rect().height() < DECIDED_FIRST_BELOW => {
            outcome(ui, verdict, told);
            ui.add_space(6.0);
            decided(ui, told, other, chosen, Lines::Deciding);
            ui.add_space(6.0);
            headline_sentence(ui, told);
            story(ui, told);
            decided(ui, told, other, chosen, Lines::NotDeciding);
            if let Some(scored) = scored {
                ui.add_space(6.0);
                prediction(ui, scored);
            }
        }
        Some(told) => {
            outcome(ui, verdict, told);
            headline_sentence(ui, told);
            story(ui, told);
            if let Some(scored) = scored {
                ui.add_space(6.0);
                prediction(ui, scored);
            }
            ui.add_space(8.0);
            decided(ui, told, other, chosen, Lines::All);
        }
        None => {
            ui.label(
                RichText::new(theme::outcome_words(verdict.outcome))
                    .size(30.0)
                    .strong()
                    .color(theme::TEXT),
            );
        }
    }
    ui.add_space(8.0);
    credits(ui, verdict);
    for violation in &verdict.violations {
        ui.label(RichText::new(format!("⚠ broken promise: {}", violation.sentence())).color(theme::BAD));
    }
    if let Some(conclusion) = conclusion {
        if let (Some(as_expected), Some(source)) = (conclusion.as_expected, &session.recipe.tape) {
            let expected = &source.tape.expect;
            let (text, color) = if as_expected {
                (format!("✔ as the tape expects ({})", expected.verdict), theme::GOOD)
            } else {
                (
                    format!("✖ the tape expects {}, this is {}", expected.verdict, verdict.outcome),
                    theme::BAD,
                )
            };
            ui.label(RichText::new(text).color(color));
        }
        if conclusion.finished {
            ui.label(RichText::new("✔ Level finished: saved to your progress.").color(theme::GOOD));
        }
    }
}

/// The column's height (points) under which what decided comes before the money's story.
const DECIDED_FIRST_BELOW: f32 = 480.0;

/// The verdict in the tone's glyph and colour.
fn outcome(ui: &mut egui::Ui, verdict: &Verdict, told: &Debrief) {
    let (glyph, color) = tone_look(told.tone);
    ui.label(
        RichText::new(format!("{glyph} {}", theme::outcome_words(verdict.outcome)))
            .size(30.0)
            .strong()
            .color(color),
    );
}

/// The headline: what the verdict means for the heist, in the tone's colour.
fn headline_sentence(ui: &mut egui::Ui, told: &Debrief) {
    let (_, color) = tone_look(told.tone);
    ui.label(RichText::new(&told.headline).size(theme::HEADING).color(color));
}

/// What happened to the money, and the stars.
fn story(ui: &mut egui::Ui, told: &Debrief) {
    // What happened to the money, from this run: never the win's story on a loss.
    for sentence in &told.diagnosis {
        ui.label(RichText::new(sentence).size(theme::BODY + 0.5));
    }
    if let Some(par) = &told.par {
        let stars = match par.stars() {
            2 => "★★",
            1 => "★☆",
            _ => "☆☆",
        };
        ui.label(
            RichText::new(format!(
                "{stars}  {} in {} phases · par: {} in {} phases",
                counted(u64::from(par.cards), "card", "cards"),
                par.phases,
                counted(u64::from(par.par_cards), "card", "cards"),
                par.par_phases
            ))
            .strong()
            .color(theme::WARN),
        );
    }
}

/// What decided this run, and each guard's line as the world tells it (decided the heist,
/// changed the money, held, not needed), with a button to see a line's other run. The shield
/// and the safe colour only where the line is `holding`: never while a customer is owed.
fn decided(ui: &mut egui::Ui, told: &Debrief, other: &OtherRun, chosen: &mut Chosen, shown: Lines) {
    if shown != Lines::NotDeciding {
        ui.label(RichText::new("What decided this run").strong());
        // Guards' own lines say what they did; anything else that decided is said here.
        if !told.decided_by.told_by_guard_lines() {
            let won = told.tone == Tone::Win;
            ui.label(RichText::new(capitalised(&told.decided_by.told(won))).color(theme::TEXT));
        }
    }
    for line in &told.guard_lines {
        let not_deciding = !line.holding && matches!(line.part, LinePart::NotNeeded | LinePart::CannotSay);
        if (shown == Lines::Deciding && not_deciding) || (shown == Lines::NotDeciding && !not_deciding) {
            continue;
        }
        let (glyph, color, size) = match (line.holding, line.part) {
            (true, _) => ("🛡", theme::GOOD, theme::BODY),
            (false, LinePart::NotNeeded | LinePart::CannotSay) => ("·", theme::TEXT_DIM, theme::SMALL),
            (false, _) => ("⇄", theme::TEXT, theme::BODY),
        };
        ui.horizontal_wrapped(|ui| {
            ui.label(
                RichText::new(format!("{glyph} {}", line.sentence))
                    .color(color)
                    .size(size),
            );
            if let Some(which) = line.what_if {
                see_it(ui, which, other, chosen);
            }
        });
    }
    if shown == Lines::NotDeciding {
        return;
    }
    // Other runs no guard's line offers.
    for (which, what_if) in told.what_if.iter().enumerate() {
        if told.guard_lines.iter().any(|line| line.what_if == Some(which)) {
            continue;
        }
        ui.horizontal_wrapped(|ui| {
            ui.label(RichText::new(format!("⇄ {}", what_if.sentence)).color(theme::VIOLET));
            see_it(ui, which, other, chosen);
        });
    }
}

/// Which of the guards' lines [`decided`] draws: all, or (on a short column) those that
/// decided or held first and the "not needed" ones after the money's story.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lines {
    All,
    Deciding,
    NotDeciding,
}

/// The button that opens (or closes) other run `which` beside this one.
fn see_it(ui: &mut egui::Ui, which: usize, other: &OtherRun, chosen: &mut Chosen) {
    let (label, key) = match (other.shown() == Some(which), which) {
        (true, _) => ("Close it", "O"),
        (false, 0) => ("See it", "O"),
        (false, _) => ("See it", ""),
    };
    if ui::button(ui, true, label, key)
        .on_hover_text("that run's timeline beside this one")
        .clicked()
    {
        chosen.other_run = Some(which);
    }
}

/// The player's prediction, scored: both halves, each right or not.
fn prediction(ui: &mut egui::Ui, scored: &Score) {
    let color = match (scored.verdict_right, &scored.guard) {
        (true, GuardScore::Right | GuardScore::NotNamed) => theme::GOOD,
        (false, GuardScore::Wrong { .. } | GuardScore::NotNamed) => theme::BAD,
        _ => theme::WARN,
    };
    ui.label(
        RichText::new(format!(
            "🔮 Your prediction: {}",
            counted(u64::from(scored.points()), "point", "points")
        ))
        .strong()
        .color(theme::VIOLET),
    );
    ui.label(RichText::new(scored.sentence()).color(color));
}

/// An outcome's colour for the player's goal: the goal reached in the crew's gold, a customer
/// owed money a warning, anything else plain (a credit paid once in a heist is no green tick).
fn goal_color(outcome: Outcome, goal: Outcome) -> Color32 {
    if outcome == goal {
        theme::CREW
    } else if outcome == Outcome::NotPaidButOwed {
        theme::WARN
    } else {
        theme::TEXT
    }
}

/// Every credit Penny meant to issue: owed, landed, and its verdict.
fn credits(ui: &mut egui::Ui, verdict: &Verdict) {
    let goal = verdict.goal;
    ui.label(RichText::new("Every credit Penny meant to issue").strong());
    egui::Grid::new("credits")
        .striped(true)
        .num_columns(5)
        .spacing([12.0, 3.0])
        .show(ui, |ui| {
            for heading in ["intent", "account", "owed", "landed", "verdict"] {
                ui.label(RichText::new(heading).size(theme::SMALL).color(theme::TEXT_DIM));
            }
            ui.end_row();
            for credit in &verdict.credits {
                ui.label(twice_world::text::step_name(&credit.run, credit.item));
                ui.label(&credit.account);
                ui.label(dollars(credit.owed_cents));
                ui.label(format!(
                    "{}, net {}",
                    counted(u64::from(credit.credits_applied), "credit", "credits"),
                    dollars(credit.net_cents)
                ));
                ui.label(
                    RichText::new(format!(
                        "{} {}",
                        theme::outcome_glyph(credit.outcome),
                        theme::outcome_words(credit.outcome)
                    ))
                    .color(goal_color(credit.outcome, goal)),
                );
                ui.end_row();
            }
        });
}

/// The rule this run shows (the deciding guard's, or what decided), the level's story only
/// when the run followed it, and the level's guards as they were in this run.
pub fn lesson(ui: &mut egui::Ui, session: &Session, simulation: &Simulation) {
    let level = &session.recipe.level.level;
    let told = session
        .conclusion
        .as_ref()
        .and_then(|conclusion| conclusion.debrief.as_ref());
    ui.label(
        RichText::new("The rule")
            .size(theme::HEADING)
            .strong()
            .color(theme::RUNTIME),
    );
    let (rule, from) = match told {
        Some(told) => (told.rule.clone(), told.rule_from.words()),
        None => (level.lesson.rule.clone(), "the level's rule".to_owned()),
    };
    ui.label(
        RichText::new(format!("“{rule}”"))
            .italics()
            .size(theme::BODY + 0.5)
            .color(theme::CREW),
    );
    ui::hint(ui, from);
    // The level's story only when it happened: a win on the lesson's path, or why an
    // unbeatable level holds. A loss shows the rule, never the answer.
    if let Some(told) = told.filter(|told| !told.story.is_empty()) {
        ui.add_space(6.0);
        ui.label(RichText::new(&told.story).size(theme::BODY + 0.5));
    }
    ui.add_space(4.0);
    let guards = simulation.guards();
    let owed = told.is_some_and(|told| told.tone == Tone::Owed);
    for guard in &level.lesson.guards {
        // A guard this level teaches but switched off is never drawn as a green shield, nor
        // one that was on in a run that left a customer owed.
        let (glyph, state, color) = if guards.is_on(*guard) && owed {
            ("●", "on", theme::TEXT)
        } else if guards.is_on(*guard) {
            ("🛡", "on", theme::GOOD)
        } else {
            ("✖", "off here", theme::TEXT_DIM)
        };
        ui.label(
            RichText::new(format!(
                "{glyph} {} ({state}) — {}",
                guard.name(),
                twice_world::guards::promise(*guard)
            ))
            .size(theme::SMALL)
            .color(color),
        );
    }
}

fn capitalised(text: &str) -> String {
    let mut characters = text.chars();
    match characters.next() {
        Some(first) => first.to_uppercase().chain(characters).collect(),
        None => String::new(),
    }
}
