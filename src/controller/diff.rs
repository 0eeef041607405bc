//! Desired objects × catalog × ownership → what to do (`docs/kubernetes.md`, "How a resource
//! is reconciled"). Pure: the plan is a function of its arguments, so a resource already in
//! sync yields only `Noop` steps, no operations and no ownership change — the idempotency the
//! controller relies on. Operations are written as `/v1/query` requests and run through the
//! same parser and catalog transaction as the metadata API.

use crate::catalog::OwnershipChanges;
use crate::metadata::objects::{
    canonical_text, differing_fields, hash, CustomType, DriftKind, Managed, Object, Owner,
};
use crate::metadata::types::{CollectionEntry, CustomTypes, Metadata};
use requests::{create_request, drop_request, event_trigger_request, remote_relationship_request};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};

/// Per-resource policy (annotations and controller flags, `docs/kubernetes.md`, "Annotations").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Policy {
    /// Re-apply drifted objects.
    pub self_heal: bool,
    /// `basalt.dev/sync-requested-at` changed: re-apply once even in report-only mode.
    pub sync_requested: bool,
    /// `basalt.dev/adopt: "true"`: take over unmanaged objects with the same key.
    pub adopt: bool,
    /// Take over objects whose owner is gone (rows marked orphaned): a singleton's turn, when
    /// the resource that owned the one object no longer exists.
    pub take_orphaned: bool,
}

/// What happens to one object key.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// In sync.
    Noop,
    /// New object.
    Create,
    /// The resource's spec changed; the listed fields differ from the catalog.
    Update(Vec<String>),
    /// The catalog changed behind the resource; reported, not applied.
    Drift(DriftKind, Vec<String>),
    /// Drift being corrected (self-heal or sync request).
    Heal(DriftKind, Vec<String>),
    /// The object exists and belongs to someone else (`None`: created imperatively).
    Conflict(Option<Owner>),
    /// An unmanaged object taken over (and updated when it differs).
    Adopt,
    /// Owned before, no longer declared by the resource.
    Delete,
}

impl Step {
    /// Whether the step writes the catalog or the ownership table.
    pub fn applies(&self) -> bool {
        !matches!(self, Step::Noop | Step::Drift(..) | Step::Conflict(_))
    }
}

/// One operation of a plan, with the key it serves (to attribute failures).
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedOp {
    /// The object key.
    pub key: String,
    /// The `/v1/query` request body.
    pub request: Value,
}

/// The plan for one resource.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// Every key the resource declares or owned, with its step, in declaration order.
    pub steps: Vec<(String, Step)>,
    /// Operations, in the order they must run.
    pub ops: Vec<PlannedOp>,
    /// Ownership rows to write in the same transaction.
    pub ownership: OwnershipChanges,
    /// The catalog's definition of every key the plan touches, as planned against (`None`:
    /// absent): a group commit checks that none changed since, instead of the whole catalog's
    /// version.
    pub base: Vec<(String, Option<Object>)>,
}

impl Plan {
    /// True when nothing is written.
    pub fn is_noop(&self) -> bool {
        self.ops.is_empty() && self.ownership.is_empty()
    }

    /// Every key the plan's operations and ownership rows touch.
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.ops.iter().map(|op| op.key.clone()).collect();
        keys.extend(self.ownership.upsert.iter().map(|r| r.key.clone()));
        keys.extend(self.ownership.remove.iter().cloned());
        keys.sort();
        keys.dedup();
        keys
    }

    /// Whether the plan may share a catalog transaction with other resources' plans: its
    /// operations change only the objects they name. Not so for `set_custom_types` (the whole
    /// custom types document), a cascading untrack (objects of other resources), and remote
    /// schemas (introspected before the transaction).
    pub fn shares_commit(&self) -> bool {
        self.ops.iter().all(|op| {
            let kind = op.request["type"].as_str().unwrap_or_default();
            let cascades = kind == "untrack_table" && op.request["args"]["cascade"] == true;
            !cascades
                && !matches!(
                    kind,
                    "set_custom_types"
                        | "add_remote_schema"
                        | "update_remote_schema"
                        | "remove_remote_schema"
                )
        })
    }

    /// Records what the catalog held for each key the plan touches ([`Plan::base`]).
    fn record_base(&mut self, catalog: &BTreeMap<String, Object>) {
        self.base = self
            .keys()
            .into_iter()
            .map(|key| {
                let found = catalog.get(&key).cloned();
                (key, found)
            })
            .collect();
    }

    /// Adds `other`'s writes to this plan's, so both commit as one (its steps stay its own
    /// resource's to report).
    pub fn absorb(&mut self, other: Plan) {
        self.ops.extend(other.ops);
        self.ownership.upsert.extend(other.ownership.upsert);
        self.ownership.remove.extend(other.ownership.remove);
        self.base.extend(other.base);
    }

    /// Removes everything planned for `key` (a relationship waiting for its target).
    pub fn without(&mut self, key: &str) {
        self.ops.retain(|op| op.key != key);
        self.ownership.upsert.retain(|r| r.key != key);
        // Nothing happens to it this time: no "corrected", "adopted" or "created" claim.
        for (k, step) in &mut self.steps {
            if k == key {
                *step = Step::Noop;
            }
        }
    }
}

