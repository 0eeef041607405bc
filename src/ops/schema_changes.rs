//! What a `run_sql` change to the database means for the metadata. [`diff`] compares the database
//! before and after by OID and attnum (so renames are recognised as renames) and keeps only what
//! metadata uses; [`reconcile`] applies the rules: dependency errors for drops (or cascade), type
//! changes under dependents refused, computed fields and tracked functions of dropped functions
//! removed, overloads (and tracked functions made `VOLATILE`) refused, renames of tables, columns
//! and functions followed. See `docs/metadata-api.md`, "Keeping
//! metadata consistent". Pure: must not do IO; the catalog introspects before and after.

use super::dependencies::{self, edit_permission_json, permission_references};
use crate::db_model::{DbConstraint, DbModel};
use crate::metadata::error::{Code, MetadataError, Result};
use crate::metadata::ids::{ObjectId, PermissionKind};
use crate::metadata::path::JsonPath;
use crate::metadata::types::*;
use crate::resolve::{Resolution, Segment, Target};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The changes to objects that metadata depends on.
#[derive(Debug, Clone, Default)]
pub struct SchemaChanges {
    /// Tracked relations that no longer exist.
    pub dropped_tables: Vec<QualifiedTable>,
    /// Tracked relations renamed or moved: (old, new).
    pub renamed_tables: Vec<(QualifiedTable, QualifiedTable)>,
    /// Columns of tracked relations dropped: (table, column).
    pub dropped_columns: Vec<(QualifiedTable, String)>,
    /// Columns renamed: (table as named before, old, new).
    pub renamed_columns: Vec<(QualifiedTable, String, String)>,
    /// Columns whose type changed: (table, column).
    pub retyped_columns: Vec<(QualifiedTable, String)>,
    /// Foreign keys of tracked tables dropped: (table, constraint).
    pub dropped_foreign_keys: Vec<(QualifiedTable, DbConstraint)>,
    /// Functions of computed fields and tracked functions that no longer exist.
    pub dropped_functions: Vec<QualifiedFunction>,
    /// Functions of computed fields and tracked functions that now have several signatures.
    pub overloaded_functions: Vec<QualifiedFunction>,
    /// Functions of computed fields and tracked functions renamed or moved to another schema:
    /// (old, new).
    pub renamed_functions: Vec<(QualifiedFunction, QualifiedFunction)>,
    /// Functions dropped whose name another function took in the same change (dropped and
    /// created again): a tracked one stays tracked and is judged by its rules.
    pub recreated_functions: Vec<QualifiedFunction>,
    /// Tracked functions that were `STABLE` or `IMMUTABLE` and are now `VOLATILE`.
    pub now_volatile: Vec<QualifiedFunction>,
    /// Tracked tables (named as after the change) whose definition changed in any way; event
    /// triggers regenerate their capture triggers for these.
    pub altered_tables: Vec<QualifiedTable>,
}

