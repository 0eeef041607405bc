//! Remote relationships answered after the statement (`docs/metadata-api.md`, "Remote
//! relationships"): the slots the statement wrote are found in its bytes; for each occurrence,
//! one request to its remote carries every distinct argument set as an aliased field (`f0`,
//! `f1`, …); each slot is replaced by the value its alias answered, followed down the chain.
//! The statement's own bytes are copied as they are. A remote failure fails the operation,
//! with errors at the client paths of the rows that used the failing alias.

use super::error::{GraphqlError, InternalError};
use super::execute::Run;
use super::join_slots::{self, Slot, Step};
use super::table_join;
use crate::graphql::ir::{JoinOwner, RemoteJoinPart};
use crate::remote::forward::{self, ForwardError};
use async_graphql_value::{ConstValue, Name};
use bytes::Bytes;
use indexmap::IndexMap;
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// `bytes` (a statement's JSON) with its remote relationship slots answered.
pub(super) async fn complete(run: &Run<'_>, bytes: Bytes) -> Result<Bytes, GraphqlError> {
    let parts = &run.plan.operation.joins;
    if parts.is_empty() {
        return Ok(bytes);
    }
    let slots = join_slots::find(&bytes).map_err(|e| InternalError::RemoteJoin(e.to_string()))?;
    if slots.is_empty() {
        return Ok(bytes);
    }
    // Per occurrence: its distinct calls (by their text) and, per slot, the alias it uses.
    let mut calls: Vec<IndexMap<String, usize>> = vec![IndexMap::new(); parts.len()];
    let mut aliases = Vec::with_capacity(slots.len());
    for slot in &slots {
        let part = parts
            .get(slot.occurrence)
            .ok_or_else(|| InternalError::RemoteJoin("unknown occurrence".to_owned()))?;
        if let Some(key) = slot.values.values().find_map(unprintable) {
            return Err(GraphqlError::RemoteJoin(vec![(
                json!({"message": format!(
                    "a join value holds the object key \"{key}\", which is not a GraphQL name"),
                    "path": client_path(slot),
                    "extensions": {"path": "$", "code": "bad-request"}}),
                json!({"remote_schema": part.remote}),
            )]));
        }
        let text = call_text(part, &slot.values);
        let known = &mut calls[slot.occurrence];
        let next = known.len();
        aliases.push(*known.entry(text).or_insert(next));
    }
    let sends = parts
        .iter()
        .zip(&calls)
        .filter(|(_, calls)| !calls.is_empty())
        .map(|(part, calls)| send(run, part, calls));
    // Within the operation's time limit, as every other call.
    let all = async { Ok::<_, GraphqlError>(futures_util::future::join_all(sends).await) };
    let answers = super::deadline::bounded(run.deadline, all).await?;
    let mut answered: HashMap<usize, Map<String, Value>> = HashMap::new();
    let mut errors = Vec::new();
    for (part, answer) in parts
        .iter()
        .zip(&calls)
        .filter(|(_, calls)| !calls.is_empty())
        .map(|(part, _)| part)
        .zip(answers)
    {
        match answer {
            Ok(data) => {
                answered.insert(part.occurrence, data);
            }
            Err(failure) => {
                let internal = json!({"remote_schema": part.remote,
                    "request": {"query": document(part, &calls[part.occurrence])}});
                errors.extend(
                    client_errors(part, failure, &slots, &aliases)
                        .into_iter()
                        .map(|error| (error, internal.clone())),
                );
            }
        }
    }
    if !errors.is_empty() {
        return Err(GraphqlError::RemoteJoin(errors));
    }
    for part in parts {
        let Some(data) = answered.get_mut(&part.occurrence) else {
            continue;
        };
        let roots = data
            .values_mut()
            .filter_map(|value| leaf(value, part))
            .map(|leaf| (part.remote.as_str(), leaf))
            .collect();
        table_join::complete(run, JoinOwner::Join(part.occurrence), roots).await?;
    }
    let replacements: Vec<Bytes> = slots
        .iter()
        .zip(&aliases)
        .map(|(slot, alias)| {
            let part = &parts[slot.occurrence];
            let mut value = answered
                .get(&slot.occurrence)
                .and_then(|data| data.get(&format!("f{alias}")))
                .cloned()
                .unwrap_or(Value::Null);
            for (field, _) in part.chain.iter().skip(1) {
                value = value.get(field).cloned().unwrap_or(Value::Null);
            }
            Bytes::from(value.to_string())
        })
        .collect();
    Ok(join_slots::splice(&bytes, &slots, &replacements))
}

