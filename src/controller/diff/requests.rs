//! The metadata API request that creates, drops or replaces each kind of object, as the
//! plans of `super` send them.

use crate::metadata::objects::Object;
use crate::metadata::types::{EventTriggerEntry, QualifiedTable};
use serde_json::{json, Value};

/// `create_event_trigger` with `replace`: creates the trigger, or replaces the one of that name
/// on the same table in place, so its undelivered events are kept.
pub(super) fn event_trigger_request(table: &QualifiedTable, e: &EventTriggerEntry) -> Value {
    let d = &e.definition;
    json!({"type": "create_event_trigger", "args": {
        "name": e.name, "table": table, "webhook": e.webhook, "webhook_from_env": e.webhook_from_env,
        "insert": d.insert, "update": d.update, "delete": d.delete, "enable_manual": d.enable_manual,
        "retry_conf": e.retry_conf, "headers": e.headers, "replace": true}})
}

/// `create_…` or `update_…` (`verb`) of a remote relationship, with the arguments that create
/// it (in the form it was written).
pub(super) fn remote_relationship_request(verb: &str, object: &Object) -> Option<Value> {
    Some(match object {
        Object::RemoteRelationship(t, r) => json!({
            "type": format!("{verb}_remote_relationship"),
            "args": crate::metadata::ids::remote_relationship_definition(t, r)}),
        Object::RemoteSchemaRelationship(..) => json!({
            "type": format!("{verb}_remote_schema_remote_relationship"),
            "args": object.canonical()}),
        _ => return None,
    })
}

/// The request creating `object`.
pub(super) fn create_request(object: &Object) -> Option<Value> {
    Some(match object {
        Object::Table(e) => json!({"type": "track_table", "version": 2, "args": {
            "table": e.table, "is_enum": e.is_enum, "configuration": e.configuration}}),
        Object::ObjectRelationship(t, r) => json!({"type": "create_object_relationship",
            "args": {"table": t, "name": r.name, "using": r.using, "comment": r.comment}}),
        Object::ArrayRelationship(t, r) => json!({"type": "create_array_relationship",
            "args": {"table": t, "name": r.name, "using": r.using, "comment": r.comment}}),
        Object::Permission(t, kind, p) => json!({
            "type": format!("create_{}_permission", kind.as_str()),
            "args": {"table": t, "role": p.role, "permission": p.permission, "comment": p.comment}}),
        Object::ComputedField(t, c) => json!({"type": "add_computed_field", "args": {
            "table": t, "name": c.name, "definition": c.definition, "comment": c.comment}}),
        Object::EventTrigger(t, e) => event_trigger_request(t, e),
        Object::RemoteSchema(r) => json!({"type": "add_remote_schema", "args": r}),
        Object::RemoteRelationship(..) | Object::RemoteSchemaRelationship(..) => {
            remote_relationship_request("create", object)?
        }
        // The entry holds no permissions: each is an object and a request of its own.
        Object::Action(a) => json!({"type": "create_action", "args": a}),
        Object::ActionPermission(action, p) => json!({"type": "create_action_permission",
            "args": {"action": action, "role": p.role, "comment": p.comment}}),
        Object::Collection(c) => json!({"type": "create_query_collection", "args": c}),
        Object::Allowlist(a) => json!({"type": "add_collection_to_allowlist", "args": a}),
        Object::InheritedRole(r) => json!({"type": "add_inherited_role", "args": r}),
        Object::ApiLimits(l) => json!({"type": "set_api_limits", "args": l}),
        Object::RestEndpoint(e) => json!({"type": "create_rest_endpoint", "args": e}),
        // The entry holds no grants: each is an object and a request of its own.
        Object::Function(_) => json!({"type": "track_function", "version": 2,
            "args": object.canonical()}),
        Object::FunctionPermission(..) => json!({"type": "create_function_permission",
            "args": object.canonical()}),
        Object::LogicalModel(_) => {
            json!({"type": "track_logical_model", "args": object.canonical()})
        }
        Object::LogicalModelPermission(..) => json!({
            "type": "create_logical_model_select_permission", "args": object.canonical()}),
        Object::NativeQuery(_) => json!({"type": "track_native_query", "args": object.canonical()}),
        Object::CronTrigger(_) => {
            json!({"type": "create_cron_trigger", "args": object.canonical()})
        }
        Object::CustomType(_) => return None,
    })
}

/// The request dropping `object`.
pub(super) fn drop_request(object: &Object, cascade: bool) -> Option<Value> {
    Some(match object {
        Object::Table(e) => {
            json!({"type": "untrack_table", "args": {"table": e.table, "cascade": cascade}})
        }
        Object::ObjectRelationship(t, r) => json!({"type": "drop_relationship",
            "args": {"table": t, "relationship": r.name, "cascade": cascade}}),
        Object::ArrayRelationship(t, r) => json!({"type": "drop_relationship",
            "args": {"table": t, "relationship": r.name, "cascade": cascade}}),
        Object::Permission(t, kind, p) => json!({
            "type": format!("drop_{}_permission", kind.as_str()),
            "args": {"table": t, "role": p.role}}),
        Object::ComputedField(t, c) => json!({"type": "drop_computed_field",
            "args": {"table": t, "name": c.name, "cascade": cascade}}),
        Object::EventTrigger(_, e) => {
            json!({"type": "delete_event_trigger", "args": {"name": e.name}})
        }
        Object::RemoteSchema(r) => {
            json!({"type": "remove_remote_schema", "args": {"name": r.name}})
        }
        Object::RemoteRelationship(t, r) => json!({"type": "delete_remote_relationship",
            "args": {"table": t, "name": r.name}}),
        Object::RemoteSchemaRelationship(remote, type_name, r) => json!({
            "type": "delete_remote_schema_remote_relationship",
            "args": {"remote_schema": remote, "type_name": type_name, "name": r.name}}),
        // `clear_data` keeps its default: an asynchronous action's logged calls go with it.
        Object::Action(a) => json!({"type": "drop_action", "args": {"name": a.name}}),
        Object::ActionPermission(action, p) => json!({"type": "drop_action_permission",
            "args": {"action": action, "role": p.role}}),
        Object::Collection(c) => json!({"type": "drop_query_collection",
            "args": {"collection": c.name, "cascade": cascade}}),
        Object::Allowlist(a) => json!({"type": "drop_collection_from_allowlist", "args": a}),
        Object::InheritedRole(r) => json!({"type": "drop_inherited_role",
            "args": {"role_name": r.role_name}}),
        Object::ApiLimits(_) => json!({"type": "remove_api_limits", "args": {}}),
        Object::RestEndpoint(e) => {
            json!({"type": "drop_rest_endpoint", "args": {"name": e.name}})
        }
        Object::Function(f) => json!({"type": "untrack_function",
            "args": {"function": f.function}}),
        Object::FunctionPermission(f, p) => json!({"type": "drop_function_permission",
            "args": {"function": f, "role": p.role}}),
        Object::LogicalModel(m) => json!({"type": "untrack_logical_model",
            "args": {"name": m.name}}),
        Object::LogicalModelPermission(m, p) => json!({
            "type": "drop_logical_model_select_permission", "args": {"name": m, "role": p.role}}),
        Object::NativeQuery(q) => json!({"type": "untrack_native_query",
            "args": {"root_field_name": q.root_field_name}}),
        Object::CronTrigger(t) => json!({"type": "delete_cron_trigger", "args": {"name": t.name}}),
        Object::CustomType(_) => return None,
    })
}
