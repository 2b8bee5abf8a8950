//! The words: how Twice says things to people. `text` is the engine's vocabulary (money, the
//! runtime's reasons in Penny's English) and sits below everything; the glossary, the
//! presenter notes and the workshop's minute plan are the campaign's reference texts; the
//! report words a whole analysed run.

pub mod glossary;
pub mod keys;
pub mod presenter_notes;
pub mod report;
pub mod text;
pub mod workshop_plan;
