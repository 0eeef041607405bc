//! Hostile values as GraphQL arguments and variables: inserts by variable and by literal, every
//! filter operator (checked against what Postgres selects with the value bound), ordering,
//! limits and JSON paths, the document and operation name, and updates and deletes keyed by the
//! value.

use super::*;

const INSERT: &str = "mutation($v: String!, $m: jsonb) {
    insert_item_one(object: {label: $v, owner: $v, meta: $m}) { id label owner meta } }";

#[tokio::test]
async fn graphql_arguments_and_variables() {
    let (s, canary) = server(false).await;
    let client = connect(&s.db_url).await;
    let corpus = corpus();
    // Inserts, by variables and by literals: each value comes back byte for byte.
    let mut rows: Vec<Vec<i64>> = Vec::new();
    for h in &corpus {
        let meta = json!({ h.text.clone(): h.text });
        let by_variable = admin(&s, INSERT, json!({"v": h.text, "m": meta})).await;
        let literal_insert = format!(
            "mutation {{ insert_item_one(object: {{label: {l}, owner: {l}}}) {{ id label owner }} }}",
            l = literal(&h.text)
        );
        let by_literal = admin(&s, &literal_insert, json!({})).await;
        if h.has_nul() {
            assert_eq!(by_variable, refused("data-exception"), "{}", h.name);
            assert_eq!(by_literal, refused("data-exception"), "{}", h.name);
            rows.push(Vec::new());
            continue;
        }
        let mut ids = Vec::new();
        for (outcome, meta) in [(by_variable, meta.clone()), (by_literal, Value::Null)] {
            let Outcome::Data(data) = outcome else {
                panic!("{}: {outcome:?}", h.name)
            };
            let row = &data["insert_item_one"];
            assert_eq!(row["label"], h.text, "{}", h.name);
            assert_eq!(row["owner"], h.text, "{}", h.name);
            if !meta.is_null() {
                assert_eq!(row["meta"], meta, "{}", h.name);
            }
            ids.push(row["id"].as_i64().unwrap());
        }
        for id in &ids {
            let stored = client
                .query_one(
                    "SELECT label, owner FROM item WHERE id = $1",
                    &[&i32::try_from(*id).unwrap()],
                )
                .await
                .unwrap();
            assert_eq!(stored.get::<_, String>(0), h.text, "{}", h.name);
            assert_eq!(stored.get::<_, String>(1), h.text, "{}", h.name);
        }
        let read = admin(
            &s,
            "query($id: Int!) { item_by_pk(id: $id) { label meta } }",
            json!({"id": ids[0]}),
        )
        .await;
        assert_eq!(
            read,
            Outcome::Data(json!({"item_by_pk": {"label": h.text, "meta": meta}})),
            "{}",
            h.name
        );
        rows.push(ids);
    }

    // Filters: `_eq` by literal and by variable matches exactly the rows of the value, and every
    // operator selects what Postgres selects with the value bound as a parameter.
    for (h, mine) in corpus.iter().zip(&rows) {
        let text = h.text.as_str();
        let list = vec![text.to_owned()];
        let expected_eq = if h.has_nul() {
            Err("data-exception".to_owned())
        } else {
            Ok(mine.clone())
        };
        let literal_eq = admin(
            &s,
            &format!(
                "{{ item(where: {{owner: {{_eq: {}}}}}, order_by: {{id: asc}}) {{ id }} }}",
                literal(text)
            ),
            json!({}),
        )
        .await;
        assert_eq!(ids(&literal_eq, "item"), expected_eq, "{}", h.name);
        let cases: [(&str, &str, &str, Value, Rows); 7] = [
            (
                "_eq",
                "String!",
                "label",
                json!(text),
                oracle(&client, "label = $1", &text).await,
            ),
            (
                "_neq",
                "String!",
                "label",
                json!(text),
                oracle(&client, "label <> $1", &text).await,
            ),
            (
                "_like",
                "String!",
                "label",
                json!(text),
                oracle(&client, "label LIKE $1", &text).await,
            ),
            (
                "_ilike",
                "String!",
                "label",
                json!(text),
                oracle(&client, "label ILIKE $1", &text).await,
            ),
            (
                "_in",
                "[String!]!",
                "label",
                json!([text]),
                oracle(&client, "label = ANY($1)", &list).await,
            ),
            (
                "_nin",
                "[String!]!",
                "label",
                json!([text]),
                oracle(&client, "NOT (label = ANY($1))", &list).await,
            ),
            (
                "_has_key",
                "String!",
                "meta",
                json!(text),
                oracle(&client, "meta ? $1", &text).await,
            ),
        ];
        for (operator, type_name, column, value, expected) in cases {
            let query = format!(
                "query($v: {type_name}) {{ item(where: {{{column}: {{{operator}: $v}}}}, order_by: {{id: asc}}) {{ id }} }}"
            );
            let got = admin(&s, &query, json!({ "v": value })).await;
            assert_eq!(ids(&got, "item"), expected, "{operator} {}", h.name);
            if operator == "_eq" || operator == "_in" {
                assert_eq!(expected, expected_eq, "{operator} {}", h.name);
            }
            if operator == "_like" && h.name == "backslash" {
                // A pattern ending with the escape character: SQLSTATE 22025.
                assert_eq!(expected, Err("bad-request".to_owned()));
            }
        }

        // Strings where the schema wants an enum or an integer are refused before any SQL.
        let refusals = [
            (
                "query($v: order_by!) { item(order_by: {label: $v}) { id } }",
                json!({"v": text}),
            ),
            (
                "query($v: Int!) { item(limit: $v) { id } }",
                json!({"v": text}),
            ),
            (
                "query($v: Int!) { item(offset: $v) { id } }",
                json!({"v": text}),
            ),
            (
                "query($v: [item_select_column!]) { item(distinct_on: $v) { id } }",
                json!({"v": [text]}),
            ),
            (
                "query($v: Int!) { item_by_pk(id: $v) { id } }",
                json!({"v": text}),
            ),
        ];
        for (query, variables) in refusals {
            assert_eq!(
                admin(&s, query, variables).await,
                refused("validation-failed"),
                "{query} {}",
                h.name
            );
        }
        for argument in ["order_by: {label: ", "limit: ", "offset: "] {
            let query = format!(
                "{{ item({argument}{}{}) {{ id }} }}",
                literal(text),
                if argument.ends_with("{label: ") {
                    "}"
                } else {
                    ""
                }
            );
            assert_eq!(
                admin(&s, &query, json!({})).await,
                refused("validation-failed"),
                "{argument} {}",
                h.name
            );
        }

        // A JSON path: parsed into keys that are parameters, or refused.
        if let Some(id) = mine.first() {
            let got = admin(
                &s,
                "query($id: Int!, $p: String!) { item_by_pk(id: $id) { meta(path: $p) } }",
                json!({"id": id, "p": text}),
            )
            .await;
            let meta = json!({ text: text });
            let acceptable = [
                refused("parse-failed"),
                Outcome::Data(json!({"item_by_pk": {"meta": null}})),
                Outcome::Data(json!({"item_by_pk": {"meta": text}})),
                Outcome::Data(json!({"item_by_pk": {"meta": meta}})),
            ];
            assert!(acceptable.contains(&got), "path {}: {got:?}", h.name);
        }
    }

    // As the document itself or as the operation name, it is refused before any planning.
    for h in &corpus {
        let (status, body) = post(&s, None, &h.text, json!({}), &[]).await;
        assert_eq!(
            outcome(status, &body),
            refused("parse-failed"),
            "{}",
            h.name
        );
        let response = s
            .http
            .post(format!("{}/v1/graphql", s.base))
            .header("X-Svc-Admin-Secret", SECRET)
            .json(&json!({"query": "query a { item { id } }", "operationName": h.text}))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap();
        assert_eq!(
            outcome(status, &body),
            refused("validation-failed"),
            "{}",
            h.name
        );
    }

    // Updates and deletes keyed by the value touch exactly its rows.
    for (h, mine) in corpus.iter().zip(&rows) {
        let changed = format!("changed: {}", h.text);
        let got = admin(
            &s,
            "mutation($v: String!, $w: String!) { update_item(where: {label: {_eq: $v}}, _set: {owner: $w}) { affected_rows returning { owner } } }",
            json!({"v": h.text, "w": changed}),
        )
        .await;
        let deleted = admin(
            &s,
            "mutation($v: String!) { delete_item(where: {owner: {_eq: $v}}) { affected_rows } }",
            json!({"v": changed}),
        )
        .await;
        if h.has_nul() {
            assert_eq!(got, refused("data-exception"), "{}", h.name);
            assert_eq!(deleted, refused("data-exception"), "{}", h.name);
            continue;
        }
        let returning: Vec<Value> = mine.iter().map(|_| json!({"owner": changed})).collect();
        assert_eq!(
            got,
            Outcome::Data(
                json!({"update_item": {"affected_rows": mine.len(), "returning": returning}})
            ),
            "{}",
            h.name
        );
        assert_eq!(
            deleted,
            Outcome::Data(json!({"delete_item": {"affected_rows": mine.len()}})),
            "{}",
            h.name
        );
    }
    assert_eq!(
        query_json(&s.db_url, "SELECT id FROM item").await,
        json!([])
    );
    canary.check(&[]).await;
}
