//! `GET /healthz` and `GET /v1/version`.

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
    if state.snapshot().schema.inconsistencies.is_empty() {
        (StatusCode::OK, "OK")
    } else {
        (StatusCode::OK, "WARN: inconsistent objects in schema")
    }
}

/// The server version.
pub async fn version() -> Json<Value> {
    Json(json!({"version": env!("CARGO_PKG_VERSION")}))
}
