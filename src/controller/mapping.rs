//! Custom resource specs → metadata objects. Each field is mapped explicitly to its metadata
//! API name (no generic case conversion; `docs/kubernetes.md`, "Kinds"); the result is then parsed by the same
//! metadata types `/v1/query` uses, so a resource is valid exactly when the equivalent request
//! would be. User data (BoolExps, presets, column maps) is copied verbatim.

use super::crd::*;
use crate::metadata::ids::PermissionKind;
use crate::metadata::objects::{table_settings, CustomType, Object};
use crate::metadata::parse::parse;
use crate::metadata::path::JsonPath;
use crate::metadata::types::{
    ActionEntry, ActionPermission, AllowlistEntry, CollectionEntry, ComputedFieldEntry,
    CustomTypes, EventTriggerEntry, PermissionEntry, QualifiedTable, RemoteSchemaEntry, TableEntry,
};
use crate::metadata::{Code, MetadataError};
use crate::ops::actions::ActionOp;
use crate::ops::events::EventTriggerOp;
use crate::ops::remote_schemas::RemoteSchemaOp;
use serde_json::{json, Map, Value};

/// Inserts `key: value` when the value is present.
fn put<T: serde::Serialize>(map: &mut Map<String, Value>, key: &str, value: &Option<T>) {
    if let Some(v) = value {
        if let Ok(v) = serde_json::to_value(v) {
            map.insert(key.to_owned(), v);
        }
    }
}

fn table_name(name: &QualifiedName) -> Value {
    json!({"schema": name.schema, "name": name.name})
}

fn spec_path() -> JsonPath {
    JsonPath::root().key("spec")
}

fn relationship_using_object(using: &ObjectRelationshipUsing) -> Value {
    let mut map = Map::new();
    put(
        &mut map,
        "foreign_key_constraint_on",
        &using.foreign_key_constraint_on,
    );
    if let Some(m) = &using.manual_configuration {
        map.insert("manual_configuration".into(), manual(m));
    }
    Value::Object(map)
}

fn relationship_using_array(using: &ArrayRelationshipUsing) -> Value {
    let mut map = Map::new();
    if let Some(fk) = &using.foreign_key_constraint_on {
        map.insert(
            "foreign_key_constraint_on".into(),
            json!({"table": table_name(&fk.table), "column": fk.column}),
        );
    }
    if let Some(m) = &using.manual_configuration {
        map.insert("manual_configuration".into(), manual(m));
    }
    Value::Object(map)
}

fn manual(m: &ManualConfigurationSpec) -> Value {
    json!({"remote_table": table_name(&m.remote_table), "column_mapping": m.column_mapping})
}

/// The metadata API form of a TrackedTable (a table entry with its relationships).
pub fn tracked_table_json(spec: &TrackedTableSpec) -> Value {
    let mut entry = Map::new();
    entry.insert("table".into(), table_name(&spec.table));
    entry.insert("is_enum".into(), json!(spec.is_enum));
    if let Some(config) = &spec.configuration {
        let mut roots = Map::new();
        if let Some(r) = &config.custom_root_fields {
            put(&mut roots, "select", &r.select);
            put(&mut roots, "select_by_pk", &r.select_by_pk);
            put(&mut roots, "select_aggregate", &r.select_aggregate);
            put(&mut roots, "insert", &r.insert);
            put(&mut roots, "insert_one", &r.insert_one);
            put(&mut roots, "update", &r.update);
            put(&mut roots, "update_by_pk", &r.update_by_pk);
            put(&mut roots, "delete", &r.delete);
            put(&mut roots, "delete_by_pk", &r.delete_by_pk);
        }
        let columns = config
            .custom_column_names
            .clone()
            .unwrap_or_else(|| json!({}));
        entry.insert(
            "configuration".into(),
            json!({"custom_root_fields": roots, "custom_column_names": columns}),
        );
    }
    let objects: Vec<Value> = spec
        .object_relationships
        .iter()
        .map(|r| {
            let mut m = Map::new();
            m.insert("name".into(), json!(r.name));
            m.insert("using".into(), relationship_using_object(&r.using));
            put(&mut m, "comment", &r.comment);
            Value::Object(m)
        })
        .collect();
    let arrays: Vec<Value> = spec
        .array_relationships
        .iter()
        .map(|r| {
            let mut m = Map::new();
            m.insert("name".into(), json!(r.name));
            m.insert("using".into(), relationship_using_array(&r.using));
            put(&mut m, "comment", &r.comment);
            Value::Object(m)
        })
        .collect();
    if !objects.is_empty() {
        entry.insert("object_relationships".into(), Value::Array(objects));
    }
    if !arrays.is_empty() {
        entry.insert("array_relationships".into(), Value::Array(arrays));
    }
    Value::Object(entry)
}

