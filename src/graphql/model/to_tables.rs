//! The remote schema → table relationships one role may follow (`docs/remote-schemas.md`,
//! "Relationships to tables"): a relationship is a field of its remote object type for every
//! role that may select the target table, and its `<name>_aggregate` companion (array
//! relationships) for roles that may also aggregate it.

use super::RoleTable;
use crate::db_model::PgType;
use crate::metadata::types::{QualifiedTable, RemoteRelationshipType};
use crate::resolve::remote_to_table::ResolvedToTable;
use crate::resolve::Resolved;
use indexmap::IndexMap;

/// One field a remote object type gains for the role.
#[derive(Debug, Clone)]
pub struct RoleToTable {
    pub relationship: ResolvedToTable,
    /// The `<name>_aggregate` field rather than `<name>`.
    pub aggregate: bool,
    /// Remote field, column, and the column's type (the remote's values are cast to it).
    pub keys: Vec<(String, String, PgType)>,
}

impl RoleToTable {
    /// The target table.
    pub fn table(&self) -> &QualifiedTable {
        &self.relationship.table
    }
}

/// The fields, by remote type and field name, for a role that selects `tables`.
pub(super) fn build(
    resolved: &Resolved,
    tables: &IndexMap<QualifiedTable, RoleTable>,
) -> IndexMap<(String, String), RoleToTable> {
    let mut out = IndexMap::new();
    for relationship in &resolved.remote_relationships {
        let (Some(table), Some(target)) = (
            tables.get(&relationship.table),
            resolved.table(&relationship.table),
        ) else {
            continue;
        };
        let keys: Vec<(String, String, PgType)> = relationship
            .mapping
            .iter()
            .filter_map(|(field, column)| {
                let ty = target.db.column(column)?.pg_type();
                Some((field.clone(), column.clone(), ty))
            })
            .collect();
        if keys.len() != relationship.mapping.len() {
            continue;
        }
        let type_name = relationship.type_name.clone();
        let mut add = |name: String, aggregate: bool| {
            out.insert(
                (type_name.clone(), name),
                RoleToTable {
                    relationship: relationship.clone(),
                    aggregate,
                    keys: keys.clone(),
                },
            );
        };
        add(relationship.name.clone(), false);
        if relationship.kind == RemoteRelationshipType::Array && table.aggregations {
            add(format!("{}_aggregate", relationship.name), true);
        }
    }
    out
}
