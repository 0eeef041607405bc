//! Hostile session variables, from headers and from JWT claims, and hostile role names: used
//! by permissions and presets as values, never as SQL.

use super::*;

/// `user` sees and inserts the rows whose `owner` is its `x-svc-user-id`.
fn owner_permissions() -> Value {
    json!({"type": "bulk", "args": [
        {"type": "create_select_permission", "args": {"table": "item", "role": "user", "permission": {
            "columns": ["id", "label", "owner"], "filter": {"owner": {"_eq": "X-Svc-User-Id"}}}}},
        {"type": "create_insert_permission", "args": {"table": "item", "role": "user", "permission": {
            "check": {"owner": {"_eq": "X-Svc-User-Id"}}, "set": {"owner": "x-svc-user-id"},
            "columns": ["label"]}}}
    ]})
}

/// Two rows owned by each value of the corpus (none for the NUL byte); their ids, in order.
async fn owned_rows(client: &tokio_postgres::Client, corpus: &[Hostile]) -> Vec<Vec<i64>> {
    let mut rows = Vec::new();
    for h in corpus {
        let mut ids = Vec::new();
        if !h.has_nul() {
            for label in ["first", "second"] {
                let row = client
                    .query_one(
                        "INSERT INTO item (label, owner) VALUES ($1, $2) RETURNING id::bigint",
                        &[&label, &h.text],
                    )
                    .await
                    .unwrap();
                ids.push(row.get(0));
            }
        }
        rows.push(ids);
    }
    rows
}

const OWN_ROWS: &str = "{ item(order_by: {id: asc}) { id owner } }";
const PRESET_INSERT: &str = "mutation { insert_item_one(object: {label: \"preset\"}) { owner } }";

/// The rows of `OWN_ROWS` for the ids `mine`.
fn own_rows(mine: &[i64], owner: &str) -> Outcome {
    let rows: Vec<Value> = mine
        .iter()
        .map(|id| json!({"id": id, "owner": owner}))
        .collect();
    Outcome::Data(json!({ "item": rows }))
}