/// A TrackedTable as a metadata table entry (validated like `replace_metadata` would).
pub fn tracked_table(spec: &TrackedTableSpec) -> Result<TableEntry, MetadataError> {
    parse(&tracked_table_json(spec), &spec_path())
}

/// The permission kind of an operation.
pub fn permission_kind(operation: Operation) -> PermissionKind {
    match operation {
        Operation::Insert => PermissionKind::Insert,
        Operation::Select => PermissionKind::Select,
        Operation::Update => PermissionKind::Update,
        Operation::Delete => PermissionKind::Delete,
    }
}

/// The metadata API form of a Permission's rules (only the fields of its operation).
pub fn permission_rules_json(operation: Operation, p: &PermissionRules) -> Value {
    let mut m = Map::new();
    match operation {
        Operation::Insert => {
            put(&mut m, "check", &p.check);
            put(&mut m, "set", &p.set);
            put(&mut m, "columns", &p.columns);
            put(&mut m, "backend_only", &p.backend_only);
        }
        Operation::Select => {
            put(&mut m, "columns", &p.columns);
            put(&mut m, "computed_fields", &p.computed_fields);
            put(&mut m, "filter", &p.filter);
            put(&mut m, "limit", &p.limit);
            put(&mut m, "allow_aggregations", &p.allow_aggregations);
        }
        Operation::Update => {
            put(&mut m, "columns", &p.columns);
            put(&mut m, "filter", &p.filter);
            put(&mut m, "check", &p.check);
            put(&mut m, "set", &p.set);
        }
        Operation::Delete => put(&mut m, "filter", &p.filter),
    }
    Value::Object(m)
}

/// A Permission as (table, kind, permission entry), its rules checked against the kind's shape.
pub fn permission(
    spec: &PermissionSpec,
) -> Result<(QualifiedTable, PermissionKind, PermissionEntry<Value>), MetadataError> {
    let rules = permission_rules_json(spec.operation, &spec.permission);
    let path = spec_path().key("permission");
    // Parse with the typed rules of the kind, as create_<op>_permission does, and keep the
    // typed form so defaults are explicit (as the catalog stores them).
    fn typed<P: serde::de::DeserializeOwned + serde::Serialize>(
        rules: &Value,
        path: &JsonPath,
    ) -> Result<Value, MetadataError> {
        let parsed: P = parse(rules, path)?;
        Ok(serde_json::to_value(parsed).unwrap_or(Value::Null))
    }
    let rules = match spec.operation {
        Operation::Insert => typed::<crate::metadata::types::InsertPermission>(&rules, &path)?,
        Operation::Select => typed::<crate::metadata::types::SelectPermission>(&rules, &path)?,
        Operation::Update => typed::<crate::metadata::types::UpdatePermission>(&rules, &path)?,
        Operation::Delete => typed::<crate::metadata::types::DeletePermission>(&rules, &path)?,
    };
    let table: QualifiedTable = parse(&table_name(&spec.table), &spec_path().key("table"))?;
    let entry = PermissionEntry {
        role: parse(&json!(spec.role), &spec_path().key("role"))?,
        permission: rules,
        comment: spec.comment.clone(),
    };
    Ok((table, permission_kind(spec.operation), entry))
}

