//! The player's moves: the crew's hand, the moves still to come (a tape), those made, and what
//! each wire card hit. What a card does is its own module's (`crate::cards`); here, the
//! bookkeeping every move shares — the hand, the timeline, the move as made.

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

use super::timeline::Actor;
use super::{PlayError, Simulation};
use crate::cards::{Armed, CardKind, Play};
use crate::level::TimedAction;

/// Which message a wire card hit: the move (its index in [`Simulation::played`]) and the
/// message, with the phase it was put on the wire in. A version 1 tape becomes a version 2
/// one by playing each wire card just after its message left ([`crate::upgrade`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WireHit {
    pub played: usize,
    pub message: u32,
    pub key: String,
    pub sent_at_phase: u32,
}

/// A move from the tape that did not do what its line says: it fizzled (the card was refused
/// where it was played), or it was played before its phase because the run had gone quiet.
/// A replay reports it at the tape's line unless the move is marked `fizzles: true`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Misplay {
    /// The move's index in the tape's actions.
    pub index: usize,
    /// The phase the tape names for it.
    pub at_phase: u32,
    /// The phase it met instead.
    pub met_phase: u32,
    /// Whether it fizzled (or else was played early).
    pub fizzled: bool,
    pub why: String,
}

/// The crew's hand, what it armed, the moves still to come (a tape) and those made.
#[derive(Debug)]
pub(super) struct Crew {
    pub(super) hand: BTreeMap<CardKind, u32>,
    pub(super) armed: Armed,
    pub(super) pending: VecDeque<TimedAction>,
    pub(super) played: Vec<TimedAction>,
    pub(super) wire_hits: Vec<WireHit>,
    /// The index in the tape's actions of the next pending move.
    pub(super) next_action: usize,
    pub(super) misplays: Vec<Misplay>,
}

impl Crew {
    /// An armed move (the `played`-th) met its message: note which.
    pub(super) fn armed_card_met(&mut self, played: usize, message: u32, key: &str, sent_at_phase: u32) {
        self.wire_hits.push(WireHit {
            played,
            message,
            key: key.to_owned(),
            sent_at_phase,
        });
    }
}

impl Simulation {
    pub(super) fn apply_due_actions(&mut self) {
        while self
            .crew
            .pending
            .front()
            .is_some_and(|action| action.at_phase <= self.clock.phase)
        {
            let action = self.crew.pending.pop_front().expect("checked");
            self.apply_action(action);
        }
    }

    /// Plays the tape's next move now, noting it if it fizzles or comes before its phase.
    pub(super) fn apply_action(&mut self, action: TimedAction) {
        let index = self.crew.next_action;
        self.crew.next_action += 1;
        let phase = self.clock.phase;
        if action.at_phase > phase {
            self.crew.misplays.push(Misplay {
                index,
                at_phase: action.at_phase,
                met_phase: phase,
                fizzled: false,
                why: format!(
                    "the run went quiet at phase {phase}, before phase {}: the move was played then",
                    action.at_phase
                ),
            });
        }
        if let Err(error) = self.play(action.play.clone()) {
            let why = format!("{}: {error}", action.play.title());
            self.crew.misplays.push(Misplay {
                index,
                at_phase: action.at_phase,
                met_phase: phase,
                fizzled: true,
                why: why.clone(),
            });
            self.log(Actor::Crew, "fizzled", action.play.run().map(str::to_owned), None, why);
        }
    }

    /// The tape's moves that fizzled or were played before their phase, in the order met.
    pub fn misplays(&self) -> &[Misplay] {
        &self.crew.misplays
    }

    /// Plays a card (or an operator move) now; it takes effect before the next phase.
    /// A refused move changes nothing and uses no card.
    pub fn play(&mut self, play: Play) -> Result<(), PlayError> {
        if self.clock.phase >= self.level.max_phases {
            return Err(PlayError::LevelOver);
        }
        let card = play.card();
        play.before_the_hand(self)?;
        match self.crew.hand.get(&card) {
            None => return Err(PlayError::NotInHand(card.name())),
            Some(0) => return Err(PlayError::NoneLeft(card.name())),
            Some(_) => {}
        }
        let made = play.fire(self)?;
        // A quiet level wakes up: an operator's decision or a new worker brings new phases.
        self.ended = false;
        *self.crew.hand.get_mut(&card).expect("checked in hand") -= 1;
        // The move as made: a tape saved from it names the message it hit, the worker it killed
        // and the phase that worker was about to run, whatever the move left to be chosen.
        let run = play.run().map(str::to_owned);
        self.crew.played.push(TimedAction {
            at_phase: self.clock.phase,
            play: made.made.unwrap_or(play),
            fizzles: false,
        });
        // The timeline names the move as the hand does ("crash a worker"), never by the
        // identifier tapes spell it with (`CrashWorker`).
        self.log(made.actor, move_words(card), run, None, made.text);
        if made.redeploy {
            self.redeploy();
        }
        Ok(())
    }

    /// A new declaration is a new deployment: every worker stops and every run starts again
    /// under it, so each one meets the contract check (when it is on) before it starts. Nothing
    /// is lost: no call has been made yet (a declaration is refused after Penny's first call),
    /// so no worker holds a reservation, a request or a checkpoint of one.
    fn redeploy(&mut self) {
        assert!(
            self.first_call.is_none(),
            "a tool is declared before Penny's first call"
        );
        let alive: Vec<(u32, String)> = self
            .workers
            .slots
            .iter()
            .filter(|(_, slot)| slot.alive)
            .map(|(number, slot)| (*number, slot.machine.run_id().to_string()))
            .collect();
        for (worker, run) in alive {
            self.retire(worker);
            self.log(
                Actor::Supervisor,
                "redeploy",
                Some(run),
                None,
                format!("w{worker} stops: Penny is deployed again with the new declaration"),
            );
        }
        let runs: Vec<crate::runtime::ids::RunId> = self.level.runs.iter().map(|run| run.id.clone()).collect();
        for run in runs {
            self.spawn_worker(&run, "starts the run under the new declaration", super::FIRST_NODE);
        }
    }
}

/// A card's title as a timeline row's kind: "Crash a worker" → "crash a worker", like the
/// other rows' kinds ("model decides", "guard held"). Made once per kind: a scenario plays
/// several moves, and the simulator's speed is measured.
fn move_words(card: CardKind) -> &'static str {
    static WORDS: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
        CardKind::ALL
            .iter()
            .map(|kind| {
                let mut words = kind.title().to_owned();
                // Titles are English words; `get_mut` leaves any other first letter as it is.
                if let Some(first) = words.get_mut(..1) {
                    first.make_ascii_lowercase();
                }
                words
            })
            .collect()
    });
    &WORDS[card as usize]
}
