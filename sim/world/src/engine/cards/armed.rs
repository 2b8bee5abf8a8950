//! Moves armed for a moment still to come: a whisper to the model, a refusal before the next
//! send, and — in version 1 tapes — a wire card waiting for the next message. Each waits as the
//! [`Play`] it is, and its card says when it fires ([`super::Card::fires_at`]).

use serde::Serialize;

use super::{CardKind, Fired, Play, Trigger};

/// One armed move, and which of the moves played it was.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ArmedMove {
    pub play: Play,
    /// Its index among the moves played.
    pub played: usize,
}

/// What the crew has armed, oldest first.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Armed {
    moves: Vec<ArmedMove>,
}

impl Armed {
    /// The moves armed, oldest first.
    pub fn moves(&self) -> &[ArmedMove] {
        &self.moves
    }

    pub fn is_empty(&self) -> bool {
        self.moves.is_empty()
    }

    /// Whether a move of `card` naming `run` is still waiting.
    pub fn holds(&self, card: CardKind, run: &str) -> bool {
        self.moves
            .iter()
            .any(|waiting| waiting.play.card() == card && waiting.play.run() == Some(run))
    }

    /// Arms `play` (the `played`-th move): it takes the place of an armed move it replaces.
    pub(crate) fn arm(&mut self, play: Play, played: usize) {
        self.moves.retain(|waiting| !play.replaces(&waiting.play));
        self.moves.push(ArmedMove { play, played });
    }

    /// The oldest armed move of each kind whose moment `trigger` is, without taking them: what
    /// each does, its card and its place among the armed.
    pub(crate) fn due(&self, trigger: &Trigger<'_>) -> Vec<(usize, CardKind, Fired)> {
        let mut due: Vec<(usize, CardKind, Fired)> = Vec::new();
        if self.moves.is_empty() {
            return due;
        }
        for (index, waiting) in self.moves.iter().enumerate() {
            let card = waiting.play.card();
            if due.iter().any(|(_, fired_card, _)| *fired_card == card) {
                continue;
            }
            if let Some(fired) = waiting.play.fires_at(trigger) {
                due.push((index, card, fired));
            }
        }
        due
    }

    /// Takes the armed moves at `indices` (from [`Armed::due`]): they have fired. Answers which
    /// of the moves played each was, in the order given.
    pub(crate) fn take(&mut self, indices: &[usize]) -> Vec<usize> {
        let played = indices.iter().map(|index| self.moves[*index].played).collect();
        let mut sorted = indices.to_vec();
        sorted.sort_unstable();
        for index in sorted.into_iter().rev() {
            self.moves.remove(index);
        }
        played
    }

    /// Fires what is due at `trigger`: takes it, and answers what each does and which move it
    /// was.
    pub(crate) fn fire(&mut self, trigger: &Trigger<'_>) -> Vec<(CardKind, Fired, usize)> {
        if self.moves.is_empty() {
            return Vec::new();
        }
        let due = self.due(trigger);
        let indices: Vec<usize> = due.iter().map(|(index, _, _)| *index).collect();
        let played = self.take(&indices);
        due.into_iter()
            .zip(played)
            .map(|((_, card, fired), played)| (card, fired, played))
            .collect()
    }

    /// What is armed, one line per kind, in words a player reads (the game's status line and
    /// the browser's "armed" list). Empty when nothing is armed.
    pub fn lines(&self) -> Vec<String> {
        CardKind::ALL.iter().flat_map(|card| card.armed_words(self)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cards::{LoseRequest, LoseResponse, ModelCallsAgain, SlowResponse, ToolFailsBeforeSending};

    fn armed(plays: Vec<Play>) -> Armed {
        let mut armed = Armed::default();
        for (played, play) in plays.into_iter().enumerate() {
            armed.arm(play, played);
        }
        armed
    }

    #[test]
    fn armed_lines_count_in_words_singular_for_one_in_the_hands_order() {
        assert!(Armed::default().lines().is_empty());
        let refusal = |run: &str| ToolFailsBeforeSending { run: run.into() }.into();
        let armed = armed(vec![
            refusal("r3"),
            LoseResponse { key: None }.into(),
            ModelCallsAgain {
                run: "r1".into(),
                reword: true,
            }
            .into(),
            LoseRequest { key: None }.into(),
            LoseResponse { key: None }.into(),
            refusal("r2"),
            SlowResponse { key: None }.into(),
            refusal("r3"),
        ]);
        assert_eq!(
            armed.lines(),
            [
                "the next request will be lost",
                "the next 2 responses will be lost",
                "the next response will be slowed",
                "Penny will call again on r1, reworded",
                "1 call on r2 will refuse before sending",
                "2 calls on r3 will refuse before sending",
            ]
        );
    }

    #[test]
    fn a_second_whisper_on_a_run_replaces_the_first_and_each_kind_fires_oldest_first_once_a_moment() {
        let whisper = |run: &str, reword| {
            ModelCallsAgain {
                run: run.into(),
                reword,
            }
            .into()
        };
        let mut armed = armed(vec![
            whisper("r1", false),
            whisper("r2", false),
            whisper("r1", true),
            SlowResponse { key: None }.into(),
            LoseResponse { key: None }.into(),
            LoseResponse { key: None }.into(),
        ]);
        assert_eq!(
            armed.moves().len(),
            5,
            "the second whisper on r1 took the first's place"
        );
        assert_eq!(
            armed.due(&Trigger::ModelAsked { node: "r1" }),
            [(1, CardKind::ModelCallsAgain, Fired::CallAgain { reword: true })]
        );
        // An answer leaving meets one slow and the oldest lose: both fire, each noted as its move.
        assert_eq!(
            armed.fire(&Trigger::AnswerLeaves),
            [
                (CardKind::SlowResponse, Fired::Slow, 3),
                (CardKind::LoseResponse, Fired::Lose, 4)
            ]
        );
        assert_eq!(
            armed.fire(&Trigger::AnswerLeaves),
            [(CardKind::LoseResponse, Fired::Lose, 5)]
        );
        assert!(armed.fire(&Trigger::AnswerLeaves).is_empty());
        assert!(
            armed.fire(&Trigger::RequestLeaves).is_empty(),
            "nothing waits for a request"
        );
        assert!(armed.holds(CardKind::ModelCallsAgain, "r2"));
        assert!(!armed.holds(CardKind::ModelCallsAgain, "r3"));
    }
}
