//! Queries as a role: permissions filter rows and columns (relationships, aggregates,
//! `_exists` and column comparisons included), and reads set the session in Postgres only where
//! it can be observed.

use super::ids;
use crate::harness::TestServer;
use serde_json::{json, Value};

#[tokio::test]
async fn permissions_filter_rows_and_columns() {
    let s = TestServer::blog().await;
    // user: drafts only of their own; columns limited; aggregates allowed on author only.
    let r = s
        .gql_role(
            "{ articles(order_by: {id: asc}) { id status } }",
            "user",
            &[("X-Svc-User-Id", "1")],
        )
        .await;
    assert_eq!(ids(&r["data"]["articles"]), [1, 2, 3, 5], "{r}");
    let r = s
        .gql_role(
            "{ articles(order_by: {id: asc}) { id } }",
            "user",
            &[("X-Svc-User-Id", "2")],
        )
        .await;
    assert_eq!(ids(&r["data"]["articles"]), [1, 3, 4, 5]);
    let r = s
        .gql_role("{ author { bio } }", "user", &[("X-Svc-User-Id", "1")])
        .await;
    assert_eq!(
        r["errors"][0]["message"],
        "field \"bio\" not found in type: 'author'"
    );
    let r = s
        .gql_role(
            "{ article_aggregate { aggregate { count } } }",
            "user",
            &[("X-Svc-User-Id", "1")],
        )
        .await;
    assert_eq!(r["errors"][0]["extensions"]["code"], "validation-failed");
    let r = s.gql_role("{ author_aggregate { aggregate { count } } author(order_by: {id: asc}) { id articles { id } } }", "user", &[("X-Svc-User-Id", "1")]).await;
    assert_eq!(r["data"]["author_aggregate"]["aggregate"]["count"], 3);
    // Related rows are filtered by the related table's permission.
    assert_eq!(ids(&r["data"]["author"][1]["articles"]), [3]);
    // A missing session variable is an error, not an empty filter.
    let r = s.gql_role("{ articles { id } }", "user", &[]).await;
    assert_eq!(
        r["errors"][0],
        json!({"message": "missing session variable: \"x-svc-user-id\"", "extensions": {"path": "$", "code": "not-found"}})
    );
    // guest: relationship-based filter, limit cap, no access to comments at all.
    let r = s
        .gql_role("{ author(order_by: {id: asc}) { id name } }", "guest", &[])
        .await;
    assert_eq!(
        ids(&r["data"]["author"]),
        [1, 2],
        "limit 2 caps the 3 visible authors"
    );
    let r = s
        .gql_role(
            "{ author(order_by: {id: asc}, limit: 10) { id } }",
            "guest",
            &[],
        )
        .await;
    assert_eq!(ids(&r["data"]["author"]), [1, 2]);
    let r = s
        .gql_role(
            "{ author(order_by: {id: asc}, limit: 1) { id } }",
            "guest",
            &[],
        )
        .await;
    assert_eq!(ids(&r["data"]["author"]), [1]);
    let r = s
        .gql_role(
            "mutation { insert_article(objects: []) { affected_rows } }",
            "guest",
            &[],
        )
        .await;
    assert_eq!(r["errors"][0]["message"], "no mutations exist");
    let r = s.gql_role("{ comment { id } }", "guest", &[]).await;
    assert_eq!(
        r["errors"][0]["message"],
        "field \"comment\" not found in type: 'query_root'"
    );
    let r = s
        .gql_role("{ author { articles { id } } }", "guest", &[])
        .await;
    assert!(r["data"]["author"][0]["articles"].is_array(), "{r}");
    let r = s
        .gql_role("{ comment_by_pk(id: 1) { id } }", "guest", &[])
        .await;
    assert_eq!(
        r["errors"][0]["message"],
        "field \"comment_by_pk\" not found in type: 'query_root'"
    );
    let r = s
        .gql_role(
            "{ articleById(id: 2) { id } a: articleById(id: 1) { id } }",
            "guest",
            &[],
        )
        .await;
    assert_eq!(
        r,
        json!({"data": {"articleById": null, "a": {"id": 1}}}),
        "by_pk obeys the filter"
    );
    // A role without any permission gets the placeholder root.
    let r = s
        .gql_role("{ no_queries_available }", "stranger", &[])
        .await;
    assert_eq!(
        r["data"]["no_queries_available"]
            .as_str()
            .map(|m| m.contains("no queries available")),
        Some(true),
        "{r}"
    );
}

