//! Reconciles share one view of the catalog and the database, read again only when the
//! catalog, the ownership rows or the database's DDL changed (`docs/kubernetes.md`, "One view
//! of the catalog"): applying N resources, each write re-triggering every resource as the
//! catalog's `NOTIFY` does, reads the database O(versions) times, not O(N²).

use super::*;
use crate::harness::query_json;

const CHAIN: usize = 12;

fn chain_table(i: usize) -> TrackedTable {
    let spec = if i == 0 {
        json!({"table": {"name": "chain_0"}})
    } else {
        json!({"table": {"name": format!("chain_{i}")},
            "objectRelationships": [{"name": "previous", "using": {"foreignKeyConstraintOn": "prev_id"}}]})
    };
    tracked(&format!("chain-{i}"), spec)
}

#[tokio::test]
async fn applying_many_resources_reads_the_database_once_per_version() {
    let s = setup(false).await;
    let mut ddl = "CREATE TABLE chain_0 (id int PRIMARY KEY);".to_owned();
    for i in 1..CHAIN {
        ddl += &format!(
            "CREATE TABLE chain_{i} (id int PRIMARY KEY, prev_id int REFERENCES chain_{}(id));",
            i - 1
        );
    }
    s.server.sql(&ddl).await;
    let tables: Vec<TrackedTable> = (0..CHAIN).map(chain_table).collect();
    for table in &tables {
        s.create(table);
        s.reconcile(table).await.expect("finalizer");
    }
    let (introspected, version) = (s.ctx.introspections(), s.catalog_version().await);
    for (i, table) in tables.iter().enumerate() {
        s.reconcile(table).await.expect("apply");
        // The write's NOTIFY re-triggers every resource applied so far.
        for earlier in &tables[..=i] {
            s.reconcile(earlier).await.expect("re-triggered");
        }
    }
    for table in &tables {
        assert_eq!(s.condition(table, "Ready").1, "Applied", "{table:?}");
    }
    let versions = (s.catalog_version().await - version) as u64;
    assert_eq!(versions, CHAIN as u64, "one catalog write per table");
    let spent = s.ctx.introspections() - introspected;
    // The shared view reads the database once and the first write once, in its transaction;
    // each later write starts from the state the previous one committed (nothing changed in
    // between), which is also handed to the shared view: the re-triggered reconciles (78 of
    // them here) read nothing either. (Before writes kept a basis: one per version, 13.)
    assert!(
        spent <= 2,
        "{spent} introspections for {versions} catalog versions"
    );

    // A resync of everything with nothing changed reads nothing, writes nothing and
    // evaluates no CEL rule (each resource passed them at its resource version already).
    s.fake.take();
    let (before, checked) = (s.ctx.introspections(), s.ctx.cel_checks());
    for table in &tables {
        s.reconcile(table).await.expect("resync");
    }
    assert_eq!(s.ctx.introspections(), before);
    assert_eq!(s.ctx.cel_checks(), checked, "CEL rules evaluated again");
    assert_eq!(s.catalog_version().await - version, versions as i64);
    let writes: Vec<String> = s
        .fake
        .take()
        .iter()
        .filter(|c| c.method != "GET")
        .map(Call::line)
        .collect();
    assert!(
        writes.is_empty(),
        "no status patch and no Event: {writes:?}"
    );

    // DDL run directly (not through Basalt) is seen at once: the view is read again exactly
    // once, and the resource whose relationship lost its column reports it.
    s.server
        .sql("ALTER TABLE chain_5 DROP COLUMN prev_id")
        .await;
    let before = s.ctx.introspections();
    s.reconcile(&tables[5]).await.expect("after DDL");
    s.reconcile(&tables[6]).await.expect("after DDL");
    assert_eq!(s.ctx.introspections(), before + 1);
    let (status, reason, message) = s.condition(&tables[5], "Consistent");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "Inconsistent")
    );
    assert!(message.contains("previous"), "{message}");
    assert_eq!(s.condition(&tables[6], "Consistent").0, "True");
}

#[tokio::test]
async fn catalog_counts_ddl_and_ownership_changes() {
    let s = setup(false).await;
    let read = || async {
        query_json(
            &s.server.db_url,
            "SELECT (SELECT coalesce(sum(n), 0) FROM basalt_catalog.change_counts WHERE source = 'ddl')::int AS ddl,
                    (SELECT coalesce(sum(n), 0) FROM basalt_catalog.change_counts WHERE source = 'managed')::int AS managed",
        )
        .await[0]
            .clone()
    };
    let start = read().await;
    s.server
        .sql("CREATE TABLE counted (id int PRIMARY KEY); ALTER TABLE counted ADD COLUMN x int")
        .await;
    let after_ddl = read().await;
    assert_eq!(after_ddl["ddl"], start["ddl"].as_i64().unwrap() + 2);
    assert_eq!(after_ddl["managed"], start["managed"]);
    // A rolled-back DDL statement counts nothing.
    s.server
        .sql("BEGIN; CREATE TABLE never (id int); ROLLBACK")
        .await;
    assert_eq!(read().await["ddl"], after_ddl["ddl"]);
    // Applying a resource writes ownership rows: counted in the same transaction.
    s.apply(&author()).await;
    assert!(read().await["managed"].as_i64().unwrap() > start["managed"].as_i64().unwrap());
}
