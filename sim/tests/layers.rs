//! The layers are crates, and the compiler holds them apart only if the dependencies run one
//! way. Read from `cargo metadata` and `cargo tree`, so a new edge that breaks the order, or a
//! server crate the game starts to link, fails here rather than in a review.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// The workspace's crates, lowest first: each may depend only on crates before it.
const ORDER: [&str; 7] = [
    "twice-runtime",
    "twice-ledger-postgres",
    "twice-world",
    "twice-serve",
    "twice-drill",
    "twice-sim",
    "twice",
];

fn workspace_manifest() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml")
}

fn cargo(arguments: &[&str]) -> String {
    let output = Command::new(env!("CARGO"))
        .args(arguments)
        .arg("--manifest-path")
        .arg(workspace_manifest())
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo {arguments:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("cargo prints UTF-8")
}

/// Each workspace crate's normal and build dependencies on other workspace crates.
fn workspace_edges() -> BTreeMap<String, BTreeSet<String>> {
    let metadata: serde_json::Value =
        serde_json::from_str(&cargo(&["metadata", "--format-version", "1", "--no-deps", "--locked"]))
            .expect("cargo metadata prints JSON");
    let members: BTreeSet<String> = metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|package| package["name"].as_str().expect("a name").to_owned())
        .collect();
    let mut edges = BTreeMap::new();
    for package in metadata["packages"].as_array().expect("packages") {
        let name = package["name"].as_str().expect("a name").to_owned();
        let depends_on: BTreeSet<String> = package["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            // Dev-dependencies may reach up (a test may start a binary); the product may not.
            .filter(|dependency| dependency["kind"].as_str() != Some("dev"))
            .map(|dependency| dependency["name"].as_str().expect("a name").to_owned())
            .filter(|dependency| members.contains(dependency))
            .collect();
        edges.insert(name, depends_on);
    }
    edges
}

#[test]
fn every_workspace_crate_depends_only_on_crates_below_it() {
    let edges = workspace_edges();
    let known: BTreeSet<&str> = ORDER.into_iter().collect();
    for name in edges.keys() {
        assert!(
            known.contains(name.as_str()),
            "{name} is not in the layer order; add it to ORDER"
        );
    }
    let rank = |name: &str| ORDER.iter().position(|known| *known == name).expect("in ORDER");
    for (name, depends_on) in &edges {
        for dependency in depends_on {
            assert!(
                rank(dependency) < rank(name),
                "{name} depends on {dependency}, which is not below it: the layers run {ORDER:?}"
            );
        }
    }
    // The positive space: the edges the layering is for are there.
    assert!(edges["twice-world"].contains("twice-runtime"));
    assert!(edges["twice-serve"].contains("twice-world"));
    assert!(edges["twice-drill"].contains("twice-serve"));
    assert!(edges["twice"].contains("twice-world"));
    assert!(
        !edges["twice"].contains("twice-sim"),
        "the game must not link the command line"
    );
    assert!(
        !edges["twice"].contains("twice-drill"),
        "the game must not link the drills"
    );
}

/// The package names in a crate's normal dependency graph.
fn normal_packages(package: &str) -> BTreeSet<String> {
    cargo(&[
        "tree",
        "--locked",
        "--package",
        package,
        "--edges",
        "normal",
        "--prefix",
        "none",
        "--format",
        "{p}",
    ])
    .lines()
    .filter_map(|line| line.split_whitespace().next())
    .map(str::to_owned)
    .collect()
}

#[test]
fn the_game_links_no_database_client_http_client_or_process_control() {
    let game = normal_packages("twice");
    assert!(game.contains("bevy"), "the graph was read: {game:?}");
    for absent in [
        "reqwest",
        "postgres",
        "tokio-postgres",
        "twice-ledger-postgres",
        "twice-drill",
        "twice-sim",
    ] {
        assert!(!game.contains(absent), "`cargo tree -p twice -e normal` holds {absent}");
    }
    // `nix` reaches the game only through Bevy's Ctrl-C handler (bevy_app -> ctrlc) and the
    // game's own "features as tested" line for it, never through a layer of ours.
    let nix_users: BTreeSet<String> = cargo(&[
        "tree",
        "--locked",
        "--package",
        "twice",
        "--edges",
        "normal",
        "--invert",
        "nix",
        "--depth",
        "1",
        "--prefix",
        "depth",
        "--format",
        "{p}",
    ])
    .lines()
    .filter_map(|line| line.strip_prefix('1'))
    .filter_map(|line| line.split_whitespace().next())
    .map(str::to_owned)
    .collect();
    let allowed: BTreeSet<String> = ["ctrlc", "twice"].into_iter().map(str::to_owned).collect();
    assert!(nix_users.is_subset(&allowed), "nix is linked by {nix_users:?}");
}

#[test]
fn the_game_without_the_operator_api_links_no_http_server() {
    let game = cargo(&[
        "tree",
        "--locked",
        "--package",
        "twice",
        "--edges",
        "normal",
        "--no-default-features",
        "--prefix",
        "none",
        "--format",
        "{p}",
    ]);
    let packages: BTreeSet<&str> = game.lines().filter_map(|line| line.split_whitespace().next()).collect();
    assert!(packages.contains("twice-world"), "the graph was read: {packages:?}");
    for absent in ["twice-serve", "axum", "hyper", "mio", "reqwest"] {
        assert!(
            !packages.contains(absent),
            "the game without `operator-api` links {absent}"
        );
    }
    // tokio may be there only as the runtime's timers: the game asks for twice-runtime's `tokio`
    // feature as the test command builds it (the drill's worker runs on the async driver), so
    // the play command and the test command build the runtime, the world and the game once —
    // but with no executor, no IO and no network (`rt`, `net`, `io-util`, … stay off).
    if !packages.contains("tokio") {
        return;
    }
    let tokio = cargo(&[
        "tree",
        "--locked",
        "--package",
        "twice",
        "--edges",
        "normal,features",
        "--no-default-features",
        "--invert",
        "tokio",
        "--prefix",
        "none",
        "--format",
        "{p} [{f}]",
    ]);
    if let Some(line) = tokio.lines().find(|line| line.starts_with("tokio v")) {
        let features = line
            .rsplit_once('[')
            .map_or("", |(_, features)| features.trim_end_matches(']'));
        assert!(
            features
                .split(',')
                .all(|feature| feature.is_empty() || feature == "time"),
            "the game without `operator-api` links tokio with more than its timers: {line}"
        );
    }
}

#[test]
fn the_world_has_no_async_runtime_and_no_http() {
    let world = normal_packages("twice-world");
    assert!(world.contains("twice-runtime"), "the graph was read: {world:?}");
    for absent in ["tokio", "axum", "hyper", "reqwest", "nix", "postgres"] {
        assert!(
            !world.contains(absent),
            "`cargo tree -p twice-world -e normal` holds {absent}"
        );
    }
}

/// twice-world's modules in layers, lowest first: a module may use modules of its own layer and
/// of the layers before it, never one after. The words the engine speaks sit below the engine;
/// the campaign's reference texts (glossary, presenter notes) below the campaign; the analyses
/// read the engine, the guards and the campaign; the code on screen (the runtime's loop generated
/// from a level's guards, a cursor per worker, the debrief's fix) reads them all; the reports word
/// analysed runs; the play session the game and the browser share sits on top. A new module must
/// be placed here.
const WORLD_LAYERS: [(&str, &[&str]); 9] = [
    ("the words the engine speaks", &["text", "error", "exit"]),
    (
        "the engine",
        &[
            "billing",
            "billing_tools",
            "cards",
            "checker",
            "hand",
            "key_look",
            "level",
            "model",
            "outcome",
            "replay",
            "simulation_lock",
            "simulator",
            "upgrade",
        ],
    ),
    // Each guard in one place: its words, rule, rows and sentences read the engine's levels;
    // the campaign, the analyses, the reports and the screens read the guards.
    ("the guards", &["guards"]),
    (
        "the campaign's reference texts",
        &["glossary", "keys", "ledger_words", "presenter_notes", "workshop_plan"],
    ),
    ("the campaign", &["campaign"]),
    (
        "the analyses",
        &[
            "campaign_sweep",
            "counterfactual",
            "debrief",
            "defend",
            "expected",
            "explore",
            "export",
            "expressible",
            "prediction",
            "rulebook",
        ],
    ),
    ("the code on screen", &["code"]),
    ("the reports", &["report", "replay_link"]),
    (
        "the play session and the screens both editions draw",
        &["play_session", "screen", "take_home"],
    ),
];

/// The top-level module a file of twice-world belongs to (`engine/level/tape.rs` → `level`),
/// or `None` for the crate root and the folders' own `mod.rs`.
fn world_module_of(relative: &Path) -> Option<String> {
    let parts: Vec<String> = relative
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    let folders = ["engine", "analyses", "words"];
    let rest: &[String] = match parts.first() {
        Some(first) if folders.contains(&first.as_str()) => &parts[1..],
        _ => &parts[..],
    };
    let first = rest.first()?;
    let module = first.strip_suffix(".rs").unwrap_or(first);
    (module != "lib" && module != "mod").then(|| module.to_owned())
}

/// Every `.rs` file below `folder`.
fn rust_files(folder: &Path, into: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(folder).expect("the folder reads") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            rust_files(&path, into);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            into.push(path);
        }
    }
}

