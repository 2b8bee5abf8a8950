//! The level screen: the billing world, Penny and her workers, the wire, the ledger, the
//! checkpoints, the timeline, the cards and the operator console — and the controls.
//!
//! Nothing here changes the simulation: every control becomes an [`Intent`].

use bevy::prelude::*;
use bevy_egui::egui;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass};
use twice_world::level::CardKind;

use super::Screen;
use crate::campaign::Campaign;
use crate::guide::Guide;
#[cfg(feature = "operator-api")]
use crate::operator_api::OperatorApi;
use crate::options::{Options, ShotScreen};
use crate::panels::Panel;
use crate::paths::GamePaths;
use crate::presenter::Presenter;
use crate::progress::Progress;
use crate::progress::prediction::{Prediction, PredictionIntent};
use crate::session::{Intent, Mode, Session};
use crate::ui::{self, theme};

mod briefing;
mod cards;
mod coach;
pub mod code;
mod columns;
mod controls;
mod declaration;
mod glossary;
mod keyboard;
mod ledger;
mod notes;
mod operator;
mod overlays;
mod pause_menu;
mod predict;
mod records;
mod rulebook;
mod stage;
pub mod timeline;
mod top_bar;
mod vault;
mod world;

/// Every key of the level screen, as its `?` overlay lists them.
pub use overlays::shortcuts;

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<CodeChoice>();
    app.add_systems(OnEnter(Screen::Level), spawn_state);
    app.add_systems(
        EguiPrimaryContextPass,
        draw.run_if(in_state(Screen::Level)).run_if(resource_exists::<Session>),
    );
}

/// What the level screen remembers between frames (selection, open dialogs, typed text).
#[derive(Component, Debug, Default)]
pub struct LevelUi {
    /// The ledger row (idempotency key) selected in the ledger or the operator queue.
    pub selected_key: Option<String>,
    pub scroll_to_selected: bool,
    pub history: ledger::HistoryCache,
    /// A card or operator move waiting for its target.
    pub chooser: Option<Chooser>,
    pub operator_reason: String,
    /// Which operator the player acts as in the console (empty: the crew's own, `op-crew`).
    pub operator: String,
    /// The status the player's decision expects the call to have (compare-and-set); `None`:
    /// the status the console shows now.
    pub expected_status: Option<twice_world::runtime::rules::Status>,
    pub focus_reason: bool,
    pub help: bool,
    /// The rulebook panel is open (B); `rulebook_phase`: the phase whose rows it lights
    /// (`None`: the latest phase in which a row fired).
    pub rulebook: bool,
    pub rulebook_phase: Option<u32>,
    /// The left and right columns (task, guards, checkpoints; ledger, operator). Always shown
    /// but in presenter mode, where they come on demand (P) so the stage and timeline fit.
    pub side_panels: bool,
    /// The chapter's presenter notes (N); open at the start in presenter mode.
    pub notes: bool,
    pub prompt: Option<Prompt>,
    /// The phase the rewind slider points at.
    pub rewind_to: Option<u32>,
    /// An operator move chosen in the console, sent at the end of the frame.
    pub pending_play: Option<twice_world::level::Play>,
    /// A line from the screen itself (not the session), such as why a key did nothing.
    pub flash: Option<String>,
    /// The glossary window is open (T), at this entry, scrolled to it once.
    pub glossary: bool,
    pub glossary_entry: Option<usize>,
    pub glossary_scroll: bool,
    pub glossary_filter: String,
    /// The tool declaration window is hidden (D); shown by default in a level that lets the
    /// player declare a tool.
    pub declaration_hidden: bool,
    /// The guide's coach was shown on this visit: its column stays (saying the guide is done)
    /// until the player leaves, so the stage does not jump wider under the pointer.
    pub coach_shown: bool,
    /// The prediction window (V) is open, with the player's choices so far.
    pub predict: Option<predict::Draft>,
    /// The declaration window's drafts, by tool.
    pub declaration_drafts: std::collections::BTreeMap<String, declaration::Draft>,
    /// Esc opened the pause menu: the run waits (kept whole) until the player resumes,
    /// restarts or leaves.
    pub pause_menu: Option<pause_menu::PauseMenu>,
    /// The centre shows the code (C) instead of the stage.
    pub code: bool,
    /// The code line clicked to aim a crash at, its choices open under it.
    pub code_aim_line: Option<usize>,
    /// The line the code view last scrolled to (it follows the first live cursor).
    pub code_follow: Option<usize>,
    /// A line to bring into view once (a cursor's chip was clicked).
    pub code_jump: Option<usize>,
    /// The hand's height under the stage last frame, in points: a card whose refusal takes
    /// more lines than [`HAND_HEIGHT`] allows gets them, and the stage gives up the room.
    pub hand_height: f32,
    /// The points the timeline gave up last frame (at most [`TIMELINE_GIVES_MAX`]) so that a
    /// card's words are whole once the stage is down to its least height.
    pub timeline_gives: f32,
}