/// What the reconcile knows about the resource itself.
#[derive(Debug, Clone)]
pub struct Resource<'a> {
    /// Owner identity.
    pub owner: &'a Owner,
    /// `metadata.generation`.
    pub generation: i64,
    /// Declared objects (from the mapping).
    pub desired: &'a [Object],
}

fn same(a: &Value, b: &Value) -> bool {
    canonical_text(a) == canonical_text(b)
}

/// The ownership rows, indexed the ways a plan reads them: by key, and by owner. The
/// controller's view builds it once per catalog version, so a plan reads only the rows of its
/// own resource and the keys it declares: a plan that walked every row would make a pass over
/// N resources cost N² row visits.
#[derive(Debug, Clone, Default)]
pub struct Ownership {
    /// Every row, in key order (keys are unique).
    rows: Vec<Managed>,
    /// Positions in `rows` by the owner's uid.
    by_uid: HashMap<String, Vec<usize>>,
    /// Positions of orphaned rows by the owner's kind, namespace and name.
    orphaned: HashMap<(String, String, String), Vec<usize>>,
}

impl Ownership {
    /// Indexes `rows` (any order).
    pub fn new(mut rows: Vec<Managed>) -> Self {
        rows.sort_by(|a, b| a.key.cmp(&b.key));
        let mut by_uid: HashMap<String, Vec<usize>> = HashMap::new();
        let mut orphaned: HashMap<(String, String, String), Vec<usize>> = HashMap::new();
        for (i, row) in rows.iter().enumerate() {
            by_uid.entry(row.owner.uid.clone()).or_default().push(i);
            if row.orphaned {
                orphaned.entry(name_of(&row.owner)).or_default().push(i);
            }
        }
        Ownership {
            rows,
            by_uid,
            orphaned,
        }
    }

    /// The row of `key`.
    pub fn get(&self, key: &str) -> Option<&Managed> {
        self.rows
            .binary_search_by(|r| r.key.as_str().cmp(key))
            .ok()
            .map(|i| &self.rows[i])
    }

    /// The rows `owner` owns ([`owned_by`]), in key order.
    fn owned(&self, owner: &Owner) -> Vec<&Managed> {
        let mut at: Vec<usize> = self.owned_by_uid(owner).to_vec();
        if let Some(orphaned) = self.orphaned.get(&name_of(owner)) {
            at.extend(orphaned);
            at.sort_unstable();
            at.dedup();
        }
        at.into_iter().map(|i| &self.rows[i]).collect()
    }

    /// Positions of the rows whose owner has `owner`'s uid, in key order.
    fn owned_by_uid(&self, owner: &Owner) -> &[usize] {
        self.by_uid.get(&owner.uid).map_or(&[], Vec::as_slice)
    }
}

fn name_of(owner: &Owner) -> (String, String, String) {
    (
        owner.kind.clone(),
        owner.namespace.clone(),
        owner.name.clone(),
    )
}

/// Whether `row` belongs to `owner`: same uid, or a resource re-created under the same
/// kind/namespace/name after its predecessor vanished without cleanup.
fn owned_by(row: &Managed, owner: &Owner) -> bool {
    row.owner.uid == owner.uid
        || (row.orphaned
            && row.owner.kind == owner.kind
            && row.owner.namespace == owner.namespace
            && row.owner.name == owner.name)
}

