//! Remote schemas in the GraphQL layer (`docs/remote-schemas.md`): a remote's introspection
//! result read into our [`TypeSystem`] form and validated by async-graphql's schema checks
//! (unknown types, unions of non-objects, interfaces implemented wrongly, …), never by hand;
//! the clash rules (`docs/remote-schemas.md`, "Clashes"); and the merge of a remote's root
//! fields and types into a role's types.

use super::model;
use super::types::{
    EnumValueDef, FieldDef, InputValueDef, Name, TypeDef, TypeRef, TypeSystem, BUILTIN_SCALARS,
};
use crate::resolve::remote::ResolvedRemote;
use crate::resolve::Resolved;
use indexmap::IndexMap;
use serde_json::Value;

/// A remote schema read from its introspection result.
#[derive(Debug, Clone)]
pub struct RemoteTypes {
    /// The remote schema's name in the metadata.
    pub remote: String,
    /// Fields of its query root.
    pub query: IndexMap<Name, FieldDef>,
    /// Fields of its mutation root.
    pub mutation: IndexMap<Name, FieldDef>,
    /// Its other types (root types, introspection types and built-in scalars left out).
    pub types: Vec<TypeDef>,
}

/// Deepest `ofType` nesting read from an introspection result.
const MAX_TYPE_DEPTH: usize = 16;

fn text(value: &Value, key: &str) -> Option<Name> {
    value.get(key).and_then(Value::as_str).map(Name::from)
}

fn items<'v>(value: &'v Value, key: &str) -> &'v [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn type_ref(value: &Value, depth: usize) -> Result<TypeRef, String> {
    if depth > MAX_TYPE_DEPTH {
        return Err("a type reference is nested too deeply".to_owned());
    }
    let inner = || type_ref(value.get("ofType").unwrap_or(&Value::Null), depth + 1);
    match value.get("kind").and_then(Value::as_str) {
        Some("NON_NULL") => Ok(TypeRef::NonNull(Box::new(inner()?))),
        Some("LIST") => Ok(TypeRef::List(Box::new(inner()?))),
        Some(_) => text(value, "name")
            .map(TypeRef::Named)
            .ok_or_else(|| "a type reference has no name".to_owned()),
        None => Err("a type reference has no kind".to_owned()),
    }
}

/// A GraphQL literal (an introspected `defaultValue`) as JSON, read by the GraphQL parser.
fn literal(text: &str) -> Result<Value, String> {
    let document = async_graphql_parser::parse_query(format!("{{ f(a: {text}) }}"))
        .map_err(|_| format!("invalid default value {text}"))?;
    let value = document
        .operations
        .iter()
        .next()
        .and_then(|(_, op)| match op.node.selection_set.node.items.first() {
            Some(item) => match &item.node {
                async_graphql_parser::types::Selection::Field(f) => {
                    f.node.arguments.first().map(|(_, v)| v.node.clone())
                }
                _ => None,
            },
            None => None,
        })
        .ok_or_else(|| format!("invalid default value {text}"))?;
    value
        .into_const()
        .and_then(|v| v.into_json().ok())
        .ok_or_else(|| format!("invalid default value {text}"))
}

fn input_value(value: &Value) -> Result<InputValueDef, String> {
    let name = text(value, "name").ok_or("an input value has no name")?;
    let default = match value.get("defaultValue").and_then(Value::as_str) {
        Some(d) => Some(Box::new(literal(d)?)),
        None => None,
    };
    Ok(InputValueDef {
        name,
        description: text(value, "description"),
        ty: type_ref(value.get("type").unwrap_or(&Value::Null), 0)?,
        default,
    })
}

fn field(value: &Value) -> Result<FieldDef, String> {
    let name = text(value, "name").ok_or("a field has no name")?;
    let mut def = FieldDef::new(
        name,
        type_ref(value.get("type").unwrap_or(&Value::Null), 0)?,
    );
    def.description = text(value, "description");
    for arg in items(value, "args") {
        def = def.arg(input_value(arg)?);
    }
    Ok(def)
}

fn fields(value: &Value) -> Result<IndexMap<Name, FieldDef>, String> {
    items(value, "fields")
        .iter()
        .map(|f| field(f).map(|f| (f.name.clone(), f)))
        .collect()
}

fn names(value: &Value, key: &str) -> Vec<Name> {
    items(value, key)
        .iter()
        .filter_map(|t| text(t, "name"))
        .collect()
}

