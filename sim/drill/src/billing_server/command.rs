//! `twice-sim billing`'s start: its flags checked, its file opened and replayed, its address
//! printed, then serving until asked to stop.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use twice_world::billing::{KeyHandling, Terms};

use super::send_window::request_window;
use super::{BillingArgs, DRAIN_GRACE_MS, LATENCY_MS_MAX, SERVER_THREADS, Shared, World, router};
use crate::billing_store::{BillingStore, StoreError};
use crate::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, stdin_end, stop_signal};

fn bad_input(message: impl std::fmt::Display) -> u8 {
    eprintln!("error: {message}");
    EXIT_BAD_INPUT
}

/// Billing's terms and send window from the flags; the error names the flag.
fn checked_terms(args: &BillingArgs) -> Result<(Terms, u32), String> {
    let request_window_ms = request_window(args.request_window_ms, args.latency_ms)?;
    let terms = Terms {
        key_retention_ms: args.key_retention_ms,
        lookup_settle_ms: args.lookup_settle_ms,
    };
    if let Some(problem) = terms.problem() {
        return Err(format!("--key-retention-ms / --lookup-settle-ms: {problem}"));
    }
    Ok((terms, request_window_ms))
}

/// Runs the billing server until Ctrl-C, SIGTERM or (with `--stop-on-stdin-close`) the end of
/// standard input. Requests already received are applied before it exits.
pub fn billing_command(args: BillingArgs) -> u8 {
    let key_handling = match args.keys.parse::<KeyHandling>() {
        Ok(key_handling) => key_handling,
        Err(detail) => return bad_input(format!("--keys: {detail}")),
    };
    if args.latency_ms > LATENCY_MS_MAX {
        return bad_input(format!(
            "--latency-ms {} is more than {LATENCY_MS_MAX}",
            args.latency_ms
        ));
    }
    if !args.addr.ip().is_loopback() && !args.allow_non_loopback {
        return bad_input(format!(
            "--addr {} is not a loopback address; billing listens on loopback unless --allow-non-loopback is given",
            args.addr
        ));
    }
    let (terms, request_window_ms) = match checked_terms(&args) {
        Ok(checked) => checked,
        Err(problem) => return bad_input(problem),
    };
    let (store, billing) =
        match BillingStore::open_with_terms(&args.db, key_handling, terms, &crate::script::accounts()) {
            Ok(opened) => opened,
            Err(StoreError::Locked { path }) => {
                eprintln!("error: {} is locked by another process", path.display());
                return EXIT_FAILED;
            }
            Err(store_error) => return bad_input(store_error),
        };
    let replayed = billing.entries.len();
    let records = &billing.records;
    let records_replayed = records.outbox.len() + records.owner_changes.len() + records.deletions.len();
    let shared = Arc::new(Shared {
        world: Mutex::new(World { billing, store }),
        rng: Mutex::new(ChaCha8Rng::seed_from_u64(args.seed)),
        latency_ms: args.latency_ms,
        request_window_ms: u64::from(request_window_ms),
        clock: super::Clock::Wall,
        in_flight: AtomicU64::new(0),
        in_flight_keys: Mutex::new(std::collections::BTreeMap::new()),
    });
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(SERVER_THREADS)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(runtime_error) => {
            eprintln!("error: cannot start the async runtime: {runtime_error}");
            return EXIT_FAILED;
        }
    };
    let stdin_closed = args.stop_on_stdin_close.then(stdin_end);
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::bind(args.addr).await {
            Ok(listener) => listener,
            Err(bind_error) => {
                eprintln!("error: cannot listen on {}: {bind_error}", args.addr);
                return EXIT_FAILED;
            }
        };
        let address = match listener.local_addr() {
            Ok(address) => address,
            Err(address_error) => {
                eprintln!("error: cannot read the address listened on: {address_error}");
                return EXIT_FAILED;
            }
        };
        // The first line names the address, for whoever started billing with port 0.
        println!(
            "listening http://{address} (billing over {}, keys {}, latency up to {} ms, send window {request_window_ms} ms, seed {}, {replayed} entries and {records_replayed} record effects replayed)",
            args.db.display(),
            key_handling.name(),
            args.latency_ms,
            args.seed
        );
        let _ = std::io::Write::flush(&mut std::io::stdout());
        let shutdown = async move {
            match stdin_closed {
                Some(closed) => {
                    tokio::select! {
                        _ = closed => {}
                        () = stop_signal() => {}
                    }
                }
                None => stop_signal().await,
            }
        };
        let served = axum::serve(listener, router(Arc::clone(&shared)))
            .with_graceful_shutdown(shutdown)
            .await;
        // Requests whose client hung up are still being applied in their own tasks: wait
        // for them, so that every request billing received is in the file when it exits.
        let deadline = tokio::time::Instant::now()
            + Duration::from_millis(u64::from(shared.latency_ms) + DRAIN_GRACE_MS);
        while shared.in_flight.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let left = shared.in_flight.load(Ordering::SeqCst);
        match served {
            Err(serve_error) => {
                eprintln!("error: billing stopped serving: {serve_error}");
                EXIT_FAILED
            }
            Ok(()) if left > 0 => {
                eprintln!(
                    "error: billing stopped with {} still being applied",
                    twice_world::runtime::worker::counted(left, "request", "requests")
                );
                EXIT_FAILED
            }
            Ok(()) => EXIT_OK,
        }
    })
}
