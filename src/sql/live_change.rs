//! The DDL and catalog reads of change detection for live queries and streams: one
//! statement-level trigger per covered table, `basalt_live_change`, calling
//! `basalt_catalog.notify_basalt_live_change()`, which sends the table's OID on the channel
//! `basalt_live_change`. Names are quoted; DDL takes no parameters.

use super::quote::{quote_ident, quote_qualified};
use crate::names::QualifiedName;

/// The trigger's name on every covered table, and the notification channel.
pub const NAME: &str = "basalt_live_change";

/// `CREATE OR REPLACE FUNCTION basalt_catalog.notify_basalt_live_change()`.
pub const FUNCTION: &str = "CREATE OR REPLACE FUNCTION basalt_catalog.notify_basalt_live_change() \
     RETURNS trigger LANGUAGE plpgsql AS \
     $$ BEGIN PERFORM pg_notify('basalt_live_change', TG_RELID::text); RETURN NULL; END $$";

/// Serializes the replicas that install triggers at the same moment (one transaction each).
pub const LOCK: &str = "SELECT pg_advisory_xact_lock(hashtext('basalt_live_change'))";

/// How long an installation waits for a table's lock (a busy table is tried again at a later
/// schema build).
pub const LOCK_TIMEOUT: &str = "SET LOCAL lock_timeout = '2s'";

/// The transaction's own lock wait again, once a trigger change is done.
pub const DEFAULT_LOCK_TIMEOUT: &str = "SET LOCAL lock_timeout TO DEFAULT";

/// Each change runs in a savepoint, so a refused one leaves the others.
pub const SAVEPOINT: &str = "SAVEPOINT basalt_live_change";
pub const RELEASE_SAVEPOINT: &str = "RELEASE SAVEPOINT basalt_live_change";
pub const ROLLBACK_SAVEPOINT: &str = "ROLLBACK TO SAVEPOINT basalt_live_change";

/// The fallback check: given the OIDs of the tables the engine believes covered (`$1`), the
/// notification queue's usage (0 to 1) and those of them whose trigger is missing or does not
/// fire always.
pub const RECHECK: &str = "SELECT pg_catalog.pg_notification_queue_usage(),
       COALESCE(array_agg(w.oid) FILTER (WHERE tg.tgenabled IS DISTINCT FROM 'A'), '{}')
FROM unnest($1::oid[]) AS w(oid)
LEFT JOIN pg_catalog.pg_trigger tg ON tg.tgrelid = w.oid AND tg.tgname = 'basalt_live_change'";

/// The statements putting the trigger on `table`, firing also for replication apply workers.
pub fn create(table: &QualifiedName) -> [String; 2] {
    let table = quote_qualified(&table.schema, &table.name);
    let name = quote_ident(NAME);
    [
        format!(
            "CREATE TRIGGER {name} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table} \
             FOR EACH STATEMENT EXECUTE PROCEDURE basalt_catalog.notify_basalt_live_change()"
        ),
        enable(&table),
    ]
}

/// `ALTER TABLE … ENABLE ALWAYS TRIGGER "basalt_live_change"` for an already quoted table.
fn enable(quoted_table: &str) -> String {
    format!(
        "ALTER TABLE {quoted_table} ENABLE ALWAYS TRIGGER {}",
        quote_ident(NAME)
    )
}

/// Re-enables the trigger of `table` so that it fires always.
pub fn enable_always(table: &QualifiedName) -> String {
    enable(&quote_qualified(&table.schema, &table.name))
}

/// Removes the trigger from `table`, if it is there.
pub fn drop(table: &QualifiedName) -> String {
    format!(
        "DROP TRIGGER IF EXISTS {} ON {}",
        quote_ident(NAME),
        quote_qualified(&table.schema, &table.name)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_quoted() {
        let table = QualifiedName::new("my schema", "t\"x");
        let [create, enable] = create(&table);
        assert_eq!(
            create,
            "CREATE TRIGGER \"basalt_live_change\" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON \"my schema\".\"t\"\"x\" FOR EACH STATEMENT EXECUTE PROCEDURE basalt_catalog.notify_basalt_live_change()"
        );
        assert_eq!(
            enable,
            "ALTER TABLE \"my schema\".\"t\"\"x\" ENABLE ALWAYS TRIGGER \"basalt_live_change\""
        );
        assert_eq!(
            drop(&table),
            "DROP TRIGGER IF EXISTS \"basalt_live_change\" ON \"my schema\".\"t\"\"x\""
        );
    }
}
