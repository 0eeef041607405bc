//! Identities of the objects in the metadata document: [`ObjectId`] (what inconsistencies,
//! dependency errors and drops name), [`PermissionKind`], and the "definition" JSON of a
//! relationship, permission or computed field as the API reports it (inconsistencies,
//! ownership and drift). See `docs/metadata-api.md`. Pure; must not depend on anything
//! outside `metadata`.

use super::types::*;
use serde::Serialize;
use serde_json::{json, Value};

/// Identity of a metadata object: what inconsistencies, dependency errors and drops name, and,
/// as its key (`Display`, `FromStr`), what Kubernetes resources own
/// (`permission:public.article.user.select`; a segment holding `.`, `"` or `:` is quoted,
/// inner quotes doubled). See `docs/kubernetes.md`, "Kinds".
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectId {
    Table(QualifiedTable),
    Relationship(QualifiedTable, String),
    ComputedField(QualifiedTable, String),
    /// A permission of a role on a table.
    Permission(QualifiedTable, String, PermissionKind),
    /// An event trigger, by name (names are unique across tables).
    EventTrigger(OnTable, String),
    RemoteSchema(String),
    Action(String),
    /// One role's permission to call an action: (action, role).
    ActionPermission(String, String),
    /// One custom type, by name (unique across the four kinds of custom type).
    CustomType(String),
    /// The custom types as a whole.
    CustomTypes,
    /// A relationship of a custom object type to a table: (type, relationship).
    CustomTypeRelationship(String, String),
    QueryCollection(String),
    /// A collection's allow-list entry, by collection.
    Allowlist(String),
    /// An inherited role, by name.
    InheritedRole(String),
    /// The API limits (one object).
    ApiLimits,
    /// A table's relationship to a remote schema: (table, name).
    RemoteRelationship(QualifiedTable, String),
    /// A remote object type's relationship to a table: (remote schema, type, name).
    RemoteSchemaRelationship(String, String, String),
    /// A REST endpoint, by name.
    RestEndpoint(String),
    /// A tracked function (its permissions included when reported inconsistent).
    Function(QualifiedFunction),
    /// One role's grant of a tracked function: (function, role).
    FunctionPermission(QualifiedFunction, String),
    /// A logical model, by name (its permissions included when reported inconsistent).
    LogicalModel(String),
    /// One role's select permission on a logical model: (model, role).
    LogicalModelPermission(String, String),
    /// A native query, by root field name.
    NativeQuery(String),
    /// A native query's relationship: (root field name, relationship).
    NativeQueryRelationship(String, String),
    /// A cron trigger, by name.
    CronTrigger(String),
}

/// The table an event trigger is on, when it is known. Not part of the trigger's identity
/// (trigger names are unique across tables, and a key names the trigger alone): any two are
/// equal.
#[derive(Debug, Clone, Default)]
pub struct OnTable(pub Option<QualifiedTable>);

impl PartialEq for OnTable {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for OnTable {}

impl std::hash::Hash for OnTable {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

impl PartialOrd for OnTable {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OnTable {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

impl ObjectId {
    /// The event trigger `name` on `table`.
    pub fn event_trigger(table: &QualifiedTable, name: impl Into<String>) -> Self {
        ObjectId::EventTrigger(OnTable(Some(table.clone())), name.into())
    }

    /// The tracked table the object is defined on (the table itself for a table), when known.
    pub fn table(&self) -> Option<&QualifiedTable> {
        match self {
            ObjectId::Table(t)
            | ObjectId::Relationship(t, _)
            | ObjectId::ComputedField(t, _)
            | ObjectId::Permission(t, _, _)
            | ObjectId::RemoteRelationship(t, _) => Some(t),
            ObjectId::EventTrigger(on, _) => on.0.as_ref(),
            _ => None,
        }
    }

