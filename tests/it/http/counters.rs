//! The request path's performance properties, proven by counting work (never by timing).

use crate::harness::{fresh_database, query_json, run_sql, TestServer, BLOG, BLOG_METADATA};
use basalt::config::ServeConfig;
use basalt::stats::CountersSnapshot;
use serde_json::{json, Value};

async fn blog_with_pool(pool_size: usize) -> TestServer {
    blog_with(|c| c.pool_size = pool_size).await
}

/// The blog schema, tracked on a server configured by `configure`.
async fn blog_with(configure: impl FnOnce(&mut ServeConfig)) -> TestServer {
    let db = fresh_database().await;
    run_sql(&db, BLOG).await;
    let server = TestServer::on(&db, configure).await;
    let metadata: Value = serde_json::from_str(BLOG_METADATA).unwrap();
    server
        .ok(json!({"type": "replace_metadata", "args": metadata}))
        .await;
    server
}

/// Runs [`QUERY`] for each id in turn, each answered without errors.
async fn read_articles(server: &TestServer, ids: &[i64]) {
    for id in ids {
        let r = server
            .graphql_as(json!({"query": QUERY, "variables": {"id": id}}), &[])
            .await;
        assert!(r.get("errors").is_none(), "{r}");
    }
}

fn counters(server: &TestServer) -> CountersSnapshot {
    server.running.state.counters.snapshot()
}

const QUERY: &str = "query ($id: Int!) { articleById(id: $id) { id title author { name } } }";

#[tokio::test]
async fn a_plan_cache_hit_neither_parses_nor_plans_nor_prepares() {
    let server = blog_with_pool(1).await;
    let before = counters(&server);
    read_articles(&server, &[1, 2, 3, 1, 2]).await;
    let after = counters(&server);
    assert_eq!(after.documents_parsed - before.documents_parsed, 1);
    assert_eq!(after.plans_compiled - before.plans_compiled, 1);
    assert_eq!(after.plan_cache_hits - before.plan_cache_hits, 4);
    // One pooled connection: each statement is prepared once and reused. The read runs
    // alone in two forms (its own statement, then its shared statement with one row, each
    // timed before the cheaper is chosen): two statements, whichever runs after.
    assert_eq!(after.statements_prepared - before.statements_prepared, 2);
    let one_row = after.alone_multiplexed - before.alone_multiplexed;
    assert!(
        (1..=4).contains(&one_row),
        "the second ran as one row: {one_row}"
    );
    // A different document is a miss of its own.
    server.gql("{ articles(limit: 1) { id } }").await;
    let third = counters(&server);
    assert_eq!(third.plans_compiled - after.plans_compiled, 1);
    assert_eq!(third.statements_prepared - after.statements_prepared, 1);
}

/// The pool hands out the connection returned last: one request after another keeps using
/// one connection (its backend awake, its statements prepared), however many the pool holds
/// idle. Handing out the connection idle longest would walk all four here, preparing the
/// plan's statements on each.
#[tokio::test]
async fn requests_one_after_another_reuse_the_connection_returned_last() {
    // The event and action workers and the metadata poll share the pool: sleeping, they take
    // no connection from under the requests.
    let server = blog_with(|c| {
        c.pool_size = 4;
        c.events.fetch_interval_ms = 3_600_000;
        c.actions.poll_interval_ms = 3_600_000;
        c.metadata_poll_seconds = 3_600;
    })
    .await;
    // Four connections open and idle, as after a burst of concurrent requests.
    let pool = &server.running.state.pool;
    let held = futures_util::future::try_join_all((0..4).map(|_| pool.get()))
        .await
        .unwrap();
    drop(held);
    assert_eq!(pool.status().available, 4);
    let before = counters(&server);
    read_articles(&server, &[1, 2, 3, 1, 2, 3, 1, 2]).await;
    let after = counters(&server);
    // The read's two forms, prepared once on the one connection it used.
    assert_eq!(after.statements_prepared - before.statements_prepared, 2);
}

