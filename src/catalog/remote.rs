//! What the catalog keeps about remote schemas besides their definitions
//! (`docs/remote-schemas.md`): the last successful introspection of each definition, so that a
//! replica starting during a remote's outage serves the same schema as its peers, and the last
//! failure, which keeps the remote listed as inconsistent on every replica until it answers.
//! Introspecting the remotes is the metadata transaction's job (`crate::transaction`).

use super::CatalogError;
use crate::metadata::types::Metadata;
use crate::resolve::remote::{definition_hash, Fetched, StoredRemote};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio_postgres::{GenericClient, Transaction};

/// Catalog migration: one row per remote schema name.
pub(super) const MIGRATION: &str = r#"
    CREATE TABLE basalt_catalog.remote_schemas (
        name            text PRIMARY KEY,
        -- sha256 of the definition the two results below belong to
        definition_hash text NOT NULL,
        -- the `__schema` object of the last successful introspection of that definition
        introspection   jsonb,
        introspected_at timestamptz,
        -- why the last introspection of that definition failed; NULL after a success
        error           text,
        failed_at       timestamptz
    );
"#;

/// A remote schema's introspection state, as the controller reports it in the resource's
/// status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteStatus {
    /// When the current definition was last introspected successfully (RFC 3339, UTC).
    pub introspected_at: Option<String>,
    /// Why the last introspection failed, when it did (the remote is then inconsistent).
    pub error: Option<String>,
    /// When that failure happened (RFC 3339, UTC).
    pub failed_at: Option<String>,
}

/// The stored state of the remote schema `name`, if it was ever introspected.
pub async fn status(
    client: &impl GenericClient,
    name: &str,
) -> Result<Option<RemoteStatus>, CatalogError> {
    let row = client
        .query_opt(
            r#"SELECT to_char(introspected_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                      error,
                      to_char(failed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
               FROM basalt_catalog.remote_schemas WHERE name = $1"#,
            &[&name],
        )
        .await?;
    Ok(row.map(|r| RemoteStatus {
        introspected_at: r.get(0),
        error: r.get(1),
        failed_at: r.get(2),
    }))
}

/// Every stored row, as the resolver reads it.
pub async fn load_stored(
    client: &impl GenericClient,
) -> Result<BTreeMap<String, StoredRemote>, CatalogError> {
    let rows = client
        .query(
            "SELECT name, definition_hash, introspection, error FROM basalt_catalog.remote_schemas",
            &[],
        )
        .await?;
    let mut out = BTreeMap::new();
    for row in rows {
        let introspection: Option<Value> = row.try_get(2)?;
        out.insert(
            row.try_get(0)?,
            StoredRemote {
                hash: row.try_get(1)?,
                introspection: introspection.map(Arc::new),
                error: row.try_get(3)?,
            },
        );
    }
    Ok(out)
}

/// Stores this request's introspection results for the definitions the document now holds
/// and forgets remote schemas it no longer holds (`before`: the document the request found).
/// Answers whether peers must rebuild.
pub async fn store(
    tx: &Transaction<'_>,
    before: &Metadata,
    metadata: &Metadata,
    fetched: &[Fetched],
) -> Result<bool, CatalogError> {
    if fetched.is_empty() && before.remote_schemas.is_empty() {
        return Ok(false);
    }
    let names: Vec<String> = metadata
        .remote_schemas
        .iter()
        .map(|r| r.name.0.clone())
        .collect();
    let forgotten = tx
        .execute(
            "DELETE FROM basalt_catalog.remote_schemas WHERE NOT (name = ANY($1))",
            &[&names],
        )
        .await?;
    let mut wrote = forgotten > 0;
    for f in fetched {
        let current = metadata
            .remote_schemas
            .iter()
            .any(|r| r.name.0 == f.name && definition_hash(&r.definition) == f.hash);
        if !current {
            continue;
        }
        match &f.outcome {
            Ok(schema) => {
                tx.execute(
                    "INSERT INTO basalt_catalog.remote_schemas
                         (name, definition_hash, introspection, introspected_at, error, failed_at)
                     VALUES ($1, $2, $3, now(), NULL, NULL)
                     ON CONFLICT (name) DO UPDATE SET definition_hash = $2, introspection = $3,
                         introspected_at = now(), error = NULL, failed_at = NULL",
                    &[&f.name, &f.hash, schema.as_ref()],
                )
                .await?;
            }
            Err(failure) => {
                // The stored schema stays when it belongs to the same definition.
                tx.execute(
                    "INSERT INTO basalt_catalog.remote_schemas
                         (name, definition_hash, introspection, introspected_at, error, failed_at)
                     VALUES ($1, $2, NULL, NULL, $3, now())
                     ON CONFLICT (name) DO UPDATE SET
                         introspection = CASE WHEN remote_schemas.definition_hash = $2
                                              THEN remote_schemas.introspection END,
                         introspected_at = CASE WHEN remote_schemas.definition_hash = $2
                                                THEN remote_schemas.introspected_at END,
                         definition_hash = $2, error = $3, failed_at = now()",
                    &[&f.name, &f.hash, &failure.message],
                )
                .await?;
            }
        }
        wrote = true;
    }
    Ok(wrote)
}