/// Compares the database before and after, for the objects `metadata` refers to.
pub fn diff(metadata: &Metadata, before: &DbModel, after: &DbModel) -> SchemaChanges {
    let mut changes = SchemaChanges::default();
    for entry in &metadata.tables {
        let name = &entry.table;
        let Some(old) = before.table(&name.schema, &name.name) else {
            continue;
        };
        let Some((new_name, new)) = after.tables.iter().find(|(_, t)| t.oid == old.oid) else {
            changes.dropped_tables.push(name.clone());
            continue;
        };
        let new_name = new_name.clone();
        let mut altered = false;
        if &new_name != name {
            changes
                .renamed_tables
                .push((name.clone(), new_name.clone()));
            altered = true;
        }
        let mut renames = BTreeMap::new();
        for column in &old.columns {
            match new.columns.iter().find(|c| c.attnum == column.attnum) {
                None => {
                    changes
                        .dropped_columns
                        .push((name.clone(), column.name.clone()));
                    altered = true;
                }
                Some(c) => {
                    if c.name != column.name {
                        changes.renamed_columns.push((
                            name.clone(),
                            column.name.clone(),
                            c.name.clone(),
                        ));
                        renames.insert(column.name.clone(), c.name.clone());
                        altered = true;
                    }
                    if c.data_type != column.data_type {
                        changes
                            .retyped_columns
                            .push((name.clone(), column.name.clone()));
                        altered = true;
                    }
                }
            }
        }
        altered |= new.columns.len() != old.columns.len();
        for fk in old.foreign_keys() {
            let renamed_columns: Vec<String> = fk
                .columns
                .iter()
                .map(|c| renames.get(c).cloned().unwrap_or_else(|| c.clone()))
                .collect();
            let still_there = new.foreign_keys().any(|n| {
                n.name == fk.name
                    || (n.columns == renamed_columns && same_relation(before, after, fk, n))
            });
            if !still_there {
                changes
                    .dropped_foreign_keys
                    .push((name.clone(), fk.clone()));
            }
        }
        if altered {
            changes.altered_tables.push(new_name.clone());
        }
    }
    let functions: BTreeSet<&QualifiedFunction> = metadata
        .tables
        .iter()
        .flat_map(|t| t.computed_fields.iter().map(|c| &c.definition.function))
        .chain(metadata.functions.iter().map(|f| &f.function))
        .collect();
    for f in &metadata.functions {
        let volatility = |db: &DbModel| match db.functions.get(&f.function).map(Vec::as_slice) {
            Some([one]) => Some(one.volatility == "v"),
            _ => None,
        };
        if volatility(before) == Some(false) && volatility(after) == Some(true) {
            changes.now_volatile.push(f.function.clone());
        }
    }
    for function in functions {
        let old: BTreeSet<u32> = before
            .functions
            .get(function)
            .map(|fs| fs.iter().map(|f| f.oid).collect())
            .unwrap_or_default();
        if old.is_empty() {
            continue;
        }
        let new: Vec<u32> = after
            .functions
            .get(function)
            .map(|fs| fs.iter().map(|f| f.oid).collect())
            .unwrap_or_default();
        if new.iter().any(|oid| old.contains(oid)) {
            if new.len() > 1 && old.len() == 1 {
                changes.overloaded_functions.push(function.clone());
            }
            continue;
        }
        // Gone from its name: renamed (the same OID elsewhere) or dropped.
        let moved = after
            .functions
            .iter()
            .find(|(_, fs)| fs.iter().any(|f| old.contains(&f.oid)));
        match moved {
            Some((name, overloads)) => {
                let name = name.clone();
                if overloads.len() > 1 {
                    changes.overloaded_functions.push(name.clone());
                }
                changes.renamed_functions.push((function.clone(), name));
            }
            None => {
                if after.functions.contains_key(function) {
                    changes.recreated_functions.push(function.clone());
                }
                changes.dropped_functions.push(function.clone())
            }
        }
    }
    changes
}

/// Whether two foreign keys reference the same relation (by OID, across renames).
fn same_relation(
    before: &DbModel,
    after: &DbModel,
    old: &DbConstraint,
    new: &DbConstraint,
) -> bool {
    let oid = |model: &DbModel, fk: &DbConstraint| {
        fk.referenced_table()
            .and_then(|t| model.tables.get(&t).map(|t| t.oid))
    };
    oid(before, old).is_some() && oid(before, old) == oid(after, new)
}

