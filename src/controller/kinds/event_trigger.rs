//! EventTrigger: row changes of a table delivered to a webhook.

use super::common::*;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use super::{ExportedSpec, Kind};
use crate::metadata::objects::Object;
use crate::metadata::types::{Columns, EventTriggerEntry, Metadata, OperationSpec, QualifiedTable, RetryConf};
use crate::metadata::{Code, MetadataError};
use crate::ops::events::EventTriggerOp;
use serde_json::{json, Map, Value};

/// An event trigger: row changes of a table delivered to a webhook.
#[derive(CustomResource, KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "basalt.dev",
    version = "v1alpha1",
    kind = "EventTrigger",
    namespaced,
    status = "ResourceStatus",
    shortname = "btrigger",
    category = "basalt",
    cel,
    printcolumn = r#"{"name":"Trigger","type":"string","jsonPath":".spec.name"}"#,
    printcolumn = r#"{"name":"Table","type":"string","jsonPath":".spec.table.name"}"#,
    printcolumn = r#"{"name":"Webhook","type":"string","jsonPath":".spec.webhook","priority":1}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","priority":1}"#,
    printcolumn = r#"{"name":"Drifted","type":"string","jsonPath":".status.conditions[?(@.type==\"Drifted\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("has(self.webhook) != has(self.webhookFromEnv)").message("exactly one of webhook and webhookFromEnv"),
    validation = Rule::new("has(self.insert) || has(self.update) || has(self.delete) || (has(self.enableManual) && self.enableManual)").message("at least one of insert, update, delete and enableManual")
)]
pub struct EventTriggerSpec {
    /// Trigger name, unique across tables (immutable).
    #[x_kube(validation = Rule::new("self == oldSelf").message("name is immutable"))]
    pub name: String,
    /// The table whose rows it watches (immutable).
    #[x_kube(validation = Rule::new("self == oldSelf").message("table is immutable"))]
    pub table: QualifiedName,
    /// Webhook URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
    /// Environment variable holding the webhook URL (set in the engine and the controller).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_from_env: Option<String>,
    /// Inserts that fire it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insert: Option<TriggerOperationSpec>,
    /// Updates that fire it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<TriggerOperationSpec>,
    /// Deletes that fire it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete: Option<TriggerOperationSpec>,
    /// Headers sent with each delivery.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<HeaderSpec>,
    /// Delivery retry policy (the metadata API's defaults where absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_conf: Option<RetryConfSpec>,
    /// Whether `invoke_event_trigger` may fire it.
    #[serde(default)]
    pub enable_manual: bool,
}

/// The columns one operation listens to and sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TriggerOperationSpec {
    /// `"*"` or a list of columns whose change fires the trigger.
    #[schemars(schema_with = "preserved_any")]
    pub columns: Value,
    /// `"*"` or a list of columns sent in the payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserved_any")]
    pub payload: Option<Value>,
}


/// Delivery retry policy of an event trigger.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetryConfSpec {
    /// Retries after the first failed attempt (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 4294967295_i64))]
    pub num_retries: Option<i64>,
    /// Seconds between attempts (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 4294967295_i64))]
    pub interval_sec: Option<i64>,
    /// HTTP timeout of one attempt in seconds (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 4294967295_i64))]
    pub timeout_sec: Option<i64>,
}

fn trigger_operation_json(spec: &TriggerOperationSpec) -> Value {
    let mut m = Map::new();
    m.insert("columns".into(), spec.columns.clone());
    put(&mut m, "payload", &spec.payload);
    Value::Object(m)
}

impl EventTriggerSpec {
    /// The `create_event_trigger` arguments an EventTrigger stands for (without `replace`, which
    /// is the controller's, not the resource's).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), json!(self.name));
        m.insert("table".into(), table_name(&self.table));
        put(&mut m, "webhook", &self.webhook);
        put(&mut m, "webhook_from_env", &self.webhook_from_env);
        for (key, operation) in [
            ("insert", &self.insert),
            ("update", &self.update),
            ("delete", &self.delete),
        ] {
            if let Some(operation) = operation {
                m.insert(key.into(), trigger_operation_json(operation));
            }
        }
        m.insert("enable_manual".into(), json!(self.enable_manual));
        if let Some(retry) = &self.retry_conf {
            let mut r = Map::new();
            put(&mut r, "num_retries", &retry.num_retries);
            put(&mut r, "interval_sec", &retry.interval_sec);
            put(&mut r, "timeout_sec", &retry.timeout_sec);
            m.insert("retry_conf".into(), Value::Object(r));
        }
        if !self.headers.is_empty() {
            m.insert("headers".into(), headers_json(&self.headers));
        }
        Value::Object(m)
    }

    /// An EventTrigger as (table, trigger entry), parsed and shape-checked by the metadata API's
    /// own `create_event_trigger` parser. Whether its columns exist and its environment variables
    /// are set is the operation's check against the database and the process, when it is applied.
    pub fn entry(&self) -> Result<(QualifiedTable, EventTriggerEntry), MetadataError> {
        let path = spec_path();
        match EventTriggerOp::parse("create_event_trigger", &self.to_json(), &path)? {
            Some(EventTriggerOp::Create { table, trigger, .. }) => Ok((table, *trigger)),
            // The parser answers `create_event_trigger` with `Create`; anything else is a bug.
            _ => Err(MetadataError::new(
                Code::Unexpected,
                path,
                "create_event_trigger did not parse as a trigger creation",
            )),
        }
    }

    /// The catalog object an EventTrigger declares.
    pub fn objects(&self) -> Result<Vec<Object>, MetadataError> {
        let (table, entry) = self.entry()?;
        Ok(vec![Object::EventTrigger(table, entry)])
    }
}

fn columns_spec(columns: &Columns) -> Value {
    match columns {
        Columns::All => json!("*"),
        Columns::List(list) => json!(list),
    }
}

fn operation_spec(spec: &OperationSpec) -> Value {
    let mut m = Map::new();
    m.insert("columns".into(), columns_spec(&spec.columns));
    put_value(&mut m, "payload", spec.payload.as_ref().map(columns_spec));
    Value::Object(m)
}

/// An event trigger, metadata field → CRD field. Header secrets stay environment variable
/// names (`valueFromEnv`): the catalog never holds their values.
fn spec_of(table: &QualifiedTable, e: &EventTriggerEntry) -> Value {
    let mut spec = Map::new();
    spec.insert("name".into(), json!(e.name.0));
    spec.insert("table".into(), qualified(table));
    put_value(&mut spec, "webhook", text(&e.webhook));
    put_value(&mut spec, "webhookFromEnv", text(&e.webhook_from_env));
    let d = &e.definition;
    put_value(
        &mut spec,
        "insert",
        d.insert.as_ref().map(operation_spec),
    );
    put_value(
        &mut spec,
        "update",
        d.update.as_ref().map(operation_spec),
    );
    put_value(
        &mut spec,
        "delete",
        d.delete.as_ref().map(operation_spec),
    );
    put_value(&mut spec, "headers", headers_spec(&e.headers));
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

impl Kind for EventTrigger {
    fn declared(&self) -> Result<Vec<Object>, MetadataError> {
        self.spec.objects()
    }

    fn export(metadata: &Metadata) -> Vec<ExportedSpec> {
        let mut out = Vec::new();
        for e in &metadata.tables {
            for trigger in &e.event_triggers {
                let spec = spec_of(&e.table, trigger);
                out.push(ExportedSpec::new(vec![trigger.name.0.clone()], spec));
            }
        }
        out
    }
}
