//! Change detection's triggers kept in step with what is tracked (`docs/graphql.md`, "When
//! subscriptions run"): at every schema build, in one transaction under an advisory lock (so
//! replicas building at once do not race), the notify function is created, every tracked
//! ordinary or partitioned table, each of their partitions and inheritance children, and the
//! action log get the `basalt_live_change` trigger (only where it is missing, and enabled to
//! fire always), and the trigger is dropped from every other table. With change detection
//! off, it is dropped everywhere.

use super::CatalogError;
use crate::names::QualifiedName;
use crate::sql::live_change as ddl;
use std::collections::{HashMap, HashSet};

/// What the triggers cover after a build.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Coverage {
    /// For each tracked table (by name) and the action log: the OIDs whose writes it shows,
    /// itself and its descendants, when every one of them is covered. A table missing here
    /// (excluded, uncovered, or with a descendant that is) cannot be watched.
    pub watched: HashMap<QualifiedName, Vec<u32>>,
    /// Tables whose trigger could not be created (not their owner).
    pub uncovered: Vec<QualifiedName>,
}

/// One row of [`ddl::COVERAGE`].
struct Covered {
    oid: u32,
    root: u32,
    name: QualifiedName,
    enabled: Option<String>,
    row_security: bool,
}

/// Installs and removes the triggers; `tracked` are the tracked tables and views (views and
/// other relations are skipped by the catalog query), `exclude` the `schema.table` names left
/// without a trigger.
pub async fn sync(
    client: &mut tokio_postgres::Client,
    tracked: &[QualifiedName],
    exclude: &[String],
    on: bool,
) -> Result<Coverage, CatalogError> {
    let mut tx = client.transaction().await?;
    tx.batch_execute(ddl::LOCK).await?;
    let mut coverage = Coverage::default();
    let mut keep: HashSet<QualifiedName> = HashSet::new();
    if on {
        if tx.query(ddl::FUNCTION_EXISTS, &[]).await?.is_empty() {
            tx.batch_execute(ddl::FUNCTION).await?;
        }
        let schemas: Vec<&str> = tracked.iter().map(|t| t.schema.as_str()).collect();
        let names: Vec<&str> = tracked.iter().map(|t| t.name.as_str()).collect();
        let rows = tx.query(ddl::COVERAGE, &[&schemas, &names]).await?;
        let rows: Vec<Covered> = rows
            .iter()
            .map(|row| {
                Ok(Covered {
                    oid: row.try_get(0)?,
                    root: row.try_get(1)?,
                    name: QualifiedName::new(
                        row.try_get::<_, String>(2)?,
                        row.try_get::<_, String>(3)?,
                    ),
                    enabled: row.try_get(4)?,
                    row_security: row.try_get(5)?,
                })
            })
            .collect::<Result<_, tokio_postgres::Error>>()?;
        let mut unwatchable: HashSet<u32> = HashSet::new();
        let mut members: HashMap<u32, Vec<u32>> = HashMap::new();
        for row in &rows {
            members.entry(row.root).or_default().push(row.oid);
            let excluded = exclude
                .iter()
                .any(|e| *e == format!("{}.{}", row.name.schema, row.name.name));
            if excluded || row.row_security {
                unwatchable.insert(row.root);
                continue;
            }
            keep.insert(row.name.clone());
            let statements: Vec<String> = match row.enabled.as_deref() {
                Some("A") => Vec::new(),
                Some(_) => vec![ddl::enable_always(&row.name)],
                None => ddl::create(&row.name).to_vec(),
            };
            if statements.is_empty() || install(&mut tx, &statements).await? {
                continue;
            }
            tracing::warn!(table = %row.name, "cannot put the live-query change trigger on this table (not its owner): its subscriptions run every interval");
            coverage.uncovered.push(row.name.clone());
            unwatchable.insert(row.root);
        }
        for row in rows.iter().filter(|r| r.oid == r.root) {
            if let (false, Some(oids)) = (unwatchable.contains(&row.root), members.get(&row.root)) {
                coverage.watched.insert(row.name.clone(), oids.clone());
            }
        }
    }
    let triggered = tx
        .query(ddl::TRIGGERED, &[])
        .await?
        .iter()
        .map(|row| {
            Ok(QualifiedName::new(
                row.try_get::<_, String>(0)?,
                row.try_get::<_, String>(1)?,
            ))
        })
        .collect::<Result<Vec<_>, tokio_postgres::Error>>()?;
    for name in triggered {
        if !keep.contains(&name) && !install(&mut tx, &[ddl::drop(&name)]).await? {
            tracing::warn!(table = %name, "cannot drop the live-query change trigger from this table (not its owner)");
        }
    }
    tx.commit().await?;
    Ok(coverage)
}

/// Runs `statements` in a savepoint; `false` (and nothing done) when Postgres refuses them
/// for lack of privilege, an error otherwise.
async fn install(
    tx: &mut tokio_postgres::Transaction<'_>,
    statements: &[String],
) -> Result<bool, CatalogError> {
    let savepoint = tx.savepoint("basalt_live_change").await?;
    for statement in statements {
        if let Err(err) = savepoint.batch_execute(statement).await {
            if err.code() == Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE) {
                savepoint.rollback().await?;
                return Ok(false);
            }
            return Err(err.into());
        }
    }
    savepoint.commit().await?;
    Ok(true)
}
