//! The write side of a role: which tables it may insert into, update and delete from, with
//! which columns, presets and checks, and the mutation root fields that follow
//! (`docs/graphql.md`, "Mutations").

use super::columns::{scalar_for_column, EnumTables};
use super::{RoleColumn, RoleRelationship, RoleTable, ADMIN};
use crate::metadata::types::{Columns, GraphQLName, QualifiedTable};
use crate::resolve::{BoolExp, Preset, Resolved, ResolvedTable};
use indexmap::IndexMap;

/// Insert rules of a role on a table.
#[derive(Debug, Clone)]
pub struct RoleInsert {
    /// Insertable columns by GraphQL name (presets excluded).
    pub columns: IndexMap<String, RoleColumn>,
    pub presets: Vec<Preset>,
    /// Check on every inserted row (`None`: none, admin).
    pub check: Option<BoolExp>,
}

/// Update rules of a role on a table.
#[derive(Debug, Clone)]
pub struct RoleUpdate {
    /// Updatable columns by GraphQL name (presets excluded).
    pub columns: IndexMap<String, RoleColumn>,
    pub presets: Vec<Preset>,
    /// Which rows may be updated (`None`: all, admin).
    pub filter: Option<BoolExp>,
    /// Post-condition on updated rows.
    pub check: Option<BoolExp>,
}

impl RoleUpdate {
    /// Some updatable column is `jsonb`: the jsonb operators (`_append`, …) exist.
    pub fn has_jsonb(&self) -> bool {
        self.columns.values().any(|c| c.scalar == "jsonb")
    }

    /// Some updatable column is numeric: `_inc` exists.
    pub fn has_numeric(&self) -> bool {
        self.columns.values().any(|c| c.numeric)
    }
}

/// What a role may write to one table.
#[derive(Debug, Clone)]
pub struct RoleWrite {
    pub name: QualifiedTable,
    /// GraphQL base name.
    pub type_name: String,
    /// Insert rules (when insert is allowed and Postgres can insert).
    pub insert: Option<RoleInsert>,
    pub update: Option<RoleUpdate>,
    /// Delete filter (`Some(None)`: delete without filter, admin).
    pub delete: Option<Option<BoolExp>>,
    /// Unique and primary-key constraints (GraphQL-valid names).
    pub constraints: Vec<String>,
    /// Primary-key columns (GraphQL name, column) when the `_by_pk` fields may exist.
    pub primary_key: Option<Vec<(String, RoleColumn)>>,
    /// The table's primary key as (Postgres column, type), visible or not; `None` for views
    /// and tables without one. A nested update reads its answer back by it.
    pub key: Option<Vec<(String, crate::db_model::PgType)>>,
    /// Relationships usable in nested inserts (targets the role may insert into).
    pub insert_relationships: IndexMap<String, RoleRelationship>,
    /// The role may select from this table (returning, `_one`, `_by_pk`).
    pub selectable: bool,
}

/// What a mutation root field does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MutationKind {
    /// `insert_<t>`.
    Insert,
    /// `insert_<t>_one`.
    InsertOne,
    /// `update_<t>`.
    Update,
    /// `update_<t>_by_pk`.
    UpdateByPk,
    /// `update_<t>_many`.
    UpdateMany,
    /// `delete_<t>`.
    Delete,
    /// `delete_<t>_by_pk`.
    DeleteByPk,
}

/// A mutation root field.
#[derive(Debug, Clone)]
pub struct MutationRoot {
    pub kind: MutationKind,
    pub table: QualifiedTable,
}

/// Writable columns by GraphQL name: allowed by `columns`, not generated, not preset, and
/// with a GraphQL name.
fn writable_columns(
    table: &ResolvedTable,
    allowed: &Columns,
    presets: &[Preset],
    enums: &EnumTables,
) -> IndexMap<String, RoleColumn> {
    table
        .db
        .columns
        .iter()
        .filter(|c| {
            allowed.contains(&c.name) && !c.generated && !presets.iter().any(|p| p.column == c.name)
        })
        .map(|c| {
            let field = table
                .configuration
                .custom_column_names
                .get(&c.name)
                .map(|n| n.0.clone())
                .unwrap_or_else(|| c.name.clone());
            (field, scalar_for_column(table, c, enums))
        })
        // Left out without a GraphQL name, as on the read side.
        .filter(|(field, _)| GraphQLName::is_servable(field))
        .collect()
}

/// Builds the write side of a role. `backend_flagged`: the request is trusted backend-only.
pub(super) fn build(
    resolved: &Resolved,
    role: &str,
    selectable: &IndexMap<QualifiedTable, RoleTable>,
    enums: &EnumTables,
    backend_flagged: bool,
) -> (
    IndexMap<QualifiedTable, RoleWrite>,
    IndexMap<String, MutationRoot>,
) {
    let mut writes: IndexMap<QualifiedTable, RoleWrite> = resolved
        .tables
        .iter()
        .filter_map(|(name, table)| {
            let write = role_write(name, table, role, selectable, enums, backend_flagged)?;
            Some((name.clone(), write))
        })
        .collect();
    // Nested inserts may follow relationships toward tables the role can insert into.
    let insertable: Vec<QualifiedTable> = writes
        .values()
        .filter(|w| w.insert.is_some())
        .map(|w| w.name.clone())
        .collect();
    for w in writes.values_mut() {
        let Some(table) = resolved.tables.get(&w.name) else {
            continue;
        };
        w.insert_relationships = table
            .relationships
            .values()
            .filter(|r| insertable.contains(&r.target))
            .map(|r| {
                (
                    r.name.clone(),
                    RoleRelationship {
                        name: r.name.clone(),
                        kind: r.kind,
                        target: r.target.clone(),
                        mapping: r.mapping.clone(),
                    },
                )
            })
            .collect();
    }
    let roots = mutation_roots(resolved, &writes);
    (writes, roots)
}

