//! Remote schemas resolved (`docs/remote-schemas.md`): each definition's URL worked out, paired
//! with the introspection result the catalog stored for exactly that definition, and checked
//! for clashes with the rest of the GraphQL schema. The introspection itself (HTTP) happens in
//! `crate::remote`; the clash rule belongs to the GraphQL layer, which hands it down as a
//! [`MergeCheck`] because this layer sits below it. Pure, except for reading the environment
//! (`url_from_env`, `{{VAR}}` templates), as event-trigger webhooks do.

use super::{Inconsistency, Resolution, Resolved};
use crate::metadata::error::Code;
use crate::metadata::ids::ObjectId;
use crate::metadata::types::{Header, RemoteSchemaDefinition, RemoteSchemaEntry};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Seconds a remote call may take when the definition does not say.
pub const DEFAULT_TIMEOUT_SECONDS: u32 = 60;

/// What the catalog stored about one remote schema name.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRemote {
    /// [`definition_hash`] of the definition the results below belong to.
    pub hash: String,
    /// The `__schema` object of the last successful introspection of that definition.
    pub introspection: Option<Arc<Value>>,
    /// Why the last introspection of that definition failed, if it did.
    pub error: Option<String>,
}

/// Checks remote schemas (in metadata order) against the schema the rest of the metadata
/// generates and against each other; answers, per remote, why it cannot be merged (`None`:
/// merged).
pub type MergeCheck = fn(&Resolved, &[ResolvedRemote]) -> Vec<Option<String>>;

/// Checks the custom types each action reaches against the type names the tables generate;
/// answers, per action, why it cannot be served (`None`: it can).
pub type ActionTypeCheck = fn(&Resolved, &[super::actions::ResolvedAction]) -> Vec<Option<String>>;

/// Validates GraphQL documents against the admin schema (tables, actions and remote schemas
/// as resolved); answers, per document, why it does not validate (`None`: it does).
pub type DocumentCheck = fn(&Resolved, &[&str]) -> Vec<Option<String>>;

/// Why introspecting a definition failed, as a request that needed it fails.
#[derive(Debug, Clone, PartialEq)]
pub struct FetchFailure {
    /// Wire code (`remote-schema-error`, or `invalid-params` for the URL or headers).
    pub code: Code,
    /// An environment variable it needs is unset.
    pub environment: bool,
    /// The message, as `docs/remote-schemas.md`, "Adding one", words it.
    pub message: String,
    /// Detail for the admin (`{"type": "http_exception", "message": …}`).
    pub internal: Option<Value>,
}

/// The outcome of introspecting one definition during the current request.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched {
    pub name: String,
    /// [`definition_hash`] of the definition introspected.
    pub hash: String,
    /// The `__schema` object, or why there is none.
    pub outcome: Result<Arc<Value>, FetchFailure>,
}

/// Everything outside the document and the database that remote schemas resolve against.
#[derive(Debug, Clone, Default)]
pub struct Remotes {
    /// Stored introspection state by remote schema name (with this request's results laid
    /// over it).
    pub stored: BTreeMap<String, StoredRemote>,
    /// The GraphQL layer's clash rule; without it every remote with a stored schema merges.
    pub check: Option<MergeCheck>,
    /// The GraphQL layer's rule for actions' custom type names (they must not be names the
    /// tables' types already use); without it every action's types are taken as they are.
    pub action_types: Option<ActionTypeCheck>,
    /// The GraphQL layer's validation of REST endpoints' documents; without it every
    /// document that parses is taken as it is.
    pub documents: Option<DocumentCheck>,
    /// What this request introspected, by (name, definition hash).
    pub fetched: BTreeMap<(String, String), Result<(), FetchFailure>>,
}

impl Remotes {
    /// Lays this request's introspection results over the stored state: a success replaces
    /// the stored schema and clears the error; a failure records the error and keeps the
    /// stored schema only if it belongs to the same definition.
    pub fn record(&mut self, fetched: &[Fetched]) {
        for f in fetched {
            self.fetched.insert(
                (f.name.clone(), f.hash.clone()),
                f.outcome.as_ref().map(|_| ()).map_err(Clone::clone),
            );
            let kept = self
                .stored
                .get(&f.name)
                .filter(|s| s.hash == f.hash)
                .and_then(|s| s.introspection.clone());
            let state = match &f.outcome {
                Ok(schema) => StoredRemote {
                    hash: f.hash.clone(),
                    introspection: Some(schema.clone()),
                    error: None,
                },
                Err(failure) => StoredRemote {
                    hash: f.hash.clone(),
                    introspection: kept,
                    error: Some(failure.message.clone()),
                },
            };
            self.stored.insert(f.name.clone(), state);
        }
    }
}

