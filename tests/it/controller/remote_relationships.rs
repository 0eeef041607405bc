//! Remote relationships embedded in their parents, against a live GraphQL server: a
//! RemoteSchema's relationship to a table waits for the table without holding up the remote
//! schema; a TrackedTable's relationship to the remote lands with the table; both are owned,
//! answered, compared across the two forms, reported as drift, kept when the remote schema's
//! definition changes, exported as resources, and block the deletion of what they use.

use super::*;
use crate::remote_schemas::relationships::msgs_schema;

fn msgs(url: &str, timeout: i64) -> RemoteSchema {
    resource(
        "msgs",
        json!({"name": "msgs", "definition": {"url": url, "timeoutSeconds": timeout},
            "remoteRelationships": [{"typeName": "Message", "name": "sender", "definition": {
                "toSource": {"table": {"name": "profiles"}, "relationshipType": "array",
                    "fieldMapping": {"id": "msg_id"}}}}]}),
    )
}

fn profiles() -> TrackedTable {
    tracked(
        "profiles",
        json!({"table": {"name": "profiles"}, "remoteRelationships": [{"name": "message",
            "definition": {"toRemoteSchema": {"remoteSchema": "msgs", "lhsFields": ["msg_id"],
                "remoteField": {"message": {"arguments": {"id": "$msg_id"}}}}}}]}),
    )
}

#[tokio::test]
async fn remote_relationships_wait_land_drift_and_hold_their_targets() {
    let server = RemoteServer::start(msgs_schema()).await;
    let s = setup(false).await;
    s.server
        .sql(
            "CREATE TABLE profiles (id serial PRIMARY KEY, name text, msg_id int);
             INSERT INTO profiles (name, msg_id) VALUES ('alice', 1), ('bob', 2)",
        )
        .await;

    // The remote schema lands; its relationship waits for the table.
    s.apply(&msgs(&server.url, 10)).await;
    let (_, reason, message) = s.condition(&msgs(&server.url, 10), "Ready");
    assert_eq!(reason, "DependencyNotReady");
    assert_eq!(
        message,
        "remote schema relationship Message.sender waits for table public.profiles"
    );
    assert_eq!(s.server.export().await["remote_schemas"][0]["name"], "msgs");

    // The table and its relationship to the remote land together.
    let calls = s.apply(&profiles()).await;
    assert_eq!(events(&calls), vec!["Applied"], "{calls:#?}");
    assert_eq!(
        s.status(&profiles()).object_keys,
        vec![
            "table:public.profiles",
            "remote_relationship:public.profiles.message"
        ]
    );
    s.reconcile(&msgs(&server.url, 10)).await.unwrap();
    assert_eq!(s.condition(&msgs(&server.url, 10), "Ready").1, "Applied");
    assert_eq!(
        s.status(&msgs(&server.url, 10)).object_keys,
        vec![
            "remote_schema:msgs",
            "remote_schema_relationship:msgs.Message.sender"
        ]
    );
    s.server.running.state.reload(false).await.unwrap();
    let answer = s
        .server
        .gql("{ profiles(order_by: {id: asc}) { name message { msg sender { name } } } }")
        .await;
    assert_eq!(
        answer,
        json!({"data": {"profiles": [
            {"name": "alice", "message": {"msg": "You win!", "sender": [{"name": "alice"}]}},
            {"name": "bob", "message": {"msg": "You lose!", "sender": [{"name": "bob"}]}}]}})
    );

    // Rewritten through /v1/query in the legacy form, same target: in sync, nothing written.
    s.server
        .ok(
            json!({"type": "update_remote_relationship", "args": {"table": "profiles",
            "name": "message", "remote_schema": "msgs", "basalt_fields": ["msg_id"],
            "remote_field": {"message": {"arguments": {"id": "$msg_id"}}}}}),
        )
        .await;
    let version = s.version().await;
    s.reconcile(&profiles()).await.unwrap();
    assert_eq!(s.condition(&profiles(), "Ready").1, "Applied");
    assert_eq!(s.version().await, version);
    // Another target: drift, named by the relationship's key.
    s.server
        .ok(
            json!({"type": "update_remote_relationship", "args": {"table": "profiles",
            "name": "message", "definition": {"to_remote_schema": {"remote_schema": "msgs",
            "lhs_fields": ["id"], "remote_field": {"message": {"arguments": {"id": "$id"}}}}}}}),
        )
        .await;
    s.reconcile(&profiles()).await.unwrap();
    let (_, reason, message) = s.condition(&profiles(), "Ready");
    assert_eq!(reason, "Drifted");
    assert!(
        message
            .contains("remote_relationship:public.profiles.message: definition.to_remote_schema"),
        "{message}"
    );

    // The remote schema's definition changes in place: the relationships stay.
    let mut slower = s.fake.get(&msgs(&server.url, 10));
    slower.metadata.generation = Some(2);
    slower.spec.definition.timeout_seconds = Some(20);
    s.fake.put(&slower);
    s.reconcile(&slower).await.unwrap();
    assert_eq!(s.condition(&slower, "Ready").1, "Applied");
    let export = s.server.export().await;
    assert_eq!(
        export["remote_schemas"][0]["definition"]["timeout_seconds"],
        20
    );
    assert_eq!(
        export["remote_schemas"][0]["remote_relationships"][0]["relationships"][0]["name"],
        "sender"
    );
    assert_eq!(
        exported_table(&export, "profiles")["remote_relationships"][0]["name"],
        "message"
    );

    // Exported as resources, in the current form.
    let metadata = serde_json::from_value(export).unwrap();
    let resources = basalt::controller::export::resources(&metadata, NS).unwrap();
    let spec_of = |kind: &str| {
        resources
            .resources
            .iter()
            .find(|r| r.kind == kind && r.manifest["spec"].to_string().contains("emote"))
            .map(|r| r.manifest["spec"].clone())
            .unwrap()
    };
    assert_eq!(
        spec_of("TrackedTable")["remoteRelationships"],
        json!([{"name": "message", "definition": {"toRemoteSchema": {"remoteSchema": "msgs",
            "lhsFields": ["id"], "remoteField": {"message": {"arguments": {"id": "$id"}}}}}}])
    );
    assert_eq!(
        spec_of("RemoteSchema")["remoteRelationships"],
        json!([{"typeName": "Message", "name": "sender", "definition": {"toSource": {
            "table": {"schema": "public", "name": "profiles"}, "relationshipType": "array",
            "fieldMapping": {"id": "msg_id"}}}}])
    );

    // Neither target goes while a relationship uses it.
    for (name, err) in [
        ("remote schema", {
            s.delete(&slower);
            s.reconcile(&slower).await.unwrap_err()
        }),
        ("table", {
            let table = s.fake.get(&profiles());
            s.delete(&table);
            s.reconcile(&table).await.unwrap_err()
        }),
    ] {
        assert!(
            matches!(&err, reconcile::Error::DeletionBlocked(e) if e.message.contains("remote")),
            "{name}: {err}"
        );
    }
    assert_eq!(s.condition(&slower, "Ready").1, "DeletionBlocked");
    assert_eq!(s.condition(&profiles(), "Ready").1, "DeletionBlocked");
}

