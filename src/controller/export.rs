//! `basalt export --format crds`: an existing catalog (built through `/v1/query`) as custom
//! resources that, applied, adopt and reproduce it — the one step that moves imperative
//! metadata into Git. The inverse of [`super::mapping`], written field by field; every
//! resource is parsed back into its typed spec before it is emitted, so what is written is
//! what the CRDs accept.

use super::crd::*;
use super::reconcile::{ADOPT, API_VERSION};
use crate::metadata::ids::PermissionKind;
use crate::metadata::types::*;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

/// Why a catalog cannot be exported.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// A generated resource does not deserialize into its kind's spec: a bug in the export,
    /// since the CRDs would refuse it.
    #[error("{kind} {name} does not fit its CRD: {reason}")]
    DoesNotFitCrd {
        /// The kind.
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
    /// The kind.
    pub kind: &'static str,
    /// `metadata.name`.
    pub name: String,
    /// The full manifest.
    pub manifest: Value,
}

/// The export of one catalog.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Export {
    /// Resources, dependencies first: tables, then per table its computed fields,
    /// permissions and event triggers, then custom types, collections, the allow-list, remote
    /// schemas and actions (each with its permissions).
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

fn qualified(t: &QualifiedTable) -> Value {
    json!({"schema": t.schema, "name": t.name})
}

fn put(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value.filter(|v| !v.is_null()) {
        map.insert(key.to_owned(), v);
    }
}

fn text(s: &Option<String>) -> Option<Value> {
    s.as_ref().map(|s| json!(s))
}

fn root_fields(r: &CustomRootFields) -> Map<String, Value> {
    let mut m = Map::new();
    let name = |n: &Option<GraphQLName>| n.as_ref().map(|n| json!(n.0));
    put(&mut m, "select", name(&r.select));
    put(&mut m, "selectByPk", name(&r.select_by_pk));
    put(&mut m, "selectAggregate", name(&r.select_aggregate));
    put(&mut m, "insert", name(&r.insert));
    put(&mut m, "insertOne", name(&r.insert_one));
    put(&mut m, "update", name(&r.update));
    put(&mut m, "updateByPk", name(&r.update_by_pk));
    put(&mut m, "delete", name(&r.delete));
    put(&mut m, "deleteByPk", name(&r.delete_by_pk));
    m
}

fn manual(m: &ManualConfiguration) -> Value {
    json!({"manualConfiguration": {"remoteTable": qualified(&m.remote_table), "columnMapping": m.column_mapping}})
}

fn relationship(name: &GraphQLName, using: Value, comment: &Option<String>) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(name.0));
    m.insert("using".into(), using);
    put(&mut m, "comment", text(comment));
    Value::Object(m)
}

fn tracked_table(e: &TableEntry) -> Value {
    let mut spec = Map::new();
    spec.insert("table".into(), qualified(&e.table));
    if e.is_enum {
        spec.insert("isEnum".into(), json!(true));
    }
    let mut configuration = Map::new();
    let roots = root_fields(&e.configuration.custom_root_fields);
    if !roots.is_empty() {
        configuration.insert("customRootFields".into(), Value::Object(roots));
    }
    if !e.configuration.custom_column_names.is_empty() {
        configuration.insert(
            "customColumnNames".into(),
            json!(e.configuration.custom_column_names),
        );
    }
    if !configuration.is_empty() {
        spec.insert("configuration".into(), Value::Object(configuration));
    }
    let objects: Vec<Value> = e
        .object_relationships
        .iter()
        .map(|r| {
            let using = match &r.using {
                ObjRelUsing::ForeignKey(column) => json!({"foreignKeyConstraintOn": column}),
                ObjRelUsing::Manual(m) => manual(m),
            };
            relationship(&r.name, using, &r.comment)
        })
        .collect();
    let arrays: Vec<Value> = e
        .array_relationships
        .iter()
        .map(|r| {
            let using = match &r.using {
                ArrRelUsing::ForeignKey(fk) => json!({"foreignKeyConstraintOn":
                    {"table": qualified(&fk.table), "column": fk.column}}),
                ArrRelUsing::Manual(m) => manual(m),
            };
            relationship(&r.name, using, &r.comment)
        })
        .collect();
    if !objects.is_empty() {
        spec.insert("objectRelationships".into(), Value::Array(objects));
    }
    if !arrays.is_empty() {
        spec.insert("arrayRelationships".into(), Value::Array(arrays));
    }
    Value::Object(spec)
}