/// Whether the level screen shows the code or the stage: the player's choice, kept from one
/// level to the next.
#[derive(Resource, Debug, Default)]
pub struct CodeChoice {
    pub shown: bool,
}

/// A choice the player makes with the number keys or the mouse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chooser {
    Card(CardKind),
    Operator,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prompt {
    pub kind: PromptKind,
    pub text: String,
    pub focus: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromptKind {
    SaveTape,
    LoadTape,
    GoToPhase,
}

fn spawn_state(
    mut commands: Commands,
    presenter: Res<Presenter>,
    options: Option<Res<Options>>,
    code_choice: Res<CodeChoice>,
) {
    // `--screenshot --screen glossary` (or `keys`) pictures the level with its glossary (or
    // the `?` keys overlay) open.
    let shot = options.and_then(|options| options.screenshot.as_ref().and(options.screen));
    let glossary = shot == Some(ShotScreen::Glossary);
    let code = code_choice.shown || shot == Some(ShotScreen::Code);
    let help = shot == Some(ShotScreen::Keys);
    let predict = (shot == Some(ShotScreen::Predict)).then_some(predict::Draft {
        verdict: twice_world::prediction::Expected::HeistWorks,
        pick: None,
    });
    let pause_menu = (shot == Some(ShotScreen::Pause)).then_some(pause_menu::PauseMenu {
        was_running: false,
        fresh: false,
    });
    commands.spawn((
        Name::new("Level screen"),
        LevelUi {
            side_panels: !presenter.on,
            notes: presenter.on,
            glossary,
            help,
            predict,
            pause_menu,
            code,
            ..LevelUi::default()
        },
        timeline::TimelineCache::default(),
        DespawnOnExit(Screen::Level),
    ));
}

/// Below this many points of width (a projector at presenter zoom is 731), the side columns
/// and the presenter notes take turns.
const SIDE_COLUMNS_AND_NOTES_WIDTH_MIN: f32 = 1000.0;
/// Below this height the hand moves out from under the stage into a strip of its own.
const SHORT_SCREEN_HEIGHT: f32 = 560.0;
/// Height of the timeline along the bottom, at most.
const TIMELINE_HEIGHT: f32 = 440.0;
/// The least timeline on a short screen: four rows under a lanes' header of two lines (the
/// header wraps when the presenter's notes narrow the timeline), enough for a room to follow
/// a move, what it hit and what came of it. A quarter of a projector's 411 points left two;
/// five (172 points) left the stage only Penny's bubble, her workers scrolled out of sight.
const TIMELINE_SHORT_HEIGHT_MIN: f32 = 152.0;
/// The hand under the stage: its heading and a row of full cards (their effect spelled out).
const HAND_HEIGHT: f32 = 132.0;
/// Points the stage leaves the hand beyond its measured height: a card's words are shown by
/// whole lines measured against the panel's foot, and half a point short (the card's frame
/// measured against its words' room) left the last line "…" frame after frame.
const HAND_SLACK: f32 = 2.0;
/// The most the timeline gives up for the hand's words, in points: three rows of its dozen at
/// 1280×720. The stage gives first, down to its least height; then the timeline, so that a
/// long reason ("nothing is on the wire now: w1 is about to send the request; step until a
/// request is on the wire") is whole on screen, not "…".
const TIMELINE_GIVES_MAX: f32 = 60.0;

/// The timeline's height on a screen this many points tall: two fifths of a full screen
/// (1280×720: 288 points, a dozen rows, the history a player reads back); on a short one (a
/// projector's 411 points at presenter zoom) four rows at least, the stage above the hand
/// taking the rest (it scrolls rather than squeeze the timeline to two rows).
fn timeline_height(screen_height: f32) -> f32 {
    if screen_height < SHORT_SCREEN_HEIGHT {
        return (screen_height * 0.25)
            .max(TIMELINE_SHORT_HEIGHT_MIN)
            .min(screen_height * 0.45);
    }
    (screen_height * 0.40).clamp(80.0, TIMELINE_HEIGHT)
}

/// Everything one frame of the level screen reads.
#[derive(Debug)]
pub struct LevelInputs<'a> {
    pub session: &'a Session,
    pub paths: &'a GamePaths,
    pub progress: &'a Progress,
    pub campaign: &'a Campaign,
    pub guide: &'a Guide,
    pub prediction: &'a Prediction,
    #[cfg(feature = "operator-api")]
    pub operator_api: Option<&'a OperatorApi>,
}

