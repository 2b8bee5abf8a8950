//! One tape against a runtime: the world started, the runtime's first process asked which
//! guards it implements, the expected run simulated with exactly those, played on the
//! runtime's processes, and the money judged per customer against the expected run's.

use std::path::PathBuf;

use serde::Serialize;

use super::conductor::{Broken, Conductor, Limits, Money, money_of};
use super::expected::{ExpectedError, Spawn, expected_run};
use super::expressible::{self, Reason};
use twice_world::checker::{CreditVerdict, EffectVerdict, Outcome, Verdict};
use twice_world::level::LoadedTape;
use twice_world::text::dollars;

/// A runtime under test: the command that starts one of its processes (run by `sh -c`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeUnderTest {
    pub command: String,
    pub limits: Limits,
}

/// How a tape came out against the runtime.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum TapeOutcome {
    /// The money came out as a correct runtime's with these guards must: per customer, and the
    /// verdict it comes to.
    Passed,
    /// It did not: what differs.
    Failed { differences: Vec<String> },
    /// The runtime broke the protocol, hung, or ended with an error: what it did, quoted.
    Broken {
        worker: Option<u32>,
        what: String,
        stderr: String,
    },
    /// The protocol cannot play this tape (against this runtime).
    NotExpressible(Reason),
    /// Twice could not play it (a folder, a port): nothing is known of the runtime.
    Trouble { what: String },
}

/// The money of a run, and what it comes to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Customer → net cents.
    pub money: Money,
    pub outcome: Outcome,
    pub goal_reached: bool,
    /// Each credit the script owes: `r1/1 to acct_ada: owed $25.00, 2 credits, net $50.00 → paid_twice`;
    /// each email, owner change or delete it means: `r1/1 send_email acct_ada: Ada got the same email twice → emailed_twice`.
    pub per_intent: Vec<String>,
}

impl Summary {
    fn of(money: Money, verdict: &Verdict) -> Summary {
        Summary {
            money,
            outcome: verdict.outcome,
            goal_reached: verdict.goal_reached,
            per_intent: verdict
                .credits
                .iter()
                .map(intent_words)
                .chain(verdict.effects.iter().map(EffectVerdict::line))
                .collect(),
        }
    }

