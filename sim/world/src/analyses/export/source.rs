//! The exported project's own files: `Cargo.toml`, `src/main.rs` and `src/level.rs` — the
//! level's tools, guards, world and script as a developer would write them.

use std::fmt::Write as _;

use crate::billing::KeyHandling;
use crate::billing_tools::Operation;
use crate::level::{Level, LoadedTape};
use crate::model::{OnCompensated, OnFailed};
use crate::runtime::guards::{Guard, Guards};
use crate::runtime::tool::{SideEffect, ToolDeclaration};

/// Whether a program with these guards needs the library's simulation switches: only when a
/// guard is off (a lean build has no way to switch one off).
pub fn needs_simulation(guards: Guards) -> bool {
    guards != Guards::all_on()
}

pub fn cargo_toml(name: &str, guards: Guards, runtime: &super::RuntimeDependency) -> String {
    let version = super::RUNTIME_VERSION;
    let (features, why) = if needs_simulation(guards) {
        (
            r#"features = ["simulation"]"#,
            "# `simulation`: the library's switches for showing a failure. This level switches guards\n\
             # off to show what they prevent; an agent never enables it (without it, no program can\n\
             # switch a guard off).\n",
        )
    } else {
        (
            "features = []",
            "# Every guard on: the library as an agent uses it, no `simulation` switches.\n",
        )
    };
    let (from, source) = match runtime {
        super::RuntimeDependency::Path(path) => (
            format!(
                "# Exported from Twice's repository: the library by path. In your own project write\n\
                 #   twice-runtime = {{ version = \"{version}\", default-features = false, {features} }}\n"
            ),
            format!("path = {}", toml_string(&path.to_string_lossy())),
        ),
        super::RuntimeDependency::Version => (
            format!(
                "# Exported by a Twice built away from its repository: the library by version, from your\n\
                 # registry. If cargo cannot find it there, point at a checkout of Twice instead:\n\
                 #   twice-runtime = {{ path = \"PATH/TO/twice/sim/runtime\", default-features = false, {features} }}\n"
            ),
            format!("version = \"{version}\""),
        ),
    };
    format!(
        r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2024"
rust-version = "1.95"
publish = false

# A project of its own, even when exported into a folder of another cargo workspace.
[workspace]

[dependencies]
{from}# (default features add the SQLite ledger, `Ledger::open`; this program keeps its ledger in
# memory).
{why}twice-runtime = {{ {source}, default-features = false, {features} }}
serde = {{ version = "1", features = ["derive"] }}
serde_json = "1"
"#
    )
}

/// `text` as a TOML basic string: quotes and backslashes (a Windows path) escaped.
fn toml_string(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for character in text.chars() {
        match character {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            other => quoted.push(other),
        }
    }
    quoted.push('"');
    quoted
}

pub fn main_rs(tape: &LoadedTape) -> String {
    let level = &tape.level.level;
    let tape_file = tape
        .path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(
        r#"//! Level {id}, "{title}", with the tape `{tape_file}`: the run as a program against
//! `twice-runtime`'s public API. `cargo run` plays it and prints the verdict; `twice-sim replay
//! {tape_file}` gives the same one.
//!
//! - `level.rs`: the tools as Penny declares them, the runtime's guards, billing's world.
//! - `play.rs`: a driver of the library's own `Worker` machine and `Executor`.
//! - `billing.rs`, `records.rs`: a fake billing that behaves as the level's.
//! - `model.rs`: the model's side (Penny's script).
//! - `schedule.rs`: who moves when, and where the faults land.

// The driver, billing and the model are the same files for every level; a level uses part.
#![allow(dead_code, reason = "the shared driver and billing: this level uses part of them")]

mod billing;
mod level;
mod model;
mod play;
mod records;
mod schedule;
mod verdict;

use std::process::ExitCode;

fn main() -> ExitCode {{
    let mut world = play::World::new(
        level::billing(),
        level::setup,
        level::OPERATIONS,
        level::POLICY,
        level::LOGS_LATE_ANSWERS,
    );
    if let Err(stray) = world.play(schedule::STEPS) {{
        eprintln!("error: the runtime did not take the simulator's path, at {{stray}}");
        return ExitCode::from(1);
    }}
    for line in verdict::lines(&world.billing, level::ACCOUNTS, level::OWED) {{
        println!("{{line}}");
    }}
    ExitCode::SUCCESS
}}
"#,
        id = level.id,
        title = level.title.replace('"', "'"),
    )
}

