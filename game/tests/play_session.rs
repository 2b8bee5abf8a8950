//! One play session (issue 20): the game's session and the browser's game are both made of
//! `twice_world::play_session::PlaySession`. Driven through the same moves — every shipped
//! tape's, played by hand at its phase as a player would — both reach the same timeline and
//! the same judgement, the verdict the tape expects; a rewind and a run on reach it again.

#![cfg(feature = "operator-api")]

use std::path::Path;

use twice::session::{Mode, Recipe, Session};
use twice_serve::web::game::Game;
use twice_world::level::{LoadedTape, TAPE_VERSION, TimedAction};
use twice_world::play_session::{Conclusion, PlaySession};
use twice_world::simulator::{Actor, Simulation};

fn campaign_tapes() -> Vec<LoadedTape> {
    let levels = Path::new(env!("CARGO_MANIFEST_DIR")).join("../levels");
    twice_world::level::files_below(&levels, twice_world::campaign::TAPE_SUFFIX)
        .expect("the campaign folder")
        .iter()
        .map(|path| twice_world::level::load_tape(path).unwrap_or_else(|error| panic!("{error}")))
        // A regression level is a test case, not a level either front end opens.
        .filter(|loaded| !loaded.level.level.regression)
        .collect()
}

/// What happened to each of a tape's moves played by hand: `None` if it was played, else why
/// the front end refused it.
type Refusals = Vec<Option<String>>;

/// The browser's side: a level opened as the room opens it, the moves played request by request.
fn play_in_the_browser(loaded: &LoadedTape, moves: &[TimedAction]) -> (Game, Refusals) {
    let level = &loaded.level.level;
    let file_name = loaded.tape.level.clone();
    let mut game = Game::open(0, level, &file_name, "stem", loaded.tape.seed, loaded.tape.guards).expect("opens");
    let mut refusals = Vec::new();
    for action in moves {
        while game.simulation().phase() < action.at_phase && !game.simulation().is_over() {
            game.step(1).expect("steps");
        }
        refusals.push(game.play(action.play.clone()).err().map(|error| error.to_string()));
    }
    game.run_to_end().expect("runs to the end");
    (game, refusals)
}

