//! The only place errors become HTTP responses: status, `{"path","error","code"}` body, and
//! `internal` detail for admins. Internal failures are logged and answered generically.

use crate::auth::AuthError;
use crate::catalog::CatalogError;
use crate::metadata::MetadataError;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
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
    /// 409 `conflict`.
    #[error("{0}")]
    Conflict(String),
    /// 400 `invalid-json`.
    #[error("{0}")]
    InvalidJson(String),
    /// 413 `payload-too-large`.
    #[error("request body is larger than {0} bytes")]
    PayloadTooLarge(usize),
    /// 404 `not-found`.
    #[error("resource does not exist")]
    NotFound,
    /// 500 `unexpected`; the detail is logged, and sent under `internal` only in dev mode.
    #[error("{detail}")]
    Internal {
        /// What went wrong.
        detail: String,
        /// Whether the client may see `detail` (`BASALT_DEV_MODE`).
        expose: bool,
    },
}

impl ApiError {
    /// An internal failure whose detail stays in the log.
    pub fn internal(detail: impl Into<String>) -> Self {
        ApiError::Internal {
            detail: detail.into(),
            expose: false,
        }
    }

    /// Lets internal detail reach the client when `dev_mode` is on.
    pub fn exposing(self, dev_mode: bool) -> Self {
        match self {
            ApiError::Internal { detail, .. } => ApiError::Internal {
                detail,
                expose: dev_mode,
            },
            other => other,
        }
    }
}

impl From<CatalogError> for ApiError {
    fn from(err: CatalogError) -> Self {
        match err {
            CatalogError::Metadata(e) => ApiError::Metadata(e),
            CatalogError::Conflict { .. } => ApiError::Conflict(err.to_string()),
            other => ApiError::internal(other.to_string()),
        }
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
            ApiError::Auth(e) => (
                StatusCode::from_u16(e.status()).unwrap_or(StatusCode::BAD_REQUEST),
                body("$", &e.to_string(), e.code()),
            ),
            ApiError::AdminOnly => (
                StatusCode::BAD_REQUEST,
                body("$.args", &self.to_string(), "access-denied"),
            ),
            ApiError::Conflict(m) => (
                StatusCode::CONFLICT,
                body("$.resource_version", m, "conflict"),
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
            ApiError::Internal { detail, expose } => {
                tracing::error!(error = %detail, "internal error");
                let mut v = body("$", "unexpected internal error", "unexpected");
                if *expose {
                    v["internal"] = json!({ "error": detail });
                }
                (StatusCode::INTERNAL_SERVER_ERROR, v)
            }
        };
        (status, Json(value)).into_response()
    }
}