/// A metadata version is installed once, and each role's schema is built once per version,
/// by the first request that needs it: never per request, and never for a role no request
/// uses.
#[tokio::test]
async fn schemas_are_built_per_metadata_version_and_role_not_per_request() {
    let server = blog_with_pool(2).await;
    let before = counters(&server);
    for _ in 0..20 {
        server
            .gql_role("{ articles { id } }", "user", &[("X-Svc-User-Id", "1")])
            .await;
    }
    let used = counters(&server);
    assert_eq!(used.schema_builds, before.schema_builds);
    assert_eq!(
        used.role_schema_builds,
        before.role_schema_builds + 1,
        "role user built once, not per request"
    );
    server
        .ok(json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "comment", "custom_root_fields": {"select": "remarks"}}}))
        .await;
    // The writer installs the new version once; its own NOTIFY is recognised and skipped,
    // without reading the catalog again.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let installed = counters(&server);
    assert_eq!(installed.schema_builds, before.schema_builds + 1);
    assert_eq!(
        installed.catalog_reads, before.catalog_reads,
        "the write's own notification rebuilt nothing"
    );
    assert_eq!(
        installed.role_schema_builds, used.role_schema_builds,
        "installing a version builds no role schema"
    );
    for _ in 0..5 {
        server.gql("{ remarks(limit: 1) { id } }").await;
    }
    // DDL through run_sql: the database model changed, the version did not; the writer
    // installs the rebuilt model and its `reload:` notification is skipped too.
    let reads = counters(&server).catalog_reads;
    server
        .ok(json!({"type": "run_sql", "args": {"sql": "ALTER TABLE comment ADD COLUMN note text"}}))
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(counters(&server).catalog_reads, reads);
    let after = counters(&server);
    assert_eq!(after.schema_builds, before.schema_builds + 2);
    assert_eq!(
        after.role_schema_builds,
        installed.role_schema_builds + 1,
        "admin's schema of the new version, built once for five requests"
    );
}