/// Plans the reconcile of one resource.
pub fn plan(
    resource: &Resource<'_>,
    metadata: &Metadata,
    rows: &[Managed],
    policy: Policy,
) -> Plan {
    let catalog = crate::metadata::objects::catalog_objects(metadata);
    plan_against(
        resource,
        metadata,
        &catalog,
        &Ownership::new(rows.to_vec()),
        policy,
    )
}

/// [`plan`] with the document's objects by key and the indexed ownership rows already at hand
/// (`catalog_objects` of `metadata`): the controller makes both once per view, not once per
/// reconcile.
pub fn plan_against(
    resource: &Resource<'_>,
    metadata: &Metadata,
    catalog: &BTreeMap<String, Object>,
    rows: &Ownership,
    policy: Policy,
) -> Plan {
    let owner = resource.owner;
    let mut plan = Plan::default();
    let mut types = TypeEdits::default();
    let row_for = |object: &Object, desired: Value, desired_hash: String| Managed {
        key: object.key(),
        owner: owner.clone(),
        generation: resource.generation,
        desired_hash,
        desired,
        applied_version: 0,
        orphaned: false,
    };

    // Keys owned before and no longer declared go first, so a replacement never collides.
    let declared: Vec<String> = resource.desired.iter().map(Object::key).collect();
    for row in rows.owned(owner) {
        let key = row.key.as_str();
        if declared.iter().any(|k| k == key) {
            continue;
        }
        if let Some(current) = catalog.get(key) {
            push_drop(&mut plan, &mut types, current, false);
        }
        plan.ownership.remove.push(key.to_owned());
        plan.steps.push((key.to_owned(), Step::Delete));
    }

    // Functions (a changed comment) and logical models (any change) tracked again: their
    // grants and permissions went with them.
    let mut retracked = Vec::new();
    for object in resource.desired {
        let key = object.key();
        let desired = object.canonical();
        let desired_hash = hash(&desired);
        let current = catalog.get(&key);
        let in_sync = match current {
            Some(c) => same(&c.canonical(), &desired),
            None => crate::metadata::objects::implicit(&key, &desired),
        };
        let fields = || match current {
            Some(c) => differing_fields(&desired, &c.canonical()),
            None => Vec::new(),
        };
        let step = match rows.get(&key) {
            // Another resource's, unless it is gone and this one takes its turn.
            Some(row) if !(owned_by(row, owner) || policy.take_orphaned && row.orphaned) => {
                Step::Conflict(Some(row.owner.clone()))
            }
            Some(row) => {
                // The rows a plan reads carry the hash, not the definition (see
                // `managed::load_for_plans`).
                let spec_changed = row.desired_hash != desired_hash;
                let stale_row = spec_changed || row.orphaned || row.owner.uid != owner.uid;
                if in_sync {
                    if stale_row {
                        plan.ownership.upsert.push(row_for(
                            object,
                            desired.clone(),
                            desired_hash.clone(),
                        ));
                    }
                    Step::Noop
                } else if spec_changed {
                    Step::Update(fields())
                } else {
                    let kind = if current.is_some() {
                        DriftKind::Modified
                    } else {
                        DriftKind::Missing
                    };
                    if policy.self_heal || policy.sync_requested {
                        Step::Heal(kind, fields())
                    } else {
                        Step::Drift(kind, fields())
                    }
                }
            }
            None if current.is_none() => Step::Create,
            None if policy.adopt => Step::Adopt,
            None => Step::Conflict(None),
        };
        if step.applies() {
            match current {
                None => push_create(&mut plan, &mut types, object),
                Some(current) if !in_sync => {
                    match (current, object) {
                        (Object::Function(c), Object::Function(d)) if c.comment != d.comment => {
                            retracked.push(format!("function:{}", d.function));
                        }
                        // A changed model is tracked again (no operation changes one).
                        (Object::LogicalModel(_), Object::LogicalModel(d)) => {
                            retracked.push(format!("model:{}", d.name));
                        }
                        _ => {}
                    }
                    push_update(&mut plan, &mut types, metadata, current, object)
                }
                Some(_) => {}
            }
        }
        // A grant in sync whose function is tracked again is created again, under its own key
        // (so it may wait for its select permission like any grant).
        let parent = match object {
            Object::FunctionPermission(f, _) => Some(format!("function:{f}")),
            Object::LogicalModelPermission(m, _) => Some(format!("model:{m}")),
            _ => None,
        };
        if let (Some(parent), Some(_), true) = (parent, current, in_sync) {
            if retracked.contains(&parent) {
                push_create(&mut plan, &mut types, object);
            }
        }
        if step.applies() {
            plan.ownership
                .upsert
                .push(row_for(object, desired, desired_hash));
        }
        plan.steps.push((key, step));
    }
    if let Some(request) = types.request(metadata) {
        plan.ops.push(request);
    }
    plan.record_base(catalog);
    plan
}

