//! The command line's scripted uses: open a tape or level at start (for play or for
//! `--screenshot`, whose driver is the screens' own: `crate::screens::shot`) and
//! `--bench-frames` (measure frame time with a 10,000-row ledger and exit).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bevy::prelude::*;
use twice_world::ledger::{Ledger, LedgerError, ReserveRequest};
use twice_world::runtime::key::IdempotencyKey;
use twice_world::runtime::rules::Outcome;
use twice_world::runtime::tool::SideEffect;

use twice_world::replay_link::ReplayLink;

use crate::campaign::Campaign;
use crate::defence::DefenceIntent;
use crate::options::{Options, ShotScreen};
use crate::progress::Progress;
use crate::replay_url::OpenReplayLink;
use crate::session::{Intent, Mode, OpenProblem, Session};

/// Rows the benchmark writes into the ledger.
pub const BENCH_LEDGER_ROWS: usize = 10_000;
/// Frames drawn before measuring (layout caches, fonts, the first big ledger read).
const BENCH_WARMUP_FRAMES: u32 = 30;
/// A headless run that cannot get ready in this long gives up with an error.
pub const HEADLESS_TIMEOUT: Duration = Duration::from_secs(120);

pub(super) fn plugin(app: &mut App) {
    app.add_systems(Startup, open_from_command_line);
    let options = app.world().resource::<Options>().clone();
    if let Some(frames) = options.bench_frames {
        app.insert_resource(Bench {
            frames,
            warmup_left: BENCH_WARMUP_FRAMES,
            seeded: false,
            samples: Vec::with_capacity(frames as usize),
            frame_started: None,
            previous_frame: None,
            started: Instant::now(),
        });
        app.add_systems(First, bench_frame_start);
        app.add_systems(Last, bench_frame_end);
        app.add_systems(Update, seed_bench_ledger.after(crate::session::SessionSet::Conclude));
    }
}

/// `--tape`, `--level` (or, for the benchmark, the first campaign level) open at start.
fn open_from_command_line(
    options: Res<Options>,
    (mut campaign, progress): (ResMut<Campaign>, Res<Progress>),
    (mut intents, mut links): (MessageWriter<Intent>, MessageWriter<OpenReplayLink>),
    mut defence_intents: MessageWriter<DefenceIntent>,
    mut problem: ResMut<OpenProblem>,
) {
    let shot_screen = options.screenshot.as_ref().and(options.screen);
    let at_phase = options.at;
    if let (Some(ShotScreen::Defend), Some(path)) = (shot_screen, &options.level) {
        // Defender mode opens a level of the campaign (its heists are the campaign's tapes).
        match campaign.find_path(path) {
            Some(index) if campaign.levels[index].level.defender.is_none() => {
                problem.0 = Some(format!(
                    "--screen defend: {} is not an unbeatable level; only those are defended",
                    path.display()
                ));
            }
            Some(index) => {
                if !campaign.is_unlocked(index, &progress) {
                    // The command line names the level, as `--level` does for the level screen:
                    // it opens on a fresh profile too (for this run only; progress is not changed).
                    campaign.unlock_all = true;
                }
                defence_intents.write(DefenceIntent::Open { index });
            }
            None => {
                problem.0 = Some(format!(
                    "--screen defend: {} is not a level of the campaign in {}",
                    path.display(),
                    campaign.folder.display()
                ));
            }
        }
    } else if let Some(text) = &options.replay_url {
        // Read before the window opened (`Options::check_files`); a parse here cannot fail.
        match ReplayLink::parse(text) {
            Ok(link) => {
                links.write(OpenReplayLink(link));
            }
            Err(error) => problem.0 = Some(format!("--replay-url: {error}")),
        }
    } else if let Some(path) = &options.tape {
        intents.write(Intent::OpenTape {
            path: path.clone(),
            at_phase,
        });
    } else if let Some(path) = &options.level {
        intents.write(Intent::OpenLevel {
            path: path.clone(),
            mode: Mode::Campaign,
            guards: None,
            seed: 1,
            at_phase,
        });
    } else if options.bench_frames.is_some() {
        match campaign.levels.first() {
            Some(loaded) => {
                intents.write(Intent::OpenLevel {
                    path: loaded.path.clone(),
                    mode: Mode::Sandbox,
                    guards: None,
                    seed: 1,
                    at_phase: None,
                });
            }
            None => error!("--bench-frames needs a level: none in {}", campaign.folder.display()),
        }
    }
    // Otherwise the screens open the one `--screen` or `--chapter` asks for (`screens::shot`).
}

