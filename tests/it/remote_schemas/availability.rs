//! Remotes that change, go down or drop connections: reloads pick up a changed remote, a
//! replica starting while the remote is down serves the stored schema, only the operations that
//! use a silent remote fail, and a dropped connection is retried for introspection and queries
//! but never for a mutation.

use super::*;

#[tokio::test]
async fn reloads_pick_up_a_changed_remote_and_failures_follow_the_spec() {
    let (s, geo) = blog_with_geo().await;
    assert_eq!(
        s.gql("{ capital }").await["errors"][0]["extensions"]["code"],
        "validation-failed"
    );
    *geo.schema.lock().unwrap() = geo_schema(true);
    // Other metadata changes reuse the stored introspection.
    s.ok(json!({"type": "reload_metadata", "args": {}})).await;
    assert_eq!(
        s.gql("{ capital }").await["errors"][0]["extensions"]["code"],
        "validation-failed"
    );
    s.ok(json!({"type": "reload_remote_schema", "args": {"name": "geo"}}))
        .await;
    assert_eq!(
        s.gql("{ capital }").await,
        json!({"data": {"capital": "Paris"}})
    );

    // Down while consistent: the reload fails and nothing changes.
    geo.set(Mode::Status(500));
    let r = s
        .fails(
            json!({"type": "reload_remote_schema", "args": {"name": "geo"}}),
            400,
            "unexpected",
            "$.args",
        )
        .await;
    assert_eq!(
        r["error"],
        "cannot continue due to new inconsistent metadata"
    );
    let r = s
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(r["is_consistent"], true, "{r}");

    // reload_metadata with reload_remote_schemas records the failure, keeps serving the
    // stored schema, and reports the remote.
    let r = s
        .ok(json!({"type": "reload_metadata", "args": {"reload_remote_schemas": true}}))
        .await;
    assert_eq!(r["is_consistent"], false, "{r}");
    assert_eq!(r["inconsistent_objects"][0]["type"], "remote_schema");
    assert_eq!(r["inconsistent_objects"][0]["definition"]["name"], "geo");
    assert_eq!(
        r["inconsistent_objects"][0]["reason"],
        format!(
            "introspection query to {} has responded with 500 status code",
            geo.url
        )
    );
    let introspected = s
        .gql("{ __type(name: \"query_root\") { fields { name } } }")
        .await;
    assert!(
        introspected.to_string().contains("\"capital\""),
        "stored schema still served"
    );
    // Already inconsistent and still failing: success, still inconsistent.
    s.ok(json!({"type": "reload_remote_schema", "args": {"name": "geo"}}))
        .await;
    geo.set(Mode::Normal);
    s.ok(json!({"type": "reload_remote_schema", "args": {"name": "geo"}}))
        .await;
    let r = s
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(r["is_consistent"], true, "{r}");
}

#[tokio::test]
async fn a_replica_starting_while_the_remote_is_down_serves_the_stored_schema() {
    let (s, geo) = blog_with_geo().await;
    let db = s.db_url.clone();
    geo.set(Mode::Status(503));
    let replica = TestServer::on(&db, |_| {}).await;
    let r = replica
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(r["is_consistent"], false, "{r}");
    assert_eq!(r["inconsistent_objects"][0]["type"], "remote_schema", "{r}");
    let fields = replica
        .gql("{ __type(name: \"Country\") { fields { name } } }")
        .await;
    assert_eq!(
        fields,
        // By name, as every type is served (the remote lists `continent` last).
        json!({"data": {"__type": {"fields": [{"name": "code"}, {"name": "continent"}, {"name": "name"}]}}})
    );
    let r = replica.gql("{ country(code: \"FR\") { name } }").await;
    assert_eq!(
        r["errors"][0]["extensions"]["code"], "remote-schema-error",
        "{r}"
    );
    // The first server sees the failure its peer recorded.
    let r = s
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(r["is_consistent"], false, "{r}");
    geo.set(Mode::Normal);
    replica
        .ok(json!({"type": "reload_remote_schema", "args": {"name": "geo"}}))
        .await;
    assert_eq!(
        replica.gql("{ country(code: \"FR\") { name } }").await,
        json!({"data": {"country": {"name": "France"}}})
    );
}

