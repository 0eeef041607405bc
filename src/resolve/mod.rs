//! Metadata resolved against the database model. Every later layer reads the
//! [`Resolved`] model; objects that do not fit the database are reported as [`Inconsistency`]
//! and left out, so one broken object never takes the engine down. Pure: no IO.
//!
//! [`resolve_with`] resolves a whole document; [`resolve_from`] resolves one derived from an
//! already resolved document (a metadata write), again only where the change reaches.

pub mod actions;
mod boolexp;
mod checks;
pub mod events;
pub mod functions;
mod incremental;
pub mod inherited;
pub mod live_change;
pub mod native_queries;
pub mod operators;
mod permissions;
mod reads;
mod relationships;
pub mod remote;
pub mod remote_join;
pub mod remote_to_table;
pub mod rest;
mod rules;
pub mod scheduled;

pub use boolexp::{check_bool_exp, check_presets, is_session_variable, Reference, Segment, Target};
pub use checks::{
    check_computed_field, check_custom_types, check_enum_table as checks_enum, check_reserved_name,
    computed_field_error,
};
pub use incremental::resolve_from;
pub use operators::{CompareOp, TypeFamily};
use permissions::resolve_permissions;
pub use permissions::{check_permission, CheckedPermission};
use relationships::resolve_relationships;
pub use relationships::{resolve_array_relationship, resolve_object_relationship};
pub use rules::{
    BoolExp, ColumnRef, Condition, DeleteRule, InsertRule, Preset, PresetValue, RolePermissions,
    RuleValue, SelectRule, UpdateRule,
};

use crate::db_model::{DbModel, DbTable};
use crate::metadata::error::{not_exists_in_database, not_exists_in_metadata, Code, MetadataError};
use crate::metadata::ids::{
    computed_field_definition, event_trigger_definition, permission_definition,
    relationship_definition, ObjectId, PermissionKind,
};
use crate::metadata::path::JsonPath;
use crate::metadata::types::*;
use indexmap::IndexMap;
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};

/// A metadata object that does not fit the database (or is not supported yet).
#[derive(Debug, Clone, PartialEq)]
pub struct Inconsistency {
    pub object: ObjectId,
    /// `type` on the wire (`table`, `object_relation`, `select_permission` …).
    pub kind: &'static str,
    /// The object's metadata as it was created.
    pub definition: Value,
    pub reason: String,
    /// A remote schema clashing with the rest of the schema: a request that introduces it
    /// fails with `remote-schema-conflicts` and this reason as its message.
    pub conflict: bool,
}

impl Inconsistency {
    /// Wire shape `{"type","definition","reason"}`.
    pub fn to_json(&self) -> Value {
        json!({"type": self.kind, "definition": self.definition, "reason": self.reason})
    }
}

/// Relationship cardinality.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelationshipKind {
    /// At most one related row.
    Object,
    /// Any number of related rows.
    Array,
}

/// A relationship with its target and join columns worked out.
#[derive(Debug, Clone)]
pub struct ResolvedRelationship {
    /// Field name.
    pub name: String,
    pub kind: RelationshipKind,
    pub target: QualifiedTable,
    /// (local column, remote column) pairs.
    pub mapping: Vec<(String, String)>,
}

/// An input argument of a computed field's function.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionArgument {
    /// Name (empty when unnamed).
    pub name: String,
    /// `pg_type.typname`, for the GraphQL scalar.
    pub type_name: String,
    /// The type values are bound as.
    pub cast: crate::db_model::PgType,
    /// The function has a default for it, so a call may leave it out.
    pub has_default: bool,
}

/// What a computed field returns.
#[derive(Debug, Clone, PartialEq)]
pub enum ComputedReturn {
    /// A scalar of this Postgres type.
    Scalar(String),
    /// Rows of a tracked table (`set` for `SETOF`).
    Table { table: QualifiedTable, set: bool },
}

/// A computed field with its function checked.
#[derive(Debug, Clone)]
pub struct ResolvedComputedField {
    /// Field name.
    pub name: String,
    pub function: QualifiedFunction,
    /// Position of the row argument among the input arguments.
    pub table_argument: usize,
    /// Position of the session argument, if any.
    pub session_argument: Option<usize>,
    /// Input arguments; the caller passes the ones not bound above.
    pub arguments: Vec<FunctionArgument>,
    pub returns: ComputedReturn,
}