/// The metadata API form of a ComputedField.
pub fn computed_field_json(spec: &ComputedFieldSpec) -> Value {
    let mut definition = Map::new();
    definition.insert("function".into(), table_name(&spec.definition.function));
    put(
        &mut definition,
        "table_argument",
        &spec.definition.table_argument,
    );
    put(
        &mut definition,
        "session_argument",
        &spec.definition.session_argument,
    );
    let mut m = Map::new();
    m.insert("name".into(), json!(spec.name));
    m.insert("definition".into(), Value::Object(definition));
    put(&mut m, "comment", &spec.comment);
    Value::Object(m)
}

/// A ComputedField as (table, entry).
pub fn computed_field(
    spec: &ComputedFieldSpec,
) -> Result<(QualifiedTable, ComputedFieldEntry), MetadataError> {
    let table = parse(&table_name(&spec.table), &spec_path().key("table"))?;
    Ok((table, parse(&computed_field_json(spec), &spec_path())?))
}

fn trigger_operation_json(spec: &TriggerOperationSpec) -> Value {
    let mut m = Map::new();
    m.insert("columns".into(), spec.columns.clone());
    put(&mut m, "payload", &spec.payload);
    Value::Object(m)
}

/// The `create_event_trigger` arguments an EventTrigger stands for (without `replace`, which
/// is the controller's, not the resource's).
pub fn event_trigger_json(spec: &EventTriggerSpec) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(spec.name));
    m.insert("table".into(), table_name(&spec.table));
    put(&mut m, "webhook", &spec.webhook);
    put(&mut m, "webhook_from_env", &spec.webhook_from_env);
    for (key, operation) in [
        ("insert", &spec.insert),
        ("update", &spec.update),
        ("delete", &spec.delete),
    ] {
        if let Some(operation) = operation {
            m.insert(key.into(), trigger_operation_json(operation));
        }
    }
    m.insert("enable_manual".into(), json!(spec.enable_manual));
    if let Some(retry) = &spec.retry_conf {
        let mut r = Map::new();
        put(&mut r, "num_retries", &retry.num_retries);
        put(&mut r, "interval_sec", &retry.interval_sec);
        put(&mut r, "timeout_sec", &retry.timeout_sec);
        m.insert("retry_conf".into(), Value::Object(r));
    }
    if !spec.headers.is_empty() {
        m.insert("headers".into(), headers_json(&spec.headers));
    }
    Value::Object(m)
}

/// Headers in the metadata API's form: `{name, value}` or `{name, value_from_env}`.
fn headers_json(headers: &[HeaderSpec]) -> Value {
    Value::Array(
        headers
            .iter()
            .map(|h| {
                let mut hm = Map::new();
                hm.insert("name".into(), json!(h.name));
                put(&mut hm, "value", &h.value);
                put(&mut hm, "value_from_env", &h.value_from_env);
                Value::Object(hm)
            })
            .collect(),
    )
}

/// An EventTrigger as (table, trigger entry), parsed and shape-checked by the metadata API's
/// own `create_event_trigger` parser. Whether its columns exist and its environment variables
/// are set is the operation's check against the database and the process, when it is applied.
pub fn event_trigger(
    spec: &EventTriggerSpec,
) -> Result<(QualifiedTable, EventTriggerEntry), MetadataError> {
    let path = spec_path();
    match EventTriggerOp::parse("create_event_trigger", &event_trigger_json(spec), &path)? {
        Some(EventTriggerOp::Create { table, trigger, .. }) => Ok((table, *trigger)),
        // The parser answers `create_event_trigger` with `Create`; anything else is a bug.
        _ => Err(MetadataError::new(
            Code::Unexpected,
            path,
            "create_event_trigger did not parse as a trigger creation",
        )),
    }
}

