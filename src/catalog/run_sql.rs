//! Running `run_sql` statements inside the request's transaction: text results of the last
//! statement, read-only execution, and Postgres errors as `postgres-error`.

use super::CatalogError;
use crate::metadata::error::{Code, MetadataError};
use crate::metadata::path::JsonPath;
use serde_json::{json, Value};
use tokio_postgres::{SimpleQueryMessage, Transaction};

/// Savepoint that scopes a read-only `run_sql`, so the rest of the request stays read-write.
const READ_ONLY_SAVEPOINT: &str = "basalt_read_only";

/// Runs `sql` (one or more statements) and returns the `run_sql` response body.
pub async fn run(tx: &Transaction<'_>, sql: &str, read_only: bool) -> Result<Value, CatalogError> {
    if read_only {
        tx.batch_execute(&format!(
            "SAVEPOINT {READ_ONLY_SAVEPOINT}; SET TRANSACTION READ ONLY"
        ))
        .await?;
    }
    let messages = tx
        .simple_query(sql)
        .await
        .map_err(|e| statement_error(sql, e))?;
    if read_only {
        tx.batch_execute(&format!(
            "ROLLBACK TO SAVEPOINT {READ_ONLY_SAVEPOINT}; RELEASE SAVEPOINT {READ_ONLY_SAVEPOINT}"
        ))
        .await?;
    }
    Ok(response(&messages))
}

/// `TuplesOk` with the column names first and every value as text (`"NULL"` for SQL NULL) when
/// the last statement returned rows, else `CommandOk`.
fn response(messages: &[SimpleQueryMessage]) -> Value {
    let mut current: Option<Vec<Value>> = None;
    let mut last: Option<Vec<Value>> = None;
    for message in messages {
        match message {
            SimpleQueryMessage::RowDescription(columns) => {
                current = Some(vec![json!(columns
                    .iter()
                    .map(|c| c.name())
                    .collect::<Vec<_>>())]);
            }
            SimpleQueryMessage::Row(row) => {
                if let Some(rows) = current.as_mut() {
                    let values: Vec<&str> = (0..row.len())
                        .map(|i| row.get(i).unwrap_or("NULL"))
                        .collect();
                    rows.push(json!(values));
                }
            }
            SimpleQueryMessage::CommandComplete(_) => last = current.take(),
            _ => {}
        }
    }
    match last {
        Some(rows) => json!({"result_type": "TuplesOk", "result": rows}),
        None => json!({"result_type": "CommandOk", "result": null}),
    }
}

/// A failed statement: `400 postgres-error` with the Postgres detail for admins; errors that
/// are not from the server (connection lost) stay internal.
fn statement_error(sql: &str, err: tokio_postgres::Error) -> CatalogError {
    let Some(db) = err.as_db_error() else {
        return CatalogError::Database(err);
    };
    let internal = json!({
        "statement": sql,
        "prepared": false,
        "arguments": [],
        "error": {
            "exec_status": "FatalError",
            "message": db.message(),
            "status_code": db.code().code(),
            "description": db.detail(),
            "hint": db.hint(),
        }
    });
    CatalogError::Metadata(
        MetadataError::new(
            Code::PostgresError,
            JsonPath::args(),
            "query execution failed",
        )
        .with_internal(internal),
    )
}
