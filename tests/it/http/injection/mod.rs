//! The SQL injection corpus of the security issue: hostile strings (quotes, `'; DROP TABLE
//! canary; --`, dollar quotes, comments, backslashes, confusable apostrophes, a NUL byte,
//! 100 KB, format specifiers) in every position of the public APIs that reaches SQL. Each one
//! either round-trips as data or is refused with a clear error — `4xx {path, error, code}` on
//! the metadata API, a GraphQL error with `extensions.code` — and never runs: every test ends
//! by checking that the `canary` table still holds its rows and that no table went away.

use crate::harness::{fresh_database, query_json, run_sql, TestServer};
use futures_util::future::join_all;
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use reqwest::header::HeaderValue;
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// The admin secret of every server here.
const SECRET: &str = "injection-secret";
/// The HS256 key of the JWT-mode server.
const JWT_KEY: &str = "injection-corpus-hs256-key-0123456789";

/// The canary, and the tables the hostile values go through.
const FIXTURE: &str = r#"
CREATE TABLE canary (id int PRIMARY KEY, note text NOT NULL);
INSERT INTO canary VALUES (1, 'alive'), (2, 'still alive');
CREATE TABLE item (id serial PRIMARY KEY, label text NOT NULL, owner text, meta jsonb);
CREATE TABLE spare (id int PRIMARY KEY, note text);
"#;

/// One string of the corpus.
struct Hostile {
    /// What it is, for messages (the text itself may be 100 KB).
    name: &'static str,
    text: String,
}

impl Hostile {
    /// Postgres refuses NUL in `text` (and `\u0000` in `jsonb`).
    fn has_nul(&self) -> bool {
        self.text.contains('\0')
    }
}

/// The corpus: every string goes into every position.
fn corpus() -> Vec<Hostile> {
    let h = |name, text: &str| Hostile {
        name,
        text: text.to_owned(),
    };
    vec![
        h("single quote", "'"),
        h("double quote", "\""),
        h("drop the canary", "'; DROP TABLE canary; --"),
        h("drop the canary, identifier", "\"; DROP TABLE canary; --"),
        h("tautology", "' OR '1'='1"),
        h("dollar quote", "$$; DROP TABLE canary; $$"),
        h("tagged dollar quote", "$tag$ DROP TABLE canary $tag$"),
        h("block comment", "/* */ DROP TABLE canary /*"),
        h("line comment", "-- DROP TABLE canary"),
        h("semicolon", ";"),
        h("backslash", "\\"),
        h("backslash quote", "\\'; DROP TABLE canary; --"),
        h("escape string", "E'\\x27'"),
        h("modifier apostrophe", "\u{02BC}; DROP TABLE canary; --"),
        h("fullwidth apostrophe", "\u{FF07}; DROP TABLE canary; --"),
        h("right-to-left override", "\u{202E}'; DROP TABLE canary; --"),
        h("format specifiers", "%s %d %% {} {0} {{}}"),
        h("like wildcards", "%_"),
        h("line breaks", "a\nb\r\tc"),
        h("nul byte", "a\u{0000}b"),
        h("empty", ""),
        Hostile {
            name: "100 KB",
            text: "'; DROP TABLE canary; --".repeat(4_200),
        },
    ]
}

/// The tables of a database, and a check that none went away and the canary kept its rows.
struct Canary {
    db: String,
    tables: BTreeSet<String>,
}

async fn tables(db: &str) -> BTreeSet<String> {
    let rows = query_json(
        db,
        "SELECT table_schema || '.' || table_name AS name FROM information_schema.tables
         WHERE table_schema NOT IN ('pg_catalog', 'information_schema')",
    )
    .await;
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .collect()
}

impl Canary {
    /// Takes the list of tables as it is now (after the server's catalog migration).
    async fn new(db: &str) -> Self {
        let tables = tables(db).await;
        assert!(tables.contains("public.canary"), "{tables:?}");
        Canary {
            db: db.to_owned(),
            tables,
        }
    }

    /// The canary rows are untouched and the tables are those of the start plus `created`.
    async fn check(&self, created: &[&str]) {
        assert_eq!(
            query_json(&self.db, "SELECT id, note FROM canary ORDER BY id").await,
            json!([{"id": 1, "note": "alive"}, {"id": 2, "note": "still alive"}])
        );
        let mut expected = self.tables.clone();
        expected.extend(created.iter().map(|t| (*t).to_owned()));
        assert_eq!(tables(&self.db).await, expected);
    }
}

/// A server with the admin secret (and `jwt`, when given) on the fixture, `item` tracked.
async fn server(jwt: bool) -> (TestServer, Canary) {
    let db = fresh_database().await;
    run_sql(&db, FIXTURE).await;
    let s = TestServer::on(&db, |c| {
        c.admin_secret = Some(SECRET.into());
        if jwt {
            c.jwt_secret = Some(json!({"type": "HS256", "key": JWT_KEY}).to_string());
        }
    })
    .await;
    s.ok(json!({"type": "track_table", "args": {"table": "item"}}))
        .await;
    let canary = Canary::new(&db).await;
    (s, canary)
}

/// A direct connection: the oracle, and rows written without Basalt.
async fn connect(db: &str) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(db, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    client
}

/// At most 200 characters of `text`, for messages.
fn brief(text: &str) -> String {
    text.chars().take(200).collect()
}

