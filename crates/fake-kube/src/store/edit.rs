//! What the store does to an object's JSON: timestamps, metadata fields set and stripped, the
//! checks of a request's body, server-side apply and JSON patches, and `continue` tokens.

use super::Rejection;
use crate::resources::ResourceType;
use serde_json::{Map, Value};

pub(super) fn rfc3339(seconds: u64) -> String {
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    let (year, month, day) = civil_date(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01, counted in 400-year eras (whose
/// length in days is fixed) from 0000-03-01, so that leap days fall at the end of a year.
pub(super) fn civil_date(days: u64) -> (u64, u64, u64) {
    const ERA_DAYS: u64 = 146_097;
    // Days from 0000-03-01 to 1970-01-01.
    let shifted = days + 719_468;
    let era = shifted / ERA_DAYS;
    let day_of_era = shifted % ERA_DAYS;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / (ERA_DAYS - 1)) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    // Months counted from March, each run of five months being 153 days long.
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

pub(super) fn metadata_mut(object: &mut Value) -> Option<&mut Map<String, Value>> {
    let top = object.as_object_mut()?;
    let metadata = top
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !metadata.is_object() {
        *metadata = Value::Object(Map::new());
    }
    metadata.as_object_mut()
}

/// Sets `metadata.<field>`.
pub(super) fn set(object: &mut Value, field: &str, value: Value) {
    if let Some(metadata) = metadata_mut(object) {
        metadata.insert(field.to_owned(), value);
    }
}

pub(super) fn unset(object: &mut Value, field: &str) {
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove(field);
    }
}

pub(super) fn set_top(object: &mut Value, field: &str, value: Value) {
    if let Some(top) = object.as_object_mut() {
        top.insert(field.to_owned(), value);
    }
}

pub(super) fn strip(object: &mut Value, field: &str) {
    if let Some(top) = object.as_object_mut() {
        top.remove(field);
    }
}

pub(crate) fn finalizers(object: &Value) -> Vec<&str> {
    object
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|f| f.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// A request body that is an object of `resource`'s apiVersion and kind (when it says).
pub(super) fn checked_body(resource: &ResourceType, body: Value) -> Result<Value, Rejection> {
    if !body.is_object() {
        return Err(Rejection::bad_request("the body must be a JSON object"));
    }
    for (field, expected) in [
        ("apiVersion", resource.api_version),
        ("kind", resource.kind),
    ] {
        if let Some(given) = body.get(field).and_then(Value::as_str) {
            if given != expected {
                return Err(Rejection::bad_request(format!(
                    "{field} {given:?} does not match the URL ({expected:?})"
                )));
            }
        }
    }
    Ok(body)
}

pub(super) fn check_namespace(body: &Value, namespace: &str) -> Result<(), Rejection> {
    match body.pointer("/metadata/namespace").and_then(Value::as_str) {
        Some(given) if !given.is_empty() && given != namespace => Err(Rejection::bad_request(
            format!("the namespace of the object ({given}) does not match the namespace of the request ({namespace})"),
        )),
        _ => Ok(()),
    }
}

pub(super) fn check_name(body: &Value, name: &str) -> Result<(), Rejection> {
    match body.pointer("/metadata/name").and_then(Value::as_str) {
        Some(given) if given != name => Err(Rejection::bad_request(format!(
            "the name of the object ({given}) does not match the name in the URL ({name})"
        ))),
        _ => Ok(()),
    }
}

/// Optimistic concurrency: a body that names a `resourceVersion` must name the current one.
pub(super) fn check_version(current: &Value, body: &Value) -> Result<(), Rejection> {
    let given = body
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str);
    let stored = current
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str);
    match given {
        Some(given) if Some(given) != stored => Err(Rejection::new(
            409,
            "Conflict",
            "Operation cannot be fulfilled: the object has been modified; please apply your changes to the latest version and try again",
        )),
        _ => Ok(()),
    }
}

/// Server-side apply by one field manager: the top-level fields given replace the stored ones
/// (for `/status`, only `status`), and labels, annotations and finalizers are merged. Fields the
/// manager stops sending are kept (a real server would drop the ones it owned).
pub(super) fn applied(current: &Value, body: &Value, status: bool) -> Value {
    let mut changed = current.clone();
    let Some(fields) = body.as_object() else {
        return changed;
    };
    for (field, value) in fields {
        match field.as_str() {
            "apiVersion" | "kind" => {}
            "status" if status => set_top(&mut changed, "status", value.clone()),
            _ if status => {}
            "metadata" => merge_metadata(&mut changed, value),
            _ => set_top(&mut changed, field, value.clone()),
        }
    }
    changed
}

pub(super) fn merge_metadata(object: &mut Value, given: &Value) {
    let Some(metadata) = metadata_mut(object) else {
        return;
    };
    for map in ["labels", "annotations"] {
        if let Some(entries) = given.get(map).and_then(Value::as_object) {
            let stored = metadata
                .entry(map)
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(stored) = stored.as_object_mut() {
                for (k, v) in entries {
                    stored.insert(k.clone(), v.clone());
                }
            }
        }
    }
    if let Some(given) = given.get("finalizers").and_then(Value::as_array) {
        let stored = metadata
            .entry("finalizers")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Some(stored) = stored.as_array_mut() {
            for f in given {
                if !stored.contains(f) {
                    stored.push(f.clone());
                }
            }
        }
    }
    if let Some(owners) = given.get("ownerReferences") {
        metadata.insert("ownerReferences".to_owned(), owners.clone());
    }
}

/// A JSON patch applied to `current`. Like the API server, a `test` of `null` passes on a
/// missing path (kube's finalizer helper relies on it).
pub(super) fn json_patched(current: &Value, body: &Value) -> Result<Value, Rejection> {
    let ops: Vec<Value> = body
        .as_array()
        .ok_or_else(|| Rejection::bad_request("a JSON patch must be an array of operations"))?
        .iter()
        .filter(|op| {
            !(op["op"] == "test"
                && op["value"].is_null()
                && op["path"]
                    .as_str()
                    .is_some_and(|p| current.pointer(p).is_none()))
        })
        .cloned()
        .collect();
    let patch: json_patch::Patch = serde_json::from_value(Value::Array(ops))
        .map_err(|e| Rejection::bad_request(format!("invalid JSON patch: {e}")))?;
    let mut changed = current.clone();
    json_patch::patch(&mut changed, &patch).map_err(|e| {
        Rejection::new(
            422,
            "Invalid",
            format!("the JSON patch was not applied: {e}"),
        )
    })?;
    Ok(changed)
}

pub(super) fn encode_continue(version: u64, namespace: &str, name: &str) -> String {
    format!("{version}.{namespace}.{name}")
}

/// `(version, (namespace, name))`. Namespaces are DNS labels (no dots) and names may hold
/// dots, so the first two dots split the token.
pub(super) fn decode_continue(token: &str) -> Option<(u64, (String, String))> {
    let (version, rest) = token.split_once('.')?;
    let (namespace, name) = rest.split_once('.')?;
    Some((
        version.parse().ok()?,
        (namespace.to_owned(), name.to_owned()),
    ))
}