/// The rules of a permission, metadata field → CRD field (user data copied verbatim).
fn permission_rules(rules: &Value) -> Value {
    let mut out = Map::new();
    if let Value::Object(map) = rules {
        for (key, value) in map {
            let field = match key.as_str() {
                "backend_only" => "backendOnly",
                "computed_fields" => "computedFields",
                "allow_aggregations" => "allowAggregations",
                "check" => "check",
                "set" => "set",
                "columns" => "columns",
                "filter" => "filter",
                "limit" => "limit",
                _ => continue,
            };
            put(&mut out, field, Some(value.clone()));
        }
    }
    Value::Object(out)
}

fn permission<P: serde::Serialize>(
    table: &QualifiedTable,
    kind: PermissionKind,
    p: &PermissionEntry<P>,
) -> Value {
    let rules = serde_json::to_value(&p.permission).unwrap_or(Value::Null);
    let mut spec = Map::new();
    spec.insert("table".into(), qualified(table));
    spec.insert("role".into(), json!(p.role.0));
    spec.insert("operation".into(), json!(kind.as_str()));
    spec.insert("permission".into(), permission_rules(&rules));
    put(&mut spec, "comment", text(&p.comment));
    Value::Object(spec)
}

fn computed_field(table: &QualifiedTable, c: &ComputedFieldEntry) -> Value {
    let mut definition = Map::new();
    definition.insert(
        "function".into(),
        json!({"schema": c.definition.function.schema, "name": c.definition.function.name}),
    );
    put(
        &mut definition,
        "tableArgument",
        text(&c.definition.table_argument),
    );
    put(
        &mut definition,
        "sessionArgument",
        text(&c.definition.session_argument),
    );
    let mut spec = Map::new();
    spec.insert("table".into(), qualified(table));
    spec.insert("name".into(), json!(c.name.0));
    spec.insert("definition".into(), Value::Object(definition));
    put(&mut spec, "comment", text(&c.comment));
    Value::Object(spec)
}

fn columns(columns: &Columns) -> Value {
    match columns {
        Columns::All => json!("*"),
        Columns::List(list) => json!(list),
    }
}

fn trigger_operation(spec: &OperationSpec) -> Value {
    let mut m = Map::new();
    m.insert("columns".into(), columns(&spec.columns));
    put(&mut m, "payload", spec.payload.as_ref().map(columns));
    Value::Object(m)
}

/// Headers, metadata field → CRD field (`None` when there are none). Values read from the
/// environment stay the variable's name: the catalog never holds them.
fn headers(headers: &[Header]) -> Option<Value> {
    if headers.is_empty() {
        return None;
    }
    let list = headers
        .iter()
        .map(|h| match h {
            Header::Value { name, value } => json!({"name": name, "value": value}),
            Header::FromEnv {
                name,
                value_from_env,
            } => json!({"name": name, "valueFromEnv": value_from_env}),
        })
        .collect();
    Some(Value::Array(list))
}

/// An event trigger, metadata field → CRD field. Header secrets stay environment variable
/// names (`valueFromEnv`): the catalog never holds their values.
fn event_trigger(table: &QualifiedTable, e: &EventTriggerEntry) -> Value {
    let mut spec = Map::new();
    spec.insert("name".into(), json!(e.name.0));
    spec.insert("table".into(), qualified(table));
    put(&mut spec, "webhook", text(&e.webhook));
    put(&mut spec, "webhookFromEnv", text(&e.webhook_from_env));
    let d = &e.definition;
    put(
        &mut spec,
        "insert",
        d.insert.as_ref().map(trigger_operation),
    );
    put(
        &mut spec,
        "update",
        d.update.as_ref().map(trigger_operation),
    );
    put(
        &mut spec,
        "delete",
        d.delete.as_ref().map(trigger_operation),
    );
    put(&mut spec, "headers", headers(&e.headers));
    let r = &e.retry_conf;
    if *r != RetryConf::default() {
        spec.insert(
            "retryConf".into(),
            json!({"numRetries": r.num_retries, "intervalSec": r.interval_sec, "timeoutSec": r.timeout_sec}),
        );
    }
    if d.enable_manual {
        spec.insert("enableManual".into(), json!(true));
    }
    Value::Object(spec)
}