fn type_def(value: &Value, name: Name) -> Result<TypeDef, String> {
    let description = text(value, "description");
    Ok(match value.get("kind").and_then(Value::as_str) {
        Some("OBJECT") => TypeDef::Object {
            name,
            description,
            fields: fields(value)?,
            interfaces: names(value, "interfaces"),
        },
        Some("INTERFACE") => TypeDef::Interface {
            name,
            description,
            fields: fields(value)?,
        },
        Some("UNION") => TypeDef::Union {
            name,
            description,
            members: names(value, "possibleTypes"),
        },
        Some("ENUM") => TypeDef::Enum {
            name,
            description,
            values: items(value, "enumValues")
                .iter()
                .map(|v| {
                    Ok(EnumValueDef {
                        name: text(v, "name").ok_or("an enum value has no name")?,
                        description: text(v, "description"),
                    })
                })
                .collect::<Result<_, String>>()?,
        },
        Some("INPUT_OBJECT") => TypeDef::Input {
            name,
            description,
            fields: items(value, "inputFields")
                .iter()
                .map(|f| input_value(f).map(|f| (f.name.clone(), f)))
                .collect::<Result<_, String>>()?,
        },
        Some("SCALAR") => TypeDef::Scalar { name, description },
        other => {
            return Err(format!(
                "type \"{name}\" has an unknown kind {}",
                other.unwrap_or("(none)")
            ))
        }
    })
}

/// Why a remote's introspection result cannot be served: it does not read as a schema, or
/// async-graphql's schema checks refuse it. The message is the inconsistency's reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidRemoteSchema(pub String);

/// Reads and validates a remote's `__schema` introspection object.
pub fn parse(remote: &str, schema: &Value) -> Result<RemoteTypes, InvalidRemoteSchema> {
    read(remote, schema).map_err(InvalidRemoteSchema)
}

fn read(remote: &str, schema: &Value) -> Result<RemoteTypes, String> {
    let query_root = schema
        .get("queryType")
        .and_then(|t| text(t, "name"))
        .ok_or("the introspection result has no query type")?;
    let root_name = |key: &str| schema.get(key).and_then(|t| text(t, "name"));
    let (mutation_root, subscription_root) =
        (root_name("mutationType"), root_name("subscriptionType"));
    let mut all = TypeSystem {
        query_root: query_root.to_string(),
        mutation_root: mutation_root.as_ref().map(Name::to_string),
        ..TypeSystem::default()
    };
    for value in items(schema, "types") {
        let name = text(value, "name").ok_or("a type has no name")?;
        if name.starts_with("__") || BUILTIN_SCALARS.contains(&name.as_str()) {
            continue;
        }
        if all.types.contains_key(&name) {
            return Err(format!("type \"{name}\" is defined more than once"));
        }
        all.types
            .insert(name.clone(), std::sync::Arc::new(type_def(value, name)?));
    }
    super::checked::check(&all).map_err(|e| format!("the remote schema is invalid: {e}"))?;
    let root_fields = |name: &Option<Name>| match name {
        Some(n) => all.object_fields(n).cloned().unwrap_or_default(),
        None => IndexMap::new(),
    };
    let query = root_fields(&Some(query_root.clone()));
    let mutation = root_fields(&mutation_root);
    let roots = [Some(query_root), mutation_root, subscription_root];
    // Members by name, as in the types Basalt generates (`docs/graphql.md`, "Introspection").
    let types = all
        .types
        .into_values()
        .map(std::sync::Arc::unwrap_or_clone)
        .filter(|t| !roots.iter().flatten().any(|r| r == t.name()))
        .map(|mut t| {
            super::typegen::sort_members(&mut t);
            t
        })
        .collect();
    Ok(RemoteTypes {
        remote: remote.to_owned(),
        query,
        mutation,
        types,
    })
}

/// An input value as `name: Type = default`.
fn input_shape(v: &InputValueDef) -> String {
    match &v.default {
        Some(d) => format!("{}: {} = {d}", v.name, v.ty),
        None => format!("{}: {}", v.name, v.ty),
    }
}

