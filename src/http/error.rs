//! The only place errors become HTTP responses: status, `{"path","error","code"}` body, and
//! `internal` detail for admins; and for GraphQL, `{"errors":[{"message","extensions":{"path",
//! "code"}}]}` with the wire code of every engine, planner and executor failure. Internal
//! failures are logged and answered generically.

use crate::auth::AuthError;
use crate::engine::GraphqlError;
use crate::execute::{ExecuteError, Refusal};
use crate::graphql::plan::PlanErrorKind;
use crate::metadata::MetadataError;
use crate::transaction::TransactionError;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use bytes::Bytes;
use serde_json::{json, Value};

/// Every failure an HTTP handler can return.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400 with the metadata error's code and path.
    #[error(transparent)]
    Metadata(#[from] MetadataError),
    /// 401 `access-denied`.
    #[error(transparent)]
    Auth(#[from] AuthError),
    /// 400 `access-denied`: a non-admin role called an admin-only API.
    #[error("restricted access : admin only")]
    AdminOnly,
    /// 409 `conflict`: the caller's expected `resource_version` is stale.
    #[error("resource_version mismatch: expected {expected}, but the catalog is at {current}")]
    Conflict { expected: i64, current: i64 },
    /// 400 `invalid-json`.
    #[error("{0}")]
    InvalidJson(String),
    /// 413 `payload-too-large`.
    #[error("request body is larger than {0} bytes")]
    PayloadTooLarge(usize),
    /// 404 `not-found`.
    #[error("resource does not exist")]
    NotFound,
    /// A REST endpoint's refusal (see [`RestRefusal`]).
    #[error(transparent)]
    Rest(#[from] RestRefusal),
    /// 500 `unexpected`; the error is logged, and sent under `internal` only in dev mode.
    #[error("{error}")]
    Internal {
        error: Box<dyn std::error::Error + Send + Sync>,
        /// Whether the client may see the error (`BASALT_DEV_MODE`).
        expose: bool,
    },
}

/// Why `/api/rest/…` answers with an error (see `docs/rest.md`, "Responses").
#[derive(Debug, thiserror::Error)]
pub enum RestRefusal {
    /// 400 `bad-request`: not one of the five methods.
    #[error("Method {0} not supported.")]
    Method(String),
    /// 404 `not-found`: no endpoint's template matches the path.
    #[error("Endpoint not found")]
    NotFound,
    /// 405 `method-not-allowed` (with `Allow`): templates match, none with this method.
    #[error("Allowed methods: {}", .0.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(", "))]
    MethodNotAllowed(Vec<crate::metadata::types::RestMethod>),
    /// 500 `unexpected`: two endpoints answer (the metadata rules prevent it).
    #[error("Multiple endpoints match request")]
    Ambiguous,
    /// 400 `parse-failed`.
    #[error("request body must be a JSON object")]
    Body,
    /// 400 `bad-request`: a variable the operation does not declare.
    #[error("Unexpected variable {0}")]
    UnexpectedVariable(String),
    /// 400 `bad-request`: a list variable given as text.
    #[error("List variables are not currently supported in URL or Query parameters. (Variable {name}, with value \"{text}\")")]
    ListVariable { name: String, text: String },
    /// 400 `access-denied`: the OpenAPI document is the admin's.
    #[error("You have to be an admin to access this endpoint")]
    AdminOnly,
    /// The GraphQL answer's first error, with a status of its code; `expose`: every error
    /// under `internal`.
    #[error("the operation failed")]
    Graphql { body: Bytes, expose: bool },
}

impl RestRefusal {
    /// The status, path, message, code and internal detail.
    fn wire(&self) -> (StatusCode, String, String, String, Option<Value>) {
        let plain = |status, code: &str| {
            (
                status,
                "$".to_owned(),
                self.to_string(),
                code.to_owned(),
                None,
            )
        };
        match self {
            RestRefusal::AdminOnly => plain(StatusCode::BAD_REQUEST, "access-denied"),
            RestRefusal::Method(_)
            | RestRefusal::UnexpectedVariable(_)
            | RestRefusal::ListVariable { .. } => plain(StatusCode::BAD_REQUEST, "bad-request"),
            RestRefusal::NotFound => plain(StatusCode::NOT_FOUND, "not-found"),
            RestRefusal::MethodNotAllowed(_) => {
                plain(StatusCode::METHOD_NOT_ALLOWED, "method-not-allowed")
            }
            RestRefusal::Ambiguous => plain(StatusCode::INTERNAL_SERVER_ERROR, "unexpected"),
            RestRefusal::Body => plain(StatusCode::BAD_REQUEST, "parse-failed"),
            RestRefusal::Graphql { body, expose } => {
                let answer: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
                let first = &answer["errors"][0];
                // An error without a code comes from a remote schema or an action handler,
                // as it wrote it: the client's request failed there, not in Basalt.
                let (code, status) = match first["extensions"]["code"].as_str() {
                    None => ("unexpected", StatusCode::BAD_REQUEST),
                    Some(code) => (code, rest_status(code)),
                };
                let path = first["extensions"]["path"].as_str().unwrap_or("$");
                let message = first["message"].as_str().unwrap_or("unexpected error");
                let internal = expose.then(|| json!({"errors": answer["errors"]}));
                let code = code.to_owned();
                (status, path.to_owned(), message.to_owned(), code, internal)
            }
        }
    }
}

/// The status of a REST answer whose operation failed with the wire code `code`.
fn rest_status(code: &str) -> StatusCode {
    match code {
        "access-denied" => StatusCode::UNAUTHORIZED,
        "unexpected" => StatusCode::INTERNAL_SERVER_ERROR,
        "rate-limit-exceeded" => StatusCode::TOO_MANY_REQUESTS,
        "payload-too-large" => StatusCode::PAYLOAD_TOO_LARGE,
        _ => StatusCode::BAD_REQUEST,
    }
}

impl ApiError {
    /// An internal failure whose detail stays in the log.
    pub fn internal(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        ApiError::Internal {
            error: Box::new(error),
            expose: false,
        }
    }

    /// Lets internal detail reach the client when `dev_mode` is on.
    pub fn exposing(self, dev_mode: bool) -> Self {
        match self {
            ApiError::Internal { error, .. } => ApiError::Internal {
                error,
                expose: dev_mode,
            },
            other => other,
        }
    }
}

impl From<TransactionError> for ApiError {
    fn from(err: TransactionError) -> Self {
        match err {
            TransactionError::Metadata(e) => ApiError::Metadata(e),
            TransactionError::Conflict { expected, current } => {
                ApiError::Conflict { expected, current }
            }
            TransactionError::Catalog(other) => ApiError::internal(other),
        }
    }
}

/// The status (on `/v1/query`; GraphQL answers 200) and wire code of an authentication failure.
fn auth_wire(err: &AuthError) -> (StatusCode, &'static str) {
    match err {
        AuthError::InvalidSecret | AuthError::MissingSecret | AuthError::HookUnauthorized => {
            (StatusCode::UNAUTHORIZED, "access-denied")
        }
        AuthError::RoleNotAllowed => (StatusCode::BAD_REQUEST, "access-denied"),
        AuthError::InvalidHeader(_) => (StatusCode::BAD_REQUEST, "invalid-headers"),
        AuthError::InvalidJwt(_) => (StatusCode::BAD_REQUEST, "invalid-jwt"),
        AuthError::JwtInvalidClaims(_) => (StatusCode::BAD_REQUEST, "jwt-invalid-claims"),
        AuthError::JwtMissingRoleClaims(_) => (StatusCode::BAD_REQUEST, "jwt-missing-role-claims"),
        AuthError::HookNoRole => (StatusCode::BAD_REQUEST, "invalid-params"),
        AuthError::HookFailed(_) => (StatusCode::INTERNAL_SERVER_ERROR, "unexpected"),
    }
}

fn body(path: &str, error: &str, code: &str) -> Value {
    json!({"path": path, "error": error, "code": code})
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, value) = match &self {
            ApiError::Metadata(e) => {
                let mut v = body(e.path.as_str(), &e.message, e.code.as_str());
                if let Some(internal) = &e.internal {
                    v["internal"] = (**internal).clone();
                }
                (StatusCode::BAD_REQUEST, v)
            }
            ApiError::Auth(e) => {
                let (status, code) = auth_wire(e);
                (status, body("$", &e.to_string(), code))
            }
            ApiError::AdminOnly => (
                StatusCode::BAD_REQUEST,
                body("$.args", &self.to_string(), "access-denied"),
            ),
            ApiError::Conflict { .. } => (
                StatusCode::CONFLICT,
                body("$.resource_version", &self.to_string(), "conflict"),
            ),
            ApiError::InvalidJson(m) => (StatusCode::BAD_REQUEST, body("$", m, "invalid-json")),
            ApiError::PayloadTooLarge(_) => (
                StatusCode::PAYLOAD_TOO_LARGE,
                body("$", &self.to_string(), "payload-too-large"),
            ),
            ApiError::NotFound => (
                StatusCode::NOT_FOUND,
                body("$", &self.to_string(), "not-found"),
            ),
            ApiError::Rest(refusal) => {
                let (status, path, message, code, internal) = refusal.wire();
                let mut v = body(&path, &message, &code);
                if let Some(internal) = internal {
                    v["internal"] = internal;
                }
                let mut response = (status, Json(v)).into_response();
                if let RestRefusal::MethodNotAllowed(methods) = refusal {
                    let allow: Vec<&str> = methods.iter().map(|m| m.as_str()).collect();
                    if let Ok(value) = axum::http::HeaderValue::from_str(&allow.join(", ")) {
                        response
                            .headers_mut()
                            .insert(axum::http::header::ALLOW, value);
                    }
                }
                return response;
            }
            ApiError::Internal { error, expose } => {
                tracing::error!(%error, "internal error");
                let mut v = body("$", "unexpected internal error", "unexpected");
                if *expose {
                    v["internal"] = json!({ "error": error.to_string() });
                }
                (StatusCode::INTERNAL_SERVER_ERROR, v)
            }
        };
        (status, Json(value)).into_response()
    }
}

