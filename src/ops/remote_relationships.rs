//! `create_remote_relationship`, `update_remote_relationship` and `delete_remote_relationship`:
//! a table's field answered by a remote schema, in either argument form, checked by the
//! resolver's own rule (`resolve::remote_join`) against the remote's stored introspection; and
//! `create_`, `update_` and `delete_remote_schema_remote_relationship`: a remote object type's
//! field answered by rows of a table (`resolve::remote_to_table`). See
//! `docs/metadata-api.md`, "Remote relationships". Must not do IO, read the clock, or edit
//! anything but the `Metadata` it returns.

use super::{resolved_table, tracked_entry};
use crate::metadata::error::{
    already_exists, not_exists_in_metadata, parse_failed, Code, MetadataError, Result,
};
use crate::metadata::parse::parse;
use crate::metadata::path::JsonPath;
use crate::metadata::types::*;
use crate::resolve::{self, Resolution};
use serde::Deserialize;
use serde_json::{Map, Value};

#[derive(Debug, Clone)]
pub enum RemoteRelationshipOp {
    /// `create_remote_relationship`.
    Create(QualifiedTable, RemoteRelationshipEntry),
    /// `update_remote_relationship`: replaces the definition (and may switch forms).
    Update(QualifiedTable, RemoteRelationshipEntry),
    /// `delete_remote_relationship`.
    Delete { table: QualifiedTable, name: String },
    /// `create_remote_schema_remote_relationship`.
    CreateOnRemote(OnRemote),
    /// `update_remote_schema_remote_relationship`.
    UpdateOnRemote(OnRemote),
    /// `delete_remote_schema_remote_relationship`.
    DeleteOnRemote {
        remote_schema: String,
        type_name: String,
        name: String,
    },
}

/// A remote object type's relationship to a table, where it goes.
#[derive(Debug, Clone)]
pub struct OnRemote {
    pub remote_schema: String,
    pub type_name: GraphQLName,
    pub relationship: RemoteSchemaRelationshipEntry,
}

#[derive(Deserialize)]
struct OnRemoteArgs {
    remote_schema: String,
    type_name: GraphQLName,
    name: GraphQLName,
    definition: Map<String, Value>,
}

#[derive(Deserialize)]
struct DeleteOnRemote {
    remote_schema: String,
    type_name: String,
    name: String,
}

/// Reads the create and update arguments of a remote schema's relationship.
fn on_remote(args: &Value, path: &JsonPath) -> Result<OnRemote> {
    let a: OnRemoteArgs = parse(args, path)?;
    let at = path.key("definition");
    let keys: Vec<&str> = a.definition.keys().map(String::as_str).collect();
    let definition: ToSourceDefinition = match keys.as_slice() {
        ["to_remote_schema"] => {
            return Err(MetadataError::new(
                Code::NotSupported,
                path.clone(),
                "remote schema to remote schema relationships are not supported",
            ))
        }
        ["to_source"] => parse(&Value::Object(a.definition), &at)?,
        _ => return Err(parse_failed(at, STRICT_FORM)),
    };
    check_source(&Some(definition.to_source.source.clone()), path)?;
    Ok(OnRemote {
        remote_schema: a.remote_schema,
        type_name: a.type_name,
        relationship: RemoteSchemaRelationshipEntry {
            name: a.name,
            definition,
        },
    })
}

/// The current form's arguments.
#[derive(Deserialize)]
struct Current {
    name: GraphQLName,
    table: QualifiedTable,
    #[serde(default)]
    source: Option<String>,
    definition: Map<String, Value>,
}

/// The legacy form's arguments: the target's keys at the top level.
#[derive(Deserialize)]
struct Legacy {
    name: GraphQLName,
    table: QualifiedTable,
    #[serde(default)]
    source: Option<String>,
    remote_schema: Name,
    basalt_fields: Vec<String>,
    remote_field: RemoteField,
}

#[derive(Deserialize)]
struct Delete {
    table: QualifiedTable,
    name: String,
    #[serde(default)]
    source: Option<String>,
}

/// Basalt has one database source, `default`.
pub(super) fn check_source(source: &Option<String>, path: &JsonPath) -> Result<()> {
    match source.as_deref() {
        None | Some("default") => Ok(()),
        Some(other) => Err(not_exists_in_metadata(
            path.clone(),
            format!("source with name \"{other}\" does not exist"),
        )),
    }
}

/// [`check_source`] of the raw arguments' `source` (any JSON), before they are parsed.
pub(super) fn check_source_of(args: &Value, path: &JsonPath) -> Result<()> {
    match args.get("source").filter(|s| !s.is_null()) {
        Some(Value::String(source)) => check_source(&Some(source.clone()), path),
        Some(other) => check_source(&Some(other.to_string()), path),
        None => Ok(()),
    }
}