/// A type's members as sorted text (`field(args): Type`, enum values, union members,
/// interfaces), so two definitions compare by shape, descriptions and order aside.
fn shape(def: &TypeDef) -> (&'static str, Vec<String>) {
    let outputs = |fields: &IndexMap<Name, FieldDef>| -> Vec<String> {
        fields
            .values()
            .map(|f| {
                let mut args: Vec<String> = f.args.iter().map(input_shape).collect();
                args.sort();
                format!("{}({}): {}", f.name, args.join(", "), f.ty)
            })
            .collect()
    };
    let (kind, mut members) = match def {
        TypeDef::Object {
            fields, interfaces, ..
        } => {
            let mut m = outputs(fields);
            m.extend(interfaces.iter().map(|i| format!("implements {i}")));
            ("object", m)
        }
        TypeDef::Interface { fields, .. } => ("interface", outputs(fields)),
        TypeDef::Union { members, .. } => ("union", members.iter().map(Name::to_string).collect()),
        TypeDef::Enum { values, .. } => {
            ("enum", values.iter().map(|v| v.name.to_string()).collect())
        }
        TypeDef::Input { fields, .. } => ("input", fields.values().map(input_shape).collect()),
        TypeDef::Scalar { .. } => ("scalar", Vec::new()),
    };
    members.sort();
    (kind, members)
}

/// Why `remote` cannot be merged into `types`, if it cannot, in the messages of
/// `docs/remote-schemas.md`, "Clashes".
pub fn clash(types: &TypeSystem, remote: &RemoteTypes) -> Option<String> {
    let existing = |root: Option<&String>| root.and_then(|r| types.object_fields(r));
    let mut nodes: Vec<&str> = Vec::new();
    for (root, remote_fields) in [
        (Some(&types.query_root), &remote.query),
        (types.mutation_root.as_ref(), &remote.mutation),
    ] {
        if let Some(fields) = existing(root) {
            nodes.extend(
                remote_fields
                    .keys()
                    .filter(|n| fields.contains_key(*n) && n.as_str() != "no_queries_available")
                    .map(Name::as_str),
            );
        }
    }
    if !nodes.is_empty() {
        return Some(format!(
            "top-level nodes: [ {} ] already exist in current graphql schema. HINT: Top-level nodes can't be same.",
            nodes.join(", ")
        ));
    }
    let mismatched: Vec<&str> = remote
        .types
        .iter()
        .filter(|t| {
            types
                .get(t.name())
                .is_some_and(|mine| shape(mine) != shape(t))
        })
        .map(|t| t.name().as_str())
        .collect();
    (!mismatched.is_empty()).then(|| {
        format!(
            "types: [ {} ] have mismatch with current graphql schema. HINT: Types must be same.",
            mismatched.join(", ")
        )
    })
}

/// Adds a remote's root fields and types to a role's types. Types the role already has keep
/// its own definition (the clash check made sure they agree for admin).
pub fn merge(types: &mut TypeSystem, remote: &RemoteTypes) {
    for def in &remote.types {
        types.add(def.clone());
    }
    add_root_fields(types, &types.query_root.clone(), &remote.query);
    for name in remote.query.keys() {
        types
            .remote
            .query
            .entry(name.to_string())
            .or_insert_with(|| remote.remote.clone());
    }
    if remote.mutation.is_empty() {
        return;
    }
    let root = types
        .mutation_root
        .get_or_insert_with(|| "mutation_root".to_owned())
        .clone();
    if types.get(&root).is_none() {
        types.insert(TypeDef::Object {
            name: root.as_str().into(),
            description: Some(Name::new_static("mutation root")),
            fields: IndexMap::new(),
            interfaces: Vec::new(),
        });
    }
    add_root_fields(types, &root, &remote.mutation);
    for name in remote.mutation.keys() {
        types
            .remote
            .mutation
            .entry(name.to_string())
            .or_insert_with(|| remote.remote.clone());
    }
}

fn add_root_fields(types: &mut TypeSystem, root: &str, add: &IndexMap<Name, FieldDef>) {
    if let Some(TypeDef::Object { fields, .. }) = types.get_mut(root) {
        if !add.is_empty() && fields.len() == 1 && fields.contains_key("no_queries_available") {
            fields.clear();
        }
        for (name, def) in add {
            fields.entry(name.clone()).or_insert_with(|| def.clone());
        }
        // The merged root by name too, whatever the order of its sources.
        fields.sort_unstable_keys();
    }
}

/// The [`crate::resolve::remote::MergeCheck`]: each remote, in order, against the admin's
/// generated schema and the remotes merged before it.
pub fn check(resolved: &Resolved, remotes: &[ResolvedRemote]) -> Vec<Option<String>> {
    let mut types = super::typegen::build(&model::build(resolved, model::ADMIN));
    remotes
        .iter()
        .map(|remote| {
            let parsed = match parse(remote.name(), &remote.introspection) {
                Ok(parsed) => parsed,
                Err(reason) => return Some(reason.0),
            };
            let reason = clash(&types, &parsed);
            if reason.is_none() {
                merge(&mut types, &parsed);
            }
            reason
        })
        .collect()
}

