//! Remote schemas through the HTTP API, against real local GraphQL servers (async-graphql
//! dynamic schemas served by axum): the operations and their errors, the merged schema
//! (introspection checked by graphql-js), execution with aliases, fragments and variables
//! forwarded, headers, remote errors and failures, timeouts, reloads, and a replica starting
//! while the remote is down.

pub(crate) mod remote_server;

use crate::auth::serve;
use crate::harness::TestServer;
use crate::http::front::Front;
use async_graphql::dynamic::{
    Enum, Field, FieldFuture, FieldValue, InputObject, InputValue, Interface, InterfaceField,
    Object, Schema, TypeRef, Union,
};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How a [`Geo`] server answers.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// As a GraphQL server does.
    Normal,
    /// After this long.
    Slow(Duration),
    /// With this status and a non-GraphQL body.
    Status(u16),
}

/// A geography GraphQL service: countries and cities, an interface, a union, an enum, an
/// input object, a mutation, a field that fails, and one that echoes a request header.
#[derive(Clone)]
struct Geo {
    schema: Arc<Mutex<Schema>>,
    mode: Arc<Mutex<Mode>>,
    /// `(headers, body)` of every request, in arrival order.
    received: Arc<Mutex<Vec<(HeaderMap, Value)>>>,
    url: String,
}

fn countries() -> Vec<Value> {
    vec![
        json!({"code": "FR", "name": "France", "continent": "EUROPE"}),
        json!({"code": "JP", "name": "Japan", "continent": "ASIA"}),
    ]
}

/// The country with this code.
fn country_by_code(code: &str) -> Option<Value> {
    countries().into_iter().find(|c| c["code"] == code)
}

/// A field reading `key` of its parent JSON object.
fn prop(name: &str, ty: TypeRef) -> Field {
    let key = name.to_owned();
    Field::new(name, ty, move |ctx| {
        let key = key.clone();
        FieldFuture::new(async move {
            let parent = ctx.parent_value.try_downcast_ref::<Value>()?;
            Ok(parent.get(&key).cloned().and_then(|v| {
                async_graphql::Value::from_json(v)
                    .ok()
                    .map(FieldValue::value)
            }))
        })
    })
}

fn continent_prop() -> Field {
    Field::new("continent", TypeRef::named_nn("Continent"), |ctx| {
        FieldFuture::new(async move {
            let parent = ctx.parent_value.try_downcast_ref::<Value>()?;
            let name = parent["continent"].as_str().unwrap_or_default().to_owned();
            Ok(Some(FieldValue::value(async_graphql::Value::Enum(
                async_graphql::Name::new(name),
            ))))
        })
    })
}

