//! Ownable objects put into a metadata document and taken out of it: the inverse of
//! [`catalog_objects`](super::objects::catalog_objects). Used to build the document a set of
//! resources would lead to (`basalt diff`), which the catalog then checks like any other.
//! Pure: no IO.

use super::ids::PermissionKind;
use super::objects::Object;
use super::types::*;
use serde_json::Value;

/// Why an object cannot be placed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlaceError {
    /// A table's part (relationship, permission, computed field) whose table is not tracked.
    #[error("table {0} is not tracked")]
    TableNotTracked(QualifiedTable),
    /// A permission of an action the document does not have.
    #[error("action {0} does not exist")]
    ActionMissing(GraphQLName),
    /// A permission of a logical model the document does not have.
    #[error("logical model {0} is not tracked")]
    ModelMissing(GraphQLName),
    /// A grant of a function the document does not track.
    #[error("function {0} is not tracked")]
    FunctionMissing(QualifiedFunction),
    /// A relationship of a remote schema the document does not have.
    #[error("remote schema {0} does not exist")]
    RemoteSchemaMissing(Name),
    /// Permission rules that do not fit their kind.
    #[error("invalid {kind} permission rules: {message}")]
    Rules {
        kind: &'static str,
        /// The decoding error.
        message: String,
    },
}

/// Replaces by `same` or appends.
fn upsert<T>(list: &mut Vec<T>, item: T, same: impl Fn(&T, &T) -> bool) {
    match list.iter_mut().find(|x| same(x, &item)) {
        Some(slot) => *slot = item,
        None => list.push(item),
    }
}

fn typed<P: serde::de::DeserializeOwned>(
    kind: PermissionKind,
    p: PermissionEntry<Value>,
) -> Result<PermissionEntry<P>, PlaceError> {
    let permission = serde_json::from_value(p.permission).map_err(|e| PlaceError::Rules {
        kind: kind.as_str(),
        message: e.to_string(),
    })?;
    Ok(PermissionEntry {
        role: p.role,
        permission,
        comment: p.comment,
    })
}

fn same_role<P>(a: &PermissionEntry<P>, b: &PermissionEntry<P>) -> bool {
    a.role == b.role
}

/// Removes the event trigger `name` from every table but `except`, copying only the entries
/// that have it (the others stay shared with the document this one was derived from).
fn remove_trigger(metadata: &mut Metadata, name: &Name, except: Option<&QualifiedTable>) {
    for e in metadata.tables.iter_mut() {
        if Some(&e.table) != except && e.event_triggers.iter().any(|x| &x.name == name) {
            std::sync::Arc::make_mut(e)
                .event_triggers
                .retain(|x| &x.name != name);
        }
    }
}

fn entry<'a>(
    metadata: &'a mut Metadata,
    table: &QualifiedTable,
) -> Result<&'a mut TableEntry, PlaceError> {
    metadata
        .table_mut(table)
        .ok_or_else(|| PlaceError::TableNotTracked(table.clone()))
}

