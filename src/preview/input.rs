//! What `basalt diff -f` reads: `basalt.dev` resources (YAML or JSON, several documents per
//! file, `kind: List` unwrapped) or one metadata document. Other Kubernetes objects in the
//! same directory (a Namespace, a `kustomization.yaml`) are skipped and counted.

use super::PreviewError;
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One `basalt.dev` resource, as read.
#[derive(Debug, Clone)]
pub struct ResourceDoc {
    /// The file it came from.
    pub file: PathBuf,
    /// `TrackedTable`, `Permission` …
    pub kind: String,
    /// Its namespace (the default one when the manifest names none).
    pub namespace: String,
    pub name: String,
    /// The whole manifest.
    pub manifest: Value,
}

impl ResourceDoc {
    /// `Permission default/article-user`.
    pub fn label(&self) -> String {
        format!("{} {}/{}", self.kind, self.namespace, self.name)
    }

    /// The value of an annotation.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.manifest["metadata"]["annotations"][key].as_str()
    }
}

/// The desired state read from the files.
#[derive(Debug)]
pub enum Input {
    /// A metadata document, replacing the whole catalog.
    Metadata {
        file: PathBuf,
        /// As written: the document itself, or `replace_metadata`'s arguments
        /// (`{"metadata": …}`).
        document: Value,
    },
    /// Resources, each declaring some objects.
    Resources {
        /// In file order.
        resources: Vec<ResourceDoc>,
        /// Documents that are neither (other Kubernetes kinds).
        skipped: usize,
    },
}

/// Reads `path` (a file, or every `.yaml`/`.yml`/`.json` file under a directory, in name
/// order).
pub fn read(path: &Path, default_namespace: &str) -> Result<Input, PreviewError> {
    let mut files = Vec::new();
    collect(path, &mut files)?;
    if files.is_empty() {
        return Err(PreviewError::Input(format!(
            "{}: no .yaml, .yml or .json files",
            path.display()
        )));
    }
    let mut resources = Vec::new();
    let mut metadata = Vec::new();
    let mut skipped = 0;
    for file in files {
        for document in documents(&file)? {
            sort(
                &file,
                document,
                default_namespace,
                &mut resources,
                &mut metadata,
                &mut skipped,
            )?;
        }
    }
    match (metadata.len(), resources.is_empty()) {
        (0, false) => Ok(Input::Resources { resources, skipped }),
        (1, true) => {
            let (file, document) = metadata.remove(0);
            Ok(Input::Metadata { file, document })
        }
        (0, true) => Err(PreviewError::Input(format!(
            "{}: no basalt.dev resources and no metadata document",
            path.display()
        ))),
        _ => Err(PreviewError::Input(format!(
            "{}: give either basalt.dev resources or one metadata document, not both or several documents",
            path.display()
        ))),
    }
}

fn collect(path: &Path, files: &mut Vec<PathBuf>) -> Result<(), PreviewError> {
    let unreadable = |e: std::io::Error| PreviewError::Input(format!("{}: {e}", path.display()));
    if !path.is_dir() {
        files.push(path.to_owned());
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(unreadable)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(unreadable)?;
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            collect(&entry, files)?;
        } else if matches!(
            entry.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "json")
        ) {
            files.push(entry);
        }
    }
    Ok(())
}

/// Every document of a file: JSON holds one, YAML any number (empty ones dropped).
fn documents(file: &Path) -> Result<Vec<Value>, PreviewError> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| PreviewError::Input(format!("{}: {e}", file.display())))?;
    let invalid = |e: String| PreviewError::Input(format!("{}: {e}", file.display()));
    if file.extension().and_then(|e| e.to_str()) == Some("json") {
        return serde_json::from_str(&text)
            .map(|v| vec![v])
            .map_err(|e| invalid(e.to_string()));
    }
    let mut out = Vec::new();
    for document in serde_yaml::Deserializer::from_str(&text) {
        let value = Value::deserialize(document).map_err(|e| invalid(e.to_string()))?;
        if !value.is_null() {
            out.push(value);
        }
    }
    Ok(out)
}

fn sort(
    file: &Path,
    document: Value,
    default_namespace: &str,
    resources: &mut Vec<ResourceDoc>,
    metadata: &mut Vec<(PathBuf, Value)>,
    skipped: &mut usize,
) -> Result<(), PreviewError> {
    let api_version = document.get("apiVersion").and_then(Value::as_str);
    let kind = document.get("kind").and_then(Value::as_str).unwrap_or("");
    match api_version {
        Some(v) if v.starts_with("basalt.dev/") => {
            let name = document["metadata"]["name"].as_str().ok_or_else(|| {
                PreviewError::Input(format!(
                    "{}: a {kind} without metadata.name",
                    file.display()
                ))
            })?;
            let namespace = document["metadata"]["namespace"]
                .as_str()
                .unwrap_or(default_namespace);
            resources.push(ResourceDoc {
                file: file.to_owned(),
                kind: kind.to_owned(),
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                manifest: document,
            });
        }
        Some(_) if kind == "List" => {
            if let Some(Value::Array(items)) = document.get("items") {
                for item in items.clone() {
                    sort(file, item, default_namespace, resources, metadata, skipped)?;
                }
            }
        }
        Some(_) => *skipped += 1,
        None if document.get("version").is_some() || document.get("tables").is_some() => {
            metadata.push((file.to_owned(), document));
        }
        None => {
            return Err(PreviewError::Input(format!(
                "{}: a document that is neither a Kubernetes object nor a metadata document",
                file.display()
            )))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::create_dir_all(dir.join(name).parent().unwrap()).unwrap();
        std::fs::write(dir.join(name), text).unwrap();
    }

    #[test]
    fn reads_resources_from_a_tree_and_skips_other_kinds() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "b/tables.yaml",
            "apiVersion: basalt.dev/v1alpha1\nkind: TrackedTable\nmetadata: {name: author}\nspec: {}\n---\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: basalt.dev/v1alpha1\n  kind: Permission\n  metadata: {name: p, namespace: shop}\n  spec: {}\n",
        );
        write(
            dir.path(),
            "a/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n",
        );
        write(dir.path(), "README.md", "not read");
        let Input::Resources { resources, skipped } = read(dir.path(), "team").unwrap() else {
            panic!("resources expected")
        };
        assert_eq!(skipped, 1);
        let labels: Vec<String> = resources.iter().map(ResourceDoc::label).collect();
        assert_eq!(labels, ["TrackedTable team/author", "Permission shop/p"]);
    }

    #[test]
    fn reads_one_metadata_document_and_refuses_mixtures() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "metadata.json",
            r#"{"version": 2, "tables": []}"#,
        );
        assert!(matches!(
            read(&dir.path().join("metadata.json"), "default").unwrap(),
            Input::Metadata { .. }
        ));
        write(
            dir.path(),
            "t.yaml",
            "apiVersion: basalt.dev/v1alpha1\nkind: TrackedTable\nmetadata: {name: a}\n",
        );
        let err = read(dir.path(), "default").unwrap_err().to_string();
        assert!(err.contains("not both"), "{err}");
        write(dir.path(), "odd.json", r#"{"hello": 1}"#);
        let err = read(&dir.path().join("odd.json"), "default")
            .unwrap_err()
            .to_string();
        assert!(err.contains("neither"), "{err}");
        let err = read(&dir.path().join("missing"), "default")
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing"), "{err}");
    }
}
