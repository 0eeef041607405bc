//! Hostile values as the arguments of tracked functions and native queries: a query function
//! and a native query filtering by them (the rows compared with what Postgres selects with the
//! value bound), a mutation function writing them (each stored byte for byte), by literal and
//! by variable, and as function names `track_function` is asked for.

use super::*;

const FUNCTIONS: &str = r#"
CREATE FUNCTION item_search(needle text, fallback text DEFAULT NULL) RETURNS SETOF item AS $$
  SELECT * FROM item WHERE label = coalesce(needle, fallback)
$$ LANGUAGE sql STABLE;
CREATE FUNCTION relabel(item_id int, new_label text) RETURNS item AS $$
  UPDATE item SET label = new_label WHERE id = item_id RETURNING *
$$ LANGUAGE sql;
"#;

#[tokio::test]
async fn function_arguments() {
    let (s, canary) = server(false).await;
    let client = connect(&s.db_url).await;
    client.batch_execute(FUNCTIONS).await.unwrap();
    s.ok(json!({"type": "reload_metadata", "args": {}})).await;
    s.ok(json!({"type": "track_function", "args": {"name": "item_search"}}))
        .await;
    s.ok(json!({"type": "track_function", "args": {"name": "relabel"}}))
        .await;
    let corpus = corpus();
    for h in &corpus {
        let inserted = admin(
            &s,
            "mutation { insert_item_one(object: {label: \"x\"}) { id } }",
            json!({}),
        )
        .await;
        let Outcome::Data(data) = inserted else {
            panic!("{inserted:?}")
        };
        let id = data["insert_item_one"]["id"].as_i64().unwrap();
        let by_variable = admin(
            &s,
            "mutation($id: Int, $v: String) { relabel(args: {item_id: $id, new_label: $v}) { id label } }",
            json!({"id": id, "v": h.text}),
        )
        .await;
        if h.has_nul() {
            assert_eq!(by_variable, refused("data-exception"), "{}", h.name);
            continue;
        }
        assert_eq!(
            by_variable,
            Outcome::Data(json!({"relabel": {"id": id, "label": h.text}})),
            "{}",
            h.name
        );
        let stored = client
            .query_one(
                "SELECT label FROM item WHERE id = $1",
                &[&i32::try_from(id).unwrap()],
            )
            .await
            .unwrap();
        assert_eq!(stored.get::<_, String>(0), h.text, "{}", h.name);
    }
    for h in corpus.iter().filter(|h| !h.has_nul()) {
        let expected: Vec<i64> = client
            .query(
                "SELECT id FROM item WHERE label = $1 ORDER BY id",
                &[&h.text],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| i64::from(r.get::<_, i32>(0)))
            .collect();
        let by_literal = format!(
            "{{ item_search(args: {{needle: {}}}, order_by: {{id: asc}}) {{ id }} }}",
            literal(&h.text)
        );
        let outcome = admin(&s, &by_literal, json!({})).await;
        assert_eq!(
            ids(&outcome, "item_search"),
            Ok(expected.clone()),
            "{}",
            h.name
        );
        // The value through the defaulted argument, after an explicit null.
        let outcome = admin(
            &s,
            "query($v: String) { item_search(args: {needle: null, fallback: $v}, order_by: {id: asc}) { id } }",
            json!({"v": h.text}),
        )
        .await;
        assert_eq!(ids(&outcome, "item_search"), Ok(expected), "{}", h.name);
    }
    // As the name of a function to track: nothing of that name exists.
    for h in corpus.iter().filter(|h| !h.has_nul()) {
        let (status, body) = s
            .query(json!({"type": "track_function", "args": {"function": {"schema": h.text, "name": h.text}}}))
            .await;
        assert_eq!(status, 400, "{}: {}", h.name, brief(&body.to_string()));
        assert!(
            body["code"] == "constraint-violation" || body["code"] == "parse-failed",
            "{}: {}",
            h.name,
            brief(&body.to_string())
        );
    }
    canary.check(&[]).await;
}

/// Hostile values as a native query's argument: bound as a parameter, the rows compared with
/// what Postgres selects with the value bound.
#[tokio::test]
async fn native_query_arguments() {
    let (s, canary) = server(false).await;
    let client = connect(&s.db_url).await;
    let corpus = corpus();
    for h in corpus.iter().filter(|h| !h.has_nul()) {
        client
            .execute("INSERT INTO item (label) VALUES ($1)", &[&h.text])
            .await
            .unwrap();
    }
    s.ok(json!({"type": "bulk", "args": [
        {"type": "track_logical_model", "args": {"name": "item_row",
            "fields": [{"name": "id", "type": {"scalar": "integer"}}, {"name": "label", "type": {"scalar": "text"}}]}},
        {"type": "track_native_query", "args": {"root_field_name": "items_labelled", "returns": "item_row",
            "arguments": {"v": {"type": "text"}},
            "code": "SELECT id, label FROM item WHERE label = {{v}} OR label LIKE '%' || {{v}} || '-'"}}
    ]}))
    .await;
    for h in &corpus {
        let outcome = admin(
            &s,
            "query($v: String!) { items_labelled(args: {v: $v}, order_by: {id: asc}) { id } }",
            json!({"v": h.text}),
        )
        .await;
        if h.has_nul() {
            assert_eq!(outcome, refused("data-exception"), "{}", h.name);
            continue;
        }
        let expected: Vec<i64> = client
            .query(
                "SELECT id FROM item WHERE label = $1 OR label LIKE '%' || $1 || '-' ORDER BY id",
                &[&h.text],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| i64::from(r.get::<_, i32>(0)))
            .collect();
        assert_eq!(ids(&outcome, "items_labelled"), Ok(expected), "{}", h.name);
    }
    canary.check(&[]).await;
}