/// Puts `object` into `metadata`, replacing the object with the same key. A table's settings
/// keep the parts already declared on it; a part needs its table tracked.
pub fn put(metadata: &mut Metadata, object: Object) -> Result<(), PlaceError> {
    match object {
        Object::Table(settings) => match metadata.table_mut(&settings.table) {
            Some(e) => {
                e.is_enum = settings.is_enum;
                e.configuration = settings.configuration;
            }
            None => metadata.tables.push(std::sync::Arc::new(*settings)),
        },
        Object::ObjectRelationship(t, r) => {
            upsert(&mut entry(metadata, &t)?.object_relationships, r, |a, b| {
                a.name == b.name
            });
        }
        Object::ArrayRelationship(t, r) => {
            upsert(&mut entry(metadata, &t)?.array_relationships, r, |a, b| {
                a.name == b.name
            });
        }
        Object::ComputedField(t, c) => {
            upsert(&mut entry(metadata, &t)?.computed_fields, c, |a, b| {
                a.name == b.name
            });
        }
        Object::EventTrigger(t, trigger) => {
            entry(metadata, &t)?;
            // The key is the name alone (unique across tables): a trigger of this name on
            // another table is the same object, moved.
            remove_trigger(metadata, &trigger.name, Some(&t));
            upsert(&mut entry(metadata, &t)?.event_triggers, trigger, |a, b| {
                a.name == b.name
            });
        }
        Object::Permission(t, kind, p) => {
            let e = entry(metadata, &t)?;
            match kind {
                PermissionKind::Insert => {
                    upsert(&mut e.insert_permissions, typed(kind, p)?, same_role)
                }
                PermissionKind::Select => {
                    upsert(&mut e.select_permissions, typed(kind, p)?, same_role)
                }
                PermissionKind::Update => {
                    upsert(&mut e.update_permissions, typed(kind, p)?, same_role)
                }
                PermissionKind::Delete => {
                    upsert(&mut e.delete_permissions, typed(kind, p)?, same_role)
                }
            }
        }
        Object::RemoteSchema(r) => {
            // Its settings replace the remote schema's; its relationships to tables stay, as
            // `update_remote_schema` keeps them.
            match metadata
                .remote_schemas
                .iter_mut()
                .find(|x| x.name == r.name)
            {
                Some(existing) => {
                    existing.definition = r.definition;
                    existing.comment = r.comment;
                }
                None => metadata.remote_schemas.push(r),
            }
        }
        Object::RemoteRelationship(t, r) => {
            upsert(&mut entry(metadata, &t)?.remote_relationships, r, |a, b| {
                a.name == b.name
            });
        }
        Object::RemoteSchemaRelationship(remote, type_name, r) => {
            let Some(entry) = metadata
                .remote_schemas
                .iter_mut()
                .find(|x| x.name == remote)
            else {
                return Err(PlaceError::RemoteSchemaMissing(remote));
            };
            match entry
                .remote_relationships
                .iter_mut()
                .find(|g| g.type_name == type_name)
            {
                Some(group) => upsert(&mut group.relationships, r, |a, b| a.name == b.name),
                None => entry.remote_relationships.push(RemoteTypeRelationships {
                    type_name,
                    relationships: vec![r],
                }),
            }
        }
        Object::Action(a) => {
            // Its settings replace the action's; the permissions already on it stay, as
            // `update_action` keeps them.
            match metadata.actions.iter_mut().find(|x| x.name == a.name) {
                Some(existing) => {
                    existing.definition = a.definition;
                    existing.comment = a.comment;
                }
                None => metadata.actions.push(*a),
            }
        }
        Object::ActionPermission(action, p) => {
            let Some(entry) = metadata.actions.iter_mut().find(|x| x.name == action) else {
                return Err(PlaceError::ActionMissing(action));
            };
            upsert(&mut entry.permissions, p, |a, b| a.role == b.role);
        }
        Object::CustomType(t) => {
            remove_type(&mut metadata.custom_types, t.name());
            t.push_into(&mut metadata.custom_types);
        }
        Object::Collection(c) => {
            upsert(&mut metadata.query_collections, c, |a, b| a.name == b.name)
        }
        Object::Allowlist(a) => upsert(&mut metadata.allowlist, a, |x, y| {
            x.collection == y.collection
        }),
        Object::InheritedRole(r) => upsert(&mut metadata.inherited_roles, r, |x, y| {
            x.role_name == y.role_name
        }),
        Object::ApiLimits(l) => metadata.api_limits = *l,
        Object::RestEndpoint(e) => upsert(&mut metadata.rest_endpoints, e, |a, b| a.name == b.name),
        Object::Function(f) => {
            // Its settings replace the function's; the grants already on it stay.
            match metadata.function_mut(&f.function) {
                Some(existing) => {
                    existing.configuration = f.configuration;
                    existing.comment = f.comment;
                }
                None => metadata.functions.push(*f),
            }
        }
        Object::FunctionPermission(function, p) => {
            let Some(entry) = metadata.function_mut(&function) else {
                return Err(PlaceError::FunctionMissing(function));
            };
            upsert(&mut entry.permissions, p, |a, b| a.role == b.role);
        }
        Object::LogicalModel(m) => {
            // Its settings replace the model's; the permissions already on it stay.
            match metadata
                .logical_models
                .iter_mut()
                .find(|x| x.name == m.name)
            {
                Some(existing) => {
                    existing.description = m.description;
                    existing.fields = m.fields;
                }
                None => metadata.logical_models.push(*m),
            }
        }
        Object::LogicalModelPermission(model, p) => {
            let Some(entry) = metadata.logical_models.iter_mut().find(|x| x.name == model) else {
                return Err(PlaceError::ModelMissing(model));
            };
            upsert(&mut entry.select_permissions, p, |a, b| a.role == b.role);
        }
        Object::NativeQuery(q) => upsert(&mut metadata.native_queries, *q, |a, b| {
            a.root_field_name == b.root_field_name
        }),
        Object::CronTrigger(t) => upsert(&mut metadata.cron_triggers, *t, |a, b| a.name == b.name),
    }
    Ok(())
}

