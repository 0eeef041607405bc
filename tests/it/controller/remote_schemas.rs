//! The RemoteSchema kind, against a live GraphQL server: adopted from the metadata API with
//! its server reported in the status, applied, replaced and removed, and an apply failure when
//! the server cannot be introspected.

use super::*;

/// A remote schema created through `/v1/query` (here by `replace_metadata`), adopted by a
/// RemoteSchema whose status then reports the server as the catalog last saw it; deleted with
/// the orphan policy, it stays in the catalog. No `add_remote_schema` runs.
#[tokio::test]
async fn remote_schema_is_adopted_reports_its_server_and_is_orphaned() {
    let s = setup(false).await;
    let server = RemoteServer::start(newsletter_schema()).await;
    let mut document = s.server.export().await;
    document["remote_schemas"] = json!([{"name": "newsletter", "comment": "subscribers",
        "definition": {"url": server.url, "timeout_seconds": 10}}]);
    s.server
        .ok(json!({"type": "replace_metadata", "args": document}))
        .await;
    let spec = json!({"name": "newsletter", "comment": "subscribers",
        "definition": {"url": server.url, "timeoutSeconds": 10}});
    let plain: RemoteSchema = resource("newsletter", spec.clone());
    let calls = s.apply(&plain).await;
    assert_eq!(events(&calls), vec!["Conflict"]);
    assert_eq!(
        calls[0].line(),
        format!("PATCH {REMOTE_SCHEMAS}/newsletter{SSA}")
    );
    let (_, reason, message) = s.condition(&plain, "Ready");
    assert_eq!(reason, "Conflict");
    assert!(
        message.contains("remote_schema:newsletter") && message.contains("basalt.dev/adopt"),
        "{message}"
    );
    assert_eq!(s.remote(&plain), None, "not reported before it is applied");

    // The catalog's record of the last introspection (written by the engine when it
    // introspects; set here so the test does not depend on when that happens).
    let db = s.server.db_url.clone();
    crate::harness::run_sql(
        &db,
        "INSERT INTO basalt_catalog.remote_schemas (name, definition_hash, introspection, introspected_at)
         VALUES ('newsletter', 'sha256:test', '{}', '2026-01-02T03:04:05Z')
         ON CONFLICT (name) DO UPDATE SET introspected_at = EXCLUDED.introspected_at,
             error = NULL, failed_at = NULL",
    )
    .await;
    let mut adopting = s.fake.get(&plain);
    adopting.metadata.annotations =
        Some([("basalt.dev/adopt".to_owned(), "true".to_owned())].into());
    s.fake.put(&adopting);
    s.reconcile(&adopting).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["Adopted"]);
    assert_eq!(s.condition(&adopting, "Ready").1, "Applied");
    assert_eq!(
        s.status(&adopting).object_keys,
        vec!["remote_schema:newsletter"]
    );
    assert_eq!(
        s.remote(&adopting),
        Some(RemoteServerStatus {
            reachable: true,
            last_introspected: Some("2026-01-02T03:04:05Z".into()),
            last_error: None,
            last_error_time: None,
        })
    );
    let r = s
        .server
        .ok(json!({"type": "export_metadata", "args": {"include_owners": true}}))
        .await;
    assert_eq!(
        r["owners"]["remote_schema:newsletter"],
        json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "RemoteSchema", "namespace": NS, "name": "newsletter"}),
        "{r}"
    );
    // In sync, nothing new known: no write, no API call.
    let version = s.version().await;
    s.reconcile(&adopting).await.unwrap();
    assert!(s.fake.take().is_empty());
    assert_eq!(s.version().await, version);

    // A failed introspection: the status says so, and keeps when it last succeeded.
    crate::harness::run_sql(
        &db,
        "UPDATE basalt_catalog.remote_schemas SET error = 'connection refused',
             failed_at = '2026-01-02T04:00:00Z' WHERE name = 'newsletter'",
    )
    .await;
    s.reconcile(&adopting).await.unwrap();
    let calls = s.fake.take();
    assert!(
        calls
            .iter()
            .any(|c| c.line() == format!("PATCH {REMOTE_SCHEMAS}/newsletter{SSA}")),
        "{calls:#?}"
    );
    assert_eq!(
        s.remote(&adopting),
        Some(RemoteServerStatus {
            reachable: false,
            last_introspected: Some("2026-01-02T03:04:05Z".into()),
            last_error: Some("connection refused".into()),
            last_error_time: Some("2026-01-02T04:00:00Z".into()),
        })
    );

    // Deleted with the orphan policy: ownership is released, the remote schema stays.
    let mut orphaning = s.fake.get(&adopting);
    orphaning
        .metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert("basalt.dev/deletion-policy".into(), "orphan".into());
    s.fake.put(&orphaning);
    s.delete(&orphaning);
    s.reconcile(&orphaning).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["Deleted"]);
    assert_eq!(
        s.server.export().await["remote_schemas"][0]["name"],
        "newsletter"
    );
    let client = s.ctx.pool.get().await.unwrap();
    let rows = managed::load(&**client).await.unwrap();
    assert!(rows.iter().all(|r| r.owner.kind != "RemoteSchema"));
}

