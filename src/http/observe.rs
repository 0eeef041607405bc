//! The router layer that observes every request: its log line (`finished processing request`,
//! with the request's fields from [`RequestLog`]), its counts and latency in the metrics, and,
//! when traces are exported or logs are pretty, its `tracing` span.
//!
//! One layer does all three so a request is timed once. The request's fields live in a
//! task-local value rather than a span: see [`crate::telemetry::request`] for why.

use crate::metrics::{api_of, RequestLabels};
use crate::state::AppState;
use crate::telemetry::request::{request_spans, RequestLog};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use std::borrow::Cow;
use std::fmt;
use std::time::{Duration, Instant};
use tracing::Instrument;

/// Runs the request inside its [`RequestLog`] (and span), then logs and counts its answer.
pub async fn observe(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let api = api_of(request.uri().path());
    let started = Instant::now();
    let log = RequestLog::of(&request);
    let span = if request_spans() {
        span_of(&request)
    } else {
        tracing::Span::none()
    };
    let answered = async move {
        tracing::debug!("started processing request");
        let response = next.run(request).await;
        let elapsed = started.elapsed();
        let latency = Millis(elapsed);
        let status = response.status().as_u16();
        tracing::info!(%latency, status, "finished processing request");
        if response.status().is_server_error() {
            tracing::error!(%latency, status, "response failed");
        }
        (response, elapsed)
    };
    let ((response, elapsed), log) = log.scope(answered.instrument(span)).await;
    let operation = log
        .and_then(|log| log.operation())
        .unwrap_or(Cow::Borrowed("none"));
    let labels = RequestLabels {
        api,
        operation,
        status: response.status().as_u16(),
    };
    state.metrics.record(&labels, elapsed);
    response
}

/// The request's span: named `request` in logs, `METHOD /path` in exported traces, whose
/// parent is the client's `traceparent` when it sent one.
fn span_of(request: &Request) -> tracing::Span {
    let request_id = request
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let span = tracing::info_span!(
        "request",
        method = %request.method(),
        path = %request.uri().path(),
        request_id,
        role = tracing::field::Empty,
        operation = tracing::field::Empty,
        "otel.name" = tracing::field::Empty,
        "otel.kind" = tracing::field::Empty
    );
    if crate::telemetry::tracing_enabled() {
        span.record(
            "otel.name",
            format!("{} {}", request.method(), request.uri().path()),
        );
        span.record("otel.kind", "server");
        crate::telemetry::accept_parent(&span, request.headers());
    }
    span
}

/// A duration written in milliseconds with microsecond precision (`0.412 ms`).
struct Millis(Duration);

impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let micros = self.0.as_micros();
        write!(f, "{}.{:03} ms", micros / 1000, micros % 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::Millis;
    use std::time::Duration;

    #[test]
    fn latency_is_milliseconds_to_the_microsecond() {
        assert_eq!(
            Millis(Duration::from_nanos(412_999)).to_string(),
            "0.412 ms"
        );
        assert_eq!(
            Millis(Duration::from_micros(12_005)).to_string(),
            "12.005 ms"
        );
        assert_eq!(Millis(Duration::ZERO).to_string(), "0.000 ms");
    }
}