/// How a deleted resource's objects are removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Removal {
    /// Keep the objects, forget ownership only (`deletion-policy: orphan`).
    pub orphan: bool,
    /// Drop dependants too (`cascade-delete`).
    pub cascade: bool,
    /// Include tracked tables; without, only the objects on them (first phase, so two tables
    /// whose relationships point at each other can both be deleted).
    pub tables: bool,
}

/// Plans the cleanup of a deleted resource: drop every object it owns (unless `orphan`), and
/// forget the ownership rows. Keys another resource owns, or already gone, are left alone.
pub fn cleanup(owner: &Owner, metadata: &Metadata, rows: &[Managed], removal: Removal) -> Plan {
    let catalog = crate::metadata::objects::catalog_objects(metadata);
    cleanup_against(
        owner,
        metadata,
        &catalog,
        &Ownership::new(rows.to_vec()),
        removal,
    )
}

/// [`cleanup`] with the document's objects by key already at hand.
pub fn cleanup_against(
    owner: &Owner,
    metadata: &Metadata,
    catalog: &BTreeMap<String, Object>,
    rows: &Ownership,
    removal: Removal,
) -> Plan {
    let Removal {
        orphan,
        cascade,
        tables,
    } = removal;
    let mut plan = Plan::default();
    let mut types = TypeEdits::default();
    let mut owned: Vec<&Managed> = rows
        .owned_by_uid(owner)
        .iter()
        .map(|&i| &rows.rows[i])
        .filter(|r| tables || !r.key.starts_with("table:"))
        .collect();
    // Dependants first: relationships and permissions before the table they sit on.
    owned.sort_by_key(|r| (drop_rank(&r.key), r.key.clone()));
    for row in owned {
        if !orphan {
            if let Some(current) = catalog.get(&row.key) {
                push_drop(&mut plan, &mut types, current, cascade);
            }
        }
        plan.ownership.remove.push(row.key.clone());
        plan.steps.push((row.key.clone(), Step::Delete));
    }
    if let Some(request) = types.request(metadata) {
        plan.ops.push(request);
    }
    plan.record_base(catalog);
    plan
}

fn drop_rank(key: &str) -> u8 {
    match key.split(':').next() {
        Some(
            "allowlist" | "rest_endpoint" | "function_permission" | "logical_model_permission",
        ) => 0,
        // Before the model whose rows they return.
        Some("native_query") => 1,
        // Before the table whose rows it returns.
        Some("function") => 1,
        Some("permission") => 1,
        Some("action_permission") => 2,
        Some("event_trigger") => 3,
        // Before what they join: a remote schema's removal takes its relationships with it.
        Some("relationship" | "remote_relationship" | "remote_schema_relationship") => 4,
        Some("computed_field") => 5,
        Some("query_collection") => 6,
        Some("action") => 7,
        Some("remote_schema") => 8,
        Some("custom_type" | "logical_model") => 9,
        _ => 10,
    }
}

/// Custom types are written whole by `set_custom_types`: edits are collected and merged into
/// the catalog's set once at the end of the plan.
#[derive(Debug, Default)]
struct TypeEdits {
    keys: Vec<String>,
    remove: Vec<String>,
    put: Vec<CustomType>,
}

