//! The GraphQL layer's rule for REST endpoints' stored documents (`docs/rest.md`): each one
//! must plan against the admin schema (tables, actions and remote schemas, as `/v1/graphql`
//! serves them to the admin), whatever its variables' values.

use super::{model, plan, remote, remote_join, remote_to_table, typegen};
use crate::resolve::Resolved;

/// For each document, why it does not validate against the admin schema (`None`: it does).
pub fn check_documents(resolved: &Resolved, documents: &[&str]) -> Vec<Option<String>> {
    if documents.is_empty() {
        return Vec::new();
    }
    let admin = model::build(resolved, model::ADMIN);
    let mut types = typegen::build(&admin);
    let remotes = remote::parse_all(resolved);
    for parsed in &remotes {
        remote::merge(&mut types, parsed);
    }
    remote_join::add_fields(&mut types, &admin, &remotes);
    remote_to_table::add_fields(&mut types, &admin);
    let limits = plan::Limits {
        max_depth: usize::MAX,
        max_root_fields: usize::MAX,
    };
    documents
        .iter()
        .map(|text| {
            let checked = plan::prepare(text, None)
                .and_then(|prepared| plan::validate(&admin, &types, resolved, &prepared, limits));
            checked.err().map(|e| e.to_string())
        })
        .collect()
}
