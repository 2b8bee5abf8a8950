//! The presenter's room at a glance, for a workshop of any size: one row per level (how many
//! are on it, have finished it, have lost it more than N times, have made no progress for M
//! minutes), who needs help and why, everyone the room keeps (shown on demand), and a
//! scoreboard by par. Sixty people are a few rows, not a page per person.

use std::collections::BTreeMap;

use serde::Serialize;

use super::super::game::Mode;
use super::super::levels::Catalogue;
use super::super::sessions::{LevelProgress, Participant, Place, Win};
use super::lobby::{ParView, WinView, par_of, win_view};
use super::{Look, RaceCandidateView, RaceView, outcome_look};
use twice_world::text::counted;

/// The presenter's two settings for "who needs help".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Thresholds {
    /// Someone who lost a level more than this many times needs help with it.
    pub losses_over: u32,
    /// Someone here who finished no new level for this many minutes needs help.
    pub quiet_minutes: u32,
}

impl Default for Thresholds {
    fn default() -> Thresholds {
        Thresholds {
            losses_over: 3,
            quiet_minutes: 5,
        }
    }
}

/// One participant, as the overview needs them (taken while their lock was held).
#[derive(Clone, Debug)]
pub struct Person {
    pub name: String,
    pub place: Place,
    /// The level open now, by stem, and its mode; its phase when it is in memory.
    pub open: Option<(String, Mode, Option<u32>)>,
    pub progress: BTreeMap<String, LevelProgress>,
    /// Minutes since they joined or last finished a level for the first time.
    pub quiet_minutes: u64,
    pub idle_seconds: u64,
}

