//! Panels arrive chapter by chapter. The rule is twice-world's ([`twice_world::screen`]), so the
//! browser edition introduces the same panels in the same chapters; which panels a level shows
//! is decided when it opens (`session/intent.rs`), and a panel's first appearance is noted once
//! in progress ("new: the ledger").

pub use twice_world::screen::{Panel, Panels};