/// A GraphQL string literal for `text` (JSON's escapes are GraphQL's).
fn literal(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// POSTs a GraphQL request (with the admin secret unless `token` is given) and the extra
/// headers; returns the HTTP status and body.
async fn post(
    s: &TestServer,
    token: Option<&str>,
    query: &str,
    variables: Value,
    headers: &[(&str, HeaderValue)],
) -> (u16, Value) {
    let mut request = s
        .http
        .post(format!("{}/v1/graphql", s.base))
        .json(&json!({"query": query, "variables": variables}));
    request = match token {
        Some(token) => request.bearer_auth(token),
        None => request.header("X-Svc-Admin-Secret", SECRET),
    };
    for (name, value) in headers {
        request = request.header(*name, value.clone());
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// What a GraphQL request came to.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    /// `data`.
    Data(Value),
    /// An error with this `extensions.code` (and a message and a path).
    Refused(String),
}

/// A refusal with `code`.
fn refused(code: &str) -> Outcome {
    Outcome::Refused(code.to_owned())
}

/// The outcome of a GraphQL response, which must be a 200 with either `data` or one well-formed
/// error.
fn outcome(status: u16, body: &Value) -> Outcome {
    assert_eq!(status, 200, "{}", brief(&body.to_string()));
    match body.get("errors") {
        Some(errors) => {
            let error = &errors[0];
            assert!(
                error["message"].as_str().is_some_and(|m| !m.is_empty())
                    && error["extensions"]["path"].is_string()
                    && body.get("data").is_none(),
                "{}",
                brief(&body.to_string())
            );
            Outcome::Refused(
                error["extensions"]["code"]
                    .as_str()
                    .expect("extensions.code")
                    .to_owned(),
            )
        }
        None => Outcome::Data(body["data"].clone()),
    }
}

/// Runs a GraphQL request as admin.
async fn admin(s: &TestServer, query: &str, variables: Value) -> Outcome {
    let (status, body) = post(s, None, query, variables, &[]).await;
    outcome(status, &body)
}

/// The `id`s of rows selected, or the code of the refusal.
type Rows = Result<Vec<i64>, String>;

/// The `id`s of the list at `data[field]`.
fn ids(outcome: &Outcome, field: &str) -> Rows {
    match outcome {
        Outcome::Data(data) => Ok(data[field]
            .as_array()
            .unwrap_or_else(|| panic!("{field} in {}", brief(&data.to_string())))
            .iter()
            .map(|row| row["id"].as_i64().unwrap())
            .collect()),
        Outcome::Refused(code) => Err(code.clone()),
    }
}

/// The wire code of a SQLSTATE Postgres answered a value with (`docs/graphql.md`).
fn wire_code(sqlstate: &str) -> String {
    match sqlstate {
        "22025" => "bad-request".to_owned(),
        c if c.starts_with("22") => "data-exception".to_owned(),
        c => panic!("the oracle failed with {c}"),
    }
}

/// What Postgres itself selects with `value` bound to `$1` in `condition` (over `item`): the
/// oracle for each filter operator.
async fn oracle(
    client: &tokio_postgres::Client,
    condition: &str,
    value: &(dyn tokio_postgres::types::ToSql + Sync),
) -> Rows {
    let sql = format!("SELECT id::bigint FROM item WHERE {condition} ORDER BY id");
    match client.query(&sql, &[value]).await {
        Ok(rows) => Ok(rows.iter().map(|r| r.get(0)).collect()),
        Err(e) => Err(wire_code(e.code().expect("a database error").code())),
    }
}

const INSERT: &str = "mutation($v: String!, $m: jsonb) {
    insert_item_one(object: {label: $v, owner: $v, meta: $m}) { id label owner meta } }";

#[tokio::test]
async fn graphql_arguments_and_variables() {
    let (s, canary) = server(false).await;
    let client = connect(&s.db_url).await;
    let corpus = corpus();
    // Inserts, by variables and by literals: each value comes back byte for byte.
    let mut rows: Vec<Vec<i64>> = Vec::new();
    for h in &corpus {
        let meta = json!({ h.text.clone(): h.text });
        let by_variable = admin(&s, INSERT, json!({"v": h.text, "m": meta})).await;
        let literal_insert = format!(
            "mutation {{ insert_item_one(object: {{label: {l}, owner: {l}}}) {{ id label owner }} }}",
            l = literal(&h.text)
        );
        let by_literal = admin(&s, &literal_insert, json!({})).await;
        if h.has_nul() {
            assert_eq!(by_variable, refused("data-exception"), "{}", h.name);
            assert_eq!(by_literal, refused("data-exception"), "{}", h.name);
            rows.push(Vec::new());
            continue;
        }
        let mut ids = Vec::new();
        for (outcome, meta) in [(by_variable, meta.clone()), (by_literal, Value::Null)] {
            let Outcome::Data(data) = outcome else {
                panic!("{}: {outcome:?}", h.name)
            };
            let row = &data["insert_item_one"];
            assert_eq!(row["label"], h.text, "{}", h.name);
            assert_eq!(row["owner"], h.text, "{}", h.name);
            if !meta.is_null() {
                assert_eq!(row["meta"], meta, "{}", h.name);
            }
            ids.push(row["id"].as_i64().unwrap());
        }
        for id in &ids {
            let stored = client
                .query_one(
                    "SELECT label, owner FROM item WHERE id = $1",
                    &[&i32::try_from(*id).unwrap()],
                )
                .await
                .unwrap();
            assert_eq!(stored.get::<_, String>(0), h.text, "{}", h.name);
            assert_eq!(stored.get::<_, String>(1), h.text, "{}", h.name);
        }
        let read = admin(
            &s,
            "query($id: Int!) { item_by_pk(id: $id) { label meta } }",
            json!({"id": ids[0]}),
        )
        .await;
        assert_eq!(
            read,
            Outcome::Data(json!({"item_by_pk": {"label": h.text, "meta": meta}})),
            "{}",
            h.name
        );
        rows.push(ids);
    }

    // Filters: `_eq` by literal and by variable matches exactly the rows of the value, and every
    // operator selects what Postgres selects with the value bound as a parameter.
    for (h, mine) in corpus.iter().zip(&rows) {
        let text = h.text.as_str();
        let list = vec![text.to_owned()];
        let expected_eq = if h.has_nul() {
            Err("data-exception".to_owned())
        } else {
            Ok(mine.clone())
        };
        let literal_eq = admin(
            &s,
            &format!(
                "{{ item(where: {{owner: {{_eq: {}}}}}, order_by: {{id: asc}}) {{ id }} }}",
                literal(text)
            ),
            json!({}),
        )
        .await;
        assert_eq!(ids(&literal_eq, "item"), expected_eq, "{}", h.name);
        let cases: [(&str, &str, &str, Value, Rows); 7] = [
            (
                "_eq",
                "String!",
                "label",
                json!(text),
                oracle(&client, "label = $1", &text).await,
            ),
            (
                "_neq",
                "String!",
                "label",
                json!(text),
                oracle(&client, "label <> $1", &text).await,
            ),
            (
                "_like",
                "String!",
                "label",
                json!(text),
                oracle(&client, "label LIKE $1", &text).await,
            ),
            (
                "_ilike",
                "String!",
                "label",
                json!(text),
                oracle(&client, "label ILIKE $1", &text).await,
            ),
            (
                "_in",
                "[String!]!",
                "label",
                json!([text]),
                oracle(&client, "label = ANY($1)", &list).await,
            ),
            (
                "_nin",
                "[String!]!",
                "label",
                json!([text]),
                oracle(&client, "NOT (label = ANY($1))", &list).await,
            ),
            (
                "_has_key",
                "String!",
                "meta",
                json!(text),
                oracle(&client, "meta ? $1", &text).await,
            ),
        ];
        for (operator, type_name, column, value, expected) in cases {
            let query = format!(
                "query($v: {type_name}) {{ item(where: {{{column}: {{{operator}: $v}}}}, order_by: {{id: asc}}) {{ id }} }}"
            );
            let got = admin(&s, &query, json!({ "v": value })).await;
            assert_eq!(ids(&got, "item"), expected, "{operator} {}", h.name);
            if operator == "_eq" || operator == "_in" {
                assert_eq!(expected, expected_eq, "{operator} {}", h.name);
            }
            if operator == "_like" && h.name == "backslash" {
                // A pattern ending with the escape character: SQLSTATE 22025.
                assert_eq!(expected, Err("bad-request".to_owned()));
            }
        }

        // Strings where the schema wants an enum or an integer are refused before any SQL.
        let refusals = [
            (
                "query($v: order_by!) { item(order_by: {label: $v}) { id } }",
                json!({"v": text}),
            ),
            (
                "query($v: Int!) { item(limit: $v) { id } }",
                json!({"v": text}),
            ),
            (
                "query($v: Int!) { item(offset: $v) { id } }",
                json!({"v": text}),
            ),
            (
                "query($v: [item_select_column!]) { item(distinct_on: $v) { id } }",
                json!({"v": [text]}),
            ),
            (
                "query($v: Int!) { item_by_pk(id: $v) { id } }",
                json!({"v": text}),
            ),
        ];
        for (query, variables) in refusals {
            assert_eq!(
                admin(&s, query, variables).await,
                refused("validation-failed"),
                "{query} {}",
                h.name
            );
        }
        for argument in ["order_by: {label: ", "limit: ", "offset: "] {
            let query = format!(
                "{{ item({argument}{}{}) {{ id }} }}",
                literal(text),
                if argument.ends_with("{label: ") {
                    "}"
                } else {
                    ""
                }
            );
            assert_eq!(
                admin(&s, &query, json!({})).await,
                refused("validation-failed"),
                "{argument} {}",
                h.name
            );
        }

        // A JSON path: parsed into keys that are parameters, or refused.
        if let Some(id) = mine.first() {
            let got = admin(
                &s,
                "query($id: Int!, $p: String!) { item_by_pk(id: $id) { meta(path: $p) } }",
                json!({"id": id, "p": text}),
            )
            .await;
            let meta = json!({ text: text });
            let acceptable = [
                refused("parse-failed"),
                Outcome::Data(json!({"item_by_pk": {"meta": null}})),
                Outcome::Data(json!({"item_by_pk": {"meta": text}})),
                Outcome::Data(json!({"item_by_pk": {"meta": meta}})),
            ];
            assert!(acceptable.contains(&got), "path {}: {got:?}", h.name);
        }
    }

    // As the document itself or as the operation name, it is refused before any planning.
    for h in &corpus {
        let (status, body) = post(&s, None, &h.text, json!({}), &[]).await;
        assert_eq!(
            outcome(status, &body),
            refused("parse-failed"),
            "{}",
            h.name
        );
        let response = s
            .http
            .post(format!("{}/v1/graphql", s.base))
            .header("X-Svc-Admin-Secret", SECRET)
            .json(&json!({"query": "query a { item { id } }", "operationName": h.text}))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap();
        assert_eq!(
            outcome(status, &body),
            refused("validation-failed"),
            "{}",
            h.name
        );
    }

    // Updates and deletes keyed by the value touch exactly its rows.
    for (h, mine) in corpus.iter().zip(&rows) {
        let changed = format!("changed: {}", h.text);
        let got = admin(
            &s,
            "mutation($v: String!, $w: String!) { update_item(where: {label: {_eq: $v}}, _set: {owner: $w}) { affected_rows returning { owner } } }",
            json!({"v": h.text, "w": changed}),
        )
        .await;
        let deleted = admin(
            &s,
            "mutation($v: String!) { delete_item(where: {owner: {_eq: $v}}) { affected_rows } }",
            json!({"v": changed}),
        )
        .await;
        if h.has_nul() {
            assert_eq!(got, refused("data-exception"), "{}", h.name);
            assert_eq!(deleted, refused("data-exception"), "{}", h.name);
            continue;
        }
        let returning: Vec<Value> = mine.iter().map(|_| json!({"owner": changed})).collect();
        assert_eq!(
            got,
            Outcome::Data(
                json!({"update_item": {"affected_rows": mine.len(), "returning": returning}})
            ),
            "{}",
            h.name
        );
        assert_eq!(
            deleted,
            Outcome::Data(json!({"delete_item": {"affected_rows": mine.len()}})),
            "{}",
            h.name
        );
    }
    assert_eq!(
        query_json(&s.db_url, "SELECT id FROM item").await,
        json!([])
    );
    canary.check(&[]).await;
}

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

/// `base` with the key `key`, printed as error paths print it (`docs/metadata-api.md`).
fn key_path(base: &str, key: &str) -> String {
    let mut chars = key.chars();
    let plain = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        format!("{base}.{key}")
    } else {
        format!(
            "{base}['{}']",
            key.replace('\\', "\\\\").replace('\'', "\\'")
        )
    }
}

