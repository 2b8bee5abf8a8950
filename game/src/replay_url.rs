//! `twice --replay-url URL`: a run someone shared from the browser's debrief, opened here at
//! its end. The link (`#replay=1.<level>.<seed>.<guards>.<moves>`, read by
//! [`twice_world::replay_link`]) holds a level of the campaign, a seed, the guards and the
//! moves. It opens as the browser opens it (`POST /api/replay`): a sandbox play of that level
//! with that seed and those guards, stepped to each move's phase, the move played, then run
//! to the end. Steps and moves go in as [`Intent`]s, as a player's would; someone else's run
//! counts for nothing in this player's progress.

use std::path::{Path, PathBuf};

use bevy::prelude::*;
use twice_world::campaign::LEVEL_SUFFIX;
use twice_world::level::{self, TimedAction};
use twice_world::replay_link::ReplayLink;

use crate::campaign::Campaign;
use crate::session::{Intent, Mode, OpenProblem, Session, SessionSet};

/// Steps sent in one frame at most, so a long way to the next move does not stall a frame.
const STEPS_PER_FRAME_MAX: u32 = 200;

pub(super) fn plugin(app: &mut App) {
    app.add_message::<OpenReplayLink>();
    app.add_systems(Update, (open_link, drive_link).chain().before(SessionSet::Intents));
}

/// Open this shared run at its end (sent by the command line, or a test).
#[derive(Message, Clone, Debug, PartialEq)]
pub struct OpenReplayLink(pub ReplayLink);

/// A shared run being brought to its end; `done` once it is (or once it could not be).
#[derive(Debug, Resource)]
pub struct ReplayLinkRun {
    pub link: ReplayLink,
    /// The level file the link names.
    pub path: PathBuf,
    /// The next move to play.
    next: usize,
    /// Moves made so far, to see that the last one was taken.
    played: usize,
    /// Asked for the run to the end.
    finishing: bool,
    pub done: bool,
}

/// The campaign level a link names: by its id or its file stem, as the browser finds it.
pub fn level_named<'a>(levels: impl IntoIterator<Item = &'a Path>, name: &str) -> Option<PathBuf> {
    levels.into_iter().find_map(|path| {
        let stem = path
            .file_name()
            .and_then(|file_name| file_name.to_str())
            .and_then(|file_name| file_name.strip_suffix(LEVEL_SUFFIX));
        if stem == Some(name) {
            return Some(path.to_path_buf());
        }
        let loaded = level::load_level(path).ok()?;
        (loaded.level.id == name).then(|| path.to_path_buf())
    })
}

/// Before a window opens: the link reads and its level is in the campaign folder.
pub fn check(text: &str, levels_folder: &Path) -> Result<ReplayLink, crate::options::StartError> {
    let link = ReplayLink::parse(text)
        .map_err(|error| crate::options::StartError::flag("replay-url", format!("--replay-url: {error}")))?;
    let files = level::files_below(levels_folder, LEVEL_SUFFIX).map_err(|error| {
        crate::options::StartError::flag(
            "replay-url",
            format!("--replay-url: the campaign in {}: {error}", levels_folder.display()),
        )
    })?;
    if level_named(files.iter().map(PathBuf::as_path), &link.level).is_none() {
        return Err(crate::options::StartError::flag(
            "replay-url",
            format!(
                "--replay-url: the link's level `{}` is not a level of the campaign in {} \
             (a link opens with the campaign it was made in; give that one with --levels)",
                link.level,
                levels_folder.display()
            ),
        ));
    }
    Ok(link)
}

fn open_link(
    mut links: MessageReader<OpenReplayLink>,
    mut commands: Commands,
    campaign: Res<Campaign>,
    mut intents: MessageWriter<Intent>,
    mut problem: ResMut<OpenProblem>,
) {
    let Some(OpenReplayLink(link)) = links.read().last() else {
        return;
    };
    let paths = campaign.levels.iter().map(|loaded| loaded.path.as_path());
    let Some(path) = level_named(paths, &link.level) else {
        problem.0 = Some(format!(
            "The replay link's level `{}` is not in the campaign in {}",
            link.level,
            campaign.folder.display()
        ));
        return;
    };
    // The level open now goes (its job cancelled, its scratch ledger deleted), so nothing
    // below mistakes it for the link's run while the link's level opens.
    commands.remove_resource::<Session>();
    intents.write(Intent::OpenLevel {
        path: path.clone(),
        mode: Mode::Sandbox,
        guards: link.guards,
        seed: link.seed,
        at_phase: None,
    });
    problem.0 = None;
    commands.insert_resource(ReplayLinkRun {
        link: link.clone(),
        path,
        next: 0,
        played: 0,
        finishing: false,
        done: false,
    });
}

/// Once the link's level is open: steps to each move's phase, plays it, then runs to the end.
fn drive_link(
    run: Option<ResMut<ReplayLinkRun>>,
    mut session: Option<ResMut<Session>>,
    mut intents: MessageWriter<Intent>,
    mut problem: ResMut<OpenProblem>,
) {
    let Some(mut run) = run else {
        return;
    };
    if run.done {
        return;
    }
    if problem.0.is_some() {
        // The level did not open (the open intent said why).
        run.done = true;
        return;
    }
    let Some(session) = session
        .as_deref_mut()
        .filter(|session| session.mode == Mode::Sandbox && session.recipe.level.path == run.path && !session.is_busy())
    else {
        return;
    };
    let played = session.simulation().played().len();
    if played < run.played {
        let refused = run.link.moves[run.next - 1].clone();
        let why = session
            .notice
            .as_ref()
            .map_or_else(|| "it was refused".to_owned(), |notice| notice.text.clone());
        fail(&mut run, session, &mut problem, &refused, why);
        return;
    }
    if run.finishing {
        run.done = true;
        return;
    }
    let Some(action) = run.link.moves.get(run.next).cloned() else {
        intents.write(Intent::RunToEnd);
        run.finishing = true;
        return;
    };
    let phase = session.simulation().phase();
    if phase < action.at_phase {
        if session.is_over() {
            let why = format!("the level went quiet at phase {phase} before it");
            fail(&mut run, session, &mut problem, &action, why);
            return;
        }
        for _ in 0..(action.at_phase - phase).min(STEPS_PER_FRAME_MAX) {
            intents.write(Intent::Step);
        }
        return;
    }
    if phase > action.at_phase {
        let why = format!("the level was already at phase {phase}");
        fail(&mut run, session, &mut problem, &action, why);
        return;
    }
    intents.write(Intent::Play(action.play));
    run.next += 1;
    run.played = played + 1;
}

/// A move the link holds that this level will not take: said on the level screen, and the
/// command line's screenshot stops on it.
fn fail(run: &mut ReplayLinkRun, session: &mut Session, problem: &mut OpenProblem, action: &TimedAction, why: String) {
    let text = format!(
        "The replay link's move at phase {} ({}): {why}",
        action.at_phase,
        action.play.card().title()
    );
    session.warn(text.clone());
    problem.0 = Some(text);
    run.done = true;
}
