//! Defender mode's screen: the guards as switches (within the budget), the check, and which
//! heists got through or held. Everything it does is a [`DefenceIntent`].

use bevy::prelude::*;
use bevy_egui::egui::{self, RichText};
use bevy_egui::{EguiContexts, EguiPrimaryContextPass};
use twice_world::defend::{self, DefenceReport, HeistResult, HeistStanding};
use twice_world::runtime::guards::Guard;
use twice_world::text::counted;

use super::Screen;
use super::header::Header;
use crate::campaign::Campaign;
use crate::defence::{self, Defence, DefenceIntent};
use crate::progress::Progress;
use crate::screens::level::timeline::{self, TimelineCache};
use crate::session::NextBriefing;
use crate::ui::{self, theme};

pub(super) fn plugin(app: &mut App) {
    app.add_systems(
        EguiPrimaryContextPass,
        draw.run_if(in_state(Screen::Defend)).run_if(resource_exists::<Defence>),
    );
}

fn draw(
    mut contexts: EguiContexts,
    defence: Res<Defence>,
    (campaign, progress): (Res<Campaign>, Res<Progress>),
    mut intents: MessageWriter<DefenceIntent>,
    mut next_screen: ResMut<NextState<Screen>>,
    mut next_briefing: ResMut<NextBriefing>,
    mut counter_cache: Local<TimelineCache>,
) -> Result {
    let context = contexts.ctx_mut()?;
    let (chosen, leave) = frame(context, &defence, (&campaign, &progress), &mut counter_cache);
    if leave {
        // Back to this level on the level select: the level defended, not "next up".
        *next_briefing = NextBriefing {
            index: Some(defence.index),
            ..NextBriefing::default()
        };
        next_screen.set(Screen::LevelSelect);
        return Ok(());
    }
    for intent in chosen {
        intents.write(intent);
    }
    Ok(())
}

/// One frame of defender mode: draws it and returns the player's intents, and whether they
/// leave (the system above acts on both; headless tests read it through [`crate::ui::probe`]).
/// `counter_cache` is the screen's drawing cache for the counter-example's timeline: kept here
/// across frames, not in the defence (the domain holds the run, the screen how it is drawn).
pub fn frame(
    context: &egui::Context,
    defence: &Defence,
    (campaign, progress): (&Campaign, &Progress),
    counter_cache: &mut TimelineCache,
) -> (Vec<DefenceIntent>, bool) {
    let level = &defence.level.level;
    let mut chosen: Vec<DefenceIntent> = Vec::new();
    let mut leave = false;
    let checking = defence.is_checking();

    // Every guard of `Guard::ALL` has its own key (`twice_world::guards`).
    for guard in Guard::ALL {
        let key = defence::guard_key(guard);
        if egui::Key::from_name(key).is_some_and(|key| ui::pressed(context, key)) {
            chosen.push(DefenceIntent::Toggle(guard));
        }
    }
    if ui::pressed(context, egui::Key::Enter) && !checking {
        chosen.push(DefenceIntent::Check);
    }
    if ui::pressed(context, egui::Key::O) && !checking {
        chosen.push(DefenceIntent::ToggleCounterExample);
    }
    if ui::pressed(context, egui::Key::Escape) {
        if checking {
            chosen.push(DefenceIntent::Cancel);
        } else {
            leave = true;
        }
    }

    let mut root = ui::root_ui(context, "defend");
    let title = format!("🛡 Defend · Ch. {} · {}", level.chapter, level.title);
    leave |= Header::new("defend-top", "← Levels", title, theme::RUNTIME).show(
        &mut root,
        |ui| {
            ui.label(RichText::new("DEFENDER").size(theme::SMALL).strong().color(theme::GOOD));
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                let on = defence.on.len();
                let budget = defence.budget();
                ui.label(
                    RichText::new(format!("{on} of {budget} guards on"))
                        .monospace()
                        .strong()
                        .color(if on as u32 >= budget { theme::WARN } else { theme::TEXT }),
                );
            });
        },
        |_| {},
    );

    // The guards' column leaves the results at least half the window (at a projector too).
    let guards_width = (root.available_width() * 0.42).clamp(300.0, 520.0);
    egui::Panel::left("defend-guards")
        .exact_size(guards_width)
        .resizable(false)
        .frame(
            egui::Frame::new()
                .fill(theme::PANEL)
                .inner_margin(egui::Margin::same(12)),
        )
        .show(&mut root, |ui| {
            guard_switches(ui, defence, &mut chosen);
        });

    egui::Panel::bottom("defend-actions")
        .frame(
            egui::Frame::new()
                .fill(theme::PANEL)
                .inner_margin(egui::Margin::symmetric(14, 8)),
        )
        .show(&mut root, |ui| {
            ui.horizontal(|ui| {
                if checking {
                    if ui::button(ui, true, "✖ Cancel the check", "Esc").clicked() {
                        chosen.push(DefenceIntent::Cancel);
                    }
                } else if ui::button(ui, true, "🛡 Check these guards", "Enter").clicked() {
                    chosen.push(DefenceIntent::Check);
                }
                if let Some(notice) = &defence.notice {
                    ui.label(RichText::new(notice).color(theme::WARN));
                } else {
                    let keys: Vec<&str> = Guard::ALL.into_iter().map(defence::guard_key).collect();
                    ui::hint(
                        ui,
                        format!(
                            "{} switch a guard · Enter checks · O opens a counter-example · Esc leaves",
                            keys.join(" ")
                        ),
                    );
                }
            });
        });

    egui::CentralPanel::default()
        .frame(
            egui::Frame::new()
                .fill(theme::BACKGROUND)
                .inner_margin(egui::Margin::same(14)),
        )
        .show(&mut root, |ui| {
            centre(ui, defence, (campaign, progress), counter_cache, &mut chosen);
        });
    (chosen, leave)
}