/// A remote schema, metadata field → CRD field. A URL or header value read from the
/// environment stays the variable's name (`urlFromEnv`, `valueFromEnv`).
fn remote_schema(r: &RemoteSchemaEntry) -> Value {
    let d = &r.definition;
    let mut definition = Map::new();
    put(&mut definition, "url", text(&d.url));
    put(&mut definition, "urlFromEnv", text(&d.url_from_env));
    put(&mut definition, "headers", headers(&d.headers));
    if d.forward_client_headers {
        definition.insert("forwardClientHeaders".into(), json!(true));
    }
    put(
        &mut definition,
        "timeoutSeconds",
        d.timeout_seconds.map(|t| json!(t)),
    );
    let mut spec = Map::new();
    spec.insert("name".into(), json!(r.name.0));
    spec.insert("definition".into(), Value::Object(definition));
    put(&mut spec, "comment", text(&r.comment));
    Value::Object(spec)
}

/// An action with its permissions, metadata field → CRD field. Header values read from the
/// environment stay the variable's name; `{{VARIABLE}}` templates in the handler stay as
/// written.
fn action(a: &ActionEntry) -> Value {
    let d = &a.definition;
    let mut definition = Map::new();
    definition.insert("type".into(), json!(d.action_type));
    put(&mut definition, "kind", d.kind.map(|k| json!(k)));
    if !d.arguments.is_empty() {
        let arguments: Vec<Value> = d
            .arguments
            .iter()
            .map(|arg| {
                let mut m = Map::new();
                m.insert("name".into(), json!(arg.name.0));
                m.insert("type".into(), json!(arg.arg_type));
                put(&mut m, "description", text(&arg.description));
                Value::Object(m)
            })
            .collect();
        definition.insert("arguments".into(), Value::Array(arguments));
    }
    definition.insert("outputType".into(), json!(d.output_type));
    definition.insert("handler".into(), json!(d.handler));
    put(&mut definition, "headers", headers(&d.headers));
    if d.forward_client_headers {
        definition.insert("forwardClientHeaders".into(), json!(true));
    }
    put(&mut definition, "timeout", d.timeout.map(|t| json!(t)));
    let mut spec = Map::new();
    spec.insert("name".into(), json!(a.name.0));
    spec.insert("definition".into(), Value::Object(definition));
    put(&mut spec, "comment", text(&a.comment));
    if !a.permissions.is_empty() {
        let permissions: Vec<Value> = a
            .permissions
            .iter()
            .map(|p| {
                let mut m = Map::new();
                m.insert("role".into(), json!(p.role.0));
                put(&mut m, "comment", text(&p.comment));
                Value::Object(m)
            })
            .collect();
        spec.insert("permissions".into(), Value::Array(permissions));
    }
    Value::Object(spec)
}

fn fields(fields: &[TypeField]) -> Value {
    Value::Array(
        fields
            .iter()
            .map(|f| {
                let mut m = Map::new();
                m.insert("name".into(), json!(f.name.0));
                put(&mut m, "description", text(&f.description));
                m.insert("type".into(), json!(f.field_type));
                Value::Object(m)
            })
            .collect(),
    )
}

fn named(name: &GraphQLName, description: &Option<String>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("name".into(), json!(name.0));
    put(&mut m, "description", text(description));
    m
}

fn custom_types(t: &CustomTypes) -> Value {
    let inputs: Vec<Value> = t
        .input_objects
        .iter()
        .map(|o| {
            let mut m = named(&o.name, &o.description);
            m.insert("fields".into(), fields(&o.fields));
            Value::Object(m)
        })
        .collect();
    let objects: Vec<Value> = t
        .objects
        .iter()
        .map(|o| {
            let mut m = named(&o.name, &o.description);
            m.insert("fields".into(), fields(&o.fields));
            if !o.relationships.is_empty() {
                let rels: Vec<Value> = o
                    .relationships
                    .iter()
                    .map(|r| {
                        json!({"name": r.name.0, "type": r.rel_type,
                            "remoteTable": qualified(&r.remote_table), "fieldMapping": r.field_mapping})
                    })
                    .collect();
                m.insert("relationships".into(), Value::Array(rels));
            }
            Value::Object(m)
        })
        .collect();
    let scalars: Vec<Value> = t
        .scalars
        .iter()
        .map(|s| Value::Object(named(&s.name, &s.description)))
        .collect();
    let enums: Vec<Value> = t
        .enums
        .iter()
        .map(|e| {
            let mut m = named(&e.name, &e.description);
            let values: Vec<Value> = e
                .values
                .iter()
                .map(|v| {
                    let mut vm = Map::new();
                    vm.insert("value".into(), json!(v.value.0));
                    put(&mut vm, "description", text(&v.description));
                    put(&mut vm, "isDeprecated", v.is_deprecated.map(|d| json!(d)));
                    Value::Object(vm)
                })
                .collect();
            m.insert("values".into(), Value::Array(values));
            Value::Object(m)
        })
        .collect();
    let mut spec = Map::new();
    for (key, list) in [
        ("inputObjects", inputs),
        ("objects", objects),
        ("scalars", scalars),
        ("enums", enums),
    ] {
        if !list.is_empty() {
            spec.insert(key.into(), Value::Array(list));
        }
    }
    Value::Object(spec)
}

