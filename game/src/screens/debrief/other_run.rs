//! The other outcome, side by side: the same level, seed and moves with the deciding guard
//! switched (`Counterfactual::simulation_of`), built again when the player asks (O, or the
//! what-if's button) and drawn as a second timeline beside this run's.

use std::sync::{Mutex, PoisonError};

use bevy::prelude::*;
use bevy_egui::egui::{self, RichText};
use twice_world::debrief::Debrief;
use twice_world::simulator::Simulation;

use crate::screens::level::timeline::{self, TimelineCache};
use crate::ui::{self, theme};

/// The other run the debrief shows beside this one, if one is open.
#[derive(Component, Debug, Default)]
pub struct OtherRun {
    open: Option<Open>,
    /// Why the last one asked for could not be shown.
    problem: Option<String>,
    /// Open the first other run as soon as the debrief has one (a screenshot asks for it).
    open_first: bool,
}

#[derive(Debug)]
struct Open {
    /// Its index among the debrief's what-ifs.
    which: usize,
    /// What it is: the what-if's own sentence.
    title: String,
    /// `Simulation` is `Send` but not `Sync`; the lock makes it a component.
    simulation: Mutex<Simulation>,
    cache: TimelineCache,
}

impl OtherRun {
    pub fn opening_first(open_first: bool) -> OtherRun {
        OtherRun {
            open_first,
            ..OtherRun::default()
        }
    }

    /// Whether to open the first other run now (once).
    pub fn take_open_first(&mut self) -> bool {
        std::mem::take(&mut self.open_first)
    }

    /// The what-if shown now.
    pub fn shown(&self) -> Option<usize> {
        self.open.as_ref().map(|open| open.which)
    }

    /// Opens what-if `which` of `told` (building its run again), or closes it if it is open.
    pub fn toggle(&mut self, which: usize, told: &Debrief, simulation: &Simulation) {
        if self.shown() == Some(which) {
            self.open = None;
            return;
        }
        self.problem = None;
        let Some(what_if) = told.what_if.get(which) else {
            self.problem = Some(format!("there is no other run number {}", which + 1));
            return;
        };
        let Some(counterfactual) = &told.counterfactual else {
            self.problem = Some("this run could not be simulated again, so there is no other run to show".into());
            return;
        };
        match counterfactual.simulation_of(&simulation.authored_level(), what_if.alternative) {
            Some(Ok(other)) => {
                let mut cache = TimelineCache::default();
                cache.update(&other);
                self.open = Some(Open {
                    which,
                    title: what_if.sentence.clone(),
                    simulation: Mutex::new(other),
                    cache,
                });
            }
            Some(Err(error)) => self.problem = Some(format!("that run could not be built again: {error}")),
            None => self.problem = Some("that run is not in the counterfactual".into()),
        }
    }
}

/// This run's timeline, and beside it the other run's when one is open.
pub fn timelines(ui: &mut egui::Ui, simulation: &Simulation, cache: &TimelineCache, other: &OtherRun) {
    if let Some(problem) = &other.problem {
        ui.label(RichText::new(format!("⚠ {problem}")).color(theme::WARN));
    }
    let Some(open) = &other.open else {
        timeline::draw(
            ui,
            simulation.timeline(),
            cache,
            false,
            timeline::RowText::Wrap,
            "debrief-timeline",
        );
        return;
    };
    // One above the other, each the whole width: beside each other their rows wrapped to a
    // word a line at 1280×720.
    let half = ((ui.available_height() - 28.0) / 2.0).max(120.0);
    let width = ui.available_width();
    ui.allocate_ui(egui::vec2(width, half), |ui| {
        timeline::draw(
            ui,
            simulation.timeline(),
            cache,
            false,
            timeline::RowText::Wrap,
            "debrief-timeline",
        );
    });
    ui.horizontal(|ui| {
        ui::key_cap(ui, "O");
        ui.add(egui::Label::new(RichText::new(format!("⇄ {}", open.title)).strong().color(theme::VIOLET)).truncate())
            .on_hover_text(format!("{} (O closes it)", open.title));
    });
    let other_simulation = open.simulation.lock().unwrap_or_else(PoisonError::into_inner);
    timeline::draw(
        ui,
        other_simulation.timeline(),
        &open.cache,
        false,
        timeline::RowText::Wrap,
        "debrief-other-timeline",
    );
}
