//! The timing sweep over the shipped campaign: in how many beatable levels does *when* a card
//! is played decide, rather than which card (see `campaign_sweep`)? The book prints the
//! figure this test holds the campaign to (`twice-sim sweep levels`).

use std::path::PathBuf;

use twice_world::campaign::Campaign;
use twice_world::campaign_sweep::{self, CampaignSweep};

fn campaign_sweep() -> CampaignSweep {
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../levels");
    let campaign = Campaign::load(&folder).unwrap_or_else(|problems| {
        panic!(
            "the campaign does not load:\n{}",
            problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
        )
    });
    campaign_sweep::sweep_campaign(campaign.levels.iter().map(|loaded| &loaded.level)).expect("every level simulates")
}

/// The share of beatable levels in which timing must decide: every one (the book's figure).
const FIGURE_FLOOR: f64 = 1.0;

#[test]
fn timing_decides_in_enough_of_the_beatable_levels() {
    let sweep = campaign_sweep();
    let report = sweep.report();
    println!("{report}");
    let figure = sweep.figure().expect("the campaign has beatable levels");
    assert!(
        figure >= FIGURE_FLOOR,
        "timing decides in only {:.0}% of the beatable levels (at least {:.0}% wanted):\n{report}",
        figure * 100.0,
        FIGURE_FLOOR * 100.0
    );
}

#[test]
fn every_beatable_level_is_won_by_one_or_two_cards_and_not_everywhere() {
    let sweep = campaign_sweep();
    for level in &sweep.levels {
        assert!(
            level.is_won(),
            "no move of one or two cards wins {}:\n{}",
            level.id,
            sweep.report()
        );
        for swept in &level.moves {
            assert!(
                swept.winning.iter().all(|moment| swept.legal.contains(moment)),
                "{} in {} wins at a moment it was not legal at",
                swept.name(),
                level.id
            );
        }
    }
}
