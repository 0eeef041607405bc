//! The event trigger operations and their errors, the capture triggers they install in
//! Postgres (also through `replace_metadata`), and triggers following their table and columns
//! when those are altered, renamed or dropped.

use super::*;

#[tokio::test]
async fn create_event_trigger_validates_as_the_spec_says() {
    let s = server().await;
    let url = "http://127.0.0.1:9/hook";
    s.fails(
        trigger(url, json!({"table": {"schema": "public", "name": "nope"}})),
        400,
        "not-exists",
        "$.args.table",
    )
    .await;
    let r = s
        .fails(
            trigger(url, json!({"update": {"columns": ["name", "ghost"]}})),
            400,
            "not-exists",
            "$.args.update.columns[1]",
        )
        .await;
    assert_eq!(r["error"], "column \"ghost\" does not exist");
    let r = s
        .fails(
            trigger(url, json!({"name": "bad name"})),
            400,
            "parse-failed",
            "$.args.name",
        )
        .await;
    assert_eq!(
        r["error"],
        "only alphanumeric and underscore and hyphens allowed for name"
    );
    s.fails(
        trigger(url, json!({"webhook_from_env": "X"})),
        400,
        "parse-failed",
        "$.args",
    )
    .await;
    let r = s
        .fails(
            json!({"type": "create_event_trigger", "args": {"name": "t", "table": "author", "webhook": url}}),
            400,
            "parse-failed",
            "$.args",
        )
        .await;
    assert_eq!(
        r["error"],
        "atleast one amongst insert/update/delete/enable_manual spec must be provided"
    );
    s.fails(
        trigger(url, json!({"insert": {"columns": "*", "payload": []}})),
        400,
        "parse-failed",
        "$.args.insert.payload",
    )
    .await;
    let r = s
        .fails(
            trigger(
                url,
                json!({"headers": [{"name": "X-Key", "value_from_env": "BASALT_TEST_SURELY_UNSET"}]}),
            ),
            400,
            "not-found",
            "$.args.headers[0]",
        )
        .await;
    assert_eq!(
        r["error"],
        "environment variable 'BASALT_TEST_SURELY_UNSET' not set"
    );
    s.ok(trigger(url, json!({}))).await;
    let r = s
        .fails(trigger(url, json!({})), 400, "already-exists", "$.args")
        .await;
    assert_eq!(
        r["error"],
        "Event trigger with name \"author_changed\" already exists"
    );
    let r = s
        .fails(
            trigger(
                url,
                json!({"replace": true, "table": {"schema": "public", "name": "article"}}),
            ),
            400,
            "not-supported",
            "$.args",
        )
        .await;
    assert_eq!(r["error"], "cannot replace table or schema for trigger");
    s.fails(
        json!({"type": "delete_event_trigger", "args": {"name": "nope"}}),
        400,
        "not-exists",
        "$.args.name",
    )
    .await;
    // The metadata holds it as created, defaults filled in.
    let exported = s.export().await;
    let author = exported["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"]["name"] == "author")
        .unwrap();
    assert_eq!(
        author["event_triggers"],
        json!([{"name": "author_changed",
                "definition": {"enable_manual": false, "insert": {"columns": "*"},
                               "update": {"columns": ["name"], "payload": ["id", "name"]},
                               "delete": {"columns": "*", "payload": ["id"]}},
                "retry_conf": {"num_retries": 0, "interval_sec": 10, "timeout_sec": 60},
                "webhook": url}])
    );
}

/// Whether the capture triggers of `name` exist in Postgres.
async fn captures(s: &TestServer) -> Value {
    query_json(
        &s.db_url,
        "SELECT tgname FROM pg_trigger WHERE tgname LIKE 'notify\\_basalt\\_%' ORDER BY tgname",
    )
    .await
}

