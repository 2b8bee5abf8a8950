//! What the player has done with the campaign, worked out from the campaign and progress: the
//! stars per level (a win against the level's par), the guards in the order the campaign
//! teaches them with the stars of the levels that teach each one and the predictions that
//! named each, and whether the campaign is complete (the ending). The level select's summary
//! and the ending screen only draw this.

use twice_world::level::Level;
use twice_world::runtime::guards::Guard;

use super::Campaign;
use crate::progress::Progress;

/// The most stars one level gives: one for winning with no more cards than par, one more for
/// no more phases too (`twice_world::debrief::ParCheck::stars`).
pub const STARS_PER_LEVEL: u32 = 2;

/// The level whose defence is the campaign's finale (the vault: every guard a heist needs).
pub const FINALE_LEVEL_ID: &str = "vault";

/// Stars earned and stars there are to earn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stars {
    pub earned: u32,
    pub possible: u32,
}

impl Stars {
    fn add(&mut self, other: Stars) {
        self.earned += other.earned;
        self.possible += other.possible;
    }

    /// `★★☆☆`-style: one glyph per star there is to earn.
    pub fn glyphs(self) -> String {
        let earned = self.earned.min(self.possible) as usize;
        "★".repeat(earned) + &"☆".repeat(self.possible as usize - earned)
    }
}

/// A level's stars: a level with a par that can be won has [`STARS_PER_LEVEL`] to earn; an
/// unbeatable level (defended, not won) and a level without par have none.
pub fn level_stars(level: &Level, progress: &Progress) -> Stars {
    let Some(par) = level.par.filter(|_| !level.unbeatable) else {
        return Stars::default();
    };
    let earned = progress.file.best.get(&level.id).map_or(0, |best| {
        let cards_at_par = best.cards <= par.cards;
        u32::from(cards_at_par) + u32::from(cards_at_par && best.phases <= par.phases)
    });
    Stars {
        earned,
        possible: STARS_PER_LEVEL,
    }
}

/// One guard as the player learned it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuardLearned {
    pub guard: Guard,
    /// The first level (index into [`Campaign::levels`]) whose lesson is about this guard.
    pub met_in: usize,
    /// Every level whose lesson is about it, in play order.
    pub levels: Vec<usize>,
    /// The stars of those levels.
    pub stars: Stars,
    /// Of those levels, the unbeatable ones the player defended, and how many there are.
    pub defended: usize,
    pub defendable: usize,
    /// Predictions that named this guard as the one that would decide, and how many were right.
    pub predicted: u32,
    pub predicted_right: u32,
}

/// The campaign as the player stands in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CampaignSummary {
    pub levels: usize,
    pub finished: usize,
    pub stars: Stars,
    /// Unbeatable levels defended, of those that can be.
    pub defended: usize,
    pub defendable: usize,
    /// The guards in the order the campaign teaches them (first lesson about each).
    pub guards: Vec<GuardLearned>,
    /// Every prediction scored: made, verdicts right, guards named and right.
    pub predictions: twice_world::prediction::Tally,
    /// The campaign's last level is finished: the ending is open.
    pub complete: bool,
    /// Levels not finished yet (indexes), named on the ending screen.
    pub unfinished: Vec<usize>,
    /// The finale's level (the vault), if the campaign has it, and the guards the player
    /// defended it with, if they did.
    pub finale: Option<usize>,
    pub finale_defence: Option<Vec<Guard>>,
}

impl CampaignSummary {
    /// The campaign in one line, as the level select's top bar and the ending's header say it:
    /// levels finished, stars, defences. One place, so the two screens never say it two ways.
    /// Short: at the projector's zoom the level select's top bar holds it beside its buttons.
    pub fn line(&self) -> String {
        format!(
            "{} of {} finished · ★ {} of {} · 🛡 {} of {} defended",
            self.finished, self.levels, self.stars.earned, self.stars.possible, self.defended, self.defendable
        )
    }

    pub fn of(campaign: &Campaign, progress: &Progress) -> CampaignSummary {
        let mut stars = Stars::default();
        let mut guards: Vec<GuardLearned> = Vec::new();
        let (mut defended, mut defendable) = (0, 0);
        let mut unfinished = Vec::new();
        for (index, loaded) in campaign.levels.iter().enumerate() {
            let level = &loaded.level;
            let level_stars = level_stars(level, progress);
            stars.add(level_stars);
            let is_defended = progress.defended(&level.id).is_some();
            if level.defender.is_some() {
                defendable += 1;
                defended += usize::from(is_defended);
            }
            if !progress.is_finished(&level.id) {
                unfinished.push(index);
            }
            for guard in &level.lesson.guards {
                let learned = match guards.iter_mut().find(|learned| learned.guard == *guard) {
                    Some(learned) => learned,
                    None => {
                        guards.push(GuardLearned {
                            guard: *guard,
                            met_in: index,
                            levels: Vec::new(),
                            stars: Stars::default(),
                            defended: 0,
                            defendable: 0,
                            predicted: 0,
                            predicted_right: 0,
                        });
                        guards.last_mut().expect("just pushed")
                    }
                };
                learned.levels.push(index);
                learned.stars.add(level_stars);
                if level.defender.is_some() {
                    learned.defendable += 1;
                    learned.defended += usize::from(is_defended);
                }
            }
        }
        for (guard, right) in progress.predictions().iter().filter_map(|record| record.named_guard()) {
            if let Some(learned) = guards.iter_mut().find(|learned| learned.guard == guard) {
                learned.predicted += 1;
                learned.predicted_right += u32::from(right);
            }
        }
        let complete = campaign
            .levels
            .last()
            .is_some_and(|loaded| progress.is_finished(&loaded.level.id));
        let finale = campaign.find(FINALE_LEVEL_ID);
        CampaignSummary {
            levels: campaign.levels.len(),
            finished: campaign.levels.len() - unfinished.len(),
            stars,
            defended,
            defendable,
            guards,
            predictions: progress.prediction_tally(),
            complete,
            unfinished,
            finale,
            finale_defence: finale
                .and_then(|index| progress.defended(&campaign.levels[index].level.id))
                .map(<[Guard]>::to_vec),
        }
    }
}

/// Where the debrief's Next leads after the campaign level `index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterLevel {
    /// The briefing of the next level to play ([`Campaign::next_up_after`]: not yet finished).
    NextBriefing(usize),
    /// Every open level is finished, the last among them: the ending.
    Ending,
    /// Nothing is open to play next.
    Nothing,
}

pub fn after_level(campaign: &Campaign, progress: &Progress, index: usize) -> AfterLevel {
    if let Some(next) = campaign.next_up_after(index, progress) {
        return AfterLevel::NextBriefing(next);
    }
    let last_finished = campaign
        .levels
        .last()
        .is_some_and(|loaded| progress.is_finished(&loaded.level.id));
    if last_finished {
        AfterLevel::Ending
    } else {
        AfterLevel::Nothing
    }
}
