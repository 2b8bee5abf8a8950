//! A move hint held to the move it names. A level gives its "move" hint twice: as prose for the
//! player and as moves (`hints.move_actions`, a tape's moves). The moves are played on the level
//! (seed 1, the level's guards, as the game opens it): each is legal where it is played, and on
//! a beatable level they win. The prose is read against the run they make:
//!
//! - every phase it names is a phase a move is played at ("phase 12"), or a phase it says what
//!   the run is doing at ("w1 saves its checkpoint (phase 5)");
//! - a window of phases ("phases 3 to 5", "phase 4 or 5", "any time before phase 2") is a
//!   promise: the move played at each of them is legal and wins too;
//! - what it says the run is doing at a phase — beside it in brackets, or after it ("at phase 4,
//!   while w1 waits for billing's answer") — is what the run shows at that phase: a worker about
//!   to save its checkpoint, an answer on the wire;
//! - every key and worker it names is one the run makes.
//!
//! The idea tier is held to the same move: a phase it names is one of the move's, and what it
//! says happens then is true. What the prose says beyond these (why the heist works) is the
//! debrief's to prove, not this check's.

use crate::ledger::LedgerStore;
use crate::level::{Level, TimedAction};
use crate::runtime::worker::Phase;
use crate::simulator::{Direction, SimError, Simulation, SimulationBuilder};

/// The seed the game and the browser open a level with.
const HINT_SEED: u64 = 1;

/// Phrases that say what a worker is about to do, and the phase that means.
const WORKER_MOMENTS: [(&str, Phase); 16] = [
    ("loading its checkpoint", Phase::LoadCheckpoint),
    ("loads its checkpoint", Phase::LoadCheckpoint),
    ("waiting for billing's answer", Phase::WaitForAnswer),
    ("waits for billing's answer", Phase::WaitForAnswer),
    ("waiting for the answer", Phase::WaitForAnswer),
    ("waits for the answer", Phase::WaitForAnswer),
    ("while it waits", Phase::WaitForAnswer),
    ("save its checkpoint", Phase::SaveCheckpoint),
    ("saves its checkpoint", Phase::SaveCheckpoint),
    ("saving its checkpoint", Phase::SaveCheckpoint),
    ("record the outcome", Phase::RecordOutcome),
    ("records the outcome", Phase::RecordOutcome),
    ("about to record it", Phase::RecordOutcome),
    ("asking the model", Phase::ModelDecides),
    ("model to decide", Phase::ModelDecides),
    ("about to send", Phase::Send),
];

/// What a stretch of prose says the run is doing at a phase.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Moment {
    /// A worker alive about to run this phase (waiting for an answer counts as a phase).
    Worker(Phase),
    /// A message on the wire (not lost) in this direction, carrying this key if one is named.
    Wire(Direction, Option<String>),
}

/// How the phases of a mention are meant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reading {
    /// One phase.
    One,
    /// Any of them: a window ("3 to 5", "4 or 5", "before 2").
    Any,
    /// Each of them: "phases 4 and 5".
    Each,
}

/// A phase, or phases, the prose names, and what it says the run is doing then.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Mention {
    phases: Vec<u32>,
    reading: Reading,
    /// Any of these holds then (empty: the prose says nothing of that moment).
    moments: Vec<Moment>,
    /// The words, for a problem's message.
    said: String,
}

/// A word of the prose and where it starts.
#[derive(Clone, Copy, Debug)]
struct Word<'a> {
    at: usize,
    text: &'a str,
}

impl Word<'_> {
    /// The word without the punctuation around it, in lower case.
    fn bare(&self) -> String {
        self.text
            .trim_matches(|character: char| !character.is_alphanumeric())
            .to_lowercase()
    }
    fn number(&self) -> Option<u32> {
        self.bare().parse().ok()
    }
    fn end(&self) -> usize {
        self.at + self.text.len()
    }
}

fn words(text: &str) -> Vec<Word<'_>> {
    let mut words = Vec::new();
    let mut start = None;
    for (at, character) in text.char_indices() {
        match (character.is_whitespace(), start) {
            (true, Some(from)) => {
                words.push(Word {
                    at: from,
                    text: &text[from..at],
                });
                start = None;
            }
            (false, None) => start = Some(at),
            _ => {}
        }
    }
    if let Some(from) = start {
        words.push(Word {
            at: from,
            text: &text[from..],
        });
    }
    words
}

