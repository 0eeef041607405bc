//! Status conditions and the classification of failures (`docs/kubernetes.md`, "Status,
//! conditions and Events"). Pure: the reconcile computes the outcome, these functions turn it
//! into conditions, a requeue delay and whether an Event is due. Errors are classified by
//! their code and [`Missing`], never by their message text.

use crate::metadata::types::QualifiedTable;
use crate::metadata::{Code, MetadataError, Missing, ObjectId};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use std::time::Duration;

/// Why a resource is (not) ready: the `reason` of its `Ready` condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// In the catalog, consistent, not drifted.
    Applied,
    /// Another metadata object it needs is missing.
    DependencyNotReady,
    /// A table, column or function it needs does not exist in Postgres.
    DatabaseObjectMissing,
    /// Rejected by validation; waits for a spec change.
    InvalidSpec,
    /// The object exists and belongs to someone else.
    Conflict,
    /// Any other operation failure.
    ApplyFailed,
    /// The catalog differs from the spec and self-heal is off.
    Drifted,
    /// Applied but inconsistent with the database.
    Inconsistent,
    /// Cleanup refused because other objects depend on it.
    DeletionBlocked,
    /// `basalt.dev/reconcile: disabled`.
    Suspended,
}

impl Reason {
    /// The reason string.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Applied => "Applied",
            Reason::DependencyNotReady => "DependencyNotReady",
            Reason::DatabaseObjectMissing => "DatabaseObjectMissing",
            Reason::InvalidSpec => "InvalidSpec",
            Reason::Conflict => "Conflict",
            Reason::ApplyFailed => "ApplyFailed",
            Reason::Drifted => "Drifted",
            Reason::Inconsistent => "Inconsistent",
            Reason::DeletionBlocked => "DeletionBlocked",
            Reason::Suspended => "Suspended",
        }
    }

    /// The Event published when a resource enters this state (`None`: no Event).
    pub fn event(self) -> Option<(&'static str, bool)> {
        // (reason, warning)
        match self {
            Reason::Applied => Some(("Applied", false)),
            Reason::InvalidSpec => Some(("InvalidSpec", true)),
            Reason::Conflict => Some(("Conflict", true)),
            Reason::Inconsistent => Some(("Inconsistent", true)),
            Reason::DeletionBlocked => Some(("DeletionBlocked", true)),
            Reason::ApplyFailed | Reason::DatabaseObjectMissing | Reason::DependencyNotReady => {
                Some(("ApplyFailed", true))
            }
            Reason::Drifted => Some(("DriftDetected", true)),
            Reason::Suspended => None,
        }
    }

    /// First retry delay; doubled per consecutive failure up to [`Reason::max_delay`].
    /// `None`: wait for a change of the resource.
    pub fn base_delay(self) -> Option<Duration> {
        match self {
            Reason::DependencyNotReady => Some(Duration::from_secs(5)),
            Reason::InvalidSpec | Reason::Suspended => None,
            Reason::Conflict => Some(Duration::from_secs(300)),
            _ => Some(Duration::from_secs(10)),
        }
    }

    /// Longest retry delay of the class.
    pub fn max_delay(self) -> Duration {
        match self {
            Reason::DependencyNotReady => Duration::from_secs(120),
            _ => Duration::from_secs(300),
        }
    }
}

