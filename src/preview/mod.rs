//! `basalt diff -f <dir or file>`: what applying resources or a metadata file would change in
//! a catalog, for review before the change (in a pull request, say). Nothing is written.
//!
//! A metadata file is a `replace_metadata`. Resources are turned into the document they would
//! lead to: each resource's objects are put into the current document the way the controller
//! would apply them (ownership respected: an object another resource owns, or one created
//! through the API without `basalt.dev/adopt`, is a conflict and left alone; objects a resource
//! owned and no longer declares are removed), and that document is a `replace_metadata`. Either
//! request runs as a `dry_run` on the target — a running engine or the catalog's database — so
//! the catalog's own checks decide what is valid, and the answer lists what would be added,
//! changed and removed, and what would become inconsistent.

mod input;
mod target;

pub use input::{read, Input, ResourceDoc};
pub use target::{DryRun, Target};

use crate::config::{DiffCommand, DiffOutput};
use crate::controller::kinds;
use crate::controller::reconcile::ADOPT;
use crate::metadata::objects::{catalog_objects, differing_fields, Object};
use crate::metadata::ObjectId;
use crate::metadata::{place, Metadata};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Why `basalt diff` could not answer (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum PreviewError {
    /// The files cannot be read or understood.
    #[error("{0}")]
    Input(String),
    /// The engine or database cannot be reached or read.
    #[error("{0}")]
    Target(String),
    /// A resource that the controller would refuse as invalid.
    #[error("{resource} ({file}): {message}")]
    Resource {
        /// `Kind namespace/name`.
        resource: String,
        file: String,
        /// What is wrong.
        message: String,
    },
}

/// A declared object that would not be applied as asked, or whose ownership would change.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Held {
    /// The object key.
    pub key: String,
    /// The resource declaring it.
    pub resource: String,
    pub reason: String,
}

/// The document a set of resources leads to.
#[derive(Debug)]
pub struct Desired {
    /// The current document with the resources applied.
    pub document: Metadata,
    /// Which resource each placed or removed object comes from.
    pub resource_of: BTreeMap<String, String>,
    /// API-created objects a resource takes over (`basalt.dev/adopt`).
    pub adopted: Vec<Held>,
    /// Objects owned by someone else: the controller would report a conflict.
    pub conflicts: Vec<Held>,
    /// Objects whose table is not tracked: the controller would wait for it.
    pub waiting: Vec<Held>,
}

/// The objects a resource declares, checked as the controller checks them.
fn declared(doc: &ResourceDoc) -> Result<Vec<Object>, PreviewError> {
    let refused = |message: String| PreviewError::Resource {
        resource: doc.label(),
        file: doc.file.display().to_string(),
        message,
    };
    match kinds::declared(&doc.kind, &doc.manifest) {
        Some(declared) => declared.map_err(|e| refused(e.to_string())),
        None => Err(refused(format!("basalt.dev has no kind {}", doc.kind))),
    }
}

/// Whether an `owners` entry names this resource.
fn owned_by(owner: &Value, doc: &ResourceDoc) -> bool {
    owner["kind"] == doc.kind.as_str()
        && owner["namespace"] == doc.namespace.as_str()
        && owner["name"] == doc.name.as_str()
}

fn describe(owner: &Value) -> String {
    format!(
        "{} {}/{}",
        owner["kind"].as_str().unwrap_or("?"),
        owner["namespace"].as_str().unwrap_or("?"),
        owner["name"].as_str().unwrap_or("?")
    )
}

/// Where a resource stands in line for the one object of a singleton kind, as the controller
/// decides it: the current owner first, then by creation time (when the file has one), then
/// `namespace/name` in byte order. Every other resource gets the same value, keeping its
/// order.
fn turn(doc: &ResourceDoc, owners: &Map<String, Value>) -> (bool, bool, String, String) {
    if !kinds::singleton(&doc.kind) {
        return Default::default();
    }
    let owns = owners.values().any(|o| owned_by(o, doc));
    let created = doc.manifest["metadata"]["creationTimestamp"].as_str();
    (
        !owns,
        created.is_none(),
        created.unwrap_or_default().to_owned(),
        format!("{}/{}", doc.namespace, doc.name),
    )
}

