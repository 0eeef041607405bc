//! `/v1/graphql` (POST, GET for queries, batches; a GET that upgrades goes to
//! [`super::websocket`]). Every outcome is HTTP 200 except an oversized body (413) and a
//! refusal by a rate limit (429). Before the engine runs a request, its caller is
//! authenticated, then a batch is held to the batch limit, then the rate limit counts it
//! ([`super::limits`]).

use super::error::{graphql_body, graphql_status, ApiError};
use super::limits;
use crate::auth::AuthError;
use crate::engine::{self, GraphqlError, GraphqlRequest, Transport};
use crate::limits::rate::Verdict;
use crate::live::LiveQueries;
use crate::session::Session;
use crate::state::AppState;
use axum::body::{to_bytes, Body};
use axum::extract::{ConnectInfo, FromRequestParts, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::Value;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

const GRAPHQL_RESPONSE: &str = "application/graphql-response+json";

/// `POST /v1/graphql`.
pub async fn post(State(state): State<AppState>, request: Request) -> Result<Response, ApiError> {
    // The request's own headers (the `HeaderMap` extractor would clone them).
    let (parts, body) = request.into_parts();
    let ip = client_ip(&state, &parts.extensions, &parts.headers);
    let headers = parts.headers;
    let limit = state.config.max_body_bytes;
    let bytes = to_bytes(body, limit)
        .await
        .map_err(|_| ApiError::PayloadTooLarge(limit))?;
    let gzip = accepts_gzip(&headers);
    let from = Origin {
        headers: &headers,
        ip,
    };
    if let Some(request) = direct(&state, &bytes) {
        let session = state.auth.authenticate(&headers, None).await;
        let done = counted(&state, from, session, Ok(request), Transport::Post, gzip).await;
        return Ok(respond(&headers, done));
    }
    let done = match serde_json::from_slice::<Value>(&bytes) {
        Err(e) => Reply::failed(graphql_body(
            &GraphqlError::InvalidJson(e.to_string()),
            false,
        )),
        Ok(Value::Array(items)) => batch(&state, from, items).await,
        Ok(single) => one(&state, from, single, Transport::Post, gzip).await,
    };
    Ok(respond(&headers, done))
}

/// Where a request came from: its headers, and the client's address as the rate limit reads
/// it.
#[derive(Clone, Copy)]
pub(super) struct Origin<'a> {
    pub(super) headers: &'a HeaderMap,
    pub(super) ip: Option<IpAddr>,
}

/// The client's address of a request (see [`limits::client_ip`]).
pub(super) fn client_ip(
    state: &AppState,
    extensions: &axum::http::Extensions,
    headers: &HeaderMap,
) -> Option<IpAddr> {
    let peer = extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0.ip());
    limits::client_ip(peer, headers, state.config.trusted_proxy_hops)
}

/// A single request's body read straight into its fields, when nothing needs it as a JSON
/// value first (an auth webhook in POST mode is sent the request as it came). `None` sends
/// the body the general way, which also decides how a body that is not a well-formed
/// request fails (and whether authentication fails first): this path changes no outcome.
fn direct(state: &AppState, bytes: &[u8]) -> Option<GraphqlRequest> {
    // A struct also deserializes from a JSON array: only an object is read this way.
    if bytes.trim_ascii_start().first() != Some(&b'{') || state.auth.reads_request() {
        return None;
    }
    serde_json::from_slice(bytes).ok()
}

/// Whether the client takes a gzip-encoded response: `Accept-Encoding` names `gzip` (or,
/// when it does not name it, `*`) with a weight above 0.
fn accepts_gzip(headers: &HeaderMap) -> bool {
    let (mut gzip, mut any) = (None, None);
    let codings = headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','));
    for coding in codings {
        let mut pieces = coding.split(';').map(str::trim);
        let name = pieces.next().unwrap_or_default();
        let weight = pieces
            .find_map(|p| p.strip_prefix("q=").and_then(|q| q.parse::<f32>().ok()))
            .unwrap_or(1.0);
        if name.eq_ignore_ascii_case("gzip") {
            gzip = Some(weight);
        } else if name == "*" {
            any = Some(weight);
        }
    }
    gzip.or(any).is_some_and(|weight| weight > 0.0)
}

