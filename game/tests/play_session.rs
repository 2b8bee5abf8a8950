//! One play session (issue 20): the game's session and the browser's game are both made of
//! `twice_world::play_session`. Driven through the same moves — every shipped tape's, played
//! by hand at its phase as a player would — both reach the same timeline and the same
//! conclusion, the verdict the tape expects; a rewind and a run on reach it again.

#![cfg(feature = "operator-api")]

use std::path::Path;

use twice::session::{Mode, Recipe, Session};
use twice_serve::web::game::Game;
use twice_world::level::{LoadedTape, TAPE_VERSION, TimedAction};
use twice_world::play_session::{self, Conclusion};
use twice_world::simulator::Simulation;

fn campaign_tapes() -> Vec<LoadedTape> {
    let levels = Path::new(env!("CARGO_MANIFEST_DIR")).join("../levels");
    twice_world::level::files_below(&levels, twice_world::campaign::TAPE_SUFFIX)
        .expect("the campaign folder")
        .iter()
        .map(|path| twice_world::level::load_tape(path).unwrap_or_else(|error| panic!("{error}")))
        .collect()
}

/// The browser's side: a level opened as the room opens it, the moves played request by request.
fn play_in_the_browser(loaded: &LoadedTape, moves: &[TimedAction]) -> Game {
    let level = &loaded.level.level;
    let file_name = loaded.tape.level.clone();
    let mut game = Game::open(0, level, &file_name, "stem", loaded.tape.seed, loaded.tape.guards).expect("opens");
    for action in moves {
        while game.simulation().phase() < action.at_phase && !game.simulation().is_over() {
            game.step(1).expect("steps");
        }
        game.play(action.play.clone()).expect("the tape's move is played");
    }
    game.run_to_end().expect("runs to the end");
    game
}

/// The game's side: the session as the game opens it (mode from the guards), the moves played
/// as intents would, stepped to the end as autoplay does.
fn play_in_the_game(loaded: &LoadedTape, moves: &[TimedAction]) -> Session {
    let mode = if loaded.tape.guards.is_some() {
        Mode::Sandbox
    } else {
        Mode::Campaign
    };
    let recipe = Recipe {
        level: loaded.level.clone(),
        seed: loaded.tape.seed,
        guards: loaded.tape.guards,
        tape: None,
    };
    let simulation = recipe.build(Vec::new(), None).expect("builds");
    let mut session = Session::new(mode, recipe, None, simulation, None);
    for action in moves {
        while session.simulation().phase() < action.at_phase && session.step().expect("steps") {}
        session.play(action.play.clone()).expect("the tape's move is played");
    }
    while session.step().expect("steps") {}
    session
}

fn timeline_text(simulation: &Simulation) -> Vec<String> {
    simulation
        .timeline()
        .iter()
        .map(|entry| format!("{} {:?} {} {}", entry.phase, entry.actor, entry.kind, entry.text))
        .collect()
}

fn summary(conclusion: &Conclusion) -> String {
    format!(
        "{:?} stopped by {:?}, finished {}, {} cards, {} phases, debrief {:?}",
        conclusion.verdict.outcome,
        conclusion.verdict.stopped_by,
        conclusion.finished,
        conclusion.cards,
        conclusion.phases,
        conclusion.debrief.standing
    )
}

#[test]
fn the_game_and_the_browser_reach_the_same_verdict_through_the_same_moves() {
    let mut driven = 0;
    for loaded in campaign_tapes() {
        // Format 1's wire cards armed the next message: only a replay plays them by that rule,
        // and the browser has no replays. Moves made by hand are format 2's.
        if loaded.tape.version != TAPE_VERSION {
            continue;
        }
        let name = loaded.path.display().to_string();
        let moves = loaded.tape.actions.clone();
        let game = play_in_the_browser(&loaded, &moves);
        let session = play_in_the_game(&loaded, &moves);
        assert_eq!(
            timeline_text(&session.simulation()),
            timeline_text(game.simulation()),
            "{name}: the game's and the browser's timelines differ"
        );
        assert!(session.is_concluded(), "{name}: the game's session is not concluded");
        let in_the_game = play_session::conclude(&session.recipe, &session.simulation()).expect("judged");
        let in_the_browser = game.conclusion().expect("the browser judged the end");
        assert_eq!(summary(&in_the_game), summary(in_the_browser), "{name}");
        assert_eq!(
            in_the_game.verdict.outcome, loaded.tape.expect.verdict,
            "{name}: not the tape's verdict"
        );
        assert_eq!(in_the_game.verdict.stopped_by, loaded.tape.expect.stopped_by, "{name}");
        driven += 1;
    }
    assert!(driven >= 40, "only {driven} tapes of format 2 were driven");
}

#[test]
fn a_rewind_in_either_replays_the_moves_before_it_to_the_same_end() {
    let loaded = campaign_tapes()
        .into_iter()
        .find(|loaded| loaded.tape.version == TAPE_VERSION && loaded.tape.actions.len() >= 2)
        .expect("a tape with two moves");
    let moves = loaded.tape.actions.clone();
    let mut game = play_in_the_browser(&loaded, &moves);
    let mut session = play_in_the_game(&loaded, &moves);
    let end = summary(game.conclusion().expect("judged"));
    // Back to just after the first move: the later moves are gone in both, the first kept.
    let phase = moves[0].at_phase + 1;
    game.rewind(phase).expect("rewinds");
    assert_eq!(game.simulation().phase(), phase);
    assert!(game.conclusion().is_none(), "a rewound level is not concluded");
    let actions = session.actions_before(phase);
    assert_eq!(actions, game.simulation().played().to_vec());
    let mut rewound = session.recipe.build(actions, None).expect("builds");
    rewound
        .run_until(|simulation| simulation.phase() >= phase)
        .expect("runs");
    let ledger = twice::session::ledger_view::LedgerView::read(rewound.ledger());
    session.replace(rewound, None, ledger);
    assert_eq!(timeline_text(&session.simulation()), timeline_text(game.simulation()));
    // The rest of the moves again, then the end: the same conclusion as before the rewind.
    for action in &moves[1..] {
        while game.simulation().phase() < action.at_phase {
            game.step(1).expect("steps");
            session.step().expect("steps");
        }
        game.play(action.play.clone()).expect("played");
        session.play(action.play.clone()).expect("played");
    }
    game.run_to_end().expect("runs");
    while session.step().expect("steps") {}
    assert_eq!(summary(game.conclusion().expect("judged again")), end);
    let in_the_game = play_session::conclude(&session.recipe, &session.simulation()).expect("judged");
    assert_eq!(summary(&in_the_game), end);
    // And a restart is phase 0 with no moves in both.
    game.restart().expect("restarts");
    assert_eq!(game.simulation().phase(), 0);
    assert!(game.simulation().played().is_empty());
    assert!(session.actions_before(0).is_empty());
}
