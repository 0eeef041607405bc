//! The native queries a role may run (`docs/native-queries.md`, "GraphQL schema"): those whose
//! logical model it may select (the admin: all), each model read as a relation of its scalar
//! fields under the role's permission on it.

use super::*;
use crate::resolve::native_queries::{model_relation, ResolvedNativeQuery};

/// The native queries `role` may run, the views of their models by name, and their root
/// fields added to the query and subscription roots.
pub(super) fn visible(
    resolved: &Resolved,
    role: &str,
    enums: &EnumTables,
    query: &mut IndexMap<String, RootField>,
    subscription: &mut IndexMap<String, RootField>,
) -> (Vec<ResolvedNativeQuery>, IndexMap<String, RoleTable>) {
    let mut queries = Vec::new();
    let mut models: IndexMap<String, RoleTable> = IndexMap::new();
    for q in &resolved.native_queries {
        let Some(model) = resolved.logical_models.iter().find(|m| m.name == q.returns) else {
            continue;
        };
        if !models.contains_key(&model.name) {
            let Some(mut view) = read::role_table(&model.table, role, enums) else {
                continue;
            };
            view.type_name = model.name.clone();
            view.aggregations = false;
            view.fields = view
                .columns
                .iter()
                .map(|(name, c)| (name.clone(), TableField::Column(c.clone())))
                .collect();
            models.insert(model.name.clone(), view);
        }
        let root = RootField {
            kind: RootKind::NativeQuery(queries.len()),
            table: model_relation(&model.name),
        };
        query.insert(q.root_field.clone(), root.clone());
        subscription.insert(q.root_field.clone(), root);
        queries.push(q.clone());
    }
    (queries, models)
}
