//! The LogicalModel and NativeQuery kinds: a query waiting for its model, both applied and
//! served, a model changed under its query, drift, export, a model's deletion held by its
//! query, a query whose SQL reads what the database lacks, and models and queries that
//! reference each other in cycles.

use super::*;

fn model(description: &str) -> LogicalModel {
    resource(
        "popular",
        json!({"name": "popular", "description": description,
            "fields": [{"name": "id", "type": {"scalar": "integer"}},
                {"name": "title", "type": {"scalar": "text"}},
                {"name": "views", "type": {"scalar": "bigint"}}],
            "selectPermissions": [{"role": "user", "permission": {"columns": ["id", "title"], "filter": {}}}]}),
    )
}

fn ranked() -> NativeQuery {
    resource(
        "ranked",
        json!({"rootFieldName": "ranked", "returns": "popular",
            "arguments": {"min_views": {"type": "bigint"}},
            "code": "SELECT id, title, views FROM article WHERE views >= {{min_views}} ORDER BY views DESC"}),
    )
}

#[tokio::test]
async fn native_query_waits_for_its_model_lands_and_holds_the_models_deletion() {
    let s = setup(false).await;
    s.apply(&ranked()).await;
    let (_, reason, message) = s.condition(&ranked(), "Ready");
    assert_eq!(reason, "DependencyNotReady", "{message}");
    s.apply(&model("popular articles")).await;
    assert_eq!(
        s.condition(&model("popular articles"), "Ready").1,
        "Applied"
    );
    s.reconcile(&ranked()).await.unwrap();
    assert_eq!(s.condition(&ranked(), "Ready").1, "Applied");
    assert_eq!(
        s.status(&model("popular articles")).object_keys,
        vec![
            "logical_model:popular",
            "logical_model_permission:popular.user"
        ]
    );
    s.server.running.state.reload(false).await.unwrap();
    let answer = s
        .server
        .gql_role(
            "{ ranked(args: {min_views: 100}, order_by: {id: asc}) { id title } }",
            "user",
            &[],
        )
        .await;
    assert_eq!(
        answer,
        json!({"data": {"ranked": [{"id": 1, "title": "Rust in practice"}, {"id": 3, "title": "Lund guide"}, {"id": 5, "title": "Quotes 'n' stuff"}]}})
    );

    // The model changes: tracked again with its permission, its query still served.
    let mut changed = s.fake.get(&model("popular articles"));
    changed.metadata.generation = Some(2);
    changed.spec.description = Some("most read".into());
    s.fake.put(&changed);
    s.reconcile(&changed).await.unwrap();
    assert_eq!(s.condition(&changed, "Ready").1, "Applied");
    let exported = s.server.export().await;
    assert_eq!(exported["logical_models"][0]["description"], "most read");
    assert_eq!(
        exported["logical_models"][0]["select_permissions"][0]["role"],
        "user"
    );
    assert_eq!(exported["native_queries"][0]["root_field_name"], "ranked");

    // Changed through /v1/query: drift on the permission.
    s.server
        .ok(json!({"type": "drop_logical_model_select_permission", "args": {"name": "popular", "role": "user"}}))
        .await;
    s.reconcile(&changed).await.unwrap();
    let (_, reason, message) = s.condition(&changed, "Ready");
    assert_eq!(reason, "Drifted");
    assert!(
        message.contains("logical_model_permission:popular.user"),
        "{message}"
    );

    // Exported as resources.
    let metadata = serde_json::from_value(s.server.export().await).unwrap();
    let export = basalt::controller::export::resources(&metadata, NS).unwrap();
    let query = export
        .resources
        .iter()
        .find(|r| r.kind == "NativeQuery")
        .unwrap();
    assert_eq!(query.manifest["spec"]["code"], ranked().spec.code);
    assert_eq!(
        query.manifest["spec"]["arguments"],
        json!({"min_views": {"type": "bigint", "nullable": false}})
    );

    // The model cannot go while the query returns it.
    s.delete(&changed);
    let err = s.reconcile(&changed).await.unwrap_err();
    assert!(matches!(err, reconcile::Error::DeletionBlocked(_)), "{err}");
}

#[tokio::test]
async fn a_query_reading_what_the_database_lacks_waits_for_its_migration() {
    let s = setup(false).await;
    s.apply(&model("popular articles")).await;
    let missing: NativeQuery = resource(
        "missing",
        json!({"rootFieldName": "missing", "returns": "popular",
            "code": "SELECT id, title, views FROM not_yet_there"}),
    );
    s.apply(&missing).await;
    let (_, reason, message) = s.condition(&missing, "Ready");
    assert_eq!(reason, "DatabaseObjectMissing", "{message}");
    let quoted: NativeQuery = resource(
        "quoted",
        json!({"rootFieldName": "quoted", "returns": "popular", "arguments": {"q": {"type": "text"}},
            "code": "SELECT id, title, views FROM article WHERE title LIKE '%{{q}}%'"}),
    );
    s.apply(&quoted).await;
    assert_eq!(s.condition(&quoted, "Ready").1, "InvalidSpec");
}