fn remove_type(types: &mut CustomTypes, name: &str) {
    types.input_objects.retain(|t| t.name.0 != name);
    types.objects.retain(|t| t.name.0 != name);
    types.scalars.retain(|t| t.name.0 != name);
    types.enums.retain(|t| t.name.0 != name);
}

/// Takes `object` (matched by key) out of `metadata`. Removing a table removes everything
/// defined on it, as untracking it with `cascade` would.
pub fn remove(metadata: &mut Metadata, object: &Object) {
    let part_of = |metadata: &mut Metadata, t: &QualifiedTable, f: &dyn Fn(&mut TableEntry)| {
        if let Some(e) = metadata.table_mut(t) {
            f(e);
        }
    };
    match object {
        Object::Table(settings) => metadata.tables.retain(|e| e.table != settings.table),
        Object::ObjectRelationship(t, r) => part_of(metadata, t, &|e| {
            e.object_relationships.retain(|x| x.name != r.name)
        }),
        Object::ArrayRelationship(t, r) => part_of(metadata, t, &|e| {
            e.array_relationships.retain(|x| x.name != r.name)
        }),
        Object::ComputedField(t, c) => part_of(metadata, t, &|e| {
            e.computed_fields.retain(|x| x.name != c.name)
        }),
        Object::EventTrigger(_, trigger) => {
            // By key: the name alone, on whichever table the document has it.
            remove_trigger(metadata, &trigger.name, None);
        }
        Object::Permission(t, kind, p) => part_of(metadata, t, &|e| match kind {
            PermissionKind::Insert => e.insert_permissions.retain(|x| x.role != p.role),
            PermissionKind::Select => e.select_permissions.retain(|x| x.role != p.role),
            PermissionKind::Update => e.update_permissions.retain(|x| x.role != p.role),
            PermissionKind::Delete => e.delete_permissions.retain(|x| x.role != p.role),
        }),
        // With its relationships to tables, as `remove_remote_schema` does.
        Object::RemoteSchema(r) => metadata.remote_schemas.retain(|x| x.name != r.name),
        Object::RemoteRelationship(t, r) => part_of(metadata, t, &|e| {
            e.remote_relationships.retain(|x| x.name != r.name)
        }),
        Object::RemoteSchemaRelationship(remote, type_name, r) => {
            for entry in metadata
                .remote_schemas
                .iter_mut()
                .filter(|x| x.name == *remote)
            {
                for group in entry
                    .remote_relationships
                    .iter_mut()
                    .filter(|g| g.type_name == *type_name)
                {
                    group.relationships.retain(|x| x.name != r.name);
                }
                entry
                    .remote_relationships
                    .retain(|g| !g.relationships.is_empty());
            }
        }
        // With its permissions, as `drop_action` does.
        Object::Action(a) => metadata.actions.retain(|x| x.name != a.name),
        Object::ActionPermission(action, p) => {
            for entry in metadata.actions.iter_mut().filter(|x| x.name == *action) {
                entry.permissions.retain(|x| x.role != p.role);
            }
        }
        Object::CustomType(t) => remove_type(&mut metadata.custom_types, t.name()),
        Object::Collection(c) => metadata.query_collections.retain(|x| x.name != c.name),
        Object::Allowlist(a) => metadata.allowlist.retain(|x| x.collection != a.collection),
        Object::InheritedRole(r) => metadata
            .inherited_roles
            .retain(|x| x.role_name != r.role_name),
        Object::ApiLimits(_) => metadata.api_limits = ApiLimits::default(),
        Object::RestEndpoint(e) => metadata.rest_endpoints.retain(|x| x.name != e.name),
        // With its grants, as `untrack_function` does.
        Object::Function(f) => metadata.functions.retain(|x| x.function != f.function),
        Object::FunctionPermission(function, p) => {
            if let Some(entry) = metadata.function_mut(function) {
                entry.permissions.retain(|x| x.role != p.role);
            }
        }
        // With its permissions, as `untrack_logical_model` does.
        Object::LogicalModel(m) => metadata.logical_models.retain(|x| x.name != m.name),
        Object::LogicalModelPermission(model, p) => {
            for entry in metadata
                .logical_models
                .iter_mut()
                .filter(|x| x.name == *model)
            {
                entry.select_permissions.retain(|x| x.role != p.role);
            }
        }
        Object::NativeQuery(q) => metadata
            .native_queries
            .retain(|x| x.root_field_name != q.root_field_name),
        Object::CronTrigger(t) => metadata.cron_triggers.retain(|x| x.name != t.name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::objects::catalog_objects;

    /// The blog fixture with an event trigger on `article` (the fixture has none).
    fn blog() -> Metadata {
        let mut metadata: Metadata =
            serde_json::from_str(include_str!("../../tests/fixtures/blog_metadata.json")).unwrap();
        let trigger: EventTriggerEntry = serde_json::from_value(serde_json::json!({
            "name": "article_published",
            "definition": {"update": {"columns": ["published"], "payload": "*"}},
            "webhook": "http://hooks.example/published",
            "headers": [{"name": "X-Token", "value_from_env": "HOOK_TOKEN"}]
        }))
        .unwrap();
        metadata
            .table_mut(&QualifiedTable::new("public", "article"))
            .unwrap()
            .event_triggers
            .push(trigger);
        let remote: RemoteSchemaEntry = serde_json::from_value(serde_json::json!({
            "name": "newsletter",
            "definition": {"url_from_env": "NEWSLETTER_GRAPHQL_URL", "forward_client_headers": true,
                "headers": [{"name": "Authorization", "value_from_env": "NEWSLETTER_API_TOKEN"}]},
            "comment": "subscribers"
        }))
        .unwrap();
        metadata.remote_schemas.push(remote);
        let action: ActionEntry = serde_json::from_value(serde_json::json!({
            "name": "archiveArticle",
            "definition": {"handler": "http://actions.blog.svc/archive", "output_type": "ArchiveResult",
                "arguments": [{"name": "id", "type": "Int!"}]},
            "permissions": [{"role": "editor"}, {"role": "user", "comment": "own articles"}]
        }))
        .unwrap();
        metadata.actions.push(action);
        metadata
    }

    /// Every object of a document, put into an empty one (tables first), gives the same
    /// objects back; removing each again leaves nothing.
    #[test]
    fn put_is_the_inverse_of_catalog_objects() {
        let original = blog();
        let objects = catalog_objects(&original);
        assert!(objects.len() > 10);
        assert!(objects.contains_key("event_trigger:article_published"));
        assert!(objects.contains_key("remote_schema:newsletter"));
        assert!(objects.contains_key("action_permission:archiveArticle.user"));
        let mut rebuilt = Metadata::default();
        let (tables, parts): (Vec<_>, Vec<_>) = objects
            .values()
            .cloned()
            .partition(|o| matches!(o, Object::Table(_)));
        for object in tables.into_iter().chain(parts) {
            put(&mut rebuilt, object).unwrap();
        }
        assert_eq!(catalog_objects(&rebuilt), objects);
        for object in objects.values().rev() {
            remove(&mut rebuilt, object);
        }
        assert!(catalog_objects(&rebuilt).is_empty());
    }

    #[test]
    fn put_replaces_by_key_and_parts_need_their_table() {
        let mut metadata = blog();
        let objects = catalog_objects(&metadata);
        let (key, permission) = objects
            .iter()
            .find(|(k, _)| k.starts_with("permission:"))
            .unwrap();
        let Object::Permission(t, kind, mut p) = permission.clone() else {
            unreachable!()
        };
        p.comment = Some("changed".into());
        put(&mut metadata, Object::Permission(t.clone(), kind, p)).unwrap();
        let after = catalog_objects(&metadata);
        assert_eq!(after.len(), objects.len());
        assert_ne!(after[key], objects[key]);

        let mut empty = Metadata::default();
        assert_eq!(
            put(&mut empty, permission.clone()),
            Err(PlaceError::TableNotTracked(t))
        );
        // A table's removal takes its parts with it.
        let author = &after["table:public.author"];
        assert!(after.keys().any(|k| k.contains(":public.author.")));
        remove(&mut metadata, author);
        let left = catalog_objects(&metadata);
        assert!(!left.contains_key("table:public.author"));
        assert!(!left.keys().any(|k| k.contains(":public.author.")));
        assert!(left.keys().any(|k| k.contains(":public.article.")));
    }

    #[test]
    fn event_triggers_are_placed_by_name_across_tables() {
        let mut metadata = blog();
        let key = "event_trigger:article_published";
        let Object::EventTrigger(_, mut trigger) = catalog_objects(&metadata)[key].clone() else {
            unreachable!()
        };
        // Same name, same table: replaced in place.
        trigger.webhook = Some("http://hooks.example/v2".into());
        put(
            &mut metadata,
            Object::EventTrigger(QualifiedTable::new("public", "article"), trigger.clone()),
        )
        .unwrap();
        let article = QualifiedTable::new("public", "article");
        let on = |m: &Metadata, t: &QualifiedTable| m.table(t).map(|e| e.event_triggers.len());
        assert_eq!(on(&metadata, &article), Some(1));
        assert_eq!(
            metadata.table(&article).unwrap().event_triggers[0]
                .webhook
                .as_deref(),
            Some("http://hooks.example/v2")
        );
        // Same name on another table: the same object, moved (names are global).
        let author = QualifiedTable::new("public", "author");
        let moved = Object::EventTrigger(author.clone(), trigger.clone());
        put(&mut metadata, moved.clone()).unwrap();
        assert_eq!(on(&metadata, &article), Some(0));
        assert_eq!(on(&metadata, &author), Some(1));
        assert!(
            matches!(&catalog_objects(&metadata)[key], Object::EventTrigger(t, _) if *t == author)
        );
        // Its table must be tracked; removal goes by name.
        let mut empty = Metadata::default();
        assert_eq!(
            put(&mut empty, moved.clone()),
            Err(PlaceError::TableNotTracked(author))
        );
        remove(&mut metadata, &moved);
        assert!(!catalog_objects(&metadata).contains_key(key));
    }

    #[test]
    fn remote_schemas_are_placed_and_removed_by_name() {
        let mut metadata = blog();
        let key = "remote_schema:newsletter";
        let Object::RemoteSchema(mut remote) = catalog_objects(&metadata)[key].clone() else {
            unreachable!()
        };
        // Same name: replaced in place, whatever changed.
        remote.definition.url_from_env = None;
        remote.definition.url = Some("http://newsletter.blog.svc/graphql".into());
        put(&mut metadata, Object::RemoteSchema(remote.clone())).unwrap();
        assert_eq!(metadata.remote_schemas.len(), 1);
        assert_eq!(
            metadata.remote_schemas[0].definition.url.as_deref(),
            Some("http://newsletter.blog.svc/graphql")
        );
        // Another name: one more; a remote schema needs no table.
        let mut empty = Metadata::default();
        remote.name = Name("billing".into());
        put(&mut empty, Object::RemoteSchema(remote.clone())).unwrap();
        assert_eq!(empty.remote_schemas.len(), 1);
        put(&mut metadata, Object::RemoteSchema(remote.clone())).unwrap();
        assert_eq!(metadata.remote_schemas.len(), 2);
        remove(&mut metadata, &Object::RemoteSchema(remote));
        assert_eq!(metadata.remote_schemas.len(), 1);
        assert!(catalog_objects(&metadata).contains_key(key));
    }

    #[test]
    fn actions_keep_their_permissions_and_permissions_need_their_action() {
        let mut metadata = blog();
        let key = "action:archiveArticle";
        let Object::Action(mut action) = catalog_objects(&metadata)[key].clone() else {
            unreachable!()
        };
        assert!(
            action.permissions.is_empty(),
            "permissions are objects of their own"
        );
        // New settings: the permissions on it stay, as update_action keeps them.
        action.definition.timeout = Some(5);
        action.comment = Some("soft delete".into());
        put(&mut metadata, Object::Action(action.clone())).unwrap();
        assert_eq!(metadata.actions.len(), 1);
        assert_eq!(metadata.actions[0].definition.timeout, Some(5));
        assert_eq!(metadata.actions[0].permissions.len(), 2);

        // A permission is replaced by role, and needs its action.
        let permission = ActionPermission {
            role: Name("user".into()),
            comment: None,
        };
        let name = action.name.clone();
        put(
            &mut metadata,
            Object::ActionPermission(name.clone(), permission.clone()),
        )
        .unwrap();
        assert_eq!(metadata.actions[0].permissions.len(), 2);
        assert_eq!(metadata.actions[0].permissions[1].comment, None);
        let mut empty = Metadata::default();
        assert_eq!(
            put(
                &mut empty,
                Object::ActionPermission(name.clone(), permission.clone())
            ),
            Err(PlaceError::ActionMissing(name.clone()))
        );
        remove(&mut metadata, &Object::ActionPermission(name, permission));
        assert_eq!(metadata.actions[0].permissions.len(), 1);
        // Removing the action removes its permissions, as drop_action does.
        remove(&mut metadata, &Object::Action(action));
        assert!(metadata.actions.is_empty());
        assert!(!catalog_objects(&metadata)
            .keys()
            .any(|k| k.starts_with("action")));
    }
}