/// The operation label of a request that did not get as far as a parsed operation.
const UNKNOWN: &str = "unknown";

/// What a request is answered: its status and body (gzip-encoded when `gzip`), its
/// operation's kind for the metrics, the cookies remote schemas set, and the verdict of the
/// rate limit that applied to it.
pub(super) struct Reply {
    status: StatusCode,
    pub(super) body: Bytes,
    gzip: bool,
    pub(super) kind: &'static str,
    pub(super) cookies: Vec<HeaderValue>,
    pub(super) rate: Option<Verdict>,
}

impl Reply {
    fn failed(body: Bytes) -> Self {
        Reply {
            status: StatusCode::OK,
            body,
            gzip: false,
            kind: UNKNOWN,
            cookies: Vec::new(),
            rate: None,
        }
    }

    /// A request refused by a limit before it ran (an error with no internal detail), with
    /// the rate limit's verdict when one applied.
    fn refused(err: &GraphqlError, rate: Option<Verdict>) -> Self {
        Reply {
            status: graphql_status(err),
            rate,
            ..Reply::failed(graphql_body(err, false))
        }
    }
}

/// Query-string form of a request.
#[derive(Debug, Deserialize)]
pub struct GetParams {
    query: Option<String>,
    variables: Option<String>,
    #[serde(rename = "operationName")]
    operation_name: Option<String>,
}

/// `GET /v1/graphql`: a WebSocket upgrade, or `?query=…` (queries only).
pub async fn get(
    State(state): State<AppState>,
    State(live): State<Arc<LiveQueries>>,
    request: Request,
) -> Response {
    let (mut parts, _) = request.into_parts();
    let ip = client_ip(&state, &parts.extensions, &parts.headers);
    if super::websocket::is_upgrade(&parts.headers) {
        return super::websocket::upgrade(state, live, parts, ip).await;
    }
    let params = match Query::<GetParams>::from_request_parts(&mut parts, &state).await {
        Ok(Query(params)) => params,
        Err(rejection) => return rejection.into_response(),
    };
    let headers = parts.headers;
    let gzip = accepts_gzip(&headers);
    let mut request = serde_json::Map::new();
    request.insert(
        "query".into(),
        Value::String(params.query.unwrap_or_default()),
    );
    if let Some(op) = params.operation_name {
        request.insert("operationName".into(), Value::String(op));
    }
    if let Some(variables) = params.variables {
        match serde_json::from_str::<Value>(&variables) {
            Ok(vars) => {
                request.insert("variables".into(), vars);
            }
            Err(e) => {
                let err = GraphqlError::InvalidVariables(e.to_string());
                return respond(&headers, Reply::failed(graphql_body(&err, false)));
            }
        }
    }
    let request = Value::Object(request);
    let from = Origin {
        headers: &headers,
        ip,
    };
    let done = one(&state, from, request, Transport::Get, gzip).await;
    respond(&headers, done)
}