/// What a GraphQL error looks like on the wire.
struct GraphqlWire {
    message: String,
    path: String,
    code: &'static str,
    internal: Option<Value>,
}

impl GraphqlWire {
    fn at_root(code: &'static str, message: String) -> Self {
        GraphqlWire {
            message,
            path: "$".to_owned(),
            code,
            internal: None,
        }
    }
}

/// The code and message of a statement's failure.
fn execute_wire(err: &ExecuteError) -> (&'static str, String) {
    match err {
        ExecuteError::Database {
            refusal, message, ..
        } => match refusal {
            Refusal::BadRequest => ("bad-request", message.clone()),
            Refusal::DataException => ("data-exception", message.clone()),
            Refusal::CheckViolation => (
                "permission-error",
                format!("Check constraint violation. {message}"),
            ),
            Refusal::RestrictViolation => (
                "constraint-violation",
                format!("Can not delete or update due to data being referred. {message}"),
            ),
            Refusal::NotNullViolation => (
                "constraint-violation",
                format!("Not-NULL violation. {message}"),
            ),
            Refusal::ForeignKeyViolation => (
                "constraint-violation",
                format!("Foreign key violation. {message}"),
            ),
            Refusal::UniqueViolation => (
                "constraint-violation",
                format!("Uniqueness violation. {message}"),
            ),
            Refusal::ExclusionViolation => (
                "constraint-violation",
                format!("Exclusion violation. {message}"),
            ),
            Refusal::IntegrityViolation => ("constraint-violation", message.clone()),
            Refusal::SyntaxOrAccess => ("constraint-error", message.clone()),
            // Postgres's message is not for clients when the failure is internal.
            Refusal::Other => ("unexpected", "database query error".to_owned()),
        },
        ExecuteError::MissingSessionVariable(_) => ("not-found", err.to_string()),
        ExecuteError::CheckFailed(_) => ("permission-error", err.to_string()),
        ExecuteError::ParentNotInserted(_) => ("constraint-violation", err.to_string()),
        ExecuteError::Unexpected(_) => ("unexpected", err.to_string()),
    }
}

