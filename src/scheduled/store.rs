//! The scheduled-event worker's statements (`docs/scheduled-triggers.md`, "Delivery"): claim
//! due events under a lease (`FOR UPDATE SKIP LOCKED`, a lease that ran out taken over),
//! renew and give back claims, record outcomes with their invocation logs, count what is due
//! and upcoming, and clean up. The worker's clock is bound into every statement as `now`
//! (`NULL`: the database's `now()`, so every replica reads the same clock). A claim carries a
//! lease id: only the worker holding it records, renews or gives the event back, so a worker
//! whose lease ran out cannot overwrite what the next holder did.

use crate::catalog::scheduled::EventTable;
use chrono::{DateTime, Utc};
use serde_json::Value;
use tokio_postgres::GenericClient;

/// A claimed event: what its delivery needs.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub id: String,
    pub table: EventTable,
    /// The claim's lease id.
    pub lease: String,
    /// The cron trigger (cron events).
    pub trigger: Option<String>,
    pub scheduled_time: DateTime<Utc>,
    /// The instant of the claim (the clock's reading).
    pub claimed_at: DateTime<Utc>,
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
    now: Option<DateTime<Utc>>,
    lease_seconds: f64,
    limit: i64,
) -> Result<Vec<Claimed>, tokio_postgres::Error> {
    let rows = client
        .query(
            "WITH clock AS (SELECT coalesce($2::timestamptz, now()) AS now)
             UPDATE basalt_catalog.cron_events e
             SET status = 'locked', locked_at = clock.now, lease_id = gen_random_uuid()::text
             FROM clock, (SELECT id FROM basalt_catalog.cron_events, clock
                   WHERE trigger_name = ANY($1)
                     AND ((status = 'scheduled' AND coalesce(next_retry_at, scheduled_time) <= clock.now)
                       OR (status = 'locked' AND locked_at < clock.now - make_interval(secs => $3)))
                   ORDER BY coalesce(next_retry_at, scheduled_time)
                   LIMIT $4
                   FOR UPDATE OF cron_events SKIP LOCKED) AS c
             WHERE e.id = c.id
             RETURNING e.id, e.lease_id, e.trigger_name, e.scheduled_time, e.tries, clock.now",
            &[&triggers, &now, &lease_seconds, &limit],
        )
        .await?;
    rows.iter()
        .map(|r| {
            Ok(Claimed {
                id: r.try_get(0)?,
                table: EventTable::Cron,
                lease: r.try_get(1)?,
                trigger: Some(r.try_get(2)?),
                scheduled_time: r.try_get(3)?,
                tries: r.try_get(4)?,
                claimed_at: r.try_get(5)?,
                definition: None,
            })
        })
        .collect()
}