/// A remote schema that is served: its definition, URL and stored introspection result.
#[derive(Debug, Clone)]
pub struct ResolvedRemote {
    pub entry: RemoteSchemaEntry,
    /// The URL, environment variables expanded.
    pub url: String,
    /// Bound on each HTTP exchange with it.
    pub timeout: Duration,
    /// Configured headers, environment values read (sent before anything else).
    pub headers: Vec<(String, String)>,
    /// Its `__schema` introspection object.
    pub introspection: Arc<Value>,
}

impl ResolvedRemote {
    pub fn name(&self) -> &str {
        &self.entry.name.0
    }
}

/// Why a remote schema's URL cannot be worked out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct UrlError {
    /// Wire code (`invalid-params`).
    pub code: Code,
    /// An environment variable is unset (rather than the URL invalid).
    pub environment: bool,
    /// Message naming the variable or the unexpanded URL.
    pub message: String,
}

/// A stable hash of a definition: stored introspection results belong to one definition.
pub fn definition_hash(definition: &RemoteSchemaDefinition) -> String {
    let canonical = serde_json::to_vec(definition).unwrap_or_default();
    crate::metadata::digest::sha256_hex(&canonical)
}

/// The bound on each HTTP exchange with a remote.
pub fn timeout(definition: &RemoteSchemaDefinition) -> Duration {
    Duration::from_secs(u64::from(
        definition
            .timeout_seconds
            .unwrap_or(DEFAULT_TIMEOUT_SECONDS),
    ))
}

/// The remote's URL: `url` with `{{VAR}}` templates expanded, or the value of
/// `url_from_env`; an absolute `http(s)` URL. Messages name the unexpanded form, never the
/// expanded one (it may carry credentials).
pub fn resolve_url(definition: &RemoteSchemaDefinition) -> Result<String, UrlError> {
    let invalid = |message: String| UrlError {
        code: Code::InvalidParams,
        environment: false,
        message,
    };
    let missing = |var: &str| UrlError {
        environment: true,
        ..invalid(format!(
            "cannot find environment variable {var} for custom resolver"
        ))
    };
    let (shown, url) = match (&definition.url, &definition.url_from_env) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "both `url` and `url_from_env` can't be present".to_owned(),
            ))
        }
        (None, None) => {
            return Err(invalid(
                "both `url` and `url_from_env` can't be empty".to_owned(),
            ))
        }
        (None, Some(var)) => (var.clone(), std::env::var(var).map_err(|_| missing(var))?),
        (Some(template), None) => (template.clone(), expand(template).map_err(|v| missing(&v))?),
    };
    let valid = url
        .parse::<http::Uri>()
        .ok()
        .is_some_and(|u| matches!(u.scheme_str(), Some("http" | "https")) && u.host().is_some());
    if !valid {
        return Err(invalid(format!("not a valid URI: {shown}")));
    }
    Ok(url)
}

/// The configured headers with `value_from_env` read from the environment.
pub fn resolve_headers(
    definition: &RemoteSchemaDefinition,
) -> Result<Vec<(String, String)>, UrlError> {
    definition
        .headers
        .iter()
        .map(|h| match h {
            Header::Value { name, value } => Ok((name.clone(), value.clone())),
            Header::FromEnv {
                name,
                value_from_env,
            } => std::env::var(value_from_env)
                .map(|v| (name.clone(), v))
                .map_err(|_| UrlError {
                    code: Code::InvalidParams,
                    environment: true,
                    message: format!(
                        "cannot find environment variable {value_from_env} for header {name}"
                    ),
                }),
        })
        .collect()
}

/// How a URL appears in messages: the template or the variable's name, never its value.
pub fn shown_url(definition: &RemoteSchemaDefinition) -> String {
    match (&definition.url, &definition.url_from_env) {
        (Some(url), _) => url.clone(),
        (None, Some(var)) => format!("{{{{{var}}}}}"),
        (None, None) => String::new(),
    }
}

