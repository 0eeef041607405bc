//! The HTTP surface as a client meets it: the envelope of every endpoint (`envelope.rs`), the
//! SQL injection corpus sent through every public API (`injection/`), the request path's work
//! counted (`counters.rs`), and OpenTelemetry traces from the real binary (`traces.rs`).
//! `front.rs` is a TCP front the tests put before their HTTP peers to drop connections.

mod counters;
mod envelope;
pub(crate) mod front;
mod injection;
mod traces;

use crate::harness::TestServer;

/// The `/metrics` text.
pub(crate) async fn metrics_text(s: &TestServer, secret: Option<&str>) -> String {
    let mut request = s.http.get(format!("{}/metrics", s.base));
    if let Some(secret) = secret {
        request = request.header("X-Svc-Admin-Secret", secret);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/openmetrics-text"));
    response.text().await.unwrap()
}

/// The metrics, parsed with a Prometheus text parser, keyed `name{labels}` (labels sorted).
pub(crate) async fn scrape(
    s: &TestServer,
    secret: Option<&str>,
) -> std::collections::BTreeMap<String, f64> {
    let text = metrics_text(s, secret).await;
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap();
    scrape
        .samples
        .into_iter()
        .filter_map(|sample| {
            let value = match sample.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                _ => return None,
            };
            let mut labels: Vec<String> = sample
                .labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            labels.sort();
            Some((format!("{}{{{}}}", sample.metric, labels.join(",")), value))
        })
        .collect()
}
