//! A table → remote schema relationship checked against its table and the remote's stored
//! introspection (see `docs/metadata-api.md`, "Remote relationships"): its join fields exist,
//! its chain of remote fields exists and descends through object types, and every argument
//! it fills (with a literal or a `$column` template) exists and has a value of a fitting type.
//! The same check runs when the relationship is created and at every rebuild, so the two never
//! disagree. Pure: the introspection is the `__schema` JSON object.

use super::remote::ResolvedRemote;
use super::{ComputedReturn, Inconsistency, Resolution, ResolvedTable};
use crate::metadata::ids::{remote_relationship_definition, ObjectId};
use crate::metadata::types::{Metadata, RemoteField, ToRemoteSchema};
use serde_json::Value;
use std::collections::HashMap;

/// A relationship that passed: what the GraphQL layer needs to expose and run it.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedRemoteJoin {
    pub remote: String,
    /// Join fields with the GraphQL scalar of their values.
    pub lhs: Vec<(String, String)>,
    /// The leaf field's type, as the introspection writes a type reference.
    pub leaf_type: Value,
    /// The chain of remote fields and their argument templates.
    pub target: ToRemoteSchema,
}

/// A reference to a type: `[T!]` is `List(NonNull(Named(T)))`.
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    Named(String),
    List(Box<Shape>),
    NonNull(Box<Shape>),
}

impl Shape {
    fn of(reference: &Value) -> Option<Shape> {
        match reference.get("kind")?.as_str()? {
            "NON_NULL" => Some(Shape::NonNull(Box::new(Shape::of(
                reference.get("ofType")?,
            )?))),
            "LIST" => Some(Shape::List(Box::new(Shape::of(reference.get("ofType")?)?))),
            _ => Some(Shape::Named(reference.get("name")?.as_str()?.to_owned())),
        }
    }

    fn nullable(&self) -> &Shape {
        match self {
            Shape::NonNull(inner) => inner,
            other => other,
        }
    }

    /// The named type and how many lists wrap it.
    fn base(&self) -> (&str, usize) {
        match self {
            Shape::Named(name) => (name, 0),
            Shape::NonNull(inner) => inner.base(),
            Shape::List(inner) => {
                let (name, depth) = inner.base();
                (name, depth + 1)
            }
        }
    }
}

/// The remote's types by name.
struct Types<'a> {
    by_name: HashMap<&'a str, &'a Value>,
    query: &'a str,
}

impl<'a> Types<'a> {
    fn of(schema: &'a Value) -> Option<Self> {
        let by_name = schema
            .get("types")?
            .as_array()?
            .iter()
            .filter_map(|t| Some((t.get("name")?.as_str()?, t)))
            .collect();
        let query = schema.get("queryType")?.get("name")?.as_str()?;
        Some(Types { by_name, query })
    }

    fn kind(&self, name: &str) -> Option<&'a str> {
        self.by_name.get(name)?.get("kind")?.as_str()
    }

    /// A scalar the remote defines itself: it takes any value.
    fn custom_scalar(&self, name: &str) -> bool {
        self.kind(name) == Some("SCALAR")
            && !matches!(name, "Int" | "Float" | "String" | "Boolean" | "ID")
    }

    /// An item of `list` (`fields`, `args`, `inputFields`) of `owner` named `name`.
    fn member(owner: &'a Value, list: &str, name: &str) -> Option<&'a Value> {
        owner
            .get(list)?
            .as_array()?
            .iter()
            .find(|f| f.get("name").and_then(Value::as_str) == Some(name))
    }
}