    /// The object as dependency messages name it (`relationship article.author`).
    pub fn describe(&self) -> String {
        match self {
            ObjectId::Table(t) => format!("table {t}"),
            ObjectId::Relationship(t, r) => format!("relationship {t}.{r}"),
            ObjectId::ComputedField(t, c) => format!("computed field {t}.{c}"),
            ObjectId::Permission(t, role, kind) => {
                format!("permission {t}.{role}.{}", kind.as_str())
            }
            ObjectId::EventTrigger(OnTable(Some(t)), n) => format!("event-trigger {t}.{n}"),
            ObjectId::EventTrigger(OnTable(None), n) => format!("event-trigger {n}"),
            ObjectId::RemoteSchema(n) => format!("remote schema {n}"),
            ObjectId::Action(n) => format!("action {n}"),
            ObjectId::ActionPermission(a, r) => format!("action permission {a}.{r}"),
            ObjectId::CustomType(n) => format!("custom type {n}"),
            ObjectId::CustomTypes => "custom types".to_owned(),
            ObjectId::CustomTypeRelationship(t, r) => format!("custom type relationship {t}.{r}"),
            ObjectId::QueryCollection(n) => format!("query collection {n}"),
            ObjectId::Allowlist(n) => format!("allow-list entry {n}"),
            ObjectId::InheritedRole(n) => format!("inherited role {n}"),
            ObjectId::ApiLimits => "api limits".to_owned(),
            ObjectId::RemoteRelationship(t, n) => format!("remote relationship {t}.{n}"),
            ObjectId::RemoteSchemaRelationship(r, t, n) => {
                format!("remote schema relationship {r}.{t}.{n}")
            }
            ObjectId::RestEndpoint(n) => format!("rest endpoint {n}"),
            ObjectId::Function(f) => format!("function {f}"),
            ObjectId::FunctionPermission(f, r) => format!("function permission {f}.{r}"),
            ObjectId::LogicalModel(m) => format!("logical model {m}"),
            ObjectId::LogicalModelPermission(m, r) => format!("logical model permission {m}.{r}"),
            ObjectId::NativeQuery(q) => format!("native query {q}"),
            ObjectId::NativeQueryRelationship(q, r) => {
                format!("native query relationship {q}.{r}")
            }
            ObjectId::CronTrigger(n) => format!("cron trigger {n}"),
        }
    }

    /// The identity of the object a `{"type", "definition"}` item names (an inconsistency, a
    /// dry run's change), when the item names one.
    pub fn of_item(kind: &str, definition: &Value) -> Option<Self> {
        let table = |v: &Value| serde_json::from_value::<QualifiedTable>(v.clone()).ok();
        let text = |k: &str| definition.get(k).and_then(Value::as_str).map(str::to_owned);
        Some(match kind {
            "table" => ObjectId::Table(table(definition.get("table").unwrap_or(definition))?),
            "object_relation" | "array_relation" => {
                ObjectId::Relationship(table(definition.get("table")?)?, text("name")?)
            }
            "computed_field" => {
                ObjectId::ComputedField(table(definition.get("table")?)?, text("name")?)
            }
            "event_trigger" => {
                let name = definition.get("configuration")?.get("name")?.as_str()?;
                let on = definition.get("table").and_then(table);
                ObjectId::EventTrigger(OnTable(on), name.to_owned())
            }
            "remote_schema" => ObjectId::RemoteSchema(text("name")?),
            "action" => ObjectId::Action(text("name")?),
            "action_permission" => ObjectId::ActionPermission(text("action")?, text("role")?),
            "inherited_role" => ObjectId::InheritedRole(text("role_name")?),
            "api_limits" => ObjectId::ApiLimits,
            "remote_relationship" => {
                ObjectId::RemoteRelationship(table(definition.get("table")?)?, text("name")?)
            }
            "remote_schema_remote_relationship" => ObjectId::RemoteSchemaRelationship(
                text("remote_schema")?,
                text("type_name")?,
                text("name")?,
            ),
            "rest_endpoint" => ObjectId::RestEndpoint(text("name")?),
            // An inconsistency names the function alone; a dry run's item, its arguments.
            "function" => {
                ObjectId::Function(table(definition.get("function").unwrap_or(definition))?)
            }
            "function_permission" => {
                ObjectId::FunctionPermission(table(definition.get("function")?)?, text("role")?)
            }
            "logical_model" => ObjectId::LogicalModel(text("name")?),
            "logical_model_permission" => {
                ObjectId::LogicalModelPermission(text("name")?, text("role")?)
            }
            "native_query" => ObjectId::NativeQuery(text("root_field_name")?),
            "cron_trigger" => ObjectId::CronTrigger(text("name")?),
            permission => {
                let kind = PermissionKind::ALL
                    .into_iter()
                    .find(|k| k.object_type() == permission)?;
                ObjectId::Permission(table(definition.get("table")?)?, text("role")?, kind)
            }
        })
    }