/// The leaf of an alias's answer, down its chain.
fn leaf<'v>(mut value: &'v mut Value, part: &RemoteJoinPart) -> Option<&'v mut Value> {
    for (field, _) in part.chain.iter().skip(1) {
        value = value.get_mut(field)?;
    }
    Some(value)
}

/// An object key in a join value that GraphQL cannot print as an input field name (a `jsonb`
/// value's), if any: a value is printed into the document sent, so its keys must be names.
fn unprintable(value: &Value) -> Option<&str> {
    match value {
        Value::Object(map) => {
            map.iter().find_map(
                |(key, inner)| match crate::metadata::types::GraphQLName::is_valid(key) {
                    true => unprintable(inner),
                    false => Some(key.as_str()),
                },
            )
        }
        Value::Array(items) => items.iter().find_map(unprintable),
        _ => None,
    }
}

/// The client path of a slot's field (response keys and list indices).
fn client_path(slot: &Slot) -> Vec<Value> {
    slot.path
        .iter()
        .map(|step| match step {
            Step::Key(k) => json!(k),
            Step::Index(i) => json!(i),
        })
        .collect()
}

/// The chain of one slot's call as GraphQL text: templates filled with its join values, the
/// client's arguments merged into the leaf's, the client's selection under the leaf.
fn call_text(part: &RemoteJoinPart, values: &Map<String, Value>) -> String {
    let mut text = String::new();
    let last = part.chain.len().saturating_sub(1);
    for (i, (field, template)) in part.chain.iter().enumerate() {
        let mut arguments: IndexMap<Name, ConstValue> = template
            .iter()
            .map(|(k, v)| (Name::new(k), constant(&fill(v, values))))
            .collect();
        if i == last {
            for (k, v) in &part.client_arguments {
                let merged = match arguments.shift_remove(k.as_str()) {
                    Some(filled) => merge(filled, v.clone()),
                    None => v.clone(),
                };
                arguments.insert(Name::new(k), merged);
            }
        }
        text.push_str(field);
        if !arguments.is_empty() {
            let printed: Vec<String> = arguments.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            text.push('(');
            text.push_str(&printed.join(", "));
            text.push(')');
        }
        if i < last {
            text.push_str(" { ");
        }
    }
    if !part.selection.is_empty() {
        text.push(' ');
        text.push_str(&part.selection);
    }
    for _ in 0..last {
        text.push_str(" }");
    }
    text
}

