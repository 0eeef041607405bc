//! `/v1/query` operations: [`Op::parse`] turns `{type, args, version}` into a typed operation,
//! and [`apply`] runs a [`MetadataOp`] as a pure function `Metadata × args → Metadata`. One
//! file per family, plus [`dependencies`] (who depends on what, cascade) and
//! [`schema_changes`] (what a `run_sql` change means for the metadata).
//!
//! Sits above `resolve` and below `catalog`/`controller`: validation goes through the
//! resolver's own rules (`resolve::resolve`, `resolve::check_permission`, …) against the
//! read-only `db_model::DbModel` the catalog hands in, so an operation and the resolver
//! cannot disagree. `run_sql` and `bulk` need the database between steps, so the catalog walks
//! them. Must not do IO, read the clock, or know about GraphQL, HTTP or the catalog.
//! See `docs/metadata-api.md` for every operation and `docs/architecture.md` for the path of
//! a request.

pub mod actions;
pub mod answer;
mod collections;
mod computed_fields;
mod custom_types;
pub mod dependencies;
pub mod events;
mod functions;
mod manage;
pub mod native_queries;
mod permissions;
mod relationships;
pub mod remote_relationships;
pub mod remote_schemas;
mod rest;
mod roles;
mod run_sql;
pub mod scheduled;
pub mod schema_changes;
mod tables;

pub use run_sql::RunSql;

pub use collections::check_collection;
pub use functions::FunctionOp;
pub use manage::{parse_metadata, ManageOp};
pub use permissions::check_select_root_fields;
pub use rest::RestOp;

use crate::db_model::DbModel;
use crate::metadata::error::{parse_failed, Code, MetadataError, Result};
use crate::metadata::path::JsonPath;
use crate::metadata::types::{Metadata, QualifiedTable};
use crate::resolve::remote::Remotes;
use crate::resolve::{self, Resolution};
pub use answer::Answer;
use serde_json::Value;

/// Limits applied while parsing requests.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Longest accepted `bulk` list.
    pub max_batch_size: usize,
}

/// A parsed `/v1/query` request.
#[derive(Debug, Clone)]
pub enum Op {
    /// An operation on the metadata alone (boxed: the variants differ a lot in size).
    Metadata(Box<MetadataOp>),
    /// `run_sql`: SQL against the database, keeping metadata consistent.
    RunSql(RunSql),
    /// `invoke_event_trigger`, `redeliver_event`: writes to the event log.
    EventLog(events::EventLogOp),
    /// Scheduled events: data in the catalog, not metadata.
    Scheduled(scheduled::ScheduledEventOp),
    /// Several operations in one transaction.
    Bulk(Vec<Op>),
}

/// An operation that is a pure function of the metadata and the database model.
#[derive(Debug, Clone)]
pub enum MetadataOp {
    Table(tables::TableOp),
    Relationship(relationships::RelationshipOp),
    Permission(permissions::PermissionOp),
    ComputedField(computed_fields::ComputedFieldOp),
    /// `set_custom_types`.
    CustomTypes(custom_types::SetCustomTypes),
    /// Query collections and the allow-list.
    Collection(collections::CollectionOp),
    EventTrigger(events::EventTriggerOp),
    RemoteSchema(remote_schemas::RemoteSchemaOp),
    /// Tables' relationships to remote schemas.
    RemoteRelationship(remote_relationships::RemoteRelationshipOp),
    /// REST endpoints.
    Rest(rest::RestOp),
    /// Tracked functions and their permissions.
    Function(functions::FunctionOp),
    /// Logical models and native queries.
    Native(native_queries::NativeOp),
    /// Actions and their permissions.
    Action(actions::ActionOp),
    /// Inherited roles and API limits.
    Role(roles::RoleOp),
    /// Cron triggers.
    Cron(scheduled::CronTriggerOp),
    /// Export, replace, reload, clear, inconsistency management.
    Manage(manage::ManageOp),
}

