//! What every card is: the trait a card's module implements, and the few types its answers are
//! made of. A card answers everything the game, the simulator and the analyses ask of it — its
//! tape syntax (its struct), what it aims at, how it fires or is armed, what the hand says of it
//! and why it cannot be played now, how the explorer deals it, what the debrief says when it
//! changed nothing — so nothing about it is written anywhere else.

use std::fmt::Debug;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::de::VariantAccess;
use serde::{Serialize, de::DeserializeOwned};

use super::serde_shape::VariantAsStruct;
use super::{CardKind, Play};
use crate::ledger::LedgerError;
use crate::level::Level;
use crate::simulator::{Actor, Direction, Phase, PlayError, SimError, Simulation};

/// What a kind of card is aimed at, and so where the player makes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aims {
    /// A message on the wire in this direction (with `unslowed`, one not slowed yet): the card
    /// acts on it while it travels, so *when* it is played decides what it hits. Played from the
    /// hand.
    Message { direction: Direction, unslowed: bool },
    /// A worker alive now, at the phase it is about to run. Played from the hand.
    Worker,
    /// A run, chosen from the hand: a twin started on it, or something armed for its next
    /// moment.
    Run,
    /// A call in the ledger: made in the operator console, with a reason.
    Call,
    /// A tool's declaration: made in the declaration panel, before Penny's first call.
    Tool,
}

impl Aims {
    /// Played from the hand's buttons (one per target), not from the console or the declaration.
    pub fn from_the_hand(self) -> bool {
        matches!(self, Aims::Message { .. } | Aims::Worker | Aims::Run)
    }
}

/// What one move names as its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aim<'a> {
    /// A message on the wire: the one carrying `key` (none: the oldest), and with `unslowed`
    /// only one not slowed yet.
    Message {
        direction: Direction,
        key: Option<&'a str>,
        unslowed: bool,
    },
    /// A worker (none: the oldest alive), at a phase it is about to run (none: any).
    Worker {
        number: Option<u32>,
        in_phase: Option<Phase>,
    },
    /// A run, at whatever moment it is in.
    Run(&'a str),
    /// A call, by its key.
    Call(&'a str),
    /// A tool, by its name.
    Tool(&'a str),
}

/// One move a card offers now: a label for a button, and the move itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub label: String,
    pub play: Play,
}

/// What a move did, as the timeline says it.
#[derive(Debug)]
pub struct Made {
    /// Who the timeline says made it (the crew, or an operator).
    pub actor: Actor,
    pub text: String,
    /// The move as made, when it names what was left to be chosen (the message a wire card
    /// hit, the worker a crash killed): what a tape saved from this run stores.
    pub made: Option<Play>,
    /// The level's tools changed: Penny is deployed again once the move is on the timeline.
    pub redeploy: bool,
}

impl Made {
    /// A move by the crew, said in `text`.
    pub fn by_the_crew(text: String) -> Made {
        Made {
            actor: Actor::Crew,
            text,
            made: None,
            redeploy: false,
        }
    }
}

/// A moment an armed card may be waiting for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger<'a> {
    /// A worker puts a request on the wire.
    RequestLeaves,
    /// Billing puts its answer on the wire.
    AnswerLeaves,
    /// A worker of this run (its workflow node: the level's run) is about to send a request.
    Sending { node: &'a str },
    /// Penny is asked what to do next on this run (its workflow node).
    ModelAsked { node: &'a str },
}

/// What an armed card does when its moment comes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fired {
    /// The message is lost on the wire.
    Lose,
    /// The answer arrives after the timeout.
    Slow,
    /// The tool refuses before sending anything (not attempted).
    RefuseBeforeSending,
    /// Penny calls the tool again when she next hears a call came to nothing.
    CallAgain { reword: bool },
}

/// What the explorer deals a card from.
#[derive(Debug)]
pub struct DealSpace<'a> {
    pub level: &'a Level,
    /// The level's runs, by id.
    pub runs: &'a [String],
    /// The highest worker number a crash may name: every worker the level could start.
    pub workers_max: u32,
}

impl DealSpace<'_> {
    /// One of the level's runs.
    pub fn run(&self, rng: &mut ChaCha8Rng) -> String {
        assert!(!self.runs.is_empty(), "a level has runs");
        self.runs[rng.random_range(0..self.runs.len())].clone()
    }
}

/// Knowing which card it is: implemented for every card by the registry (`cards/mod.rs`).
pub trait Registered: Sized {
    const KIND: CardKind;
    /// The card's own move, if `play` is one.
    fn from_play(play: &Play) -> Option<&Self>;
}

