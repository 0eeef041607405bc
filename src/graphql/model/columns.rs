//! Facts about columns that every part of a role's model uses: the GraphQL scalar of a Postgres
//! type, enum-table columns, and which columns aggregate and order.

use super::RoleColumn;
use crate::db_model::DbColumn;
use crate::metadata::types::QualifiedTable;
use crate::resolve::{Resolved, ResolvedTable, TypeFamily};
use indexmap::IndexMap;

/// The GraphQL scalar for a Postgres column's type (`docs/graphql.md`, "Scalars").
pub fn scalar_for(column: &DbColumn) -> String {
    scalar_for_type(&column.type_name)
}

/// The GraphQL scalar for a Postgres type name (`pg_type.typname`).
pub fn scalar_for_type(name: &str) -> String {
    crate::db_model::graphql_scalar(name)
}

fn is_numeric_scalar(scalar: &str) -> bool {
    matches!(
        scalar,
        "Int" | "smallint" | "bigint" | "Float" | "float8" | "numeric" | "money"
    )
}

/// Whether a column can be a stream's cursor: its type has a default b-tree ordering (numbers,
/// text, dates and times, `uuid`, `boolean`, `jsonb`, native enums and a few others), so
/// `col > $cursor` and `ORDER BY col` mean something. `json`, `xml`, geometric types,
/// arrays and composites are left out.
fn is_cursor_type(column: &DbColumn) -> bool {
    column.type_kind == "e"
        || matches!(
            column.type_name.as_str(),
            "int2"
                | "int4"
                | "int8"
                | "float4"
                | "float8"
                | "numeric"
                | "money"
                | "oid"
                | "text"
                | "varchar"
                | "bpchar"
                | "char"
                | "name"
                | "citext"
                | "date"
                | "time"
                | "timetz"
                | "timestamp"
                | "timestamptz"
                | "interval"
                | "uuid"
                | "bool"
                | "jsonb"
                | "bytea"
                | "inet"
                | "cidr"
                | "macaddr"
                | "macaddr8"
                | "bit"
                | "varbit"
                | "pg_lsn"
        )
}

fn is_orderable_scalar(scalar: &str, column: &DbColumn) -> bool {
    is_numeric_scalar(scalar)
        || TypeFamily::of(column) == TypeFamily::Text
        || matches!(
            column.type_name.as_str(),
            "date" | "time" | "timetz" | "timestamp" | "timestamptz" | "interval" | "uuid"
        )
}

/// Enum tables: table → (GraphQL enum name, values).
pub type EnumTables = IndexMap<QualifiedTable, (String, Vec<(String, Option<String>)>)>;

pub(super) fn enum_tables(resolved: &Resolved) -> EnumTables {
    resolved
        .tables
        .iter()
        .filter_map(|(name, t)| {
            let values = t.enum_values.clone()?;
            Some((
                name.clone(),
                (format!("{}_enum", name.graphql_base_name()), values),
            ))
        })
        .collect()
}

/// The enum type of a column that references an enum table's key.
fn enum_of_column(table: &ResolvedTable, column: &str, enums: &EnumTables) -> Option<String> {
    table.db.foreign_keys().find_map(|fk| {
        if fk.columns.len() != 1 || fk.columns[0] != column {
            return None;
        }
        enums
            .get(&fk.referenced_table()?)
            .map(|(name, _)| name.clone())
    })
}

/// The role-facing description of a column (scalar, enum type, numeric/orderable flags).
pub(super) fn scalar_for_column(
    table: &ResolvedTable,
    column: &DbColumn,
    enums: &EnumTables,
) -> RoleColumn {
    let base = scalar_for(column);
    let enum_type = enum_of_column(table, &column.name, enums);
    // One family per scalar, as comparison types are per scalar: `String` also stands for
    // types whose names are not GraphQL names.
    let family = match (&enum_type, base.as_str()) {
        (Some(_), _) => TypeFamily::Enum,
        (None, "String") => TypeFamily::Text,
        (None, _) => TypeFamily::of(column),
    };
    RoleColumn {
        column: column.name.clone(),
        pg_type: column.pg_type(),
        nullable: column.nullable,
        numeric: is_numeric_scalar(&base),
        orderable: is_orderable_scalar(&base, column),
        cursor: is_cursor_type(column),
        family,
        scalar: enum_type.unwrap_or(base),
    }
}