/// `examples/reports/`: its two files applied through the controller to its schema, and the
/// query of its README run as `analyst`.
#[tokio::test]
async fn reports_example_applies_and_ranks() {
    let (dir, manifests) = example_manifests("reports");
    let db = crate::harness::fresh_database().await;
    let schema = std::fs::read_to_string(dir.join("schema.sql")).unwrap();
    crate::harness::run_sql(&db, &schema).await;
    crate::harness::run_sql(
        &db,
        "INSERT INTO sale (region, seller, amount, sold_on) VALUES
           ('north', 'ann', 10, '2026-02-01'), ('north', 'bo', 30, '2026-02-02'),
           ('north', 'ann', 5, '2025-12-31'), ('south', 'cy', 7, '2026-03-01'),
           ('south', 'di', 6.5, '2026-03-02')",
    )
    .await;
    let fake = Arc::new(FakeApi::default());
    let s = Setup {
        server: TestServer::on(&db, |_| {}).await,
        ctx: crate::controller::kube_fake::context(fake.clone(), &db, false),
        fake,
    };
    assert_eq!(manifests.len(), 4);
    let table: TrackedTable = serde_json::from_value(manifests[0].clone()).unwrap();
    let permission: Permission = serde_json::from_value(manifests[1].clone()).unwrap();
    let model: LogicalModel = serde_json::from_value(manifests[2].clone()).unwrap();
    let query: NativeQuery = serde_json::from_value(manifests[3].clone()).unwrap();
    model.validate_cel().unwrap();
    query.validate_cel().unwrap();
    s.apply(&table).await;
    s.apply(&permission).await;
    s.apply(&model).await;
    s.apply(&query).await;
    assert_eq!(s.condition(&permission, "Ready").1, "Applied");
    assert_eq!(s.condition(&model, "Ready").1, "Applied");
    assert_eq!(s.condition(&query, "Ready").1, "Applied");
    s.server.running.state.reload(false).await.unwrap();
    let answer = s
        .server
        .gql_role(
            r#"query { seller_ranking(args: {since: "2026-01-01"}, where: {rank: {_eq: 1}}, order_by: {region: asc}) {
                region seller total sales(order_by: {sold_on: asc}) { amount sold_on } } }"#,
            "analyst",
            &[],
        )
        .await;
    assert_eq!(
        answer,
        json!({"data": {"seller_ranking": [
            {"region": "north", "seller": "bo", "total": 30.00,
                "sales": [{"amount": 30.00, "sold_on": "2026-02-02"}]},
            {"region": "south", "seller": "cy", "total": 7.00,
                "sales": [{"amount": 7.00, "sold_on": "2026-03-01"}]}]}})
    );
}

/// A model and a query per side of a writer ↔ post cycle: `fields` of the models name each
/// other, and each query has a relationship to the other.
fn cycle(side: &str) -> (LogicalModel, NativeQuery) {
    let (scalars, code, relationship) = match side {
        "writer" => (
            json!([{"name": "id", "type": {"scalar": "integer"}}, {"name": "name", "type": {"scalar": "text"}}]),
            "SELECT id, name FROM author",
            json!({"arrayRelationships": [{"name": "posts",
                "using": {"columnMapping": {"id": "author_id"}, "remoteNativeQuery": "post_list"}}]}),
        ),
        _ => (
            json!([{"name": "id", "type": {"scalar": "integer"}}, {"name": "title", "type": {"scalar": "text"}},
                {"name": "author_id", "type": {"scalar": "integer"}}]),
            "SELECT id, title, author_id FROM article",
            json!({"objectRelationships": [{"name": "writer",
                "using": {"columnMapping": {"author_id": "id"}, "remoteNativeQuery": "writer_list"}},
                {"name": "author", "using": {"columnMapping": {"author_id": "id"},
                    "remoteTable": {"schema": "public", "name": "author"}}}]}),
        ),
    };
    let mut fields = scalars.as_array().unwrap().clone();
    fields.push(match side {
        "writer" => json!({"name": "posts", "type": {"array": {"logicalModel": "post_row"}, "nullable": true}}),
        _ => json!({"name": "writer", "type": {"logicalModel": "writer_row", "nullable": true}}),
    });
    let model = resource(
        &format!("{side}-row"),
        json!({"name": format!("{side}_row"), "fields": fields}),
    );
    let mut spec = json!({"rootFieldName": format!("{side}_list"), "returns": format!("{side}_row"), "code": code});
    spec.as_object_mut()
        .unwrap()
        .extend(relationship.as_object().unwrap().clone());
    (model, resource(&format!("{side}-list"), spec))
}

