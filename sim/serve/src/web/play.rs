//! A request on a participant's open level, kept before it is answered.
//!
//! Every change goes the same way: the level is rebuilt from its log if it is not in
//! memory, the request runs through [`Game`], a play that ended is counted, and what
//! changed (the log, the progress, a new best win's tape) is written to the room file in
//! one transaction. Only then is the level screen sent back: a move the browser saw
//! acknowledged survives a crash. When the write fails the change is undone in memory too
//! (the level is rebuilt from the log the file still has), so memory never runs ahead of
//! the file.

use axum::http::StatusCode;

use super::Shared;
use super::error::WebError;
use super::game::{Game, GameError, STEPS_PER_REQUEST_MAX};
use super::game_log::{Fingerprint, GAME_OPS_MAX, GameLog, GameOp, apply};
use super::levels::CatalogueLevel;
use super::room_file::Change;
use super::sessions::{Participant, no_level_open};
use super::views::{self, GameView};
use twice_world::code::AimError;
use twice_world::replay_link::ReplayLink;
use twice_world::runtime::guards::Guards;
use twice_world::runtime::operator::OperatorError;
use twice_world::simulator::PlayError;

/// What a request does to the open level.
#[derive(Debug)]
pub(super) enum Request {
    /// Only looks (rebuilding the level if it is not in memory).
    Look,
    Op(GameOp),
    Rewind(u32),
    Restart,
}

pub(super) fn game_error(error: GameError) -> WebError {
    match error {
        GameError::Refused(refusal) => {
            let invalid = matches!(
                refusal,
                PlayError::NotInHand(_)
                    | PlayError::BadKey(_)
                    | PlayError::NoSuchRun(_)
                    | PlayError::NoSuchTool { .. }
                    | PlayError::NotDeclarable { .. }
                    | PlayError::AttemptsOutOfRange(_)
                    | PlayError::Operator(
                        OperatorError::Reason(_) | OperatorError::MissingOperator | OperatorError::BadStatus(_)
                    )
            );
            if invalid {
                WebError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "invalid_move",
                    format!("that move does not fit this level: {refusal}"),
                )
            } else {
                WebError::conflict("move_refused", format!("the move was refused: {refusal}"))
            }
        }
        GameError::RewindAhead { .. } => WebError::invalid(format!("phase: {error}")),
        GameError::Aim(AimError::NoSuchLine(..) | AimError::LineRunsNoPhase(_)) => {
            WebError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_aim", error.to_string())
        }
        GameError::Aim(_) => WebError::conflict("aim_refused", error.to_string()),
        // A room never opens a replay: a crash is aimed only at a participant's own level.
        GameError::ReplayAims => WebError::logged("a replay was asked to aim a crash", error),
        // A room never opens a replay, so a tape and a mode that disagree are a fault here.
        GameError::Simulation(_) | GameError::Ledger(_) | GameError::TapeAndMode { .. } => {
            WebError::logged("the simulation failed", error)
        }
    }
}

fn not_kept(error: impl std::fmt::Display) -> WebError {
    WebError::logged("the room file could not be written, so the move was not kept", error)
}

/// Runs `request` on the participant's open level, counts a play that just ended, keeps
/// the change in the room file, and answers with the level screen.
pub(super) fn on_game(shared: &Shared, participant: &mut Participant, request: Request) -> Result<GameView, WebError> {
    let log = participant.log.clone().ok_or_else(no_level_open)?;
    if matches!(request, Request::Op(_)) && log.ops.len() >= GAME_OPS_MAX {
        return Err(WebError::conflict(
            "level_too_long",
            format!(
                "{GAME_OPS_MAX} moves and steps since this level was opened or rewound, the most a \
                 room keeps: rewind or restart it"
            ),
        ));
    }
    let game = participant.game_mut(&shared.catalogue)?;
    let before = Fingerprint::of(game);
    let (ended, next_log) = match request {
        Request::Look => (None, None),
        Request::Op(op) => {
            let ended = apply(game, &op).map_err(game_error)?;
            let changed = Fingerprint::of(game) != before;
            let next = log
                .after(op, changed)
                .map_err(|_| WebError::internal("the level's log is full"))?;
            (ended, (next != log).then_some(next))
        }
        Request::Rewind(phase) => {
            let ended = game.rewind(phase).map_err(game_error)?;
            (ended, Some(log.rewound(game, phase)))
        }
        Request::Restart => (game.restart().map_err(game_error)?, Some(log.restarted())),
    };
    let (level_id, mode, shows_an_end) = (game.level().id.clone(), game.mode, game.conclusion().is_some());
    let progress_before = participant.progress.clone();
    let prediction_before = participant.prediction.clone();
    participant.prediction.follow(mode, ended.as_ref(), shows_an_end);
    let prediction_changed = participant.prediction != prediction_before;
    let counted = ended.and_then(|conclusion| participant.record(&level_id, mode, &conclusion));
    let game = participant.game.as_ref().ok_or_else(no_level_open)?;
    let won_tape = match counted {
        Some(counted) if counted.new_best => {
            let tape = game
                .tape(format!(
                    "{} — won in the browser by {}",
                    game.level().title,
                    participant.name
                ))
                .map_err(game_error)?;
            Some(twice_world::level::tape_to_ron(&tape))
        }
        _ => None,
    };
    if next_log.is_some() || counted.is_some() || prediction_changed {
        let progress_at_ms = counted
            .filter(|counted| counted.first_finish)
            .map(|_| super::now_unix_ms());
        let change = Change {
            game: next_log.as_ref().map(Some),
            progress: counted.as_ref().map(|counted| (level_id.as_str(), &counted.progress)),
            won_tape: won_tape.as_deref().map(|tape| (level_id.as_str(), tape)),
            prediction: prediction_changed.then_some(&participant.prediction),
            progress_at_ms,
        };
        if let Err(error) = shared.sessions.store().save(participant.id, &change) {
            // Back to what the file holds: the level is rebuilt from the old log on the next request.
            participant.game = None;
            participant.progress = progress_before;
            participant.prediction = prediction_before;
            return Err(not_kept(error));
        }
        if let Some(next_log) = next_log {
            participant.log = Some(next_log);
        }
        if let Some(at_ms) = progress_at_ms {
            participant.progress_at_ms = Some(at_ms);
        }
    }
    let game = participant.game.as_ref().ok_or_else(no_level_open)?;
    let mut view = views::game_view(game, &game.simulation(), &shared.catalogue)
        .map_err(|error| WebError::logged("the ledger could not be read", error))?;
    view.prediction = super::prediction::view(&participant.prediction, game);
    views::forget_met_panels(&mut view, &participant.progress, &shared.catalogue);
    Ok(view)
}