fn side_effect(side_effect: SideEffect) -> &'static str {
    match side_effect {
        SideEffect::Read => "SideEffect::Read",
        SideEffect::Write => "SideEffect::Write",
        SideEffect::External => "SideEffect::External",
        SideEffect::Destructive => "SideEffect::Destructive",
    }
}

/// The declaration as builder calls, one a line.
pub fn declaration(tool: &ToolDeclaration) -> String {
    let mut code = format!(
        "ToolDeclaration::new({:?}, {})",
        tool.name.as_str(),
        side_effect(tool.side_effect)
    );
    let mut call = |line: String| {
        let _ = write!(code, "\n            .{line}");
    };
    if let Some(operation) = &tool.operation {
        call(format!("with_operation({operation:?})"));
    }
    if !tool.takes_key {
        call("without_key()".to_owned());
    }
    if let Some(attempts) = tool.attempts {
        call(format!("with_attempts({attempts})"));
    }
    if tool.reconcile {
        call("with_reconcile()".to_owned());
    }
    if tool.compensation {
        call("with_compensation()".to_owned());
    }
    if let Some(retention) = tool.key_retention_ms {
        call(format!("with_key_retention_ms({retention})"));
    }
    if let Some(settle) = tool.lookup_settle_ms {
        call(format!("with_lookup_settle_ms({settle})"));
    }
    code
}

fn guards_code(guards: Guards) -> String {
    if !needs_simulation(guards) {
        return "Guards::all_on()".to_owned();
    }
    let on: Vec<String> = Guard::EVERY
        .into_iter()
        .filter(|guard| guards.is_on(*guard))
        .map(|guard| format!("Guard::{guard:?}"))
        .collect();
    let mut code = format!("Guards::only([{}])", on.join(", "));
    if guards.naive_refusal() != Guards::all_off().naive_refusal() {
        let _ = write!(code, ".with_naive_refusal(NaiveRefusal::{:?})", guards.naive_refusal());
    }
    code
}

/// Billing's world as builder calls: key handling, accounts, retention and lookup lag.
fn billing_code(world: &crate::level::World) -> String {
    let keys = match world.billing_keys {
        KeyHandling::Honour => "KeyHandling::Honour",
        KeyHandling::MetadataOnly => "KeyHandling::MetadataOnly",
        KeyHandling::Ignore => "KeyHandling::Ignore",
    };
    let accounts: Vec<String> = world
        .accounts
        .iter()
        .map(|account| format!("({:?}, {:?}, {})", account.id, account.owner, account.balance_cents))
        .collect();
    let mut billing = format!("Billing::new({keys}, &[{}])", accounts.join(", "));
    if let Some(retention) = world.billing_key_retention_ms {
        let _ = write!(billing, "\n        .keeping_keys_for_ms({retention})");
    }
    if let Some(settle) = world.billing_lookup_settle_ms {
        let _ = write!(billing, "\n        .lookups_lag_ms({settle})");
    }
    billing
}

/// What a worker's setup adds for this level: the runs' tenants, the recovery limit.
fn setup_extras(level: &Level) -> String {
    let tenants: Vec<String> = level
        .runs
        .iter()
        .filter(|run| run.tenant.as_str() != "default")
        .map(|run| format!("        {:?} => {:?},", run.id.as_str(), run.tenant.as_str()))
        .collect();
    let mut extras = String::new();
    if !tenants.is_empty() {
        let _ = write!(
            extras,
            "    // The tenant whose ledger rows a run's are.\n    setup = setup.with_tenant(match run {{\n{}\n        _ => \"default\",\n    }});\n",
            tenants.join("\n")
        );
    }
    if let Some(limit) = level.world.recovery_attempts_max {
        let _ = write!(
            extras,
            "    // A run recovered this many times after crashes waits for a person instead.\n    setup.recovery_attempts_max = Some({limit});\n"
        );
    }
    extras
}

