//! The metadata layer's error: a wire code, a JSON path, a message, and for `not-exists` and
//! `not-found` errors what kind of object is missing ([`Missing`]), so callers decide by
//! variant, never by message text. See `docs/metadata-api.md`, "Request and response". Must
//! not depend on anything outside `metadata`.

use super::path::JsonPath;
use serde_json::Value;

/// The error codes of the metadata API (`docs/metadata-api.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// Wrong JSON shape: missing key, wrong type, bad enum value, bad version.
    ParseFailed,
    /// A referenced object does not exist.
    NotExists,
    /// The name of a new object is taken.
    AlreadyExists,
    /// `track_table` on a tracked table.
    AlreadyTracked,
    /// `untrack_table` on an untracked table.
    AlreadyUntracked,
    /// The change would break dependent metadata.
    DependencyError,
    /// Not allowed for the caller.
    AccessDenied,
    /// A feature used in a way Basalt does not support.
    NotSupported,
    /// The object is invalid against the database.
    ConstraintViolation,
    /// No (or several) usable foreign keys for a relationship.
    ConstraintError,
    /// Semantically invalid parameters.
    InvalidParams,
    /// A named thing (env var, query in a collection) was not found.
    NotFound,
    /// Drop of a permission that is not defined.
    BadRequest,
    /// Inconsistent metadata or an internal failure.
    Unexpected,
    /// `set_custom_types` validation failure.
    InvalidCustomTypes,
    /// A `run_sql` statement failed.
    PostgresError,
    /// The object is being worked on (an event in delivery).
    Busy,
    /// A remote schema could not be reached or answered with an invalid schema.
    RemoteSchemaError,
    /// A remote schema clashes with the rest of the GraphQL schema.
    RemoteSchemaConflicts,
    /// Inherited roles whose parents form a cycle.
    CyclicDependency,
    /// A stored GraphQL document does not validate against the schema (a REST endpoint's).
    ValidationFailed,
}

impl Code {
    /// The code as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::ParseFailed => "parse-failed",
            Code::NotExists => "not-exists",
            Code::AlreadyExists => "already-exists",
            Code::AlreadyTracked => "already-tracked",
            Code::AlreadyUntracked => "already-untracked",
            Code::DependencyError => "dependency-error",
            Code::AccessDenied => "access-denied",
            Code::NotSupported => "not-supported",
            Code::ConstraintViolation => "constraint-violation",
            Code::ConstraintError => "constraint-error",
            Code::InvalidParams => "invalid-params",
            Code::NotFound => "not-found",
            Code::BadRequest => "bad-request",
            Code::ValidationFailed => "validation-failed",
            Code::Unexpected => "unexpected",
            Code::InvalidCustomTypes => "invalid-custom-types",
            Code::PostgresError => "postgres-error",
            Code::Busy => "busy",
            Code::RemoteSchemaError => "remote-schema-error",
            Code::RemoteSchemaConflicts => "remote-schema-conflicts",
            Code::CyclicDependency => "cyclic-dependency",
        }
    }
}

/// What a `not-exists` or `not-found` error (or a `constraint-violation` about a missing
/// reference, such as an unknown computed field in a select permission) found missing. The
/// Kubernetes controller retries each kind differently: a database object appears only through
/// a migration, a metadata object through another resource's reconcile, an environment
/// variable through a new Deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// A table, view, column or function in Postgres.
    DatabaseObject,
    /// An object of the metadata: a tracked table, relationship, computed field, permission,
    /// query collection or query.
    Metadata,
    /// An environment variable of the process that ran the operation (a remote schema's URL
    /// or header value): the Deployment's environment brings it, not a resource.
    Environment,
}

/// A metadata request that cannot be carried out; always answered with HTTP 400.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct MetadataError {
    /// What kind of failure, for clients to match on.
    pub code: Code,
    /// Where in the request the problem was found.
    pub path: JsonPath,
    /// Human-readable explanation.
    pub message: String,
    /// Extra detail for admins (e.g. the inconsistent objects); boxed to keep results small.
    pub internal: Option<Box<Value>>,
    /// For `not-exists` and `not-found`: what is missing. Never on the wire.
    pub missing: Option<Missing>,
}

impl MetadataError {
    /// An error with the given code, path and message.
    pub fn new(code: Code, path: JsonPath, message: impl Into<String>) -> Self {
        MetadataError {
            code,
            path,
            message: message.into(),
            internal: None,
            missing: None,
        }
    }

    /// Records what is missing (errors that say something does not exist).
    pub fn with_missing(mut self, missing: Missing) -> Self {
        self.missing = Some(missing);
        self
    }

    /// Attaches admin-only detail.
    pub fn with_internal(mut self, internal: Value) -> Self {
        self.internal = Some(Box::new(internal));
        self
    }

    /// Re-roots the path under `prefix` (errors of `bulk` elements).
    pub fn under(mut self, prefix: &JsonPath) -> Self {
        self.path = prefix.join(&self.path);
        self
    }
}

/// Shorthand for a `parse-failed` error.
pub fn parse_failed(path: JsonPath, message: impl Into<String>) -> MetadataError {
    MetadataError::new(Code::ParseFailed, path, message)
}

/// Shorthand for a `not-exists` error about a table, view, column or function missing from
/// Postgres.
pub fn not_exists_in_database(path: JsonPath, message: impl Into<String>) -> MetadataError {
    MetadataError::new(Code::NotExists, path, message).with_missing(Missing::DatabaseObject)
}

/// Shorthand for a `not-exists` error about an object missing from the metadata.
pub fn not_exists_in_metadata(path: JsonPath, message: impl Into<String>) -> MetadataError {
    MetadataError::new(Code::NotExists, path, message).with_missing(Missing::Metadata)
}

/// Shorthand for an `already-exists` error.
pub fn already_exists(path: JsonPath, message: impl Into<String>) -> MetadataError {
    MetadataError::new(Code::AlreadyExists, path, message)
}

/// Result of the metadata layer.
pub type Result<T, E = MetadataError> = std::result::Result<T, E>;
