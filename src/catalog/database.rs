//! Reads the database model ([`DbModel`]) from Postgres's own catalog: one query
//! (`database_model.sql`) for tables, views, columns, keys, functions and scalar types, and one
//! for the rows of enum tables. Read-only; what is read never depends on the metadata beyond
//! the names of the enum candidates.

use crate::db_model::{DbModel, QualifiedName};
use crate::sql::helpers::{enum_rows, EnumTable};
use std::collections::BTreeSet;

/// Failure to read the database model.
#[derive(Debug, thiserror::Error)]
pub enum DatabaseError {
    /// The query failed.
    #[error("reading the database model failed: {0}")]
    Query(#[from] tokio_postgres::Error),
    /// The query's JSON did not match the model (a bug).
    #[error("the database model read is malformed: {0}")]
    Decode(#[from] serde_json::Error),
}

tokio::task_local! {
    /// The counter [`read_model`] bumps in the current task, when one is set.
    static COUNTER: prometheus_client::metrics::counter::Counter;
}

/// Runs `work` counting every [`read_model`] it makes in `counter`: the controller proves with
/// it that reconciles share one view of the database instead of reading it each
/// (`basalt_controller_introspections_total`).
pub async fn counting<F: std::future::Future>(
    counter: prometheus_client::metrics::counter::Counter,
    work: F,
) -> F::Output {
    COUNTER.scope(counter, work).await
}

/// Reads the database model. `enum_tables` names the tables whose rows are needed to check
/// the enum-table rules; relations that do not exist or lack a single-column key are skipped.
pub async fn read_model(
    client: &impl tokio_postgres::GenericClient,
    enum_tables: &[QualifiedName],
) -> Result<DbModel, DatabaseError> {
    let _ = COUNTER.try_with(|counter| counter.inc());
    let row = client
        .query_one(include_str!("database_model.sql"), &[])
        .await?;
    let text: crate::sql::types::JsonText<'_> = row.try_get(0)?;
    let mut model = DbModel::from_slice(text.0)?;
    load_enum_rows(client, &mut model, enum_tables).await?;
    Ok(model)
}

/// Fetches (value, description) rows of enum candidates in one statement.
async fn load_enum_rows(
    client: &impl tokio_postgres::GenericClient,
    model: &mut DbModel,
    enum_tables: &[QualifiedName],
) -> Result<(), DatabaseError> {
    let mut selects = Vec::new();
    let mut names = Vec::new();
    let mut seen = BTreeSet::new();
    for name in enum_tables {
        if !seen.insert(name.clone()) {
            continue;
        }
        let Some(table) = model.tables.get(name) else {
            continue;
        };
        let Some([key]) = table.primary_key() else {
            continue;
        };
        let description = table
            .columns
            .iter()
            .find(|c| &c.name != key)
            .map(|c| c.name.as_str());
        selects.push(EnumTable {
            schema: &table.schema,
            name: &table.name,
            key,
            description,
        });
        names.push(name.clone());
    }
    if selects.is_empty() {
        return Ok(());
    }
    let row = client
        .query_one(enum_rows(&selects).sql.as_str(), &[])
        .await?;
    let value: serde_json::Value = row.try_get(0)?;
    let lists: Vec<Vec<(String, Option<String>)>> = serde_json::from_value(value)?;
    model.enum_rows.extend(names.into_iter().zip(lists));
    Ok(())
}