/// Classifies an operation error. `cleanup` marks errors of a deletion. What is missing
/// decides between waiting for the database (a migration) and for another resource.
pub fn classify(err: &MetadataError, cleanup: bool) -> Reason {
    let waiting = |missing| match missing {
        Some(Missing::DatabaseObject) => Reason::DatabaseObjectMissing,
        Some(Missing::Environment) => Reason::ApplyFailed,
        Some(Missing::Metadata) | None => Reason::DependencyNotReady,
    };
    match err.code {
        // An unset environment variable (`invalid-params` for remote schemas, as the metadata
        // API answers it): retried until the Deployment's environment has it.
        _ if err.missing == Some(Missing::Environment) => Reason::ApplyFailed,
        Code::DependencyError if cleanup => Reason::DeletionBlocked,
        // A drop that would leave inherited roles without a parent (the last permission of a
        // parent role, say): they must go or change first.
        Code::Unexpected if cleanup && stranded_roles(err).is_some() => Reason::DeletionBlocked,
        // A drop of a query (a collection) that REST endpoints serve: they must go first.
        Code::Unexpected if cleanup && stranded(err, "rest_endpoint", "name").is_some() => {
            Reason::DeletionBlocked
        }
        // A native query Postgres refuses because something its SQL reads is missing: a
        // migration brings it.
        Code::ValidationFailed if missing_in_database(err) => Reason::DatabaseObjectMissing,
        // Any other refusal of a native query's code is the spec's to fix.
        Code::ValidationFailed if native_code(err) => Reason::InvalidSpec,
        // A REST endpoint's document does not fit the schema yet: the tables (or actions,
        // remote schemas) it reads may still be on their way.
        Code::ValidationFailed => Reason::DependencyNotReady,
        Code::BadRequest if !cleanup => Reason::InvalidSpec,
        // A `not-found` that names no missing object is about the process, not the catalog
        // or the database: an environment variable an event trigger or remote schema reads
        // (webhook or remote URL, header value) is unset where the operation ran. No resource
        // or migration brings it; the Deployment's environment does, so it is an apply
        // failure, retried. So is a remote server that does not answer its introspection.
        Code::NotFound if err.missing.is_none() => Reason::ApplyFailed,
        Code::NotExists | Code::NotFound => waiting(err.missing),
        // The wire code of some missing references (a computed field named by a select
        // permission, a custom type an action's argument names): still something another
        // resource or a migration brings.
        // So are a tracked function's returned table and the select permission a function
        // permission needs (`not-supported` on the wire).
        Code::ConstraintViolation | Code::InvalidParams | Code::NotSupported
            if err.missing.is_some() =>
        {
            waiting(err.missing)
        }
        Code::ParseFailed
        | Code::CyclicDependency
        | Code::InvalidCustomTypes
        | Code::InvalidParams
        | Code::ConstraintViolation
        | Code::NotSupported => Reason::InvalidSpec,
        Code::AlreadyExists | Code::AlreadyTracked => Reason::Conflict,
        _ => Reason::ApplyFailed,
    }
}

/// Whether Postgres refused a native query for a relation, column, function, type or schema
/// it does not have (`internal.error.status_code`).
fn missing_in_database(err: &MetadataError) -> bool {
    let code = err
        .internal
        .as_ref()
        .and_then(|i| i["error"]["status_code"].as_str());
    matches!(code, Some("42P01" | "42703" | "42883" | "42704" | "3F000"))
}

/// Whether a `validation-failed` is about a native query's code (its text, its arguments,
/// or Postgres's refusal), not a document that does not fit the schema yet.
fn native_code(err: &MetadataError) -> bool {
    const NATIVE: [&str; 6] = [
        "Failed to validate query",
        "argument placeholder ",
        "The following columns are ",
        "positional parameters are not allowed",
        "native query code ",
        "Found '{{' without",
    ];
    NATIVE.iter().any(|m| err.message.starts_with(m))
}

/// What a part of a resource that may wait for another resource (or a migration) waits for,
/// once its operation (`request`) failed with `err`; `None` for the parts that may not wait,
/// whose failure is the resource's. A waiting part never holds up its parent or the other
/// parts.
pub fn waits(key: &str, request: &serde_json::Value, err: &MetadataError) -> Option<String> {
    let args = &request["args"];
    match key.parse().ok()? {
        ObjectId::Relationship(..) => Some(format!("{key} waits: {}", err.message)),
        // A missing remote schema is waited for; a missing column is a migration's.
        ObjectId::RemoteRelationship(_, name) if err.missing == Some(Missing::Metadata) => {
            let remote = args["definition"]["to_remote_schema"]["remote_schema"]
                .as_str()
                .or(args["remote_schema"].as_str())?;
            Some(format!(
                "remote relationship {name} waits for remote schema {remote}"
            ))
        }
        // A grant waits for the select permission of its role on the returned table.
        ObjectId::FunctionPermission(function, role) if err.missing.is_some() => Some(format!(
            "function permission {function}.{role} waits: {}",
            err.message
        )),
        ObjectId::RemoteSchemaRelationship(_, type_name, name) if err.missing.is_some() => {
            let table: QualifiedTable =
                serde_json::from_value(args["definition"]["to_source"]["table"].clone()).ok()?;
            let table = format!("{}.{}", table.schema, table.name);
            Some(match err.missing {
                Some(Missing::DatabaseObject) => format!(
                    "remote schema relationship {type_name}.{name} waits for a column of table {table}: {}",
                    err.message
                ),
                _ => format!(
                    "remote schema relationship {type_name}.{name} waits for table {table}"
                ),
            })
        }
        _ => None,
    }
}