#[tokio::test]
async fn permission_exists_and_column_comparisons() {
    let s = TestServer::blog().await;
    s.ok(json!({"type": "create_select_permission", "args": {"table": "article", "role": "auditor", "permission": {"columns": ["id"],
        "filter": {"$exists": {"_table": "comment", "_where": {"article_id": {"_ceq": ["$", "id"]}}}}}}})).await;
    let r = s
        .gql_role("{ articles(order_by: {id: asc}) { id } }", "auditor", &[])
        .await;
    assert_eq!(ids(&r["data"]["articles"]), [1, 3, 5], "{r}");
    s.ok(json!({"type": "create_select_permission", "args": {"table": "article", "role": "selfish", "permission": {"columns": ["id"],
        "filter": {"id": {"$ceq": "author_id"}}}}})).await;
    let r = s.gql_role("{ articles { id } }", "selfish", &[]).await;
    assert_eq!(ids(&r["data"]["articles"]), [1]);
    // A session variable holding a Postgres array literal works with _in.
    s.ok(json!({"type": "create_select_permission", "args": {"table": "article", "role": "picker", "permission": {"columns": ["id"],
        "filter": {"id": {"_in": "X-Svc-Allowed-Ids"}}}}})).await;
    let r = s
        .gql_role(
            "{ articles(order_by: {id: asc}) { id } }",
            "picker",
            &[("X-Svc-Allowed-Ids", "{2,4}")],
        )
        .await;
    assert_eq!(ids(&r["data"]["articles"]), [2, 4], "{r}");
}

#[tokio::test]
async fn reads_set_the_session_only_where_it_can_be_observed() {
    let s = TestServer::blog().await;
    s.sql("CREATE VIEW session_view AS SELECT current_setting('basalt.user', true) AS who")
        .await;
    s.ok(json!({"type": "track_table", "args": {"table": "session_view"}}))
        .await;
    s.ok(
        json!({"type": "create_select_permission", "args": {"table": "session_view", "role": "user",
                "permission": {"columns": ["who"], "filter": {}}}}),
    )
    .await;
    let url = format!("{}/v1/graphql/explain", s.base);
    let explain = |query: &str| {
        let body = json!({"query": {"query": query}, "user": {"X-Svc-Role": "admin"}});
        let request = s.http.post(&url).json(&body).send();
        async move {
            let r: Value = request.await.unwrap().json().await.unwrap();
            r[0]["sql"].as_str().unwrap().to_owned()
        }
    };
    // Plain tables without row-level security: nothing can read the setting.
    let plain = explain("{ author(limit: 1) { id name } }").await;
    assert!(!plain.contains("set_config"), "{plain}");
    // A computed field (a function) and a view can: the session is set.
    let function = explain("{ author(limit: 1) { full_name } }").await;
    assert!(function.contains("set_config('basalt.user'"), "{function}");
    let view = explain("{ session_view { who } }").await;
    assert!(view.contains("set_config('basalt.user'"), "{view}");
    // And what they read is the caller's session.
    let r = s
        .gql_role(
            "{ session_view { who } }",
            "user",
            &[("X-Svc-User-Id", "7")],
        )
        .await;
    let who: Value =
        serde_json::from_str(r["data"]["session_view"][0]["who"].as_str().unwrap()).unwrap();
    assert_eq!(who["x-svc-user-id"], "7", "{r}");
    // Plain reads still work, with their parameters renumbered.
    let r = s
        .graphql_as(
            json!({"query": "query($n: Int!) { author(limit: $n, order_by: {id: asc}) { id } }",
                   "variables": {"n": 1}}),
            &[],
        )
        .await;
    assert_eq!(r, json!({"data": {"author": [{"id": 1}]}}));
}
