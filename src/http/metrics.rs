//! `GET /metrics` in the Prometheus text format (written by `prometheus-client`); requests
//! are recorded by the router layer in [`super::observe`]. Request counts and latencies are
//! recorded as requests are answered ([`crate::metrics::Metrics`]); everything else is read
//! when scraped from what the process already keeps: the work counters ([`crate::stats`]),
//! the pool's status, the served catalog version, the live queries and the event workers' counters.
//! Every metric is listed in `docs/operations.md`.

use crate::live::changes::Changes;
use crate::live::observe::KindLabels;
use crate::live::LiveQueries;
use crate::state::AppState;
use crate::stats::{Counters, EventCounters, ScheduledCounters};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::{AtomicU64, Ordering};

/// The metrics in the Prometheus text format; `events_pending` is left out when it could
/// not be read.
pub fn render(
    state: &AppState,
    live: &LiveQueries,
    events_pending: Option<i64>,
) -> Result<String, std::fmt::Error> {
    let mut registry = Registry::with_prefix("basalt");
    state.metrics.register(&mut registry);
    work(&mut registry, &state.counters);
    pool(&mut registry, state.pool.status());
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
        count(served.resolution.inconsistencies.len()),
    );
    sockets(&mut registry, live);
    subscriptions(&mut registry, live, &state.changes);
    events(&mut registry, &state.events, events_pending);
    scheduled(&mut registry, &state.scheduled);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry)?;
    Ok(text)
}

/// A work counter: its name (after `basalt_`), help text and where it is kept.
type WorkCounter = (&'static str, &'static str, fn(&Counters) -> &AtomicU64);

/// The work counters exported as they are.
const WORK_COUNTERS: &[WorkCounter] = &[
    (
        "graphql_plan_cache_hits",
        "GraphQL requests answered with a cached plan",
        |c| &c.plan_cache_hits,
    ),
    (
        "graphql_plan_cache_misses",
        "GraphQL requests that parsed and planned their document",
        |c| &c.plans_compiled,
    ),
    (
        "sql_statements_prepared",
        "Statements prepared on a pooled connection",
        |c| &c.statements_prepared,
    ),
    (
        "mutation_transactions",
        "Explicit transactions opened for mutations (one-statement mutations open none)",
        |c| &c.mutation_transactions,
    ),
    (
        "live_query_statements",
        "Multiplexed live-query statements run",
        |c| &c.live_statements,
    ),
    (
        "live_query_polls",
        "Polls of live-query groups with subscribers (each runs one statement per batch of cohorts)",
        |c| &c.live_polls,
    ),
    (
        "shared_statements",
        "Statements that answered concurrent requests of one query or insert plan together",
        |c| &c.shared_statements,
    ),
    (
        "shared_requests",
        "Requests answered by a statement shared with other requests",
        |c| &c.shared_requests,
    ),
    (
        "shared_waits",
        "Requests that waited for a statement shared with other requests",
        |c| &c.shared_waits,
    ),
    (
        "shared_coalesced",
        "Requests of a shared statement answered by an identical request's row",
        |c| &c.shared_coalesced,
    ),
    (
        "shared_declined",
        "Requests that ran alone because sharing statements did not pay for their query plan",
        |c| &c.shared_declined,
    ),
    (
        "alone_multiplexed",
        "Requests run alone as their query plan's multiplexed statement with one row, which cost less than the plan's own statement",
        |c| &c.alone_multiplexed,
    ),
    (
        "graphql_introspections_run",
        "Introspection documents answered by running them (the rest come from each role's cache)",
        |c| &c.introspections_run,
    ),
    (
        "schema_builds",
        "Metadata versions installed (their role schemas are built on first use)",
        |c| &c.schema_builds,
    ),
    (
        "catalog_reads",
        "Catalog versions read and resolved (a peer's change, a poll, a reconnect)",
        |c| &c.catalog_reads,
    ),
    (
        "metadata_introspections",
        "Database introspections run by /v1/query requests (none when a write starts from the previous one's state)",
        |c| &c.metadata_introspections,
    ),
    (
        "role_schema_builds",
        "Builds of a role's GraphQL schema (at most once per role and metadata version)",
        |c| &c.role_schema_builds,
    ),
];

/// The work counters and the SQL and schema-build durations.
fn work(registry: &mut Registry, c: &Counters) {
    for (name, help, of) in WORK_COUNTERS {
        counter(registry, name, help, get(of(c)));
    }
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
}

/// The database pool.
fn pool(registry: &mut Registry, pool: deadpool_postgres::Status) {
    gauge(
        registry,
        "db_pool_size",
        "Connections the pool holds",
        count(pool.size),
    );
    gauge(
        registry,
        "db_pool_max_size",
        "Connections the pool may hold (--pool-size)",
        count(pool.max_size),
    );
    gauge(
        registry,
        "db_pool_in_use",
        "Connections lent out",
        count(pool.size.saturating_sub(pool.available)),
    );
    gauge(
        registry,
        "db_pool_waiters",
        "Tasks waiting for a connection",
        count(pool.waiting),
    );
}

