//! The subcommands that are not a few lines of `cli.rs`: each its own file.

pub mod explore;
pub mod serve;
pub mod sweep;
pub mod web;