/// The reason of a resource whose parts wait for `reasons`: a migration when that is all they
/// wait for, otherwise another resource.
pub fn awaited(mut reasons: impl Iterator<Item = Reason>) -> Reason {
    match reasons.all(|r| r == Reason::DatabaseObjectMissing) {
        true => Reason::DatabaseObjectMissing,
        false => Reason::DependencyNotReady,
    }
}

/// The inherited roles a refused change would leave inconsistent, when they are all it would:
/// an `unexpected` error ("cannot continue due to new inconsistent metadata") whose `internal`
/// lists only `inherited_role` items. In byte order, each once.
pub fn stranded_roles(err: &MetadataError) -> Option<Vec<String>> {
    stranded(err, "inherited_role", "role_name")
}

/// The objects of type `kind` a refused change would leave inconsistent, when they are all it
/// would: an `unexpected` error whose `internal` lists only such items, each named by its
/// definition's `name_key`. In byte order, each once.
fn stranded(err: &MetadataError, kind: &str, name_key: &str) -> Option<Vec<String>> {
    if err.code != Code::Unexpected {
        return None;
    }
    let items = err.internal.as_deref()?.as_array()?;
    let mut names = Vec::with_capacity(items.len());
    for item in items {
        if item["type"] != kind {
            return None;
        }
        names.push(item["definition"][name_key].as_str()?.to_owned());
    }
    names.sort();
    names.dedup();
    (!names.is_empty()).then_some(names)
}

/// The message of a refused cleanup: which inherited roles block it, or the error as it came.
pub fn blocked_message(err: &MetadataError) -> String {
    if let Some(roles) = stranded_roles(err) {
        return format!(
            "the inherited role(s) {} would lose a parent role: delete or change them first ({}: {})",
            roles.join(", "),
            err.code.as_str(),
            err.message
        );
    }
    match stranded(err, "rest_endpoint", "name") {
        Some(endpoints) => format!(
            "the REST endpoint(s) {} serve its queries: delete them first ({}: {})",
            endpoints.join(", "),
            err.code.as_str(),
            err.message
        ),
        None => format!("{} ({}): {}", err.code.as_str(), err.path, err.message),
    }
}

/// Retry delay after `failures` consecutive failures of class `reason` (1 = first), with a
/// deterministic ±10 % spread derived from `seed` so replicas do not retry in lockstep.
pub fn backoff(reason: Reason, failures: u32, seed: u64) -> Option<Duration> {
    let base = reason.base_delay()?;
    let doubled = base.saturating_mul(1u32 << failures.saturating_sub(1).min(16));
    let capped = doubled.min(reason.max_delay());
    let spread = (seed % 21) as i64 - 10; // -10 ..= 10 percent
    let millis = capped.as_millis() as i64;
    Some(Duration::from_millis(
        (millis + millis * spread / 100).max(0) as u64,
    ))
}

/// One desired condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    /// `Ready`, `Consistent` or `Drifted`.
    pub type_: &'static str,
    /// `True`, `False` or `Unknown`.
    pub status: &'static str,
    /// CamelCase reason.
    pub reason: &'static str,
    /// Human-readable detail.
    pub message: String,
}

/// Merges wanted conditions into the current ones: `lastTransitionTime` moves only when the
/// status changes, so a reconcile that changes nothing produces an identical status.
pub fn merge(
    current: &[Condition],
    wanted: &[Wanted],
    generation: i64,
    now: &Time,
) -> Vec<Condition> {
    wanted
        .iter()
        .map(|w| {
            let previous = current.iter().find(|c| c.type_ == w.type_);
            let since = match previous {
                Some(p) if p.status == w.status => p.last_transition_time.clone(),
                _ => now.clone(),
            };
            Condition {
                type_: w.type_.to_owned(),
                status: w.status.to_owned(),
                reason: w.reason.to_owned(),
                message: w.message.clone(),
                observed_generation: Some(generation),
                last_transition_time: since,
            }
        })
        .collect()
}

