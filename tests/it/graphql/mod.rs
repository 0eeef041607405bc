//! GraphQL over HTTP and WebSocket on the blog fixture (`docs/graphql.md`): queries (reads,
//! reads as a role, the request around them), mutations, introspection, subscriptions,
//! statements shared by concurrent requests, and the SQL generated for them (translation
//! goldenfiles in `tests/goldenfiles/`, insta snapshots in `snapshots/`); the per-role API
//! limits on a fixture of their own (`limits.rs`); and `update_<t>_many`, preset-only and
//! nested updates on fixtures of their own (`nested_updates.rs`, `nested_keys.rs`).

mod goldenfiles;
pub(crate) mod introspection;
mod limits;
mod mutations;
mod nested_keys;
pub(crate) mod nested_updates;
mod queries;
mod read_permissions;
mod requests;
mod shared_statements;
pub(crate) mod sql_snapshots;
pub(crate) mod subscriptions;

use crate::harness::TestServer;
use serde_json::Value;

/// The `id`s of a list of rows.
fn ids(v: &Value) -> Vec<i64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect()
}

/// The data of a query as admin that must have no errors.
async fn data(s: &TestServer, q: &str) -> Value {
    let r = s.gql(q).await;
    assert!(r.get("errors").is_none(), "{q}: {r}");
    r["data"].clone()
}
