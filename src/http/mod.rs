//! HTTP: routes, request observation (log line, metrics, span), body limits. Handlers call
//! into `session`, `metadata` and `catalog`; they never build SQL or edit metadata themselves.

mod console;
pub mod error;
mod graphql;
mod health;
mod metrics;
mod observe;
mod query;
mod websocket;

use crate::live::LiveQueries;
use crate::state::AppState;
use axum::extract::FromRef;
use axum::routing::{get, post};
use axum::Router;
use error::ApiError;
use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tower_http::request_id::{
    MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};
use tower_http::timeout::TimeoutLayer;

static REQUEST_IDS: AtomicU64 = AtomicU64::new(1);

/// Request ids: a client's `X-Request-Id` is kept; otherwise one is made of the time, the
/// process and a counter. Set on the request before its span is made (so the span carries it
/// from the start) and copied to the response.
#[derive(Debug, Clone, Copy, Default)]
struct RequestIds;

impl MakeRequestId for RequestIds {
    fn make_request_id<B>(&mut self, _: &axum::http::Request<B>) -> Option<RequestId> {
        static PROCESS: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
        let process = *PROCESS.get_or_init(std::process::id);
        let n = REQUEST_IDS.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        // Formatted on the stack, then copied once into the header's bytes (`format!` would
        // grow a string as it goes). 16 + 1 + 8 + 1 + 16 digits at most.
        let mut text = [0u8; 48];
        let mut rest = &mut text[..];
        write!(rest, "{:016x}-{process:08x}-{n:08x}", nanos as u64).ok()?;
        let written = 48 - rest.len();
        axum::http::HeaderValue::from_bytes(&text[..written])
            .ok()
            .map(RequestId::new)
    }
}

/// What the routes share: the server's state, and the registry of its WebSockets and live
/// queries (which reads the state, so the state does not hold it). A handler takes either
/// part as `State<…>`.
#[derive(Debug, Clone)]
pub struct Routes {
    /// The server's state.
    pub state: AppState,
    /// Its WebSockets and live queries.
    pub live: Arc<LiveQueries>,
}

impl FromRef<Routes> for AppState {
    fn from_ref(routes: &Routes) -> AppState {
        routes.state.clone()
    }
}

impl FromRef<Routes> for Arc<LiveQueries> {
    fn from_ref(routes: &Routes) -> Arc<LiveQueries> {
        routes.live.clone()
    }
}

/// The application's routes.
pub fn router(state: AppState, live: Arc<LiveQueries>) -> Router {
    let mut router = Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(health::metrics))
        .route("/v1/version", get(health::version));
    if state.config.api_enabled("metadata") {
        router = router.route("/v1/query", post(query::handle));
    }
    if state.config.api_enabled("graphql") {
        router = router
            .route("/v1/graphql", post(graphql::post).get(graphql::get))
            .route("/v1/graphql/explain", post(graphql::explain))
            .route("/console", get(console::page))
            .route("/console/assets/{name}", get(console::asset));
    }
    router
        .fallback(|| async { ApiError::NotFound })
        .layer(TimeoutLayer::with_status_code(
            axum::http::StatusCode::REQUEST_TIMEOUT,
            Duration::from_secs(120),
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            observe::observe,
        ))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(SetRequestIdLayer::x_request_id(RequestIds))
        .with_state(Routes { state, live })
}
