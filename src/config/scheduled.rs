//! Settings of the scheduled-event worker (`docs/scheduled-triggers.md`, "Configuration"),
//! and the clock it reads: the system's, or one a test injects.

use chrono::{DateTime, Utc};
use std::sync::Arc;

/// What the worker takes to be now: the database's `now()` (every replica then agrees), or a
/// clock a test injects. Every instant the worker compares or stores (due events, leases,
/// tolerance, planning) comes from here, bound into its statements.
#[derive(Clone, Default)]
pub struct Clock(Option<Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>>);

impl Clock {
    /// A clock that reads `now` instead of the database.
    pub fn new(now: impl Fn() -> DateTime<Utc> + Send + Sync + 'static) -> Self {
        Clock(Some(Arc::new(now)))
    }

    /// The injected instant; `None`: the database's `now()`.
    pub fn now(&self) -> Option<DateTime<Utc>> {
        self.0.as_ref().map(|now| now())
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            Some(_) => "Clock(injected)",
            None => "Clock(database)",
        })
    }
}

/// Cron triggers and one-off scheduled events. The lease, HTTP pool and retention are the
/// event triggers' settings.
#[derive(Debug, Clone, clap::Args)]
pub struct ScheduledConfig {
    /// Milliseconds between two looks for due scheduled events (cron and one-off).
    #[arg(
        long = "scheduled-events-fetch-interval-ms",
        env = "BASALT_SCHEDULED_EVENTS_FETCH_INTERVAL",
        default_value_t = 1000
    )]
    pub scheduled_poll_interval_ms: u64,
    /// The worker's clock (the database's; tests inject their own).
    #[arg(skip)]
    pub clock: Clock,
}

impl Default for ScheduledConfig {
    fn default() -> Self {
        ScheduledConfig {
            scheduled_poll_interval_ms: 1000,
            clock: Clock::default(),
        }
    }
}
