//! Tracked functions (`docs/functions.md`): the operations and their rules, the root fields
//! as roles see them, calls with every way of passing arguments, mutation functions in the
//! mutation's transaction, and the `run_sql` lifecycle.

mod lifecycle;
mod ported;
mod tracking;

use crate::harness::TestServer;
use serde_json::{json, Value};

/// The contract's fixture: `article` with a reader role, a search function and a mutation.
pub const FIXTURE: &str = r#"
CREATE TABLE article (id serial PRIMARY KEY, title text NOT NULL, is_published boolean NOT NULL,
  views int NOT NULL DEFAULT 0);
INSERT INTO article (title, is_published) VALUES ('GraphQL intro', true), ('Postgres tips', true),
  ('GraphQL draft', false);
CREATE FUNCTION search_articles(search text, max_id int DEFAULT 1000) RETURNS SETOF article AS $$
  SELECT * FROM article WHERE title ILIKE '%' || search || '%' AND id <= max_id
$$ LANGUAGE sql STABLE;
CREATE FUNCTION count_view(basalt_session json, article_id int) RETURNS article AS $$
  UPDATE article SET views = views + 1 WHERE id = article_id RETURNING *
$$ LANGUAGE sql;
"#;

/// A server on the fixture with `article` tracked and the reader's select permission.
pub async fn server() -> TestServer {
    let s = TestServer::with_fixture(FIXTURE).await;
    setup(&s).await;
    s
}

/// Tracks `article` and gives `reader` its select permission.
pub async fn setup(s: &TestServer) {
    s.ok(json!({"type": "track_table", "args": {"table": "article"}}))
        .await;
    s.ok(
        json!({"type": "create_select_permission", "args": {"table": "article", "role": "reader",
        "permission": {"columns": ["id", "title"], "filter": {"is_published": {"_eq": true}}}}}),
    )
    .await;
}

/// A GraphQL request as `reader`.
pub async fn as_reader(s: &TestServer, query: &str) -> Value {
    s.gql_role(query, "reader", &[]).await
}
