//! GraphQL queries through HTTP on the blog fixture.

use super::{data, ids};
use crate::harness::TestServer;
use serde_json::json;

#[tokio::test]
async fn lists_by_pk_custom_names_and_nesting() {
    let s = TestServer::blog().await;
    let r = s
        .gql("{ author(order_by: {id: asc}) { id name articles(order_by: {id: asc}) { title } } }")
        .await;
    assert_eq!(
        r["data"]["author"][0]["articles"][0]["title"], "Rust in practice",
        "{r}"
    );
    let r = s
        .gql("{ articleById(id: 3) { title viewCount author { name } } }")
        .await;
    assert_eq!(
        r,
        json!({"data": {"articleById": {"title": "Lund guide", "viewCount": 300, "author": {"name": "Bo"}}}})
    );
    assert_eq!(
        data(&s, "{ articleById(id: 99) { id } }").await,
        json!({"articleById": null})
    );
    // Aliases, __typename, nested array arguments, object relationship from a view (manual).
    let d = data(&s, r#"{ a: author(where: {id: {_eq: 1}}) { __typename who: name
        latest: articles(order_by: {id: desc}, limit: 1) { id } comments { body article { title } } }
        popular_article(order_by: {views: desc}) { title author { name } } }"#).await;
    assert_eq!(
        d["a"],
        json!([{"__typename": "author", "who": "Ann", "latest": [{"id": 2}],
        "comments": [{"body": "Nice city", "article": {"title": "Lund guide"}}, {"body": "Ha", "article": {"title": "Quotes 'n' stuff"}}]}])
    );
    assert_eq!(
        d["popular_article"],
        json!([{"title": "Lund guide", "author": {"name": "Bo"}},
        {"title": "Rust in practice", "author": {"name": "Ann"}}, {"title": "Quotes 'n' stuff", "author": {"name": "Cy"}}])
    );
    // Scalars: numeric, date, jsonb with a path, enum column values.
    let d = data(&s, r#"{ author(where: {id: {_eq: 1}}) { rating joined profile city: profile(path: "$.city") lang: profile(path: "langs[1]") } articles(where: {id: {_eq: 1}}) { status tags } }"#).await;
    assert_eq!(
        d["author"][0],
        json!({"rating": 4.5, "joined": "2019-05-01", "profile": {"city": "Oslo", "langs": ["no", "en"]}, "city": "Oslo", "lang": "en"})
    );
    assert_eq!(
        d["articles"][0],
        json!({"status": "published", "tags": ["rust", "systems"]})
    );
    // Computed fields: scalar, set-returning with args and list arguments, session argument.
    let d = data(&s, r#"{ author(where: {id: {_eq: 1}}) { full_name search_articles(args: {term: "POE"}) { title } is_me } }"#).await;
    // The admin session has no x-svc-user-id, so the comparison inside the function is null.
    assert_eq!(
        d["author"][0],
        json!({"full_name": "Ann (poet)", "search_articles": [{"title": "Poems"}], "is_me": null})
    );
    let r = s
        .gql_role(
            "{ author(where: {id: {_eq: 1}}) { is_me } }",
            "user",
            &[("X-Svc-User-Id", "2")],
        )
        .await;
    assert_eq!(r, json!({"data": {"author": [{"is_me": false}]}}));
    let r = s
        .gql_role(
            "{ author(where: {id: {_eq: 2}}) { is_me } }",
            "user",
            &[("X-Svc-User-Id", "2")],
        )
        .await;
    assert_eq!(r, json!({"data": {"author": [{"is_me": true}]}}));
}

#[tokio::test]
async fn every_operator() {
    let s = TestServer::blog().await;
    let cases: Vec<(&str, Vec<i64>)> = vec![
        (r#"{id: {_eq: 2}}"#, vec![2]),
        (r#"{id: {_neq: 2}}"#, vec![1, 3, 4, 5]),
        (r#"{id: {_gt: 3}}"#, vec![4, 5]),
        (r#"{id: {_gte: 4}}"#, vec![4, 5]),
        (r#"{id: {_lt: 2}}"#, vec![1]),
        (r#"{id: {_lte: 2}}"#, vec![1, 2]),
        (r#"{id: {_in: [1, 5]}}"#, vec![1, 5]),
        (r#"{id: {_nin: [1, 5]}}"#, vec![2, 3, 4]),
        (r#"{id: {_in: []}}"#, vec![]),
        (r#"{tags: {_is_null: true}}"#, vec![4]),
        (r#"{tags: {_is_null: false}, id: {_lt: 3}}"#, vec![1, 2]),
        (r#"{title: {_like: "%in%"}}"#, vec![1]),
        (r#"{title: {_nlike: "%o%"}}"#, vec![1, 3]),
        (r#"{title: {_ilike: "r%"}}"#, vec![1]),
        (r#"{title: {_nilike: "%O%"}}"#, vec![1, 3]),
        (r#"{title: {_similar: "(Poems|Draft)%"}}"#, vec![2, 4]),
        (r#"{title: {_nsimilar: "(Poems|Draft)%"}}"#, vec![1, 3, 5]),
        (r#"{title: {_regex: "^[PD]"}}"#, vec![2, 4]),
        (r#"{title: {_iregex: "^l"}}"#, vec![3]),
        (r#"{title: {_nregex: "s"}}"#, vec![3]),
        (r#"{title: {_niregex: "^[a-q]"}}"#, vec![1]),
        (r#"{tags: {_contains: ["rust"]}}"#, vec![1]),
        (
            r#"{tags: {_contained_in: ["poetry", "travel"]}}"#,
            vec![2, 3, 5],
        ),
        (r#"{tags: {_has_key: "travel"}}"#, vec![3]),
        (r#"{tags: {_has_keys_any: ["poetry", "rust"]}}"#, vec![1, 2]),
        (r#"{tags: {_has_keys_all: ["rust", "systems"]}}"#, vec![1]),
        (
            r#"{tags: {_cast: {String: {_ilike: "%TRAVEL%"}}}}"#,
            vec![3],
        ),
        (r#"{status: {_eq: draft}}"#, vec![2, 4]),
        (
            r#"{status: {_in: [published]}, viewCount: {_gte: 150}}"#,
            vec![1, 3],
        ),
        (r#"{_and: [{id: {_gt: 1}}, {id: {_lt: 4}}]}"#, vec![2, 3]),
        (r#"{_or: [{id: {_eq: 1}}, {id: {_eq: 5}}]}"#, vec![1, 5]),
        (r#"{_not: {id: {_gt: 1}}}"#, vec![1]),
        (r#"{author: {name: {_eq: "Bo"}}}"#, vec![3, 4]),
        (r#"{comments: {body: {_ilike: "%agree%"}}}"#, vec![1]),
        (r#"{comments: {}}"#, vec![1, 3, 5]),
        (r#"{id: {_eq: null}}"#, vec![1, 2, 3, 4, 5]),
        (r#"{}"#, vec![1, 2, 3, 4, 5]),
    ];
    for (filter, expected) in cases {
        let q = format!("{{ articles(where: {filter}, order_by: {{id: asc}}) {{ id }} }}");
        let d = data(&s, &q).await;
        assert_eq!(ids(&d["articles"]), expected, "{filter}");
    }
    let d = data(
        &s,
        r#"{ author(where: {profile: {_contains: {city: "Lund"}}}) { id } }"#,
    )
    .await;
    assert_eq!(ids(&d["author"]), [2]);
    let d = data(
        &s,
        r#"{ author(where: {joined: {_gt: "2020-01-01"}}, order_by: {id: asc}) { id } }"#,
    )
    .await;
    assert_eq!(ids(&d["author"]), [2, 3]);
}

#[tokio::test]
async fn ordering_pagination_and_distinct() {
    let s = TestServer::blog().await;
    let d = data(
        &s,
        "{ articles(order_by: [{author: {name: desc}}, {viewCount: asc}]) { id } }",
    )
    .await;
    assert_eq!(ids(&d["articles"]), [5, 4, 3, 2, 1]);
    let d = data(
        &s,
        "{ author(order_by: {articles_aggregate: {count: desc}}, limit: 1) { id } }",
    )
    .await;
    assert_eq!(ids(&d["author"]), [1]);
    let d = data(
        &s,
        "{ author(order_by: {articles_aggregate: {max: {viewCount: desc}}}) { id } }",
    )
    .await;
    assert_eq!(ids(&d["author"]), [2, 1, 3]);
    let d = data(&s, "{ author(order_by: {rating: desc_nulls_last}) { id } }").await;
    assert_eq!(ids(&d["author"]), [1, 2, 3]);
    let d = data(&s, "{ author(order_by: {rating: desc}) { id } }").await;
    assert_eq!(ids(&d["author"]), [3, 1, 2]);
    let d = data(&s, "{ author(order_by: {bio: asc_nulls_first}) { id } }").await;
    assert_eq!(ids(&d["author"]), [2, 3, 1]);
    let d = data(
        &s,
        "{ articles(order_by: {id: asc}, limit: 2, offset: 1) { id } }",
    )
    .await;
    assert_eq!(ids(&d["articles"]), [2, 3]);
    let d = data(&s, "{ articles(distinct_on: author_id, order_by: [{author_id: asc}, {viewCount: desc}]) { id } }").await;
    assert_eq!(ids(&d["articles"]), [1, 3, 5]);
    let r = s
        .gql("{ articles(distinct_on: author_id, order_by: {id: asc}) { id } }")
        .await;
    assert_eq!(
        r["errors"][0]["message"],
        "\"distinct_on\" columns must match initial \"order_by\" columns"
    );
    assert_eq!(r["errors"][0]["extensions"]["code"], "validation-failed");
}

#[tokio::test]
async fn aggregates() {
    let s = TestServer::blog().await;
    let d = data(&s, r#"{ articles_aggregate: article_aggregate(where: {status: {_eq: published}}) {
        aggregate { count sum { viewCount } avg { viewCount } max { title viewCount } min { id } distinct: count(columns: [author_id], distinct: true) }
        nodes { id } } }"#).await;
    let avg = d["articles_aggregate"]["aggregate"]["avg"]["viewCount"]
        .as_f64()
        .unwrap();
    assert!((avg - 183.333).abs() < 0.01, "{avg}");
    let mut aggregate = d["articles_aggregate"]["aggregate"].clone();
    aggregate.as_object_mut().unwrap().remove("avg");
    assert_eq!(
        aggregate,
        json!({"count": 3, "sum": {"viewCount": 550},
        "max": {"title": "Rust in practice", "viewCount": 300}, "min": {"id": 1}, "distinct": 3})
    );
    assert_eq!(ids(&d["articles_aggregate"]["nodes"]), [1, 3, 5]);
    let d = data(&s, "{ author(order_by: {id: asc}) { articles_aggregate { aggregate { count stddev { viewCount } } } } }").await;
    assert_eq!(
        d["author"][0]["articles_aggregate"]["aggregate"]["count"],
        2
    );
    assert!(
        d["author"][0]["articles_aggregate"]["aggregate"]["stddev"]["viewCount"]
            .as_f64()
            .unwrap()
            > 98.0
    );
    let d = data(
        &s,
        "{ author_aggregate { aggregate { count(columns: [bio]) __typename } } }",
    )
    .await;
    assert_eq!(
        d["author_aggregate"]["aggregate"],
        json!({"count": 2, "__typename": "author_aggregate_fields"})
    );
}

/// `__typename` at every level of every root field, alone or beside other fields, for the
/// admin and for a role with aggregations; it never needs SQL of its own.
#[tokio::test]
async fn typename_at_every_level() {
    let s = TestServer::blog().await;
    let user = |q: &'static str| {
        let s = &s;
        async move { s.gql_role(q, "user", &[("X-Svc-User-Id", "1")]).await }
    };
    let alone = "{ author_aggregate { __typename } }";
    let expected = json!({"data": {"author_aggregate": {"__typename": "author_aggregate"}}});
    assert_eq!(s.gql(alone).await, expected);
    assert_eq!(user(alone).await, expected);
    let nested = r#"{ __typename author_aggregate { __typename aggregate { __typename
        max { __typename } } } }"#;
    let expected = json!({"data": {"__typename": "query_root", "author_aggregate": {
        "__typename": "author_aggregate", "aggregate": {"__typename": "author_aggregate_fields",
        "max": {"__typename": "author_max_fields"}}}}});
    assert_eq!(s.gql(nested).await, expected);
    assert_eq!(user(nested).await, expected);
    // Beside real fields, in nodes, and under a relationship aggregate.
    let mixed = r#"{ author_aggregate(order_by: {id: asc}) { __typename
        aggregate { __typename count max { __typename id } } nodes { __typename id } } }"#;
    let expected = json!({"data": {"author_aggregate": {"__typename": "author_aggregate",
        "aggregate": {"__typename": "author_aggregate_fields", "count": 3,
            "max": {"__typename": "author_max_fields", "id": 3}},
        "nodes": [{"__typename": "author", "id": 1}, {"__typename": "author", "id": 2},
            {"__typename": "author", "id": 3}]}}});
    assert_eq!(s.gql(mixed).await, expected);
    let d = data(
        &s,
        r#"{ author(order_by: {id: asc}) { __typename articles_aggregate { __typename
            aggregate { __typename } } articles(limit: 1) { __typename author { __typename } } }
            articleById(id: 1) { __typename } }"#,
    )
    .await;
    assert_eq!(
        d["author"][0],
        json!({"__typename": "author", "articles_aggregate": {"__typename": "article_aggregate",
            "aggregate": {"__typename": "article_aggregate_fields"}},
            "articles": [{"__typename": "article", "author": {"__typename": "author"}}]})
    );
    assert_eq!(d["author"].as_array().map(Vec::len), Some(3));
    assert_eq!(d["articleById"], json!({"__typename": "article"}));
    // Mutations: the root, the response, returning and by-pk outputs.
    let r = s
        .gql(
            r#"mutation { __typename insert_comment(objects: [{id: 90, article_id: 1, author_id: 1, body: "t"}]) {
            __typename returning { __typename } }
            delete_comment_by_pk(id: 1) { __typename } }"#,
        )
        .await;
    assert_eq!(
        r,
        json!({"data": {"__typename": "mutation_root",
            "insert_comment": {"__typename": "comment_mutation_response",
                "returning": [{"__typename": "comment"}]},
            "delete_comment_by_pk": {"__typename": "comment"}}})
    );
}

#[tokio::test]
async fn variables_fragments_and_directives() {
    let s = TestServer::blog().await;
    let body = json!({
        "query": r#"query Q($id: Int!, $ids: [Int!]!, $w: article_bool_exp!, $skip: Boolean!) {
            articleById(id: $id) { ...F }
            articles(where: {_and: [{id: {_in: $ids}}, $w]}, order_by: {id: asc}) { id title @skip(if: $skip) ... on article { viewCount } }
        }
        fragment F on article { title author { ...A } }
        fragment A on author { name }"#,
        "variables": {"id": 1, "ids": [1, 2, 3], "w": {"status": {"_eq": "published"}}, "skip": true}
    });
    let r = s.graphql_as(body.clone(), &[]).await;
    assert_eq!(
        r,
        json!({"data": {"articleById": {"title": "Rust in practice", "author": {"name": "Ann"}},
        "articles": [{"id": 1, "viewCount": 150}, {"id": 3, "viewCount": 300}]}})
    );
    // The same document again with other values (plan reuse) gives their result.
    let mut other = body.clone();
    other["variables"] = json!({"id": 2, "ids": [2], "w": {}, "skip": false});
    let r = s.graphql_as(other, &[]).await;
    assert_eq!(
        r,
        json!({"data": {"articleById": {"title": "Poems", "author": {"name": "Ann"}}, "articles": [{"id": 2, "title": "Poems", "viewCount": 10}]}})
    );
    // Operation selection and defaults.
    let defaulted = json!({"query": "query A { articleById(id: 1) { id } } query B($n: Int = 2) { articles(limit: $n, order_by: {id: desc}) { id } }", "operationName": "B"});
    let r = s.graphql_as(defaulted.clone(), &[]).await;
    assert_eq!(r, json!({"data": {"articles": [{"id": 5}, {"id": 4}]}}));
    // Again, from the cached plan: the default still applies, and a given value replaces it.
    let r = s.graphql_as(defaulted.clone(), &[]).await;
    assert_eq!(r, json!({"data": {"articles": [{"id": 5}, {"id": 4}]}}));
    let mut given = defaulted;
    given["variables"] = json!({"n": 1});
    let r = s.graphql_as(given, &[]).await;
    assert_eq!(r, json!({"data": {"articles": [{"id": 5}]}}));
    let r = s
        .graphql_as(
            json!({"query": "query A { __typename } query B { __typename }"}),
            &[],
        )
        .await;
    assert_eq!(r["errors"][0]["extensions"]["code"], "validation-failed");
}

#[tokio::test]
async fn array_columns() {
    let s = TestServer::blog().await;
    let d = data(&s, r#"{ author(where: {id: {_eq: 1}}) { nicknames } }"#).await;
    assert_eq!(d["author"][0]["nicknames"], json!(["Annie", "A. N."]));
    let d = data(&s, r#"{ a: author(where: {nicknames: {_eq: ["Annie", "A. N."]}}) { id } b: author(where: {nicknames: {_eq: "{}"}}) { id } }"#).await;
    assert_eq!(ids(&d["a"]), [1]);
    assert_eq!(ids(&d["b"]), [2]);
    let r = s.graphql_as(json!({"query": "query($n: _text!) { author(where: {nicknames: {_neq: $n}}, order_by: {id: asc}) { id } }", "variables": {"n": ["Annie", "A. N."]}}), &[]).await;
    assert_eq!(ids(&r["data"]["author"]), [2]);
}

#[tokio::test]
async fn directive_variables_inside_fragments_are_not_cached_across_values() {
    let s = TestServer::blog().await;
    let query = "query($skip: Boolean!) { articleById(id: 1) { ...F ... on article @include(if: $skip) { viewCount } } } fragment F on article { id title @skip(if: $skip) }";
    let r = s
        .graphql_as(json!({"query": query, "variables": {"skip": true}}), &[])
        .await;
    assert_eq!(
        r,
        json!({"data": {"articleById": {"id": 1, "viewCount": 150}}})
    );
    let r = s
        .graphql_as(json!({"query": query, "variables": {"skip": false}}), &[])
        .await;
    assert_eq!(
        r,
        json!({"data": {"articleById": {"id": 1, "title": "Rust in practice"}}})
    );
    let d = data(
        &s,
        "{ article_aggregate { aggregate { sum { __typename viewCount } } } }",
    )
    .await;
    assert_eq!(
        d["article_aggregate"]["aggregate"]["sum"],
        json!({"__typename": "article_sum_fields", "viewCount": 560})
    );
}

#[tokio::test]
async fn computed_field_arguments_of_quoted_types() {
    let s = TestServer::blog().await;
    s.sql(r#"CREATE DOMAIN "SearchTerm" AS text;
        CREATE FUNCTION author_titles_like(a author, "Term" "SearchTerm") RETURNS SETOF article LANGUAGE sql STABLE
        AS $$ SELECT * FROM article WHERE author_id = a.id AND title ILIKE '%' || "Term" || '%' $$"#).await;
    s.ok(json!({"type": "add_computed_field", "args": {"table": "author", "name": "titles_like", "definition": {"function": "author_titles_like"}}})).await;
    let d = data(
        &s,
        r#"{ author(where: {id: {_eq: 2}}) { titles_like(args: {Term: "GUIDE"}) { id } } }"#,
    )
    .await;
    assert_eq!(d["author"][0]["titles_like"], json!([{"id": 3}]));
}

/// Paged selections (OFFSET) are paged before their fields are built: the answers must be
/// exactly the slice of the unpaged answer, with computed fields, nested relationships,
/// ordering by a relationship, DISTINCT ON and a role's row filter and limit all applied.
#[tokio::test]
async fn offset_pages_give_the_slice_of_the_full_answer() {
    let s = TestServer::blog().await;
    let fields = "id name full_name search_articles(args: {term: \"a\"}) { id } articles(order_by: {id: desc}) { id author { name } }";
    let all = data(
        &s,
        &format!("{{ author(order_by: {{id: asc}}) {{ {fields} }} }}"),
    )
    .await;
    let page = data(
        &s,
        &format!("{{ author(order_by: {{id: asc}}, limit: 2, offset: 1) {{ {fields} }} }}"),
    )
    .await;
    assert_eq!(
        page["author"],
        json!(all["author"].as_array().unwrap()[1..3])
    );
    assert!(page["author"][0]["full_name"].is_string(), "{page}");

    let by_author = "articles(order_by: [{author: {name: desc}}, {id: asc}]) { id title }";
    let all = data(&s, &format!("{{ {by_author} }}")).await;
    let paged = by_author.replace("{id: asc}]", "{id: asc}], offset: 2, limit: 2");
    let paged = data(&s, &format!("{{ {paged} }}")).await;
    assert_eq!(
        paged["articles"],
        json!(all["articles"].as_array().unwrap()[2..4])
    );

    let distinct =
        "articles(distinct_on: author_id, order_by: [{author_id: asc}, {viewCount: desc}]";
    let all = data(&s, &format!("{{ {distinct}) {{ id }} }}")).await;
    let paged = data(&s, &format!("{{ {distinct}, offset: 1) {{ id }} }}")).await;
    assert_eq!(
        paged["articles"],
        json!(all["articles"].as_array().unwrap()[1..])
    );

    // As `user`: the permission's row filter applies before the page.
    let all = s
        .gql_role(
            "{ articles(order_by: {id: asc}) { id } }",
            "user",
            &[("X-Svc-User-Id", "1")],
        )
        .await;
    let paged = s
        .gql_role(
            "{ articles(order_by: {id: asc}, offset: 1) { id } }",
            "user",
            &[("X-Svc-User-Id", "1")],
        )
        .await;
    let all = all["data"]["articles"].as_array().unwrap().clone();
    assert!(all.len() > 1, "{all:?}");
    assert_eq!(paged["data"]["articles"], json!(all[1..]));
}
