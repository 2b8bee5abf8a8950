//! `in_phase` in a tape is a typed [`Phase`]: the names tapes have always spelled read and
//! write the same bytes, and any other name is refused naming the tape and the field.

use std::path::Path;
use twice_sim::cards::CrashWorker;

use twice_sim::level::{self, Play, Tape};
use twice_sim::simulator::Phase;

fn tape_text(in_phase: &str) -> String {
    format!(
        r#"// A miss: nothing had left yet.
(
    version: 2,
    level: "05-crash-replay.level.ron",
    seed: 1,
    actions: [
        (at_phase: 2, play: CrashWorker(worker: Some(1), in_phase: {in_phase})),
    ],
    expect: (
        verdict: paid_once,
        stopped_by: [],
    ),
)
"#
    )
}

fn crash_phase(tape: &Tape) -> Option<Phase> {
    match &tape.actions[0].play {
        Play::CrashWorker(CrashWorker { in_phase, .. }) => *in_phase,
        other => panic!("not a crash: {other:?}"),
    }
}

#[test]
fn every_phase_name_reads_from_a_tape_and_is_written_back_as_it_was() {
    for phase in Phase::ALL {
        let text = tape_text(&format!("Some(\"{phase}\")"));
        let tape = level::parse_tape(Path::new("crash.tape.ron"), &text).expect("a known phase");
        assert_eq!(crash_phase(&tape), Some(phase));
        let written = level::tape_to_ron(&tape);
        assert!(
            written.contains(&format!("CrashWorker(worker: Some(1), in_phase: Some(\"{phase}\"))")),
            "{written}"
        );
    }
    let tape = level::parse_tape(Path::new("crash.tape.ron"), &tape_text("None")).expect("no phase");
    assert_eq!(crash_phase(&tape), None);
    assert!(!level::tape_to_ron(&tape).contains("in_phase"));
    // The implicit `Some` the tapes' reader allows.
    let tape = level::parse_tape(Path::new("crash.tape.ron"), &tape_text("\"record outcome\"")).expect("bare name");
    assert_eq!(crash_phase(&tape), Some(Phase::RecordOutcome));
}

#[test]
fn a_malformed_phase_is_refused_naming_the_tape_the_line_and_the_field() {
    for bad in ["sending", "Send", " send", ""] {
        let text = tape_text(&format!("Some(\"{bad}\")"));
        let error = level::parse_tape(Path::new("levels/bad.tape.ron"), &text).expect_err("not a phase");
        let message = error.to_string();
        assert!(message.starts_with("levels/bad.tape.ron:7:"), "{message}");
        assert!(
            message.contains(&format!("in_phase: `{bad}` is not a phase a worker runs")),
            "{message}"
        );
        assert!(message.contains("record outcome"), "the choices are named: {message}");
    }
}

#[test]
fn a_version_1_crash_has_no_phase_and_still_reads() {
    let text = tape_text("None").replace("version: 2,", "version: 1,").replace(
        "CrashWorker(worker: Some(1), in_phase: None)",
        "CrashWorker(worker: Some(1))",
    );
    let tape = level::parse_tape(Path::new("old.tape.ron"), &text).expect("version 1");
    assert_eq!(tape.version, 1);
    assert_eq!(crash_phase(&tape), None);
}

#[test]
fn every_name_is_its_own_and_reads_back() {
    let mut names: Vec<&str> = Phase::ALL.map(Phase::name).to_vec();
    for phase in Phase::ALL {
        assert_eq!(phase.name().parse(), Ok(phase));
        assert_eq!(serde_json::to_string(&phase).unwrap(), format!("\"{}\"", phase.name()));
        assert_eq!(serde_json::from_str::<Phase>(&format!("\"{phase}\"")).unwrap(), phase);
    }
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), Phase::ALL.len(), "two phases share a name");
}

#[test]
fn an_unknown_or_respelled_name_is_refused_with_the_choices() {
    for text in ["sending", " send", "Send", ""] {
        let error = text.parse::<Phase>().unwrap_err();
        assert!(
            error.to_string().starts_with(&format!("`{text}` is not a phase")),
            "{error}"
        );
        assert!(error.to_string().contains("record outcome, "), "{error}");
    }
}
