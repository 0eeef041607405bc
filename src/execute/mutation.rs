//! Runs a mutation field's statements inside the request's transaction: inserts (nested rows,
//! parents first, children after), updates, deletes; then the permission checks over exactly
//! the written rows; then the answer as Postgres-built JSON bytes.

use super::{bind, ExecuteError, RawJson};
use crate::graphql::ir::*;
use crate::translate::{self, InsertStatement, SqlText};
use bytes::Bytes;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::Row;

/// What a request needs to bind parameters.
pub struct Binding<'a> {
    /// Request variables.
    pub variables: &'a Map<String, Value>,
    /// Session variables.
    pub session: &'a BTreeMap<String, String>,
}

async fn rows(
    tx: &deadpool_postgres::Transaction<'_>,
    sql: &SqlText,
    binding: &Binding<'_>,
) -> Result<Vec<Row>, ExecuteError> {
    let values = bind(&sql.params, binding.variables, binding.session)?;
    tracing::debug!(sql = %sql.sql, "execute");
    let types = vec![Type::TEXT; values.len()];
    super::bound_statement_cache(&tx.statement_cache);
    let statement = tx.prepare_typed_cached(&sql.sql, &types).await?;
    let refs: Vec<&(dyn ToSql + Sync)> = values.iter().map(|v| v as &(dyn ToSql + Sync)).collect();
    Ok(tx.query(&statement, &refs).await?)
}

async fn json(
    tx: &deadpool_postgres::Transaction<'_>,
    sql: &SqlText,
    binding: &Binding<'_>,
) -> Result<Bytes, ExecuteError> {
    let result = rows(tx, sql, binding).await?;
    let cell: Option<RawJson> = match result.first() {
        Some(row) => row.try_get(0)?,
        None => None,
    };
    Ok(cell
        .map(|c| c.0)
        .unwrap_or_else(|| Bytes::from_static(b"null")))
}

/// Rows written by one insert plan, for its checks.
struct Written<'p> {
    plan: &'p InsertPlan,
    inserted: Vec<String>,
    updated: Vec<String>,
}

/// The result of one inserted row: its ctid, whether it was inserted (not upsert-updated), and
/// its columns when nested rows need them.
struct InsertedRow {
    ctid: String,
    inserted: bool,
    row: Option<Map<String, Value>>,
}

fn resolve_parent(
    values: &[(String, SetValue)],
    parent: Option<&Map<String, Value>>,
) -> Vec<(String, SetValue)> {
    values
        .iter()
        .map(|(c, v)| match v {
            SetValue::Parent { column, cast } => {
                let value = parent
                    .and_then(|p| p.get(column))
                    .cloned()
                    .unwrap_or(Value::Null);
                (
                    c.clone(),
                    SetValue::Value(ValueExpr {
                        param: Param::Literal(value),
                        cast: cast.clone(),
                    }),
                )
            }
            other => (c.clone(), other.clone()),
        })
        .collect()
}

fn inserted_row(row: &Row) -> Result<InsertedRow, ExecuteError> {
    let ctid: String = row.try_get(0)?;
    let inserted: bool = row.try_get(1)?;
    let json: Option<Value> = row.try_get(2)?;
    Ok(InsertedRow {
        ctid,
        inserted,
        row: json.and_then(|v| v.as_object().cloned()),
    })
}

/// Inserts the rows of `plan` (and their nested rows), recording every written row.
fn insert<'p, 'a>(
    tx: &'a deadpool_postgres::Transaction<'_>,
    plan: &'p InsertPlan,
    parent: Option<&'a Map<String, Value>>,
    want_rows: bool,
    binding: &'a Binding<'_>,
    written: &'a mut Vec<Written<'p>>,
) -> std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Vec<InsertedRow>, ExecuteError>> + Send + 'a>,
>
where
    'p: 'a,
{
    Box::pin(async move {
        let nested = plan
            .rows
            .iter()
            .any(|r| !r.parents.is_empty() || !r.children.is_empty());
        let mut results = Vec::new();
        let all_default = plan.rows.iter().all(|r| r.values.is_empty());
        if !nested && !all_default && !plan.rows.is_empty() {
            let rows_values: Vec<Vec<(String, SetValue)>> = plan
                .rows
                .iter()
                .map(|r| resolve_parent(&r.values, parent))
                .collect();
            let sql = translate::insert(&InsertStatement {
                table: &plan.table,
                rows: &rows_values,
                on_conflict: plan.on_conflict.as_ref(),
                want_row: want_rows,
                all_columns: false,
            });
            for row in rows(tx, &sql, binding).await? {
                results.push(inserted_row(&row)?);
            }
        } else {
            for row in &plan.rows {
                let mut values = resolve_parent(&row.values, parent);
                for p in &row.parents {
                    let made = insert(tx, &p.insert, None, true, binding, written).await?;
                    let Some(parent_row) = made.first().and_then(|m| m.row.clone()) else {
                        return Err(ExecuteError {
                            code: "constraint-violation",
                            message: format!("the related row in \"{}\" was not inserted (on_conflict do nothing)", p.insert.table),
                            internal: None,
                            located: false,
                        });
                    };
                    for (column, cast, from) in &p.fill {
                        let value = parent_row.get(from).cloned().unwrap_or(Value::Null);
                        values.retain(|(c, _)| c != column);
                        values.push((
                            column.clone(),
                            SetValue::Value(ValueExpr {
                                param: Param::Literal(value),
                                cast: cast.clone(),
                            }),
                        ));
                    }
                }
                let one = [values];
                let sql = translate::insert(&InsertStatement {
                    table: &plan.table,
                    rows: &one,
                    on_conflict: plan.on_conflict.as_ref(),
                    want_row: true,
                    all_columns: false,
                });
                let made: Vec<InsertedRow> = rows(tx, &sql, binding)
                    .await?
                    .iter()
                    .map(inserted_row)
                    .collect::<Result<_, _>>()?;
                if let Some(this) = made.first() {
                    for c in &row.children {
                        insert(tx, &c.insert, this.row.as_ref(), false, binding, written).await?;
                    }
                }
                results.extend(made);
            }
        }
        let mut record = Written {
            plan,
            inserted: Vec::new(),
            updated: Vec::new(),
        };
        for r in &results {
            if r.inserted {
                record.inserted.push(r.ctid.clone());
            } else {
                record.updated.push(r.ctid.clone());
            }
        }
        written.push(record);
        Ok(results)
    })
}

