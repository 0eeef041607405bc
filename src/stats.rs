//! Work counters of one running server: how often the expensive steps actually happen.
//! They prove the performance properties the request path promises (a plan-cache hit neither
//! parses nor plans, schemas are built once per metadata version, statements are prepared
//! once per connection) by counting, not timing. Relaxed atomics: exact totals, no ordering.

use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use std::sync::atomic::{AtomicU64, Ordering};

/// The counters. Cheap to bump from any task.
#[derive(Debug)]
pub struct Counters {
    /// Requests answered from the plan cache.
    pub plan_cache_hits: AtomicU64,
    /// GraphQL documents parsed (one per plan-cache miss).
    pub documents_parsed: AtomicU64,
    /// Operations planned and translated to SQL (one per plan-cache miss).
    pub plans_compiled: AtomicU64,
    /// Metadata versions installed (each one's role schemas are built on first use).
    pub schema_builds: AtomicU64,
    /// Role schemas built (at most once per role, backend flag and installed version).
    pub role_schema_builds: AtomicU64,
    /// Catalog versions read and resolved against the database (at start, after a peer's
    /// change, a poll or a reconnect; never after this process's own writes, whose version
    /// the writer installs).
    pub catalog_reads: AtomicU64,
    /// Database introspections run by `/v1/query` requests (a write starting from the state
    /// this process's previous write left, see [`crate::transaction::LastWrite`], makes none).
    pub metadata_introspections: AtomicU64,
    /// Query statements prepared on a connection (not found in its statement cache).
    pub statements_prepared: AtomicU64,
    /// Multiplexed live-query statements run (each answers up to a batch of subscribers),
    /// counted when their poll ends, with it.
    pub live_statements: AtomicU64,
    /// Polls of a live-query group that had subscribers (each runs one statement per batch),
    /// counted when they end.
    pub live_polls: AtomicU64,
    /// Cohorts of live queries and streams that a tick ran, and that it skipped because
    /// nothing they read had changed.
    pub live_cohorts_run: AtomicU64,
    pub live_cohorts_skipped: AtomicU64,
    /// Statements that answered concurrent requests of one query or insert plan together
    /// (see [`crate::execute::SharedStatement`]).
    pub shared_statements: AtomicU64,
    /// Requests answered by [`Counters::shared_statements`].
    pub shared_requests: AtomicU64,
    /// Requests that waited for a shared statement (those a failed one did not answer ran
    /// alone after it).
    pub shared_waits: AtomicU64,
    /// Requests of a shared statement answered by another request's row: same plan, same
    /// values, same session values.
    pub shared_coalesced: AtomicU64,
    /// Requests that could have waited for a shared statement but ran alone, because sharing
    /// did not pay for their plan.
    pub shared_declined: AtomicU64,
    /// Reads run alone as their plan's multiplexed statement with one row, which Postgres
    /// plans once, because that cost less than the plan's own statement.
    pub alone_multiplexed: AtomicU64,
    /// Statements of the GraphQL path run (each one round trip to Postgres; `BEGIN` and
    /// `COMMIT` not included, see [`Counters::mutation_transactions`]).
    pub statements_run: AtomicU64,
    /// Explicit transactions opened for mutations (a one-statement mutation opens none).
    pub mutation_transactions: AtomicU64,
    /// Introspection documents answered by running them (not from the role's cache).
    pub introspections_run: AtomicU64,
    /// Seconds each SQL statement of the GraphQL path took (prepare, bind, run, rows).
    pub sql_seconds: Histogram,
    /// Seconds each build of a role's GraphQL schema took.
    pub schema_build_seconds: Histogram,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            plan_cache_hits: AtomicU64::new(0),
            documents_parsed: AtomicU64::new(0),
            plans_compiled: AtomicU64::new(0),
            schema_builds: AtomicU64::new(0),
            role_schema_builds: AtomicU64::new(0),
            catalog_reads: AtomicU64::new(0),
            metadata_introspections: AtomicU64::new(0),
            statements_prepared: AtomicU64::new(0),
            live_statements: AtomicU64::new(0),
            live_polls: AtomicU64::new(0),
            live_cohorts_run: AtomicU64::new(0),
            live_cohorts_skipped: AtomicU64::new(0),
            shared_statements: AtomicU64::new(0),
            shared_requests: AtomicU64::new(0),
            shared_waits: AtomicU64::new(0),
            shared_coalesced: AtomicU64::new(0),
            shared_declined: AtomicU64::new(0),
            alone_multiplexed: AtomicU64::new(0),
            statements_run: AtomicU64::new(0),
            mutation_transactions: AtomicU64::new(0),
            introspections_run: AtomicU64::new(0),
            // 100 µs … about 4 s.
            sql_seconds: Histogram::new(exponential_buckets(0.0001, 2.5, 12)),
            // 1 ms … about 16 s.
            schema_build_seconds: Histogram::new(exponential_buckets(0.001, 2.5, 11)),
        }
    }
}