fn graphql_wire(err: &GraphqlError) -> GraphqlWire {
    use crate::remote::forward::ForwardError;
    let message = err.to_string();
    match err {
        GraphqlError::Plan(e) => GraphqlWire {
            message: e.problem.to_string(),
            path: e.path.clone(),
            code: match e.kind() {
                PlanErrorKind::Parse => "parse-failed",
                PlanErrorKind::Validation => "validation-failed",
                PlanErrorKind::NotSupported => "not-supported",
            },
            internal: None,
        },
        GraphqlError::Execute { error, field } => {
            let (code, message) = execute_wire(error);
            GraphqlWire {
                message,
                path: match field {
                    Some(key) => format!("$.selectionSet.{key}"),
                    None => "$".to_owned(),
                },
                code,
                internal: error.internal(),
            }
        }
        GraphqlError::Auth(e) => GraphqlWire::at_root(auth_wire(e).1, message),
        GraphqlError::InvalidJson(_)
        | GraphqlError::InvalidRequest(_)
        | GraphqlError::InvalidVariables(_) => GraphqlWire::at_root("parse-failed", message),
        GraphqlError::BatchTooLarge { .. }
        | GraphqlError::TooDeep { .. }
        | GraphqlError::TooManyNodes { .. }
        | GraphqlError::NotAllowedOverGet
        | GraphqlError::SubscriptionOverHttp
        | GraphqlError::Introspection(_)
        | GraphqlError::ExplainMutation => GraphqlWire::at_root("validation-failed", message),
        GraphqlError::RateLimited { .. } => GraphqlWire::at_root("rate-limit-exceeded", message),
        GraphqlError::TimeLimit { .. } => GraphqlWire::at_root("time-limit-exceeded", message),
        GraphqlError::NotAllowListed => GraphqlWire {
            internal: Some(json!({"message": "query is not in any of the allowlists"})),
            ..GraphqlWire::at_root("validation-failed", message)
        },
        GraphqlError::Internal(e) => {
            tracing::error!(error = %e, "internal error");
            GraphqlWire {
                internal: Some(json!({ "error": e.to_string() })),
                ..GraphqlWire::at_root("unexpected", "unexpected internal error".to_owned())
            }
        }
        GraphqlError::Remote(ForwardError::Remote(e)) => GraphqlWire {
            internal: e.internal(),
            ..GraphqlWire::at_root("remote-schema-error", message)
        },
        // Answered by `graphql_errors` with the remote's own errors.
        GraphqlError::Remote(ForwardError::Errors(_)) | GraphqlError::RemoteJoin(_) => {
            GraphqlWire::at_root("remote-schema-error", message)
        }
        // Answered by `graphql_errors` with the error's own extensions.
        GraphqlError::Action(_) => GraphqlWire::at_root("unexpected", message),
    }
}