/// Metadata operations naming `v` where a table, schema, column, relationship, computed
/// field, function, operator, trigger, event or query goes, each with the code and path of its
/// refusal.
fn refused_names(v: &str) -> Vec<(Value, &'static str, String)> {
    let hook = "http://127.0.0.1:9/";
    vec![
        (
            json!({"type": "track_table", "args": {"table": v}}),
            "not-exists",
            "$.args".into(),
        ),
        (
            json!({"type": "track_table", "args": {"table": {"schema": v, "name": "spare"}}}),
            "not-exists",
            "$.args".into(),
        ),
        (
            json!({"type": "untrack_table", "args": {"table": v}}),
            "already-untracked",
            "$.args".into(),
        ),
        (
            json!({"type": "track_table", "version": 2, "args": {"table": "spare", "configuration": {"custom_root_fields": {"select": v}}}}),
            "parse-failed",
            "$.args.configuration.custom_root_fields.select".into(),
        ),
        (
            json!({"type": "track_table", "version": 2, "args": {"table": "spare", "configuration": {"custom_column_names": {"note": v}}}}),
            "parse-failed",
            "$.args.configuration.custom_column_names.note".into(),
        ),
        (
            json!({"type": "track_table", "version": 2, "args": {"table": "spare", "configuration": {"custom_column_names": {v: "x"}}}}),
            "not-exists",
            key_path("$.args.configuration.custom_column_names", v),
        ),
        (
            json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "item", "custom_root_fields": {"insert_one": v}, "custom_column_names": {}}}),
            "parse-failed",
            "$.args.custom_root_fields.insert_one".into(),
        ),
        (
            json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "item", "custom_root_fields": {}, "custom_column_names": {"label": v}}}),
            "parse-failed",
            "$.args.custom_column_names.label".into(),
        ),
        (
            json!({"type": "create_object_relationship", "args": {"table": "item", "name": v, "using": {"foreign_key_constraint_on": "owner"}}}),
            "parse-failed",
            "$.args.name".into(),
        ),
        (
            json!({"type": "create_object_relationship", "args": {"table": "item", "name": "rel", "using": {"foreign_key_constraint_on": v}}}),
            "not-exists",
            "$.args.using".into(),
        ),
        (
            json!({"type": "create_array_relationship", "args": {"table": "item", "name": "rel", "using": {"manual_configuration": {"remote_table": v, "column_mapping": {"id": "id"}}}}}),
            "not-exists",
            "$.args.using".into(),
        ),
        (
            json!({"type": "drop_relationship", "args": {"table": "item", "relationship": v}}),
            "not-exists",
            "$.args.relationship".into(),
        ),
        (
            json!({"type": "add_computed_field", "args": {"table": "item", "name": v, "definition": {"function": "f"}}}),
            "parse-failed",
            "$.args.name".into(),
        ),
        (
            json!({"type": "add_computed_field", "args": {"table": "item", "name": "cf", "definition": {"function": {"schema": v, "name": v}}}}),
            "constraint-violation",
            "$.args".into(),
        ),
        (
            json!({"type": "create_select_permission", "args": {"table": v, "role": "r", "permission": {"columns": "*", "filter": {}}}}),
            "not-exists",
            "$.args.table".into(),
        ),
        (
            json!({"type": "create_select_permission", "args": {"table": "item", "role": "r", "permission": {"columns": [v], "filter": {}}}}),
            "not-exists",
            "$.args.permission.columns[0]".into(),
        ),
        (
            json!({"type": "create_select_permission", "args": {"table": "item", "role": "r", "permission": {"columns": "*", "filter": {v: {"_eq": 1}}}}}),
            "not-exists",
            key_path("$.args.permission.filter", v),
        ),
        (
            json!({"type": "create_select_permission", "args": {"table": "item", "role": "r", "permission": {"columns": "*", "filter": {"label": {v: 1}}}}}),
            "parse-failed",
            key_path("$.args.permission.filter.label", v),
        ),
        (
            json!({"type": "create_insert_permission", "args": {"table": "item", "role": "r", "permission": {"check": {}, "set": {v: "x"}}}}),
            "not-exists",
            key_path("$.args.permission.set", v),
        ),
        (
            json!({"type": "create_event_trigger", "args": {"name": v, "table": "item", "webhook": hook, "insert": {"columns": "*"}}}),
            "parse-failed",
            "$.args.name".into(),
        ),
        (
            json!({"type": "create_event_trigger", "args": {"name": "t", "table": "item", "webhook": hook, "update": {"columns": [v]}}}),
            "not-exists",
            "$.args.update.columns[0]".into(),
        ),
        (
            json!({"type": "invoke_event_trigger", "args": {"name": v, "payload": {}}}),
            "not-exists",
            "$.args.name".into(),
        ),
        (
            json!({"type": "create_query_collection", "args": {"name": "c", "definition": {"queries": [{"name": "q", "query": v}]}}}),
            "parse-failed",
            "$.args.definition.queries[0].query".into(),
        ),
    ]
}

