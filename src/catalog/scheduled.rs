//! Scheduled events in `basalt_catalog` (`docs/scheduled-triggers.md`, "Storage"): cron
//! events (generated ahead from their triggers, one row per instant) and one-off events, each
//! with its invocation log, and the statements the metadata transaction runs on them. The
//! delivery workers' own statements are in `crate::scheduled::store`. Every value is a
//! parameter; the two tables are named by [`EventTable`], never by input.

use super::CatalogError;
use crate::metadata::types::CronTriggerEntry;
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Value};
use tokio_postgres::GenericClient;

/// Catalog migration: the two event tables and their invocation logs.
pub(super) const MIGRATION: &str = r#"
    CREATE TABLE basalt_catalog.cron_events (
        id             text PRIMARY KEY DEFAULT gen_random_uuid()::text,
        trigger_name   text NOT NULL,
        scheduled_time timestamptz NOT NULL,
        status         text NOT NULL DEFAULT 'scheduled'
            CHECK (status IN ('scheduled', 'locked', 'delivered', 'error', 'dead')),
        tries          integer NOT NULL DEFAULT 0,
        created_at     timestamptz NOT NULL DEFAULT now(),
        next_retry_at  timestamptz,
        locked_at      timestamptz,
        -- The claim holding it: only its worker records, renews or gives it back.
        lease_id       text,
        -- When it reached delivered, error or dead: what retention counts from.
        finished_at    timestamptz,
        UNIQUE (trigger_name, scheduled_time)
    );
    CREATE INDEX cron_events_due ON basalt_catalog.cron_events
        (status, coalesce(next_retry_at, scheduled_time));
    CREATE TABLE basalt_catalog.scheduled_events (
        id             text PRIMARY KEY DEFAULT gen_random_uuid()::text,
        webhook_conf   json NOT NULL,
        scheduled_time timestamptz NOT NULL,
        retry_conf     json NOT NULL,
        payload        json,
        header_conf    json NOT NULL DEFAULT '[]',
        status         text NOT NULL DEFAULT 'scheduled'
            CHECK (status IN ('scheduled', 'locked', 'delivered', 'error', 'dead')),
        tries          integer NOT NULL DEFAULT 0,
        created_at     timestamptz NOT NULL DEFAULT now(),
        next_retry_at  timestamptz,
        comment        text,
        locked_at      timestamptz,
        lease_id       text,
        finished_at    timestamptz
    );
    CREATE INDEX scheduled_events_due ON basalt_catalog.scheduled_events
        (status, coalesce(next_retry_at, scheduled_time));
    CREATE TABLE basalt_catalog.cron_event_invocation_logs (
        id         text PRIMARY KEY DEFAULT gen_random_uuid()::text,
        event_id   text REFERENCES basalt_catalog.cron_events (id) ON DELETE CASCADE,
        status     integer,
        request    json,
        response   json,
        created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX cron_event_invocation_logs_event
        ON basalt_catalog.cron_event_invocation_logs (event_id);
    CREATE TABLE basalt_catalog.scheduled_event_invocation_logs (
        id         text PRIMARY KEY DEFAULT gen_random_uuid()::text,
        event_id   text REFERENCES basalt_catalog.scheduled_events (id) ON DELETE CASCADE,
        status     integer,
        request    json,
        response   json,
        created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX scheduled_event_invocation_logs_event
        ON basalt_catalog.scheduled_event_invocation_logs (event_id);
"#;

/// Catalog migration: how far each cron trigger has been planned, so that an event deleted
/// by `delete_scheduled_event` is not planned again.
pub(super) const HORIZON_MIGRATION: &str = r#"
    CREATE TABLE basalt_catalog.cron_horizons (
        trigger_name  text PRIMARY KEY,
        planned_until timestamptz NOT NULL
    );
"#;

/// The table of one kind of scheduled event, with its invocation log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventTable {
    Cron,
    OneOff,
}

impl EventTable {
    pub fn events(self) -> &'static str {
        match self {
            EventTable::Cron => "basalt_catalog.cron_events",
            EventTable::OneOff => "basalt_catalog.scheduled_events",
        }
    }

    pub fn invocations(self) -> &'static str {
        match self {
            EventTable::Cron => "basalt_catalog.cron_event_invocation_logs",
            EventTable::OneOff => "basalt_catalog.scheduled_event_invocation_logs",
        }
    }
}

