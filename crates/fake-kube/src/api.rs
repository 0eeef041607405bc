//! The Kubernetes API over HTTP: every request outside `/_fake/` is recorded, then routed by
//! its path ([`Target`]) and method to a list, watch, get, create, replace, patch or delete of
//! the [`Store`](crate::store::Store). Refusals become `Status` objects; unknown paths are 404.

use crate::resources::{ResourceType, Target};
use crate::selector::Selector;
use crate::store::{Key, Rejection, Write};
use crate::watch::{self, WatchRequest};
use crate::{Call, Shared};
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// The `Accept` marker of kube's metadata-only lists, gets and watches.
const METADATA_ONLY: &str = "as=PartialObjectMetadata";

/// A JSON response.
pub(crate) fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::to_vec(body).unwrap_or_default(),
    )
        .into_response()
}

/// The `Status` answer of a refusal.
pub(crate) fn refusal(rejection: &Rejection) -> Response {
    let status = StatusCode::from_u16(rejection.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json_response(status, &rejection.to_status())
}

/// The request body as JSON (`null` when empty, a string when it is not JSON).
pub(crate) fn body_value(body: &[u8]) -> Value {
    if body.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
}

/// Every Kubernetes API request: recorded, then answered.
pub(crate) async fn serve(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let text = |name: header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let content_type = text(header::CONTENT_TYPE);
    let accept = text(header::ACCEPT).unwrap_or_default();
    let token = text(header::AUTHORIZATION)
        .and_then(|a| a.strip_prefix("Bearer ").map(|t| t.trim().to_owned()));
    let parsed = body_value(&body);
    shared.record(Call {
        method: method.to_string(),
        uri: uri
            .path_and_query()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_else(|| uri.path().to_owned()),
        token,
        content_type: content_type.clone(),
        body: parsed.clone(),
    });
    let request = Request {
        method,
        query: Query::<HashMap<String, String>>::try_from_uri(&uri)
            .map(|q| q.0)
            .unwrap_or_default(),
        content_type: content_type.unwrap_or_default(),
        metadata_only: accept.contains(METADATA_ONLY),
        body: parsed,
    };
    let Some(target) = Target::parse(uri.path()) else {
        return refusal(&Rejection::new(
            404,
            "NotFound",
            format!(
                "the server could not find the requested resource ({})",
                uri.path()
            ),
        ));
    };
    match answer(&shared, target, request) {
        Ok(response) => response,
        Err(rejection) => refusal(&rejection),
    }
}

/// What the handler needs of a request once it is recorded.
struct Request {
    method: Method,
    query: HashMap<String, String>,
    content_type: String,
    metadata_only: bool,
    body: Value,
}

impl Request {
    fn flag(&self, name: &str) -> bool {
        matches!(self.query.get(name).map(String::as_str), Some("true" | "1"))
    }

    fn number(&self, name: &str) -> Result<Option<u64>, Rejection> {
        match self.query.get(name).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| Rejection::bad_request(format!("invalid {name}: {v:?}"))),
        }
    }

    fn selector(&self) -> Result<Selector, Rejection> {
        if self
            .query
            .get("fieldSelector")
            .is_some_and(|f| !f.is_empty())
        {
            return Err(Rejection::bad_request(
                "fake-kube does not support field selectors",
            ));
        }
        Selector::parse(self.query.get("labelSelector").map_or("", String::as_str))
            .map_err(Rejection::bad_request)
    }
}