/// A tracked table, consistent with the database.
#[derive(Debug, Clone)]
pub struct ResolvedTable {
    pub name: QualifiedTable,
    /// The database's view of it.
    pub db: std::sync::Arc<DbTable>,
    /// Enum table values (value, description) when `is_enum`.
    pub enum_values: Option<Vec<(String, Option<String>)>>,
    /// Custom names.
    pub configuration: TableConfig,
    /// Relationships by name.
    pub relationships: IndexMap<String, ResolvedRelationship>,
    /// Computed fields by name.
    pub computed_fields: IndexMap<String, ResolvedComputedField>,
    /// Permissions by role.
    pub permissions: IndexMap<String, RolePermissions>,
    /// The other tables its relationships, computed fields and permissions looked at while
    /// they were resolved (whether tracked or not): a change to one of them may change this
    /// table's resolution, so [`resolve_from`] resolves it again.
    pub reads: BTreeSet<QualifiedTable>,
    /// Fields answered by a remote schema, by name.
    pub remote_relationships: IndexMap<String, remote_join::ResolvedRemoteJoin>,
}

impl ResolvedTable {
    /// What a field name of this table refers to.
    pub fn field(&self, name: &str) -> Option<FieldRef<'_>> {
        if let Some(c) = self.db.column(name) {
            return Some(FieldRef::Column(c));
        }
        if let Some(r) = self.relationships.get(name) {
            return Some(FieldRef::Relationship(r));
        }
        if let Some(c) = self.computed_fields.get(name) {
            return Some(FieldRef::ComputedField(c));
        }
        self.remote_relationships
            .get(name)
            .map(FieldRef::RemoteRelationship)
    }
}

