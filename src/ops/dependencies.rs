//! Which metadata objects depend on which: used by drops (dependency errors and cascade), by
//! `run_sql` reconciliation, and for removing objects by id or renaming keys inside
//! permission JSON. See `docs/metadata-api.md`, "Keeping metadata consistent". Pure: must not
//! do IO; reads the resolved schema, never the database.

use crate::metadata::ids::{ObjectId, PermissionKind};
use crate::metadata::types::*;
use crate::resolve::{self, Reference, Resolved, Target};
use serde_json::Value;
use std::collections::BTreeSet;

/// Every permission of the metadata with the references its rules make (empty for permissions
/// that do not check).
pub fn permission_references(
    metadata: &Metadata,
    resolved: &Resolved,
) -> Vec<(ObjectId, Vec<Reference>)> {
    let mut out = Vec::new();
    for entry in &metadata.tables {
        let t = &entry.table;
        let mut push = |role: &Name, kind: PermissionKind, value: Value| {
            let refs = resolve::check_permission(resolved, t, &role.0, kind, &value)
                .map(|checked| checked.refs)
                .unwrap_or_default();
            out.push((ObjectId::Permission(t.clone(), role.0.clone(), kind), refs));
        };
        for p in &entry.insert_permissions {
            push(
                &p.role,
                PermissionKind::Insert,
                serde_json::to_value(&p.permission).unwrap_or_default(),
            );
        }
        for p in &entry.select_permissions {
            push(
                &p.role,
                PermissionKind::Select,
                serde_json::to_value(&p.permission).unwrap_or_default(),
            );
        }
        for p in &entry.update_permissions {
            push(
                &p.role,
                PermissionKind::Update,
                serde_json::to_value(&p.permission).unwrap_or_default(),
            );
        }
        for p in &entry.delete_permissions {
            push(
                &p.role,
                PermissionKind::Delete,
                serde_json::to_value(&p.permission).unwrap_or_default(),
            );
        }
    }
    out
}

/// Whether removing `removed` takes `id` with it (it is the object, or owned by a removed table).
fn is_removed(removed: &BTreeSet<ObjectId>, id: &ObjectId) -> bool {
    removed.contains(id)
        || id
            .table()
            .map(|t| removed.contains(&ObjectId::Table(t.clone())))
            .unwrap_or(false)
}

