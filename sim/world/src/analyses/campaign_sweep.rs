//! The timing sweep: does *when* a card is played decide a level, or is the level a guess?
//!
//! For every beatable level, every card the hand holds is played at every phase of a quiet
//! run, on every target the game would offer there (the message on the wire, the worker, the
//! run, the unknown call, the declaration draft). A phase is *legal* for a card when the
//! simulator accepts at least one of its targets there, and *winning* when one of them
//! reaches the level's goal. When no single card wins, pairs are swept the same way: the
//! first card at every phase, the second at every phase from then on, and a moment is the
//! pair of phases.
//!
//! A level is *timed* when every card (or pair of cards) that can win it wins at no more
//! than half of the moments it may be played at: picking the moment is the puzzle. A card
//! that wins wherever it lands makes the level a guess between cards, whatever the others do.
//! The campaign's figure is the share of beatable levels that are timed.
//!
//! Everything is simulated with the level's own guards and one seed, on in-memory ledgers:
//! the figure is a pure function of the level files.

use crate::ledger::LedgerStore;
use crate::level::{CardKind, Level, Play};
use crate::simulator::{SimError, Simulation, SimulationBuilder};

/// The seed every sweep simulation runs with: the one the shipped tapes use.
pub const SWEEP_SEED: u64 = 1;
/// The operator the sweep plays as.
const SWEEP_OPERATOR: &str = "op-crew";

/// The moment a move is made: the phase of its first card, and of its second in a pair.
pub type Moment = (u32, Option<u32>);

/// One card, or one ordered pair of cards, swept over every moment it may be played at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MoveSweep {
    /// The card, or the pair in the order played.
    pub cards: Vec<CardKind>,
    /// Moments at which the simulator accepted the move.
    pub legal: Vec<Moment>,
    /// Moments at which the move reached the goal (a subset of `legal`).
    pub winning: Vec<Moment>,
}

impl MoveSweep {
    /// It can win, and at no more than half of its legal moments.
    pub fn is_timed(&self) -> bool {
        !self.winning.is_empty() && self.winning.len() * 2 <= self.legal.len()
    }

    pub fn wins(&self) -> bool {
        !self.winning.is_empty()
    }

    /// `LoseResponse`, or `SlowResponse+DuplicateWorker` for a pair.
    pub fn name(&self) -> String {
        self.cards.iter().map(|card| card.name()).collect::<Vec<_>>().join("+")
    }
}

/// How one beatable level fares in the sweep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelSweep {
    pub id: String,
    /// The quiet run's length: single cards are played at phases 0 to this.
    pub quiet_phases: u32,
    /// Cards per winning move looked at: 1, or 2 when no single card wins.
    pub cards_per_move: usize,
    /// Every move swept at that size.
    pub moves: Vec<MoveSweep>,
}

impl LevelSweep {
    /// Some move wins, and every move that wins is timed.
    pub fn is_timed(&self) -> bool {
        let winning: Vec<&MoveSweep> = self.moves.iter().filter(|sweep| sweep.wins()).collect();
        !winning.is_empty() && winning.iter().all(|sweep| sweep.is_timed())
    }

    /// Some move of one or two cards wins.
    pub fn is_won(&self) -> bool {
        self.moves.iter().any(MoveSweep::wins)
    }
}

/// The sweep of a whole campaign.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CampaignSweep {
    /// Beatable levels, in the order given.
    pub levels: Vec<LevelSweep>,
    /// Levels that are not swept: unbeatable ones (played as defences).
    pub skipped: Vec<String>,
}

impl CampaignSweep {
    /// Beatable levels in which timing decides.
    pub fn timed(&self) -> usize {
        self.levels.iter().filter(|level| level.is_timed()).count()
    }

    /// The campaign's figure: timed levels over beatable levels (`None` with none beatable).
    pub fn figure(&self) -> Option<f64> {
        (!self.levels.is_empty()).then(|| self.timed() as f64 / self.levels.len() as f64)
    }

