//! `track_table` (v1, v2), `untrack_table`, `set_table_is_enum`, `set_table_custom_fields`. See
//! `docs/metadata-api.md`, "Tables". Must not do IO, read the clock, or edit anything but the
//! `Metadata` it returns.

use super::{resolved_table, tracked_entry, Context};
use crate::metadata::error::{not_exists_in_database, parse_failed, Code, MetadataError, Result};
use crate::metadata::ids::ObjectId;
use crate::metadata::parse::parse;
use crate::metadata::path::JsonPath;
use crate::metadata::types::*;
use crate::resolve::{self, Resolution};
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Clone)]
pub enum TableOp {
    /// `track_table` (both versions).
    Track {
        table: QualifiedTable,
        is_enum: bool,
        /// v2 configuration.
        configuration: TableConfig,
    },
    /// `untrack_table`.
    Untrack {
        table: QualifiedTable,
        /// Drop dependents too.
        cascade: bool,
    },
    /// `set_table_is_enum`.
    SetIsEnum {
        table: QualifiedTable,
        is_enum: bool,
    },
    /// `set_table_custom_fields` (v2).
    SetCustomFields {
        table: QualifiedTable,
        /// Replacement configuration.
        configuration: TableConfig,
    },
}

#[derive(Deserialize)]
struct TrackV1 {
    table: QualifiedTable,
    #[serde(default)]
    is_enum: bool,
}

#[derive(Deserialize)]
struct TrackLegacy {
    #[serde(default = "public")]
    schema: String,
    name: String,
    #[serde(default)]
    is_enum: bool,
}

fn public() -> String {
    "public".to_owned()
}

#[derive(Deserialize)]
struct TrackV2 {
    table: QualifiedTable,
    #[serde(default)]
    configuration: TableConfig,
    #[serde(default)]
    is_enum: bool,
}

#[derive(Deserialize)]
struct Untrack {
    table: QualifiedTable,
    #[serde(default)]
    cascade: bool,
}

#[derive(Deserialize)]
struct SetIsEnum {
    table: QualifiedTable,
    is_enum: bool,
}

#[derive(Deserialize)]
struct SetCustomFields {
    table: QualifiedTable,
    #[serde(default)]
    custom_root_fields: CustomRootFields,
    #[serde(default)]
    custom_column_names: indexmap::IndexMap<String, GraphQLName>,
}

impl TableOp {
    /// Parses the table operations; `None` for other types.
    pub fn parse(
        op_type: &str,
        version: i64,
        args: &Value,
        path: &JsonPath,
    ) -> Result<Option<Self>> {
        Ok(Some(match op_type {
            "track_table" if version == 2 => {
                let a: TrackV2 = parse(args, path)?;
                TableOp::Track {
                    table: a.table,
                    is_enum: a.is_enum,
                    configuration: a.configuration,
                }
            }
            "track_table" => {
                if args.get("table").is_some() || args.get("name").is_none() {
                    let a: TrackV1 = parse(args, path)?;
                    TableOp::Track {
                        table: a.table,
                        is_enum: a.is_enum,
                        configuration: TableConfig::default(),
                    }
                } else {
                    let a: TrackLegacy = parse(args, path)?;
                    TableOp::Track {
                        table: QualifiedTable::new(a.schema, a.name),
                        is_enum: a.is_enum,
                        configuration: TableConfig::default(),
                    }
                }
            }
            "untrack_table" => {
                let a: Untrack = parse(args, path)?;
                TableOp::Untrack {
                    table: a.table,
                    cascade: a.cascade,
                }
            }
            "set_table_is_enum" => {
                let a: SetIsEnum = parse(args, path)?;
                TableOp::SetIsEnum {
                    table: a.table,
                    is_enum: a.is_enum,
                }
            }
            "set_table_custom_fields" if version == 2 => {
                let a: SetCustomFields = parse(args, path)?;
                TableOp::SetCustomFields {
                    table: a.table,
                    configuration: TableConfig {
                        custom_root_fields: a.custom_root_fields,
                        custom_column_names: a.custom_column_names,
                    },
                }
            }
            "set_table_custom_fields" => {
                return Err(parse_failed(
                    JsonPath::root().key("version"),
                    "set_table_custom_fields is only available with \"version\": 2",
                ))
            }
            _ => return Ok(None),
        }))
    }

