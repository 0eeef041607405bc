//! Remote relationships (see `docs/metadata-api.md`, "Remote relationships"): a table's field
//! answered by a field of a remote schema, and a remote object type's field answered by rows
//! of a table. Pure serde types: must not depend on anything outside `metadata`.

use super::*;
use indexmap::IndexMap;
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// A table's relationship to a remote schema, in the form it was written (export writes it
/// back the same way).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteRelationshipEntry {
    /// Field name on the table's type.
    pub name: GraphQLName,
    pub definition: RemoteRelationshipDefinition,
}

/// The two ways of writing a table → remote schema relationship.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoteRelationshipDefinition {
    /// `{"to_remote_schema": {"remote_schema", "lhs_fields", "remote_field"}}`.
    ToRemoteSchema(ToRemoteSchema),
    /// The legacy keys, `{"remote_schema", "basalt_fields", "remote_field"}`.
    Legacy(ToRemoteSchema),
}

impl RemoteRelationshipDefinition {
    /// The target, whichever form.
    pub fn target(&self) -> &ToRemoteSchema {
        match self {
            RemoteRelationshipDefinition::ToRemoteSchema(t)
            | RemoteRelationshipDefinition::Legacy(t) => t,
        }
    }

    /// A join field renamed (its column was): in the join fields and every `$old` template.
    pub fn rename_join_field(&mut self, old: &str, new: &str) {
        let target = match self {
            RemoteRelationshipDefinition::ToRemoteSchema(t)
            | RemoteRelationshipDefinition::Legacy(t) => t,
        };
        if !target.lhs_fields.iter().any(|f| f == old) {
            return;
        }
        for field in target.lhs_fields.iter_mut().filter(|f| *f == old) {
            *field = new.to_owned();
        }
        fn walk(value: &mut Value, old: &str, new: &str) {
            match value {
                Value::String(s) if s.strip_prefix('$') == Some(old) => *s = format!("${new}"),
                Value::Array(items) => items.iter_mut().for_each(|v| walk(v, old, new)),
                Value::Object(map) => map.values_mut().for_each(|v| walk(v, old, new)),
                _ => {}
            }
        }
        let mut level = Some(&mut target.remote_field);
        while let Some(field) = level {
            field.arguments.values_mut().for_each(|v| walk(v, old, new));
            level = field.field.as_deref_mut();
        }
    }

    /// The same target in the current form, join fields sorted: what two definitions are
    /// compared as.
    pub fn canonical(&self) -> RemoteRelationshipDefinition {
        let mut target = self.target().clone();
        target.lhs_fields.sort();
        RemoteRelationshipDefinition::ToRemoteSchema(target)
    }
}

/// Where a table → remote schema relationship leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToRemoteSchema {
    pub remote_schema: Name,
    /// The table's columns (or argument-less computed fields) whose values fill the
    /// templates; a set, in the order given.
    pub lhs_fields: Vec<String>,
    pub remote_field: RemoteField,
}

/// A field of the remote's query root, with its arguments, and optionally one field below it,
/// down to the leaf whose value the relationship takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteField {
    pub name: String,
    /// Arguments as written: `"$column"` strings are templates, everything else literals.
    pub arguments: Map<String, Value>,
    pub field: Option<Box<RemoteField>>,
}

impl RemoteField {
    /// The fields from the root down to the leaf.
    pub fn chain(&self) -> Vec<&RemoteField> {
        let mut out = vec![self];
        let mut at = self;
        while let Some(next) = at.field.as_deref() {
            out.push(next);
            at = next;
        }
        out
    }

    /// The template variables its arguments use, at every level, in order of appearance.
    pub fn variables(&self) -> Vec<String> {
        fn walk(value: &Value, out: &mut Vec<String>) {
            match value {
                Value::String(s) => {
                    if let Some(name) = s.strip_prefix('$') {
                        if !out.iter().any(|o| o == name) {
                            out.push(name.to_owned());
                        }
                    }
                }
                Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
                Value::Object(map) => map.values().for_each(|v| walk(v, out)),
                _ => {}
            }
        }
        let mut out = Vec::new();
        for level in self.chain() {
            level.arguments.values().for_each(|v| walk(v, &mut out));
        }
        out
    }
}

