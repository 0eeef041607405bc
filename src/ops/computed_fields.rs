//! `add_computed_field` and `drop_computed_field`, validated by the resolver's own
//! `resolve::check_computed_field`. See `docs/metadata-api.md`, "Computed fields". Must not do IO,
//! read the clock, or edit anything but the `Metadata` it returns.

use super::{resolved_table, tracked_entry, Context};
use crate::metadata::error::{already_exists, not_exists_in_metadata, Code, MetadataError, Result};
use crate::metadata::ids::{computed_field_definition, ObjectId};
use crate::metadata::parse::parse;
use crate::metadata::path::JsonPath;
use crate::metadata::types::*;
use crate::resolve::{self, FieldRef, Resolution};
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Debug, Clone)]
pub enum ComputedFieldOp {
    /// `add_computed_field`.
    Add(QualifiedTable, ComputedFieldEntry),
    /// `drop_computed_field`.
    Drop {
        table: QualifiedTable,
        name: String,
        /// Drop dependents too.
        cascade: bool,
    },
}

#[derive(Deserialize)]
struct Add {
    table: QualifiedTable,
    name: GraphQLName,
    definition: ComputedFieldDefinition,
    #[serde(default)]
    comment: Option<String>,
}

#[derive(Deserialize)]
struct Drop {
    table: QualifiedTable,
    name: String,
    #[serde(default)]
    cascade: bool,
}

impl ComputedFieldOp {
    /// Parses the computed-field operations; `None` for other types.
    pub fn parse(op_type: &str, args: &Value, path: &JsonPath) -> Result<Option<Self>> {
        Ok(Some(match op_type {
            "add_computed_field" => {
                let a: Add = parse(args, path)?;
                ComputedFieldOp::Add(
                    a.table,
                    ComputedFieldEntry {
                        name: a.name,
                        definition: a.definition,
                        comment: a.comment,
                    },
                )
            }
            "drop_computed_field" => {
                let a: Drop = parse(args, path)?;
                ComputedFieldOp::Drop {
                    table: a.table,
                    name: a.name,
                    cascade: a.cascade,
                }
            }
            _ => return Ok(None),
        }))
    }

    pub fn apply(
        &self,
        metadata: &Metadata,
        cache: &Resolution,
        ctx: Context<'_>,
    ) -> Result<Metadata> {
        let mut next = metadata.clone();
        let args = JsonPath::args();
        match self {
            ComputedFieldOp::Add(table, cf) => {
                tracked_entry(&mut next, table, &args.key("table"))?;
                let resolved = resolved_table(cache, table, &args.key("table"))?;
                match resolved.field(&cf.name.0) {
                    Some(FieldRef::Column(_)) => {
                        return Err(MetadataError::new(
                            Code::ConstraintViolation,
                            args,
                            "field definition conflicts with postgres column",
                        ))
                    }
                    Some(_) => {
                        return Err(already_exists(
                            args,
                            format!("field \"{}\" already exists in table \"{table}\"", cf.name),
                        ))
                    }
                    None => {}
                }
                resolve::check_computed_field(table, cf, ctx.db, &cache.resolved).map_err(|e| {
                    let object = json!({
                        "type": "computed_field",
                        "definition": computed_field_definition(table, cf),
                        "reason": e.message,
                    });
                    e.under(&args).with_internal(json!([object]))
                })?;
                tracked_entry(&mut next, table, &args.key("table"))?
                    .computed_fields
                    .push(cf.clone());
            }
            ComputedFieldOp::Drop {
                table,
                name,
                cascade,
            } => {
                let entry = tracked_entry(&mut next, table, &args.key("table"))?;
                if !entry.has_computed_field(name) {
                    return Err(not_exists_in_metadata(
                        args.key("name"),
                        format!("computed field \"{name}\" does not exist"),
                    ));
                }
                super::drop_with_dependents(
                    metadata,
                    &mut next,
                    cache,
                    ObjectId::ComputedField(table.clone(), name.clone()),
                    *cascade,
                )?;
            }
        }
        Ok(next)
    }
}