    /// Tables that become enums.
    pub fn enum_candidates(&self) -> Vec<QualifiedTable> {
        match self {
            TableOp::Track {
                table,
                is_enum: true,
                ..
            }
            | TableOp::SetIsEnum {
                table,
                is_enum: true,
            } => {
                vec![table.clone()]
            }
            _ => Vec::new(),
        }
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
            TableOp::Track {
                table,
                is_enum,
                configuration,
            } => {
                if metadata.table(table).is_some() {
                    return Err(MetadataError::new(
                        Code::AlreadyTracked,
                        args,
                        format!("view/table already tracked: \"{table}\""),
                    ));
                }
                let db_table = ctx.db.table(&table.schema, &table.name).ok_or_else(|| {
                    not_exists_in_database(
                        args.clone(),
                        format!("no such table/view exists in postgres: \"{table}\""),
                    )
                })?;
                check_configuration(
                    cache,
                    table,
                    db_table,
                    configuration,
                    &args.key("configuration"),
                )?;
                if *is_enum {
                    enum_rules(table, db_table, ctx)?;
                }
                let mut entry = TableEntry::new(table.clone());
                entry.is_enum = *is_enum;
                entry.configuration = configuration.clone();
                next.tables.push(std::sync::Arc::new(entry));
            }
            TableOp::Untrack { table, cascade } => {
                if metadata.table(table).is_none() {
                    return Err(MetadataError::new(
                        Code::AlreadyUntracked,
                        args,
                        format!("view/table already untracked: \"{table}\""),
                    ));
                }
                super::drop_with_dependents(
                    metadata,
                    &mut next,
                    cache,
                    ObjectId::Table(table.clone()),
                    *cascade,
                )?;
            }
            TableOp::SetIsEnum { table, is_enum } => {
                let entry = tracked_entry(&mut next, table, &args.key("table"))?;
                if *is_enum {
                    let db_table = ctx.db.table(&table.schema, &table.name).ok_or_else(|| {
                        not_exists_in_database(
                            args.key("table"),
                            format!("no such table/view exists in postgres: \"{table}\""),
                        )
                    })?;
                    enum_rules(table, db_table, ctx)?;
                }
                entry.is_enum = *is_enum;
            }
            TableOp::SetCustomFields {
                table,
                configuration,
            } => {
                tracked_entry(&mut next, table, &args.key("table"))?;
                let resolved = resolved_table(cache, table, &args.key("table"))?;
                check_configuration(cache, table, &resolved.db, configuration, &args)?;
                if let Some(entry) = next.table_mut(table) {
                    entry.configuration = configuration.clone();
                }
            }
        }
        Ok(next)
    }
}

fn enum_rules(
    table: &QualifiedTable,
    db_table: &crate::db_model::DbTable,
    ctx: Context<'_>,
) -> Result<()> {
    resolve::checks_enum(table, db_table, ctx.db)
        .map(|_| ())
        .map_err(|e| e.under(&JsonPath::args()))
}

/// Validates a configuration: names, then clashes with other tables' root fields.
fn check_configuration(
    cache: &Resolution,
    table: &QualifiedTable,
    db_table: &crate::db_model::DbTable,
    configuration: &TableConfig,
    path: &JsonPath,
) -> Result<()> {
    resolve::check_table_configuration(table, db_table, configuration).map_err(|e| {
        if e.code == Code::NotSupported {
            e.under(&JsonPath::args())
        } else {
            e.under(path)
        }
    })?;
    let mine = resolve::root_field_names(table, db_table, &configuration.custom_root_fields);
    for (other_name, other) in &cache.resolved.tables {
        if other_name == table {
            continue;
        }
        let theirs = resolve::root_field_names(
            other_name,
            &other.db,
            &other.configuration.custom_root_fields,
        );
        if let Some((key, field)) = mine
            .iter()
            .find(|(_, f)| theirs.iter().any(|(_, g)| g == f))
        {
            return Err(MetadataError::new(
                Code::ConstraintViolation,
                path.key("custom_root_fields").key(key),
                format!("the root field \"{field}\" of table \"{table}\" conflicts with a root field of table \"{other_name}\""),
            ));
        }
    }
    Ok(())
}
