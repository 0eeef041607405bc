//! The API server's state: stored objects, one global monotonic `resourceVersion`, and the log
//! of changes that watches replay. Every write goes through [`Store::commit`], which stamps what
//! the server owns (`uid`, `creationTimestamp`, `resourceVersion`, `generation` bumped only when
//! `spec` changes, `deletionTimestamp`), drops no-op writes, finishes deletions whose finalizers
//! are gone, and appends the change. Pure data: no HTTP, no clock other than timestamps.

mod edit;

use crate::resources::ResourceType;
use crate::selector::Selector;
use edit::*;
use serde_json::{json, Value};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// Changes kept for watches. A watch from an older `resourceVersion` gets `410 Expired` and
/// the client lists again, as with a compacted etcd.
const KEPT_CHANGES: usize = 100_000;

/// Why the API server refused a request: rendered as a `Status` object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// HTTP status code.
    pub code: u16,
    /// The `Status.reason`, e.g. `NotFound`.
    pub reason: &'static str,
    /// Human-readable message.
    pub message: String,
}

impl Rejection {
    pub(crate) fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Rejection {
            code,
            reason,
            message: message.into(),
        }
    }

    pub(crate) fn not_found(resource: &ResourceType, name: &str) -> Self {
        Rejection::new(
            404,
            "NotFound",
            format!(
                "{}.{} \"{name}\" not found",
                resource.plural,
                group(resource)
            ),
        )
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Rejection::new(400, "BadRequest", message)
    }

    /// The `Status` object the API server answers with.
    pub fn to_status(&self) -> Value {
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        })
    }
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for Rejection {}

fn group(resource: &ResourceType) -> &'static str {
    resource
        .api_version
        .split_once('/')
        .map(|(g, _)| g)
        .unwrap_or("")
}

/// A stored object's identity: its type (index in the table), namespace and name. Ordered, so
/// lists come out sorted by namespace and name and pages can resume after a key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Key {
    pub(crate) resource: usize,
    pub(crate) namespace: String,
    pub(crate) name: String,
}

impl Key {
    pub(crate) fn new(resource: &ResourceType, namespace: &str, name: &str) -> Key {
        Key {
            resource: resource.index(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }
}

/// What happened to an object, as a watch reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChangeType {
    Added,
    Modified,
    Deleted,
}

impl ChangeType {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ChangeType::Added => "ADDED",
            ChangeType::Modified => "MODIFIED",
            ChangeType::Deleted => "DELETED",
        }
    }
}

/// One entry of the change log.
#[derive(Debug, Clone)]
pub(crate) struct Change {
    pub(crate) version: u64,
    pub(crate) resource: usize,
    pub(crate) namespace: String,
    pub(crate) change: ChangeType,
    /// The object after the change (before it, for a deletion), shared by every watch.
    pub(crate) object: Arc<Value>,
}

/// How a write changes an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Write {
    /// Server-side apply, or a user's `kubectl apply`: the top-level fields given replace
    /// the stored ones, labels, annotations and finalizers are merged, and the object is
    /// created when absent.
    Apply,
    /// RFC 7386 JSON merge patch.
    Merge,
    /// RFC 6902 JSON patch; a failing `test` refuses the whole patch (422).
    Json,
    /// `PUT`: the body replaces the object.
    Replace,
}

/// One page of a list.
#[derive(Debug)]
pub(crate) struct Page {
    pub(crate) items: Vec<Value>,
    /// The version the list (its first page) was read at: a watch continues from it.
    pub(crate) version: u64,
    /// Token for the next page, when `limit` cut the list.
    pub(crate) next: Option<String>,
}

/// The state behind the API.
#[derive(Debug, Default)]
pub(crate) struct Store {
    version: u64,
    uids: u64,
    objects: BTreeMap<Key, Value>,
    changes: VecDeque<Change>,
    /// Changes up to this version were dropped from the log.
    compacted: u64,
}

impl Store {
    /// The latest `resourceVersion`.
    pub(crate) fn version(&self) -> u64 {
        self.version
    }

