//! Logical models and native queries (`docs/native-queries.md`): `track_logical_model`,
//! `untrack_logical_model`, `create_`/`drop_logical_model_select_permission`,
//! `track_native_query` and `untrack_native_query`. Only the checks that need nothing else are
//! made here (shape, names, placeholders, arguments); what needs another object or the
//! database is the resolver's, at the end of the request, so a `bulk` may name objects in any
//! order. Must not do IO, read the clock, or edit anything but the `Metadata` it returns.

use super::remote_relationships::check_source_of;
use crate::metadata::error::{parse_failed, Code, MetadataError, Result};
use crate::metadata::ids::ObjectId;
use crate::metadata::parse::parse;
use crate::metadata::path::JsonPath;
use crate::metadata::types::*;
use crate::sql::template::Template;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeSet;

/// An operation on logical models or native queries.
#[derive(Debug, Clone)]
pub enum NativeOp {
    TrackModel(LogicalModelEntry),
    UntrackModel(String),
    CreatePermission {
        model: String,
        permission: LogicalModelPermission,
    },
    DropPermission {
        model: String,
        role: String,
    },
    TrackQuery(Box<NativeQueryEntry>),
    UntrackQuery(String),
}

const OPS: [&str; 6] = [
    "track_logical_model",
    "untrack_logical_model",
    "create_logical_model_select_permission",
    "drop_logical_model_select_permission",
    "track_native_query",
    "untrack_native_query",
];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TrackModel {
    /// Checked before parsing (see [`NativeOp::parse`]).
    #[serde(default, rename = "source")]
    _source: Option<Value>,
    name: GraphQLName,
    fields: Vec<LogicalModelField>,
    #[serde(default)]
    description: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ByName {
    /// Checked before parsing (see [`NativeOp::parse`]).
    #[serde(default, rename = "source")]
    _source: Option<Value>,
    name: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreatePermission {
    /// Checked before parsing (see [`NativeOp::parse`]).
    #[serde(default, rename = "source")]
    _source: Option<Value>,
    name: String,
    role: Name,
    permission: Value,
    #[serde(default)]
    comment: Option<String>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DropPermission {
    /// Checked before parsing (see [`NativeOp::parse`]).
    #[serde(default, rename = "source")]
    _source: Option<Value>,
    name: String,
    role: String,
    #[serde(default, rename = "type")]
    kind: Option<String>,
}

/// The keys of a select permission a logical model reads; the others are ignored.
#[derive(Deserialize)]
struct SelectRules {
    columns: Columns,
    filter: Value,
    #[serde(default)]
    limit: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TrackQuery {
    /// Checked before parsing (see [`NativeOp::parse`]).
    #[serde(default, rename = "source")]
    _source: Option<Value>,
    root_field_name: GraphQLName,
    code: String,
    returns: Value,
    #[serde(default)]
    arguments: std::collections::BTreeMap<String, NativeQueryArgument>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    object_relationships: Vec<NativeQueryRelationship>,
    #[serde(default)]
    array_relationships: Vec<NativeQueryRelationship>,
    #[serde(default)]
    description: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ByRootField {
    /// Checked before parsing (see [`NativeOp::parse`]).
    #[serde(default, rename = "source")]
    _source: Option<Value>,
    root_field_name: String,
}

fn not_supported(path: &JsonPath, message: impl Into<String>) -> MetadataError {
    MetadataError::new(Code::NotSupported, path.clone(), message)
}

fn validation(path: &JsonPath, message: impl Into<String>) -> MetadataError {
    MetadataError::new(Code::ValidationFailed, path.clone(), message)
}

impl NativeOp {
    /// Parses the operations of this family; `None` for other types.
    pub fn parse(op_type: &str, args: &Value, path: &JsonPath) -> Result<Option<Self>> {
        if !OPS.contains(&op_type) {
            return Ok(None);
        }
        // The source is checked before anything else about the arguments.
        check_source_of(args, path)?;
        Ok(Some(match op_type {
            "track_logical_model" => {
                refuse_arrays_of_non_models(args, path)?;
                let a: TrackModel = parse(args, path)?;
                NativeOp::TrackModel(model_entry(a.name, a.fields, a.description, path)?)
            }
            "untrack_logical_model" => NativeOp::UntrackModel(parse::<ByName>(args, path)?.name),
            "create_logical_model_select_permission" => {
                let a: CreatePermission = parse(args, path)?;
                if a.kind.as_deref().is_some_and(|k| k != "logical_model") {
                    return Err(not_supported(
                        &path.key("type"),
                        "permissions on native queries' inline models are not supported",
                    ));
                }
                let rules: SelectRules = parse(&a.permission, &path.key("permission"))?;
                NativeOp::CreatePermission {
                    model: a.name,
                    permission: LogicalModelPermission {
                        role: a.role,
                        permission: LogicalModelSelect {
                            columns: rules.columns,
                            filter: rules.filter,
                            limit: rules.limit,
                        },
                        comment: a.comment,
                    },
                }
            }
            "drop_logical_model_select_permission" => {
                let a: DropPermission = parse(args, path)?;
                if a.kind.as_deref().is_some_and(|k| k != "logical_model") {
                    return Err(not_supported(
                        &path.key("type"),
                        "permissions on native queries' inline models are not supported",
                    ));
                }
                NativeOp::DropPermission {
                    model: a.name,
                    role: a.role,
                }
            }
            "track_native_query" => NativeOp::TrackQuery(Box::new(query_entry(args, path)?)),
            _ => NativeOp::UntrackQuery(parse::<ByRootField>(args, path)?.root_field_name),
        }))
    }
}

/// Arrays hold rows of a model: an array of a scalar or of an array is `not-supported`.
fn refuse_arrays_of_non_models(args: &Value, path: &JsonPath) -> Result<()> {
    let fields = args.get("fields").and_then(Value::as_array);
    for (i, f) in fields.into_iter().flatten().enumerate() {
        let Some(array) = f.get("type").and_then(|t| t.get("array")) else {
            continue;
        };
        let at = path.key("fields").index(i).key("type").key("array");
        if array.get("scalar").is_some() {
            return Err(not_supported(
                &at,
                "arrays of scalar types are not supported",
            ));
        }
        if array.get("array").is_some() {
            return Err(not_supported(&at, "nested arrays are not supported"));
        }
    }
    Ok(())
}

/// A logical model with its own rules checked: at least one field, each named once.
pub fn model_entry(
    name: GraphQLName,
    fields: Vec<LogicalModelField>,
    description: Option<String>,
    path: &JsonPath,
) -> Result<LogicalModelEntry> {
    if fields.is_empty() {
        return Err(parse_failed(
            path.key("fields"),
            "a logical model has at least one field",
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, f) in fields.iter().enumerate() {
        if !seen.insert(&f.name.0) {
            return Err(parse_failed(
                path.key("fields").index(i).key("name"),
                format!("duplicate field name \"{}\"", f.name),
            ));
        }
    }
    Ok(LogicalModelEntry {
        name,
        description,
        fields,
        select_permissions: Vec::new(),
    })
}

/// A native query with its own rules checked: a read, placeholders outside strings and
/// comments, every placeholder declared and every declaration used, argument names GraphQL
/// names, relationships with one target each, named once.
fn query_entry(args: &Value, path: &JsonPath) -> Result<NativeQueryEntry> {
    let a: TrackQuery = parse(args, path)?;
    if a.kind.as_deref() == Some("mutation") {
        return Err(not_supported(
            &path.key("type"),
            "native query mutations are not supported",
        ));
    }
    if let Some(kind) = a.kind.as_deref().filter(|k| *k != "query") {
        return Err(parse_failed(
            path.key("type"),
            format!("expected \"query\", encountered \"{kind}\""),
        ));
    }
    let mut a = a;
    let returns = match std::mem::take(&mut a.returns) {
        Value::String(name) if GraphQLName::is_valid(&name) => GraphQLName(name),
        Value::Object(_) => {
            return Err(not_supported(
                &path.key("returns"),
                "inline logical models are not supported: name a tracked logical model",
            ))
        }
        other => {
            return Err(parse_failed(
                path.key("returns"),
                format!("expected a logical model's name, encountered {other}"),
            ))
        }
    };
    // Exported sorted by name.
    a.object_relationships.sort_by(|x, y| x.name.cmp(&y.name));
    a.array_relationships.sort_by(|x, y| x.name.cmp(&y.name));
    let entry = NativeQueryEntry {
        root_field_name: a.root_field_name,
        code: a.code,
        returns,
        arguments: a.arguments,
        object_relationships: a.object_relationships,
        array_relationships: a.array_relationships,
        description: a.description,
    };
    check_query(&entry, path)?;
    Ok(entry)
}

/// The rules of a native query that need nothing else (also checked on import).
pub fn check_query(entry: &NativeQueryEntry, path: &JsonPath) -> Result<()> {
    for name in entry.arguments.keys() {
        if !GraphQLName::is_servable(name) {
            return Err(parse_failed(
                path.key("arguments").key(name),
                format!("\"{name}\" is not a valid GraphQL name"),
            ));
        }
    }
    let template = Template::parse(&entry.code).map_err(|e| validation(path, e.to_string()))?;
    let used: BTreeSet<&str> = template.arguments().into_iter().collect();
    let listed = |names: Vec<&str>| {
        names
            .iter()
            .map(|n| format!("\"{n}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let undeclared: Vec<&str> = used
        .iter()
        .copied()
        .filter(|n| !entry.arguments.contains_key(*n))
        .collect();
    if !undeclared.is_empty() {
        return Err(validation(
            path,
            format!(
                "The following columns are used in the query, but are not declared as arguments: {}",
                listed(undeclared)
            ),
        ));
    }
    let unused: Vec<&str> = (entry.arguments.keys())
        .map(String::as_str)
        .filter(|n| !used.contains(n))
        .collect();
    if !unused.is_empty() {
        return Err(validation(
            path,
            format!(
                "The following columns are declared as arguments, but are not used in the query: {}",
                listed(unused)
            ),
        ));
    }
    let relationships = (entry.object_relationships.iter().enumerate())
        .map(|(i, r)| (path.key("object_relationships").index(i), r))
        .chain(
            (entry.array_relationships.iter().enumerate())
                .map(|(i, r)| (path.key("array_relationships").index(i), r)),
        );
    let mut names = BTreeSet::new();
    let mut twice = BTreeSet::new();
    for (at, r) in relationships {
        let using = &r.using;
        if using.remote_native_query.is_some() == using.remote_table.is_some() {
            return Err(parse_failed(
                at.key("using"),
                "exactly one of \"remote_native_query\" and \"remote_table\" is expected",
            ));
        }
        if using.column_mapping.is_empty() {
            return Err(parse_failed(
                at.key("using").key("column_mapping"),
                "a column mapping has at least one pair",
            ));
        }
        if !names.insert(r.name.0.as_str()) {
            twice.insert(r.name.0.as_str());
        }
    }
    if !twice.is_empty() {
        return Err(MetadataError::new(
            Code::AlreadyExists,
            path.clone(),
            format!(
                "The native query '{}' has duplicate relationships: {}",
                entry.root_field_name,
                twice.into_iter().collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    Ok(())
}

fn model_not_found(name: &str) -> MetadataError {
    MetadataError::new(
        Code::NotFound,
        JsonPath::args(),
        format!("Logical model \"{name}\" not found in source \"default\"."),
    )
    .with_missing(crate::metadata::error::Missing::Metadata)
}

impl NativeOp {
    pub fn apply(&self, metadata: &Metadata) -> Result<Metadata> {
        let mut next = metadata.clone();
        let args = JsonPath::args();
        let model_at = |next: &mut Metadata, name: &str| {
            let found = next.logical_models.iter().position(|m| m.name.0 == name);
            found.ok_or_else(|| model_not_found(name))
        };
        match self {
            NativeOp::TrackModel(entry) => {
                if metadata.logical_models.iter().any(|m| m.name == entry.name) {
                    return Err(MetadataError::new(
                        Code::AlreadyTracked,
                        args,
                        format!("Logical model '{}' is already tracked.", entry.name),
                    ));
                }
                next.logical_models.push(entry.clone());
            }
            NativeOp::UntrackModel(name) => {
                let i = model_at(&mut next, name)?;
                next.logical_models.remove(i);
            }
            NativeOp::CreatePermission { model, permission } => {
                let i = model_at(&mut next, model)?;
                let role = &permission.role;
                if role.0 == crate::session::ADMIN_ROLE {
                    return Err(MetadataError::new(
                        Code::ConstraintViolation,
                        args,
                        "cannot define permission for admin role",
                    ));
                }
                let entry = &mut next.logical_models[i];
                if entry.select_permissions.iter().any(|p| &p.role == role) {
                    return Err(MetadataError::new(
                        Code::AlreadyExists,
                        args,
                        format!("select permission already defined on logical model \"{model}\" with role \"{role}\""),
                    ));
                }
                if let Columns::List(columns) = &permission.permission.columns {
                    for c in columns {
                        let scalar = entry
                            .fields
                            .iter()
                            .any(|f| &f.name.0 == c && f.field_type.scalar().is_some());
                        if !scalar {
                            return Err(MetadataError::new(
                                Code::NotExists,
                                args.key("permission").key("columns"),
                                format!("column \"{c}\" does not exist"),
                            ));
                        }
                    }
                }
                entry.select_permissions.push(permission.clone());
                // Exported sorted by role.
                entry.select_permissions.sort_by(|a, b| a.role.cmp(&b.role));
            }
            NativeOp::DropPermission { model, role } => {
                let i = model_at(&mut next, model)?;
                let entry = &mut next.logical_models[i];
                let before = entry.select_permissions.len();
                entry.select_permissions.retain(|p| &p.role.0 != role);
                if entry.select_permissions.len() == before {
                    return Err(MetadataError::new(
                        Code::BadRequest,
                        args,
                        format!("select permission on logical model \"{model}\" for role \"{role}\" does not exist"),
                    ));
                }
            }
            NativeOp::TrackQuery(entry) => {
                let taken = (metadata.native_queries.iter())
                    .any(|q| q.root_field_name == entry.root_field_name);
                if taken {
                    return Err(MetadataError::new(
                        Code::AlreadyTracked,
                        args,
                        format!(
                            "Native query '{}' is already tracked.",
                            entry.root_field_name
                        ),
                    ));
                }
                next.native_queries.push((**entry).clone());
            }
            NativeOp::UntrackQuery(name) => {
                let before = next.native_queries.len();
                next.native_queries.retain(|q| &q.root_field_name.0 != name);
                if next.native_queries.len() == before {
                    return Err(MetadataError::new(
                        Code::NotFound,
                        args,
                        format!("Native query \"{name}\" not found in source \"default\"."),
                    ));
                }
            }
        }
        Ok(next)
    }
}

/// The checks of logical models and native queries deferred to the end of the request
/// (`docs/native-queries.md`, "Common rules"): an object one of `op`'s operations introduced
/// that is inconsistent now fails the request with its own error, and an untracked model or
/// query that something still uses fails it with the dependents. Paths are those of the
/// operation (`$.args[<i>].args` in a `bulk`).
pub fn check_deferred(
    op: &super::Op,
    after: &Metadata,
    schema: &crate::resolve::Resolution,
) -> Result<()> {
    walk(op, &JsonPath::root(), &mut |native, prefix| {
        let under = |err: MetadataError| match prefix {
            Some(prefix) => err.under(prefix),
            None => err,
        };
        let deferred = |id: ObjectId| {
            schema
                .deferred
                .iter()
                .find(|(object, _)| *object == id)
                .map(|(_, err)| under(err.clone()))
        };
        match native {
            NativeOp::TrackModel(e) => match deferred(ObjectId::LogicalModel(e.name.0.clone())) {
                Some(err) => Err(err),
                None => Ok(()),
            },
            NativeOp::TrackQuery(e) => {
                match deferred(ObjectId::NativeQuery(e.root_field_name.0.clone())) {
                    Some(err) => Err(err),
                    None => Ok(()),
                }
            }
            NativeOp::UntrackModel(name) => {
                if after.logical_models.iter().any(|m| &m.name.0 == name) {
                    return Ok(());
                }
                let mut dependents: Vec<String> = after
                    .native_queries
                    .iter()
                    .filter(|q| &q.returns.0 == name)
                    .map(|q| ObjectId::NativeQuery(q.root_field_name.0.clone()).describe())
                    .collect();
                dependents.extend(
                    (after.logical_models.iter())
                        .filter(|m| m.fields.iter().any(|f| f.field_type.model() == Some(name)))
                        .map(|m| ObjectId::LogicalModel(m.name.0.clone()).describe()),
                );
                dependency_error(dependents).map_err(under)
            }
            NativeOp::UntrackQuery(name) => {
                if after
                    .native_queries
                    .iter()
                    .any(|q| &q.root_field_name.0 == name)
                {
                    return Ok(());
                }
                let dependents = after
                    .native_queries
                    .iter()
                    .flat_map(|q| {
                        (q.object_relationships.iter())
                            .chain(&q.array_relationships)
                            .filter(|r| r.using.remote_native_query.as_deref() == Some(name))
                            .map(|r| {
                                ObjectId::NativeQueryRelationship(
                                    q.root_field_name.0.clone(),
                                    r.name.0.clone(),
                                )
                                .describe()
                            })
                    })
                    .collect();
                dependency_error(dependents).map_err(under)
            }
            // A permission whose filter does not fit makes its model inconsistent.
            NativeOp::CreatePermission { model, .. } => {
                match deferred(ObjectId::LogicalModel(model.clone())) {
                    Some(err) => Err(err),
                    None => Ok(()),
                }
            }
            NativeOp::DropPermission { .. } => Ok(()),
        }
    })
}

fn dependency_error(mut dependents: Vec<String>) -> Result<()> {
    if dependents.is_empty() {
        return Ok(());
    }
    dependents.sort();
    Err(MetadataError::new(
        Code::DependencyError,
        JsonPath::args(),
        format!(
            "cannot drop due to the following dependent objects : {}",
            dependents.join(", ")
        ),
    ))
}

/// Calls `check` on each native operation of `op`, with the prefix of its path in a `bulk`.
fn walk(
    op: &super::Op,
    at: &JsonPath,
    check: &mut dyn FnMut(&NativeOp, Option<&JsonPath>) -> Result<()>,
) -> Result<()> {
    match op {
        super::Op::Metadata(m) => match m.as_ref() {
            super::MetadataOp::Native(native) => {
                let prefix = (at != &JsonPath::root()).then_some(at);
                check(native, prefix)
            }
            _ => Ok(()),
        },
        super::Op::Bulk(items) => {
            let base = match at == &JsonPath::root() {
                true => JsonPath::args(),
                false => at.key("args"),
            };
            for (i, item) in items.iter().enumerate() {
                walk(item, &base.index(i), check)?;
            }
            Ok(())
        }
        super::Op::RunSql(_) | super::Op::EventLog(_) | super::Op::Scheduled(_) => Ok(()),
    }
}