/// Needs `add_remote_schema` (the metadata half of remote schemas): a RemoteSchema is
/// introspected with its headers (one from the environment), reported reachable, updated in
/// place on a spec change, reported as drift when changed through `/v1/query`, put back
/// on a sync request, and removed with the resource.
#[tokio::test]
async fn remote_schema_is_applied_replaced_reported_and_removed() {
    blog_newsletter();
    let server = RemoteServer::start(newsletter_schema()).await;
    let s = setup(false).await;
    let remote: RemoteSchema = resource(
        "newsletter",
        json!({"name": "newsletter", "comment": "subscribers", "definition": {
            "url": server.url, "timeoutSeconds": 10,
            "headers": [{"name": "Authorization", "valueFromEnv": NEWSLETTER_TOKEN_ENV},
                        {"name": "X-Source", "value": "basalt"}]}}),
    );
    let calls = s.apply(&remote).await;
    assert_eq!(events(&calls), vec!["Applied"], "{calls:#?}");
    assert_eq!(
        calls[0].line(),
        format!("PATCH {REMOTE_SCHEMAS}/newsletter{SSA}")
    );
    assert_eq!(s.condition(&remote, "Ready").1, "Applied");
    assert_eq!(s.condition(&remote, "Consistent").0, "True");
    assert_eq!(
        s.status(&remote).object_keys,
        vec!["remote_schema:newsletter"]
    );
    // Introspected with its headers, the secret one read from the environment.
    let seen = server.headers();
    assert!(
        seen.iter()
            .any(|h| h["authorization"] == NEWSLETTER_TOKEN && h["x-source"] == "basalt"),
        "{seen:?}"
    );
    let status = s.remote(&remote).expect("status.remote");
    assert!(status.reachable, "{status:?}");
    assert!(status.last_introspected.is_some(), "{status:?}");
    assert_eq!(status.last_error, None);

    // In the catalog as declared (the secret by its variable's name), owned by the resource.
    let r = s
        .server
        .ok(json!({"type": "export_metadata", "args": {"include_owners": true}}))
        .await;
    assert_eq!(
        r["remote_schemas"],
        json!([{"name": "newsletter", "comment": "subscribers", "definition": {
            "url": server.url, "timeout_seconds": 10,
            "headers": [{"name": "Authorization", "value_from_env": NEWSLETTER_TOKEN_ENV},
                        {"name": "X-Source", "value": "basalt"}]}}]),
        "{r}"
    );
    assert_eq!(
        r["owners"]["remote_schema:newsletter"],
        json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "RemoteSchema", "namespace": NS, "name": "newsletter"})
    );

    // A spec edit: updated in place (`update_remote_schema`).
    let mut edited = s.fake.get(&remote);
    edited.metadata.generation = Some(2);
    edited.spec.definition.timeout_seconds = Some(20);
    s.fake.put(&edited);
    s.reconcile(&edited).await.unwrap();
    s.fake.take();
    assert_eq!(s.condition(&edited, "Ready").1, "Applied");
    assert_eq!(s.status(&edited).observed_generation, Some(2));
    assert_eq!(
        s.server.export().await["remote_schemas"][0]["definition"]["timeout_seconds"],
        20
    );

    // Changed through /v1/query behind the resource's back: drift, reported only.
    s.server
        .ok(json!({"type": "bulk", "args": [
            {"type": "remove_remote_schema", "args": {"name": "newsletter"}},
            {"type": "add_remote_schema", "args": {"name": "newsletter",
                "definition": {"url": server.url, "timeout_seconds": 30}}}]}))
        .await;
    let drift = s.drift_items().await;
    assert_eq!(drift.len(), 1, "{drift:?}");
    assert_eq!(drift[0]["definition"]["object"], "remote_schema:newsletter");
    assert_eq!(drift[0]["definition"]["drift"], "modified");
    assert_eq!(drift[0]["definition"]["owner"]["kind"], "RemoteSchema");
    assert_eq!(
        drift[0]["definition"]["fields"],
        json!([
            "comment",
            "definition.headers",
            "definition.timeout_seconds"
        ])
    );
    s.reconcile(&edited).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["DriftDetected"]);
    let (status, reason, _) = s.condition(&edited, "Drifted");
    assert_eq!((status.as_str(), reason.as_str()), ("True", "Modified"));
    assert_eq!(s.condition(&edited, "Ready").1, "Drifted");
    // A sync request puts the declared definition back.
    let mut requested = s.fake.get(&edited);
    requested.metadata.annotations =
        Some([("basalt.dev/sync-requested-at".to_owned(), "now".to_owned())].into());
    s.fake.put(&requested);
    s.reconcile(&requested).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["DriftCorrected"]);
    assert!(s.drift_items().await.is_empty());
    assert_eq!(
        s.server.export().await["remote_schemas"][0]["definition"]["timeout_seconds"],
        20
    );

    // The remote goes down; a reload records the failure, and the status reports it
    // unreachable with the error (its stored schema is still served).
    let mut server = server;
    server.stop().await;
    s.server
        .ok(json!({"type": "reload_metadata", "args": {"reload_remote_schemas": true}}))
        .await;
    s.reconcile(&requested).await.unwrap();
    s.fake.take();
    let status = s.remote(&requested).expect("status.remote");
    assert!(!status.reachable, "{status:?}");
    assert!(status.last_error.is_some(), "{status:?}");
    assert!(status.last_introspected.is_some(), "{status:?}");

    // Deleting the resource removes the remote schema.
    s.delete(&requested);
    s.reconcile(&requested).await.unwrap();
    let calls = s.fake.take();
    assert_eq!(events(&calls), vec!["Deleted"], "{calls:#?}");
    let exported = s.server.export().await;
    assert!(
        exported
            .get("remote_schemas")
            .and_then(Value::as_array)
            .is_none_or(|r| r.is_empty()),
        "{exported}"
    );
    let client = s.ctx.pool.get().await.unwrap();
    let rows = managed::load(&**client).await.unwrap();
    assert!(rows.iter().all(|r| r.owner.kind != "RemoteSchema"));
}