    /// Versions at or below this one can no longer be watched from.
    pub(crate) fn compacted(&self) -> u64 {
        self.compacted
    }

    pub(crate) fn get(&self, key: &Key) -> Option<&Value> {
        self.objects.get(key)
    }

    /// Every stored object, in key order.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Value> {
        self.objects.values()
    }

    /// Objects of `resource` in `namespace` (or all) matching `selector`, at most `limit`,
    /// after the page `continue_token` names.
    pub(crate) fn list(
        &self,
        resource: &ResourceType,
        namespace: Option<&str>,
        selector: &Selector,
        limit: Option<usize>,
        continue_token: Option<&str>,
    ) -> Result<Page, Rejection> {
        let (version, after) = match continue_token {
            Some(token) => {
                let (version, key) = decode_continue(token)
                    .ok_or_else(|| Rejection::bad_request("invalid continue token"))?;
                (version, Some(key))
            }
            None => (self.version, None),
        };
        let index = resource.index();
        let start = Key {
            resource: index,
            namespace: String::new(),
            name: String::new(),
        };
        let mut items = Vec::new();
        let mut last: Option<&Key> = None;
        let mut more = false;
        for (key, object) in self.objects.range(start..) {
            if key.resource != index {
                break;
            }
            if after
                .as_ref()
                .is_some_and(|(ns, name)| (&key.namespace, &key.name) <= (ns, name))
            {
                continue;
            }
            if namespace.is_some_and(|ns| ns != key.namespace) || !selector.matches(object) {
                continue;
            }
            if limit.is_some_and(|l| items.len() >= l) {
                more = true;
                break;
            }
            items.push(object.clone());
            last = Some(key);
        }
        let next = match (more, last) {
            (true, Some(key)) => Some(encode_continue(version, &key.namespace, &key.name)),
            _ => None,
        };
        Ok(Page {
            items,
            version,
            next,
        })
    }

    /// Changes after `version` (exclusive), oldest first; `None` when the log no longer
    /// reaches back that far.
    pub(crate) fn changes_after(&self, version: u64) -> Option<impl Iterator<Item = &Change>> {
        if version < self.compacted {
            return None;
        }
        let first = self.changes.partition_point(|c| c.version <= version);
        Some(self.changes.range(first..))
    }

    /// Creates an object (`POST`): 409 when it exists.
    pub(crate) fn create(
        &mut self,
        resource: &'static ResourceType,
        namespace: &str,
        body: Value,
    ) -> Result<Value, Rejection> {
        let body = checked_body(resource, body)?;
        let name = body
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| Rejection::new(422, "Invalid", "metadata.name: Required value"))?
            .to_owned();
        check_namespace(&body, namespace)?;
        let key = Key::new(resource, namespace, &name);
        if self.objects.contains_key(&key) {
            return Err(Rejection::new(
                409,
                "AlreadyExists",
                format!(
                    "{}.{} \"{name}\" already exists",
                    resource.plural,
                    group(resource)
                ),
            ));
        }
        let mut object = body;
        if resource.status_subresource {
            strip(&mut object, "status");
        }
        Ok(self.commit(resource, key, None, object, false))
    }

    /// Changes an existing object (or creates it, for [`Write::Apply`] of the object itself).
    /// `status`: the request went to the `/status` subresource.
    pub(crate) fn write(
        &mut self,
        resource: &'static ResourceType,
        key: Key,
        status: bool,
        how: Write,
        body: Value,
    ) -> Result<Value, Rejection> {
        let Some(current) = self.objects.get(&key).cloned() else {
            if how == Write::Apply && !status {
                let mut body = checked_body(resource, body)?;
                check_namespace(&body, &key.namespace)?;
                set(&mut body, "name", Value::String(key.name.clone()));
                if resource.status_subresource {
                    strip(&mut body, "status");
                }
                return Ok(self.commit(resource, key, None, body, false));
            }
            return Err(Rejection::not_found(resource, &key.name));
        };
        let changed = match how {
            Write::Apply => {
                let body = checked_body(resource, body)?;
                check_name(&body, &key.name)?;
                applied(&current, &body, status)
            }
            Write::Merge => {
                check_version(&current, &body)?;
                let mut changed = current.clone();
                json_patch::merge(&mut changed, &body);
                changed
            }
            Write::Json => json_patched(&current, &body)?,
            Write::Replace => {
                let body = checked_body(resource, body)?;
                check_name(&body, &key.name)?;
                check_version(&current, &body)?;
                body
            }
        };
        // A subresource write changes only the status; a write of the object never does.
        let changed = if !resource.status_subresource {
            changed
        } else if status {
            let mut kept = current.clone();
            match changed.get("status") {
                Some(s) => set_top(&mut kept, "status", s.clone()),
                None => strip(&mut kept, "status"),
            }
            kept
        } else {
            let mut kept = changed;
            match current.get("status") {
                Some(s) => set_top(&mut kept, "status", s.clone()),
                None => strip(&mut kept, "status"),
            }
            kept
        };
        Ok(self.commit(resource, key, Some(&current), changed, false))
    }

    /// Deletes an object: with finalizers it only gets a `deletionTimestamp` and stays until
    /// a write empties them; without, it is removed at once.
    pub(crate) fn delete(
        &mut self,
        resource: &'static ResourceType,
        key: Key,
    ) -> Result<Value, Rejection> {
        let Some(current) = self.objects.get(&key).cloned() else {
            return Err(Rejection::not_found(resource, &key.name));
        };
        Ok(self.commit(resource, key, Some(&current), current.clone(), true))
    }

    /// Stores `changed` as the new state of `key`: stamps the server-owned metadata (a client
    /// cannot change it; `deleting` sets the deletion timestamp), drops a write that changes
    /// nothing, removes an object being deleted whose finalizers are gone, and logs the change
    /// for watches. Returns the object as stored (or as deleted).
    fn commit(
        &mut self,
        resource: &'static ResourceType,
        key: Key,
        current: Option<&Value>,
        mut changed: Value,
        deleting: bool,
    ) -> Value {
        set_top(
            &mut changed,
            "apiVersion",
            Value::String(resource.api_version.to_owned()),
        );
        set_top(
            &mut changed,
            "kind",
            Value::String(resource.kind.to_owned()),
        );
        set(&mut changed, "name", Value::String(key.name.clone()));
        set(
            &mut changed,
            "namespace",
            Value::String(key.namespace.clone()),
        );
        match current {
            Some(current) => {
                let before = current
                    .pointer("/metadata/generation")
                    .and_then(Value::as_i64)
                    .unwrap_or(1);
                let generation = if current.get("spec") == changed.get("spec") {
                    before
                } else {
                    before + 1
                };
                set(&mut changed, "generation", json!(generation));
                for field in SERVER_OWNED {
                    match current.pointer(&format!("/metadata/{field}")) {
                        Some(v) => set(&mut changed, field, v.clone()),
                        None => unset(&mut changed, field),
                    }
                }
                if deleting && changed.pointer("/metadata/deletionTimestamp").is_none() {
                    set(&mut changed, "deletionTimestamp", Value::String(now()));
                    set(&mut changed, "deletionGracePeriodSeconds", json!(0));
                }
                if *current == changed {
                    return changed;
                }
            }
            None => {
                self.uids += 1;
                let uid = format!("00000000-0000-4000-8000-{:012x}", self.uids);
                for field in SERVER_OWNED {
                    unset(&mut changed, field);
                }
                set(&mut changed, "generation", json!(1));
                set(&mut changed, "uid", Value::String(uid));
                set(&mut changed, "creationTimestamp", Value::String(now()));
            }
        }
        self.version += 1;
        set(
            &mut changed,
            "resourceVersion",
            Value::String(self.version.to_string()),
        );
        let gone = changed.pointer("/metadata/deletionTimestamp").is_some()
            && finalizers(&changed).is_empty();
        let change = if gone {
            self.objects.remove(&key);
            ChangeType::Deleted
        } else {
            self.objects.insert(key.clone(), changed.clone());
            if current.is_some() {
                ChangeType::Modified
            } else {
                ChangeType::Added
            }
        };
        self.log(key, change, changed.clone());
        changed
    }

    fn log(&mut self, key: Key, change: ChangeType, object: Value) {
        self.changes.push_back(Change {
            version: self.version,
            resource: key.resource,
            namespace: key.namespace,
            change,
            object: Arc::new(object),
        });
        while self.changes.len() > KEPT_CHANGES {
            if let Some(dropped) = self.changes.pop_front() {
                self.compacted = dropped.version;
            }
        }
    }
}

