//! The timeline's guard rows, told once the run's money is known. A row is written when a
//! guard acts ("tool_contract held"), before anyone knows how the run ends; a run that ends
//! with a customer owed or paid twice must not go on showing those rows as guards holding
//! (shield, safe colour, "held"), nor may a guard the debrief tells as not holding (its
//! `Debrief.guard_lines`' `holding` flag: on, but its switch left someone better off, as 22's
//! contract check that refused Ada's refund). The game, the browser and `twice-sim play`'s
//! text timeline all tell the rows through [`TimelineEntry::guard_row`].

use crate::runtime::guards::Guard;
use crate::simulator::TimelineEntry;

use super::{Outcome, Verdict};

/// What a run did wrong with its customers' money (nothing, while it goes on).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MoneyWrong {
    /// Some customer is owed money the run never paid (and nothing flags it as unknown).
    pub owed: bool,
    /// Some customer was paid more than owed.
    pub paid_twice: bool,
}

impl MoneyWrong {
    /// A customer is owed or paid twice.
    pub fn any(self) -> bool {
        self.owed || self.paid_twice
    }
}

impl Verdict {
    /// What this run did wrong with its customers' money, customer by customer.
    pub fn money_wrong(&self) -> MoneyWrong {
        let has = |outcome: Outcome| self.credits.iter().any(|credit| credit.outcome == outcome);
        MoneyWrong {
            owed: has(Outcome::NotPaidButOwed),
            paid_twice: has(Outcome::PaidTwice),
        }
    }
}

/// What the rows are told by: the finished run's money, and the guards its debrief tells as
/// not holding (`Debrief::row_telling`). The default, while the run goes on: as written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowTelling {
    pub money: MoneyWrong,
    /// Guards that were on whose debrief line is not a guard holding.
    pub not_holding: Vec<Guard>,
}

impl RowTelling {
    /// Told by the money alone (a run without a debrief: another run, a counter-example).
    pub fn of_money(money: MoneyWrong) -> RowTelling {
        RowTelling {
            money,
            not_holding: Vec::new(),
        }
    }
}

/// A guard's row of the timeline, as it may be drawn.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GuardRow {
    pub guard: Guard,
    /// It may be drawn as a guard holding: nobody in the finished run is owed or paid twice
    /// (or the run goes on).
    pub holding: bool,
    /// The row's kind: "guard held", or "guard noted" once the money says otherwise.
    pub kind: &'static str,
    /// The guard's part of the row: "tool_contract held", or what it did and what the run
    /// still did to the money (for the command line and reports; a player's screen names the
    /// guard in words: `twice_world::guards::row_words`).
    pub words: String,
    /// What the finished run still did to the money, when the row is not a guard holding.
    #[serde(skip)]
    pub still: Option<&'static str>,
}

/// The kind the simulator writes for a guard's row.
pub const GUARD_HELD: &str = "guard held";
/// The kind a guard's row is told as when the finished run left a customer owed or paid twice.
pub const GUARD_NOTED: &str = "guard noted";

impl TimelineEntry {
    /// This row's guard and how it may be told, given how the finished run ended
    /// (`RowTelling::default()` while it goes on). `None` for a row that is not a guard's.
    pub fn guard_row(&self, telling: &RowTelling) -> Option<GuardRow> {
        let guard = self.guard?;
        let money = telling.money;
        let denied = telling.not_holding.contains(&guard);
        if !money.any() && !denied {
            let still = None;
            return Some(GuardRow {
                guard,
                holding: true,
                kind: GUARD_HELD,
                words: told(guard.name(), still),
                still,
            });
        }
        let still = Some(match (money.owed, money.paid_twice) {
            (true, true) => "leaves a customer owed and pays one twice",
            (true, false) => "leaves a customer owed",
            (false, true) => "pays a customer twice",
            // The money is right, but the debrief tells this guard as costing someone.
            (false, false) => "leaves a customer worse off than without it (see the debrief)",
        });
        Some(GuardRow {
            guard,
            holding: false,
            kind: GUARD_NOTED,
            words: told(guard.name(), still),
            still,
        })
    }
}

impl GuardRow {
    /// The row's words with the guard called `guard` ("the ledger" on a player's screen,
    /// `twice_world::guards::row_words`; its identifier in [`GuardRow::words`]).
    pub fn told_as(&self, guard: &str) -> String {
        told(guard, self.still)
    }
}

/// "`guard` held", or what it did and what the run still did to the money.
fn told(guard: &str, still: Option<&str>) -> String {
    match still {
        None => format!("{guard} held"),
        Some(still) => format!("{guard} acted, yet this run {still}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulator::Actor;

    fn row(guard: Option<Guard>) -> TimelineEntry {
        TimelineEntry {
            phase: 3,
            time_ms: 20,
            actor: Actor::Worker(1),
            kind: GUARD_HELD.into(),
            run: None,
            key: None,
            text: "refused".into(),
            guard,
        }
    }

    #[test]
    fn a_guard_row_holds_only_while_nobody_is_owed_or_paid_twice() {
        let entry = row(Some(Guard::ToolContract));
        let held = entry.guard_row(&RowTelling::default()).expect("a guard's row");
        assert!(held.holding);
        assert_eq!((held.kind, held.words.as_str()), (GUARD_HELD, "tool_contract held"));
        for money in [
            MoneyWrong {
                owed: true,
                paid_twice: false,
            },
            MoneyWrong {
                owed: false,
                paid_twice: true,
            },
            MoneyWrong {
                owed: true,
                paid_twice: true,
            },
        ] {
            let told = entry.guard_row(&RowTelling::of_money(money)).expect("a guard's row");
            assert!(!told.holding, "{money:?}");
            assert_eq!(told.kind, GUARD_NOTED);
            assert!(!told.words.contains("held"), "{}", told.words);
        }
        let owed = RowTelling::of_money(MoneyWrong {
            owed: true,
            paid_twice: false,
        });
        assert_eq!(row(None).guard_row(&owed), None);
        // The debrief tells the guard as not holding: not held, though nobody is owed.
        let denied = RowTelling {
            money: MoneyWrong::default(),
            not_holding: vec![Guard::ToolContract],
        };
        let told = entry.guard_row(&denied).expect("a guard's row");
        assert!(!told.holding && told.kind == GUARD_NOTED, "{told:?}");
        assert!(
            row(Some(Guard::Ledger))
                .guard_row(&denied)
                .is_some_and(|row| row.holding)
        );
    }
}