/// The check's result; with a counter-example open, its run's timeline below it.
fn centre(
    ui: &mut egui::Ui,
    defence: &Defence,
    known: (&Campaign, &Progress),
    counter_cache: &mut TimelineCache,
    chosen: &mut Vec<DefenceIntent>,
) {
    let Some(counter_run) = &defence.counter_run else {
        egui::ScrollArea::vertical().auto_shrink(false).show(ui, |ui| {
            draw_result(ui, defence, known, chosen);
        });
        return;
    };
    // The counter-example open: the check above, its run's timeline below.
    let top = (ui.available_height() * 0.45).max(120.0);
    ui.allocate_ui(egui::vec2(ui.available_width(), top), |ui| {
        egui::ScrollArea::vertical().auto_shrink(false).show(ui, |ui| {
            draw_result(ui, defence, known, chosen);
        });
    });
    ui.horizontal(|ui| {
        ui::key_cap(ui, "O");
        ui.label(
            RichText::new(format!("⇄ The counter-example's run: {}", counter_run.title))
                .strong()
                .color(theme::VIOLET),
        );
    });
    let simulation = counter_run
        .simulation
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // Scans only what is new; a different run (another counter-example) starts it afresh.
    counter_cache.update(&simulation);
    timeline::draw(
        ui,
        simulation.timeline(),
        counter_cache,
        false,
        timeline::RowText::Wrap,
        "defend-counter-timeline",
    );
}

