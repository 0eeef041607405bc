//! The WebSocket transport of `/v1/graphql`: `graphql-transport-ws` (the `graphql-ws` npm
//! package) and `graphql-ws` (Apollo's `subscriptions-transport-ws`, also chosen when the
//! client names no subprotocol). Authentication runs once, at `connection_init`, on the
//! upgrade headers plus `payload.headers`; queries and mutations answer once, subscriptions
//! join [`crate::live`]. Every socket is bounded: a connection limit (HTTP 503), an operation
//! limit, and an outgoing queue that closes a client too slow to read it (1008); each start
//! counts against its role's rate limit, and a refused one gets an `error` message. See
//! `docs/graphql.md`, "Subscriptions", for the messages and close codes.

use super::error::graphql_errors;
use crate::engine::{self, GraphqlError, GraphqlRequest, SocketOperation};
use crate::live::{Deliver, LiveEvent, LiveQueries};
use crate::session::Session;
use crate::state::AppState;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::task::JoinHandle;

/// The two subprotocols.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    /// `graphql-transport-ws`.
    TransportWs,
    /// `graphql-ws` (Apollo), or no subprotocol.
    Apollo,
}

impl Protocol {
    fn name(self) -> &'static str {
        match self {
            Protocol::TransportWs => "graphql-transport-ws",
            Protocol::Apollo => "graphql-ws",
        }
    }
}

/// Upgrade-request headers that describe the socket, not the caller.
const TRANSPORT_HEADERS: [&str; 6] = [
    "sec-websocket-key",
    "sec-websocket-version",
    "sec-websocket-protocol",
    "sec-websocket-extensions",
    "upgrade",
    "connection",
];

/// Whether a request asks for a WebSocket.
pub fn is_upgrade(headers: &HeaderMap) -> bool {
    headers
        .get(axum::http::header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// `GET /v1/graphql` with `Upgrade: websocket`. `ip` is the client's address as the rate limit reads it, taken from the upgrade request
/// (never from `connection_init`, whose headers the client writes as it likes).
pub async fn upgrade(
    state: AppState,
    live: Arc<LiveQueries>,
    mut parts: Parts,
    ip: Option<IpAddr>,
) -> Response {
    let ws = match WebSocketUpgrade::from_request_parts(&mut parts, &state).await {
        Ok(ws) => ws,
        Err(rejection) => return rejection.into_response(),
    };
    let Some(permit) = live.open_socket() else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "too many WebSocket connections",
        )
            .into_response();
    };
    let protocol = if ws
        .requested_protocols()
        .any(|p| p.as_bytes() == b"graphql-transport-ws")
    {
        Protocol::TransportWs
    } else {
        Protocol::Apollo
    };
    let mut headers = parts.headers;
    for name in TRANSPORT_HEADERS {
        headers.remove(name);
    }
    // Kept for the socket's lifetime (authentication at init, then remote schemas), so copied
    // out of the request: hyper's header values are slices of its read buffer (8–16 KiB), which
    // would otherwise stay allocated for as long as the socket is open.
    let headers = owned(&headers);
    let max_message = state.config.max_body_bytes;
    // Small buffers: an idle subscriber's socket should cost kilobytes, not the library's
    // 128 KiB defaults; they grow for large messages.
    ws.protocols([protocol.name()])
        .read_buffer_size(2 * 1024)
        .write_buffer_size(0)
        .max_message_size(max_message)
        .on_upgrade(move |socket| async move {
            let (connection, outgoing) = Connection::new(state, live, protocol, headers, ip);
            connection.run(socket, outgoing).await;
            drop(permit);
        })
}

/// A close code and reason.
type Close = (u16, String);

/// The outgoing queue of a socket: bounded; a full queue marks the client too slow.
#[derive(Clone)]
struct Outbox {
    tx: mpsc::Sender<Message>,
    slow: Arc<Notify>,
}

impl Outbox {
    /// Queues a text message; `false` when the socket is gone or the client too slow.
    fn send(&self, text: String) -> bool {
        match self.tx.try_send(Message::Text(Utf8Bytes::from(text))) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.slow.notify_one();
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }
}

