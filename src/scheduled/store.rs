//! The scheduled-event worker's statements (`docs/scheduled-triggers.md`, "Delivery"): claim
//! due events under a lease (`FOR UPDATE SKIP LOCKED`, a lease that ran out taken over),
//! renew and give back claims, record outcomes with their invocation logs, count what is due
//! and upcoming, and clean up. The worker's clock is bound into every statement as `now`.

use crate::catalog::scheduled::EventTable;
use chrono::{DateTime, Utc};
use serde_json::Value;
use tokio_postgres::GenericClient;

/// A claimed event: what its delivery needs.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub id: String,
    pub table: EventTable,
    /// The cron trigger (cron events).
    pub trigger: Option<String>,
    pub scheduled_time: DateTime<Utc>,
    /// Attempts before this one.
    pub tries: i32,
    /// One-off events carry their own definition: `{webhook, retry_conf, payload, headers,
    /// comment, created_at}`.
    pub definition: Option<OneOffDefinition>,
}

/// What a one-off event says about its own delivery.
#[derive(Debug, Clone)]
pub struct OneOffDefinition {
    /// The URL template.
    pub webhook: Value,
    pub retry_conf: Value,
    pub payload: Option<Value>,
    pub headers: Value,
    pub comment: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// Claims up to `limit` due cron events of `triggers` (oldest due first), and those whose
/// lease ran out.
pub async fn claim_cron(
    client: &impl GenericClient,
    triggers: &[String],
    now: DateTime<Utc>,
    lease_seconds: f64,
    limit: i64,
) -> Result<Vec<Claimed>, tokio_postgres::Error> {
    let rows = client
        .query(
            "UPDATE basalt_catalog.cron_events e SET status = 'locked', locked_at = $2
             FROM (SELECT id FROM basalt_catalog.cron_events
                   WHERE trigger_name = ANY($1)
                     AND ((status = 'scheduled' AND coalesce(next_retry_at, scheduled_time) <= $2)
                       OR (status = 'locked' AND locked_at < $2 - make_interval(secs => $3)))
                   ORDER BY coalesce(next_retry_at, scheduled_time)
                   LIMIT $4
                   FOR UPDATE SKIP LOCKED) AS c
             WHERE e.id = c.id
             RETURNING e.id, e.trigger_name, e.scheduled_time, e.tries",
            &[&triggers, &now, &lease_seconds, &limit],
        )
        .await?;
    rows.iter()
        .map(|r| {
            Ok(Claimed {
                id: r.try_get(0)?,
                table: EventTable::Cron,
                trigger: Some(r.try_get(1)?),
                scheduled_time: r.try_get(2)?,
                tries: r.try_get(3)?,
                definition: None,
            })
        })
        .collect()
}

/// Claims up to `limit` due one-off events (oldest due first), and those whose lease ran out.
pub async fn claim_one_off(
    client: &impl GenericClient,
    now: DateTime<Utc>,
    lease_seconds: f64,
    limit: i64,
) -> Result<Vec<Claimed>, tokio_postgres::Error> {
    let rows = client
        .query(
            "UPDATE basalt_catalog.scheduled_events e SET status = 'locked', locked_at = $1
             FROM (SELECT id FROM basalt_catalog.scheduled_events
                   WHERE (status = 'scheduled' AND coalesce(next_retry_at, scheduled_time) <= $1)
                      OR (status = 'locked' AND locked_at < $1 - make_interval(secs => $2))
                   ORDER BY coalesce(next_retry_at, scheduled_time)
                   LIMIT $3
                   FOR UPDATE SKIP LOCKED) AS c
             WHERE e.id = c.id
             RETURNING e.id, e.scheduled_time, e.tries, e.webhook_conf, e.retry_conf, e.payload,
                       e.header_conf, e.comment, e.created_at",
            &[&now, &lease_seconds, &limit],
        )
        .await?;
    rows.iter()
        .map(|r| {
            Ok(Claimed {
                id: r.try_get(0)?,
                table: EventTable::OneOff,
                trigger: None,
                scheduled_time: r.try_get(1)?,
                tries: r.try_get(2)?,
                definition: Some(OneOffDefinition {
                    webhook: r.try_get(3)?,
                    retry_conf: r.try_get(4)?,
                    payload: r.try_get(5)?,
                    headers: r.try_get(6)?,
                    comment: r.try_get(7)?,
                    created_at: r.try_get(8)?,
                }),
            })
        })
        .collect()
}

/// What became of one claim.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Next {
    /// A 2xx.
    Delivered,
    /// Scheduled again, after this many seconds.
    Retry(f64),
    /// Attempts exhausted.
    Failed,
    /// Picked up past its tolerance: not sent.
    Dead,
}

