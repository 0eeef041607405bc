//! Change detection of live queries and streams against the database model (`docs/graphql.md`,
//! "When subscriptions run"): which tables must carry the `basalt_live_change` trigger and
//! what must change for them to ([`plan`]), and which relations a subscription can be watched
//! through, as the OIDs whose writes show in them ([`assess`]). Pure: the model says which
//! triggers exist, the policy comes from the process's settings.

use crate::db_model::{DbModel, DbTable, LiveCatalog};
use crate::names::QualifiedName;
use std::collections::{HashMap, HashSet};

/// The settings that decide which tables are watched (by default, every tracked table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LivePolicy {
    /// Change detection is on (`BASALT_LIVE_QUERIES_CHANGE_DETECTION`).
    pub on: bool,
    /// `schema.table` names left without a trigger (`…_CHANGE_DETECTION_EXCLUDE`).
    pub exclude: Vec<String>,
}

impl Default for LivePolicy {
    fn default() -> Self {
        LivePolicy {
            on: true,
            exclude: Vec::new(),
        }
    }
}

impl LivePolicy {
    fn excludes(&self, table: &QualifiedName) -> bool {
        self.exclude
            .iter()
            .any(|e| e.split_once('.') == Some((table.schema.as_str(), table.name.as_str())))
    }
}

/// The relations a document tracks.
pub fn tracked(metadata: &crate::metadata::Metadata) -> Vec<QualifiedName> {
    metadata.tables.iter().map(|t| t.table.clone()).collect()
}

/// The name change detection knows the action log by.
pub fn action_log() -> QualifiedName {
    QualifiedName::new("basalt_catalog", "action_log")
}

/// One DDL step keeping the triggers in step.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TriggerChange {
    /// The table has no trigger: create it, firing always.
    Create(QualifiedName),
    /// The trigger is there but disabled or not firing always.
    EnableAlways(QualifiedName),
    /// The table carries the trigger and must not.
    Drop(QualifiedName),
}

/// What must change for the triggers to match the tracked tables and the policy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TriggerPlan {
    /// The notify function is missing.
    pub function: bool,
    pub changes: Vec<TriggerChange>,
}

impl TriggerPlan {
    pub fn is_empty(&self) -> bool {
        !self.function && self.changes.is_empty()
    }
}

/// The model's relations by OID, and each table's partitions and inheritance children.
struct Index<'m> {
    by_oid: HashMap<u32, &'m DbTable>,
    children: HashMap<u32, Vec<u32>>,
}

impl<'m> Index<'m> {
    fn new(db: &'m DbModel) -> Self {
        let mut by_oid = HashMap::with_capacity(db.tables.len());
        let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
        for table in db.tables.values() {
            by_oid.insert(table.oid, &**table);
            for parent in &table.parents {
                children.entry(*parent).or_default().push(table.oid);
            }
        }
        Index { by_oid, children }
    }

    /// Every table above `oid` (its parents, theirs, and so on).
    fn ancestors(&self, oid: u32) -> Vec<u32> {
        let mut out: Vec<u32> = Vec::new();
        let mut next = vec![oid];
        while let Some(at) = next.pop() {
            for parent in self
                .by_oid
                .get(&at)
                .map(|t| t.parents.as_slice())
                .unwrap_or(&[])
            {
                if *parent != oid && !out.contains(parent) {
                    out.push(*parent);
                    next.push(*parent);
                }
            }
        }
        out
    }

    /// `oid` and every table below it (cycles cannot occur in `pg_inherits`, but a visited set
    /// keeps a hand-written model from looping).
    fn family(&self, oid: u32) -> Vec<u32> {
        let mut out = vec![oid];
        let mut seen: HashSet<u32> = HashSet::from([oid]);
        let mut next = 0;
        while next < out.len() {
            for child in self.children.get(&out[next]).into_iter().flatten() {
                if seen.insert(*child) {
                    out.push(*child);
                }
            }
            next += 1;
        }
        out
    }
}