/// The service's schema; `v2` adds `capital` to the query root.
fn geo_schema(v2: bool) -> Schema {
    let node =
        Interface::new("Node").field(InterfaceField::new("code", TypeRef::named_nn(TypeRef::ID)));
    let country = Object::new("Country")
        .implement("Node")
        .field(prop("code", TypeRef::named_nn(TypeRef::ID)))
        .field(prop("name", TypeRef::named_nn(TypeRef::STRING)))
        .field(continent_prop());
    let city = Object::new("City")
        .implement("Node")
        .field(prop("code", TypeRef::named_nn(TypeRef::ID)))
        .field(prop("name", TypeRef::named_nn(TypeRef::STRING)))
        .field(prop("population", TypeRef::named(TypeRef::INT)));
    let search = Union::new("SearchResult")
        .possible_type("Country")
        .possible_type("City");
    let continent = Enum::new("Continent").item("EUROPE").item("ASIA");
    let filter = InputObject::new("CountryFilter")
        .field(InputValue::new("continent", TypeRef::named("Continent")));
    let mut query = Object::new("Query")
        .field(
            Field::new("country", TypeRef::named("Country"), |ctx| {
                FieldFuture::new(async move {
                    let code = ctx.args.try_get("code")?.string()?;
                    Ok(country_by_code(code).map(FieldValue::owned_any))
                })
            })
            .argument(InputValue::new("code", TypeRef::named_nn(TypeRef::ID))),
        )
        .field(
            Field::new("countries", TypeRef::named_nn_list_nn("Country"), |ctx| {
                FieldFuture::new(async move {
                    let continent = match ctx.args.get("filter") {
                        Some(f) => f
                            .object()?
                            .get("continent")
                            .map(|c| c.enum_name().map(str::to_owned))
                            .transpose()?,
                        None => None,
                    };
                    let first = ctx
                        .args
                        .get("first")
                        .map(|f| f.i64())
                        .transpose()?
                        .unwrap_or(10);
                    let list: Vec<FieldValue> = countries()
                        .into_iter()
                        .filter(|c| continent.as_deref().is_none_or(|k| c["continent"] == k))
                        .take(first as usize)
                        .map(FieldValue::owned_any)
                        .collect();
                    Ok(Some(FieldValue::list(list)))
                })
            })
            .argument(InputValue::new("filter", TypeRef::named("CountryFilter")))
            .argument(
                InputValue::new("first", TypeRef::named(TypeRef::INT))
                    .default_value(async_graphql::Value::from(10)),
            ),
        )
        .field(Field::new(
            "search",
            TypeRef::named_nn_list_nn("SearchResult"),
            |_| {
                FieldFuture::new(async move {
                    Ok(Some(FieldValue::list([
                        FieldValue::owned_any(countries()[0].clone()).with_type("Country"),
                        FieldValue::owned_any(
                            json!({"code": "OSA", "name": "Osaka", "population": 2_700_000}),
                        )
                        .with_type("City"),
                    ])))
                })
            },
        ))
        .field(
            Field::new("node", TypeRef::named("Node"), |ctx| {
                FieldFuture::new(async move {
                    let code = ctx.args.try_get("code")?.string()?;
                    Ok(
                        country_by_code(code)
                            .map(|c| FieldValue::owned_any(c).with_type("Country")),
                    )
                })
            })
            .argument(InputValue::new("code", TypeRef::named_nn(TypeRef::ID))),
        )
        .field(
            Field::new("header", TypeRef::named(TypeRef::STRING), |ctx| {
                FieldFuture::new(async move {
                    let name = ctx.args.try_get("name")?.string()?.to_owned();
                    let headers = ctx.data::<HeaderMap>()?;
                    Ok(headers
                        .get(name.as_str())
                        .and_then(|v| v.to_str().ok())
                        .map(|v| FieldValue::value(v.to_owned())))
                })
            })
            .argument(InputValue::new("name", TypeRef::named_nn(TypeRef::STRING))),
        )
        .field(Field::new("fails", TypeRef::named(TypeRef::STRING), |_| {
            FieldFuture::new(async move {
                Err::<Option<FieldValue>, _>(async_graphql::Error::new("the geo service is sad"))
            })
        }));
    if v2 {
        query = query.field(Field::new(
            "capital",
            TypeRef::named(TypeRef::STRING),
            |_| FieldFuture::new(async move { Ok(Some(FieldValue::value("Paris"))) }),
        ));
    }
    let mutation = Object::new("Mutation").field(
        Field::new("addCountry", TypeRef::named_nn("Country"), |ctx| {
            FieldFuture::new(async move {
                let code = ctx.args.try_get("code")?.string()?.to_owned();
                let name = ctx.args.try_get("name")?.string()?.to_owned();
                Ok(Some(FieldValue::owned_any(
                    json!({"code": code, "name": name, "continent": "EUROPE"}),
                )))
            })
        })
        .argument(InputValue::new("code", TypeRef::named_nn(TypeRef::ID)))
        .argument(InputValue::new("name", TypeRef::named_nn(TypeRef::STRING))),
    );
    Schema::build("Query", Some("Mutation"), None)
        .register(node)
        .register(country)
        .register(city)
        .register(search)
        .register(continent)
        .register(filter)
        .register(query)
        .register(mutation)
        .finish()
        .expect("geo schema")
}

async fn answer(State(geo): State<Geo>, headers: HeaderMap, body: Bytes) -> Response {
    let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    geo.received.lock().unwrap().push((headers.clone(), value));
    let mode = *geo.mode.lock().unwrap();
    match mode {
        Mode::Status(status) => {
            return (StatusCode::from_u16(status).unwrap(), "not today").into_response()
        }
        Mode::Slow(delay) => tokio::time::sleep(delay).await,
        Mode::Normal => {}
    }
    let request: async_graphql::Request = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    };
    let schema = geo.schema.lock().unwrap().clone();
    let response = schema.execute(request.data(headers)).await;
    let mut response = axum::Json(response).into_response();
    response
        .headers_mut()
        .append("set-cookie", "geo=visited; Path=/".parse().unwrap());
    response
}

impl Geo {
    async fn start() -> Geo {
        let mut geo = Geo {
            schema: Arc::new(Mutex::new(geo_schema(false))),
            mode: Arc::new(Mutex::new(Mode::Normal)),
            received: Arc::default(),
            url: String::new(),
        };
        let router = Router::new()
            .route("/graphql", post(answer))
            .with_state(geo.clone());
        geo.url = format!("{}/graphql", serve(router).await);
        geo
    }

    fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    /// Requests other than introspection, in order.
    fn calls(&self) -> Vec<(HeaderMap, Value)> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, b)| !b["query"].as_str().unwrap_or_default().contains("__schema"))
            .cloned()
            .collect()
    }
}

fn add(name: &str, url: &str) -> Value {
    json!({"type": "add_remote_schema", "args": {"name": name, "definition": {"url": url}}})
}

/// A blog server with the geo service added as `geo`.
async fn blog_with_geo() -> (TestServer, Geo) {
    let geo = Geo::start().await;
    let s = TestServer::blog().await;
    s.ok(add("geo", &geo.url)).await;
    (s, geo)
}