impl Next {
    /// The state it leaves the event in, and the `outcome` label of its count.
    pub fn status(self) -> &'static str {
        match self {
            Next::Delivered => "delivered",
            Next::Retry(_) => "scheduled",
            Next::Failed => "error",
            Next::Dead => "dead",
        }
    }
}

/// One claim's outcome, and its invocation log (none for a dead event).
#[derive(Debug, Clone)]
pub struct Outcome {
    pub id: String,
    pub table: EventTable,
    /// The cron trigger of a cron event.
    pub trigger: Option<String>,
    pub next: Next,
    /// HTTP status, or 1000 without a response.
    pub status: i32,
    pub request: Value,
    pub response: Value,
}

/// Records outcomes of one table: the events' new state (tries counted unless dead), and the
/// invocation logs, in one transaction.
pub async fn record(
    client: &mut tokio_postgres::Client,
    table: EventTable,
    outcomes: &[&Outcome],
    now: DateTime<Utc>,
) -> Result<(), tokio_postgres::Error> {
    let ids: Vec<&str> = outcomes.iter().map(|o| o.id.as_str()).collect();
    let statuses: Vec<&str> = outcomes.iter().map(|o| o.next.status()).collect();
    let delays: Vec<Option<f64>> = outcomes
        .iter()
        .map(|o| match o.next {
            Next::Retry(seconds) => Some(seconds),
            _ => None,
        })
        .collect();
    let attempted: Vec<bool> = outcomes.iter().map(|o| o.next != Next::Dead).collect();
    let codes: Vec<i32> = outcomes.iter().map(|o| o.status).collect();
    let requests: Vec<&Value> = outcomes.iter().map(|o| &o.request).collect();
    let responses: Vec<&Value> = outcomes.iter().map(|o| &o.response).collect();
    let (update, insert) = match table {
        EventTable::Cron => (
            "UPDATE basalt_catalog.cron_events e
             SET status = o.status, tries = e.tries + o.attempted::int, locked_at = NULL,
                 next_retry_at = CASE WHEN o.delay IS NULL THEN NULL
                                 ELSE $5::timestamptz + make_interval(secs => o.delay) END
             FROM unnest($1::text[], $2::text[], $3::float8[], $4::bool[])
                  AS o(id, status, delay, attempted)
             WHERE e.id = o.id",
            "INSERT INTO basalt_catalog.cron_event_invocation_logs (event_id, status, request, response)
             SELECT o.id, o.status, o.request, o.response
             FROM unnest($1::text[], $2::int4[], $3::json[], $4::json[], $5::bool[])
                  AS o(id, status, request, response, attempted)
             WHERE o.attempted AND EXISTS (SELECT 1 FROM basalt_catalog.cron_events e WHERE e.id = o.id)",
        ),
        EventTable::OneOff => (
            "UPDATE basalt_catalog.scheduled_events e
             SET status = o.status, tries = e.tries + o.attempted::int, locked_at = NULL,
                 next_retry_at = CASE WHEN o.delay IS NULL THEN NULL
                                 ELSE $5::timestamptz + make_interval(secs => o.delay) END
             FROM unnest($1::text[], $2::text[], $3::float8[], $4::bool[])
                  AS o(id, status, delay, attempted)
             WHERE e.id = o.id",
            "INSERT INTO basalt_catalog.scheduled_event_invocation_logs (event_id, status, request, response)
             SELECT o.id, o.status, o.request, o.response
             FROM unnest($1::text[], $2::int4[], $3::json[], $4::json[], $5::bool[])
                  AS o(id, status, request, response, attempted)
             WHERE o.attempted AND EXISTS (SELECT 1 FROM basalt_catalog.scheduled_events e WHERE e.id = o.id)",
        ),
    };
    let tx = client.transaction().await?;
    tx.execute(update, &[&ids, &statuses, &delays, &attempted, &now])
        .await?;
    tx.execute(insert, &[&ids, &codes, &requests, &responses, &attempted])
        .await?;
    tx.commit().await
}

