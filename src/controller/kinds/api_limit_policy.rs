//! ApiLimitPolicy: the API limits of `/v1/graphql` (`set_api_limits`, `remove_api_limits`).
//! The catalog holds one such object, so the kind is a singleton: at most one resource owns
//! `api_limits` and the others wait in `Conflict` (the controller's `singleton` module). Role
//! names (`perRole` keys) pass verbatim; `uniqueParams` is `"IP"` or a list of session
//! variables, kept untyped in the schema and parsed here as the metadata API parses it.

use super::common::*;
use super::{ExportedSpec, Kind};
use crate::metadata::objects::Object;
use crate::metadata::parse::parse;
use crate::metadata::types::{
    ApiLimits, Count, Limit, Metadata, Name, RateLimit, Seconds, UniqueParams,
};
use crate::metadata::MetadataError;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// The limits of `/v1/graphql` per role (admin is never limited). Only one ApiLimitPolicy
/// applies: the one owning the limits, else the oldest; the others report `Conflict`.
#[derive(CustomResource, KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "basalt.dev",
    version = "v1alpha1",
    kind = "ApiLimitPolicy",
    plural = "apilimitpolicies",
    namespaced,
    status = "ResourceStatus",
    shortname = "blimits",
    category = "basalt",
    cel,
    printcolumn = r#"{"name":"Disabled","type":"boolean","jsonPath":".spec.disabled"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","priority":1}"#,
    printcolumn = r#"{"name":"Drifted","type":"string","jsonPath":".status.conditions[?(@.type==\"Drifted\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ApiLimitPolicySpec {
    /// Keep the limits but enforce none of them.
    #[serde(default)]
    pub disabled: bool,
    /// Longest path of fields with a selection set, per operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth_limit: Option<CountLimitSpec>,
    /// Fields with a selection set, per operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_limit: Option<CountLimitSpec>,
    /// Seconds an operation may run (fractions allowed, to the millisecond).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<TimeLimitSpec>,
    /// Operations in one batched request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_limit: Option<CountLimitSpec>,
    /// Operations per sliding minute, per engine process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimitSpec>,
}

/// A count limit (depth, nodes, batch size): a global value, overridden per role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CountLimitSpec {
    /// For every role without its own entry.
    #[schemars(range(min = 1, max = 4294967295_i64))]
    pub global: i64,
    /// Role name (verbatim) → its own value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "per_role_counts")]
    pub per_role: BTreeMap<String, i64>,
}

/// A time limit in seconds: a global value, overridden per role.
#[derive(KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimeLimitSpec {
    /// For every role without its own entry.
    #[x_kube(validation = Rule::new("self > 0.0").message("timeLimit.global must be greater than 0"))]
    pub global: f64,
    /// Role name (verbatim) → its own value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "per_role_seconds")]
    pub per_role: BTreeMap<String, f64>,
}

/// A rate limit: a global budget, overridden per role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitSpec {
    /// For every role without its own entry.
    pub global: RateLimitConfigSpec,
    /// Role name (verbatim) → its own budget.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub per_role: BTreeMap<String, RateLimitConfigSpec>,
}

/// One rate budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitConfigSpec {
    /// Operations admitted per sliding minute and key.
    #[schemars(range(min = 1, max = 4294967295_i64))]
    pub max_reqs_per_min: i64,
    /// What splits the budget into keys besides the role: `"IP"` (the client's address) or a
    /// list of session variables (`x-svc-*`, not `x-svc-role`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserved_any")]
    pub unique_params: Option<Value>,
}

/// Schema of a `perRole` map of counts: role names are user data, values integers ≥ 1.
fn per_role_counts(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "additionalProperties": {"type": "integer", "format": "int64", "minimum": 1, "maximum": 4294967295_i64}
    })
}

/// Schema of a `perRole` map of seconds, each value checked on its own (a rule over the whole
/// map would cost the API server's estimate as many steps as a request can hold entries).
fn per_role_seconds(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "additionalProperties": {
            "type": "number",
            "format": "double",
            "x-kubernetes-validations": [
                {"rule": "self > 0.0", "message": "every timeLimit.perRole value must be greater than 0"}
            ]
        }
    })
}

/// One limit, its values parsed by `value` as the metadata API parses them, at their CRD
/// paths; role names become names as given.
fn limit<S, T>(
    global: &S,
    per_role: &BTreeMap<String, S>,
    path: &JsonPath,
    value: impl Fn(&S, &JsonPath) -> Result<T, MetadataError>,
) -> Result<Limit<T>, MetadataError> {
    let global = value(global, &path.key("global"))?;
    let mut roles = BTreeMap::new();
    for (role, v) in per_role {
        let at = path.key("perRole").key(role);
        let name: Name = parse(&json!(role), &at)?;
        roles.insert(name, value(v, &at)?);
    }
    Ok(Limit {
        global,
        per_role: roles,
    })
}

fn count(n: &i64, path: &JsonPath) -> Result<Count, MetadataError> {
    parse(&json!(n), path)
}