/// The game's side: the session as the game opens it (mode from the guards), the moves played
/// as intents would, stepped to the end as autoplay does.
fn play_in_the_game(loaded: &LoadedTape, moves: &[TimedAction]) -> (Session, Refusals) {
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
    let mut session = Session::new(PlaySession::open(mode, recipe, None).expect("opens"), None, None);
    let mut refusals = Vec::new();
    for action in moves {
        while session.simulation().phase() < action.at_phase && session.step().expect("steps") {}
        refusals.push(session.play(action.play.clone()).err().map(|error| error.to_string()));
    }
    while session.step().expect("steps") {}
    (session, refusals)
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

/// The tape replayed as `twice-sim replay` plays it: how many of its moves fizzled there.
fn fizzled_in_the_replay(loaded: &LoadedTape) -> usize {
    let recipe = Recipe {
        level: loaded.level.clone(),
        seed: loaded.tape.seed,
        guards: loaded.tape.guards,
        tape: None,
    };
    let mut replay = recipe.build(loaded.tape.actions.clone(), None).expect("builds");
    replay.run().expect("replays");
    replay
        .timeline()
        .iter()
        .filter(|entry| entry.actor == Actor::Crew && entry.kind == "fizzled")
        .count()
}

#[test]
fn the_game_and_the_browser_reach_the_same_verdict_through_the_same_moves() {
    let mut driven = 0;
    let mut refused_in_both = 0;
    for loaded in campaign_tapes() {
        // Format 1's wire cards armed the next message: only a replay plays them by that rule,
        // and the browser has no replays. Moves made by hand are format 2's.
        if loaded.tape.version != TAPE_VERSION {
            continue;
        }
        let name = loaded.path.display().to_string();
        let moves = loaded.tape.actions.clone();
        let (game, refused_in_the_browser) = play_in_the_browser(&loaded, &moves);
        let (session, refused_in_the_game) = play_in_the_game(&loaded, &moves);
        // A move the replay lets fizzle (a tape may hold one: 22's check-on tape loses an
        // answer that was never sent) is refused by hand, by both front ends alike, and
        // changes nothing.
        assert_eq!(
            refused_in_the_game, refused_in_the_browser,
            "{name}: the front ends refused differently"
        );
        let refused = refused_in_the_game.iter().flatten().count();
        assert_eq!(
            refused,
            fizzled_in_the_replay(&loaded),
            "{name}: a move refused by hand ({refused_in_the_game:?}) is one the replay lets fizzle"
        );
        refused_in_both += refused;
        assert_eq!(
            timeline_text(&session.simulation()),
            timeline_text(&game.simulation()),
            "{name}: the game's and the browser's timelines differ"
        );
        assert!(session.is_concluded(), "{name}: the game's session is not concluded");
        let in_the_game = session
            .judgement()
            .unwrap_or_else(|| panic!("{name}: the game's session judged nothing"))
            .expect("judged");
        let in_the_browser = game.conclusion().expect("the browser judged the end");
        assert_eq!(summary(in_the_game), summary(in_the_browser), "{name}");
        assert_eq!(
            in_the_game.verdict.outcome, loaded.tape.expect.verdict,
            "{name}: not the tape's verdict"
        );
        // A tape's `stopped_by` is a set the run must include.
        assert!(
            loaded
                .tape
                .expect
                .stopped_by
                .iter()
                .all(|guard| in_the_game.verdict.stopped_by.contains(guard)),
            "{name}: the run's guards {:?} do not include the tape's {:?}",
            in_the_game.verdict.stopped_by,
            loaded.tape.expect.stopped_by
        );
        driven += 1;
    }
    assert!(driven >= 40, "only {driven} tapes of format 2 were driven");
    assert!(
        refused_in_both >= 1,
        "no tape's move was refused: the refusal check checks nothing"
    );
}

#[test]
fn a_rewind_in_either_replays_the_moves_before_it_to_the_same_end() {
    let loaded = campaign_tapes()
        .into_iter()
        .find(|loaded| {
            let actions = &loaded.tape.actions;
            loaded.tape.version == TAPE_VERSION && actions.len() >= 2 && actions[1].at_phase > actions[0].at_phase
        })
        .expect("a tape with moves at two phases");
    let moves = loaded.tape.actions.clone();
    let (mut game, _) = play_in_the_browser(&loaded, &moves);
    let (mut session, _) = play_in_the_game(&loaded, &moves);
    let end = summary(game.conclusion().expect("judged"));
    // Back to just after the first move: the later moves are gone in both, the first kept.
    let phase = moves[0].at_phase + 1;
    game.rewind(phase).expect("rewinds");
    assert_eq!(game.simulation().phase(), phase);
    assert!(game.conclusion().is_none(), "a rewound level is not concluded");
    // The game re-simulates on a thread from the same session's moves, then swaps it in.
    let rewound = session.rewound(phase, None).expect("rewinds");
    assert_eq!(rewound.played(), game.simulation().played());
    let (kept, again): (Vec<TimedAction>, Vec<TimedAction>) =
        moves.iter().cloned().partition(|action| action.at_phase < phase);
    assert_eq!(rewound.played(), kept.as_slice(), "the moves before the phase are kept");
    let ledger = twice::session::ledger_view::LedgerView::read(rewound.ledger());
    session.replace(rewound, None, ledger);
    assert!(session.judgement().is_none(), "a rewound session is not concluded");
    assert_eq!(timeline_text(&session.simulation()), timeline_text(&game.simulation()));
    // The rest of the moves again, then the end: the same conclusion as before the rewind.
    assert!(!again.is_empty());
    for action in &again {
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
    assert_eq!(summary(session.judgement().expect("judged").expect("judged")), end);
    // And a restart is phase 0 with no moves in both.
    game.restart().expect("restarts");
    assert_eq!(game.simulation().phase(), 0);
    assert!(game.simulation().played().is_empty());
    assert!(session.actions_before(0).is_empty());
}
