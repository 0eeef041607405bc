//! The HTTP request a log line belongs to, kept in a task-local value rather than a `tracing`
//! span.
//!
//! Every request writes one log line, and each line written while a request is handled names
//! the request (`"span":{"method","path","request_id","role","operation","name":"request"}`).
//! A `tracing` span per request could carry those fields, but it costs a noticeable share of
//! the engine's CPU on a cheap query: a slot in the span registry, its fields formatted as JSON
//! text at creation and again for each recorded field, and entering and leaving the span at
//! every poll of the request's future. A task-local value costs a pointer swap per poll, and
//! the line's formatter ([`super::json`]) reads its fields directly.
//!
//! A real span is still made when something reads spans: exported traces (the request's
//! server span, the parent of the spans under it) and the pretty log format, which prints
//! spans. See [`request_spans`].

use http::{HeaderValue, Method, Uri};
use std::borrow::Cow;
use std::cell::RefCell;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};

tokio::task_local! {
    static CURRENT: RequestLog;
}

/// Whether each request also gets a `tracing` span (set once by [`super::init`]).
static SPANS: AtomicBool = AtomicBool::new(false);

/// Makes every request also get a `tracing` span (exported traces or pretty logs read it).
pub(super) fn want_spans() {
    SPANS.store(true, Ordering::Relaxed);
}

/// Whether each request gets a `tracing` span as well as its task-local [`RequestLog`].
pub fn request_spans() -> bool {
    SPANS.load(Ordering::Relaxed)
}

/// What the log lines of one request say about it.
#[derive(Debug)]
pub struct RequestLog {
    method: Method,
    uri: Uri,
    request_id: Option<HeaderValue>,
    recorded: RefCell<Recorded>,
}

/// The fields known only once the request is under way.
#[derive(Debug, Default)]
struct Recorded {
    role: Option<String>,
    operation: Option<Cow<'static, str>>,
}

impl RequestLog {
    /// The request's method, URI and `X-Request-Id` (cloned handles: no copy of their bytes).
    pub fn of<B>(request: &http::Request<B>) -> Self {
        RequestLog {
            method: request.method().clone(),
            uri: request.uri().clone(),
            request_id: request.headers().get("x-request-id").cloned(),
            recorded: RefCell::default(),
        }
    }

    /// Runs `future` as this request: lines logged while it runs name the request. Gives
    /// the request back, with what was recorded on it (always, in practice: `None` would mean
    /// the task-local value had been taken before).
    pub async fn scope<F: Future>(self, future: F) -> (F::Output, Option<RequestLog>) {
        let mut scoped = std::pin::pin!(CURRENT.scope(self, future));
        let output = scoped.as_mut().await;
        (output, scoped.as_mut().take_value())
    }

    /// The operation recorded on the request (see [`record_operation`]), if any.
    pub fn operation(&self) -> Option<Cow<'static, str>> {
        self.recorded
            .try_borrow()
            .ok()
            .and_then(|recorded| recorded.operation.clone())
    }

    /// The fields of the request, in the order they are written: `method`, `path`,
    /// `request_id` (empty when the request has none readable), then `role` and `operation`
    /// once recorded. `write` gets each name and text.
    pub(super) fn fields(&self, mut write: impl FnMut(&'static str, &str)) {
        write("method", self.method.as_str());
        write("path", self.uri.path());
        write(
            "request_id",
            self.request_id
                .as_ref()
                .and_then(|id| id.to_str().ok())
                .unwrap_or_default(),
        );
        // Never borrowed mutably while a line is written; if it were, the line would only
        // lack the two fields rather than the formatter panic.
        let Ok(recorded) = self.recorded.try_borrow() else {
            return;
        };
        if let Some(role) = &recorded.role {
            write("role", role);
        }
        if let Some(operation) = &recorded.operation {
            write("operation", operation);
        }
    }
}

/// Calls `f` with the request being handled, if any (`None` outside a request's task).
pub(super) fn with_current<R>(f: impl FnOnce(&RequestLog) -> R) -> Option<R> {
    CURRENT.try_with(f).ok()
}

/// Records the request's role (and on its span, when it has one).
pub fn record_role(role: &str) {
    let _ = CURRENT.try_with(|log| {
        if let Ok(mut recorded) = log.recorded.try_borrow_mut() {
            recorded.role = Some(role.to_owned());
        }
    });
    if request_spans() {
        tracing::Span::current().record("role", role);
    }
}

/// Records the request's operation (and on its span, when it has one).
pub fn record_operation(operation: impl Into<Cow<'static, str>>) {
    let operation = operation.into();
    if request_spans() {
        tracing::Span::current().record("operation", &*operation);
    }
    let _ = CURRENT.try_with(|log| {
        if let Ok(mut recorded) = log.recorded.try_borrow_mut() {
            recorded.operation = Some(operation);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields_of(log: &RequestLog) -> Vec<(String, String)> {
        let mut out = Vec::new();
        log.fields(|name, value| out.push((name.to_owned(), value.to_owned())));
        out
    }

    #[tokio::test]
    async fn recorded_fields_belong_to_the_request_whose_task_records_them() {
        let request = http::Request::post("/v1/graphql?x=1")
            .header("x-request-id", "abc")
            .body(())
            .unwrap();
        let other = http::Request::get("/healthz").body(()).unwrap();
        let (seen, log) = RequestLog::of(&request)
            .scope(async {
                record_role("user");
                // Another request's scope inside this one does not see this one's role.
                let (inner, inner_log) = RequestLog::of(&other)
                    .scope(async { with_current(fields_of) })
                    .await;
                assert_eq!(inner_log.and_then(|log| log.operation()), None);
                tokio::task::yield_now().await;
                record_operation("query");
                (with_current(fields_of), inner)
            })
            .await;
        // The request comes back with what was recorded on it (the metrics' label).
        assert_eq!(
            log.and_then(|log| log.operation()).as_deref(),
            Some("query")
        );
        let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
            list.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        assert_eq!(
            seen.0.unwrap(),
            pairs(&[
                ("method", "POST"),
                ("path", "/v1/graphql"),
                ("request_id", "abc"),
                ("role", "user"),
                ("operation", "query"),
            ])
        );
        assert_eq!(
            seen.1.unwrap(),
            pairs(&[("method", "GET"), ("path", "/healthz"), ("request_id", "")])
        );
        // Outside any request, nothing is current and recording is a no-op.
        record_role("nobody");
        assert!(with_current(fields_of).is_none());
    }
}
