//! The counterfactual debrief: which guards *decided* a run, found by running it again.
//!
//! A guard decided a run when the same level, seed and moves, with only that guard switched
//! (off if it was on, on if it was off), reach the other verdict: the heist that worked fails,
//! or the one that failed works. Every guard is tried alone; where no single guard decided,
//! pairs are tried (two guards that each hold on their own decide together), at most
//! [`RERUNS_MAX`] runs in all. A run again is only evidence if the player's moves all play in
//! it: a card aimed at a message that no longer passes, or at a worker in a phase it never
//! reaches, fizzles, and that run "cannot say" — it is never counted as the guard holding.
//!
//! The moves are replayed as made (each names the message it hit and the worker it killed),
//! each anchored to what it hit rather than to its phase number ([`anchor`]): a guard switched
//! shifts every phase after it, and a crash aimed at "save checkpoint" must meet the worker
//! about to save its checkpoint, whichever phase that is in the other run. A key in them is
//! carried over to the key the other run gives the same call, since switching keys per call
//! changes every key's spelling. The runs use the memory ledger; a UI that wants
//! to show one ("without the write retry rule, this same run pays $50: see it") builds it again
//! with [`Counterfactual::simulation_of`] or saves it as a tape with [`Counterfactual::tape_of`].

mod anchor;
mod elsewhere;
mod same_run;

pub use elsewhere::under_guards;

use serde::Serialize;

use same_run::{SameRun, calls_by_key};

use crate::checker::{Outcome, Verdict, ViolationKind};
use crate::ledger::LedgerError;
use crate::level::{Level, Tape, TimedAction, WireRule};
use crate::runtime::guards::{Guard, Guards};
use crate::simulator::{Phase, SimError, Simulation, SimulationBuilder};

/// The most runs one counterfactual makes (the same run again, each guard alone, then pairs):
/// every guard alone and every pair of the eleven is 1 + 11 + 55 = 67, so the bound is never
/// what cuts a debrief short today; it keeps a future twelfth or thirteenth guard from
/// making a debrief slow.
pub const RERUNS_MAX: usize = 72;

/// Why a counterfactual could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CounterfactualError {
    #[error("the run could not be simulated again ({guards}): {source}")]
    Simulation {
        guards: String,
        #[source]
        source: Box<SimError>,
    },
    #[error("the run simulated again ({guards}) could not be judged: {source}")]
    Verdict {
        guards: String,
        #[source]
        source: Box<LedgerError>,
    },
    #[error("this run's ledger could not be read: {0}")]
    Ledger(#[source] Box<LedgerError>),
}

/// What a run came to, in the terms a debrief compares.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunResult {
    pub outcome: Outcome,
    /// The crew reached the level's goal: the verdict a counterfactual compares.
    pub goal_reached: bool,
    /// What billing paid, net, against what the script owes (all credits).
    pub net_cents: i64,
    pub owed_cents: i64,
    /// Every credit Penny meant to issue, in the checker's order: the money a debrief compares,
    /// customer by customer.
    pub credits: Vec<CreditMoney>,
    pub violations: Vec<ViolationKind>,
    pub stopped_by: Vec<Guard>,
    pub phases: u32,
}

/// One credit Penny meant to issue, as a run left it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CreditMoney {
    pub run: String,
    pub item: u32,
    pub account: String,
    pub outcome: Outcome,
    pub net_cents: i64,
    pub owed_cents: i64,
}

/// One customer's money in a run: their credits together (an account may be owed several).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CustomerMoney {
    pub account: String,
    pub net_cents: i64,
    pub owed_cents: i64,
    /// Each of their credits' outcome, sorted: two credits, one paid twice and one not at
    /// all, are not the same money as two paid once, though the sums agree.
    pub outcomes: Vec<Outcome>,
}

impl RunResult {
    pub fn of(verdict: &Verdict, phases: u32) -> RunResult {
        RunResult {
            outcome: verdict.outcome,
            goal_reached: verdict.goal_reached,
            net_cents: verdict.credits.iter().map(|credit| credit.net_cents).sum(),
            owed_cents: verdict.credits.iter().map(|credit| credit.owed_cents).sum(),
            credits: verdict
                .credits
                .iter()
                .map(|credit| CreditMoney {
                    run: credit.run.clone(),
                    item: credit.item,
                    account: credit.account.clone(),
                    outcome: credit.outcome,
                    net_cents: credit.net_cents,
                    owed_cents: credit.owed_cents,
                })
                // An email, owner change or delete counts as its customer's, with no money:
                // a guard that changes one changes what that customer got.
                .chain(verdict.effects.iter().map(|effect| CreditMoney {
                    run: effect.run.clone(),
                    item: effect.item,
                    account: effect.account.clone(),
                    outcome: effect.outcome,
                    net_cents: 0,
                    owed_cents: 0,
                }))
                .collect(),
            violations: verdict.violation_kinds(),
            stopped_by: verdict.stopped_by.clone(),
            phases,
        }
    }