/// Claims up to `limit` due one-off events (oldest due first), and those whose lease ran out.
pub async fn claim_one_off(
    client: &impl GenericClient,
    now: Option<DateTime<Utc>>,
    lease_seconds: f64,
    limit: i64,
) -> Result<Vec<Claimed>, tokio_postgres::Error> {
    let rows = client
        .query(
            "WITH clock AS (SELECT coalesce($1::timestamptz, now()) AS now)
             UPDATE basalt_catalog.scheduled_events e
             SET status = 'locked', locked_at = clock.now, lease_id = gen_random_uuid()::text
             FROM clock, (SELECT id FROM basalt_catalog.scheduled_events, clock
                   WHERE (status = 'scheduled' AND coalesce(next_retry_at, scheduled_time) <= clock.now)
                      OR (status = 'locked' AND locked_at < clock.now - make_interval(secs => $2))
                   ORDER BY coalesce(next_retry_at, scheduled_time)
                   LIMIT $3
                   FOR UPDATE OF scheduled_events SKIP LOCKED) AS c
             WHERE e.id = c.id
             RETURNING e.id, e.lease_id, e.scheduled_time, e.tries, e.webhook_conf, e.retry_conf,
                       e.payload, e.header_conf, e.comment, e.created_at, clock.now",
            &[&now, &lease_seconds, &limit],
        )
        .await?;
    rows.iter()
        .map(|r| {
            Ok(Claimed {
                id: r.try_get(0)?,
                table: EventTable::OneOff,
                lease: r.try_get(1)?,
                trigger: None,
                scheduled_time: r.try_get(2)?,
                tries: r.try_get(3)?,
                claimed_at: r.try_get(10)?,
                definition: Some(OneOffDefinition {
                    webhook: r.try_get(4)?,
                    retry_conf: r.try_get(5)?,
                    payload: r.try_get(6)?,
                    headers: r.try_get(7)?,
                    comment: r.try_get(8)?,
                    created_at: r.try_get(9)?,
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
    /// The lease it was claimed under.
    pub lease: String,
    /// The cron trigger of a cron event.
    pub trigger: Option<String>,
    pub next: Next,
    /// HTTP status, or 1000 without a response.
    pub status: i32,
    pub request: Value,
    pub response: Value,
}

/// The update recording outcomes in event table `$events` (one statement text per table,
/// fixed at compile time).
macro_rules! record_update {
    ($events:literal) => {
        concat!(
            "WITH clock AS (SELECT coalesce($6::timestamptz, now()) AS now)
             UPDATE ",
            $events,
            " e
             SET status = o.status, tries = e.tries + o.attempted::int, locked_at = NULL,
                 lease_id = NULL,
                 next_retry_at = CASE WHEN o.delay IS NULL THEN NULL
                                 ELSE clock.now + make_interval(secs => o.delay) END,
                 finished_at = CASE WHEN o.status = 'scheduled' THEN NULL ELSE clock.now END
             FROM clock, unnest($1::text[], $2::text[], $3::text[], $4::float8[], $5::bool[])
                  AS o(id, lease, status, delay, attempted)
             WHERE e.id = o.id AND e.lease_id = o.lease AND e.status = 'locked'"
        )
    };
}

/// The insert of the invocation logs (`$logs`) of the attempts made on events of `$events`.
macro_rules! record_log {
    ($logs:literal, $events:literal) => {
        concat!(
            "INSERT INTO ",
            $logs,
            " (event_id, status, request, response)
             SELECT o.id, o.status, o.request, o.response
             FROM unnest($1::text[], $2::int4[], $3::json[], $4::json[], $5::bool[])
                  AS o(id, status, request, response, attempted)
             WHERE o.attempted AND EXISTS (SELECT 1 FROM ",
            $events,
            " e WHERE e.id = o.id)"
        )
    };
}

/// Records outcomes of one table, each only while its claim still holds the event: the
/// events' new state (tries counted unless dead, `finished_at` for a final state), and the
/// invocation logs of the attempts made, in one transaction.
pub async fn record(
    client: &mut tokio_postgres::Client,
    table: EventTable,
    outcomes: &[&Outcome],
    now: Option<DateTime<Utc>>,
) -> Result<(), tokio_postgres::Error> {
    let ids: Vec<&str> = outcomes.iter().map(|o| o.id.as_str()).collect();
    let leases: Vec<&str> = outcomes.iter().map(|o| o.lease.as_str()).collect();
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
            record_update!("basalt_catalog.cron_events"),
            record_log!(
                "basalt_catalog.cron_event_invocation_logs",
                "basalt_catalog.cron_events"
            ),
        ),
        EventTable::OneOff => (
            record_update!("basalt_catalog.scheduled_events"),
            record_log!(
                "basalt_catalog.scheduled_event_invocation_logs",
                "basalt_catalog.scheduled_events"
            ),
        ),
    };
    let tx = client.transaction().await?;
    tx.execute(
        update,
        &[&ids, &leases, &statuses, &delays, &attempted, &now],
    )
    .await?;
    tx.execute(insert, &[&ids, &codes, &requests, &responses, &attempted])
        .await?;
    tx.commit().await
}

/// Renews the leases of claims still held, `(id, lease)` pairs.
pub async fn renew(
    client: &impl GenericClient,
    table: EventTable,
    held: &[(String, String)],
    now: Option<DateTime<Utc>>,
) -> Result<u64, tokio_postgres::Error> {
    let (ids, leases): (Vec<&str>, Vec<&str>) =
        held.iter().map(|(i, l)| (i.as_str(), l.as_str())).unzip();
    let sql = match table {
        EventTable::Cron => {
            "UPDATE basalt_catalog.cron_events e SET locked_at = coalesce($3::timestamptz, now())
             FROM unnest($1::text[], $2::text[]) AS h(id, lease)
             WHERE e.id = h.id AND e.lease_id = h.lease AND e.status = 'locked'"
        }
        EventTable::OneOff => {
            "UPDATE basalt_catalog.scheduled_events e SET locked_at = coalesce($3::timestamptz, now())
             FROM unnest($1::text[], $2::text[]) AS h(id, lease)
             WHERE e.id = h.id AND e.lease_id = h.lease AND e.status = 'locked'"
        }
    };
    client.execute(sql, &[&ids, &leases, &now]).await
}

/// Gives claims still held back (a shutdown that could not finish them): due again at once.
pub async fn release(
    client: &impl GenericClient,
    table: EventTable,
    held: &[(String, String)],
) -> Result<u64, tokio_postgres::Error> {
    let (ids, leases): (Vec<&str>, Vec<&str>) =
        held.iter().map(|(i, l)| (i.as_str(), l.as_str())).unzip();
    let sql = match table {
        EventTable::Cron => {
            "UPDATE basalt_catalog.cron_events e SET status = 'scheduled', locked_at = NULL, lease_id = NULL
             FROM unnest($1::text[], $2::text[]) AS h(id, lease)
             WHERE e.id = h.id AND e.lease_id = h.lease AND e.status = 'locked'"
        }
        EventTable::OneOff => {
            "UPDATE basalt_catalog.scheduled_events e SET status = 'scheduled', locked_at = NULL, lease_id = NULL
             FROM unnest($1::text[], $2::text[]) AS h(id, lease)
             WHERE e.id = h.id AND e.lease_id = h.lease AND e.status = 'locked'"
        }
    };
    client.execute(sql, &[&ids, &leases]).await
}

/// How many events of each table are due (cron ones of `triggers` only).
pub async fn due(
    client: &impl GenericClient,
    triggers: &[String],
    now: Option<DateTime<Utc>>,
) -> Result<(i64, i64), tokio_postgres::Error> {
    let row = client
        .query_one(
            "WITH clock AS (SELECT coalesce($2::timestamptz, now()) AS now)
             SELECT (SELECT count(*) FROM basalt_catalog.cron_events, clock
                     WHERE status = 'scheduled' AND trigger_name = ANY($1)
                       AND coalesce(next_retry_at, scheduled_time) <= clock.now),
                    (SELECT count(*) FROM basalt_catalog.scheduled_events, clock
                     WHERE status = 'scheduled' AND coalesce(next_retry_at, scheduled_time) <= clock.now)",
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

/// Deletes finished events (delivered, error, dead) and invocation logs older than `hours`;
/// returns how many events went.
pub async fn clean_up(
    client: &mut tokio_postgres::Client,
    hours: f64,
    now: Option<DateTime<Utc>>,
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
         WHERE created_at < coalesce($2::timestamptz, now()) - make_interval(secs => $1::float8 * 3600)",
        "DELETE FROM basalt_catalog.scheduled_event_invocation_logs
         WHERE created_at < coalesce($2::timestamptz, now()) - make_interval(secs => $1::float8 * 3600)",
    ] {
        tx.execute(sql, &[&hours, &now]).await?;
    }
    for sql in [
        "DELETE FROM basalt_catalog.cron_events
         WHERE status IN ('delivered', 'error', 'dead')
           AND finished_at < coalesce($2::timestamptz, now()) - make_interval(secs => $1::float8 * 3600)",
        "DELETE FROM basalt_catalog.scheduled_events
         WHERE status IN ('delivered', 'error', 'dead')
           AND finished_at < coalesce($2::timestamptz, now()) - make_interval(secs => $1::float8 * 3600)",
    ] {
        deleted += tx.execute(sql, &[&hours, &now]).await?;
    }
    tx.commit().await?;
    Ok(deleted)
}

/// One look of the planner, in a transaction that holds the catalog's version steady (a
/// metadata write waits for it): when the version is still `version`, the events of cron
/// triggers the metadata no longer has (`known`: those it has) are deleted, unless held by a
/// live claim; answers the clock's reading, or `None` when the catalog moved on (the next
/// look plans against the new one).
pub async fn planning<'a>(
    tx: &tokio_postgres::Transaction<'a>,
    version: i64,
    known: &[String],
    now: Option<DateTime<Utc>>,
    lease_seconds: f64,
) -> Result<Option<DateTime<Utc>>, tokio_postgres::Error> {
    let row = tx
        .query_one(
            "SELECT resource_version::bigint, coalesce($1::timestamptz, now())
             FROM basalt_catalog.metadata WHERE id = 1 FOR SHARE",
            &[&now],
        )
        .await?;
    let (current, now): (i64, DateTime<Utc>) = (row.try_get(0)?, row.try_get(1)?);
    if current != version {
        return Ok(None);
    }
    tx.execute(
        "DELETE FROM basalt_catalog.cron_horizons WHERE trigger_name <> ALL($1)",
        &[&known],
    )
    .await?;
    tx.execute(
        "DELETE FROM basalt_catalog.cron_events
         WHERE trigger_name <> ALL($1)
           AND (status = 'scheduled' OR (status = 'locked' AND locked_at < $2::timestamptz - make_interval(secs => $3)))",
        &[&known, &now, &lease_seconds],
    )
    .await?;
    Ok(Some(now))
}