/// The condition of `type_`, if present.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::JsonPath;

    fn err(code: Code, message: &str) -> MetadataError {
        MetadataError::new(code, JsonPath::args(), message)
    }

    fn in_database(message: &str) -> MetadataError {
        crate::metadata::error::not_exists_in_database(JsonPath::args(), message)
    }

    fn in_metadata(message: &str) -> MetadataError {
        crate::metadata::error::not_exists_in_metadata(JsonPath::args(), message)
    }

    /// The error of a drop that would leave `roles` without a parent.
    fn stranded(roles: &[&str]) -> MetadataError {
        let items: Vec<serde_json::Value> = roles
            .iter()
            .map(|r| {
                serde_json::json!({"type": "inherited_role",
                "definition": {"role_name": r, "role_set": ["user"]}, "reason": "…"})
            })
            .collect();
        err(
            Code::Unexpected,
            "cannot continue due to new inconsistent metadata",
        )
        .with_internal(serde_json::Value::Array(items))
    }

    #[test]
    fn a_cleanup_blocked_by_inherited_roles_names_them() {
        let e = stranded(&["reader", "member", "reader"]);
        assert_eq!(
            stranded_roles(&e),
            Some(vec!["member".into(), "reader".into()])
        );
        assert!(
            blocked_message(&e).starts_with(
                "the inherited role(s) member, reader would lose a parent role: delete or change them first"
            ),
            "{}",
            blocked_message(&e)
        );
        // Any other new inconsistency is not theirs to name.
        let mixed = err(
            Code::Unexpected,
            "cannot continue due to new inconsistent metadata",
        )
        .with_internal(serde_json::json!([
            {"type": "inherited_role", "definition": {"role_name": "member"}},
            {"type": "select_permission", "definition": {}}
        ]));
        assert_eq!(stranded_roles(&mixed), None);
        assert_eq!(classify(&mixed, true), Reason::ApplyFailed);
        assert_eq!(
            blocked_message(&mixed),
            "unexpected ($.args): cannot continue due to new inconsistent metadata"
        );
        assert_eq!(stranded_roles(&err(Code::Unexpected, "x")), None);
    }

    #[test]
    fn errors_are_classified_as_the_design_table_says() {
        let cases = [
            (
                in_metadata("table \"author\" does not exist"),
                false,
                Reason::DependencyNotReady,
            ),
            (
                in_database("no such table/view exists in postgres: \"x\""),
                false,
                Reason::DatabaseObjectMissing,
            ),
            (
                in_database("column \"x\" does not exist"),
                false,
                Reason::DatabaseObjectMissing,
            ),
            (
                err(
                    Code::NotFound,
                    "query with name \"q\" not found in collection \"c\"",
                )
                .with_missing(Missing::Metadata),
                false,
                Reason::DependencyNotReady,
            ),
            (
                err(Code::NotFound, "environment variable 'HOOK_URL' not set"),
                false,
                Reason::ApplyFailed,
            ),
            (
                err(
                    Code::NotFound,
                    "environment variable 'NEWSLETTER_GRAPHQL_URL' not set",
                ),
                false,
                Reason::ApplyFailed,
            ),
            (err(Code::ParseFailed, "x"), false, Reason::InvalidSpec),
            (
                err(Code::InvalidCustomTypes, "x"),
                false,
                Reason::InvalidSpec,
            ),
            (
                err(Code::ConstraintViolation, "x"),
                false,
                Reason::InvalidSpec,
            ),
            // An action's output or argument type that no custom type defines yet: another
            // resource (a CustomTypeSet) brings it. One of the wrong kind is the spec's fault.
            (
                in_metadata("the type: \"ArchiveResult\" is not an object type defined in custom types"),
                false,
                Reason::DependencyNotReady,
            ),
            (
                err(Code::InvalidParams, "the type: \"ArchiveInput\" is not defined in custom types or it is not a scalar/enum/input_object")
                    .with_missing(Missing::Metadata),
                false,
                Reason::DependencyNotReady,
            ),
            (err(Code::InvalidParams, "x"), false, Reason::InvalidSpec),
            // An action's handler template or header variable unset in the controller.
            (
                err(Code::NotFound, "cannot find environment variable BLOG_ACTIONS_URL for the action handler")
                    .with_missing(Missing::Environment),
                false,
                Reason::ApplyFailed,
            ),
            (err(Code::AlreadyExists, "x"), false, Reason::Conflict),
            (err(Code::AlreadyTracked, "x"), false, Reason::Conflict),
            (
                err(Code::DependencyError, "x"),
                true,
                Reason::DeletionBlocked,
            ),
            (err(Code::DependencyError, "x"), false, Reason::ApplyFailed),
            (err(Code::Unexpected, "x"), false, Reason::ApplyFailed),
            // Inherited roles: parents not known yet wait for the resources that make them
            // known; a cycle is the spec's fault.
            (
                in_metadata("the following parent role(s) are not found: ghost which are required to construct the inherited role: \"x\""),
                false,
                Reason::DependencyNotReady,
            ),
            (
                err(Code::CyclicDependency, "found cycle(s) in roles: [\"a\",\"b\",\"a\"]"),
                false,
                Reason::InvalidSpec,
            ),
            (stranded(&["member"]), true, Reason::DeletionBlocked),
            (stranded(&["member"]), false, Reason::ApplyFailed),
        ];
        for (e, cleanup, want) in cases {
            assert_eq!(classify(&e, cleanup), want, "{e:?}");
        }
    }

    #[test]
    fn what_is_missing_decides_not_the_message() {
        // A message's words never steer the classification: its code and what is missing do.
        let cases = [
            (
                in_metadata("column \"x\" does not exist"),
                Reason::DependencyNotReady,
            ),
            (
                in_metadata("no such function exists in postgres"),
                Reason::DependencyNotReady,
            ),
            (
                in_database("table \"author\" does not exist"),
                Reason::DatabaseObjectMissing,
            ),
            (in_database(""), Reason::DatabaseObjectMissing),
            (
                err(Code::NotExists, "column \"x\" does not exist"),
                Reason::DependencyNotReady,
            ),
            (
                err(Code::NotFound, "function \"f\" in postgres")
                    .with_missing(Missing::DatabaseObject),
                Reason::DatabaseObjectMissing,
            ),
            (
                err(
                    Code::ConstraintViolation,
                    "computed field \"f\" does not exist",
                )
                .with_missing(Missing::Metadata),
                Reason::DependencyNotReady,
            ),
            (
                err(
                    Code::ConstraintViolation,
                    "computed field \"f\" is not scalar",
                ),
                Reason::InvalidSpec,
            ),
        ];
        for (e, want) in cases {
            assert_eq!(classify(&e, false), want, "{e:?}");
        }
        // The missing kind never outranks a deletion's dependency error or the code's class.
        let blocked = err(Code::DependencyError, "x").with_missing(Missing::DatabaseObject);
        assert_eq!(classify(&blocked, true), Reason::DeletionBlocked);
    }

    #[test]
    fn backoff_doubles_caps_and_jitters_within_ten_percent() {
        let at = |n, seed| {
            backoff(Reason::DependencyNotReady, n, seed)
                .unwrap()
                .as_secs_f64()
        };
        assert_eq!(at(1, 10), 5.0);
        assert_eq!(at(2, 10), 10.0);
        assert_eq!(at(3, 10), 20.0);
        assert_eq!(at(10, 10), 120.0);
        for seed in 0..50 {
            let d = at(2, seed);
            assert!((9.0..=11.0).contains(&d), "{d}");
        }
        assert_eq!(backoff(Reason::InvalidSpec, 3, 0), None);
        assert_eq!(backoff(Reason::ApplyFailed, 30, 10).unwrap().as_secs(), 300);
    }

    #[test]
    fn transition_time_moves_only_when_the_status_changes() {
        let t0 = Time(k8s_openapi::jiff::Timestamp::from_second(1_000).unwrap());
        let t1 = Time(k8s_openapi::jiff::Timestamp::from_second(2_000).unwrap());
        let wanted = |status, reason: &'static str| Wanted {
            type_: "Ready",
            status,
            reason,
            message: String::new(),
        };
        let first = merge(&[], &[wanted("True", "Applied")], 1, &t0);
        let again = merge(&first, &[wanted("True", "Applied")], 2, &t1);
        assert_eq!(again[0].last_transition_time, t0);
        assert_eq!(again[0].observed_generation, Some(2));
        let changed = merge(&again, &[wanted("False", "Drifted")], 2, &t1);
        assert_eq!(changed[0].last_transition_time, t1);
        assert_eq!(changed[0].reason, "Drifted");
    }
}
