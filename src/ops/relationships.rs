//! `create_object_relationship`, `create_array_relationship`, `drop_relationship`,
//! `set_relationship_comment`, `rename_relationship`, resolved by the resolver's own relationship
//! rules. See `docs/metadata-api.md`, "Relationships". Must not do IO, read the clock, or edit
//! anything but the `Metadata` it returns.

use super::dependencies;
use super::{resolved_table, tracked_entry};
use crate::metadata::error::{already_exists, not_exists_in_metadata, MetadataError, Result};
use crate::metadata::ids::ObjectId;
use crate::metadata::parse::parse;
use crate::metadata::path::JsonPath;
use crate::metadata::types::*;
use crate::resolve::{self, Resolution, Target};
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Clone)]
pub enum RelationshipOp {
    /// `create_object_relationship`.
    CreateObject(QualifiedTable, RelationshipEntry<ObjRelUsing>),
    /// `create_array_relationship`.
    CreateArray(QualifiedTable, RelationshipEntry<ArrRelUsing>),
    /// `drop_relationship`.
    Drop {
        table: QualifiedTable,
        relationship: String,
        /// Drop dependents too.
        cascade: bool,
    },
    /// `set_relationship_comment`.
    SetComment {
        table: QualifiedTable,
        relationship: String,
        /// New comment (`None` removes it).
        comment: Option<String>,
    },
    /// `rename_relationship`.
    Rename {
        table: QualifiedTable,
        /// Current name.
        name: String,
        new_name: GraphQLName,
    },
}

#[derive(Deserialize)]
struct Create<U> {
    table: QualifiedTable,
    name: GraphQLName,
    using: U,
    #[serde(default)]
    comment: Option<String>,
}

#[derive(Deserialize)]
struct Drop {
    table: QualifiedTable,
    relationship: String,
    #[serde(default)]
    cascade: bool,
}

#[derive(Deserialize)]
struct SetComment {
    table: QualifiedTable,
    #[serde(alias = "name")]
    relationship: String,
    #[serde(default)]
    comment: Option<String>,
}

#[derive(Deserialize)]
struct Rename {
    table: QualifiedTable,
    name: String,
    new_name: GraphQLName,
}

impl RelationshipOp {
    /// Parses the relationship operations; `None` for other types.
    pub fn parse(op_type: &str, args: &Value, path: &JsonPath) -> Result<Option<Self>> {
        Ok(Some(match op_type {
            "create_object_relationship" => {
                let a: Create<ObjRelUsing> = parse(args, path)?;
                RelationshipOp::CreateObject(
                    a.table,
                    RelationshipEntry {
                        name: a.name,
                        using: a.using,
                        comment: a.comment,
                    },
                )
            }
            "create_array_relationship" => {
                let a: Create<ArrRelUsing> = parse(args, path)?;
                RelationshipOp::CreateArray(
                    a.table,
                    RelationshipEntry {
                        name: a.name,
                        using: a.using,
                        comment: a.comment,
                    },
                )
            }
            "drop_relationship" => {
                let a: Drop = parse(args, path)?;
                RelationshipOp::Drop {
                    table: a.table,
                    relationship: a.relationship,
                    cascade: a.cascade,
                }
            }
            "set_relationship_comment" => {
                let a: SetComment = parse(args, path)?;
                RelationshipOp::SetComment {
                    table: a.table,
                    relationship: a.relationship,
                    comment: a.comment,
                }
            }
            "rename_relationship" => {
                let a: Rename = parse(args, path)?;
                RelationshipOp::Rename {
                    table: a.table,
                    name: a.name,
                    new_name: a.new_name,
                }
            }
            _ => return Ok(None),
        }))
    }

