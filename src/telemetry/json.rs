//! The JSON log line, written straight into the line buffer.
//!
//! The lines are those of `tracing-subscriber`'s JSON format with flattened events and the
//! current span (`{"timestamp","level","message",<fields>,"target","span":{<fields>,"name"}}`),
//! but written without its detour: that formatter keeps a span's fields as JSON text and, for
//! every line, parses that text back into a tree to serialize it again, and it collects the
//! event's fields into a map first. Every request writes one line, so that detour would be a
//! noticeable share of the engine's CPU on a cheap request. Here the span's JSON object is
//! copied as it is, and the event's fields are escaped straight into the line. Likewise a field
//! recorded on a span after its creation (the request's role and operation) is appended to its
//! JSON object, where `tracing-subscriber`'s `JsonFields` parses and re-serializes the object
//! each time.
//!
//! A line written while an HTTP request is handled names that request as its span: its
//! fields come from the task-local [`super::request::RequestLog`], not from a `tracing` span.

use std::fmt::{self, Write as _};
use tracing::field::{Field, Visit};
use tracing::span::Record;
use tracing::{Event, Subscriber};
use tracing_log::NormalizeEvent;
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// Formats events as one JSON object per line (see the module's documentation).
#[derive(Debug, Default, Clone, Copy)]
pub struct JsonLines;

impl<S> FormatEvent<S, JsonMembers> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, JsonMembers>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let normalized = event.normalized_metadata();
        let meta = normalized.as_ref().unwrap_or_else(|| event.metadata());
        // A request's line is about 350 bytes.
        let mut line = String::with_capacity(512);
        line.push_str("{\"timestamp\":\"");
        SystemTime.format_time(&mut Writer::new(&mut line))?;
        line.push_str("\",\"level\":\"");
        line.push_str(meta.level().as_str());
        line.push('"');
        let mut fields = Fields { line: &mut line };
        event.record(&mut fields);
        line.push_str(",\"target\":");
        string(&mut line, meta.target());
        let request = super::request::with_current(|request| {
            line.push_str(",\"span\":{");
            request.fields(|name, value| {
                string(&mut line, name);
                line.push(':');
                string(&mut line, value);
                line.push(',');
            });
            line.push_str("\"name\":\"request\"}");
        });
        let span = event
            .parent()
            .and_then(|id| ctx.span(id))
            .or_else(|| ctx.lookup_current())
            .filter(|_| request.is_none());
        if let Some(span) = span {
            line.push_str(",\"span\":{");
            let extensions = span.extensions();
            if let Some(recorded) = extensions.get::<FormattedFields<JsonMembers>>() {
                // A span's fields are kept as one JSON object: its members are copied.
                let members = recorded
                    .fields
                    .trim()
                    .strip_prefix('{')
                    .and_then(|rest| rest.strip_suffix('}'))
                    .unwrap_or_default()
                    .trim();
                if !members.is_empty() {
                    line.push_str(members);
                    line.push(',');
                }
            }
            line.push_str("\"name\":");
            string(&mut line, span.name());
            line.push('}');
        }
        line.push_str("}\n");
        writer.write_str(&line)
    }
}

/// Keeps a span's fields as one JSON object (`{"name":value,…}`), for [`JsonLines`].
#[derive(Debug, Default, Clone, Copy)]
pub struct JsonMembers;

impl<'w> FormatFields<'w> for JsonMembers {
    fn format_fields<R: RecordFields>(&self, mut writer: Writer<'w>, fields: R) -> fmt::Result {
        let mut members = String::new();
        fields.record(&mut Fields { line: &mut members });
        writer.write_char('{')?;
        writer.write_str(members.strip_prefix(',').unwrap_or_default())?;
        writer.write_char('}')
    }