/// Where `connection_init` stands.
enum Init {
    Waiting,
    Ready(Session),
    /// Apollo keeps a socket whose init failed open; its starts are refused with the reason.
    Failed(String),
}

/// One socket.
struct Connection {
    state: AppState,
    live: Arc<LiveQueries>,
    protocol: Protocol,
    headers: HeaderMap,
    /// The client's address, for rate limits keyed on it.
    ip: Option<IpAddr>,
    out: Outbox,
    init: Init,
    /// Running operations by id; stopping one aborts its task (and drops its subscription).
    operations: HashMap<String, JoinHandle<()>>,
    /// Operations that ended on their own (answered, failed, or ended by a metadata change).
    done_tx: mpsc::UnboundedSender<String>,
    done_rx: mpsc::UnboundedReceiver<String>,
}

impl Connection {
    /// A connection, and the receiving end of its outgoing queue (drained by the writer).
    fn new(
        state: AppState,
        live: Arc<LiveQueries>,
        protocol: Protocol,
        headers: HeaderMap,
        ip: Option<IpAddr>,
    ) -> (Self, mpsc::Receiver<Message>) {
        let (tx, rx) = mpsc::channel(state.config.live.max_queued_messages.max(1));
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        let connection = Connection {
            state,
            live,
            protocol,
            headers,
            ip,
            out: Outbox {
                tx,
                slow: Arc::new(Notify::new()),
            },
            init: Init::Waiting,
            operations: HashMap::new(),
            done_tx,
            done_rx,
        };
        (connection, rx)
    }

    async fn run(mut self, socket: WebSocket, mut outgoing: mpsc::Receiver<Message>) {
        let (mut sink, mut stream) = socket.split();
        let (close_tx, mut close_rx) = oneshot::channel::<Option<CloseFrame>>();
        let writer = tokio::spawn(async move {
            loop {
                tokio::select! {
                    biased;
                    frame = &mut close_rx => {
                        let frame = frame.ok().flatten();
                        let send = sink.send(Message::Close(frame));
                        // A slow client may still drain what is queued and read the reason.
                        let _ = tokio::time::timeout(Duration::from_secs(5), send).await;
                        break;
                    }
                    message = outgoing.recv() => match message {
                        Some(m) => if sink.send(m).await.is_err() { break },
                        None => break,
                    },
                }
            }
        });
        let live = &self.state.config.live;
        let period = Duration::from_secs(live.keepalive_seconds.max(1));
        let mut keepalive = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        let init_deadline = tokio::time::sleep(Duration::from_secs(live.init_timeout_seconds));
        tokio::pin!(init_deadline);
        let mut closing = self.live.closing();
        let slow = self.out.slow.clone();
        let close: Option<Close> = loop {
            let expiry = match &self.init {
                Init::Ready(Session {
                    expires: Some(at), ..
                }) => Some(tokio::time::Instant::from_std(*at)),
                _ => None,
            };
            let waiting = matches!(self.init, Init::Waiting);
            tokio::select! {
                // Finished operations first: their final message may already have made the
                // client reuse the id.
                biased;
                Some(id) = self.done_rx.recv() => {
                    self.operations.remove(&id);
                }
                message = stream.next() => match message {
                    Some(Ok(Message::Text(text))) => {
                        // Boxed: authentication's futures are large, and an idle socket should
                        // not carry their space.
                        if let Some(close) = Box::pin(self.on_message(text.as_str())).await {
                            break Some(close);
                        }
                    }
                    Some(Ok(Message::Binary(bytes))) => {
                        let text = String::from_utf8_lossy(&bytes).into_owned();
                        if let Some(close) = Box::pin(self.on_message(&text)).await {
                            break Some(close);
                        }
                    }
                    Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break None,
                    Some(Ok(_)) => {} // ping/pong frames: answered by the library
                },
                _ = keepalive.tick(), if !waiting => self.keepalive(),
                _ = &mut init_deadline, if waiting && self.protocol == Protocol::TransportWs => {
                    break Some((4408, "Connection initialisation timeout".to_owned()));
                }
                _ = sleep_until(expiry), if expiry.is_some() => {
                    break Some((4403, "session expired".to_owned()));
                }
                _ = slow.notified() => break Some((1008, "client too slow".to_owned())),
                _ = shutting_down(&mut closing) => {
                    break Some((1001, "server shutting down".to_owned()));
                }
            }
        };
        for (_, task) in self.operations.drain() {
            task.abort();
        }
        let frame = close.map(|(code, reason)| CloseFrame {
            code,
            reason: Utf8Bytes::from(truncate(reason)),
        });
        let _ = close_tx.send(frame);
        let _ = writer.await;
    }