/// What `stretch` says the run is doing: worker moments and messages on the wire.
fn moments_in(stretch: &str) -> Vec<Moment> {
    let lower = stretch.to_lowercase();
    let mut moments: Vec<Moment> = WORKER_MOMENTS
        .iter()
        .filter(|(phrase, _)| lower.contains(phrase))
        .map(|(_, phase)| Moment::Worker(*phase))
        .collect();
    moments.dedup();
    let travels = ["on the wire", "travels", "on its way", "has left"]
        .iter()
        .any(|phrase| lower.contains(phrase));
    let key = words(stretch)
        .into_iter()
        .map(|word| {
            word.text
                .trim_matches(|character: char| !character.is_alphanumeric() && character != ':')
        })
        .find(|text| is_key(text))
        .map(str::to_owned);
    if travels && (lower.contains("answer") || lower.contains("response")) {
        moments.push(Moment::Wire(Direction::Response, key.clone()));
    }
    if travels && lower.contains("request") {
        moments.push(Moment::Wire(Direction::Request, key));
    }
    moments
}

/// `r1:c2`: a per-call key as the prose names one.
fn is_key(text: &str) -> bool {
    let Some((run, call)) = text.split_once(':') else {
        return false;
    };
    let numbered = |part: &str, letter: char| {
        part.strip_prefix(letter)
            .is_some_and(|number| !number.is_empty() && number.chars().all(|digit| digit.is_ascii_digit()))
    };
    numbered(run, 'r') && numbered(call, 'c')
}

/// The stretch of `text` before `at` back to the last break (a sentence's end, a colon, a
/// semicolon, a "then").
fn stretch_before(text: &str, at: usize) -> &str {
    let before = &text[..at];
    let start = [". ", "; ", ": ", "then "]
        .iter()
        .filter_map(|stop| before.rfind(stop).map(|found| found + stop.len()))
        .max()
        .unwrap_or(0);
    &before[start..]
}

/// The stretch of `text` from `at` to the next comma, colon, semicolon or sentence end.
fn stretch_after(text: &str, at: usize) -> &str {
    let after = &text[at..];
    let end = after.find([',', ':', ';', '.']).unwrap_or(after.len());
    &after[..end]
}

/// Every phase the prose names, as it means it.
fn mentions(text: &str) -> Vec<Mention> {
    let words = words(text);
    let mut found = Vec::new();
    for (index, word) in words.iter().enumerate() {
        if !matches!(word.bare().as_str(), "phase" | "phases") {
            continue;
        }
        let Some(first) = words.get(index + 1).and_then(Word::number) else {
            continue;
        };
        let (mut phases, mut reading, mut last) = (vec![first], Reading::One, index + 1);
        let joined = words.get(index + 2).map(Word::bare);
        if let (Some(joined), Some(second)) = (joined, words.get(index + 3).and_then(Word::number)) {
            match joined.as_str() {
                "to" => (phases, reading, last) = ((first..=second).collect(), Reading::Any, index + 3),
                "or" => (phases, reading, last) = (vec![first, second], Reading::Any, index + 3),
                "and" => (phases, reading, last) = (vec![first, second], Reading::Each, index + 3),
                _ => {}
            }
        }
        let before = index.checked_sub(1).and_then(|previous| words.get(previous));
        if before.is_some_and(|previous| previous.bare() == "before") && reading == Reading::One {
            (phases, reading) = ((0..first).collect(), Reading::Any);
        }
        // In brackets: the bracket says when the words before it happen.
        let bracketed = word.text.starts_with('(');
        let mut moments = if bracketed {
            moments_in(stretch_before(text, word.at))
        } else {
            Vec::new()
        };
        // "at phase 4, while w1 waits …": the words after it say what the run is doing then.
        let next = words.get(last + 1);
        if next.is_some_and(|next| matches!(next.bare().as_str(), "when" | "while" | "with")) {
            let from = next.map_or(text.len(), |next| next.at);
            moments.extend(moments_in(stretch_after(text, from)));
        }
        found.push(Mention {
            phases,
            reading,
            moments,
            said: text[word.at..words[last].end()].to_owned(),
        });
    }
    found
}