/// What the player asked for in one frame of the level screen.
#[derive(Debug, Default)]
pub struct LevelAsks {
    pub intents: Vec<Intent>,
    pub predictions: Vec<PredictionIntent>,
}

// A Bevy system takes each resource it reads as its own parameter.
#[allow(clippy::too_many_arguments)]
fn draw(
    mut contexts: EguiContexts,
    state: Single<(&mut LevelUi, &mut timeline::TimelineCache)>,
    session: Res<Session>,
    paths: Res<GamePaths>,
    #[cfg(feature = "operator-api")] operator_api: Option<Res<OperatorApi>>,
    // The campaign for the chapter's presenter notes and the glossary, beside the player's
    // progress and the guided first level's step.
    (progress, campaign, guide): (Res<Progress>, Res<Campaign>, Res<Guide>),
    (prediction, mut prediction_writer): (Res<Prediction>, MessageWriter<PredictionIntent>),
    mut writer: MessageWriter<Intent>,
    mut code_choice: ResMut<CodeChoice>,
) -> Result {
    let context = contexts.ctx_mut()?;
    let (mut level_ui, mut cache) = state.into_inner();
    let inputs = LevelInputs {
        session: &session,
        paths: &paths,
        progress: &progress,
        campaign: &campaign,
        guide: &guide,
        prediction: &prediction,
        #[cfg(feature = "operator-api")]
        operator_api: operator_api.as_deref(),
    };
    let asks = frame(context, &mut level_ui, &mut cache, &inputs);
    // The code view (C) stays chosen from one level to the next.
    if code_choice.shown != level_ui.code {
        code_choice.shown = level_ui.code;
    }
    for intent in asks.predictions {
        prediction_writer.write(intent);
    }
    for intent in asks.intents {
        writer.write(intent);
    }
    Ok(())
}

/// One frame of the level screen: draws it into `context` and returns what the player asked
/// for. The Bevy system above calls it each frame; headless tests call it on a context of
/// their own ([`crate::ui::probe`]) to read what a player would see.
pub fn frame(
    context: &egui::Context,
    level_ui: &mut LevelUi,
    cache: &mut timeline::TimelineCache,
    inputs: &LevelInputs,
) -> LevelAsks {
    let LevelInputs {
        session,
        paths,
        progress,
        campaign,
        guide,
        prediction,
        ..
    } = *inputs;
    let mut intents = Vec::new();
    let simulation = session.simulation();
    cache.update(&simulation);
    cache.tell_by(
        session
            .conclusion
            .as_ref()
            .and_then(|conclusion| conclusion.debrief.as_ref()),
    );

    let dialog_open =
        level_ui.help || level_ui.prompt.is_some() || level_ui.chooser.is_some() || level_ui.pause_menu.is_some();
    if !dialog_open && level_ui.predict.is_none() && session.mode != Mode::Replay && ui::pressed(context, egui::Key::V)
    {
        predict::open(level_ui, prediction);
    }
    keyboard::read(context, level_ui, session, &simulation, paths, &mut intents);

    // On a short screen (a projector at presenter zoom is 411 points tall) the stage cannot
    // fit above the hand: the hand gets a strip of its own above the timeline, always in view,
    // and the controls keep to one line.
    let short = context.viewport_rect().height() < SHORT_SCREEN_HEIGHT;
    let mut root = ui::root_ui(context, "level");
    bars(
        &mut root,
        session,
        &simulation,
        level_ui,
        paths,
        short,
        prediction,
        &mut intents,
    );
    let mut glossary_clicked = None;
    // Beside everything below the top bar, so the notes have the screen's height to fill.
    notes::draw(&mut root, session, campaign, level_ui);
    if let Some(entry) = columns::coach(&mut root, guide.step(), &simulation, campaign, level_ui, &mut intents) {
        glossary_clicked = Some(entry);
    }
    // The timeline spans the whole width under the columns: it is the widest, wordiest view,
    // and a ledger beside it would cut its rows.
    let gives = if short { 0.0 } else { level_ui.timeline_gives };
    if let Some(phase) = timeline_panel(&mut root, &simulation, cache, gives) {
        intents.push(Intent::Rewind { phase });
    }
    columns::right(
        &mut root,
        session,
        &simulation,
        level_ui,
        cache,
        #[cfg(feature = "operator-api")]
        inputs.operator_api,
    );
    if short {
        egui::Panel::bottom("level-hand")
            .resizable(false)
            .frame(
                egui::Frame::new()
                    .fill(theme::BACKGROUND)
                    .inner_margin(egui::Margin::symmetric(6, 2)),
            )
            .show(&mut root, |ui| {
                cards::draw(ui, session, &simulation, level_ui, true, &mut intents);
            });
    }
    if let Some(entry) = columns::left(
        &mut root,
        session,
        &simulation,
        progress,
        campaign,
        level_ui,
        &mut intents,
    ) {
        glossary_clicked = Some(entry);
    }
    centre(&mut root, session, &simulation, level_ui, cache, short, &mut intents);

    let tape_lock = |path: &std::path::Path| {
        let index = campaign.level_of_tape(path)?;
        (!campaign.tape_opens(path, progress))
            .then(|| twice_world::campaign::path::tape_locked_words(&campaign.levels[index].level))
    };
    windows(
        context,
        (session, &simulation),
        campaign,
        level_ui,
        (glossary_clicked, &tape_lock),
        &mut intents,
    );
    pause_menu::draw(context, session, &simulation, paths, level_ui, &mut intents);
    let mut predictions = Vec::new();
    predict::draw(context, session, level_ui, &mut predictions);
    drop(simulation);
    if !intents.is_empty() {
        level_ui.flash = None;
    }
    LevelAsks { intents, predictions }
}