/// Objects that would break if `removed` were dropped, transitively, excluding the removed
/// objects and what they own.
pub fn dependents(
    metadata: &Metadata,
    resolved: &Resolved,
    removed: &[ObjectId],
) -> BTreeSet<ObjectId> {
    let mut gone: BTreeSet<ObjectId> = removed.iter().cloned().collect();
    let perms = permission_references(metadata, resolved);
    let mut found = BTreeSet::new();
    loop {
        let mut next = Vec::new();
        let hits = |target: &Target, gone: &BTreeSet<ObjectId>| match target {
            Target::Table(t) => gone.contains(&ObjectId::Table(t.clone())),
            Target::Relationship(t, r) => {
                is_removed(gone, &ObjectId::Relationship(t.clone(), r.clone()))
            }
            Target::ComputedField(t, c) => {
                is_removed(gone, &ObjectId::ComputedField(t.clone(), c.clone()))
            }
            Target::Column(..) => false,
        };
        for (id, refs) in &perms {
            if !is_removed(&gone, id) && refs.iter().any(|r| hits(&r.target, &gone)) {
                next.push(id.clone());
            }
        }
        for entry in &metadata.tables {
            let t = &entry.table;
            let rel_targets = entry
                .object_relationships
                .iter()
                .map(|r| (r.name.0.clone(), object_target(t, &r.using, resolved)))
                .chain(
                    entry
                        .array_relationships
                        .iter()
                        .map(|r| (r.name.0.clone(), array_target(&r.using))),
                );
            for (name, target) in rel_targets {
                let id = ObjectId::Relationship(t.clone(), name);
                if let Some(target) = target {
                    if !is_removed(&gone, &id) && gone.contains(&ObjectId::Table(target)) {
                        next.push(id);
                    }
                }
            }
            for cf in &entry.computed_fields {
                let id = ObjectId::ComputedField(t.clone(), cf.name.0.clone());
                let returns_removed = resolved
                    .tables
                    .get(t)
                    .and_then(|rt| rt.computed_fields.get(&cf.name.0))
                    .map(|r| match &r.returns {
                        resolve::ComputedReturn::Table { table, .. } => {
                            gone.contains(&ObjectId::Table(table.clone()))
                        }
                        resolve::ComputedReturn::Scalar(_) => false,
                    })
                    .unwrap_or(false);
                if !is_removed(&gone, &id) && returns_removed {
                    next.push(id);
                }
            }
        }
        for object in &metadata.custom_types.objects {
            for rel in &object.relationships {
                let id =
                    ObjectId::CustomTypeRelationship(object.name.0.clone(), rel.name.0.clone());
                if !gone.contains(&id) && gone.contains(&ObjectId::Table(rel.remote_table.clone()))
                {
                    next.push(id);
                }
            }
        }
        for f in &resolved.functions {
            let id = ObjectId::Function(f.function.clone());
            if !gone.contains(&id) && gone.contains(&ObjectId::Table(f.returns.clone())) {
                next.push(id);
            }
        }
        for q in &metadata.native_queries {
            let name = &q.root_field_name.0;
            for r in q.object_relationships.iter().chain(&q.array_relationships) {
                let id = ObjectId::NativeQueryRelationship(name.clone(), r.name.0.clone());
                let target = r.using.remote_table.clone().map(ObjectId::Table);
                if !gone.contains(&id)
                    && !gone.contains(&ObjectId::NativeQuery(name.clone()))
                    && target.is_some_and(|t| gone.contains(&t))
                {
                    next.push(id);
                }
            }
        }
        for m in &metadata.logical_models {
            for p in &m.select_permissions {
                let id = ObjectId::LogicalModelPermission(m.name.0.clone(), p.role.0.clone());
                let mut read = Vec::new();
                exists_tables(&p.permission.filter, &mut read);
                if !gone.contains(&id)
                    && !gone.contains(&ObjectId::LogicalModel(m.name.0.clone()))
                    && read.into_iter().any(|t| gone.contains(&ObjectId::Table(t)))
                {
                    next.push(id);
                }
            }
        }
        for remote in &metadata.remote_schemas {
            for group in &remote.remote_relationships {
                for rel in &group.relationships {
                    let id = ObjectId::RemoteSchemaRelationship(
                        remote.name.0.clone(),
                        group.type_name.0.clone(),
                        rel.name.0.clone(),
                    );
                    let target = ObjectId::Table(rel.definition.to_source.table.clone());
                    if !gone.contains(&id) && gone.contains(&target) {
                        next.push(id);
                    }
                }
            }
        }
        if next.is_empty() {
            return found;
        }
        for id in next {
            gone.insert(id.clone());
            found.insert(id);
        }
    }
}