/// Reads either form of the create and update arguments.
fn entry(args: &Value, path: &JsonPath) -> Result<(QualifiedTable, RemoteRelationshipEntry)> {
    let has = |key: &str| args.get(key).is_some();
    if has("definition") == has("remote_schema") {
        return Err(parse_failed(
            path.clone(),
            "create_remote_relationship expects exactly one of: remote_schema, definition",
        ));
    }
    if has("remote_schema") {
        let a: Legacy = parse(args, path)?;
        check_source(&a.source, path)?;
        let mut seen = std::collections::HashSet::new();
        let lhs_fields = a
            .basalt_fields
            .into_iter()
            .filter(|f| seen.insert(f.clone()))
            .collect();
        let definition = RemoteRelationshipDefinition::Legacy(ToRemoteSchema {
            remote_schema: a.remote_schema,
            lhs_fields,
            remote_field: a.remote_field,
        });
        return Ok((
            a.table,
            RemoteRelationshipEntry {
                name: a.name,
                definition,
            },
        ));
    }
    let a: Current = parse(args, path)?;
    check_source(&a.source, path)?;
    let at = path.key("definition");
    if a.definition.len() == 1 && a.definition.contains_key("to_source") {
        return Err(MetadataError::new(
            Code::NotSupported,
            path.clone(),
            "remote relationships to database sources are not supported",
        ));
    }
    let definition = current_form(a.definition).map_err(|message| parse_failed(at, message))?;
    Ok((
        a.table,
        RemoteRelationshipEntry {
            name: a.name,
            definition,
        },
    ))
}

impl RemoteRelationshipOp {
    /// Parses the remote relationship operations; `None` for other types.
    pub fn parse(op_type: &str, args: &Value, path: &JsonPath) -> Result<Option<Self>> {
        Ok(Some(match op_type {
            "create_remote_relationship" => {
                let (table, entry) = entry(args, path)?;
                RemoteRelationshipOp::Create(table, entry)
            }
            "update_remote_relationship" => {
                let (table, entry) = entry(args, path)?;
                RemoteRelationshipOp::Update(table, entry)
            }
            "create_remote_schema_remote_relationship" => {
                RemoteRelationshipOp::CreateOnRemote(on_remote(args, path)?)
            }
            "update_remote_schema_remote_relationship" => {
                RemoteRelationshipOp::UpdateOnRemote(on_remote(args, path)?)
            }
            "delete_remote_schema_remote_relationship" => {
                let a: DeleteOnRemote = parse(args, path)?;
                RemoteRelationshipOp::DeleteOnRemote {
                    remote_schema: a.remote_schema,
                    type_name: a.type_name,
                    name: a.name,
                }
            }
            "delete_remote_relationship" => {
                let a: Delete = parse(args, path)?;
                check_source(&a.source, path)?;
                RemoteRelationshipOp::Delete {
                    table: a.table,
                    name: a.name,
                }
            }
            _ => return Ok(None),
        }))
    }

    pub fn apply(&self, metadata: &Metadata, cache: &Resolution) -> Result<Metadata> {
        let mut next = metadata.clone();
        let args = JsonPath::args();
        match self {
            RemoteRelationshipOp::Create(table, relationship) => {
                tracked_entry(&mut next, table, &args.key("table"))?;
                let name = &relationship.name.0;
                resolve::check_reserved_name(name, args.key("name"))?;
                let resolved = resolved_table(cache, table, &args.key("table"))?;
                let taken = resolved.field(name).is_some()
                    || metadata.table(table).is_some_and(|e| {
                        e.has_relationship(name)
                            || e.remote_relationships.iter().any(|r| &r.name.0 == name)
                    });
                if taken {
                    return Err(already_exists(
                        args,
                        format!(
                            "column/relationship \"{name}\" of table \"{table}\" already exists"
                        ),
                    ));
                }
                check(metadata, cache, table, relationship)?;
                tracked_entry(&mut next, table, &args.key("table"))?
                    .remote_relationships
                    .push(relationship.clone());
            }
            RemoteRelationshipOp::Update(table, relationship) => {
                let at = existing(&mut next, table, &relationship.name.0)?;
                check(metadata, cache, table, relationship)?;
                tracked_entry(&mut next, table, &args.key("table"))?.remote_relationships[at] =
                    relationship.clone();
            }
            RemoteRelationshipOp::Delete { table, name } => {
                let at = existing(&mut next, table, name)?;
                tracked_entry(&mut next, table, &args.key("table"))?
                    .remote_relationships
                    .remove(at);
            }
            RemoteRelationshipOp::CreateOnRemote(on) => {
                let name = &on.relationship.name.0;
                let taken = remote_entry(&mut next, &on.remote_schema)?
                    .remote_relationships
                    .iter()
                    .filter(|g| g.type_name == on.type_name)
                    .any(|g| g.relationships.iter().any(|r| &r.name.0 == name));
                if taken {
                    return Err(already_exists(
                        args,
                        format!(
                            "field \"{name}\" already exists in type \"{}\"",
                            on.type_name
                        ),
                    ));
                }
                check_on_remote(metadata, cache, on)?;
                let groups = &mut remote_entry(&mut next, &on.remote_schema)?.remote_relationships;
                match groups.iter_mut().find(|g| g.type_name == on.type_name) {
                    Some(group) => group.relationships.push(on.relationship.clone()),
                    None => groups.push(RemoteTypeRelationships {
                        type_name: on.type_name.clone(),
                        relationships: vec![on.relationship.clone()],
                    }),
                }
            }
            RemoteRelationshipOp::UpdateOnRemote(on) => {
                let (group, at) = existing_on_remote(
                    &mut next,
                    &on.remote_schema,
                    &on.type_name.0,
                    &on.relationship.name.0,
                )?;
                check_on_remote(metadata, cache, on)?;
                remote_entry(&mut next, &on.remote_schema)?.remote_relationships[group]
                    .relationships[at] = on.relationship.clone();
            }
            RemoteRelationshipOp::DeleteOnRemote {
                remote_schema,
                type_name,
                name,
            } => {
                let (group, at) = existing_on_remote(&mut next, remote_schema, type_name, name)?;
                let groups = &mut remote_entry(&mut next, remote_schema)?.remote_relationships;
                groups[group].relationships.remove(at);
                if groups[group].relationships.is_empty() {
                    groups.remove(group);
                }
            }
        }
        Ok(next)
    }
}