#[tokio::test]
async fn triggers_follow_the_lifecycle_of_their_table_and_columns() {
    let s = server().await;
    let hook = Webhook::default();
    let url = hook.start().await;
    s.ok(trigger(&url, json!({}))).await;
    assert_eq!(
        captures(&s).await,
        json!([{"tgname": "notify_basalt_author_changed_DELETE"},
               {"tgname": "notify_basalt_author_changed_INSERT"},
               {"tgname": "notify_basalt_author_changed_UPDATE"}])
    );
    // A renamed column follows: the spec names the new column and the capture fires on it.
    s.ok(json!({"type": "run_sql", "args": {"sql": "ALTER TABLE author RENAME COLUMN name TO display_name"}}))
        .await;
    let exported = s.export().await;
    let author = exported["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"]["name"] == "author")
        .unwrap()
        .clone();
    assert_eq!(
        author["event_triggers"][0]["definition"]["update"],
        json!({"columns": ["display_name"], "payload": ["id", "display_name"]})
    );
    run_sql(
        &s.db_url,
        "UPDATE author SET display_name = 'Anna' WHERE id = 1",
    )
    .await;
    let body = &hook.wait_for(1).await[0];
    assert_eq!(
        body["event"]["data"]["new"],
        json!({"id": 1, "display_name": "Anna"})
    );

    // A capture dropped behind Basalt's back is reported; reload_metadata installs it again.
    run_sql(
        &s.db_url,
        "DROP TRIGGER \"notify_basalt_author_changed_INSERT\" ON author",
    )
    .await;
    s.ok(json!({"type": "reload_metadata", "args": {}})).await;
    let r = s
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(r["is_consistent"], true, "{r}");
    assert_eq!(captures(&s).await.as_array().unwrap().len(), 3);
    run_sql(
        &s.db_url,
        "DROP TRIGGER \"notify_basalt_author_changed_INSERT\" ON author",
    )
    .await;
    let r = s
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(r["is_consistent"], false);
    assert_eq!(r["inconsistent_objects"][0]["type"], "event_trigger");
    assert!(r["inconsistent_objects"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("notify_basalt_author_changed_INSERT"));
    s.ok(json!({"type": "reload_metadata", "args": {}})).await;

    // Dropping a listened column: refused without cascade, naming the trigger; with cascade
    // the trigger goes, and its captures with it.
    let r = s
        .fails(
            json!({"type": "run_sql", "args": {"sql": "ALTER TABLE author DROP COLUMN display_name CASCADE"}}),
            400,
            "dependency-error",
            "$.args",
        )
        .await;
    assert!(
        r["error"].as_str().unwrap().contains("event-trigger"),
        "{r}"
    );
    s.ok(json!({"type": "run_sql", "args": {"sql": "ALTER TABLE author DROP COLUMN display_name CASCADE", "cascade": true}}))
        .await;
    assert_eq!(captures(&s).await, json!([]));
    run_sql(&s.db_url, "ALTER TABLE author ADD COLUMN name text").await;

    // Deleting the trigger drops its captures and archives what was not delivered.
    hook.script.lock().unwrap().extend([(500, None); 5]);
    s.ok(trigger(
        &url,
        json!({"update": {"columns": "*"}, "retry_conf": {"num_retries": 5, "interval_sec": 60}}),
    ))
    .await;
    run_sql(&s.db_url, "INSERT INTO author (id, name) VALUES (40, 'Lo')").await;
    settle(&s, |e| {
        e["tries"].as_i64().unwrap() >= 1 || e["delivered"] == true
    })
    .await;
    s.ok(json!({"type": "delete_event_trigger", "args": {"name": "author_changed"}}))
        .await;
    assert_eq!(captures(&s).await, json!([]));
    let log = events(&s).await;
    let last = log.as_array().unwrap().last().unwrap();
    assert_eq!(
        (&last["archived"], &last["delivered"]),
        (&json!(true), &json!(false))
    );
    // Untracking a table takes its triggers with it.
    s.ok(trigger(&url, json!({"update": {"columns": "*"}})))
        .await;
    s.ok(json!({"type": "untrack_table", "args": {"table": "author", "cascade": true}}))
        .await;
    assert_eq!(captures(&s).await, json!([]));
}