/// A simulation of `level` as the game opens it, with `moves` played at their phases up to
/// `until` (those at `until` are not played). `Err` says which move was refused, and why.
fn played_until(level: &Level, moves: &[TimedAction], until: Option<u32>) -> Result<Simulation, String> {
    let mut simulation = SimulationBuilder::new(level.clone(), HINT_SEED)
        .ledger_store(LedgerStore::Memory)
        .build()
        .map_err(|error| format!("cannot simulate: {error}"))?;
    let step_to = |simulation: &mut Simulation, phase: u32| -> Result<(), SimError> {
        simulation.run_until(|simulation| simulation.phase() >= phase)?;
        Ok(())
    };
    for action in moves {
        if until.is_some_and(|until| action.at_phase >= until) {
            break;
        }
        step_to(&mut simulation, action.at_phase).map_err(|error| error.to_string())?;
        if simulation.phase() != action.at_phase {
            return Err(format!(
                "the level went quiet at phase {}, before {} at phase {}",
                simulation.phase(),
                action.play.title(),
                action.at_phase
            ));
        }
        simulation.play(action.play.clone()).map_err(|error| {
            format!(
                "{} at phase {} is refused: {error}",
                action.play.title(),
                action.at_phase
            )
        })?;
    }
    if let Some(until) = until {
        step_to(&mut simulation, until).map_err(|error| error.to_string())?;
    }
    Ok(simulation)
}

/// Plays `moves` to the level's end: `Err` says what went wrong — a refused move, or no win on
/// a beatable level.
fn wins(level: &Level, moves: &[TimedAction]) -> Result<Simulation, String> {
    let mut simulation = played_until(level, moves, None)?;
    simulation.run().map_err(|error| error.to_string())?;
    let verdict = simulation.verdict().map_err(|error| error.to_string())?;
    if !level.unbeatable && !verdict.goal_reached {
        return Err(format!(
            "it does not win: {} ({}), not {}",
            verdict.outcome, verdict.summary, level.goal
        ));
    }
    Ok(simulation)
}

/// Whether `moment` is what the run shows now.
fn shows(simulation: &Simulation, moment: &Moment) -> bool {
    match moment {
        Moment::Worker(phase) => simulation
            .workers()
            .iter()
            .any(|worker| worker.alive && worker.phase == *phase),
        Moment::Wire(direction, key) => simulation.messages().any(|message| {
            message.direction == *direction && !message.lost && key.as_ref().is_none_or(|key| message.key == *key)
        }),
    }
}

fn phases_words(phases: &[u32]) -> String {
    let each: Vec<String> = phases.iter().map(u32::to_string).collect();
    crate::text::and_list(&each)
}

/// The move with every action played at a phase of `window` moved to `phase`, in phase order.
fn moved_to(moves: &[TimedAction], window: &[u32], phase: u32) -> Vec<TimedAction> {
    let mut moved: Vec<TimedAction> = moves
        .iter()
        .map(|action| TimedAction {
            at_phase: if window.contains(&action.at_phase) {
                phase
            } else {
                action.at_phase
            },
            play: action.play.clone(),
            fizzles: false,
        })
        .collect();
    moved.sort_by_key(|action| action.at_phase);
    moved
}

/// What `text` (a tier of the level's hints) says that its move or its run contradicts.
fn prose_problems(level: &Level, tier: &str, text: &str, moves: &[TimedAction]) -> Vec<String> {
    let mut problems = Vec::new();
    let played: Vec<u32> = moves.iter().map(|action| action.at_phase).collect();
    for mention in mentions(text) {
        let said = &mention.said;
        let with_a_move: Vec<u32> = mention
            .phases
            .iter()
            .copied()
            .filter(|phase| played.contains(phase))
            .collect();
        match mention.reading {
            Reading::Each if with_a_move.len() != mention.phases.len() => problems.push(format!(
                "the {tier} names {said}, but its move plays at phase {}",
                phases_words(&played)
            )),
            _ if with_a_move.is_empty() && mention.moments.is_empty() => problems.push(format!(
                "the {tier} names {said}, at which its move plays nothing and of which it says nothing the run \
                 could show: its move plays at phase {}",
                phases_words(&played)
            )),
            _ => {}
        }
        for phase in &mention.phases {
            // A window is a promise: the move played at each of its phases works too.
            let moves_here = if mention.reading == Reading::Any && !with_a_move.is_empty() {
                moved_to(moves, &with_a_move, *phase)
            } else {
                moves.to_vec()
            };
            if mention.reading == Reading::Any
                && !with_a_move.is_empty()
                && let Err(why) = wins(level, &moves_here)
            {
                problems.push(format!(
                    "the {tier} names {said}, but its move played at phase {phase}: {why}"
                ));
            }
            if mention.moments.is_empty() {
                continue;
            }
            match played_until(level, &moves_here, Some(*phase)) {
                Ok(simulation) if simulation.phase() == *phase => {
                    if !mention.moments.iter().any(|moment| shows(&simulation, moment)) {
                        problems.push(format!(
                            "the {tier} says of {said} what the run does not show at phase {phase}: {:?}; the \
                             workers then: {}",
                            mention.moments,
                            workers_now(&simulation)
                        ));
                    }
                }
                Ok(simulation) => problems.push(format!(
                    "the {tier} names {said}, but the run is over at phase {}",
                    simulation.phase()
                )),
                Err(why) => problems.push(format!("the {tier} names {said}: {why}")),
            }
        }
    }
    problems
}