/// Applies `resources` to `current` (whose objects are owned as `owners` says), the way the
/// controller would; with `prune`, the objects of resources missing from `resources` are
/// removed too.
pub fn desired(
    current: &Metadata,
    owners: &Map<String, Value>,
    resources: &[ResourceDoc],
    prune: bool,
) -> Result<Desired, PreviewError> {
    let objects = catalog_objects(current);
    let mut out = Desired {
        document: current.clone(),
        resource_of: BTreeMap::new(),
        adopted: Vec::new(),
        conflicts: Vec::new(),
        waiting: Vec::new(),
    };
    let mut declared_by: BTreeMap<String, String> = BTreeMap::new();
    let mut ordered: Vec<&ResourceDoc> = resources.iter().collect();
    ordered.sort_by_key(|r| (kinds::rank(&r.kind), turn(r, owners)));
    for doc in ordered {
        let label = doc.label();
        let adopt = doc.annotation(ADOPT) == Some("true");
        let declared = declared(doc)?;
        let keys: Vec<String> = declared.iter().map(Object::key).collect();
        // Owned before and no longer declared: the controller drops them.
        for (key, owner) in owners {
            if owned_by(owner, doc) && !keys.contains(key) {
                if let Some(object) = objects.get(key) {
                    place::remove(&mut out.document, object);
                    out.resource_of.insert(key.clone(), label.clone());
                }
            }
        }
        for (object, key) in declared.into_iter().zip(keys) {
            if let Some(other) = declared_by.get(&key).cloned() {
                // The one object of a singleton kind goes to the first in line; the
                // controller holds the others in `Conflict`.
                if kinds::singleton(&doc.kind) {
                    out.conflicts.push(Held {
                        key: key.clone(),
                        resource: label.clone(),
                        reason: format!("{key} is owned by {other}"),
                    });
                    continue;
                }
                return Err(PreviewError::Resource {
                    resource: label,
                    file: doc.file.display().to_string(),
                    message: format!("{key} is also declared by {other}"),
                });
            }
            declared_by.insert(key.clone(), label.clone());
            let held = |reason: String| Held {
                key: key.clone(),
                resource: label.clone(),
                reason,
            };
            match owners.get(&key) {
                Some(owner) if owned_by(owner, doc) => {}
                Some(Value::String(_)) if adopt => out
                    .adopted
                    .push(held("created through the metadata API".into())),
                Some(Value::String(_)) => {
                    out.conflicts.push(held(format!(
                        "exists, created through the metadata API; annotate the resource \
                         {ADOPT}: \"true\" to take it over"
                    )));
                    continue;
                }
                Some(owner) => {
                    out.conflicts
                        .push(held(format!("owned by {}", describe(owner))));
                    continue;
                }
                None => {}
            }
            match place::put(&mut out.document, object) {
                Ok(()) => {
                    out.resource_of.insert(key.clone(), label.clone());
                }
                Err(e) => out.waiting.push(held(e.to_string())),
            }
        }
    }
    if prune {
        for (key, owner) in owners {
            let gone = owner.is_object() && !resources.iter().any(|r| owned_by(owner, r));
            if let (true, Some(object)) = (gone, objects.get(key)) {
                place::remove(&mut out.document, object);
                out.resource_of.insert(
                    key.clone(),
                    format!("{} (not in the files)", describe(owner)),
                );
            }
        }
    }
    Ok(out)
}

/// What `basalt diff` found.
#[derive(Debug)]
pub struct Report {
    /// What was read, for the heading.
    pub source: String,
    /// What it was compared with.
    pub target: String,
    /// The dry run's answer (`added`, `changed`, `removed`, `inconsistent_objects`), each
    /// item with the `resource` it comes from when known.
    pub answer: Option<Value>,
    /// The catalog's refusal (`path`, `error`, `code`), when the change would fail.
    pub refused: Option<Value>,
    /// Ownership taken over.
    pub adopted: Vec<Held>,
    /// Objects left alone because someone else owns them.
    pub conflicts: Vec<Held>,
    /// Objects waiting for their table.
    pub waiting: Vec<Held>,
    /// Documents in the files that are not `basalt.dev` resources.
    pub skipped: usize,
}

const SECTIONS: [(&str, char); 3] = [("added", '+'), ("changed", '~'), ("removed", '-')];

impl Report {
    fn items(&self, section: &str) -> &[Value] {
        match self.answer.as_ref().and_then(|a| a.get(section)) {
            Some(Value::Array(items)) => items,
            _ => &[],
        }
    }