/// Quoted strings, comma-separated.
fn quoted<'a>(items: impl Iterator<Item = &'a str>) -> String {
    items.map(|item| format!("{item:?}")).collect::<Vec<_>>().join(", ")
}

pub fn level_rs(level: &Level, guards: Guards) -> String {
    let world = &level.world;
    let tools: Vec<String> = level
        .tools
        .iter()
        .map(|tool| format!("        {},", declaration(tool)))
        .collect();
    let off: Vec<&str> = Guard::EVERY
        .into_iter()
        .filter(|guard| !guards.is_on(*guard))
        .map(Guard::name)
        .collect();
    let guards_doc = if off.is_empty() {
        "/// Every guard on: the runtime as it always runs.".to_owned()
    } else {
        format!(
            "/// Switched off by this level, to show what they prevent: {}.",
            off.join(", ")
        )
    };
    let account_ids = quoted(world.accounts.iter().map(|account| account.id.as_str()));
    let owed: Vec<String> = level
        .credit_calls()
        .map(|(_, _, call)| format!("({:?}, {})", call.account, call.amount_cents))
        .collect();
    let operations: Vec<String> = level
        .tools
        .iter()
        .filter_map(|tool| {
            Operation::of(tool).map(|operation| format!("({:?}, {:?})", tool.name.as_str(), operation.name()))
        })
        .collect();
    let naive = if guards_code(guards).contains("NaiveRefusal") {
        ", NaiveRefusal"
    } else {
        ""
    };
    let guard_import = if needs_simulation(guards) {
        format!("Guard, Guards{naive}")
    } else {
        "Guards".to_owned()
    };
    format!(
        r#"//! The level as a developer writes it: the tools Penny may call, the runtime's guards, and
//! the world billing is.

use twice_runtime::tool::{{SideEffect, ToolDeclaration}};
use twice_runtime::worker::WorkerSetup;
use twice_runtime::{{{guard_import}}};

use crate::billing::{{Billing, KeyHandling}};
use crate::model::Policy;

/// The tools as Penny declares them: what each changes, whether it passes the call's key
/// downstream, how many attempts a write gets, whether a reconcile hook can look a call up.
pub fn tools() -> Vec<ToolDeclaration> {{
    vec![
{tools}
    ]
}}

{guards_doc}
pub fn guards() -> Guards {{
    {guards}
}}

/// Worker `w{{worker}}`'s setup for `run`: one ledger lease of {lease_ms} ms.
pub fn setup(worker: u32, run: &str) -> WorkerSetup {{
    #[allow(unused_mut, reason = "some levels set more")]
    let mut setup = WorkerSetup::new(format!("w{{worker}}"), run, tools())
        .with_guards(guards())
        .with_lease_ms({lease_ms});
{extras}    setup
}}

/// Billing's world: what it does with an idempotency key, and its customers' accounts (id,
/// owner, balance in cents).
pub fn billing() -> Billing {{
    {billing}
}}

/// The customers' accounts, in the verdict's order.
pub const ACCOUNTS: &[&str] = &[{account_ids}];

/// What Penny's script owes, per credit: the account and the cents.
pub const OWED: &[(&str, i64)] = &[{owed}];

/// What each tool does at billing: `credit`, `lookup_balance`, `send_email`, `change_owner`,
/// `delete_record` (a tool not listed issues a credit).
pub const OPERATIONS: &[(&str, &str)] = &[{operations}];

/// The model's policy when a call came to nothing.
pub const POLICY: Policy = Policy {{
    gives_up_on_failure: {gives_up},
    accepts_compensation: {accepts},
}};

/// The runtime logs an answer that came too late in the call's ledger history (the `ledger`
/// guard).
pub const LOGS_LATE_ANSWERS: bool = {logs};
"#,
        tools = tools.join("\n"),
        guards = guards_code(guards),
        lease_ms = world.lease_ms,
        owed = owed.join(", "),
        operations = operations.join(", "),
        extras = setup_extras(level),
        billing = billing_code(world),
        gives_up = level.model.on_failed == OnFailed::FailRun,
        accepts = level.model.on_compensated == OnCompensated::Accept,
        logs = guards.is_on(Guard::Ledger),
    )
}