/// A point-in-time copy of [`Counters`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CountersSnapshot {
    /// See [`Counters::plan_cache_hits`].
    pub plan_cache_hits: u64,
    /// See [`Counters::documents_parsed`].
    pub documents_parsed: u64,
    /// See [`Counters::plans_compiled`].
    pub plans_compiled: u64,
    /// See [`Counters::schema_builds`].
    pub schema_builds: u64,
    /// See [`Counters::role_schema_builds`].
    pub role_schema_builds: u64,
    /// See [`Counters::catalog_reads`].
    pub catalog_reads: u64,
    /// See [`Counters::metadata_introspections`].
    pub metadata_introspections: u64,
    /// See [`Counters::statements_prepared`].
    pub statements_prepared: u64,
    /// See [`Counters::live_statements`].
    pub live_statements: u64,
    /// See [`Counters::live_polls`].
    pub live_polls: u64,
    /// See [`Counters::live_cohorts_run`].
    pub live_cohorts_run: u64,
    /// See [`Counters::live_cohorts_skipped`].
    pub live_cohorts_skipped: u64,
    /// See [`Counters::shared_statements`].
    pub shared_statements: u64,
    /// See [`Counters::shared_requests`].
    pub shared_requests: u64,
    /// See [`Counters::shared_waits`].
    pub shared_waits: u64,
    /// See [`Counters::shared_coalesced`].
    pub shared_coalesced: u64,
    /// See [`Counters::shared_declined`].
    pub shared_declined: u64,
    /// See [`Counters::alone_multiplexed`].
    pub alone_multiplexed: u64,
    /// See [`Counters::statements_run`].
    pub statements_run: u64,
    /// See [`Counters::mutation_transactions`].
    pub mutation_transactions: u64,
    /// See [`Counters::introspections_run`].
    pub introspections_run: u64,
}

impl Counters {
    /// Adds one to `counter`.
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The current values.
    pub fn snapshot(&self) -> CountersSnapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        CountersSnapshot {
            plan_cache_hits: get(&self.plan_cache_hits),
            documents_parsed: get(&self.documents_parsed),
            plans_compiled: get(&self.plans_compiled),
            schema_builds: get(&self.schema_builds),
            role_schema_builds: get(&self.role_schema_builds),
            catalog_reads: get(&self.catalog_reads),
            metadata_introspections: get(&self.metadata_introspections),
            statements_prepared: get(&self.statements_prepared),
            live_statements: get(&self.live_statements),
            live_polls: get(&self.live_polls),
            live_cohorts_run: get(&self.live_cohorts_run),
            live_cohorts_skipped: get(&self.live_cohorts_skipped),
            shared_statements: get(&self.shared_statements),
            shared_requests: get(&self.shared_requests),
            shared_waits: get(&self.shared_waits),
            shared_coalesced: get(&self.shared_coalesced),
            shared_declined: get(&self.shared_declined),
            alone_multiplexed: get(&self.alone_multiplexed),
            statements_run: get(&self.statements_run),
            mutation_transactions: get(&self.mutation_transactions),
            introspections_run: get(&self.introspections_run),
        }
    }
}

/// Event-delivery counters of this process's workers (`crate::events`), read by `/metrics`.
#[derive(Debug, Default)]
pub struct EventCounters {
    /// Attempts answered 2xx.
    pub delivered: AtomicU64,
    /// Attempts that failed (non-2xx, timeout, unreachable).
    pub failed_attempts: AtomicU64,
    /// Events whose attempts ran out (state error).
    pub errors: AtomicU64,
    /// Deliveries in flight now.
    pub in_flight: AtomicU64,
}

/// The scheduled-event worker's counts (`crate::scheduled`), read by `/metrics`: events
/// processed by type (`cron`, `one_off`) and outcome (`delivered`, `retry`, `error`, `dead`),
/// and the last look at what is due and upcoming.
#[derive(Debug, Default)]
pub struct ScheduledCounters {
    processed: [[AtomicU64; 4]; 2],
    due: [AtomicU64; 2],
    /// Upcoming events per cron trigger, at the worker's last count.
    upcoming: std::sync::Mutex<Vec<(String, i64)>>,
}

/// The `type` labels of scheduled events.
pub const SCHEDULED_TYPES: [&str; 2] = ["cron", "one_off"];
/// The `outcome` labels of processed scheduled events.
pub const SCHEDULED_OUTCOMES: [&str; 4] = ["delivered", "retry", "error", "dead"];

impl ScheduledCounters {
    /// Counts one processed event of type `kind` (0: cron, 1: one-off) with `outcome` (an
    /// index of [`SCHEDULED_OUTCOMES`]).
    pub fn processed(&self, kind: usize, outcome: usize) {
        if let Some(c) = self.processed.get(kind).and_then(|k| k.get(outcome)) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Processed events by (type, outcome).
    pub fn processed_counts(&self) -> Vec<(&'static str, &'static str, u64)> {
        let mut out = Vec::new();
        for (k, kind) in SCHEDULED_TYPES.iter().enumerate() {
            for (o, outcome) in SCHEDULED_OUTCOMES.iter().enumerate() {
                out.push((*kind, *outcome, get(&self.processed[k][o])));
            }
        }
        out
    }

    pub fn set_due(&self, cron: i64, one_off: i64) {
        self.due[0].store(u64::try_from(cron).unwrap_or(0), Ordering::Relaxed);
        self.due[1].store(u64::try_from(one_off).unwrap_or(0), Ordering::Relaxed);
    }

    /// Due events by type.
    pub fn due_counts(&self) -> [(&'static str, u64); 2] {
        [
            (SCHEDULED_TYPES[0], get(&self.due[0])),
            (SCHEDULED_TYPES[1], get(&self.due[1])),
        ]
    }

    pub fn set_upcoming(&self, counts: Vec<(String, i64)>) {
        *self.upcoming.lock().unwrap_or_else(|p| p.into_inner()) = counts;
    }

    pub fn upcoming_counts(&self) -> Vec<(String, i64)> {
        self.upcoming
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

fn get(value: &AtomicU64) -> u64 {
    value.load(Ordering::Relaxed)
}
