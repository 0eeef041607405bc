//! Remote schema → table relationships answered once a remote has answered
//! (`docs/remote-schemas.md`, "Relationships to tables"). In an answer, the objects of a
//! relationship's type carry its join fields (`__basalt_join_<field>`) and a placeholder at the
//! client's key. Their distinct keys are collected per occurrence, every occurrence of the
//! answer is read in one statement (the session set, within the operation's time limit), and
//! each placeholder is replaced by its key's rows; the join fields are then removed. Rows that
//! themselves hold table → remote relationships have those answered before they are placed.

use super::error::{GraphqlError, InternalError};
use super::execute::{connection, Run};
use super::{deadline, join};
use crate::execute::{self, Binding, Connection, Provided};
use crate::graphql::ir::{join_field_key, JoinOwner, TableJoinPart};
use bytes::Bytes;
use indexmap::IndexSet;
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;
use tracing::Instrument;

/// An answer to complete: the remote it came from, and its value (the remote root fields'
/// `data`, or the leaf of a table → remote relationship's chain).
pub(super) type Root<'v> = (&'v str, &'v mut Value);

/// The objects of `value` at `at` (lists on the way, and at the end, are crossed).
fn objects<'v>(value: &'v mut Value, at: &[String], found: &mut Vec<&'v mut Map<String, Value>>) {
    match value {
        Value::Array(items) => {
            for item in items {
                objects(item, at, found);
            }
        }
        Value::Object(object) => match at.split_first() {
            None => found.push(object),
            Some((key, rest)) => {
                if let Some(inner) = object.get_mut(key) {
                    objects(inner, rest, found);
                }
            }
        },
        _ => {}
    }
}

/// The objects `part` reads, in the answers of its remote.
fn objects_of<'v>(
    roots: &'v mut [Root<'_>],
    part: &TableJoinPart,
) -> Vec<&'v mut Map<String, Value>> {
    let mut found = Vec::new();
    for (remote, root) in roots.iter_mut() {
        if *remote == part.remote {
            objects(root, &part.at, &mut found);
        }
    }
    found
}

/// The join values of an object that holds the relationship `part`, in `part.fields`'
/// order; `None` for an object of another type.
fn key_of(object: &Map<String, Value>, part: &TableJoinPart) -> Option<Vec<Value>> {
    if !object.contains_key(&part.key) {
        return None;
    }
    part.fields
        .iter()
        .map(|field| object.get(&join_field_key(&part.type_name, field)).cloned())
        .collect()
}

/// Completes the relationships of `owner` in `roots`.
pub(super) async fn complete(
    run: &Run<'_>,
    owner: JoinOwner,
    mut roots: Vec<Root<'_>>,
) -> Result<(), GraphqlError> {
    let Some((_, sql)) = run.plan.table_joins.iter().find(|(o, _)| *o == owner) else {
        return Ok(());
    };
    let parts: Vec<&TableJoinPart> = run
        .plan
        .operation
        .table_joins
        .iter()
        .filter(|p| p.owner == owner)
        .collect();
    // Each part's distinct keys, in the order first met.
    let mut keys: Vec<IndexSet<Vec<Value>>> = vec![IndexSet::new(); parts.len()];
    for (part, distinct) in parts.iter().zip(&mut keys) {
        let found = objects_of(&mut roots, part);
        distinct.extend(found.iter().filter_map(|object| key_of(object, part)));
    }
    if keys.iter().all(IndexSet::is_empty) {
        return Ok(());
    }
    let mut provided = Provided::new();
    for (part, distinct) in parts.iter().zip(&keys) {
        let list = distinct
            .iter()
            .map(|values| {
                Value::Object(
                    part.fields
                        .iter()
                        .cloned()
                        .zip(values.iter().cloned())
                        .collect(),
                )
            })
            .collect();
        provided.insert(part.parameter(), Value::Array(list));
    }
    let bytes = read(run, sql, &provided).await?;
    // Rows may hold table → remote relationships of their own.
    let bytes = nested(run, bytes).await?;
    let answer: Value = serde_json::from_slice(&bytes)
        .map_err(|e| InternalError::RemoteJoin(format!("unreadable rows: {e}")))?;
    let lists = answer.as_array().map(Vec::as_slice).unwrap_or_default();
    for ((i, part), distinct) in parts.iter().enumerate().zip(&keys) {
        let rows = lists.get(i).and_then(Value::as_array);
        for object in objects_of(&mut roots, part) {
            let Some(index) = key_of(object, part).and_then(|k| distinct.get_index_of(&k)) else {
                continue;
            };
            let value = rows
                .and_then(|rows| rows.get(index))
                .and_then(|row| row.get("v"))
                .cloned()
                .unwrap_or(Value::Null);
            object.insert(part.key.clone(), value);
        }
    }
    // Last, as occurrences at one position share the join fields.
    for part in &parts {
        for object in objects_of(&mut roots, part) {
            for field in &part.fields {
                object.shift_remove(&join_field_key(&part.type_name, field));
            }
        }
    }
    Ok(())
}

/// Runs the statement with the keys bound, on a pooled connection, within the time limit.
async fn read(
    run: &Run<'_>,
    sql: &crate::sql::SqlText,
    provided: &Provided,
) -> Result<Bytes, GraphqlError> {
    let binding = Binding {
        variables: run.variables,
        session: &run.caller.session.variables,
        provided: Some(provided),
    };
    let client = connection(*run).await?;
    let guard = deadline::guard(run.deadline, &client);
    let conn = Connection::of(&client, &run.engine.counters);
    let span = tracing::debug_span!("sql", "db.system" = "postgresql", kind = "table_join");
    let data = execute::run(conn, sql, &binding).instrument(span);
    let data = deadline::on_connection(guard.as_ref(), data).await;
    deadline::release(guard, client);
    data
}

/// The rows' own table → remote relationships answered (boxed: the two kinds nest).
fn nested<'r>(
    run: &'r Run<'_>,
    bytes: Bytes,
) -> Pin<Box<dyn Future<Output = Result<Bytes, GraphqlError>> + Send + 'r>> {
    Box::pin(join::complete(run, bytes))
}

/// Completes the remote root fields' relationships in their answers.
pub(super) async fn complete_roots(
    run: &Run<'_>,
    answered: &mut [crate::remote::forward::Answered],
) -> Result<(), GraphqlError> {
    if run
        .plan
        .table_joins
        .iter()
        .all(|(o, _)| *o != JoinOwner::Root)
    {
        return Ok(());
    }
    let mut values: Vec<Value> = answered
        .iter_mut()
        .map(|a| Value::Object(std::mem::take(&mut a.data)))
        .collect();
    let roots = run
        .plan
        .operation
        .remote
        .iter()
        .zip(values.iter_mut())
        .map(|(part, value)| (part.remote.as_str(), value))
        .collect();
    let done = complete(run, JoinOwner::Root, roots).await;
    for (answer, value) in answered.iter_mut().zip(values) {
        if let Value::Object(data) = value {
            answer.data = data;
        }
    }
    done
}