/// Checks what the argument templates may hold: `$name` with a valid name, object keys that are
/// GraphQL names.
fn check_arguments(value: &Value) -> Result<(), String> {
    match value {
        Value::String(s) => match s.strip_prefix('$') {
            Some("") => Err("Empty variable name".to_owned()),
            Some(name) if !GraphQLName::is_valid(name) => {
                Err(format!("Invalid variable name '{name}'"))
            }
            _ => Ok(()),
        },
        Value::Array(items) => items.iter().try_for_each(check_arguments),
        Value::Object(map) => map.iter().try_for_each(|(k, v)| {
            if !GraphQLName::is_valid(k) {
                return Err(format!("{k} is an invalid key name"));
            }
            check_arguments(v)
        }),
        _ => Ok(()),
    }
}

impl Serialize for RemoteField {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut inner = Map::new();
        inner.insert("arguments".into(), Value::Object(self.arguments.clone()));
        if let Some(field) = &self.field {
            let value = serde_json::to_value(field).map_err(serde::ser::Error::custom)?;
            inner.insert("field".into(), value);
        }
        let mut outer = Map::new();
        outer.insert(self.name.clone(), Value::Object(inner));
        Value::Object(outer).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RemoteField {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(deserializer)?;
        let mut entries = map.into_iter();
        let (name, value) = match (entries.next(), entries.next()) {
            (None, _) => {
                return Err(de::Error::custom(
                    "Expecting one single mapping, received none.",
                ))
            }
            (Some(_), Some(_)) => {
                return Err(de::Error::custom(
                    "Expecting one single mapping, received too many.",
                ))
            }
            (Some(entry), None) => entry,
        };
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Level {
            arguments: Map<String, Value>,
            #[serde(default)]
            field: Option<Box<RemoteField>>,
        }
        let level: Level = serde_json::from_value(value).map_err(de::Error::custom)?;
        check_arguments(&Value::Object(level.arguments.clone())).map_err(de::Error::custom)?;
        Ok(RemoteField {
            name,
            arguments: level.arguments,
            field: level.field,
        })
    }
}

/// The current form's inner object.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CurrentForm {
    remote_schema: Name,
    lhs_fields: Vec<String>,
    remote_field: RemoteField,
}

/// The legacy form's keys.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LegacyForm {
    remote_schema: Name,
    basalt_fields: Vec<String>,
    remote_field: RemoteField,
}

/// Drops repeated names, keeping the first.
fn dedup(mut names: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    names
}

/// What `definition` holds: the message when it is not exactly one target.
pub const STRICT_FORM: &str =
    "remote relationship definition (strict format) expects exactly one of: to_source, to_remote_schema";

impl Serialize for RemoteRelationshipDefinition {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            RemoteRelationshipDefinition::ToRemoteSchema(t) => {
                let mut outer = serde_json::Map::new();
                let inner = CurrentForm {
                    remote_schema: t.remote_schema.clone(),
                    lhs_fields: t.lhs_fields.clone(),
                    remote_field: t.remote_field.clone(),
                };
                let inner = serde_json::to_value(inner).map_err(serde::ser::Error::custom)?;
                outer.insert("to_remote_schema".into(), inner);
                Value::Object(outer).serialize(serializer)
            }
            RemoteRelationshipDefinition::Legacy(t) => LegacyForm {
                remote_schema: t.remote_schema.clone(),
                basalt_fields: t.lhs_fields.clone(),
                remote_field: t.remote_field.clone(),
            }
            .serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for RemoteRelationshipDefinition {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(deserializer)?;
        if map.contains_key("remote_schema") {
            let legacy: LegacyForm =
                serde_json::from_value(Value::Object(map)).map_err(de::Error::custom)?;
            return Ok(RemoteRelationshipDefinition::Legacy(ToRemoteSchema {
                remote_schema: legacy.remote_schema,
                lhs_fields: dedup(legacy.basalt_fields),
                remote_field: legacy.remote_field,
            }));
        }
        current_form(map).map_err(de::Error::custom)
    }
}

