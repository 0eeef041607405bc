//! The fields remote schema → table relationships add to remote object types
//! (`docs/remote-schemas.md`, "Relationships to tables"), once the remote schemas' types are
//! merged: `<name>: <t>` (nullable, no arguments) for an object relationship;
//! `<name>(distinct_on, limit, offset, order_by, where): [<t>!]!` and, where the role may
//! aggregate the table, `<name>_aggregate(…): <t>_aggregate!` for an array relationship.

use super::model::RoleModel;
use super::typegen::list_args;
use super::types::{FieldDef, TypeDef, TypeRef, TypeSystem};
use crate::metadata::types::RemoteRelationshipType;

/// Adds the role's relationship fields to the remote object types in `types`.
pub fn add_fields(types: &mut TypeSystem, model: &RoleModel) {
    for ((type_name, name), field) in &model.to_tables {
        let Some(table) = model.tables.get(field.table()) else {
            continue;
        };
        let t = table.type_name.as_str();
        let mut def = match (field.relationship.kind, field.aggregate) {
            (RemoteRelationshipType::Object, _) => FieldDef::new(name.as_str(), TypeRef::named(t)),
            (RemoteRelationshipType::Array, false) => {
                FieldDef::new(name.as_str(), TypeRef::list_of_non_null(t))
            }
            (RemoteRelationshipType::Array, true) => {
                let aggregate = format!("{t}_aggregate");
                if types.get(&aggregate).is_none() {
                    continue;
                }
                FieldDef::new(name.as_str(), TypeRef::non_null(aggregate))
            }
        };
        if field.relationship.kind == RemoteRelationshipType::Array {
            for arg in list_args(t) {
                def = def.arg(arg);
            }
        }
        if let Some(TypeDef::Object { fields, .. }) = types.get_mut(type_name) {
            fields.entry(def.name.clone()).or_insert(def);
        }
    }
}