/// A timestamp as answers write it: RFC 3339 in UTC with `Z`, fractional seconds only when
/// there are any.
pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// Inserts the cron events of `trigger` at `times`; an instant it has already is skipped, so
/// replicas generating at once insert each instant once. Returns how many were new.
pub async fn insert_cron_events(
    client: &impl GenericClient,
    trigger: &str,
    times: &[DateTime<Utc>],
) -> Result<u64, CatalogError> {
    if times.is_empty() {
        return Ok(0);
    }
    let row = client
        .query_one(
            "WITH inserted AS (
                 INSERT INTO basalt_catalog.cron_events (trigger_name, scheduled_time)
                 SELECT $1, t FROM unnest($2::timestamptz[]) AS t
                 ON CONFLICT (trigger_name, scheduled_time) DO NOTHING RETURNING 1),
             planned AS (
                 INSERT INTO basalt_catalog.cron_horizons (trigger_name, planned_until)
                 SELECT $1, max(t) FROM unnest($2::timestamptz[]) AS t
                 ON CONFLICT (trigger_name) DO UPDATE
                 SET planned_until = greatest(cron_horizons.planned_until, EXCLUDED.planned_until))
             SELECT count(*) FROM inserted",
            &[&trigger, &times],
        )
        .await?;
    Ok(u64::try_from(row.try_get::<_, i64>(0)?).unwrap_or(0))
}

/// Deletes the events of `trigger` still waiting: every one, or with `after`, only those
/// planned after it and never attempted; its planning starts over. Returns how many went.
pub async fn delete_waiting_cron_events(
    client: &impl GenericClient,
    trigger: &str,
    after: Option<DateTime<Utc>>,
) -> Result<u64, CatalogError> {
    let row = client
        .query_one(
            "WITH deleted AS (
                 DELETE FROM basalt_catalog.cron_events
                 WHERE trigger_name = $1 AND status = 'scheduled'
                   AND ($2::timestamptz IS NULL OR (scheduled_time > $2 AND tries = 0))
                 RETURNING 1),
             forgotten AS (DELETE FROM basalt_catalog.cron_horizons WHERE trigger_name = $1)
             SELECT count(*) FROM deleted",
            &[&trigger, &after],
        )
        .await?;
    Ok(u64::try_from(row.try_get::<_, i64>(0)?).unwrap_or(0))
}

/// The latest instant `trigger` was planned to (an event deleted since included), and how
/// many of its events wait after `now`.
pub async fn cron_horizon(
    client: &impl GenericClient,
    trigger: &str,
    now: DateTime<Utc>,
) -> Result<(Option<DateTime<Utc>>, i64), CatalogError> {
    let row = client
        .query_one(
            "SELECT greatest(max(scheduled_time),
                             (SELECT planned_until FROM basalt_catalog.cron_horizons
                              WHERE trigger_name = $1)),
                    count(*) FILTER (WHERE status = 'scheduled' AND scheduled_time > $2)
             FROM basalt_catalog.cron_events WHERE trigger_name = $1",
            &[&trigger, &now],
        )
        .await?;
    Ok((row.try_get(0)?, row.try_get(1)?))
}

/// How many upcoming events every cron trigger keeps.
pub const UPCOMING: usize = 100;

/// Tops `trigger` up to [`UPCOMING`] events after `now`, continuing after its latest one.
pub async fn generate(
    client: &impl GenericClient,
    trigger: &CronTriggerEntry,
    now: DateTime<Utc>,
) -> Result<u64, CatalogError> {
    let Ok(schedule) = crate::cron::Schedule::parse(&trigger.schedule) else {
        return Ok(0);
    };
    let (latest, upcoming) = cron_horizon(client, &trigger.name, now).await?;
    let wanted = UPCOMING.saturating_sub(usize::try_from(upcoming).unwrap_or(UPCOMING));
    if wanted == 0 {
        return Ok(0);
    }
    let from = latest.filter(|l| *l > now).unwrap_or(now);
    let times = schedule.upcoming(from, wanted);
    insert_cron_events(client, &trigger.name, &times).await
}

/// A one-off event to insert.
pub struct OneOff<'a> {
    pub webhook: &'a str,
    pub at: DateTime<Utc>,
    pub retry_conf: Value,
    pub payload: Option<&'a Value>,
    pub headers: Value,
    pub comment: Option<&'a str>,
}

