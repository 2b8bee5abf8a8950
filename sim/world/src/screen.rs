//! What a level screen shows, decided once for both editions (the window's and the browser's):
//! which panels a level has reached, which guards its screen names, and its goal in words.
//!
//! Panels arrive chapter by chapter. The first level shows Penny, the wire, billing, the
//! cards, the controls and the timeline (with the briefing, Penny's task and the guards); the
//! rulebook arrives when what the runtime decides about an unknown call becomes the lesson
//! (chapter 2), the ledger and its checkpoints with crashes (chapter 3), the operator console
//! with settling the unknown by hand (chapter 4). A level that deals an operator card shows
//! the console whatever its chapter: the card is played there. The sandbox, the replay viewer
//! and the window's `--unlock-all` show everything.
//!
//! A level's screen names the guards that matter to it — the ones switched off here (the crew's
//! way in) and the ones its lesson is about — in the player's words; the other guards are on,
//! and counted. A level that cannot be beaten says so in its goal: it is finished by a defence.

use crate::guards::words as guard_words;
use crate::hand;
use crate::level::Level;
use crate::outcome::Outcome;
use crate::runtime::guards::{Guard, Guards};

/// A panel that arrives later in the campaign (the others are always shown).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Panel {
    Rulebook,
    Ledger,
    Checkpoints,
    Console,
}

impl Panel {
    pub const ALL: [Panel; 4] = [Panel::Rulebook, Panel::Ledger, Panel::Checkpoints, Panel::Console];

    /// The first chapter that shows the panel.
    pub fn arrives_in_chapter(self) -> u32 {
        match self {
            Panel::Rulebook => 2,
            Panel::Ledger | Panel::Checkpoints => 3,
            Panel::Console => 4,
        }
    }

    /// Its name in progress (`panels_seen`) and in the browser's views.
    pub fn id(self) -> &'static str {
        match self {
            Panel::Rulebook => "rulebook",
            Panel::Ledger => "ledger",
            Panel::Checkpoints => "checkpoints",
            Panel::Console => "console",
        }
    }

    /// Its name on screen.
    pub fn title(self) -> &'static str {
        match self {
            Panel::Rulebook => "the rulebook",
            Panel::Ledger => "the ledger",
            Panel::Checkpoints => "the checkpoint store",
            Panel::Console => "the operator console",
        }
    }

    /// What it is for, said once when it first appears.
    pub fn introduction(self) -> &'static str {
        match self {
            Panel::Rulebook => "the runtime's decision tables; the row that fired is lit (B)",
            Panel::Ledger => "one row per idempotency key, in a real SQLite file: what the runtime knows",
            Panel::Checkpoints => "where each run saved its progress, so a restarted worker resumes",
            Panel::Console => "settle an unknown call by hand: resolve it, or ask for a compensation",
        }
    }
}

/// The panels one level shows, and the ones it shows the player for the first time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Panels {
    shown: Vec<Panel>,
    /// Shown here for the first time (the window notes it in progress when the level opens).
    pub new: Vec<Panel>,
}

impl Panels {
    /// Every panel (sandbox, replay, `--unlock-all`).
    pub fn all() -> Panels {
        Panels {
            shown: Panel::ALL.to_vec(),
            new: Vec::new(),
        }
    }

    /// The panels a campaign level shows: those its chapter has reached, and the console
    /// wherever an operator card is dealt.
    pub fn for_level(level: &Level) -> Panels {
        let shown = Panel::ALL
            .into_iter()
            .filter(|panel| {
                level.chapter >= panel.arrives_in_chapter() || (*panel == Panel::Console && deals_operator_cards(level))
            })
            .collect();
        Panels { shown, new: Vec::new() }
    }

    /// The panels this level shows that no earlier chapter showed: what a player meets here
    /// for the first time when playing the campaign in order (the browser keeps no record of
    /// which panels a participant has seen, so it introduces them where they arrive).
    pub fn arriving(level: &Level) -> Vec<Panel> {
        Panels::for_level(level)
            .shown
            .into_iter()
            .filter(|panel| level.chapter <= panel.arrives_in_chapter())
            .collect()
    }

