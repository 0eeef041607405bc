//! The event log in `basalt_catalog` (`docs/events.md`): its tables, the helper the capture
//! triggers call, and the statements the metadata transaction runs on it (archiving the events
//! of triggers that go away, recording a manual event, rearming one for delivery). The
//! delivery workers' own statements are in `crate::events::store`.

use super::CatalogError;
use crate::metadata::types::QualifiedTable;
use serde_json::Value;
use tokio_postgres::Transaction;

/// The channel capture triggers and event operations notify, waking the delivery workers.
pub const EVENTS_CHANNEL: &str = "basalt_events";

/// Catalog migration: the event log, the invocation log, and the capture helper.
pub(super) const MIGRATION: &str = r#"
    CREATE TABLE basalt_catalog.event_log (
        id            text PRIMARY KEY DEFAULT gen_random_uuid()::text,
        schema_name   text NOT NULL,
        table_name    text NOT NULL,
        trigger_name  text NOT NULL,
        payload       jsonb NOT NULL,
        delivered     boolean NOT NULL DEFAULT false,
        error         boolean NOT NULL DEFAULT false,
        tries         integer NOT NULL DEFAULT 0,
        created_at    timestamp DEFAULT (now() AT TIME ZONE 'utc'),
        locked        timestamptz,
        next_retry_at timestamp,
        archived      boolean NOT NULL DEFAULT false
    );
    -- The workers' queue: undelivered events in capture order.
    CREATE INDEX event_log_pending ON basalt_catalog.event_log (created_at)
        WHERE delivered = false AND error = false AND archived = false;
    CREATE INDEX event_log_trigger ON basalt_catalog.event_log (trigger_name);
    CREATE TABLE basalt_catalog.event_invocation_logs (
        id           text PRIMARY KEY DEFAULT gen_random_uuid()::text,
        event_id     text REFERENCES basalt_catalog.event_log (id) ON DELETE CASCADE,
        trigger_name text,
        status       integer,
        request      json,
        response     json,
        created_at   timestamp DEFAULT (now() AT TIME ZONE 'utc')
    );
    CREATE INDEX event_invocation_logs_event ON basalt_catalog.event_invocation_logs (event_id);
    CREATE INDEX event_invocation_logs_created ON basalt_catalog.event_invocation_logs (created_at);

    -- Called by every capture trigger: one row per change, with the session of the Basalt
    -- request that made it (NULL from elsewhere) and its trace context.
    CREATE FUNCTION basalt_catalog.insert_event_log(
        schema_name text, table_name text, trigger_name text, op text, row_data json
    ) RETURNS text LANGUAGE plpgsql AS $$
    DECLARE
        event_id text := gen_random_uuid()::text;
        session json := nullif(current_setting('basalt.user', true), '')::json;
        trace json := nullif(current_setting('basalt.tracecontext', true), '')::json;
    BEGIN
        INSERT INTO basalt_catalog.event_log (id, schema_name, table_name, trigger_name, payload)
        VALUES (event_id, schema_name, table_name, trigger_name,
                jsonb_build_object('op', op, 'data', row_data,
                                   'session_variables', session, 'trace_context', trace));
        PERFORM pg_notify('basalt_events', '');
        RETURN event_id;
    END
    $$;
"#;

/// Archives the undelivered events of the triggers named `gone`.
pub async fn archive(tx: &Transaction<'_>, gone: &[String]) -> Result<(), CatalogError> {
    tx.execute(
        "UPDATE basalt_catalog.event_log SET archived = true
         WHERE trigger_name = ANY($1) AND delivered = false AND archived = false",
        &[&gone],
    )
    .await?;
    Ok(())
}

/// Records an event for trigger `name` on `table` with `payload`, and wakes the workers;
/// answers its id.
pub async fn record(
    tx: &Transaction<'_>,
    table: &QualifiedTable,
    name: &str,
    payload: &Value,
) -> Result<String, CatalogError> {
    let row = tx
        .query_one(
            "INSERT INTO basalt_catalog.event_log (schema_name, table_name, trigger_name, payload)
             VALUES ($1, $2, $3, $4) RETURNING id",
            &[&table.schema, &table.name, &name, payload],
        )
        .await?;
    notify(tx).await?;
    Ok(row.try_get(0)?)
}

/// An event that may be delivered again, locked for this transaction: its trigger, and
/// whether a worker holds it now.
#[derive(Debug)]
pub struct Redeliverable {
    pub trigger: String,
    pub being_delivered: bool,
}

/// The event `id`, locked, unless it is unknown or archived.
pub async fn lock_event(
    tx: &Transaction<'_>,
    id: &str,
) -> Result<Option<Redeliverable>, CatalogError> {
    let row = tx
        .query_opt(
            "SELECT trigger_name, locked IS NOT NULL FROM basalt_catalog.event_log
             WHERE id = $1 AND archived = false FOR UPDATE",
            &[&id],
        )
        .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    Ok(Some(Redeliverable {
        trigger: row.try_get(0)?,
        being_delivered: row.try_get(1)?,
    }))
}

/// Makes the event `id` due for delivery again, its tries forgotten, and wakes the workers.
pub async fn rearm(tx: &Transaction<'_>, id: &str) -> Result<(), CatalogError> {
    tx.execute(
        "UPDATE basalt_catalog.event_log
         SET delivered = false, error = false, tries = 0, next_retry_at = NULL
         WHERE id = $1",
        &[&id],
    )
    .await?;
    notify(tx).await
}

async fn notify(tx: &Transaction<'_>) -> Result<(), CatalogError> {
    tx.execute("SELECT pg_notify($1, '')", &[&EVENTS_CHANNEL])
        .await?;
    Ok(())
}