/// WebSockets and live queries.
fn sockets(registry: &mut Registry, live: &LiveQueries) {
    gauge(
        registry,
        "websocket_connections",
        "Open WebSockets on /v1/graphql",
        count(live.open_sockets()),
    );
    gauge(
        registry,
        "live_subscriptions",
        "Subscriptions being polled",
        count(live.subscriber_count()),
    );
    gauge(
        registry,
        "live_query_groups",
        "Groups of subscriptions sharing one statement",
        count(live.group_count()),
    );
}

/// Subscription polling and its change detection (`docs/graphql.md`, "When subscriptions
/// run").
fn subscriptions(registry: &mut Registry, live: &LiveQueries, changes: &Changes) {
    live.metrics().register(registry);
    counter(
        registry,
        "subscription_change_notifications",
        "Change notifications received from the live-query triggers",
        get(&changes.notifications),
    );
    gauge(
        registry,
        "subscription_listener_up",
        "Whether the session listening for changes is connected (1) or not (0)",
        i64::from(changes.listener_up()),
    );
    counter(
        registry,
        "subscription_listener_reconnects",
        "Times the session listening for changes connected again",
        get(&changes.reconnects),
    );
    let opaque = Family::<KindLabels, Gauge>::default();
    let (live_opaque, stream_opaque) = live.opaque_cohorts();
    for (kind, n) in [("live", live_opaque), ("stream", stream_opaque)] {
        opaque.get_or_create(&KindLabels { kind }).set(count(n));
    }
    registry.register(
        "subscription_opaque_cohorts",
        "Cohorts whose changes cannot be watched (polled every interval), by kind",
        opaque,
    );
    gauge(
        registry,
        "subscription_uncovered_tables",
        "Tables that should carry the change trigger and do not (not owned by the engine's role, locked when it was installed, or disabled since)",
        count(changes.uncovered()),
    );
    let usage = Gauge::<f64, AtomicU64>::default();
    usage.set(changes.queue_usage());
    registry.register(
        "pg_notification_queue_usage",
        "Last sampled pg_notification_queue_usage() (0 to 1)",
        usage,
    );
}

/// Event delivery: this process's counters and the events pending in the database.
fn events(registry: &mut Registry, events: &EventCounters, pending: Option<i64>) {
    counter(
        registry,
        "events_delivered",
        "Event deliveries answered 2xx",
        get(&events.delivered),
    );
    counter(
        registry,
        "events_failed_attempts",
        "Event delivery attempts that failed (non-2xx, timeout, unreachable)",
        get(&events.failed_attempts),
    );
    counter(
        registry,
        "events_errors",
        "Events whose attempts ran out (state error)",
        get(&events.errors),
    );
    gauge(
        registry,
        "events_in_flight",
        "Event deliveries running in this process",
        i64::try_from(get(&events.in_flight)).unwrap_or(i64::MAX),
    );
    if let Some(pending) = pending {
        gauge(
            registry,
            "events_pending",
            "Events waiting for delivery, all replicas (retries included)",
            pending,
        );
    }
}

/// Scheduled events: processed by type and outcome, due now, upcoming per cron trigger.
fn scheduled(registry: &mut Registry, counts: &ScheduledCounters) {
    #[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
    struct Processed {
        r#type: &'static str,
        outcome: &'static str,
    }
    #[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
    struct Type {
        r#type: &'static str,
    }
    #[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
    struct Trigger {
        trigger: String,
    }
    let processed = Family::<Processed, Counter>::default();
    for (kind, outcome, n) in counts.processed_counts() {
        processed
            .get_or_create(&Processed {
                r#type: kind,
                outcome,
            })
            .inc_by(n);
    }
    registry.register(
        "scheduled_events_processed",
        "Scheduled events processed by this process, by type and outcome",
        processed,
    );
    let due = Family::<Type, Gauge>::default();
    for (kind, n) in counts.due_counts() {
        due.get_or_create(&Type { r#type: kind })
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    }
    registry.register(
        "scheduled_events_due",
        "Scheduled events that may be claimed now, at the worker's last look",
        due,
    );
    let upcoming = Family::<Trigger, Gauge>::default();
    for (trigger, n) in counts.upcoming_counts() {
        upcoming.get_or_create(&Trigger { trigger }).set(n);
    }
    registry.register(
        "cron_events_upcoming",
        "Events of each cron trigger waiting for their time, at the worker's last count",
        upcoming,
    );
}

fn get(value: &AtomicU64) -> u64 {
    value.load(Ordering::Relaxed)
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
