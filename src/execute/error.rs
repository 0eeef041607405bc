//! The execute layer's error. Postgres errors are classified by SQLSTATE here; what each
//! becomes on the wire is decided once, in `http/error.rs`.

use crate::sql::program::CheckKind;
use serde_json::{json, Value};

/// Why Postgres refused a statement, by SQLSTATE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `22025`: an invalid escape in a pattern.
    BadRequest,
    /// Other class 22: a value does not fit its type.
    DataException,
    /// `23514`: a `CHECK` constraint.
    CheckViolation,
    /// `23001`: a restrict violation (row still referred to).
    RestrictViolation,
    /// `23502`: a `NOT NULL` column.
    NotNullViolation,
    /// `23503`: a foreign key.
    ForeignKeyViolation,
    /// `23505`: a unique constraint.
    UniqueViolation,
    /// `23P01`: an exclusion constraint.
    ExclusionViolation,
    /// Other class 23.
    IntegrityViolation,
    /// Class 42: syntax error or access rule violation.
    SyntaxOrAccess,
    /// Anything else: an internal failure.
    Other,
}

impl Refusal {
    /// The class of a SQLSTATE.
    pub fn of(sqlstate: &str) -> Self {
        match sqlstate {
            "22025" => Refusal::BadRequest,
            c if c.starts_with("22") => Refusal::DataException,
            "23514" => Refusal::CheckViolation,
            "23001" => Refusal::RestrictViolation,
            "23502" => Refusal::NotNullViolation,
            "23503" => Refusal::ForeignKeyViolation,
            "23505" => Refusal::UniqueViolation,
            "23P01" => Refusal::ExclusionViolation,
            c if c.starts_with("23") => Refusal::IntegrityViolation,
            c if c.starts_with("42") => Refusal::SyntaxOrAccess,
            _ => Refusal::Other,
        }
    }
}

/// A failure to run a statement or a program.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ExecuteError {
    /// Postgres refused a statement.
    #[error("{message}")]
    Database {
        refusal: Refusal,
        /// Postgres's message.
        message: String,
        /// Postgres's error object (message, SQLSTATE, detail, hint) for admins.
        detail: Value,
    },
    /// A permission rule or preset names a session variable the request does not carry.
    #[error("missing session variable: \"{0}\"")]
    MissingSessionVariable(String),
    /// Rows a mutation wrote do not satisfy a permission's check.
    #[error("check constraint of an {} permission has failed", .0.as_str())]
    CheckFailed(CheckKind),
    /// The parent row of a nested insert was not written (its upsert did nothing).
    #[error("the related row in \"{0}\" was not inserted (on_conflict do nothing)")]
    ParentNotInserted(String),
    /// No connection, a lost connection, a malformed result: detail for the log and admins.
    #[error("database query error")]
    Unexpected(String),
}

impl ExecuteError {
    /// Whether the error is about the request as a whole (its path is `$`) rather than the
    /// root field being run.
    pub fn is_request_level(&self) -> bool {
        matches!(
            self,
            ExecuteError::MissingSessionVariable(_) | ExecuteError::CheckFailed(_)
        )
    }

    /// Whether the statement that failed certainly wrote nothing: Postgres refused it (an
    /// error it reported rolls the statement back), or it never ran. A lost connection
    /// leaves unknown whether it committed.
    pub fn wrote_nothing(&self) -> bool {
        !matches!(self, ExecuteError::Unexpected(_))
    }

    /// Admin-only detail.
    pub fn internal(&self) -> Option<Value> {
        match self {
            ExecuteError::Database { detail, .. } => Some(detail.clone()),
            ExecuteError::Unexpected(detail) => Some(Value::String(detail.clone())),
            _ => None,
        }
    }
}

/// SQLSTATE of `basalt_catalog.check_failed(kind)`: rows written by a one-statement mutation
/// (or a write through a view) failed a permission check; `DETAIL` is the kind of check.
pub const CHECK_FAILED: &str = "BS403";

impl From<tokio_postgres::Error> for ExecuteError {
    fn from(err: tokio_postgres::Error) -> Self {
        let Some(db) = err.as_db_error() else {
            return ExecuteError::Unexpected(err.to_string());
        };
        if db.code().code() == CHECK_FAILED {
            return ExecuteError::CheckFailed(match db.detail() {
                Some("update") => CheckKind::Update,
                _ => CheckKind::Insert,
            });
        }
        ExecuteError::Database {
            refusal: Refusal::of(db.code().code()),
            message: db.message().to_owned(),
            detail: json!({
                "error": {
                    "message": db.message(),
                    "status_code": db.code().code(),
                    "description": db.detail(),
                    "hint": db.hint(),
                }
            }),
        }
    }
}

impl From<deadpool_postgres::PoolError> for ExecuteError {
    fn from(err: deadpool_postgres::PoolError) -> Self {
        ExecuteError::Unexpected(err.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shared write is run again alone only after an error that proves it wrote nothing.
    #[test]
    fn only_an_unexpected_failure_may_have_written() {
        let refused = ExecuteError::Database {
            refusal: Refusal::UniqueViolation,
            message: "duplicate key".into(),
            detail: Value::Null,
        };
        assert!(refused.wrote_nothing());
        assert!(ExecuteError::CheckFailed(CheckKind::Insert).wrote_nothing());
        assert!(ExecuteError::MissingSessionVariable("x-svc-user-id".into()).wrote_nothing());
        assert!(!ExecuteError::Unexpected("connection closed".into()).wrote_nothing());
    }
}
