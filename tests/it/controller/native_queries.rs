//! The LogicalModel and NativeQuery kinds: a query waiting for its model, both applied and
//! served, a model changed under its query, drift, export, a model's deletion held by its
//! query, and a query whose SQL reads what the database lacks.

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
    assert_eq!(manifests.len(), 2);
    let model: LogicalModel = serde_json::from_value(manifests[0].clone()).unwrap();
    let query: NativeQuery = serde_json::from_value(manifests[1].clone()).unwrap();
    model.validate_cel().unwrap();
    query.validate_cel().unwrap();
    s.apply(&model).await;
    s.apply(&query).await;
    assert_eq!(s.condition(&model, "Ready").1, "Applied");
    assert_eq!(s.condition(&query, "Ready").1, "Applied");
    s.server.running.state.reload(false).await.unwrap();
    let answer = s
        .server
        .gql_role(
            r#"query { seller_ranking(args: {since: "2026-01-01"}, where: {rank: {_eq: 1}}, order_by: {region: asc}) { region seller total } }"#,
            "analyst",
            &[],
        )
        .await;
    assert_eq!(
        answer,
        json!({"data": {"seller_ranking": [
            {"region": "north", "seller": "bo", "total": 30.00},
            {"region": "south", "seller": "cy", "total": 7.00}]}})
    );
}
