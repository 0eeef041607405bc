//! The workers' statements on the action log: claim accepted calls, store each call's
//! outcome, and close the calls a crashed engine left behind. Every value is a parameter.

use serde_json::{Map, Value};
use tokio_postgres::GenericClient;

/// What is stored for a call that was being made when its engine went away.
pub const INTERRUPTED: &str = "the action was interrupted; it may or may not have run";

/// Seconds added to a handler's timeout before a call being processed counts as abandoned.
const DEADLINE_MARGIN_SECONDS: f64 = 5.0;

/// An accepted asynchronous call, claimed for processing.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub id: String,
    pub action: String,
    /// The arguments.
    pub input: Value,
    /// Client headers kept for the handler.
    pub headers: Map<String, Value>,
    /// The session of the mutation that made the call.
    pub session: Value,
    /// The mutation's document.
    pub document: String,
}

/// Claims up to `limit` accepted calls of the actions in `timeouts` (name → handler timeout
/// in seconds), oldest first, skipping those other workers hold. Each is marked `processing`
/// with the time by which its handler call is certainly over.
pub async fn claim(
    client: &impl GenericClient,
    timeouts: &Map<String, Value>,
    limit: i64,
) -> Result<Vec<Claimed>, tokio_postgres::Error> {
    let names: Vec<String> = timeouts.keys().cloned().collect();
    let timeouts = Value::Object(timeouts.clone());
    let rows = client
        .query(
            "UPDATE basalt_catalog.action_log l
             SET status = 'processing',
                 deadline = now() + make_interval(
                     secs => ($2::jsonb ->> l.action_name)::float8 + $4::float8)
             FROM (SELECT id FROM basalt_catalog.action_log
                   WHERE status = 'created' AND action_name = ANY($1)
                   ORDER BY created_at
                   LIMIT $3
                   FOR UPDATE SKIP LOCKED) AS c
             WHERE l.id = c.id
             RETURNING l.id::text, l.action_name, l.input_payload, l.request_headers,
                       l.session_variables, coalesce(l.request_query, '')",
            &[&names, &timeouts, &limit, &DEADLINE_MARGIN_SECONDS],
        )
        .await?;
    rows.iter()
        .map(|r| {
            let headers: Value = r.try_get(3)?;
            Ok(Claimed {
                id: r.try_get(0)?,
                action: r.try_get(1)?,
                input: r.try_get(2)?,
                headers: match headers {
                    Value::Object(map) => map,
                    _ => Map::new(),
                },
                session: r.try_get(4)?,
                document: r.try_get(5)?,
            })
        })
        .collect()
}

/// Stores a call's outcome: `completed` with the output, or `error` with the stored error.
/// A call the sweep already closed is left as it is (answers `false`).
pub async fn finish(
    client: &impl GenericClient,
    id: &str,
    outcome: &Result<Value, Value>,
) -> Result<bool, tokio_postgres::Error> {
    let (status, output, errors) = match outcome {
        Ok(output) => ("completed", Some(output), None),
        Err(errors) => ("error", None, Some(errors)),
    };
    let n = client
        .execute(
            "UPDATE basalt_catalog.action_log
             SET status = $2, response_payload = $3, errors = $4, response_received_at = now()
             WHERE id = ($1::text)::uuid AND status = 'processing'",
            &[&id, &status, &output, &errors],
        )
        .await?;
    Ok(n == 1)
}

/// Closes the calls whose handler call must be over and that no engine finished (it
/// crashed or was killed): they become `error` with [`INTERRUPTED`]. They are never sent
/// again: the handler may already have acted on them.
pub async fn sweep(client: &impl GenericClient) -> Result<u64, tokio_postgres::Error> {
    client
        .execute(
            "UPDATE basalt_catalog.action_log
             SET status = 'error', response_received_at = now(),
                 errors = jsonb_build_object('path', '$', 'error', $1::text, 'code', 'unexpected')
             WHERE status = 'processing' AND deadline < now()",
            &[&INTERRUPTED],
        )
        .await
}
