//! A live GraphQL server for remote-schema tests: an async-graphql dynamic schema served by
//! axum on `127.0.0.1:0`, answering each POST with `schema.execute(request)` (introspection
//! included) and recording the headers it was sent.
//!
//! [`RemoteServer::start`] serves on the test's runtime, so the server lives as long as the
//! test (or until [`RemoteServer::stop`]). [`blog_newsletter`] is the newsletter service of
//! `examples/blog/`, started once per test process on its own thread, with the environment
//! variables the example names set to reach it.

#![allow(dead_code)]

use async_graphql::dynamic::{Field, FieldFuture, FieldValue, Object, Schema, TypeRef};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Json;
use std::sync::{Arc, Mutex, OnceLock};

/// A running remote GraphQL server.
pub struct RemoteServer {
    /// Its endpoint, `http://127.0.0.1:<port>/graphql`.
    pub url: String,
    /// Headers of every request received, in order.
    requests: Arc<Mutex<Vec<HeaderMap>>>,
    /// Bodies of every request received, in order.
    bodies: Arc<Mutex<Vec<serde_json::Value>>>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Clone)]
struct Shared {
    schema: Schema,
    requests: Arc<Mutex<Vec<HeaderMap>>>,
    bodies: Arc<Mutex<Vec<serde_json::Value>>>,
}

/// Any body that is a GraphQL request, whatever its content type.
async fn graphql(State(shared): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    shared.requests.lock().unwrap().push(headers);
    if let Ok(value) = serde_json::from_slice(&body) {
        shared.bodies.lock().unwrap().push(value);
    }
    match serde_json::from_slice::<async_graphql::Request>(&body) {
        Ok(request) => {
            let document = request.query.clone();
            let response = shared.schema.execute(request).await;
            let mut answer = serde_json::to_value(&response).unwrap_or_default();
            add_error_paths(&document, &mut answer);
            Json(answer).into_response()
        }
        Err(e) => (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    }
}

/// Gives each error of a resolver the `path` GraphQL servers such as graphql-js report (the
/// dynamic schema leaves it out), for the documents these tests send: the field at the error's
/// location, under the nearest alias before it.
fn add_error_paths(document: &str, answer: &mut serde_json::Value) {
    let Some(errors) = answer.get_mut("errors").and_then(|e| e.as_array_mut()) else {
        return;
    };
    for error in errors {
        if error.get("path").is_some() {
            continue;
        }
        let (Some(line), Some(column)) = (
            error["locations"][0]["line"].as_u64(),
            error["locations"][0]["column"].as_u64(),
        ) else {
            continue;
        };
        let Some(text) = document.lines().nth(line as usize - 1) else {
            continue;
        };
        let at = (column as usize - 1).min(text.len());
        let field: String = text[at..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let before = &text[..at];
        // The nearest `<alias>:` before it whose next token is a field, not an argument
        // value: an alias is followed by a name and then `(` or `{`.
        let alias = before
            .match_indices(':')
            .map(|(colon, _)| colon)
            .rev()
            .find_map(|colon| {
                let start = before[..colon]
                    .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .map_or(0, |i| i + 1);
                let word = &before[start..colon];
                let after = before[colon + 1..].trim_start();
                let next_is_field = after
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
                    .is_some_and(|w| w.chars().next().is_some_and(char::is_alphabetic));
                (!word.is_empty() && next_is_field && !after.starts_with(char::is_numeric))
                    .then(|| word.to_owned())
            });
        let mut path = Vec::new();
        if let Some(alias) = alias {
            path.push(serde_json::Value::from(alias));
        }
        path.push(serde_json::Value::from(field));
        error["path"] = serde_json::Value::from(path);
    }
}

impl RemoteServer {
    /// Serves `schema` on a free loopback port.
    pub async fn start(schema: Schema) -> RemoteServer {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let router = axum::Router::new()
            .route("/graphql", post(graphql))
            .with_state(Shared {
                schema,
                requests: requests.clone(),
                bodies: bodies.clone(),
            });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/graphql", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, router).await.unwrap();
        });
        RemoteServer {
            url,
            requests,
            bodies,
            task,
        }
    }

    /// The bodies of every request received so far.
    pub fn bodies(&self) -> Vec<serde_json::Value> {
        self.bodies.lock().unwrap().clone()
    }

    /// The headers of every request received so far.
    pub fn headers(&self) -> Vec<HeaderMap> {
        self.requests.lock().unwrap().clone()
    }

    /// Stops serving: connections to [`RemoteServer::url`] are refused once this returns.
    pub async fn stop(&mut self) {
        self.task.abort();
        let _ = (&mut self.task).await;
    }
}