    /// `Ada $50.00, Bo $0.00`.
    pub fn money_words(&self) -> String {
        self.money
            .iter()
            .map(|(customer, cents)| format!("{customer} {}", dollars(*cents)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn intent_words(credit: &CreditVerdict) -> String {
    format!(
        "{} to {}: owed {}, {} landed, net {} → {}",
        twice_world::text::step_name(&credit.run, credit.item),
        credit.account,
        dollars(credit.owed_cents),
        twice_world::text::counted(u64::from(credit.credits_applied), "credit", "credits"),
        dollars(credit.net_cents),
        credit.outcome
    )
}

/// One tape's report.
#[derive(Clone, Debug, Serialize)]
pub struct TapeReport {
    pub tape: PathBuf,
    pub level: String,
    pub outcome: TapeOutcome,
    /// The runtime's name, as its hello gave it.
    pub runtime: Option<String>,
    /// The guards it claims.
    pub claimed: Option<Vec<String>>,
    /// What a correct runtime with those guards must do (the simulator's run).
    pub expected: Option<Summary>,
    /// What the runtime did.
    pub actual: Option<Summary>,
    /// Where the runtime left the expected run's path, if it did.
    pub diverged: Option<String>,
    /// Moves that could not be played after it did.
    pub unplayed: Vec<String>,
    /// Requests it sent without marking `send`.
    pub unannounced: Vec<String>,
    /// What it reported that billing contradicts.
    pub contradictions: Vec<String>,
    /// The protocol's lines (the last ones), for `--verbose` and broken runs.
    pub session: Vec<String>,
}

impl TapeReport {
    fn new(tape: &LoadedTape, outcome: TapeOutcome) -> TapeReport {
        TapeReport {
            tape: tape.path.clone(),
            level: tape.level.level.id.clone(),
            outcome,
            runtime: None,
            claimed: None,
            expected: None,
            actual: None,
            diverged: None,
            unplayed: Vec::new(),
            unannounced: Vec::new(),
            contradictions: Vec::new(),
            session: Vec::new(),
        }
    }
}

fn broken(broken: &Broken) -> TapeOutcome {
    TapeOutcome::Broken {
        worker: broken.worker,
        what: broken.what.clone(),
        stderr: broken.stderr.clone(),
    }
}

/// What differs between the money and verdict a correct runtime must give and the runtime's.
fn differences(expected: &Summary, actual: &Summary) -> Vec<String> {
    let mut differences = Vec::new();
    for (customer, must) in &expected.money {
        let got = actual.money.get(customer).copied().unwrap_or(0);
        if got != *must {
            differences.push(format!(
                "{customer} got {}, where a runtime with its guards pays {}",
                dollars(got),
                dollars(*must)
            ));
        }
    }
    for (customer, got) in &actual.money {
        if !expected.money.contains_key(customer) && *got != 0 {
            differences.push(format!(
                "{customer} got {}, where a runtime with its guards pays nothing",
                dollars(*got)
            ));
        }
    }
    if expected.outcome != actual.outcome {
        differences.push(format!(
            "the run came to {}, where a runtime with its guards comes to {}",
            actual.outcome, expected.outcome
        ));
    }
    differences
}

/// Plays `tape` against `runtime`.
pub async fn run_tape(runtime: &RuntimeUnderTest, tape: &LoadedTape) -> TapeReport {
    if let Some(reason) = expressible::why_not(tape) {
        return TapeReport::new(tape, TapeOutcome::NotExpressible(reason));
    }
    let folder = match tempfile::Builder::new().prefix("twice-runtime-").tempdir() {
        Ok(folder) => folder,
        Err(error) => {
            let what = format!("no temporary folder for the tape's ledgers and billing: {error}");
            return TapeReport::new(tape, TapeOutcome::Trouble { what });
        }
    };
    let level = &tape.level.level;
    let mut conductor =
        match Conductor::start(&runtime.command, level, runtime.limits, folder.path().to_path_buf()).await {
            Ok(conductor) => conductor,
            Err(what) => return TapeReport::new(tape, TapeOutcome::Trouble { what }),
        };
    let report = play(&mut conductor, tape).await;
    conductor.finish().await;
    conductor.stop().await;
    report
}

async fn play(conductor: &mut Conductor<'_>, tape: &LoadedTape) -> TapeReport {
    let level = &tape.level.level;
    let Some(first_run) = level.runs.first() else {
        return TapeReport::new(
            tape,
            TapeOutcome::Trouble {
                what: "the level has no run".into(),
            },
        );
    };
    // The level starts one worker per run, numbered in the order of its runs: the first is
    // asked which guards the runtime implements.
    conductor
        .start_first(&Spawn {
            worker: 1,
            run: first_run.id.to_string(),
            node: twice_world::simulator::FIRST_NODE,
            recovering: false,
        })
        .await;
    let mut report = TapeReport::new(tape, TapeOutcome::Passed);
    if let Some(broken_run) = conductor.broken() {
        report.outcome = broken(broken_run);
        report.session = conductor.session().to_vec();
        return report;
    }
    let Some((guards, hello)) = conductor.claimed().cloned() else {
        report.outcome = TapeOutcome::Trouble {
            what: "the first process said hello, but claimed nothing".into(),
        };
        return report;
    };
    report.runtime = Some(hello.runtime.clone());
    report.claimed = Some(super::conductor::guard_names(guards));
    let expected = match expected_run(tape, guards) {
        Ok(expected) => expected,
        Err(ExpectedError::MovesDoNotPlay(fizzled)) => {
            report.outcome = TapeOutcome::NotExpressible(Reason::MovesDoNotPlay { fizzled });
            return report;
        }
        Err(error @ ExpectedError::Simulation(_)) => {
            report.outcome = TapeOutcome::Trouble {
                what: error.to_string(),
            };
            return report;
        }
    };
    let expected_summary = Summary::of(money_of(&expected.billing, level), &expected.verdict);
    report.expected = Some(expected_summary.clone());
    conductor.play(&expected).await;
    conductor.finish().await;
    report.session = conductor.session().to_vec();
    report.diverged.clone_from(&conductor.diverged);
    report.unplayed.clone_from(&conductor.unplayed);
    report.unannounced.clone_from(&conductor.unannounced);
    if let Some(broken_run) = conductor.broken() {
        report.outcome = broken(broken_run);
        return report;
    }
    let actual = conductor.judge(&expected.nodes);
    let actual_summary = Summary::of(actual.money, &actual.verdict);
    report.contradictions = actual.contradictions;
    let mut differences = differences(&expected_summary, &actual_summary);
    if conductor.free_limit_reached {
        differences.push(format!(
            "the runtime was still going after {} steps Twice played on its own",
            super::conductor::FREE_ACTIONS_MAX
        ));
    }
    report.actual = Some(actual_summary);
    report.outcome = if differences.is_empty() {
        TapeOutcome::Passed
    } else {
        TapeOutcome::Failed { differences }
    };
    report
}
