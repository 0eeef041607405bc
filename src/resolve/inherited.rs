//! Inherited roles: which roles are known, the cycle rule, and the permissions an inherited role
//! derives from its parents once every table's own permissions are resolved. See
//! `docs/auth.md`, "Inherited roles".
//!
//! Roles are derived parents first, so a child reads its parents' derived rules and nesting
//! composes. Select rules combine (row filters OR'd, fields united, a field only some parents
//! allow readable only where one of those parents' filters holds); insert, update and delete
//! rules carry over only when every parent that has one has the same one, and a disagreement is
//! reported as a conflict ([`Resolution::conflicts`]) rather than an inconsistency.

use super::*;
use crate::metadata::types::{InheritedRole, Metadata};
use std::collections::{BTreeMap, HashSet};

/// Every role a permission or an inherited role's definition names in `metadata`: the roles an
/// inherited role may name as parents.
pub fn known_roles(metadata: &Metadata) -> BTreeSet<&str> {
    let mut known = BTreeSet::new();
    for t in &metadata.tables {
        known.extend(t.insert_permissions.iter().map(|p| p.role.0.as_str()));
        known.extend(t.select_permissions.iter().map(|p| p.role.0.as_str()));
        known.extend(t.update_permissions.iter().map(|p| p.role.0.as_str()));
        known.extend(t.delete_permissions.iter().map(|p| p.role.0.as_str()));
    }
    for a in &metadata.actions {
        known.extend(a.permissions.iter().map(|p| p.role.0.as_str()));
    }
    known.extend(
        metadata
            .inherited_roles
            .iter()
            .map(|r| r.role_name.0.as_str()),
    );
    known
}

/// The message naming the parents of `role` that are not known roles, if any.
pub fn missing_parents_message(role: &InheritedRole, known: &BTreeSet<&str>) -> Option<String> {
    let mut missing: Vec<&str> = role
        .role_set
        .0
        .iter()
        .map(|p| p.0.as_str())
        .filter(|p| !known.contains(p))
        .collect();
    if missing.is_empty() {
        return None;
    }
    missing.sort_unstable();
    Some(format!(
        "the following parent role(s) are not found: {} which are required to construct the inherited role: \"{}\"",
        missing.join(", "),
        role.role_name
    ))
}

/// `found cycle(s) in roles: [...]` when the parents of `roles` form cycles: one JSON array
/// per strongly connected component, ordered by its smallest name, each walked from that name
/// through the smallest parent in the component back to it.
pub fn cycles_message(roles: &[InheritedRole]) -> Option<String> {
    let graph: BTreeMap<&str, Vec<&str>> = roles
        .iter()
        .map(|r| {
            let mut parents: Vec<&str> = r.role_set.0.iter().map(|p| p.0.as_str()).collect();
            parents.sort_unstable();
            (r.role_name.0.as_str(), parents)
        })
        .collect();
    let mut cycles: Vec<Vec<&str>> = Vec::new();
    for component in components(&graph) {
        let start = component[0];
        let self_loop = graph.get(start).is_some_and(|p| p.contains(&start));
        if component.len() == 1 && !self_loop {
            continue;
        }
        cycles.push(walk(&graph, &component, start));
    }
    if cycles.is_empty() {
        return None;
    }
    cycles.sort();
    let arrays: Vec<String> = cycles
        .iter()
        .map(|c| serde_json::to_string(c).unwrap_or_default())
        .collect();
    Some(format!("found cycle(s) in roles: {}", arrays.join(", ")))
}

/// The strongly connected components of `graph` (Tarjan), each sorted by name.
fn components<'a>(graph: &BTreeMap<&'a str, Vec<&'a str>>) -> Vec<Vec<&'a str>> {
    struct Tarjan<'a, 'g> {
        graph: &'g BTreeMap<&'a str, Vec<&'a str>>,
        index: HashMap<&'a str, (usize, usize)>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<&'a str>>,
    }
    impl<'a> Tarjan<'a, '_> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, (n, n));
            self.stack.push(v);
            self.on_stack.insert(v);
            let parents = self.graph.get(v).cloned().unwrap_or_default();
            for w in parents {
                if !self.graph.contains_key(w) {
                    continue; // a plain role: no parents, never on a cycle
                }
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low_w = self.index[w].1;
                    let entry = self.index.entry(v).or_default();
                    entry.1 = entry.1.min(low_w);
                } else if self.on_stack.contains(w) {
                    let index_w = self.index[w].0;
                    let entry = self.index.entry(v).or_default();
                    entry.1 = entry.1.min(index_w);
                }
            }
            let (index, low) = self.index[v];
            if index == low {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                component.sort_unstable();
                self.out.push(component);
            }
        }
    }
    let mut t = Tarjan {
        graph,
        index: HashMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.out
}