/// A batch: refused whole when it is longer than the server's batch limit, or (once its
/// requests are authenticated) than the tightest batch limit of their roles, or when the rate
/// limit refuses its operations; otherwise each request runs on its own.
async fn batch(state: &AppState, from: Origin<'_>, items: Vec<Value>) -> Reply {
    let server_limit = state.config.max_batch_size;
    if items.len() > server_limit {
        let err = GraphqlError::BatchTooLarge {
            limit: server_limit,
        };
        return Reply::failed(graphql_body(&err, false));
    }
    let mut sessions = Vec::with_capacity(items.len());
    for item in &items {
        sessions.push(state.auth.authenticate(from.headers, Some(item)).await);
    }
    let version = state.engine.current();
    let callers: Vec<&Session> = sessions.iter().flatten().collect();
    let role_limit = callers
        .iter()
        .filter_map(|s| version.limits.of(&s.role)?.batch)
        .min();
    let limit = crate::limits::tightest(server_limit, role_limit);
    if items.len() > limit {
        let err = GraphqlError::BatchTooLarge { limit };
        return Reply::refused(&err, None);
    }
    let rate = limits::admit(state, &version, &callers, from.ip);
    if let Some(err) = rate.and_then(limits::refusal) {
        return Reply::refused(&err, rate);
    }
    drop(version);
    let mut out = Vec::from(&b"["[..]);
    let mut cookies = Vec::new();
    for (i, (item, session)) in items.into_iter().zip(sessions).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let request = serde_json::from_value(item);
        let mut done = parsed(state, from, session, request, Transport::Post, false).await;
        out.extend_from_slice(&done.body);
        cookies.append(&mut done.cookies);
    }
    out.push(b']');
    Reply {
        status: StatusCode::OK,
        body: Bytes::from(out),
        gzip: false,
        kind: "batch",
        cookies,
        rate,
    }
}

/// One request, given as a JSON value: authenticated (an auth webhook may read the value),
/// then read as a request and run (see [`counted`]).
async fn one(
    state: &AppState,
    from: Origin<'_>,
    value: Value,
    transport: Transport,
    gzip: bool,
) -> Reply {
    let session = state.auth.authenticate(from.headers, Some(&value)).await;
    let request = serde_json::from_value(value);
    counted(state, from, session, request, transport, gzip).await
}

/// One request that is not part of a batch, once authenticated: counted by the rate limit of
/// its role, then run (see [`parsed`]).
pub(super) async fn counted(
    state: &AppState,
    from: Origin<'_>,
    session: Result<Session, AuthError>,
    request: Result<GraphqlRequest, serde_json::Error>,
    transport: Transport,
    gzip: bool,
) -> Reply {
    let rate = match &session {
        Ok(caller) => limits::admit(state, &state.engine.current(), &[caller], from.ip),
        Err(_) => None,
    };
    if let Some(err) = rate.and_then(limits::refusal) {
        return Reply::refused(&err, rate);
    }
    let mut reply = parsed(state, from, session, request, transport, gzip).await;
    reply.rate = rate;
    reply
}

/// One request whose caller is resolved and whose body is read: its body, and its
/// operation's kind for the metrics. An authentication failure answers before a body that is
/// not a request. A body the engine holds gzip-encoded is sent so when `gzip` (the client
/// takes it), decoded otherwise.
async fn parsed(
    state: &AppState,
    from: Origin<'_>,
    session: Result<Session, AuthError>,
    request: Result<GraphqlRequest, serde_json::Error>,
    transport: Transport,
    gzip: bool,
) -> Reply {
    let session = match session {
        Ok(s) => s,
        Err(e) => return Reply::failed(graphql_body(&GraphqlError::Auth(e), false)),
    };
    let expose = session.is_admin() || state.config.dev_mode;
    let request = match request {
        Ok(r) => r,
        Err(e) => {
            let err = GraphqlError::InvalidRequest(e.to_string());
            return Reply::failed(graphql_body(&err, expose));
        }
    };
    crate::telemetry::request::record_role(&session.role);
    let caller = engine::Caller {
        session: &session,
        headers: from.headers,
    };
    let answer = state.engine.run(caller, request, transport).await;
    let (body, gzip) = match answer.body {
        Ok(engine::Body::Gzip(body)) if gzip => (Ok(body), true),
        Ok(body) => (body.json(), false),
        Err(err) => (Err(err), false),
    };
    Reply {
        status: StatusCode::OK,
        body: body.unwrap_or_else(|err| graphql_body(&err, expose)),
        gzip,
        kind: answer.kind,
        cookies: answer.cookies,
        rate: None,
    }
}

