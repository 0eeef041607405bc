//! Watches: a chunked response of JSON lines, one `WatchEvent` each (`ADDED`, `MODIFIED`,
//! `DELETED`, `BOOKMARK`, or an `ERROR` carrying `410 Expired` when the requested version was
//! compacted away), replayed from the change log after the requested `resourceVersion` and then
//! followed live until `timeoutSeconds`, the client leaves, or the server stops. Without a
//! version (or with `0`, or with `sendInitialEvents=true`) the current objects come first as
//! `ADDED`, and with `sendInitialEvents` a bookmark annotated `k8s.io/initial-events-end` ends
//! them, as kube's streaming lists expect.

use crate::resources::ResourceType;
use crate::selector::Selector;
use crate::store::ChangeType;
use crate::Shared;
use axum::body::Body;
use bytes::Bytes;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Quiet time after which a watch that allows bookmarks gets one.
const BOOKMARK_EVERY: Duration = Duration::from_secs(5);
/// A watch's length when the client gives no `timeoutSeconds`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

/// What a watch request asks for.
#[derive(Debug, Clone)]
pub(crate) struct WatchRequest {
    pub(crate) resource: &'static ResourceType,
    /// `None`: every namespace.
    pub(crate) namespace: Option<String>,
    pub(crate) selector: Selector,
    /// Replay changes after this version; `None` starts with the current objects.
    pub(crate) after: Option<u64>,
    /// `sendInitialEvents=true`.
    pub(crate) initial_events: bool,
    /// `allowWatchBookmarks=true`.
    pub(crate) bookmarks: bool,
    /// `timeoutSeconds`.
    pub(crate) timeout: Option<Duration>,
    /// The client asked for `PartialObjectMetadata` objects.
    pub(crate) metadata_only: bool,
}

/// The response body of a watch; a task feeds it until the watch ends.
pub(crate) fn body(shared: Arc<Shared>, request: WatchRequest) -> Body {
    let (lines, receiver) = mpsc::channel::<Bytes>(64);
    tokio::spawn(follow(shared, request, lines));
    Body::from_stream(futures_util::stream::unfold(
        receiver,
        |mut receiver| async move {
            receiver
                .recv()
                .await
                .map(|line| (Ok::<_, std::convert::Infallible>(line), receiver))
        },
    ))
}

/// Partial metadata of `object`, as `as=PartialObjectMetadata` asks.
pub(crate) fn partial(object: &Value) -> Value {
    json!({
        "apiVersion": "meta.k8s.io/v1",
        "kind": "PartialObjectMetadata",
        "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

fn line(event: &Value) -> Bytes {
    let mut bytes = serde_json::to_vec(event).unwrap_or_default();
    bytes.push(b'\n');
    Bytes::from(bytes)
}

fn event(request: &WatchRequest, change: ChangeType, object: &Value) -> Bytes {
    let object = if request.metadata_only {
        partial(object)
    } else {
        object.clone()
    };
    line(&json!({"type": change.as_str(), "object": object}))
}

fn bookmark(request: &WatchRequest, version: u64, initial_events_end: bool) -> Bytes {
    let mut metadata = json!({"resourceVersion": version.to_string()});
    if initial_events_end {
        metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    line(&json!({"type": "BOOKMARK", "object": {
        "apiVersion": request.resource.api_version,
        "kind": request.resource.kind,
        "metadata": metadata,
    }}))
}

fn expired(after: u64, oldest: u64) -> Bytes {
    line(&json!({"type": "ERROR", "object": {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("too old resource version: {after} ({oldest})"),
        "reason": "Expired", "code": 410,
    }}))
}

/// Sends the watch's lines until it ends; returns early when the client has gone.
async fn follow(shared: Arc<Shared>, request: WatchRequest, lines: mpsc::Sender<Bytes>) {
    let deadline = Instant::now() + request.timeout.unwrap_or(DEFAULT_TIMEOUT);
    let mut versions = shared.versions.subscribe();
    let mut stop = shared.stop.clone();
    let index = request.resource.index();
    let initial = request.after.is_none() || request.initial_events;
    let (objects, mut cursor) = shared.read(|store| {
        if !initial {
            return (Vec::new(), request.after.unwrap_or(0));
        }
        let page = store.list(
            request.resource,
            request.namespace.as_deref(),
            &request.selector,
            None,
            None,
        );
        let items = page.map(|p| p.items).unwrap_or_default();
        (items, store.version())
    });
    for object in &objects {
        if lines
            .send(event(&request, ChangeType::Added, object))
            .await
            .is_err()
        {
            return;
        }
    }
    if request.initial_events && lines.send(bookmark(&request, cursor, true)).await.is_err() {
        return;
    }
    loop {
        versions.borrow_and_update();
        let scanned = shared.read(|store| {
            let changes = store.changes_after(cursor)?;
            let matching: Vec<_> = changes
                .filter(|c| {
                    c.resource == index
                        && request
                            .namespace
                            .as_deref()
                            .is_none_or(|ns| ns == c.namespace)
                        && request.selector.matches(&c.object)
                })
                .map(|c| (c.change, c.object.clone()))
                .collect();
            Some((matching, store.version()))
        });
        let Some((changes, latest)) = scanned else {
            let oldest = shared.read(|store| store.compacted());
            let _ = lines.send(expired(cursor, oldest)).await;
            return;
        };
        for (change, object) in changes {
            if lines.send(event(&request, change, &object)).await.is_err() {
                return;
            }
        }
        cursor = latest;
        tokio::select! {
            changed = versions.changed() => if changed.is_err() { return },
            _ = tokio::time::sleep(BOOKMARK_EVERY), if request.bookmarks => {
                if lines.send(bookmark(&request, cursor, false)).await.is_err() {
                    return;
                }
            }
            _ = tokio::time::sleep_until(deadline) => {
                if request.bookmarks {
                    let _ = lines.send(bookmark(&request, cursor, false)).await;
                }
                return;
            }
            _ = async { stop.wait_for(|stopped| *stopped).await.map(|_| ()) } => return,
            _ = lines.closed() => return,
        }
    }
}
