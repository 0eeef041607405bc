//! The metadata document seen as a set of addressable objects: one [`Object`] per thing a
//! Kubernetes resource can own (a tracked table, one relationship, one permission …), each
//! with a stable key (`permission:public.article.user.select`) and a canonical definition.
//!
//! Ownership and drift (`docs/kubernetes.md`, "Drift and self-heal") compare definitions by
//! key: the desired one a resource asked for against the one in the catalog. Both sides are
//! serialized by the same typed structs, so defaults are filled the same way and a comparison
//! never reports a difference the metadata API would not show. Pure: no IO.

mod changes;
mod drift;

pub use changes::{object_changes, ObjectChanges};
pub use drift::{
    canonical_text, differing_fields, drift, drift_of, hash, owners, Drift, DriftKind, Managed,
    Owner,
};

use super::ids::{
    computed_field_definition, event_trigger_definition, permission_definition,
    relationship_definition, remote_relationship_definition, ObjectId, PermissionKind,
};
use super::types::*;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// A custom GraphQL type, one of the four kinds `set_custom_types` carries.
#[derive(Debug, Clone, PartialEq)]
pub enum CustomType {
    InputObject(InputObjectType),
    Object(ObjectType),
    Scalar(ScalarType),
    Enum(EnumType),
}

impl CustomType {
    /// The GraphQL name, unique across the four kinds.
    pub fn name(&self) -> &str {
        match self {
            CustomType::InputObject(t) => &t.name.0,
            CustomType::Object(t) => &t.name.0,
            CustomType::Scalar(t) => &t.name.0,
            CustomType::Enum(t) => &t.name.0,
        }
    }

    /// Every type of a custom-types document.
    pub fn all(types: &CustomTypes) -> Vec<CustomType> {
        let mut all = Vec::new();
        all.extend(
            types
                .input_objects
                .iter()
                .cloned()
                .map(CustomType::InputObject),
        );
        all.extend(types.objects.iter().cloned().map(CustomType::Object));
        all.extend(types.scalars.iter().cloned().map(CustomType::Scalar));
        all.extend(types.enums.iter().cloned().map(CustomType::Enum));
        all
    }

    /// Adds this type to a custom-types document.
    pub fn push_into(self, types: &mut CustomTypes) {
        match self {
            CustomType::InputObject(t) => types.input_objects.push(t),
            CustomType::Object(t) => types.objects.push(t),
            CustomType::Scalar(t) => types.scalars.push(t),
            CustomType::Enum(t) => types.enums.push(t),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            CustomType::InputObject(_) => "input_object",
            CustomType::Object(_) => "object",
            CustomType::Scalar(_) => "scalar",
            CustomType::Enum(_) => "enum",
        }
    }

    fn definition(&self) -> Value {
        let value = match self {
            CustomType::InputObject(t) => serde_json::to_value(t),
            CustomType::Object(t) => serde_json::to_value(t),
            CustomType::Scalar(t) => serde_json::to_value(t),
            CustomType::Enum(t) => serde_json::to_value(t),
        };
        value.unwrap_or(Value::Null)
    }
}

