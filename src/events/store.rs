//! The workers' statements on the event log: claim a batch under a lease, renew the leases of
//! events in flight, record outcomes (in batches), give events back, and clean up old rows.
//! Every value is a parameter.

use serde_json::Value;
use tokio_postgres::GenericClient;

/// An event claimed for delivery.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub id: String,
    /// Table schema.
    pub schema: String,
    /// Table name.
    pub table: String,
    pub trigger: String,
    /// `{"op","data","session_variables","trace_context"}`.
    pub payload: Value,
    /// Attempts before this one.
    pub tries: i32,
    /// Capture time, ISO-8601 UTC with microseconds.
    pub created_at: String,
}

/// Claims up to `limit` pending events of `triggers`, oldest first, skipping those other
/// workers hold; a claim whose lease (`lease_seconds`) ran out is taken over.
pub async fn claim(
    client: &impl GenericClient,
    triggers: &[String],
    limit: i64,
    lease_seconds: f64,
) -> Result<Vec<Claimed>, tokio_postgres::Error> {
    let rows = client
        .query(
            "UPDATE basalt_catalog.event_log e SET locked = now()
             FROM (SELECT id FROM basalt_catalog.event_log
                   WHERE delivered = false AND error = false AND archived = false
                     AND (locked IS NULL OR locked < now() - make_interval(secs => $3))
                     AND (next_retry_at IS NULL OR next_retry_at <= (now() AT TIME ZONE 'utc'))
                     AND trigger_name = ANY($1)
                   ORDER BY created_at
                   LIMIT $2
                   FOR UPDATE SKIP LOCKED) AS c
             WHERE e.id = c.id
             RETURNING e.id, e.schema_name, e.table_name, e.trigger_name, e.payload, e.tries,
                       to_char(e.created_at, 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')",
            &[&triggers, &limit, &lease_seconds],
        )
        .await?;
    rows.iter()
        .map(|r| {
            Ok(Claimed {
                id: r.try_get(0)?,
                schema: r.try_get(1)?,
                table: r.try_get(2)?,
                trigger: r.try_get(3)?,
                payload: r.try_get(4)?,
                tries: r.try_get(5)?,
                created_at: r.try_get::<_, Option<String>>(6)?.unwrap_or_default(),
            })
        })
        .collect()
}

/// What became of one attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Delivered (2xx).
    Delivered,
    /// Try again after this many seconds.
    Retry(f64),
    /// Attempts exhausted: the event is in error.
    Failed,
}

/// One attempt's record: the event's next state and its invocation log row.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub event_id: String,
    pub trigger: String,
    /// HTTP status, or 1000 without a response.
    pub status: i32,
    /// `{"payload","headers","version"}`.
    pub request: Value,
    /// `{"type","data","version"}`.
    pub response: Value,
    /// The event's next state.
    pub next: Next,
}

/// Records attempts: the events' new state and their invocation logs, in one transaction.
pub async fn record(
    client: &mut tokio_postgres::Client,
    attempts: &[Attempt],
) -> Result<(), tokio_postgres::Error> {
    let ids: Vec<&str> = attempts.iter().map(|a| a.event_id.as_str()).collect();
    let delivered: Vec<bool> = attempts.iter().map(|a| a.next == Next::Delivered).collect();
    let failed: Vec<bool> = attempts.iter().map(|a| a.next == Next::Failed).collect();
    let delays: Vec<Option<f64>> = attempts
        .iter()
        .map(|a| match a.next {
            Next::Retry(seconds) => Some(seconds),
            _ => None,
        })
        .collect();
    let triggers: Vec<&str> = attempts.iter().map(|a| a.trigger.as_str()).collect();
    let statuses: Vec<i32> = attempts.iter().map(|a| a.status).collect();
    let requests: Vec<&Value> = attempts.iter().map(|a| &a.request).collect();
    let responses: Vec<&Value> = attempts.iter().map(|a| &a.response).collect();
    let tx = client.transaction().await?;
    tx.execute(
        "UPDATE basalt_catalog.event_log e
         SET delivered = o.delivered, error = o.failed, tries = e.tries + 1, locked = NULL,
             next_retry_at = CASE WHEN o.delay IS NULL THEN NULL
                             ELSE (now() AT TIME ZONE 'utc') + make_interval(secs => o.delay) END
         FROM unnest($1::text[], $2::bool[], $3::bool[], $4::float8[]) AS o(id, delivered, failed, delay)
         WHERE e.id = o.id",
        &[&ids, &delivered, &failed, &delays],
    )
    .await?;
    tx.execute(
        "INSERT INTO basalt_catalog.event_invocation_logs (event_id, trigger_name, status, request, response)
         SELECT o.event_id, o.trigger_name, o.status, o.request, o.response
         FROM unnest($1::text[], $2::text[], $3::int4[], $4::json[], $5::json[])
              AS o(event_id, trigger_name, status, request, response)
         WHERE EXISTS (SELECT 1 FROM basalt_catalog.event_log e WHERE e.id = o.event_id)",
        &[&ids, &triggers, &statuses, &requests, &responses],
    )
    .await?;
    tx.commit().await
}

/// Renews the leases of events still in flight.
pub async fn renew(
    client: &impl GenericClient,
    ids: &[String],
) -> Result<u64, tokio_postgres::Error> {
    client
        .execute(
            "UPDATE basalt_catalog.event_log SET locked = now()
             WHERE id = ANY($1) AND locked IS NOT NULL AND delivered = false",
            &[&ids],
        )
        .await
}

/// Gives events back (a shutdown that could not finish them): pending again at once.
pub async fn release(
    client: &impl GenericClient,
    ids: &[String],
) -> Result<u64, tokio_postgres::Error> {
    client
        .execute(
            "UPDATE basalt_catalog.event_log SET locked = NULL
             WHERE id = ANY($1) AND delivered = false",
            &[&ids],
        )
        .await
}

/// Advisory-lock key making one replica at a time run the cleanup ("events" in ASCII).
const CLEANUP_LOCK: i64 = 0x6576_656e_7473;

/// Deletes invocation logs, and delivered or archived events, older than `hours`; returns
/// how many events went. Events in error stay until someone redelivers or drops them.
pub async fn clean_up(
    client: &mut tokio_postgres::Client,
    hours: f64,
) -> Result<u64, tokio_postgres::Error> {
    let tx = client.transaction().await?;
    let locked: bool = tx
        .query_one("SELECT pg_try_advisory_xact_lock($1)", &[&CLEANUP_LOCK])
        .await?
        .try_get(0)?;
    if !locked {
        return Ok(0);
    }
    tx.execute(
        "DELETE FROM basalt_catalog.event_invocation_logs
         WHERE created_at < (now() AT TIME ZONE 'utc') - make_interval(hours => $1::float8::int)",
        &[&hours],
    )
    .await?;
    let deleted = tx
        .execute(
            "DELETE FROM basalt_catalog.event_log
             WHERE (delivered OR archived)
               AND created_at < (now() AT TIME ZONE 'utc') - make_interval(hours => $1::float8::int)",
            &[&hours],
        )
        .await?;
    tx.commit().await?;
    Ok(deleted)
}
