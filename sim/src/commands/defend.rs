//! `twice-sim defend`: a defence of an unbeatable level judged by the known heists that fire
//! there and the explorer; when it falls, the counter-example as a tape.

use std::path::Path;

use twice_world::level;
use twice_world::runtime::guards::Guards;

use super::bad_input;
use crate::cli::{EXIT_DIFFERS, EXIT_OK, guard_list, violation_list};

pub fn defend(
    level_path: &Path,
    guards: &str,
    minimum: bool,
    schedules: u64,
    jobs: usize,
    expect: twice_world::exit::Expect,
    json: bool,
) -> u8 {
    use twice_world::defend;
    let loaded = match level::load_level(level_path) {
        Ok(loaded) => loaded,
        Err(error) => return bad_input(error),
    };
    // A bare file name's parent is the empty path: its folder is the current one.
    let folder = level_path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let campaign = match twice_world::campaign::Campaign::load(folder) {
        Ok(campaign) => campaign,
        Err(problems) => {
            return bad_input(problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"));
        }
    };
    let heists = defend::heists(&campaign, &loaded.level);
    let search = defend::Search {
        schedules,
        jobs,
        seed: defend::DEFENCE_SEED,
    };
    let cancel = std::sync::atomic::AtomicBool::new(false);
    if minimum {
        return match defend::minimum(
            &loaded,
            &heists,
            search,
            twice_world::runtime::guards::Guard::ALL.len(),
            &cancel,
        ) {
            Ok(sets) if json => {
                let names: Vec<Vec<&str>> = sets
                    .iter()
                    .map(|set| set.iter().map(|guard| guard.name()).collect())
                    .collect();
                println!("{}", serde_json::to_string_pretty(&names).expect("names serialize"));
                EXIT_OK
            }
            Ok(sets) => {
                println!(
                    "{}: {} known heists; the smallest sets of guards that hold:",
                    loaded.level.id,
                    heists.len()
                );
                for set in &sets {
                    println!("  [{}]", guard_list(set));
                }
                if sets.is_empty() {
                    println!("  none: even every guard together lets a heist through");
                }
                EXIT_OK
            }
            Err(error) => bad_input(error),
        };
    }
    let on = match Guards::parse_list(guards) {
        Ok(parsed) => twice_world::runtime::guards::Guard::ALL
            .into_iter()
            .filter(|guard| parsed.is_on(*guard))
            .collect::<Vec<_>>(),
        Err(error) => return bad_input(format!("--guards: {error}")),
    };
    let report = match defend::check(&loaded, &heists, &on, search, &cancel) {
        Ok(report) => report,
        Err(error) => return bad_input(error),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&report).expect("reports serialize"));
    } else {
        print_report(&loaded.level.id, &report);
    }
    let got_in = !report.stops_every_heist();
    match expect {
        // Every heist stopped, but by more guards than the budget: not a defence that holds.
        twice_world::exit::Expect::None if !got_in && !report.holds() => EXIT_DIFFERS,
        _ => expect.exit(got_in),
    }
}

/// The defence's report in words: each known heist, the explorer's search, any counter-example.
fn print_report(level_id: &str, report: &twice_world::defend::DefenceReport) {
    use twice_world::defend;
    println!(
        "{}: guards on [{}] ({} of a budget of {})",
        level_id,
        guard_list(&report.on),
        report.on.len(),
        report.budget
    );
    for heist in &report.heists {
        // A heist that does not fire with every guard off proves nothing either way.
        let status = match heist.standing() {
            defend::HeistStanding::Held => "held   ",
            defend::HeistStanding::NoFire => "no fire",
            defend::HeistStanding::GotIn => "GOT IN ",
        };
        println!(
            "  {status} {}  {}{}",
            if heist.tape.as_os_str().is_empty() {
                heist.title.clone()
            } else {
                heist.tape.display().to_string()
            },
            heist.outcome,
            violation_list(&heist.violations)
        );
    }
    match &report.search {
        Some(search) if search.found.is_none() => println!(
            "  held    the explorer found nothing in {} schedules (bound: {} per goal, paid twice and owed)",
            search.schedules, search.schedules_bound
        ),
        Some(_) => println!("  GOT IN  the explorer found a schedule that beats it"),
        None => println!("  (the explorer was not needed: a known heist got through)"),
    }
    if let Some(counter) = &report.counter_example {
        println!(
            "\nthe counter-example ({}), a tape to save beside the level and replay:\n{}",
            counter.outcome,
            level::tape_to_ron(&counter.tape)
        );
    }
    println!(
        "{}",
        if report.holds() {
            "the defence holds"
        } else if report.stops_every_heist() {
            "every heist is stopped, but over the budget"
        } else {
            "the defence does not hold"
        }
    );
}