#[test]
fn twice_world_modules_use_only_their_own_layer_and_those_below() {
    let rank_of: BTreeMap<&str, usize> = WORLD_LAYERS
        .iter()
        .enumerate()
        .flat_map(|(rank, (_, modules))| modules.iter().map(move |module| (*module, rank)))
        .collect();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("world/src");
    let mut files = Vec::new();
    rust_files(&source, &mut files);
    let mut checked = 0;
    let mut wrong = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&source).expect("below the source folder");
        let name = relative.file_name().unwrap_or_default().to_string_lossy();
        if name == "tests.rs" || name.ends_with("_tests.rs") {
            continue; // a test module in a file of its own
        }
        let Some(module) = world_module_of(relative) else {
            continue;
        };
        let Some(&rank) = rank_of.get(module.as_str()) else {
            wrong.push(format!(
                "{}: module `{module}` is in no layer of WORLD_LAYERS",
                relative.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(file).expect("the file reads");
        // Tests may reach up (a test plays a level through the analyses); the product may not.
        let product = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (index, _) in product.match_indices("crate::") {
            let used: String = product[index + "crate::".len()..]
                .chars()
                .take_while(|character| character.is_ascii_lowercase() || *character == '_')
                .collect();
            let Some(&used_rank) = rank_of.get(used.as_str()) else {
                continue;
            };
            checked += 1;
            if used_rank > rank {
                wrong.push(format!(
                    "{}: `{module}` ({}) uses `crate::{used}` ({}), a layer above it",
                    relative.display(),
                    WORLD_LAYERS[rank].0,
                    WORLD_LAYERS[used_rank].0
                ));
            }
        }
    }
    assert!(
        checked > 100,
        "the sources were read: {checked} uses of crate:: checked"
    );
    assert!(
        wrong.is_empty(),
        "twice-world's layers are broken:\n{}",
        wrong.join("\n")
    );
}

/// The `disallowed-methods` and `disallowed-types` paths a crate's clippy.toml bans.
fn clippy_bans(crate_folder: &str) -> BTreeSet<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(crate_folder)
        .join("clippy.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    text.lines()
        .filter_map(|line| line.split("path = \"").nth(1))
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_world_bans_what_the_runtime_bans() {
    // A simulation replays byte for byte only if, like the runtime it drives, it never reads
    // the wall clock or a hash map's order: clippy holds both crates to the same bans.
    let runtime = clippy_bans("runtime");
    assert!(runtime.contains("std::time::Instant::now"), "{runtime:?}");
    assert!(runtime.contains("std::collections::HashMap"), "{runtime:?}");
    let world = clippy_bans("world");
    let missing: Vec<&String> = runtime.difference(&world).collect();
    assert!(
        missing.is_empty(),
        "sim/world/clippy.toml lacks the runtime's bans {missing:?}"
    );
}

/// The identifiers a line of code names (comments left out), split at everything that
/// cannot be part of one.
fn identifiers(line: &str) -> impl Iterator<Item = &str> {
    let code = line.split("//").next().unwrap_or_default();
    code.split(|character: char| !(character.is_ascii_alphanumeric() || character == '_'))
        .filter(|word| !word.is_empty())
}

#[test]
fn the_games_domain_never_names_a_screen_the_screens_own_their_transitions() {
    // As in bevy_new_2d: the session, the defence, the guide, the campaign and progress say
    // what they did (messages); each screen decides where that takes the player. A domain
    // file that sets or reads `Screen` ties the game's rules to its pictures again. Only the
    // screens, their UI kit, the crate root that wires the plugins and the dev tools that log
    // transitions may name the state.
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../game/src");
    let mut files = Vec::new();
    rust_files(&source, &mut files);
    let screen_side = |relative: &Path| {
        relative.starts_with("screens")
            || relative.starts_with("ui")
            || relative == Path::new("lib.rs")
            || relative == Path::new("dev_tools.rs")
    };
    let mut domain = 0;
    let mut wrong = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&source).expect("below the source folder");
        if screen_side(relative) {
            continue;
        }
        domain += 1;
        let text = std::fs::read_to_string(file).expect("the file reads");
        for (number, line) in text.lines().enumerate() {
            if let Some(named) = identifiers(line).find(|word| matches!(*word, "Screen" | "NextState")) {
                wrong.push(format!("{}:{}: names `{named}`", relative.display(), number + 1));
            }
            // Nor does it use the screens' drawing or their UI kit (a drawing cache kept in
            // the domain is a picture's state in the rules): comments may point at them.
            let code = line.split("//").next().unwrap_or_default();
            for drawing in ["crate::screens", "crate::ui", "super::screens", "super::ui"] {
                if code.contains(drawing) {
                    wrong.push(format!("{}:{}: uses `{drawing}`", relative.display(), number + 1));
                }
            }
        }
    }
    assert!(domain >= 20, "the game's domain files were read: {domain}");
    for expected in [
        "session/intent.rs",
        "defence.rs",
        "guide.rs",
        "headless.rs",
        "campaign.rs",
        "progress.rs",
    ] {
        assert!(
            files.iter().any(|file| file.ends_with(expected)),
            "{expected} is no longer where this test looks"
        );
    }
    assert!(
        wrong.is_empty(),
        "the game's domain names the screens' state or drawing (send a message the screens answer instead; keep drawing caches in the screen):\n{}",
        wrong.join("\n")
    );
}
