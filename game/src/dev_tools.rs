//! Developer tools, built only with `--features dev`: state transitions in the log and
//! egui's hover inspector on F12.

use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

use crate::screens::Screen;

pub(super) fn plugin(app: &mut App) {
    app.add_systems(Update, log_transitions);
    app.add_systems(EguiPrimaryContextPass, toggle_inspector);
}

fn log_transitions(mut transitions: MessageReader<StateTransitionEvent<Screen>>) {
    for transition in transitions.read() {
        info!("screen: {:?} → {:?}", transition.exited, transition.entered);
    }
}

fn toggle_inspector(mut contexts: EguiContexts) -> Result {
    let context = contexts.ctx_mut()?;
    if context.input(|input| input.key_pressed(egui::Key::F12)) {
        let on = context.debug_on_hover();
        context.set_debug_on_hover(!on);
    }
    Ok(())
}
