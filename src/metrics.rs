//! Prometheus metrics of the engine, served at `GET /metrics` in the text format by
//! `prometheus-client`. Request counts and latencies are recorded by a router layer
//! ([`track`]); everything else is read when scraped from what the process already keeps:
//! the work counters ([`crate::stats`]), the pool's status, the served snapshot and the live
//! queries. Every metric is listed in `docs/operations.md`.

use crate::state::AppState;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// The `Content-Type` of a scrape (the text encoder writes OpenMetrics).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Labels of a request count.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// `graphql`, `metadata` or `other`.
    pub api: &'static str,
    /// GraphQL: `query`, `mutation`, `subscription`, `batch` or `unknown`; metadata: the
    /// operation `type` (`invalid` when it did not parse); otherwise `none`.
    pub operation: Cow<'static, str>,
    /// The HTTP status code.
    pub status: u16,
}

/// Labels of a latency histogram.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ApiLabels {
    /// As in [`RequestLabels`].
    pub api: &'static str,
}

/// What a handler says about the request it answered, for the request metrics: put into the
/// response's extensions.
#[derive(Debug, Clone)]
pub struct Operation(pub Cow<'static, str>);

/// The metrics recorded as requests happen.
#[derive(Debug, Clone)]
pub struct Metrics {
    requests: Family<RequestLabels, Counter>,
    durations: Family<ApiLabels, Histogram>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            requests: Family::default(),
            // 100 µs … about 95 s.
            durations: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.0001, 2.5, 16))
            }),
        }
    }
}

/// Which API a path belongs to.
fn api_of(path: &str) -> &'static str {
    if path.starts_with("/v1/graphql") {
        "graphql"
    } else if path == "/v1/query" {
        "metadata"
    } else {
        "other"
    }
}

/// Router layer: counts every request by API, operation and status, and times it by API.
pub async fn track(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let api = api_of(request.uri().path());
    let started = Instant::now();
    let response = next.run(request).await;
    let operation = response
        .extensions()
        .get::<Operation>()
        .map(|o| o.0.clone())
        .unwrap_or(Cow::Borrowed("none"));
    let labels = RequestLabels {
        api,
        operation,
        status: response.status().as_u16(),
    };
    state.metrics.requests.get_or_create(&labels).inc();
    state
        .metrics
        .durations
        .get_or_create(&ApiLabels { api })
        .observe(started.elapsed().as_secs_f64());
    response
}

fn counter(registry: &mut Registry, name: &str, help: &str, value: u64) {
    registry.register(name, help, ConstCounter::new(value));
}

fn gauge(registry: &mut Registry, name: &str, help: &str, value: i64) {
    registry.register(name, help, ConstGauge::new(value));
}

