//! Group commit (`docs/kubernetes.md`, "Group commit"): writes of reconciles that are ready
//! together share one catalog transaction, each resource keeping its own outcome and status,
//! and one resource's failure never failing the others'.

use super::*;

const TABLES: usize = 12;

#[tokio::test]
async fn writes_ready_together_share_a_transaction_and_keep_their_own_outcomes() {
    let s = setup(false).await;
    let mut ddl = String::new();
    for i in 0..TABLES {
        ddl += &format!("CREATE TABLE grouped_{i} (id int PRIMARY KEY);");
    }
    s.server.sql(&ddl).await;
    let mut tables: Vec<TrackedTable> = (0..TABLES)
        .map(|i| {
            tracked(
                &format!("grouped-{i}"),
                json!({"table": {"name": format!("grouped_{i}")}}),
            )
        })
        .collect();
    // One resource names a table that does not exist: refused alone.
    let missing = tracked("missing", json!({"table": {"name": "no_such_table"}}));
    tables.insert(TABLES / 2, missing.clone());
    for table in &tables {
        s.create(table);
        s.reconcile(table).await.expect("finalizer");
    }
    let before = s.catalog_version().await;

    // Hold the catalog row, as a long write would: every reconcile plans and queues its
    // write meanwhile, and the queue is committed in groups once the row is free.
    let (blocker, conn) = tokio_postgres::connect(&s.server.db_url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    blocker
        .batch_execute("BEGIN; SELECT 1 FROM basalt_catalog.metadata FOR UPDATE")
        .await
        .unwrap();
    let reconciles = futures_util::future::join_all(tables.iter().map(|t| s.reconcile(t)));
    let release = async {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        blocker.batch_execute("COMMIT").await.unwrap();
    };
    let (results, ()) = tokio::join!(reconciles, release);
    for result in results {
        result.expect("reconcile");
    }

    for table in tables
        .iter()
        .filter(|t| t.metadata.name != missing.metadata.name)
    {
        assert_eq!(s.condition(table, "Ready").1, "Applied", "{table:?}");
    }
    let (status, reason, message) = s.condition(&missing, "Ready");
    assert_eq!(status, "False");
    assert_eq!(reason, "DatabaseObjectMissing", "{message}");
    assert!(message.contains("no_such_table"), "{message}");
    let tracked = s.server.export().await["tables"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| {
            t["table"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("grouped_"))
        })
        .count();
    assert_eq!(tracked, TABLES);
    // Committed one by one, the twelve tables would be twelve catalog versions.
    let versions = s.catalog_version().await - before;
    assert!(
        (1..=TABLES as i64 / 2).contains(&versions),
        "{versions} catalog versions for {TABLES} tables"
    );
    // Each resource records the version its own write became part of.
    let recorded: std::collections::BTreeSet<i64> = tables
        .iter()
        .filter(|t| t.metadata.name != missing.metadata.name)
        .map(|t| s.status(t).catalog_resource_version.unwrap())
        .collect();
    assert!(recorded.len() as i64 <= versions, "{recorded:?}");
}