fn respond(headers: &HeaderMap, done: Reply) -> Response {
    let Reply {
        status,
        body,
        gzip,
        kind,
        cookies,
        rate,
    } = done;
    let wants_graphql = headers
        .get(header::ACCEPT)
        .and_then(|a| a.to_str().ok())
        .map(prefers_graphql_response)
        .unwrap_or(false);
    let content_type = if wants_graphql {
        GRAPHQL_RESPONSE
    } else {
        "application/json"
    };
    let mut response = (status, body).into_response();
    if let Some(verdict) = rate {
        limits::headers(response.headers_mut(), verdict);
    }
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if gzip {
        response
            .headers_mut()
            .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        response
            .headers_mut()
            .insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    for cookie in cookies {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    crate::telemetry::request::record_operation(kind);
    response
}

/// Whether an `Accept` header ranks `application/graphql-response+json` above `application/json`.
fn prefers_graphql_response(accept: &str) -> bool {
    let mut best_graphql = -1.0f32;
    let mut best_json = -1.0f32;
    for part in accept.split(',') {
        let mut pieces = part.split(';').map(str::trim);
        let media = pieces.next().unwrap_or_default().to_ascii_lowercase();
        let q = pieces
            .find_map(|p| p.strip_prefix("q=").and_then(|v| v.parse::<f32>().ok()))
            .unwrap_or(1.0);
        match media.as_str() {
            GRAPHQL_RESPONSE => best_graphql = best_graphql.max(q),
            "application/json" => best_json = best_json.max(q),
            _ => {}
        }
    }
    best_graphql > 0.0 && best_graphql >= best_json
}

/// `POST /v1/graphql/explain` (admin only): the SQL, parameters and plan of each root field.
pub async fn explain(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let session = state.auth.authenticate(&headers, None).await?;
    let limit = state.config.max_body_bytes;
    let bytes = to_bytes(body, limit)
        .await
        .map_err(|_| ApiError::PayloadTooLarge(limit))?;
    let request: engine::ExplainRequest = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::InvalidJson(format!("invalid explain request: {e}")))?;
    if !session.is_admin() {
        return Err(ApiError::AdminOnly);
    }
    Ok(match state.engine.explain(request).await {
        Ok(value) => (StatusCode::OK, axum::Json(value)).into_response(),
        Err(err) => (StatusCode::BAD_REQUEST, graphql_body(&err, true)).into_response(),
    })
}

#[cfg(test)]
mod tests {
    use super::{accepts_gzip, prefers_graphql_response};
    use axum::http::{header, HeaderMap, HeaderValue};

    #[test]
    fn gzip_negotiation() {
        let takes = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(
                header::ACCEPT_ENCODING,
                HeaderValue::from_str(value).unwrap(),
            );
            accepts_gzip(&headers)
        };
        for yes in [
            "gzip",
            "gzip, deflate, br",
            "br;q=1.0, GZIP;q=0.5",
            "*",
            "identity, *;q=0.1",
        ] {
            assert!(takes(yes), "{yes}");
        }
        for no in [
            "",
            "br",
            "identity",
            "gzip;q=0",
            "gzip;q=0, *",
            "*;q=0",
            "x-gzip",
        ] {
            assert!(!takes(no), "{no}");
        }
        assert!(!accepts_gzip(&HeaderMap::new()));
    }

    #[test]
    fn accept_negotiation() {
        assert!(prefers_graphql_response(
            "application/graphql-response+json"
        ));
        assert!(prefers_graphql_response(
            "application/graphql-response+json, application/json;q=0.9"
        ));
        assert!(!prefers_graphql_response(
            "application/json, application/graphql-response+json;q=0.5"
        ));
        assert!(!prefers_graphql_response("*/*"));
    }
}