/// Checks `target` for `table` against `remote`; the error is the API's message (code
/// `remote-schema-error`).
pub fn check(
    table: &ResolvedTable,
    target: &ToRemoteSchema,
    remote: &ResolvedRemote,
) -> Result<ResolvedRemoteJoin, String> {
    let mut lhs = Vec::new();
    for field in &target.lhs_fields {
        let scalar = lhs_scalar(table, field).ok_or_else(|| {
            format!(
                "field with name \"{field}\" is not provided by the lhs entity \"{}\" for defining a join condition",
                table.name
            )
        })?;
        lhs.push((field.clone(), scalar, lhs_depth(table, field)));
    }
    let types = Types::of(&remote.introspection).ok_or_else(|| {
        format!(
            "remote schema \"{}\" has no introspection result",
            remote.name()
        )
    })?;
    let check = Check {
        types: &types,
        lhs: &lhs,
    };
    let mut parent = types.query.to_owned();
    let mut level: &RemoteField = &target.remote_field;
    loop {
        let not_found = || {
            format!(
                "remote field with name \"{}\" and type \"{parent}\" not found",
                level.name
            )
        };
        let owner = types.by_name.get(parent.as_str()).ok_or_else(not_found)?;
        let field = Types::member(owner, "fields", &level.name).ok_or_else(not_found)?;
        for (name, value) in &level.arguments {
            let argument = Types::member(field, "args", name).ok_or_else(|| {
                format!("argument with name \"{name}\" not found in remote schema")
            })?;
            let shape = argument
                .get("type")
                .and_then(Shape::of)
                .ok_or_else(not_found)?;
            check.value(value, &shape)?;
        }
        let returns = field.get("type").cloned().unwrap_or(Value::Null);
        let Some(next) = level.field.as_deref() else {
            return Ok(ResolvedRemoteJoin {
                remote: remote.name().to_owned(),
                lhs: lhs
                    .into_iter()
                    .map(|(name, scalar, _)| (name, scalar))
                    .collect(),
                leaf_type: returns,
                target: target.clone(),
            });
        };
        let object = match Shape::of(&returns).as_ref().map(Shape::nullable) {
            Some(Shape::Named(name)) if types.kind(name) == Some("OBJECT") => name.clone(),
            _ => {
                return Err(format!(
                    "field \"{}\" must return an object type to be followed by \"field\"",
                    level.name
                ))
            }
        };
        parent = object;
        level = next;
    }
}

/// Resolves every tracked table's remote relationships, after the remote schemas: each one that
/// passes [`check`] joins its table's fields; one that fails (or whose remote schema is not
/// served) is an inconsistency and its field is left out.
pub fn resolve_all(metadata: &Metadata, cache: &mut Resolution) {
    for entry in &metadata.tables {
        for relationship in &entry.remote_relationships {
            let Some(table) = cache.resolved.table(&entry.table) else {
                continue;
            };
            let target = relationship.definition.target();
            let remote = cache
                .resolved
                .remote_schemas
                .iter()
                .find(|r| r.name() == target.remote_schema.0);
            let checked = match remote {
                Some(remote) => check(table, target, remote),
                None => Err(format!(
                    "remote schema \"{}\" is not available",
                    target.remote_schema.0
                )),
            };
            match checked {
                Ok(join) => {
                    if let Some(table) = cache.resolved.table_mut(&entry.table) {
                        table
                            .remote_relationships
                            .insert(relationship.name.0.clone(), join);
                    }
                }
                Err(reason) => cache.inconsistencies.push(Inconsistency {
                    object: ObjectId::RemoteRelationship(
                        entry.table.clone(),
                        relationship.name.0.clone(),
                    ),
                    kind: "remote_relationship",
                    definition: remote_relationship_definition(&entry.table, relationship),
                    reason,
                    conflict: false,
                }),
            }
        }
    }
}

/// The GraphQL scalar of a join field: a column, or a computed field returning a scalar that
/// takes no argument from the client.
fn lhs_scalar(table: &ResolvedTable, field: &str) -> Option<String> {
    if let Some(column) = table.db.column(field) {
        return Some(crate::db_model::graphql_scalar(
            column.element_type.as_deref().unwrap_or(&column.type_name),
        ));
    }
    let computed = table.computed_fields.get(field)?;
    let user_arguments =
        computed.arguments.len() - 1 - usize::from(computed.session_argument.is_some());
    match (&computed.returns, user_arguments) {
        (ComputedReturn::Scalar(type_name), 0) => Some(crate::db_model::graphql_scalar(type_name)),
        _ => None,
    }
}

/// Whether a column is an array (its values fill lists one level deeper).
fn lhs_depth(table: &ResolvedTable, field: &str) -> usize {
    table
        .db
        .column(field)
        .map_or(0, |c| usize::from(c.element_type.is_some()))
}

