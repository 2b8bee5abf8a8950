//! The briefing on the level screen, with the level's hints one tier at a time.

use bevy_egui::egui::{self, RichText};

use crate::campaign::Campaign;
use crate::progress::Progress;
use crate::session::{Intent, Session};
use crate::ui::{self, theme};

/// The briefing stays on the level screen (collapsible, the rest behind "more"), under the
/// level's hints opened one tier at a time (H): a nudge, the idea, the move — and under
/// `task` (Penny's task), drawn between them. The glossary's words are links; returns the
/// entry clicked.
pub(super) fn draw(
    ui: &mut egui::Ui,
    (session, progress, campaign): (&Session, &Progress, &Campaign),
    task: impl FnOnce(&mut egui::Ui),
    intents: &mut Vec<Intent>,
) -> Option<usize> {
    let level = &session.recipe.level.level;
    let glossary = &campaign.glossary;
    let mut clicked = None;
    // The hints the player asked for come first, the newest on top: the one just opened (H)
    // is the one they want to read, and under a long briefing it was below the column's fold.
    hints(ui, level, progress, intents);
    // Then the task, a few lines the player checks at every step: under the briefing it was
    // below the column's fold at 1280×720 (r1/3 cut in half), and its steps are what the
    // timeline, the cards and the debrief name.
    task(ui);
    ui.add_space(4.0);
    egui::CollapsingHeader::new(RichText::new("Briefing").strong())
        .id_salt("level-briefing")
        .default_open(true)
        .show(ui, |ui| {
            clicked = ui::glossary_text(ui, &level.briefing, glossary, (theme::SMALL, theme::TEXT), None);
            if !level.briefing_more.trim().is_empty() {
                egui::CollapsingHeader::new(RichText::new("more").size(theme::SMALL))
                    .id_salt("level-briefing-more")
                    .show(ui, |ui| {
                        if let Some(entry) =
                            ui::glossary_text(ui, &level.briefing_more, glossary, (theme::SMALL, theme::TEXT), None)
                        {
                            clicked = Some(entry);
                        }
                    });
            }
        });
    clicked
}

/// The hints opened so far, newest first, and the button for the next tier.
fn hints(ui: &mut egui::Ui, level: &twice_world::level::Level, progress: &Progress, intents: &mut Vec<Intent>) {
    let tiers = level.hints.tiers();
    if tiers.is_empty() {
        return;
    }
    let opened = usize::try_from(progress.hints_opened(&level.id)).unwrap_or(usize::MAX);
    const TIER_NAMES: [&str; 3] = ["nudge", "idea", "move"];
    if opened < tiers.len() {
        let name = TIER_NAMES.get(opened).copied().unwrap_or("hint");
        if ui::button(ui, true, &format!("💡 Hint: the {name}"), "H").clicked() {
            intents.push(Intent::OpenHint);
        }
    }
    for (index, tier) in tiers.iter().enumerate().take(opened).rev() {
        let name = TIER_NAMES.get(index).copied().unwrap_or("hint");
        ui.label(
            RichText::new(format!("💡 {name}: {tier}"))
                .size(theme::SMALL)
                .color(theme::INFO),
        );
    }
}