/// Reads the served remote schemas once per metadata version, for every role's types. A
/// stored result that no longer reads is logged and left out (it was valid when stored).
pub fn parse_all(resolved: &Resolved) -> Vec<RemoteTypes> {
    resolved
        .remote_schemas
        .iter()
        .filter_map(|remote| match parse(remote.name(), &remote.introspection) {
            Ok(parsed) => Some(parsed),
            Err(err) => {
                tracing::error!(remote = remote.name(), %err, "stored remote schema does not read");
                None
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn named(kind: &str, name: &str) -> Value {
        json!({"kind": kind, "name": name, "ofType": null})
    }

    fn schema() -> Value {
        json!({
            "queryType": {"name": "Query"},
            "mutationType": null,
            "subscriptionType": null,
            "types": [
                {"kind": "OBJECT", "name": "Query", "interfaces": [], "fields": [
                    {"name": "country", "args": [{"name": "code", "type": {"kind": "NON_NULL", "name": null, "ofType": named("SCALAR", "ID")}, "defaultValue": null}],
                     "type": named("OBJECT", "Country")}
                ]},
                {"kind": "OBJECT", "name": "Country", "interfaces": [named("INTERFACE", "Node")], "fields": [
                    {"name": "code", "args": [], "type": {"kind": "NON_NULL", "name": null, "ofType": named("SCALAR", "ID")}}
                ]},
                {"kind": "INTERFACE", "name": "Node", "fields": [
                    {"name": "code", "args": [], "type": {"kind": "NON_NULL", "name": null, "ofType": named("SCALAR", "ID")}}
                ], "possibleTypes": [named("OBJECT", "Country")]},
                {"kind": "ENUM", "name": "order_by", "enumValues": [{"name": "asc"}, {"name": "desc"}]},
                {"kind": "SCALAR", "name": "String"},
                {"kind": "OBJECT", "name": "__Type", "fields": []}
            ]
        })
    }

    #[test]
    fn introspection_results_read_into_types() {
        let parsed = parse("geo", &schema()).unwrap();
        assert_eq!(parsed.query.keys().collect::<Vec<_>>(), ["country"]);
        assert_eq!(
            parsed.query["country"]
                .argument("code")
                .map(|a| a.ty.to_string())
                .unwrap_or_default(),
            "ID!"
        );
        let names: Vec<&str> = parsed.types.iter().map(|t| t.name().as_str()).collect();
        assert_eq!(names, ["Country", "Node", "order_by"]);
    }

    #[test]
    fn invalid_schemas_are_refused_by_the_validator() {
        let mut bad = schema();
        bad["types"][1]["fields"][0]["type"] = named("OBJECT", "Nowhere");
        let err = parse("geo", &bad).unwrap_err();
        assert!(err.0.contains("Nowhere"), "{err}");
        let mut union = schema();
        union["types"].as_array_mut().unwrap().push(
            json!({"kind": "UNION", "name": "U", "possibleTypes": [named("INTERFACE", "Node")]}),
        );
        assert!(parse("geo", &union).is_err());
    }

    #[test]
    fn clashes_name_root_fields_then_mismatched_types() {
        let parsed = parse("geo", &schema()).unwrap();
        let mut types = TypeSystem {
            query_root: "query_root".to_owned(),
            ..TypeSystem::default()
        };
        types.insert(TypeDef::Object {
            name: "query_root".into(),
            description: None,
            fields: [(
                "country".into(),
                FieldDef::new("country", TypeRef::named("String")),
            )]
            .into_iter()
            .collect(),
            interfaces: Vec::new(),
        });
        assert_eq!(
            clash(&types, &parsed).as_deref(),
            Some("top-level nodes: [ country ] already exist in current graphql schema. HINT: Top-level nodes can't be same.")
        );
        types.types.shift_remove("query_root");
        types.insert(TypeDef::Enum {
            name: "order_by".into(),
            description: None,
            values: ["desc", "asc"]
                .iter()
                .map(|v| EnumValueDef {
                    name: (*v).into(),
                    description: None,
                })
                .collect(),
        });
        assert_eq!(clash(&types, &parsed), None, "identical types merge");
        types.insert(TypeDef::Scalar {
            name: "Country".into(),
            description: None,
        });
        assert_eq!(
            clash(&types, &parsed).as_deref(),
            Some("types: [ Country ] have mismatch with current graphql schema. HINT: Types must be same.")
        );
    }
}