/// One wrapped line for a known heist that fires here: what held or got through, what it did
/// to the money, the tape's title and the level it comes from. A heist from a level the player
/// has not won yet keeps its moves to itself: its title would hand over that level's solution.
fn heist_line(ui: &mut egui::Ui, heist: &HeistResult, (campaign, progress): (&Campaign, &Progress)) {
    let standing = heist.standing();
    let (glyph, color) = match standing {
        HeistStanding::Held => ("✔", theme::GOOD),
        HeistStanding::NoFire => ("○", theme::TEXT_DIM),
        HeistStanding::GotIn => ("✖", theme::BAD),
    };
    let mut what = format!(
        "{} {}",
        theme::outcome_glyph(heist.outcome),
        theme::outcome_words(heist.outcome)
    );
    for violation in &heist.violations {
        what.push_str(&format!(" · ⚠ {}", violation.words()));
    }
    let (title, from) = heist_name(&heist.tape, &heist.title, (campaign, progress));
    ui.horizontal_wrapped(|ui| {
        ui.label(
            RichText::new(format!("{glyph} {}", standing.word()))
                .strong()
                .color(color),
        );
        ui.label(RichText::new(title).color(theme::TEXT));
        ui.label(
            RichText::new(what)
                .size(theme::SMALL)
                .color(theme::outcome_color(heist.outcome)),
        );
        if !from.is_empty() {
            ui::hint(ui, from);
        }
    });
}

/// A known heist as the player reads it: the tape's title and the level it comes from — or,
/// for a level not won yet, only that level (the title would hand over its solution). Never
/// the file's name.
fn heist_name(tape: &std::path::Path, title: &str, (campaign, progress): (&Campaign, &Progress)) -> (String, String) {
    let level = (!tape.as_os_str().is_empty())
        .then(|| campaign.level_of_tape(tape))
        .flatten()
        .map(|index| &campaign.levels[index].level);
    match level {
        None => (title.to_owned(), String::new()),
        Some(level) if campaign.tape_opens(tape, progress) => (title.to_owned(), format!("from \"{}\"", level.title)),
        Some(level) => (
            format!("a heist from \"{}\"", level.title),
            "(its title stays hidden until you win that level)".to_owned(),
        ),
    }
}

fn draw_result(ui: &mut egui::Ui, defence: &Defence, known: (&Campaign, &Progress), chosen: &mut Vec<DefenceIntent>) {
    if let Some(check) = &defence.check {
        ui.horizontal(|ui| {
            ui.spinner();
            ui.label(
                RichText::new(format!(
                    "Checking {}: Penny alone, the known heists, then the explorer (up to {} schedules per way to break the promise)… {:.1} s",
                    guard_list(&check.on),
                    defend::DEFENCE_SCHEDULES,
                    check.started.elapsed().as_secs_f32()
                ))
                .color(theme::INFO),
            );
        });
        ui.add_space(8.0);
    }
    let checked = match &defence.result {
        None => {
            if defence.check.is_none() {
                ui.label(
                    RichText::new("Not checked yet.")
                        .size(theme::HEADING)
                        .color(theme::TEXT_DIM),
                );
                ui::hint(
                    ui,
                    "Pick your guards on the left, then check them. A heist that gets through is listed here with what it did to the money.",
                );
            }
            return;
        }
        Some(Err(error)) => {
            ui.label(RichText::new(format!("⚠ The check did not finish: {error}")).color(theme::BAD));
            return;
        }
        Some(Ok(checked)) => checked,
    };
    let report = &checked.report;
    let current = defence.current_report().is_some();
    if !current {
        ui.label(RichText::new("The guards changed since this check: check again to judge them.").color(theme::WARN));
    }
    headline(ui, report, defence.minimum());
    ui.add_space(8.0);
    ui.label(RichText::new("The known heists").strong());
    // Only the heists that fire here are listed: the others test nothing, and are counted once.
    for heist in report
        .heists
        .iter()
        .filter(|heist| heist.standing() != HeistStanding::NoFire)
    {
        heist_line(ui, heist, known);
    }
    let no_fire = report
        .heists
        .iter()
        .filter(|heist| heist.standing() == HeistStanding::NoFire)
        .count();
    if let Some(sentence) = defend::no_fire_sentence(no_fire) {
        ui::hint(ui, sentence);
    }
    ui.add_space(8.0);
    ui.label(RichText::new("The explorer's search").strong());
    match &report.search {
        None => ui::hint(ui, "not run: a known heist already got through"),
        Some(search) => match &search.found {
            None => {
                ui.label(
                    RichText::new(format!(
                        "✔ {} random schedules of this level's hand: no way to pay twice or leave a customer owed",
                        search.schedules
                    ))
                    .color(theme::GOOD),
                );
            }
            Some(_) => {
                ui.label(
                    RichText::new(format!(
                        "✖ found a heist in {} schedules (bound: {} per way to break the promise; simulation seed {})",
                        search.schedules,
                        search.schedules_bound,
                        search.found_seed.unwrap_or(0)
                    ))
                    .color(theme::BAD),
                );
            }
        },
    }
    counter_example(ui, defence, report, known, chosen);
    for skipped in &checked.skipped_tapes {
        ui.label(
            RichText::new(format!("⚠ left out (does not load): {skipped}"))
                .size(theme::SMALL)
                .color(theme::WARN),
        );
    }
    ui::hint(ui, format!("checked in {:.1} s", checked.took.as_secs_f32()));
}

