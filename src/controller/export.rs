//! `basalt export --format crds`: an existing catalog (built through `/v1/query`) as custom
//! resources that, applied, adopt and reproduce it: the one step that moves imperative
//! metadata into Git. Each kind writes its own resources ([`super::kinds::Kind::export`], the
//! inverse of its mapping, field by field); every resource is parsed back into its kind's
//! typed spec before it is emitted, so what is written is what the CRDs accept.

use super::kinds;
use super::reconcile::{ADOPT, API_VERSION};
use crate::metadata::types::Metadata;
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// Why a catalog cannot be exported.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// A generated resource does not deserialize into its kind's spec: a bug in the export,
    /// since the CRDs would refuse it.
    #[error("{kind} {name} does not fit its CRD: {reason}")]
    DoesNotFitCrd {
        kind: &'static str,
        /// `metadata.name` of the resource.
        name: String,
        /// What the typed spec refused.
        reason: serde_json::Error,
    },
}

/// One exported resource.
#[derive(Debug, Clone, PartialEq)]
pub struct Exported {
    pub kind: &'static str,
    /// `metadata.name`.
    pub name: String,
    /// The full manifest.
    pub manifest: Value,
}

/// The export of one catalog.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Export {
    /// Resources kind by kind in the kinds table's order (dependencies first), each kind's
    /// in the document's order.
    pub resources: Vec<Exported>,
}

/// A Kubernetes object name (RFC 1123 subdomain) from metadata names.
fn k8s_name(parts: &[&str]) -> String {
    let mut out = String::new();
    for part in parts {
        if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
        for c in part.chars() {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_alphanumeric() {
                out.push(c);
            } else if !out.ends_with('-') {
                out.push('-');
            }
        }
    }
    let trimmed: String = out.trim_matches('-').chars().take(240).collect();
    let trimmed = trimmed.trim_end_matches('-').to_owned();
    if trimmed.is_empty() {
        "object".to_owned()
    } else {
        trimmed
    }
}

/// Collects resources, keeping names unique per kind.
struct Builder {
    namespace: String,
    taken: BTreeSet<(&'static str, String)>,
    export: Export,
}

impl Builder {
    fn push(
        &mut self,
        kind: &'static str,
        exported: kinds::ExportedSpec,
        fits: kinds::ExportCheck,
    ) -> Result<(), ExportError> {
        let parts: Vec<&str> = exported.name.iter().map(String::as_str).collect();
        let spec = exported.spec;
        let base = k8s_name(&parts);
        let mut name = base.clone();
        let mut n = 2;
        while !self.taken.insert((kind, name.clone())) {
            name = format!("{base}-{n}");
            n += 1;
        }
        let manifest = json!({
            "apiVersion": API_VERSION,
            "kind": kind,
            "metadata": {"name": name, "namespace": self.namespace, "annotations": {ADOPT: "true"}},
            "spec": spec,
        });
        // What the CRDs would refuse is a bug here, not something to write out.
        if let Err(reason) = fits(&manifest) {
            return Err(ExportError::DoesNotFitCrd { kind, name, reason });
        }
        self.export.resources.push(Exported {
            kind,
            name,
            manifest,
        });
        Ok(())
    }
}

/// Every object of `metadata` as resources in `namespace`, annotated for adoption.
pub fn resources(metadata: &Metadata, namespace: &str) -> Result<Export, ExportError> {
    let mut b = Builder {
        namespace: namespace.to_owned(),
        taken: BTreeSet::new(),
        export: Export::default(),
    };
    for (kind, exported, fits) in kinds::export(metadata) {
        b.push(kind, exported, fits)?;
    }
    Ok(b.export)
}

impl Export {
    /// `(file name, YAML)` per resource, plus a `kustomization.yaml` listing them.
    pub fn files(&self) -> Result<Vec<(String, String)>, serde_yaml::Error> {
        let mut files = Vec::new();
        let mut names = Vec::new();
        for r in &self.resources {
            let file = format!("{}-{}.yaml", r.kind.to_ascii_lowercase(), r.name);
            files.push((file.clone(), serde_yaml::to_string(&r.manifest)?));
            names.push(file);
        }
        let kustomization = json!({
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": names,
        });
        files.push((
            "kustomization.yaml".to_owned(),
            serde_yaml::to_string(&kustomization)?,
        ));
        Ok(files)
    }