/// The HTTP status of a failed GraphQL request: 429 for a rate-limit refusal, 200 for
/// everything else (the errors are in the body).
pub fn graphql_status(err: &GraphqlError) -> StatusCode {
    match err {
        GraphqlError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
        _ => StatusCode::OK,
    }
}

/// `{"errors":[…]}` bytes for a failed GraphQL request; `internal` only when `expose` (admin
/// or dev mode).
pub fn graphql_body(err: &GraphqlError, expose: bool) -> Bytes {
    Bytes::from(json!({"errors": graphql_errors(err, expose)}).to_string())
}

/// The `errors` array of a failed GraphQL operation (one `{message, extensions}` item), as the
/// HTTP body and the WebSocket `error` messages carry it.
pub fn graphql_errors(err: &GraphqlError, expose: bool) -> serde_json::Value {
    use crate::remote::forward::ForwardError;
    if let GraphqlError::Remote(ForwardError::Errors(errors)) = err {
        // A remote schema's errors reach the client unchanged (`docs/remote-schemas.md`,
        // "Execution").
        return serde_json::Value::Array(errors.clone());
    }
    if let GraphqlError::RemoteJoin(errors) = err {
        // At each row's path; the remote schema and the document sent for the admin.
        let errors = errors
            .iter()
            .map(|(error, internal)| {
                let mut error = error.clone();
                if let (true, Some(extensions)) = (
                    expose,
                    error.get_mut("extensions").and_then(|e| e.as_object_mut()),
                ) {
                    extensions.insert("internal".to_owned(), internal.clone());
                }
                error
            })
            .collect();
        return serde_json::Value::Array(errors);
    }
    if let GraphqlError::Action(e) = err {
        // A handler's extensions reach the client as it wrote them (`docs/actions.md`,
        // "Answers").
        let mut extensions = e.extensions.clone();
        if let (true, Some(internal), Some(map)) = (expose, &e.internal, extensions.as_object_mut())
        {
            map.insert("internal".to_owned(), internal.clone());
        }
        return json!([{"message": e.message, "extensions": extensions}]);
    }
    let wire = graphql_wire(err);
    let mut extensions = json!({"path": wire.path, "code": wire.code});
    if let (true, Some(internal)) = (expose, wire.internal) {
        extensions["internal"] = internal;
    }
    json!([{"message": wire.message, "extensions": extensions}])
}
