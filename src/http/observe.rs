//! The router layer that observes every request: its `X-Request-Id` (the client's, or one
//! made here, set on the request and copied to the response), its log line (`finished
//! processing request`, with the request's fields from [`RequestLog`]), its counts and latency
//! in the metrics, and, when traces are exported or logs are pretty, its `tracing` span.
//!
//! One layer does all of it so a request is timed once. The request's fields live in a
//! task-local value rather than a span: see [`crate::telemetry::request`] for why.

use crate::metrics::{api_of, RequestLabels};
use crate::state::AppState;
use crate::telemetry::request::{request_spans, RequestLog};
use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue};
use axum::response::Response;
use std::borrow::Cow;
use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::io::Write as _;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tower::{Layer, Service};
use tracing::Instrument;

/// The request id header: a client's is kept, otherwise one is made; either way it is on the
/// request before anything logs and on the response.
const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Wraps a service (the whole application, see [`super::app`]) in [`Observe`].
#[derive(Debug, Clone)]
pub struct ObserveLayer {
    state: AppState,
}

impl ObserveLayer {
    /// Observation recorded into `state`'s metrics.
    pub fn new(state: AppState) -> Self {
        ObserveLayer { state }
    }
}

impl<S> Layer<S> for ObserveLayer {
    type Service = Observe<S>;

    fn layer(&self, inner: S) -> Observe<S> {
        Observe {
            state: self.state.clone(),
            inner,
        }
    }
}

/// The service that observes each request (see the module's documentation). One hand-written
/// service rather than a `from_fn` middleware and two request-id layers: those box the inner
/// service per request and each puts the id into an extension map.
#[derive(Debug, Clone)]
pub struct Observe<S> {
    state: AppState,
    inner: S,
}

impl<S> Service<Request> for Observe<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // The service made ready by `poll_ready` handles this request; a clone stays for the
        // next one.
        let ready = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, ready);
        Box::pin(observe(self.state.clone(), request, inner))
    }
}

/// Runs the request inside its [`RequestLog`] (and span), then logs and counts its answer.
async fn observe<S>(
    state: AppState,
    mut request: Request,
    mut inner: S,
) -> Result<Response, Infallible>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    let api = api_of(request.uri().path());
    let started = Instant::now();
    let id = match request.headers().get(REQUEST_ID) {
        Some(id) => Some(id.clone()),
        None => new_request_id().inspect(|id| {
            request.headers_mut().insert(REQUEST_ID, id.clone());
        }),
    };
    let log = RequestLog::of(&request);
    let span = if request_spans() {
        span_of(&request)
    } else {
        tracing::Span::none()
    };
    let answered = async move {
        tracing::debug!("started processing request");
        let Ok(response) = inner.call(request).await;
        let elapsed = started.elapsed();
        let latency = Millis(elapsed);
        let status = response.status().as_u16();
        tracing::info!(%latency, status, "finished processing request");
        if response.status().is_server_error() {
            tracing::error!(%latency, status, "response failed");
        }
        (response, elapsed)
    };
    let ((mut response, elapsed), log) = log.scope(answered.instrument(span)).await;
    let operation = log
        .and_then(|log| log.operation())
        .unwrap_or(Cow::Borrowed("none"));
    let labels = RequestLabels {
        api,
        operation,
        status: response.status().as_u16(),
    };
    state.metrics.record(&labels, elapsed);
    if let Some(id) = id {
        response.headers_mut().entry(REQUEST_ID).or_insert(id);
    }
    Ok(response)
}

static REQUEST_IDS: AtomicU64 = AtomicU64::new(1);

/// A request id for a request that came without one: the time, the process and a counter, in
/// hex (`0187a3…-00001f2c-0000002a`).
fn new_request_id() -> Option<HeaderValue> {
    static PROCESS: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    let process = *PROCESS.get_or_init(std::process::id);
    let n = REQUEST_IDS.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    // Formatted on the stack, then copied once into the header's bytes (`format!` would grow
    // a string as it goes): 16 + 1 + 8 + 1 + 16 digits at most.
    let mut text = [0u8; 48];
    let mut rest = &mut text[..];
    write!(rest, "{:016x}-{process:08x}-{n:08x}", nanos as u64).ok()?;
    let written = 48 - rest.len();
    HeaderValue::from_bytes(&text[..written]).ok()
}

/// The request's span: named `request` in logs, `METHOD /path` in exported traces, whose
/// parent is the client's `traceparent` when it sent one.
fn span_of(request: &Request) -> tracing::Span {
    let request_id = request
        .headers()
        .get(REQUEST_ID)
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