#[tokio::test]
async fn a_remote_that_stops_answering_fails_only_the_operations_that_use_it() {
    use crate::remote_schemas::remote_server::{newsletter_schema, RemoteServer};
    let mut newsletter = RemoteServer::start(newsletter_schema()).await;
    let s = TestServer::blog().await;
    s.ok(add("newsletter", &newsletter.url)).await;
    assert_eq!(
        s.gql("{ subscriberCount }").await,
        json!({"data": {"subscriberCount": 2}})
    );
    newsletter.stop().await;
    let r = s.gql("{ author(limit: 1) { id } subscriberCount }").await;
    assert!(r.get("data").is_none(), "{r}");
    let error = &r["errors"][0];
    assert_eq!(error["extensions"]["code"], "remote-schema-error", "{r}");
    assert_eq!(
        error["message"],
        format!(
            "HTTP exception occurred while sending the request to {}",
            newsletter.url
        )
    );
    let detail = error["extensions"]["internal"]["message"].as_str().unwrap();
    assert!(detail.starts_with("ConnectionFailure"), "{detail}");
    assert_eq!(
        s.gql("{ author(limit: 1) { id } }").await,
        json!({"data": {"author": [{"id": 1}]}}),
        "database fields are not affected"
    );
}

/// Introspection only reads, so a request whose connection the remote closes without
/// answering is sent once more, on a new connection, and `add_remote_schema` succeeds.
#[tokio::test]
async fn introspection_tries_once_more_after_a_dropped_connection() {
    let geo = Geo::start().await;
    let front = Front::start(&geo.url).await;
    front.drop_next();
    let s = TestServer::blog().await;
    s.ok(json!({"type": "add_remote_schema", "args": {
        "name": "geo", "definition": {"url": front.url, "timeout_seconds": 5}}}))
        .await;
    assert_eq!(front.accepted(), 2);
    assert_eq!(
        s.gql("{ country(code: \"FR\") { name } }").await,
        json!({"data": {"country": {"name": "France"}}})
    );
}

/// A forwarded query whose connection the remote closes without answering (a pooled
/// keep-alive connection closed as it was reused) is sent once more; a mutation is not, as the
/// remote may have run it: it fails, and nothing is written twice.
#[tokio::test]
async fn a_forwarded_query_is_sent_again_after_a_dropped_connection_a_mutation_is_not() {
    let geo = Geo::start().await;
    let front = Front::start(&geo.url).await;
    let s = TestServer::blog().await;
    s.ok(add("geo", &front.url)).await;
    let france = json!({"data": {"country": {"name": "France"}}});
    assert_eq!(s.gql("{ country(code: \"FR\") { name } }").await, france);
    let pooled = front.accepted();

    front.drop_next();
    assert_eq!(s.gql("{ country(code: \"FR\") { name } }").await, france);
    assert_eq!(
        front.accepted(),
        pooled + 1,
        "sent again on a new connection"
    );
    assert_eq!(
        geo.calls().len(),
        2,
        "the dropped request never reached the remote"
    );

    front.drop_next();
    let r = s
        .gql(r#"mutation { addCountry(code: "DE", name: "Germany") { code } }"#)
        .await;
    let error = &r["errors"][0];
    assert_eq!(error["extensions"]["code"], "remote-schema-error", "{r}");
    assert_eq!(
        error["extensions"]["internal"]["type"], "http_exception",
        "{r}"
    );
    assert!(r.get("data").is_none(), "{r}");
    assert_eq!(geo.calls().len(), 2, "the mutation was not sent again");

    let r = s
        .gql(r#"mutation { addCountry(code: "DE", name: "Germany") { code } }"#)
        .await;
    assert_eq!(r, json!({"data": {"addCountry": {"code": "DE"}}}));
    assert_eq!(geo.calls().len(), 3);
}
