//! Introspection: the role's exact schema, checked by graphql-js.

use crate::harness::TestServer;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// graphql-js, installed once per machine into the target directory.
fn graphql_js() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        crate::harness::npm_workspace("graphql-js", &["graphql@16.9.0"], "validate-schema.mjs")
    })
    .clone()
}

pub(crate) fn node(args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
    let dir = graphql_js();
    let mut child = Command::new("node")
        .arg(dir.join("validate-schema.mjs"))
        .args(args)
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node");
    if let Some(input) = stdin {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    } else {
        drop(child.stdin.take());
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub(crate) async fn full_introspection(s: &TestServer, role: Option<&str>) -> Value {
    let (ok, query, err) = node(&["--query"], None);
    assert!(ok, "{err}");
    let headers: Vec<(&str, &str)> = role
        .map(|r| vec![("X-Svc-Role", r), ("X-Svc-User-Id", "1")])
        .unwrap_or_default();
    let r = s.graphql_as(json!({"query": query}), &headers).await;
    assert!(r.get("errors").is_none(), "{r}");
    r["data"].clone()
}

#[tokio::test]
async fn introspection_passes_graphql_js_for_admin_and_restricted_roles() {
    let s = TestServer::blog().await;
    for role in [None, Some("user"), Some("guest"), Some("stranger")] {
        let data = full_introspection(&s, role).await;
        let (ok, out, err) = node(&[], Some(&data.to_string()));
        assert!(ok, "role {role:?}: {err}");
        let summary: Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(summary["query"], "query_root");
        // Roles that can select subscribe to the same fields.
        let subscription = match role {
            Some("stranger") => Value::Null,
            _ => json!("subscription_root"),
        };
        assert_eq!(summary["subscription"], subscription, "role {role:?}");
    }
}

#[tokio::test]
async fn introspection_shows_exactly_the_roles_schema() {
    let s = TestServer::blog().await;
    let q = r#"{ __schema { queryType { name } mutationType { name } }
        root: __type(name: "query_root") { fields { name } }
        author: __type(name: "author") { fields { name type { kind name ofType { name } } } }
        cmp: __type(name: "article_status_enum") { enumValues { name description } } }"#;
    let admin = s.gql(q).await["data"].clone();
    assert_eq!(
        admin["__schema"],
        json!({"queryType": {"name": "query_root"}, "mutationType": {"name": "mutation_root"}})
    );
    let root: Vec<&str> = admin["root"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert!(
        root.contains(&"articles")
            && root.contains(&"articleById")
            && root.contains(&"article_aggregate")
            && root.contains(&"comment_by_pk"),
        "{root:?}"
    );
    assert!(
        !root.contains(&"article"),
        "custom root name replaces the default"
    );
    assert_eq!(
        admin["cmp"]["enumValues"],
        json!([{"name": "draft", "description": "Not visible"}, {"name": "published", "description": "Visible to all"}])
    );
    let fields: Vec<&str> = admin["author"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert!(
        fields.contains(&"bio")
            && fields.contains(&"articles_aggregate")
            && fields.contains(&"search_articles")
    );
    let name = admin["author"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "name")
        .unwrap();
    assert_eq!(
        name["type"],
        json!({"kind": "NON_NULL", "name": null, "ofType": {"name": "String"}})
    );

    let guest = s.gql_role(q, "guest", &[]).await["data"].clone();
    assert_eq!(
        guest["__schema"]["mutationType"],
        Value::Null,
        "guest writes nothing"
    );
    let root: Vec<&str> = guest["root"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(root, ["articleById", "articles", "author", "author_by_pk"]);
    let fields: Vec<&str> = guest["author"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    // No aggregates, hidden columns or unlisted scalar computed fields; a set-returning computed
    // field follows the select permission of the table it returns.
    assert_eq!(fields, ["articles", "id", "name", "search_articles"]);
    let stranger = s.gql_role(q, "stranger", &[]).await["data"].clone();
    assert_eq!(
        stranger["root"]["fields"],
        json!([{"name": "no_queries_available"}])
    );
    assert_eq!(stranger["author"], Value::Null);
}

#[tokio::test]
async fn introspection_mixed_with_data_keeps_field_order() {
    let s = TestServer::blog().await;
    let r = s
        .graphql_as(
            json!({"query": r#"query($t: String!) { first: articleById(id: 1) { id } t: __type(name: $t) { name } __typename last: articles(limit: 1, order_by: {id: desc}) { id } }"#, "variables": {"t": "author"}}),
            &[],
        )
        .await;
    assert_eq!(
        r,
        json!({"data": {"first": {"id": 1}, "t": {"name": "author"}, "__typename": "query_root", "last": [{"id": 5}]}})
    );
    let text = serde_json::to_string(&r).unwrap();
    assert!(
        text.find("\"first\"").unwrap() < text.find("\"t\"").unwrap()
            && text.find("\"t\"").unwrap() < text.find("\"last\"").unwrap()
    );
}

/// Asserts that every object and input type of an introspection answer lists its fields, and
/// every enum its values, sorted by name; answers how many types it checked. The
/// introspection types (`__Type`, …) keep the order of the GraphQL specification.
pub fn assert_members_sorted(introspection: &Value) -> usize {
    let types = introspection["__schema"]["types"].as_array().unwrap();
    let mut checked = 0;
    for t in types
        .iter()
        .filter(|t| !t["name"].as_str().unwrap().starts_with("__"))
    {
        let members = ["fields", "inputFields", "enumValues"]
            .iter()
            .filter_map(|k| t[*k].as_array())
            .next();
        let Some(members) = members else { continue };
        let names: Vec<&str> = members
            .iter()
            .map(|f| f["name"].as_str().unwrap())
            .collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted, "{}", t["name"]);
        checked += 1;
    }
    checked
}

/// Every object and input type lists its fields, and every enum its values, sorted by name.
/// The same metadata in another order (tables, relationships, computed fields, permissions)
/// gives the same introspection, and a new column takes its place by name.
#[tokio::test]
async fn introspection_is_sorted_and_independent_of_metadata_order() {
    let s = TestServer::blog().await;
    let before = full_introspection(&s, None).await;
    let checked = assert_members_sorted(&before);
    assert!(checked > 40, "{checked} types checked");
    let user = full_introspection(&s, Some("user")).await;
    // Reverse every list in the metadata: the schema does not change.
    let mut metadata = s.export().await;
    fn reverse(v: &mut Value) {
        match v {
            Value::Array(items) => {
                items.reverse();
                items.iter_mut().for_each(reverse);
            }
            Value::Object(map) => map.values_mut().for_each(reverse),
            _ => {}
        }
    }
    for table in metadata["tables"].as_array_mut().unwrap() {
        for key in [
            "object_relationships",
            "array_relationships",
            "computed_fields",
            "select_permissions",
        ] {
            if let Some(list) = table.get_mut(key) {
                reverse(list);
            }
        }
    }
    metadata["tables"].as_array_mut().unwrap().reverse();
    s.ok(json!({"type": "replace_metadata", "args": metadata}))
        .await;
    assert_eq!(full_introspection(&s, None).await, before);
    assert_eq!(full_introspection(&s, Some("user")).await, user);
    s.ok(
        json!({"type": "run_sql", "args": {"sql": "ALTER TABLE author ADD COLUMN aaa_first int"}}),
    )
    .await;
    let after = full_introspection(&s, None).await;
    let author = after["__schema"]["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "author")
        .unwrap();
    assert_eq!(author["fields"][0]["name"], "aaa_first", "{author}");
}

/// The selection of a schema fetch, without the graphql-js fragments.
const SCHEMA_FETCH: &str = "__schema { queryType { name } types { kind name description \
    fields { name description args { name description type { kind name ofType { kind name } } } \
    type { kind name ofType { kind name ofType { kind name } } } } \
    inputFields { name description type { kind name ofType { kind name } } } \
    enumValues { name description } } }";

/// POSTs a body as admin with these extra headers; answers the status, the response's
/// `Content-Encoding` and its raw bytes.
async fn post_raw(
    server: &TestServer,
    body: &Value,
    headers: &[(&str, &str)],
) -> (u16, Option<String>, Vec<u8>) {
    let mut request = server
        .http
        .post(format!("{}/v1/graphql", server.base))
        .json(body);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let encoding = response
        .headers()
        .get("content-encoding")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, encoding, response.bytes().await.unwrap().to_vec())
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .expect("a gzip body");
    out
}

/// A large introspection answer (a schema of over a hundred tables) is remembered compressed:
/// sent gzip-encoded to a client that takes it, the same bytes decoded to one that does not,
/// to a batch and inside an answer mixed with data — and written only once.
#[tokio::test]
async fn large_introspection_answers_are_remembered_gzipped_and_sent_to_any_client() {
    let db = crate::harness::fresh_database().await;
    let ddl: String = (0..120)
        .map(|i| format!("CREATE TABLE t{i:03} (id int PRIMARY KEY, name text, note text, n int);"))
        .collect();
    crate::harness::run_sql(&db, &ddl).await;
    let server = TestServer::on(&db, |_| {}).await;
    let tables: Vec<Value> = (0..120)
        .map(|i| json!({"table": {"schema": "public", "name": format!("t{i:03}")}}))
        .collect();
    server
        .ok(json!({"type": "replace_metadata", "args": {"version": 2, "tables": tables}}))
        .await;
    let counters = || server.running.state.counters.snapshot().introspections_run;
    let fetch = json!({"query": format!("{{ {SCHEMA_FETCH} }}")});

    let before = counters();
    let (status, encoding, plain) = post_raw(&server, &fetch, &[]).await;
    assert_eq!((status, encoding), (200, None));
    assert!(
        plain.len() > basalt::engine::MAX_PLAIN_INTROSPECTION,
        "a large answer: {} bytes",
        plain.len()
    );
    let parsed: Value = serde_json::from_slice(&plain).unwrap();
    assert_eq!(
        parsed["data"]["__schema"]["queryType"]["name"],
        "query_root"
    );
    assert!(
        parsed["data"]["__schema"]["types"]
            .as_array()
            .unwrap()
            .len()
            > 120 * 5
    );

    let (status, encoding, gzipped) =
        post_raw(&server, &fetch, &[("Accept-Encoding", "br, gzip;q=0.8")]).await;
    assert_eq!((status, encoding.as_deref()), (200, Some("gzip")));
    assert!(gzipped.len() * 10 < plain.len(), "{} bytes", gzipped.len());
    assert_eq!(gunzip(&gzipped), plain, "the same answer, encoded");
    // GET takes it too.
    let response = server
        .http
        .get(format!("{}/v1/graphql", server.base))
        .query(&[("query", fetch["query"].as_str().unwrap())])
        .header("Accept-Encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["content-encoding"], "gzip");
    assert_eq!(response.headers()["vary"], "accept-encoding");
    assert_eq!(gunzip(&response.bytes().await.unwrap()), plain);
    // gzip refused (`q=0`), or another coding only: plain JSON.
    for refused in ["gzip;q=0", "br", "identity"] {
        let (_, encoding, body) = post_raw(&server, &fetch, &[("Accept-Encoding", refused)]).await;
        assert_eq!((encoding, body == plain), (None, true), "{refused}");
    }
    // A batch is one JSON array: its items are never encoded on their own.
    let (_, encoding, batch) = post_raw(
        &server,
        &json!([fetch.clone(), {"query": "{ t000 { id } }"}]),
        &[("Accept-Encoding", "gzip")],
    )
    .await;
    assert_eq!(encoding, None);
    let batch: Value = serde_json::from_slice(&batch).unwrap();
    assert_eq!(batch[0], parsed);
    assert_eq!(batch[1], json!({"data": {"t000": []}}));
    assert_eq!(counters() - before, 1, "written once, then remembered");

    // Mixed with data: the same introspection selection's remembered answer is read back
    // (decompressed) and merged in.
    let mixed = json!({"query": format!("{{ t001 {{ id }} {SCHEMA_FETCH} }}")});
    let (_, _, first) = post_raw(&server, &mixed, &[("Accept-Encoding", "gzip")]).await;
    let (_, encoding, again) = post_raw(&server, &mixed, &[("Accept-Encoding", "gzip")]).await;
    assert_eq!(
        encoding, None,
        "data and introspection together are written per request"
    );
    assert_eq!(first, again);
    let again: Value = serde_json::from_slice(&again).unwrap();
    assert_eq!(again["data"]["t001"], json!([]));
    assert_eq!(again["data"]["__schema"], parsed["data"]["__schema"]);
    assert_eq!(
        counters() - before,
        1,
        "the remembered answer served the mixed document"
    );
}