    /// The key's kind and segments.
    fn key_parts(&self) -> (&'static str, Vec<&str>) {
        fn table(t: &QualifiedTable) -> [&str; 2] {
            [t.schema.as_str(), t.name.as_str()]
        }
        match self {
            ObjectId::Table(t) => ("table", table(t).to_vec()),
            ObjectId::Relationship(t, r) => ("relationship", [&table(t)[..], &[r]].concat()),
            ObjectId::ComputedField(t, c) => ("computed_field", [&table(t)[..], &[c]].concat()),
            ObjectId::Permission(t, role, kind) => (
                "permission",
                [&table(t)[..], &[role.as_str(), kind.as_str()]].concat(),
            ),
            ObjectId::EventTrigger(_, n) => ("event_trigger", vec![n]),
            ObjectId::RemoteSchema(n) => ("remote_schema", vec![n]),
            ObjectId::Action(n) => ("action", vec![n]),
            ObjectId::ActionPermission(a, r) => ("action_permission", vec![a, r]),
            ObjectId::CustomType(n) => ("custom_type", vec![n]),
            ObjectId::CustomTypes => ("custom_types", Vec::new()),
            ObjectId::CustomTypeRelationship(t, r) => ("custom_type_relationship", vec![t, r]),
            ObjectId::QueryCollection(n) => ("query_collection", vec![n]),
            ObjectId::Allowlist(n) => ("allowlist", vec![n]),
            ObjectId::InheritedRole(n) => ("inherited_role", vec![n]),
            ObjectId::ApiLimits => ("api_limits", Vec::new()),
            ObjectId::RemoteRelationship(t, n) => {
                ("remote_relationship", [&table(t)[..], &[n]].concat())
            }
            ObjectId::RemoteSchemaRelationship(r, t, n) => {
                ("remote_schema_relationship", vec![r, t, n])
            }
            ObjectId::RestEndpoint(n) => ("rest_endpoint", vec![n]),
            ObjectId::Function(f) => ("function", table(f).to_vec()),
            ObjectId::FunctionPermission(f, r) => {
                ("function_permission", [&table(f)[..], &[r]].concat())
            }
            ObjectId::LogicalModel(m) => ("logical_model", vec![m]),
            ObjectId::LogicalModelPermission(m, r) => ("logical_model_permission", vec![m, r]),
            ObjectId::NativeQuery(q) => ("native_query", vec![q]),
            ObjectId::CronTrigger(n) => ("cron_trigger", vec![n]),
            ObjectId::NativeQueryRelationship(q, r) => ("native_query_relationship", vec![q, r]),
        }
    }
}

impl std::fmt::Display for ObjectId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (kind, segments) = self.key_parts();
        f.write_str(kind)?;
        for (i, segment) in segments.iter().enumerate() {
            f.write_str(if i == 0 { ":" } else { "." })?;
            if segment.contains(['.', '"', ':']) {
                write!(f, "\"{}\"", segment.replace('"', "\"\""))?;
            } else {
                f.write_str(segment)?;
            }
        }
        Ok(())
    }
}

/// A key that names no object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an object key: {0}")]
pub struct BadKey(pub String);

impl std::str::FromStr for ObjectId {
    type Err = BadKey;