    fn send(&self, message: Value) {
        self.out.send(message.to_string());
    }

    fn keepalive(&self) {
        match self.protocol {
            Protocol::Apollo => self.send(json!({"type": "ka"})),
            Protocol::TransportWs => {
                self.send(json!({"type": "ping", "payload": {"message": "keepalive"}}))
            }
        }
    }

    /// Handles one client message; `Some` closes the socket.
    async fn on_message(&mut self, text: &str) -> Option<Close> {
        let message: Value = match serde_json::from_str(text) {
            Ok(Value::Object(m)) => Value::Object(m),
            Ok(_) => return self.unparseable("expected a JSON object"),
            Err(e) => return self.unparseable(&e.to_string()),
        };
        let kind = message.get("type").and_then(Value::as_str).unwrap_or("");
        let id = message.get("id").and_then(Value::as_str).map(str::to_owned);
        let payload = message.get("payload").cloned().unwrap_or(Value::Null);
        match (self.protocol, kind) {
            (_, "connection_init") => self.connection_init(&payload).await,
            (Protocol::TransportWs, "ping") => {
                let mut pong = json!({"type": "pong"});
                if !payload.is_null() {
                    pong["payload"] = payload;
                }
                self.send(pong);
                None
            }
            (Protocol::TransportWs, "pong") => None,
            (Protocol::TransportWs, "subscribe") => {
                let Some(id) = id else {
                    return self.unparseable("subscribe without an id");
                };
                let Init::Ready(session) = &self.init else {
                    return Some((4401, "Unauthorized".to_owned()));
                };
                if self.operations.contains_key(&id) {
                    return Some((4409, format!("4409: Subscriber for {id} already exists")));
                }
                let session = session.clone();
                self.start(id, payload, session);
                None
            }
            (Protocol::Apollo, "start") => {
                let Some(id) = id else {
                    return self.unparseable("start without an id");
                };
                let refusal = match &self.init {
                    Init::Waiting => {
                        Some("start received before the connection is initialised".to_owned())
                    }
                    Init::Failed(reason) => Some(format!(
                        "cannot start as connection_init failed with : {reason}"
                    )),
                    Init::Ready(_) if self.operations.contains_key(&id) => {
                        Some(format!("an operation already exists with this id: {id}"))
                    }
                    Init::Ready(_) => None,
                };
                match (refusal, &self.init) {
                    (Some(reason), _) => self.refuse(&id, &reason),
                    (None, Init::Ready(session)) => {
                        let session = session.clone();
                        self.start(id, payload, session);
                    }
                    (None, _) => {}
                }
                None
            }
            (_, "complete") | (Protocol::Apollo, "stop") => {
                if let Some(task) = id.and_then(|id| self.operations.remove(&id)) {
                    task.abort();
                }
                None
            }
            (Protocol::Apollo, "connection_terminate") => Some((1000, String::new())),
            (_, other) => self.unparseable(&format!("unknown message type \"{other}\"")),
        }
    }

    /// A frame that is not a message of the protocol.
    fn unparseable(&self, reason: &str) -> Option<Close> {
        match self.protocol {
            Protocol::TransportWs => Some((
                4400,
                format!("4400: Parsing client message failed: {reason}"),
            )),
            Protocol::Apollo => {
                self.send(json!({"type": "connection_error",
                    "payload": format!("parsing ClientMessage failed: {reason}")}));
                None
            }
        }
    }