/// Another run is opened: a prediction made or scored about the one before does not carry over.
fn leave_run(participant: &Participant) -> Option<super::prediction::PredictionState> {
    let mut next = participant.prediction.clone();
    next.leave_run();
    (next != participant.prediction).then_some(next)
}

/// Makes `game` the participant's open run: the run before's prediction is left, the new game
/// log saved with it in the room file, and only once both are kept are game and log installed
/// (a room file that refused the save leaves the participant as they were, minus the old game).
fn install_game(
    shared: &Shared,
    participant: &mut Participant,
    game: Game,
    log: GameLog,
) -> Result<GameView, WebError> {
    let prediction = leave_run(participant);
    let change = Change {
        game: Some(Some(&log)),
        prediction: prediction.as_ref(),
        ..Change::default()
    };
    shared
        .sessions
        .store()
        .save(participant.id, &change)
        .map_err(not_kept)?;
    participant.game = Some(game);
    participant.log = Some(log);
    if let Some(prediction) = prediction {
        participant.prediction = prediction;
    }
    on_game(shared, participant, Request::Look)
}

/// Opens a level for the participant (closing the one open before), kept in the room file.
pub(super) fn open_game(
    shared: &Shared,
    participant: &mut Participant,
    index: usize,
    entry: &CatalogueLevel,
    seed: u64,
    guards: Option<Guards>,
) -> Result<GameView, WebError> {
    // The old level (its simulation and ledger) goes before the new one is built.
    participant.game = None;
    let game = Game::open(index, &entry.level, &entry.file_name, &entry.stem, seed, guards).map_err(game_error)?;
    let log = GameLog::new(&entry.stem, seed, guards);
    install_game(shared, participant, game, log)
}

/// Opens a shared run (a replay link) at its end: the level with the link's seed and
/// guards, each move at its phase, then run until quiet. Always a sandbox play: someone
/// else's run counts for nothing in this participant's progress.
pub(super) fn open_replay(
    shared: &Shared,
    participant: &mut Participant,
    link: &ReplayLink,
) -> Result<GameView, WebError> {
    let (index, entry) = shared.catalogue.find(&link.level).ok_or_else(|| {
        WebError::not_found(
            "unknown_level",
            format!(
                "link: the replay's level `{}` is not in this room (a link opens in a room serving the same campaign)",
                link.level
            ),
        )
    })?;
    let guards = link.guards.unwrap_or(entry.level.guards);
    participant.game = None;
    let mut game = Game::open(
        index,
        &entry.level,
        &entry.file_name,
        &entry.stem,
        link.seed,
        Some(guards),
    )
    .map_err(game_error)?;
    let mut log = GameLog::new(&entry.stem, link.seed, Some(guards));
    let refused = |at_phase: u32, why: String| WebError::invalid(format!("link: the move at phase {at_phase}: {why}"));
    for action in &link.moves {
        while game.simulation().phase() < action.at_phase {
            let before = game.simulation().phase();
            let op = GameOp::Step {
                phases: (action.at_phase - before).min(STEPS_PER_REQUEST_MAX),
            };
            apply(&mut game, &op).map_err(game_error)?;
            if game.simulation().phase() == before {
                return Err(refused(
                    action.at_phase,
                    format!("the level went quiet at phase {before} before it"),
                ));
            }
            log.ops.push(op);
        }
        let op = GameOp::Play {
            play: action.play.clone(),
        };
        apply(&mut game, &op).map_err(|error| refused(action.at_phase, error.to_string()))?;
        log.ops.push(op);
    }
    let before = Fingerprint::of(&game);
    apply(&mut game, &GameOp::Run).map_err(game_error)?;
    if Fingerprint::of(&game) != before {
        log.ops.push(GameOp::Run);
    }
    install_game(shared, participant, game, log)
}
