//! Words a player reads, made the same way everywhere: money in dollars, and the runtime's
//! messages without the backticks it quotes statuses in. Kept apart so the simulator, the
//! checker and the debrief can all use them without depending on one another. The runtime's
//! typed reasons are worded here too, so its sans-IO core makes no sentences.

use twice_runtime::worker::{CallRefused, Phase, WaitReason, Words};

mod notes;
mod written;

pub use notes::note_words;
/// A count with its noun, singular for one: `1 tape`, `2 tapes`, `0 tapes` (the runtime's own,
/// which its error messages use too: one function for every count).
pub use twice_runtime::worker::counted;
pub use written::{dead_letter_words, fail_words, operator_words, record_words, told_failed_words, told_words};

/// Penny's words for what the runtime writes down for people: every worker the world starts
/// (the simulator's, the worker process's) is handed these.
pub const WORDS: Words = Words {
    wait: wait_words,
    fail: fail_words,
    told_failed: told_failed_words,
    record: record_words,
    dead_letter: dead_letter_words,
    operator: operator_words,
};

/// Words in a text, as a reader counts them (the campaign's text rules, the glossary's and the
/// presenter notes' limits).
pub fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

/// A duration in the largest whole unit that fits: `30 h`, `5 min`, `2 s`, `750 ms`.
pub fn duration_words(duration_ms: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(3_600_000, "h"), (60_000, "min"), (1_000, "s")];
    UNITS
        .iter()
        .find(|(size, _)| duration_ms >= *size && duration_ms.is_multiple_of(*size))
        .or_else(|| UNITS.iter().find(|(size, _)| duration_ms >= size * 10))
        .map_or_else(
            || format!("{duration_ms} ms"),
            |(size, unit)| format!("{} {unit}", duration_ms / size),
        )
}

/// A step of Penny's script as every screen names it: the run, then the step counted from
/// one ("r1/2" for run r1's second call). `item` is the script's index, from 0.
pub fn step_name(run: &str, item: u32) -> String {
    format!("{run}/{}", u64::from(item) + 1)
}

/// A step as billing stores it on what it applied (`metadata.intent`, "r1/0": the run, then the
/// script's index from 0) in the name every screen uses ("r1/1"). Stored ids stay as they are
/// (tapes and the checker compare them); only what a person reads is renamed. An id that is not
/// `run/index` is shown as stored.
pub fn intent_step_name(intent: &str) -> String {
    intent
        .rsplit_once('/')
        .and_then(|(run, item)| Some(step_name(run, item.parse().ok()?)))
        .unwrap_or_else(|| intent.to_owned())
}

/// `$25.00` from cents.
pub fn dollars(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    format!("{sign}${}.{:02}", cents.abs() / 100, cents.abs() % 100)
}

/// What a worker is doing while it is about to run `phase`, in a player's words: "waiting
/// for Penny's model to decide", "saving its checkpoint".
pub fn doing(phase: Phase) -> String {
    match phase {
        Phase::Start | Phase::LoadCheckpoint => "loading its checkpoint".into(),
        Phase::ModelDecides => "waiting for Penny's model to decide".into(),
        Phase::Reserve | Phase::CheckLedger | Phase::InsertStarted => "reserving the call in the ledger".into(),
        Phase::Send => "about to send the request".into(),
        Phase::WaitForAnswer => "waiting for billing's answer".into(),
        Phase::RecordOutcome => "recording how the call ended".into(),
        Phase::SaveCheckpoint => "saving its checkpoint".into(),
        Phase::Parked => "parked, waiting for the call to be settled".into(),
        Phase::Exit => "about to exit: its run is done".into(),
        other => format!("about to {other}"),
    }
}

/// The text with its first letter in capitals: a sentence made from a clause.
pub fn capitalised(text: &str) -> String {
    let mut letters = text.chars();
    letters
        .next()
        .map(|first| first.to_uppercase().chain(letters).collect())
        .unwrap_or_default()
}

/// Items in a sentence: `a`, `a and b`, `a, b and c` (empty: nothing).
pub fn and_list<S: AsRef<str>>(items: &[S]) -> String {
    match items {
        [] => String::new(),
        [only] => only.as_ref().to_owned(),
        [init @ .., last] => {
            let init: Vec<&str> = init.iter().map(AsRef::as_ref).collect();
            format!("{} and {}", init.join(", "), last.as_ref())
        }
    }
}

/// Runtime text for a player: the runtime's messages quote statuses in backticks, which read
/// as stray marks on screen.
pub fn plain(text: &str) -> String {
    text.replace('`', "")
}

/// [`plain`] for a sentence already owned: most have no backtick, and keep their allocation
/// (the timeline writes dozens of lines a scenario).
pub fn into_plain(text: String) -> String {
    if text.contains('`') { plain(&text) } else { text }
}

