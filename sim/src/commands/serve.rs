//! `twice-sim serve` and `twice-sim hash-token`.

use super::bad_input;
use std::io::{BufRead, Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use twice_drill::ledger_target::{LedgerTarget, LedgerTargetParser};

use twice_drill::billing_target::{BillingCompensator, BillingTargetError};
use twice_serve::api::{ApiState, DEFAULT_ADDRESS, bind, check_bind_address, serve_until};
use twice_serve::tokens::{self, Operators};

use twice_world::billing::KeyHandling;
use twice_world::exit::{EXIT_FAILED, EXIT_OK};
use twice_world::runtime::tool::ToolDeclaration;
use twice_world::text::counted;
use twice_world::text::duration_words;

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The ledger to serve: a SQLite file (written by `play --ledger`, the game or a worker) or
    /// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?schema=NAME]`. It must exist.
    #[arg(long, value_parser = LedgerTargetParser)]
    pub ledger: LedgerTarget,
    /// The operators' tokens file (RON: id, token_sha256, tenants; see `twice-sim hash-token`).
    #[arg(long)]
    pub tokens: PathBuf,
    /// The address to listen on. Port 0 picks a free port (the address is printed).
    #[arg(long, default_value = DEFAULT_ADDRESS)]
    pub addr: SocketAddr,
    /// Allow listening on an address other machines can reach (the default refuses).
    #[arg(long)]
    pub allow_non_loopback: bool,
    /// The billing server compensations void credits in (`http://127.0.0.1:PORT`, as
    /// `twice-sim billing` prints it). It is asked once at start. Without it, compensate answers 501.
    #[arg(long, value_name = "URL")]
    pub billing_url: Option<String>,
    /// How long billing keeps an idempotency key, as the workers' `issue_credit` declares it
    /// (`key_retention_ms`): give billing's own `--key-retention-ms`. A compensation that
    /// finds nothing under an older key says "expired", not "absent". Default: kept for ever.
    #[arg(long, requires = "billing_url")]
    pub key_retention_ms: Option<u64>,
    /// How long billing's lookups lag behind its credits, as the workers' `issue_credit`
    /// declares it (`lookup_settle_ms`): give billing's own `--lookup-settle-ms`. A
    /// compensation that finds nothing sooner after the call's last send says "not yet".
    /// Default: none declared.
    #[arg(long, requires = "billing_url")]
    pub lookup_settle_ms: Option<u64>,
}

#[derive(Debug, clap::Args)]
pub struct HashTokenArgs {
    /// Make a new random token (256 bits) and print it with its hash, instead of
    /// reading a token from standard input.
    #[arg(long)]
    pub generate: bool,
}

/// Runs the operator API until Ctrl-C (or SIGTERM).
pub fn serve_command(args: ServeArgs) -> u8 {
    let operators = match Operators::load(&args.tokens) {
        Ok(operators) => operators,
        Err(error) => return bad_input(error),
    };
    if let Err(error) = check_bind_address(args.addr, args.allow_non_loopback) {
        return bad_input(format!("--addr: {error}"));
    }
    let state = match ApiState::open_target(&args.ledger.served(), operators) {
        Ok(state) => state,
        Err(error) => return bad_input(error),
    };
    let (state, compensation) = match &args.billing_url {
        None => (
            state,
            "compensate: no compensation target configured (answers 501; see --billing-url)".to_owned(),
        ),
        Some(url) => match billing_target(
            url,
            twice_drill::script::tools_with_terms(args.key_retention_ms, args.lookup_settle_ms),
        ) {
            Ok((target, description)) => (state.with_compensator(Arc::new(target)), description),
            Err(message) => return bad_input(message),
        },
    };
    let runtime = match super::server_runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    runtime.block_on(async move {
        let listener = match bind(args.addr, args.allow_non_loopback).await {
            Ok(listener) => listener,
            Err(error) => return bad_input(error),
        };
        let address = listener.local_addr().map_or(args.addr, |address| address);
        println!(
            "operator API on http://{address}/v1/tool-executions — ledger {}, {}; \
             {compensation}. Ctrl-C stops.",
            state.ledger_description(),
            counted(state.operators().len() as u64, "operator", "operators")
        );
        // Whoever started us (a test, a script) may wait for this line to know the port.
        let _ = std::io::stdout().flush();
        match serve_until(listener, state, twice_drill::stop_signal()).await {
            Ok(()) => {
                println!("operator API stopped");
                EXIT_OK
            }
            Err(error) => {
                eprintln!("error: the operator API stopped: {error}");
                EXIT_FAILED
            }
        }
    })
}

