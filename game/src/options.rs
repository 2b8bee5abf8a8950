//! The command line: normal play, and the headless uses (screenshots, the frame benchmark).

use std::path::PathBuf;

use bevy::prelude::*;
use clap::{Parser, ValueEnum};
use twice_world::simulator::SimulationBuilder;

/// The most frames one benchmark may run.
pub const BENCH_FRAMES_MAX: u32 = 100_000;
/// The largest window the game opens (a limit on everything).
pub const WINDOW_SIDE_MAX: u32 = 8_192;

/// Which screen `--screenshot` captures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ShotScreen {
    Title,
    Levels,
    Level,
    Debrief,
    /// The debrief with its first other outcome open beside this run (needs --tape or --level).
    DebriefOther,
    Sandbox,
    Replay,
    /// The level screen with the glossary open (needs --tape or --level).
    Glossary,
    /// The level screen with the `?` keys overlay open (needs --tape or --level).
    Keys,
    /// The level screen with the prediction window (V) open (needs --level).
    Predict,
    /// The level screen with the pause menu (Esc) open (needs --tape or --level, and --at).
    Pause,
    /// The level screen showing its code (C): the loop, a cursor per worker (needs --tape or --level).
    Code,
    /// Defender mode for the unbeatable level given with --level (with --guards switched on and checked).
    Defend,
    /// The ending (what the player learned, the finale, credits), from the progress in --data-dir.
    Ending,
}

#[derive(Clone, Debug, Parser, Resource)]
#[command(
    name = "twice",
    version,
    about = "Twice: a heist game about side effects that must happen once. Make Penny the refund bot pay twice."
)]
pub struct Options {
    /// The campaign folder (default: `levels/` here, or beside the game).
    #[arg(long, value_name = "DIR")]
    pub levels: Option<PathBuf>,
    /// Where progress, saved tapes and scratch ledgers go (default: $XDG_DATA_HOME/twice).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Render one screen to this PNG and exit (the level screen needs --tape or --level).
    #[arg(long, value_name = "OUT.png")]
    pub screenshot: Option<PathBuf>,
    /// Open this tape in the replay viewer.
    #[arg(long, value_name = "TAPE")]
    pub tape: Option<PathBuf>,
    /// Open this level, under the campaign's rules.
    #[arg(long, value_name = "LEVEL", conflicts_with = "tape")]
    pub level: Option<PathBuf>,
    /// Open a run shared from the browser's debrief (the whole URL, or its `replay=1.…` part)
    /// at its end: a sandbox play of that campaign level with the link's seed, guards and moves.
    #[arg(long, value_name = "URL", conflicts_with_all = ["tape", "level"])]
    pub replay_url: Option<String>,
    /// With --tape or --level: run this many phases before showing the level.
    #[arg(long, value_name = "PHASE_COUNT")]
    pub at: Option<u32>,
    /// With --screenshot: which screen (default: the level screen when a tape or level is given, else the title).
    /// `level`, `debrief` and `glossary` show the tape or level given, `defend` the unbeatable level
    /// given with --level; the others show no level, so take neither.
    #[arg(long, value_enum)]
    pub screen: Option<ShotScreen>,
    /// With --screenshot --screen defend: the guards to switch on and check (names, comma-separated).
    #[arg(long, value_name = "GUARDS", requires = "screenshot")]
    pub guards: Option<String>,
    /// Measure the CPU time of N frames of the level screen with a 10,000-row ledger, print it and exit.
    #[arg(long, value_name = "N")]
    pub bench_frames: Option<u32>,
    /// Serve the operator HTTP API (as `twice-sim serve` does) on the open level's ledger, at this address.
    #[arg(long, value_name = "ADDR")]
    pub operator_api: Option<std::net::SocketAddr>,
    /// With --operator-api: the operators and their hashed tokens (default: a token made now,
    /// printed at start, for an operator `workshop` who may act for the level's tenants).
    #[arg(long, value_name = "FILE", requires = "operator_api")]
    pub tokens: Option<PathBuf>,
    /// With --operator-api: allow an address other than loopback (reachable from other machines).
    #[arg(long, requires = "operator_api")]
    pub allow_non_loopback: bool,
    /// Presenter mode for a projector: text and timeline 1.75 times larger, the stage and the
    /// timeline first (the side panels on demand, P), the chapter's presenter notes (N).
    #[arg(long)]
    pub presenter: bool,
    /// Every level open, whatever progress says (progress itself is not changed).
    #[arg(long)]
    pub unlock_all: bool,
    /// Open the level select on this chapter's first level.
    #[arg(long, value_name = "N")]
    pub chapter: Option<u32>,
    /// Window width in logical pixels.
    #[arg(long, default_value_t = 1280)]
    pub width: u32,
    /// Window height in logical pixels.
    #[arg(long, default_value_t = 720)]
    pub height: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options::parse_from(["twice"])
    }
}