    async fn connection_init(&mut self, payload: &Value) -> Option<Close> {
        if !matches!(self.init, Init::Waiting) {
            return match self.protocol {
                Protocol::TransportWs => {
                    Some((4429, "Too many initialisation requests".to_owned()))
                }
                Protocol::Apollo => None,
            };
        }
        // From here on, the client's headers are the upgrade headers with the payload's on
        // top: what authentication saw, and what remote schemas may be forwarded.
        let headers = merged_headers(&std::mem::take(&mut self.headers), payload);
        match self.state.auth.authenticate(&headers, None).await {
            Ok(session) => {
                self.headers = headers;
                self.init = Init::Ready(session);
                self.send(json!({"type": "connection_ack"}));
                if self.protocol == Protocol::Apollo {
                    self.keepalive();
                }
                None
            }
            Err(err) => match self.protocol {
                Protocol::TransportWs => Some((4403, "4403: Forbidden".to_owned())),
                Protocol::Apollo => {
                    let reason = err.to_string();
                    self.send(json!({"type": "connection_error", "payload": reason}));
                    self.init = Init::Failed(reason);
                    None
                }
            },
        }
    }

    /// A start refused before anything ran (`start-failed`).
    fn refuse(&self, id: &str, message: &str) {
        let errors =
            json!([{"message": message, "extensions": {"path": "$", "code": "start-failed"}}]);
        self.refuse_with(id, errors);
    }

    /// Ends operation `id` before it starts with `errors` (an `error` message, then, in the
    /// Apollo protocol, `complete`).
    fn refuse_with(&self, id: &str, errors: Value) {
        self.send(error_message(self.protocol, id, errors));
        if self.protocol == Protocol::Apollo {
            self.send(json!({"type": "complete", "id": id}));
        }
    }

    /// Starts an operation in its own task, once the rate limit of the session's role (if
    /// any) has counted it.
    fn start(&mut self, id: String, payload: Value, session: Session) {
        let limit = self.state.config.live.max_operations;
        if self.operations.len() >= limit {
            let message = format!("too many operations on this connection (at most {limit})");
            self.refuse(&id, &message);
            return;
        }
        let version = self.state.engine.current();
        let rate = super::limits::admit(&self.state, &version, &[&session], self.ip);
        if let Some(err) = rate.and_then(super::limits::refusal) {
            self.refuse_with(&id, graphql_errors(&err, false));
            return;
        }
        let request: GraphqlRequest = match serde_json::from_value(payload) {
            Ok(r) => r,
            Err(e) => {
                let err = GraphqlError::InvalidRequest(e.to_string());
                self.refuse_with(&id, graphql_errors(&err, false));
                return;
            }
        };
        let operation = Operation {
            state: self.state.clone(),
            live: self.live.clone(),
            protocol: self.protocol,
            id: id.clone(),
            out: self.out.clone(),
            done: self.done_tx.clone(),
            expose: session.is_admin() || self.state.config.dev_mode,
            headers: self.headers.clone(),
        };
        let task = tokio::spawn(operation.run(session, request));
        self.operations.insert(id, task);
    }
}

/// One operation of a socket.
struct Operation {
    state: AppState,
    live: Arc<LiveQueries>,
    protocol: Protocol,
    id: String,
    out: Outbox,
    done: mpsc::UnboundedSender<String>,
    /// Errors carry `internal` details (admin or dev mode).
    expose: bool,
    /// The client's headers (for remote schemas that forward them).
    headers: HeaderMap,
}