impl Op {
    /// Parses one request object (`{type, args, version}`), reporting paths from `$`.
    pub fn parse(request: &Value, limits: Limits) -> Result<Op> {
        let root = JsonPath::root();
        let Value::Object(map) = request else {
            return Err(parse_failed(
                root,
                "expected an object with \"type\" and \"args\"",
            ));
        };
        let op_type = match map.get("type") {
            Some(Value::String(s)) => s.as_str(),
            Some(_) => return Err(parse_failed(root.key("type"), "expected String")),
            None => return Err(parse_failed(root, "the key 'type' was not present")),
        };
        let version = match map.get("version") {
            None | Some(Value::Null) => 1,
            Some(v) => match v.as_i64() {
                Some(n @ (1 | 2)) => n,
                Some(n) => {
                    return Err(parse_failed(
                        root.key("version"),
                        format!("expected 1 or 2, encountered {n}"),
                    ))
                }
                None => {
                    return Err(parse_failed(
                        root.key("version"),
                        format!("expected 1 or 2, encountered {v}"),
                    ))
                }
            },
        };
        let path = root.key("args");
        if let Some(op) = roles::RoleOp::parse(op_type, map.get("args"), &path)? {
            if version == 2 {
                return Err(parse_failed(
                    root.key("version"),
                    format!("operation \"{op_type}\" does not accept version 2"),
                ));
            }
            return Ok(Op::Metadata(Box::new(MetadataOp::Role(op))));
        }
        let args = map
            .get("args")
            .ok_or_else(|| parse_failed(root.clone(), "the key 'args' was not present"))?;
        let versioned = matches!(
            op_type,
            "track_table" | "set_table_custom_fields" | "replace_metadata" | "track_function"
        );
        if version == 2 && !versioned {
            return Err(parse_failed(
                root.key("version"),
                format!("operation \"{op_type}\" does not accept version 2"),
            ));
        }
        if op_type == "bulk" {
            return Self::parse_bulk(args, &path, limits);
        }
        if op_type == "run_sql" {
            return Ok(Op::RunSql(RunSql::parse(args, &path)?));
        }
        if let Some(op) = tables::TableOp::parse(op_type, version, args, &path)? {
            return Ok(Op::Metadata(Box::new(MetadataOp::Table(op))));
        }
        if let Some(op) = relationships::RelationshipOp::parse(op_type, args, &path)? {
            return Ok(Op::Metadata(Box::new(MetadataOp::Relationship(op))));
        }
        if let Some(op) = permissions::PermissionOp::parse(op_type, args, &path)? {
            return Ok(Op::Metadata(Box::new(MetadataOp::Permission(op))));
        }
        if let Some(op) = computed_fields::ComputedFieldOp::parse(op_type, args, &path)? {
            return Ok(Op::Metadata(Box::new(MetadataOp::ComputedField(op))));
        }
        if op_type == "set_custom_types" {
            return Ok(Op::Metadata(Box::new(MetadataOp::CustomTypes(
                custom_types::SetCustomTypes::parse(args, &path)?,
            ))));
        }
        if let Some(op) = collections::CollectionOp::parse(op_type, args, &path)? {
            return Ok(Op::Metadata(Box::new(MetadataOp::Collection(op))));
        }
        if let Some(op) = events::EventTriggerOp::parse(op_type, args, &path)? {
            return Ok(Op::Metadata(Box::new(MetadataOp::EventTrigger(op))));
        }
        if let Some(op) = remote_schemas::RemoteSchemaOp::parse(op_type, args, &path)? {
            return Ok(Op::Metadata(Box::new(MetadataOp::RemoteSchema(op))));
        }
        if let Some(op) = remote_relationships::RemoteRelationshipOp::parse(op_type, args, &path)? {
            return Ok(Op::Metadata(Box::new(MetadataOp::RemoteRelationship(op))));
        }
        if let Some(op) = rest::RestOp::parse(op_type, args, &path)? {
            return Ok(Op::Metadata(Box::new(MetadataOp::Rest(op))));
        }
        if let Some(op) = functions::FunctionOp::parse(op_type, args, &path)? {
            return Ok(Op::Metadata(Box::new(MetadataOp::Function(op))));
        }
        if let Some(op) = native_queries::NativeOp::parse(op_type, args, &path)? {
            return Ok(Op::Metadata(Box::new(MetadataOp::Native(op))));
        }
        if let Some(op) = actions::ActionOp::parse(op_type, args, &path)? {
            return Ok(Op::Metadata(Box::new(MetadataOp::Action(op))));
        }
        if let Some(op) = events::EventLogOp::parse(op_type, args, &path)? {
            return Ok(Op::EventLog(op));
        }
        if let Some(op) = scheduled::CronTriggerOp::parse(op_type, args, &path)? {
            return Ok(Op::Metadata(Box::new(MetadataOp::Cron(op))));
        }
        if let Some(op) = scheduled::ScheduledEventOp::parse(op_type, args, &path)? {
            return Ok(Op::Scheduled(op));
        }
        if let Some(op) = manage::ManageOp::parse(op_type, version, args, &path)? {
            return Ok(Op::Metadata(Box::new(MetadataOp::Manage(op))));
        }
        Err(parse_failed(
            root.key("type"),
            format!("unknown operation type \"{op_type}\""),
        ))
    }