/// Why `--billing-url` cannot be used.
#[derive(Debug, thiserror::Error)]
enum BillingUrlError {
    /// Not an address billing can be reached at.
    #[error("--billing-url: {0}")]
    Refused(#[source] BillingTargetError),
    /// Nothing answered at it.
    #[error("--billing-url: {0}. Start `twice-sim billing` first and pass the address it prints")]
    Unreachable(#[source] BillingTargetError),
    /// Terms no billing could keep.
    #[error("--key-retention-ms / --lookup-settle-ms: {0}")]
    Terms(String),
}

/// The terms the compensated tools declare, in words: what a compensation weighs billing's
/// "nothing under the key" by.
fn declared_terms(tools: &[ToolDeclaration]) -> String {
    let words: Vec<String> = tools
        .iter()
        .filter(|tool| tool.compensation)
        .map(|tool| {
            let retention = tool
                .key_retention_ms
                .map_or("keys kept for ever".to_owned(), |retention| {
                    format!("keys kept {}", duration_words(retention))
                });
            let settle = tool
                .lookup_settle_ms
                .map_or("lookups without lag".to_owned(), |settle| {
                    format!("lookups lag up to {}", duration_words(settle))
                });
            format!("{} declares {retention}, {settle}", tool.name)
        })
        .collect();
    words.join("; ")
}

/// Checks `--billing-url` and asks billing once, so a wrong address is found at start and
/// not by the first operator who needs it. `tools` are declared as the workers declare them
/// (the terms from `--key-retention-ms` and `--lookup-settle-ms`). Returns the target and a
/// line saying what it is.
fn billing_target(url: &str, tools: Vec<ToolDeclaration>) -> Result<(BillingCompensator, String), BillingUrlError> {
    let target = BillingCompensator::new(url, tools).map_err(|error| match error {
        BillingTargetError::Terms(problem) => BillingUrlError::Terms(problem),
        error => BillingUrlError::Refused(error),
    })?;
    let stats = target.probe().map_err(BillingUrlError::Unreachable)?;
    let description = if stats.key_handling == KeyHandling::Ignore {
        format!(
            "compensate: billing at {} ignores idempotency keys, so it cannot look a credit up by key: \
             compensations will be refused (409 cannot_look_up)",
            target.url()
        )
    } else {
        format!(
            "compensate: voids credits in billing at {} (keys {}; {}; {} ms per request at most)",
            target.url(),
            stats.key_handling,
            declared_terms(target.tools()),
            twice_drill::billing_target::BILLING_TIMEOUT_MS
        )
    };
    Ok((target, description))
}

/// Prints the SHA-256 of a token read from standard input (so the token stays out of
/// the shell's history and the process list), or makes a new token with `--generate`.
pub fn hash_token_command(args: HashTokenArgs) -> u8 {
    let token = if args.generate {
        match tokens::generate_token() {
            Ok(token) => token,
            Err(error) => {
                eprintln!("error: {error}");
                return EXIT_FAILED;
            }
        }
    } else {
        let mut line = String::new();
        // One line, and never more than a token could be: a pasted file is refused, not read whole.
        let limit = (tokens::TOKEN_CHARS_MAX * 4 + 2) as u64;
        if let Err(error) = std::io::stdin().lock().take(limit).read_line(&mut line) {
            return bad_input(format!("standard input: {error}"));
        }
        line.trim_end_matches(['\n', '\r']).to_owned()
    };
    if let Err(error) = tokens::check_token(&token) {
        return bad_input(format!("the token read from standard input: {error}"));
    }
    let hash = tokens::hash_token(&token);
    if args.generate {
        println!("token:        {token}");
        println!("token_sha256: {hash}");
        println!();
        println!("Give the token to the operator (it is stored nowhere); add the hash to the tokens file:");
        println!("    (id: \"OPERATOR-ID\", token_sha256: \"{hash}\", tenants: [\"default\"]),");
    } else {
        println!("{hash}");
    }
    EXIT_OK
}