#[tokio::test]
async fn models_and_queries_in_a_cycle_land_together() {
    let s = setup(false).await;
    s.apply_tables().await;
    let (writer_row, writers) = cycle("writer");
    let (post_row, posts) = cycle("post");
    for r in [&writer_row, &post_row] {
        r.validate_cel().unwrap();
    }
    writers.validate_cel().unwrap();
    posts.validate_cel().unwrap();
    // Alone, each waits for the other.
    s.apply(&writer_row).await;
    let (_, reason, message) = s.condition(&writer_row, "Ready");
    assert_eq!(reason, "DependencyNotReady", "{message}");
    // Its partner closes the cycle: both land in one bulk.
    s.apply(&post_row).await;
    let (_, reason, message) = s.condition(&post_row, "Ready");
    assert_eq!(reason, "Applied", "{message}");
    s.reconcile(&writer_row).await.unwrap();
    assert_eq!(s.condition(&writer_row, "Ready").1, "Applied");
    // Written together, each object under its own resource.
    let owners = query_json(
        &s.server.db_url,
        "SELECT object_key, owner_name FROM basalt_catalog.managed_objects
         WHERE object_key LIKE 'logical_model:%' ORDER BY object_key",
    )
    .await;
    assert_eq!(
        owners,
        json!([{"object_key": "logical_model:post_row", "owner_name": "post-row"},
            {"object_key": "logical_model:writer_row", "owner_name": "writer-row"}])
    );
    s.apply(&posts).await;
    let (_, reason, message) = s.condition(&posts, "Ready");
    assert_eq!(reason, "DependencyNotReady", "{message}");
    s.apply(&writers).await;
    assert_eq!(s.condition(&writers, "Ready").1, "Applied");
    s.reconcile(&posts).await.unwrap();
    assert_eq!(s.condition(&posts, "Ready").1, "Applied");
    assert_eq!(s.status(&posts).object_keys, vec!["native_query:post_list"]);
    s.server.running.state.reload(false).await.unwrap();
    let answer = s
        .server
        .gql("{ writer_list(where: {id: {_eq: 2}}) { name posts(order_by: {id: asc}) { title writer { name } author { name } } } }")
        .await;
    assert_eq!(
        answer,
        json!({"data": {"writer_list": [{"name": "Bo", "posts": [
            {"title": "Lund guide", "writer": {"name": "Bo"}, "author": {"name": "Bo"}},
            {"title": "Draft notes", "writer": {"name": "Bo"}, "author": {"name": "Bo"}}]}]}})
    );

    // Relationships are part of the query: removed through /v1/query, they drift.
    s.server
        .ok(json!({"type": "bulk", "args": [
            {"type": "untrack_native_query", "args": {"root_field_name": "post_list"}},
            {"type": "track_native_query", "args": {"root_field_name": "post_list", "returns": "post_row",
                "code": "SELECT id, title, author_id FROM article"}}]}))
        .await;
    s.reconcile(&posts).await.unwrap();
    let (_, reason, message) = s.condition(&posts, "Ready");
    assert_eq!(reason, "Drifted", "{message}");
    assert!(message.contains("native_query:post_list"), "{message}");

    // Exported as resources with their relationships.
    let metadata = serde_json::from_value(s.server.export().await).unwrap();
    let export = basalt::controller::export::resources(&metadata, NS).unwrap();
    let exported = export
        .resources
        .iter()
        .find(|r| r.kind == "NativeQuery" && r.manifest["spec"]["rootFieldName"] == "writer_list")
        .unwrap();
    assert_eq!(
        exported.manifest["spec"]["arrayRelationships"],
        json!([{"name": "posts",
            "using": {"columnMapping": {"id": "author_id"}, "remoteNativeQuery": "post_list"}}])
    );

    // Everything deleted: a model still returned by a query waits; the queries go; then the
    // two models, each naming the other, go together.
    for r in [&writer_row, &post_row] {
        s.delete(r);
    }
    s.delete(&writers);
    s.delete(&posts);
    let err = s.reconcile(&writer_row).await.unwrap_err();
    assert!(matches!(err, reconcile::Error::DeletionBlocked(_)), "{err}");
    s.reconcile(&writers).await.unwrap();
    s.reconcile(&posts).await.unwrap();
    s.reconcile(&writer_row).await.unwrap();
    s.reconcile(&post_row).await.unwrap();
    let exported = s.server.export().await;
    assert!(exported.get("logical_models").is_none(), "{exported}");
    assert!(exported.get("native_queries").is_none(), "{exported}");
}
