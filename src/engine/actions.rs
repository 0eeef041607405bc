//! The action calls of one operation: what SQL binds of each (arguments, kept headers, the
//! document, and once the handler has answered, its output), and the handler calls
//! themselves — a query's all at once before its statement runs, a mutation's each at its
//! field's turn.

use super::error::{GraphqlError, InternalError};
use super::request::Caller;
use super::version::ApiVersion;
use crate::actions::{self, Call};
use crate::execute::Provided;
use crate::graphql::ir::{ActionPart, MutationField, RootField};
use crate::graphql::plan::OperationIr;
use crate::resolve::actions::ResolvedAction;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The action calls of an operation by response key, with the values SQL binds of each.
pub(super) type Calls = BTreeMap<String, ActionValues>;

/// What SQL binds of one action call.
#[derive(Debug, Clone, Default)]
pub(super) struct ActionValues {
    /// The arguments as sent to the handler.
    input: Value,
    /// Client headers kept for the handler.
    headers: Value,
    /// The handler's output (null until it answered).
    output: Value,
    /// The operation's document.
    document: Value,
}

/// The calls' values by the names statements bind them by; `None` without calls.
pub(super) fn provided(calls: &Calls) -> Option<Provided> {
    if calls.is_empty() {
        return None;
    }
    let mut provided = Provided::new();
    for (key, values) in calls {
        let parts = [
            (ActionPart::Input, &values.input),
            (ActionPart::Headers, &values.headers),
            (ActionPart::Output, &values.output),
            (ActionPart::Document, &values.document),
        ];
        for (part, value) in parts {
            provided.insert(part.name(key), value.clone());
        }
    }
    Some(provided)
}

/// The calls an operation makes (query actions, synchronous and asynchronous mutation
/// actions), their values worked out from the request.
pub(super) fn prepare(
    version: &ApiVersion,
    caller: Caller<'_>,
    operation: &OperationIr,
    variables: &Map<String, Value>,
    document: &str,
) -> Result<Calls, GraphqlError> {
    let query = operation.data.fields.iter().filter_map(|(key, f)| match f {
        RootField::Action(a) => Some((key, &a.call)),
        _ => None,
    });
    let mutation = operation
        .mutation
        .iter()
        .flat_map(|m| m.fields.iter())
        .filter_map(|(key, f)| match f {
            MutationField::Action(a) => Some((key, &a.call)),
            MutationField::AsyncAction(call) => Some((key, call)),
            _ => None,
        });
    let mut calls = Calls::new();
    for (key, call) in query.chain(mutation) {
        let action = find(version, &call.action)?;
        calls.insert(
            key.clone(),
            ActionValues {
                input: actions::input(&call.input, variables),
                headers: Value::Object(actions::forwarded_headers(action, caller.headers)),
                output: Value::Null,
                document: Value::String(document.to_owned()),
            },
        );
    }
    Ok(calls)
}

/// The served action named `name`.
fn find<'a>(version: &'a ApiVersion, name: &str) -> Result<&'a ResolvedAction, GraphqlError> {
    version
        .catalog
        .resolution
        .resolved
        .actions
        .iter()
        .find(|a| a.name() == name)
        .ok_or_else(|| InternalError::ActionGone(name.to_owned()).into())
}

/// Calls the handler of the action at `key` and keeps its output for SQL to bind.
pub(super) async fn call_one(
    version: &ApiVersion,
    caller: Caller<'_>,
    key: &str,
    action: &str,
    calls: &mut Calls,
) -> Result<(), GraphqlError> {
    let resolved = &version.catalog.resolution.resolved;
    let action = find(version, action)?;
    let values = calls
        .get(key)
        .ok_or_else(|| InternalError::NoActionCall(key.to_owned()))?;
    let session = caller.session.to_json();
    let forwarded = match &values.headers {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    let document = values.document.as_str().unwrap_or_default().to_owned();
    let request = Call {
        action,
        input: &values.input,
        session: &session,
        document: &document,
        forwarded: &forwarded,
    };
    let span = tracing::debug_span!("action.call", "otel.kind" = "client", action = %action.name());
    let output =
        tracing::Instrument::instrument(actions::call(request, &resolved.custom_types), span)
            .await?;
    if let Some(values) = calls.get_mut(key) {
        values.output = output;
    }
    Ok(())
}

/// Calls the handlers of a query's actions, all at once; the first failure (in document
/// order) fails the operation.
pub(super) async fn call_queries(
    version: &ApiVersion,
    caller: Caller<'_>,
    operation: &OperationIr,
    calls: &mut Calls,
) -> Result<(), GraphqlError> {
    let wanted: Vec<(String, String)> = operation
        .data
        .fields
        .iter()
        .filter_map(|(key, f)| match f {
            RootField::Action(a) => Some((key.clone(), a.call.action.clone())),
            _ => None,
        })
        .collect();
    if wanted.is_empty() {
        return Ok(());
    }
    let results = futures_util::future::join_all(wanted.iter().map(|(key, action)| {
        let mut own = Calls::new();
        if let Some(v) = calls.get(key) {
            own.insert(key.clone(), v.clone());
        }
        async move {
            call_one(version, caller, key, action, &mut own).await?;
            Ok::<_, GraphqlError>(own)
        }
    }))
    .await;
    for result in results {
        calls.extend(result?);
    }
    Ok(())
}