impl Operation {
    async fn run(self, session: Session, request: GraphqlRequest) {
        // Boxed, so a subscription waiting for its stop holds only its handle.
        let caller = engine::Caller {
            session: &session,
            headers: &self.headers,
        };
        let outcome = Box::pin(self.state.engine.run_socket(caller, request.clone())).await;
        let execution = match outcome {
            Ok(SocketOperation::Once(body)) => {
                self.out.send(data_message(self.protocol, &self.id, &body));
                self.complete();
                return;
            }
            Ok(SocketOperation::Subscribe(execution)) => execution,
            Err(err) => return self.failed(&err),
        };
        let deliver = self.deliver();
        match self.live.subscribe(&execution, session, request, deliver) {
            Ok(_subscription) => {
                drop(execution);
                // Held until the client stops the operation (the task is aborted) or the
                // socket closes.
                std::future::pending::<()>().await;
            }
            Err(err) => self.failed(&err),
        }
    }

    /// A failure before or while running: Apollo answers execution errors as `data`.
    fn failed(&self, err: &GraphqlError) {
        let errors = graphql_errors(err, self.expose);
        let execution = matches!(
            err,
            GraphqlError::Execute { .. } | GraphqlError::TimeLimit { .. }
        );
        if self.protocol == Protocol::Apollo && execution {
            let body = json!({"errors": errors}).to_string();
            self.out
                .send(data_message(self.protocol, &self.id, body.as_bytes()));
            self.complete();
            return;
        }
        let error = error_message(self.protocol, &self.id, errors).to_string();
        finish(self.protocol, &self.id, &self.out, &self.done, Some(error));
    }

    fn complete(&self) {
        finish(self.protocol, &self.id, &self.out, &self.done, None);
    }

    /// How the live query reaches this operation's client.
    fn deliver(&self) -> Deliver {
        let (protocol, id, out, done, expose) = (
            self.protocol,
            self.id.clone(),
            self.out.clone(),
            self.done.clone(),
            self.expose,
        );
        Arc::new(move |event| match event {
            LiveEvent::Data(body) => out.send(data_message(protocol, &id, &body)),
            // A poll that failed (the database down for a moment): reported in the result, and
            // the subscription goes on; the next poll may succeed.
            LiveEvent::Error(err) => {
                let body = json!({"errors": graphql_errors(&err, expose)}).to_string();
                out.send(data_message(protocol, &id, body.as_bytes()))
            }
            // A stream that failed: on `graphql-ws` it goes on (its cursor has not moved), on
            // `graphql-transport-ws` the operation ends with the error.
            LiveEvent::StreamError(err) if protocol == Protocol::Apollo => {
                let body = json!({"errors": graphql_errors(&err, expose)}).to_string();
                out.send(data_message(protocol, &id, body.as_bytes()))
            }
            LiveEvent::Ended(err) | LiveEvent::StreamError(err) => {
                let error = error_message(protocol, &id, graphql_errors(&err, expose));
                finish(protocol, &id, &out, &done, Some(error.to_string()));
                false
            }
        })
    }
}

/// Ends an operation: frees its id, then sends `last` (an `error`, if any) and `complete`
/// (always after a result; after an error only on Apollo). The connection learns the id is free
/// before the client can see the final message, so a client that reuses the id at once is not
/// refused.
fn finish(
    protocol: Protocol,
    id: &str,
    out: &Outbox,
    done: &mpsc::UnboundedSender<String>,
    last: Option<String>,
) {
    let _ = done.send(id.to_owned());
    let errored = last.is_some();
    if let Some(last) = last {
        out.send(last);
    }
    if !errored || protocol == Protocol::Apollo {
        out.send(json!({"type": "complete", "id": id}).to_string());
    }
}

/// A result message: the response body spliced in as it is.
fn data_message(protocol: Protocol, id: &str, body: &[u8]) -> String {
    let kind = match protocol {
        Protocol::TransportWs => "next",
        Protocol::Apollo => "data",
    };
    let mut text = format!(
        "{{\"type\":\"{kind}\",\"id\":{},\"payload\":",
        Value::String(id.to_owned())
    );
    text.push_str(&String::from_utf8_lossy(body));
    text.push('}');
    text
}

/// An `error` message: the errors array (`graphql-transport-ws`) or `{"errors": …}` (Apollo).
fn error_message(protocol: Protocol, id: &str, errors: Value) -> Value {
    let payload = match protocol {
        Protocol::TransportWs => errors,
        Protocol::Apollo => json!({ "errors": errors }),
    };
    json!({"type": "error", "id": id, "payload": payload})
}