/// Objects that use a column: relationships mapping it, permissions naming it, custom-type
/// relationships to it, and transitively what uses those.
fn column_dependents(
    metadata: &Metadata,
    before: &Resolution,
    table: &QualifiedTable,
    column: &str,
) -> BTreeSet<ObjectId> {
    let mut direct = Vec::new();
    for (owner, resolved) in &before.resolved.tables {
        for rel in resolved.relationships.values() {
            let local = owner == table && rel.mapping.iter().any(|(l, _)| l == column);
            let remote = &rel.target == table && rel.mapping.iter().any(|(_, r)| r == column);
            if local || remote {
                direct.push(ObjectId::Relationship(owner.clone(), rel.name.clone()));
            }
        }
    }
    // Remote schemas' relationships to the table mapping a field to the column.
    for remote in &metadata.remote_schemas {
        for group in &remote.remote_relationships {
            for rel in &group.relationships {
                let target = &rel.definition.to_source;
                if &target.table == table && target.field_mapping.values().any(|c| c == column) {
                    direct.push(ObjectId::RemoteSchemaRelationship(
                        remote.name.0.clone(),
                        group.type_name.0.clone(),
                        rel.name.0.clone(),
                    ));
                }
            }
        }
    }
    // Remote relationships joining on the column.
    if let Some(entry) = metadata.table(table) {
        for rel in &entry.remote_relationships {
            if rel
                .definition
                .target()
                .lhs_fields
                .iter()
                .any(|f| f == column)
            {
                direct.push(ObjectId::RemoteRelationship(
                    table.clone(),
                    rel.name.0.clone(),
                ));
            }
        }
    }
    for (id, refs) in permission_references(metadata, &before.resolved) {
        if refs
            .iter()
            .any(|r| r.target == Target::Column(table.clone(), column.to_owned()))
        {
            direct.push(id);
        }
    }
    // Event triggers naming the column in a `columns` or `payload` list.
    if let Some(entry) = metadata.table(table) {
        for trigger in &entry.event_triggers {
            let def = &trigger.definition;
            let names = [&def.insert, &def.update, &def.delete]
                .into_iter()
                .flatten()
                .any(|spec| {
                    matches!(&spec.columns, Columns::List(l) if l.iter().any(|c| c == column))
                        || matches!(&spec.payload, Some(Columns::List(l)) if l.iter().any(|c| c == column))
                });
            if names {
                direct.push(ObjectId::event_trigger(table, trigger.name.0.clone()));
            }
        }
    }
    for object in &metadata.custom_types.objects {
        for rel in &object.relationships {
            if &rel.remote_table == table && rel.field_mapping.values().any(|c| c == column) {
                direct.push(ObjectId::CustomTypeRelationship(
                    object.name.0.clone(),
                    rel.name.0.clone(),
                ));
            }
        }
    }
    with_transitive(metadata, before, direct)
}

fn with_transitive(
    metadata: &Metadata,
    before: &Resolution,
    direct: Vec<ObjectId>,
) -> BTreeSet<ObjectId> {
    let mut all = dependencies::dependents(metadata, &before.resolved, &direct);
    all.extend(direct);
    all
}

/// A tracked table and everything it owns, plus what depends on it elsewhere.
fn table_dependents(
    metadata: &Metadata,
    before: &Resolution,
    table: &QualifiedTable,
) -> BTreeSet<ObjectId> {
    let mut ids = with_transitive(metadata, before, vec![ObjectId::Table(table.clone())]);
    if let Some(entry) = metadata.table(table) {
        let t = &entry.table;
        for r in &entry.object_relationships {
            ids.insert(ObjectId::Relationship(t.clone(), r.name.0.clone()));
        }
        for r in &entry.array_relationships {
            ids.insert(ObjectId::Relationship(t.clone(), r.name.0.clone()));
        }
        for c in &entry.computed_fields {
            ids.insert(ObjectId::ComputedField(t.clone(), c.name.0.clone()));
        }
        for (kind, roles) in [
            (
                PermissionKind::Insert,
                entry
                    .insert_permissions
                    .iter()
                    .map(|p| &p.role)
                    .collect::<Vec<_>>(),
            ),
            (
                PermissionKind::Select,
                entry.select_permissions.iter().map(|p| &p.role).collect(),
            ),
            (
                PermissionKind::Update,
                entry.update_permissions.iter().map(|p| &p.role).collect(),
            ),
            (
                PermissionKind::Delete,
                entry.delete_permissions.iter().map(|p| &p.role).collect(),
            ),
        ] {
            for role in roles {
                ids.insert(ObjectId::Permission(t.clone(), role.0.clone(), kind));
            }
        }
        for e in &entry.event_triggers {
            ids.insert(ObjectId::event_trigger(t, e.name.0.clone()));
        }
    }
    ids
}