    fn parse_bulk(args: &Value, path: &JsonPath, limits: Limits) -> Result<Op> {
        let Value::Array(items) = args else {
            return Err(parse_failed(
                path.clone(),
                "expected Array for the args of bulk",
            ));
        };
        if items.len() > limits.max_batch_size {
            return Err(parse_failed(
                path.clone(),
                format!(
                    "bulk accepts at most {} operations, got {}",
                    limits.max_batch_size,
                    items.len()
                ),
            ));
        }
        items
            .iter()
            .enumerate()
            .map(|(i, item)| Op::parse(item, limits).map_err(|e| e.under(&path.index(i))))
            .collect::<Result<Vec<_>>>()
            .map(Op::Bulk)
    }

    /// True for requests that change neither the metadata nor the database.
    pub fn is_read_only(&self) -> bool {
        match self {
            Op::Metadata(op) => match op.as_ref() {
                MetadataOp::Manage(m) => m.is_read_only(),
                MetadataOp::Cron(c) => c.is_read_only(),
                _ => false,
            },
            Op::RunSql(sql) => sql.read_only,
            Op::EventLog(_) => false,
            Op::Scheduled(s) => s.is_read_only(),
            Op::Bulk(ops) => ops.iter().all(Op::is_read_only),
        }
    }

    /// The remote-schema definitions this request introspects before its transaction, given
    /// the document as it stands: added ones, reloaded ones, all of them for
    /// `reload_metadata` with `reload_remote_schemas`, and every one of a replacement
    /// document.
    pub fn introspects(
        &self,
        metadata: &Metadata,
    ) -> Vec<crate::metadata::types::RemoteSchemaEntry> {
        match self {
            Op::Metadata(op) => match op.as_ref() {
                MetadataOp::RemoteSchema(r) => r.introspects(metadata),
                MetadataOp::Manage(ManageOp::Reload {
                    remote_schemas: true,
                }) => metadata.remote_schemas.clone(),
                MetadataOp::Manage(ManageOp::Replace { metadata: next, .. }) => {
                    next.remote_schemas.clone()
                }
                _ => Vec::new(),
            },
            Op::RunSql(_) | Op::EventLog(_) | Op::Scheduled(_) => Vec::new(),
            Op::Bulk(ops) => ops.iter().flat_map(|op| op.introspects(metadata)).collect(),
        }
    }

    /// Whether the request asks for the database to be read again (`reload_metadata`): it
    /// never starts from a kept state ([`crate::transaction::LastWrite`]).
    pub fn rereads_database(&self) -> bool {
        match self {
            Op::Metadata(op) => matches!(op.as_ref(), MetadataOp::Manage(ManageOp::Reload { .. })),
            Op::RunSql(_) | Op::EventLog(_) | Op::Scheduled(_) => false,
            Op::Bulk(ops) => ops.iter().any(Op::rereads_database),
        }
    }

    /// Whether [`Op::introspects`] can name anything: most requests never call a remote, and
    /// need not read the document for it.
    pub fn may_introspect(&self) -> bool {
        match self {
            Op::Metadata(op) => match op.as_ref() {
                MetadataOp::RemoteSchema(r) => {
                    !matches!(r, remote_schemas::RemoteSchemaOp::Remove { .. })
                }
                MetadataOp::Manage(ManageOp::Reload { remote_schemas }) => *remote_schemas,
                MetadataOp::Manage(ManageOp::Replace { metadata, .. }) => {
                    !metadata.remote_schemas.is_empty()
                }
                _ => false,
            },
            Op::RunSql(_) | Op::EventLog(_) | Op::Scheduled(_) => false,
            Op::Bulk(ops) => ops.iter().any(Op::may_introspect),
        }
    }

