//! A nested update of an article's comments writes exactly what the plain update of those
//! comments writes, whatever the comments, the entry's filter and the new value.

use super::{report, runner, runtime};
use crate::graphql::nested_updates::fixture;
use crate::harness::{query_json, TestServer};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::{json, Value};

/// The comments of one case, the `where` of the update and the body it sets.
#[derive(Debug, Clone)]
struct Case {
    /// Bodies of article 1's comments, ids 100, 101, …
    first: Vec<String>,
    /// Bodies of article 2's comments, ids 200, 201, …: no update of article 1 may reach them.
    second: Vec<String>,
    /// A `comment_bool_exp`.
    filter: Value,
    body: String,
}

impl Case {
    /// `(id, article_id, body)` of every comment.
    fn rows(&self) -> Vec<(i32, i32, String)> {
        let first = self
            .first
            .iter()
            .enumerate()
            .map(|(i, b)| (100 + i as i32, 1, b.clone()));
        let second = self
            .second
            .iter()
            .enumerate()
            .map(|(i, b)| (200 + i as i32, 2, b.clone()));
        first.chain(second).collect()
    }
}

/// Bodies from a small set, so that a filter on the body matches several rows; quotes,
/// backslashes and multibyte text included.
fn bodies() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "",
        "a",
        "b",
        "it's",
        "\"q\"",
        "x\\y",
        "\u{65e5}\u{672c}",
    ])
    .prop_map(str::to_owned)
}

fn cases() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(bodies(), 1..=8),
        prop::collection::vec(bodies(), 0..=3),
        "\\PC{0,6}",
    )
        .prop_flat_map(|(first, second, body)| {
            let ids: Vec<i64> = (0..first.len() as i64)
                .map(|i| 100 + i)
                .chain((0..second.len() as i64).map(|i| 200 + i))
                .collect();
            let n = ids.len();
            let filter = prop_oneof![
                Just(json!({})),
                prop::sample::subsequence(ids.clone(), 0..=n)
                    .prop_map(|ids| json!({"id": {"_in": ids}})),
                prop::sample::subsequence(ids, 0..=n)
                    .prop_map(|ids| json!({"_not": {"id": {"_in": ids}}})),
                prop::sample::select(first.clone()).prop_map(|b| json!({"body": {"_eq": b}})),
            ];
            (Just(first), Just(second), filter, Just(body))
        })
        .prop_map(|(first, second, filter, body)| Case {
            first,
            second,
            filter,
            body,
        })
}

/// Replaces every comment with the case's comments.
async fn reset(db: &tokio_postgres::Client, case: &Case) {
    let rows = case.rows();
    let ids: Vec<i32> = rows.iter().map(|r| r.0).collect();
    let articles: Vec<i32> = rows.iter().map(|r| r.1).collect();
    let bodies: Vec<String> = rows.into_iter().map(|r| r.2).collect();
    db.batch_execute("DELETE FROM comment").await.unwrap();
    db.execute(
        "INSERT INTO comment (id, article_id, body) SELECT * FROM unnest($1::int[], $2::int[], $3::text[])",
        &[&ids, &articles, &bodies],
    )
    .await
    .unwrap();
}

async fn comments(s: &TestServer) -> Value {
    query_json(
        &s.db_url,
        "SELECT id, article_id, body, hidden FROM comment ORDER BY id",
    )
    .await
}

/// The answer of an admin request with variables, which must have no errors.
async fn data(s: &TestServer, query: &str, case: &Case) -> Result<Value, TestCaseError> {
    let r = s
        .graphql_as(
            json!({"query": query, "variables": {"w": case.filter, "b": case.body}}),
            &[],
        )
        .await;
    prop_assert!(r.get("errors").is_none(), "{}: {}", query, r);
    Ok(r["data"].clone())
}

#[test]
fn a_nested_update_of_comments_writes_what_the_plain_update_writes() {
    let rt = runtime();
    let (s, db) = rt.block_on(async {
        let s = fixture().await;
        let (db, conn) = tokio_postgres::connect(&s.db_url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        (s, db)
    });
    let nested = "mutation($w: comment_bool_exp, $b: String!) { update_article_by_pk(pk_columns: {id: 1}, _nested: {comments: [{where: $w, _set: {body: $b}}]}) { id comments(order_by: {id: asc}) { id body } } }";
    let plain = "mutation($w: comment_bool_exp!, $b: String!) { update_comment(where: {_and: [{article_id: {_eq: 1}}, $w]}, _set: {body: $b}) { affected_rows } }";
    report(runner(16).run(&cases(), |case| {
        rt.block_on(async {
            reset(&db, &case).await;
            let answer = data(&s, nested, &case).await?;
            let through_article = comments(&s).await;
            reset(&db, &case).await;
            data(&s, plain, &case).await?;
            let direct = comments(&s).await;
            prop_assert_eq!(&through_article, &direct);
            // The answer is read after the nested step: it shows article 1's new comments.
            let of_first: Vec<Value> = direct
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["article_id"] == 1)
                .map(|c| json!({"id": c["id"], "body": c["body"]}))
                .collect();
            prop_assert_eq!(
                answer,
                json!({"update_article_by_pk": {"id": 1, "comments": of_first}})
            );
            Ok(())
        })
    }));
}
