//! The controller loop running in-process against the fake API server: one leader at a time,
//! a standby that watches without writing and takes over from its cache, and a running
//! controller that applies resources and heals after the catalog's NOTIFY.

use super::*;

#[tokio::test]
async fn one_leader_and_failover_when_it_dies() {
    let db = crate::harness::fresh_database().await;
    let config: tokio_postgres::Config = db.parse().unwrap();
    let retry = Duration::from_millis(50);
    let first = leader::acquire(&config, retry).await;
    let second = tokio::spawn({
        let config = config.clone();
        async move { leader::acquire(&config, retry).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!second.is_finished(), "a second controller stands by");
    drop(first);
    let _leader = tokio::time::timeout(Duration::from_secs(5), second)
        .await
        .expect("the standby takes over")
        .unwrap();
}

#[tokio::test]
async fn standby_watches_without_writing_and_takes_over_from_its_cache() {
    let db = crate::harness::fresh_database().await;
    let config: tokio_postgres::Config = db.parse().unwrap();
    let held = leader::acquire(&config, Duration::from_millis(50)).await;
    let fake = Arc::new(FakeApi::default());
    // Already in the API when the standby starts: its cache holds it.
    fake.put(&tracked("article", json!({"table": {"name": "article"}})));
    let client = crate::controller::kube_fake::client(fake.clone());
    let (pool, _) = basalt::pool::pool_for(&db, 2).unwrap();
    {
        let mut c = pool.get().await.unwrap();
        basalt::catalog::migrate(&mut c).await.unwrap();
    }
    let settings = basalt::config::ControllerConfig {
        watch_namespaces: vec![NS.into()],
        leader_retry_ms: 50,
        ..Default::default()
    };
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let ready = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let metrics = basalt::controller::metrics::ControllerMetrics::default();
    let task = tokio::spawn(basalt::controller::run::run_with(
        client,
        pool,
        config,
        settings,
        ready.clone(),
        metrics.clone(),
        stopped,
    ));
    for _ in 0..100 {
        if ready.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        ready.load(std::sync::atomic::Ordering::Relaxed),
        "a standby is ready once its caches are synced"
    );
    // Time for a (wrong) reconcile to show up.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        metrics
            .render()
            .unwrap()
            .contains("basalt_controller_leader 0"),
        "a standby is not the leader"
    );
    let standby = fake.take();
    let writes: Vec<_> = standby.iter().filter(|c| c.method != "GET").collect();
    assert!(writes.is_empty(), "a standby never writes: {writes:#?}");
    let table_watches = |calls: &[Call]| {
        calls
            .iter()
            .filter(|c| c.uri.starts_with(&format!("{TABLES}?")) && c.uri.contains("watch=true"))
            .count()
    };
    assert_eq!(
        table_watches(&standby),
        1,
        "a standby watches: {standby:#?}"
    );
    drop(held);
    let finalizer_patch =
        |c: &Call| c.method == "PATCH" && c.uri.starts_with(&format!("{TABLES}/article?"));
    let mut calls = Vec::new();
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        calls.extend(fake.take());
        if calls.iter().any(finalizer_patch) {
            break;
        }
    }
    assert!(
        calls.iter().any(finalizer_patch),
        "the new leader reconciles what its cache held: {calls:#?}"
    );
    assert_eq!(
        table_watches(&calls),
        0,
        "no new watch (nor its list) on takeover: {calls:#?}"
    );
    assert!(metrics
        .render()
        .unwrap()
        .contains("basalt_controller_leader 1"));
    let _ = stop.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
}

#[tokio::test]
async fn running_controller_applies_resources_and_heals_on_catalog_notify() {
    let db = crate::harness::fresh_database().await;
    crate::harness::run_sql(&db, BLOG).await;
    let server = TestServer::on(&db, |_| {}).await;
    let fake = Arc::new(FakeApi::default());
    let finalized = |mut m: ObjectMeta| {
        m.finalizers = Some(vec!["basalt.dev/catalog-cleanup".into()]);
        m
    };
    let mut table = tracked("article", json!({"table": {"name": "article"}}));
    table.metadata = finalized(table.metadata);
    let mut perm = article_user_select(&[]);
    perm.metadata = finalized(perm.metadata);
    fake.put(&table);
    fake.put(&perm);
    let (pool, _) = basalt::pool::pool_for(&db, 4).unwrap();
    let settings = basalt::config::ControllerConfig {
        watch_namespaces: vec![NS.into()],
        self_heal: true,
        leader_retry_ms: 50,
        ..Default::default()
    };
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let metrics = basalt::controller::metrics::ControllerMetrics::default();
    let task = tokio::spawn(basalt::controller::run::run_with(
        crate::controller::kube_fake::client(fake.clone()),
        pool,
        db.parse().unwrap(),
        settings,
        Arc::new(Default::default()),
        metrics.clone(),
        stopped,
    ));
    let has_permission = |export: &Value| export["tables"][0].get("select_permissions").is_some();
    let mut applied = false;
    for _ in 0..200 {
        if has_permission(&server.export().await) {
            applied = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(applied, "the running controller applies both resources");
    // An imperative drop is noticed through the catalog NOTIFY and healed well before the
    // 10 s poll or the 300 s resync could have done it.
    server
        .ok(json!({"type": "drop_select_permission", "args": {"table": "article", "role": "user"}}))
        .await;
    let mut healed = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if has_permission(&server.export().await) {
            healed = true;
            break;
        }
    }
    assert!(healed, "self-heal after the NOTIFY");
    // Every reconcile is counted by kind once it finishes; this replica leads.
    let reconciles = |kind: &str| -> f64 {
        let text = metrics.render().unwrap();
        let lines = text.lines().map(|l| Ok(l.to_owned()));
        prometheus_parse::Scrape::parse(lines)
            .unwrap()
            .samples
            .iter()
            .filter(|s| {
                s.metric == "basalt_controller_reconciles_total"
                    && s.labels.get("kind") == Some(kind)
            })
            .map(|s| match s.value {
                prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) => v,
                _ => 0.0,
            })
            .sum()
    };
    for _ in 0..100 {
        if reconciles("Permission") >= 2.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let text = metrics.render().unwrap();
    assert!(reconciles("TrackedTable") >= 1.0, "{text}");
    assert!(
        reconciles("Permission") >= 2.0,
        "applied, then healed: {text}"
    );
    assert!(text.contains("basalt_controller_leader 1"), "{text}");
    // Every write that queued for a group commit left the queue.
    assert!(text.contains("basalt_controller_commit_queue 0"), "{text}");
    let calls = fake.take();
    assert!(
        calls
            .iter()
            .any(|c| c.method == "POST" && c.body["reason"] == "DriftCorrected"),
        "{calls:#?}"
    );
    let _ = stop.send(true);
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("graceful shutdown")
        .unwrap()
        .unwrap();
}
