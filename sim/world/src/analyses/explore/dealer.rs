//! Schedules dealt for a driver that plays them elsewhere: `twice-sim explore --runtime` plays
//! them on a runtime's real processes through the runtime protocol, where a schedule costs
//! processes and real time instead of microseconds, so it deals them one at a time.

use super::schedule::ScheduleSpace;
use super::{ExploreError, Explorer};
use crate::level::TimedAction;

/// Deals schedule after schedule of one explorer, without simulating them.
#[derive(Debug)]
pub struct Dealer {
    space: ScheduleSpace,
}

impl Explorer {
    /// A dealer of this explorer's schedules: schedule `i` is the one [`Explorer::run`] would
    /// simulate as its `i`th, a pure function of the explorer's seed and `i`.
    pub fn dealer(&self) -> Result<Dealer, ExploreError> {
        Ok(Dealer {
            space: ScheduleSpace::new(&self.level, self.guards, self.seed, self.store)?,
        })
    }
}

impl Dealer {
    /// Schedule `index`: its simulation seed and its moves.
    pub fn deal(&self, index: u64) -> Result<(u64, Vec<TimedAction>), ExploreError> {
        self.space.deal(index)
    }
}
