//! The tracked functions a role may call (`docs/functions.md`, "Who sees a function"): a
//! select permission on the returned table always, a grant for mutation-exposed functions,
//! and for query-exposed ones a grant only when permissions are not inferred; the aggregate
//! field also needs the table's aggregations.

use super::*;
use crate::metadata::types::ExposedAs;
use crate::resolve::functions::ResolvedFunction;

/// The functions `role` may call, and their root fields: (query fields, mutation fields), each
/// naming the function by its position in the returned list.
pub(super) fn visible(
    resolved: &Resolved,
    role: &str,
    tables: &IndexMap<QualifiedTable, RoleTable>,
    settings: &ModelSettings,
) -> Vec<ResolvedFunction> {
    let admin = role == ADMIN;
    resolved
        .functions
        .iter()
        .filter(|f| {
            let granted = admin
                || f.granted(role)
                || (f.exposed_as == ExposedAs::Query && settings.infer_function_permissions);
            granted && tables.contains_key(&f.returns)
        })
        .cloned()
        .collect()
}

/// Adds the root fields of `functions` to the query and subscription roots, and answers the
/// mutation root's fields (by name, the function's position).
pub(super) fn add_roots(
    functions: &[ResolvedFunction],
    tables: &IndexMap<QualifiedTable, RoleTable>,
    query: &mut IndexMap<String, RootField>,
    subscription: &mut IndexMap<String, RootField>,
) -> IndexMap<String, usize> {
    let mut mutations = IndexMap::new();
    for (i, f) in functions.iter().enumerate() {
        let root = |kind| RootField {
            kind,
            table: f.returns.clone(),
        };
        match f.exposed_as {
            ExposedAs::Mutation => {
                mutations.insert(f.field.clone(), i);
            }
            ExposedAs::Query => {
                query.insert(f.field.clone(), root(RootKind::Function(i)));
                subscription.insert(f.field.clone(), root(RootKind::Function(i)));
                let aggregations = tables.get(&f.returns).is_some_and(|t| t.aggregations);
                if let (Some(field), true) = (&f.aggregate_field, aggregations) {
                    query.insert(field.clone(), root(RootKind::FunctionAggregate(i)));
                    subscription.insert(field.clone(), root(RootKind::FunctionAggregate(i)));
                }
            }
        }
    }
    mutations
}
