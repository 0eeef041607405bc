//! The metadata document seen as a set of addressable objects: one [`Object`] per thing a
//! Kubernetes resource can own (a tracked table, one relationship, one permission …), each
//! with a stable key (`permission:public.article.user.select`) and a canonical definition.
//!
//! Ownership and drift (`docs/kubernetes.md`, "Drift and self-heal") compare definitions by
//! key: the desired one a resource asked for against the one in the catalog. Both sides are
//! serialized by the same typed structs, so defaults are filled the same way and a comparison
//! never reports a difference the metadata API would not show. Pure: no IO.

use super::ids::{
    computed_field_definition, event_trigger_definition, permission_definition,
    relationship_definition, ObjectId, PermissionKind,
};
use super::types::*;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// A custom GraphQL type, one of the four kinds `set_custom_types` carries.
#[derive(Debug, Clone, PartialEq)]
pub enum CustomType {
    /// An input object type.
    InputObject(InputObjectType),
    /// An object type.
    Object(ObjectType),
    /// A scalar.
    Scalar(ScalarType),
    /// An enum.
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
    RemoteSchema(RemoteSchemaEntry),
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
}

/// One key segment; quoted (`"a.b"`, inner quotes doubled) when it contains a separator.
fn segment(s: &str) -> String {
    if s.contains(['.', '"', ':']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

fn table_segments(t: &QualifiedTable) -> String {
    format!("{}.{}", segment(&t.schema), segment(&t.name))
}

/// The key of a tracked table.
pub fn table_key(t: &QualifiedTable) -> String {
    format!("table:{}", table_segments(t))
}

/// The key of an event trigger: by name alone, since trigger names are unique across tables.
pub fn event_trigger_key(name: &str) -> String {
    format!("event_trigger:{}", segment(name))
}

/// The key of a remote schema: `remote_schema:<name>`.
pub fn remote_schema_key(name: &str) -> String {
    format!("remote_schema:{}", segment(name))
}

/// The key of an action: `action:<name>`.
pub fn action_key(name: &str) -> String {
    format!("action:{}", segment(name))
}

/// The key of an action permission: `action_permission:<action>.<role>`.
pub fn action_permission_key(action: &str, role: &str) -> String {
    format!("action_permission:{}.{}", segment(action), segment(role))
}

/// The action entry with only its own settings (what [`Object::Action`] holds).
pub fn action_settings(entry: &ActionEntry) -> ActionEntry {
    ActionEntry {
        permissions: Vec::new(),
        ..entry.clone()
    }
}

impl Object {
    /// The object's key (`docs/kubernetes.md`, "Kinds"), e.g. `permission:public.article.user.select`.
    pub fn key(&self) -> String {
        match self {
            Object::Table(e) => table_key(&e.table),
            Object::ObjectRelationship(t, r) => {
                format!("relationship:{}.{}", table_segments(t), segment(&r.name.0))
            }
            Object::ArrayRelationship(t, r) => {
                format!("relationship:{}.{}", table_segments(t), segment(&r.name.0))
            }
            Object::Permission(t, kind, p) => format!(
                "permission:{}.{}.{}",
                table_segments(t),
                segment(&p.role.0),
                kind.as_str()
            ),
            Object::ComputedField(t, c) => {
                format!(
                    "computed_field:{}.{}",
                    table_segments(t),
                    segment(&c.name.0)
                )
            }
            Object::EventTrigger(_, e) => event_trigger_key(&e.name.0),
            Object::RemoteSchema(r) => remote_schema_key(&r.name.0),
            Object::Action(a) => action_key(&a.name.0),
            Object::ActionPermission(action, p) => action_permission_key(&action.0, &p.role.0),
            Object::CustomType(c) => format!("custom_type:{}", segment(c.name())),
            Object::Collection(c) => format!("query_collection:{}", segment(&c.name.0)),
            Object::Allowlist(a) => format!("allowlist:{}", segment(&a.collection.0)),
        }
    }

    /// The table the object belongs to, if any.
    pub fn table(&self) -> Option<&QualifiedTable> {
        match self {
            Object::Table(e) => Some(&e.table),
            Object::ObjectRelationship(t, _)
            | Object::ArrayRelationship(t, _)
            | Object::Permission(t, _, _)
            | Object::ComputedField(t, _)
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

/// The key of the object an inconsistency names, when it is an ownable object.
pub fn object_id_key(id: &ObjectId) -> Option<String> {
    Some(match id {
        ObjectId::Table(t) => table_key(t),
        ObjectId::Relationship(t, r) => {
            format!("relationship:{}.{}", table_segments(t), segment(r))
        }
        ObjectId::ComputedField(t, c) => {
            format!("computed_field:{}.{}", table_segments(t), segment(c))
        }
        ObjectId::Permission(t, role, kind) => format!(
            "permission:{}.{}.{}",
            table_segments(t),
            segment(role),
            kind.as_str()
        ),
        ObjectId::EventTrigger(_, name) => event_trigger_key(name),
        ObjectId::RemoteSchema(name) => remote_schema_key(name),
        ObjectId::Action(name) => action_key(name),
        _ => return None,
    })
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
/// them, without taking apart the tables none of the keys can name. A group commit checks a
/// few keys against a document of thousands of tables this way; the whole map copied every
/// object of the document.
pub fn objects_with_keys(metadata: &Metadata, keys: &BTreeSet<&str>) -> BTreeMap<String, Object> {
    // A table's objects have keys `<kind>:<table segments>` or `<kind>:<table segments>.<more>`.
    // Every prefix of a key's part after the kind that ends where a segment may end: the
    // tables whose segments are among them (and perhaps a few more) are taken apart.
    let mut prefixes: HashSet<&str> = HashSet::new();
    for key in keys {
        if let Some((_, rest)) = key.split_once(':') {
            prefixes.insert(rest);
            prefixes.extend(rest.match_indices('.').map(|(i, _)| &rest[..i]));
        }
    }
    let triggers_wanted = keys.iter().any(|k| k.starts_with("event_trigger:"));
    let mut out = Vec::new();
    for entry in &metadata.tables {
        if prefixes.contains(table_segments(&entry.table).as_str()) {
            push_table_objects(entry, &mut out);
        } else if triggers_wanted {
            // Event trigger keys name the trigger alone, not its table.
            out.extend(
                entry
                    .event_triggers
                    .iter()
                    .filter(|e| keys.contains(event_trigger_key(&e.name.0).as_str()))
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
        out.push(Object::RemoteSchema(r.clone()));
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
}

/// Writes `value` with object keys sorted at every level: equal documents give equal text
/// whatever their key order.
pub fn canonical_text(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                let mut out = Map::new();
                for k in keys {
                    out.insert(k.clone(), sorted(&map[k]));
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

/// `sha256:<hex>` of the canonical text of `value`.
pub fn hash(value: &Value) -> String {
    super::digest::sha256_tagged(canonical_text(value).as_bytes())
}

/// The fields in which two definitions differ, as `field` or `field.subfield` (one level deep
/// under objects), in key order.
pub fn differing_fields(desired: &Value, actual: &Value) -> Vec<String> {
    let (Value::Object(a), Value::Object(b)) = (desired, actual) else {
        return if desired == actual {
            Vec::new()
        } else {
            vec!["(definition)".to_owned()]
        };
    };
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut out = Vec::new();
    for key in keys {
        match (a.get(key), b.get(key)) {
            (Some(x), Some(y)) if x == y => {}
            (Some(Value::Object(x)), Some(Value::Object(y))) => {
                let mut inner: Vec<&String> = x.keys().chain(y.keys()).collect();
                inner.sort();
                inner.dedup();
                out.extend(
                    inner
                        .into_iter()
                        .filter(|k| x.get(*k) != y.get(*k))
                        .map(|k| format!("{key}.{k}")),
                );
            }
            (None, Some(Value::Null)) | (Some(Value::Null), None) => {}
            _ => out.push(key.clone()),
        }
    }
    out
}

/// Who owns a managed object: the Kubernetes resource that declared it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Owner {
    /// `basalt.dev/v1alpha1`.
    pub api_version: String,
    /// The resource kind.
    pub kind: String,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its uid (a re-created resource of the same name is a different owner).
    #[serde(skip)]
    pub uid: String,
}

impl Owner {
    /// `basalt.dev/v1alpha1 Permission shop/article-user-select`.
    pub fn describe(&self) -> String {
        format!(
            "{} {} {}/{}",
            self.api_version, self.kind, self.namespace, self.name
        )
    }
}

/// One row of `basalt_catalog.managed_objects`.
#[derive(Debug, Clone, PartialEq)]
pub struct Managed {
    /// The object key.
    pub key: String,
    /// The owning resource.
    pub owner: Owner,
    /// Its `metadata.generation` when written.
    pub generation: i64,
    /// The canonical desired definition (`null` in rows read for planning, which compare
    /// `desired_hash`: see `catalog::managed::load_for_plans`).
    pub desired: Value,
    /// [`hash`] of `desired`.
    pub desired_hash: String,
    /// Catalog version of the write.
    pub applied_version: i64,
    /// Set when the owning resource no longer exists.
    pub orphaned: bool,
}

/// How a managed object differs from its resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriftKind {
    /// Present with another definition.
    Modified,
    /// Absent from the catalog.
    Missing,
    /// Its resource is gone.
    Orphaned,
}

impl DriftKind {
    /// Wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            DriftKind::Modified => "modified",
            DriftKind::Missing => "missing",
            DriftKind::Orphaned => "orphaned",
        }
    }
}

/// One drifted object.
#[derive(Debug, Clone, PartialEq)]
pub struct Drift {
    /// The object key.
    pub key: String,
    /// What kind of drift.
    pub kind: DriftKind,
    /// Its owner.
    pub owner: Owner,
    /// Differing fields (for `modified`).
    pub fields: Vec<String>,
}

impl Drift {
    /// Why the object is reported, naming the resource.
    pub fn reason(&self) -> String {
        let (namespace, name) = (&self.owner.namespace, &self.owner.name);
        match self.kind {
            DriftKind::Modified => {
                format!("catalog definition differs from Kubernetes resource {namespace}/{name}")
            }
            DriftKind::Missing => format!(
                "object declared by Kubernetes resource {namespace}/{name} is missing from the catalog"
            ),
            DriftKind::Orphaned => format!(
                "Kubernetes resource {namespace}/{name} that declared this object no longer exists"
            ),
        }
    }

    /// The `definition` of its `get_inconsistent_metadata` item (`type: "drift"`).
    pub fn definition(&self) -> Value {
        let mut definition = json!({
            "object": self.key,
            "drift": self.kind.as_str(),
            "owner": self.owner,
        });
        if !self.fields.is_empty() {
            definition["fields"] = json!(self.fields);
        }
        definition
    }
}

/// Drift of one managed object against the catalog, if any. Orphaned rows report as orphaned
/// whatever their definition.
pub fn drift_of(row: &Managed, catalog: &BTreeMap<String, Object>) -> Option<Drift> {
    let drift = |kind, fields| Drift {
        key: row.key.clone(),
        kind,
        owner: row.owner.clone(),
        fields,
    };
    if row.orphaned {
        return Some(drift(DriftKind::Orphaned, Vec::new()));
    }
    match catalog.get(&row.key) {
        None => Some(drift(DriftKind::Missing, Vec::new())),
        Some(object) => {
            let actual = object.canonical();
            if canonical_text(&actual) == canonical_text(&row.desired) {
                None
            } else {
                Some(drift(
                    DriftKind::Modified,
                    differing_fields(&row.desired, &actual),
                ))
            }
        }
    }
}

/// Every drifted managed object, in key order.
pub fn drift(rows: &[Managed], metadata: &Metadata) -> Vec<Drift> {
    let catalog = catalog_objects(metadata);
    rows.iter().filter_map(|r| drift_of(r, &catalog)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn library() -> Metadata {
        serde_json::from_value(json!({
            "version": 2,
            "tables": [{
                "table": {"schema": "public", "name": "article"},
                "object_relationships": [{"name": "author", "using": {"foreign_key_constraint_on": "author_id"}}],
                "select_permissions": [{"role": "user", "permission": {"columns": "*", "filter": {"author_id": {"_eq": "X-Svc-User-Id"}}}}],
                "event_triggers": [{"name": "article.published", "definition": {"update": {"columns": ["published"]}},
                    "webhook_from_env": "ARTICLE_WEBHOOK_URL"}]
            }, {
                "table": {"schema": "my.schema", "name": "a\"b"}
            }],
            "query_collections": [{"name": "allowed", "definition": {"queries": []}}],
            "allowlist": [{"collection": "allowed"}],
            "custom_types": {"scalars": [{"name": "Email"}]},
            "remote_schemas": [{"name": "geo.v2", "definition": {"url_from_env": "GEO_URL",
                "headers": [{"name": "Authorization", "value_from_env": "GEO_TOKEN"}], "timeout_seconds": 10}}],
            "actions": [{"name": "archiveArticle", "comment": "soft delete",
                "definition": {"handler": "{{ACTIONS_URL}}/archive", "output_type": "ArchiveResult",
                    "arguments": [{"name": "id", "type": "Int!"}], "kind": "asynchronous",
                    "headers": [{"name": "X-Secret", "value_from_env": "ACTION_SECRET"}]},
                "permissions": [{"role": "editor", "comment": "desk"}, {"role": "team.lead"}]}]
        }))
        .unwrap()
    }

    /// Looking up some keys finds exactly what the whole map holds for them, dotted and
    /// quoted names and event triggers (keyed by name, not table) included.
    #[test]
    fn objects_with_keys_agree_with_the_whole_map() {
        let mut metadata = library();
        for i in 0..5 {
            let extra: TableEntry = serde_json::from_value(json!({
                "table": {"schema": "public", "name": format!("article{i}")},
                "select_permissions": [{"role": "user", "permission": {"columns": "*", "filter": {}}}]
            }))
            .unwrap();
            metadata.tables.push(std::sync::Arc::new(extra));
        }
        let all = catalog_objects(&metadata);
        let keys: Vec<&String> = all.keys().collect();
        // Every single key, every pair of neighbours, nothing, and keys not in the document.
        let mut sets: Vec<BTreeSet<&str>> = keys.iter().map(|k| [k.as_str()].into()).collect();
        sets.extend(
            keys.windows(2)
                .map(|w| [w[0].as_str(), w[1].as_str()].into()),
        );
        sets.push(BTreeSet::new());
        sets.push(
            [
                "table:public.article9",
                "permission:public.article.nobody.select",
            ]
            .into(),
        );
        sets.push(keys.iter().map(|k| k.as_str()).collect());
        for wanted in sets {
            let expected: BTreeMap<String, Object> = all
                .iter()
                .filter(|(k, _)| wanted.contains(k.as_str()))
                .map(|(k, o)| (k.clone(), o.clone()))
                .collect();
            assert_eq!(
                objects_with_keys(&metadata, &wanted),
                expected,
                "{wanted:?}"
            );
        }
    }

    #[test]
    fn every_object_has_a_key_and_dots_are_quoted() {
        let keys: Vec<String> = catalog_objects(&library()).into_keys().collect();
        assert_eq!(
            keys,
            vec![
                "action:archiveArticle",
                "action_permission:archiveArticle.\"team.lead\"",
                "action_permission:archiveArticle.editor",
                "allowlist:allowed",
                "custom_type:Email",
                "event_trigger:\"article.published\"",
                "permission:public.article.user.select",
                "query_collection:allowed",
                "relationship:public.article.author",
                "remote_schema:\"geo.v2\"",
                "table:\"my.schema\".\"a\"\"b\"",
                "table:public.article",
            ]
        );
    }

    #[test]
    fn event_triggers_are_keyed_by_name_in_every_form() {
        let metadata = library();
        let catalog = catalog_objects(&metadata);
        let key = "event_trigger:\"article.published\"";
        let trigger = &catalog[key];
        assert_eq!(trigger.wire_type(), "event_trigger");
        assert_eq!(
            trigger.table().map(|t| t.name.as_str()),
            Some("article"),
            "a trigger belongs to its table"
        );
        // The definition is the one inconsistencies report, so their owner is found by key.
        let item = trigger.item();
        assert_eq!(item["definition"]["table"]["name"], "article");
        assert_eq!(
            item["definition"]["configuration"]["retry_conf"]["interval_sec"],
            10
        );
        assert_eq!(
            item_key("event_trigger", &item["definition"]).as_deref(),
            Some(key)
        );
        let id = ObjectId::EventTrigger(
            QualifiedTable::new("public", "article"),
            "article.published".into(),
        );
        assert_eq!(object_id_key(&id).as_deref(), Some(key));
        assert_eq!(item_key("event_trigger", &json!({"table": "x"})), None);
    }

    #[test]
    fn remote_schemas_are_keyed_by_name_in_every_form() {
        let metadata = library();
        let catalog = catalog_objects(&metadata);
        let key = "remote_schema:\"geo.v2\"";
        let remote = &catalog[key];
        assert_eq!(remote.wire_type(), "remote_schema");
        assert_eq!(remote.table(), None, "a remote schema belongs to no table");
        // The definition is the stored entry, as inconsistencies of remote schemas report it,
        // so their owner is found by key. Header values from the environment stay names.
        let item = remote.item();
        assert_eq!(
            item["definition"],
            json!({"name": "geo.v2", "definition": {"url_from_env": "GEO_URL", "timeout_seconds": 10,
                "headers": [{"name": "Authorization", "value_from_env": "GEO_TOKEN"}]}})
        );
        assert_eq!(
            item_key("remote_schema", &item["definition"]).as_deref(),
            Some(key)
        );
        let id = ObjectId::RemoteSchema("geo.v2".into());
        assert_eq!(object_id_key(&id).as_deref(), Some(key));
        assert_eq!(item_key("remote_schema", &json!({"url": "x"})), None);
    }

    #[test]
    fn actions_and_their_permissions_are_keyed_in_every_form() {
        let metadata = library();
        let catalog = catalog_objects(&metadata);
        let key = "action:archiveArticle";
        let action = &catalog[key];
        assert_eq!(action.wire_type(), "action");
        assert_eq!(action.table(), None, "an action belongs to no table");
        // The action's own settings, as `create_action` takes them: its permissions are
        // objects of their own, so adding one through the API is no change to the action.
        assert_eq!(
            action.canonical(),
            json!({"name": "archiveArticle", "comment": "soft delete",
                "definition": {"handler": "{{ACTIONS_URL}}/archive", "output_type": "ArchiveResult",
                    "arguments": [{"name": "id", "type": "Int!"}], "type": "mutation",
                    "kind": "asynchronous",
                    "headers": [{"name": "X-Secret", "value_from_env": "ACTION_SECRET"}]}})
        );
        // Inconsistencies report the whole entry (permissions included) under type `action`;
        // its owner is found by name.
        let reported = serde_json::to_value(&metadata.actions[0]).unwrap();
        assert_eq!(item_key("action", &reported).as_deref(), Some(key));
        let id = ObjectId::Action("archiveArticle".into());
        assert_eq!(object_id_key(&id).as_deref(), Some(key));
        assert_eq!(item_key("action", &json!({"handler": "x"})), None);

        let key = "action_permission:archiveArticle.\"team.lead\"";
        let permission = &catalog[key];
        assert_eq!(permission.wire_type(), "action_permission");
        assert_eq!(
            permission.canonical(),
            json!({"action": "archiveArticle", "role": "team.lead"})
        );
        let item = permission.item();
        assert_eq!(
            item_key("action_permission", &item["definition"]).as_deref(),
            Some(key)
        );
        assert_eq!(
            catalog["action_permission:archiveArticle.editor"].canonical(),
            json!({"action": "archiveArticle", "role": "editor", "comment": "desk"})
        );
        assert_eq!(item_key("action_permission", &json!({"role": "x"})), None);
    }

    #[test]
    fn hash_ignores_key_order() {
        let a = json!({"b": 1, "a": {"y": [1, {"q": 1, "p": 2}], "x": null}});
        let b = json!({"a": {"x": null, "y": [1, {"p": 2, "q": 1}]}, "b": 1});
        assert_eq!(hash(&a), hash(&b));
        assert_ne!(hash(&a), hash(&json!({"b": 2})));
        assert!(hash(&a).starts_with("sha256:"));
    }

    #[test]
    fn drift_reports_modified_fields_missing_and_orphaned() {
        let metadata = library();
        let catalog = catalog_objects(&metadata);
        let key = "permission:public.article.user.select";
        let owner = Owner {
            api_version: "basalt.dev/v1alpha1".into(),
            kind: "Permission".into(),
            namespace: "shop".into(),
            name: "article-user-select".into(),
            uid: "u1".into(),
        };
        let mut desired = catalog[key].canonical();
        let row = |desired: Value, orphaned: bool, key: &str| Managed {
            key: key.into(),
            owner: owner.clone(),
            generation: 1,
            desired_hash: hash(&desired),
            desired,
            applied_version: 1,
            orphaned,
        };
        assert_eq!(drift_of(&row(desired.clone(), false, key), &catalog), None);
        desired["permission"]["filter"] = json!({});
        let modified = drift_of(&row(desired.clone(), false, key), &catalog).unwrap();
        assert_eq!(modified.kind, DriftKind::Modified);
        assert_eq!(modified.fields, vec!["permission.filter"]);
        let definition = modified.definition();
        assert_eq!(definition["owner"]["kind"], "Permission");
        assert_eq!(definition["fields"], json!(["permission.filter"]));
        assert!(modified.reason().starts_with("catalog definition differs"));
        let missing = drift_of(&row(desired.clone(), false, "table:public.gone"), &catalog);
        assert_eq!(missing.unwrap().kind, DriftKind::Missing);
        let orphaned = drift_of(&row(desired, true, key), &catalog);
        assert_eq!(orphaned.unwrap().kind, DriftKind::Orphaned);
    }

    #[test]
    fn differing_fields_goes_one_level_deep() {
        let a = json!({"name": "x", "definition": {"a": 1, "b": 2}, "comment": null});
        let b = json!({"name": "y", "definition": {"a": 1, "b": 3}});
        assert_eq!(differing_fields(&a, &b), vec!["definition.b", "name"]);
    }
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
            Object::Action(_) => "action",
            Object::ActionPermission(..) => "action_permission",
            Object::CustomType(_) => "custom_type",
            Object::Collection(_) => "query_collection",
            Object::Allowlist(_) => "allowlist",
        }
    }

    /// `{"type", "definition"}`, as `get_inconsistent_metadata` lists objects.
    pub fn item(&self) -> Value {
        json!({"type": self.wire_type(), "definition": self.canonical()})
    }
}

/// What a change of the metadata document does, object by object (a dry run's answer).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObjectChanges {
    /// Objects only in the new document.
    pub added: Vec<Value>,
    /// Objects in both whose definition differs: the new definition, and the old one as
    /// `previous`.
    pub changed: Vec<Value>,
    /// Objects only in the old document.
    pub removed: Vec<Value>,
}

/// Compares two documents object by object, in key order.
pub fn object_changes(before: &Metadata, after: &Metadata) -> ObjectChanges {
    let old = catalog_objects(before);
    let new = catalog_objects(after);
    let mut changes = ObjectChanges::default();
    for (key, object) in &new {
        match old.get(key) {
            None => changes.added.push(object.item()),
            Some(previous) if previous.canonical() != object.canonical() => {
                let mut item = object.item();
                item["previous"] = previous.canonical();
                changes.changed.push(item);
            }
            Some(_) => {}
        }
    }
    for (key, object) in &old {
        if !new.contains_key(key) {
            changes.removed.push(object.item());
        }
    }
    changes
}

/// The key of the object a `{type, definition}` item names (an inconsistency, a dry-run
/// entry), when it is an ownable object.
pub fn item_key(kind: &str, definition: &Value) -> Option<String> {
    let table = |v: &Value| serde_json::from_value::<QualifiedTable>(v.clone()).ok();
    let text = |k: &str| definition.get(k).and_then(Value::as_str);
    Some(match kind {
        "table" => table_key(&table(definition.get("table").unwrap_or(definition))?),
        "object_relation" | "array_relation" => format!(
            "relationship:{}.{}",
            table_segments(&table(definition.get("table")?)?),
            segment(text("name")?)
        ),
        "computed_field" => format!(
            "computed_field:{}.{}",
            table_segments(&table(definition.get("table")?)?),
            segment(text("name")?)
        ),
        "event_trigger" => {
            event_trigger_key(definition.get("configuration")?.get("name")?.as_str()?)
        }
        "remote_schema" => remote_schema_key(text("name")?),
        "action" => action_key(text("name")?),
        "action_permission" => action_permission_key(text("action")?, text("role")?),
        permission => {
            let operation = permission.strip_suffix("_permission")?;
            format!(
                "permission:{}.{}.{}",
                table_segments(&table(definition.get("table")?)?),
                segment(text("role")?),
                operation
            )
        }
    })
}

impl Owner {
    /// `{"apiVersion", "kind", "namespace", "name"}`: who owns an object, as `owner` fields
    /// report it (objects without one are owned by the imperative API, `"api"`).
    pub fn to_json(&self) -> Value {
        json!({"apiVersion": self.api_version, "kind": self.kind, "namespace": self.namespace, "name": self.name})
    }
}

/// Who owns each object of a document: its resource, or `"api"`.
pub fn owners(metadata: &Metadata, rows: &[Managed]) -> Map<String, Value> {
    let by_key: BTreeMap<&str, &Owner> = rows.iter().map(|r| (r.key.as_str(), &r.owner)).collect();
    catalog_objects(metadata)
        .into_keys()
        .map(|key| {
            let owner = by_key
                .get(key.as_str())
                .map(|o| o.to_json())
                .unwrap_or_else(|| json!("api"));
            (key, owner)
        })
        .collect()
}