/// A copy of `headers` that shares no memory with the request they came from.
fn owned(headers: &HeaderMap) -> HeaderMap {
    let mut copy = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_str().as_bytes()),
            HeaderValue::from_bytes(value.as_bytes()),
        ) else {
            continue;
        };
        copy.append(name, value);
    }
    copy
}

/// The upgrade request's headers with `payload.headers` on top (the payload wins).
fn merged_headers(upgrade: &HeaderMap, payload: &Value) -> HeaderMap {
    let mut headers = upgrade.clone();
    if let Some(Value::Object(given)) = payload.get("headers") {
        for (name, value) in given {
            let text = value
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| value.to_string());
            let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes()),
                HeaderValue::from_str(&text),
            ) else {
                continue;
            };
            headers.insert(name, value);
        }
    }
    headers
}

/// Resolves when the server starts shutting down.
async fn shutting_down(closing: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = closing.wait_for(|c| *c).await.map(|_| ());
}

/// Sleeps until `at` (forever when `None`; the caller guards the branch).
async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A close reason fits in 123 bytes.
fn truncate(mut reason: String) -> String {
    if reason.len() > 123 {
        let mut end = 123;
        while !reason.is_char_boundary(end) {
            end -= 1;
        }
        reason.truncate(end);
    }
    reason
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_headers_override_upgrade_headers() {
        let mut upgrade = HeaderMap::new();
        upgrade.insert("x-svc-role", HeaderValue::from_static("user"));
        upgrade.insert("x-svc-user-id", HeaderValue::from_static("1"));
        let merged = merged_headers(
            &upgrade,
            &json!({"headers": {"X-Svc-Role": "editor", "Authorization": "Bearer t", "bad name": "x"}}),
        );
        assert_eq!(merged["x-svc-role"], "editor");
        assert_eq!(merged["x-svc-user-id"], "1");
        assert_eq!(merged["authorization"], "Bearer t");
        assert_eq!(merged.len(), 3);
    }

    /// The copy keeps every value (repeated names included) and none of the request's memory.
    #[test]
    fn owned_headers_share_nothing_with_the_request() {
        let buffer = bytes::Bytes::from(b"GET / HTTP/1.1 ... Bearer t0ken ... a ... b".to_vec());
        let slice = |text: &str| {
            let at = buffer
                .windows(text.len())
                .position(|w| w == text.as_bytes())
                .unwrap_or_default();
            HeaderValue::from_maybe_shared(buffer.slice(at..at + text.len()))
                .unwrap_or_else(|_| HeaderValue::from_static(""))
        };
        let mut request = HeaderMap::new();
        request.insert("authorization", slice("Bearer t0ken"));
        request.append("x-list", slice("a"));
        request.append("x-list", slice("b"));
        let copy = owned(&request);
        assert_eq!(copy, request);
        assert_eq!(copy.get_all("x-list").iter().count(), 2);
        let within = |v: &HeaderValue| {
            let p = v.as_bytes().as_ptr() as usize;
            let start = buffer.as_ptr() as usize;
            (start..start + buffer.len()).contains(&p)
        };
        assert!(
            request.values().all(within),
            "the test's values are slices of the request"
        );
        assert!(!copy.values().any(within), "the copy holds its own bytes");
    }

    #[test]
    fn messages_splice_the_body_and_quote_the_id() {
        let text = data_message(Protocol::TransportWs, "a\"b", br#"{"data":{"x":1}}"#);
        let parsed: Value = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(
            parsed,
            json!({"type": "next", "id": "a\"b", "payload": {"data": {"x": 1}}})
        );
        assert_eq!(
            error_message(Protocol::Apollo, "1", json!([{"message": "m"}])),
            json!({"type": "error", "id": "1", "payload": {"errors": [{"message": "m"}]}})
        );
        assert_eq!(truncate("é".repeat(100)).len(), 122);
    }
}