impl Drop for RemoteServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The subscribers [`newsletter_schema`] answers with.
pub const SUBSCRIBERS: [&str; 2] = ["ann@example.com", "bob@example.com"];

/// `type Query { subscribers: [Subscriber!]!, subscriberCount: Int! }` with
/// `type Subscriber { email: String! }`: a newsletter service.
pub fn newsletter_schema() -> Schema {
    let subscriber = Object::new("Subscriber").field(Field::new(
        "email",
        TypeRef::named_nn(TypeRef::STRING),
        |ctx| {
            FieldFuture::new(async move {
                let email = ctx.parent_value.try_downcast_ref::<String>()?;
                Ok(Some(FieldValue::value(email.clone())))
            })
        },
    ));
    let query = Object::new("Query")
        .field(Field::new(
            "subscribers",
            TypeRef::named_nn_list_nn("Subscriber"),
            |_| {
                FieldFuture::new(async move {
                    Ok(Some(FieldValue::list(
                        SUBSCRIBERS
                            .iter()
                            .map(|e| FieldValue::owned_any(e.to_string())),
                    )))
                })
            },
        ))
        .field(Field::new(
            "subscriberCount",
            TypeRef::named_nn(TypeRef::INT),
            |_| {
                FieldFuture::new(
                    async move { Ok(Some(FieldValue::value(SUBSCRIBERS.len() as i32))) },
                )
            },
        ));
    Schema::build("Query", None, None)
        .register(subscriber)
        .register(query)
        .finish()
        .expect("the newsletter schema is valid")
}

/// The variable `examples/blog/remote-schema-newsletter.yaml` reads the URL from.
pub const NEWSLETTER_URL_ENV: &str = "NEWSLETTER_GRAPHQL_URL";
/// The variable that example reads its `Authorization` header from.
pub const NEWSLETTER_TOKEN_ENV: &str = "NEWSLETTER_API_TOKEN";
/// The token [`blog_newsletter`] puts there.
pub const NEWSLETTER_TOKEN: &str = "Bearer newsletter-test-token";

/// The blog example's newsletter service, shared by the whole test process (see
/// [`serve_for_process`]), with [`NEWSLETTER_URL_ENV`] and [`NEWSLETTER_TOKEN_ENV`] set for the
/// engine, the controller and `basalt` child processes alike. Returns its URL.
pub fn blog_newsletter() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    let url = serve_for_process(&URL, "blog-newsletter", newsletter_schema);
    std::env::set_var(NEWSLETTER_TOKEN_ENV, NEWSLETTER_TOKEN);
    std::env::set_var(NEWSLETTER_URL_ENV, url);
    url
}

/// `schema` served once per test process, on a thread and runtime of its own (so it outlives
/// every test's runtime), its URL kept in `cell`.
pub fn serve_for_process(
    cell: &'static OnceLock<String>,
    name: &str,
    schema: fn() -> Schema,
) -> &'static str {
    cell.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.block_on(async move {
                    let server = RemoteServer::start(schema()).await;
                    tx.send(server.url.clone()).unwrap();
                    // Serves until the process ends.
                    std::future::pending::<()>().await;
                    drop(server);
                });
            })
            .unwrap();
        rx.recv().expect("the server starts")
    })
}

#[tokio::test]
async fn the_remote_server_answers_queries_and_introspection() {
    let mut server = RemoteServer::start(newsletter_schema()).await;
    let http = reqwest::Client::new();
    let answer: serde_json::Value = http
        .post(&server.url)
        .header("Authorization", "Bearer t")
        .json(&serde_json::json!({"query": "{ subscriberCount subscribers { email } }"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        answer,
        serde_json::json!({"data": {"subscriberCount": 2, "subscribers": [
            {"email": "ann@example.com"}, {"email": "bob@example.com"}]}})
    );
    let types: serde_json::Value = http
        .post(&server.url)
        .json(&serde_json::json!({"query": "{ __schema { queryType { name } types { name } } }"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(types["data"]["__schema"]["queryType"]["name"], "Query");
    assert!(types["data"]["__schema"]["types"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "Subscriber"));
    assert_eq!(server.headers()[0]["authorization"], "Bearer t");
    server.stop().await;
    assert!(http.post(&server.url).send().await.is_err(), "stopped");
}