/// The tables that must carry the trigger: every tracked ordinary or partitioned table and
/// every table below one, except excluded tables and tables with row-level security (their
/// policies decide what a role sees, so a change cannot be attributed).
fn desired<'m>(
    db: &'m DbModel,
    index: &Index<'m>,
    tracked: &[QualifiedName],
    policy: &LivePolicy,
) -> Vec<&'m DbTable> {
    if !policy.on {
        return Vec::new();
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for name in tracked {
        let Some(table) = db.tables.get(name) else {
            continue;
        };
        if !matches!(table.kind.as_str(), "r" | "p") {
            continue;
        }
        for oid in index.family(table.oid) {
            let Some(member) = index.by_oid.get(&oid) else {
                continue;
            };
            if seen.insert(oid) && watchable(member, policy) {
                out.push(*member);
            }
        }
    }
    out
}

fn watchable(table: &DbTable, policy: &LivePolicy) -> bool {
    matches!(table.kind.as_str(), "r" | "p")
        && !table.row_security
        && !policy.excludes(&QualifiedName::new(&table.schema, &table.name))
}

/// What must change for the triggers to be where the policy wants them, given the tracked
/// relations (views and other relations among them are skipped).
pub fn plan(db: &DbModel, tracked: &[QualifiedName], policy: &LivePolicy) -> TriggerPlan {
    plan_with(db, &Index::new(db), tracked, policy)
}

/// What a schema build needs at once: the trigger changes wanting, and what the triggers
/// cover ([`plan`] and the coverage from one pass over the model).
pub fn assess(
    db: &DbModel,
    tracked: &[QualifiedName],
    policy: &LivePolicy,
) -> (TriggerPlan, Coverage) {
    let index = Index::new(db);
    (
        plan_with(db, &index, tracked, policy),
        coverage_with(db, &index, tracked, policy),
    )
}

fn plan_with(
    db: &DbModel,
    index: &Index<'_>,
    tracked: &[QualifiedName],
    policy: &LivePolicy,
) -> TriggerPlan {
    let mut wanted: Vec<(u32, QualifiedName)> = desired(db, index, tracked, policy)
        .into_iter()
        .map(|t| (t.oid, QualifiedName::new(&t.schema, &t.name)))
        .collect();
    if let (true, Some(log)) = (policy.on, db.live.action_log) {
        wanted.push((log, action_log()));
    }
    let mut changes = Vec::new();
    for (oid, name) in &wanted {
        match db.live.triggers.get(oid).map(String::as_str) {
            Some("A") => {}
            Some(_) => changes.push(TriggerChange::EnableAlways(name.clone())),
            None => changes.push(TriggerChange::Create(name.clone())),
        }
    }
    for oid in db.live.triggers.keys() {
        if wanted.iter().any(|(w, _)| w == oid) {
            continue;
        }
        let name = match index.by_oid.get(oid) {
            Some(table) => QualifiedName::new(&table.schema, &table.name),
            None if db.live.action_log == Some(*oid) => action_log(),
            None => continue,
        };
        changes.push(TriggerChange::Drop(name));
    }
    TriggerPlan {
        function: !db.live.function
            && changes
                .iter()
                .any(|c| matches!(c, TriggerChange::Create(_))),
        changes,
    }
}

/// The model after `done` ran (and the function was created, with `function`).
pub fn applied(live: &mut LiveCatalog, db: &DbModel, done: &[TriggerChange], function: bool) {
    live.function |= function;
    for change in done {
        let (TriggerChange::Create(name)
        | TriggerChange::EnableAlways(name)
        | TriggerChange::Drop(name)) = change;
        let oid = match db.tables.get(name) {
            Some(table) => table.oid,
            None if *name == action_log() => match db.live.action_log {
                Some(oid) => oid,
                None => continue,
            },
            None => continue,
        };
        match change {
            TriggerChange::Drop(_) => live.triggers.remove(&oid),
            _ => live.triggers.insert(oid, "A".to_owned()),
        };
    }
}