/// The `add_remote_schema` arguments a RemoteSchema stands for: `{name, definition, comment}`,
/// the body of `{"type": "add_remote_schema", "args": …}`.
pub fn remote_schema_json(spec: &RemoteSchemaSpec) -> Value {
    let d = &spec.definition;
    let mut definition = Map::new();
    put(&mut definition, "url", &d.url);
    put(&mut definition, "url_from_env", &d.url_from_env);
    if !d.headers.is_empty() {
        definition.insert("headers".into(), headers_json(&d.headers));
    }
    definition.insert(
        "forward_client_headers".into(),
        json!(d.forward_client_headers),
    );
    put(&mut definition, "timeout_seconds", &d.timeout_seconds);
    let mut m = Map::new();
    m.insert("name".into(), json!(spec.name));
    m.insert("definition".into(), Value::Object(definition));
    put(&mut m, "comment", &spec.comment);
    Value::Object(m)
}

/// A RemoteSchema as the catalog's remote schema entry, parsed and shape-checked by the
/// metadata API's own `add_remote_schema` parser. Whether the server answers, and its
/// environment variables are set, is the operation's check when it is applied:
/// `add_remote_schema` introspects the server.
pub fn remote_schema(spec: &RemoteSchemaSpec) -> Result<RemoteSchemaEntry, MetadataError> {
    let path = spec_path();
    match RemoteSchemaOp::parse("add_remote_schema", &remote_schema_json(spec), &path)? {
        Some(RemoteSchemaOp::Add(entry)) => Ok(*entry),
        // The parser answers `add_remote_schema` with `Add`; anything else is a bug.
        _ => Err(MetadataError::new(
            Code::Unexpected,
            path,
            "add_remote_schema did not parse as a remote schema",
        )),
    }
}

/// The `create_action` arguments an Action stands for: `{name, definition, comment}`, the body
/// of `{"type": "create_action", "args": …}` (its permissions are separate requests).
pub fn action_json(spec: &ActionSpec) -> Value {
    let d = &spec.definition;
    let mut definition = Map::new();
    definition.insert("handler".into(), json!(d.handler));
    definition.insert("output_type".into(), json!(d.output_type));
    definition.insert(
        "forward_client_headers".into(),
        json!(d.forward_client_headers),
    );
    if !d.headers.is_empty() {
        definition.insert("headers".into(), headers_json(&d.headers));
    }
    if !d.arguments.is_empty() {
        let arguments: Vec<Value> = d
            .arguments
            .iter()
            .map(|a| {
                let mut m = Map::new();
                m.insert("name".into(), json!(a.name));
                m.insert("type".into(), json!(a.arg_type));
                put(&mut m, "description", &a.description);
                Value::Object(m)
            })
            .collect();
        definition.insert("arguments".into(), Value::Array(arguments));
    }
    definition.insert("type".into(), json!(d.action_type));
    put(&mut definition, "kind", &d.kind);
    put(&mut definition, "timeout", &d.timeout);
    let mut m = Map::new();
    m.insert("name".into(), json!(spec.name));
    m.insert("definition".into(), Value::Object(definition));
    put(&mut m, "comment", &spec.comment);
    Value::Object(m)
}

/// The `create_action_permission` arguments of one of an Action's permissions.
pub fn action_permission_json(action: &str, permission: &ActionPermissionSpec) -> Value {
    let mut m = Map::new();
    m.insert("action".into(), json!(action));
    m.insert("role".into(), json!(permission.role));
    put(&mut m, "comment", &permission.comment);
    Value::Object(m)
}

/// An Action as the catalog's action entry (without permissions), parsed and shape-checked by
/// the metadata API's own `create_action` parser. Whether its types exist and its environment
/// variables are set is the operation's check when it is applied.
pub fn action(spec: &ActionSpec) -> Result<ActionEntry, MetadataError> {
    let path = spec_path();
    match ActionOp::parse("create_action", &action_json(spec), &path)? {
        Some(ActionOp::Create(entry)) => Ok(*entry),
        // The parser answers `create_action` with `Create`; anything else is a bug.
        _ => Err(MetadataError::new(
            Code::Unexpected,
            path,
            "create_action did not parse as an action",
        )),
    }
}