#[tokio::test]
async fn replace_metadata_installs_and_removes_captures() {
    let s = server().await;
    let hook = Webhook::default();
    let url = hook.start().await;
    s.ok(trigger(&url, json!({}))).await;
    let with = s.export().await;
    let mut without = with.clone();
    for table in without["tables"].as_array_mut().unwrap() {
        table.as_object_mut().unwrap().remove("event_triggers");
    }
    s.ok(json!({"type": "replace_metadata", "args": without}))
        .await;
    assert_eq!(captures(&s).await, json!([]));
    s.ok(json!({"type": "replace_metadata", "args": with}))
        .await;
    assert_eq!(captures(&s).await.as_array().unwrap().len(), 3);
    s.ok(json!({"type": "clear_metadata", "args": {}})).await;
    assert_eq!(captures(&s).await, json!([]));
}

/// A tracked table renamed through `run_sql` keeps its trigger (captures fire on the new
/// name); dropped, it takes its trigger with it; dropped unchecked, the trigger is reported
/// inconsistent with the table, and `drop_inconsistent_metadata` removes both.
#[tokio::test]
async fn triggers_follow_their_table_renamed_or_dropped() {
    let s = server().await;
    let hook = Webhook::default();
    let url = hook.start().await;
    s.ok(json!({"type": "run_sql", "args": {"sql": "CREATE TABLE note (id int PRIMARY KEY, body text)"}}))
        .await;
    let note_trigger = |table: &str| {
        json!({"type": "create_event_trigger", "args": {
            "name": "note_changed", "table": table, "webhook": url, "insert": {"columns": "*"}}})
    };
    s.ok(json!({"type": "track_table", "args": {"table": "note"}}))
        .await;
    s.ok(note_trigger("note")).await;
    s.ok(json!({"type": "run_sql", "args": {"sql": "ALTER TABLE note RENAME TO memo"}}))
        .await;
    let exported = s.export().await;
    let memo = exported["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"]["name"] == "memo")
        .cloned()
        .unwrap_or_else(|| panic!("memo not tracked: {exported}"));
    assert_eq!(memo["event_triggers"][0]["name"], "note_changed");
    run_sql(&s.db_url, "INSERT INTO memo VALUES (1, 'hi')").await;
    let body = &hook.wait_for(1).await[0];
    assert_eq!(body["table"], json!({"schema": "public", "name": "memo"}));
    assert_eq!(body["trigger"]["name"], "note_changed");

    // Dropped (checked): the table and its trigger leave the metadata.
    s.ok(json!({"type": "run_sql", "args": {"sql": "DROP TABLE memo", "cascade": true}}))
        .await;
    let exported = s.export().await;
    assert!(!exported.to_string().contains("note_changed"), "{exported}");

    // Dropped unchecked: both reported, each on its own, then dropped together.
    s.ok(json!({"type": "run_sql", "args": {"sql": "CREATE TABLE note (id int PRIMARY KEY, body text)"}}))
        .await;
    s.ok(json!({"type": "track_table", "args": {"table": "note"}}))
        .await;
    s.ok(note_trigger("note")).await;
    s.ok(json!({"type": "run_sql", "args": {"sql": "DROP TABLE note", "check_metadata_consistency": false}}))
        .await;
    let r = s
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    let items = r["inconsistent_objects"].as_array().unwrap();
    let trigger = items
        .iter()
        .find(|i| i["type"] == "event_trigger")
        .unwrap_or_else(|| panic!("no event_trigger item: {r}"));
    assert_eq!(
        trigger["definition"]["configuration"]["name"],
        "note_changed"
    );
    assert_eq!(trigger["definition"]["table"]["name"], "note");
    assert!(
        trigger["reason"].as_str().unwrap().contains("note"),
        "{trigger}"
    );
    assert!(items.iter().any(|i| i["type"] == "table"), "{r}");
    s.ok(json!({"type": "drop_inconsistent_metadata", "args": {}}))
        .await;
    let r = s
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(r["is_consistent"], true, "{r}");
    assert!(!s.export().await.to_string().contains("note_changed"));
}
