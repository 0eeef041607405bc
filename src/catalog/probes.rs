//! What Postgres says of the metadata's logical models and native queries, read into the
//! database model's [`Probes`]: each type name resolved (`to_regtype`), and each native query's
//! validation statement prepared and described, never executed (`docs/native-queries.md`,
//! "Validation by Postgres"). Runs inside the caller's transaction, each probe under a
//! savepoint so that a refusal leaves the transaction usable; only what the model does not
//! know yet is asked.

use super::database::DatabaseError;
use crate::db_model::{DbModel, ProbedColumn, ProbedType, Refusal};
use crate::metadata::types::Metadata;
use crate::resolve::native_queries::statement_of;
use tokio_postgres::GenericClient;

const SAVEPOINT: &str = "SAVEPOINT basalt_probe";
const RELEASE: &str = "RELEASE SAVEPOINT basalt_probe";
const ROLLBACK: &str = "ROLLBACK TO SAVEPOINT basalt_probe";
const FORMAT: &str =
    "SELECT format_type(o, NULL) FROM unnest($1::oid[]) WITH ORDINALITY AS a(o, i) ORDER BY i";
const TYPE: &str = "SELECT t.oid, n.nspname, t.typname, format_type(t.oid, NULL), \
     t.typtype::text, e.typname FROM pg_catalog.pg_type t \
     JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace \
     LEFT JOIN pg_catalog.pg_type e ON e.oid = t.typelem AND t.typcategory = 'A' \
     WHERE t.oid = to_regtype($1)";

/// The type names `metadata`'s models and native queries name.
fn type_names(metadata: &Metadata) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for m in &metadata.logical_models {
        names.extend(m.fields.iter().filter_map(|f| f.field_type.scalar()));
    }
    for q in &metadata.native_queries {
        names.extend(q.arguments.values().map(|a| a.arg_type.as_str()));
    }
    names
}

/// Whether `model` lacks an answer [`probe`] would ask Postgres for (so a shared model is
/// copied only when it must change).
pub fn needs(model: &DbModel, metadata: &Metadata) -> bool {
    let probes = &model.probes;
    type_names(metadata)
        .iter()
        .any(|n| !probes.types.contains_key(*n))
        || metadata.native_queries.iter().any(|q| {
            statement_of(q, metadata, probes).is_some_and(|s| !probes.statements.contains_key(&s))
        })
}

/// Adds to `model` what Postgres says of `metadata`'s type names and native queries.
pub async fn probe(
    client: &impl GenericClient,
    model: &mut DbModel,
    metadata: &Metadata,
) -> Result<(), DatabaseError> {
    if metadata.logical_models.is_empty() && metadata.native_queries.is_empty() {
        return Ok(());
    }
    for name in type_names(metadata) {
        if !model.probes.types.contains_key(name) {
            let found = probe_type(client, name).await?;
            model.probes.types.insert(name.to_owned(), found);
        }
    }
    for q in &metadata.native_queries {
        let Some(statement) = statement_of(q, metadata, &model.probes) else {
            continue;
        };
        if let std::collections::hash_map::Entry::Vacant(slot) =
            model.probes.statements.entry(statement)
        {
            let described = describe(client, slot.key()).await?;
            slot.insert(described);
        }
    }
    Ok(())
}

/// Runs `step` under a savepoint: rolled back to it when Postgres refuses.
async fn guarded<T>(
    client: &impl GenericClient,
    step: impl std::future::Future<Output = Result<T, tokio_postgres::Error>>,
) -> Result<Result<T, Refusal>, DatabaseError> {
    client.batch_execute(SAVEPOINT).await?;
    match step.await {
        Ok(value) => {
            client.batch_execute(RELEASE).await?;
            Ok(Ok(value))
        }
        Err(err) => {
            let Some(db) = err.as_db_error() else {
                return Err(err.into());
            };
            let refusal = Refusal {
                message: db.message().to_owned(),
                code: Some(db.code().code().to_owned()),
            };
            client.batch_execute(ROLLBACK).await?;
            Ok(Err(refusal))
        }
    }
}

/// The type `name` names, or `None` (an unknown name, or one Postgres cannot read).
async fn probe_type(
    client: &impl GenericClient,
    name: &str,
) -> Result<Option<ProbedType>, DatabaseError> {
    let row = guarded(client, client.query_opt(TYPE, &[&name])).await?;
    let Ok(Some(row)) = row else {
        return Ok(None);
    };
    let oid: u32 = row.try_get(0)?;
    Ok(Some(ProbedType {
        oid,
        schema: row.try_get(1)?,
        name: row.try_get(2)?,
        formatted: row.try_get(3)?,
        kind: row.try_get(4)?,
        element: row.try_get(5)?,
    }))
}

/// The result columns of `statement`, or Postgres's refusal to prepare it.
async fn describe(
    client: &impl GenericClient,
    statement: &str,
) -> Result<Result<Vec<ProbedColumn>, Refusal>, DatabaseError> {
    let prepared = match guarded(client, client.prepare(statement)).await? {
        Ok(prepared) => prepared,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let oids: Vec<u32> = prepared.columns().iter().map(|c| c.type_().oid()).collect();
    let names = client.query(FORMAT, &[&oids]).await?;
    let columns = prepared
        .columns()
        .iter()
        .zip(names)
        .map(|(c, row)| {
            Ok(ProbedColumn {
                name: c.name().to_owned(),
                oid: c.type_().oid(),
                type_name: row.try_get(0)?,
            })
        })
        .collect::<Result<_, tokio_postgres::Error>>()?;
    Ok(Ok(columns))
}
