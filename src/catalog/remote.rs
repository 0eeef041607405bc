//! What the catalog keeps about remote schemas besides their definitions
//! (`docs/remote-schemas.md`): the last successful introspection of each definition, so that a
//! replica starting during a remote's outage serves the same schema as its peers, and the last
//! failure, which keeps the remote listed as inconsistent on every replica until it answers.

use super::CatalogError;
use tokio_postgres::GenericClient;

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
