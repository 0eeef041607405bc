//! The RestEndpoint kind: waiting for its collection, applied and served, replaced on a spec
//! change, drift reported, exported as a resource, and holding its collection's deletion.

use super::*;

fn app_collection() -> QueryCollection {
    resource(
        "app",
        json!({"name": "app", "definition": {"queries": [
            {"name": "author_by_id", "query": "query author_by_id($id: Int!) { author_by_pk(id: $id) { id name } }"}]}}),
    )
}

fn author_endpoint(url: &str) -> RestEndpoint {
    resource(
        "author-by-id",
        json!({"name": "author_by_id", "url": url, "methods": ["GET"],
            "definition": {"query": {"collectionName": "app", "queryName": "author_by_id"}},
            "comment": "one author"}),
    )
}

async fn rest_get(s: &Setup, path: &str) -> (u16, Value) {
    let response = s
        .server
        .http
        .get(format!("{}/api/rest/{path}", s.server.base))
        .send()
        .await
        .unwrap();
    (
        response.status().as_u16(),
        response.json().await.unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn rest_endpoint_waits_lands_changes_drifts_and_holds_its_collection() {
    let s = setup(false).await;
    s.apply(&author()).await;
    // Before its collection: waiting, nothing written.
    s.apply(&author_endpoint("authors/:id")).await;
    let (_, reason, message) = s.condition(&author_endpoint("authors/:id"), "Ready");
    assert_eq!(reason, "DependencyNotReady");
    assert!(
        message.contains("collection with name app does not exist"),
        "{message}"
    );
    s.apply(&app_collection()).await;
    s.reconcile(&author_endpoint("authors/:id")).await.unwrap();
    assert_eq!(
        s.condition(&author_endpoint("authors/:id"), "Ready").1,
        "Applied"
    );
    assert_eq!(
        s.status(&author_endpoint("authors/:id")).object_keys,
        vec!["rest_endpoint:author_by_id"]
    );
    s.server.running.state.reload(false).await.unwrap();
    let (status, body) = rest_get(&s, "authors/1").await;
    assert_eq!(
        (status, &body["author_by_pk"]["id"]),
        (200, &json!(1)),
        "{body}"
    );

    // A spec change: dropped and created again, served at the new URL.
    let mut moved = s.fake.get(&author_endpoint("authors/:id"));
    moved.metadata.generation = Some(2);
    moved.spec.url = "writers/:id".into();
    s.fake.put(&moved);
    s.reconcile(&moved).await.unwrap();
    assert_eq!(s.condition(&moved, "Ready").1, "Applied");
    s.server.running.state.reload(false).await.unwrap();
    assert_eq!(rest_get(&s, "writers/1").await.0, 200);
    assert_eq!(rest_get(&s, "authors/1").await.0, 404);

    // Changed through /v1/query: drift on the object.
    s.server
        .ok(json!({"type": "bulk", "args": [
            {"type": "drop_rest_endpoint", "args": {"name": "author_by_id"}},
            {"type": "create_rest_endpoint", "args": {"name": "author_by_id", "url": "people/:id",
                "methods": ["GET"], "definition": {"query": {"collection_name": "app", "query_name": "author_by_id"}}}}
        ]}))
        .await;
    s.reconcile(&moved).await.unwrap();
    let (_, reason, message) = s.condition(&moved, "Ready");
    assert_eq!(reason, "Drifted");
    assert!(
        message.contains("rest_endpoint:author_by_id: url"),
        "{message}"
    );

    // Exported as a resource.
    let metadata = serde_json::from_value(s.server.export().await).unwrap();
    let export = basalt::controller::export::resources(&metadata, NS).unwrap();
    let endpoint = export
        .resources
        .iter()
        .find(|r| r.kind == "RestEndpoint")
        .unwrap();
    assert_eq!(
        endpoint.manifest["spec"],
        json!({"name": "author_by_id", "url": "people/:id", "methods": ["GET"],
            "definition": {"query": {"collectionName": "app", "queryName": "author_by_id"}}})
    );

    // The collection cannot go while the endpoint serves its query.
    let collection = s.fake.get(&app_collection());
    s.delete(&collection);
    let err = s.reconcile(&collection).await.unwrap_err();
    assert!(matches!(err, reconcile::Error::DeletionBlocked(_)), "{err}");
    let (_, reason, message) = s.condition(&collection, "Ready");
    assert_eq!(reason, "DeletionBlocked");
    assert!(
        message.contains("REST endpoint(s) author_by_id"),
        "{message}"
    );
}