#[tokio::test]
async fn metadata_names() {
    let (s, canary) = server(false).await;
    let corpus = corpus();
    for h in &corpus {
        // Refusals do not depend on each other: sent together.
        let cases = refused_names(&h.text);
        let answers = join_all(cases.iter().map(|(op, _, _)| s.query(op.clone()))).await;
        for ((op, code, path), (status, body)) in cases.iter().zip(answers) {
            assert_eq!(
                (status, body["code"].as_str(), body["path"].as_str()),
                (400, Some(*code), Some(path.as_str())),
                "{} {}: {}",
                h.name,
                op["type"],
                brief(&body.to_string())
            );
            assert!(body["error"].as_str().is_some_and(|e| !e.is_empty()));
        }
        // Role, collection and query names are any non-empty strings, kept as given.
        let v = h.text.as_str();
        let accepted = [
            json!({"type": "create_select_permission", "args": {"table": "item", "role": v, "permission": {"columns": "*", "filter": {"label": {"_eq": v}}}}}),
            json!({"type": "create_query_collection", "args": {"name": v, "definition": {"queries": [{"name": v, "query": "{ item { id } }"}]}}}),
            json!({"type": "add_collection_to_allowlist", "args": {"collection": v}}),
        ];
        if v.is_empty() {
            let paths = ["$.args.role", "$.args.name", "$.args.collection"];
            for (op, path) in accepted.into_iter().zip(paths) {
                s.fails(
                    op,
                    400,
                    if path == "$.args.collection" {
                        "not-exists"
                    } else {
                        "parse-failed"
                    },
                    path,
                )
                .await;
            }
            continue;
        }
        s.ok(json!({"type": "bulk", "args": accepted})).await;
    }
    let export = s.export().await;
    let names = |items: &Value, key: &str| -> BTreeSet<String> {
        items
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i[key].as_str().unwrap().to_owned())
            .collect()
    };
    let expected: BTreeSet<String> = corpus
        .iter()
        .filter(|h| !h.text.is_empty())
        .map(|h| h.text.clone())
        .collect();
    assert_eq!(
        names(&export["tables"][0]["select_permissions"], "role"),
        expected
    );
    assert_eq!(names(&export["query_collections"], "name"), expected);
    assert_eq!(names(&export["allowlist"], "collection"), expected);
    // And they go away by the same names.
    let drops: Vec<Value> = expected
        .iter()
        .flat_map(|v| {
            [
                json!({"type": "drop_select_permission", "args": {"table": "item", "role": v}}),
                json!({"type": "drop_query_collection", "args": {"collection": v, "cascade": true}}),
            ]
        })
        .collect();
    s.ok(json!({"type": "bulk", "args": drops})).await;
    let export = s.export().await;
    assert!(
        export["tables"][0].get("select_permissions").is_none(),
        "{export}"
    );
    assert!(export.get("query_collections").is_none(), "{export}");
    canary.check(&[]).await;
}