    fn from_str(key: &str) -> Result<Self, BadKey> {
        let bad = || BadKey(key.to_owned());
        let (kind, rest) = key.split_once(':').unwrap_or((key, ""));
        let segments = segments(rest).ok_or_else(bad)?;
        let table = |s: &str, n: &str| QualifiedTable::new(s, n);
        let id = match (kind, segments.as_slice()) {
            ("table", [s, n]) => ObjectId::Table(table(s, n)),
            ("relationship", [s, n, r]) => ObjectId::Relationship(table(s, n), r.clone()),
            ("computed_field", [s, n, c]) => ObjectId::ComputedField(table(s, n), c.clone()),
            ("permission", [s, n, role, op]) => {
                let kind = PermissionKind::ALL
                    .into_iter()
                    .find(|k| k.as_str() == op)
                    .ok_or_else(bad)?;
                ObjectId::Permission(table(s, n), role.clone(), kind)
            }
            ("event_trigger", [n]) => ObjectId::EventTrigger(OnTable(None), n.clone()),
            ("remote_schema", [n]) => ObjectId::RemoteSchema(n.clone()),
            ("action", [n]) => ObjectId::Action(n.clone()),
            ("action_permission", [a, r]) => ObjectId::ActionPermission(a.clone(), r.clone()),
            ("custom_type", [n]) => ObjectId::CustomType(n.clone()),
            ("custom_types", []) => ObjectId::CustomTypes,
            ("custom_type_relationship", [t, r]) => {
                ObjectId::CustomTypeRelationship(t.clone(), r.clone())
            }
            ("query_collection", [n]) => ObjectId::QueryCollection(n.clone()),
            ("allowlist", [n]) => ObjectId::Allowlist(n.clone()),
            ("inherited_role", [n]) => ObjectId::InheritedRole(n.clone()),
            ("api_limits", []) => ObjectId::ApiLimits,
            ("remote_relationship", [s, n, r]) => {
                ObjectId::RemoteRelationship(table(s, n), r.clone())
            }
            ("remote_schema_relationship", [r, t, n]) => {
                ObjectId::RemoteSchemaRelationship(r.clone(), t.clone(), n.clone())
            }
            ("rest_endpoint", [n]) => ObjectId::RestEndpoint(n.clone()),
            ("function", [s, n]) => ObjectId::Function(table(s, n)),
            ("function_permission", [s, n, r]) => {
                ObjectId::FunctionPermission(table(s, n), r.clone())
            }
            ("logical_model", [m]) => ObjectId::LogicalModel(m.clone()),
            ("logical_model_permission", [m, r]) => {
                ObjectId::LogicalModelPermission(m.clone(), r.clone())
            }
            ("native_query", [q]) => ObjectId::NativeQuery(q.clone()),
            ("cron_trigger", [n]) => ObjectId::CronTrigger(n.clone()),
            ("native_query_relationship", [q, r]) => {
                ObjectId::NativeQueryRelationship(q.clone(), r.clone())
            }
            _ => return Err(bad()),
        };
        Ok(id)
    }
}

/// The segments of a key after its kind: `.`-separated, each bare or `"quoted"` (inner quotes
/// doubled); `None` when they do not read so.
fn segments(text: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    if text.is_empty() {
        return Some(out);
    }
    let mut chars = text.chars().peekable();
    loop {
        let mut segment = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next()? {
                    '"' if chars.peek() == Some(&'"') => {
                        chars.next();
                        segment.push('"');
                    }
                    '"' => break,
                    c => segment.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == '.' {
                    break;
                }
                if c == '"' || c == ':' {
                    return None;
                }
                segment.push(c);
                chars.next();
            }
        }
        out.push(segment);
        match chars.next() {
            None => return Some(out),
            Some('.') => {}
            Some(_) => return None,
        }
    }
}

/// The four permission kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionKind {
    Insert,
    Select,
    Update,
    Delete,
}

impl PermissionKind {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionKind::Insert => "insert",
            PermissionKind::Select => "select",
            PermissionKind::Update => "update",
            PermissionKind::Delete => "delete",
        }
    }

    /// The `type` of its permissions in inconsistency reports (`select_permission`).
    pub fn object_type(self) -> &'static str {
        match self {
            PermissionKind::Insert => "insert_permission",
            PermissionKind::Select => "select_permission",
            PermissionKind::Update => "update_permission",
            PermissionKind::Delete => "delete_permission",
        }
    }

    /// All four, in metadata order.
    pub const ALL: [PermissionKind; 4] = [
        PermissionKind::Insert,
        PermissionKind::Select,
        PermissionKind::Update,
        PermissionKind::Delete,
    ];
}

