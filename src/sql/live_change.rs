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

/// Whether the notify function exists (one row if so): it is created only when missing, since
/// replacing it would be DDL at every schema build.
pub const FUNCTION_EXISTS: &str = "SELECT 1 FROM pg_catalog.pg_proc p \
     JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace \
     WHERE n.nspname = 'basalt_catalog' AND p.proname = 'notify_basalt_live_change'";

/// Serializes the replicas that install triggers at the same moment (one transaction each).
pub const LOCK: &str = "SELECT pg_advisory_xact_lock(hashtext('basalt_live_change'))";

/// The tables to cover: the tracked ordinary and partitioned tables given as two arrays
/// (`$1` schemas, `$2` names), every partition and inheritance child below them, and the
/// action log. Per table and tracked table it belongs to (`root`, itself for a tracked table):
/// OID, root OID, schema, name, the trigger's `tgenabled` (`NULL`: no trigger) and whether
/// row-level security is on.
pub const COVERAGE: &str = "WITH RECURSIVE covered AS (
    SELECT c.oid, c.oid AS root
    FROM pg_catalog.pg_class c
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    JOIN unnest($1::text[], $2::text[]) AS w(s, t) ON w.s = n.nspname AND w.t = c.relname
    WHERE c.relkind IN ('r', 'p')
    UNION
    SELECT 'basalt_catalog.action_log'::regclass::oid, 'basalt_catalog.action_log'::regclass::oid
    UNION
    SELECT i.inhrelid, covered.root
    FROM pg_catalog.pg_inherits i JOIN covered ON i.inhparent = covered.oid
)
SELECT c.oid, covered.root, n.nspname::text, c.relname::text, tg.tgenabled::text,
       c.relrowsecurity
FROM covered
JOIN pg_catalog.pg_class c ON c.oid = covered.oid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_catalog.pg_trigger tg ON tg.tgrelid = c.oid AND tg.tgname = 'basalt_live_change'";

/// Every table carrying the trigger now: schema, name.
pub const TRIGGERED: &str = "SELECT n.nspname::text, c.relname::text
FROM pg_catalog.pg_trigger tg
JOIN pg_catalog.pg_class c ON c.oid = tg.tgrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE tg.tgname = 'basalt_live_change'";

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