    /// Appends the recorded fields to the span's object; a field the object already has is
    /// replaced (the object parsed and written again: fields are recorded once, as a rule).
    fn add_fields(
        &self,
        current: &'w mut FormattedFields<Self>,
        fields: &Record<'_>,
    ) -> fmt::Result {
        let mut members = String::new();
        let mut names = Vec::new();
        fields.record(&mut Names(&mut names));
        fields.record(&mut Fields { line: &mut members });
        let Some(members) = members.strip_prefix(',') else {
            return Ok(());
        };
        let object = current.fields.trim_end();
        let known = names
            .iter()
            .any(|name| object.contains(&format!("\"{name}\":")));
        let Some(open) = object.strip_suffix('}').filter(|_| !known) else {
            let mut merged: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(object).unwrap_or_default();
            let added: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(&format!("{{{members}}}")).map_err(|_| fmt::Error)?;
            merged.extend(added);
            current.fields = serde_json::Value::Object(merged).to_string();
            return Ok(());
        };
        let mut fields = String::with_capacity(open.len() + members.len() + 2);
        fields.push_str(open);
        if open.trim_end() != "{" {
            fields.push(',');
        }
        fields.push_str(members);
        fields.push('}');
        current.fields = fields;
        Ok(())
    }
}

/// Collects the names of the fields a record carries.
struct Names<'a>(&'a mut Vec<&'static str>);

impl Visit for Names<'_> {
    fn record_debug(&mut self, field: &Field, _: &dyn fmt::Debug) {
        self.0.push(field.name());
    }
}

/// Writes an event's fields as `,"name":value` members; the `log.*` fields a `log` record
/// carries are its metadata, shown as such, not as fields.
struct Fields<'a> {
    line: &'a mut String,
}

impl Fields<'_> {
    /// An integer member, written as a JSON number.
    fn number(&mut self, field: &Field, value: impl fmt::Display) {
        if self.key(field) {
            let _ = write!(self.line, "{value}");
        }
    }

    fn key(&mut self, field: &Field) -> bool {
        if field.name().starts_with("log.") {
            return false;
        }
        self.line.push(',');
        string(self.line, field.name());
        self.line.push(':');
        true
    }
}

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if self.key(field) {
            // The text is escaped from a buffer each thread reuses (the message of every
            // line comes this way), not from a new string per field.
            thread_local!(static TEXT: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) });
            let line = &mut *self.line;
            TEXT.with(|text| match text.try_borrow_mut() {
                Ok(mut text) => {
                    text.clear();
                    let _ = write!(text, "{value:?}");
                    string(line, &text);
                    if text.capacity() > 4096 {
                        *text = String::new();
                    }
                }
                // Re-entered (a `Debug` impl that logs): a string of its own.
                Err(_) => string(line, &format!("{value:?}")),
            });
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if self.key(field) {
            string(self.line, value);
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.number(field, value);
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.number(field, value);
    }

    fn record_i128(&mut self, field: &Field, value: i128) {
        self.number(field, value);
    }

    fn record_u128(&mut self, field: &Field, value: u128) {
        self.number(field, value);
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        if self.key(field) {
            match serde_json::Number::from_f64(value) {
                Some(number) => {
                    let _ = write!(self.line, "{number}");
                }
                None => self.line.push_str("null"),
            }
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        if self.key(field) {
            self.line.push_str(if value { "true" } else { "false" });
        }
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        if self.key(field) {
            string(self.line, &value.to_string());
        }
    }
}

/// Appends `text` as a JSON string.
fn string(line: &mut String, text: &str) {
    // Most texts (names, paths, ids, messages) need no escape: copied as they are.
    if !text.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        line.reserve(text.len() + 2);
        line.push('"');
        line.push_str(text);
        line.push('"');
        return;
    }
    // Writing JSON into a `String` cannot fail.
    let _ = serde_json::to_writer(Sink(line), text);
}

/// An `io::Write` over a `String`, for serde_json: it writes a string's JSON in pieces that are
/// each UTF-8 (the text between escapes, and the escapes); any that were not would be
/// replaced, never trusted.
struct Sink<'a>(&'a mut String);

