//! `twice-sim export`: every shipped level, with a winning and a losing tape, exported into one
//! cargo workspace under the target folder (one build for all), each program run and its
//! verdict compared line for line with the simulator's run of the same tape. Tapes that cannot
//! be exported are listed with why. And each bad input: exit 2, a message naming the file,
//! nothing written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use twice_world::level::{self, LoadedTape};
use twice_world::outcome::Outcome;
use twice_world::replay;
use twice_world::runtime::ledger::LedgerStore;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn twice_sim(arguments: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_twice-sim"))
        .args(arguments)
        .current_dir(repository())
        .output()
        .expect("twice-sim runs")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The target folder this test was built in (its binary is `target/debug/twice-sim`).
fn target_folder() -> PathBuf {
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_twice-sim"));
    binary
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .expect("the binary is in target/<profile>/")
}

/// A tape's run in the simulator: whether the crew's goal was reached, and the verdict's lines
/// an exported program must print.
fn simulated(tape: &LoadedTape) -> (bool, Vec<String>) {
    let mut simulation = replay::simulation_of(tape, LedgerStore::Memory).expect("a shipped tape builds");
    simulation.run().expect("a shipped tape runs");
    let verdict = simulation.verdict().expect("a shipped tape has a verdict");
    let lines = twice_world::export::verdict::lines(&tape.level.level, simulation.billing());
    // The last line names what was done twice exactly when the checker's outcome is that.
    let last = lines.last().cloned().unwrap_or_default();
    for (outcome, words) in [
        (Outcome::PaidTwice, "someone was paid twice"),
        (Outcome::EmailedTwice, "the same email twice"),
        (Outcome::ChangeUndone, "was undone"),
        (Outcome::ActedAgain, "acted again"),
    ] {
        assert_eq!(
            last.contains(words),
            verdict.outcome == outcome,
            "{}: the verdict's lines ({lines:?}) and the checker's outcome ({:?}) agree on {outcome:?}",
            tape.path.display(),
            verdict.outcome
        );
    }
    (verdict.goal_reached, lines)
}

struct Exported {
    package: String,
    tape: PathBuf,
    expected: Vec<String>,
}

#[test]
#[ignore = "builds 68 cargo projects, 4 to 5 minutes cold on two cores: .ci/run runs it with --ignored"]
fn every_level_exports_and_its_programs_print_the_simulators_verdict() {
    let levels = level::files_below(&repository().join("levels"), ".level.ron").expect("the levels folder lists");
    let workspace = target_folder().join("export-test");
    let _ = std::fs::remove_dir_all(workspace.join("programs"));
    std::fs::create_dir_all(workspace.join("programs")).unwrap();
    let mut exported: Vec<Exported> = Vec::new();
    let mut not_exported: BTreeMap<String, String> = BTreeMap::new();
    for level_path in &levels {
        let name = level_path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .replace(".level.ron", "");
        let tapes: Vec<PathBuf> = std::fs::read_dir(level_path.parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| {
                let file = path.file_name().unwrap().to_string_lossy().into_owned();
                file.starts_with(&format!("{name}.")) && file.ends_with(".tape.ron")
            })
            .collect();
        let mut tapes = tapes;
        tapes.sort();
        // The first tape of each kind that exports: one where the crew wins, one where it loses.
        let mut kinds: BTreeMap<bool, Vec<String>> = BTreeMap::new();
        let mut done: BTreeMap<bool, bool> = BTreeMap::new();
        for tape_path in &tapes {
            let tape = level::load_tape(tape_path).expect("a shipped tape loads");
            let (won, expected) = simulated(&tape);
            if done.get(&won).copied().unwrap_or(false) {
                continue;
            }
            let tape_file = tape_path.file_name().unwrap().to_string_lossy().into_owned();
            let package = twice_world::export::package_name(&tape);
            let out = workspace.join("programs").join(&package);
            let output = twice_sim(&[
                "export",
                level_path.to_str().unwrap(),
                "--tape",
                tape_path.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ]);
            if output.status.success() {
                done.insert(won, true);
                exported.push(Exported {
                    package,
                    tape: tape_path.clone(),
                    expected,
                });
            } else {
                assert_eq!(output.status.code(), Some(2), "{}", text(&output));
                assert!(!out.exists(), "a refused export writes nothing: {}", out.display());
                kinds
                    .entry(won)
                    .or_default()
                    .push(format!("{tape_file}: {}", text(&output).trim()));
            }
        }
        for won in [true, false] {
            if !done.get(&won).copied().unwrap_or(false) {
                let kind = if won { "winning" } else { "losing" };
                let why = kinds
                    .remove(&won)
                    .map_or_else(|| format!("no {kind} tape"), |reasons| reasons.join("\n    "));
                not_exported.insert(format!("{name} ({kind})"), why);
            }
        }
    }
    println!("Not exported ({}):", not_exported.len());
    for (what, why) in &not_exported {
        println!("  {what}:\n    {why}");
    }
    assert!(!exported.is_empty(), "some tapes export");

    // One workspace, one build: the exported projects as members, versions from the
    // repository's lock file, offline.
    let members: Vec<String> = exported
        .iter()
        .map(|program| format!("    \"programs/{}\",", program.package))
        .collect();
    std::fs::write(
        workspace.join("Cargo.toml"),
        format!(
            "[workspace]\nresolver = \"3\"\nmembers = [\n{}\n]\n",
            members.join("\n")
        ),
    )
    .unwrap();
    for program in &exported {
        // Each project is a workspace of its own; here they are members of this one.
        let manifest = workspace.join("programs").join(&program.package).join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest).unwrap();
        std::fs::write(&manifest, text.replacen("\n[workspace]\n", "\n", 1)).unwrap();
    }
    std::fs::copy(repository().join("Cargo.lock"), workspace.join("Cargo.lock")).unwrap();
    let started = Instant::now();
    let build = Command::new(env!("CARGO"))
        .args(["build", "--offline", "--quiet", "--workspace"])
        .current_dir(&workspace)
        .env("CARGO_TARGET_DIR", workspace.join("target"))
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo runs");
    assert!(
        build.status.success(),
        "the exported workspace builds:\n{}",
        text(&build)
    );
    println!(
        "Built {} exported programs in {:.1} s.",
        exported.len(),
        started.elapsed().as_secs_f64()
    );
    let mut differ = Vec::new();
    for program in &exported {
        let binary = workspace.join("target/debug").join(&program.package);
        let output = Command::new(&binary).output().expect("an exported program runs");
        let printed: Vec<String> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        if !output.status.success() || printed != program.expected {
            differ.push(format!(
                "{}: the program printed\n{}\nthe simulator's run says\n{}",
                program.tape.display(),
                text(&output),
                program.expected.join("\n")
            ));
        }
    }
    println!("{} programs ran; {} differ.", exported.len(), differ.len());
    assert!(differ.is_empty(), "{}", differ.join("\n\n"));
}