/// What the triggers cover, as a schema build finds them.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Coverage {
    /// For each tracked relation that can be watched (and the action log): the OIDs whose
    /// writes show in it. A relation missing here makes the subscriptions reading it run
    /// every interval.
    pub watched: HashMap<QualifiedName, Vec<u32>>,
    /// Tables that should carry the trigger and do not (it could not be created: the
    /// engine's role does not own them).
    pub uncovered: Vec<QualifiedName>,
}

/// Which tracked relations can be watched, and through which tables.
fn coverage_with(
    db: &DbModel,
    index: &Index<'_>,
    tracked: &[QualifiedName],
    policy: &LivePolicy,
) -> Coverage {
    let mut coverage = Coverage::default();
    if !policy.on {
        return coverage;
    }
    for table in desired(db, index, tracked, policy) {
        if !fires(db, table.oid) {
            coverage
                .uncovered
                .push(QualifiedName::new(&table.schema, &table.name));
        }
    }
    for name in tracked {
        let Some(table) = db.tables.get(name) else {
            continue;
        };
        let mut oids = Vec::new();
        if resolve(db, index, table.oid, policy, &mut oids, &mut HashSet::new()) {
            oids.sort_unstable();
            oids.dedup();
            coverage.watched.insert(name.clone(), oids);
        }
    }
    if let Some(log) = db.live.action_log.filter(|log| fires(db, *log)) {
        coverage.watched.insert(action_log(), vec![log]);
    }
    coverage
}

/// Whether the trigger on `oid` is there and fires always.
fn fires(db: &DbModel, oid: u32) -> bool {
    db.live.triggers.get(&oid).map(String::as_str) == Some("A")
}