/// An Action's permissions, each parsed by the metadata API's own `create_action_permission`
/// parser. A role listed twice is refused here, as the second request would be.
pub fn action_permissions(spec: &ActionSpec) -> Result<Vec<ActionPermission>, MetadataError> {
    let mut out: Vec<ActionPermission> = Vec::new();
    for (i, p) in spec.permissions.iter().enumerate() {
        let path = spec_path().key("permissions").index(i);
        let args = action_permission_json(&spec.name, p);
        let permission = match ActionOp::parse("create_action_permission", &args, &path)? {
            Some(ActionOp::CreatePermission { permission, .. }) => permission,
            // The parser answers `create_action_permission` so; anything else is a bug.
            _ => {
                return Err(MetadataError::new(
                    Code::Unexpected,
                    path,
                    "create_action_permission did not parse as an action permission",
                ))
            }
        };
        if out.iter().any(|q| q.role == permission.role) {
            return Err(MetadataError::new(
                Code::ParseFailed,
                path.key("role"),
                format!("the role \"{}\" is listed more than once", permission.role),
            ));
        }
        out.push(permission);
    }
    Ok(out)
}

fn fields_json(fields: &[TypeFieldSpec]) -> Value {
    Value::Array(
        fields
            .iter()
            .map(|f| {
                let mut m = Map::new();
                m.insert("name".into(), json!(f.name));
                put(&mut m, "description", &f.description);
                m.insert("type".into(), json!(f.field_type));
                Value::Object(m)
            })
            .collect(),
    )
}

/// The metadata API form of a CustomTypeSet.
pub fn custom_types_json(spec: &CustomTypeSetSpec) -> Value {
    let named = |name: &str, description: &Option<String>| {
        let mut m = Map::new();
        m.insert("name".into(), json!(name));
        put(&mut m, "description", description);
        m
    };
    let input_objects: Vec<Value> = spec
        .input_objects
        .iter()
        .map(|t| {
            let mut m = named(&t.name, &t.description);
            m.insert("fields".into(), fields_json(&t.fields));
            Value::Object(m)
        })
        .collect();
    let objects: Vec<Value> = spec
        .objects
        .iter()
        .map(|t| {
            let mut m = named(&t.name, &t.description);
            m.insert("fields".into(), fields_json(&t.fields));
            if !t.relationships.is_empty() {
                let rels: Vec<Value> = t
                    .relationships
                    .iter()
                    .map(|r| {
                        json!({"name": r.name, "type": r.rel_type, "remote_table": table_name(&r.remote_table), "field_mapping": r.field_mapping})
                    })
                    .collect();
                m.insert("relationships".into(), Value::Array(rels));
            }
            Value::Object(m)
        })
        .collect();
    let scalars: Vec<Value> = spec
        .scalars
        .iter()
        .map(|s| Value::Object(named(&s.name, &s.description)))
        .collect();
    let enums: Vec<Value> = spec
        .enums
        .iter()
        .map(|e| {
            let mut m = named(&e.name, &e.description);
            let values: Vec<Value> = e
                .values
                .iter()
                .map(|v| {
                    let mut vm = Map::new();
                    vm.insert("value".into(), json!(v.value));
                    put(&mut vm, "description", &v.description);
                    put(&mut vm, "is_deprecated", &v.is_deprecated);
                    Value::Object(vm)
                })
                .collect();
            m.insert("values".into(), Value::Array(values));
            Value::Object(m)
        })
        .collect();
    json!({"input_objects": input_objects, "objects": objects, "scalars": scalars, "enums": enums})
}

/// A CustomTypeSet as custom types.
pub fn custom_types(spec: &CustomTypeSetSpec) -> Result<CustomTypes, MetadataError> {
    parse(&custom_types_json(spec), &spec_path())
}