impl std::io::Write for Sink<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        match std::str::from_utf8(bytes) {
            Ok(text) => self.0.push_str(text),
            Err(_) => self.0.push_str(&String::from_utf8_lossy(bytes)),
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};
    use std::sync::{Arc, Mutex};

    /// Lines written by a subscriber, kept for the test.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Captured {
        fn lines(&self) -> Vec<Value> {
            let bytes = self.0.lock().unwrap().clone();
            String::from_utf8(bytes)
                .unwrap()
                .lines()
                .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
                .collect()
        }
    }

    /// What the engine logs, in and out of a request span with fields recorded late.
    fn log_some() {
        tracing::info!("outside any span");
        let span = tracing::info_span!(
            "request",
            method = "POST",
            path = "/v1/graphql",
            role = tracing::field::Empty
        );
        let _entered = span.enter();
        span.record("role", "user \"quoted\"\n");
        // Recorded again: the object keeps one member of that name, the latest value.
        span.record("path", "/v1/graphql/changed");
        tracing::warn!(
            status = 200u16,
            latency_us = -3i64,
            ratio = 0.5f64,
            nan = f64::NAN,
            done = true,
            text = "tab\there",
            "finished {}",
            "request ünïcode"
        );
        let error = std::io::Error::other("boom");
        tracing::error!(
            error = &error as &(dyn std::error::Error + 'static),
            "failed"
        );
    }

    fn without_timestamps(mut lines: Vec<Value>) -> Vec<Value> {
        for line in &mut lines {
            let timestamp = line
                .as_object_mut()
                .and_then(|o| o.remove("timestamp"))
                .unwrap_or_else(|| panic!("no timestamp: {line}"));
            assert!(
                timestamp.as_str().is_some_and(|t| t.ends_with('Z')),
                "{timestamp}"
            );
        }
        lines
    }

    /// A subscriber writing Basalt's lines, and where they go.
    fn ours() -> (Captured, impl tracing::Subscriber + Send + Sync) {
        let ours = Captured::default();
        let subscriber = tracing_subscriber::fmt()
            .fmt_fields(JsonMembers)
            .event_format(JsonLines)
            .with_writer({
                let ours = ours.clone();
                move || ours.clone()
            })
            .finish();
        (ours, subscriber)
    }

    #[test]
    fn lines_equal_those_of_the_stock_json_format() {
        let (ours, subscriber) = ours();
        tracing::subscriber::with_default(subscriber, log_some);

        let stock = Captured::default();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .with_writer({
                let stock = stock.clone();
                move || stock.clone()
            })
            .finish();
        tracing::subscriber::with_default(subscriber, log_some);

        let ours_raw = ours.0.lock().unwrap().clone();
        let ours = without_timestamps(ours.lines());
        assert_eq!(ours, without_timestamps(stock.lines()));
        assert_eq!(ours.len(), 3);
        assert!(ours[0].get("span").is_none(), "{}", ours[0]);
        assert_eq!(
            ours[1]["span"],
            json!({"method": "POST", "path": "/v1/graphql/changed",
                   "role": "user \"quoted\"\n", "name": "request"})
        );
        let raw = String::from_utf8(ours_raw).unwrap();
        let second = raw.lines().nth(1).unwrap_or_default();
        assert_eq!(second.matches("\"path\":").count(), 1, "{second}");
        assert_eq!(ours[1]["message"], "finished request ünïcode");
        assert_eq!(ours[1]["level"], "WARN");
        assert_eq!(ours[1]["nan"], Value::Null);
        assert_eq!(ours[2]["error"], "boom");
    }

    #[tokio::test]
    async fn a_line_logged_while_a_request_is_handled_names_the_request() {
        use crate::telemetry::request::{record_operation, record_role, RequestLog};
        let (ours, subscriber) = ours();
        let _default = tracing::subscriber::set_default(subscriber);
        let request = http::Request::post("/v1/query")
            .header("x-request-id", "id-\"7\"")
            .body(())
            .unwrap();
        RequestLog::of(&request)
            .scope(async {
                tracing::info!("before the role");
                record_role("editor");
                record_operation("export_metadata");
                // A span inside the request does not replace the request as the line's span.
                let inner = tracing::info_span!("inner", kept = 1);
                tracing::warn!(parent: &inner, status = 500u16, "finished processing request");
            })
            .await;
        tracing::info!("after the request");
        let lines = without_timestamps(ours.lines());
        assert_eq!(
            lines[0]["span"],
            json!({"method": "POST", "path": "/v1/query", "request_id": "id-\"7\"",
                   "name": "request"})
        );
        assert_eq!(
            lines[1]["span"],
            json!({"method": "POST", "path": "/v1/query", "request_id": "id-\"7\"",
                   "role": "editor", "operation": "export_metadata", "name": "request"})
        );
        assert_eq!(lines[1]["status"], 500);
        assert!(lines[2].get("span").is_none(), "{}", lines[2]);
        assert_eq!(lines.len(), 3);
    }
}