fn seconds(s: &f64, path: &JsonPath) -> Result<Seconds, MetadataError> {
    parse(&json!(s), path)
}

fn rate(config: &RateLimitConfigSpec, path: &JsonPath) -> Result<RateLimit, MetadataError> {
    let unique_params: Option<UniqueParams> = match &config.unique_params {
        None | Some(Value::Null) => None,
        Some(v) => Some(parse(v, &path.key("uniqueParams"))?),
    };
    Ok(RateLimit {
        max_reqs_per_min: count(&config.max_reqs_per_min, &path.key("maxReqsPerMin"))?,
        unique_params,
    })
}

impl ApiLimitPolicySpec {
    /// An ApiLimitPolicy as the catalog's API limits, each value checked as `set_api_limits`
    /// checks it; errors point at the CRD field.
    pub fn limits(&self) -> Result<ApiLimits, MetadataError> {
        let path = spec_path();
        let counts = |l: &Option<CountLimitSpec>, key: &str| {
            l.as_ref()
                .map(|l| limit(&l.global, &l.per_role, &path.key(key), count))
                .transpose()
        };
        Ok(ApiLimits {
            disabled: self.disabled,
            depth_limit: counts(&self.depth_limit, "depthLimit")?,
            node_limit: counts(&self.node_limit, "nodeLimit")?,
            time_limit: self
                .time_limit
                .as_ref()
                .map(|l| limit(&l.global, &l.per_role, &path.key("timeLimit"), seconds))
                .transpose()?,
            batch_limit: counts(&self.batch_limit, "batchLimit")?,
            rate_limit: self
                .rate_limit
                .as_ref()
                .map(|l| limit(&l.global, &l.per_role, &path.key("rateLimit"), rate))
                .transpose()?,
        })
    }

    /// The catalog object an ApiLimitPolicy declares: the one `api_limits` (an empty policy
    /// declares "no limits", which the catalog stores as nothing).
    pub fn objects(&self) -> Result<Vec<Object>, MetadataError> {
        Ok(vec![Object::ApiLimits(Box::new(self.limits()?))])
    }
}

/// A limit, metadata field → CRD field: `global`, and `perRole` when it has entries.
fn limit_spec<T>(l: &Limit<T>, value: impl Fn(&T) -> Value) -> Value {
    let mut m = Map::new();
    m.insert("global".into(), value(&l.global));
    if !l.per_role.is_empty() {
        let roles: Map<String, Value> = l
            .per_role
            .iter()
            .map(|(role, v)| (role.0.clone(), value(v)))
            .collect();
        m.insert("perRole".into(), Value::Object(roles));
    }
    Value::Object(m)
}

fn rate_spec(r: &RateLimit) -> Value {
    let mut m = Map::new();
    m.insert("maxReqsPerMin".into(), json!(r.max_reqs_per_min.0));
    if let Some(u) = &r.unique_params {
        put_value(&mut m, "uniqueParams", serde_json::to_value(u).ok());
    }
    Value::Object(m)
}

/// The API limits, metadata field → CRD field.
fn spec_of(l: &ApiLimits) -> Value {
    let counted = |c: &Count| json!(c.0);
    let mut spec = Map::new();
    if l.disabled {
        spec.insert("disabled".into(), json!(true));
    }
    if let Some(d) = &l.depth_limit {
        spec.insert("depthLimit".into(), limit_spec(d, counted));
    }
    if let Some(n) = &l.node_limit {
        spec.insert("nodeLimit".into(), limit_spec(n, counted));
    }
    if let Some(t) = &l.time_limit {
        // Whole seconds as integers, fractions as decimals, as the metadata API exports them.
        let seconds = |s: &Seconds| serde_json::to_value(s).unwrap_or(Value::Null);
        spec.insert("timeLimit".into(), limit_spec(t, seconds));
    }
    if let Some(b) = &l.batch_limit {
        spec.insert("batchLimit".into(), limit_spec(b, counted));
    }
    if let Some(r) = &l.rate_limit {
        spec.insert("rateLimit".into(), limit_spec(r, rate_spec));
    }
    Value::Object(spec)
}

impl Kind for ApiLimitPolicy {
    const SINGLETON: bool = true;

    fn declared(&self) -> Result<Vec<Object>, MetadataError> {
        self.spec.objects()
    }

