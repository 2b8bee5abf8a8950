//! The subcommands that are not a few lines of `cli.rs`: each its own file.

pub mod defend;
pub mod explore;
pub mod export;
pub mod play;
pub mod replay;
pub mod runtime;
mod runtime_explore;
pub mod serve;
pub mod sweep;
pub mod web;

use twice_world::exit::{EXIT_BAD_INPUT, EXIT_FAILED};

/// Worker threads for a server (`serve`, `web`): requests are short and the ledger work and
/// simulations run on tokio's blocking threads, so two are plenty on the two-core machines
/// this targets.
const SERVER_THREADS: usize = 2;

/// Says what was wrong with the input and gives its exit code.
fn bad_input(message: impl std::fmt::Display) -> u8 {
    eprintln!("error: {message}");
    EXIT_BAD_INPUT
}

/// The multi-threaded tokio runtime a server subcommand runs on, or the exit code after saying
/// why it could not start.
fn server_runtime() -> Result<tokio::runtime::Runtime, u8> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(SERVER_THREADS)
        .enable_all()
        .build()
        .map_err(|error| {
            eprintln!("error: cannot start the server's runtime: {error}");
            EXIT_FAILED
        })
}
