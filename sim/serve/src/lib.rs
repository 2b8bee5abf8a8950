//! Twice's HTTP servers (crate `twice-serve`). First the plumbing both servers share: the
//! listener that reads every request's head itself and holds each connection to its limits
//! ([`listener`]), strict JSON bodies ([`json`]), operators' tokens ([`tokens`]) and
//! shutting down ([`shutdown`]). On it, the operator API ([`api`]: list, read, resolve and
//! compensate tool executions in a ledger) and the browser edition ([`web`]: the campaign
//! for a room of browsers, with the room's race).
//!
//! The deterministic world is `twice-world`'s; nothing here decides anything about a tool
//! call: the operator's moves are the runtime's (`twice_world::runtime::operator`).

pub mod api;
pub mod json;
pub mod listener;
pub mod shutdown;
pub mod tokens;
pub mod web;