    /// Each customer's money, in the order the checker first meets their account.
    pub fn customers(&self) -> Vec<CustomerMoney> {
        let mut customers: Vec<CustomerMoney> = Vec::new();
        for credit in &self.credits {
            let at = match customers.iter().position(|known| known.account == credit.account) {
                Some(at) => at,
                None => {
                    customers.push(CustomerMoney {
                        account: credit.account.clone(),
                        net_cents: 0,
                        owed_cents: 0,
                        outcomes: Vec::new(),
                    });
                    customers.len() - 1
                }
            };
            let customer = &mut customers[at];
            customer.net_cents += credit.net_cents;
            customer.owed_cents += credit.owed_cents;
            customer.outcomes.push(credit.outcome);
        }
        for customer in &mut customers {
            customer.outcomes.sort();
        }
        debug_assert_eq!(
            customers.iter().map(|customer| customer.outcomes.len()).sum::<usize>(),
            self.credits.len(),
            "every credit belongs to one customer"
        );
        customers
    }

    /// Some customer's money differs between the two runs: an outcome, or what they hold net.
    pub fn money_differs(&self, other: &RunResult) -> bool {
        self.customers() != other.customers()
    }

    /// The accounts whose money differs between the two runs, in this run's order (then the
    /// other's accounts this run has none of).
    pub fn changed_accounts(&self, other: &RunResult) -> Vec<String> {
        let (mine, theirs) = (self.customers(), other.customers());
        let mut accounts: Vec<String> = Vec::new();
        for account in mine.iter().chain(&theirs).map(|customer| &customer.account) {
            if accounts.contains(account) {
                continue;
            }
            let find = |all: &[CustomerMoney]| all.iter().find(|customer| &customer.account == account).cloned();
            if find(&mine) != find(&theirs) {
                accounts.push(account.clone());
            }
        }
        accounts
    }
}

/// One guard switched in another run: `on` is how it was in that run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Flip {
    pub guard: Guard,
    pub on: bool,
}

/// What a run again said.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Answer {
    /// Every move played, and the run ended like this.
    Ran(RunResult),
    /// A move did not play (its moment never came in that run): it says nothing about the guard.
    CannotSay {
        /// What the timeline said of each move that fizzled.
        fizzled: Vec<String>,
    },
}

/// The same run with one or two guards switched.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Alternative {
    pub flipped: Vec<Flip>,
    /// Every guard as it was in that run.
    pub guards: Guards,
    /// The moves as played in that run: keys carried over to its spelling, each at the phase
    /// where it met what it hit in this run (up to the first that never did).
    pub moves: Vec<TimedAction>,
    pub answer: Answer,
}

impl Alternative {
    /// That run's result, if it can say.
    pub fn result(&self) -> Option<&RunResult> {
        match &self.answer {
            Answer::Ran(result) => Some(result),
            Answer::CannotSay { .. } => None,
        }
    }
}

/// What switching one guard showed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Switched, the same moves reach the other verdict: this guard decided the run.
    Decided,
    /// Switched, the verdict stays: on, it was not needed this time; off, it would not have
    /// changed this run.
    NoDifference,
    /// Switched, a move fizzles: that run cannot say.
    CannotSay,
}

/// One guard of [`Guard::ALL`], switched alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct GuardFinding {
    pub guard: Guard,
    /// How it was in this run.
    pub was_on: bool,
    pub role: Role,
    /// Its run in [`Counterfactual::alternatives`].
    pub alternative: usize,
    /// Switched, the same moves change some customer's money (an outcome, or what they hold
    /// net), whether or not the heist turns: a guard that does is never "not needed". `false`
    /// when its run cannot say.
    pub changes_money: bool,
}

/// Two guards that decided together: each alone made no difference, both switched reach the
/// other verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PairFinding {
    pub guards: [Guard; 2],
    pub alternative: usize,
}

/// Which guards decided a run, and what each other run came to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Counterfactual {
    pub seed: u64,
    pub wire_rule: WireRule,
    pub this_run: RunResult,
    /// The same moves with the same guards gave this run again. When they do not (a run
    /// driven from outside, say an operator over HTTP), no other run can say anything.
    pub reproduced: bool,
    /// Every guard, in teaching order, switched alone.
    pub guards: Vec<GuardFinding>,
    /// Pairs that decided together (tried only when no guard decided alone).
    pub pairs: Vec<PairFinding>,
    pub alternatives: Vec<Alternative>,
    /// Runs made, this run's own replay included.
    pub reruns: u32,
    /// Pairs were left untried to stay within [`RERUNS_MAX`].
    pub bounded: bool,
}

