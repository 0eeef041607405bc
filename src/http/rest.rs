//! `/api/rest/<url>` (see `docs/rest.md`): the request's path matched against the served
//! endpoints' templates, its variables taken from the path, the query string and a JSON body,
//! then the endpoint's stored document run as a `/v1/graphql` request is (authentication, rate
//! limit, plan cache, the one statement); the answer is the `data` object's bytes as they
//! are, or the first error with a status of its own.

use super::error::{ApiError, RestRefusal};
use super::graphql::{self, Origin};
use crate::engine::{self, GraphqlRequest, Transport};
use crate::metadata::types::{GraphQLName, RestMethod};
use crate::resolve::rest::{ResolvedEndpoint, RestVariable};
use crate::state::AppState;
use axum::body::to_bytes;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

/// Where every endpoint's path starts.
const PREFIX: &str = "/api/rest/";

/// Any method on `/api/rest` and below. A request from a browser page (one with `Origin`)
/// is answered with the CORS headers that let the page read it; its preflight (`OPTIONS` with
/// `Origin`) is answered before routing.
pub async fn handle(State(state): State<AppState>, request: Request) -> Response {
    let origin = request.headers().get(header::ORIGIN).cloned();
    if let (true, Some(origin)) = (request.method() == axum::http::Method::OPTIONS, &origin) {
        let mut response = StatusCode::NO_CONTENT.into_response();
        let headers = response.headers_mut();
        cors(headers, origin);
        headers.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static("1728000"),
        );
        if let Some(asked) = request
            .headers()
            .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
        {
            headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, asked.clone());
        }
        return response;
    }
    let mut response = serve(&state, request)
        .await
        .unwrap_or_else(IntoResponse::into_response);
    if let Some(origin) = &origin {
        cors(response.headers_mut(), origin);
    }
    response
}

/// The CORS headers of an answer to a page of `origin`: any origin may call, with the
/// credentials it sends in headers. Not with cookies: a page of another site must not read
/// what a visitor's cookie (a JWT read from a cookie) would let it.
fn cors(headers: &mut axum::http::HeaderMap, origin: &HeaderValue) {
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
    headers.insert(header::VARY, HeaderValue::from_static("origin"));
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET,POST,PUT,PATCH,DELETE,OPTIONS"),
    );
}

async fn serve(state: &AppState, request: Request) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    let method = RestMethod::parse(parts.method.as_str())
        .ok_or_else(|| RestRefusal::Method(parts.method.to_string()))?;
    let segments = path_segments(parts.uri.path()).ok_or(RestRefusal::NotFound)?;
    let version = state.engine.current();
    let (endpoint, path_values) = route(
        &version.catalog.resolution.resolved.rest_endpoints,
        &segments,
        method,
    )?;
    let limit = state.config.max_body_bytes;
    let bytes = to_bytes(body, limit)
        .await
        .map_err(|_| ApiError::PayloadTooLarge(limit))?;
    let variables = variables(endpoint, parts.uri.query(), &bytes, &path_values)?;
    let request = GraphqlRequest {
        query: endpoint.document.clone(),
        variables: Some(variables),
        operation_name: None,
    };
    drop(version);
    let headers = parts.headers;
    let from = Origin {
        headers: &headers,
        ip: graphql::client_ip(state, &parts.extensions, &headers),
    };
    // An auth webhook in POST mode is sent no request: the stored one is not the caller's.
    // A failure answers as on the metadata API (401, or 400 for a role not allowed).
    let session = state.auth.authenticate(&headers, None).await?;
    let expose = session.is_admin() || state.config.dev_mode;
    let reply = graphql::counted(
        state,
        from,
        Ok(session),
        Ok(request),
        Transport::Post,
        false,
    )
    .await;
    let mut response = match engine::data_of(&reply.body) {
        Some(data) => (StatusCode::OK, data).into_response(),
        None => ApiError::from(RestRefusal::Graphql {
            body: reply.body.clone(),
            expose,
        })
        .into_response(),
    };
    if let Some(verdict) = reply.rate {
        super::limits::headers(response.headers_mut(), verdict);
    }
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    for cookie in reply.cookies {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    crate::telemetry::request::record_operation(reply.kind);
    Ok(response)
}

/// `GET /api/swagger/json` (admin only): the OpenAPI document of the served endpoints.
pub async fn swagger(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
) -> Result<Response, ApiError> {
    let session = state.auth.authenticate(&headers, None).await?;
    if !session.is_admin() {
        return Err(RestRefusal::AdminOnly.into());
    }
    let version = state.engine.current();
    let admin = version.role(&session.role, false, state.engine.counters());
    let document = crate::graphql::openapi::document(
        &version.catalog.resolution.resolved.rest_endpoints,
        &admin.schema.types,
        env!("CARGO_PKG_VERSION"),
    );
    Ok((StatusCode::OK, axum::Json(document)).into_response())
}

/// The segments of the path below `/api/rest/`, each percent-decoded once; `None` when there
/// is none, or one is empty (a trailing `/`).
fn path_segments(path: &str) -> Option<Vec<String>> {
    let rest = path.strip_prefix(PREFIX)?;
    rest.split('/')
        .map(|segment| {
            (!segment.is_empty()).then(|| {
                percent_encoding::percent_decode_str(segment)
                    .decode_utf8_lossy()
                    .into_owned()
            })
        })
        .collect()
}

