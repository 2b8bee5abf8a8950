//! `twice-sim sweep`: in how many beatable levels does *when* a card is played decide?
//! Plays every card at every phase (pairs where no single card wins) and prints, per level,
//! at how many of its legal moments each move wins, then the campaign's figure.

use std::path::PathBuf;

use clap::Args;

use twice_world::campaign::Campaign;
use twice_world::campaign_sweep;
use twice_world::exit::{EXIT_BAD_INPUT, EXIT_OK};

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The campaign folder (`levels`).
    pub folder: PathBuf,
}

pub fn sweep_command(args: SweepArgs) -> u8 {
    let campaign = match Campaign::load(&args.folder) {
        Ok(campaign) => campaign,
        Err(problems) => {
            for problem in &problems {
                eprintln!("{problem}");
            }
            return EXIT_BAD_INPUT;
        }
    };
    match campaign_sweep::sweep_campaign(campaign.levels.iter().map(|loaded| &loaded.level)) {
        Ok(sweep) => {
            print!("{}", sweep.report());
            EXIT_OK
        }
        Err(error) => {
            eprintln!("error: the sweep could not simulate a level: {error}");
            EXIT_BAD_INPUT
        }
    }
}