/// One ownable metadata object.
#[derive(Debug, Clone, PartialEq)]
pub enum Object {
    /// A tracked table's own settings (`is_enum`, `configuration`); its relationships,
    /// permissions and computed fields are separate objects.
    Table(Box<TableEntry>),
    /// An object relationship of a table.
    ObjectRelationship(QualifiedTable, RelationshipEntry<ObjRelUsing>),
    /// An array relationship of a table.
    ArrayRelationship(QualifiedTable, RelationshipEntry<ArrRelUsing>),
    /// A permission; the rules are the typed rules serialized, so defaults are explicit.
    Permission(QualifiedTable, PermissionKind, PermissionEntry<Value>),
    /// A computed field of a table.
    ComputedField(QualifiedTable, ComputedFieldEntry),
    /// An event trigger on a table (its name is unique across tables).
    EventTrigger(QualifiedTable, EventTriggerEntry),
    /// A remote GraphQL server (its definition; the introspection result is not part of it).
    /// Its relationships to tables are objects of their own, so the entry's list is empty here.
    RemoteSchema(RemoteSchemaEntry),
    /// A table's relationship to a remote schema.
    RemoteRelationship(QualifiedTable, RemoteRelationshipEntry),
    /// A remote schema type's relationship to a table: the remote schema, the type, the
    /// relationship.
    RemoteSchemaRelationship(Name, GraphQLName, RemoteSchemaRelationshipEntry),
    /// An action's own settings (definition and comment); its permissions are separate
    /// objects, so the entry's permission list is always empty here.
    Action(Box<ActionEntry>),
    /// One role's permission to call an action, with the action's name.
    ActionPermission(GraphQLName, ActionPermission),
    /// One custom type.
    CustomType(CustomType),
    /// A query collection.
    Collection(CollectionEntry),
    /// A collection's allow-list entry.
    Allowlist(AllowlistEntry),
    /// An inherited role.
    InheritedRole(InheritedRole),
    /// The API limits (one object; the empty one is no object).
    ApiLimits(Box<ApiLimits>),
    /// A REST endpoint.
    RestEndpoint(RestEndpoint),
    /// A tracked function's own settings (configuration and comment); its grants are separate
    /// objects, so the entry's permission list is always empty here.
    Function(Box<FunctionEntry>),
    /// One role's grant of a tracked function.
    FunctionPermission(QualifiedFunction, FunctionPermission),
    /// A logical model's own settings; its permissions are separate objects, so the entry's
    /// permission list is always empty here.
    LogicalModel(Box<LogicalModelEntry>),
    /// One role's select permission on a logical model, with the model's name.
    LogicalModelPermission(GraphQLName, LogicalModelPermission),
    /// A native query.
    NativeQuery(Box<NativeQueryEntry>),
    /// A cron trigger.
    CronTrigger(Box<CronTriggerEntry>),
}

/// The remote schema entry with only its own settings (what [`Object::RemoteSchema`] holds).
pub fn remote_schema_settings(entry: &RemoteSchemaEntry) -> RemoteSchemaEntry {
    RemoteSchemaEntry {
        remote_relationships: Vec::new(),
        ..entry.clone()
    }
}

/// The function entry with only its own settings (what [`Object::Function`] holds).
pub fn function_settings(entry: &FunctionEntry) -> FunctionEntry {
    FunctionEntry {
        permissions: Vec::new(),
        ..entry.clone()
    }
}

/// The logical model entry with only its own settings (what [`Object::LogicalModel`] holds).
pub fn model_settings(entry: &LogicalModelEntry) -> LogicalModelEntry {
    LogicalModelEntry {
        select_permissions: Vec::new(),
        ..entry.clone()
    }
}

/// The action entry with only its own settings (what [`Object::Action`] holds).
pub fn action_settings(entry: &ActionEntry) -> ActionEntry {
    ActionEntry {
        permissions: Vec::new(),
        ..entry.clone()
    }
}

impl Object {
    /// The object's identity.
    pub fn id(&self) -> ObjectId {
        match self {
            Object::Table(e) => ObjectId::Table(e.table.clone()),
            Object::ObjectRelationship(t, r) => ObjectId::Relationship(t.clone(), r.name.0.clone()),
            Object::ArrayRelationship(t, r) => ObjectId::Relationship(t.clone(), r.name.0.clone()),
            Object::Permission(t, kind, p) => {
                ObjectId::Permission(t.clone(), p.role.0.clone(), *kind)
            }
            Object::ComputedField(t, c) => ObjectId::ComputedField(t.clone(), c.name.0.clone()),
            Object::EventTrigger(t, e) => ObjectId::event_trigger(t, e.name.0.clone()),
            Object::RemoteSchema(r) => ObjectId::RemoteSchema(r.name.0.clone()),
            Object::RemoteRelationship(t, r) => {
                ObjectId::RemoteRelationship(t.clone(), r.name.0.clone())
            }
            Object::RemoteSchemaRelationship(remote, type_name, r) => {
                ObjectId::RemoteSchemaRelationship(
                    remote.0.clone(),
                    type_name.0.clone(),
                    r.name.0.clone(),
                )
            }
            Object::Action(a) => ObjectId::Action(a.name.0.clone()),
            Object::ActionPermission(action, p) => {
                ObjectId::ActionPermission(action.0.clone(), p.role.0.clone())
            }
            Object::CustomType(c) => ObjectId::CustomType(c.name().to_owned()),
            Object::Collection(c) => ObjectId::QueryCollection(c.name.0.clone()),
            Object::Allowlist(a) => ObjectId::Allowlist(a.collection.0.clone()),
            Object::InheritedRole(r) => ObjectId::InheritedRole(r.role_name.0.clone()),
            Object::ApiLimits(_) => ObjectId::ApiLimits,
            Object::RestEndpoint(e) => ObjectId::RestEndpoint(e.name.clone()),
            Object::Function(f) => ObjectId::Function(f.function.clone()),
            Object::FunctionPermission(f, p) => {
                ObjectId::FunctionPermission(f.clone(), p.role.0.clone())
            }
            Object::LogicalModel(m) => ObjectId::LogicalModel(m.name.0.clone()),
            Object::LogicalModelPermission(m, p) => {
                ObjectId::LogicalModelPermission(m.0.clone(), p.role.0.clone())
            }
            Object::NativeQuery(q) => ObjectId::NativeQuery(q.root_field_name.0.clone()),
            Object::CronTrigger(t) => ObjectId::CronTrigger(t.name.clone()),
        }
    }