/// A template with its `"$column"` strings replaced by the row's values.
fn fill(template: &Value, values: &Map<String, Value>) -> Value {
    match template {
        Value::String(s) => match s.strip_prefix('$') {
            Some(column) => values.get(column).cloned().unwrap_or(Value::Null),
            None => template.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(|v| fill(v, values)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), fill(v, values)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn constant(value: &Value) -> ConstValue {
    ConstValue::from_json(value.clone()).unwrap_or(ConstValue::Null)
}

/// Input objects merged key by key; otherwise the template's value stands.
fn merge(template: ConstValue, client: ConstValue) -> ConstValue {
    match (template, client) {
        (ConstValue::Object(mut ours), ConstValue::Object(theirs)) => {
            for (k, v) in theirs {
                let merged = match ours.shift_remove(&k) {
                    Some(mine) => merge(mine, v),
                    None => v,
                };
                ours.insert(k, merged);
            }
            ConstValue::Object(ours)
        }
        (template, _) => template,
    }
}

/// One occurrence's document: its calls as aliased fields.
fn document(part: &RemoteJoinPart, calls: &IndexMap<String, usize>) -> String {
    let mut document = String::from("query");
    if !part.declarations.is_empty() {
        document.push_str(&format!(" ({})", part.declarations.join(", ")));
    }
    document.push_str(" {");
    for (text, alias) in calls {
        document.push_str(&format!(" f{alias}: {text}"));
    }
    document.push_str(" }");
    document
}

/// One occurrence's request: its calls as aliased fields; the answer's `data`.
async fn send(
    run: &Run<'_>,
    part: &RemoteJoinPart,
    calls: &IndexMap<String, usize>,
) -> Result<Map<String, Value>, ForwardError> {
    let remote = run
        .version
        .catalog
        .resolution
        .resolved
        .remote_schemas
        .iter()
        .find(|r| r.name() == part.remote);
    let Some(remote) = remote else {
        return Err(ForwardError::Remote(crate::remote::RemoteError::Invalid(
            format!("remote schema \"{}\" is not served", part.remote),
        )));
    };
    let document = document(part, calls);
    let call = forward::Call {
        remote,
        document: &document,
        variables: part
            .variables
            .iter()
            .filter_map(|name| run.variables.get(name).map(|v| (name.clone(), v.clone())))
            .collect(),
        operation_name: None,
        read_only: true,
        session: run.caller.session,
        client_headers: run.caller.headers,
    };
    forward::send(call).await.map(|answered| answered.data)
}

/// The client's errors for a failed occurrence: a remote error naming an alias becomes one
/// error per row that used it, at that row's field and the remote path below the chain; any
/// other failure is one error at the first row's field.
fn client_errors(
    part: &RemoteJoinPart,
    failure: ForwardError,
    slots: &[Slot],
    aliases: &[usize],
) -> Vec<Value> {
    let rows: Vec<(&Slot, usize)> = slots
        .iter()
        .zip(aliases.iter().copied())
        .filter(|(slot, _)| slot.occurrence == part.occurrence)
        .collect();
    let path_of = client_path;
    let first = rows
        .first()
        .map(|(slot, _)| path_of(slot))
        .unwrap_or_default();
    let errors = match failure {
        ForwardError::Errors(errors) => errors,
        ForwardError::Remote(e) => {
            return vec![json!({"message": e.to_string(), "path": first,
                "extensions": {"path": "$", "code": "remote-schema-error"}})]
        }
    };
    let mut out = Vec::new();
    for error in errors {
        let remote_path: Vec<Value> = error
            .get("path")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let alias = remote_path
            .first()
            .and_then(Value::as_str)
            .and_then(|a| a.strip_prefix('f'))
            .and_then(|n| n.parse::<usize>().ok());
        let mut extensions = error
            .get("extensions")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        extensions
            .entry("code")
            .or_insert_with(|| json!("remote-schema-error"));
        extensions.entry("path").or_insert_with(|| json!("$"));
        let message = error.get("message").cloned().unwrap_or(json!(""));
        let below: Vec<Value> = remote_path.iter().skip(part.chain.len()).cloned().collect();
        let used: Vec<&Slot> = match alias {
            Some(alias) => rows
                .iter()
                .filter(|(_, a)| *a == alias)
                .map(|(slot, _)| *slot)
                .collect(),
            None => Vec::new(),
        };
        if used.is_empty() {
            out.push(json!({"message": message, "path": first, "extensions": extensions}));
            continue;
        }
        for slot in used {
            let mut path = path_of(slot);
            path.extend(below.iter().cloned());
            out.push(json!({"message": message, "path": path, "extensions": extensions}));
        }
    }
    out
}
