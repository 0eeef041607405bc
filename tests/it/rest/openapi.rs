//! `GET /api/swagger/json`: an OpenAPI 3.0 document a real validator accepts, the same bytes
//! for the same metadata, the admin's alone.

use super::members;
use crate::harness::{python_venv, TestServer};
use serde_json::{json, Value};
use std::io::Write;
use std::process::{Command, Stdio};

async fn swagger(s: &TestServer, role: Option<&str>) -> (u16, String) {
    let mut request = s.http.get(format!("{}/api/swagger/json", s.base));
    if let Some(role) = role {
        request = request.header("X-Svc-Role", role);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// Runs `command` with `input` on its stdin: its stdout, or its stderr when it fails.
fn piped(mut command: Command, input: &str) -> Result<String, String> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    match out.status.success() {
        true => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
    }
}

/// What `openapi-spec-validator` says of `document` (`Ok` when valid).
fn validate(document: &str) -> Result<String, String> {
    let mut python = Command::new(python_venv(
        "openapi-validator",
        &["openapi-spec-validator==0.7.1"],
    ));
    python.args([
        "-c",
        "import json, sys\nfrom openapi_spec_validator import validate\nvalidate(json.load(sys.stdin))",
    ]);
    piped(python, document)
}

#[tokio::test]
async fn the_document_describes_every_endpoint_and_validates() {
    let s = members().await;
    s.ok(json!({"type": "bulk", "args": [
        {"type": "add_query_to_collection", "args": {"collection_name": "app", "query_name": "search",
            "query": "query search($where: member_bool_exp, $order: [member_order_by!]) { member(where: $where, order_by: $order) { id name } }"}},
        {"type": "create_rest_endpoint", "args": {"name": "search", "url": "members/search",
            "methods": ["PUT"], "comment": "search members",
            "definition": {"query": {"collection_name": "app", "query_name": "search"}}}}
    ]}))
    .await;
    let (status, text) = swagger(&s, None).await;
    assert_eq!(status, 200, "{text}");
    validate(&text).unwrap();
    assert_eq!(
        swagger(&s, None).await.1,
        text,
        "the same bytes for the same metadata"
    );
    let document: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(document["openapi"], "3.0.0");
    let by_id = &document["paths"]["/api/rest/members/{id}"]["get"];
    assert_eq!(by_id["summary"], "member_by_id");
    assert_eq!(
        by_id["parameters"][1],
        json!({"name": "id", "in": "path", "schema": {"type": "integer"}, "required": true,
            "description": "\"id\" is required (give it here or in the request body)"})
    );
    assert_eq!(by_id["parameters"][0]["name"], "x-svc-admin-secret");
    assert_eq!(
        by_id["responses"]["200"]["content"]["application/json"]["schema"],
        json!({"type": "object", "properties": {"member_by_pk": {"type": "object",
            "properties": {"id": {"type": "integer"}, "name": {"type": "string"}}}}})
    );
    assert!(by_id.get("requestBody").is_none(), "no body on GET");
    // Input types and enums are described once, under components.
    let search = &document["paths"]["/api/rest/members/search"]["put"];
    assert!(search["description"]
        .as_str()
        .unwrap()
        .starts_with("search members\n\n***"));
    assert_eq!(
        search["requestBody"]["content"]["application/json"]["schema"]["properties"]["where"],
        json!({"$ref": "#/components/schemas/member_bool_exp"})
    );
    assert_eq!(
        document["components"]["schemas"]["order_by"]["type"],
        "string"
    );
    let since = &document["paths"]["/api/rest/since"];
    assert_eq!(since["post"]["requestBody"]["required"], true);
    assert_eq!(
        since["post"]["requestBody"]["content"]["application/json"]["schema"]["required"],
        json!(["since"])
    );
    assert_eq!(
        since["get"]["parameters"][1]["schema"],
        json!({"type": "string", "format": "date"})
    );
    let paths: Vec<&String> = document["paths"].as_object().unwrap().keys().collect();
    assert_eq!(
        paths,
        [
            "/api/rest/members",
            "/api/rest/members/search",
            "/api/rest/members/{id}",
            "/api/rest/since"
        ]
    );
    // A generator takes it: TypeScript types for the paths and their responses.
    let dir = crate::harness::npm_workspace(
        "openapi-typescript",
        &["openapi-typescript@7.4.4", "typescript@5.6.3"],
        "openapi-types.mjs",
    );
    let mut node = Command::new("node");
    node.arg(dir.join("openapi-types.mjs")).current_dir(&dir);
    let generated = piped(node, &text).unwrap();
    assert!(
        generated.contains("\"/api/rest/members/{id}\""),
        "{generated}"
    );
    assert!(generated.contains("member_by_pk"), "{generated}");
    // Only the admin reads it.
    let (status, text) = swagger(&s, Some("reader")).await;
    assert_eq!(status, 400);
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({"path": "$", "error": "You have to be an admin to access this endpoint", "code": "access-denied"})
    );
}