/// "w1 waiting for billing's answer, w2 about to reserve" for a problem's message.
fn workers_now(simulation: &Simulation) -> String {
    let alive: Vec<String> = simulation
        .workers()
        .iter()
        .filter(|worker| worker.alive)
        .map(|worker| format!("{} {}", worker.id, crate::simulator::moment(worker.phase)))
        .collect();
    if alive.is_empty() {
        "none alive".to_owned()
    } else {
        alive.join(", ")
    }
}

/// Every way the level's move hint disagrees with the move it names, or with the run that move
/// makes (empty: none). A level without a move hint has nothing to hold.
pub fn move_hint_problems(level: &Level) -> Vec<String> {
    let Some(prose) = &level.hints.the_move else {
        return Vec::new();
    };
    let moves = &level.hints.move_actions;
    if moves.is_empty() {
        return vec![
            "the move hint names no move: give it as `move_actions` (a tape's moves), so it can be played".to_owned(),
        ];
    }
    let simulation = match wins(level, moves) {
        Ok(simulation) => simulation,
        Err(why) => return vec![format!("the move hint's move, played: {why}")],
    };
    let mut problems = Vec::new();
    if simulation.played().len() != moves.len() {
        problems.push(format!(
            "the move hint's move plays {} moves, but {} took effect",
            moves.len(),
            simulation.played().len()
        ));
    }
    problems.extend(named_problems(&simulation, prose));
    problems.extend(prose_problems(level, "move", prose, moves));
    problems.extend(prose_problems(level, "idea", &level.hints.idea, moves));
    problems
}

/// Keys and workers the prose names that the move's run never makes.
fn named_problems(simulation: &Simulation, prose: &str) -> Vec<String> {
    let keys: Vec<&str> = simulation
        .timeline()
        .iter()
        .filter_map(|entry| entry.key.as_deref())
        .collect();
    let workers = simulation.workers();
    let mut problems = Vec::new();
    for word in words(prose) {
        let text = word
            .text
            .trim_matches(|character: char| !character.is_alphanumeric() && character != ':');
        let text = text.strip_suffix("'s").unwrap_or(text);
        if is_key(text) && !keys.contains(&text) {
            problems.push(format!("the move hint names {text}, a key its move's run never makes"));
        }
        let worker = text
            .strip_prefix('w')
            .filter(|number| !number.is_empty() && number.chars().all(|digit| digit.is_ascii_digit()));
        if worker.is_some() && !workers.iter().any(|started| started.id.as_str() == text) {
            problems.push(format!(
                "the move hint names {text}, a worker its move's run never starts"
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prose_names_phases_as_it_means_them() {
        let found = mentions(
            "Make r1's next call refuse (any time before phase 2), then start a twin before w1 saves its \
             checkpoint (phase 5). Crash w1 while it waits (phases 3 to 5); at phase 4, while w1 waits for \
             billing's answer, crash it. Lose it at phase 4 or 5, and at phases 6 and 7.",
        );
        let phases: Vec<(Vec<u32>, Reading)> = found
            .iter()
            .map(|mention| (mention.phases.clone(), mention.reading))
            .collect();
        assert_eq!(
            phases,
            [
                (vec![0, 1], Reading::Any),
                (vec![5], Reading::One),
                (vec![3, 4, 5], Reading::Any),
                (vec![4], Reading::One),
                (vec![4, 5], Reading::Any),
                (vec![6, 7], Reading::Each),
            ]
        );
        assert_eq!(found[1].moments, [Moment::Worker(Phase::SaveCheckpoint)]);
        assert_eq!(found[2].moments, [Moment::Worker(Phase::WaitForAnswer)]);
        assert_eq!(found[3].moments, [Moment::Worker(Phase::WaitForAnswer)]);
        assert!(found[4].moments.is_empty());
    }

    #[test]
    fn what_travels_is_read_with_its_key() {
        assert_eq!(
            moments_in("until the answer to issue_credit (r1:c2) is on the wire"),
            [Moment::Wire(Direction::Response, Some("r1:c2".into()))]
        );
        assert_eq!(
            moments_in("while the request or billing's answer is on the wire"),
            [
                Moment::Wire(Direction::Response, None),
                Moment::Wire(Direction::Request, None)
            ]
        );
    }
}
