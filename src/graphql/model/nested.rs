//! Which relationships a role's nested updates may follow (`docs/graphql.md`, "Nested
//! updates"): the fields of `<t>_nested_update_input` for every table that has one.
//!
//! A relationship from `t` to `r` is offered when the role can select `r` and the input it takes
//! would not be empty: an object relationship needs `r`'s update operators or `r`'s own nested
//! input, an array relationship also counts `r`'s delete and insert permissions. Tables reach
//! each other in cycles (an article's author's articles), so the tables with a non-empty input
//! are those whose permissions give them one and those that reach one through relationships.

use super::{RoleRelationship, RoleTable, RoleWrite};
use crate::metadata::types::QualifiedTable;
use crate::resolve::{RelationshipKind, Resolved};
use indexmap::IndexMap;
use std::collections::{HashMap, HashSet, VecDeque};

/// What `<r>_obj_rel_update_input` and `<r>_arr_rel_update_input` offer for a target `r`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NestedTarget {
    /// The update operators of `update_<r>` (an update permission with a writable column).
    pub update: bool,
    /// `_delete` (a delete permission).
    pub delete: bool,
    /// `_insert` (an active insert permission).
    pub insert: bool,
    /// `_nested` (`<r>_nested_update_input` exists).
    pub nested: bool,
}

impl NestedTarget {
    /// Whether the input type of a relationship of this kind has a field besides `where`.
    pub fn offered(&self, kind: RelationshipKind) -> bool {
        match kind {
            RelationshipKind::Object => self.update || self.nested,
            RelationshipKind::Array => self.update || self.delete || self.insert || self.nested,
        }
    }
}

/// The relationships of each table's `<t>_nested_update_input`, in byte order of their names
/// (the order nested entries run in); tables without one are absent.
pub(super) fn nested_updates(
    resolved: &Resolved,
    tables: &IndexMap<QualifiedTable, RoleTable>,
    writes: &IndexMap<QualifiedTable, RoleWrite>,
) -> IndexMap<QualifiedTable, Vec<RoleRelationship>> {
    // Tables whose permissions alone give them an input, then, walking relationships
    // backwards, every table that reaches one of those: one pass over the relationships.
    let mut pointing_at: HashMap<&QualifiedTable, Vec<&QualifiedTable>> = HashMap::new();
    let mut has_input: HashSet<&QualifiedTable> = HashSet::new();
    let mut reached: VecDeque<&QualifiedTable> = VecDeque::new();
    for (name, table) in &resolved.tables {
        for rel in table.relationships.values() {
            if !tables.contains_key(&rel.target) {
                continue;
            }
            pointing_at.entry(&rel.target).or_default().push(name);
            if target(writes, &rel.target, false).offered(rel.kind) && has_input.insert(name) {
                reached.push_back(name);
            }
        }
    }
    while let Some(r) = reached.pop_front() {
        for t in pointing_at.get(r).into_iter().flatten() {
            if has_input.insert(t) {
                reached.push_back(t);
            }
        }
    }
    let mut out = IndexMap::new();
    for (name, table) in &resolved.tables {
        if !has_input.contains(name) {
            continue;
        }
        let mut relationships: Vec<RoleRelationship> = table
            .relationships
            .values()
            .filter(|rel| {
                tables.contains_key(&rel.target)
                    && target(writes, &rel.target, has_input.contains(&rel.target))
                        .offered(rel.kind)
            })
            .map(|rel| RoleRelationship {
                name: rel.name.clone(),
                kind: rel.kind,
                target: rel.target.clone(),
                mapping: rel.mapping.clone(),
            })
            .collect();
        relationships.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        out.insert(name.clone(), relationships);
    }
    out
}

/// What a nested update may do to rows of `r`, once the nested inputs are known.
pub fn nested_target(
    writes: &IndexMap<QualifiedTable, RoleWrite>,
    nested: &IndexMap<QualifiedTable, Vec<RoleRelationship>>,
    r: &QualifiedTable,
) -> NestedTarget {
    target(writes, r, nested.contains_key(r))
}

/// What the role's permissions on `r` offer; `nested`: `r` has a nested input.
fn target(
    writes: &IndexMap<QualifiedTable, RoleWrite>,
    r: &QualifiedTable,
    nested: bool,
) -> NestedTarget {
    let w = writes.get(r);
    NestedTarget {
        update: w
            .and_then(|w| w.update.as_ref())
            .is_some_and(|u| !u.columns.is_empty()),
        delete: w.is_some_and(|w| w.delete.is_some()),
        insert: w.is_some_and(|w| w.insert.is_some()),
        nested,
    }
}