    /// Tables whose rows must be loaded to check the enum-table rules for this request.
    pub fn enum_candidates(&self) -> Vec<QualifiedTable> {
        match self {
            Op::Metadata(op) => match op.as_ref() {
                MetadataOp::Table(t) => t.enum_candidates(),
                MetadataOp::Manage(m) => m.enum_candidates(),
                _ => Vec::new(),
            },
            Op::RunSql(_) | Op::EventLog(_) | Op::Scheduled(_) => Vec::new(),
            Op::Bulk(ops) => ops.iter().flat_map(Op::enum_candidates).collect(),
        }
    }
}

/// What an operation needs from outside the metadata: the database as introspected in the
/// same transaction, and the remote schemas' introspection state (with this request's
/// introspection results).
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub db: &'a DbModel,
    /// Remote schemas' stored and fresh introspection results.
    pub remotes: &'a Remotes,
    /// The metadata an operation is applied to, already resolved against `db` and `remotes`
    /// (the state a request started from, when the catalog kept it); `None`: resolve it.
    pub resolved: Option<&'a Resolution>,
}

impl<'a> Context<'a> {
    /// The metadata resolved against this context.
    pub fn resolve(&self, metadata: &Metadata) -> Resolution {
        resolve::resolve_with(metadata, self.db, self.remotes)
    }

    /// The metadata an operation is applied to, resolved: [`Context::resolved`] when given.
    fn current(&self, metadata: &Metadata) -> std::borrow::Cow<'a, Resolution> {
        match self.resolved {
            Some(resolved) => std::borrow::Cow::Borrowed(resolved),
            None => std::borrow::Cow::Owned(self.resolve(metadata)),
        }
    }
}

/// The result of applying an operation.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The metadata after the operation.
    pub metadata: Metadata,
    /// What the operation answers.
    pub answer: Answer,
    /// True when the operation handles inconsistency itself (replace, reload, drop
    /// inconsistent), so the "no new inconsistency" rule does not apply.
    pub own_consistency_rules: bool,
}

impl MetadataOp {
    /// Whether [`apply`] reads the resolution of the document it is applied to: every
    /// operation but those on query collections and remote schemas. A caller that keeps one
    /// hands it in ([`Context::resolved`]) rather than have it resolved again.
    pub fn reads_schema(&self) -> bool {
        !matches!(
            self,
            MetadataOp::Collection(_)
                | MetadataOp::RemoteSchema(_)
                | MetadataOp::Role(_)
                | MetadataOp::Native(_)
        )
    }
}

/// Applies `op` to `metadata`. Pure: reads only its arguments.
pub fn apply(metadata: &Metadata, op: &MetadataOp, ctx: Context<'_>) -> Result<Outcome> {
    let cache = || ctx.current(metadata);
    let done = |metadata: Metadata| Outcome {
        metadata,
        answer: Answer::success(),
        own_consistency_rules: false,
    };
    match op {
        MetadataOp::Table(t) => t.apply(metadata, &cache(), ctx).map(done),
        MetadataOp::Relationship(r) => r.apply(metadata, &cache()).map(done),
        MetadataOp::Permission(p) => p.apply(metadata, &cache()).map(done),
        MetadataOp::ComputedField(c) => c.apply(metadata, &cache(), ctx).map(done),
        MetadataOp::CustomTypes(c) => c.apply(metadata, &cache(), ctx).map(done),
        MetadataOp::Collection(c) => c.apply(metadata).map(done),
        MetadataOp::EventTrigger(e) => e.apply(metadata, &cache()).map(done),
        MetadataOp::RemoteSchema(r) => r.apply(metadata, ctx).map(done),
        MetadataOp::RemoteRelationship(r) => r.apply(metadata, &cache()).map(done),
        MetadataOp::Rest(r) => r.apply(metadata, &cache(), ctx).map(done),
        MetadataOp::Function(f) => f.apply(metadata, &cache(), ctx).map(done),
        MetadataOp::Native(n) => n.apply(metadata).map(done),
        MetadataOp::Action(a) => a.apply(metadata, &cache(), ctx).map(done),
        MetadataOp::Role(r) => r.apply(metadata).map(done),
        MetadataOp::Cron(c) => c.apply(metadata).map(|(metadata, read)| Outcome {
            metadata,
            answer: read.map(Answer::Value).unwrap_or_else(Answer::success),
            own_consistency_rules: false,
        }),
        MetadataOp::Manage(m) => m.apply(metadata, &cache(), ctx),
    }
}

