//! HTTP: routes, request observation (log line, metrics, span), body limits. Handlers call
//! into `session`, `metadata` and `catalog`; they never build SQL or edit metadata themselves.

mod console;
pub mod error;
mod graphql;
mod health;
mod limits;
mod metrics;
pub mod observe;
mod query;
mod rest;
mod websocket;

use crate::live::LiveQueries;
use crate::state::AppState;
use axum::extract::FromRef;
use axum::routing::{any, get, post};
use axum::Router;
use error::ApiError;
use std::sync::Arc;
use std::time::Duration;
use tower::Layer;
use tower_http::timeout::{Timeout, TimeoutLayer};

/// What the routes share: the server's state, and the registry of its WebSockets and live
/// queries (which reads the state, so the state does not hold it). A handler takes either
/// part as `State<…>`.
#[derive(Debug, Clone)]
pub struct Routes {
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

/// The HTTP application: the routes (`router`) answered within 120 s (408 otherwise), every
/// request observed (see [`observe`]).
pub type App = observe::Observe<Timeout<Router>>;

/// The HTTP application over `state`. The two layers wrap the router as a whole rather than
/// each of its routes (`Router::layer`), so a request passes through them without cloning a
/// boxed route service for each.
pub fn app(state: AppState, live: Arc<LiveQueries>) -> App {
    let routes = router(state.clone(), live);
    let timed = TimeoutLayer::with_status_code(
        axum::http::StatusCode::REQUEST_TIMEOUT,
        Duration::from_secs(120),
    )
    .layer(routes);
    observe::ObserveLayer::new(state).layer(timed)
}

/// The application's routes.
fn router(state: AppState, live: Arc<LiveQueries>) -> Router {
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
            .route("/console/assets/{name}", get(console::asset))
            .route("/api/rest", any(rest::handle))
            .route("/api/rest/", any(rest::handle))
            .route("/api/rest/{*path}", any(rest::handle))
            .route("/api/swagger/json", get(rest::swagger));
    }
    router
        .fallback(|| async { ApiError::NotFound })
        .with_state(Routes { state, live })
}
