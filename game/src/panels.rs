//! Panels arrive chapter by chapter. The first level shows Penny, the wire, billing, the
//! cards, the controls and the timeline (with the briefing, Penny's task and the guards); the
//! rulebook arrives when what the runtime decides about an unknown call becomes the lesson
//! (chapter 2), the ledger and its checkpoints with crashes (chapter 3), the operator console
//! with settling the unknown by hand (chapter 4). A level that deals an operator card shows
//! the console whatever its chapter: the card is played there. The sandbox, the replay viewer
//! and `--unlock-all` show everything.
//!
//! Which panels a level shows is decided when it opens, from its chapter and its cards;
//! a panel's first appearance is noted once in progress ("new: the ledger").

use twice_world::hand;
use twice_world::level::Level;

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

    /// Its name in progress (`panels_seen`).
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
    /// Shown here for the first time (noted in progress when the level opened).
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
        let deals_operator_cards = level.cards.iter().any(|allowance| hand::is_operator(allowance.card));
        let shown = Panel::ALL
            .into_iter()
            .filter(|panel| {
                level.chapter >= panel.arrives_in_chapter() || (*panel == Panel::Console && deals_operator_cards)
            })
            .collect();
        Panels { shown, new: Vec::new() }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panels_arrive_in_order_and_never_leave() {
        let mut previous: Vec<Panel> = Vec::new();
        for chapter in 1..=10 {
            let level = Level {
                chapter,
                cards: Vec::new(),
                ..twice_world::level::load_level(
                    &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../levels/01-naive-retry.level.ron"),
                )
                .expect("level 01 loads")
                .level
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
            previous = shown;
        }
        assert!(
            previous.len() == Panel::ALL.len(),
            "every panel has arrived by the last chapter"
        );
    }
}