impl TypeEdits {
    fn request(self, metadata: &Metadata) -> Option<PlannedOp> {
        if self.remove.is_empty() && self.put.is_empty() {
            return None;
        }
        let mut merged = CustomTypes::default();
        let replaced = |name: &str| {
            self.remove.iter().any(|n| n == name) || self.put.iter().any(|t| t.name() == name)
        };
        for t in CustomType::all(&metadata.custom_types) {
            if !replaced(t.name()) {
                t.push_into(&mut merged);
            }
        }
        for t in self.put {
            t.push_into(&mut merged);
        }
        Some(PlannedOp {
            key: self.keys.join(","),
            request: json!({"type": "set_custom_types", "args": merged}),
        })
    }
}

fn op(plan: &mut Plan, key: &str, request: Value) {
    plan.ops.push(PlannedOp {
        key: key.to_owned(),
        request,
    });
}

fn push_create(plan: &mut Plan, types: &mut TypeEdits, object: &Object) {
    let key = object.key();
    match object {
        Object::CustomType(t) => {
            types.keys.push(key);
            types.put.push(t.clone());
        }
        _ => {
            if let Some(request) = create_request(object) {
                op(plan, &key, request);
            }
        }
    }
}

fn push_drop(plan: &mut Plan, types: &mut TypeEdits, object: &Object, cascade: bool) {
    let key = object.key();
    match object {
        Object::CustomType(t) => {
            types.keys.push(key);
            types.remove.push(t.name().to_owned());
        }
        _ => {
            if let Some(request) = drop_request(object, cascade) {
                op(plan, &key, request);
            }
        }
    }
}

/// The requests turning `current` into `desired` (same key), as the metadata API would
/// express the change: settings setters, comment setters, add/drop of queries, or drop and
/// re-create in the same transaction.
fn push_update(
    plan: &mut Plan,
    types: &mut TypeEdits,
    metadata: &Metadata,
    current: &Object,
    desired: &Object,
) {
    let key = desired.key();
    let only_comment = |a: Value, b: Value| {
        let mut a = a;
        let mut b = b;
        a["comment"] = Value::Null;
        b["comment"] = Value::Null;
        same(&a, &b)
    };
    match (current, desired) {
        (Object::Table(c), Object::Table(d)) => {
            if c.is_enum != d.is_enum {
                op(
                    plan,
                    &key,
                    json!({"type": "set_table_is_enum",
                    "args": {"table": d.table, "is_enum": d.is_enum}}),
                );
            }
            if c.configuration != d.configuration {
                op(
                    plan,
                    &key,
                    json!({"type": "set_table_custom_fields", "version": 2, "args": {
                    "table": d.table,
                    "custom_root_fields": d.configuration.custom_root_fields,
                    "custom_column_names": d.configuration.custom_column_names}}),
                );
            }
        }
        (
            Object::ObjectRelationship(..) | Object::ArrayRelationship(..),
            Object::ObjectRelationship(..) | Object::ArrayRelationship(..),
        ) if only_comment(current.canonical(), desired.canonical()) => {
            let d = desired.canonical();
            op(
                plan,
                &key,
                json!({"type": "set_relationship_comment",
                "args": {"table": d["table"], "relationship": d["name"], "comment": d["comment"]}}),
            );
        }
        (Object::Permission(t, kind, _), Object::Permission(_, _, d))
            if only_comment(current.canonical(), desired.canonical()) =>
        {
            op(
                plan,
                &key,
                json!({"type": "set_permission_comment",
                "args": {"table": t, "role": d.role, "type": kind.as_str(), "comment": d.comment}}),
            );
        }
        (Object::Collection(c), Object::Collection(d)) if c.comment == d.comment => {
            query_edits(plan, &key, c, d)
        }
        // Replaced in place, not dropped and re-created: its pending events stay. A trigger
        // moved to another table behind the resource's back cannot be replaced across
        // tables, so that one is re-created.
        (Object::EventTrigger(current_table, _), Object::EventTrigger(table, e))
            if current_table == table =>
        {
            op(plan, &key, event_trigger_request(table, e))
        }
        (Object::CustomType(_), Object::CustomType(d)) => {
            types.keys.push(key);
            types.put.push(d.clone());
        }
        // Replaced in place: its events already due, retrying or in flight stay.
        (Object::CronTrigger(_), Object::CronTrigger(_)) => {
            if let Some(mut request) = create_request(desired) {
                request["args"]["replace"] = json!(true);
                op(plan, &key, request);
            }
        }
        // `add_inherited_role` and `set_api_limits` replace what is there.
        (Object::InheritedRole(_), Object::InheritedRole(_))
        | (Object::ApiLimits(_), Object::ApiLimits(_)) => {
            if let Some(request) = create_request(desired) {
                op(plan, &key, request);
            }
        }
        // A full replacement of the definition and comment that keeps the action's
        // permissions (and an asynchronous action's logged calls).
        (Object::Action(_), Object::Action(d)) => op(
            plan,
            &key,
            json!({"type": "update_action", "args": {
                "name": d.name, "definition": d.definition, "comment": d.comment}}),
        ),
        // Changed in place: the new definition is introspected (a failure keeps the old
        // one), and the relationships that use the remote schema stay.
        (Object::RemoteSchema(_), Object::RemoteSchema(d)) => op(
            plan,
            &key,
            json!({"type": "update_remote_schema", "args": d}),
        ),
        (Object::RemoteRelationship(..), Object::RemoteRelationship(..))
        | (Object::RemoteSchemaRelationship(..), Object::RemoteSchemaRelationship(..)) => {
            if let Some(request) = remote_relationship_request("update", desired) {
                op(plan, &key, request);
            }
        }
        // The configuration is replaced whole; a comment has no setter, so the function is
        // tracked again with the grants it holds.
        (Object::Function(c), Object::Function(d)) if c.comment == d.comment => op(
            plan,
            &key,
            json!({"type": "set_function_customization", "args": {
                "function": d.function, "configuration": d.configuration}}),
        ),
        // Its grants go with it: the plan creates the declared ones again (see `plan_against`).
        (Object::Function(_), Object::Function(d)) => {
            op(
                plan,
                &key,
                json!({"type": "untrack_function", "args": {"function": d.function}}),
            );
            if let Some(request) = create_request(desired) {
                op(plan, &key, request);
            }
        }
        // An action permission whose comment changed has no comment setter: dropped and
        // created again.
        _ => recreate(plan, metadata, &key, current, desired),
    }
}

