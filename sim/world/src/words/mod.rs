//! The words: how Twice says things to people. `text` is the engine's vocabulary (money, the
//! runtime's reasons in Penny's English) and sits below everything; the glossary, the
//! presenter notes and the workshop's minute plan are the campaign's reference texts; the ledger's
//! words say its statuses and history events in a player's words; the
//! report words a whole analysed run.

pub mod glossary;
pub mod keys;
pub mod ledger_words;
pub mod presenter_notes;
pub mod report;
pub mod text;
pub mod workshop_plan;