#[tokio::test]
async fn session_variables_from_headers() {
    let (s, canary) = server(false).await;
    s.ok(owner_permissions()).await;
    let client = connect(&s.db_url).await;
    let corpus = corpus();
    let rows = owned_rows(&client, &corpus).await;
    let not_in_schema = refused("validation-failed");
    for (h, mine) in corpus.iter().zip(&rows) {
        let Ok(value) = HeaderValue::from_bytes(h.text.as_bytes()) else {
            // HTTP cannot carry control characters in a header: the JWT test covers them.
            assert!(h.text.contains(['\0', '\n', '\r']), "{}", h.name);
            continue;
        };
        // The user id filters the rows and presets the owner, byte for byte (UTF-8 included).
        let user = [
            ("X-Svc-Role", HeaderValue::from_static("user")),
            ("X-Svc-User-Id", value.clone()),
        ];
        let (status, body) = post(&s, None, OWN_ROWS, json!({}), &user).await;
        assert_eq!(
            outcome(status, &body),
            own_rows(mine, &h.text),
            "{}",
            h.name
        );
        let (status, body) = post(&s, None, PRESET_INSERT, json!({}), &user).await;
        assert_eq!(
            outcome(status, &body),
            Outcome::Data(json!({"insert_item_one": {"owner": h.text}})),
            "{}",
            h.name
        );
        // As a role name it is a role without permissions, never `admin`.
        let role = [("X-Svc-Role", value)];
        let (status, body) = post(&s, None, OWN_ROWS, json!({}), &role).await;
        assert_eq!(outcome(status, &body), not_in_schema, "{}", h.name);
    }
    // Bytes that are not UTF-8 are refused, not dropped (a dropped role would mean `admin`).
    let bytes = HeaderValue::from_bytes(b"\xff'; DROP TABLE canary; --").unwrap();
    for header in ["X-Svc-Role", "X-Svc-User-Id"] {
        let headers = [
            ("X-Svc-Role", HeaderValue::from_static("user")),
            (header, bytes.clone()),
        ];
        let (status, body) = post(&s, None, OWN_ROWS, json!({}), &headers).await;
        assert_eq!(outcome(status, &body), refused("invalid-headers"));
        assert_eq!(
            body["errors"][0]["message"],
            format!("{}: the value is not valid UTF-8", header.to_lowercase())
        );
    }
    let response = s
        .http
        .post(format!("{}/v1/query", s.base))
        .header("X-Svc-Admin-Secret", SECRET)
        .header("X-Svc-Role", bytes)
        .json(&json!({"type": "export_metadata", "args": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body,
        json!({"path": "$", "error": "x-svc-role: the value is not valid UTF-8", "code": "invalid-headers"})
    );
    canary.check(&[]).await;
}

/// A token for `role` (among `allowed`) with `user_id` as `x-svc-user-id`.
fn token(allowed: &[&str], role: &str, user_id: &str) -> String {
    let claims = json!({"exp": 4_000_000_000_i64, "https://basalt.dev/jwt/claims": {
        "x-svc-allowed-roles": allowed, "x-svc-default-role": role, "x-svc-user-id": user_id}});
    encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(JWT_KEY.as_bytes()),
    )
    .unwrap()
}

#[tokio::test]
async fn jwt_claims_and_role_names() {
    let (s, canary) = server(true).await;
    s.ok(owner_permissions()).await;
    let client = connect(&s.db_url).await;
    let corpus = corpus();
    let rows = owned_rows(&client, &corpus).await;
    for (h, mine) in corpus.iter().zip(&rows) {
        // Claims carry what headers cannot: NUL, line breaks. Postgres refuses only NUL.
        let user = token(&["user"], "user", &h.text);
        let (status, body) = post(&s, Some(&user), OWN_ROWS, json!({}), &[]).await;
        let (status2, inserted) = post(&s, Some(&user), PRESET_INSERT, json!({}), &[]).await;
        if h.has_nul() {
            assert_eq!(outcome(status, &body), refused("data-exception"));
            assert_eq!(outcome(status2, &inserted), refused("data-exception"));
        } else {
            assert_eq!(
                outcome(status, &body),
                own_rows(mine, &h.text),
                "{}",
                h.name
            );
            assert_eq!(
                outcome(status2, &inserted),
                Outcome::Data(json!({"insert_item_one": {"owner": h.text}})),
                "{}",
                h.name
            );
        }
        // The string as a role name: in metadata (any non-empty name), then in a token. Its
        // filter compares with the string itself, a constant of the permission.
        let permission = json!({"type": "create_select_permission", "args": {"table": "item", "role": h.text,
            "permission": {"columns": ["id", "owner"], "filter": {"owner": {"_eq": h.text}}}}});
        let as_role = token(&[&h.text], &h.text, "0");
        if h.text.is_empty() {
            let r = s
                .fails(permission, 400, "parse-failed", "$.args.role")
                .await;
            assert_eq!(r["error"], "empty string not allowed");
            let (status, body) = post(&s, Some(&as_role), OWN_ROWS, json!({}), &[]).await;
            assert_eq!(outcome(status, &body), refused("validation-failed"));
            continue;
        }
        s.ok(permission).await;
        let (status, body) = post(&s, Some(&as_role), OWN_ROWS, json!({}), &[]).await;
        if h.has_nul() {
            assert_eq!(outcome(status, &body), refused("data-exception"));
            continue;
        }
        let Outcome::Data(data) = outcome(status, &body) else {
            panic!("{}: {}", h.name, brief(&body.to_string()))
        };
        // Its two rows and the one the preset insert added.
        let owners: Vec<&Value> = data["item"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| &r["owner"])
            .collect();
        assert_eq!(owners, [&json!(h.text); 3], "{}", h.name);
    }
    // Role names come back exactly as given.
    let roles: BTreeSet<String> = s.export().await["tables"][0]["select_permissions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["role"].as_str().unwrap().to_owned())
        .collect();
    let mut expected: BTreeSet<String> = corpus
        .iter()
        .filter(|h| !h.text.is_empty())
        .map(|h| h.text.clone())
        .collect();
    expected.insert("user".to_owned());
    assert_eq!(roles, expected);
    // `X-Svc-Role` picks among the token's roles in UTF-8; other bytes are refused.
    let confusable = "\u{FF07}; DROP TABLE canary; --";
    let both = token(&["user", confusable], "user", "0");
    let pick = [(
        "X-Svc-Role",
        HeaderValue::from_bytes(confusable.as_bytes()).unwrap(),
    )];
    let (status, body) = post(&s, Some(&both), OWN_ROWS, json!({}), &pick).await;
    let Outcome::Data(data) = outcome(status, &body) else {
        panic!("{body}")
    };
    assert_eq!(data["item"].as_array().map(Vec::len), Some(3), "{data}");
    let bytes = [("X-Svc-Role", HeaderValue::from_bytes(b"\xffuser").unwrap())];
    let (status, body) = post(&s, Some(&both), OWN_ROWS, json!({}), &bytes).await;
    assert_eq!(outcome(status, &body), refused("invalid-headers"));
    canary.check(&[]).await;
}