#[tokio::test]
async fn a_variable_default_is_declared_in_the_document_sent_to_the_remote() {
    let (s, geo) = blog_with_geo().await;
    let query = r#"query Defaulted($code: ID = "JP") { country(code: $code) { name } }"#;
    let r = s.graphql_as(json!({"query": query}), &[]).await;
    assert_eq!(r, json!({"data": {"country": {"name": "Japan"}}}));
    let r = s
        .graphql_as(json!({"query": query, "variables": {"code": "FR"}}), &[])
        .await;
    assert_eq!(r, json!({"data": {"country": {"name": "France"}}}));
    let calls = geo.calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    for (_, body) in &calls {
        let document = body["query"].as_str().unwrap_or_default();
        assert!(
            document.starts_with(r#"query Defaulted($code: ID = "JP") {"#),
            "{document}"
        );
    }
}

#[tokio::test]
async fn a_mixed_query_runs_the_database_part_and_one_call_per_remote_merged_in_order() {
    let (s, geo) = blog_with_geo().await;
    let query = r#"
        query Mixed($code: ID!, $unused: Int) {
          first: country(code: $code) { ...C }
          articles: author(limit: 1, order_by: {id: asc}) { id }
          hits: search { __typename ... on City { population } ...C }
          europe: countries(filter: {continent: EUROPE}) { name continent }
          n: node(code: "JP") { code ... on Country { name } }
        }
        fragment C on Country { code name }"#;
    let r = s
        .graphql_as(
            json!({"query": query, "variables": {"code": "FR", "unused": 3}, "operationName": "Mixed"}),
            &[],
        )
        .await;
    assert_eq!(
        r,
        json!({"data": {
            "first": {"code": "FR", "name": "France"},
            "articles": [{"id": 1}],
            "hits": [{"__typename": "Country", "code": "FR", "name": "France"},
                     {"__typename": "City", "population": 2_700_000}],
            "europe": [{"name": "France", "continent": "EUROPE"}],
            "n": {"code": "JP", "name": "Japan"}
        }})
    );
    let keys: Vec<&String> = r["data"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["first", "articles", "hits", "europe", "n"]);
    let calls = geo.calls();
    assert_eq!(
        calls.len(),
        1,
        "one request for all the remote's fields: {calls:?}"
    );
    let body = &calls[0].1;
    let document = body["query"].as_str().unwrap();
    assert!(
        document.starts_with("query Mixed($code: ID!) {"),
        "{document}"
    );
    assert!(
        !document.contains("author"),
        "database fields stay here: {document}"
    );
    assert!(
        !document.contains("fragment"),
        "fragments are inlined: {document}"
    );
    assert!(
        document.contains("first: country(code: $code)"),
        "{document}"
    );
    assert_eq!(body["variables"], json!({"code": "FR"}));
    assert_eq!(body["operationName"], "Mixed");
}

#[tokio::test]
async fn remote_fields_are_validated_before_anything_is_forwarded() {
    let (s, geo) = blog_with_geo().await;
    for (query, message) in [
        (
            "{ country(code: 1.5) { code } }",
            "expected a value of type \"ID\"",
        ),
        ("{ country { code } }", "missing required field 'code'"),
        (
            "{ country(code: \"FR\") { capital } }",
            "field \"capital\" not found in type: 'Country'",
        ),
        (
            "{ countries(filter: {continent: MARS}) { code } }",
            "Continent",
        ),
        (
            "{ search { code } }",
            "field \"code\" not found in type: 'SearchResult'",
        ),
        ("{ country(code: \"FR\") }", "missing selection set"),
    ] {
        let r = s.gql(query).await;
        let error = &r["errors"][0];
        assert_eq!(
            error["extensions"]["code"], "validation-failed",
            "{query}: {r}"
        );
        assert!(
            error["message"].as_str().unwrap().contains(message),
            "{query}: {r}"
        );
    }
    assert!(geo.calls().is_empty(), "nothing invalid reaches the remote");
}

#[tokio::test]
async fn every_role_sees_the_merged_schema_and_graphql_js_accepts_it() {
    let (s, _geo) = blog_with_geo().await;
    for role in [None, Some("user"), Some("nobody")] {
        let data = crate::graphql::introspection::full_introspection(&s, role).await;
        let (ok, out, err) = crate::graphql::introspection::node(&[], Some(&data.to_string()));
        assert!(ok, "graphql-js rejects the schema of {role:?}: {err}");
        // The remote's types and the merged roots by name, as every generated type (the
        // remote lists `Country.continent` after `name`, `EUROPE` before `ASIA`, and its
        // root fields come after the tables').
        crate::graphql::introspection::assert_members_sorted(&data);
        assert!(out.contains("\"ok\":true"), "{out}");
        let types = data["__schema"]["types"].as_array().unwrap();
        let names: Vec<&str> = types.iter().filter_map(|t| t["name"].as_str()).collect();
        for expected in [
            "Country",
            "City",
            "Node",
            "SearchResult",
            "Continent",
            "CountryFilter",
        ] {
            assert!(names.contains(&expected), "{role:?} lacks {expected}");
        }
        assert!(
            !names.contains(&"Query") && !names.contains(&"Mutation"),
            "remote roots are not types here"
        );
        let root = types.iter().find(|t| t["name"] == "query_root").unwrap();
        let fields: Vec<&str> = root["fields"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f["name"].as_str())
            .collect();
        assert!(
            fields.contains(&"country") && fields.contains(&"search"),
            "{role:?}: {fields:?}"
        );
        let r = s
            .graphql_as(
                json!({"query": "{ country(code: \"JP\") { name } }"}),
                &role
                    .map(|r| vec![("X-Svc-Role", r), ("X-Svc-User-Id", "1")])
                    .unwrap_or_default(),
            )
            .await;
        assert_eq!(
            r,
            json!({"data": {"country": {"name": "Japan"}}}),
            "{role:?}"
        );
    }
}

#[tokio::test]
async fn remote_mutations_run_with_database_mutations_in_document_order() {
    let (s, geo) = blog_with_geo().await;
    let r = s
        .gql(
            r#"mutation {
            a: addCountry(code: "DE", name: "Germany") { code name }
            insert_author_one(object: {id: 900, name: "Remote Writer"}) { name }
            __typename
        }"#,
        )
        .await;
    assert_eq!(
        r,
        json!({"data": {
            "a": {"code": "DE", "name": "Germany"},
            "insert_author_one": {"name": "Remote Writer"},
            "__typename": "mutation_root"
        }})
    );
    assert!(geo.calls()[0].1["query"]
        .as_str()
        .unwrap()
        .starts_with("mutation {"));
    // A failing remote rolls the database part back and answers no data.
    geo.set(Mode::Status(500));
    let r = s
        .gql(
            r#"mutation {
            insert_author_one(object: {id: 901, name: "Never Stored"}) { name }
            addCountry(code: "IT", name: "Italy") { code }
        }"#,
        )
        .await;
    assert_eq!(
        r["errors"][0]["extensions"]["code"], "remote-schema-error",
        "{r}"
    );
    assert!(r.get("data").is_none(), "{r}");
    let stored = s
        .gql(r#"{ author(where: {name: {_eq: "Never Stored"}}) { id } }"#)
        .await;
    assert_eq!(stored, json!({"data": {"author": []}}));
}