/// A QueryCollection as a collection entry (queries must parse, as for the API).
pub fn query_collection(spec: &QueryCollectionSpec) -> Result<CollectionEntry, MetadataError> {
    let queries: Vec<Value> = spec
        .definition
        .queries
        .iter()
        .map(|q| json!({"name": q.name, "query": q.query}))
        .collect();
    let mut m = Map::new();
    m.insert("name".into(), json!(spec.name));
    m.insert("definition".into(), json!({"queries": queries}));
    put(&mut m, "comment", &spec.comment);
    let entry: CollectionEntry = parse(&Value::Object(m), &spec_path())?;
    crate::ops::check_collection(&entry, &spec_path())?;
    Ok(entry)
}

/// An AllowListEntry as an allow-list entry.
pub fn allowlist_entry(spec: &AllowListEntrySpec) -> Result<AllowlistEntry, MetadataError> {
    parse(&json!({"collection": spec.collection}), &spec_path())
}

/// The catalog objects a TrackedTable declares: the table's settings, then each relationship.
pub fn tracked_table_objects(spec: &TrackedTableSpec) -> Result<Vec<Object>, MetadataError> {
    let entry = tracked_table(spec)?;
    let mut out = vec![Object::Table(Box::new(table_settings(&entry)))];
    for r in &entry.object_relationships {
        out.push(Object::ObjectRelationship(entry.table.clone(), r.clone()));
    }
    for r in &entry.array_relationships {
        out.push(Object::ArrayRelationship(entry.table.clone(), r.clone()));
    }
    Ok(out)
}

/// The catalog object a Permission declares.
pub fn permission_objects(spec: &PermissionSpec) -> Result<Vec<Object>, MetadataError> {
    let (table, kind, entry) = permission(spec)?;
    Ok(vec![Object::Permission(table, kind, entry)])
}

/// The catalog object a ComputedField declares.
pub fn computed_field_objects(spec: &ComputedFieldSpec) -> Result<Vec<Object>, MetadataError> {
    let (table, entry) = computed_field(spec)?;
    Ok(vec![Object::ComputedField(table, entry)])
}

/// The catalog object an EventTrigger declares.
pub fn event_trigger_objects(spec: &EventTriggerSpec) -> Result<Vec<Object>, MetadataError> {
    let (table, entry) = event_trigger(spec)?;
    Ok(vec![Object::EventTrigger(table, entry)])
}

/// The catalog object a RemoteSchema declares.
pub fn remote_schema_objects(spec: &RemoteSchemaSpec) -> Result<Vec<Object>, MetadataError> {
    Ok(vec![Object::RemoteSchema(remote_schema(spec)?)])
}

/// The catalog objects an Action declares: the action, then one per permission.
pub fn action_objects(spec: &ActionSpec) -> Result<Vec<Object>, MetadataError> {
    let entry = action(spec)?;
    let permissions = action_permissions(spec)?;
    let name = entry.name.clone();
    let mut out = vec![Object::Action(Box::new(entry))];
    out.extend(
        permissions
            .into_iter()
            .map(|p| Object::ActionPermission(name.clone(), p)),
    );
    Ok(out)
}

/// The catalog objects a CustomTypeSet declares: one per type.
pub fn custom_type_objects(spec: &CustomTypeSetSpec) -> Result<Vec<Object>, MetadataError> {
    let types = custom_types(spec)?;
    Ok(CustomType::all(&types)
        .into_iter()
        .map(Object::CustomType)
        .collect())
}

/// The catalog object a QueryCollection declares.
pub fn query_collection_objects(spec: &QueryCollectionSpec) -> Result<Vec<Object>, MetadataError> {
    Ok(vec![Object::Collection(query_collection(spec)?)])
}

/// The catalog object an AllowListEntry declares.
pub fn allowlist_objects(spec: &AllowListEntrySpec) -> Result<Vec<Object>, MetadataError> {
    Ok(vec![Object::Allowlist(allowlist_entry(spec)?)])
}