#[tokio::test]
async fn response_json_is_postgres_bytes_spliced_not_reserialized() {
    let server = blog_with_pool(2).await;
    let response = server
        .http
        .post(format!("{}/v1/graphql", server.base))
        .json(&json!({"query": "{ articleById(id: 1) { id title } }"}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    // Postgres's json_build_object writes `"key" : value`; serde_json would write `"key":value`.
    // Seeing Postgres's spacing inside our envelope proves the bytes went through untouched.
    assert!(response.starts_with("{\"data\":"), "{response}");
    assert!(response.contains("\"id\" : 1"), "{response}");
}

#[tokio::test]
async fn the_pool_is_sized_from_configuration() {
    let server = blog_with_pool(3).await;
    assert_eq!(server.running.state.pool.status().max_size, 3);
    let server = blog_with_pool(7).await;
    assert_eq!(server.running.state.pool.status().max_size, 7);
}

#[tokio::test]
async fn introspection_answers_are_remembered_per_role_and_metadata_version() {
    let server = blog_with_pool(2).await;
    let full = crate::graphql::introspection::full_introspection(&server, None).await;
    let before = counters(&server);
    let again = crate::graphql::introspection::full_introspection(&server, None).await;
    assert_eq!(again, full, "the same answer");
    let after = counters(&server);
    assert_eq!(after.introspections_run - before.introspections_run, 0);
    // Mixed with data, the remembered answer is merged in.
    let r = server
        .gql("{ __type(name: \"author\") { name } author(limit: 1) { id } }")
        .await;
    assert_eq!(r["data"]["__type"]["name"], "author", "{r}");
    let r2 = server
        .gql("{ __type(name: \"author\") { name } author(limit: 1) { id } }")
        .await;
    assert_eq!(r2, r);
    let mixed = counters(&server);
    assert_eq!(mixed.introspections_run - after.introspections_run, 1);
    // Another role has its own answers; a new metadata version starts afresh.
    crate::graphql::introspection::full_introspection(&server, Some("user")).await;
    assert_eq!(
        counters(&server).introspections_run - mixed.introspections_run,
        1
    );
    server
        .ok(json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "author", "custom_root_fields": {"select": "writers"}}}))
        .await;
    let changed = crate::graphql::introspection::full_introspection(&server, None).await;
    assert_ne!(changed, full, "the new version's schema");
    let fields: Vec<&str> = changed["__schema"]["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "query_root")
        .unwrap()["fields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["name"].as_str())
        .collect();
    assert!(fields.contains(&"writers"), "{fields:?}");
}

/// A mutation of one root field whose write, checks and answer mean the same in one statement
/// is one round trip: no transaction, one statement carrying the session (which defaults and
/// triggers see), the permission check (a failure keeps nothing) and the answer. One whose
/// rule or answer reads other tables keeps its transaction and steps.
#[tokio::test]
async fn a_simple_mutation_is_one_statement_without_a_transaction() {
    let server = blog_with_pool(1).await;
    // A default that reads the session: set before the row is written, or NULL.
    server
        .sql("ALTER TABLE article ADD COLUMN created_by text DEFAULT current_setting('basalt.user', true)::json ->> 'x-svc-user-id'")
        .await;
    let user = |q: &'static str, id: &'static str| {
        let server = &server;
        async move { server.gql_role(q, "user", &[("X-Svc-User-Id", id)]).await }
    };
    let writes = |before: CountersSnapshot, after: CountersSnapshot| {
        (
            after.statements_run - before.statements_run,
            after.mutation_transactions - before.mutation_transactions,
        )
    };

    let before = counters(&server);
    let r = server
        .gql(r#"mutation { insert_article_one(object: {id: 70, title: "one", author_id: 1, status: draft}) { id title } }"#)
        .await;
    assert_eq!(
        r,
        json!({"data": {"insert_article_one": {"id": 70, "title": "one"}}})
    );
    assert_eq!(writes(before, counters(&server)), (1, 0), "admin insert");

    let before = counters(&server);
    let r = user(r#"mutation { insert_article_one(object: {id: 71, title: "mine", author_id: 2}) { id status } }"#, "2").await;
    assert_eq!(
        r,
        json!({"data": {"insert_article_one": {"id": 71, "status": "draft"}}})
    );
    assert_eq!(
        writes(before, counters(&server)),
        (1, 0),
        "insert with a row-local check"
    );
    let rows = |sql: &'static str| query_json(&server.db_url, sql);
    let created_by = rows("SELECT created_by FROM article WHERE id = 71").await;
    assert_eq!(
        created_by,
        json!([{"created_by": "2"}]),
        "the default saw the session"
    );

    let before = counters(&server);
    let r = user(r#"mutation { insert_article_one(object: {id: 72, title: "not mine", author_id: 1}) { id } }"#, "2").await;
    assert_eq!(
        r["errors"][0],
        json!({"message": "check constraint of an insert permission has failed", "extensions": {"path": "$", "code": "permission-error"}})
    );
    assert_eq!(
        writes(before, counters(&server)),
        (1, 0),
        "a failing check is raised by the statement"
    );
    let kept = rows("SELECT count(*)::int AS n FROM article WHERE id = 72").await;
    assert_eq!(
        kept,
        json!([{"n": 0}]),
        "nothing of the failed insert is kept"
    );

    let before = counters(&server);
    let r = user(r#"mutation { update_article_by_pk(pk_columns: {id: 2}, _set: {title: "forbidden words"}) { id } }"#, "1").await;
    assert_eq!(
        r["errors"][0]["message"],
        "check constraint of an update permission has failed"
    );
    assert_eq!(
        writes(before, counters(&server)),
        (1, 0),
        "update with a failing check"
    );

    let before = counters(&server);
    let r = server
        .gql(r#"mutation { delete_article_by_pk(id: 70) { id } }"#)
        .await;
    assert_eq!(r, json!({"data": {"delete_article_by_pk": {"id": 70}}}));
    assert_eq!(writes(before, counters(&server)), (1, 0), "delete");

    // The answer reads a relationship: the program, in a transaction, sees the new row.
    let before = counters(&server);
    let r = server
        .gql(r#"mutation { insert_article_one(object: {id: 73, title: "t", author_id: 1, status: draft}) { id author { articles(where: {id: {_eq: 73}}) { id } } } }"#)
        .await;
    assert_eq!(
        r,
        json!({"data": {"insert_article_one": {"id": 73, "author": {"articles": [{"id": 73}]}}}})
    );
    let (statements, transactions) = writes(before, counters(&server));
    assert_eq!(transactions, 1);
    assert!(statements >= 3, "session, insert, answer: {statements}");

    // Two root fields: one transaction around both.
    let before = counters(&server);
    let r = server
        .gql(r#"mutation { a: delete_article_by_pk(id: 73) { id } b: delete_article_by_pk(id: 71) { id } }"#)
        .await;
    assert_eq!(r, json!({"data": {"a": {"id": 73}, "b": {"id": 71}}}));
    assert_eq!(writes(before, counters(&server)).1, 1);
}

/// Roles that see a table alike hold one definition of its types, whichever role's schema is
/// built first: the later build keeps the earlier one's definitions of the types that come out
/// equal, and builds its own only where the roles differ.
#[tokio::test]
async fn role_schemas_hold_one_definition_of_the_types_they_see_alike() {
    let server = blog_with_pool(1).await;
    let state = &server.running.state;
    let served = state.engine.current();
    // The user's schema first, then admin's: the user sees every column of `comment`.
    let user = &served.role("user", false, &state.counters).schema;
    let admin = &served.role("admin", false, &state.counters).schema;
    let same = |name: &str| {
        let (Some(a), Some(u)) = (admin.types.types.get(name), user.types.types.get(name)) else {
            panic!("{name} missing from a schema");
        };
        std::sync::Arc::ptr_eq(a, u)
    };
    for shared in ["comment_select_column", "comment_order_by", "order_by"] {
        assert!(same(shared), "{shared} is held once");
    }
    // The user sees fewer columns of `author`: its own definitions.
    for apart in ["author", "author_select_column", "query_root"] {
        assert!(!same(apart), "{apart} differs between the roles");
        assert_ne!(admin.types.get(apart), user.types.get(apart), "{apart}");
    }
    let held_once = admin
        .types
        .types
        .iter()
        .filter(|(name, def)| {
            user.types
                .types
                .get(*name)
                .is_some_and(|u| std::sync::Arc::ptr_eq(u, def))
        })
        .count();
    let equal = admin
        .types
        .types
        .iter()
        .filter(|(name, def)| user.types.types.get(*name) == Some(def))
        .count();
    assert_eq!(
        held_once, equal,
        "every type equal in both schemas is held once"
    );
}
