//! The event log's retention: delivered events and invocation logs older than the retention
//! period are deleted (events in error are kept), by the store's clean-up and by the engine on
//! its interval; a retention of 0 keeps everything.

use super::*;

/// Rows older than the default retention (168 hours) and newer ones, delivered or in error.
async fn old_and_new_rows(s: &TestServer) {
    run_sql(
        &s.db_url,
        "INSERT INTO basalt_catalog.event_log (id, schema_name, table_name, trigger_name, payload, delivered, error, created_at) VALUES
           ('old-delivered', 'public', 'author', 't', '{}', true, false, now() - interval '200 hours'),
           ('old-error', 'public', 'author', 't', '{}', false, true, now() - interval '200 hours'),
           ('new-delivered', 'public', 'author', 't', '{}', true, false, now());
         INSERT INTO basalt_catalog.event_invocation_logs (event_id, status, created_at) VALUES
           ('old-delivered', 200, now() - interval '200 hours'),
           ('new-delivered', 200, now() - interval '200 hours'),
           ('new-delivered', 200, now());",
    )
    .await;
}

async fn event_ids(s: &TestServer) -> Value {
    query_json(
        &s.db_url,
        "SELECT id FROM basalt_catalog.event_log ORDER BY id",
    )
    .await
}

#[tokio::test]
async fn old_rows_are_cleaned_up_after_the_retention_period() {
    let s = server().await;
    old_and_new_rows(&s).await;
    let mut client = s.running.state.pool.get().await.unwrap();
    let deleted = basalt::events::store::clean_up(&mut client, 168.0)
        .await
        .unwrap();
    assert_eq!(deleted, 1);
    assert_eq!(
        event_ids(&s).await,
        json!([{"id": "new-delivered"}, {"id": "old-error"}])
    );
    let logs = query_json(
        &s.db_url,
        "SELECT count(*) AS n FROM basalt_catalog.event_invocation_logs",
    )
    .await;
    assert_eq!(logs, json!([{"n": 1}]));
}

/// The engine cleans up on its own, on its interval, with the configured retention; a
/// retention of 0 keeps everything.
#[tokio::test]
async fn the_engine_cleans_up_on_its_interval_unless_retention_is_zero() {
    let s = blog_server(|c| c.events.cleanup_interval_seconds = 1).await;
    old_and_new_rows(&s).await;
    let mut left = Value::Null;
    for _ in 0..100 {
        left = event_ids(&s).await;
        if left.as_array().unwrap().len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(left, json!([{"id": "new-delivered"}, {"id": "old-error"}]));

    let kept = blog_server(|c| {
        c.events.cleanup_interval_seconds = 1;
        c.events.retention_hours = 0;
    })
    .await;
    old_and_new_rows(&kept).await;
    // Three intervals.
    tokio::time::sleep(Duration::from_millis(3200)).await;
    assert_eq!(event_ids(&kept).await.as_array().unwrap().len(), 3);
}
