//! The world's scripted owner changes ([`crate::level::ScriptedOwnerChange`]): someone outside
//! the agent — support, the customer on the account page — sets an account's owner at a moment
//! the level declares. The accounts service records who made it, so a retried write of Penny's
//! that lands after it, and puts her value back, is seen for what it is: a lost update.

use super::Simulation;
use super::clock::Event;
use super::timeline::Actor;
use crate::billing::Answer;

impl Simulation {
    /// Puts each of the world's owner changes on the clock, and says when in the timeline (the
    /// player plans around them).
    pub(super) fn schedule_owner_changes(&mut self) {
        let changes = self.level.world.owner_changes.clone();
        for (index, change) in changes.into_iter().enumerate() {
            let at_ms = u64::from(change.at_ms);
            self.clock.schedule(at_ms, Event::OwnerChange { index });
            self.log(
                Actor::Billing,
                "owner change",
                None,
                None,
                format!(
                    "{} will set {}'s owner to {} at {at_ms} ms, at the accounts service, not through Penny",
                    change.by, change.account, change.owner
                ),
            );
        }
    }

    /// The `index`th scripted change lands: the accounts service sets the owner and records who.
    pub(super) fn someone_changes_owner(&mut self, index: usize) {
        let change = self.level.world.owner_changes[index].clone();
        let answer = self
            .world
            .billing
            .owner_changed_by(&change.account, &change.owner, &change.by, self.clock.now_ms);
        let text = match answer {
            Answer::OwnerSet { owner, previous } => format!(
                "{} sets {}'s owner to {owner} (was {previous}), at the accounts service, not through Penny",
                change.by, change.account
            ),
            Answer::Rejected { reason } => {
                format!(
                    "{}'s change of {}'s owner is refused: {reason}",
                    change.by, change.account
                )
            }
            other => unreachable!("an owner change answers OwnerSet or Rejected, not {other:?}"),
        };
        self.log(Actor::Billing, "owner change", None, None, text);
    }
}