/// A field of a table: column, relationship, computed field or remote relationship.
#[derive(Debug, Clone, Copy)]
pub enum FieldRef<'a> {
    Column(&'a crate::db_model::DbColumn),
    Relationship(&'a ResolvedRelationship),
    ComputedField(&'a ResolvedComputedField),
    RemoteRelationship(&'a remote_join::ResolvedRemoteJoin),
}

/// The consistent part of the metadata, ready for the GraphQL layer.
#[derive(Debug, Clone, Default)]
pub struct Resolved {
    /// Tracked, consistent tables. Each is shared between the resolutions of the documents a
    /// write derives from one another ([`resolve_from`] keeps the tables a change does not
    /// reach): reach one mutably with `Arc::make_mut`.
    pub tables: IndexMap<QualifiedTable, std::sync::Arc<ResolvedTable>>,
    /// Every role named by a consistent permission.
    pub roles: BTreeSet<String>,
    /// Deliverable event triggers, by name.
    pub event_triggers: std::collections::BTreeMap<String, events::ResolvedEventTrigger>,
    /// Remote schemas merged into the GraphQL schema, in metadata order.
    pub remote_schemas: Vec<remote::ResolvedRemote>,
    /// Served actions, in metadata order.
    pub actions: Vec<actions::ResolvedAction>,
    /// The custom types, with their relationships to tables resolved.
    pub custom_types: actions::ResolvedCustomTypes,
    /// Served remote schemas' object types' relationships to tables.
    pub remote_relationships: Vec<remote_to_table::ResolvedToTable>,
    /// Served REST endpoints, in metadata order.
    pub rest_endpoints: Vec<rest::ResolvedEndpoint>,
    /// Served tracked functions, in metadata order.
    pub functions: Vec<functions::ResolvedFunction>,
    /// Consistent logical models, in metadata order.
    pub logical_models: Vec<native_queries::ResolvedModel>,
    /// Served native queries, in metadata order.
    pub native_queries: Vec<native_queries::ResolvedNativeQuery>,
    /// Deliverable cron triggers, by name.
    pub cron_triggers: std::collections::BTreeMap<String, scheduled::ResolvedCronTrigger>,
}

impl Resolved {
    /// The resolved table `name`. The resolver's stages look at other tables only through
    /// this, which notes the look for [`ResolvedTable::reads`].
    pub fn table(&self, name: &QualifiedTable) -> Option<&ResolvedTable> {
        reads::note(name);
        self.tables.get(name).map(|t| &**t)
    }

    /// The table `name` to change while it is being resolved (copied first if shared).
    fn table_mut(&mut self, name: &QualifiedTable) -> Option<&mut ResolvedTable> {
        self.tables.get_mut(name).map(std::sync::Arc::make_mut)
    }
}

/// A document resolved against a database model: what is served, and what did not fit.
#[derive(Debug, Clone, Default)]
pub struct Resolution {
    /// The consistent model.
    pub resolved: Resolved,
    /// Objects left out, in metadata order.
    pub inconsistencies: Vec<Inconsistency>,
    /// Permissions an inherited role could not derive because its parents disagree: listed
    /// with the inconsistencies, but informational (they block nothing).
    pub conflicts: Vec<inherited::Conflict>,
    /// The errors of inconsistent logical models and native queries, which the operation
    /// that introduced one answers with (`docs/native-queries.md`, "Common rules").
    pub deferred: Vec<(ObjectId, MetadataError)>,
}

impl Resolution {
    /// Ids of the inconsistent objects (they block writes that add more).
    pub fn blocking_ids(&self) -> BTreeSet<ObjectId> {
        self.inconsistencies
            .iter()
            .map(|i| i.object.clone())
            .collect()
    }

    /// The wire array of inconsistent objects.
    pub fn inconsistencies_json(&self) -> Value {
        Value::Array(
            self.inconsistencies
                .iter()
                .map(Inconsistency::to_json)
                .collect(),
        )
    }
}

/// Resolves the metadata against the database, with no stored remote-schema introspection
/// (every remote schema is then inconsistent: not introspected).
pub fn resolve(metadata: &Metadata, db: &DbModel) -> Resolution {
    resolve_with(metadata, db, &remote::Remotes::default())
}

/// Resolves the metadata against the database and the stored introspection of its remote
/// schemas.
pub fn resolve_with(metadata: &Metadata, db: &DbModel, remotes: &remote::Remotes) -> Resolution {
    let mut cache = Resolution::default();
    cache.resolved.tables.reserve(metadata.tables.len());
    // Nine root fields at most per table.
    let mut root_fields: HashMap<String, &QualifiedTable> =
        HashMap::with_capacity(metadata.tables.len() * 9);
    for entry in &metadata.tables {
        resolve_table_or_report(entry, db, &mut root_fields, &mut cache);
    }
    let entries: Vec<&TableEntry> = metadata.tables.iter().map(|e| &**e).collect();
    resolve_table_objects(&entries, db, &mut cache);
    resolve_globals(metadata, db, &root_fields, remotes, &mut cache);
    cache
}

/// The first stage of one table: its own configuration against the database, and its root
/// fields against those taken by the tables before it. A table that fails is left out, and
/// everything defined on it is reported with it, each on its own.
fn resolve_table_or_report<'m>(
    entry: &'m TableEntry,
    db: &DbModel,
    root_fields: &mut HashMap<String, &'m QualifiedTable>,
    cache: &mut Resolution,
) {
    match resolve_table(entry, db, root_fields) {
        Ok(table) => {
            cache
                .resolved
                .tables
                .insert(entry.table.clone(), std::sync::Arc::new(table));
        }
        Err(err) => {
            let reason = format!("table \"{}\" is inconsistent: {}", entry.table, err.message);
            cache.inconsistencies.push(Inconsistency {
                object: ObjectId::Table(entry.table.clone()),
                kind: "table",
                definition: json!(entry.table),
                reason: err.message,
                conflict: false,
            });
            for owned in entry.owned_objects() {
                cache.inconsistencies.push(Inconsistency {
                    object: owned.id,
                    kind: owned.kind,
                    definition: owned.definition,
                    reason: reason.clone(),
                    conflict: false,
                });
            }
        }
    }
}

/// The later stages of `entries`, each stage for all of them before the next (a permission
/// may follow any table's relationships): relationships, computed fields, permissions, event
/// triggers. What each table's stages look at in other tables is kept in its
/// [`ResolvedTable::reads`].
fn resolve_table_objects(entries: &[&TableEntry], db: &DbModel, cache: &mut Resolution) {
    for entry in entries {
        recorded(cache, &entry.table, |cache| {
            resolve_relationships(entry, cache)
        });
    }
    for entry in entries {
        recorded(cache, &entry.table, |cache| {
            resolve_computed_fields(entry, db, cache)
        });
    }
    for entry in entries {
        recorded(cache, &entry.table, |cache| {
            resolve_permissions(entry, cache)
        });
    }
    for entry in entries {
        if !cache.resolved.tables.contains_key(&entry.table) {
            continue; // reported with their table
        }
        resolve_event_triggers(entry, db, cache);
    }
}

/// Runs one stage of `table`, adding the other tables it looked at to the table's reads.
fn recorded(cache: &mut Resolution, table: &QualifiedTable, stage: impl FnOnce(&mut Resolution)) {
    let mut read = reads::recording(|| stage(cache));
    read.remove(table);
    if read.is_empty() {
        return;
    }
    if let Some(t) = cache.resolved.table_mut(table) {
        t.reads.append(&mut read);
    }
}

/// What is resolved across tables once they all are: custom types, the set of roles,
/// actions (whose names may not take a table's root field) and remote schemas.
fn resolve_globals<T: std::fmt::Display>(
    metadata: &Metadata,
    db: &DbModel,
    root_fields: &HashMap<String, T>,
    remotes: &remote::Remotes,
    cache: &mut Resolution,
) {
    let reasons = check_custom_types(&metadata.custom_types, &cache.resolved, db);
    if let Err(err) = reasons {
        cache.inconsistencies.push(Inconsistency {
            object: ObjectId::CustomTypes,
            kind: "custom_types",
            definition: json!(metadata.custom_types),
            reason: err.message,
            conflict: false,
        });
    }
    cache.resolved.roles = cache
        .resolved
        .tables
        .values()
        .flat_map(|t| t.permissions.keys().cloned())
        .collect();
    actions::resolve_actions(metadata, db, root_fields, remotes.action_types, cache);
    functions::resolve_all(metadata, db, cache);
    native_queries::resolve_all(metadata, db, cache);
    inherited::derive_roles(metadata, cache);
    remote::resolve_remotes(&metadata.remote_schemas, remotes, cache);
    remote_join::resolve_all(metadata, cache);
    remote_to_table::resolve_all(metadata, cache);
    rest::resolve_all(metadata, remotes.documents, cache);
    scheduled::resolve_all(metadata, cache);
}

/// Every root field name the resolved tables contribute, with its table.
pub fn table_root_fields(resolved: &Resolved) -> HashMap<String, QualifiedTable> {
    resolved
        .tables
        .values()
        .flat_map(|t| {
            root_field_names(&t.name, &t.db, &t.configuration.custom_root_fields)
                .into_iter()
                .map(|(_, field)| (field, t.name.clone()))
        })
        .collect()
}

/// Names of the root fields a table contributes, keyed by their custom-root-field key.
pub fn root_field_names(
    name: &QualifiedTable,
    db: &DbTable,
    config: &CustomRootFields,
) -> Vec<(&'static str, String)> {
    let base = name.graphql_base_name();
    let has_pk = db.primary_key().is_some() && !db.is_view();
    let mut fields = vec![
        ("select", config.select.clone(), base.clone(), true),
        (
            "select_by_pk",
            config.select_by_pk.clone(),
            format!("{base}_by_pk"),
            has_pk,
        ),
        (
            "select_aggregate",
            config.select_aggregate.clone(),
            format!("{base}_aggregate"),
            true,
        ),
        (
            "select_stream",
            config.select_stream.clone(),
            format!("{base}_stream"),
            true,
        ),
        (
            "insert",
            config.insert.clone(),
            format!("insert_{base}"),
            db.is_insertable(),
        ),
        (
            "insert_one",
            config.insert_one.clone(),
            format!("insert_{base}_one"),
            db.is_insertable(),
        ),
        (
            "update",
            config.update.clone(),
            format!("update_{base}"),
            db.is_updatable(),
        ),
        (
            "update_by_pk",
            config.update_by_pk.clone(),
            format!("update_{base}_by_pk"),
            db.is_updatable() && has_pk,
        ),
        (
            "update_many",
            config.update_many.clone(),
            format!("update_{base}_many"),
            db.is_updatable(),
        ),
        (
            "delete",
            config.delete.clone(),
            format!("delete_{base}"),
            db.is_deletable(),
        ),
        (
            "delete_by_pk",
            config.delete_by_pk.clone(),
            format!("delete_{base}_by_pk"),
            db.is_deletable() && has_pk,
        ),
    ];
    fields.retain(|f| f.3);
    fields
        .into_iter()
        .map(|(key, custom, default, _)| (key, custom.map(|c| c.0).unwrap_or(default)))
        .collect()
}

/// Checks a table's own configuration against the database; the error's message is the
/// inconsistency's reason.
fn resolve_table<'m>(
    entry: &'m TableEntry,
    db: &DbModel,
    root_fields: &mut HashMap<String, &'m QualifiedTable>,
) -> Result<ResolvedTable, MetadataError> {
    let name = &entry.table;
    let table = db.shared_table(&name.schema, &name.name).ok_or_else(|| {
        not_exists_in_database(
            JsonPath::root(),
            format!("no such table/view exists in postgres: \"{name}\""),
        )
    })?;
    check_table_configuration(name, table, &entry.configuration)?;
    let enum_values = if entry.is_enum {
        Some(checks::check_enum_table(name, table, db)?)
    } else {
        None
    };
    let fields = root_field_names(name, table, &entry.configuration.custom_root_fields);
    for (_, field) in &fields {
        if let Some(other) = root_fields.get(field) {
            return Err(MetadataError::new(
                Code::ConstraintViolation,
                JsonPath::root(),
                format!("the root field \"{field}\" of table \"{name}\" conflicts with a root field of table \"{other}\""),
            ));
        }
    }
    for (_, field) in fields {
        root_fields.insert(field, name);
    }
    Ok(ResolvedTable {
        name: name.clone(),
        db: table.clone(),
        enum_values,
        configuration: entry.configuration.clone(),
        relationships: IndexMap::new(),
        computed_fields: IndexMap::new(),
        permissions: IndexMap::new(),
        reads: BTreeSet::new(),
        remote_relationships: IndexMap::new(),
    })
}

/// Validates a table's configuration: the table's name must make GraphQL names, custom column
/// keys must be columns, and no two names may collide. Paths are relative to `$`.
pub fn check_table_configuration(
    name: &QualifiedTable,
    table: &DbTable,
    config: &TableConfig,
) -> Result<(), MetadataError> {
    let base = name.graphql_base_name();
    if !GraphQLName::is_servable(&base) {
        return Err(MetadataError::new(
            Code::NotSupported,
            JsonPath::root(),
            format!("cannot include \"{name}\" in the GraphQL schema because it is not a valid GraphQL identifier"),
        ));
    }
    let columns_path = JsonPath::root().key("custom_column_names");
    // Without custom names the fields are the columns, distinct already.
    let mut field_names: HashMap<&str, &str> = HashMap::new();
    if !config.custom_column_names.is_empty() {
        for column in &table.columns {
            if !config.custom_column_names.contains_key(&column.name) {
                field_names.insert(&column.name, &column.name);
            }
        }
    }
    for (column, custom) in &config.custom_column_names {
        checks::check_reserved_name(&custom.0, columns_path.key(column))?;
        if table.column(column).is_none() {
            return Err(not_exists_in_database(
                columns_path.key(column),
                format!("column \"{column}\" does not exist"),
            ));
        }
        if let Some(other) = field_names.insert(&custom.0, column) {
            return Err(MetadataError::new(
                Code::ConstraintViolation,
                columns_path.key(column),
                format!("the name \"{custom}\" of column \"{column}\" in table \"{name}\" conflicts with the field of column \"{other}\""),
            ));
        }
    }
    let mut seen: HashMap<&str, &str> = HashMap::new();
    for (key, custom) in config.custom_root_fields.entries() {
        checks::check_reserved_name(
            &custom.0,
            JsonPath::root().key("custom_root_fields").key(key),
        )?;
        if let Some(other) = seen.insert(custom.0.as_str(), key) {
            return Err(MetadataError::new(
                Code::ConstraintViolation,
                JsonPath::root().key("custom_root_fields").key(key),
                format!("the custom root fields \"{other}\" and \"{key}\" of table \"{name}\" have the same name \"{custom}\""),
            ));
        }
    }
    Ok(())
}

fn resolve_computed_fields(entry: &TableEntry, db: &DbModel, cache: &mut Resolution) {
    if !cache.resolved.tables.contains_key(&entry.table) {
        return;
    }
    for cf in &entry.computed_fields {
        let result = check_computed_field(&entry.table, cf, db, &cache.resolved).and_then(|r| {
            let clash = cache
                .resolved
                .tables
                .get(&entry.table)
                .and_then(|t| t.field(&cf.name.0));
            match clash {
                Some(_) => Err(computed_field_error(
                    &entry.table,
                    &cf.name.0,
                    Code::AlreadyExists,
                    format!(
                        "field \"{}\" conflicts with another field of table \"{}\"",
                        cf.name, entry.table
                    ),
                )),
                None => Ok(r),
            }
        });
        match result {
            Ok(r) => {
                if let Some(t) = cache.resolved.table_mut(&entry.table) {
                    t.computed_fields.insert(cf.name.0.clone(), r);
                }
            }
            Err(err) => cache.inconsistencies.push(Inconsistency {
                object: ObjectId::ComputedField(entry.table.clone(), cf.name.0.clone()),
                kind: "computed_field",
                definition: computed_field_definition(&entry.table, cf),
                reason: err.message,
                conflict: false,
            }),
        }
    }
}

/// Event triggers of a resolved table: deliverable, or inconsistent with the reason (a
/// column gone, an environment variable unset). Capture triggers dropped or edited in Postgres
/// are not judged here: every write installs them again, so they are reported apart
/// ([`events::capture_drift`]) and never block one.
fn resolve_event_triggers(entry: &TableEntry, db: &DbModel, cache: &mut Resolution) {
    let Some(db_table) = db.table(&entry.table.schema, &entry.table.name) else {
        return;
    };
    for trigger in &entry.event_triggers {
        match events::check_event_trigger(&entry.table, db_table, trigger) {
            Ok(resolved) => {
                cache
                    .resolved
                    .event_triggers
                    .insert(resolved.name.clone(), resolved);
            }
            Err(err) => cache.inconsistencies.push(Inconsistency {
                object: ObjectId::event_trigger(&entry.table, trigger.name.0.clone()),
                kind: "event_trigger",
                definition: event_trigger_definition(&entry.table, trigger),
                reason: err.message,
                conflict: false,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_column_names_may_not_take_another_columns_field() {
        let column = |name: &str, attnum: i32| {
            json!({
                "name": name, "attnum": attnum, "data_type": "integer", "type_name": "int4",
                "type_schema": "pg_catalog", "type_kind": "b", "element_type": null,
                "nullable": false, "default": null, "generated": false, "identity": false,
                "comment": null
            })
        };
        let table: DbTable = serde_json::from_value(json!({
            "oid": 1, "schema": "public", "name": "author", "kind": "r", "comment": null,
            "columns": [column("id", 1), column("name", 2), column("age", 3)],
            "constraints": [], "updatable_bits": 28
        }))
        .unwrap();
        let name = QualifiedTable::new("public", "author");
        let check = |names: Value| {
            let config: TableConfig =
                serde_json::from_value(json!({"custom_column_names": names})).unwrap();
            check_table_configuration(&name, &table, &config)
        };
        assert!(check(json!({})).is_ok());
        // Swapped names: each column's field is free once the other is renamed.
        assert!(check(json!({"id": "name", "name": "id"})).is_ok());
        let err = check(json!({"age": "name"})).unwrap_err();
        assert_eq!(err.code, Code::ConstraintViolation);
        assert_eq!(err.path.to_string(), "$.custom_column_names.age");
        assert!(
            err.message
                .contains("conflicts with the field of column \"name\""),
            "{}",
            err.message
        );
        let err = check(json!({"id": "key", "name": "key"})).unwrap_err();
        assert!(
            err.message
                .contains("conflicts with the field of column \"id\""),
            "{}",
            err.message
        );
        let err = check(json!({"nope": "x"})).unwrap_err();
        assert_eq!(err.path.to_string(), "$.custom_column_names.nope");
    }
}
