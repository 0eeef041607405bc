//! The asynchronous actions' log in the catalog (`docs/actions.md`, "Asynchronous actions"):
//! its migration, and `drop_action`'s `clear_data`, run in the request's transaction. The
//! workers' queries live with the workers (`crate::async_actions::store`).

use super::CatalogError;
use tokio_postgres::Transaction;

/// The channel an accepted asynchronous call notifies, waking the action workers.
pub const ACTIONS_CHANNEL: &str = "basalt_actions";

/// Catalog migration: the action log (the columns `docs/actions.md`, "Asynchronous actions",
/// lists for readers of the table, plus the document of the mutation and the time by which a
/// call being processed is certainly over), and the notification that wakes the workers.
pub(super) const MIGRATION: &str = r#"
    CREATE TABLE basalt_catalog.action_log (
        id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        action_name          text,
        input_payload        jsonb NOT NULL,
        request_headers      jsonb NOT NULL,
        session_variables    jsonb NOT NULL,
        response_payload     jsonb,
        errors               jsonb,
        created_at           timestamptz NOT NULL DEFAULT now(),
        response_received_at timestamptz,
        status               text NOT NULL CHECK (status IN ('created','processing','completed','error')),
        request_query        text,
        deadline             timestamptz
    );
    -- The workers' queue, and the calls a crashed engine may have left behind.
    CREATE INDEX action_log_created ON basalt_catalog.action_log (created_at)
        WHERE status = 'created';
    CREATE INDEX action_log_processing ON basalt_catalog.action_log (deadline)
        WHERE status = 'processing';
    CREATE INDEX action_log_name ON basalt_catalog.action_log (action_name);
    CREATE FUNCTION basalt_catalog.notify_actions() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_notify('basalt_actions', '');
        RETURN NULL;
    END
    $$;
    CREATE TRIGGER action_log_accepted AFTER INSERT ON basalt_catalog.action_log
        FOR EACH STATEMENT EXECUTE FUNCTION basalt_catalog.notify_actions();
"#;

/// `drop_action` with `clear_data`: deletes the action's logged calls, whatever their state.
pub async fn clear_log(tx: &Transaction<'_>, action: &str) -> Result<u64, CatalogError> {
    Ok(tx
        .execute(
            "DELETE FROM basalt_catalog.action_log WHERE action_name = $1",
            &[&action],
        )
        .await?)
}