    /// All resources as one multi-document YAML stream.
    pub fn stream(&self) -> Result<String, serde_yaml::Error> {
        let mut out = String::new();
        for r in &self.resources {
            out.push_str("---\n");
            out.push_str(&serde_yaml::to_string(&r.manifest)?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_rfc1123_and_unique_per_kind() {
        assert_eq!(k8s_name(&["My_Schema", "Article"]), "my-schema-article");
        assert_eq!(k8s_name(&["__x__", "", "y"]), "x-y");
        assert_eq!(k8s_name(&["_"]), "object");
        let metadata: Metadata = serde_json::from_value(json!({"version": 2, "tables": [
            {"table": {"schema": "public", "name": "a_b"}},
            {"table": {"schema": "public", "name": "a-b"}}
        ]}))
        .unwrap();
        let export = resources(&metadata, "ns").unwrap();
        let names: Vec<&str> = export.resources.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, vec!["a-b", "a-b-2"]);
        assert_eq!(
            export.resources[0].manifest["metadata"]["annotations"]["basalt.dev/adopt"],
            "true"
        );
    }

    #[test]
    fn remote_schemas_are_exported_with_secrets_as_variable_names() {
        let metadata: Metadata = serde_json::from_value(json!({"version": 2, "tables": [],
        "remote_schemas": [
            {"name": "newsletter", "comment": "subscribers",
             "definition": {"url_from_env": "NEWSLETTER_GRAPHQL_URL", "timeout_seconds": 10,
                "forward_client_headers": true,
                "headers": [{"name": "Authorization", "value_from_env": "NEWSLETTER_API_TOKEN"},
                            {"name": "X-Source", "value": "basalt"}]}},
            {"name": "Geo_V2", "definition": {"url": "http://geo.internal/graphql"}}
        ]}))
        .unwrap();
        let export = resources(&metadata, "blog").unwrap();
        let specs: Vec<(&str, &str, &Value)> = export
            .resources
            .iter()
            .map(|r| (r.kind, r.name.as_str(), &r.manifest["spec"]))
            .collect();
        assert_eq!(
            specs,
            vec![
                (
                    "RemoteSchema",
                    "newsletter",
                    &json!({"name": "newsletter", "comment": "subscribers", "definition": {
                        "urlFromEnv": "NEWSLETTER_GRAPHQL_URL", "timeoutSeconds": 10,
                        "forwardClientHeaders": true,
                        "headers": [{"name": "Authorization", "valueFromEnv": "NEWSLETTER_API_TOKEN"},
                                    {"name": "X-Source", "value": "basalt"}]}})
                ),
                (
                    "RemoteSchema",
                    "geo-v2",
                    &json!({"name": "Geo_V2", "definition": {"url": "http://geo.internal/graphql"}})
                ),
            ]
        );
        // What is exported maps back to the same catalog entry, and passes the CRD's rules.
        for (r, entry) in export.resources.iter().zip(&metadata.remote_schemas) {
            let resource: kinds::RemoteSchema = serde_json::from_value(r.manifest.clone()).unwrap();
            resource.validate_cel().expect("the CRD's rules accept it");
            assert_eq!(&resource.spec.entry().unwrap(), entry);
        }
        let files = export.files().unwrap();
        assert_eq!(files[0].0, "remoteschema-newsletter.yaml");
    }

    #[test]
    fn actions_are_exported_with_their_permissions() {
        let metadata: Metadata = serde_json::from_value(json!({"version": 2, "tables": [],
        "actions": [
            {"name": "archiveArticle", "comment": "soft delete",
             "definition": {"handler": "{{BLOG_ACTIONS_URL}}/archive", "output_type": "ArchiveResult",
                "arguments": [{"name": "id", "type": "Int!", "description": "the article"}],
                "kind": "asynchronous", "timeout": 20, "forward_client_headers": true,
                "headers": [{"name": "X-Secret", "value_from_env": "BLOG_ACTIONS_SECRET"}]},
             "permissions": [{"role": "editor", "comment": "desk"}, {"role": "user"}]},
            {"name": "articleStats", "definition": {"type": "query",
                "handler": "http://stats.blog.svc/stats", "output_type": "[Stat!]!"}}
        ]}))
        .unwrap();
        let export = resources(&metadata, "blog").unwrap();
        let specs: Vec<(&str, &str, &Value)> = export
            .resources
            .iter()
            .map(|r| (r.kind, r.name.as_str(), &r.manifest["spec"]))
            .collect();
        assert_eq!(
            specs,
            vec![
                (
                    "Action",
                    "archivearticle",
                    &json!({"name": "archiveArticle", "comment": "soft delete", "definition": {
                        "type": "mutation", "kind": "asynchronous",
                        "arguments": [{"name": "id", "type": "Int!", "description": "the article"}],
                        "outputType": "ArchiveResult", "handler": "{{BLOG_ACTIONS_URL}}/archive",
                        "headers": [{"name": "X-Secret", "valueFromEnv": "BLOG_ACTIONS_SECRET"}],
                        "forwardClientHeaders": true, "timeout": 20},
                        "permissions": [{"role": "editor", "comment": "desk"}, {"role": "user"}]})
                ),
                (
                    "Action",
                    "articlestats",
                    &json!({"name": "articleStats", "definition": {"type": "query",
                        "outputType": "[Stat!]!", "handler": "http://stats.blog.svc/stats"}})
                ),
            ]
        );
        // What is exported declares the same catalog objects, and passes the CRD's rules.
        let catalog = crate::metadata::objects::catalog_objects(&metadata);
        let mut declared = Vec::new();
        for r in &export.resources {
            let resource: kinds::Action = serde_json::from_value(r.manifest.clone()).unwrap();
            resource.validate_cel().expect("the CRD's rules accept it");
            declared.extend(resource.spec.objects().unwrap());
        }
        assert_eq!(declared.len(), catalog.len());
        for object in declared {
            assert_eq!(
                Some(&object),
                catalog.get(&object.key()),
                "{}",
                object.key()
            );
        }
        let files = export.files().unwrap();
        assert_eq!(files[0].0, "action-archivearticle.yaml");
    }
}
