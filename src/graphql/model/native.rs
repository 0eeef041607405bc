//! The native queries a role may run (`docs/native-queries.md`, "GraphQL schema"): those whose
//! logical model it may select (the admin: all), each model read as a relation of its scalar
//! fields under the role's permission on it. A query with relationships has rows of its own
//! type: the model's view with the relationships whose targets the role may read.

use super::*;
use crate::resolve::native_queries::{model_relation, QueryTarget, ResolvedNativeQuery};

/// The native queries `role` may run, the views of their models (and the models'
/// descriptions) by name, and their root fields added to the query and subscription roots.
pub(super) fn visible(
    resolved: &Resolved,
    role: &str,
    enums: &EnumTables,
    query: &mut IndexMap<String, RootField>,
    subscription: &mut IndexMap<String, RootField>,
) -> (
    Vec<ResolvedNativeQuery>,
    IndexMap<String, RoleTable>,
    IndexMap<String, ModelDocs>,
) {
    let mut queries = Vec::new();
    let mut models: IndexMap<String, RoleTable> = IndexMap::new();
    let mut docs = IndexMap::new();
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
            let fields = (model.scalars.iter())
                .filter_map(|f| Some((f.name.clone(), f.description.clone()?)))
                .collect();
            let description = model.description.clone();
            docs.insert(
                model.name.clone(),
                ModelDocs {
                    description,
                    fields,
                },
            );
        }
        let root = RootField {
            kind: RootKind::NativeQuery(queries.len()),
            table: model_relation(&model.name),
        };
        query.insert(q.root_field.clone(), root.clone());
        subscription.insert(q.root_field.clone(), root);
        queries.push(q.clone());
    }
    (queries, models, docs)
}

/// The rows of each of `queries` that has relationships, by root field name.
pub(super) fn rows(
    queries: &[ResolvedNativeQuery],
    models: &IndexMap<String, RoleTable>,
    tables: &IndexMap<QualifiedTable, RoleTable>,
) -> IndexMap<String, RoleTable> {
    let mut out = IndexMap::new();
    for q in queries.iter().filter(|q| !q.relationships.is_empty()) {
        let Some(model) = models.get(&q.returns) else {
            continue;
        };
        let mut view = model.clone();
        view.type_name = q.root_field.clone();
        for r in &q.relationships {
            let field = match &r.target {
                QueryTarget::Table(table) if tables.contains_key(table) => {
                    TableField::Relationship(RoleRelationship {
                        name: r.name.clone(),
                        kind: r.kind,
                        target: table.clone(),
                        mapping: r.mapping.clone(),
                    })
                }
                QueryTarget::NativeQuery(target) => {
                    let Some(query) = queries.iter().position(|t| &t.root_field == target) else {
                        continue;
                    };
                    TableField::NativeQuery(RoleQueryRelationship {
                        name: r.name.clone(),
                        kind: r.kind,
                        query,
                        mapping: r.mapping.clone(),
                    })
                }
                // A table the role may not select.
                QueryTarget::Table(_) => continue,
            };
            view.fields.insert(r.name.clone(), field);
        }
        out.insert(q.root_field.clone(), view);
    }
    out
}