async fn check(
    tx: &deadpool_postgres::Transaction<'_>,
    table: &crate::metadata::types::QualifiedTable,
    rule: Option<&BoolExpr>,
    ctids: &[String],
    binding: &Binding<'_>,
    what: &str,
) -> Result<(), ExecuteError> {
    let Some(rule) = rule else { return Ok(()) };
    if ctids.is_empty() {
        return Ok(());
    }
    let sql = translate::check(table, rule, ctids);
    let ok: bool = match rows(tx, &sql, binding).await?.first() {
        Some(row) => row.try_get(0)?,
        None => true,
    };
    if ok {
        Ok(())
    } else {
        Err(ExecuteError {
            code: "permission-error",
            message: format!("check constraint of an {what} permission has failed"),
            internal: None,
            located: true,
        })
    }
}

/// Runs one mutation field and returns its answer.
pub async fn run(
    tx: &deadpool_postgres::Transaction<'_>,
    action: &MutationAction,
    output: &MutationOutput,
    binding: &Binding<'_>,
) -> Result<Bytes, ExecuteError> {
    match action {
        MutationAction::Insert(plan) if plan.view => {
            let rows_values: Vec<Vec<(String, SetValue)>> =
                plan.rows.iter().map(|r| r.values.clone()).collect();
            if rows_values.is_empty() {
                return json(tx, &translate::response(output, 0, &[]), binding).await;
            }
            let statement = InsertStatement {
                table: &plan.table,
                rows: &rows_values,
                on_conflict: None,
                want_row: false,
                all_columns: true,
            };
            through_view(
                tx,
                &translate::insert_view(&statement, plan.check.as_ref(), output),
                binding,
                "insert",
            )
            .await
        }
        MutationAction::Update(plan) if plan.view => {
            through_view(tx, &translate::update_view(plan, output), binding, "update").await
        }
        MutationAction::Insert(plan) => {
            let mut written = Vec::new();
            let top = insert(tx, plan, None, false, binding, &mut written).await?;
            let mut affected = 0;
            for w in &written {
                affected += w.inserted.len() + w.updated.len();
                check(
                    tx,
                    &w.plan.table,
                    w.plan.check.as_ref(),
                    &w.inserted,
                    binding,
                    "insert",
                )
                .await?;
                check(
                    tx,
                    &w.plan.table,
                    w.plan.update_check.as_ref(),
                    &w.updated,
                    binding,
                    "update",
                )
                .await?;
            }
            let ctids: Vec<String> = top.into_iter().map(|r| r.ctid).collect();
            json(tx, &translate::response(output, affected, &ctids), binding).await
        }
        MutationAction::Update(plan) => {
            let ctids: Vec<String> = rows(tx, &translate::update(plan), binding)
                .await?
                .iter()
                .map(|r| r.try_get(0))
                .collect::<Result<_, _>>()?;
            check(
                tx,
                &plan.table,
                plan.check.as_ref(),
                &ctids,
                binding,
                "update",
            )
            .await?;
            json(
                tx,
                &translate::response(output, ctids.len(), &ctids),
                binding,
            )
            .await
        }
        MutationAction::Delete(plan) => json(tx, &translate::delete(plan, output), binding).await,
    }
}

/// Runs a write through a view: one row of (check passed, answer).
async fn through_view(
    tx: &deadpool_postgres::Transaction<'_>,
    sql: &SqlText,
    binding: &Binding<'_>,
    what: &str,
) -> Result<Bytes, ExecuteError> {
    let result = rows(tx, sql, binding).await?;
    let Some(row) = result.first() else {
        return Ok(Bytes::from_static(b"null"));
    };
    let passed: bool = row.try_get(0)?;
    if !passed {
        return Err(ExecuteError {
            code: "permission-error",
            message: format!("check constraint of an {what} permission has failed"),
            internal: None,
            located: true,
        });
    }
    let answer: Option<RawJson> = row.try_get(1)?;
    Ok(answer
        .map(|a| a.0)
        .unwrap_or_else(|| Bytes::from_static(b"null")))
}
