//! The lean API holds: without the `simulation` feature, no program can name a way to switch a
//! guard off, a naive mode or a test hook. Each doctest here fails to compile in the lean build
//! and compiles with `simulation` (so the test can fail both ways: an item left public, or an
//! item the simulation lost).

/// Declares one doctest per snippet: `compile_fail` without `simulation`, plain with it.
macro_rules! only_with_simulation {
    ($($name:ident: $code:literal;)*) => {$(
        #[cfg_attr(feature = "simulation", doc = "```")]
        #[cfg_attr(not(feature = "simulation"), doc = "```compile_fail")]
        #[doc = concat!("use twice_runtime::*;\n", $code)]
        #[doc = "```"]
        #[allow(dead_code, reason = "only its doctest matters")]
        struct $name;
    )*};
}

only_with_simulation! {
    GuardsAllOff: "let _ = Guards::all_off();";
    GuardsOnly: "let _ = Guards::only([Guard::Ledger]);";
    GuardsSet: "let mut guards = Guards::all_on();\nguards.set(Guard::Ledger, false);";
    GuardsWith: "let _ = Guards::all_on().with(Guard::Ledger, false);";
    GuardsParseList: "let _ = Guards::parse_list(\"none\");";
    GuardsRead: "let _: Guards = serde_json::from_str(\"{\\\"ledger\\\": false}\").unwrap();";
    Naive: "let _ = Guards::all_on().with_naive_refusal(NaiveRefusal::Indeterminate);";
    ArgumentsHash: "let _ = KeyScheme::ArgumentsHash;";
    KeyFromArguments: "let _ = IdempotencyKey::from_arguments(\"issue_credit\", \"{}\");";
    SetupWithGuards: "let _ = worker::WorkerSetup::new(\"w\", \"r\", vec![]).with_guards(Guards::all_on());";
    SetupWithLease: "let _ = worker::WorkerSetup::new(\"w\", \"r\", vec![]).with_lease_ms(500);";
    UncheckedInsert: "fn f(ledger: &mut ledger::Ledger, request: &ledger::ReserveRequest<'_>) {\n    let _ = ledger.insert_started_unchecked(request, 0);\n}";
    UncommittedReserve: "fn f(ledger: &mut ledger::Ledger, request: &ledger::ReserveRequest<'_>) {\n    let _ = ledger.reserve_uncommitted(request, 0);\n}";
    NaiveCheck: "fn f(ledger: &ledger::Ledger, key: &IdempotencyKey) {\n    let _ = ledger.check(key);\n}";
    UnfencedAttempt: "fn f(ledger: &mut ledger::Ledger, key: &IdempotencyKey) {\n    let _ = ledger.note_attempt(key, 1, \"w\", 0);\n}";
    SendFenceOff: "fn f(executor: executor::Executor) -> executor::Executor {\n    executor.without_send_fence_for_tests()\n}";
}