/// The definition object of a relationship as reported in inconsistencies.
pub fn relationship_definition<U: Serialize>(
    table: &QualifiedTable,
    rel: &RelationshipEntry<U>,
) -> Value {
    json!({"table": table, "name": rel.name, "using": rel.using, "comment": rel.comment})
}

/// The definition object of a remote relationship as reported in inconsistencies: the
/// arguments that create it, in the form it was written.
pub fn remote_relationship_definition(
    table: &QualifiedTable,
    relationship: &RemoteRelationshipEntry,
) -> Value {
    let mut args = serde_json::Map::new();
    args.insert("name".into(), json!(relationship.name));
    args.insert("table".into(), json!(table));
    let definition = serde_json::to_value(&relationship.definition).unwrap_or_default();
    match (&relationship.definition, definition) {
        (RemoteRelationshipDefinition::Legacy(_), Value::Object(keys)) => args.extend(keys),
        (_, definition) => {
            args.insert("definition".into(), definition);
        }
    }
    Value::Object(args)
}

/// The definition object of a permission as reported in inconsistencies.
pub fn permission_definition<P: Serialize>(
    table: &QualifiedTable,
    perm: &PermissionEntry<P>,
) -> Value {
    json!({"table": table, "role": perm.role, "permission": perm.permission, "comment": perm.comment})
}

/// The definition object of a computed field as reported in inconsistencies.
pub fn computed_field_definition(table: &QualifiedTable, cf: &ComputedFieldEntry) -> Value {
    json!({"table": table, "name": cf.name, "definition": cf.definition, "comment": cf.comment})
}

/// The definition object of a tracked function as reported in inconsistencies.
pub fn function_definition(entry: &FunctionEntry) -> Value {
    json!({"schema": entry.function.schema, "name": entry.function.name})
}

/// An object defined on a table, as inconsistency reports name it.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnedObject {
    pub id: ObjectId,
    /// `type` on the wire (`object_relation`, `select_permission`, …).
    pub kind: &'static str,
    /// Its definition as it was created.
    pub definition: Value,
}

impl TableEntry {
    /// Everything defined on this table (relationships, computed fields, permissions, event
    /// triggers), in metadata order: what becomes inconsistent with the table when the table
    /// itself is.
    pub fn owned_objects(&self) -> Vec<OwnedObject> {
        let table = &self.table;
        let mut out = Vec::new();
        let mut push = |id, kind, definition| {
            out.push(OwnedObject {
                id,
                kind,
                definition,
            })
        };
        for rel in &self.object_relationships {
            push(
                ObjectId::Relationship(table.clone(), rel.name.0.clone()),
                "object_relation",
                relationship_definition(table, rel),
            );
        }
        for rel in &self.array_relationships {
            push(
                ObjectId::Relationship(table.clone(), rel.name.0.clone()),
                "array_relation",
                relationship_definition(table, rel),
            );
        }
        for cf in &self.computed_fields {
            push(
                ObjectId::ComputedField(table.clone(), cf.name.0.clone()),
                "computed_field",
                computed_field_definition(table, cf),
            );
        }
        for rel in &self.remote_relationships {
            push(
                ObjectId::RemoteRelationship(table.clone(), rel.name.0.clone()),
                "remote_relationship",
                remote_relationship_definition(table, rel),
            );
        }
        let permissions = [
            permissions(table, PermissionKind::Insert, &self.insert_permissions),
            permissions(table, PermissionKind::Select, &self.select_permissions),
            permissions(table, PermissionKind::Update, &self.update_permissions),
            permissions(table, PermissionKind::Delete, &self.delete_permissions),
        ];
        for (id, kind, definition) in permissions.into_iter().flatten() {
            push(id, kind, definition);
        }
        for trigger in &self.event_triggers {
            push(
                ObjectId::event_trigger(table, trigger.name.0.clone()),
                "event_trigger",
                event_trigger_definition(table, trigger),
            );
        }
        out
    }
}

