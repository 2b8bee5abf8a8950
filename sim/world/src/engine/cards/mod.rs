//! The cards: one module per card, each holding all of it — its tape syntax (the card's
//! struct), what it aims at, how it fires or is armed, what the hand says of it and why it
//! cannot be played now, how the explorer deals it and what the debrief says when it changed
//! nothing. Nothing else in the crate matches on a card: the simulator, the hand, the tapes,
//! the explorer, the sweep, the counterfactual and the debrief all ask [`Play`] or
//! [`CardKind`], which ask the card's module.
//!
//! Adding a card:
//! 1. a file here with the card's struct (`#[derive(Clone, Debug, PartialEq, Eq, Serialize,
//!    Deserialize)]`, `#[serde(deny_unknown_fields)]`: its fields are its tape syntax) and its
//!    `impl Card` (see [`Card`]: the required parts are its title, what it aims at, whether it
//!    can pay twice, `aim`, `fire`, `effect` and `deal`; the rest have defaults);
//! 2. its name in the list below (the list's order is the order hands are listed in: add new
//!    cards at the end);
//! 3. what it does to the world from the simulator's few primitives for moves
//!    (`simulator/table.rs`: a message on the wire lost or delayed, a worker crashed or
//!    started, something armed for a moment); a card that needs a new kind of moment adds a
//!    [`Trigger`] and the one place the simulator meets it;
//! 4. a level that deals it, its tapes and its tests.
//!
//! The browser and the game take everything about a card from here (its title, effect, targets
//! and why it cannot be played), so neither edition has a card's words of its own.

mod armed;
mod card;
mod registry;
mod runs;
mod serde_shape;
mod wire;
mod worker_aim;

mod crash_worker;
mod declare_tool;
mod delay_apply;
mod duplicate_worker;
mod lose_request;
mod lose_response;
mod model_calls_again;
mod operator;
mod operator_compensate;
mod operator_resolve;
mod pause_worker;
mod slow_response;
mod tool_fails_before_sending;

#[cfg(test)]
mod tests;

use rand_chacha::ChaCha8Rng;

pub use armed::{Armed, ArmedMove};
pub use card::{Aim, Aims, Card, DealSpace, Fired, Made, Registered, Target, Trigger};
pub use crash_worker::CrashWorker;
pub use declare_tool::{Declarable, Declaration, DeclareTool, DraftVerdict, declaration};
pub use delay_apply::DelayApply;
pub use duplicate_worker::DuplicateWorker;
pub use lose_request::LoseRequest;
pub use lose_response::LoseResponse;
pub use model_calls_again::ModelCallsAgain;
pub use operator::default_operator;
pub use operator_compensate::{COMPENSATION_REFUSED, OperatorCompensate};
pub use operator_resolve::OperatorResolve;
pub use pause_worker::PauseWorker;
pub use slow_response::SlowResponse;
pub use tool_fails_before_sending::ToolFailsBeforeSending;
pub use wire::{TAPE_VERSION, WireRule, on_the_wire_words};

use crate::ledger::LedgerError;
use crate::level::Level;
use crate::simulator::{PlayError, SimError, Simulation};

registry::registry! {
    LoseRequest,
    LoseResponse,
    SlowResponse,
    CrashWorker,
    DuplicateWorker,
    ModelCallsAgain,
    ToolFailsBeforeSending,
    OperatorResolve,
    OperatorCompensate,
    DeclareTool,
    PauseWorker,
    DelayApply,
}

/// What the registry asks of a move, whatever its card (the object-safe part of [`Card`]).
trait Move {
    fn aim(&self) -> Aim<'_>;
    fn run(&self) -> Option<&str>;
    fn key(&self) -> Option<&str>;
    fn operator(&self) -> Option<&str>;
    fn with_key(&self, key: &str) -> Play;
    fn problem(&self, level: &Level) -> Option<String>;
    fn doubt(&self) -> Option<String>;
    fn before_the_hand(&self, simulation: &Simulation) -> Result<(), PlayError>;
    fn fire(&self, simulation: &mut Simulation) -> Result<Made, PlayError>;
    fn fires_at(&self, trigger: &Trigger<'_>) -> Option<Fired>;
    fn replaces(&self, earlier: &Play) -> bool;
    fn missed(&self, simulation: &Simulation, index: usize) -> Option<String>;
}

impl<T: Card> Move for T {
    fn aim(&self) -> Aim<'_> {
        Card::aim(self)
    }
    fn run(&self) -> Option<&str> {
        Card::run(self)
    }
    fn key(&self) -> Option<&str> {
        Card::key(self)
    }
    fn operator(&self) -> Option<&str> {
        Card::operator(self)
    }
    fn with_key(&self, key: &str) -> Play {
        Card::with_key(self, key).into()
    }
    fn problem(&self, level: &Level) -> Option<String> {
        Card::problem(self, level)
    }
    fn doubt(&self) -> Option<String> {
        Card::doubt(self)
    }
    fn before_the_hand(&self, simulation: &Simulation) -> Result<(), PlayError> {
        Card::before_the_hand(self, simulation)
    }
    fn fire(&self, simulation: &mut Simulation) -> Result<Made, PlayError> {
        Card::fire(self, simulation)
    }
    fn fires_at(&self, trigger: &Trigger<'_>) -> Option<Fired> {
        Card::fires_at(self, trigger)
    }
    fn replaces(&self, earlier: &Play) -> bool {
        T::from_play(earlier).is_some_and(|earlier| Card::replaces(self, earlier))
    }
    fn missed(&self, simulation: &Simulation, index: usize) -> Option<String> {
        Card::missed(self, simulation, index)
    }
}