/// The top bar (level, status, buttons) and the controls at the foot, on the same frame.
#[allow(clippy::too_many_arguments)]
fn bars(
    root: &mut egui::Ui,
    session: &Session,
    simulation: &twice_world::simulator::Simulation,
    level_ui: &mut LevelUi,
    paths: &GamePaths,
    short: bool,
    prediction: &Prediction,
    intents: &mut Vec<Intent>,
) {
    let frame = egui::Frame::new()
        .fill(theme::PANEL)
        .inner_margin(egui::Margin::symmetric(10, 6));
    egui::Panel::top("level-top")
        .frame(frame)
        .show(root, |ui| top_bar::draw(ui, session, simulation, level_ui, intents));
    egui::Panel::bottom("level-controls").frame(frame).show(root, |ui| {
        controls::draw(ui, session, simulation, level_ui, paths, short, prediction, intents)
    });
}

/// Everything drawn over the level: the overlays and prompts, the rulebook, the glossary, the
/// tool declaration; then the operator move the console chose.
fn windows(
    context: &egui::Context,
    (session, simulation): (&Session, &twice_world::simulator::Simulation),
    campaign: &Campaign,
    level_ui: &mut LevelUi,
    (glossary_clicked, tape_lock): (Option<usize>, overlays::TapeLock),
    intents: &mut Vec<Intent>,
) {
    overlays::draw(context, session, simulation, level_ui, tape_lock, intents);
    if session.panels.shows(Panel::Rulebook) {
        rulebook::draw(context, simulation, level_ui);
    }
    if let Some(entry) = glossary_clicked {
        glossary::open_at(level_ui, entry);
    }
    glossary::draw(context, &campaign.glossary, level_ui);
    declaration::draw(context, session, simulation, level_ui, intents);
    operator::take_pending(level_ui, intents);
}

/// The timeline along the bottom; returns the phase a double-clicked row asks to rewind to.
fn timeline_panel(
    root: &mut egui::Ui,
    simulation: &twice_world::simulator::Simulation,
    cache: &timeline::TimelineCache,
    gives: f32,
) -> Option<u32> {
    let mut rewind = None;
    egui::Panel::bottom("level-timeline")
        .exact_size(timeline_height(root.ctx().viewport_rect().height()) - gives)
        .resizable(false)
        .frame(
            egui::Frame::new()
                .fill(theme::BACKGROUND)
                .inner_margin(egui::Margin::same(6)),
        )
        .show(root, |ui| {
            rewind = timeline::draw(
                ui,
                simulation.timeline(),
                cache,
                true,
                timeline::RowText::Truncate,
                "level-timeline",
            );
        });
    rewind
}

