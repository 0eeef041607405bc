//! Logs and traces. Logs: JSON or pretty, filtered by `RUST_LOG` (default `info`), gathered in
//! a buffer that a background thread writes to stdout in batches ([`lines`]), so a request's
//! log line costs a copy, not a syscall or a wake-up (nothing is dropped: past a bound the
//! logger waits). Traces:
//! OpenTelemetry spans exported over OTLP/HTTP when `BASALT_OTLP_ENDPOINT` is set — the
//! request, GraphQL parse and plan, SQL, catalog work, webhook calls and controller
//! reconciles — with the W3C `traceparent` of a client request taken as the parent and passed
//! on to the webhooks Basalt calls. Without an endpoint nothing of this is installed: the
//! finer spans are `debug` and cost nothing under the default filter.

mod json;
mod lines;
pub mod request;

use crate::config::{LogFormat, OtlpConfig, OtlpProtocol};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// Set once traces are exported; read on every request, so it is an atomic, not a lock.
static TRACING: AtomicBool = AtomicBool::new(false);
static PROPAGATOR: OnceLock<TraceContextPropagator> = OnceLock::new();

/// What traces export to keep until the process ends: [`Telemetry::shutdown`] flushes the
/// spans not yet sent.
#[must_use = "keep it until the process ends, then call shutdown"]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
    /// Flushes the log lines still buffered when dropped.
    logs: Option<lines::LinesGuard>,
}

impl Telemetry {
    /// Sends the spans still buffered and stops the exporter (blocking, so on its own thread).
    pub async fn shutdown(self) {
        drop(self.logs);
        if let Some(provider) = self.provider {
            let flushed = tokio::task::spawn_blocking(move || provider.shutdown()).await;
            if let Ok(Err(e)) = flushed {
                eprintln!("basalt: flushing traces failed: {e}");
            }
        }
    }
}

/// Installs the global subscriber: logs always, the OTLP exporter when `otlp` has an
/// endpoint. Later calls are ignored. A bad exporter setting is reported and traces stay off;
/// it never stops the process.
pub fn init(format: LogFormat, otlp: &OtlpConfig, default_service: &str) -> Telemetry {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let (writer, guard) = match lines::buffered(std::io::stdout()) {
        Ok((writer, guard)) => (writer, Some(guard)),
        Err(e) => {
            // No thread for the writer: lines are written by the thread that logs them.
            eprintln!("basalt: logging without a writer thread: {e}");
            (lines::unbuffered(), None)
        }
    };
    let logs = match format {
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .fmt_fields(json::JsonMembers)
            .event_format(json::JsonLines)
            .with_writer(writer)
            .boxed(),
        LogFormat::Pretty => tracing_subscriber::fmt::layer()
            .pretty()
            .with_writer(writer)
            .boxed(),
    }
    .with_filter(filter);
    let provider = otlp.endpoint.as_deref().and_then(|endpoint| {
        match provider(endpoint, otlp, default_service) {
            Ok(provider) => Some(provider),
            Err(e) => {
                eprintln!("basalt: traces are off: {e}");
                None
            }
        }
    });
    let traces = provider.as_ref().map(|p| {
        tracing_opentelemetry::layer()
            .with_tracer(p.tracer("basalt"))
            .with_filter(EnvFilter::new(&otlp.filter))
    });
    let installed = tracing_subscriber::registry()
        .with(logs)
        .with(traces)
        .try_init()
        .is_ok();
    if installed && provider.is_some() {
        TRACING.store(true, Ordering::Relaxed);
    }
    if installed && (provider.is_some() || matches!(format, LogFormat::Pretty)) {
        request::want_spans();
    }
    Telemetry {
        provider,
        logs: guard.filter(|_| installed),
    }
}

/// The OTLP/HTTP exporter behind a batching provider. Its blocking HTTP client must be built
/// outside the async runtime, hence the thread.
fn provider(
    endpoint: &str,
    otlp: &OtlpConfig,
    default_service: &str,
) -> Result<SdkTracerProvider, String> {
    let base = endpoint.trim_end_matches('/');
    let url = if base.ends_with("/v1/traces") {
        base.to_owned()
    } else {
        format!("{base}/v1/traces")
    };
    let protocol = match otlp.protocol {
        OtlpProtocol::HttpProtobuf => Protocol::HttpBinary,
        OtlpProtocol::HttpJson => Protocol::HttpJson,
    };
    let service = otlp
        .service_name
        .clone()
        .unwrap_or_else(|| default_service.to_owned());
    std::thread::spawn(move || {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(url)
            .with_protocol(protocol)
            .build()
            .map_err(|e| e.to_string())?;
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name(service)
            .build();
        Ok(SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build())
    })
    .join()
    .map_err(|_| "the exporter could not be built".to_owned())?
}

/// Whether spans are exported.
pub fn tracing_enabled() -> bool {
    TRACING.load(Ordering::Relaxed)
}

fn propagator() -> &'static TraceContextPropagator {
    PROPAGATOR.get_or_init(TraceContextPropagator::new)
}

/// Makes the client's W3C trace context (`traceparent`, `tracestate`) the parent of `span`,
/// when traces are exported and the client sent one.
pub fn accept_parent(span: &tracing::Span, headers: &http::HeaderMap) {
    if !tracing_enabled() || !headers.contains_key("traceparent") {
        return;
    }
    let parent = propagator().extract(&opentelemetry_http::HeaderExtractor(headers));
    // Fails only when the span is disabled, and then there is nothing to link.
    let _ = span.set_parent(parent);
}

/// Makes the W3C `traceparent` recorded with an event the parent of `span` (its delivery),
/// when traces are exported.
pub fn accept_traceparent(span: &tracing::Span, traceparent: &str) {
    if !tracing_enabled() {
        return;
    }
    let mut headers = http::HeaderMap::new();
    if let Ok(value) = http::HeaderValue::from_str(traceparent) {
        headers.insert("traceparent", value);
        accept_parent(span, &headers);
    }
}

/// The current span's trace as `{"trace_id","span_id"}` JSON text, for the capture of row
/// changes; `None` when traces are off.
pub fn current_trace_context() -> Option<String> {
    use opentelemetry::trace::TraceContextExt;
    if !tracing_enabled() {
        return None;
    }
    let context = tracing::Span::current().context();
    let span = context.span();
    let ids = span.span_context();
    ids.is_valid().then(|| {
        serde_json::json!({"trace_id": ids.trace_id().to_string(), "span_id": ids.span_id().to_string()})
            .to_string()
    })
}

/// The `traceparent` (and `tracestate`) naming the current span, for a request Basalt makes
/// to a webhook, remote schema or action handler; empty when traces are off.
pub fn outgoing_headers() -> http::HeaderMap {
    let mut headers = http::HeaderMap::new();
    if tracing_enabled() {
        let context = tracing::Span::current().context();
        propagator().inject_context(
            &context,
            &mut opentelemetry_http::HeaderInjector(&mut headers),
        );
    }
    headers
}