/// Adds the OIDs whose writes show in relation `oid` to `out`; `false` when it cannot be
/// watched: a table without the trigger firing always (or with a descendant like that), a
/// view calling a function that is not `IMMUTABLE` or reading such a relation, a materialized
/// view or a foreign table.
fn resolve(
    db: &DbModel,
    index: &Index<'_>,
    oid: u32,
    policy: &LivePolicy,
    out: &mut Vec<u32>,
    visiting: &mut HashSet<u32>,
) -> bool {
    let Some(table) = index.by_oid.get(&oid) else {
        return false;
    };
    match table.kind.as_str() {
        // Its own rows, its descendants' (written through it or directly), and the rows
        // written through any table above it: a statement fires the trigger of the table it
        // names only, so those writes notify with the ancestor's OID.
        "r" | "p" => index
            .family(oid)
            .into_iter()
            .chain(index.ancestors(oid))
            .all(|member| {
                let covered = index
                    .by_oid
                    .get(&member)
                    .is_some_and(|t| watchable(t, policy) && fires(db, member));
                out.push(member);
                covered
            }),
        "v" => {
            let Some(reads) = table.reads.as_ref().filter(|r| !r.volatile) else {
                return false;
            };
            if !visiting.insert(oid) {
                return false;
            }
            let all = reads
                .relations
                .iter()
                .all(|r| resolve(db, index, *r, policy, out, visiting));
            visiting.remove(&oid);
            all
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn model() -> DbModel {
        let table = |oid: u32, name: &str, kind: &str, extra: serde_json::Value| {
            let mut t = json!({"oid": oid, "schema": "public", "name": name, "kind": kind,
                "comment": null, "columns": [], "constraints": [], "updatable_bits": 0});
            if let (Some(t), Some(extra)) = (t.as_object_mut(), extra.as_object()) {
                t.extend(extra.clone());
            }
            t
        };
        DbModel::from_json(json!({
            "tables": [
                table(1, "message", "r", json!({})),
                table(2, "event", "p", json!({})),
                table(3, "event_2026", "r", json!({"parents": [2]})),
                table(4, "audit", "r", json!({})),
                table(5, "secret", "r", json!({"row_security": true})),
                table(6, "recent", "v", json!({"reads": {"relations": [1], "volatile": true}})),
                table(7, "plain", "v", json!({"reads": {"relations": [1, 8]}})),
                table(8, "room", "r", json!({})),
                table(9, "stale", "r", json!({})),
            ],
            "functions": [], "scalar_types": [],
            "live": {"function": true, "action_log": 100, "triggers": {
                "1": "A", "2": "A", "4": "D", "5": "A", "8": "A", "9": "A", "100": "A"}}
        }))
        .unwrap()
    }

    fn names(list: &[&str]) -> Vec<QualifiedName> {
        list.iter()
            .map(|n| QualifiedName::new("public", *n))
            .collect()
    }

    #[test]
    fn the_plan_creates_enables_and_drops_what_differs() {
        let on = LivePolicy {
            on: true,
            exclude: vec![],
        };
        let tracked = names(&["message", "event", "audit", "secret", "recent", "room"]);
        let plan = plan(&model(), &tracked, &on);
        let n = |t: &str| QualifiedName::new("public", t);
        assert_eq!(
            plan.changes,
            vec![
                TriggerChange::Create(n("event_2026")),
                TriggerChange::EnableAlways(n("audit")),
                TriggerChange::Drop(n("secret")),
                TriggerChange::Drop(n("stale")),
            ]
        );
        assert!(!plan.function, "the function exists");
        let off = LivePolicy {
            on: false,
            exclude: vec![],
        };
        let plan = super::plan(&model(), &tracked, &off);
        assert_eq!(plan.changes.len(), 7, "every trigger goes: {plan:?}");
        assert!(plan.changes.contains(&TriggerChange::Drop(action_log())));
    }

    #[test]
    fn coverage_needs_every_descendant_and_resolves_views() {
        let policy = LivePolicy {
            on: true,
            exclude: vec!["public.room".into()],
        };
        let tracked = names(&["message", "event", "audit", "recent", "plain", "secret"]);
        let coverage = assess(&model(), &tracked, &policy).1;
        let watched = |t: &str| coverage.watched.get(&QualifiedName::new("public", t));
        assert_eq!(watched("message"), Some(&vec![1]));
        // A partition tracked on its own is written through its parent too: it is watched
        // only with the parent's trigger.
        let with_partition = names(&["event_2026"]);
        let c = super::assess(&model(), &with_partition, &policy).1;
        assert_eq!(
            c.watched.get(&QualifiedName::new("public", "event_2026")),
            None,
            "the partition itself has no trigger"
        );
        let mut db = model();
        db.live.triggers.insert(3, "A".to_owned());
        let c = super::assess(&db, &with_partition, &policy).1;
        assert_eq!(
            c.watched.get(&QualifiedName::new("public", "event_2026")),
            Some(&vec![2, 3])
        );
        assert_eq!(watched("event"), None, "a partition has no trigger");
        assert_eq!(watched("audit"), None, "disabled");
        assert_eq!(watched("secret"), None, "row security");
        assert_eq!(watched("recent"), None, "calls a volatile function");
        assert_eq!(watched("plain"), None, "reads an excluded table");
        assert_eq!(coverage.watched.get(&action_log()), Some(&vec![100]));
        assert_eq!(
            coverage.uncovered,
            vec![
                QualifiedName::new("public", "event_2026"),
                QualifiedName::new("public", "audit")
            ]
        );
        let all = LivePolicy {
            on: true,
            exclude: vec![],
        };
        let coverage = super::assess(&model(), &tracked, &all).1;
        assert_eq!(
            coverage.watched.get(&QualifiedName::new("public", "plain")),
            Some(&vec![1, 8])
        );
    }
}
