//! Runs compiled SQL: binds parameters (text, cast in SQL) from variables and the session,
//! executes one prepared statement, and returns the raw JSON bytes Postgres built — never
//! parsed or re-serialized. Postgres errors become GraphQL error codes.

use crate::graphql::ir::Param;
use crate::translate::{BoundParam, Encoding, SqlText};
use bytes::Bytes;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use tokio_postgres::types::{FromSql, Type};

pub mod mutation;

/// A failure to run a query, with the GraphQL code it maps to.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ExecuteError {
    /// Wire code.
    pub code: &'static str,
    /// Message for the client.
    pub message: String,
    /// Detail for admins (Postgres error object).
    pub internal: Option<Value>,
    /// The error's path is `$` (request-level, e.g. a permission check), not the field's.
    pub located: bool,
}

impl ExecuteError {
    fn unexpected(detail: impl Into<String>) -> Self {
        ExecuteError {
            code: "unexpected",
            message: "database query error".into(),
            internal: Some(Value::String(detail.into())),
            located: false,
        }
    }
}

impl From<tokio_postgres::Error> for ExecuteError {
    fn from(err: tokio_postgres::Error) -> Self {
        let Some(db) = err.as_db_error() else {
            return ExecuteError::unexpected(err.to_string());
        };
        let code = db.code().code();
        let message = db.message().to_owned();
        let internal = Some(serde_json::json!({
            "error": {"message": db.message(), "status_code": code, "description": db.detail(), "hint": db.hint()}
        }));
        let (wire, text) = match code {
            "22025" => ("bad-request", message),
            c if c.starts_with("22") => ("data-exception", message),
            "23514" => (
                "permission-error",
                format!("Check constraint violation. {message}"),
            ),
            "23001" => (
                "constraint-violation",
                format!("Can not delete or update due to data being referred. {message}"),
            ),
            "23502" => (
                "constraint-violation",
                format!("Not-NULL violation. {message}"),
            ),
            "23503" => (
                "constraint-violation",
                format!("Foreign key violation. {message}"),
            ),
            "23505" => (
                "constraint-violation",
                format!("Uniqueness violation. {message}"),
            ),
            "23P01" => (
                "constraint-violation",
                format!("Exclusion violation. {message}"),
            ),
            c if c.starts_with("23") => ("constraint-violation", message),
            c if c.starts_with("42") => ("constraint-error", message),
            _ => ("unexpected", "database query error".to_owned()),
        };
        ExecuteError {
            code: wire,
            message: text,
            internal,
            located: false,
        }
    }
}

impl From<deadpool_postgres::PoolError> for ExecuteError {
    fn from(err: deadpool_postgres::PoolError) -> Self {
        ExecuteError::unexpected(err.to_string())
    }
}

/// The bytes of a `json`/`jsonb` result cell, untouched.
#[derive(Debug)]
pub struct RawJson(pub Bytes);

impl<'a> FromSql<'a> for RawJson {
    fn from_sql(
        ty: &Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        // jsonb's binary form starts with a version byte.
        let body = if *ty == Type::JSONB {
            raw.get(1..).unwrap_or_default()
        } else {
            raw
        };
        Ok(RawJson(Bytes::copy_from_slice(body)))
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::JSON || *ty == Type::JSONB
    }
}

/// Text of a JSON scalar as Postgres expects it in a text parameter.
fn text_of(value: &Value, encoding: Encoding) -> Option<String> {
    match (value, encoding) {
        (Value::Null, _) => None,
        (v, Encoding::Json) => Some(v.to_string()),
        (Value::String(s), Encoding::Text) => Some(s.clone()),
        (Value::Bool(b), Encoding::Text) => Some(b.to_string()),
        (other, Encoding::Text) => Some(other.to_string()),
        (Value::Array(items), Encoding::PgArray) => Some(pg_array(items)),
        (Value::String(s), Encoding::PgArray) => Some(s.clone()),
        (other, Encoding::PgArray) => Some(other.to_string()),
    }
}

/// A JSON array as a Postgres array literal: elements double-quoted with `"` and `\` escaped,
/// `NULL` for null, nested arrays as nested braces.
fn pg_array(items: &[Value]) -> String {
    let parts: Vec<String> = items
        .iter()
        .map(|v| match v {
            Value::Null => "NULL".to_owned(),
            Value::Array(inner) => pg_array(inner),
            Value::String(s) => format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")),
            other => format!(
                "\"{}\"",
                other.to_string().replace('\\', "\\\\").replace('"', "\\\"")
            ),
        })
        .collect();
    format!("{{{}}}", parts.join(","))
}

/// Resolves a parameter to a JSON value.
fn resolve(
    param: &Param,
    variables: &Map<String, Value>,
    session: &BTreeMap<String, String>,
) -> Result<Value, ExecuteError> {
    Ok(match param {
        Param::Literal(v) => v.clone(),
        Param::Variable(name) => variables.get(name).cloned().unwrap_or(Value::Null),
        Param::Session(name) => match session.get(name) {
            Some(v) => Value::String(v.clone()),
            None => {
                return Err(ExecuteError {
                    code: "not-found",
                    message: format!("missing session variable: \"{name}\""),
                    internal: None,
                    located: true,
                })
            }
        },
        Param::SessionObject => Value::Object(
            session
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        ),
        Param::Array(items) => Value::Array(
            items
                .iter()
                .map(|p| resolve(p, variables, session))
                .collect::<Result<_, _>>()?,
        ),
    })
}