#[tokio::test]
async fn remote_errors_and_failures_are_answered_without_partial_data() {
    let (s, geo) = blog_with_geo().await;
    let r = s.gql("{ author(limit: 1) { id } fails }").await;
    assert!(r.get("data").is_none(), "{r}");
    assert_eq!(r["errors"][0]["message"], "the geo service is sad");
    // The remote's own error object, unchanged: its locations, no code of ours.
    assert_eq!(
        r["errors"][0]["locations"],
        json!([{"line": 1, "column": 9}]),
        "{r}"
    );
    assert!(r["errors"][0].get("extensions").is_none(), "{r}");

    geo.set(Mode::Status(503));
    let r = s.gql("{ country(code: \"FR\") { name } }").await;
    assert_eq!(
        r["errors"][0]["extensions"]["code"], "remote-schema-error",
        "{r}"
    );
    assert!(
        r["errors"][0]["message"].as_str().unwrap().contains("503"),
        "{r}"
    );

    let s2 = TestServer::blog().await;
    let slow = Geo::start().await;
    s2.ok(json!({"type": "add_remote_schema", "args": {"name": "slow",
        "definition": {"url": slow.url, "timeout_seconds": 1}}}))
        .await;
    slow.set(Mode::Slow(Duration::from_secs(3)));
    let r = s2.gql("{ country(code: \"FR\") { name } }").await;
    let error = &r["errors"][0];
    assert_eq!(error["extensions"]["code"], "remote-schema-error", "{r}");
    assert_eq!(
        error["message"],
        format!(
            "HTTP exception occurred while sending the request to {}",
            slow.url
        )
    );
    assert_eq!(error["extensions"]["path"], "$");
    assert_eq!(error["extensions"]["internal"]["type"], "http_exception");
    assert_eq!(
        error["extensions"]["internal"]["message"],
        "Response timeout"
    );
    // Not for other roles: internals are the admin's.
    let r = s2
        .gql_role(
            "{ country(code: \"FR\") { name } }",
            "user",
            &[("X-Svc-User-Id", "1")],
        )
        .await;
    assert!(
        r["errors"][0]["extensions"].get("internal").is_none(),
        "{r}"
    );
}

