//! `POST /v1/query`: authenticate, read the body within its limit, check the caller is admin,
//! parse the operation, run it through the catalog, install what it committed (or, with
//! `"dry_run": true`, run it, roll it back and answer what it would change).

use super::error::ApiError;
use crate::ops::{Limits, Op};
use crate::state::AppState;
use crate::transaction::{self, Writer};
use axum::body::{to_bytes, Body};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::Value;

/// Header carrying the catalog's resource version after a request.
pub const RESOURCE_VERSION_HEADER: &str = "x-basalt-resource-version";

/// Handles one metadata request.
pub async fn handle(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let dev_mode = state.config.dev_mode;
    run(state, headers, body)
        .await
        .map_err(|e| e.exposing(dev_mode))
}

async fn run(state: AppState, headers: HeaderMap, body: Body) -> Result<Response, ApiError> {
    let session = state.auth.authenticate(&headers, None).await?;
    crate::telemetry::request::record_role(&session.role);
    let limit = state.config.max_body_bytes;
    let bytes = to_bytes(body, limit)
        .await
        .map_err(|_| ApiError::PayloadTooLarge(limit))?;
    let request: Value = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::InvalidJson(format!("invalid JSON: {e}")))?;
    if !session.is_admin() {
        return Err(ApiError::AdminOnly);
    }
    let op = {
        let _span = tracing::debug_span!("parse").entered();
        Op::parse(
            &request,
            Limits {
                max_batch_size: state.config.max_batch_size,
            },
        )?
    };
    // Parsed, so the type is one of the known operations (a bounded label).
    let operation = request
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("invalid")
        .to_owned();
    crate::telemetry::request::record_operation(operation);
    let expected = match request.get("resource_version") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_i64().ok_or_else(|| {
            crate::metadata::error::parse_failed(
                crate::metadata::JsonPath::root().key("resource_version"),
                "expected an integer resource_version",
            )
        })?),
    };
    let dry_run = match request.get("dry_run") {
        None | Some(Value::Null) => false,
        Some(v) => v.as_bool().ok_or_else(|| {
            crate::metadata::error::parse_failed(
                crate::metadata::JsonPath::root().key("dry_run"),
                "expected a boolean dry_run",
            )
        })?,
    };
    // A write keeps the watcher from rebuilding what it is about to install itself. Taken
    // before the connection, in the order the watcher takes them (rebuild lock, then a
    // connection): the other order deadlocks once the pool is exhausted, each side holding
    // what the other waits for.
    let writing = match op.is_read_only() || dry_run {
        true => None,
        false => Some(state.writing().await),
    };
    let mut client = state.pool.get().await.map_err(ApiError::internal)?;
    let writer = Writer::Api {
        reject_managed: state.config.managed_metadata == crate::config::ManagedMetadata::Reject,
        session: Some(&session),
        last_write: Some(&state.last_write),
        // A dry run takes no table locks for triggers it would roll back anyway.
        live: (!dry_run).then_some(&state.changes.policy),
    };
    if dry_run {
        // Runs and rolls back: nothing stored, nothing installed, no NOTIFY.
        let answer = transaction::dry_run(&mut client, &op, expected, writer).await?;
        return Ok(Json(answer).into_response());
    }
    let introspections = prometheus_client::metrics::counter::Counter::<u64>::default();
    let executed = crate::catalog::database::counting(
        introspections.clone(),
        transaction::run_as(&mut client, &op, expected, writer),
    )
    .await;
    state
        .counters
        .metadata_introspections
        .fetch_add(introspections.get(), std::sync::atomic::Ordering::Relaxed);
    let executed = executed?;
    drop(client);
    let version = executed.catalog.version;
    if let (Some(writing), Some(notification)) = (writing, executed.notification) {
        tracing::info!(version, wrote = executed.wrote, "metadata applied");
        writing.install(executed.catalog, notification);
    }
    let mut response = Json(executed.answer).into_response();
    if let Ok(value) = HeaderValue::from_str(&version.to_string()) {
        response
            .headers_mut()
            .insert(RESOURCE_VERSION_HEADER, value);
    }
    Ok(response)
}
