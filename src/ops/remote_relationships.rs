//! `create_remote_relationship`, `update_remote_relationship` and `delete_remote_relationship`:
//! a table's field answered by a remote schema, in either argument form, checked by the
//! resolver's own rule (`resolve::remote_join`) against the remote's stored introspection. See
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
fn check_source(source: &Option<String>, path: &JsonPath) -> Result<()> {
    match source.as_deref() {
        None | Some("default") => Ok(()),
        Some(other) => Err(not_exists_in_metadata(
            path.clone(),
            format!("source with name \"{other}\" does not exist"),
        )),
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
        }
        Ok(next)
    }
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
