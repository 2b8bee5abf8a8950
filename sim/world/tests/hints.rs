//! Every level's "move" hint is a move the campaign plays: legal where it is played, winning a
//! beatable level, and held to its prose — the phases it names, what it says the run is doing
//! then, the keys and workers it names. The ideas name no phase the move contradicts.

use std::path::PathBuf;

use twice_world::campaign::{Campaign, hints};

fn campaign() -> Campaign {
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../levels");
    Campaign::load(&folder).unwrap_or_else(|problems| panic!("the campaign loads: {problems:?}"))
}

#[test]
fn every_levels_move_hint_is_a_move_that_does_what_its_prose_says() {
    let campaign = campaign();
    let mut problems = Vec::new();
    for loaded in &campaign.levels {
        let level = &loaded.level;
        assert!(
            level.hints.the_move.is_some(),
            "`{}` has no move hint: a level ships the move it hints",
            level.id
        );
        for problem in hints::move_hint_problems(level) {
            problems.push(format!("{}: {problem}", loaded.path.display()));
        }
    }
    assert!(
        problems.is_empty(),
        "move hints that disagree with their move:\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_hint_that_names_the_wrong_moment_or_a_window_that_does_not_win_is_caught() {
    let campaign = campaign();
    let stale = campaign
        .levels
        .iter()
        .find(|loaded| loaded.level.id == "stale-twin")
        .expect("the stale twin is in the campaign");
    let mut level = stale.level.clone();
    // The prose this level once shipped: the first worker does not save at phase 2, and a twin
    // started any time before phase 2 does not win.
    level.hints.the_move = Some(
        "Make r1's next call refuse before sending (any time before phase 2), then start a twin on r1 before \
         the first worker saves its checkpoint (phase 2)."
            .into(),
    );
    let problems = hints::move_hint_problems(&level);
    assert!(
        problems
            .iter()
            .any(|problem| problem.contains("does not show at phase 2")),
        "the checkpoint saved at phase 2 is caught: {problems:#?}"
    );
    // A window that promises more than wins.
    level.hints.the_move =
        Some("Make r1's next call refuse at phase 0, then start a twin on r1 at phase 1 or 2.".into());
    let problems = hints::move_hint_problems(&level);
    assert!(
        problems.iter().any(|problem| problem.contains("played at phase 1")),
        "a twin at phase 1 does not win: {problems:#?}"
    );
    // A phase the move never plays at, said of nothing.
    level.hints.the_move = Some("Start a twin on r1 at phase 9.".into());
    assert!(
        hints::move_hint_problems(&level)
            .iter()
            .any(|problem| problem.contains("at which its move plays nothing")),
        "a phase named for nothing is caught"
    );
    // No move given: nothing to play.
    level.hints.move_actions.clear();
    assert_eq!(hints::move_hint_problems(&level).len(), 1);
}
