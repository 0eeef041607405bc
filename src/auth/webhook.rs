//! Webhook mode: ask an HTTP hook who the caller is (`docs/auth.md`, "Webhook mode"), caching
//! answers that say how long they stay valid.

use super::{AuthConfigError, AuthError};
use crate::session;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tracing::Instrument;

/// Most cached answers kept.
const CACHE_SIZE: usize = 10_000;

/// A cached answer: the session variables and until when they hold.
type Cached = (BTreeMap<String, String>, Instant);

/// GET or POST.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookMode {
    /// Client headers forwarded as headers.
    Get,
    /// `{headers, request}` as a JSON body.
    Post,
}

/// The auth webhook client.
#[derive(Debug)]
pub struct Webhook {
    url: String,
    mode: HookMode,
    http: reqwest::Client,
    cache: Mutex<HashMap<u64, Cached>>,
}

fn is_credential(name: &str) -> bool {
    name.eq_ignore_ascii_case(session::ADMIN_SECRET)
        || name.eq_ignore_ascii_case(session::ACCESS_KEY)
}

impl Webhook {
    /// A client for `url`; requests time out after `timeout`.
    pub fn new(url: &str, mode: HookMode, timeout: Duration) -> Result<Self, AuthConfigError> {
        reqwest::Url::parse(url).map_err(AuthConfigError::HookUrl)?;
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .user_agent(concat!("basalt/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(AuthConfigError::HttpClient)?;
        Ok(Webhook {
            url: url.to_owned(),
            mode,
            http,
            cache: Mutex::new(HashMap::new()),
        })
    }

    fn headers_of(headers: &http::HeaderMap) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = headers
            .iter()
            .filter(|(k, _)| !is_credential(k.as_str()))
            .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect();
        out.sort();
        out
    }

    /// Whether the hook is sent the GraphQL request (POST mode).
    pub fn sends_request(&self) -> bool {
        self.mode == HookMode::Post
    }

    /// The session variables (lower-case keys, including `x-svc-role`) the hook grants.
    pub async fn session(
        &self,
        headers: &http::HeaderMap,
        request: Option<&Value>,
    ) -> Result<(BTreeMap<String, String>, Option<Instant>), AuthError> {
        let forwarded = Self::headers_of(headers);
        let key = {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            // Every request has its own id (the client's or one Basalt made): forwarded, so the
            // hook can log it, but never a reason to ask the hook again.
            forwarded
                .iter()
                .filter(|(k, _)| k != "x-request-id")
                .for_each(|header| header.hash(&mut h));
            if self.mode == HookMode::Post {
                request.map(|r| r.to_string()).hash(&mut h);
            }
            h.finish()
        };
        if let Some((vars, until)) = self
            .cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            if Instant::now() < *until {
                return Ok((vars.clone(), Some(*until)));
            }
        }
        let call = match self.mode {
            HookMode::Get => {
                let mut req = self.http.get(&self.url);
                for (k, v) in forwarded
                    .iter()
                    .filter(|(k, _)| !crate::session::NOT_FORWARDED.contains(&k.as_str()))
                {
                    req = req.header(k, v);
                }
                req
            }
            HookMode::Post => {
                let map: Map<String, Value> = forwarded
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect();
                self.http.post(&self.url).json(
                    &json!({"headers": map, "request": request.cloned().unwrap_or(Value::Null)}),
                )
            }
        };
        let span = tracing::debug_span!("auth.webhook", "otel.kind" = "client", mode = ?self.mode);
        let call = call.headers(span.in_scope(crate::telemetry::outgoing_headers));
        // Asking the hook only reads: a call that got no answer is sent once more rather
        // than failing the client's request.
        let response = crate::outgoing::send_read(call)
            .instrument(span)
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "auth hook request failed");
                AuthError::HookFailed("webhook authentication request failed".into())
            })?;
        match response.status().as_u16() {
            200 => {}
            401 => return Err(AuthError::HookUnauthorized),
            status => {
                tracing::warn!(status, "auth hook answered with an unexpected status");
                return Err(AuthError::HookFailed(
                    "Invalid response from authorization hook".into(),
                ));
            }
        }
        let body: Value = response.json().await.map_err(|e| {
            AuthError::HookFailed(format!("Invalid response from authorization hook: {e}"))
        })?;
        let Value::Object(map) = body else {
            return Err(AuthError::HookFailed(
                "Invalid response from authorization hook: expected a JSON object".into(),
            ));
        };
        let mut vars = BTreeMap::new();
        let mut ttl = None;
        for (k, v) in &map {
            let lower = k.to_ascii_lowercase();
            let text = v
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| v.to_string());
            if lower == "cache-control" {
                ttl = text
                    .split(',')
                    .find_map(|p| {
                        p.trim()
                            .strip_prefix("max-age=")
                            .and_then(|n| n.parse::<u64>().ok())
                    })
                    .map(Duration::from_secs);
            } else if lower == "expires" {
                ttl = ttl.or_else(|| {
                    httpdate::parse_http_date(&text)
                        .ok()
                        .and_then(|t| t.duration_since(std::time::SystemTime::now()).ok())
                });
            } else if lower.starts_with(session::PREFIX) && !is_credential(&lower) {
                // Other values may be any JSON, kept as their text; the role picks a schema and
                // its permissions, so `1`, `null` or `["admin"]` must not be read as a role name.
                if lower == session::ROLE && !v.is_string() {
                    tracing::warn!("auth hook answered with a role that is not a string");
                    return Err(AuthError::HookFailed(
                        "Invalid response from authorization hook: X-Svc-Role is not a string"
                            .into(),
                    ));
                }
                vars.insert(lower, text);
            }
        }
        if !vars.contains_key(session::ROLE) {
            return Err(AuthError::HookNoRole);
        }
        // A lifetime too long for an `Instant` (`max-age` near `u64::MAX`) is not cached and
        // never expires, rather than a panic on the request path.
        let expires = ttl.and_then(|ttl| Instant::now().checked_add(ttl));
        if let Some(until) = expires {
            let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            if cache.len() >= CACHE_SIZE {
                cache.clear();
            }
            cache.insert(key, (vars.clone(), until));
        }
        Ok((vars, expires))
    }
}