/// An endpoint matching a path, with its path variables' values.
type Matched<'e, 'p> = (&'e ResolvedEndpoint, Vec<(&'e str, &'p str)>);

/// The endpoint answering `method` at `segments`, with its path variables' values.
fn route<'e, 'p>(
    endpoints: &'e [ResolvedEndpoint],
    segments: &'p [String],
    method: RestMethod,
) -> Result<Matched<'e, 'p>, RestRefusal> {
    let matching: Vec<Matched<'e, 'p>> = endpoints
        .iter()
        .filter_map(|e| e.template.matches(segments).map(|values| (e, values)))
        .collect();
    if matching.is_empty() {
        return Err(RestRefusal::NotFound);
    }
    let mut answering = matching
        .iter()
        .filter(|(e, _)| e.entry.methods.contains(&method));
    match (answering.next(), answering.next()) {
        (Some((endpoint, values)), None) => Ok((endpoint, values.clone())),
        (Some(_), Some(_)) => Err(RestRefusal::Ambiguous),
        (None, _) => {
            let mut allowed: Vec<RestMethod> = matching
                .iter()
                .flat_map(|(e, _)| e.entry.methods.iter().copied())
                .collect();
            allowed.sort_unstable();
            allowed.dedup();
            Err(RestRefusal::MethodNotAllowed(allowed))
        }
    }
}

/// The request's variables: the query string's, then the JSON body's, then the path's, a
/// later source winning for the same name.
fn variables(
    endpoint: &ResolvedEndpoint,
    query: Option<&str>,
    body: &[u8],
    path: &[(&str, &str)],
) -> Result<Map<String, Value>, RestRefusal> {
    let mut out = Map::new();
    for (key, text) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        if let Some(variable) = known(endpoint, &key)? {
            put_text(&mut out, variable, &text)?;
        }
    }
    if !body.trim_ascii().is_empty() {
        let Ok(Value::Object(given)) = serde_json::from_slice::<Value>(body) else {
            return Err(RestRefusal::Body);
        };
        for (key, value) in given {
            if known(endpoint, &key)?.is_some() {
                out.insert(key, value);
            }
        }
    }
    for (name, text) in path {
        if let Some(variable) = endpoint.variable(name) {
            put_text(&mut out, variable, text)?;
        }
    }
    Ok(out)
}

/// The operation's variable `key`: `None` for a key that is no GraphQL name (ignored), an
/// error for a name the operation does not declare.
fn known<'e>(
    endpoint: &'e ResolvedEndpoint,
    key: &str,
) -> Result<Option<&'e RestVariable>, RestRefusal> {
    if !GraphQLName::is_valid(key) {
        return Ok(None);
    }
    endpoint
        .variable(key)
        .map(Some)
        .ok_or_else(|| RestRefusal::UnexpectedVariable(key.to_owned()))
}

/// A text value (path or query string) as its variable's type takes it.
fn put_text(
    out: &mut Map<String, Value>,
    variable: &RestVariable,
    text: &str,
) -> Result<(), RestRefusal> {
    if variable.list {
        return Err(RestRefusal::ListVariable {
            name: variable.name.clone(),
            text: text.to_owned(),
        });
    }
    match coerce(&variable.base, variable.non_null, text) {
        Some(value) => {
            out.insert(variable.name.clone(), value);
        }
        None => {
            out.remove(&variable.name);
        }
    }
    Ok(())
}

/// The value text stands for in a variable of type `base`; `None`: left out (empty text for
/// a nullable variable that is not a boolean).
fn coerce(base: &str, non_null: bool, text: &str) -> Option<Value> {
    let boolean = matches!(base, "Boolean" | "Bool");
    let number = matches!(
        base,
        "Int" | "Float" | "Number" | "Double" | "float8" | "numeric"
    );
    match (text.is_empty(), boolean, non_null) {
        (true, true, _) => return Some(Value::Bool(true)),
        (true, false, false) => return None,
        _ => {}
    }
    let parsed = serde_json::from_str::<Value>(text).ok();
    Some(match parsed {
        Some(Value::Bool(b)) if boolean => Value::Bool(b),
        Some(Value::Number(n)) if number => Value::Number(n),
        _ => Value::String(text.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_values_follow_the_variable_type() {
        assert_eq!(coerce("Int", true, "5"), Some(json!(5)));
        assert_eq!(coerce("Float", false, "2.5"), Some(json!(2.5)));
        assert_eq!(coerce("Int", true, "abc"), Some(json!("abc")));
        assert_eq!(coerce("bigint", true, "42"), Some(json!("42")));
        assert_eq!(
            coerce("date", true, "2024-02-01"),
            Some(json!("2024-02-01"))
        );
        assert_eq!(coerce("Boolean", true, ""), Some(json!(true)));
        assert_eq!(coerce("Boolean", false, "false"), Some(json!(false)));
        assert_eq!(coerce("String", false, "true"), Some(json!("true")));
        assert_eq!(coerce("String", false, ""), None);
        assert_eq!(coerce("String", true, ""), Some(json!("")));
    }

    #[test]
    fn paths_are_split_and_decoded_once() {
        assert_eq!(
            path_segments("/api/rest/a%2Fb/%2520/x+y"),
            Some(vec!["a/b".to_owned(), "%20".to_owned(), "x+y".to_owned()])
        );
        assert_eq!(path_segments("/api/rest/"), None);
        assert_eq!(path_segments("/api/rest/a/"), None);
        assert_eq!(path_segments("/api/rest"), None);
    }
}