#[tokio::test]
async fn headers_are_configured_then_session_then_forwarded_client_headers() {
    std::env::set_var("BASALT_TEST_GEO_KEY", "from-env");
    let geo = Geo::start().await;
    let s = TestServer::blog().await;
    s.ok(
        json!({"type": "add_remote_schema", "args": {"name": "geo", "definition": {
        "url": geo.url,
        "headers": [{"name": "Authorization", "value": "Basic cfg"},
                    {"name": "X-Api-Key", "value_from_env": "BASALT_TEST_GEO_KEY"}],
        "forward_client_headers": true}}}),
    )
    .await;
    let introspection = geo.received.lock().unwrap()[0].0.clone();
    assert_eq!(introspection["x-api-key"], "from-env");
    assert!(
        introspection.get("x-svc-role").is_none(),
        "no session at introspection"
    );
    assert!(introspection["user-agent"]
        .to_str()
        .unwrap()
        .starts_with("basalt/"));

    let query = json!({"query": r#"{
        auth: header(name: "authorization") key: header(name: "x-api-key")
        role: header(name: "x-svc-role") user: header(name: "x-svc-user-id")
        trace: header(name: "x-trace") secret: header(name: "x-svc-admin-secret")
    }"#});
    let r = s
        .graphql_as(
            query.clone(),
            &[
                ("Authorization", "Bearer t1"),
                ("X-Svc-Role", "user"),
                ("X-Svc-User-Id", "9"),
                ("X-Trace", "abc"),
            ],
        )
        .await;
    assert_eq!(
        r,
        json!({"data": {"auth": "Basic cfg", "key": "from-env", "role": "user", "user": "9",
                         "trace": "abc", "secret": null}})
    );
    let cookie = s
        .http
        .post(format!("{}/v1/graphql", s.base))
        .json(&json!({"query": "{ country(code: \"FR\") { code } }"}))
        .send()
        .await
        .unwrap();
    assert_eq!(cookie.headers()["set-cookie"], "geo=visited; Path=/");
}

#[tokio::test]
async fn operations_refuse_bad_definitions_unreachable_remotes_and_unknown_names() {
    let s = TestServer::blog().await;
    let geo = Geo::start().await;
    let both = json!({"type": "add_remote_schema", "args": {"name": "x", "definition": {"url": geo.url, "url_from_env": "X"}}});
    let r = s
        .fails(both, 400, "invalid-params", "$.args.definition")
        .await;
    assert_eq!(r["error"], "both `url` and `url_from_env` can't be present");
    let none = json!({"type": "add_remote_schema", "args": {"name": "x", "definition": {}}});
    let r = s
        .fails(none, 400, "invalid-params", "$.args.definition")
        .await;
    assert_eq!(r["error"], "both `url` and `url_from_env` can't be empty");
    let env = json!({"type": "add_remote_schema", "args": {"name": "x", "definition": {"url_from_env": "BASALT_TEST_NO_SUCH_URL"}}});
    let r = s
        .fails(env, 400, "invalid-params", "$.args.definition")
        .await;
    assert_eq!(
        r["error"],
        "cannot find environment variable BASALT_TEST_NO_SUCH_URL for custom resolver"
    );
    let r = s
        .fails(
            add("x", "not a url"),
            400,
            "invalid-params",
            "$.args.definition",
        )
        .await;
    assert_eq!(r["error"], "not a valid URI: not a url");

    let down = "http://127.0.0.1:9/graphql";
    let r = s
        .fails(add("x", down), 400, "remote-schema-error", "$.args")
        .await;
    assert_eq!(
        r["error"],
        format!("HTTP exception occurred while sending the request to {down}")
    );
    assert_eq!(r["internal"]["type"], "http_exception");
    geo.set(Mode::Status(502));
    let r = s
        .fails(add("x", &geo.url), 400, "remote-schema-error", "$.args")
        .await;
    assert_eq!(
        r["error"],
        format!(
            "introspection query to {} has responded with 502 status code",
            geo.url
        )
    );
    geo.set(Mode::Normal);
    assert_eq!(
        s.export().await.get("remote_schemas"),
        None,
        "nothing stored on failure"
    );

    s.ok(add("geo", &geo.url)).await;
    let r = s
        .fails(add("geo", &geo.url), 400, "already-exists", "$.args.name")
        .await;
    assert_eq!(r["error"], "remote schema with name \"geo\" already exists");
    let r = s
        .fails(
            json!({"type": "remove_remote_schema", "args": {"name": "nope"}}),
            400,
            "not-exists",
            "$.args.name",
        )
        .await;
    assert_eq!(r["error"], "no such remote schema");
    let r = s
        .fails(
            json!({"type": "reload_remote_schema", "args": {"name": "nope"}}),
            400,
            "not-exists",
            "$.args.name",
        )
        .await;
    assert_eq!(
        r["error"],
        "remote schema with name \"nope\" does not exist"
    );
    assert_eq!(
        s.export().await["remote_schemas"],
        json!([{"name": "geo", "definition": {"url": geo.url}}])
    );
    s.ok(json!({"type": "remove_remote_schema", "args": {"name": "geo"}}))
        .await;
    let r = s.gql("{ country(code: \"FR\") { name } }").await;
    assert_eq!(
        r["errors"][0]["extensions"]["code"], "validation-failed",
        "{r}"
    );
}

#[tokio::test]
async fn clashes_with_tables_and_other_remotes_are_refused() {
    let s = TestServer::blog().await;
    let geo = Geo::start().await;
    s.ok(add("geo", &geo.url)).await;
    // The same service again: every root field clashes.
    let r = s
        .fails(
            add("again", &geo.url),
            400,
            "remote-schema-conflicts",
            "$.args",
        )
        .await;
    let message = r["error"].as_str().unwrap();
    assert!(
        message.starts_with("top-level nodes: [ country, countries, search, node, header, fails, addCountry ] already exist")
            && message.ends_with("HINT: Top-level nodes can't be same."),
        "{message}"
    );
    // A table whose root field would be `country` clashes with the remote.
    s.sql("CREATE TABLE country (code text PRIMARY KEY)").await;
    let r = s
        .fails(
            json!({"type": "track_table", "args": {"table": "country"}}),
            400,
            "remote-schema-conflicts",
            "$.args",
        )
        .await;
    assert!(r["error"].as_str().unwrap().contains("[ country ]"), "{r}");
    // A remote whose types differ from generated ones of the same name.
    let other = Geo::start().await;
    *other.schema.lock().unwrap() = {
        let author = Object::new("author").field(prop("x", TypeRef::named(TypeRef::STRING)));
        let query =
            Object::new("Query").field(Field::new("authors2", TypeRef::named("author"), |_| {
                FieldFuture::new(async move { Ok(None::<FieldValue>) })
            }));
        Schema::build("Query", None, None)
            .register(author)
            .register(query)
            .finish()
            .unwrap()
    };
    let r = s
        .fails(
            add("other", &other.url),
            400,
            "remote-schema-conflicts",
            "$.args",
        )
        .await;
    assert_eq!(
        r["error"],
        "types: [ author ] have mismatch with current graphql schema. HINT: Types must be same."
    );
    assert_eq!(
        s.export().await["remote_schemas"].as_array().unwrap().len(),
        1
    );
}

#[tokio::test]
async fn subscriptions_cannot_select_remote_fields() {
    let (s, _geo) = blog_with_geo().await;
    let url = format!("{}/v1/graphql", s.base.replace("http://", "ws://"));
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::Message;
    let mut request = url.into_client_request().unwrap();
    request.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        "graphql-transport-ws".parse().unwrap(),
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    ws.send(Message::text(
        json!({"type": "connection_init"}).to_string(),
    ))
    .await
    .unwrap();
    ws.send(Message::text(
        json!({"type": "subscribe", "id": "1", "payload": {"query": "subscription { country(code: \"FR\") { name } }"}})
            .to_string(),
    ))
    .await
    .unwrap();
    let error = loop {
        let message = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("an answer")
            .unwrap()
            .unwrap();
        let Message::Text(text) = message else {
            continue;
        };
        let value: Value = serde_json::from_str(&text).unwrap();
        if value["type"] == "error" {
            break value;
        }
    };
    assert_eq!(
        error["payload"],
        json!([{"message": "subscription to remote server is not supported",
                "extensions": {"path": "$", "code": "not-supported"}}])
    );
}

#[tokio::test]
async fn reloads_pick_up_a_changed_remote_and_failures_follow_the_spec() {
    let (s, geo) = blog_with_geo().await;
    assert_eq!(
        s.gql("{ capital }").await["errors"][0]["extensions"]["code"],
        "validation-failed"
    );
    *geo.schema.lock().unwrap() = geo_schema(true);
    // Other metadata changes reuse the stored introspection.
    s.ok(json!({"type": "reload_metadata", "args": {}})).await;
    assert_eq!(
        s.gql("{ capital }").await["errors"][0]["extensions"]["code"],
        "validation-failed"
    );
    s.ok(json!({"type": "reload_remote_schema", "args": {"name": "geo"}}))
        .await;
    assert_eq!(
        s.gql("{ capital }").await,
        json!({"data": {"capital": "Paris"}})
    );

    // Down while consistent: the reload fails and nothing changes.
    geo.set(Mode::Status(500));
    let r = s
        .fails(
            json!({"type": "reload_remote_schema", "args": {"name": "geo"}}),
            400,
            "unexpected",
            "$.args",
        )
        .await;
    assert_eq!(
        r["error"],
        "cannot continue due to new inconsistent metadata"
    );
    let r = s
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(r["is_consistent"], true, "{r}");

    // reload_metadata with reload_remote_schemas records the failure, keeps serving the
    // stored schema, and reports the remote.
    let r = s
        .ok(json!({"type": "reload_metadata", "args": {"reload_remote_schemas": true}}))
        .await;
    assert_eq!(r["is_consistent"], false, "{r}");
    assert_eq!(r["inconsistent_objects"][0]["type"], "remote_schema");
    assert_eq!(r["inconsistent_objects"][0]["definition"]["name"], "geo");
    assert_eq!(
        r["inconsistent_objects"][0]["reason"],
        format!(
            "introspection query to {} has responded with 500 status code",
            geo.url
        )
    );
    let introspected = s
        .gql("{ __type(name: \"query_root\") { fields { name } } }")
        .await;
    assert!(
        introspected.to_string().contains("\"capital\""),
        "stored schema still served"
    );
    // Already inconsistent and still failing: success, still inconsistent.
    s.ok(json!({"type": "reload_remote_schema", "args": {"name": "geo"}}))
        .await;
    geo.set(Mode::Normal);
    s.ok(json!({"type": "reload_remote_schema", "args": {"name": "geo"}}))
        .await;
    let r = s
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(r["is_consistent"], true, "{r}");
}

#[tokio::test]
async fn a_replica_starting_while_the_remote_is_down_serves_the_stored_schema() {
    let (s, geo) = blog_with_geo().await;
    let db = s.db_url.clone();
    geo.set(Mode::Status(503));
    let replica = TestServer::on(&db, |_| {}).await;
    let r = replica
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(r["is_consistent"], false, "{r}");
    assert_eq!(r["inconsistent_objects"][0]["type"], "remote_schema", "{r}");
    let fields = replica
        .gql("{ __type(name: \"Country\") { fields { name } } }")
        .await;
    assert_eq!(
        fields,
        // By name, as every type is served (the remote lists `continent` last).
        json!({"data": {"__type": {"fields": [{"name": "code"}, {"name": "continent"}, {"name": "name"}]}}})
    );
    let r = replica.gql("{ country(code: \"FR\") { name } }").await;
    assert_eq!(
        r["errors"][0]["extensions"]["code"], "remote-schema-error",
        "{r}"
    );
    // The first server sees the failure its peer recorded.
    let r = s
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(r["is_consistent"], false, "{r}");
    geo.set(Mode::Normal);
    replica
        .ok(json!({"type": "reload_remote_schema", "args": {"name": "geo"}}))
        .await;
    assert_eq!(
        replica.gql("{ country(code: \"FR\") { name } }").await,
        json!({"data": {"country": {"name": "France"}}})
    );
}

#[tokio::test]
async fn replace_metadata_introspects_and_reports_unreachable_remotes() {
    let geo = Geo::start().await;
    let s = TestServer::blog().await;
    let mut metadata = s.export().await;
    metadata["remote_schemas"] = json!([
        {"name": "geo", "definition": {"url": geo.url, "timeout_seconds": 5}, "comment": "countries"},
        {"name": "gone", "definition": {"url": "http://127.0.0.1:9/graphql"}}
    ]);
    let r = s
        .fails(
            json!({"type": "replace_metadata", "args": metadata.clone()}),
            400,
            "unexpected",
            "$.args",
        )
        .await;
    assert_eq!(r["error"], "cannot continue due to inconsistent metadata");
    let r = s
        .ok(json!({"type": "replace_metadata", "version": 2,
                   "args": {"allow_inconsistent_metadata": true, "metadata": metadata}}))
        .await;
    assert_eq!(r["is_consistent"], false, "{r}");
    assert_eq!(
        r["inconsistent_objects"].as_array().unwrap().len(),
        1,
        "{r}"
    );
    assert_eq!(r["inconsistent_objects"][0]["definition"]["name"], "gone");
    assert_eq!(
        s.gql("{ country(code: \"JP\") { name } }").await,
        json!({"data": {"country": {"name": "Japan"}}})
    );
    let exported = s.export().await["remote_schemas"].clone();
    assert_eq!(exported[0]["comment"], "countries");
    assert_eq!(exported[0]["definition"]["timeout_seconds"], 5);
    s.ok(json!({"type": "drop_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(
        s.export().await["remote_schemas"].as_array().unwrap().len(),
        1
    );
}

#[tokio::test]
async fn a_remote_that_stops_answering_fails_only_the_operations_that_use_it() {
    use crate::remote_schemas::remote_server::{newsletter_schema, RemoteServer};
    let mut newsletter = RemoteServer::start(newsletter_schema()).await;
    let s = TestServer::blog().await;
    s.ok(add("newsletter", &newsletter.url)).await;
    assert_eq!(
        s.gql("{ subscriberCount }").await,
        json!({"data": {"subscriberCount": 2}})
    );
    newsletter.stop().await;
    let r = s.gql("{ author(limit: 1) { id } subscriberCount }").await;
    assert!(r.get("data").is_none(), "{r}");
    let error = &r["errors"][0];
    assert_eq!(error["extensions"]["code"], "remote-schema-error", "{r}");
    assert_eq!(
        error["message"],
        format!(
            "HTTP exception occurred while sending the request to {}",
            newsletter.url
        )
    );
    let detail = error["extensions"]["internal"]["message"].as_str().unwrap();
    assert!(detail.starts_with("ConnectionFailure"), "{detail}");
    assert_eq!(
        s.gql("{ author(limit: 1) { id } }").await,
        json!({"data": {"author": [{"id": 1}]}}),
        "database fields are not affected"
    );
}

/// The remotes asked so far, by their field's name.
type Asked = Arc<Mutex<std::collections::BTreeSet<&'static str>>>;

/// A remote with one query field, `name: String`, whose resolver notes it was asked, then
/// answers `answer` only once two remotes were (waiting at most 10 s): an operation that
/// called its remotes one after the other would wait in the first and get an error.
fn waiting_remote(name: &'static str, answer: &'static str, asked: Asked) -> Schema {
    let query = Object::new("Query").field(Field::new(
        name,
        TypeRef::named(TypeRef::STRING),
        move |_| {
            let asked = asked.clone();
            FieldFuture::new(async move {
                asked.lock().unwrap().insert(name);
                for _ in 0..1000 {
                    if asked.lock().unwrap().len() >= 2 {
                        return Ok(Some(FieldValue::value(answer)));
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Err(async_graphql::Error::new(
                    "the other remote was never asked",
                ))
            })
        },
    ));
    Schema::build("Query", None, None)
        .register(query)
        .finish()
        .unwrap()
}

/// Two remotes and the database in one operation: one request to each remote, made at the
/// same time (each remote's resolver waits until the other has been asked), merged in the
/// order of the document with the database's fields.
#[tokio::test]
async fn two_remotes_of_one_operation_are_asked_at_once_one_request_each() {
    use crate::remote_schemas::remote_server::RemoteServer;
    let s = TestServer::blog().await;
    let asked = Asked::default();
    let weather = RemoteServer::start(waiting_remote("forecast", "sunny", asked.clone())).await;
    let tides = RemoteServer::start(waiting_remote("tide", "low", asked)).await;
    s.ok(add("weather", &weather.url)).await;
    s.ok(add("tides", &tides.url)).await;
    let (weather_before, tides_before) = (weather.headers().len(), tides.headers().len());
    let r = s
        .gql("{ tide first: author(limit: 1, order_by: {id: asc}) { id } forecast again: tide }")
        .await;
    assert_eq!(
        serde_json::to_string(&r).unwrap(),
        r#"{"data":{"tide":"low","first":[{"id":1}],"forecast":"sunny","again":"low"}}"#
    );
    assert_eq!(
        weather.headers().len() - weather_before,
        1,
        "one request to weather"
    );
    assert_eq!(
        tides.headers().len() - tides_before,
        1,
        "one request to tides"
    );
}

/// Actions and remote schemas share the root types: an action named like a remote's root
/// field is refused, and so is a remote whose root field an action already has, each with
/// the spec's conflict error and the metadata left as it was.
#[tokio::test]
async fn actions_and_remote_root_fields_cannot_clash() {
    let types = json!({"type": "set_custom_types", "args": {"objects": [
        {"name": "Greeting", "fields": [{"name": "text", "type": "String"}]}]}});
    let action = |name: &str, kind: &str| {
        json!({"type": "create_action", "args": {"name": name, "definition": {
            "type": kind, "handler": "http://127.0.0.1:9/hook", "output_type": "Greeting"}}})
    };
    // The remote first: a query action `country`, a mutation action `addCountry`.
    let (s, _geo) = blog_with_geo().await;
    s.ok(types.clone()).await;
    for (name, kind) in [("country", "query"), ("addCountry", "mutation")] {
        let r = s
            .fails(action(name, kind), 400, "remote-schema-conflicts", "$.args")
            .await;
        assert!(
            r["error"]
                .as_str()
                .unwrap()
                .contains(&format!("[ {name} ]")),
            "{r}"
        );
    }
    assert!(s
        .export()
        .await
        .get("actions")
        .is_none_or(|a| a == &json!([])));
    // The action first: the remote is refused.
    let s = TestServer::blog().await;
    let geo = Geo::start().await;
    s.ok(types).await;
    s.ok(action("country", "query")).await;
    let r = s
        .fails(
            add("geo", &geo.url),
            400,
            "remote-schema-conflicts",
            "$.args",
        )
        .await;
    assert!(r["error"].as_str().unwrap().contains("[ country ]"), "{r}");
    assert!(s
        .export()
        .await
        .get("remote_schemas")
        .is_none_or(|a| a == &json!([])));
}

/// Introspection only reads, so a request whose connection the remote closes without
/// answering is sent once more, on a new connection, and `add_remote_schema` succeeds.
#[tokio::test]
async fn introspection_tries_once_more_after_a_dropped_connection() {
    let geo = Geo::start().await;
    let front = Front::start(&geo.url).await;
    front.drop_next();
    let s = TestServer::blog().await;
    s.ok(json!({"type": "add_remote_schema", "args": {
        "name": "geo", "definition": {"url": front.url, "timeout_seconds": 5}}}))
        .await;
    assert_eq!(front.accepted(), 2);
    assert_eq!(
        s.gql("{ country(code: \"FR\") { name } }").await,
        json!({"data": {"country": {"name": "France"}}})
    );
}

/// A forwarded query whose connection the remote closes without answering (a pooled
/// keep-alive connection closed as it was reused) is sent once more; a mutation is not, as the
/// remote may have run it: it fails, and nothing is written twice.
#[tokio::test]
async fn a_forwarded_query_is_sent_again_after_a_dropped_connection_a_mutation_is_not() {
    let geo = Geo::start().await;
    let front = Front::start(&geo.url).await;
    let s = TestServer::blog().await;
    s.ok(add("geo", &front.url)).await;
    let france = json!({"data": {"country": {"name": "France"}}});
    assert_eq!(s.gql("{ country(code: \"FR\") { name } }").await, france);
    let pooled = front.accepted();

    front.drop_next();
    assert_eq!(s.gql("{ country(code: \"FR\") { name } }").await, france);
    assert_eq!(
        front.accepted(),
        pooled + 1,
        "sent again on a new connection"
    );
    assert_eq!(
        geo.calls().len(),
        2,
        "the dropped request never reached the remote"
    );

    front.drop_next();
    let r = s
        .gql(r#"mutation { addCountry(code: "DE", name: "Germany") { code } }"#)
        .await;
    let error = &r["errors"][0];
    assert_eq!(error["extensions"]["code"], "remote-schema-error", "{r}");
    assert_eq!(
        error["extensions"]["internal"]["type"], "http_exception",
        "{r}"
    );
    assert!(r.get("data").is_none(), "{r}");
    assert_eq!(geo.calls().len(), 2, "the mutation was not sent again");

    let r = s
        .gql(r#"mutation { addCountry(code: "DE", name: "Germany") { code } }"#)
        .await;
    assert_eq!(r, json!({"data": {"addCountry": {"code": "DE"}}}));
    assert_eq!(geo.calls().len(), 3);
}