/// Inserts a one-off event; returns its id.
pub async fn insert_one_off(
    client: &impl GenericClient,
    event: &OneOff<'_>,
) -> Result<String, CatalogError> {
    let webhook = Value::String(event.webhook.to_owned());
    let row = client
        .query_one(
            "INSERT INTO basalt_catalog.scheduled_events
                 (webhook_conf, scheduled_time, retry_conf, payload, header_conf, comment)
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
            &[
                &webhook,
                &event.at,
                &event.retry_conf,
                &event.payload,
                &event.headers,
                &event.comment,
            ],
        )
        .await?;
    Ok(row.try_get(0)?)
}

/// What deleting an event found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deleted {
    Deleted,
    Missing,
    /// A worker holds it.
    Locked,
}

/// Deletes an event (its invocation logs go with it) unless a worker holds it.
pub async fn delete_event(
    client: &impl GenericClient,
    table: EventTable,
    id: &str,
) -> Result<Deleted, CatalogError> {
    let sql = match table {
        EventTable::Cron => {
            "WITH e AS (SELECT id, status FROM basalt_catalog.cron_events WHERE id = $1 FOR UPDATE),
                  d AS (DELETE FROM basalt_catalog.cron_events c USING e
                        WHERE c.id = e.id AND e.status <> 'locked' RETURNING c.id)
             SELECT e.status, (SELECT count(*) FROM d) FROM e"
        }
        EventTable::OneOff => {
            "WITH e AS (SELECT id, status FROM basalt_catalog.scheduled_events WHERE id = $1 FOR UPDATE),
                  d AS (DELETE FROM basalt_catalog.scheduled_events c USING e
                        WHERE c.id = e.id AND e.status <> 'locked' RETURNING c.id)
             SELECT e.status, (SELECT count(*) FROM d) FROM e"
        }
    };
    let rows = client.query(sql, &[&id]).await?;
    Ok(match rows.first() {
        None => Deleted::Missing,
        Some(row) if row.try_get::<_, i64>(1)? == 0 => Deleted::Locked,
        Some(_) => Deleted::Deleted,
    })
}

/// Which rows a listing reads.
pub struct Filter<'a> {
    pub trigger: Option<&'a str>,
    pub event_id: Option<&'a str>,
    pub statuses: &'a [String],
    pub limit: Option<i64>,
    pub offset: i64,
}

/// The events of `table` matching `filter`, oldest first (`scheduled_time`, then id), each
/// as `get_scheduled_events` answers it, and how many match in all.
pub async fn list_events(
    client: &impl GenericClient,
    table: EventTable,
    filter: &Filter<'_>,
) -> Result<(Vec<Value>, i64), CatalogError> {
    let sql = match table {
        EventTable::Cron => {
            "SELECT id, scheduled_time, status, tries, created_at, next_retry_at, trigger_name,
                    NULL::json, NULL::json, NULL::json, NULL::json, NULL::text,
                    count(*) OVER ()
             FROM basalt_catalog.cron_events
             WHERE trigger_name = $1 AND (cardinality($2::text[]) = 0 OR status = ANY($2))
             ORDER BY scheduled_time, id LIMIT $3 OFFSET $4"
        }
        EventTable::OneOff => {
            "SELECT id, scheduled_time, status, tries, created_at, next_retry_at, NULL::text,
                    webhook_conf, retry_conf, payload, header_conf, comment,
                    count(*) OVER ()
             FROM basalt_catalog.scheduled_events
             WHERE $1::text IS NULL AND (cardinality($2::text[]) = 0 OR status = ANY($2))
             ORDER BY scheduled_time, id LIMIT $3 OFFSET $4"
        }
    };
    let rows = client
        .query(
            sql,
            &[
                &filter.trigger,
                &filter.statuses,
                &filter.limit,
                &filter.offset,
            ],
        )
        .await?;
    let mut total = 0;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        total = r.try_get(12)?;
        let time = |i: usize| -> Result<Value, tokio_postgres::Error> {
            Ok(match r.try_get::<_, Option<DateTime<Utc>>>(i)? {
                Some(t) => Value::String(rfc3339(t)),
                None => Value::Null,
            })
        };
        let mut event = json!({
            "id": r.try_get::<_, String>(0)?,
            "scheduled_time": time(1)?,
            "status": r.try_get::<_, String>(2)?,
            "tries": r.try_get::<_, i32>(3)?,
            "created_at": time(4)?,
            "next_retry_at": time(5)?,
        });
        if let Some(map) = event.as_object_mut() {
            match table {
                EventTable::Cron => {
                    map.insert("trigger_name".into(), json!(r.try_get::<_, String>(6)?));
                }
                EventTable::OneOff => {
                    map.insert("webhook_conf".into(), r.try_get::<_, Value>(7)?);
                    map.insert("retry_conf".into(), r.try_get::<_, Value>(8)?);
                    let payload: Option<Value> = r.try_get(9)?;
                    map.insert("payload".into(), payload.unwrap_or(Value::Null));
                    map.insert("header_conf".into(), r.try_get::<_, Value>(10)?);
                    map.insert("comment".into(), json!(r.try_get::<_, Option<String>>(11)?));
                }
            }
        }
        out.push(event);
    }
    if rows.is_empty() {
        // An empty page (past the end, or `limit: 0`) counts on its own.
        total = count_events(client, table, filter).await?;
    }
    Ok((out, total))
}

