//! `basalt_catalog.managed_objects`: which catalog objects Kubernetes resources own, with the
//! definition each asked for (`docs/kubernetes.md`, "Drift and self-heal"). Written by the
//! controller in the same transaction as its metadata operations; read by the engine to report
//! drift and, in `reject` mode, to refuse imperative writes to managed objects.

use super::CatalogError;
use crate::metadata::objects::{Managed, Owner};
use tokio_postgres::GenericClient;

/// Catalog migration creating the table.
pub(super) const MIGRATION: &str = r#"
    CREATE TABLE basalt_catalog.managed_objects (
        object_key        text PRIMARY KEY,
        owner_api_version text NOT NULL,
        owner_kind        text NOT NULL,
        owner_namespace   text NOT NULL,
        owner_name        text NOT NULL,
        owner_uid         text NOT NULL,
        owner_generation  bigint NOT NULL,
        desired           jsonb NOT NULL,
        desired_hash      text NOT NULL,
        applied_version   bigint NOT NULL,
        orphaned_at       timestamptz,
        updated_at        timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX managed_objects_owner ON basalt_catalog.managed_objects (owner_uid);
"#;

/// Ownership changes written with a controller's catalog write.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OwnershipChanges {
    /// Rows to insert or replace (`applied_version` is set to the committed version).
    pub upsert: Vec<Managed>,
    /// Keys whose rows are deleted.
    pub remove: Vec<String>,
    /// The owner uid each upserted or removed key had when the changes were planned (`None`:
    /// no row). The write fails with a conflict if any differs now, so two resources
    /// adopting or releasing the same object at once cannot both succeed.
    pub seen: Vec<(String, Option<String>)>,
}

impl OwnershipChanges {
    /// True when nothing changes.
    pub fn is_empty(&self) -> bool {
        self.upsert.is_empty() && self.remove.is_empty()
    }
}

/// The query of every row, with `desired` read as the given expression (the column, or a
/// constant).
macro_rules! rows_query {
    ($desired:literal) => {
        concat!(
            "SELECT object_key, owner_api_version, owner_kind, owner_namespace, owner_name,
                    owner_uid, owner_generation, ",
            $desired,
            ", desired_hash, applied_version, orphaned_at IS NOT NULL
             FROM basalt_catalog.managed_objects ORDER BY object_key"
        )
    };
}

/// Every managed row, in key order.
pub async fn load(client: &impl GenericClient) -> Result<Vec<Managed>, CatalogError> {
    load_rows(client, rows_query!("desired")).await
}

/// Every managed row, in key order, without its `desired` definition (left `null`): what a
/// reconcile plans against, which compares `desired_hash`. The controller reads the rows again
/// after every commit, and parsing every definition would be much of that work.
pub async fn load_for_plans(client: &impl GenericClient) -> Result<Vec<Managed>, CatalogError> {
    load_rows(client, rows_query!("'null'::jsonb")).await
}

/// The rows `sql` (a [`rows_query`]) reads.
async fn load_rows(
    client: &impl GenericClient,
    sql: &'static str,
) -> Result<Vec<Managed>, CatalogError> {
    let rows = client.query(sql, &[]).await?;
    rows.iter()
        .map(|r| {
            Ok(Managed {
                key: r.try_get(0)?,
                owner: Owner {
                    api_version: r.try_get(1)?,
                    kind: r.try_get(2)?,
                    namespace: r.try_get(3)?,
                    name: r.try_get(4)?,
                    uid: r.try_get(5)?,
                },
                generation: r.try_get(6)?,
                desired: r.try_get(7)?,
                desired_hash: r.try_get(8)?,
                applied_version: r.try_get(9)?,
                orphaned: r.try_get(10)?,
            })
        })
        .collect()
}

/// Whether the rows `changes` touches still have the owners it was planned against; locks them
/// for the rest of the caller's transaction.
pub async fn unchanged(
    client: &impl GenericClient,
    changes: &OwnershipChanges,
) -> Result<bool, CatalogError> {
    if changes.seen.is_empty() {
        return Ok(true);
    }
    let keys: Vec<&str> = changes.seen.iter().map(|(k, _)| k.as_str()).collect();
    let rows = client
        .query(
            "SELECT object_key, owner_uid FROM basalt_catalog.managed_objects
             WHERE object_key = ANY($1) FOR UPDATE",
            &[&keys],
        )
        .await?;
    let now: std::collections::BTreeMap<String, String> = rows
        .iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
        .collect::<Result<_, tokio_postgres::Error>>()?;
    Ok(changes
        .seen
        .iter()
        .all(|(key, owner)| now.get(key) == owner.as_ref()))
}

/// Applies `changes` inside the caller's transaction; upserted rows record `version`.
pub async fn write(
    client: &impl GenericClient,
    changes: &OwnershipChanges,
    version: i64,
) -> Result<(), CatalogError> {
    for key in &changes.remove {
        client
            .execute(
                "DELETE FROM basalt_catalog.managed_objects WHERE object_key = $1",
                &[key],
            )
            .await?;
    }
    for row in &changes.upsert {
        let o = &row.owner;
        client
            .execute(
                "INSERT INTO basalt_catalog.managed_objects
                   (object_key, owner_api_version, owner_kind, owner_namespace, owner_name,
                    owner_uid, owner_generation, desired, desired_hash, applied_version)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
                 ON CONFLICT (object_key) DO UPDATE SET
                   owner_api_version = EXCLUDED.owner_api_version,
                   owner_kind = EXCLUDED.owner_kind,
                   owner_namespace = EXCLUDED.owner_namespace,
                   owner_name = EXCLUDED.owner_name,
                   owner_uid = EXCLUDED.owner_uid,
                   owner_generation = EXCLUDED.owner_generation,
                   desired = EXCLUDED.desired,
                   desired_hash = EXCLUDED.desired_hash,
                   applied_version = EXCLUDED.applied_version,
                   orphaned_at = NULL,
                   updated_at = now()",
                &[
                    &row.key,
                    &o.api_version,
                    &o.kind,
                    &o.namespace,
                    &o.name,
                    &o.uid,
                    &row.generation,
                    &row.desired,
                    &row.desired_hash,
                    &version,
                ],
            )
            .await?;
    }
    Ok(())
}

/// Marks (or unmarks) rows whose owning resource no longer exists. Returns how many changed.
pub async fn set_orphaned(
    client: &impl GenericClient,
    keys: &[String],
    orphaned: bool,
) -> Result<u64, CatalogError> {
    let sql = if orphaned {
        "UPDATE basalt_catalog.managed_objects SET orphaned_at = now(), updated_at = now()
         WHERE object_key = ANY($1) AND orphaned_at IS NULL"
    } else {
        "UPDATE basalt_catalog.managed_objects SET orphaned_at = NULL, updated_at = now()
         WHERE object_key = ANY($1) AND orphaned_at IS NOT NULL"
    };
    Ok(client.execute(sql, &[&keys]).await?)
}

/// `basalt controller release-ownership`: forgets ownership (of one namespace, or all), leaving
/// the objects in the catalog as if created through `/v1/query`. Returns the rows deleted.
pub async fn release(
    client: &impl GenericClient,
    namespace: Option<&str>,
) -> Result<u64, CatalogError> {
    Ok(match namespace {
        Some(ns) => {
            client
                .execute(
                    "DELETE FROM basalt_catalog.managed_objects WHERE owner_namespace = $1",
                    &[&ns],
                )
                .await?
        }
        None => {
            client
                .execute("DELETE FROM basalt_catalog.managed_objects", &[])
                .await?
        }
    })
}