fn collection(c: &CollectionEntry) -> Value {
    let queries: Vec<Value> = c
        .definition
        .queries
        .iter()
        .map(|q| json!({"name": q.name.0, "query": q.query}))
        .collect();
    let mut spec = Map::new();
    spec.insert("name".into(), json!(c.name.0));
    spec.insert("definition".into(), json!({"queries": queries}));
    put(&mut spec, "comment", text(&c.comment));
    Value::Object(spec)
}

/// Collects resources, keeping names unique per kind.
struct Builder {
    namespace: String,
    taken: BTreeSet<(&'static str, String)>,
    export: Export,
}

impl Builder {
    fn push<K: serde::de::DeserializeOwned>(
        &mut self,
        kind: &'static str,
        parts: &[&str],
        spec: Value,
    ) -> Result<(), ExportError> {
        let base = k8s_name(parts);
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
        if let Err(reason) = serde_json::from_value::<K>(manifest.clone()) {
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
    let table_parts = |t: &QualifiedTable| -> Vec<String> {
        if t.schema == "public" {
            vec![t.name.clone()]
        } else {
            vec![t.schema.clone(), t.name.clone()]
        }
    };
    for e in &metadata.tables {
        let parts = table_parts(&e.table);
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        b.push::<TrackedTable>("TrackedTable", &parts, tracked_table(e))?;
    }
    for e in &metadata.tables {
        let t = &e.table;
        let base = table_parts(t);
        let with = |extra: &[&str]| -> Vec<String> {
            base.iter()
                .cloned()
                .chain(extra.iter().map(|s| s.to_string()))
                .collect()
        };
        for c in &e.computed_fields {
            let parts = with(&[&c.name.0]);
            let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
            b.push::<ComputedField>("ComputedField", &parts, computed_field(t, c))?;
        }
        macro_rules! perms {
            ($list:expr, $kind:expr) => {
                for p in $list {
                    let parts = with(&[&p.role.0, $kind.as_str()]);
                    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
                    b.push::<Permission>("Permission", &parts, permission(t, $kind, p))?;
                }
            };
        }
        perms!(&e.insert_permissions, PermissionKind::Insert);
        perms!(&e.select_permissions, PermissionKind::Select);
        perms!(&e.update_permissions, PermissionKind::Update);
        perms!(&e.delete_permissions, PermissionKind::Delete);
        for trigger in &e.event_triggers {
            b.push::<EventTrigger>(
                "EventTrigger",
                &[&trigger.name.0],
                event_trigger(t, trigger),
            )?;
        }
    }
    if !metadata.custom_types.is_empty() {
        b.push::<CustomTypeSet>(
            "CustomTypeSet",
            &["custom-types"],
            custom_types(&metadata.custom_types),
        )?;
    }
    for c in &metadata.query_collections {
        b.push::<QueryCollection>("QueryCollection", &[&c.name.0], collection(c))?;
    }
    for a in &metadata.allowlist {
        b.push::<AllowListEntry>(
            "AllowListEntry",
            &[&a.collection.0],
            json!({"collection": a.collection.0}),
        )?;
    }
    for r in &metadata.remote_schemas {
        b.push::<RemoteSchema>("RemoteSchema", &[&r.name.0], remote_schema(r))?;
    }
    for a in &metadata.actions {
        b.push::<Action>("Action", &[&a.name.0], action(a))?;
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
            let resource: RemoteSchema = serde_json::from_value(r.manifest.clone()).unwrap();
            resource.validate_cel().expect("the CRD's rules accept it");
            assert_eq!(
                &super::super::mapping::remote_schema(&resource.spec).unwrap(),
                entry
            );
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
            let resource: Action = serde_json::from_value(r.manifest.clone()).unwrap();
            resource.validate_cel().expect("the CRD's rules accept it");
            declared.extend(super::super::mapping::action_objects(&resource.spec).unwrap());
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
