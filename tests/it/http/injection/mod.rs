//! The SQL injection corpus (`docs/security.md`): hostile strings (quotes, `'; DROP TABLE
//! canary; --`, dollar quotes, comments, backslashes, confusable apostrophes, a NUL byte,
//! 100 KB, format specifiers) in every position of the public APIs that reaches SQL. Each one
//! either round-trips as data or is refused with a clear error — `4xx {path, error, code}` on
//! the metadata API, a GraphQL error with `extensions.code` — and never runs: every test ends
//! by checking that the `canary` table still holds its rows and that no table went away. The
//! corpus, the canary and the request helpers are here; one file per kind of position.

mod arguments;
mod functions;
mod identifiers;
mod names;
mod rest;
mod sessions;

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