impl Play {
    /// Its card's title: "Lose the response".
    pub fn title(&self) -> &'static str {
        self.card().title()
    }
    /// What it is aimed at.
    pub fn aim(&self) -> Aim<'_> {
        self.as_move().aim()
    }
    /// The run it names, if it names one.
    pub fn run(&self) -> Option<&str> {
        self.as_move().run()
    }
    /// The idempotency key it names, if it names one.
    pub fn key(&self) -> Option<&str> {
        self.as_move().key()
    }
    /// Who makes it, when it is not the crew: an operator's id.
    pub fn operator(&self) -> Option<&str> {
        self.as_move().operator()
    }
    /// The same move naming `key` (a move that names no key comes back unchanged).
    pub fn with_key(&self, key: &str) -> Play {
        self.as_move().with_key(key)
    }
    /// What is wrong with it in `level`, on its own, if anything (a tape's check).
    pub fn problem(&self, level: &Level) -> Option<String> {
        self.as_move().problem(level)
    }
    /// What `twice-sim check` finds wrong with it beyond loading, if anything.
    pub fn doubt(&self) -> Option<String> {
        self.as_move().doubt()
    }
    /// Checks made before the hand is looked at.
    pub fn before_the_hand(&self, simulation: &Simulation) -> Result<(), PlayError> {
        self.as_move().before_the_hand(simulation)
    }
    /// Plays it on `simulation` (the crew's bookkeeping — the hand, the timeline — is the
    /// simulator's: use `Simulation::play`).
    pub(crate) fn fire(&self, simulation: &mut Simulation) -> Result<Made, PlayError> {
        self.as_move().fire(simulation)
    }
    /// Armed, what it does at `trigger`, if that is its moment.
    pub fn fires_at(&self, trigger: &Trigger<'_>) -> Option<Fired> {
        self.as_move().fires_at(trigger)
    }
    /// Armed after `earlier`, it takes its place.
    pub fn replaces(&self, earlier: &Play) -> bool {
        self.as_move().replaces(earlier)
    }
    /// Why it (the `index`-th move played) made no difference to the money, if the run shows
    /// it did not.
    pub fn missed(&self, simulation: &Simulation, index: usize) -> Option<String> {
        self.as_move().missed(simulation, index)
    }
    /// Acts on whatever moment the run is in rather than on a target it names (a twin, a
    /// whisper to the model, a refusal armed for the next call, an operator's decision, a crash
    /// of whichever worker is oldest): in another run it is the same move only at the same
    /// moment.
    pub fn aims_at_the_moment(&self) -> bool {
        matches!(
            self.aim(),
            Aim::Run(_) | Aim::Call(_) | Aim::Worker { in_phase: None, .. }
        )
    }
}

impl CardKind {
    /// Why this card cannot be played from the hand now, in this run's terms; `None` when it
    /// can (a card made in the console or the declaration: when that is open).
    pub fn refusal(self, simulation: &Simulation) -> Option<String> {
        if simulation.is_out_of_phases() {
            return Some(format!(
                "the level is over: it ran its {} phases",
                simulation.level().max_phases
            ));
        }
        let Some(left) = simulation.hand().get(&self).copied() else {
            return Some(format!("{} is not in this level's hand", self.title()));
        };
        if left == 0 {
            let when: Vec<String> = simulation
                .played()
                .iter()
                .filter(|action| action.play.card() == self)
                .map(|action| format!("before phase {}", action.at_phase))
                .collect();
            return Some(format!(
                "none left: you played {} {}",
                self.title(),
                crate::text::and_list(&when)
            ));
        }
        match self.aims() {
            aims if aims.from_the_hand() && self.targets(simulation).is_empty() => Some(self.no_target(simulation)),
            Aims::Tool => simulation.declaring_is_open().err().map(|why| why.to_string()),
            _ => None,
        }
    }
}