struct Check<'a> {
    types: &'a Types<'a>,
    /// Join fields: name, GraphQL scalar, list depth.
    lhs: &'a [(String, String, usize)],
}

impl Check<'_> {
    /// `value` as a GraphQL input of type `shape`.
    fn value(&self, value: &Value, shape: &Shape) -> Result<(), String> {
        if value.is_null() {
            return Err("null is not allowed here".to_owned());
        }
        if let Some(variable) = value.as_str().and_then(|s| s.strip_prefix('$')) {
            return self.template(variable, shape);
        }
        match (shape.nullable(), value) {
            (Shape::List(item), Value::Array(items)) => match items.as_slice() {
                [] => Ok(()),
                [one] => self.value(one, item),
                _ => Err("multiple elements in list value is not supported".to_owned()),
            },
            // A single value fills a list.
            (Shape::List(item), _) => self.value(value, item),
            (Shape::Named(name), Value::Array(_)) => {
                Err(format!("type \"{name}\" is not a list type"))
            }
            (Shape::Named(name), Value::Object(map)) => {
                if self.types.kind(name) != Some("INPUT_OBJECT") {
                    return Err(format!("type \"{name}\" is not an input object type"));
                }
                let input = self.types.by_name.get(name.as_str()).copied();
                for (key, inner) in map {
                    let field = input
                        .and_then(|t| Types::member(t, "inputFields", key))
                        .ok_or_else(|| {
                            format!("argument with name \"{key}\" not found in remote schema")
                        })?;
                    let shape = field.get("type").and_then(Shape::of).ok_or_else(|| {
                        format!("argument with name \"{key}\" not found in remote schema")
                    })?;
                    self.value(inner, &shape)?;
                }
                Ok(())
            }
            (Shape::Named(name), literal) => self.literal(name, literal),
            (Shape::NonNull(_), _) => Ok(()),
        }
    }

    /// A literal for the named type `name`, as GraphQL input coercion accepts it.
    fn literal(&self, name: &str, literal: &Value) -> Result<(), String> {
        if self.types.custom_scalar(name) {
            return Ok(());
        }
        if self.types.kind(name) == Some("ENUM") {
            return Err("enum value is not supported".to_owned());
        }
        let (actual, fits) = match literal {
            Value::String(_) => ("String", matches!(name, "String" | "ID")),
            Value::Bool(_) => ("Boolean", name == "Boolean"),
            Value::Number(n) if n.is_i64() || n.is_u64() => {
                ("Int", matches!(name, "Int" | "Float" | "ID"))
            }
            _ => ("Float", name == "Float"),
        };
        match fits {
            true => Ok(()),
            false => Err(format!("expected type \"{name}\" but got \"{actual}\"")),
        }
    }

    /// A `$variable` for an input of type `shape`: a join field whose scalar fits, as deep in
    /// lists as the input (or one level less: a single value fills a list).
    fn template(&self, variable: &str, shape: &Shape) -> Result<(), String> {
        let Some((_, scalar, column_depth)) = self.lhs.iter().find(|(name, ..)| name == variable)
        else {
            return Err(format!("variable \"{variable}\" is not found"));
        };
        let (name, depth) = shape.base();
        let fits = scalar == name
            || self.types.custom_scalar(name)
            || (name == "ID"
                && matches!(
                    scalar.as_str(),
                    "Int" | "String" | "bigint" | "smallint" | "uuid"
                ));
        let deep_enough = *column_depth == depth || (*column_depth == 0 && depth == 1);
        if fits && deep_enough {
            return Ok(());
        }
        let listed =
            |name: &str, depth: usize| format!("{}{name}{}", "[".repeat(depth), "]".repeat(depth));
        Err(format!(
            "expected type \"{}\" but got \"{}\"",
            listed(name, if fits { depth } else { 0 }),
            listed(scalar, if fits { *column_depth } else { 0 })
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db_model::DbModel;
    use crate::metadata::types::{Metadata, QualifiedTable, RemoteSchemaEntry};
    use serde_json::json;

    fn named(kind: &str, name: &str) -> Value {
        json!({"kind": kind, "name": name, "ofType": null})
    }

    fn non_null(inner: Value) -> Value {
        json!({"kind": "NON_NULL", "name": null, "ofType": inner})
    }

    fn list(inner: Value) -> Value {
        json!({"kind": "LIST", "name": null, "ofType": inner})
    }

    fn field(name: &str, ty: Value, args: Vec<(&str, Value)>) -> Value {
        let args: Vec<Value> = args
            .into_iter()
            .map(|(n, t)| json!({"name": n, "type": t}))
            .collect();
        json!({"name": name, "type": ty, "args": args})
    }

    fn input(name: &str, fields: Vec<(&str, Value)>) -> Value {
        let fields: Vec<Value> = fields
            .into_iter()
            .map(|(n, t)| json!({"name": n, "type": t}))
            .collect();
        json!({"kind": "INPUT_OBJECT", "name": name, "inputFields": fields})
    }

    /// The messages server of the API's examples.
    fn msgs() -> ResolvedRemote {
        let int = || named("SCALAR", "Int");
        let string = || named("SCALAR", "String");
        let message = named("OBJECT", "Message");
        let introspection = json!({
            "queryType": {"name": "Query"},
            "types": [
                {"kind": "OBJECT", "name": "Query", "fields": [
                    field("message", message.clone(), vec![("id", non_null(int()))]),
                    field("messages", non_null(list(non_null(message.clone()))),
                        vec![("where", named("INPUT_OBJECT", "MessageWhere")), ("limit", int())]),
                    field("tagged", list(message.clone()), vec![("tags", list(int())), ("at", named("SCALAR", "Instant")), ("order", named("ENUM", "Order"))]),
                ]},
                {"kind": "OBJECT", "name": "Message", "fields": [
                    field("id", non_null(int()), vec![]),
                    field("name", non_null(string()), vec![]),
                    field("msg", non_null(string()), vec![]),
                ]},
                input("IntCompare", vec![("eq", int())]),
                input("StringCompare", vec![("eq", string())]),
                input("MessageWhere", vec![("id", named("INPUT_OBJECT", "IntCompare")),
                    ("name", named("INPUT_OBJECT", "StringCompare"))]),
                {"kind": "SCALAR", "name": "Int"},
                {"kind": "SCALAR", "name": "String"},
                {"kind": "SCALAR", "name": "Instant"},
                {"kind": "ENUM", "name": "Order"},
            ]
        });
        let entry: RemoteSchemaEntry = serde_json::from_value(
            json!({"name": "msgs", "definition": {"url": "http://msgs/graphql"}}),
        )
        .unwrap();
        ResolvedRemote {
            entry,
            url: "http://msgs/graphql".to_owned(),
            timeout: std::time::Duration::from_secs(60),
            headers: Vec::new(),
            introspection: std::sync::Arc::new(introspection),
        }
    }

    fn profiles() -> ResolvedTable {
        let column = |name: &str, attnum: i32, type_name: &str, element: Option<&str>| {
            json!({"name": name, "attnum": attnum, "data_type": type_name, "type_name": type_name,
                "type_schema": "pg_catalog", "type_kind": "b", "element_type": element,
                "nullable": true, "default": null, "generated": false, "identity": false,
                "comment": null})
        };
        let db = DbModel::from_json(json!({
            "tables": [{"oid": 1, "schema": "public", "name": "profiles", "kind": "r",
                "comment": null, "updatable_bits": 28, "constraints": [],
                "columns": [column("id", 1, "int4", None), column("name", 2, "text", None),
                    column("msg_id", 3, "int4", None), column("tags", 4, "_int4", Some("int4"))]}],
            "functions": [], "scalar_types": []
        }))
        .unwrap();
        let metadata: Metadata = serde_json::from_value(
            json!({"version": 2, "tables": [{"table": {"schema": "public", "name": "profiles"}}]}),
        )
        .unwrap();
        let resolution = super::super::resolve_with(&metadata, &db, &Default::default());
        resolution
            .resolved
            .table(&QualifiedTable::new("public", "profiles"))
            .unwrap()
            .clone()
    }

    fn target(lhs: &[&str], remote_field: Value) -> ToRemoteSchema {
        ToRemoteSchema {
            remote_schema: serde_json::from_value(json!("msgs")).unwrap(),
            lhs_fields: lhs.iter().map(|s| s.to_string()).collect(),
            remote_field: serde_json::from_value(remote_field).unwrap(),
        }
    }

    fn run(lhs: &[&str], remote_field: Value) -> Result<ResolvedRemoteJoin, String> {
        check(&profiles(), &target(lhs, remote_field), &msgs())
    }

    #[test]
    fn the_examples_relationships_pass() {
        let one = run(
            &["msg_id"],
            json!({"message": {"arguments": {"id": "$msg_id"}}}),
        )
        .unwrap();
        assert_eq!(one.lhs, [("msg_id".to_owned(), "Int".to_owned())]);
        assert_eq!(one.leaf_type, named("OBJECT", "Message"));
        let many = run(
            &["name"],
            json!({"messages": {"arguments": {"where": {"name": {"eq": "$name"}}}}}),
        )
        .unwrap();
        assert_eq!(many.leaf_type["kind"], "NON_NULL");
        // A chain down to a scalar; literals of fitting types; a custom scalar takes anything.
        run(
            &["id"],
            json!({"message": {"arguments": {"id": 3}, "field": {"msg": {"arguments": {}}}}}),
        )
        .unwrap();
        run(
            &["tags", "name"],
            json!({"tagged": {"arguments": {"tags": "$tags", "at": "$name"}}}),
        )
        .unwrap();
        run(&["id"], json!({"tagged": {"arguments": {"tags": "$id"}}})).unwrap();
        run(&["id"], json!({"tagged": {"arguments": {"tags": [1]}}})).unwrap();
    }

    #[test]
    fn every_refusal_has_the_apis_message() {
        let err = |lhs: &[&str], field: Value| run(lhs, field).unwrap_err();
        assert_eq!(
            err(&["nope"], json!({"message": {"arguments": {}}})),
            "field with name \"nope\" is not provided by the lhs entity \"profiles\" for defining a join condition"
        );
        assert_eq!(
            err(
                &["msg_id"],
                json!({"message": {"arguments": {"id_wrong": "$msg_id"}}})
            ),
            "argument with name \"id_wrong\" not found in remote schema"
        );
        assert_eq!(
            err(
                &["name"],
                json!({"message": {"arguments": {"id": "$name"}}})
            ),
            "expected type \"Int\" but got \"String\""
        );
        assert_eq!(
            err(
                &["name"],
                json!({"message": {"arguments": {"id": "$msg_id"}}})
            ),
            "variable \"msg_id\" is not found"
        );
        assert_eq!(
            err(&[], json!({"nothing": {"arguments": {}}})),
            "remote field with name \"nothing\" and type \"Query\" not found"
        );
        assert_eq!(
            err(
                &[],
                json!({"message": {"arguments": {}, "field": {"sender": {"arguments": {}}}}})
            ),
            "remote field with name \"sender\" and type \"Message\" not found"
        );
        assert_eq!(
            err(
                &[],
                json!({"messages": {"arguments": {}, "field": {"id": {"arguments": {}}}}})
            ),
            "field \"messages\" must return an object type to be followed by \"field\""
        );
        assert_eq!(
            err(&[], json!({"message": {"arguments": {"id": null}}})),
            "null is not allowed here"
        );
        assert_eq!(
            err(&[], json!({"tagged": {"arguments": {"tags": [1, 2]}}})),
            "multiple elements in list value is not supported"
        );
        assert_eq!(
            err(&[], json!({"message": {"arguments": {"id": {"eq": 1}}}})),
            "type \"Int\" is not an input object type"
        );
        assert_eq!(
            err(&[], json!({"message": {"arguments": {"id": [1]}}})),
            "type \"Int\" is not a list type"
        );
        assert_eq!(
            err(&[], json!({"message": {"arguments": {"id": "1"}}})),
            "expected type \"Int\" but got \"String\""
        );
        assert_eq!(
            err(&[], json!({"tagged": {"arguments": {"order": "ASC"}}})),
            "enum value is not supported"
        );
        assert_eq!(
            err(
                &[],
                json!({"messages": {"arguments": {"where": {"sender": {}}}}})
            ),
            "argument with name \"sender\" not found in remote schema"
        );
        assert_eq!(
            err(
                &["tags"],
                json!({"message": {"arguments": {"id": "$tags"}}})
            ),
            "expected type \"Int\" but got \"[Int]\""
        );
    }
}