/// The definition object of an event trigger as reported in inconsistencies.
pub fn event_trigger_definition(table: &QualifiedTable, trigger: &EventTriggerEntry) -> Value {
    json!({"table": table, "configuration": trigger})
}

/// The permissions of one kind on a table as owned objects: (id, wire type, definition).
fn permissions<P: Serialize>(
    table: &QualifiedTable,
    kind: PermissionKind,
    entries: &[PermissionEntry<P>],
) -> Vec<(ObjectId, &'static str, Value)> {
    let wire = kind.object_type();
    entries
        .iter()
        .map(|p| {
            (
                ObjectId::Permission(table.clone(), p.role.0.clone(), kind),
                wire,
                permission_definition(table, p),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_read_back_as_the_objects_they_name() {
        let odd = QualifiedTable::new("my.schema", "a\"b:c");
        let ids = [
            ObjectId::Table(QualifiedTable::new("public", "article")),
            ObjectId::Relationship(odd.clone(), "by.dot".into()),
            ObjectId::ComputedField(odd.clone(), "".into()),
            ObjectId::Permission(odd, "us\"er".into(), PermissionKind::Update),
            ObjectId::EventTrigger(OnTable(None), "notify".into()),
            ObjectId::RemoteSchema("geo".into()),
            ObjectId::Action("signUp".into()),
            ObjectId::ActionPermission("signUp".into(), "guest".into()),
            ObjectId::CustomType("Email".into()),
            ObjectId::CustomTypes,
            ObjectId::CustomTypeRelationship("Result".into(), "author".into()),
            ObjectId::QueryCollection("allowed".into()),
            ObjectId::Allowlist("allowed".into()),
            ObjectId::Function(QualifiedTable::new("public", "search")),
            ObjectId::FunctionPermission(QualifiedTable::new("a.b", "f"), "user".into()),
        ];
        for id in ids {
            let key = id.to_string();
            assert_eq!(key.parse::<ObjectId>(), Ok(id), "{key}");
        }
        let permission = ObjectId::Permission(
            QualifiedTable::new("public", "article"),
            "user".into(),
            PermissionKind::Select,
        );
        assert_eq!(
            permission.to_string(),
            "permission:public.article.user.select"
        );
        assert_eq!(
            ObjectId::Relationship(QualifiedTable::new("a.b", "t"), "x".into()).to_string(),
            "relationship:\"a.b\".t.x"
        );
        for bad in [
            "",
            "table:a",
            "table:a.b.c",
            "nothing:x",
            "table:a\".b",
            "permission:a.b.r.read",
        ] {
            assert!(bad.parse::<ObjectId>().is_err(), "{bad}");
        }
    }

    #[test]
    fn function_items_name_their_objects_in_both_shapes() {
        let f = QualifiedTable::new("public", "search");
        assert_eq!(
            ObjectId::of_item("function", &json!({"schema": "public", "name": "search"})),
            Some(ObjectId::Function(f.clone()))
        );
        assert_eq!(
            ObjectId::of_item(
                "function",
                &json!({"function": {"schema": "public", "name": "search"}, "configuration": {}})
            ),
            Some(ObjectId::Function(f.clone()))
        );
        assert_eq!(
            ObjectId::of_item(
                "function_permission",
                &json!({"function": {"schema": "public", "name": "search"}, "role": "user"})
            ),
            Some(ObjectId::FunctionPermission(f, "user".into()))
        );
    }

    #[test]
    fn an_event_trigger_is_itself_on_any_table() {
        let on = ObjectId::event_trigger(&QualifiedTable::new("public", "article"), "t");
        let read: ObjectId = "event_trigger:t".parse().unwrap();
        assert_eq!(on, read);
        assert_eq!(on.describe(), "event-trigger article.t");
        assert_eq!(read.table(), None);
    }
}