/// `{{VAR}}` templates replaced by environment values; the first missing variable otherwise.
pub(crate) fn expand(template: &str) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let var = after[..end].trim();
        out.push_str(&std::env::var(var).map_err(|_| var.to_owned())?);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

fn inconsistency(entry: &RemoteSchemaEntry, reason: String, conflict: bool) -> Inconsistency {
    Inconsistency {
        object: ObjectId::RemoteSchema(entry.name.0.clone()),
        kind: "remote_schema",
        definition: json!(entry),
        reason,
        conflict,
    }
}

/// Pairs each remote schema with its stored introspection and merges what fits. A remote
/// whose last introspection failed but which has a stored schema for its definition is
/// served from it and still reported inconsistent (`docs/remote-schemas.md`, "When Basalt
/// introspects").
pub(super) fn resolve_remotes(
    entries: &[RemoteSchemaEntry],
    remotes: &Remotes,
    cache: &mut Resolution,
) {
    let mut candidates = Vec::new();
    for entry in entries {
        let endpoint = resolve_url(&entry.definition)
            .and_then(|url| Ok((url, resolve_headers(&entry.definition)?)));
        let (url, headers) = match endpoint {
            Ok(endpoint) => endpoint,
            Err(err) => {
                cache
                    .inconsistencies
                    .push(inconsistency(entry, err.message, false));
                continue;
            }
        };
        let hash = definition_hash(&entry.definition);
        let stored = remotes.stored.get(&entry.name.0).filter(|s| s.hash == hash);
        if let Some(error) = stored.and_then(|s| s.error.clone()) {
            cache
                .inconsistencies
                .push(inconsistency(entry, error, false));
        }
        match stored.and_then(|s| s.introspection.clone()) {
            Some(introspection) => candidates.push(ResolvedRemote {
                entry: entry.clone(),
                url,
                timeout: timeout(&entry.definition),
                headers,
                introspection,
            }),
            None if stored.is_some_and(|s| s.error.is_some()) => {}
            None => cache.inconsistencies.push(inconsistency(
                entry,
                "the remote schema has not been introspected yet".to_owned(),
                false,
            )),
        }
    }
    let verdicts = match remotes.check {
        Some(check) if !candidates.is_empty() => check(&cache.resolved, &candidates),
        _ => Vec::new(),
    };
    for (i, remote) in candidates.into_iter().enumerate() {
        match verdicts.get(i).cloned().flatten() {
            Some(reason) => cache
                .inconsistencies
                .push(inconsistency(&remote.entry, reason, true)),
            None => cache.resolved.remote_schemas.push(remote),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(url: Option<&str>, env: Option<&str>) -> RemoteSchemaDefinition {
        RemoteSchemaDefinition {
            url: url.map(str::to_owned),
            url_from_env: env.map(str::to_owned),
            timeout_seconds: None,
            headers: Vec::new(),
            forward_client_headers: false,
        }
    }

    #[test]
    fn urls_are_expanded_and_checked_without_showing_secrets() {
        std::env::set_var("BASALT_TEST_REMOTE_HOST", "geo.internal:4000");
        assert_eq!(
            resolve_url(&def(
                Some("http://{{BASALT_TEST_REMOTE_HOST}}/graphql"),
                None
            )),
            Ok("http://geo.internal:4000/graphql".to_owned())
        );
        let missing = resolve_url(&def(Some("http://{{BASALT_TEST_NO_SUCH}}/q"), None));
        assert_eq!(
            missing.unwrap_err().message,
            "cannot find environment variable BASALT_TEST_NO_SUCH for custom resolver"
        );
        assert_eq!(
            resolve_url(&def(Some("ftp://x/y"), None))
                .unwrap_err()
                .message,
            "not a valid URI: ftp://x/y"
        );
        assert_eq!(
            resolve_url(&def(Some("a"), Some("B"))).unwrap_err().message,
            "both `url` and `url_from_env` can't be present"
        );
        assert_eq!(
            resolve_url(&def(None, None)).unwrap_err().message,
            "both `url` and `url_from_env` can't be empty"
        );
    }

    #[test]
    fn the_hash_follows_the_definition() {
        let a = definition_hash(&def(Some("http://a/graphql"), None));
        assert_eq!(a, definition_hash(&def(Some("http://a/graphql"), None)));
        assert_ne!(a, definition_hash(&def(Some("http://b/graphql"), None)));
    }
}
