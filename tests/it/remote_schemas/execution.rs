//! Execution with remote schemas: the document forwarded with its variables (defaults
//! declared), fragments and aliases, validated before anything is sent, one call per remote
//! (several remotes asked at once) merged in document order with the database's fields,
//! mutations in document order, remote errors answered without partial data, the headers sent,
//! and subscriptions kept off remote fields.

use super::*;

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
