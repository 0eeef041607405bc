//! The subscription metrics recorded as pollers run (`docs/operations.md`): cohorts run and
//! skipped, why the due ones ran, statements, and the time from a change notification to the
//! message it caused, each by kind (`live` or `stream`).

use super::due::Reason;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

/// `live` or `stream`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabels {
    pub kind: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PollLabels {
    kind: &'static str,
    /// `run` or `skipped`.
    result: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    kind: &'static str,
    reason: &'static str,
}

/// The families, shared with each scrape's registry.
#[derive(Debug, Clone)]
pub struct SubscriptionMetrics {
    polls: Family<PollLabels, Counter>,
    reasons: Family<ReasonLabels, Counter>,
    statements: Family<KindLabels, Counter>,
    change_to_push: Family<KindLabels, Histogram>,
}

impl Default for SubscriptionMetrics {
    fn default() -> Self {
        SubscriptionMetrics {
            polls: Family::default(),
            reasons: Family::default(),
            statements: Family::default(),
            // 1 ms … about 33 s.
            change_to_push: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.001, 2.0, 16))
            }),
        }
    }
}

/// The kind label of a group: streams have a cursor.
pub fn kind(stream: bool) -> &'static str {
    match stream {
        true => "stream",
        false => "live",
    }
}

impl SubscriptionMetrics {
    /// One poll's cohorts: `skipped` not due, and one run for each reason in `ran`.
    pub fn polled(&self, kind: &'static str, skipped: u64, ran: &[Reason]) {
        let result = |result| PollLabels { kind, result };
        self.polls.get_or_create(&result("skipped")).inc_by(skipped);
        self.polls
            .get_or_create(&result("run"))
            .inc_by(ran.len() as u64);
        for reason in ran {
            let labels = ReasonLabels {
                kind,
                reason: reason.label(),
            };
            self.reasons.get_or_create(&labels).inc();
        }
    }

    /// Statements a poller ran.
    pub fn statements(&self, kind: &'static str, n: u64) {
        self.statements
            .get_or_create(&KindLabels { kind })
            .inc_by(n);
    }

    /// A message written `seconds` after the change notification that caused it arrived.
    pub fn pushed(&self, kind: &'static str, seconds: f64) {
        self.change_to_push
            .get_or_create(&KindLabels { kind })
            .observe(seconds);
    }

    /// Registers the families in a scrape's registry.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "subscription_cohort_polls",
            "Cohorts of live queries and streams at each poller tick, by kind and result (run or skipped)",
            self.polls.clone(),
        );
        registry.register(
            "subscription_poll_reasons",
            "Why due cohorts ran, by kind and the first reason that held",
            self.reasons.clone(),
        );
        registry.register(
            "subscription_statements",
            "SQL statements issued by subscription pollers, by kind",
            self.statements.clone(),
        );
        registry.register(
            "subscription_change_to_push_seconds",
            "From receiving a change notification to writing the message it caused, by kind",
            self.change_to_push.clone(),
        );
    }
}
