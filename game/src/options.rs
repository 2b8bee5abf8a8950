//! The command line: normal play, and the headless uses (screenshots, the frame benchmark).

use std::path::PathBuf;

use bevy::prelude::*;
use clap::{Parser, ValueEnum};

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
    Sandbox,
    Replay,
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
    /// Open this level (campaign rules; with --sandbox, every guard a toggle).
    #[arg(long, value_name = "LEVEL", conflicts_with = "tape")]
    pub level: Option<PathBuf>,
    /// With --tape or --level: run this many phases before showing the level.
    #[arg(long, value_name = "PHASE_COUNT")]
    pub at: Option<u32>,
    /// With --screenshot: which screen (default: the level screen when a tape or level is given, else the title).
    #[arg(long, value_enum)]
    pub screen: Option<ShotScreen>,
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
        if let Err(problem) = options.check() {
            eprintln!("error: {problem}");
            return Err(AppExit::from_code(2));
        }
        Ok(options)
    }

    /// What clap cannot check on its own.
    pub fn check(&self) -> Result<(), String> {
        if let Some(path) = &self.screenshot
            && path.extension().and_then(|extension| extension.to_str()) != Some("png")
        {
            return Err(format!(
                "--screenshot {}: the file name must end in .png",
                path.display()
            ));
        }
        if self.at.is_some() && self.tape.is_none() && self.level.is_none() {
            return Err("--at needs --tape or --level: it says how far into that level to go".into());
        }
        if let Some(frames) = self.bench_frames
            && !(1..=BENCH_FRAMES_MAX).contains(&frames)
        {
            return Err(format!("--bench-frames must be 1 to {BENCH_FRAMES_MAX}, not {frames}"));
        }
        if self.bench_frames.is_some() && self.screenshot.is_some() {
            return Err("--bench-frames and --screenshot are separate runs; give one".into());
        }
        for (name, side) in [("--width", self.width), ("--height", self.height)] {
            if !(320..=WINDOW_SIDE_MAX).contains(&side) {
                return Err(format!("{name} must be 320 to {WINDOW_SIDE_MAX}, not {side}"));
            }
        }
        if matches!(self.screen, Some(ShotScreen::Level | ShotScreen::Debrief))
            && self.tape.is_none()
            && self.level.is_none()
        {
            return Err("--screen level/debrief needs --tape or --level".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(arguments: &[&str]) -> Result<(), String> {
        let mut all = vec!["twice"];
        all.extend_from_slice(arguments);
        Options::try_parse_from(all).map_err(|error| error.to_string())?.check()
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
    }
}