    /// 0: nothing would change; 1: something would; 2: the change would be refused, held
    /// (conflicts, waiting) or leave objects inconsistent.
    pub fn exit_code(&self) -> u8 {
        if self.refused.is_some()
            || !self.conflicts.is_empty()
            || !self.waiting.is_empty()
            || !self.items("inconsistent_objects").is_empty()
        {
            2
        } else if SECTIONS.iter().any(|(s, _)| !self.items(s).is_empty()) {
            1
        } else {
            0
        }
    }

    /// The machine-readable report.
    pub fn json(&self) -> Value {
        let mut out = json!({
            "source": self.source,
            "target": self.target,
            "adopted": self.adopted,
            "conflicts": self.conflicts,
            "waiting": self.waiting,
            "skipped_documents": self.skipped,
        });
        for section in ["added", "changed", "removed", "inconsistent_objects"] {
            out[section] = Value::Array(self.items(section).to_vec());
        }
        if let Some(refused) = &self.refused {
            out["refused"] = refused.clone();
        }
        out
    }

    /// One line per object.
    pub fn text(&self) -> String {
        let mut out = format!("basalt diff: {} against {}\n", self.source, self.target);
        let line = |out: &mut String, mark: char, what: String, from: Option<&str>| {
            out.push_str(&format!("{mark} {what}"));
            if let Some(from) = from {
                out.push_str(&format!("    ({from})"));
            }
            out.push('\n');
        };
        for (section, mark) in SECTIONS {
            for item in self.items(section) {
                let mut what = name_of(item);
                if section == "changed" {
                    let fields = differing_fields(&item["definition"], &item["previous"]);
                    what.push_str(&format!(" [{}]", fields.join(", ")));
                }
                line(&mut out, mark, what, item["resource"].as_str());
            }
        }
        for held in &self.adopted {
            let what = format!("adopt {}: {}", held.key, held.reason);
            line(&mut out, '=', what, Some(&held.resource));
        }
        for held in &self.conflicts {
            let what = format!("conflict {}: {}", held.key, held.reason);
            line(&mut out, '!', what, Some(&held.resource));
        }
        for held in &self.waiting {
            let what = format!("waiting {}: {}", held.key, held.reason);
            line(&mut out, '?', what, Some(&held.resource));
        }
        for item in self.items("inconsistent_objects") {
            let reason = item["reason"].as_str().unwrap_or("inconsistent");
            let what = format!("inconsistent {}: {reason}", name_of(item));
            line(&mut out, '!', what, None);
        }
        if let Some(refused) = &self.refused {
            out.push_str(&format!(
                "refused: {} ({} at {})\n",
                refused["error"].as_str().unwrap_or("?"),
                refused["code"].as_str().unwrap_or("?"),
                refused["path"].as_str().unwrap_or("$"),
            ));
        }
        let count = |s: &str| self.items(s).len();
        out.push_str(&format!(
            "{} added, {} changed, {} removed, {} newly inconsistent",
            count("added"),
            count("changed"),
            count("removed"),
            count("inconsistent_objects")
        ));
        for (n, what) in [
            (self.adopted.len(), "adopted"),
            (self.conflicts.len(), "in conflict"),
            (self.waiting.len(), "waiting"),
        ] {
            if n > 0 {
                out.push_str(&format!(", {n} {what}"));
            }
        }
        if self.skipped > 0 {
            out.push_str(&format!(" ({} other documents skipped)", self.skipped));
        }
        out.push('\n');
        out
    }
}

/// An item's object key, or its type and definition when it has none.
fn name_of(item: &Value) -> String {
    let kind = item["type"].as_str().unwrap_or("object");
    item_key(kind, &item["definition"]).unwrap_or_else(|| format!("{kind} {}", item["definition"]))
}

/// The key of the object an item names, if it names one.
fn item_key(kind: &str, definition: &Value) -> Option<String> {
    ObjectId::of_item(kind, definition).map(|id| id.to_string())
}

/// Marks each item of the answer with the resource it comes from.
fn attribute(answer: &mut Value, resource_of: &BTreeMap<String, String>) {
    for (section, _) in SECTIONS {
        if let Some(Value::Array(items)) = answer.get_mut(section) {
            for item in items {
                let kind = item["type"].as_str().unwrap_or_default().to_owned();
                let from = item_key(&kind, &item["definition"]).and_then(|k| resource_of.get(&k));
                if let Some(from) = from {
                    item["resource"] = Value::String(from.clone());
                }
            }
        }
    }
}