impl Options {
    /// Parses the process's arguments; on a bad command line, prints why and gives the exit code.
    pub fn from_command_line() -> Result<Options, AppExit> {
        let options = match Options::try_parse() {
            Ok(options) => options,
            Err(error) => {
                let _ = error.print();
                return Err(if error.use_stderr() {
                    AppExit::from_code(2)
                } else {
                    AppExit::Success
                });
            }
        };
        if let Err(problem) = options.check().and_then(|()| options.check_files()) {
            eprintln!("error: {problem}");
            return Err(AppExit::from_code(2));
        }
        Ok(options)
    }

    /// What clap cannot check on its own.
    pub fn check(&self) -> Result<(), StartError> {
        if let Some(path) = &self.screenshot
            && path.extension().and_then(|extension| extension.to_str()) != Some("png")
        {
            return Err(StartError::flag(
                "screenshot",
                format!("--screenshot {}: the file name must end in .png", path.display()),
            ));
        }
        if self.at.is_some() && self.replay_url.is_some() {
            return Err(StartError::flag(
                "at",
                "--at and --replay-url: a replay link opens at its end; rewind from there (or save it as a tape)",
            ));
        }
        if self.at.is_some() && self.tape.is_none() && self.level.is_none() {
            return Err(StartError::flag(
                "at",
                "--at needs --tape or --level: it says how far into that level to go",
            ));
        }
        if let Some(frames) = self.bench_frames
            && !(1..=BENCH_FRAMES_MAX).contains(&frames)
        {
            return Err(StartError::flag(
                "bench-frames",
                format!("--bench-frames must be 1 to {BENCH_FRAMES_MAX}, not {frames}"),
            ));
        }
        if self.bench_frames.is_some() && self.screenshot.is_some() {
            return Err(StartError::flag(
                "bench-frames",
                "--bench-frames and --screenshot are separate runs; give one",
            ));
        }
        for (name, side) in [("--width", self.width), ("--height", self.height)] {
            if !(320..=WINDOW_SIDE_MAX).contains(&side) {
                return Err(StartError::flag(
                    &name[2..],
                    format!("{name} must be 320 to {WINDOW_SIDE_MAX}, not {side}"),
                ));
            }
        }
        if self.screen.is_some() && self.screenshot.is_none() {
            return Err(StartError::flag(
                "screen",
                "--screen says which screen --screenshot captures: give --screenshot OUT.png too",
            ));
        }
        if matches!(
            self.screen,
            Some(
                ShotScreen::Level
                    | ShotScreen::Debrief
                    | ShotScreen::DebriefOther
                    | ShotScreen::Glossary
                    | ShotScreen::Keys
                    | ShotScreen::Predict
                    | ShotScreen::Pause
                    | ShotScreen::Code
            )
        ) && self.tape.is_none()
            && self.level.is_none()
            && self.replay_url.is_none()
        {
            return Err(StartError::flag(
                "screen",
                "--screen level/debrief/glossary/keys needs --tape, --level or --replay-url",
            ));
        }
        if self.screen == Some(ShotScreen::Defend)
            && (self.level.is_none() || self.tape.is_some() || self.at.is_some() || self.replay_url.is_some())
        {
            return Err(StartError::flag(
                "screen",
                "--screen defend needs --level (an unbeatable level), without --tape, --at or --replay-url",
            ));
        }
        if let Some(list) = &self.guards {
            if self.screen != Some(ShotScreen::Defend) {
                return Err(StartError::flag(
                    "guards",
                    "--guards says which guards --screen defend switches on: give --screen defend too",
                ));
            }
            twice_world::runtime::guards::Guards::parse_list(list)
                .map_err(|error| StartError::flag("guards", format!("--guards: {error}")))?;
        }
        if let Some(
            screen @ (ShotScreen::Title
            | ShotScreen::Levels
            | ShotScreen::Sandbox
            | ShotScreen::Replay
            | ShotScreen::Ending),
        ) = self.screen
        {
            // A tape or level opens on the level screen, so this screen would never be reached.
            let given = match (&self.tape, &self.level, &self.replay_url) {
                (Some(_), _, _) => Some("--tape"),
                (None, Some(_), _) => Some("--level"),
                (None, None, Some(_)) => Some("--replay-url"),
                (None, None, None) => None,
            };
            if let Some(flag) = given {
                let name = screen
                    .to_possible_value()
                    .map_or_else(String::new, |value| value.get_name().to_owned());
                return Err(StartError::flag(
                    "screen",
                    format!(
                        "--screen {name} shows no level, but {flag} opens one on the level screen: \
                     use --screen level (or debrief) to capture it, or drop {flag}"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `--at N` past the run's end would show the end and say nothing: refused, with the
    /// phase the run ends at (the same simulation the level screen then runs).
    fn check_at(&self, builder: SimulationBuilder, run: &str) -> Result<(), StartError> {
        let Some(at) = self.at else {
            return Ok(());
        };
        let mut simulation = builder
            .build()
            .map_err(|error| StartError::flag("at", format!("--at {at}: {error}")))?;
        simulation
            .run()
            .map_err(|error| StartError::flag("at", format!("--at {at}: {error}")))?;
        let end = simulation.phase();
        if at > end {
            return Err(StartError::flag(
                "at",
                format!(
                    "--at {at}: {run} ends at phase {end}; give a phase from 0 to {end} (or leave --at out to start at 0)"
                ),
            ));
        }
        Ok(())
    }

    /// The files the command line names, read before a window opens: a tape or level that
    /// cannot be read is an error that names it, not a title screen that says nothing.
    pub fn check_files(&self) -> Result<(), StartError> {
        if let Some(path) = &self.tape {
            let loaded = twice_world::level::load_tape(path)
                .map_err(|error| StartError::flag("tape", format!("--tape: {error}")))?;
            let builder = SimulationBuilder::new(loaded.level.level.clone(), loaded.tape.seed)
                .actions(loaded.tape.actions.clone())
                .wire_rule(loaded.tape.wire_rule());
            let builder = match loaded.tape.guards {
                Some(guards) => builder.guards(guards),
                None => builder,
            };
            self.check_at(builder, "this tape's run")?;
        }
        if let Some(path) = &self.level {
            let loaded = twice_world::level::load_level(path)
                .map_err(|error| StartError::flag("level", format!("--level: {error}")))?;
            self.check_at(SimulationBuilder::new(loaded.level, 1), "the level, with no moves,")?;
        }
        if let Some(text) = &self.replay_url {
            let levels = self.levels.clone().unwrap_or_else(crate::paths::find_levels_folder);
            crate::replay_url::check(text, &levels)?;
        }
        Ok(())
    }
}

/// Why the game refuses to start, before a window opens: the flag or folder at fault, in a
/// sentence that names it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StartError {
    /// A flag's value, or flags that do not go together.
    #[error("{detail}")]
    Flag {
        /// The flag, without its dashes.
        flag: &'static str,
        /// Why, in a sentence that starts with the flag.
        detail: String,
    },
    /// A folder the game needs cannot be made.
    #[error("{detail}")]
    Folder {
        /// The folder.
        path: PathBuf,
        /// Why, in a sentence that names it.
        detail: String,
    },
}

impl StartError {
    /// Flag `flag` refused for `detail` (a sentence that starts with the flag).
    pub fn flag(flag: &'static str, detail: impl Into<String>) -> StartError {
        StartError::Flag {
            flag,
            detail: detail.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses and checks `arguments` as the game does; the refusal in the words it prints.
    fn parse(arguments: &[&str]) -> Result<(), Refusal> {
        let mut all = vec!["twice"];
        all.extend_from_slice(arguments);
        Options::try_parse_from(all)
            .map_err(|error| Refusal(error.to_string()))?
            .check()
            .map_err(|error| Refusal(error.to_string()))
    }

    /// A refusal as the player reads it (clap's, or a `StartError`).
    #[derive(Debug)]
    struct Refusal(String);

    impl Refusal {
        fn contains(&self, words: &str) -> bool {
            self.0.contains(words)
        }
    }

    impl std::fmt::Display for Refusal {
        fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            formatter.write_str(&self.0)
        }
    }

    #[test]
    fn headless_flags_are_checked_together() {
        assert!(parse(&[]).is_ok());
        assert!(parse(&["--screenshot", "out.png", "--tape", "t.tape.ron", "--at", "5"]).is_ok());
        let error = parse(&["--screenshot", "out.jpg"]).expect_err("not a png");
        assert!(error.contains(".png"), "{error}");
        let error = parse(&["--at", "5"]).expect_err("--at alone");
        assert!(error.contains("--tape"), "{error}");
        let error = parse(&["--bench-frames", "0"]).expect_err("zero frames");
        assert!(error.contains("--bench-frames"), "{error}");
        let error = parse(&["--width", "10"]).expect_err("tiny window");
        assert!(error.contains("--width"), "{error}");
        assert!(
            parse(&["--tape", "a", "--level", "b"]).is_err(),
            "tape and level conflict"
        );
        assert!(parse(&["--presenter", "--unlock-all", "--chapter", "4"]).is_ok());
        assert!(parse(&["--chapter", "four"]).is_err(), "a chapter is a number");
    }

    #[test]
    fn a_screen_that_shows_no_level_refuses_a_tape_or_level() {
        // These used to wait 120 s for a screen the opened tape never let the game reach.
        for screen in ["title", "levels", "sandbox", "replay", "ending"] {
            for flag in ["--tape", "--level"] {
                let error = parse(&["--screenshot", "out.png", "--screen", screen, flag, "x.ron"])
                    .expect_err("a screen without a level, with a level");
                assert!(error.contains(&format!("--screen {screen}")), "{error}");
                assert!(error.contains(flag) && error.contains("--screen level"), "{error}");
            }
            assert!(
                parse(&["--screenshot", "out.png", "--screen", screen]).is_ok(),
                "{screen}"
            );
        }
        for screen in ["level", "debrief"] {
            assert!(parse(&["--screenshot", "out.png", "--screen", screen, "--tape", "t.tape.ron"]).is_ok());
        }
        let error = parse(&["--screen", "sandbox"]).expect_err("--screen without --screenshot");
        assert!(error.contains("--screenshot"), "{error}");
    }

    #[test]
    fn a_tape_or_level_that_cannot_be_read_is_named() {
        let folder = tempfile::tempdir().expect("temp dir");
        let missing = folder.path().join("nope.tape.ron");
        let options = Options::try_parse_from(["twice", "--tape", missing.to_str().expect("utf-8")]).expect("parses");
        let error = options.check_files().expect_err("no such tape").to_string();
        assert!(
            error.starts_with("--tape: ") && error.contains("nope.tape.ron"),
            "{error}"
        );
        let broken = folder.path().join("broken.level.ron");
        std::fs::write(&broken, "(id: ").expect("write");
        let options = Options::try_parse_from(["twice", "--level", broken.to_str().expect("utf-8")]).expect("parses");
        let error = options.check_files().expect_err("not a level").to_string();
        assert!(
            error.starts_with("--level: ") && error.contains("broken.level.ron:"),
            "{error}"
        );
        let levels = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../levels");
        let tapes = twice_world::level::files_below(&levels, twice_world::campaign::TAPE_SUFFIX).expect("the campaign");
        let campaign_tape = tapes.first().expect("a tape in the campaign").to_str().expect("utf-8");
        let options = Options::try_parse_from(["twice", "--tape", campaign_tape]).expect("parses");
        assert_eq!(options.check_files(), Ok(()));
    }

    #[test]
    fn the_help_names_only_flags_that_exist() {
        use clap::CommandFactory;
        let mut command = Options::command();
        let flags: std::collections::BTreeSet<String> = command
            .get_arguments()
            .filter_map(|argument| argument.get_long())
            .map(|long| format!("--{long}"))
            .chain(["--help".to_owned(), "--version".to_owned()])
            .collect();
        let help = command.render_long_help().to_string();
        let mut named = 0;
        for word in help.split(|character: char| !(character.is_ascii_alphanumeric() || character == '-')) {
            if let Some(name) = word.strip_prefix("--").filter(|name| !name.is_empty()) {
                named += 1;
                assert!(
                    flags.contains(&format!("--{name}")),
                    "the help mentions --{name}, which is no flag"
                );
            }
        }
        assert!(
            named >= flags.len(),
            "the help names every flag at least once ({named} mentions)"
        );
    }
}
