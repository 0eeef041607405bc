//! CronTrigger: a webhook called on a schedule (`docs/scheduled-triggers.md`, "Kubernetes").
//! One-off scheduled events have no kind: they are work, not desired state.

use super::common::*;
use super::{ExportedSpec, Kind};
use crate::metadata::objects::Object;
use crate::metadata::types::{CronTriggerEntry, Metadata};
use crate::metadata::{Code, MetadataError};
use crate::ops::scheduled::CronTriggerOp;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// A cron trigger: `webhook` called at each instant of `schedule` (five cron fields, UTC).
#[derive(CustomResource, KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "basalt.dev",
    version = "v1alpha1",
    kind = "CronTrigger",
    plural = "crontriggers",
    namespaced,
    status = "ResourceStatus",
    shortname = "bcron",
    category = "basalt",
    cel,
    printcolumn = r#"{"name":"Trigger","type":"string","jsonPath":".spec.name"}"#,
    printcolumn = r#"{"name":"Schedule","type":"string","jsonPath":".spec.schedule"}"#,
    printcolumn = r#"{"name":"Webhook","type":"string","jsonPath":".spec.webhook","priority":1}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","priority":1}"#,
    printcolumn = r#"{"name":"Drifted","type":"string","jsonPath":".status.conditions[?(@.type==\"Drifted\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct CronTriggerSpec {
    /// Trigger name (immutable).
    #[x_kube(validation = Rule::new("self == oldSelf").message("name is immutable"))]
    pub name: String,
    /// Webhook URL; credentials only through `{{VARIABLE}}` templates, read from the
    /// environment of the engine and the controller.
    pub webhook: String,
    /// Five cron fields (minute hour day-of-month month day-of-week), evaluated in UTC.
    #[x_kube(validation = Rule::new("self.matches('^ *[0-9*,/-]+( +[0-9*,/-]+){4} *$')").message("schedule must be five cron fields (minute hour day-of-month month day-of-week), evaluated in UTC"))]
    pub schedule: String,
    /// Sent as `payload` with every call, verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserved_any")]
    pub payload: Option<Value>,
    /// Headers sent with every call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<HeaderSpec>,
    /// Retries, timeout and tolerance (the metadata API's defaults where absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_conf: Option<ScheduledRetrySpec>,
    /// Whether `export_metadata` carries it.
    #[serde(default = "yes")]
    pub include_in_metadata: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

fn yes() -> bool {
    true
}

/// Retries, timeout and tolerance of a cron trigger's calls, in seconds (fractions allowed).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduledRetrySpec {
    /// Retries after the first failed attempt (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 4294967295_i64))]
    pub num_retries: Option<i64>,
    /// Wait after a failed attempt (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub retry_interval_seconds: Option<f64>,
    /// HTTP timeout of one attempt (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub timeout_seconds: Option<f64>,
    /// An event picked up later than this after its time is not sent (default 21600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub tolerance_seconds: Option<f64>,
}

impl CronTriggerSpec {
    /// The `create_cron_trigger` arguments the resource stands for (without `replace`, which
    /// is the controller's).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), json!(self.name));
        m.insert("webhook".into(), json!(self.webhook));
        m.insert("schedule".into(), json!(self.schedule));
        put(&mut m, "payload", &self.payload);
        if !self.headers.is_empty() {
            m.insert("headers".into(), headers_json(&self.headers));
        }
        if let Some(retry) = &self.retry_conf {
            let mut r = Map::new();
            put(&mut r, "num_retries", &retry.num_retries);
            put(&mut r, "retry_interval_seconds", &retry.retry_interval_seconds);
            put(&mut r, "timeout_seconds", &retry.timeout_seconds);
            put(&mut r, "tolerance_seconds", &retry.tolerance_seconds);
            m.insert("retry_conf".into(), Value::Object(r));
        }
        m.insert("include_in_metadata".into(), json!(self.include_in_metadata));
        put(&mut m, "comment", &self.comment);
        Value::Object(m)
    }

    /// The trigger, parsed and checked (schedule included) by the metadata API's own parser.
    /// Whether its environment variables are set is the operation's check, when applied.
    pub fn entry(&self) -> Result<CronTriggerEntry, MetadataError> {
        let path = spec_path();
        match CronTriggerOp::parse("create_cron_trigger", &self.to_json(), &path)? {
            Some(CronTriggerOp::Create { entry, .. }) => Ok(*entry),
            // The parser answers `create_cron_trigger` with `Create`; anything else is a bug.
            _ => Err(MetadataError::new(
                Code::Unexpected,
                path,
                "create_cron_trigger did not parse as a trigger creation",
            )),
        }
    }
}

/// A cron trigger, metadata field → CRD field. Header secrets stay variable names.
fn spec_of(t: &CronTriggerEntry) -> Value {
    let mut spec = Map::new();
    spec.insert("name".into(), json!(t.name));
    spec.insert("webhook".into(), json!(t.webhook));
    spec.insert("schedule".into(), json!(t.schedule));
    put(&mut spec, "payload", &t.payload);
    put_value(&mut spec, "headers", headers_spec(&t.headers));
    if !t.retry_conf.is_default() {
        // As the metadata writes the numbers (whole seconds as integers).
        let r = json!(t.retry_conf);
        spec.insert(
            "retryConf".into(),
            json!({"numRetries": r["num_retries"], "retryIntervalSeconds": r["retry_interval_seconds"],
                "timeoutSeconds": r["timeout_seconds"], "toleranceSeconds": r["tolerance_seconds"]}),
        );
    }
    spec.insert("includeInMetadata".into(), json!(t.include_in_metadata));
    put_value(&mut spec, "comment", text(&t.comment));
    Value::Object(spec)
}

impl Kind for CronTrigger {
    fn declared(&self) -> Result<Vec<Object>, MetadataError> {
        Ok(vec![Object::CronTrigger(Box::new(self.spec.entry()?))])
    }

    fn export(metadata: &Metadata) -> Vec<ExportedSpec> {
        metadata
            .cron_triggers
            .iter()
            .map(|t| ExportedSpec::new(vec![t.name.clone()], spec_of(t)))
            .collect()
    }
}
