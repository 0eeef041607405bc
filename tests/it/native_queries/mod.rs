//! Logical models and native queries (`docs/native-queries.md`): the operations, their
//! immediate and deferred checks, the validation by Postgres, and `run_sql` breaking one.

mod relationships;
mod tracking;

use crate::harness::TestServer;
use serde_json::{json, Value};

/// The contract's fixture.
pub const FIXTURE: &str = r#"
CREATE TABLE author (id int PRIMARY KEY, name text);
CREATE TABLE article (id int PRIMARY KEY, title text NOT NULL, content text NOT NULL, published date,
  author_id int);
INSERT INTO author VALUES (1, 'Ann');
INSERT INTO article VALUES (1, 'Hello', 'Lorem ipsum dolor', '2023-01-01', 1),
  (2, 'Later', 'Sed ut perspiciatis', '2023-04-04', 1), (3, 'Draft', 'Unfinished', NULL, 1);
"#;

/// `track_logical_model` of the contract's example.
pub fn excerpt_model() -> Value {
    json!({"type": "track_logical_model", "args": {"name": "article_excerpt",
        "description": "an article, shortened",
        "fields": [{"name": "id", "type": {"scalar": "integer"}}, {"name": "title", "type": {"scalar": "text"}},
            {"name": "excerpt", "type": {"scalar": "text"}},
            {"name": "published", "type": {"scalar": "date", "nullable": true}}]}})
}

/// `track_native_query` of the contract's example.
pub fn excerpt_query() -> Value {
    json!({"type": "track_native_query", "args": {"root_field_name": "article_with_excerpt",
        "returns": "article_excerpt",
        "arguments": {"max_length": {"type": "integer", "description": "characters to keep"}},
        "code": "SELECT id, title, substring(content, 1, {{max_length}}) AS excerpt, published FROM article"}})
}

/// A server on the fixture with `author` tracked.
pub async fn server() -> TestServer {
    let s = TestServer::with_fixture(FIXTURE).await;
    s.ok(json!({"type": "track_table", "args": {"table": "author"}}))
        .await;
    s
}
