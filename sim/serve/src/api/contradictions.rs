//! `GET /v1/contradictions`: the late words that said otherwise than a settlement — an
//! operator settled a call `failed` and the tool's answer then said it took effect, or the
//! reverse. The settlement stands; these are the calls a person should look at first. A thin
//! layer over [`twice_world::ledger::Ledger::contradictions`].

use axum::Json;
use axum::extract::{Query, State};
use axum::http::Uri;
use serde::{Deserialize, Serialize};

use super::ApiState;
use super::error::ApiError;
use super::handlers::Authenticated;
use super::views::{HistoryView, shorten};
use twice_world::runtime::key::IdempotencyKey;

/// How many contradictions a listing returns unless asked for fewer or more.
const LIMIT_DEFAULT: u32 = 50;
/// The most a listing returns.
const LIMIT_MAX: u32 = 200;

/// One contradiction: the call and the history line that says what contradicted what.
#[derive(Serialize)]
pub(super) struct ContradictionView {
    key: IdempotencyKey,
    #[serde(flatten)]
    line: HistoryView,
}

#[derive(Serialize)]
pub(super) struct ContradictionsView {
    items: Vec<ContradictionView>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ContradictionsQuery {
    limit: Option<String>,
}

/// `GET /v1/contradictions`: the caller's tenants' contradictions, newest first.
pub(super) async fn list(
    State(state): State<ApiState>,
    Authenticated(operator): Authenticated,
    uri: Uri,
) -> Result<Json<ContradictionsView>, ApiError> {
    let Query(query) = Query::<ContradictionsQuery>::try_from_uri(&uri)
        .map_err(|rejection| ApiError::invalid(format!("query: {}", rejection.body_text())))?;
    let limit = match query.limit.as_deref() {
        None => LIMIT_DEFAULT,
        Some(text) => text
            .parse::<u32>()
            .ok()
            .filter(|limit| (1..=LIMIT_MAX).contains(limit))
            .ok_or_else(|| {
                ApiError::invalid(format!(
                    "limit: a whole number from 1 to {LIMIT_MAX}, not `{}`",
                    shorten(text)
                ))
            })?,
    };
    let tenants: Vec<String> = operator.tenants.iter().cloned().collect();
    let mut lines = state
        .ledgers
        .run(move |ledger| {
            let mut lines = Vec::new();
            for tenant in &tenants {
                lines.extend(ledger.contradictions(Some(tenant), limit)?);
            }
            Ok(lines)
        })
        .await?;
    // Newest first across tenants: each tenant's first `limit` merged, cut to `limit`.
    lines.sort_by_key(|line| std::cmp::Reverse(line.id));
    lines.truncate(limit as usize);
    let items = lines
        .into_iter()
        .map(|line| ContradictionView {
            key: line.key.clone(),
            line: line.into(),
        })
        .collect();
    Ok(Json(ContradictionsView { items }))
}
