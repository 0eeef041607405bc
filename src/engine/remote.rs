//! The remote schemas' part of an operation: one call per remote, sent at once, their answers
//! laid among the operation's fields under the client's keys.

use super::error::{GraphqlError, InternalError};
use super::request::Caller;
use super::respond::{FieldValue, Fields};
use super::version::ApiVersion;
use crate::graphql::plan::OperationIr;
use crate::remote::forward;
use serde_json::{Map, Value};
use tracing::Instrument;

/// The calls to remote schemas an operation makes, ready to send.
pub(super) fn calls<'a>(
    version: &'a ApiVersion,
    caller: Caller<'a>,
    operation: &'a OperationIr,
    variables: &'a Map<String, Value>,
) -> Result<Vec<forward::Call<'a>>, GraphqlError> {
    operation
        .remote
        .iter()
        .map(|part| {
            let remote = version
                .catalog
                .resolution
                .resolved
                .remote_schemas
                .iter()
                .find(|r| r.name() == part.remote)
                .ok_or_else(|| InternalError::RemoteSchemaGone(part.remote.clone()))?;
            Ok(forward::Call {
                remote,
                document: &part.document,
                variables: part
                    .variables
                    .iter()
                    .filter_map(|name| variables.get(name).map(|v| (name.clone(), v.clone())))
                    .collect(),
                operation_name: part.operation_name.as_deref(),
                read_only: part.read_only,
                session: caller.session,
                client_headers: caller.headers,
            })
        })
        .collect()
}

/// Sends every call at once; the first failure (in document order) fails the operation.
pub(super) async fn send_all(
    calls: Vec<forward::Call<'_>>,
) -> Result<Vec<forward::Answered>, GraphqlError> {
    if calls.is_empty() {
        return Ok(Vec::new());
    }
    let span = tracing::debug_span!("remote", calls = calls.len());
    let answers = futures_util::future::join_all(calls.into_iter().map(forward::send))
        .instrument(span)
        .await;
    answers
        .into_iter()
        .map(|a| a.map_err(GraphqlError::from))
        .collect()
}

/// The remotes' answers among the operation's fields, under the client's keys (`null` for a
/// key a remote left out); their cookies for the HTTP response.
pub(super) fn merge(
    fields: &mut Fields,
    answered: Vec<forward::Answered>,
    operation: &OperationIr,
    cookies: &mut Vec<http::HeaderValue>,
) {
    for (part, mut answer) in operation.remote.iter().zip(answered) {
        for key in &part.keys {
            let value = answer.data.remove(key).unwrap_or(Value::Null);
            fields.push(key, FieldValue::Value(value));
        }
        cookies.append(&mut answer.cookies);
    }
}