/// Renews the leases of claims still in flight.
pub async fn renew(
    client: &impl GenericClient,
    table: EventTable,
    ids: &[String],
    now: DateTime<Utc>,
) -> Result<u64, tokio_postgres::Error> {
    let sql = match table {
        EventTable::Cron => {
            "UPDATE basalt_catalog.cron_events SET locked_at = $2
             WHERE id = ANY($1) AND status = 'locked'"
        }
        EventTable::OneOff => {
            "UPDATE basalt_catalog.scheduled_events SET locked_at = $2
             WHERE id = ANY($1) AND status = 'locked'"
        }
    };
    client.execute(sql, &[&ids, &now]).await
}

/// Gives claims back (a shutdown that could not finish them): due again at once.
pub async fn release(
    client: &impl GenericClient,
    table: EventTable,
    ids: &[String],
) -> Result<u64, tokio_postgres::Error> {
    let sql = match table {
        EventTable::Cron => {
            "UPDATE basalt_catalog.cron_events SET status = 'scheduled', locked_at = NULL
             WHERE id = ANY($1) AND status = 'locked'"
        }
        EventTable::OneOff => {
            "UPDATE basalt_catalog.scheduled_events SET status = 'scheduled', locked_at = NULL
             WHERE id = ANY($1) AND status = 'locked'"
        }
    };
    client.execute(sql, &[&ids]).await
}

/// How many events of each table are due at `now` (cron ones of `triggers` only).
pub async fn due(
    client: &impl GenericClient,
    triggers: &[String],
    now: DateTime<Utc>,
) -> Result<(i64, i64), tokio_postgres::Error> {
    let row = client
        .query_one(
            "SELECT (SELECT count(*) FROM basalt_catalog.cron_events
                     WHERE status = 'scheduled' AND trigger_name = ANY($1)
                       AND coalesce(next_retry_at, scheduled_time) <= $2),
                    (SELECT count(*) FROM basalt_catalog.scheduled_events
                     WHERE status = 'scheduled' AND coalesce(next_retry_at, scheduled_time) <= $2)",
            &[&triggers, &now],
        )
        .await?;
    Ok((row.try_get(0)?, row.try_get(1)?))
}

/// How many events of each cron trigger wait after `now`.
pub async fn upcoming(
    client: &impl GenericClient,
    now: DateTime<Utc>,
) -> Result<Vec<(String, i64)>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT trigger_name, count(*) FROM basalt_catalog.cron_events
             WHERE status = 'scheduled' AND scheduled_time > $1 GROUP BY trigger_name",
            &[&now],
        )
        .await?;
    rows.iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
        .collect()
}

/// Advisory-lock key making one replica at a time run the cleanup ("sched" in ASCII).
const CLEANUP_LOCK: i64 = 0x73_6368_6564;

/// Deletes finished events (delivered, error, dead), and invocation logs, older than `hours`
/// before `now`; returns how many events went.
pub async fn clean_up(
    client: &mut tokio_postgres::Client,
    hours: f64,
    now: DateTime<Utc>,
) -> Result<u64, tokio_postgres::Error> {
    let tx = client.transaction().await?;
    let locked: bool = tx
        .query_one("SELECT pg_try_advisory_xact_lock($1)", &[&CLEANUP_LOCK])
        .await?
        .try_get(0)?;
    if !locked {
        return Ok(0);
    }
    let mut deleted = 0;
    for sql in [
        "DELETE FROM basalt_catalog.cron_event_invocation_logs
         WHERE created_at < $2::timestamptz - make_interval(secs => $1 * 3600)",
        "DELETE FROM basalt_catalog.scheduled_event_invocation_logs
         WHERE created_at < $2::timestamptz - make_interval(secs => $1 * 3600)",
    ] {
        tx.execute(sql, &[&hours, &now]).await?;
    }
    for sql in [
        "DELETE FROM basalt_catalog.cron_events
         WHERE status IN ('delivered', 'error', 'dead')
           AND coalesce(next_retry_at, scheduled_time) < $2::timestamptz - make_interval(secs => $1 * 3600)",
        "DELETE FROM basalt_catalog.scheduled_events
         WHERE status IN ('delivered', 'error', 'dead')
           AND coalesce(next_retry_at, scheduled_time) < $2::timestamptz - make_interval(secs => $1 * 3600)",
    ] {
        deleted += tx.execute(sql, &[&hours, &now]).await?;
    }
    tx.commit().await?;
    Ok(deleted)
}
