//! The run endpoints: the dead-lettered runs of the caller's tenants, and an operator's
//! resume of one (`GET /v1/runs?status=dead_lettered`, `POST /v1/runs/{run_id}/resume`).
//! A thin layer over [`operator::dead_lettered_runs`] and [`operator::resume`].

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, Uri};
use serde::{Deserialize, Serialize};

use super::ApiState;
use super::error::ApiError;
use super::handlers::Authenticated;
use super::views::shorten;
use crate::json::StrictJson;
use crate::tokens::Operator;
use twice_world::ledger::Ledger;
use twice_world::runtime::ids::{RunId, Tenant, WorkerId};
use twice_world::runtime::operator::{self, DeadLetteredRun, OperatorError, ResumeRequest};
use twice_world::runtime::run::{RunState, RunStatus};

/// The one status runs are listed by.
const DEAD_LETTERED: &str = "dead_lettered";
/// The most characters a run id may have in a path.
const RUN_ID_CHARS_MAX: usize = 200;

/// A dead-lettered run, as listed.
#[derive(Serialize)]
pub(super) struct RunView {
    run_id: RunId,
    tenant: Tenant,
    status: &'static str,
    version: u32,
    reason: String,
    resumes_as: String,
    since_ms: u64,
    dead_lettered_by: WorkerId,
}

impl RunView {
    fn new(run: DeadLetteredRun, tenant: Tenant) -> RunView {
        RunView {
            run_id: run.run_id,
            tenant,
            status: DEAD_LETTERED,
            version: run.version,
            reason: run.reason,
            resumes_as: run.resumes_as,
            since_ms: run.since_ms,
            dead_lettered_by: run.saved_by,
        }
    }
}

#[derive(Serialize)]
pub(super) struct RunsView {
    items: Vec<RunView>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RunsQuery {
    status: Option<String>,
}

/// `GET /v1/runs?status=dead_lettered`: the caller's tenants' dead-lettered runs, longest
/// waiting first.
pub(super) async fn list(
    State(state): State<ApiState>,
    Authenticated(operator): Authenticated,
    uri: Uri,
) -> Result<Json<RunsView>, ApiError> {
    let Query(query) = Query::<RunsQuery>::try_from_uri(&uri)
        .map_err(|rejection| ApiError::invalid(format!("query: {}", rejection.body_text())))?;
    match query.status.as_deref() {
        Some(DEAD_LETTERED) => {}
        Some(other) => {
            return Err(ApiError::invalid(format!(
                "status: `{}` is not listed; runs are listed by status={DEAD_LETTERED}",
                shorten(other)
            )));
        }
        None => return Err(ApiError::invalid(format!("status: required, status={DEAD_LETTERED}"))),
    }
    let items = state
        .ledgers
        .run(move |ledger| {
            let runs = operator::dead_lettered_runs(ledger, &twice_world::text::WORDS)?;
            Ok(runs
                .into_iter()
                .filter_map(|run| {
                    let tenant = run.tenant.clone().filter(|tenant| operator.may_see(tenant))?;
                    Some(RunView::new(run, tenant))
                })
                .collect())
        })
        .await?;
    Ok(Json(RunsView { items }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ResumeBody {
    reason: String,
    expected_version: Option<u32>,
}

/// The run as it stands after a resume.
#[derive(Serialize)]
pub(super) struct ResumedView {
    run_id: String,
    status: String,
    version: u32,
}

fn run_id_from_path(path: Result<Path<String>, PathRejection>) -> Result<String, ApiError> {
    let Path(raw) = path.map_err(|rejection| ApiError::invalid(format!("run_id: {}", rejection.body_text())))?;
    let fits = (1..=RUN_ID_CHARS_MAX).contains(&raw.chars().count())
        && raw
            .chars()
            .all(|character| !character.is_whitespace() && !character.is_control());
    if !fits {
        return Err(ApiError::invalid(format!(
            "`{}` is not a run id (1 to {RUN_ID_CHARS_MAX} visible characters, no spaces)",
            shorten(&raw)
        )));
    }
    Ok(raw)
}

fn no_such_run(run_id: &str) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", format!("no run `{run_id}`"))
}

/// The run's checkpoint, if the operator may see its tenant; otherwise the same 404 as for a
/// run that does not exist. A run is visible once it is dead-lettered (its checkpoint names
/// its tenant); before that it is the runtime's, not an operator's.
fn visible_run(ledger: &Ledger, run_id: &str, operator: &Operator) -> Result<RunState, ApiError> {
    let state = ledger
        .load_checkpoint(run_id)?
        .and_then(|checkpoint| RunState::from_json(&checkpoint.state).ok());
    match state {
        Some(state) => match &state.status {
            RunStatus::DeadLettered { tenant, .. } if operator.may_see(tenant) => Ok(state),
            RunStatus::DeadLettered { .. } => Err(no_such_run(run_id)),
            // Not dead-lettered: nothing to resume. The run's tenant is not in its checkpoint,
            // so nothing more is told than that.
            other => Err(ApiError::new(
                StatusCode::CONFLICT,
                "conflict",
                format!(
                    "run `{run_id}` is not dead_lettered (it is {}): nothing to resume",
                    other.name()
                ),
            )),
        },
        None => Err(no_such_run(run_id)),
    }
}

/// `POST /v1/runs/{run_id}/resume`: an operator resumes a dead-lettered run, compare-and-set.
pub(super) async fn resume(
    State(state): State<ApiState>,
    Authenticated(operator): Authenticated,
    path: Result<Path<String>, PathRejection>,
    StrictJson(body): StrictJson<ResumeBody>,
) -> Result<Json<ResumedView>, ApiError> {
    let run_id = run_id_from_path(path)?;
    operator::check_reason(&body.reason).map_err(|error| ApiError::invalid(format!("reason: {error}")))?;
    let clock = Arc::clone(&state.clock);
    let view = state
        .ledgers
        .run(move |ledger| {
            visible_run(ledger, &run_id, &operator)?;
            let mut request = ResumeRequest::new(&run_id, &body.reason, &operator.id);
            request.expected_version = body.expected_version;
            let version =
                operator::resume(ledger, &request, clock.now_ms(), &twice_world::text::WORDS).map_err(|error| {
                    match error {
                        OperatorError::Reason(_) => ApiError::invalid(error.to_string()),
                        OperatorError::NoSuchRun(_) => no_such_run(&run_id),
                        OperatorError::RunChanged { .. } | OperatorError::NotDeadLettered { .. } => {
                            ApiError::new(StatusCode::CONFLICT, "conflict", error.to_string())
                        }
                        OperatorError::Ledger(error) => ApiError::from_ledger(error),
                        other => ApiError::internal(other.to_string()),
                    }
                })?;
            let status = ledger
                .load_checkpoint(&run_id)?
                .map_or_else(|| "unknown".to_owned(), |checkpoint| checkpoint.status);
            Ok(ResumedView {
                run_id: run_id.clone(),
                status,
                version,
            })
        })
        .await?;
    Ok(Json(view))
}
