//! Hostile values through REST endpoints: as a path segment and as a query-string value of
//! an endpoint whose query filters by them (the rows compared with what Postgres selects with
//! the value bound), and as an endpoint's name (kept as data, round-tripped by export).

use super::*;

/// `label` as a path segment or a query-string value: percent-encoded, every byte.
fn encoded(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// The rows a REST call selected (with `body` as JSON, when given), or the code it was
/// refused with.
async fn rest(s: &TestServer, path: &str, body: Option<Value>) -> Rows {
    let mut request = s
        .http
        .post(format!("{}/api/rest/{path}", s.base))
        .header("X-Svc-Admin-Secret", SECRET);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    match status {
        200 => Ok(body["item"]
            .as_array()
            .unwrap_or_else(|| panic!("{}", brief(&body.to_string())))
            .iter()
            .map(|row| row["id"].as_i64().unwrap())
            .collect()),
        _ => {
            assert!(
                body["path"].is_string() && body["error"].is_string(),
                "{status}: {}",
                brief(&body.to_string())
            );
            Err(body["code"].as_str().unwrap_or_default().to_owned())
        }
    }
}

#[tokio::test]
async fn rest_path_and_query_string_values() {
    let (s, canary) = server(false).await;
    let client = connect(&s.db_url).await;
    let corpus = corpus();
    for h in corpus.iter().filter(|h| !h.has_nul()) {
        client
            .execute("INSERT INTO item (label) VALUES ($1)", &[&h.text])
            .await
            .unwrap();
    }
    s.ok(json!({"type": "create_query_collection", "args": {"name": "app", "definition": {"queries": [
        {"name": "by_label", "query": "query by_label($label: String!) { item(where: {label: {_eq: $label}}, order_by: {id: asc}) { id } }"}
    ]}}}))
    .await;
    s.ok(json!({"type": "bulk", "args": [
        {"type": "create_rest_endpoint", "args": {"name": "path", "url": "items/:label", "methods": ["POST"],
            "definition": {"query": {"collection_name": "app", "query_name": "by_label"}}}},
        {"type": "create_rest_endpoint", "args": {"name": "query", "url": "items", "methods": ["POST"],
            "definition": {"query": {"collection_name": "app", "query_name": "by_label"}}}}
    ]}))
    .await;
    for h in &corpus {
        let expected = oracle(&client, "label = $1", &h.text).await;
        let by_body = rest(&s, "items", Some(json!({"label": h.text}))).await;
        assert_eq!(by_body, expected, "{} in the body", h.name);
        // A URL holds no 100 KB; an empty segment is no path (nothing matches it).
        if h.text.len() > 10_000 {
            continue;
        }
        let by_query = rest(&s, &format!("items?label={}", encoded(&h.text)), None).await;
        assert_eq!(by_query, expected, "{} in the query string", h.name);
        let by_path = rest(&s, &format!("items/{}", encoded(&h.text)), None).await;
        match h.text.is_empty() {
            true => assert_eq!(by_path, Err("not-found".to_owned())),
            false => assert_eq!(by_path, expected, "{} in the path", h.name),
        }
    }
    canary.check(&[]).await;
}

#[tokio::test]
async fn rest_endpoint_names_are_data() {
    let (s, canary) = server(false).await;
    s.ok(json!({"type": "create_query_collection", "args": {"name": "app", "definition": {"queries": [
        {"name": "all", "query": "query all { item { id } }"}
    ]}}}))
    .await;
    let mut created = Vec::new();
    for (i, h) in corpus().iter().enumerate() {
        let (status, body) = s
            .query(
                json!({"type": "create_rest_endpoint", "args": {"name": h.text,
                "url": format!("n{i}"), "methods": ["GET"],
                "definition": {"query": {"collection_name": "app", "query_name": "all"}}}}),
            )
            .await;
        if h.text.is_empty() {
            assert_eq!((status, body["code"].as_str()), (400, Some("parse-failed")));
            continue;
        }
        assert_eq!(status, 200, "{}: {}", h.name, brief(&body.to_string()));
        created.push(h.text.clone());
    }
    let export = s.export().await;
    let names: Vec<&str> = export["rest_endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(names, created);
    canary.check(&[]).await;
}