/// What the role may write to one table, if anything.
fn role_write(
    name: &QualifiedTable,
    table: &ResolvedTable,
    role: &str,
    selectable: &IndexMap<QualifiedTable, RoleTable>,
    enums: &EnumTables,
    backend_flagged: bool,
) -> Option<RoleWrite> {
    let admin = role == ADMIN;
    let perms = table.permissions.get(role);
    let insert = if admin {
        table.db.is_insertable().then(|| RoleInsert {
            columns: writable_columns(table, &Columns::All, &[], enums),
            presets: Vec::new(),
            check: None,
        })
    } else {
        perms
            .and_then(|p| p.insert.as_ref())
            .filter(|p| p.backend_only == backend_flagged && table.db.is_insertable())
            .map(|p| {
                let allowed = p.columns.clone().unwrap_or(Columns::All);
                RoleInsert {
                    columns: writable_columns(table, &allowed, &p.presets, enums),
                    presets: p.presets.clone(),
                    check: Some(p.check.clone()),
                }
            })
    };
    let update = if admin {
        table.db.is_updatable().then(|| RoleUpdate {
            columns: writable_columns(table, &Columns::All, &[], enums),
            presets: Vec::new(),
            filter: None,
            check: None,
        })
    } else {
        perms
            .and_then(|p| p.update.as_ref())
            .filter(|_| table.db.is_updatable())
            .map(|p| RoleUpdate {
                columns: writable_columns(table, &p.columns, &p.presets, enums),
                presets: p.presets.clone(),
                filter: Some(p.filter.clone()),
                check: p.check.clone(),
            })
    };
    let delete = if admin {
        table.db.is_deletable().then_some(None)
    } else {
        perms
            .and_then(|p| p.delete.as_ref())
            .filter(|_| table.db.is_deletable())
            .map(|p| Some(p.filter.clone()))
    };
    if insert.is_none() && update.is_none() && delete.is_none() {
        return None;
    }
    let constraints = table
        .db
        .constraints
        .iter()
        .filter(|c| (c.kind == "p" || c.kind == "u") && GraphQLName::is_servable(&c.name))
        .map(|c| c.name.clone())
        .collect();
    let key = (!table.db.is_view())
        .then(|| table.db.primary_key())
        .flatten()
        .map(|columns| {
            columns
                .iter()
                .filter_map(|c| table.db.column(c).map(|col| (c.clone(), col.pg_type())))
                .collect()
        });
    let select = selectable.get(name);
    let primary_key = select.and_then(|s| {
        s.primary_key.as_ref().map(|pk| {
            pk.iter()
                .filter_map(|f| s.columns.get(f).map(|c| (f.clone(), c.clone())))
                .collect()
        })
    });
    Some(RoleWrite {
        name: name.clone(),
        type_name: name.graphql_base_name(),
        insert,
        update,
        delete,
        constraints,
        primary_key,
        key,
        insert_relationships: IndexMap::new(),
        selectable: select.is_some(),
    })
}

/// The mutation root fields of the writable tables, custom names applied.
fn mutation_roots(
    resolved: &Resolved,
    writes: &IndexMap<QualifiedTable, RoleWrite>,
) -> IndexMap<String, MutationRoot> {
    let mut roots = IndexMap::new();
    for (name, w) in writes {
        let Some(table) = resolved.tables.get(name) else {
            continue;
        };
        let custom = &table.configuration.custom_root_fields;
        let pick = |c: &Option<GraphQLName>, default: String| {
            c.as_ref().map(|n| n.0.clone()).unwrap_or(default)
        };
        let t = &w.type_name;
        let by_pk = w.primary_key.is_some() && !table.db.is_view();
        let mut add = |field: String, kind| {
            roots.insert(
                field,
                MutationRoot {
                    kind,
                    table: name.clone(),
                },
            );
        };
        if w.insert.is_some() {
            add(
                pick(&custom.insert, format!("insert_{t}")),
                MutationKind::Insert,
            );
            if w.selectable {
                add(
                    pick(&custom.insert_one, format!("insert_{t}_one")),
                    MutationKind::InsertOne,
                );
            }
        }
        if let Some(u) = &w.update {
            if !u.columns.is_empty() {
                add(
                    pick(&custom.update, format!("update_{t}")),
                    MutationKind::Update,
                );
                if by_pk {
                    add(
                        pick(&custom.update_by_pk, format!("update_{t}_by_pk")),
                        MutationKind::UpdateByPk,
                    );
                }
                add(
                    pick(&custom.update_many, format!("update_{t}_many")),
                    MutationKind::UpdateMany,
                );
            }
        }
        if w.delete.is_some() {
            add(
                pick(&custom.delete, format!("delete_{t}")),
                MutationKind::Delete,
            );
            if by_pk {
                add(
                    pick(&custom.delete_by_pk, format!("delete_{t}_by_pk")),
                    MutationKind::DeleteByPk,
                );
            }
        }
    }
    roots
}