/// The height the hand keeps under the code view, in points: one line of chips.
const HAND_STRIP_HEIGHT: f32 = 34.0;
/// The least height the code view is drawn at: a handful of lines around the cursors.
const CODE_HEIGHT_MIN: f32 = 120.0;

/// The two views of the centre, as tabs: the stage (Penny, the wire, billing) or the code.
fn views(
    ui: &mut egui::Ui,
    session: &Session,
    simulation: &twice_world::simulator::Simulation,
    level_ui: &mut LevelUi,
) {
    ui.horizontal(|ui| {
        for (code, label) in [(false, "Stage"), (true, "Penny's code")] {
            let text = egui::RichText::new(label).size(theme::SMALL).strong();
            let tab = ui.selectable_label(level_ui.code == code, text);
            let tab = if code {
                tab.on_hover_text(twice_world::code::ABOUT)
            } else {
                tab
            };
            if tab.clicked() {
                level_ui.code = code;
            }
        }
        ui::key_cap(ui, "C");
        if level_ui.code {
            ui::hint(ui, code::hint(session, simulation));
        } else {
            ui::hint(
                ui,
                "the code: the runtime's loop as this level runs it, a cursor per worker",
            );
        }
    });
}

/// The stage (or the code) and, unless the screen is short (then it has its own strip), the
/// hand under it.
fn centre(
    root: &mut egui::Ui,
    session: &Session,
    simulation: &twice_world::simulator::Simulation,
    level_ui: &mut LevelUi,
    cache: &timeline::TimelineCache,
    short: bool,
    intents: &mut Vec<Intent>,
) {
    egui::CentralPanel::default()
        .frame(
            egui::Frame::new()
                .fill(theme::BACKGROUND)
                .inner_margin(egui::Margin::same(6)),
        )
        .show(root, |ui| {
            // On a short screen (a projector at presenter zoom) the stage is the whole panel
            // (the hand has its strip): it takes the height there is rather than scrolling.
            // Scrolls still if even the stage's least height does not fit.
            // On a full screen the stage takes what the hand leaves, up to its full height: at
            // 1280×720 the timeline's dozen rows come first. Measured under the tabs (Stage /
            // Penny's code), which take their line first: measured above them, the hand lost a
            // line's height and its cards' last line was cut at the panel's foot.
            views(ui, session, simulation, level_ui);
            let stage_height = if short {
                ui.available_height()
            } else {
                (ui.available_height() - level_ui.hand_height.max(HAND_HEIGHT) - HAND_SLACK).min(stage::STAGE_HEIGHT)
            };
            // What the stage cannot give the hand below its least height, the timeline gives
            // next frame (the shortfall measured with this frame's gift in the height, so it
            // settles in one frame and does not swing).
            level_ui.timeline_gives = if short || level_ui.code {
                0.0
            } else {
                (level_ui.timeline_gives + stage::STAGE_HEIGHT_MIN - stage_height).clamp(0.0, TIMELINE_GIVES_MAX)
            };
            if level_ui.code {
                // The code takes what the hand leaves (all of it on a short screen, where the
                // hand has its strip); the hand stays under it, one line of chips, to play
                // cards while the cursors move.
                let hand_height = if short { 0.0 } else { HAND_STRIP_HEIGHT };
                let height = (ui.available_height() - hand_height).max(CODE_HEIGHT_MIN);
                code::draw(ui, session, simulation, level_ui, height, intents);
                if !short {
                    ui.add_space(4.0);
                    cards::draw(ui, session, simulation, level_ui, true, intents);
                }
                return;
            }
            egui::ScrollArea::vertical()
                .id_salt("level-centre")
                .auto_shrink(false)
                .show(ui, |ui| {
                    stage::draw(ui, session, simulation, cache, stage_height);
                    if !short {
                        // From the stage's foot: the gap under it counts too (measured from
                        // the hand's heading, the gap's few points were missing and a card's
                        // last line stayed "…" for want of them).
                        let stage_foot = ui.min_rect().bottom();
                        ui.add_space(4.0);
                        let hidden = cards::draw(ui, session, simulation, level_ui, false, intents);
                        // Measured, not guessed: the next frame's stage leaves the hand this
                        // much (with the lines a card had to leave out), so a card's last line
                        // is never cut at the panel's foot.
                        level_ui.hand_height = ui.min_rect().bottom() - stage_foot + hidden;
                    }
                });
        });
}