/// Enforces "no new inconsistency": objects inconsistent after but not before fail the request.
pub fn check_no_new_inconsistency(before: &Resolution, after: &Resolution) -> Result<()> {
    let old = before.blocking_ids();
    let fresh: Vec<&resolve::Inconsistency> = after
        .inconsistencies
        .iter()
        .filter(|i| !old.contains(&i.object))
        .collect();
    if let Some(clash) = fresh.iter().find(|i| i.conflict) {
        return Err(MetadataError::new(
            Code::RemoteSchemaConflicts,
            JsonPath::args(),
            clash.reason.clone(),
        ));
    }
    let new: Vec<Value> = fresh.iter().map(|i| i.to_json()).collect();
    if new.is_empty() {
        return Ok(());
    }
    Err(MetadataError::new(
        Code::Unexpected,
        JsonPath::args(),
        "cannot continue due to new inconsistent metadata",
    )
    .with_internal(Value::Array(new)))
}

/// The tracked entry of `table`, or `not-exists` at `path`.
fn tracked_entry<'a>(
    metadata: &'a mut Metadata,
    table: &QualifiedTable,
    path: &JsonPath,
) -> Result<&'a mut crate::metadata::types::TableEntry> {
    metadata.table_mut(table).ok_or_else(|| {
        crate::metadata::error::not_exists_in_metadata(
            path.clone(),
            format!("table \"{table}\" does not exist"),
        )
    })
}

/// The resolved (tracked and consistent) table, or `not-exists` at `path`.
fn resolved_table<'a>(
    cache: &'a Resolution,
    table: &QualifiedTable,
    path: &JsonPath,
) -> Result<&'a resolve::ResolvedTable> {
    cache
        .resolved
        .tables
        .get(table)
        .map(|t| &**t)
        .ok_or_else(|| {
            crate::metadata::error::not_exists_in_metadata(
                path.clone(),
                format!("table \"{table}\" does not exist"),
            )
        })
}