    pub fn apply(&self, metadata: &Metadata, cache: &Resolution) -> Result<Metadata> {
        let mut next = metadata.clone();
        let args = JsonPath::args();
        match self {
            RelationshipOp::CreateObject(table, rel) => {
                resolve::check_reserved_name(&rel.name.0, args.key("name"))?;
                check_new_name(cache, table, &rel.name.0, &args)?;
                resolve::resolve_object_relationship(table, rel, &cache.resolved)
                    .map_err(|e| using_error(e, &args))?;
                tracked_entry(&mut next, table, &args.key("table"))?
                    .object_relationships
                    .push(rel.clone());
            }
            RelationshipOp::CreateArray(table, rel) => {
                resolve::check_reserved_name(&rel.name.0, args.key("name"))?;
                check_new_name(cache, table, &rel.name.0, &args)?;
                resolve::resolve_array_relationship(table, rel, &cache.resolved)
                    .map_err(|e| using_error(e, &args))?;
                tracked_entry(&mut next, table, &args.key("table"))?
                    .array_relationships
                    .push(rel.clone());
            }
            RelationshipOp::Drop {
                table,
                relationship,
                cascade,
            } => {
                existing(&mut next, table, relationship)?;
                super::drop_with_dependents(
                    metadata,
                    &mut next,
                    cache,
                    ObjectId::Relationship(table.clone(), relationship.clone()),
                    *cascade,
                )?;
            }
            RelationshipOp::SetComment {
                table,
                relationship,
                comment,
            } => {
                existing(&mut next, table, relationship)?;
                if let Some(entry) = next.table_mut(table) {
                    for r in entry
                        .object_relationships
                        .iter_mut()
                        .filter(|r| &r.name.0 == relationship)
                    {
                        r.comment = comment.clone();
                    }
                    for r in entry
                        .array_relationships
                        .iter_mut()
                        .filter(|r| &r.name.0 == relationship)
                    {
                        r.comment = comment.clone();
                    }
                }
            }
            RelationshipOp::Rename {
                table,
                name,
                new_name,
            } => {
                existing(&mut next, table, name)?;
                if name != &new_name.0 {
                    resolve::check_reserved_name(&new_name.0, args.key("new_name"))?;
                    check_new_name(cache, table, &new_name.0, &args.key("new_name"))?;
                }
                let perms = dependencies::permission_references(metadata, &cache.resolved);
                rename(&mut next, table, name, new_name, &perms);
            }
        }
        Ok(next)
    }
}

/// Fails when `name` is taken by a column, relationship or computed field of `table`.
fn check_new_name(
    cache: &Resolution,
    table: &QualifiedTable,
    name: &str,
    path: &JsonPath,
) -> Result<()> {
    let resolved = resolved_table(cache, table, &JsonPath::args().key("table"))?;
    if resolved.field(name).is_some() {
        return Err(already_exists(
            path.clone(),
            format!("column/relationship \"{name}\" of table \"{table}\" already exists"),
        ));
    }
    Ok(())
}

/// Relationship resolution errors point into `using`, except missing tables.
fn using_error(err: MetadataError, args: &JsonPath) -> MetadataError {
    err.under(&args.key("using"))
}

fn existing(metadata: &mut Metadata, table: &QualifiedTable, name: &str) -> Result<()> {
    let entry = tracked_entry(metadata, table, &JsonPath::args().key("table"))?;
    if entry.has_relationship(name) {
        Ok(())
    } else {
        Err(not_exists_in_metadata(
            JsonPath::args().key("relationship"),
            format!("relationship \"{name}\" does not exist"),
        ))
    }
}

/// Renames a relationship and every permission key that traverses it.
fn rename(
    metadata: &mut Metadata,
    table: &QualifiedTable,
    old: &str,
    new: &GraphQLName,
    perms: &[(ObjectId, Vec<resolve::Reference>)],
) {
    if let Some(entry) = metadata.table_mut(table) {
        for r in entry
            .object_relationships
            .iter_mut()
            .filter(|r| r.name.0 == old)
        {
            r.name = new.clone();
        }
        for r in entry
            .array_relationships
            .iter_mut()
            .filter(|r| r.name.0 == old)
        {
            r.name = new.clone();
        }
    }
    for (id, refs) in perms {
        let ObjectId::Permission(owner, role, kind) = id else {
            continue;
        };
        let pointers: Vec<_> = refs
            .iter()
            .filter(|r| r.target == Target::Relationship(table.clone(), old.to_owned()))
            .map(|r| r.pointer.clone())
            .collect();
        if pointers.is_empty() {
            continue;
        }
        dependencies::edit_permission_json(metadata, owner, role, *kind, |value| {
            // Deepest first, so renaming an outer key does not move an inner pointer.
            let mut pointers = pointers.clone();
            pointers.sort_by_key(|p| std::cmp::Reverse(p.len()));
            for p in &pointers {
                dependencies::rename_key_at(value, p, &new.0);
            }
        });
    }
}
