//! Who owns a managed object ([`Owner`], [`Managed`]: the ownership rows), and how a managed
//! object differs from what its resource declares ([`Drift`]), compared by canonical text.

use super::{catalog_objects, Object};
use crate::metadata::types::Metadata;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Writes `value` with object keys sorted at every level: equal documents give equal text
/// whatever their key order.
pub fn canonical_text(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                let mut out = Map::new();
                for k in keys {
                    out.insert(k.clone(), sorted(&map[k]));
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

/// `sha256:<hex>` of the canonical text of `value`.
pub fn hash(value: &Value) -> String {
    crate::metadata::digest::sha256_tagged(canonical_text(value).as_bytes())
}

/// The fields in which two definitions differ, as `field` or `field.subfield` (one level deep
/// under objects), in key order.
pub fn differing_fields(desired: &Value, actual: &Value) -> Vec<String> {
    let (Value::Object(a), Value::Object(b)) = (desired, actual) else {
        return if desired == actual {
            Vec::new()
        } else {
            vec!["(definition)".to_owned()]
        };
    };
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut out = Vec::new();
    for key in keys {
        match (a.get(key), b.get(key)) {
            (Some(x), Some(y)) if x == y => {}
            (Some(Value::Object(x)), Some(Value::Object(y))) => {
                let mut inner: Vec<&String> = x.keys().chain(y.keys()).collect();
                inner.sort();
                inner.dedup();
                out.extend(
                    inner
                        .into_iter()
                        .filter(|k| x.get(*k) != y.get(*k))
                        .map(|k| format!("{key}.{k}")),
                );
            }
            (None, Some(Value::Null)) | (Some(Value::Null), None) => {}
            _ => out.push(key.clone()),
        }
    }
    out
}

/// Who owns a managed object: the Kubernetes resource that declared it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Owner {
    /// `basalt.dev/v1alpha1`.
    pub api_version: String,
    /// The resource kind.
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// Its uid (a re-created resource of the same name is a different owner).
    #[serde(skip)]
    pub uid: String,
}

impl Owner {
    /// `basalt.dev/v1alpha1 Permission shop/article-user-select`.
    pub fn describe(&self) -> String {
        format!(
            "{} {} {}/{}",
            self.api_version, self.kind, self.namespace, self.name
        )
    }
}

/// One row of `basalt_catalog.managed_objects`.
#[derive(Debug, Clone, PartialEq)]
pub struct Managed {
    /// The object key.
    pub key: String,
    /// The owning resource.
    pub owner: Owner,
    /// Its `metadata.generation` when written.
    pub generation: i64,
    /// The canonical desired definition (`null` in rows read for planning, which compare
    /// `desired_hash`: see `catalog::managed::load_for_plans`).
    pub desired: Value,
    /// [`hash`] of `desired`.
    pub desired_hash: String,
    /// Catalog version of the write.
    pub applied_version: i64,
    /// Set when the owning resource no longer exists.
    pub orphaned: bool,
}

/// How a managed object differs from its resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriftKind {
    /// Present with another definition.
    Modified,
    /// Absent from the catalog.
    Missing,
    /// Its resource is gone.
    Orphaned,
}

impl DriftKind {
    /// Wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            DriftKind::Modified => "modified",
            DriftKind::Missing => "missing",
            DriftKind::Orphaned => "orphaned",
        }
    }
}

/// One drifted object.
#[derive(Debug, Clone, PartialEq)]
pub struct Drift {
    /// The object key.
    pub key: String,
    pub kind: DriftKind,
    pub owner: Owner,
    /// Differing fields (for `modified`).
    pub fields: Vec<String>,
}

impl Drift {
    /// Why the object is reported, naming the resource.
    pub fn reason(&self) -> String {
        let (namespace, name) = (&self.owner.namespace, &self.owner.name);
        match self.kind {
            DriftKind::Modified => {
                format!("catalog definition differs from Kubernetes resource {namespace}/{name}")
            }
            DriftKind::Missing => format!(
                "object declared by Kubernetes resource {namespace}/{name} is missing from the catalog"
            ),
            DriftKind::Orphaned => format!(
                "Kubernetes resource {namespace}/{name} that declared this object no longer exists"
            ),
        }
    }

    /// The `definition` of its `get_inconsistent_metadata` item (`type: "drift"`).
    pub fn definition(&self) -> Value {
        let mut definition = json!({
            "object": self.key,
            "drift": self.kind.as_str(),
            "owner": self.owner,
        });
        if !self.fields.is_empty() {
            definition["fields"] = json!(self.fields);
        }
        definition
    }
}

/// Drift of one managed object against the catalog, if any. Orphaned rows report as orphaned
/// whatever their definition.
pub fn drift_of(row: &Managed, catalog: &BTreeMap<String, Object>) -> Option<Drift> {
    let drift = |kind, fields| Drift {
        key: row.key.clone(),
        kind,
        owner: row.owner.clone(),
        fields,
    };
    if row.orphaned {
        return Some(drift(DriftKind::Orphaned, Vec::new()));
    }
    match catalog.get(&row.key) {
        None if super::implicit(&row.key, &row.desired) => None,
        None => Some(drift(DriftKind::Missing, Vec::new())),
        Some(object) => {
            let actual = object.canonical();
            if canonical_text(&actual) == canonical_text(&row.desired) {
                None
            } else {
                Some(drift(
                    DriftKind::Modified,
                    differing_fields(&row.desired, &actual),
                ))
            }
        }
    }
}

/// Every drifted managed object, in key order.
pub fn drift(rows: &[Managed], metadata: &Metadata) -> Vec<Drift> {
    let catalog = catalog_objects(metadata);
    rows.iter().filter_map(|r| drift_of(r, &catalog)).collect()
}

impl Owner {
    /// `{"apiVersion", "kind", "namespace", "name"}`: who owns an object, as `owner` fields
    /// report it (objects without one are owned by the imperative API, `"api"`).
    pub fn to_json(&self) -> Value {
        json!({"apiVersion": self.api_version, "kind": self.kind, "namespace": self.namespace, "name": self.name})
    }
}

/// Who owns each object of a document: its resource, or `"api"`.
pub fn owners(metadata: &Metadata, rows: &[Managed]) -> Map<String, Value> {
    let by_key: BTreeMap<&str, &Owner> = rows.iter().map(|r| (r.key.as_str(), &r.owner)).collect();
    catalog_objects(metadata)
        .into_keys()
        .map(|key| {
            let owner = by_key
                .get(key.as_str())
                .map(|o| o.to_json())
                .unwrap_or_else(|| json!("api"));
            (key, owner)
        })
        .collect()
}