/// The tables the `_exists` of a filter (at any depth) read.
fn exists_tables(filter: &Value, out: &mut Vec<QualifiedTable>) {
    match filter {
        Value::Object(map) => {
            for (key, value) in map {
                if key == "_exists" {
                    let table = value.get("_table").cloned();
                    if let Some(t) = table.and_then(|t| serde_json::from_value(t).ok()) {
                        out.push(t);
                    }
                }
                exists_tables(value, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| exists_tables(v, out)),
        _ => {}
    }
}

fn object_target(
    table: &QualifiedTable,
    using: &ObjRelUsing,
    resolved: &Resolved,
) -> Option<QualifiedTable> {
    match using {
        ObjRelUsing::Manual(m) => Some(m.remote_table.clone()),
        ObjRelUsing::ForeignKey(column) => resolved
            .tables
            .get(table)?
            .db
            .foreign_keys()
            .find(|fk| fk.columns.len() == 1 && &fk.columns[0] == column)?
            .referenced_table(),
    }
}

fn array_target(using: &ArrRelUsing) -> Option<QualifiedTable> {
    match using {
        ArrRelUsing::Manual(m) => Some(m.remote_table.clone()),
        ArrRelUsing::ForeignKey(fk) => Some(fk.table.clone()),
    }
}

/// The dependency list as error messages print it: sorted descriptions joined by `, `.
pub fn describe(ids: &BTreeSet<ObjectId>) -> String {
    let mut items: Vec<String> = ids.iter().map(ObjectId::describe).collect();
    items.sort();
    items.join(", ")
}

/// Removes objects from the metadata (a removed table takes everything it owns).
pub fn remove(metadata: &mut Metadata, ids: &BTreeSet<ObjectId>) {
    metadata
        .tables
        .retain(|t| !ids.contains(&ObjectId::Table(t.table.clone())));
    // Only the entries named by `ids` change; the others stay shared with the document the
    // change started from.
    let named: BTreeSet<&QualifiedTable> = ids.iter().filter_map(ObjectId::table).collect();
    for entry in metadata
        .tables
        .iter_mut()
        .filter(|e| named.contains(&e.table))
    {
        let entry = std::sync::Arc::make_mut(entry);
        let t = entry.table.clone();
        let keep_rel =
            |name: &GraphQLName| !ids.contains(&ObjectId::Relationship(t.clone(), name.0.clone()));
        entry.object_relationships.retain(|r| keep_rel(&r.name));
        entry.array_relationships.retain(|r| keep_rel(&r.name));
        entry
            .computed_fields
            .retain(|c| !ids.contains(&ObjectId::ComputedField(t.clone(), c.name.0.clone())));
        entry
            .remote_relationships
            .retain(|r| !ids.contains(&ObjectId::RemoteRelationship(t.clone(), r.name.0.clone())));
        let keep = |role: &Name, kind| {
            !ids.contains(&ObjectId::Permission(t.clone(), role.0.clone(), kind))
        };
        entry
            .insert_permissions
            .retain(|p| keep(&p.role, PermissionKind::Insert));
        entry
            .select_permissions
            .retain(|p| keep(&p.role, PermissionKind::Select));
        entry
            .update_permissions
            .retain(|p| keep(&p.role, PermissionKind::Update));
        entry
            .delete_permissions
            .retain(|p| keep(&p.role, PermissionKind::Delete));
        entry
            .event_triggers
            .retain(|e| !ids.contains(&ObjectId::event_trigger(&t, e.name.0.clone())));
    }
    metadata
        .remote_schemas
        .retain(|r| !ids.contains(&ObjectId::RemoteSchema(r.name.0.clone())));
    metadata
        .actions
        .retain(|a| !ids.contains(&ObjectId::Action(a.name.0.clone())));
    metadata
        .functions
        .retain(|f| !ids.contains(&ObjectId::Function(f.function.clone())));
    metadata
        .logical_models
        .retain(|m| !ids.contains(&ObjectId::LogicalModel(m.name.0.clone())));
    metadata
        .native_queries
        .retain(|q| !ids.contains(&ObjectId::NativeQuery(q.root_field_name.0.clone())));
    for m in &mut metadata.logical_models {
        let model = m.name.0.clone();
        m.select_permissions.retain(|p| {
            !ids.contains(&ObjectId::LogicalModelPermission(
                model.clone(),
                p.role.0.clone(),
            ))
        });
    }
    for q in &mut metadata.native_queries {
        let query = q.root_field_name.0.clone();
        // A relationship to a removed native query goes with it.
        let keep = |r: &NativeQueryRelationship| {
            let target = (r.using.remote_native_query.clone()).map(ObjectId::NativeQuery);
            !ids.contains(&ObjectId::NativeQueryRelationship(
                query.clone(),
                r.name.0.clone(),
            )) && !target.is_some_and(|t| ids.contains(&t))
        };
        q.object_relationships.retain(keep);
        q.array_relationships.retain(keep);
    }
    for f in &mut metadata.functions {
        let function = f.function.clone();
        f.permissions.retain(|p| {
            !ids.contains(&ObjectId::FunctionPermission(
                function.clone(),
                p.role.0.clone(),
            ))
        });
    }
    if ids.contains(&ObjectId::CustomTypes) {
        metadata.custom_types = CustomTypes::default();
    }
    metadata
        .inherited_roles
        .retain(|r| !ids.contains(&ObjectId::InheritedRole(r.role_name.0.clone())));
    if ids.contains(&ObjectId::ApiLimits) {
        metadata.api_limits = ApiLimits::default();
    }
    for object in &mut metadata.custom_types.objects {
        let type_name = object.name.0.clone();
        object.relationships.retain(|r| {
            !ids.contains(&ObjectId::CustomTypeRelationship(
                type_name.clone(),
                r.name.0.clone(),
            ))
        });
    }
    for remote in &mut metadata.remote_schemas {
        let remote_name = remote.name.0.clone();
        for group in &mut remote.remote_relationships {
            let type_name = group.type_name.0.clone();
            group.relationships.retain(|r| {
                !ids.contains(&ObjectId::RemoteSchemaRelationship(
                    remote_name.clone(),
                    type_name.clone(),
                    r.name.0.clone(),
                ))
            });
        }
        remote
            .remote_relationships
            .retain(|g| !g.relationships.is_empty());
    }
}

/// Renames the object key at `pointer` inside `value` to `new_key`, keeping key order.
pub fn rename_key_at(value: &mut Value, pointer: &[resolve::Segment], new_key: &str) {
    let Some((last, parents)) = pointer.split_last() else {
        return;
    };
    let mut cursor = value;
    for segment in parents {
        cursor = match (segment, cursor) {
            (resolve::Segment::Key(k), Value::Object(map)) => match map.get_mut(k) {
                Some(v) => v,
                None => return,
            },
            (resolve::Segment::Index(i), Value::Array(items)) => match items.get_mut(*i) {
                Some(v) => v,
                None => return,
            },
            _ => return,
        };
    }
    if let (resolve::Segment::Key(old), Value::Object(map)) = (last, cursor) {
        if !map.contains_key(old) {
            return;
        }
        let entries = std::mem::take(map);
        for (k, v) in entries {
            if &k == old {
                map.insert(new_key.to_owned(), v);
            } else {
                map.insert(k, v);
            }
        }
    }
}

/// Edits one permission's rules as JSON (used by renames); leaves it unchanged if the edited
/// JSON no longer has the permission's shape.
pub fn edit_permission_json(
    metadata: &mut Metadata,
    table: &QualifiedTable,
    role: &str,
    kind: PermissionKind,
    edit: impl FnOnce(&mut Value),
) {
    fn apply<P: serde::Serialize + serde::de::DeserializeOwned>(
        list: &mut [PermissionEntry<P>],
        role: &str,
        edit: impl FnOnce(&mut Value),
    ) {
        let Some(p) = list.iter_mut().find(|p| p.role.0 == role) else {
            return;
        };
        let Ok(mut value) = serde_json::to_value(&p.permission) else {
            return;
        };
        edit(&mut value);
        if let Ok(parsed) = serde_json::from_value(value) {
            p.permission = parsed;
        }
    }
    let Some(entry) = metadata.table_mut(table) else {
        return;
    };
    match kind {
        PermissionKind::Insert => apply(&mut entry.insert_permissions, role, edit),
        PermissionKind::Select => apply(&mut entry.select_permissions, role, edit),
        PermissionKind::Update => apply(&mut entry.update_permissions, role, edit),
        PermissionKind::Delete => apply(&mut entry.delete_permissions, role, edit),
    }
}
