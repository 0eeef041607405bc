//! `GET /healthz` (alive and the catalog reachable), `GET /readyz` (ready to serve: metadata
//! loaded, schemas built, database answering), `GET /metrics` and `GET /v1/version`.

use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

/// 200 `OK` when the catalog is reachable (`WARN: …` with inconsistent metadata), else 500.
pub async fn healthz(State(state): State<AppState>) -> (StatusCode, &'static str) {
    let reachable = match state.pool.get().await {
        Ok(client) => crate::catalog::current_version(&**client).await.is_ok(),
        Err(_) => false,
    };
    if !reachable {
        return (StatusCode::INTERNAL_SERVER_ERROR, "ERROR");
    }
    if state.snapshot().resolution.inconsistencies.is_empty() {
        (StatusCode::OK, "OK")
    } else {
        (StatusCode::OK, "WARN: inconsistent objects in schema")
    }
}

/// Longest wait for the database's answer before the process counts as not ready.
const READY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// 200 when requests can be served: the catalog's metadata is loaded and its GraphQL schemas
/// are built (a first load that failed leaves version -1), and the database answers within
/// two seconds. Otherwise 503 with the checks that failed. Inconsistent objects do not make a
/// replica unready: the rest of the schema is served.
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    let loaded = state.snapshot().version >= 0;
    let database = tokio::time::timeout(READY_TIMEOUT, async {
        match state.pool.get().await {
            Ok(client) => client.simple_query("SELECT 1").await.is_ok(),
            Err(_) => false,
        }
    })
    .await
    .unwrap_or(false);
    let status = if loaded && database {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        Json(
            json!({"ready": loaded && database, "metadata_loaded": loaded, "schema_built": loaded, "database": database}),
        ),
    )
}

/// `GET /v1/version`: the server version.
pub async fn version() -> Json<Value> {
    Json(json!({"version": env!("CARGO_PKG_VERSION")}))
}

/// Undelivered events of every replica, when the database answers within a second.
async fn events_pending(state: &AppState) -> Option<i64> {
    let count = async {
        let client = state.pool.get().await.ok()?;
        let row = client
            .query_one(
                "SELECT count(*) FROM basalt_catalog.event_log
                 WHERE delivered = false AND error = false AND archived = false",
                &[],
            )
            .await
            .ok()?;
        row.try_get::<_, i64>(0).ok()
    };
    tokio::time::timeout(std::time::Duration::from_secs(1), count)
        .await
        .ok()
        .flatten()
}

/// `GET /metrics`: the Prometheus text format. Admin only unless `BASALT_METRICS_PUBLIC=true`.
pub async fn metrics(
    State(state): State<AppState>,
    State(live): State<std::sync::Arc<crate::live::LiveQueries>>,
    headers: axum::http::HeaderMap,
) -> Result<axum::response::Response, super::error::ApiError> {
    use axum::response::IntoResponse;
    if !state.config.metrics_public {
        let session = state.auth.authenticate(&headers, None).await?;
        if !session.is_admin() {
            return Err(super::error::ApiError::AdminOnly);
        }
    }
    let text = super::metrics::render(&state, &live, events_pending(&state).await)
        .map_err(super::error::ApiError::internal)?;
    Ok((
        [(
            axum::http::header::CONTENT_TYPE,
            crate::metrics::CONTENT_TYPE,
        )],
        text,
    )
        .into_response())
}