/// Needs `add_remote_schema` (the metadata half of remote schemas): a server that does not
/// answer, or a URL variable the controller lacks, is an apply failure, retried; nothing is
/// written.
#[tokio::test]
async fn remote_schema_that_cannot_be_introspected_is_an_apply_failure() {
    let s = setup(false).await;
    // Port 9 refuses connections.
    let down: RemoteSchema = resource(
        "down",
        json!({"name": "down", "definition": {"url": "http://127.0.0.1:9/graphql", "timeoutSeconds": 2}}),
    );
    let calls = s.apply(&down).await;
    assert_eq!(events(&calls), vec!["ApplyFailed"], "{calls:#?}");
    let (_, reason, message) = s.condition(&down, "Ready");
    assert_eq!(reason, "ApplyFailed", "{message}");
    assert_eq!(
        s.remote(&down),
        None,
        "only a successful reconcile reports the server"
    );

    let unset = "BASALT_TEST_UNSET_REMOTE_SCHEMA_URL";
    assert!(std::env::var_os(unset).is_none());
    let from_env: RemoteSchema = resource(
        "from-env",
        json!({"name": "from_env", "definition": {"urlFromEnv": unset}}),
    );
    s.apply(&from_env).await;
    let (_, reason, message) = s.condition(&from_env, "Ready");
    assert_eq!(reason, "ApplyFailed", "{message}");
    assert!(message.contains(unset), "{message}");
    let exported = s.server.export().await.to_string();
    assert!(
        !exported.contains("\"down\"") && !exported.contains("from_env"),
        "nothing written: {exported}"
    );
}