    /// The sweep as a table, one line per move, for `twice-sim sweep` and the book.
    pub fn report(&self) -> String {
        let mut out = String::new();
        for level in &self.levels {
            let verdict = if level.is_timed() {
                "timed"
            } else if level.is_won() {
                "GUESS"
            } else {
                "not won by one or two cards"
            };
            out.push_str(&format!(
                "{} ({} phases quiet, moves of {} card{}): {verdict}\n",
                level.id,
                level.quiet_phases,
                level.cards_per_move,
                if level.cards_per_move == 1 { "" } else { "s" }
            ));
            for sweep in &level.moves {
                out.push_str(&format!(
                    "    {:<40} wins at {:>4} of {:>4} legal moments{}{}\n",
                    sweep.name(),
                    sweep.winning.len(),
                    sweep.legal.len(),
                    match (sweep.wins(), sweep.is_timed()) {
                        (false, _) => "",
                        (true, true) => "  (timed)",
                        (true, false) => "  (a guess: more than half)",
                    },
                    moments_text(&sweep.winning)
                ));
            }
        }
        if !self.skipped.is_empty() {
            out.push_str(&format!("not swept (unbeatable): {}\n", self.skipped.join(", ")));
        }
        match self.figure() {
            Some(figure) => out.push_str(&format!(
                "timing decides in {} of {} beatable levels ({:.0}%)\n",
                self.timed(),
                self.levels.len(),
                figure * 100.0
            )),
            None => out.push_str("no beatable level to sweep\n"),
        }
        out
    }
}

/// The first few winning moments, as phases: `: 11, 12` or `: 3+5, 3+6, …`.
fn moments_text(moments: &[Moment]) -> String {
    const SHOWN: usize = 6;
    if moments.is_empty() {
        return String::new();
    }
    let shown: Vec<String> = moments
        .iter()
        .take(SHOWN)
        .map(|(first, second)| match second {
            Some(second) => format!("{first}+{second}"),
            None => first.to_string(),
        })
        .collect();
    let more = if moments.len() > SHOWN { ", …" } else { "" };
    format!(" at phase {}{more}", shown.join(", "))
}

/// Sweeps every level given; unbeatable ones are skipped.
pub fn sweep_campaign<'a>(levels: impl IntoIterator<Item = &'a Level>) -> Result<CampaignSweep, SimError> {
    let mut sweep = CampaignSweep::default();
    for level in levels {
        if level.unbeatable {
            sweep.skipped.push(level.id.clone());
        } else {
            sweep.levels.push(sweep_level(level)?);
        }
    }
    Ok(sweep)
}

/// Sweeps one level: single cards, then pairs if no single card wins.
pub fn sweep_level(level: &Level) -> Result<LevelSweep, SimError> {
    let mut quiet = simulation(level)?;
    let quiet_phases = quiet.run()?;
    let cards = hand_cards(level);
    let mut moves = Vec::new();
    for card in &cards {
        moves.push(sweep_single(level, *card, quiet_phases)?);
    }
    if moves.iter().any(MoveSweep::wins) {
        return Ok(LevelSweep {
            id: level.id.clone(),
            quiet_phases,
            cards_per_move: 1,
            moves,
        });
    }
    let mut pairs = Vec::new();
    for first in &cards {
        for second in &cards {
            if first == second && count_of(level, *first) < 2 {
                continue;
            }
            pairs.push(sweep_pair(level, *first, *second, quiet_phases)?);
        }
    }
    Ok(LevelSweep {
        id: level.id.clone(),
        quiet_phases,
        cards_per_move: 2,
        moves: pairs,
    })
}

fn simulation(level: &Level) -> Result<Simulation, SimError> {
    SimulationBuilder::new(level.clone(), SWEEP_SEED)
        .ledger_store(LedgerStore::Memory)
        .build()
}