/// A fresh folder under the target folder for one bad-input case.
fn scratch(name: &str) -> PathBuf {
    let folder = target_folder().join("export-bad-input").join(name);
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).unwrap();
    folder
}

/// Exit 2, the message names `names`, and `out` is as it was (`None`: it does not exist).
fn refused(output: &Output, names: &str, out: &Path, before: Option<Vec<PathBuf>>) {
    assert_eq!(output.status.code(), Some(2), "{}", text(output));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.starts_with("error: ") && said.contains(names),
        "names {names}: {said}"
    );
    let now = std::fs::read_dir(out).ok().map(|entries| {
        let mut listed: Vec<PathBuf> = entries.map(|entry| entry.unwrap().path()).collect();
        listed.sort();
        listed
    });
    assert_eq!(now, before, "nothing written to {}", out.display());
    let parent = out.parent().unwrap();
    let partial = std::fs::read_dir(parent)
        .unwrap()
        .any(|entry| entry.unwrap().file_name().to_string_lossy().contains(".partial-"));
    assert!(!partial, "no half-written folder left beside {}", out.display());
}

#[test]
fn an_out_folder_that_is_not_empty_is_refused_and_left_alone() {
    let folder = scratch("not-empty");
    let out = folder.join("project");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let output = twice_sim(&[
        "export",
        "levels/01-naive-retry.level.ron",
        "--out",
        out.to_str().unwrap(),
    ]);
    refused(&output, out.to_str().unwrap(), &out, Some(vec![out.join("notes.txt")]));
    assert!(text(&output).contains("not an empty folder"), "{}", text(&output));
}

#[test]
fn an_empty_out_folder_is_filled() {
    let folder = scratch("empty");
    let out = folder.join("project");
    std::fs::create_dir_all(&out).unwrap();
    let output = twice_sim(&[
        "export",
        "levels/01-naive-retry.level.ron",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(
        text(&output).contains("winning tape"),
        "says which tape: {}",
        text(&output)
    );
    for file in [
        "Cargo.toml",
        "src/main.rs",
        "src/level.rs",
        "src/schedule.rs",
        "src/play.rs",
    ] {
        assert!(out.join(file).is_file(), "{file} written");
    }
}

#[test]
fn a_tape_of_another_level_is_refused() {
    let out = scratch("other-level").join("project");
    let output = twice_sim(&[
        "export",
        "levels/01-naive-retry.level.ron",
        "--tape",
        "levels/03-model-calls-again.win.tape.ron",
        "--out",
        out.to_str().unwrap(),
    ]);
    refused(&output, "03-model-calls-again.win.tape.ron", &out, None);
    assert!(
        text(&output).contains("03-model-calls-again.level.ron"),
        "{}",
        text(&output)
    );
}

#[test]
fn a_level_that_does_not_load_is_refused() {
    let folder = scratch("broken-level");
    let level = folder.join("broken.level.ron");
    std::fs::write(&level, "(id: \"broken\", title: ").unwrap();
    let out = folder.join("project");
    let output = twice_sim(&["export", level.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    refused(&output, level.to_str().unwrap(), &out, None);
}

#[test]
fn a_level_without_a_winning_tape_asks_for_one() {
    let out = scratch("no-win").join("project");
    let output = twice_sim(&[
        "export",
        "levels/02-one-attempt.level.ron",
        "--out",
        out.to_str().unwrap(),
    ]);
    refused(&output, "02-one-attempt.win.tape.ron", &out, None);
    assert!(text(&output).contains("--tape"), "{}", text(&output));
}

#[test]
fn a_tape_that_cannot_be_exported_is_refused_with_why() {
    let out = scratch("declares-a-tool").join("project");
    let output = twice_sim(&[
        "export",
        "levels/22-fine-print.level.ron",
        "--out",
        out.to_str().unwrap(),
    ]);
    refused(&output, "22-fine-print.win.tape.ron", &out, None);
    assert!(text(&output).contains("DeclareTool"), "{}", text(&output));
}
