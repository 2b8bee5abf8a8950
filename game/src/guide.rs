//! The guided first level: the campaign's first level walks a new player through their first
//! moves — step the simulation, watch the request leave, play a card while a message is on
//! the wire, read the verdict. Each step is done when the player has done it (read from the
//! session the player's intents changed, so a key, a button or a headless test all count),
//! the guide can be skipped, and once finished or skipped it is never shown again (progress).
//! At a projector (`--presenter`) the presenter guides the room instead.

use bevy::prelude::*;
use twice_world::simulator::{Direction, Simulation};

use crate::campaign::Campaign;
use crate::presenter::Presenter;
use crate::progress::Progress;
use crate::session::{Intent, Mode, Session, SessionNews, SessionSet};

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<Guide>();
    app.add_systems(Update, follow.after(SessionSet::Conclude));
}

/// One thing the guide asks the player to do, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum GuideStep {
    /// Run one phase (the step key or button).
    Step,
    /// Step on until Penny's worker sends the request along the wire.
    WatchTheRequest,
    /// Play a card while a message is on the wire.
    PlayACard,
    /// Let the level end and open the debrief.
    ReadTheVerdict,
}

impl GuideStep {
    pub const ALL: [GuideStep; 4] = [
        GuideStep::Step,
        GuideStep::WatchTheRequest,
        GuideStep::PlayACard,
        GuideStep::ReadTheVerdict,
    ];

    /// Its number, from 1.
    pub fn number(self) -> usize {
        GuideStep::ALL
            .iter()
            .position(|step| *step == self)
            .map_or(0, |index| index + 1)
    }

    fn next(self) -> Option<GuideStep> {
        GuideStep::ALL.get(self.number()).copied()
    }

    pub fn title(self) -> &'static str {
        match self {
            GuideStep::Step => "Step the simulation",
            GuideStep::WatchTheRequest => "Watch the request leave",
            GuideStep::PlayACard => "Play a card on the wire",
            GuideStep::ReadTheVerdict => "Read the verdict",
        }
    }

    /// What to do, in the player's words.
    pub fn text(self) -> &'static str {
        match self {
            GuideStep::Step => {
                "Press the period key (or Step) once. Each step runs one phase of one actor, and the timeline below gets a line saying what happened."
            }
            GuideStep::WatchTheRequest => {
                "Keep stepping. Penny decides, her worker reserves an idempotency key in the ledger, then sends the request: watch it leave along the wire toward billing."
            }
            GuideStep::PlayACard => {
                "Your cards act on a message while it travels, and only some messages move money. Below: what is on the wire now, and which key plays a card on it."
            }
            GuideStep::ReadTheVerdict => {
                "Run to the end (E) and watch what Penny does. When the level is over, press Enter for the debrief: the verdict and what happened to the money."
            }
        }
    }
}

/// The guide of the level being played, if it has one and the player has not finished it.
#[derive(Debug, Default, Resource)]
pub struct Guide {
    /// The level guided (its id) and the step the player is on.
    pub active: Option<(String, GuideStep)>,
    /// The player has the debrief open (from the session's news: asked for, and not yet gone
    /// back to the run or left the level).
    reading_debrief: bool,
}

impl Guide {
    pub fn step(&self) -> Option<GuideStep> {
        self.active.as_ref().map(|(_, step)| *step)
    }
}

/// The level whose first moves are guided: the first of the campaign.
pub fn guided_level(campaign: &Campaign) -> Option<&str> {
    campaign.levels.first().map(|loaded| loaded.level.id.as_str())
}

/// A live line under the step: what is on the wire now, whose, whether it moves money and
/// what to press, so the player knows when to act (the world's coach, computed from this run).
pub fn cue(step: GuideStep, simulation: &Simulation) -> Option<String> {
    match step {
        GuideStep::Step => None,
        GuideStep::WatchTheRequest => Some(match twice_world::hand::wire_coach(simulation).on_the_wire.first() {
            Some(first) => format!("Now on the wire: {first}."),
            None => "Nothing is on the wire yet: step on.".into(),
        }),
        GuideStep::PlayACard => {
            let coach = twice_world::hand::wire_coach(simulation);
            Some(if coach.on_the_wire.is_empty() {
                coach.advice
            } else {
                format!("Now on the wire: {}. {}", coach.on_the_wire.join("; "), coach.advice)
            })
        }
        GuideStep::ReadTheVerdict => Some(if simulation.is_over() {
            "The level is over: press Enter.".into()
        } else {
            "Still running: press E to run to the end.".into()
        }),
    }
}

/// Whether the player has done what `step` asks.
fn done(step: GuideStep, simulation: &Simulation, reading_debrief: bool) -> bool {
    match step {
        GuideStep::Step => simulation.phase() > 0,
        // The request is on the wire, or already further along (the player ran ahead).
        GuideStep::WatchTheRequest => {
            simulation
                .messages()
                .any(|message| message.direction == Direction::Request)
                || simulation.timeline().iter().any(|entry| entry.kind == "send")
        }
        GuideStep::PlayACard => !simulation.played().is_empty(),
        GuideStep::ReadTheVerdict => reading_debrief,
    }
}

/// Starts the guide when the first level opens (if never finished), follows the player
/// through it, and records it in progress when it ends or is skipped.
fn follow(
    mut guide: ResMut<Guide>,
    mut intents: MessageReader<Intent>,
    mut news: MessageReader<SessionNews>,
    session: Option<Res<Session>>,
    (campaign, presenter): (Res<Campaign>, Res<Presenter>),
    mut progress: ResMut<Progress>,
) {
    let skipped = intents.read().any(|intent| *intent == Intent::SkipGuide);
    for news in news.read() {
        guide.reading_debrief = *news == SessionNews::DebriefAsked;
    }
    // At a projector the presenter guides the room (with the chapter's notes).
    let guided = session
        .as_ref()
        .filter(|session| session.mode == Mode::Campaign && !presenter.on)
        .map(|session| session.recipe.level.level.id.clone())
        .filter(|id| Some(id.as_str()) == guided_level(&campaign) && !progress.is_guide_done(id));
    let Some(id) = guided else {
        guide.active = None;
        return;
    };
    if skipped {
        progress.finish_guide(&id);
        guide.active = None;
        return;
    }
    let mut step = match &guide.active {
        Some((active, step)) if *active == id => *step,
        _ => GuideStep::Step,
    };
    let Some(session) = session else {
        return;
    };
    // A job (a rewind, a run to the end) swaps the simulation in when it is done.
    if !session.is_busy() {
        let simulation = session.simulation();
        // One move can finish several steps (running to the end sends the request too).
        while done(step, &simulation, guide.reading_debrief) {
            match step.next() {
                Some(next) => step = next,
                None => {
                    drop(simulation);
                    progress.finish_guide(&id);
                    guide.active = None;
                    return;
                }
            }
        }
    }
    guide.active = Some((id, step));
}
