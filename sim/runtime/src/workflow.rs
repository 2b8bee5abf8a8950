//! A workflow node around an agent run: what happens to a run that fails.
//!
//! The rule: "Workflow retries are at-least-once. A workflow node set to `recovery_policy:
//! retry` starts a fresh agent run, which makes its own calls with its own keys." A fresh run
//! is a new run: its id is derived from the failed one's, so every key it makes is new, and it
//! starts from its script's first step. Nothing of the failed run's ledger records carries
//! over — that is exactly why a write it repeats is a second effect.

use serde::{Deserialize, Serialize};

use crate::ids::RunId;

/// The most fresh runs a node may start after failures (a limit on everything).
pub const RETRIES_MAX: u32 = 8;

/// What the node does when its run fails.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecoveryPolicy {
    /// The run stays failed; a person looks.
    #[default]
    Fail,
    /// A fresh run is started, up to `retries_max` times.
    Retry,
}

impl RecoveryPolicy {
    /// The policy as a configuration writes it: `fail` or `retry`.
    pub fn name(self) -> &'static str {
        match self {
            RecoveryPolicy::Fail => "fail",
            RecoveryPolicy::Retry => "retry",
        }
    }
}

/// The workflow node's settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workflow {
    #[serde(default)]
    /// What the node does when its run fails.
    pub recovery_policy: RecoveryPolicy,
    /// How many fresh runs the node starts at most (0 to [`RETRIES_MAX`]).
    #[serde(default)]
    pub retries_max: u32,
}

impl Workflow {
    /// The problem with these settings, if any.
    pub fn problem(&self) -> Option<String> {
        if self.retries_max > RETRIES_MAX {
            return Some(format!(
                "retries_max is {}; a workflow node retries at most {RETRIES_MAX} times",
                self.retries_max
            ));
        }
        match (self.recovery_policy, self.retries_max) {
            (RecoveryPolicy::Retry, 0) => Some("recovery_policy: retry needs retries_max of 1 or more".into()),
            (RecoveryPolicy::Fail, 1..) => {
                Some("retries_max is set, but recovery_policy is fail: nothing is retried".into())
            }
            _ => None,
        }
    }

    /// Retries are on: a failed run may be started again as a fresh run.
    pub fn retries(&self) -> bool {
        self.recovery_policy == RecoveryPolicy::Retry && self.retries_max > 0
    }
}

/// The id of the `retry`-th fresh run of the node whose first run is `first_run`:
/// `r1.retry1` (retry 0 is the first run itself). Run ids that never hold a `.` never meet a
/// derived one.
///
/// ```
/// use twice_runtime::workflow::retry_run_id;
/// assert_eq!(retry_run_id("r1", 2), "r1.retry2");
/// assert_eq!(retry_run_id("r1", 0), "r1");
/// ```
#[must_use]
pub fn retry_run_id(first_run: &str, retry: u32) -> RunId {
    if retry == 0 {
        return RunId::new(first_run);
    }
    RunId::new(format!("{first_run}.retry{retry}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked() {
        let retry = |retries_max| Workflow {
            recovery_policy: RecoveryPolicy::Retry,
            retries_max,
        };
        assert_eq!(retry(2).problem(), None);
        assert!(
            retry(0)
                .problem()
                .is_some_and(|problem| problem.contains("retries_max of 1"))
        );
        assert!(retry(RETRIES_MAX + 1).problem().is_some());
        let fail = Workflow {
            recovery_policy: RecoveryPolicy::Fail,
            retries_max: 1,
        };
        assert!(fail.problem().is_some());
        assert_eq!(Workflow::default().problem(), None);
        assert!(!Workflow::default().retries());
        assert!(retry(1).retries());
    }

    #[test]
    fn a_fresh_run_has_a_new_id_so_every_key_it_makes_is_new() {
        assert_eq!(retry_run_id("r1", 1), "r1.retry1");
        assert_ne!(retry_run_id("r1", 1), retry_run_id("r1", 2));
    }
}