/// Relationships that resolve through a foreign key, and what depends on them.
fn foreign_key_dependents(
    metadata: &Metadata,
    before: &Resolution,
    table: &QualifiedTable,
    fk: &DbConstraint,
) -> BTreeSet<ObjectId> {
    let [column] = fk.columns.as_slice() else {
        return BTreeSet::new();
    };
    let mut direct = Vec::new();
    for entry in &metadata.tables {
        if &entry.table == table {
            for r in &entry.object_relationships {
                if r.using == ObjRelUsing::ForeignKey(column.clone()) {
                    direct.push(ObjectId::Relationship(
                        entry.table.clone(),
                        r.name.0.clone(),
                    ));
                }
            }
        }
        for r in &entry.array_relationships {
            if let ArrRelUsing::ForeignKey(a) = &r.using {
                if &a.table == table
                    && &a.column == column
                    && fk.referenced_table().as_ref() == Some(&entry.table)
                {
                    direct.push(ObjectId::Relationship(
                        entry.table.clone(),
                        r.name.0.clone(),
                    ));
                }
            }
        }
    }
    with_transitive(metadata, before, direct)
}

/// Applies the rules of `run_sql` to the metadata; `before` is the resolution of `metadata`
/// against the database as it was before the SQL ran.
pub fn reconcile(
    metadata: &Metadata,
    before: &Resolution,
    changes: &SchemaChanges,
    cascade: bool,
) -> Result<Metadata> {
    let args = JsonPath::args();
    let tracked: Vec<String> = changes
        .overloaded_functions
        .iter()
        .filter(|f| metadata.function(f).is_some())
        .map(ToString::to_string)
        .collect();
    if !tracked.is_empty() {
        return Err(MetadataError::new(
            Code::NotSupported,
            JsonPath::root(),
            format!(
                "the following tracked function(s) cannot be overloaded: {}",
                tracked.join(", ")
            ),
        ));
    }
    if let Some(f) = changes.now_volatile.first() {
        return Err(MetadataError::new(
            Code::NotSupported,
            JsonPath::root(),
            format!(
                "type of function \"{f}\" is altered to \"VOLATILE\" which is not supported now"
            ),
        ));
    }
    if let Some(f) = changes.overloaded_functions.first() {
        return Err(MetadataError::new(
            Code::NotSupported,
            args,
            format!("the function \"{f}\" is used by a computed field and cannot be overloaded"),
        ));
    }
    for (table, column) in &changes.retyped_columns {
        let dependents = column_dependents(metadata, before, table, column);
        if !dependents.is_empty() {
            return Err(MetadataError::new(
                Code::DependencyError,
                args,
                format!(
                    "cannot change type of column \"{column}\" in table \"{table}\" because of the following dependencies : {}",
                    dependencies::describe(&dependents)
                ),
            ));
        }
    }
    let mut dropped = BTreeSet::new();
    for table in &changes.dropped_tables {
        dropped.extend(table_dependents(metadata, before, table));
    }
    for (table, column) in &changes.dropped_columns {
        dropped.extend(column_dependents(metadata, before, table, column));
    }
    for (table, fk) in &changes.dropped_foreign_keys {
        dropped.extend(foreign_key_dependents(metadata, before, table, fk));
    }
    if !dropped.is_empty() && !cascade {
        return Err(MetadataError::new(
            Code::DependencyError,
            args,
            format!(
                "cannot drop due to the following dependent objects : {}",
                dependencies::describe(&dropped)
            ),
        ));
    }
    // Computed fields of dropped functions go, with their dependents, even without cascade.
    for function in &changes.dropped_functions {
        let fields: Vec<ObjectId> = metadata
            .tables
            .iter()
            .flat_map(|t| {
                t.computed_fields
                    .iter()
                    .filter(|c| &c.definition.function == function)
                    .map(|c| ObjectId::ComputedField(t.table.clone(), c.name.0.clone()))
            })
            .collect();
        dropped.extend(with_transitive(metadata, before, fields));
        // A tracked function goes with its grants, even without cascade.
        if metadata.function(function).is_some() && !changes.recreated_functions.contains(function)
        {
            dropped.insert(ObjectId::Function(function.clone()));
        }
    }
    let mut next = metadata.clone();
    dependencies::remove(&mut next, &dropped);
    for (table, column) in &changes.dropped_columns {
        if let Some(entry) = next.table_mut(table) {
            entry.configuration.custom_column_names.shift_remove(column);
        }
    }
    follow_renames(&mut next, before, changes);
    for (old, new) in &changes.renamed_functions {
        rename_function(&mut next, old, new);
    }
    Ok(next)
}