/// The text values of all parameters.
pub fn bind(
    params: &[BoundParam],
    variables: &Map<String, Value>,
    session: &BTreeMap<String, String>,
) -> Result<Vec<Option<String>>, ExecuteError> {
    params
        .iter()
        .map(|p| {
            let value = resolve(&p.source, variables, session)?;
            // A session variable compared with a json column is JSON text already.
            let encoding = if matches!(p.source, Param::Session(_)) {
                Encoding::Text
            } else {
                p.encoding
            };
            Ok(text_of(&value, encoding))
        })
        .collect()
}

/// Most prepared statements kept per connection; past it the cache starts over.
const STATEMENT_CACHE_SIZE: usize = 500;

/// Keeps a connection's prepared-statement cache bounded.
pub fn bound_statement_cache(cache: &deadpool_postgres::StatementCache) {
    if cache.size() >= STATEMENT_CACHE_SIZE {
        cache.clear();
    }
}

/// Postgres's `EXPLAIN` of a compiled statement with its bound values, one line per row.
pub async fn explain(
    client: &deadpool_postgres::Client,
    sql: &SqlText,
    values: &[Option<String>],
) -> Result<Vec<String>, ExecuteError> {
    let types = vec![Type::TEXT; values.len()];
    let statement = client
        .prepare_typed(&crate::sql::explain(&sql.sql), &types)
        .await?;
    let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = values
        .iter()
        .map(|v| v as &(dyn tokio_postgres::types::ToSql + Sync))
        .collect();
    let rows = client.query(&statement, &refs).await?;
    rows.iter()
        .map(|r| r.try_get::<_, String>(0).map_err(ExecuteError::from))
        .collect()
}

/// Runs a compiled query and returns the `data` JSON bytes.
pub async fn run(
    client: &deadpool_postgres::Client,
    sql: &SqlText,
    variables: &Map<String, Value>,
    session: &BTreeMap<String, String>,
    counters: &crate::stats::Counters,
) -> Result<Bytes, ExecuteError> {
    let values = bind(&sql.params, variables, session)?;
    tracing::debug!(sql = %sql.sql, "execute");
    let types = vec![Type::TEXT; values.len()];
    bound_statement_cache(&client.statement_cache);
    let cached = client.statement_cache.size();
    let statement = client.prepare_typed_cached(&sql.sql, &types).await?;
    if client.statement_cache.size() > cached {
        crate::stats::Counters::bump(&counters.statements_prepared);
    }
    let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = values
        .iter()
        .map(|v| v as &(dyn tokio_postgres::types::ToSql + Sync))
        .collect();
    let row = client.query_one(&statement, &refs).await?;
    let RawJson(bytes) = row.try_get(0)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parameters_bind_as_text_or_json() {
        let session: BTreeMap<String, String> =
            [("x-svc-user-id".to_owned(), "7".to_owned())].into();
        let variables = json!({"n": 3, "j": {"a": 1}}).as_object().cloned().unwrap();
        let params = vec![
            BoundParam {
                source: Param::Variable("n".into()),
                encoding: Encoding::Text,
            },
            BoundParam {
                source: Param::Variable("j".into()),
                encoding: Encoding::Json,
            },
            BoundParam {
                source: Param::Literal(json!("it's")),
                encoding: Encoding::Text,
            },
            BoundParam {
                source: Param::Literal(json!("it's")),
                encoding: Encoding::Json,
            },
            BoundParam {
                source: Param::Session("x-svc-user-id".into()),
                encoding: Encoding::Text,
            },
            BoundParam {
                source: Param::Array(vec![Param::Variable("n".into()), Param::Literal(json!(4))]),
                encoding: Encoding::Json,
            },
            BoundParam {
                source: Param::Literal(Value::Null),
                encoding: Encoding::Text,
            },
        ];
        let bound = bind(&params, &variables, &session).unwrap();
        assert_eq!(
            bound,
            vec![
                Some("3".into()),
                Some("{\"a\":1}".into()),
                Some("it's".into()),
                Some("\"it's\"".into()),
                Some("7".into()),
                Some("[3,4]".into()),
                None
            ]
        );
        let arrays = bind(
            &[BoundParam {
                source: Param::Literal(json!(["a b", "q\"uote", "back\\slash", null, 3])),
                encoding: Encoding::PgArray,
            }],
            &variables,
            &session,
        )
        .unwrap();
        assert_eq!(
            arrays,
            vec![Some(
                r#"{"a b","q\"uote","back\\slash",NULL,"3"}"#.to_owned()
            )]
        );
        let missing = bind(
            &[BoundParam {
                source: Param::Session("x-svc-org".into()),
                encoding: Encoding::Text,
            }],
            &variables,
            &session,
        )
        .unwrap_err();
        assert_eq!(missing.code, "not-found");
    }
}