/// The variable `examples/messages/remote-schema-msgs.yaml` reads the service's URL from.
const MSGS_URL_ENV: &str = "MSGS_GRAPHQL_URL";

/// `examples/messages/`: the files of its kustomization, applied through the controller in
/// their order to its schema, against the messages service it names.
#[tokio::test]
async fn messages_example_applies_and_joins_both_ways() {
    static URL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let url = crate::remote_schemas::remote_server::serve_for_process(&URL, "msgs", msgs_schema);
    std::env::set_var(MSGS_URL_ENV, url);
    let (dir, manifests) = example_manifests("messages");
    let db = crate::harness::fresh_database().await;
    let schema = std::fs::read_to_string(dir.join("schema.sql")).unwrap();
    crate::harness::run_sql(&db, &schema).await;
    let fake = Arc::new(FakeApi::default());
    let s = Setup {
        server: TestServer::on(&db, |_| {}).await,
        ctx: crate::controller::kube_fake::context(fake.clone(), &db, false),
        fake,
    };
    assert_eq!(manifests.len(), 3);
    let remote: RemoteSchema = serde_json::from_value(manifests[0].clone()).unwrap();
    let table: TrackedTable = serde_json::from_value(manifests[1].clone()).unwrap();
    let permission: Permission = serde_json::from_value(manifests[2].clone()).unwrap();
    s.apply(&remote).await;
    let (_, reason, message) = s.condition(&remote, "Ready");
    assert_eq!(
        (reason.as_str(), message.as_str()),
        (
            "DependencyNotReady",
            "remote schema relationship Message.senders waits for table public.profiles"
        )
    );
    s.apply(&table).await;
    s.apply(&permission).await;
    s.reconcile(&remote).await.unwrap();
    for ready in [
        s.condition(&remote, "Ready"),
        s.condition(&table, "Ready"),
        s.condition(&permission, "Ready"),
    ] {
        assert_eq!(ready.1, "Applied", "{ready:?}");
    }
    s.server.running.state.reload(false).await.unwrap();
    let answer = s
        .server
        .gql("{ profiles(order_by: {id: asc}) { name message { msg senders { name } } } }")
        .await;
    assert_eq!(
        answer,
        json!({"data": {"profiles": [
            {"name": "alice", "message": {"msg": "You win!", "senders": [{"name": "alice"}]}},
            {"name": "bob", "message": {"msg": "You lose!", "senders": [{"name": "bob"}]}},
            {"name": "alice", "message": {"msg": "Another alice", "senders": [{"name": "alice"}]}},
            {"name": "dave", "message": null}]}})
    );
    let answer = s
        .server
        .gql("{ profiles(order_by: {id: asc}, limit: 1) { sameName(limit: 5) { id } } }")
        .await;
    assert_eq!(
        answer,
        json!({"data": {"profiles": [{"sameName": [{"id": 1}, {"id": 3}]}]}})
    );
    let answer = s
        .server
        .gql_role(
            "{ profiles { name message { msg } } }",
            "user",
            &[("X-Svc-User-Id", "2")],
        )
        .await;
    assert_eq!(
        answer,
        json!({"data": {"profiles": [{"name": "bob", "message": {"msg": "You lose!"}}]}})
    );
    // Taken down: the table's relationships to the service first, then the service with its
    // own relationships.
    let mut plain = s.fake.get(&table);
    plain.metadata.generation = Some(2);
    plain.spec.remote_relationships.clear();
    s.fake.put(&plain);
    s.reconcile(&plain).await.unwrap();
    assert_eq!(s.condition(&plain, "Ready").1, "Applied");
    let remote = s.fake.get(&remote);
    s.delete(&remote);
    s.reconcile(&remote).await.unwrap();
    let export = s.server.export().await;
    assert!(export.get("remote_schemas").is_none(), "{export}");
}