/// A fault card (or an operator's move, or a declaration): its struct is how a tape spells it.
pub trait Card:
    Registered + Clone + Debug + PartialEq + Eq + Serialize + DeserializeOwned + Into<Play> + 'static
{
    /// How the hand, the timeline and the debrief name it: "Lose the response".
    const TITLE: &'static str;
    /// What it is aimed at, and so where the player makes it.
    const AIMS: Aims;
    /// Whether it can make one intended credit land twice: leave a sent request without its
    /// answer (so a retry, a replay or a second model call may follow), start a second process
    /// on the run, make the model call again, or let an operator decide a call the runtime then
    /// runs again. The campaign's check rules out a `paid_twice` goal with no such card.
    const CAN_PAY_TWICE: bool;
    /// Playing it may bring one more worker into the level (a crash's recovery, a twin): the
    /// explorer counts the workers a crash may name.
    const MAY_START_A_WORKER: bool = false;
    /// The explorer deals it only before Penny's first call (a declaration).
    const DEALT_BEFORE_FIRST_CALL: bool = false;
    /// Tape format 1 knew this card.
    const IN_TAPE_VERSION_1: bool = true;

    // ----- the move -----

    /// What this move is aimed at.
    fn aim(&self) -> Aim<'_>;
    /// The run it names, if it names one.
    fn run(&self) -> Option<&str> {
        match self.aim() {
            Aim::Run(run) => Some(run),
            _ => None,
        }
    }
    /// Who makes it, when it is not the crew: an operator's id.
    fn operator(&self) -> Option<&str> {
        None
    }
    /// The idempotency key it names, if it names one.
    fn key(&self) -> Option<&str> {
        match self.aim() {
            Aim::Message { key, .. } => key,
            Aim::Call(key) => Some(key),
            _ => None,
        }
    }
    /// The same move naming `key` instead: the message it hit, the call it settles, a key
    /// spelled as another run spells it. A move that names no key comes back as it is.
    fn with_key(&self, key: &str) -> Self {
        let _ = key;
        self.clone()
    }
    /// What is wrong with this move in `level` on its own (read from a tape), if anything.
    fn problem(&self, level: &Level) -> Option<String> {
        let _ = level;
        None
    }
    /// What `twice-sim check` finds wrong with it beyond loading (a worker that can never
    /// exist, a key that is no key), if anything.
    fn doubt(&self) -> Option<String> {
        None
    }

    // ----- playing it -----

    /// Checks made before the hand is looked at (a declaration says which tool, and why it
    /// cannot be declared, before "not in hand").
    fn before_the_hand(&self, simulation: &Simulation) -> Result<(), PlayError> {
        let _ = simulation;
        Ok(())
    }
    /// Plays it now; it takes effect before the next phase. Refused: nothing changed.
    fn fire(&self, simulation: &mut Simulation) -> Result<Made, PlayError>;
    /// Armed, what it does at `trigger`, if that is its moment.
    fn fires_at(&self, trigger: &Trigger<'_>) -> Option<Fired> {
        let _ = trigger;
        None
    }
    /// Armed after `earlier` (armed too), it takes its place instead of waiting beside it.
    fn replaces(&self, earlier: &Self) -> bool {
        let _ = earlier;
        false
    }
    /// What the armed moves of this card will do, in words a player reads: "the next request
    /// will be lost".
    fn armed_words(armed: &[&Self]) -> Vec<String> {
        let _ = armed;
        Vec::new()
    }

    // ----- the hand -----

    /// What it would do if played now, in the player's words.
    fn effect(simulation: &Simulation) -> String;
    /// The moves it offers the hand now (none for a card made in the console or the
    /// declaration).
    fn targets(simulation: &Simulation) -> Vec<Target> {
        let _ = simulation;
        Vec::new()
    }
    /// Why the hand offers no move now, in this run's terms (asked only when it offers none).
    fn no_target(simulation: &Simulation) -> String {
        let _ = simulation;
        format!("{} has nothing to aim at now", Self::TITLE)
    }
    /// Holding it, a quiet level is not over yet: it could still change something (an
    /// operator's decision while a call is unknown).
    fn matters_when_quiet(simulation: &Simulation) -> Result<bool, LedgerError> {
        let _ = simulation;
        Ok(false)
    }
    /// Every move it offers now, as the game offers them (the hand's targets, the console's
    /// decisions, the declaration's drafts), made as `operator`: what the sweep tries.
    fn candidates(simulation: &Simulation, operator: &str) -> Result<Vec<Play>, SimError> {
        let _ = operator;
        Ok(Self::targets(simulation)
            .into_iter()
            .map(|target| target.play)
            .collect())
    }

    // ----- the analyses -----

    /// A move the explorer deals, drawn from `rng`; with `Some(pick)`, its key is named only
    /// when it is played (`pick` chooses among the keys that exist then).
    fn deal(space: &DealSpace<'_>, rng: &mut ChaCha8Rng) -> (Self, Option<u64>);
    /// Why this move (the `index`-th played) made no difference to the money, when the run
    /// shows it did not.
    fn missed(&self, simulation: &Simulation, index: usize) -> Option<String> {
        let _ = (simulation, index);
        None
    }

    /// Reads the card as tape format 1 spelled it (by default as format 2 does).
    fn read_version_1<'de, A: VariantAccess<'de>>(variant: A) -> Result<Self, A::Error> {
        Self::deserialize(VariantAsStruct(variant))
    }
}
