//! AllowListEntry: a query collection on the allow-list.

use super::common::*;
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};
use super::{ExportedSpec, Kind};
use crate::metadata::objects::Object;
use crate::metadata::parse::parse;
use crate::metadata::types::{AllowlistEntry, Metadata};
use crate::metadata::MetadataError;
use serde_json::json;

/// A collection on the allow-list.
#[derive(CustomResource, KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "basalt.dev",
    version = "v1alpha1",
    kind = "AllowListEntry",
    plural = "allowlistentries",
    namespaced,
    status = "ResourceStatus",
    shortname = "ballow",
    category = "basalt",
    cel,
    printcolumn = r#"{"name":"Collection","type":"string","jsonPath":".spec.collection"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","priority":1}"#,
    printcolumn = r#"{"name":"Drifted","type":"string","jsonPath":".status.conditions[?(@.type==\"Drifted\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct AllowListEntrySpec {
    /// Collection name (immutable).
    #[x_kube(validation = Rule::new("self == oldSelf").message("collection is immutable"))]
    pub collection: String,
}

impl AllowListEntrySpec {
    /// An AllowListEntry as an allow-list entry.
    pub fn entry(&self) -> Result<AllowlistEntry, MetadataError> {
        parse(&json!({"collection": self.collection}), &spec_path())
    }

    /// The catalog object an AllowListEntry declares.
    pub fn objects(&self) -> Result<Vec<Object>, MetadataError> {
        Ok(vec![Object::Allowlist(self.entry()?)])
    }
}

impl Kind for AllowListEntry {
    fn declared(&self) -> Result<Vec<Object>, MetadataError> {
        self.spec.objects()
    }

    fn export(metadata: &Metadata) -> Vec<ExportedSpec> {
        metadata
            .allowlist
            .iter()
            .map(|a| {
                let spec = json!({"collection": a.collection.0});
                ExportedSpec::new(vec![a.collection.0.clone()], spec)
            })
            .collect()
    }
}