/// The hostile columns of `hostile` and the GraphQL names `custom_column_names` gives them.
const COLUMNS: [(&str, &str); 10] = [
    ("label'; DROP TABLE canary; --", "c_label"),
    ("a\"b", "c_quote"),
    ("x y", "c_space"),
    ("$$", "c_dollar"),
    ("$tag$", "c_tag"),
    ("/* */", "c_comment"),
    ("\\", "c_backslash"),
    ("\u{02BC}", "c_apostrophe"),
    ("%s {}", "c_format"),
    ("line\nbreak", "c_newline"),
];

/// An identifier quoted as a user would write it in `run_sql`.
fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The SQL a user runs through `run_sql`: tables, a schema, a constraint and a function with
/// hostile names.
fn hostile_objects_sql() -> String {
    let columns: Vec<String> = COLUMNS
        .iter()
        .map(|(c, _)| format!("{} text", ident(c)))
        .collect();
    format!(
        r#"CREATE TABLE "a""b; drop table canary--" (id int PRIMARY KEY, "col ""q"" ; --" text);
        CREATE SCHEMA "s'; drop table canary; --";
        CREATE TABLE "s'; drop table canary; --".plain (id int PRIMARY KEY);
        CREATE TABLE hostile (id serial PRIMARY KEY, {},
            CONSTRAINT "uq'; DROP TABLE canary; --" UNIQUE ("x y"));
        CREATE TABLE buddy (id serial PRIMARY KEY,
            "ref'; --" int CONSTRAINT "fk""; DROP TABLE canary; --" REFERENCES hostile (id));
        CREATE FUNCTION "shout'; DROP TABLE canary; --"(h hostile) RETURNS text
            LANGUAGE sql STABLE AS $$ SELECT h."label'; DROP TABLE canary; --" || '!' $$"#,
        columns.join(", ")
    )
}