    fn export(metadata: &Metadata) -> Vec<ExportedSpec> {
        if metadata.api_limits.is_empty() {
            return Vec::new();
        }
        vec![ExportedSpec::new(
            vec!["api-limits".to_owned()],
            spec_of(&metadata.api_limits),
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(value: Value) -> ApiLimitPolicySpec {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn spec_maps_to_the_limits_and_back() {
        let s = spec(json!({
            "disabled": true,
            "depthLimit": {"global": 5, "perRole": {"Editor_Role": 8}},
            "nodeLimit": {"global": 30},
            "timeLimit": {"global": 2, "perRole": {"reporting": 0.25}},
            "batchLimit": {"global": 4},
            "rateLimit": {"global": {"maxReqsPerMin": 60, "uniqueParams": "ip"},
                "perRole": {"user": {"maxReqsPerMin": 10, "uniqueParams": ["X-Svc-User-Id"]},
                            "bot": {"maxReqsPerMin": 1000}}}
        }));
        let limits = s.limits().unwrap();
        assert_eq!(
            serde_json::to_value(&limits).unwrap(),
            json!({
                "disabled": true,
                "depth_limit": {"global": 5, "per_role": {"Editor_Role": 8}},
                "node_limit": {"global": 30, "per_role": {}},
                "time_limit": {"global": 2, "per_role": {"reporting": 0.25}},
                "batch_limit": {"global": 4, "per_role": {}},
                "rate_limit": {"global": {"max_reqs_per_min": 60, "unique_params": "IP"},
                    "per_role": {"bot": {"max_reqs_per_min": 1000},
                                 "user": {"max_reqs_per_min": 10, "unique_params": ["x-svc-user-id"]}}}
            }),
            "camelCase to snake_case; role names verbatim; values as the metadata API keeps them"
        );
        let metadata = Metadata {
            api_limits: limits.clone(),
            ..Metadata::default()
        };
        let exported = ApiLimitPolicy::export(&metadata);
        assert_eq!(exported.len(), 1);
        assert_eq!(exported[0].name, vec!["api-limits".to_owned()]);
        assert_eq!(
            exported[0].spec,
            json!({
                "disabled": true,
                "depthLimit": {"global": 5, "perRole": {"Editor_Role": 8}},
                "nodeLimit": {"global": 30},
                "timeLimit": {"global": 2, "perRole": {"reporting": 0.25}},
                "batchLimit": {"global": 4},
                "rateLimit": {"global": {"maxReqsPerMin": 60, "uniqueParams": "IP"},
                    "perRole": {"bot": {"maxReqsPerMin": 1000},
                                "user": {"maxReqsPerMin": 10, "uniqueParams": ["x-svc-user-id"]}}}
            })
        );
        assert_eq!(spec(exported[0].spec.clone()).limits().unwrap(), limits);
    }

    #[test]
    fn no_limits_export_nothing_and_map_to_the_empty_object() {
        assert!(ApiLimitPolicy::export(&Metadata::default()).is_empty());
        let empty = spec(json!({})).limits().unwrap();
        assert!(empty.is_empty());
        let objects = spec(json!({})).objects().unwrap();
        assert_eq!(objects.len(), 1);
        assert_eq!(objects[0].key(), "api_limits");
    }

    #[test]
    fn bad_values_are_refused_at_their_crd_path() {
        let cases = [
            (
                json!({"rateLimit": {"global": {"maxReqsPerMin": 5, "uniqueParams": ["x-svc-role"]}}}),
                "$.spec.rateLimit.global.uniqueParams",
                "Not a valid value. Should be either: 'IP' or a list of session variables",
            ),
            (
                json!({"rateLimit": {"global": {"maxReqsPerMin": 5},
                    "perRole": {"user": {"maxReqsPerMin": 5, "uniqueParams": "cookie"}}}}),
                "$.spec.rateLimit.perRole.user.uniqueParams",
                "Not a valid value. Should be either: 'IP' or a list of session variables",
            ),
            (
                json!({"rateLimit": {"global": {"maxReqsPerMin": 5, "uniqueParams": {"ip": true}}}}),
                "$.spec.rateLimit.global.uniqueParams",
                "Not a valid value. Should be either: 'IP' or a list of session variables",
            ),
            (
                json!({"depthLimit": {"global": 0}}),
                "$.spec.depthLimit.global",
                "expected an integer of at least 1, encountered 0",
            ),
            (
                json!({"batchLimit": {"global": 2, "perRole": {"my-role": 0}}}),
                "$.spec.batchLimit.perRole.my-role",
                "expected an integer of at least 1, encountered 0",
            ),
            (
                json!({"timeLimit": {"global": 0}}),
                "$.spec.timeLimit.global",
                "greater than 0",
            ),
            (
                json!({"nodeLimit": {"global": 3, "perRole": {"": 1}}}),
                "$.spec.nodeLimit.perRole['']",
                "empty string not allowed",
            ),
        ];
        for (value, path, message) in cases {
            let err = spec(value.clone()).limits().unwrap_err();
            assert_eq!(err.path.as_str(), path, "{value}: {err:?}");
            assert!(err.message.contains(message), "{value}: {err:?}");
            assert_eq!(err.code.as_str(), "parse-failed");
        }
        // An empty list is accepted and kept (it splits nothing).
        let kept = spec(json!({"rateLimit": {"global": {"maxReqsPerMin": 5, "uniqueParams": []}}}))
            .limits()
            .unwrap();
        assert_eq!(
            kept.rate_limit.unwrap().global.unique_params,
            Some(UniqueParams::SessionVariables(Vec::new()))
        );
    }
}