/// The kinds of card the hand holds, in the level's order.
fn hand_cards(level: &Level) -> Vec<CardKind> {
    level
        .cards
        .iter()
        .filter(|allowance| allowance.count > 0)
        .map(|allowance| allowance.card)
        .collect()
}

fn count_of(level: &Level, card: CardKind) -> u32 {
    level
        .cards
        .iter()
        .filter(|allowance| allowance.card == card)
        .map(|allowance| allowance.count)
        .sum()
}

/// Steps a simulation until `phase` phases have run (or it is over).
fn step_to(simulation: &mut Simulation, phase: u32) -> Result<(), SimError> {
    simulation.run_until(|simulation| simulation.phase() >= phase)?;
    Ok(())
}

/// What the moves made so far lead to: the goal reached once the level is quiet.
fn finish(mut simulation: Simulation) -> Result<bool, SimError> {
    simulation.run()?;
    let verdict = simulation.verdict().map_err(SimError::from)?;
    Ok(verdict.goal_reached)
}

/// The moves `card` offers now, as the game offers them: the hand's targets, the operator
/// console's decisions on each call it can act on, the declaration panel's drafts (each card
/// says, [`CardKind::candidates`]).
pub fn candidate_plays(card: CardKind, simulation: &Simulation) -> Result<Vec<Play>, SimError> {
    card.candidates(simulation, SWEEP_OPERATOR)
}

/// Plays `prefix` (phase, move) in order on a fresh simulation; `None` if one is refused.
fn replay_prefix(level: &Level, prefix: &[(u32, Play)]) -> Result<Option<Simulation>, SimError> {
    let mut simulation = simulation(level)?;
    for (phase, play) in prefix {
        step_to(&mut simulation, *phase)?;
        if simulation.phase() != *phase || simulation.play(play.clone()).is_err() {
            return Ok(None);
        }
    }
    Ok(Some(simulation))
}

/// At one moment after `prefix`: whether `card` is legal there and whether it wins.
fn judge_moment(level: &Level, prefix: &[(u32, Play)], card: CardKind, phase: u32) -> Result<(bool, bool), SimError> {
    let Some(mut probe) = replay_prefix(level, prefix)? else {
        return Ok((false, false));
    };
    step_to(&mut probe, phase)?;
    if probe.phase() != phase {
        return Ok((false, false));
    }
    let mut legal = false;
    for play in candidate_plays(card, &probe)? {
        let mut moves = prefix.to_vec();
        moves.push((phase, play));
        let Some(simulation) = replay_prefix(level, &moves)? else {
            continue;
        };
        legal = true;
        if finish(simulation)? {
            return Ok((true, true));
        }
    }
    Ok((legal, false))
}

/// One single move the sweep plays: where, what, and whether it reaches the level's goal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweptMove {
    pub at_phase: u32,
    pub play: Play,
    pub wins: bool,
}

/// Every single move the sweep plays in `level` and the simulator accepts, winning or losing:
/// each card of the hand at every phase of the quiet run, on every target the game offers
/// there (the moves behind [`MoveSweep::legal`] and [`MoveSweep::winning`], none left out).
pub fn single_moves(level: &Level) -> Result<Vec<SweptMove>, SimError> {
    let quiet_phases = simulation(level)?.run()?;
    let mut moves = Vec::new();
    for card in hand_cards(level) {
        for phase in 0..=quiet_phases {
            let mut probe = simulation(level)?;
            step_to(&mut probe, phase)?;
            if probe.phase() != phase {
                continue;
            }
            for play in candidate_plays(card, &probe)? {
                let Some(played) = replay_prefix(level, &[(phase, play.clone())])? else {
                    continue;
                };
                moves.push(SweptMove {
                    at_phase: phase,
                    play,
                    wins: finish(played)?,
                });
            }
        }
    }
    Ok(moves)
}