fn answer(shared: &Arc<Shared>, target: Target, request: Request) -> Result<Response, Rejection> {
    let resource = target.resource;
    let method_not_allowed = || {
        Rejection::new(
            405,
            "MethodNotAllowed",
            format!("{} is not supported here", request.method),
        )
    };
    let Some(name) = target.name.clone() else {
        return match request.method {
            Method::GET if request.flag("watch") => watch(shared, &target, &request),
            Method::GET => list(shared, &target, &request),
            Method::POST => {
                let namespace = target.namespace.clone().ok_or_else(method_not_allowed)?;
                let created =
                    shared.write(|store| store.create(resource, &namespace, request.body))?;
                Ok(json_response(StatusCode::CREATED, &created))
            }
            _ => Err(method_not_allowed()),
        };
    };
    let namespace = target.namespace.clone().unwrap_or_default();
    let key = Key::new(resource, &namespace, &name);
    let object = match request.method {
        Method::GET => {
            let object = shared
                .read(|store| store.get(&key).cloned())
                .ok_or_else(|| Rejection::not_found(resource, &name))?;
            if request.metadata_only {
                watch::partial(&object)
            } else {
                object
            }
        }
        Method::PUT => shared.write(|store| {
            store.write(resource, key, target.status, Write::Replace, request.body)
        })?,
        Method::PATCH => {
            let how = patch_kind(resource, &request.content_type)?;
            if request.body.is_string() {
                return Err(Rejection::bad_request(
                    "fake-kube reads patch bodies as JSON (kube sends apply patches as JSON)",
                ));
            }
            shared.write(|store| store.write(resource, key, target.status, how, request.body))?
        }
        Method::DELETE if !target.status => shared.write(|store| store.delete(resource, key))?,
        _ => return Err(method_not_allowed()),
    };
    Ok(json_response(StatusCode::OK, &object))
}

fn patch_kind(resource: &ResourceType, content_type: &str) -> Result<Write, Rejection> {
    let media = content_type.split(';').next().unwrap_or_default().trim();
    match media {
        "application/apply-patch+yaml" => Ok(Write::Apply),
        "application/merge-patch+json" => Ok(Write::Merge),
        "application/json-patch+json" => Ok(Write::Json),
        "application/strategic-merge-patch+json" if !resource.custom => Ok(Write::Merge),
        _ => Err(Rejection::new(
            415,
            "UnsupportedMediaType",
            format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (got {media:?})"),
        )),
    }
}

fn list(shared: &Arc<Shared>, target: &Target, request: &Request) -> Result<Response, Rejection> {
    let selector = request.selector()?;
    let limit = request
        .number("limit")?
        .map(|l| l as usize)
        .filter(|l| *l > 0);
    let continue_token = request.query.get("continue").filter(|c| !c.is_empty());
    // Always the latest state, which satisfies any `resourceVersion` a client may ask for
    // except an exact older one; `resourceVersion` is only checked to be a number.
    request.number("resourceVersion")?;
    let page = shared.read(|store| {
        store.list(
            target.resource,
            target.namespace.as_deref(),
            &selector,
            limit,
            continue_token.map(String::as_str),
        )
    })?;
    let mut metadata = json!({"resourceVersion": page.version.to_string()});
    if let Some(next) = page.next {
        metadata["continue"] = Value::String(next);
    }
    let body = if request.metadata_only {
        json!({
            "apiVersion": "meta.k8s.io/v1",
            "kind": "PartialObjectMetadataList",
            "metadata": metadata,
            "items": page.items.iter().map(watch::partial).collect::<Vec<_>>(),
        })
    } else {
        json!({
            "apiVersion": target.resource.api_version,
            "kind": format!("{}List", target.resource.kind),
            "metadata": metadata,
            "items": page.items,
        })
    };
    Ok(json_response(StatusCode::OK, &body))
}

fn watch(shared: &Arc<Shared>, target: &Target, request: &Request) -> Result<Response, Rejection> {
    let after = request.number("resourceVersion")?.filter(|v| *v > 0);
    let watch = WatchRequest {
        resource: target.resource,
        namespace: target.namespace.clone(),
        selector: request.selector()?,
        after,
        initial_events: request.flag("sendInitialEvents"),
        bookmarks: request.flag("allowWatchBookmarks"),
        timeout: request.number("timeoutSeconds")?.map(Duration::from_secs),
        metadata_only: request.metadata_only,
    };
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        watch::body(shared.clone(), watch),
    )
        .into_response())
}