    /// The object's key (its identity's text, see [`ObjectId`]), e.g.
    /// `permission:public.article.user.select`.
    pub fn key(&self) -> String {
        self.id().to_string()
    }

    /// The table the object belongs to, if any.
    pub fn table(&self) -> Option<&QualifiedTable> {
        match self {
            Object::Table(e) => Some(&e.table),
            Object::ObjectRelationship(t, _)
            | Object::ArrayRelationship(t, _)
            | Object::Permission(t, _, _)
            | Object::ComputedField(t, _)
            | Object::RemoteRelationship(t, _)
            | Object::EventTrigger(t, _) => Some(t),
            _ => None,
        }
    }

    /// The definition in the metadata API's shape (the one inconsistencies report).
    pub fn canonical(&self) -> Value {
        match self {
            Object::Table(e) => {
                json!({"table": e.table, "is_enum": e.is_enum, "configuration": e.configuration})
            }
            Object::ObjectRelationship(t, r) => {
                let mut v = relationship_definition(t, r);
                v["type"] = json!("object");
                v
            }
            Object::ArrayRelationship(t, r) => {
                let mut v = relationship_definition(t, r);
                v["type"] = json!("array");
                v
            }
            Object::Permission(t, kind, p) => {
                let mut v = permission_definition(t, p);
                v["type"] = json!(kind.as_str());
                v
            }
            Object::ComputedField(t, c) => computed_field_definition(t, c),
            Object::EventTrigger(t, e) => event_trigger_definition(t, e),
            // The entry as stored, the definition inconsistencies of remote schemas carry.
            Object::RemoteSchema(r) => serde_json::to_value(r).unwrap_or(Value::Null),
            // The current form with the join fields sorted: the two forms of one
            // relationship compare equal.
            Object::RemoteRelationship(t, r) => {
                let canonical = RemoteRelationshipEntry {
                    name: r.name.clone(),
                    definition: r.definition.canonical(),
                };
                remote_relationship_definition(t, &canonical)
            }
            // The `create_remote_schema_remote_relationship` arguments.
            Object::RemoteSchemaRelationship(remote, type_name, r) => json!({
                "remote_schema": remote, "type_name": type_name, "name": r.name,
                "definition": r.definition}),
            // The `create_action` arguments, as the catalog stores the entry (without its
            // permissions, which are objects of their own).
            Object::Action(a) => serde_json::to_value(action_settings(a)).unwrap_or(Value::Null),
            // The `create_action_permission` arguments.
            Object::ActionPermission(action, p) => {
                let mut v = json!({"action": action, "role": p.role});
                if let Some(comment) = &p.comment {
                    v["comment"] = json!(comment);
                }
                v
            }
            Object::CustomType(c) => json!({"type": c.kind(), "definition": c.definition()}),
            Object::Collection(c) => serde_json::to_value(c).unwrap_or(Value::Null),
            Object::Allowlist(a) => serde_json::to_value(a).unwrap_or(Value::Null),
            Object::InheritedRole(r) => serde_json::to_value(r).unwrap_or(Value::Null),
            Object::ApiLimits(l) => api_limits_definition(l),
            // The `create_rest_endpoint` arguments.
            Object::RestEndpoint(e) => serde_json::to_value(e).unwrap_or(Value::Null),
            // The `track_function` arguments (version 2), configuration always written.
            Object::Function(f) => {
                let mut v = json!({"function": f.function, "configuration": f.configuration});
                if let Some(comment) = &f.comment {
                    v["comment"] = json!(comment);
                }
                v
            }
            // The `create_function_permission` arguments.
            Object::FunctionPermission(f, p) => json!({"function": f, "role": p.role}),
            // The `track_logical_model` arguments, as the entry is exported.
            Object::LogicalModel(m) => serde_json::to_value(m).unwrap_or(Value::Null),
            // The `create_logical_model_select_permission` arguments.
            Object::LogicalModelPermission(m, p) => {
                let mut v = json!({"name": m, "role": p.role, "permission": p.permission});
                if let Some(comment) = &p.comment {
                    v["comment"] = json!(comment);
                }
                v
            }
            // The `track_native_query` arguments, as the entry is exported.
            Object::NativeQuery(q) => serde_json::to_value(q).unwrap_or(Value::Null),
            // The `create_cron_trigger` arguments, headers and retry settings written out
            // (defaults filled), as `get_cron_triggers` lists the trigger.
            Object::CronTrigger(t) => {
                let mut v = serde_json::to_value(t).unwrap_or(Value::Null);
                v["headers"] = json!(t.headers);
                v["retry_conf"] = json!(t.retry_conf);
                v
            }
        }
    }
}