/// The queries dropped from and added to a collection whose comment did not change, so that
/// its queries end up in the resource's order: `add_query_to_collection` appends, so every
/// query after the longest common prefix is dropped and the resource's remaining queries are
/// added in order (a changed or moved query is dropped and added again; an untouched prefix
/// is left alone).
fn query_edits(plan: &mut Plan, key: &str, c: &CollectionEntry, d: &CollectionEntry) {
    let (current, desired) = (&c.definition.queries, &d.definition.queries);
    let kept = current
        .iter()
        .zip(desired)
        .take_while(|(a, b)| a == b)
        .count();
    for q in &current[kept..] {
        op(
            plan,
            key,
            json!({"type": "drop_query_from_collection",
            "args": {"collection_name": c.name, "query_name": q.name}}),
        );
    }
    for q in &desired[kept..] {
        op(
            plan,
            key,
            json!({"type": "add_query_to_collection",
            "args": {"collection_name": d.name, "query_name": q.name, "query": q.query}}),
        );
    }
}

/// Drop without cascade (dependants make it fail rather than vanish), then create: one
/// transaction, so the end state is checked as a whole. An allow-listed collection is taken
/// off the allow-list and put back around it.
fn recreate(plan: &mut Plan, metadata: &Metadata, key: &str, current: &Object, desired: &Object) {
    let allowlisted = match current {
        Object::Collection(c) => metadata.allowlist.iter().any(|a| a.collection == c.name),
        _ => false,
    };
    if allowlisted {
        if let Object::Collection(c) = current {
            op(
                plan,
                key,
                json!({"type": "drop_collection_from_allowlist",
                "args": {"collection": c.name}}),
            );
        }
    }
    if let Some(request) = drop_request(current, false) {
        op(plan, key, request);
    }
    if let Some(request) = create_request(desired) {
        op(plan, key, request);
    }
    if allowlisted {
        if let Object::Collection(c) = current {
            op(
                plan,
                key,
                json!({"type": "add_collection_to_allowlist",
                "args": {"collection": c.name}}),
            );
        }
    }
}

mod requests;
#[cfg(test)]
mod tests;