/// Removes `id` from `next`, failing with `dependency-error` when other objects depend on it
/// and `cascade` is false; with `cascade` they are removed too.
fn drop_with_dependents(
    metadata: &Metadata,
    next: &mut Metadata,
    cache: &Resolution,
    id: crate::metadata::ids::ObjectId,
    cascade: bool,
) -> Result<()> {
    let mut removed =
        dependencies::dependents(metadata, &cache.resolved, std::slice::from_ref(&id));
    if !removed.is_empty() && !cascade {
        return Err(MetadataError::new(
            Code::DependencyError,
            JsonPath::args(),
            format!(
                "cannot drop due to the following dependent objects : {}",
                dependencies::describe(&removed)
            ),
        ));
    }
    removed.insert(id);
    dependencies::remove(next, &removed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db_model::{DbTable, QualifiedName};
    use crate::metadata::error::Missing;
    use serde_json::json;

    fn run(metadata: &Metadata, db: &DbModel, request: Value) -> MetadataError {
        let Op::Metadata(op) = Op::parse(&request, Limits { max_batch_size: 10 }).unwrap() else {
            panic!("not a metadata operation: {request}");
        };
        apply(
            metadata,
            &op,
            Context {
                db,
                remotes: &Default::default(),
                resolved: None,
            },
        )
        .unwrap_err()
    }

    fn author_db() -> DbModel {
        tables_db(&["author"])
    }

    /// A database of one-column (`id integer`) tables in `public`.
    fn tables_db(names: &[&str]) -> DbModel {
        let mut db = DbModel::default();
        for (oid, name) in names.iter().enumerate() {
            let table: DbTable = serde_json::from_value(json!({
            "oid": oid + 1, "schema": "public", "name": name, "kind": "r", "comment": null,
            "columns": [{
                "name": "id", "attnum": 1, "data_type": "integer", "type_name": "int4",
                "type_schema": "pg_catalog", "type_kind": "b", "element_type": null,
                "nullable": false, "default": null, "generated": false, "identity": false,
                "comment": null
            }],
            "constraints": [], "updatable_bits": 28
            }))
            .unwrap();
            db.tables
                .insert(QualifiedName::new("public", *name), table.into());
        }
        db
    }

    /// Applies `request` to `metadata`, which must succeed.
    fn applied(metadata: &Metadata, db: &DbModel, request: Value) -> Metadata {
        let Op::Metadata(op) = Op::parse(&request, Limits { max_batch_size: 10 }).unwrap() else {
            panic!("not a metadata operation: {request}");
        };
        let ctx = Context {
            db,
            remotes: &Default::default(),
            resolved: None,
        };
        apply(metadata, &op, ctx).unwrap().metadata
    }

    /// Which entries of `after` are still the very entries of `before` (not copies).
    fn shared(before: &Metadata, after: &Metadata) -> Vec<bool> {
        after
            .tables
            .iter()
            .map(|a| before.tables.iter().any(|b| std::sync::Arc::ptr_eq(a, b)))
            .collect()
    }

    #[test]
    fn an_operation_copies_only_the_table_entries_it_changes() {
        let db = tables_db(&["a", "b", "c"]);
        let mut metadata = Metadata::default();
        for name in ["a", "b", "c"] {
            metadata = applied(
                &metadata,
                &db,
                json!({"type": "track_table", "args": {"table": name}}),
            );
        }
        let permitted = applied(
            &metadata,
            &db,
            json!({"type": "create_select_permission", "args": {
                "table": "b", "role": "user", "permission": {"columns": ["id"], "filter": {}}}}),
        );
        assert_eq!(shared(&metadata, &permitted), [true, false, true]);
        assert_ne!(metadata, permitted);
        // Cascading removal copies only the table that held the dropped objects.
        let dropped = applied(
            &permitted,
            &db,
            json!({"type": "drop_select_permission", "args": {"table": "b", "role": "user"}}),
        );
        assert_eq!(shared(&permitted, &dropped), [true, false, true]);
        assert_eq!(dropped, metadata, "back to the document before");
        let untracked = applied(
            &permitted,
            &db,
            json!({"type": "untrack_table", "args": {"table": "b", "cascade": true}}),
        );
        assert_eq!(shared(&permitted, &untracked), [true, true]);
    }

    #[test]
    fn not_exists_errors_say_what_is_missing() {
        let empty = Metadata::default();
        let err = run(
            &empty,
            &DbModel::default(),
            json!({"type": "track_table", "args": {"table": "author"}}),
        );
        assert_eq!(
            (err.code, err.missing),
            (Code::NotExists, Some(Missing::DatabaseObject))
        );
        let err = run(
            &empty,
            &author_db(),
            json!({"type": "create_object_relationship", "args": {
                "table": "author", "name": "x", "using": {"foreign_key_constraint_on": "id"}}}),
        );
        assert_eq!(
            (err.code, err.missing),
            (Code::NotExists, Some(Missing::Metadata))
        );
        let mut tracked = Metadata::default();
        tracked.tables.push(std::sync::Arc::new(
            crate::metadata::types::TableEntry::new(QualifiedTable::new("public", "author")),
        ));
        let err = run(
            &tracked,
            &author_db(),
            json!({"type": "create_select_permission", "args": {
                "table": "author", "role": "user",
                "permission": {"columns": ["nope"], "filter": {}}}}),
        );
        assert_eq!(
            (err.code, err.missing),
            (Code::NotExists, Some(Missing::DatabaseObject))
        );
        let err = run(
            &tracked,
            &author_db(),
            json!({"type": "drop_query_from_collection", "args": {
                "collection_name": "c", "query_name": "q"}}),
        );
        assert_eq!(
            (err.code, err.missing),
            (Code::NotExists, Some(Missing::Metadata))
        );
    }
}