fn count(value: usize) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The metrics in the Prometheus text format.
pub fn render(state: &AppState, events_pending: Option<i64>) -> Result<String, std::fmt::Error> {
    let mut registry = Registry::with_prefix("basalt");
    registry.register(
        "http_requests",
        "HTTP requests answered, by API, operation and status",
        state.metrics.requests.clone(),
    );
    registry.register(
        "http_request_duration_seconds",
        "Time to answer an HTTP request, by API",
        state.metrics.durations.clone(),
    );
    let c = &state.counters;
    let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    counter(
        &mut registry,
        "graphql_plan_cache_hits",
        "GraphQL requests answered with a cached plan",
        get(&c.plan_cache_hits),
    );
    counter(
        &mut registry,
        "graphql_plan_cache_misses",
        "GraphQL requests that parsed and planned their document",
        get(&c.plans_compiled),
    );
    counter(
        &mut registry,
        "sql_statements_prepared",
        "Statements prepared on a pooled connection",
        get(&c.statements_prepared),
    );
    counter(
        &mut registry,
        "mutation_transactions",
        "Explicit transactions opened for mutations (one-statement mutations open none)",
        get(&c.mutation_transactions),
    );
    counter(
        &mut registry,
        "live_query_statements",
        "Multiplexed live-query statements run",
        get(&c.live_statements),
    );
    counter(
        &mut registry,
        "shared_statements",
        "Statements that answered concurrent requests of one query plan together",
        get(&c.shared_statements),
    );
    counter(
        &mut registry,
        "shared_requests",
        "Requests answered by a statement shared with other requests",
        get(&c.shared_requests),
    );
    counter(
        &mut registry,
        "shared_waits",
        "Requests that waited for a statement shared with other requests",
        get(&c.shared_waits),
    );
    counter(
        &mut registry,
        "graphql_introspections_run",
        "Introspection documents answered by running them (the rest come from each role's cache)",
        get(&c.introspections_run),
    );
    counter(
        &mut registry,
        "schema_builds",
        "Metadata versions installed (their role schemas are built on first use)",
        get(&c.schema_builds),
    );
    counter(
        &mut registry,
        "catalog_reads",
        "Snapshots read from the catalog and resolved (a peer's change, a poll, a reconnect)",
        get(&c.catalog_reads),
    );
    counter(
        &mut registry,
        "metadata_introspections",
        "Database introspections run by /v1/query requests (none when a write starts from the previous one's state)",
        get(&c.metadata_introspections),
    );
    counter(
        &mut registry,
        "role_schema_builds",
        "Builds of a role's GraphQL schema (at most once per role and metadata version)",
        get(&c.role_schema_builds),
    );
    registry.register(
        "sql_duration_seconds",
        "Time of one SQL statement of the GraphQL path",
        c.sql_seconds.clone(),
    );
    registry.register(
        "schema_build_duration_seconds",
        "Time to build one role's GraphQL schema",
        c.schema_build_seconds.clone(),
    );
    let pool = state.pool.status();
    gauge(
        &mut registry,
        "db_pool_size",
        "Connections the pool holds",
        count(pool.size),
    );
    gauge(
        &mut registry,
        "db_pool_max_size",
        "Connections the pool may hold (--pool-size)",
        count(pool.max_size),
    );
    gauge(
        &mut registry,
        "db_pool_in_use",
        "Connections lent out",
        count(pool.size.saturating_sub(pool.available)),
    );
    gauge(
        &mut registry,
        "db_pool_waiters",
        "Tasks waiting for a connection",
        count(pool.waiting),
    );
    let served = state.snapshot();
    gauge(
        &mut registry,
        "catalog_version",
        "Catalog version being served (-1 before the first load)",
        served.version,
    );
    gauge(
        &mut registry,
        "inconsistent_objects",
        "Metadata objects left out of the served schema",
        count(served.schema.inconsistencies.len()),
    );
    gauge(
        &mut registry,
        "websocket_connections",
        "Open WebSockets on /v1/graphql",
        count(state.live.open_sockets()),
    );
    gauge(
        &mut registry,
        "live_subscriptions",
        "Subscriptions being polled",
        count(state.live.subscriber_count()),
    );
    gauge(
        &mut registry,
        "live_query_groups",
        "Groups of subscriptions sharing one statement",
        count(state.live.group_count()),
    );
    let events = &state.events;
    counter(
        &mut registry,
        "events_delivered",
        "Event deliveries answered 2xx",
        get(&events.delivered),
    );
    counter(
        &mut registry,
        "events_failed_attempts",
        "Event delivery attempts that failed (non-2xx, timeout, unreachable)",
        get(&events.failed_attempts),
    );
    counter(
        &mut registry,
        "events_errors",
        "Events whose attempts ran out (state error)",
        get(&events.errors),
    );
    gauge(
        &mut registry,
        "events_in_flight",
        "Event deliveries running in this process",
        i64::try_from(get(&events.in_flight)).unwrap_or(i64::MAX),
    );
    if let Some(pending) = events_pending {
        gauge(
            &mut registry,
            "events_pending",
            "Events waiting for delivery, all replicas (retries included)",
            pending,
        );
    }
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry)?;
    Ok(text)
}
