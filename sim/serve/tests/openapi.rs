//! `sim/openapi.yaml` against the server's own list of answers (`api::ERROR_ANSWERS`, which
//! debug builds refuse to answer outside of): every status an operation can get is documented
//! on that operation, and every error code the server sends is in the `Error` schema (and no
//! other). A conformance tool generating requests from the spec then meets no undocumented
//! status. (`.ci/conformance` runs such a tool, schemathesis, against a live server.)
//!
//! The spec is read with a few rules about its layout rather than a YAML library: operations
//! at six spaces with an `operationId`, their `responses:` keys at eight; the test fails if it
//! finds fewer than the seven operations, so a change of layout cannot make it pass vacuously.

use std::collections::{BTreeMap, BTreeSet};

use twice_serve::api::ERROR_ANSWERS;

const SPEC: &str = include_str!("../../openapi.yaml");

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// Each operation's documented response statuses, by `operationId`.
fn documented_statuses() -> BTreeMap<String, BTreeSet<u16>> {
    let mut operations: BTreeMap<String, BTreeSet<u16>> = BTreeMap::new();
    let mut operation: Option<String> = None;
    let mut in_responses = false;
    for line in SPEC.lines() {
        let text = line.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let depth = indent(line);
        if depth <= 6 {
            in_responses = false;
        }
        if depth <= 4 {
            operation = None;
        }
        if depth == 6 {
            if let Some(id) = text.strip_prefix("operationId: ") {
                operation = Some(id.trim().to_owned());
                operations.entry(id.trim().to_owned()).or_default();
            }
            in_responses = text == "responses:";
        } else if depth == 8 && in_responses {
            let id = operation.clone().expect("responses after their operationId");
            let key = text.split(':').next().unwrap().trim_matches('\'');
            let status: u16 = key.parse().unwrap_or_else(|_| panic!("a status, not {key:?}"));
            operations.get_mut(&id).unwrap().insert(status);
        }
    }
    operations
}

/// The codes the `Error` schema lists.
fn documented_codes() -> BTreeSet<String> {
    let error_schema = SPEC.split("\n    Error:\n").nth(1).expect("an Error schema");
    let list = error_schema
        .split("enum: [")
        .nth(1)
        .expect("a code enum")
        .split(']')
        .next()
        .unwrap();
    list.split(',')
        .map(|code| code.trim().to_owned())
        .filter(|code| !code.is_empty())
        .collect()
}

#[test]
fn every_status_an_operation_can_get_is_documented_on_it() {
    let documented = documented_statuses();
    assert_eq!(
        documented.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "compensateToolExecution",
            "getToolExecution",
            "listContradictions",
            "listRuns",
            "listToolExecutions",
            "resolveToolExecution",
            "resumeRun"
        ],
        "the spec's operations, as this test reads them"
    );
    for (operation, statuses) in &documented {
        assert!(statuses.contains(&200), "{operation}: 200");
    }
    let mut missing = Vec::new();
    for answer in ERROR_ANSWERS {
        for operation in answer.operations {
            let statuses = documented
                .get(*operation)
                .unwrap_or_else(|| panic!("no operation {operation}"));
            if !statuses.contains(&answer.status) {
                missing.push(format!("{operation}: {} ({})", answer.status, answer.code));
            }
        }
    }
    assert!(missing.is_empty(), "undocumented: {missing:#?}");
}

#[test]
fn the_error_schema_lists_exactly_the_codes_the_server_sends() {
    let documented = documented_codes();
    let sent: BTreeSet<String> = ERROR_ANSWERS.iter().map(|answer| answer.code.to_owned()).collect();
    assert_eq!(
        documented.difference(&sent).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "documented, never sent"
    );
    assert_eq!(
        sent.difference(&documented).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "sent, not documented"
    );
}

#[test]
fn every_referenced_response_exists() {
    let components = SPEC.split("\n  responses:\n").nth(1).expect("components.responses");
    let defined: BTreeSet<&str> = components
        .lines()
        .filter(|line| indent(line) == 4 && line.trim_end().ends_with(':'))
        .map(|line| line.trim().trim_end_matches(':'))
        .collect();
    for reference in SPEC.split("'#/components/responses/").skip(1) {
        let name = reference.split('\'').next().unwrap();
        assert!(defined.contains(name), "{name} is referenced but not defined");
    }
}
