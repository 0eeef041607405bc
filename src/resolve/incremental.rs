//! Resolving a document from the resolution of the one it was derived from. A metadata write
//! changes a few table entries; resolving the whole document again would make each write cost
//! time in proportion to the number of tables. [`resolve_from`] resolves again only the tables
//! whose entry changed and those that read a table that changed or went away
//! ([`super::ResolvedTable::reads`]), and shares every other resolved table with the
//! resolution it starts from.
//!
//! It falls back to the full resolution when a table is added or its custom root fields change
//! and root fields clash, when the starting resolution has anything inconsistent, and when the
//! document has remote schemas or inherited roles (a role's derived permissions on a table
//! depend on which roles every other table names); roles, custom types and actions are resolved again every time.
//! The reasons are in `docs/design-notes.md`, "Incremental resolution". Debug builds (every
//! test) resolve the whole document too and check the two agree.

use super::*;
use crate::metadata::types::{Metadata, QualifiedTable, TableEntry};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Resolves `metadata` against `db` and `remotes`, starting from `before`: the resolution of
/// `previous` against the same database model. The result is what [`resolve_with`] returns.
pub fn resolve_from(
    before: &Resolution,
    previous: &Metadata,
    metadata: &Metadata,
    db: &DbModel,
    remotes: &remote::Remotes,
) -> Resolution {
    match incremental(before, previous, metadata, db, remotes) {
        Some(cache) => {
            #[cfg(debug_assertions)]
            {
                let full = resolve_with(metadata, db, remotes);
                assert_eq!(
                    format!("{cache:?}"),
                    format!("{full:?}"),
                    "resolving from an earlier resolution must equal resolving the whole document"
                );
            }
            cache
        }
        None => resolve_with(metadata, db, remotes),
    }
}

/// The resolution made from `before`, or `None` when it cannot be (see the module's notes).
fn incremental(
    before: &Resolution,
    previous: &Metadata,
    metadata: &Metadata,
    db: &DbModel,
    remotes: &remote::Remotes,
) -> Option<Resolution> {
    if !before.inconsistencies.is_empty()
        || !previous.inherited_roles.is_empty()
        || !metadata.inherited_roles.is_empty()
        || !previous.remote_schemas.is_empty()
        || !metadata.remote_schemas.is_empty()
        || before.resolved.tables.len() != previous.tables.len()
    {
        return None;
    }
    let change = Change::between(previous, metadata);
    if change.roots_moved && !root_fields_distinct(metadata, db) {
        return None;
    }
    let reached = |table: &QualifiedTable| {
        change.tables.contains(table)
            || before
                .resolved
                .tables
                .get(table)
                .is_some_and(|t| t.reads.iter().any(|r| change.tables.contains(r)))
    };
    let mut cache = Resolution::default();
    cache.resolved.tables.reserve(metadata.tables.len());
    let mut again: Vec<&TableEntry> = Vec::new();
    // Clashes were ruled out above: each table is checked against no other.
    let mut no_roots = HashMap::new();
    for entry in &metadata.tables {
        if reached(&entry.table) {
            again.push(entry);
            no_roots.clear();
            resolve_table_or_report(entry, db, &mut no_roots, &mut cache);
        } else {
            let kept = before.resolved.tables.get(&entry.table)?;
            cache
                .resolved
                .tables
                .insert(entry.table.clone(), Arc::clone(kept));
        }
    }
    // The event triggers of kept tables stay; a name taken by one of them and by a table
    // resolved again is left to the full resolution, where metadata order decides.
    cache.resolved.event_triggers = before
        .resolved
        .event_triggers
        .iter()
        .filter(|(_, t)| cache.resolved.tables.contains_key(&t.table) && !reached(&t.table))
        .map(|(name, t)| (name.clone(), t.clone()))
        .collect();
    let taken = again.iter().any(|entry| {
        entry
            .event_triggers
            .iter()
            .any(|t| cache.resolved.event_triggers.contains_key(&t.name.0))
    });
    if taken {
        return None;
    }
    resolve_table_objects(&again, db, &mut cache);
    let root_fields = match metadata.actions.is_empty() {
        true => HashMap::new(),
        false => table_root_fields(&cache.resolved),
    };
    resolve_globals(metadata, db, &root_fields, remotes, &mut cache);
    Some(cache)
}