/// `replace_metadata` (v2) of `args`, keeping inconsistent objects so the dry run can list
/// the ones the change would add.
fn replace(mut args: Value) -> Value {
    args["allow_inconsistent_metadata"] = Value::Bool(true);
    json!({"type": "replace_metadata", "version": 2, "args": args})
}

/// Reads the files, asks the target, and reports.
pub async fn run(command: &DiffCommand) -> Result<Report, PreviewError> {
    let input = read(&command.path, &command.namespace)?;
    let target = Target::new(
        command.endpoint.as_deref(),
        command.admin_secret.as_deref(),
        command.database_url.as_deref(),
    )?;
    let mut report = Report {
        source: String::new(),
        target: target.describe(),
        answer: None,
        refused: None,
        adopted: Vec::new(),
        conflicts: Vec::new(),
        waiting: Vec::new(),
        skipped: 0,
    };
    let (request, resource_of) = match input {
        Input::Metadata { file, document } => {
            report.source = format!("metadata document {}", file.display());
            let args = if document.get("metadata").is_some() {
                document
            } else {
                json!({"metadata": document})
            };
            (replace(args), BTreeMap::new())
        }
        Input::Resources { resources, skipped } => {
            report.source = format!(
                "{} resources from {}",
                resources.len(),
                command.path.display()
            );
            report.skipped = skipped;
            let (current, owners) = target.current().await?;
            let desired = desired(&current, &owners, &resources, command.prune)?;
            report.adopted = desired.adopted;
            report.conflicts = desired.conflicts;
            report.waiting = desired.waiting;
            let document = serde_json::to_value(&desired.document)
                .map_err(|e| PreviewError::Input(e.to_string()))?;
            (replace(json!({"metadata": document})), desired.resource_of)
        }
    };
    match target.dry_run(request).await? {
        DryRun::Answer(mut answer) => {
            attribute(&mut answer, &resource_of);
            report.answer = Some(answer);
        }
        DryRun::Refused(body) => report.refused = Some(body),
    }
    Ok(report)
}

