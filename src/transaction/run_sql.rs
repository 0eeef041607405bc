//! Running `run_sql` statements inside the request's transaction: text results of the last
//! statement, read-only execution, and Postgres errors as `postgres-error`.

use super::TransactionError;
use crate::metadata::error::{Code, MetadataError};
use crate::metadata::path::JsonPath;
use crate::ops::answer::SqlResult;
use serde_json::json;
use tokio_postgres::{SimpleQueryMessage, Transaction};

/// Savepoint that scopes a read-only `run_sql`, so the rest of the request stays read-write.
const READ_ONLY_BEGIN: &str = "SAVEPOINT basalt_read_only; SET TRANSACTION READ ONLY";

/// Back out of [`READ_ONLY_BEGIN`]'s savepoint, read-write again.
const READ_ONLY_END: &str =
    "ROLLBACK TO SAVEPOINT basalt_read_only; RELEASE SAVEPOINT basalt_read_only";

/// Runs `sql` (one or more statements) and answers the last statement's result.
pub(super) async fn run(
    tx: &Transaction<'_>,
    sql: &str,
    read_only: bool,
) -> Result<SqlResult, TransactionError> {
    if read_only {
        tx.batch_execute(READ_ONLY_BEGIN).await?;
    }
    let messages = tx
        .simple_query(sql)
        .await
        .map_err(|e| statement_error(sql, e))?;
    if read_only {
        tx.batch_execute(READ_ONLY_END).await?;
    }
    Ok(response(&messages))
}

/// `TuplesOk` with the column names first and every value as text (`"NULL"` for SQL NULL) when
/// the last statement returned rows, else `CommandOk`.
fn response(messages: &[SimpleQueryMessage]) -> SqlResult {
    let mut current: Option<Vec<Vec<String>>> = None;
    let mut last: Option<Vec<Vec<String>>> = None;
    for message in messages {
        match message {
            SimpleQueryMessage::RowDescription(columns) => {
                current = Some(vec![columns.iter().map(|c| c.name().to_owned()).collect()]);
            }
            SimpleQueryMessage::Row(row) => {
                if let Some(rows) = current.as_mut() {
                    let values = (0..row.len())
                        .map(|i| row.get(i).unwrap_or("NULL").to_owned())
                        .collect();
                    rows.push(values);
                }
            }
            SimpleQueryMessage::CommandComplete(_) => last = current.take(),
            _ => {}
        }
    }
    let result_type = match last {
        Some(_) => "TuplesOk",
        None => "CommandOk",
    };
    SqlResult {
        result_type,
        result: last,
    }
}

/// A failed statement: `400 postgres-error` with the Postgres detail for admins; errors that
/// are not from the server (connection lost) stay internal.
fn statement_error(sql: &str, err: tokio_postgres::Error) -> TransactionError {
    let Some(db) = err.as_db_error() else {
        return TransactionError::from(err);
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
    TransactionError::Metadata(
        MetadataError::new(
            Code::PostgresError,
            JsonPath::args(),
            "query execution failed",
        )
        .with_internal(internal),
    )
}