impl Counterfactual {
    /// The guards that decided this run alone, in teaching order.
    pub fn decided_by(&self) -> Vec<Guard> {
        self.with_role(Role::Decided)
    }

    /// Every guard that decided, alone or in a pair, each once, in teaching order.
    pub fn deciding_guards(&self) -> Vec<Guard> {
        let mut guards = self.decided_by();
        for pair in &self.pairs {
            guards.extend(pair.guards);
        }
        guards.sort();
        guards.dedup();
        guards
    }

    /// Guards that were on and whose switch alone changes neither the heist nor anyone's money,
    /// and that decided no pair: "not needed this time".
    pub fn not_needed(&self) -> Vec<Guard> {
        let deciding = self.deciding_guards();
        self.guards
            .iter()
            .filter(|finding| finding.was_on && finding.role == Role::NoDifference && !finding.changes_money)
            .filter(|finding| !deciding.contains(&finding.guard))
            .map(|finding| finding.guard)
            .collect()
    }

    /// Guards whose switch alone leaves the heist as it is but changes what some customer gets
    /// (on or off in this run), in teaching order: the money's deciders.
    pub fn changed_the_money(&self) -> Vec<&GuardFinding> {
        self.guards
            .iter()
            .filter(|finding| finding.role == Role::NoDifference && finding.changes_money)
            .collect()
    }

    /// Some guard's switch alone changes the heist or anyone's money: "none decided" is false.
    pub fn any_switch_matters(&self) -> bool {
        !self.pairs.is_empty()
            || self
                .guards
                .iter()
                .any(|finding| finding.role == Role::Decided || finding.changes_money)
    }

    /// Guards whose run could not say.
    pub fn cannot_say(&self) -> Vec<Guard> {
        self.with_role(Role::CannotSay)
    }

    fn with_role(&self, role: Role) -> Vec<Guard> {
        self.guards
            .iter()
            .filter(|finding| finding.role == role)
            .map(|finding| finding.guard)
            .collect()
    }

    /// What switching `guard` alone showed.
    pub fn finding(&self, guard: Guard) -> Option<&GuardFinding> {
        self.guards.iter().find(|finding| finding.guard == guard)
    }

    /// The run with `guard` switched alone.
    pub fn alternative_for(&self, guard: Guard) -> Option<&Alternative> {
        self.finding(guard)
            .and_then(|finding| self.alternatives.get(finding.alternative))
    }

    /// Builds the other run `index` again, to be shown: same level, seed and moves, its guards.
    /// `level` is the level as authored ([`Simulation::authored_level`]).
    pub fn simulation_of(&self, level: &Level, index: usize) -> Option<Result<Simulation, SimError>> {
        let alternative = self.alternatives.get(index)?;
        Some(
            SimulationBuilder::new(level.clone(), self.seed)
                .guards(alternative.guards)
                .actions(alternative.moves.clone())
                .wire_rule(self.wire_rule)
                .build()
                .and_then(|mut simulation| simulation.run().map(|_| simulation)),
        )
    }

    /// The other run `index` as a tape `twice-sim replay` accepts (when it could say);
    /// `level_file` is the level's path relative to where the tape will be written.
    pub fn tape_of(&self, index: usize, level_file: &str, verdict: &Verdict) -> Option<Tape> {
        let alternative = self.alternatives.get(index)?;
        alternative.result()?;
        let flipped: Vec<String> = alternative
            .flipped
            .iter()
            .map(|flip| format!("{} {}", flip.guard.name(), if flip.on { "on" } else { "off" }))
            .collect();
        Some(Tape {
            version: match self.wire_rule {
                WireRule::ArmNextMessage => 1,
                WireRule::OnTheWireNow => crate::level::TAPE_VERSION,
            },
            level: level_file.to_owned(),
            seed: self.seed,
            title: format!("The same run with {}", flipped.join(" and ")),
            guards: Some(alternative.guards),
            actions: alternative.moves.clone(),
            expect: crate::level::Expectation::of(verdict),
        })
    }
}