/// Points the computed fields of a renamed function, and its tracked entry, at its new name.
/// A computed field keeps its own name, so the GraphQL API does not change; a tracked
/// function's field follows the function's name unless it has a custom one.
fn rename_function(metadata: &mut Metadata, old: &QualifiedFunction, new: &QualifiedFunction) {
    for f in metadata.functions.iter_mut().filter(|f| &f.function == old) {
        f.function = new.clone();
    }
    for entry in metadata.tables.iter_mut().map(std::sync::Arc::make_mut) {
        for cf in &mut entry.computed_fields {
            if &cf.definition.function == old {
                cf.definition.function = new.clone();
            }
        }
    }
}

/// An edit of a permission's JSON at a location.
enum Edit {
    /// Rename an object key, or replace a string element, from `old` to `new`.
    Column { old: String, new: String },
    /// Replace the value with a table name.
    Table(QualifiedTable),
}

/// Rewrites column and table names everywhere metadata mentions them.
fn follow_renames(metadata: &mut Metadata, before: &Resolution, changes: &SchemaChanges) {
    if changes.renamed_columns.is_empty() && changes.renamed_tables.is_empty() {
        return;
    }
    // Permission JSON first, with locations found against the old names.
    let mut edits: Vec<(ObjectId, Vec<Segment>, Edit)> = Vec::new();
    for (id, refs) in permission_references(metadata, &before.resolved) {
        for r in refs {
            match &r.target {
                Target::Column(t, c) => {
                    if let Some((_, old, new)) = changes
                        .renamed_columns
                        .iter()
                        .find(|(rt, o, _)| rt == t && o == c)
                    {
                        edits.push((
                            id.clone(),
                            r.pointer.clone(),
                            Edit::Column {
                                old: old.clone(),
                                new: new.clone(),
                            },
                        ));
                    }
                }
                Target::Table(t) if r.pointer.last() == Some(&Segment::Key("_table".into())) => {
                    if let Some((_, new)) = changes.renamed_tables.iter().find(|(old, _)| old == t)
                    {
                        edits.push((id.clone(), r.pointer.clone(), Edit::Table(new.clone())));
                    }
                }
                _ => {}
            }
        }
    }
    // Deepest first, so renaming an outer key never moves an inner location.
    edits.sort_by_key(|(_, pointer, _)| std::cmp::Reverse(pointer.len()));
    for (id, pointer, edit) in &edits {
        let ObjectId::Permission(table, role, kind) = id else {
            continue;
        };
        edit_permission_json(metadata, table, role, *kind, |value| match edit {
            Edit::Column { old, new } => rename_at(value, pointer, old, new),
            Edit::Table(new) => set_at(value, pointer, serde_json::json!(new)),
        });
    }
    for (table, old, new) in &changes.renamed_columns {
        rename_column(metadata, table, old, new);
    }
    for (old, new) in &changes.renamed_tables {
        rename_table(metadata, old, new);
    }
}

