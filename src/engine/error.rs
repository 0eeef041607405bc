//! Why a GraphQL request failed. The request's own faults (a document that does not parse or
//! fit the schema, a statement Postgres refuses, a remote's or handler's error) are told to
//! the client; Basalt's own ([`InternalError`]) are logged with their detail and answered with
//! a generic message. Each variant's wire code and path are decided in `http/error.rs`.

use crate::execute::ExecuteError;
use crate::graphql::plan::PlanError;

/// Why a GraphQL request failed.
#[derive(Debug, thiserror::Error)]
pub enum GraphqlError {
    /// The document does not parse or does not fit the role's schema.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A statement failed. `field` is the mutation root field (response key) it belongs to,
    /// when the error is about that field rather than the whole request.
    #[error("{error}")]
    Execute {
        error: Box<ExecuteError>,
        field: Option<String>,
    },
    #[error(transparent)]
    Auth(#[from] crate::auth::AuthError),
    /// The body is not JSON.
    #[error("invalid JSON: {0}")]
    InvalidJson(String),
    /// The body is JSON but not a GraphQL request.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The `variables` query parameter of a GET is not JSON.
    #[error("invalid variables: {0}")]
    InvalidVariables(String),
    /// A batch longer than the server's or the role's batch limit, whichever is smaller.
    #[error("batch size exceeds {limit}")]
    BatchTooLarge { limit: usize },
    /// The operation is deeper than the server's or the role's depth limit (counted as
    /// `crate::graphql::measure` does).
    #[error("query depth exceeds {limit}")]
    TooDeep { limit: usize },
    /// The operation has more nodes than the role's node limit.
    #[error("query node count exceeds {limit}")]
    TooManyNodes { limit: u32 },
    /// The role's rate limit (`max` operations a minute) refused the request. When to try
    /// again travels beside it, in the HTTP response's `Retry-After`.
    #[error("rate limit of {max} exceeded")]
    RateLimited { max: u32 },
    /// The operation ran past the role's time limit and was stopped.
    #[error("time limit of {limit}s exceeded")]
    TimeLimit {
        limit: crate::metadata::types::Seconds,
    },
    /// A mutation or subscription sent with GET.
    #[error("mutations and subscriptions are not allowed over GET")]
    NotAllowedOverGet,
    /// The allow-list is enforced and the document is not on it.
    #[error("query is not allowed")]
    NotAllowListed,
    /// The introspection fields could not be answered.
    #[error(transparent)]
    Introspection(#[from] crate::graphql::introspection::IntrospectionError),
    /// `explain` was asked for a mutation.
    #[error("only queries can be explained")]
    ExplainMutation,
    #[error("subscriptions are not supported over HTTP, use websockets instead")]
    SubscriptionOverHttp,
    /// A remote schema's part of the operation failed.
    #[error(transparent)]
    Remote(#[from] crate::remote::forward::ForwardError),
    /// Remote relationship calls failed: each client error (at its row's path) with what the
    /// admin also sees, the remote schema and the document sent.
    #[error("a remote relationship's remote schema failed")]
    RemoteJoin(Vec<(serde_json::Value, serde_json::Value)>),
    /// An action's handler failed or answered something unusable (boxed: it carries the
    /// whole exchange).
    #[error(transparent)]
    Action(Box<crate::actions::ActionError>),
    /// Basalt failed, not the request.
    #[error(transparent)]
    Internal(#[from] InternalError),
}

/// A failure of Basalt's own, never of the request: its detail is for the log.
#[derive(Debug, thiserror::Error)]
pub enum InternalError {
    /// A plan names a remote schema the version it was compiled against does not serve.
    #[error("remote schema \"{0}\" is gone")]
    RemoteSchemaGone(String),
    /// A plan names an action the version it was compiled against does not serve.
    #[error("the action \"{0}\" is gone")]
    ActionGone(String),
    /// A mutation's program calls an action its plan does not hold.
    #[error("no action call at \"{0}\"")]
    NoActionCall(String),
    /// A remembered (compressed) introspection answer could not be read back.
    #[error("a remembered introspection answer could not be read: {0}")]
    Remembered(String),
    /// A statement's remote relationship slots could not be read.
    #[error("remote relationship slots: {0}")]
    RemoteJoin(String),
}

impl GraphqlError {
    /// Whether the failure is Basalt's own rather than the request's.
    pub fn is_internal(&self) -> bool {
        matches!(self, GraphqlError::Internal(_))
    }
}

impl From<crate::actions::ActionError> for GraphqlError {
    fn from(error: crate::actions::ActionError) -> Self {
        GraphqlError::Action(Box::new(error))
    }
}

impl From<ExecuteError> for GraphqlError {
    fn from(error: ExecuteError) -> Self {
        GraphqlError::Execute {
            error: Box::new(error),
            field: None,
        }
    }
}