async fn count_events(
    client: &impl GenericClient,
    table: EventTable,
    filter: &Filter<'_>,
) -> Result<i64, CatalogError> {
    let sql = match table {
        EventTable::Cron => {
            "SELECT count(*) FROM basalt_catalog.cron_events
             WHERE trigger_name = $1 AND (cardinality($2::text[]) = 0 OR status = ANY($2))"
        }
        EventTable::OneOff => {
            "SELECT count(*) FROM basalt_catalog.scheduled_events
             WHERE $1::text IS NULL AND (cardinality($2::text[]) = 0 OR status = ANY($2))"
        }
    };
    let row = client
        .query_one(sql, &[&filter.trigger, &filter.statuses])
        .await?;
    Ok(row.try_get(0)?)
}

/// The invocations of one event, of a cron trigger's events, or of every one-off event,
/// newest first, and how many match in all.
pub async fn list_invocations(
    client: &impl GenericClient,
    table: EventTable,
    filter: &Filter<'_>,
) -> Result<(Vec<Value>, i64), CatalogError> {
    let sql = match table {
        EventTable::Cron => {
            "SELECT i.id, i.event_id, i.status, i.request, i.response, i.created_at, count(*) OVER ()
             FROM basalt_catalog.cron_event_invocation_logs i
             JOIN basalt_catalog.cron_events e ON e.id = i.event_id
             WHERE ($1::text IS NULL OR i.event_id = $1) AND ($2::text IS NULL OR e.trigger_name = $2)
             ORDER BY i.created_at DESC, i.id LIMIT $3 OFFSET $4"
        }
        EventTable::OneOff => {
            "SELECT i.id, i.event_id, i.status, i.request, i.response, i.created_at, count(*) OVER ()
             FROM basalt_catalog.scheduled_event_invocation_logs i
             WHERE ($1::text IS NULL OR i.event_id = $1) AND $2::text IS NULL
             ORDER BY i.created_at DESC, i.id LIMIT $3 OFFSET $4"
        }
    };
    let rows = client
        .query(
            sql,
            &[
                &filter.event_id,
                &filter.trigger,
                &filter.limit,
                &filter.offset,
            ],
        )
        .await?;
    let mut total = 0;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        total = r.try_get(6)?;
        let created: DateTime<Utc> = r.try_get(5)?;
        out.push(json!({
            "id": r.try_get::<_, String>(0)?,
            "event_id": r.try_get::<_, Option<String>>(1)?,
            "status": r.try_get::<_, Option<i32>>(2)?,
            "request": r.try_get::<_, Option<Value>>(3)?,
            "response": r.try_get::<_, Option<Value>>(4)?,
            "created_at": rfc3339(created),
        }));
    }
    if rows.is_empty() {
        // An empty page (past the end, or `limit: 0`) counts on its own.
        let sql = match table {
            EventTable::Cron => {
                "SELECT count(*) FROM basalt_catalog.cron_event_invocation_logs i
                 JOIN basalt_catalog.cron_events e ON e.id = i.event_id
                 WHERE ($1::text IS NULL OR i.event_id = $1) AND ($2::text IS NULL OR e.trigger_name = $2)"
            }
            EventTable::OneOff => {
                "SELECT count(*) FROM basalt_catalog.scheduled_event_invocation_logs i
                 WHERE ($1::text IS NULL OR i.event_id = $1) AND $2::text IS NULL"
            }
        };
        let row = client
            .query_one(sql, &[&filter.event_id, &filter.trigger])
            .await?;
        total = row.try_get(0)?;
    }
    Ok((out, total))
}