/// The cycle through `start` inside `component`: always to the smallest parent in the
/// component, or, where that would go round without reaching `start`, by the shortest way back.
fn walk<'a>(
    graph: &BTreeMap<&'a str, Vec<&'a str>>,
    component: &[&'a str],
    start: &'a str,
) -> Vec<&'a str> {
    let inside = |v: &str| -> Vec<&'a str> {
        graph
            .get(v)
            .map(|ps| {
                ps.iter()
                    .copied()
                    .filter(|p| component.contains(p))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut path = vec![start];
    let mut at = start;
    loop {
        let Some(next) = inside(at).first().copied() else {
            return path; // not reached for a component
        };
        if next == start {
            path.push(start);
            return path;
        }
        if path.contains(&next) {
            path.extend(shortest_back(&inside, at, start));
            return path;
        }
        path.push(next);
        at = next;
    }
}

/// The nodes after `from` on a shortest way to `to` (breadth first, smallest names first).
fn shortest_back<'a>(
    inside: &dyn Fn(&str) -> Vec<&'a str>,
    from: &'a str,
    to: &'a str,
) -> Vec<&'a str> {
    let mut previous: HashMap<&'a str, &'a str> = HashMap::new();
    let mut queue = std::collections::VecDeque::from([from]);
    while let Some(v) = queue.pop_front() {
        for w in inside(v) {
            if w == to {
                let mut way = vec![to];
                let mut at = v;
                while at != from {
                    way.push(at);
                    at = previous[at];
                }
                way.reverse();
                return way;
            }
            if w != from && !previous.contains_key(w) {
                previous.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    vec![to]
}

/// The inherited roles in an order where parents come first (roles on a cycle are left out:
/// the operations refuse cycles).
fn parents_first(roles: &[InheritedRole]) -> Vec<&InheritedRole> {
    let by_name: HashMap<&str, &InheritedRole> =
        roles.iter().map(|r| (r.role_name.0.as_str(), r)).collect();
    let mut done: HashSet<&str> = HashSet::new();
    let mut out = Vec::new();
    // Each pass adds the roles whose inherited parents are all placed; a pass adding none
    // leaves only roles on (or behind) a cycle.
    loop {
        let before = out.len();
        for r in roles {
            let name = r.role_name.0.as_str();
            if done.contains(name) {
                continue;
            }
            let ready = r
                .role_set
                .0
                .iter()
                .all(|p| !by_name.contains_key(p.0.as_str()) || done.contains(p.0.as_str()));
            if ready {
                done.insert(name);
                out.push(r);
            }
        }
        if out.len() == before {
            return out;
        }
    }
}

/// Derives the permissions of every consistent inherited role, reporting roles whose parents
/// are not known as inconsistent and disagreeing parents as conflicts.
pub(super) fn derive_roles(metadata: &Metadata, cache: &mut Resolution) {
    if metadata.inherited_roles.is_empty() {
        return;
    }
    let known = known_roles(metadata);
    for role in parents_first(&metadata.inherited_roles) {
        let name = role.role_name.0.as_str();
        if let Some(reason) = missing_parents_message(role, &known) {
            cache.inconsistencies.push(Inconsistency {
                object: ObjectId::InheritedRole(name.to_owned()),
                kind: "inherited_role",
                definition: json!(role),
                reason,
                conflict: false,
            });
            continue;
        }
        let parents: Vec<&str> = role.role_set.0.iter().map(|p| p.0.as_str()).collect();
        let tables: Vec<QualifiedTable> = cache.resolved.tables.keys().cloned().collect();
        for table in tables {
            let Some(t) = cache.resolved.tables.get(&table) else {
                continue;
            };
            let own = t.permissions.get(name).cloned().unwrap_or_default();
            let (derived, conflicts) = derive_table(t, &parents, own);
            for kind in conflicts {
                cache.conflicts.push(conflict(role, &table, kind));
            }
            let empty = derived.select.is_none()
                && derived.insert.is_none()
                && derived.update.is_none()
                && derived.delete.is_none();
            if empty {
                continue;
            }
            if let Some(t) = cache.resolved.table_mut(&table) {
                t.permissions.insert(name.to_owned(), derived);
            }
        }
        for action in &mut cache.resolved.actions {
            if parents.iter().any(|p| action.allows(p)) && !action.allows(name) {
                action.derived_roles.push(name.to_owned());
            }
        }
        for function in &mut cache.resolved.functions {
            if parents.iter().any(|p| function.granted(p)) && !function.granted(name) {
                function.roles.push(name.to_owned());
            }
        }
        cache.resolved.roles.insert(name.to_owned());
    }
}

/// A permission an inherited role does not get because its parents' disagree.
#[derive(Debug, Clone, PartialEq)]
pub struct Conflict {
    /// The inherited role.
    pub role: String,
    /// `{"table", "source", "permission_type"}`.
    pub entity: Value,
    /// The role's definition.
    pub definition: Value,
    pub reason: String,
}

impl Conflict {
    /// Wire `type`.
    pub const KIND: &'static str = "inherited role permission inconsistency";
}

/// The conflict item of `role` on `(table, kind)`.
fn conflict(role: &InheritedRole, table: &QualifiedTable, kind: PermissionKind) -> Conflict {
    let entity = if table.schema == "public" {
        table.name.clone()
    } else {
        format!("{}.{}", table.schema, table.name)
    };
    let name = &role.role_name.0;
    Conflict {
        role: name.clone(),
        reason: format!(
            "Could not inherit permission for the role '{name}' for the entity: '{} permission, table: {entity}, source: 'default''",
            kind.as_str()
        ),
        entity: json!({"table": entity, "source": "default", "permission_type": kind.as_str()}),
        definition: json!(role),
    }
}

/// The permissions of an inherited role with `parents` on table `t`, its own rules (`own`)
/// kept, and the kinds whose parents disagree.
fn derive_table(
    t: &ResolvedTable,
    parents: &[&str],
    mut own: RolePermissions,
) -> (RolePermissions, Vec<PermissionKind>) {
    let of: Vec<&RolePermissions> = parents
        .iter()
        .filter_map(|p| t.permissions.get(*p))
        .collect();
    let mut conflicts = Vec::new();
    if own.select.is_none() {
        let selects: Vec<&SelectRule> = of.iter().filter_map(|p| p.select.as_ref()).collect();
        own.select = derive_select(t, &selects);
    }
    if own.insert.is_none() {
        let rules: Vec<&InsertRule> = of.iter().filter_map(|p| p.insert.as_ref()).collect();
        match agreed(&rules, |r| normal_insert(t, r)) {
            Ok(rule) => own.insert = rule,
            Err(()) => conflicts.push(PermissionKind::Insert),
        }
    }
    if own.update.is_none() {
        let rules: Vec<&UpdateRule> = of.iter().filter_map(|p| p.update.as_ref()).collect();
        match agreed(&rules, |r| normal_update(t, r)) {
            Ok(rule) => own.update = rule,
            Err(()) => conflicts.push(PermissionKind::Update),
        }
    }
    if own.delete.is_none() {
        let rules: Vec<&DeleteRule> = of.iter().filter_map(|p| p.delete.as_ref()).collect();
        match agreed(&rules, |r| normal(&r.filter)) {
            Ok(rule) => own.delete = rule,
            Err(()) => conflicts.push(PermissionKind::Delete),
        }
    }
    (own, conflicts)
}

/// The one rule every parent that has one agrees on (`None` when none has one), or `Err` when
/// they disagree after normalisation.
fn agreed<R: Clone>(rules: &[&R], key: impl Fn(&R) -> String) -> Result<Option<R>, ()> {
    let Some(first) = rules.first() else {
        return Ok(None);
    };
    let first_key = key(first);
    if rules.iter().skip(1).all(|r| key(r) == first_key) {
        Ok(Some((*first).clone()))
    } else {
        Err(())
    }
}

/// The combined select rule of parents `selects` (see the module's notes).
fn derive_select(t: &ResolvedTable, selects: &[&SelectRule]) -> Option<SelectRule> {
    if selects.is_empty() {
        return None;
    }
    // Each field with, per parent allowing it, the condition under which that parent shows
    // it (`None`: wherever the parent shows the row).
    let mut fields: IndexMap<String, Vec<BoolExp>> = IndexMap::new();
    let mut plain_everywhere: BTreeMap<String, usize> = BTreeMap::new();
    let columns = |s: &SelectRule| -> Vec<String> {
        t.db.columns
            .iter()
            .filter(|c| s.columns.contains(&c.name))
            .map(|c| c.name.clone())
            .collect()
    };
    for s in selects {
        let names = columns(s)
            .into_iter()
            .chain(s.computed_fields.iter().cloned());
        for name in names {
            let condition = s
                .cells
                .get(&name)
                .cloned()
                .unwrap_or_else(|| s.filter.clone());
            if !s.cells.contains_key(&name) {
                *plain_everywhere.entry(name.clone()).or_default() += 1;
            }
            fields.entry(name).or_default().push(condition);
        }
    }
    let mut cells = IndexMap::new();
    let always = |c: &BoolExp| matches!(c, BoolExp::And(parts) if parts.is_empty());
    for (name, conditions) in &fields {
        // Plain when every parent shows it wherever it shows the row, or one shows it on
        // every row of the table.
        if plain_everywhere.get(name) == Some(&selects.len()) || conditions.iter().any(always) {
            continue;
        }
        cells.insert(name.clone(), or(conditions.clone()));
    }
    let column_names: Vec<String> =
        t.db.columns
            .iter()
            .filter(|c| fields.contains_key(&c.name))
            .map(|c| c.name.clone())
            .collect();
    let computed_fields: Vec<String> = fields
        .keys()
        .filter(|f| t.db.column(f).is_none())
        .cloned()
        .collect();
    Some(SelectRule {
        columns: Columns::List(column_names),
        computed_fields,
        filter: or(selects.iter().map(|s| s.filter.clone()).collect()),
        limit: selects.iter().filter_map(|s| s.limit).max(),
        allow_aggregations: selects.iter().any(|s| s.allow_aggregations),
        query_root_fields: union_of(selects.iter().map(|s| s.query_root_fields.as_ref())),
        subscription_root_fields: union_of(
            selects.iter().map(|s| s.subscription_root_fields.as_ref()),
        ),
        cells,
    })
}

/// The root fields any parent gets: `None` (every field) when a parent has no list, else the
/// union of the lists in a fixed order.
fn union_of<'a, F: Copy + Eq + std::hash::Hash + Ord + 'a>(
    lists: impl Iterator<Item = Option<&'a Vec<F>>>,
) -> Option<Vec<F>> {
    let mut union = std::collections::BTreeSet::new();
    for list in lists {
        union.extend(list?.iter().copied());
    }
    Some(union.into_iter().collect())
}

/// `a OR b OR …`, without a needless wrapper for one operand.
fn or(mut parts: Vec<BoolExp>) -> BoolExp {
    if parts.len() == 1 {
        return parts.remove(0);
    }
    BoolExp::Or(parts)
}

/// A comparable form of an insert rule: columns as a set (all columns when unrestricted),
/// presets by column, `check` normalised, `backend_only`.
fn normal_insert(t: &ResolvedTable, r: &InsertRule) -> String {
    let columns = column_set(t, r.columns.as_ref().unwrap_or(&Columns::All));
    format!(
        "{columns:?}|{}|{}|{}",
        presets(&r.presets),
        normal(&r.check),
        r.backend_only
    )
}

/// A comparable form of an update rule; an absent `check` equals `{}`.
fn normal_update(t: &ResolvedTable, r: &UpdateRule) -> String {
    let check = r.check.clone().unwrap_or(BoolExp::And(Vec::new()));
    format!(
        "{:?}|{}|{}|{}",
        column_set(t, &r.columns),
        presets(&r.presets),
        normal(&r.filter),
        normal(&check)
    )
}

fn column_set(t: &ResolvedTable, columns: &Columns) -> BTreeSet<String> {
    t.db.columns
        .iter()
        .filter(|c| columns.contains(&c.name))
        .map(|c| c.name.clone())
        .collect()
}

fn presets(presets: &[Preset]) -> String {
    let mut out: Vec<String> = presets.iter().map(|p| format!("{p:?}")).collect();
    out.sort();
    out.join(",")
}

/// A comparable text of a boolean expression: nested `AND`s and `OR`s flattened, their
/// operands as sets, one column's several conditions as separate operands.
fn normal(e: &BoolExp) -> String {
    format!("{:?}", normalise(e))
}

fn normalise(e: &BoolExp) -> BoolExp {
    fn operands(parts: &[BoolExp], and: bool) -> Vec<BoolExp> {
        let mut out: Vec<BoolExp> = Vec::new();
        for p in parts {
            match (normalise(p), and) {
                (BoolExp::And(inner), true) | (BoolExp::Or(inner), false) => out.extend(inner),
                (other, _) => out.push(other),
            }
        }
        let mut keyed: Vec<(String, BoolExp)> =
            out.into_iter().map(|p| (format!("{p:?}"), p)).collect();
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        keyed.dedup_by(|a, b| a.0 == b.0);
        keyed.into_iter().map(|(_, p)| p).collect()
    }
    let single = |mut parts: Vec<BoolExp>, and: bool| {
        if parts.len() == 1 {
            parts.remove(0)
        } else if and {
            BoolExp::And(parts)
        } else {
            BoolExp::Or(parts)
        }
    };
    match e {
        BoolExp::And(parts) => single(operands(parts, true), true),
        BoolExp::Or(parts) => single(operands(parts, false), false),
        BoolExp::Not(inner) => BoolExp::Not(Box::new(normalise(inner))),
        BoolExp::Exists { table, filter } => BoolExp::Exists {
            table: table.clone(),
            filter: Box::new(normalise(filter)),
        },
        BoolExp::Related {
            target,
            mapping,
            filter,
        } => BoolExp::Related {
            target: target.clone(),
            mapping: mapping.clone(),
            filter: Box::new(normalise(filter)),
        },
        BoolExp::Column { column, conditions } if conditions.len() > 1 => {
            let parts: Vec<BoolExp> = conditions
                .iter()
                .map(|c| BoolExp::Column {
                    column: column.clone(),
                    conditions: vec![c.clone()],
                })
                .collect();
            single(operands(&parts, true), true)
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(name: &str, parents: &[&str]) -> InheritedRole {
        serde_json::from_value(json!({"role_name": name, "role_set": parents})).unwrap()
    }

    #[test]
    fn the_cycle_message_walks_from_the_smallest_role() {
        let roles = [
            role("manager_employee", &["manager", "employee"]),
            role("circular_role", &["intermediate_circular_role_2", "author"]),
            role(
                "intermediate_circular_role_2",
                &["intermediate_circular_role_1", "employee"],
            ),
            role(
                "intermediate_circular_role_1",
                &["manager_employee", "circular_role"],
            ),
        ];
        assert_eq!(
            cycles_message(&roles).as_deref(),
            Some(
                r#"found cycle(s) in roles: ["circular_role","intermediate_circular_role_2","intermediate_circular_role_1","circular_role"]"#
            )
        );
        let acyclic = [role("a", &["b"]), role("b", &["c"])];
        assert_eq!(cycles_message(&acyclic), None);
        let two = [
            role("z", &["y"]),
            role("y", &["z"]),
            role("b", &["a"]),
            role("a", &["b"]),
        ];
        assert_eq!(
            cycles_message(&two).as_deref(),
            Some(r#"found cycle(s) in roles: ["a","b","a"], ["y","z","y"]"#)
        );
        // The smallest parent loops without reaching the start: the walk goes back the
        // shortest way.
        let detour = [
            role("a", &["b"]),
            role("b", &["c"]),
            role("c", &["b", "d"]),
            role("d", &["a"]),
        ];
        assert_eq!(
            cycles_message(&detour).as_deref(),
            Some(r#"found cycle(s) in roles: ["a","b","c","d","a"]"#)
        );
    }

    #[test]
    fn parents_come_before_children() {
        let roles = [role("c", &["b"]), role("b", &["a", "x"]), role("a", &["x"])];
        let order: Vec<&str> = parents_first(&roles)
            .iter()
            .map(|r| r.role_name.0.as_str())
            .collect();
        assert_eq!(order, ["a", "b", "c"]);
    }

    #[test]
    fn rules_that_differ_only_in_form_are_equal() {
        let col = |c: &str, v: i64| BoolExp::Column {
            column: c.into(),
            conditions: vec![Condition::Compare {
                op: CompareOp::Eq,
                value: RuleValue::Literal(json!(v)),
                cast: crate::db_model::PgType::Integer,
            }],
        };
        let a = BoolExp::And(vec![col("a", 1), BoolExp::And(vec![col("b", 2)])]);
        let b = BoolExp::And(vec![col("b", 2), col("a", 1), col("a", 1)]);
        assert_eq!(normal(&a), normal(&b));
        let c = BoolExp::Or(vec![col("b", 2), col("a", 1)]);
        assert_ne!(normal(&a), normal(&c));
    }
}
