//! The timeline: one line per phase of one actor, or per player's move. The actor is typed,
//! so the game lays out its lanes by kind, not by the prefix of a name (an HTTP operator
//! called `workshop` is an operator, wherever its name sorts).

use serde::{Deserialize, Serialize};

use super::Simulation;
use crate::runtime::guards::Guard;
use crate::runtime::ids::ToolName;
use crate::runtime::rules::{Fired, ReservationAction, Status};
use crate::runtime::tool::SideEffect;
use crate::runtime::worker::GuardNote;

/// Who did something on the timeline.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    /// The player's fault cards.
    Crew,
    /// An operator: the player's operator cards, a console, or someone over the HTTP API.
    Operator(String),
    /// Starts workers and restarts crashed runs.
    Supervisor,
    /// Penny's model.
    Model,
    /// Worker `w<n>`.
    Worker(u32),
    Network,
    Billing,
    /// The simulation itself (the level going quiet).
    Simulation,
}

impl Actor {
    /// The actor's name on screen and in text: `w1`, `op-ana`, `model`.
    pub fn label(&self) -> String {
        match self {
            Actor::Crew => "crew".into(),
            Actor::Operator(name) => name.clone(),
            Actor::Supervisor => "supervisor".into(),
            Actor::Model => "model".into(),
            Actor::Worker(number) => format!("w{number}"),
            Actor::Network => "network".into(),
            Actor::Billing => "billing".into(),
            Actor::Simulation => "sim".into(),
        }
    }

    /// The order of lanes: the player's side, the runtime (workers beside the model they
    /// ask), the outside world, the simulation itself.
    pub fn lane_order(&self) -> (u8, u32, &str) {
        match self {
            Actor::Crew => (0, 0, ""),
            Actor::Operator(name) => (1, 0, name),
            Actor::Supervisor => (2, 0, ""),
            Actor::Worker(number) => (3, *number, ""),
            Actor::Model => (4, 0, ""),
            Actor::Network => (5, 0, ""),
            Actor::Billing => (6, 0, ""),
            Actor::Simulation => (7, 0, ""),
        }
    }

    /// The player acted (a card or an operator's decision), not the system.
    pub fn is_player(&self) -> bool {
        matches!(self, Actor::Crew | Actor::Operator(_))
    }
}

impl std::fmt::Display for Actor {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.label())
    }
}

/// One line of the timeline: one phase of one actor, or a player's move.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineEntry {
    /// The phase number this entry ran as (a player's move: the phase it came before).
    pub phase: u32,
    pub time_ms: u64,
    pub actor: Actor,
    pub kind: String,
    pub run: Option<String>,
    pub key: Option<String>,
    pub text: String,
    /// A guard that held here, if any.
    pub guard: Option<Guard>,
}

/// A worker's rows that something arrives at (its arrow is drawn from where the key was last):
/// the answer it records, what its reconcile hook found, the settling that wakes it.
const WORKER_ARRIVALS: [&str; 3] = ["record outcome", "reconcile", "wake"];

impl TimelineEntry {
    /// The lane this entry's arrow starts in, when the entry itself says where it came from:
    /// an answer on the wire (travelling, lost or late) always comes from billing. Drawn from
    /// the lane its key was last in instead, a late answer — after its worker timed out — would
    /// point back toward billing. A worker's row starts in its own lane (no arrow: nothing
    /// arrives) unless something did arrive: an answer it records, what its reconcile hook
    /// found, the settling that wakes it. Drawn from where the key was last, a fresh worker's
    /// send or reserve after a crash pointed at it from the wire, and a timeout looked like an
    /// answer arriving. `None`: the arrow starts where the key was last drawn.
    pub fn arrow_from(&self) -> Option<Actor> {
        match (&self.actor, self.kind.as_str()) {
            (Actor::Network, "response travels" | "response lost" | "late outcome") => Some(Actor::Billing),
            (Actor::Worker(_), kind) if !WORKER_ARRIVALS.contains(&kind) => Some(self.actor.clone()),
            _ => None,
        }
    }
}

/// A row of the runtime's decision tables as it fired: in which phase, for which worker and call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleFiring {
    pub phase: u32,
    pub worker: u32,
    pub key: Option<String>,
    pub row: RuleRow,
}

/// Which table, and the inputs that chose its row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleRow {
    /// Before the run: a tool failed a start check that is on (`guard`: the seed's contract
    /// check, or the ambiguity policy) and the run was refused.
    ContractRefused { tool: ToolName, guard: Guard },
    /// Table 1: what the ledger held for the key × the side effect → what the call does.
    Reservation {
        existing: Option<Status>,
        side_effect: SideEffect,
        action: ReservationAction,
    },
    /// Table 2 (outcome) or table 3 (unknown), as the worker decided it.
    Decided(Fired),
}

/// The timeline so far, the guard notes behind its `guard held` lines, and the table rows that fired.
#[derive(Debug, Default)]
pub(super) struct Timeline {
    pub(super) entries: Vec<TimelineEntry>,
    pub(super) notes: Vec<GuardNote>,
    pub(super) rules: Vec<RuleFiring>,
}

impl Simulation {
    pub(super) fn log(&mut self, actor: Actor, kind: &str, run: Option<String>, key: Option<String>, text: String) {
        self.timeline.entries.push(TimelineEntry {
            phase: self.clock.phase,
            time_ms: self.clock.now_ms,
            actor,
            kind: kind.to_owned(),
            run,
            key,
            // The runtime's words quote statuses in backticks; on screen they are stray marks.
            text: crate::text::into_plain(text),
            guard: None,
        });
    }

    /// A guard held: its line on the timeline, and its note for the checker.
    pub(super) fn log_guard(&mut self, worker: u32, run: &str, note: GuardNote) {
        self.timeline.entries.push(TimelineEntry {
            phase: self.clock.phase,
            time_ms: self.clock.now_ms,
            actor: Actor::Worker(worker),
            kind: "guard held".into(),
            run: Some(run.to_owned()),
            key: note.key.clone(),
            text: crate::text::into_plain(crate::text::note_words(&note)),
            guard: Some(note.guard),
        });
        self.timeline.notes.push(note);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_go_crew_operators_runtime_world_by_kind_not_by_name() {
        let mut actors = vec![
            Actor::Billing,
            Actor::Worker(2),
            Actor::Model,
            Actor::Crew,
            // An HTTP operator whose name starts with nothing like "op" is still an operator.
            Actor::Operator("workshop".into()),
            Actor::Worker(10),
            Actor::Operator("ada".into()),
            Actor::Worker(1),
            Actor::Network,
            Actor::Supervisor,
            Actor::Simulation,
        ];
        actors.sort_by(|left, right| left.lane_order().cmp(&right.lane_order()));
        let labels: Vec<String> = actors.iter().map(Actor::label).collect();
        assert_eq!(
            labels,
            [
                "crew",
                "ada",
                "workshop",
                "supervisor",
                "w1",
                "w2",
                "w10",
                "model",
                "network",
                "billing",
                "sim"
            ]
        );
        assert!(Actor::Operator("workshop".into()).is_player());
        assert!(!Actor::Worker(1).is_player());
    }
}