/// The table entry with only its own settings (what [`Object::Table`] holds).
pub fn table_settings(entry: &TableEntry) -> TableEntry {
    TableEntry {
        table: entry.table.clone(),
        is_enum: entry.is_enum,
        configuration: entry.configuration.clone(),
        ..TableEntry::new(entry.table.clone())
    }
}

fn rules<P: serde::Serialize>(list: &[PermissionEntry<P>]) -> Vec<PermissionEntry<Value>> {
    list.iter()
        .map(|p| PermissionEntry {
            role: p.role.clone(),
            permission: serde_json::to_value(&p.permission).unwrap_or(Value::Null),
            comment: p.comment.clone(),
        })
        .collect()
}

/// Every ownable object of a metadata document, by key.
pub fn catalog_objects(metadata: &Metadata) -> BTreeMap<String, Object> {
    let mut out = Vec::new();
    for entry in &metadata.tables {
        push_table_objects(entry, &mut out);
    }
    push_global_objects(metadata, &mut out);
    out.into_iter().map(|o| (o.key(), o)).collect()
}

/// The objects of `metadata` whose keys are among `keys`: [`catalog_objects`] restricted to
/// them, taking apart only the tables the keys name. A group commit checks a few keys against
/// a document of thousands of tables this way.
pub fn objects_with_keys(metadata: &Metadata, keys: &BTreeSet<&str>) -> BTreeMap<String, Object> {
    let ids: Vec<ObjectId> = keys.iter().filter_map(|k| k.parse().ok()).collect();
    let tables: HashSet<&QualifiedTable> = ids.iter().filter_map(ObjectId::table).collect();
    // Event trigger keys name the trigger alone, not its table.
    let triggers: HashSet<&str> = ids
        .iter()
        .filter_map(|id| match id {
            ObjectId::EventTrigger(_, name) => Some(name.as_str()),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    for entry in &metadata.tables {
        if tables.contains(&entry.table) {
            push_table_objects(entry, &mut out);
        } else if !triggers.is_empty() {
            out.extend(
                entry
                    .event_triggers
                    .iter()
                    .filter(|e| triggers.contains(e.name.0.as_str()))
                    .map(|e| Object::EventTrigger(entry.table.clone(), e.clone())),
            );
        }
    }
    push_global_objects(metadata, &mut out);
    out.into_iter()
        .map(|o| (o.key(), o))
        .filter(|(key, _)| keys.contains(key.as_str()))
        .collect()
}

/// Pushes the objects of one table entry: the table's settings, then what sits on it.
fn push_table_objects(entry: &TableEntry, out: &mut Vec<Object>) {
    let t = &entry.table;
    out.push(Object::Table(Box::new(table_settings(entry))));
    for r in &entry.object_relationships {
        out.push(Object::ObjectRelationship(t.clone(), r.clone()));
    }
    for r in &entry.array_relationships {
        out.push(Object::ArrayRelationship(t.clone(), r.clone()));
    }
    for c in &entry.computed_fields {
        out.push(Object::ComputedField(t.clone(), c.clone()));
    }
    for r in &entry.remote_relationships {
        out.push(Object::RemoteRelationship(t.clone(), r.clone()));
    }
    let perms = [
        (PermissionKind::Insert, rules(&entry.insert_permissions)),
        (PermissionKind::Select, rules(&entry.select_permissions)),
        (PermissionKind::Update, rules(&entry.update_permissions)),
        (PermissionKind::Delete, rules(&entry.delete_permissions)),
    ];
    for (kind, list) in perms {
        for p in list {
            out.push(Object::Permission(t.clone(), kind, p));
        }
    }
    for e in &entry.event_triggers {
        out.push(Object::EventTrigger(t.clone(), e.clone()));
    }
}

/// Pushes the objects that sit on no table.
fn push_global_objects(metadata: &Metadata, out: &mut Vec<Object>) {
    for r in &metadata.remote_schemas {
        out.push(Object::RemoteSchema(remote_schema_settings(r)));
        for group in &r.remote_relationships {
            for relationship in &group.relationships {
                out.push(Object::RemoteSchemaRelationship(
                    r.name.clone(),
                    group.type_name.clone(),
                    relationship.clone(),
                ));
            }
        }
    }
    for a in &metadata.actions {
        out.push(Object::Action(Box::new(action_settings(a))));
        for p in &a.permissions {
            out.push(Object::ActionPermission(a.name.clone(), p.clone()));
        }
    }
    for c in CustomType::all(&metadata.custom_types) {
        out.push(Object::CustomType(c));
    }
    for c in &metadata.query_collections {
        out.push(Object::Collection(c.clone()));
    }
    for a in &metadata.allowlist {
        out.push(Object::Allowlist(a.clone()));
    }
    if !metadata.api_limits.is_empty() {
        out.push(Object::ApiLimits(Box::new(metadata.api_limits.clone())));
    }
    for r in &metadata.inherited_roles {
        out.push(Object::InheritedRole(r.clone()));
    }
    for e in &metadata.rest_endpoints {
        out.push(Object::RestEndpoint(e.clone()));
    }
    for m in &metadata.logical_models {
        out.push(Object::LogicalModel(Box::new(model_settings(m))));
        for p in &m.select_permissions {
            out.push(Object::LogicalModelPermission(m.name.clone(), p.clone()));
        }
    }
    for q in &metadata.native_queries {
        out.push(Object::NativeQuery(Box::new(q.clone())));
    }
    for t in &metadata.cron_triggers {
        out.push(Object::CronTrigger(Box::new(t.clone())));
    }
    for f in &metadata.functions {
        out.push(Object::Function(Box::new(function_settings(f))));
        for p in &f.permissions {
            out.push(Object::FunctionPermission(f.function.clone(), p.clone()));
        }
    }
}

/// The API limits as export writes them: `disabled` always, each set limit with its
/// `per_role` map (`{}` when empty).
pub fn api_limits_definition(limits: &ApiLimits) -> Value {
    serde_json::to_value(limits).unwrap_or(Value::Null)
}

/// Whether a document that lists no object of `key` holds `desired` (a canonical definition)
/// all the same: the empty API limits ("no limits") are stored as no object, so a resource
/// declaring them is in sync with a document without `api_limits`.
pub fn implicit(key: &str, desired: &Value) -> bool {
    key.parse::<ObjectId>() == Ok(ObjectId::ApiLimits)
        && serde_json::from_value::<ApiLimits>(desired.clone()).is_ok_and(|l| l.is_empty())
}

impl Object {
    /// The object's `type` as inconsistency reports and dry runs name it.
    pub fn wire_type(&self) -> &'static str {
        match self {
            Object::Table(_) => "table",
            Object::ObjectRelationship(..) => "object_relation",
            Object::ArrayRelationship(..) => "array_relation",
            Object::Permission(_, kind, _) => kind.object_type(),
            Object::ComputedField(..) => "computed_field",
            Object::EventTrigger(..) => "event_trigger",
            Object::RemoteSchema(_) => "remote_schema",
            Object::RemoteRelationship(..) => "remote_relationship",
            Object::RemoteSchemaRelationship(..) => "remote_schema_remote_relationship",
            Object::Action(_) => "action",
            Object::ActionPermission(..) => "action_permission",
            Object::CustomType(_) => "custom_type",
            Object::Collection(_) => "query_collection",
            Object::Allowlist(_) => "allowlist",
            Object::InheritedRole(_) => "inherited_role",
            Object::ApiLimits(_) => "api_limits",
            Object::RestEndpoint(_) => "rest_endpoint",
            Object::Function(_) => "function",
            Object::FunctionPermission(..) => "function_permission",
            Object::LogicalModel(_) => "logical_model",
            Object::LogicalModelPermission(..) => "logical_model_permission",
            Object::NativeQuery(_) => "native_query",
            Object::CronTrigger(_) => "cron_trigger",
        }
    }

    /// `{"type", "definition"}`, as `get_inconsistent_metadata` lists objects.
    pub fn item(&self) -> Value {
        json!({"type": self.wire_type(), "definition": self.canonical()})
    }
}

#[cfg(test)]
mod tests;