/// Which tables a change touches.
struct Change<'m> {
    /// Tables added, edited or removed.
    tables: HashSet<&'m QualifiedTable>,
    /// Whether a table was added or its custom root fields changed: root fields must then be
    /// checked across all tables.
    roots_moved: bool,
}

impl<'m> Change<'m> {
    fn between(previous: &'m Metadata, metadata: &'m Metadata) -> Self {
        let mut old: HashMap<&QualifiedTable, &Arc<TableEntry>> =
            previous.tables.iter().map(|e| (&e.table, e)).collect();
        let mut change = Change {
            tables: HashSet::new(),
            roots_moved: false,
        };
        for entry in &metadata.tables {
            match old.remove(&entry.table) {
                Some(was) if Arc::ptr_eq(was, entry) || was == entry => {}
                Some(was) => {
                    change.tables.insert(&entry.table);
                    change.roots_moved |= was.configuration.custom_root_fields
                        != entry.configuration.custom_root_fields;
                }
                // Added (or listed twice: the check of root fields then finds the clash).
                None => {
                    change.tables.insert(&entry.table);
                    change.roots_moved = true;
                }
            }
        }
        change.tables.extend(old.into_keys());
        change
    }
}

/// Whether no two root fields of the document's tables (those in the database) are the same.
fn root_fields_distinct(metadata: &Metadata, db: &DbModel) -> bool {
    let mut seen = HashSet::with_capacity(metadata.tables.len() * 9);
    for entry in &metadata.tables {
        let name = &entry.table;
        let Some(table) = db.shared_table(&name.schema, &name.name) else {
            continue;
        };
        for (_, field) in root_field_names(name, table, &entry.configuration.custom_root_fields) {
            if !seen.insert(field) {
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db_model::{DbTable, QualifiedName};

    fn column(name: &str, attnum: i32) -> Value {
        json!({
            "name": name, "attnum": attnum, "data_type": "integer", "type_name": "int4",
            "type_schema": "pg_catalog", "type_kind": "b", "element_type": null,
            "nullable": false, "default": null, "generated": false, "identity": false,
            "comment": null
        })
    }

    /// Tables `a`, `b`, `c`, `d` (`id` keys); `b.a_id` references `a`, `c.b_id` references
    /// `b`.
    fn db() -> DbModel {
        let mut db = DbModel::default();
        let specs = [
            ("a", None),
            ("b", Some(("a_id", "a"))),
            ("c", Some(("b_id", "b"))),
            ("d", None),
        ];
        for (oid, (name, fk)) in specs.into_iter().enumerate() {
            let mut columns = vec![column("id", 1)];
            let mut constraints = vec![json!({
                "name": format!("{name}_pkey"), "kind": "p", "columns": ["id"],
                "ref_schema": null, "ref_table": null, "ref_columns": null
            })];
            if let Some((col, target)) = fk {
                columns.push(column(col, 2));
                constraints.push(json!({
                    "name": format!("{name}_{col}_fkey"), "kind": "f", "columns": [col],
                    "ref_schema": "public", "ref_table": target, "ref_columns": ["id"]
                }));
            }
            let table: DbTable = serde_json::from_value(json!({
                "oid": oid + 1, "schema": "public", "name": name, "kind": "r", "comment": null,
                "columns": columns, "constraints": constraints, "updatable_bits": 28
            }))
            .unwrap();
            db.tables
                .insert(QualifiedName::new("public", name), table.into());
        }
        db
    }

    /// `b` and `c` have an object relationship along their foreign key; `c`'s permission
    /// for `user` follows `c → b → a`.
    fn document() -> Metadata {
        serde_json::from_value(json!({"version": 2, "tables": [
            {"table": {"schema": "public", "name": "a"}},
            {"table": {"schema": "public", "name": "b"}, "object_relationships": [
                {"name": "a", "using": {"foreign_key_constraint_on": "a_id"}}]},
            {"table": {"schema": "public", "name": "c"}, "object_relationships": [
                {"name": "b", "using": {"foreign_key_constraint_on": "b_id"}}],
             "select_permissions": [{"role": "user", "permission": {
                "columns": ["id"], "filter": {"b": {"a": {"id": {"_eq": "X-Svc-User-Id"}}}}}}]},
            {"table": {"schema": "public", "name": "d"}}
        ]}))
        .unwrap()
    }

    fn name(table: &str) -> QualifiedTable {
        QualifiedTable::new("public", table)
    }

    /// Which tables of `after` are the very resolved tables of `before`.
    fn kept(before: &Resolution, after: &Resolution) -> Vec<String> {
        after
            .resolved
            .tables
            .iter()
            .filter(|(n, t)| {
                before
                    .resolved
                    .tables
                    .get(*n)
                    .is_some_and(|b| Arc::ptr_eq(b, t))
            })
            .map(|(n, _)| n.name.clone())
            .collect()
    }

    fn with_permission(metadata: &Metadata, table: &str) -> Metadata {
        let mut next = metadata.clone();
        let entry = next.table_mut(&name(table)).unwrap();
        entry.select_permissions = serde_json::from_value(json!([{"role": "editor",
            "permission": {"columns": ["id"], "filter": {}}}]))
        .unwrap();
        next
    }

    #[test]
    fn reads_name_the_tables_a_resolution_looked_at() {
        let cache = resolve(&document(), &db());
        let reads = |t: &str| {
            let table = &cache.resolved.tables[&name(t)];
            table
                .reads
                .iter()
                .map(|r| r.name.clone())
                .collect::<Vec<_>>()
        };
        assert!(
            cache.inconsistencies.is_empty(),
            "{:?}",
            cache.inconsistencies
        );
        assert_eq!(reads("a"), Vec::<String>::new());
        assert_eq!(reads("b"), ["a"]);
        // Its relationship's target, and the table its permission reaches through `b`.
        assert_eq!(reads("c"), ["a", "b"]);
        assert_eq!(reads("d"), Vec::<String>::new());
    }

    #[test]
    fn a_change_resolves_again_only_the_tables_it_reaches() {
        let db = db();
        let metadata = document();
        let before = resolve(&metadata, &db);
        let remotes = remote::Remotes::default();
        // `a` changes: `b` and `c` read it.
        let next = with_permission(&metadata, "a");
        let after = resolve_from(&before, &metadata, &next, &db, &remotes);
        assert_eq!(kept(&before, &after), ["d"]);
        assert!(after.resolved.tables[&name("a")]
            .permissions
            .contains_key("editor"));
        assert!(after.resolved.roles.contains("editor"));
        // `d` changes: nothing reads it.
        let next = with_permission(&metadata, "d");
        let after = resolve_from(&before, &metadata, &next, &db, &remotes);
        assert_eq!(kept(&before, &after), ["a", "b", "c"]);
        // Nothing changes: everything is kept.
        let after = resolve_from(&before, &metadata, &metadata, &db, &remotes);
        assert_eq!(kept(&before, &after), ["a", "b", "c", "d"]);
    }

    #[test]
    fn a_table_gone_breaks_what_read_it_as_the_full_resolution_does() {
        let db = db();
        let metadata = document();
        let before = resolve(&metadata, &db);
        let mut next = metadata.clone();
        next.tables.retain(|e| e.table.name != "a");
        let after = resolve_from(&before, &metadata, &next, &db, &remote::Remotes::default());
        assert_eq!(kept(&before, &after), ["d"]);
        let broken: Vec<String> = after
            .inconsistencies
            .iter()
            .map(|i| format!("{}", i.to_json()["type"]))
            .collect();
        // `b.a` has no target; `c`'s permission follows `b.a`.
        assert_eq!(broken, ["\"object_relation\"", "\"select_permission\""]);
        assert_eq!(
            format!("{after:?}"),
            format!("{:?}", resolve(&next, &db)),
            "the same as resolving the whole document"
        );
    }

    #[test]
    fn a_root_field_clash_is_left_to_the_full_resolution() {
        let db = db();
        let metadata = document();
        let before = resolve(&metadata, &db);
        let mut next = metadata.clone();
        next.table_mut(&name("d"))
            .unwrap()
            .configuration
            .custom_root_fields = serde_json::from_value(json!({"select": "a"})).unwrap();
        let after = resolve_from(&before, &metadata, &next, &db, &remote::Remotes::default());
        assert_eq!(
            after.inconsistencies.len(),
            1,
            "{:?}",
            after.inconsistencies
        );
        assert_eq!(after.inconsistencies[0].object, ObjectId::Table(name("d")));
        // From a resolution with something inconsistent, everything is resolved again.
        let again = resolve_from(&after, &next, &next, &db, &remote::Remotes::default());
        assert!(kept(&after, &again).is_empty());
        assert_eq!(format!("{again:?}"), format!("{after:?}"));
    }

    /// One edit of a document of the tables `a`–`d` (as in [`db`]).
    #[derive(Debug, Clone)]
    enum Edit {
        /// Sets or drops the select permission of role `r<role>` on a table; `deep` filters
        /// through `c → b → a` (on `c`) or `b → a` (on `b`).
        Permission {
            table: usize,
            role: usize,
            set: bool,
            deep: bool,
        },
        /// Untracks a table, or tracks it again as the base document has it.
        Track { table: usize, tracked: bool },
        /// Sets a table's custom `select` root field, possibly another table's.
        Root { table: usize, name: Option<usize> },
        /// Drops or restores a table's relationship.
        Relationship { table: usize, present: bool },
    }

    const NAMES: [&str; 4] = ["a", "b", "c", "d"];

    fn entry_of(table: &str) -> Arc<TableEntry> {
        let base = document();
        let found = base.tables.iter().find(|e| e.table.name == table);
        found
            .cloned()
            .unwrap_or_else(|| Arc::new(TableEntry::new(name(table))))
    }

    fn edit(metadata: &Metadata, edit: &Edit) -> Metadata {
        let mut next = metadata.clone();
        match *edit {
            Edit::Permission {
                table,
                role,
                set,
                deep,
            } => {
                let Some(entry) = next.table_mut(&name(NAMES[table])) else {
                    return next;
                };
                let role = format!("r{role}");
                entry.select_permissions.retain(|p| p.role.0 != role);
                if set {
                    let filter = match (deep, NAMES[table]) {
                        (true, "c") => json!({"b": {"a": {"id": {"_eq": 1}}}}),
                        (true, "b") => json!({"a": {"id": {"_eq": 1}}}),
                        _ => json!({"id": {"_gt": 0}}),
                    };
                    let permission =
                        json!({"role": role, "permission": {"columns": ["id"], "filter": filter}});
                    entry
                        .select_permissions
                        .push(serde_json::from_value(permission).unwrap());
                }
            }
            Edit::Track { table, tracked } => {
                let table = NAMES[table];
                next.tables.retain(|e| e.table.name != table);
                if tracked {
                    next.tables.push(entry_of(table));
                }
            }
            Edit::Root { table, name: root } => {
                if let Some(entry) = next.table_mut(&name(NAMES[table])) {
                    let custom = root.map(|r| NAMES[r]);
                    entry.configuration.custom_root_fields =
                        serde_json::from_value(json!({"select": custom})).unwrap();
                }
            }
            Edit::Relationship { table, present } => {
                let original = entry_of(NAMES[table]);
                if let Some(entry) = next.table_mut(&name(NAMES[table])) {
                    entry.object_relationships = match present {
                        true => original.object_relationships.clone(),
                        false => Vec::new(),
                    };
                }
            }
        }
        next
    }

    fn edits() -> impl proptest::strategy::Strategy<Value = Edit> {
        use proptest::prelude::*;
        prop_oneof![
            (0..4usize, 0..2usize, any::<bool>(), any::<bool>()).prop_map(
                |(table, role, set, deep)| Edit::Permission {
                    table,
                    role,
                    set,
                    deep
                }
            ),
            (0..4usize, any::<bool>()).prop_map(|(table, tracked)| Edit::Track { table, tracked }),
            (0..4usize, proptest::option::of(0..4usize))
                .prop_map(|(table, name)| Edit::Root { table, name }),
            (1..3usize, any::<bool>())
                .prop_map(|(table, present)| Edit::Relationship { table, present }),
        ]
    }

    proptest::proptest! {
        /// Any sequence of edits, each resolved from the previous resolution, gives what
        /// resolving each document whole gives (checked here in every build profile, not
        /// only by the debug assertion).
        #[test]
        fn resolving_from_the_previous_state_equals_resolving_whole(
            steps in proptest::collection::vec(edits(), 1..12)
        ) {
            let db = db();
            let remotes = remote::Remotes::default();
            let mut metadata = document();
            let mut cache = resolve(&metadata, &db);
            for step in &steps {
                let next = edit(&metadata, step);
                let from = resolve_from(&cache, &metadata, &next, &db, &remotes);
                proptest::prop_assert_eq!(
                    format!("{from:?}"),
                    format!("{:?}", resolve(&next, &db)),
                    "after {:?}", step
                );
                metadata = next;
                cache = from;
            }
        }
    }
}