    pub fn shows(&self, panel: Panel) -> bool {
        self.shown.contains(&panel)
    }

    pub fn shown(&self) -> &[Panel] {
        &self.shown
    }

    pub fn is_new(&self, panel: Panel) -> bool {
        self.new.contains(&panel)
    }
}

fn deals_operator_cards(level: &Level) -> bool {
    level.cards.iter().any(|allowance| hand::is_operator(allowance.card))
}

/// The guards a level's screen names, in the player's words; the rest are on and counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedGuards {
    /// Switched off in this run: the crew's way in, in teaching order.
    pub off: Vec<Guard>,
    /// On in this run and what the level's lesson is about.
    pub lesson_on: Vec<Guard>,
    /// Every other guard: on, and not what this level is about.
    pub others_on: Vec<Guard>,
}

impl ListedGuards {
    /// The guards `level` is played with (`guards`: its own, or a sandbox's choice).
    pub fn of(level: &Level, guards: Guards) -> ListedGuards {
        let off = guards.off();
        let lesson_on: Vec<Guard> = Guard::EVERY
            .into_iter()
            .filter(|guard| guards.is_on(*guard) && level.lesson.guards.contains(guard))
            .collect();
        let others_on = Guard::EVERY
            .into_iter()
            .filter(|guard| guards.is_on(*guard) && !lesson_on.contains(guard))
            .collect();
        ListedGuards {
            off,
            lesson_on,
            others_on,
        }
    }

    /// A guard in the player's words.
    pub fn words(guard: Guard) -> &'static str {
        guard_words(guard)
    }
}

/// How a level is finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finish {
    /// The crew's heist: make the run end in this outcome.
    Heist(Outcome),
    /// The runtime holds against the hand: the level is finished by a defence that holds with
    /// at most `budget` guards switched on.
    Defence { budget: u32 },
    /// The runtime holds and the level has no defender's challenge: played out, it is watched.
    Watch,
}

/// A level's goal, as its screens say it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Goal {
    pub finish: Finish,
    /// A few words for a header: "make Penny pay twice", "defend it with at most 2 guards".
    pub short: String,
    /// One sentence for the level select.
    pub sentence: String,
}

/// What the crew's heist aims at, in words: "make Penny pay twice".
pub fn heist_words(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::PaidTwice => "make Penny pay twice",
        Outcome::NotPaidButOwed => "leave a customer owed money nobody will pay",
        Outcome::UnknownFlagged => "leave a call honestly unknown",
        Outcome::PaidOnce => "make Penny pay exactly once",
        Outcome::EmailedTwice => "make Penny send a customer the same email twice",
        Outcome::ChangeUndone => "make a retried write undo someone else's change",
        Outcome::ActedAgain => "make Penny act again on a delete that worked",
        Outcome::NotDone => "leave something Penny meant to do undone",
        Outcome::DoneOnce => "make Penny do it exactly once",
    }
}

impl Goal {
    pub fn of(level: &Level) -> Goal {
        let heist = heist_words(level.goal);
        if !level.unbeatable {
            return Goal {
                finish: Finish::Heist(level.goal),
                short: heist.to_owned(),
                sentence: format!("{}: your heist finishes the level.", capitalised(heist)),
            };
        }
        match &level.defender {
            Some(defender) => {
                let guards = crate::text::counted(u64::from(defender.budget), "guard", "guards");
                Goal {
                    finish: Finish::Defence {
                        budget: defender.budget,
                    },
                    short: format!("defend it with at most {guards}"),
                    sentence: format!(
                        "The runtime holds here: play your hand and watch every attempt to {heist} fail, \
                         then defend it — switch on at most {guards} so that no heist gets through. \
                         The defence, not the hand, finishes the level."
                    ),
                }
            }
            None => Goal {
                finish: Finish::Watch,
                short: "watch the runtime hold".to_owned(),
                sentence: format!("The runtime holds here: play your hand and watch every attempt to {heist} fail."),
            },
        }
    }
}