fn node_at<'a>(value: &'a mut Value, pointer: &[Segment]) -> Option<&'a mut Value> {
    let mut cursor = value;
    for segment in pointer {
        cursor = match (segment, cursor) {
            (Segment::Key(k), Value::Object(map)) => map.get_mut(k)?,
            (Segment::Index(i), Value::Array(items)) => items.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(cursor)
}

fn set_at(value: &mut Value, pointer: &[Segment], new: Value) {
    if let Some(node) = node_at(value, pointer) {
        *node = new;
    }
}

/// At `pointer`: a key named `old` is renamed; a string `old` is replaced.
fn rename_at(value: &mut Value, pointer: &[Segment], old: &str, new: &str) {
    if pointer.last() == Some(&Segment::Key(old.to_owned())) {
        dependencies::rename_key_at(value, pointer, new);
    } else if let Some(node) = node_at(value, pointer) {
        if node.as_str() == Some(old) {
            *node = Value::String(new.to_owned());
        }
    }
}

fn rename_in_columns(columns: &mut Columns, old: &str, new: &str) {
    if let Columns::List(list) = columns {
        for c in list.iter_mut().filter(|c| *c == old) {
            *c = new.to_owned();
        }
    }
}

fn rename_key<V>(map: &mut indexmap::IndexMap<String, V>, old: &str, new: &str) {
    if let Some(index) = map.get_index_of(old) {
        if let Some((_, value)) = map.shift_remove_index(index) {
            map.shift_insert(index, new.to_owned(), value);
        }
    }
}

/// Renames a column of `table` in relationships, configuration, custom types and triggers.
fn rename_column(metadata: &mut Metadata, table: &QualifiedTable, old: &str, new: &str) {
    for entry in metadata.tables.iter_mut().map(std::sync::Arc::make_mut) {
        let own = &entry.table == table;
        if own {
            rename_key(&mut entry.configuration.custom_column_names, old, new);
            for trigger in &mut entry.event_triggers {
                let def = &mut trigger.definition;
                for spec in [&mut def.insert, &mut def.update, &mut def.delete]
                    .into_iter()
                    .flatten()
                {
                    rename_in_columns(&mut spec.columns, old, new);
                    if let Some(payload) = &mut spec.payload {
                        rename_in_columns(payload, old, new);
                    }
                }
            }
            for rel in &mut entry.remote_relationships {
                rel.definition.rename_join_field(old, new);
            }
        }
        for r in &mut entry.object_relationships {
            match &mut r.using {
                ObjRelUsing::ForeignKey(c) if own && c == old => *c = new.to_owned(),
                ObjRelUsing::Manual(m) => rename_in_mapping(m, own, table, old, new),
                _ => {}
            }
        }
        for r in &mut entry.array_relationships {
            match &mut r.using {
                ArrRelUsing::ForeignKey(fk) if &fk.table == table && fk.column == old => {
                    fk.column = new.to_owned()
                }
                ArrRelUsing::Manual(m) => rename_in_mapping(m, own, table, old, new),
                _ => {}
            }
        }
    }
    for object in &mut metadata.custom_types.objects {
        for rel in object
            .relationships
            .iter_mut()
            .filter(|r| &r.remote_table == table)
        {
            for column in rel.field_mapping.values_mut().filter(|c| *c == old) {
                *column = new.to_owned();
            }
        }
    }
    for rel in remote_to_table(metadata).filter(|r| &r.table == table) {
        for column in rel.field_mapping.values_mut().filter(|c| *c == old) {
            *column = new.to_owned();
        }
    }
}

/// The targets of every remote schema's relationships to tables.
fn remote_to_table(metadata: &mut Metadata) -> impl Iterator<Item = &mut ToSource> {
    metadata.remote_schemas.iter_mut().flat_map(|r| {
        r.remote_relationships.iter_mut().flat_map(|g| {
            g.relationships
                .iter_mut()
                .map(|r| &mut r.definition.to_source)
        })
    })
}

fn rename_in_mapping(
    m: &mut ManualConfiguration,
    own: bool,
    table: &QualifiedTable,
    old: &str,
    new: &str,
) {
    if own {
        rename_key(&mut m.column_mapping, old, new);
    }
    if &m.remote_table == table {
        for remote in m.column_mapping.values_mut().filter(|c| *c == old) {
            *remote = new.to_owned();
        }
    }
}

/// Renames a table everywhere it is named.
fn rename_table(metadata: &mut Metadata, old: &QualifiedTable, new: &QualifiedTable) {
    for entry in metadata.tables.iter_mut().map(std::sync::Arc::make_mut) {
        if &entry.table == old {
            entry.table = new.clone();
        }
        for r in &mut entry.object_relationships {
            if let ObjRelUsing::Manual(m) = &mut r.using {
                if &m.remote_table == old {
                    m.remote_table = new.clone();
                }
            }
        }
        for r in &mut entry.array_relationships {
            match &mut r.using {
                ArrRelUsing::ForeignKey(fk) if &fk.table == old => fk.table = new.clone(),
                ArrRelUsing::Manual(m) if &m.remote_table == old => m.remote_table = new.clone(),
                _ => {}
            }
        }
    }
    for object in &mut metadata.custom_types.objects {
        for rel in object
            .relationships
            .iter_mut()
            .filter(|r| &r.remote_table == old)
        {
            rel.remote_table = new.clone();
        }
    }
    for rel in remote_to_table(metadata).filter(|r| &r.table == old) {
        rel.table = new.clone();
    }
}
