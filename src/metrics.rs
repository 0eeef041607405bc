//! The engine's request metrics: counts by API, operation and status, latencies by API, and
//! the operations rate limits admitted and refused by role, recorded as requests are answered
//! (by the router layer in `http/metrics.rs`, which also writes the whole `GET /metrics`
//! answer from these and what the process already keeps).
//! Every metric is listed in `docs/operations.md`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::borrow::Cow;
use std::time::Duration;

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

/// Labels of a count by role.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RoleLabels {
    pub role: String,
}

/// The metrics recorded as requests happen.
#[derive(Debug, Clone)]
pub struct Metrics {
    requests: Family<RequestLabels, Counter>,
    durations: Family<ApiLabels, Histogram>,
    /// GraphQL operations a rate limit admitted, by role.
    rate_admitted: Family<RoleLabels, Counter>,
    /// GraphQL operations a rate limit refused, by role.
    rate_refused: Family<RoleLabels, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            requests: Family::default(),
            // 100 µs … about 95 s.
            durations: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.0001, 2.5, 16))
            }),
            rate_admitted: Family::default(),
            rate_refused: Family::default(),
        }
    }
}

impl Metrics {
    /// Records one answered request.
    pub fn record(&self, labels: &RequestLabels, took: Duration) {
        self.requests.get_or_create(labels).inc();
        self.durations
            .get_or_create(&ApiLabels { api: labels.api })
            .observe(took.as_secs_f64());
    }

    /// Records `operations` GraphQL operations of `role` that a rate limit admitted or
    /// refused.
    pub fn rate_limited(&self, role: &str, admitted: bool, operations: u64) {
        let family = match admitted {
            true => &self.rate_admitted,
            false => &self.rate_refused,
        };
        let labels = RoleLabels {
            role: role.to_owned(),
        };
        family.get_or_create(&labels).inc_by(operations);
    }

    /// Registers the request counts and latencies in a scrape's registry.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "http_requests",
            "HTTP requests answered, by API, operation and status",
            self.requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "Time to answer an HTTP request, by API",
            self.durations.clone(),
        );
        registry.register(
            "graphql_rate_limit_admitted",
            "GraphQL operations a per-role rate limit admitted, by role",
            self.rate_admitted.clone(),
        );
        registry.register(
            "graphql_rate_limit_refused",
            "GraphQL operations a per-role rate limit refused, by role",
            self.rate_refused.clone(),
        );
    }
}

/// Which API a path belongs to.
pub fn api_of(path: &str) -> &'static str {
    if path.starts_with("/v1/graphql") {
        "graphql"
    } else if path == "/v1/query" {
        "metadata"
    } else {
        "other"
    }
}