/// What beat the defence: the counter-example's moves, and O to open its run's timeline.
fn counter_example(
    ui: &mut egui::Ui,
    defence: &Defence,
    report: &DefenceReport,
    known: (&Campaign, &Progress),
    chosen: &mut Vec<DefenceIntent>,
) {
    let Some(counter) = &report.counter_example else {
        return;
    };
    let source = match &counter.source {
        defend::CounterSource::KnownHeist { tape } if !tape.as_os_str().is_empty() => {
            let title = report
                .heists
                .iter()
                .find(|heist| &heist.tape == tape)
                .map_or("a known heist", |heist| heist.title.as_str());
            let (title, from) = heist_name(tape, title, known);
            format!("the known heist \"{title}\" {from}")
        }
        _ => counter.source_words(),
    };
    ui.add_space(8.0);
    ui.label(
        RichText::new(format!(
            "The counter-example: {} — {} {}",
            source.trim_end(),
            theme::outcome_glyph(counter.outcome),
            theme::outcome_words(counter.outcome)
        ))
        .strong()
        .color(theme::BAD),
    );
    if counter.tape.actions.is_empty() {
        ui::hint(ui, "no moves: Penny left alone breaks the promise against these guards");
    }
    for action in &counter.tape.actions {
        let target = action.play.run().map(|run| format!(" on {run}")).unwrap_or_default();
        ui.label(
            RichText::new(format!(
                "   phase {}: {}{target}",
                action.at_phase,
                action.play.card().title()
            ))
            .monospace()
            .size(theme::SMALL),
        );
    }
    let open = defence.counter_run.is_some();
    ui.horizontal(|ui| {
        let label = if open {
            "Close its run"
        } else {
            "Open its run (timeline)"
        };
        if ui::button(ui, true, label, "O").clicked() {
            chosen.push(DefenceIntent::ToggleCounterExample);
        }
    });
}

/// The verdict: held or not, within the budget, and against the minimum known.
fn headline(ui: &mut egui::Ui, report: &DefenceReport, minimum: &[Guard]) {
    let through = report.heists.iter().filter(|heist| !heist.stopped).count()
        + usize::from(report.search.as_ref().is_some_and(|search| search.found.is_some()));
    if report.holds() {
        ui.label(
            RichText::new(format!("🛡 It holds with {}", guard_list(&report.on)))
                .size(26.0)
                .strong()
                .color(theme::GOOD),
        );
        let text = if report.on.len() <= minimum.len() {
            format!(
                "You found the minimum: {}, as few as anyone knows. Saved to your progress.",
                counted(report.on.len() as u64, "guard", "guards")
            )
        } else {
            format!(
                "It holds with {}; it can be done with {}. Saved to your progress: try fewer.",
                counted(report.on.len() as u64, "guard", "guards"),
                minimum.len()
            )
        };
        ui.label(RichText::new(text).size(theme::BODY + 0.5).color(theme::TEXT));
    } else if report.stops_every_heist() {
        ui.label(
            RichText::new(format!(
                "Over the budget: {} guards, at most {}",
                report.on.len(),
                report.budget
            ))
            .size(26.0)
            .strong()
            .color(theme::WARN),
        );
    } else {
        ui.label(
            RichText::new(format!(
                "✖ With {}, {} got through",
                guard_list(&report.on),
                counted(through as u64, "heist", "heists")
            ))
            .size(26.0)
            .strong()
            .color(theme::BAD),
        );
        ui.label(
            RichText::new("Read what each one did to the money, and switch on the guard that stops it.")
                .color(theme::TEXT_DIM),
        );
    }
}

