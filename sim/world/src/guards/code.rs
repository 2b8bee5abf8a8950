//! A guard's code in the runtime's loop, in the guard's own file: the line it adds when it is
//! on and the naive line it replaces when it is off, the slot they fill, which guards they need,
//! and whether a level gives the guard anything to do. The code on screen
//! (the `program` of the code module) puts them in the skeleton's slots; nothing else writes a guard's
//! code.
//!
//! A guard "needs" another when the runtime ignores it while the other is off (the atomic
//! reservation without a ledger reserves nothing): its lines go with the other's switch.

use serde::Serialize;

use crate::level::{CardKind, Level};
use crate::runtime::guards::{Guard, Guards};
use crate::runtime::worker::Phase;

/// One guard's code.
#[derive(Clone, Copy, Debug)]
pub struct GuardCode {
    /// The guards this one means something only with: while one of them is off, this guard's
    /// lines are not shown (on or off), as the runtime does not look at it.
    pub needs: &'static [Guard],
    /// The level gives the guard something to do: a tool or card it acts on, or the level
    /// switches it off or teaches it. Read from the level alone, never from the guards in
    /// force, so switching guards in the sandbox never makes another guard's lines come or go.
    pub shown: fn(&Level) -> bool,
    /// Its lines: its own when on (`true`), the naive ones it replaces when off.
    pub lines: fn(&Context<'_>, bool) -> Vec<Piece>,
}

/// A place in the loop, in the order the loop meets them. Every line belongs to one slot; a
/// slot holds the skeleton's lines or one guard's (two guards share a slot only when at most
/// one of them can show there, such as the ledger's "no reservation" and the atomic
/// reservation, which needs the ledger).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Slot {
    Header,
    Contract,
    Policy,
    Load,
    DeadLetter,
    Person,
    Loop,
    Decide,
    Key,
    Reserve,
    Lease,
    MayRun,
    Attempts,
    Retention,
    Send,
    Late,
    Wait,
    Refusal,
    Retry,
    Record,
    Hook,
    Settle,
    Compensate,
    TellIf,
    TellUnknown,
    TellElse,
    Save,
    Park,
    Exit,
}

/// What the lines are filled in from: the level as it is now (its tools as declared, a
/// declaration the player made included) and the guards in force.
#[derive(Clone, Copy, Debug)]
pub struct Context<'a> {
    pub level: &'a Level,
    pub guards: Guards,
}

impl Context<'_> {
    /// Some tool declares its own retry policy, or the player may declare one: the attempts
    /// line reads the declaration first.
    pub(crate) fn declares_attempts(&self) -> bool {
        !self.level.declarable_tools.is_empty() || self.level.tools.iter().any(|tool| tool.attempts.is_some())
    }
}

/// One line as a guard's table or the skeleton lists it, before it is marked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    pub slot: Slot,
    pub indent: u8,
    pub code: String,
    pub note: String,
    pub phases: Vec<Phase>,
}

impl Piece {
    pub(crate) fn new(slot: Slot, indent: u8, code: impl Into<String>, phases: &[Phase]) -> Piece {
        Piece {
            slot,
            indent,
            code: code.into(),
            note: String::new(),
            phases: phases.to_vec(),
        }
    }

    /// The same line with the comment that says why.
    pub(crate) fn note(mut self, note: impl Into<String>) -> Piece {
        self.note = note.into();
        self
    }
}

/// The level deals `card`.
pub(super) fn deals(level: &Level, card: CardKind) -> bool {
    level
        .cards
        .iter()
        .any(|allowance| allowance.card == card && allowance.count > 0)
}

/// The level switches the guard off, or its lesson is about it.
pub(super) fn taught_or_off(level: &Level, guard: Guard) -> bool {
    !level.guards.is_on(guard) || level.lesson.guards.contains(&guard)
}