/// The remote schema `name`, or `not-exists`.
fn remote_entry<'a>(metadata: &'a mut Metadata, name: &str) -> Result<&'a mut RemoteSchemaEntry> {
    metadata
        .remote_schemas
        .iter_mut()
        .find(|r| r.name.0 == name)
        .ok_or_else(|| {
            not_exists_in_metadata(
                JsonPath::args(),
                format!("remote schema with name \"{name}\" does not exist"),
            )
        })
}

/// The positions (type group, relationship) of a remote schema's relationship, or `not-exists`.
fn existing_on_remote(
    metadata: &mut Metadata,
    remote: &str,
    type_name: &str,
    name: &str,
) -> Result<(usize, usize)> {
    let entry = remote_entry(metadata, remote)?;
    entry
        .remote_relationships
        .iter()
        .enumerate()
        .filter(|(_, g)| g.type_name.0 == type_name)
        .find_map(|(i, g)| {
            g.relationships
                .iter()
                .position(|r| r.name.0 == name)
                .map(|j| (i, j))
        })
        .ok_or_else(|| {
            not_exists_in_metadata(
                JsonPath::args(),
                format!(
                    "no relationship defined on remote schema \"{remote}\" with name \"{name}\""
                ),
            )
        })
}

/// The remote schema is served, and the relationship fits its type and the target table.
fn check_on_remote(metadata: &Metadata, cache: &Resolution, on: &OnRemote) -> Result<()> {
    let remote = cache
        .resolved
        .remote_schemas
        .iter()
        .find(|r| r.name() == on.remote_schema)
        .ok_or_else(|| {
            MetadataError::new(
                Code::RemoteSchemaError,
                JsonPath::args(),
                format!(
                    "remote schema \"{}\" has no introspection result",
                    on.remote_schema
                ),
            )
        })?;
    resolve::remote_to_table::check(
        metadata,
        &cache.resolved,
        remote,
        &on.type_name.0,
        &on.relationship,
    )?;
    Ok(())
}

/// The position of relationship `name` on `table`, or `not-exists`.
fn existing(metadata: &mut Metadata, table: &QualifiedTable, name: &str) -> Result<usize> {
    let entry = tracked_entry(metadata, table, &JsonPath::args().key("table"))?;
    entry
        .remote_relationships
        .iter()
        .position(|r| r.name.0 == name)
        .ok_or_else(|| {
            not_exists_in_metadata(
                JsonPath::args(),
                format!("remote relationship \"{name}\" does not exist on table \"{table}\""),
            )
        })
}

/// The relationship's remote schema exists and is served, and the relationship fits its
/// table and the remote's schema.
fn check(
    metadata: &Metadata,
    cache: &Resolution,
    table: &QualifiedTable,
    relationship: &RemoteRelationshipEntry,
) -> Result<()> {
    let args = JsonPath::args();
    let target = relationship.definition.target();
    let remote_name = &target.remote_schema.0;
    if !metadata
        .remote_schemas
        .iter()
        .any(|r| &r.name.0 == remote_name)
    {
        return Err(not_exists_in_metadata(
            args,
            format!("remote schema with name \"{remote_name}\" not found"),
        ));
    }
    let remote_error =
        |message: String| MetadataError::new(Code::RemoteSchemaError, args.clone(), message);
    let remote = cache
        .resolved
        .remote_schemas
        .iter()
        .find(|r| r.name() == remote_name)
        .ok_or_else(|| {
            remote_error(format!(
                "remote schema \"{remote_name}\" has no introspection result"
            ))
        })?;
    let resolved = resolved_table(cache, table, &args.key("table"))?;
    resolve::remote_join::check(resolved, target, remote).map_err(remote_error)?;
    Ok(())
}