fn guard_list(guards: &[Guard]) -> String {
    if guards.is_empty() {
        "no guards".into()
    } else {
        guards
            .iter()
            .map(|guard| twice_world::guards::words(*guard))
            .collect::<Vec<_>>()
            .join(" + ")
    }
}

/// The guards as switches, each with its key and what it does.
fn guard_switches(ui: &mut egui::Ui, defence: &Defence, chosen: &mut Vec<DefenceIntent>) {
    egui::ScrollArea::vertical().auto_shrink(false).show(ui, |ui| {
        ui.label(
            RichText::new(format!(
                "Now you are the runtime. Every guard starts off: switch on the fewest that keep Penny's promise, at most {}.",
                defence.budget()
            ))
            .size(theme::BODY),
        );
        ui::hint(
            ui,
            "The check replays Penny left alone and every known heist of this chapter and the ones before it, then lets the explorer search this level's hand.",
        );
        ui.add_space(6.0);
        // Two columns where the panel is wide enough (1280×720): in one, the last guards of
        // sixteen were below the window's foot. Read down the first column, then the second,
        // as their keys run.
        if ui.available_width() >= TWO_COLUMNS_WIDTH_MIN {
            let half = Guard::ALL.len().div_ceil(2);
            ui.columns(2, |columns| {
                for (index, guard) in Guard::ALL.into_iter().enumerate() {
                    // Not the columns' justified layout: it spread a promise's words apart.
                    columns[index / half].vertical(|ui| guard_switch(ui, guard, defence, chosen));
                }
            });
        } else {
            for guard in Guard::ALL {
                guard_switch(ui, guard, defence, chosen);
            }
        }
    });
}

/// The guards' panel takes two columns from this width on, in points: a guard's promise
/// keeps two or three lines in a column of half that.
const TWO_COLUMNS_WIDTH_MIN: f32 = 440.0;

/// One guard's switch: its key, its name and its promise.
fn guard_switch(ui: &mut egui::Ui, guard: Guard, defence: &Defence, chosen: &mut Vec<DefenceIntent>) {
    let key = defence::guard_key(guard);
    let on = defence.on.contains(&guard);
    let full = defence.on.len() >= defence.budget() as usize;
    egui::Frame::new()
        .fill(if on { theme::PANEL_RAISED } else { theme::PANEL })
        .stroke(egui::Stroke::new(
            if on { 1.5 } else { 1.0 },
            if on { theme::GOOD } else { theme::PANEL_BORDER },
        ))
        .corner_radius(6)
        .inner_margin(egui::Margin::symmetric(8, 2))
        .show(ui, |ui| {
            ui.set_width(ui.available_width());
            ui.spacing_mut().item_spacing.y = 1.0;
            ui.horizontal(|ui| {
                ui::key_cap(ui, key);
                let mut checked = on;
                let text = RichText::new(twice_world::guards::words(guard)).strong().color(if on {
                    theme::GOOD
                } else if full {
                    theme::TEXT_FAINT
                } else {
                    theme::TEXT
                });
                if ui.checkbox(&mut checked, text).changed() {
                    chosen.push(DefenceIntent::Toggle(guard));
                }
            });
            ui.label(
                RichText::new(twice_world::guards::promise(guard))
                    .size(theme::SMALL)
                    .color(theme::TEXT_DIM),
            );
        });
    ui.add_space(1.0);
}