/// `basalt diff`: prints the report and returns the exit code.
pub async fn main(command: &DiffCommand) -> u8 {
    match run(command).await {
        Ok(report) => {
            match command.output {
                DiffOutput::Text => print!("{}", report.text()),
                DiffOutput::Json => println!("{:#}", report.json()),
            }
            report.exit_code()
        }
        Err(e) => {
            eprintln!("basalt diff: {e}");
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::types::{ActionPermission, Name};

    fn blog() -> Metadata {
        serde_json::from_str(include_str!("../../tests/fixtures/blog_metadata.json")).unwrap()
    }

    fn author(annotations: Value) -> ResourceDoc {
        let manifest = json!({
            "apiVersion": "basalt.dev/v1alpha1", "kind": "TrackedTable",
            "metadata": {"name": "author", "namespace": "shop", "annotations": annotations},
            "spec": {"table": {"schema": "public", "name": "author"},
                     "arrayRelationships": [{"name": "articles", "using": {"foreignKeyConstraintOn":
                        {"table": {"schema": "public", "name": "article"}, "column": "author_id"}}}]},
        });
        ResourceDoc {
            file: "author.yaml".into(),
            kind: "TrackedTable".into(),
            namespace: "shop".into(),
            name: "author".into(),
            manifest,
        }
    }

    fn owned_by_author(keys: &[&str]) -> Map<String, Value> {
        let owner = json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "TrackedTable",
                           "namespace": "shop", "name": "author"});
        keys.iter()
            .map(|k| ((*k).to_owned(), owner.clone()))
            .collect()
    }

    /// A relationship the resource owned and no longer declares is removed; the rest of
    /// the table (its permissions, declared by other resources) stays.
    #[test]
    fn an_owned_object_no_longer_declared_is_removed() {
        let current = blog();
        let owners = owned_by_author(&[
            "table:public.author",
            "relationship:public.author.articles",
            "relationship:public.author.comments",
        ]);
        let out = desired(&current, &owners, &[author(json!({}))], false).unwrap();
        let before = catalog_objects(&current);
        let after = catalog_objects(&out.document);
        let gone: Vec<&String> = before.keys().filter(|k| !after.contains_key(*k)).collect();
        assert_eq!(gone, ["relationship:public.author.comments"]);
        assert_eq!(
            out.resource_of["relationship:public.author.comments"],
            "TrackedTable shop/author"
        );
        assert!(out.conflicts.is_empty() && out.waiting.is_empty() && out.adopted.is_empty());
    }

    /// Objects created through the API: a conflict, unless the resource adopts them.
    #[test]
    fn api_objects_are_conflicts_unless_adopted() {
        let current = blog();
        let api: Map<String, Value> = catalog_objects(&current)
            .into_keys()
            .map(|k| (k, json!("api")))
            .collect();
        let out = desired(&current, &api, &[author(json!({}))], false).unwrap();
        let keys: Vec<&str> = out.conflicts.iter().map(|h| h.key.as_str()).collect();
        assert_eq!(
            keys,
            ["table:public.author", "relationship:public.author.articles"]
        );
        let out = desired(
            &current,
            &api,
            &[author(json!({"basalt.dev/adopt": "true"}))],
            false,
        )
        .unwrap();
        assert!(out.conflicts.is_empty());
        assert_eq!(out.adopted.len(), 2);
        // Adopting what is in sync changes no definition (the table's custom root fields
        // are not in this resource, so the table settings differ).
        let after = catalog_objects(&out.document);
        let before = catalog_objects(&current);
        assert_eq!(
            after["relationship:public.author.articles"],
            before["relationship:public.author.articles"]
        );
    }

    fn newsletter(url: &str, annotations: Value) -> ResourceDoc {
        let manifest = json!({
            "apiVersion": "basalt.dev/v1alpha1", "kind": "RemoteSchema",
            "metadata": {"name": "newsletter", "namespace": "shop", "annotations": annotations},
            "spec": {"name": "newsletter", "definition": {"url": url,
                "headers": [{"name": "Authorization", "valueFromEnv": "NEWSLETTER_API_TOKEN"}]}},
        });
        ResourceDoc {
            file: "remote-schema-newsletter.yaml".into(),
            kind: "RemoteSchema".into(),
            namespace: "shop".into(),
            name: "newsletter".into(),
            manifest,
        }
    }

    /// A RemoteSchema is put into the document like any object (it needs no table), replaces
    /// the one it owns, and is a conflict with one made through the API unless it adopts it.
    #[test]
    fn remote_schemas_are_placed_owned_and_adopted() {
        let current = blog();
        let key = "remote_schema:newsletter";
        let out = desired(
            &current,
            &Map::new(),
            &[newsletter("http://a/graphql", json!({}))],
            false,
        )
        .unwrap();
        let added = &catalog_objects(&out.document)[key];
        assert_eq!(
            added.canonical()["definition"],
            json!({"url": "http://a/graphql",
                "headers": [{"name": "Authorization", "value_from_env": "NEWSLETTER_API_TOKEN"}]})
        );
        assert_eq!(out.resource_of[key], "RemoteSchema shop/newsletter");

        let owner = json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "RemoteSchema",
                           "namespace": "shop", "name": "newsletter"});
        let owners: Map<String, Value> = [(key.to_owned(), owner)].into_iter().collect();
        let edited = desired(
            &out.document,
            &owners,
            &[newsletter("http://b/graphql", json!({}))],
            false,
        )
        .unwrap();
        assert_eq!(edited.document.remote_schemas.len(), 1);
        assert_eq!(
            edited.document.remote_schemas[0].definition.url.as_deref(),
            Some("http://b/graphql")
        );
        // Pruned when its file is gone.
        let pruned = desired(&out.document, &owners, &[], true).unwrap();
        assert!(pruned.document.remote_schemas.is_empty());

        let api: Map<String, Value> = [(key.to_owned(), json!("api"))].into_iter().collect();
        let held = desired(
            &out.document,
            &api,
            &[newsletter("http://b/graphql", json!({}))],
            false,
        )
        .unwrap();
        assert_eq!(held.conflicts.len(), 1);
        assert_eq!(held.conflicts[0].key, key);
        let adopted = desired(
            &out.document,
            &api,
            &[newsletter(
                "http://b/graphql",
                json!({"basalt.dev/adopt": "true"}),
            )],
            false,
        )
        .unwrap();
        assert!(adopted.conflicts.is_empty());
        assert_eq!(adopted.adopted.len(), 1);

        // The CRD's rules are checked as the controller checks them.
        let mut both = newsletter("http://b/graphql", json!({}));
        both.manifest["spec"]["definition"]["urlFromEnv"] = json!("NEWSLETTER_GRAPHQL_URL");
        let err = desired(&current, &Map::new(), &[both], false).unwrap_err();
        assert!(
            err.to_string()
                .contains("exactly one of url and urlFromEnv"),
            "{err}"
        );
    }

    fn archive_article(permissions: Value) -> ResourceDoc {
        let manifest = json!({
            "apiVersion": "basalt.dev/v1alpha1", "kind": "Action",
            "metadata": {"name": "archive-article", "namespace": "shop"},
            "spec": {"name": "archiveArticle", "definition": {"outputType": "ArchiveResult",
                "handler": "http://actions.shop.svc/archive"}, "permissions": permissions},
        });
        ResourceDoc {
            file: "action-archive-article.yaml".into(),
            kind: "Action".into(),
            namespace: "shop".into(),
            name: "archive-article".into(),
            manifest,
        }
    }

    /// An Action puts the action and one permission per role into the document; a role it no
    /// longer lists is removed, a role allowed through the API stays, and pruning its file
    /// removes the action with every permission.
    #[test]
    fn actions_are_placed_with_their_permissions() {
        let current = blog();
        let out = desired(
            &current,
            &Map::new(),
            &[archive_article(
                json!([{"role": "user"}, {"role": "editor"}]),
            )],
            false,
        )
        .unwrap();
        assert_eq!(out.document.actions.len(), 1);
        let roles: Vec<&str> = out.document.actions[0]
            .permissions
            .iter()
            .map(|p| p.role.0.as_str())
            .collect();
        assert_eq!(roles, ["user", "editor"]);
        assert_eq!(
            out.resource_of["action_permission:archiveArticle.editor"],
            "Action shop/archive-article"
        );

        let owner = json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "Action",
                           "namespace": "shop", "name": "archive-article"});
        let mut owners: Map<String, Value> = catalog_objects(&out.document)
            .into_keys()
            .filter(|k| k.starts_with("action"))
            .map(|k| (k, owner.clone()))
            .collect();
        let mut document = out.document.clone();
        document.actions[0].permissions.push(ActionPermission {
            role: Name("auditor".into()),
            comment: None,
        });
        owners.insert(
            "action_permission:archiveArticle.auditor".into(),
            json!("api"),
        );
        let edited = desired(
            &document,
            &owners,
            &[archive_article(json!([{"role": "user"}]))],
            false,
        )
        .unwrap();
        let roles: Vec<&str> = edited.document.actions[0]
            .permissions
            .iter()
            .map(|p| p.role.0.as_str())
            .collect();
        assert_eq!(roles, ["user", "auditor"]);
        let pruned = desired(&document, &owners, &[], true).unwrap();
        assert!(pruned.document.actions.is_empty());
    }

    fn limits(name: &str, depth: u32) -> ResourceDoc {
        let manifest = json!({
            "apiVersion": "basalt.dev/v1alpha1", "kind": "ApiLimitPolicy",
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {"depthLimit": {"global": depth}},
        });
        ResourceDoc {
            file: format!("{name}.yaml").into(),
            kind: "ApiLimitPolicy".into(),
            namespace: "shop".into(),
            name: name.into(),
            manifest,
        }
    }

    /// Two ApiLimitPolicies: the owner of `api_limits` (else the first by `namespace/name`)
    /// applies, the other is a conflict naming it, as the controller decides.
    #[test]
    fn one_api_limit_policy_applies_and_the_others_conflict() {
        let current = blog();
        let files = [limits("b", 3), limits("a", 5)];
        let first = desired(&current, &Map::new(), &files, false).unwrap();
        assert_eq!(
            first.document.api_limits.depth_limit.map(|d| d.global.0),
            Some(5)
        );
        assert_eq!(
            first.conflicts,
            vec![Held {
                key: "api_limits".into(),
                resource: "ApiLimitPolicy shop/b".into(),
                reason: "api_limits is owned by ApiLimitPolicy shop/a".into(),
            }]
        );
        let owners: Map<String, Value> = [(
            "api_limits".to_owned(),
            json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "ApiLimitPolicy",
                   "namespace": "shop", "name": "b"}),
        )]
        .into_iter()
        .collect();
        let owned = desired(&current, &owners, &files, false).unwrap();
        assert_eq!(
            owned.document.api_limits.depth_limit.map(|d| d.global.0),
            Some(3)
        );
        assert_eq!(owned.conflicts[0].resource, "ApiLimitPolicy shop/a");
        assert_eq!(owned.resource_of["api_limits"], "ApiLimitPolicy shop/b");
    }
}