fn capitalised(text: &str) -> String {
    let mut letters = text.chars();
    letters
        .next()
        .map(|first| first.to_uppercase().chain(letters).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::level::{CardAllowance, CardKind};

    fn level(name: &str) -> Level {
        crate::level::load_level(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../levels")
                .join(name),
        )
        .expect("the level loads")
        .level
    }

    #[test]
    fn panels_arrive_in_order_and_never_leave() {
        let mut previous: Vec<Panel> = Vec::new();
        for chapter in 1..=10 {
            let level = Level {
                chapter,
                cards: Vec::new(),
                ..level("01-naive-retry.level.ron")
            };
            let shown = Panels::for_level(&level).shown().to_vec();
            assert!(previous.iter().all(|panel| shown.contains(panel)), "chapter {chapter}");
            assert_eq!(
                shown,
                Panel::ALL
                    .into_iter()
                    .filter(|panel| chapter >= panel.arrives_in_chapter())
                    .collect::<Vec<_>>()
            );
            let arriving = Panels::arriving(&level);
            assert!(
                arriving.iter().all(|panel| panel.arrives_in_chapter() == chapter),
                "chapter {chapter}: {arriving:?}"
            );
            previous = shown;
        }
        assert!(
            previous.len() == Panel::ALL.len(),
            "every panel has arrived by the last chapter"
        );
    }

    #[test]
    fn an_operator_card_brings_the_console_in_any_chapter() {
        let mut first = level("01-naive-retry.level.ron");
        assert!(!Panels::for_level(&first).shows(Panel::Console));
        first.cards.push(CardAllowance {
            card: CardKind::OperatorResolve,
            count: 1,
        });
        assert!(Panels::for_level(&first).shows(Panel::Console));
        assert_eq!(Panels::arriving(&first), [Panel::Console]);
    }

    #[test]
    fn level_01_names_its_four_open_doors_and_counts_the_rest() {
        let first = level("01-naive-retry.level.ron");
        let listed = ListedGuards::of(&first, first.guards);
        for guard in [
            Guard::WriteRetryRule,
            Guard::PauseOnIndeterminate,
            Guard::KeyDownstream,
            Guard::ReconcileHook,
        ] {
            assert!(listed.off.contains(&guard), "{guard:?} is off in 01: {listed:?}");
        }
        assert_eq!(listed.off.len(), 4, "{listed:?}");
        assert!(listed.lesson_on.is_empty(), "its lesson's guard is off: {listed:?}");
        assert_eq!(
            listed.off.len() + listed.lesson_on.len() + listed.others_on.len(),
            Guard::EVERY.len()
        );
        assert_eq!(ListedGuards::words(Guard::WriteRetryRule), "the write retry rule");
        // Level 02 turns the lesson's guard on: it is named, not counted among the rest.
        let second = level("02-one-attempt.level.ron");
        let listed = ListedGuards::of(&second, second.guards);
        assert_eq!(listed.lesson_on, [Guard::WriteRetryRule]);
        assert!(!listed.others_on.contains(&Guard::WriteRetryRule));
    }

    #[test]
    fn a_level_finished_by_defending_says_so() {
        let first = Goal::of(&level("01-naive-retry.level.ron"));
        assert_eq!(first.finish, Finish::Heist(Outcome::PaidTwice));
        assert_eq!(first.short, "make Penny pay twice");
        let second = level("02-one-attempt.level.ron");
        assert!(second.unbeatable);
        let goal = Goal::of(&second);
        let budget = second.defender.as_ref().expect("02 has a defender's challenge").budget;
        assert_eq!(goal.finish, Finish::Defence { budget });
        assert!(goal.short.starts_with("defend it with at most"), "{}", goal.short);
        assert!(!goal.short.contains("paid twice"), "{}", goal.short);
        assert!(
            goal.sentence.contains("The defence, not the hand, finishes the level"),
            "{}",
            goal.sentence
        );
    }
}