/// Metadata only the server writes; a client's value is ignored.
const SERVER_OWNED: [&str; 5] = [
    "uid",
    "creationTimestamp",
    "resourceVersion",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// The time now in RFC 3339 (UTC, seconds), as `creationTimestamp` is written.
pub(crate) fn now() -> String {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(since_epoch.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::ResourceType;

    fn tables() -> &'static ResourceType {
        ResourceType::by_kind("basalt.dev/v1alpha1", "TrackedTable").unwrap()
    }

    fn table(name: &str, spec: Value) -> Value {
        json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "TrackedTable",
            "metadata": {"name": name, "namespace": "ns"}, "spec": spec})
    }

    fn key(name: &str) -> Key {
        Key::new(tables(), "ns", name)
    }

    fn meta(object: &Value, field: &str) -> Value {
        object["metadata"][field].clone()
    }

    #[test]
    fn timestamps_are_rfc3339_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_827_696), "2000-02-29T12:34:56Z");
        assert_eq!(rfc3339(1_709_251_199), "2024-02-29T23:59:59Z");
        assert_eq!(rfc3339(4_102_444_800), "2100-01-01T00:00:00Z");
    }

    #[test]
    fn generation_moves_with_the_spec_only_and_versions_with_every_change() {
        let mut store = Store::default();
        let created = store
            .create(tables(), "ns", table("a", json!({"x": 1})))
            .unwrap();
        assert_eq!(meta(&created, "generation"), 1);
        assert_eq!(meta(&created, "resourceVersion"), "1");
        let status = store
            .write(
                tables(),
                key("a"),
                true,
                Write::Apply,
                json!({"status": {"ready": true}}),
            )
            .unwrap();
        assert_eq!(meta(&status, "generation"), 1, "a status write");
        assert_eq!(meta(&status, "resourceVersion"), "2");
        assert_eq!(status["status"], json!({"ready": true}));
        let same = store
            .write(
                tables(),
                key("a"),
                false,
                Write::Apply,
                table("a", json!({"x": 1})),
            )
            .unwrap();
        assert_eq!(meta(&same, "resourceVersion"), "2", "a no-op write");
        let spec = store
            .write(
                tables(),
                key("a"),
                false,
                Write::Merge,
                json!({"spec": {"x": 2}}),
            )
            .unwrap();
        assert_eq!(meta(&spec, "generation"), 2);
        assert_eq!(meta(&spec, "resourceVersion"), "3");
        assert_eq!(spec["status"], json!({"ready": true}), "status kept");
        assert_eq!(meta(&spec, "uid"), meta(&created, "uid"));
        let changes: Vec<_> = store
            .changes_after(0)
            .unwrap()
            .map(|c| (c.version, c.change))
            .collect();
        assert_eq!(
            changes,
            [
                (1, ChangeType::Added),
                (2, ChangeType::Modified),
                (3, ChangeType::Modified)
            ]
        );
    }

    #[test]
    fn object_writes_leave_status_alone_and_clients_cannot_change_server_fields() {
        let mut store = Store::default();
        let mut body = table("a", json!({}));
        body["status"] = json!({"forged": true});
        body["metadata"]["uid"] = json!("mine");
        let created = store.create(tables(), "ns", body).unwrap();
        assert!(created.get("status").is_none());
        assert_ne!(meta(&created, "uid"), "mine");
        let patched = store
            .write(
                tables(),
                key("a"),
                false,
                Write::Merge,
                json!({"status": {"forged": true}, "metadata": {"uid": "mine", "labels": {"l": "v"}}}),
            )
            .unwrap();
        assert!(patched.get("status").is_none());
        assert_eq!(meta(&patched, "uid"), meta(&created, "uid"));
        assert_eq!(meta(&patched, "labels"), json!({"l": "v"}));
    }

    #[test]
    fn finalizers_hold_a_deletion_until_a_patch_empties_them() {
        let mut store = Store::default();
        let mut body = table("a", json!({}));
        body["metadata"]["finalizers"] = json!(["f"]);
        store.create(tables(), "ns", body).unwrap();
        let deleting = store.delete(tables(), key("a")).unwrap();
        assert!(meta(&deleting, "deletionTimestamp").is_string());
        assert!(store.get(&key("a")).is_some());
        let failed = store.write(
            tables(),
            key("a"),
            false,
            Write::Json,
            json!([{"op": "test", "path": "/metadata/finalizers/0", "value": "other"},
                   {"op": "remove", "path": "/metadata/finalizers/0"}]),
        );
        assert_eq!(failed.unwrap_err().code, 422);
        let removed = store
            .write(
                tables(),
                key("a"),
                false,
                Write::Json,
                json!([{"op": "test", "path": "/metadata/finalizers/0", "value": "f"},
                       {"op": "remove", "path": "/metadata/finalizers/0"}]),
            )
            .unwrap();
        assert!(store.get(&key("a")).is_none());
        let last = store.changes_after(0).unwrap().last().unwrap();
        assert_eq!(last.change, ChangeType::Deleted);
        assert_eq!(meta(&removed, "resourceVersion"), last.version.to_string());
    }

    #[test]
    fn lists_page_in_key_order_from_one_version() {
        let mut store = Store::default();
        for name in ["c", "a", "b"] {
            store
                .create(tables(), "ns", table(name, json!({})))
                .unwrap();
        }
        let all = Selector::default();
        let first = store
            .list(tables(), Some("ns"), &all, Some(2), None)
            .unwrap();
        let names = |p: &Page| -> Vec<String> {
            p.items
                .iter()
                .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
                .collect()
        };
        assert_eq!(names(&first), ["a", "b"]);
        store.create(tables(), "ns", table("d", json!({}))).unwrap();
        let token = first.next.clone().unwrap();
        let second = store
            .list(tables(), Some("ns"), &all, Some(2), Some(&token))
            .unwrap();
        assert_eq!(names(&second), ["c", "d"]);
        assert_eq!(second.version, first.version, "the first page's version");
        assert!(second.next.is_none());
        let other = store
            .list(tables(), Some("elsewhere"), &all, None, None)
            .unwrap();
        assert!(other.items.is_empty());
    }

    #[test]
    fn apply_creates_then_merges_labels_and_finalizers() {
        let mut store = Store::default();
        let mut body = table("a", json!({"x": 1}));
        body["metadata"]["labels"] = json!({"a": "1"});
        store
            .write(tables(), key("a"), false, Write::Apply, body)
            .unwrap();
        let mut body = table("a", json!({"y": 2}));
        body["metadata"]["labels"] = json!({"b": "2"});
        body["metadata"]["finalizers"] = json!(["f"]);
        let applied = store
            .write(tables(), key("a"), false, Write::Apply, body)
            .unwrap();
        assert_eq!(applied["spec"], json!({"y": 2}));
        assert_eq!(meta(&applied, "labels"), json!({"a": "1", "b": "2"}));
        assert_eq!(meta(&applied, "finalizers"), json!(["f"]));
        assert_eq!(meta(&applied, "generation"), 2);
        let missing = store.write(
            tables(),
            key("b"),
            true,
            Write::Apply,
            json!({"status": {}}),
        );
        assert_eq!(missing.unwrap_err().code, 404, "status of a missing object");
    }
}