impl Person {
    pub fn of(participant: &Participant, place: Place, idle_seconds: u64, now_ms: u64, room_opened_ms: u64) -> Person {
        let since_ms = participant.progress_at_ms.unwrap_or(room_opened_ms);
        Person {
            name: participant.name.clone(),
            place,
            open: participant.log.as_ref().map(|log| {
                let mode = if log.guards.is_some() {
                    Mode::Sandbox
                } else {
                    Mode::Campaign
                };
                (
                    log.stem.clone(),
                    mode,
                    participant.game.as_ref().map(|game| game.simulation().phase()),
                )
            }),
            progress: participant.progress.clone(),
            quiet_minutes: now_ms.saturating_sub(since_ms) / 60_000,
            idle_seconds,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct WinLineView {
    pub level: String,
    pub number: String,
    pub level_title: String,
    pub win: WinView,
}

/// One person, shown on demand.
#[derive(Clone, Debug, Serialize)]
pub struct ParticipantView {
    pub name: String,
    /// `here`, `away` or `left`.
    pub place: &'static str,
    /// The level open now: its stem, number and title.
    pub stem: Option<String>,
    pub number: Option<String>,
    pub level: Option<String>,
    pub mode: Option<&'static str>,
    pub phase: Option<u32>,
    pub finished: u32,
    /// Tries that did not finish the level open now.
    pub losses_here: u32,
    pub quiet_minutes: u64,
    pub idle_seconds: u64,
    pub wins: Vec<WinLineView>,
    /// Why they may need help, in sentences; empty when they seem fine.
    pub help: Vec<String>,
}

/// One level of the campaign, as the room plays it.
#[derive(Clone, Debug, Serialize)]
pub struct LevelRowView {
    pub stem: String,
    pub number: String,
    pub title: String,
    pub chapter: u32,
    pub on_path: bool,
    /// Here now with it open.
    pub on_it: u32,
    pub finished: u32,
    /// Lost it more than the threshold's times.
    pub lost_over: u32,
    /// On it now, here, with no progress for the threshold's minutes.
    pub stuck: u32,
}

#[derive(Clone, Debug, Serialize)]
pub struct ScoreView {
    pub rank: u32,
    pub name: String,
    pub cards: u32,
    pub phases: u32,
    pub outcome: Look,
    /// How far over par (cards, then phases), once the level has one.
    pub over_par: Option<ParView>,
}

#[derive(Clone, Debug, Serialize)]
pub struct BoardView {
    pub level: String,
    pub number: String,
    pub level_title: String,
    pub par: Option<ParView>,
    pub scores: Vec<ScoreView>,
}

/// The presenter's page.
#[derive(Clone, Debug, Serialize)]
pub struct RoomView {
    /// Everyone the room keeps, here or not (after a restart, at once).
    pub kept: u32,
    /// Holding one of the room's places now.
    pub here: u32,
    pub sessions_max: u32,
    pub idle_minutes: u64,
    pub unlock_all: bool,
    /// The room's path (level stems), open to everyone whatever the lock chain.
    pub path: Vec<String>,
    /// The same levels as the pages number them (`2.1`), in the same order.
    pub path_numbers: Vec<String>,
    pub thresholds: Thresholds,
    /// The levels anyone is on, has played, or the path opens; in the campaign's order.
    pub levels: Vec<LevelRowView>,
    /// Who needs help, the longest stuck first.
    pub help: Vec<ParticipantView>,
    /// Everyone, by name (the page shows them on demand).
    pub people: Vec<ParticipantView>,
    pub scoreboard: Vec<BoardView>,
    pub race: RaceView,
    pub race_candidates: Vec<RaceCandidateView>,
}

/// What the overview is made from, besides the people.
#[derive(Debug)]
pub struct OverviewInput<'a> {
    pub catalogue: &'a Catalogue,
    pub path: &'a [String],
    pub thresholds: Thresholds,
}

fn finished_count(progress: &BTreeMap<String, LevelProgress>) -> u32 {
    u32::try_from(progress.values().filter(|progress| progress.finished).count()).unwrap_or(u32::MAX)
}

fn participant_view(person: &Person, input: &OverviewInput<'_>) -> ParticipantView {
    let catalogue = input.catalogue;
    let open = person
        .open
        .as_ref()
        .and_then(|(stem, mode, phase)| Some((catalogue.find(stem)?.1, *mode, *phase)));
    let losses_here = open
        .as_ref()
        .and_then(|(entry, _, _)| person.progress.get(&entry.level.id))
        .map_or(0, |progress| progress.losses);
    let mut help = Vec::new();
    if person.place == Place::Here {
        if let Some((entry, Mode::Campaign, _)) = &open
            && losses_here > input.thresholds.losses_over
            && !person
                .progress
                .get(&entry.level.id)
                .is_some_and(|progress| progress.finished)
        {
            help.push(format!(
                "lost {} {} {} times and has not finished it",
                entry.number(),
                entry.level.title,
                losses_here
            ));
        }
        if person.quiet_minutes >= u64::from(input.thresholds.quiet_minutes) {
            help.push(format!(
                "no new level finished for {}",
                counted(person.quiet_minutes, "minute", "minutes")
            ));
        }
    }
    ParticipantView {
        name: person.name.clone(),
        place: person.place.name(),
        stem: open.as_ref().map(|(entry, _, _)| entry.stem.clone()),
        number: open.as_ref().map(|(entry, _, _)| entry.number().to_owned()),
        level: open.as_ref().map(|(entry, _, _)| entry.level.title.clone()),
        mode: open.as_ref().map(|(_, mode, _)| mode.name()),
        phase: open.as_ref().and_then(|(_, _, phase)| *phase),
        finished: finished_count(&person.progress),
        losses_here,
        quiet_minutes: person.quiet_minutes,
        idle_seconds: person.idle_seconds,
        wins: catalogue
            .levels()
            .iter()
            .filter_map(|entry| {
                let best = person.progress.get(&entry.level.id)?.best?;
                Some(WinLineView {
                    level: entry.stem.clone(),
                    number: entry.number().to_owned(),
                    level_title: entry.level.title.clone(),
                    win: win_view(&best),
                })
            })
            .collect(),
        help,
    }
}

/// The overview's rows, help list and people (the caller adds the race and the settings).
pub fn overview(
    people: &[Person],
    input: &OverviewInput<'_>,
) -> (Vec<LevelRowView>, Vec<ParticipantView>, Vec<ParticipantView>) {
    let views: Vec<ParticipantView> = people.iter().map(|person| participant_view(person, input)).collect();
    let levels = input
        .catalogue
        .levels()
        .iter()
        .filter_map(|entry| {
            let id = &entry.level.id;
            let progress: Vec<&LevelProgress> = people.iter().filter_map(|person| person.progress.get(id)).collect();
            let on: Vec<(&Person, &ParticipantView)> = people
                .iter()
                .zip(&views)
                .filter(|(person, view)| person.place == Place::Here && view.stem.as_deref() == Some(&entry.stem))
                .collect();
            let on_path = input.path.contains(id);
            if progress.is_empty() && on.is_empty() && !on_path {
                return None;
            }
            let count = |items: usize| u32::try_from(items).unwrap_or(u32::MAX);
            Some(LevelRowView {
                stem: entry.stem.clone(),
                number: entry.number().to_owned(),
                title: entry.level.title.clone(),
                chapter: entry.level.chapter,
                on_path,
                on_it: count(on.len()),
                finished: count(progress.iter().filter(|progress| progress.finished).count()),
                lost_over: count(
                    progress
                        .iter()
                        .filter(|progress| progress.losses > input.thresholds.losses_over)
                        .count(),
                ),
                stuck: count(
                    on.iter()
                        .filter(|(person, _)| person.quiet_minutes >= u64::from(input.thresholds.quiet_minutes))
                        .count(),
                ),
            })
        })
        .collect();
    let mut help: Vec<ParticipantView> = views.iter().filter(|view| !view.help.is_empty()).cloned().collect();
    help.sort_by(|left, right| {
        (right.help.len(), right.quiet_minutes, right.losses_here).cmp(&(
            left.help.len(),
            left.quiet_minutes,
            left.losses_here,
        ))
    });
    (levels, help, views)
}

/// One board per level anyone finished: fewest cards, then fewest phases, then name.
pub fn scoreboard(catalogue: &Catalogue, wins: &[(String, BTreeMap<String, LevelProgress>)]) -> Vec<BoardView> {
    catalogue
        .levels()
        .iter()
        .filter_map(|entry| {
            let par = par_of(&entry.level);
            let mut scores: Vec<(String, Win)> = wins
                .iter()
                .filter_map(|(name, progress)| Some((name.clone(), progress.get(&entry.level.id)?.best?)))
                .collect();
            if scores.is_empty() {
                return None;
            }
            scores.sort_by(|left, right| {
                (left.1.cards, left.1.phases, left.0.to_lowercase()).cmp(&(
                    right.1.cards,
                    right.1.phases,
                    right.0.to_lowercase(),
                ))
            });
            Some(BoardView {
                level: entry.stem.clone(),
                number: entry.number().to_owned(),
                level_title: entry.level.title.clone(),
                par,
                scores: scores
                    .into_iter()
                    .enumerate()
                    .map(|(index, (name, win))| ScoreView {
                        rank: u32::try_from(index + 1).unwrap_or(u32::MAX),
                        name,
                        cards: win.cards,
                        phases: win.phases,
                        outcome: outcome_look(win.outcome),
                        over_par: par.map(|par| ParView {
                            cards: win.cards.saturating_sub(par.cards),
                            phases: win.phases.saturating_sub(par.phases),
                        }),
                    })
                    .collect(),
            })
        })
        .collect()
}
