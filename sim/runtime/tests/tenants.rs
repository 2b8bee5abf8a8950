//! Run ids across tenants: a key is `<run_id>:<call_id>` whatever the tenant (so the key a
//! downstream system sees stays what it always was), and two tenants' runs with one id would
//! share it at the provider. So a run id another tenant's run has is refused, loudly, before
//! anything is loaded, reserved or sent — never served that run's checkpoint or results.

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use twice_runtime::execution::{Agent, AgentError, Ending, Exit, SystemClock, drive_run, moved_on, next_call};
use twice_runtime::executor::Executor;
use twice_runtime::ledger::{Ledger, LedgerError, ReserveRequest};
use twice_runtime::run::{Arguments, Decision, RunState, RunStatus};
use twice_runtime::tool::SideEffect;
use twice_runtime::toolbox::{CallContext, Tool, ToolFailure, Toolbox};
use twice_runtime::worker::{Worker, WorkerSetup};
use twice_runtime::{Error, IdempotencyKey, Status};

const RUN: &str = "welcome";

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

/// Sends into a shared outbox, so the test counts every email whichever worker sent it.
struct SendEmail(Arc<Mutex<Vec<String>>>);

impl Tool for SendEmail {
    type Args = Email;
    type Output = String;
    const NAME: &'static str = "send_email";
    const SIDE_EFFECT: SideEffect = SideEffect::External;

    async fn call(&self, email: Email, _context: CallContext<'_>) -> Result<String, ToolFailure> {
        let mut outbox = self.0.lock().map_err(|_| ToolFailure::NotSent("poisoned".into()))?;
        outbox.push(email.to);
        Ok(format!("m-{}", outbox.len()))
    }
}

/// One welcome email to `to`, then done.
struct Welcome {
    to: &'static str,
}

impl Agent for Welcome {
    fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
        if state.last_told.is_some() {
            return Ok((Decision::Done, moved_on(state).ok_or("no more items")?));
        }
        let email = Arguments::from_typed(&Email { to: self.to.into() })?;
        next_call(state, "send_email", email).ok_or_else(|| "no more calls".into())
    }
}

fn run_as(
    ledger: &Ledger,
    tenant: Option<&str>,
    to: &'static str,
    outbox: &Arc<Mutex<Vec<String>>>,
) -> Result<Ending, Error> {
    let mut tools = Toolbox::new().with(SendEmail(Arc::clone(outbox)));
    let mut setup = WorkerSetup::new("worker-1", RUN, tools.declarations());
    if let Some(tenant) = tenant {
        setup = setup.with_tenant(tenant);
    }
    let mut executor = Executor::new(ledger.connect_again()?, &setup);
    let mut worker = Worker::new(setup)?;
    drive_run(
        &mut worker,
        &mut executor,
        &mut Welcome { to },
        &mut tools,
        &mut SystemClock,
    )
}

fn refused_for(result: Result<Ending, Error>, owner: &str, asked: &str) {
    match result {
        Err(Error::Ledger(LedgerError::RunOfAnotherTenant {
            run_id,
            owner: found,
            asked: by,
            ..
        })) => assert_eq!((run_id.as_str(), found.as_str(), by.as_str()), (RUN, owner, asked)),
        other => panic!("expected the run refused as {owner}'s, got {other:?}"),
    }
}

#[test]
fn another_tenants_completed_run_is_refused_not_loaded() {
    let ledger = Ledger::open_memory_store();
    let outbox = Arc::new(Mutex::new(Vec::new()));
    assert_eq!(
        run_as(&ledger, Some("acme"), "ada@acme.test", &outbox).expect("acme's run"),
        Ending::Exited(Exit::Completed)
    );
    let saved = ledger.load_checkpoint(RUN).expect("reads").expect("saved");
    assert_eq!(saved.run_state().expect("parses").tenant.as_deref(), Some("acme"));

    let refused = run_as(&ledger, Some("globex"), "bob@globex.test", &outbox);
    let message = refused.as_ref().map_err(ToString::to_string).expect_err("refused");
    assert!(
        message.contains("`welcome` belongs to tenant `acme`, not `globex`"),
        "{message}"
    );
    refused_for(refused, "acme", "globex");
    // A worker without a tenant is the default tenant's: refused too.
    refused_for(run_as(&ledger, None, "bob@globex.test", &outbox), "acme", "default");
    assert_eq!(
        *outbox.lock().expect("outbox"),
        vec!["ada@acme.test".to_owned()],
        "globex sent nothing"
    );
    assert_eq!(
        ledger.load_checkpoint(RUN).expect("reads").expect("saved").version,
        saved.version,
        "acme's checkpoint is untouched"
    );
    // acme's own worker still finds its run over and sends nothing again.
    assert_eq!(
        run_as(&ledger, Some("acme"), "ada@acme.test", &outbox).expect("acme again"),
        Ending::Exited(Exit::AlreadyOver(RunStatus::Completed))
    );
    assert_eq!(outbox.lock().expect("outbox").len(), 1);
}

#[test]
fn a_default_tenant_run_is_refused_to_a_named_tenant() {
    let ledger = Ledger::open_memory_store();
    let outbox = Arc::new(Mutex::new(Vec::new()));
    run_as(&ledger, None, "ada@example.test", &outbox).expect("the default tenant's run");
    refused_for(
        run_as(&ledger, Some("globex"), "bob@globex.test", &outbox),
        "default",
        "globex",
    );
    assert_eq!(outbox.lock().expect("outbox").len(), 1);
}

#[test]
fn a_key_another_tenants_run_reserved_is_refused_before_any_checkpoint() {
    // acme's worker reserved `welcome:c1` and died before it saved any checkpoint.
    let mut ledger = Ledger::open_memory_store();
    let key = IdempotencyKey::per_call(RUN, "c1").expect("a key");
    let arguments = Arguments::from_typed(&Email {
        to: "bob@globex.test".into(),
    })
    .expect("json")
    .canonical();
    ledger
        .reserve(
            &ReserveRequest::new(
                &key,
                RUN,
                "c1",
                "send_email",
                SideEffect::External,
                &arguments,
                "worker-9",
            )
            .with_tenant("acme"),
            1,
        )
        .expect("acme's reservation");
    let outbox = Arc::new(Mutex::new(Vec::new()));
    refused_for(
        run_as(&ledger, Some("globex"), "bob@globex.test", &outbox),
        "acme",
        "globex",
    );
    assert!(
        outbox.lock().expect("outbox").is_empty(),
        "nothing sent under acme's key"
    );
    let record = ledger.record(&key).expect("reads").expect("acme's record");
    assert_eq!(
        (record.tenant.as_str(), record.status),
        ("acme", Status::Started),
        "acme's record untouched"
    );
}

#[test]
fn a_run_without_a_tenant_saves_and_keys_as_before() {
    let ledger = Ledger::open_memory_store();
    let outbox = Arc::new(Mutex::new(Vec::new()));
    run_as(&ledger, None, "ada@example.test", &outbox).expect("runs");
    let saved = ledger.load_checkpoint(RUN).expect("reads").expect("saved");
    assert!(
        !saved.state.contains("tenant"),
        "the default tenant's checkpoint is as before: {}",
        saved.state
    );
    let key = IdempotencyKey::per_call(RUN, "c1").expect("a key");
    assert_eq!(key.as_str(), "welcome:c1", "the key a downstream sees is unchanged");
    assert_eq!(
        ledger.record(&key).expect("reads").expect("recorded").status,
        Status::Completed
    );
}