/// The counterfactual of a finished run.
pub fn of(simulation: &Simulation) -> Result<Counterfactual, CounterfactualError> {
    let verdict = simulation
        .verdict()
        .map_err(|error| CounterfactualError::Ledger(Box::new(error)))?;
    let this_run = RunResult::of(&verdict, simulation.phase());
    let level = simulation.authored_level();
    let mut same = elsewhere::same_run(simulation, &level)?;
    let mut counterfactual = Counterfactual {
        seed: same.seed,
        wire_rule: same.wire_rule,
        this_run,
        reproduced: false,
        guards: Vec::new(),
        pairs: Vec::new(),
        alternatives: Vec::new(),
        reruns: 0,
        bounded: false,
    };
    let (again, anchors, refused) = same.simulate(&[])?;
    same.anchors = anchors;
    same.refused_decisions = refused;
    counterfactual.reruns += 1;
    // The same run again must come to the same money too: the other runs' money is compared
    // with this run's.
    counterfactual.reproduced = again.result().is_some_and(|result| {
        result.goal_reached == counterfactual.this_run.goal_reached
            && result.outcome == counterfactual.this_run.outcome
            && !result.money_differs(&counterfactual.this_run)
    });
    // A guard that cannot change anything in this level (its own `matters_in`) is the same on
    // or off: its run is this run again, exactly, and is not made twice.
    let matters = crate::guards::that_matter(&level);
    for guard in Guard::ALL {
        let was_on = same.guards.is_on(guard);
        let flips = [Flip { guard, on: !was_on }];
        let alternative = if matters.contains(&guard) {
            counterfactual.reruns += 1;
            same.run_with(&flips)?
        } else {
            Alternative {
                flipped: flips.to_vec(),
                guards: same.guards.with(guard, !was_on),
                ..again.clone()
            }
        };
        let role = role_of(&counterfactual, &alternative);
        let changes_money = role != Role::CannotSay
            && alternative
                .result()
                .is_some_and(|result| result.money_differs(&counterfactual.this_run));
        counterfactual.guards.push(GuardFinding {
            guard,
            was_on,
            role,
            alternative: counterfactual.alternatives.len(),
            changes_money,
        });
        counterfactual.alternatives.push(alternative);
    }
    if counterfactual.reproduced && counterfactual.decided_by().is_empty() {
        try_pairs(&same, &mut counterfactual, &matters)?;
    }
    Ok(counterfactual)
}

/// Pairs of guards that each made no difference alone, in teaching order, within the bound.
/// A guard that cannot change anything in this level makes no pair: with it, a pair's run is
/// the other guard's own.
fn try_pairs(
    same: &SameRun<'_>,
    counterfactual: &mut Counterfactual,
    matters: &[Guard],
) -> Result<(), CounterfactualError> {
    let candidates: Vec<Guard> = counterfactual
        .guards
        .iter()
        .filter(|finding| finding.role == Role::NoDifference && matters.contains(&finding.guard))
        .map(|finding| finding.guard)
        .collect();
    for (position, first) in candidates.iter().enumerate() {
        for second in &candidates[position + 1..] {
            if counterfactual.reruns as usize >= RERUNS_MAX {
                counterfactual.bounded = true;
                return Ok(());
            }
            let flips = [*first, *second].map(|guard| Flip {
                guard,
                on: !same.guards.is_on(guard),
            });
            let alternative = same.run_with(&flips)?;
            counterfactual.reruns += 1;
            if role_of(counterfactual, &alternative) == Role::Decided {
                counterfactual.pairs.push(PairFinding {
                    guards: [*first, *second],
                    alternative: counterfactual.alternatives.len(),
                });
                counterfactual.alternatives.push(alternative);
            }
        }
    }
    Ok(())
}

/// What an alternative says about its switched guard(s), against this run.
fn role_of(counterfactual: &Counterfactual, alternative: &Alternative) -> Role {
    match alternative.result() {
        // Nothing is evidence when this run itself does not come out the same again.
        _ if !counterfactual.reproduced => Role::CannotSay,
        None => Role::CannotSay,
        Some(result) if result.goal_reached != counterfactual.this_run.goal_reached => Role::Decided,
        Some(_) => Role::NoDifference,
    }
}

/// Where every worker is, just before a move: its run, whether it lives, the phase it is about
/// to run and the script item it is on. A move that names no target (a twin, a whisper to the
/// model, a refusal armed for the next call, an operator's decision) acts on whatever this
/// moment is; in another run it is only the same move if it meets the same moment.
type Moment = Vec<(u32, String, bool, Phase, Option<u32>)>;

fn moment_of(simulation: &Simulation) -> Moment {
    simulation
        .workers()
        .into_iter()
        .map(|worker| {
            (
                worker.number,
                worker.run.into_string(),
                worker.alive,
                worker.phase,
                worker.call.map(|call| call.item),
            )
        })
        .collect()
}
