//! Change counters that tell a reader, in one cheap query, whether what it built from the
//! catalog and the database is still current (`docs/kubernetes.md`, "One view of the catalog"):
//! the catalog's resource version, a count of statements that changed ownership rows, and a
//! count of DDL statements anywhere in the database, kept by an event trigger on
//! `ddl_command_end` (as pg_graphql keys its schema cache), so DDL run directly — psql, a
//! migration tool — is noticed too.
//!
//! The counts are transactional (a rolled-back change counts nothing; a count is visible
//! exactly when its change is) and never contend: each backend increments its own row of
//! `basalt_catalog.change_counts`, and a reader sums the rows. A sum only grows, so any
//! committed change makes it differ from what a reader saw before.

use super::CatalogError;
use tokio_postgres::GenericClient;

/// Name of the event trigger counting DDL statements.
pub const DDL_EVENT_TRIGGER: &str = "basalt_ddl_changes";

/// Catalog migration: the counters, the statement trigger on the ownership rows, and the DDL
/// event trigger. Creating an event trigger needs a superuser; without one the migration
/// still succeeds and [`Versions::ddl`] is `None` (readers then refresh on a timer instead).
pub(super) const MIGRATION: &str = r#"
    CREATE TABLE basalt_catalog.change_counts (
        source  text    NOT NULL CHECK (source IN ('ddl', 'managed')),
        backend integer NOT NULL,
        n       bigint  NOT NULL,
        PRIMARY KEY (source, backend)
    );
    -- SECURITY DEFINER: DDL by a role without rights on basalt_catalog must still succeed.
    CREATE FUNCTION basalt_catalog.count_ddl() RETURNS event_trigger LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    BEGIN
        INSERT INTO basalt_catalog.change_counts AS c (source, backend, n)
        VALUES ('ddl', pg_backend_pid(), 1)
        ON CONFLICT (source, backend) DO UPDATE SET n = c.n + 1;
    END
    $$;
    CREATE FUNCTION basalt_catalog.count_managed() RETURNS trigger LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    BEGIN
        INSERT INTO basalt_catalog.change_counts AS c (source, backend, n)
        VALUES ('managed', pg_backend_pid(), 1)
        ON CONFLICT (source, backend) DO UPDATE SET n = c.n + 1;
        RETURN NULL;
    END
    $$;
    REVOKE ALL ON FUNCTION basalt_catalog.count_ddl() FROM PUBLIC;
    REVOKE ALL ON FUNCTION basalt_catalog.count_managed() FROM PUBLIC;
    CREATE TRIGGER managed_objects_changes
        AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON basalt_catalog.managed_objects
        FOR EACH STATEMENT EXECUTE FUNCTION basalt_catalog.count_managed();
    DO $$
    BEGIN
        CREATE EVENT TRIGGER basalt_ddl_changes ON ddl_command_end
            EXECUTE FUNCTION basalt_catalog.count_ddl();
    EXCEPTION WHEN insufficient_privilege THEN
        RAISE NOTICE 'basalt: not a superuser, DDL is not counted (the controller refreshes its view of the database on a timer instead)';
    END
    $$;
"#;

/// Where the catalog and the database stand, read in one statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Versions {
    /// The catalog's resource version.
    pub catalog: i64,
    /// Statements that changed ownership rows (`basalt_catalog.managed_objects`).
    pub managed: i64,
    /// DDL statements committed in the database; `None` when the event trigger is missing or
    /// disabled (DDL is then not tracked).
    pub ddl: Option<i64>,
}

impl Versions {
    /// Whether `self` is at least as recent as `other` in every count: something built at
    /// `self` may serve a reader that asked at `other`.
    pub fn covers(&self, other: &Versions) -> bool {
        self.catalog >= other.catalog
            && self.managed >= other.managed
            && match (self.ddl, other.ddl) {
                (Some(mine), Some(theirs)) => mine >= theirs,
                (None, None) => true,
                _ => false,
            }
    }
}

/// Reads the counters. In a `REPEATABLE READ` transaction they describe exactly what the rest
/// of the transaction reads.
pub async fn read(client: &impl GenericClient) -> Result<Versions, CatalogError> {
    let row = client
        .query_one(
            "SELECT m.resource_version::bigint,
                    (SELECT coalesce(sum(n), 0)::bigint FROM basalt_catalog.change_counts
                     WHERE source = 'managed'),
                    CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_event_trigger
                                      WHERE evtname = $1 AND evtenabled <> 'D')
                         THEN (SELECT coalesce(sum(n), 0)::bigint FROM basalt_catalog.change_counts
                               WHERE source = 'ddl')
                    END
             FROM basalt_catalog.metadata m WHERE m.id = 1",
            &[&DDL_EVENT_TRIGGER],
        )
        .await?;
    Ok(Versions {
        catalog: row.try_get(0)?,
        managed: row.try_get(1)?,
        ddl: row.try_get(2)?,
    })
}

#[cfg(test)]
mod tests {
    use super::Versions;

    fn at(catalog: i64, managed: i64, ddl: Option<i64>) -> Versions {
        Versions {
            catalog,
            managed,
            ddl,
        }
    }

    #[test]
    fn a_view_covers_readers_that_asked_no_later_in_any_count() {
        let built = at(5, 3, Some(9));
        assert!(built.covers(&at(5, 3, Some(9))));
        assert!(built.covers(&at(4, 1, Some(2))));
        assert!(!built.covers(&at(6, 3, Some(9))));
        assert!(!built.covers(&at(5, 4, Some(9))));
        assert!(!built.covers(&at(5, 3, Some(10))));
        // Tracked and untracked DDL are never comparable: the trigger came or went.
        assert!(!built.covers(&at(5, 3, None)));
        assert!(!at(5, 3, None).covers(&built));
        assert!(at(5, 3, None).covers(&at(5, 3, None)));
    }
}