/// Runs a GraphQL request as admin that must succeed; returns `data`.
async fn data(s: &TestServer, query: &str, variables: Value) -> Value {
    match admin(s, query, variables).await {
        Outcome::Data(data) => data,
        other => panic!("{query}: {other:?}"),
    }
}

/// A row of `hostile` by GraphQL name: every hostile column holds `<prefix>: <its name>`.
fn hostile_row(prefix: &str) -> Value {
    COLUMNS
        .iter()
        .map(|(column, field)| ((*field).to_owned(), json!(format!("{prefix}: {column}"))))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// The same row keyed by Postgres column names, as `row_to_json` (and the capture) gives it.
fn stored_row(id: i64, prefix: &str) -> Value {
    let mut row = serde_json::Map::new();
    row.insert("id".to_owned(), json!(id));
    for (column, _) in COLUMNS {
        row.insert(column.to_owned(), json!(format!("{prefix}: {column}")));
    }
    row.into()
}

/// The events of the trigger `hostile_capture` (op and data), in capture order.
async fn captured(s: &TestServer) -> Vec<Value> {
    let events = query_json(
        &s.db_url,
        "SELECT payload->>'op' AS op, payload->'data' AS data FROM basalt_catalog.event_log
         WHERE trigger_name = 'hostile_capture' AND payload->>'op' <> 'MANUAL'
         ORDER BY created_at, id",
    )
    .await;
    events.as_array().unwrap().clone()
}

const SELECT_HOSTILE: &str = "id c_label c_quote c_space c_dollar c_tag c_comment c_backslash c_apostrophe c_format c_newline";

#[tokio::test]
async fn hostile_identifiers_from_run_sql() {
    let (s, canary) = server(false).await;
    let created = [
        "public.a\"b; drop table canary--",
        "s'; drop table canary; --.plain",
        "public.hostile",
        "public.buddy",
    ];
    assert_eq!(
        s.ok(json!({"type": "run_sql", "args": {"sql": hostile_objects_sql()}}))
            .await,
        json!({"result_type": "CommandOk", "result": null})
    );

    // A table whose GraphQL name would be invalid cannot be tracked, custom root fields or not:
    // its type names derive from the table name.
    let roots: serde_json::Map<String, Value> = [
        "select",
        "select_by_pk",
        "select_aggregate",
        "insert",
        "insert_one",
        "update",
        "update_by_pk",
        "delete",
        "delete_by_pk",
    ]
    .iter()
    .map(|k| ((*k).to_owned(), json!(format!("ab_{k}"))))
    .collect();
    for args in [
        json!({"table": "a\"b; drop table canary--"}),
        json!({"table": "a\"b; drop table canary--", "configuration": {"custom_root_fields": roots, "custom_column_names": {"col \"q\" ; --": "q"}}}),
        json!({"table": {"schema": "s'; drop table canary; --", "name": "plain"}}),
    ] {
        let r = s
            .fails(
                json!({"type": "track_table", "version": 2, "args": args}),
                400,
                "not-supported",
                "$.args",
            )
            .await;
        assert!(
            r["error"]
                .as_str()
                .unwrap()
                .ends_with("in the GraphQL schema because it is not a valid GraphQL identifier"),
            "{r}"
        );
    }

    // A table with hostile column names is tracked; those columns stay out of the schema until
    // `custom_column_names` names them (as constraints without GraphQL names stay out of
    // `<t>_constraint`).
    s.ok(json!({"type": "track_table", "args": {"table": "hostile"}}))
        .await;
    let fields = "{ __type(name: \"hostile\") { fields { name } } c: __type(name: \"hostile_constraint\") { enumValues { name } } }";
    assert_eq!(
        data(&s, fields, json!({})).await,
        json!({"__type": {"fields": [{"name": "id"}]}, "c": {"enumValues": [{"name": "hostile_pkey"}]}})
    );
    let custom: serde_json::Map<String, Value> = COLUMNS
        .iter()
        .map(|(c, f)| ((*c).to_owned(), json!(f)))
        .collect();
    s.ok(json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "hostile", "custom_root_fields": {}, "custom_column_names": custom}}))
        .await;
    let mut names: Vec<&str> = COLUMNS.iter().map(|(_, f)| *f).collect();
    names.push("id");
    names.sort_unstable();
    let expected: Vec<Value> = names.iter().map(|n| json!({ "name": n })).collect();
    assert_eq!(
        data(&s, fields, json!({})).await["__type"]["fields"],
        json!(expected)
    );

    // An event trigger on the hostile columns: the capture triggers quote them.
    s.ok(json!({"type": "create_event_trigger", "args": {
        "name": "hostile_capture", "table": "hostile", "webhook": "http://127.0.0.1:9/hook",
        "insert": {"columns": "*"},
        "update": {"columns": ["x y"], "payload": ["id", "x y", "a\"b"]},
        "delete": {"columns": "*", "payload": ["$$"]},
        "enable_manual": true}}))
        .await;

    // Inserts, reads, filters, ordering, aggregates and updates through the custom names.
    let insert = format!(
        "mutation($o: hostile_insert_input!) {{ insert_hostile_one(object: $o) {{ {SELECT_HOSTILE} }} }}"
    );
    let mut ids = Vec::new();
    for prefix in ["a", "b"] {
        let row = data(&s, &insert, json!({ "o": hostile_row(prefix) })).await
            ["insert_hostile_one"]
            .clone();
        let id = row["id"].as_i64().unwrap();
        let mut expected = hostile_row(prefix);
        expected["id"] = json!(id);
        assert_eq!(row, expected);
        ids.push(id);
    }
    assert_eq!(
        query_json(
            &s.db_url,
            "SELECT row_to_json(h) AS row FROM hostile h ORDER BY id"
        )
        .await,
        json!([{"row": stored_row(ids[0], "a")}, {"row": stored_row(ids[1], "b")}])
    );
    let d = data(
        &s,
        "query($v: String!) {
            f: hostile(where: {c_space: {_eq: $v}}) { id }
            o: hostile(order_by: {c_dollar: desc}) { id }
            d: hostile(distinct_on: [c_newline], order_by: {c_newline: asc}) { c_newline }
            a: hostile_aggregate { aggregate { max { c_label } count(columns: [c_quote], distinct: true) } } }",
        json!({"v": "b: x y"}),
    )
    .await;
    assert_eq!(
        d,
        json!({"f": [{"id": ids[1]}], "o": [{"id": ids[1]}, {"id": ids[0]}],
               "d": [{"c_newline": "a: line\nbreak"}, {"c_newline": "b: line\nbreak"}],
               "a": {"aggregate": {"max": {"c_label": "b: label'; DROP TABLE canary; --"}, "count": 2}}})
    );
    let d = data(
        &s,
        "mutation($id: Int!) {
            s: update_hostile(where: {c_backslash: {_eq: \"a: \\\\\"}}, _set: {c_space: \"a2: x y\"}) { affected_rows }
            d: update_hostile_by_pk(pk_columns: {id: $id}, _set: {c_dollar: \"b2: $$\"}) { c_dollar }
            c: insert_hostile_one(object: {id: $id, c_tag: \"b2: $tag$\"},
                on_conflict: {constraint: hostile_pkey, update_columns: [c_tag]}) { c_tag } }",
        json!({"id": ids[1]}),
    )
    .await;
    assert_eq!(
        d,
        json!({"s": {"affected_rows": 1}, "d": {"c_dollar": "b2: $$"}, "c": {"c_tag": "b2: $tag$"}})
    );

    // Captured with the Postgres column names as keys; only `x y` fires updates.
    let mut after_update = stored_row(ids[0], "a");
    after_update["x y"] = json!("a2: x y");
    let update_payload =
        |row: &Value| json!({"id": row["id"], "x y": row["x y"], "a\"b": row["a\"b"]});
    assert_eq!(
        captured(&s).await,
        [
            json!({"op": "INSERT", "data": {"old": null, "new": stored_row(ids[0], "a")}}),
            json!({"op": "INSERT", "data": {"old": null, "new": stored_row(ids[1], "b")}}),
            json!({"op": "UPDATE", "data": {"old": update_payload(&stored_row(ids[0], "a")), "new": update_payload(&after_update)}}),
        ]
    );

    // Deleting captures only the payload column `$$`.
    let d = data(
        &s,
        "mutation($id: Int!) { delete_hostile_by_pk(id: $id) { id } }",
        json!({"id": ids[0]}),
    )
    .await;
    assert_eq!(d, json!({"delete_hostile_by_pk": {"id": ids[0]}}));
    assert_eq!(
        captured(&s).await.last(),
        Some(&json!({"op": "DELETE", "data": {"old": {"$$": "a: $$"}, "new": null}}))
    );

    // Manual events carry any payload verbatim; `\u0000` cannot be stored in `jsonb`.
    for h in &corpus() {
        let invoke = json!({"type": "invoke_event_trigger", "args": {"name": "hostile_capture", "payload": {"v": h.text, h.text.clone(): 1}}});
        if h.has_nul() {
            s.fails(invoke, 400, "parse-failed", "$.args.payload").await;
        } else {
            let id = s.ok(invoke).await["event_id"].as_str().unwrap().to_owned();
            let stored = query_json(
                &s.db_url,
                &format!("SELECT payload->'data' AS data FROM basalt_catalog.event_log WHERE id = '{id}'"),
            )
            .await;
            assert_eq!(
                stored,
                json!([{"data": {"v": h.text, h.text.clone(): 1}}]),
                "{}",
                h.name
            );
        }
        let r = s
            .fails(
                json!({"type": "redeliver_event", "args": {"event_id": h.text}}),
                400,
                "not-exists",
                "$.args.event_id",
            )
            .await;
        assert_eq!(r["error"], "event not found", "{}", h.name);
    }

    // Relationships over a hostile foreign-key column and constraint.
    s.ok(json!({"type": "bulk", "args": [
        {"type": "track_table", "version": 2, "args": {"table": "buddy", "configuration": {"custom_column_names": {"ref'; --": "ref"}}}},
        {"type": "create_object_relationship", "args": {"table": "buddy", "name": "host", "using": {"foreign_key_constraint_on": "ref'; --"}}},
        {"type": "create_array_relationship", "args": {"table": "hostile", "name": "buddies", "using": {"foreign_key_constraint_on": {"table": "buddy", "column": "ref'; --"}}}},
        {"type": "create_array_relationship", "args": {"table": "hostile", "name": "twins", "using": {"manual_configuration": {"remote_table": "hostile", "column_mapping": {"x y": "x y"}}}}},
        {"type": "add_computed_field", "args": {"table": "hostile", "name": "shout", "definition": {"function": "shout'; DROP TABLE canary; --"}}}
    ]}))
    .await;
    let d = data(
        &s,
        "mutation($id: Int!) { insert_buddy_one(object: {ref: $id}) { ref host { c_label shout twins { id } buddies { ref } } } }",
        json!({"id": ids[1]}),
    )
    .await;
    let label = "b: label'; DROP TABLE canary; --";
    assert_eq!(
        d,
        json!({"insert_buddy_one": {"ref": ids[1], "host": {"c_label": label, "shout": format!("{label}!"),
            "twins": [{"id": ids[1]}], "buddies": [{"ref": ids[1]}]}}})
    );
    let d = data(
        &s,
        "{ hostile(where: {buddies: {ref: {_is_null: false}}}, order_by: {c_label: asc}) { id } }",
        json!({}),
    )
    .await;
    assert_eq!(d, json!({"hostile": [{"id": ids[1]}]}));

    // Permissions that list, filter on and preset hostile columns, with a session variable.
    let all: Vec<&str> = COLUMNS.iter().map(|(c, _)| *c).chain(["id"]).collect();
    s.ok(json!({"type": "bulk", "args": [
        {"type": "create_select_permission", "args": {"table": "hostile", "role": "reader", "permission": {
            "columns": all, "computed_fields": ["shout"],
            "filter": {"label'; DROP TABLE canary; --": {"_eq": "X-Svc-User-Id"}}}}},
        {"type": "create_insert_permission", "args": {"table": "hostile", "role": "reader", "permission": {
            "check": {"a\"b": {"_like": "%'%"}}, "set": {"x y": "x-svc-user-id"},
            "columns": ["label'; DROP TABLE canary; --", "a\"b"]}}}
    ]}))
    .await;
    let reader = [
        ("X-Svc-Role", HeaderValue::from_static("reader")),
        (
            "X-Svc-User-Id",
            HeaderValue::from_static("b: label'; DROP TABLE canary; --"),
        ),
    ];
    let (status, body) = post(
        &s,
        None,
        "{ hostile { id c_label shout } }",
        json!({}),
        &reader,
    )
    .await;
    assert_eq!(
        outcome(status, &body),
        Outcome::Data(
            json!({"hostile": [{"id": ids[1], "c_label": label, "shout": format!("{label}!")}]})
        )
    );
    let write = "mutation($l: String!, $q: String!) { insert_hostile_one(object: {c_label: $l, c_quote: $q}) { c_space c_quote } }";
    let (status, body) = post(&s, None, write, json!({"l": label, "q": "it's"}), &reader).await;
    assert_eq!(
        outcome(status, &body),
        Outcome::Data(json!({"insert_hostile_one": {"c_space": label, "c_quote": "it's"}}))
    );
    let other = [
        ("X-Svc-Role", HeaderValue::from_static("reader")),
        ("X-Svc-User-Id", HeaderValue::from_static("c: '--")),
    ];
    let (status, body) = post(
        &s,
        None,
        write,
        json!({"l": "c: '--", "q": "no quote"}),
        &other,
    )
    .await;
    assert_eq!(outcome(status, &body), refused("permission-error"));

    // Renaming a hostile column to another one is followed, capture triggers included.
    s.ok(json!({"type": "run_sql", "args": {"sql": "ALTER TABLE hostile RENAME COLUMN \"x y\" TO \"y x'; --\""}}))
        .await;
    let d = data(
        &s,
        "mutation($id: Int!) { update_hostile_by_pk(pk_columns: {id: $id}, _set: {c_space: \"b3\"}) { c_space } }",
        json!({"id": ids[1]}),
    )
    .await;
    assert_eq!(d, json!({"update_hostile_by_pk": {"c_space": "b3"}}));
    assert_eq!(
        captured(&s).await.last().map(|e| &e["data"]["new"]),
        Some(&json!({"id": ids[1], "y x'; --": "b3", "a\"b": "b: a\"b"}))
    );

    // Deleting the trigger removes its capture triggers.
    let triggers = "SELECT tgname FROM pg_trigger WHERE tgrelid = 'hostile'::regclass AND NOT tgisinternal ORDER BY 1";
    assert_eq!(
        query_json(&s.db_url, triggers).await,
        json!([{"tgname": "notify_basalt_hostile_capture_DELETE"}, {"tgname": "notify_basalt_hostile_capture_INSERT"}, {"tgname": "notify_basalt_hostile_capture_UPDATE"}])
    );
    s.ok(json!({"type": "delete_event_trigger", "args": {"name": "hostile_capture"}}))
        .await;
    assert_eq!(query_json(&s.db_url, triggers).await, json!([]));
    canary.check(&created).await;
}