fn sweep_single(level: &Level, card: CardKind, quiet_phases: u32) -> Result<MoveSweep, SimError> {
    let mut sweep = MoveSweep {
        cards: vec![card],
        legal: Vec::new(),
        winning: Vec::new(),
    };
    for phase in 0..=quiet_phases {
        let (legal, wins) = judge_moment(level, &[], card, phase)?;
        if legal {
            sweep.legal.push((phase, None));
        }
        if wins {
            sweep.winning.push((phase, None));
        }
    }
    Ok(sweep)
}

fn sweep_pair(level: &Level, first: CardKind, second: CardKind, quiet_phases: u32) -> Result<MoveSweep, SimError> {
    let mut sweep = MoveSweep {
        cards: vec![first, second],
        legal: Vec::new(),
        winning: Vec::new(),
    };
    for first_phase in 0..=quiet_phases {
        let Some(mut probe) = replay_prefix(level, &[])? else {
            continue;
        };
        step_to(&mut probe, first_phase)?;
        if probe.phase() != first_phase {
            continue;
        }
        for first_play in candidate_plays(first, &probe)? {
            let prefix = [(first_phase, first_play)];
            let Some(mut after) = replay_prefix(level, &prefix)? else {
                continue;
            };
            // The first card may lengthen the level: the second is swept until it is quiet.
            let last_phase = first_phase + after.run()?;
            for second_phase in first_phase..=last_phase {
                let moment = (first_phase, Some(second_phase));
                let (legal, wins) = judge_moment(level, &prefix, second, second_phase)?;
                if legal && !sweep.legal.contains(&moment) {
                    sweep.legal.push(moment);
                }
                if wins && !sweep.winning.contains(&moment) {
                    sweep.winning.push(moment);
                }
            }
        }
    }
    sweep.legal.sort();
    sweep.winning.sort();
    Ok(sweep)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn swept(legal: u32, winning: u32) -> MoveSweep {
        MoveSweep {
            cards: vec![CardKind::LoseResponse],
            legal: (0..legal).map(|phase| (phase, None)).collect(),
            winning: (0..winning).map(|phase| (phase, None)).collect(),
        }
    }

    fn level_of(moves: Vec<MoveSweep>) -> LevelSweep {
        LevelSweep {
            id: "level".into(),
            quiet_phases: 10,
            cards_per_move: 1,
            moves,
        }
    }

    #[test]
    fn a_move_is_timed_when_it_wins_at_no_more_than_half_of_its_moments() {
        assert!(swept(4, 2).is_timed());
        assert!(!swept(4, 3).is_timed());
        assert!(!swept(1, 1).is_timed(), "one legal moment, and it wins: a guess");
        assert!(!swept(4, 0).is_timed(), "a move that never wins decides nothing");
    }

    #[test]
    fn one_card_that_wins_anywhere_makes_the_level_a_guess() {
        assert!(level_of(vec![swept(8, 1), swept(3, 0)]).is_timed());
        assert!(!level_of(vec![swept(8, 1), swept(3, 3)]).is_timed());
        assert!(!level_of(vec![swept(8, 0)]).is_timed());
        let sweep = CampaignSweep {
            levels: vec![level_of(vec![swept(8, 1)]), level_of(vec![swept(2, 2)])],
            skipped: vec!["vault".into()],
        };
        assert_eq!(sweep.timed(), 1);
        assert_eq!(sweep.figure(), Some(0.5));
        assert!(
            sweep
                .report()
                .contains("timing decides in 1 of 2 beatable levels (50%)")
        );
    }

    #[test]
    fn a_crash_level_is_timed_by_the_moment_of_the_crash() {
        let text = include_str!("../../../../levels/05-crash-replay.level.ron");
        let level = crate::level::parse_level(std::path::Path::new("05-crash-replay.level.ron"), text)
            .expect("level 05 parses");
        let sweep = sweep_level(&level).expect("level 05 simulates");
        assert_eq!(sweep.cards_per_move, 1);
        let crash = &sweep.moves[0];
        assert!(crash.wins() && crash.legal.len() > crash.winning.len());
    }
}