/// Why a run waits for a person, in the words its history, the timeline and the operator
/// API show: the runtime hands over the facts ([`WaitReason`]) and the executor writes these
/// words into the run's history.
pub fn wait_words(reason: &WaitReason) -> String {
    match reason {
        WaitReason::CheckpointUnreadable {
            run_id,
            version,
            detail,
        } => format!(
            "the checkpoint of run {run_id} (v{version}) cannot be read: {detail}. Starting over would run \
             settled calls again under new keys, so the run waits for a person"
        ),
        WaitReason::StateUnusable { run_id, detail } => {
            format!("the state of run {run_id} cannot be used: {detail}; the run waits for a person")
        }
        WaitReason::ContractRefused { run_id, violation } => {
            let (check, remedy) = start_check(violation);
            format!(
                "{check} failed: {violation}. Run {run_id} was refused before it started; nothing was sent. It \
                 waits for {remedy}"
            )
        }
        WaitReason::DeadLettered { run_id, reason } => {
            format!("run {run_id} is dead-lettered ({reason}); it is driven again only when an operator resumes it")
        }
        WaitReason::NoPendingCall { awaited } => {
            format!("its checkpoint awaits {awaited} but holds no pending call to look at")
        }
        WaitReason::PendingCallRefused(refused) => {
            format!("its checkpoint's pending call {}", refused_words(refused))
        }
        WaitReason::KeyMismatch { awaited, found } => {
            format!("its checkpoint awaits {awaited}, but its pending call has the key {found}")
        }
        WaitReason::ModelCallRefused(refused) => format!("the model's call {}", refused_words(refused)),
        WaitReason::DecisionLimit { run_id, decisions } => format!(
            "run {run_id} stopped after {decisions} decisions of the model in one start, its limit: the model is going round in circles"
        ),
        WaitReason::AbandonedCall { run_id, key, status } => format!(
            "run {run_id} would end with {key} still {status}: reserved before a crash and not made again, it may have been sent; a person settles it first"
        ),
    }
}

/// The start check a violation failed — the seed's contract check, or the ambiguity policy —
/// and what the refused run waits for, to end "It waits for …".
pub(crate) fn start_check(violation: &twice_runtime::tool::ContractViolation) -> (&'static str, &'static str) {
    use twice_runtime::tool::ContractViolation;
    match violation {
        ContractViolation::NoAmbiguityPolicy { .. } => (
            "the ambiguity policy check",
            "a person to give the tool a reconcile hook or the run the pause on unknown calls",
        ),
        ContractViolation::TooManyAttempts { .. } | ContractViolation::NoIdempotencyKey { .. } => {
            ("the tool contract check", "the tool to be declared honestly")
        }
    }
}

/// Why a call could not be begun, as the end of a sentence about the call.
fn refused_words(refused: &CallRefused) -> String {
    match refused {
        CallRefused::UnknownTool(tool) => format!("names tool `{tool}`, which is not declared"),
        CallRefused::BadKey(detail) => format!("cannot be given a key: {detail}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_intent_reads_as_the_step_every_screen_names() {
        assert_eq!(intent_step_name("r1/0"), "r1/1");
        assert_eq!(intent_step_name("r12/3"), "r12/4");
        // Not `run/index`: shown as stored rather than guessed at.
        assert_eq!(intent_step_name("r1/x"), "r1/x");
        assert_eq!(intent_step_name("refund"), "refund");
    }

    #[test]
    fn dollars_show_cents_and_sign() {
        assert_eq!(dollars(2500), "$25.00");
        assert_eq!(dollars(-5), "-$0.05");
        assert_eq!(plain("recorded `failed`"), "recorded failed");
        assert_eq!(into_plain("recorded `failed`".to_owned()), "recorded failed");
        assert_eq!(into_plain("no marks".to_owned()), "no marks");
    }

    #[test]
    fn durations_read_in_their_largest_fitting_unit() {
        assert_eq!(duration_words(86_400_000), "24 h");
        assert_eq!(duration_words(120_000), "2 min");
        assert_eq!(duration_words(2_000), "2 s");
        assert_eq!(duration_words(750), "750 ms");
        assert_eq!(duration_words(2_500), "2500 ms");
        assert_eq!(duration_words(108_000_000), "30 h");
    }

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(counted(1, "tape", "tapes"), "1 tape");
        assert_eq!(counted(0, "tape", "tapes"), "0 tapes");
        assert_eq!(counted(2, "job", "jobs"), "2 jobs");
    }

    #[test]
    fn a_reason_to_wait_is_worded_from_its_facts() {
        let dead_lettered = WaitReason::DeadLettered {
            run_id: "r1".into(),
            reason: "3 recoveries from checkpoint v2".into(),
        };
        assert_eq!(
            wait_words(&dead_lettered),
            "run r1 is dead-lettered (3 recoveries from checkpoint v2); it is driven again only when an operator resumes it"
        );
        let unknown_tool = WaitReason::ModelCallRefused(CallRefused::UnknownTool("wire_money".into()));
        assert_eq!(
            wait_words(&unknown_tool),
            "the model's call names tool `wire_money`, which is not declared"
        );
    }
}