/// A `definition` object in the current form; `to_source` is refused by the caller, which
/// knows the code.
pub fn current_form(map: Map<String, Value>) -> Result<RemoteRelationshipDefinition, String> {
    let mut entries = map.into_iter();
    match (entries.next(), entries.next()) {
        (Some((key, value)), None) if key == "to_remote_schema" => {
            let inner: CurrentForm = serde_json::from_value(value).map_err(|e| e.to_string())?;
            Ok(RemoteRelationshipDefinition::ToRemoteSchema(
                ToRemoteSchema {
                    remote_schema: inner.remote_schema,
                    lhs_fields: dedup(inner.lhs_fields),
                    remote_field: inner.remote_field,
                },
            ))
        }
        _ => Err(STRICT_FORM.to_owned()),
    }
}

/// The relationships a remote schema's object types carry, grouped by type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteTypeRelationships {
    pub type_name: GraphQLName,
    pub relationships: Vec<RemoteSchemaRelationshipEntry>,
}

/// A remote object type's relationship to a table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteSchemaRelationshipEntry {
    pub name: GraphQLName,
    pub definition: ToSourceDefinition,
}

/// `{"to_source": {…}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToSourceDefinition {
    pub to_source: ToSource,
}

/// A remote → table relationship's target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToSource {
    /// Always `default` (one database).
    #[serde(default = "default_source")]
    pub source: String,
    pub table: QualifiedTable,
    pub relationship_type: RemoteRelationshipType,
    /// Remote field → column.
    pub field_mapping: IndexMap<String, String>,
}

fn default_source() -> String {
    "default".to_owned()
}

/// One related row, or many.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RemoteRelationshipType {
    Object,
    Array,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_forms_read_and_write_back_as_given() {
        let legacy = json!({"name": "message", "definition": {"remote_schema": "msgs",
            "basalt_fields": ["msg_id", "msg_id"],
            "remote_field": {"message": {"arguments": {"id": "$msg_id"}}}}});
        let entry: RemoteRelationshipEntry = serde_json::from_value(legacy).unwrap();
        assert_eq!(entry.definition.target().lhs_fields, ["msg_id"]);
        assert_eq!(
            serde_json::to_value(&entry).unwrap(),
            json!({"name": "message", "definition": {"remote_schema": "msgs",
                "basalt_fields": ["msg_id"],
                "remote_field": {"message": {"arguments": {"id": "$msg_id"}}}}})
        );
        let current = json!({"name": "sameName", "definition": {"to_remote_schema": {
            "remote_schema": "msgs", "lhs_fields": ["name"],
            "remote_field": {"messages": {"arguments": {"where": {"name": {"eq": "$name"}}},
                "field": {"id": {"arguments": {}}}}}}}});
        let entry: RemoteRelationshipEntry = serde_json::from_value(current.clone()).unwrap();
        assert_eq!(serde_json::to_value(&entry).unwrap(), current);
        assert_eq!(entry.definition.target().remote_field.variables(), ["name"]);
        assert_eq!(entry.definition.target().remote_field.chain().len(), 2);
    }

    #[test]
    fn bad_shapes_have_the_messages_of_the_api() {
        let field = |v: Value| {
            serde_json::from_value::<RemoteField>(v)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            field(json!({})),
            "Expecting one single mapping, received none."
        );
        assert_eq!(
            field(json!({"a": {"arguments": {}}, "b": {"arguments": {}}})),
            "Expecting one single mapping, received too many."
        );
        assert_eq!(
            field(json!({"a": {"arguments": {"id": "$"}}})),
            "Empty variable name"
        );
        assert_eq!(
            field(json!({"a": {"arguments": {"id": "$x-y"}}})),
            "Invalid variable name 'x-y'"
        );
        assert_eq!(
            field(json!({"a": {"arguments": {"where": {"a-b": 1}}}})),
            "a-b is an invalid key name"
        );
        let definition = |v: Value| {
            serde_json::from_value::<RemoteRelationshipDefinition>(v)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(definition(json!({})), STRICT_FORM);
        assert_eq!(
            definition(json!({"to_remote_schema": {}, "to_source": {}})),
            STRICT_FORM
        );
    }
}