#[derive(Debug, Resource)]
struct Bench {
    frames: u32,
    warmup_left: u32,
    seeded: bool,
    /// Per measured frame: the main schedule (`First` to `Last`: the game's systems, egui
    /// layout and tessellation) and the whole frame (rendering's preparation included).
    samples: Vec<FrameSample>,
    frame_started: Option<FrameMark>,
    /// Where the previous frame's main schedule began: a whole frame runs from there.
    previous_frame: Option<FrameMark>,
    started: Instant,
}

/// A moment of a frame: the clock, and the CPU used by then.
#[derive(Clone, Copy, Debug)]
struct FrameMark {
    at: Instant,
    cpu: Option<CpuUsed>,
}

impl FrameMark {
    fn now() -> FrameMark {
        FrameMark {
            at: Instant::now(),
            cpu: cpu_used(),
        }
    }
}

/// CPU time used so far, from the kernel's accounting per thread.
#[derive(Clone, Copy, Debug)]
struct CpuUsed {
    /// The main thread, where the main schedule's systems run (every schedule is
    /// single-threaded; see `AppPlugin::finish`).
    main_thread_ns: u64,
    /// Every thread of the game's, the render thread included.
    game_threads_ns: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct FrameSample {
    schedule_main_thread_ms: f64,
    schedule_game_threads_ms: f64,
    schedule_wall_ms: f64,
    frame_game_threads_ms: f64,
    frame_wall_ms: f64,
}

/// Fills the ledger file with 10,000 rows through the ledger's own API, then lets the level play.
fn seed_bench_ledger(
    mut bench: ResMut<Bench>,
    session: Option<ResMut<Session>>,
    mut intents: MessageWriter<Intent>,
    mut exit: MessageWriter<AppExit>,
) {
    if bench.seeded {
        return;
    }
    let Some(mut session) = session else {
        if bench.started.elapsed() > HEADLESS_TIMEOUT {
            error!("--bench-frames: no level opened");
            exit.write(AppExit::from_code(1));
            bench.seeded = true;
        }
        return;
    };
    if session.is_busy() {
        return;
    }
    bench.seeded = true;
    let Some(path) = session.ledger_path().map(PathBuf::from) else {
        error!("--bench-frames needs a ledger file; the ledger is in memory");
        exit.write(AppExit::from_code(1));
        return;
    };
    let started = Instant::now();
    if let Err(error) = write_rows(&path, BENCH_LEDGER_ROWS) {
        error!("--bench-frames: cannot fill the ledger: {error}");
        exit.write(AppExit::from_code(1));
        return;
    }
    session.reread_ledger();
    info!(
        "bench: wrote {BENCH_LEDGER_ROWS} rows to {} in {:.1} s",
        path.display(),
        started.elapsed().as_secs_f32()
    );
    intents.write(Intent::SetRunning(true));
}

/// Rows from a run the level does not have (`bench-…`), in all statuses.
fn write_rows(path: &std::path::Path, rows: usize) -> Result<(), LedgerError> {
    let mut ledger = Ledger::open(path)?;
    for index in 0..rows {
        let run = format!("bench-{}", index / 100);
        let call = format!("c{}", index % 100 + 1);
        let key = IdempotencyKey::per_call(&run, &call).unwrap();
        let arguments = format!(
            "{{\"account\":\"acct_bench\",\"amount_cents\":{},\"memo\":\"bench\"}}",
            100 + index
        );
        ledger.reserve(
            &ReserveRequest::new(
                &key,
                &run,
                &call,
                "issue_credit",
                SideEffect::External,
                &arguments,
                "bench",
            )
            .with_tenant("bench"),
            0,
        )?;
        let status = match index % 10 {
            0 => continue,
            1 => Outcome::Indeterminate,
            2 => Outcome::Failed,
            _ => Outcome::Completed,
        };
        ledger.record_outcome(&key, status, Some("{\"credit_id\":\"cr_bench\"}"), "bench", 0, 0)?;
    }
    Ok(())
}

fn bench_frame_start(mut bench: ResMut<Bench>) {
    bench.frame_started = Some(FrameMark::now());
}

fn bench_frame_end(mut bench: ResMut<Bench>, session: Option<Res<Session>>, mut exit: MessageWriter<AppExit>) {
    let Some(started) = bench.frame_started.take() else {
        return;
    };
    let ended = FrameMark::now();
    let previous = bench.previous_frame.replace(started);
    if !bench.seeded || (bench.samples.len() as u32) >= bench.frames {
        return;
    }
    if bench.warmup_left > 0 {
        bench.warmup_left -= 1;
        return;
    }
    let Some(previous) = previous else {
        return;
    };
    bench.samples.push(FrameSample {
        schedule_main_thread_ms: cpu_ms(started, ended, |cpu| cpu.main_thread_ns),
        schedule_game_threads_ms: cpu_ms(started, ended, |cpu| cpu.game_threads_ns),
        schedule_wall_ms: wall_ms(started, ended),
        frame_game_threads_ms: cpu_ms(previous, started, |cpu| cpu.game_threads_ns),
        frame_wall_ms: wall_ms(previous, started),
    });
    if bench.samples.len() as u32 == bench.frames {
        let rows = session.as_ref().map_or(0, |session| session.ledger().rows().len());
        let phase = session.as_ref().map_or(0, |session| session.simulation().phase());
        let accounted = started.cpu.is_some();
        println!("{}", report(&bench.samples, accounted, rows, phase));
        exit.write(AppExit::Success);
    }
}

fn wall_ms(from: FrameMark, to: FrameMark) -> f64 {
    to.at.duration_since(from.at).as_secs_f64() * 1000.0
}

/// The CPU used between two marks, as `read` counts it; the wall time where the system
/// keeps no accounting per thread (an upper bound: it counts waiting too).
fn cpu_ms(from: FrameMark, to: FrameMark, read: fn(&CpuUsed) -> u64) -> f64 {
    match (from.cpu, to.cpu) {
        // A thread that ended between the marks takes its time with it: never below zero.
        (Some(from_cpu), Some(to_cpu)) => read(&to_cpu).saturating_sub(read(&from_cpu)) as f64 / 1_000_000.0,
        _ => wall_ms(from, to),
    }
}

/// The CPU time used so far, from the kernel's accounting per thread
/// (`/proc/self/task/*/schedstat`). The software rasterizer's threads (Mesa's `llvmpipe-*`,
/// which Xvfb needs) are left out: on a machine with a GPU that work is the GPU's, and under
/// Xvfb it takes both cores, so a clock would time the game waiting for a core rather than
/// its work. `None` off Linux.
fn cpu_used() -> Option<CpuUsed> {
    let main_thread = std::process::id().to_string();
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    let mut used = CpuUsed {
        main_thread_ns: 0,
        game_threads_ns: 0,
    };
    for task in tasks.flatten() {
        let path = task.path();
        let name = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        if name.starts_with("llvmpipe") {
            continue;
        }
        // "time on a CPU (ns) · time waiting for one (ns) · time slices"
        let on_cpu_ns = std::fs::read_to_string(path.join("schedstat"))
            .ok()
            .and_then(|text| text.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0);
        used.game_threads_ns = used.game_threads_ns.saturating_add(on_cpu_ns);
        if task.file_name().to_str() == Some(main_thread.as_str()) {
            used.main_thread_ns = on_cpu_ns;
        }
    }
    Some(used)
}

/// Mean, median, 95th percentile and maximum of `values`.
fn summary(mut values: Vec<f64>) -> String {
    values.sort_by(f64::total_cmp);
    let count = values.len().max(1);
    let mean = values.iter().sum::<f64>() / count as f64;
    let percentile = |fraction: f64| values.get(((count as f64 * fraction) as usize).min(count - 1)).copied();
    format!(
        "mean {mean:.2} ms, median {:.2} ms, p95 {:.2} ms, max {:.2} ms",
        percentile(0.5).unwrap_or(0.0),
        percentile(0.95).unwrap_or(0.0),
        values.last().copied().unwrap_or(0.0),
    )
}

fn report(samples: &[FrameSample], accounted: bool, rows: usize, phase: u32) -> String {
    let of = |field: fn(&FrameSample) -> f64| summary(samples.iter().map(field).collect());
    let (cpu, all_threads) = if accounted {
        (
            "CPU of the main thread, where its systems run",
            "CPU of all the game's threads (the render thread's work meanwhile included; Mesa's software \
             rasterizer left out)",
        )
    } else {
        (
            "wall time (no CPU accounting per thread here)",
            "wall time (no CPU accounting per thread here)",
        )
    };
    format!(
        "bench-frames: {} frames of the level screen, ledger {rows} rows, simulation at phase {phase}\n\
         main schedule, First→Last (systems, egui layout and tessellation):\n  \
         {cpu}: {}\n  \
         {all_threads}: {}\n  \
         wall time: {}\n\
         whole frame (rendering's preparation and the software Vulkan driver included):\n  \
         {all_threads}: {}\n  \
         wall time: {}",
        samples.len(),
        of(|sample| sample.schedule_main_thread_ms),
        of(|sample| sample.schedule_game_threads_ms),
        of(|sample| sample.schedule_wall_ms),
        of(|sample| sample.frame_game_threads_ms),
        of(|sample| sample.frame_wall_ms),
    )
}
