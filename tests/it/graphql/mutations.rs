//! GraphQL mutations through HTTP on the blog fixture.

use crate::harness::TestServer;
use serde_json::{json, Value};

async fn ok(s: &TestServer, q: &str) -> Value {
    let r = s.gql(q).await;
    assert!(r.get("errors").is_none(), "{q}: {r}");
    r["data"].clone()
}

async fn count(s: &TestServer, table: &str) -> i64 {
    let r = s
        .gql(&format!(
            "{{ {table}_aggregate {{ aggregate {{ count }} }} }}"
        ))
        .await;
    r["data"][format!("{table}_aggregate")]["aggregate"]["count"]
        .as_i64()
        .unwrap()
}

fn user(id: &str) -> Vec<(&'static str, String)> {
    vec![
        ("X-Svc-Role", "user".to_owned()),
        ("X-Svc-User-Id", id.to_owned()),
    ]
}

async fn as_user(s: &TestServer, q: &str, id: &str) -> Value {
    let headers = user(id);
    let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    s.graphql_as(json!({"query": q}), &h).await
}

#[tokio::test]
async fn insert_many_one_and_returning() {
    let s = TestServer::blog().await;
    let d = ok(&s, r#"mutation { insert_article(objects: [{id: 10, title: "A", author_id: 1, status: draft}, {id: 11, title: "B", author_id: 2, status: published, tags: ["x"]}]) {
        affected_rows returning { id title viewCount author { name } } __typename } }"#).await;
    assert_eq!(
        d,
        json!({"insert_article": {"affected_rows": 2, "returning": [
        {"id": 10, "title": "A", "viewCount": 0, "author": {"name": "Ann"}},
        {"id": 11, "title": "B", "viewCount": 0, "author": {"name": "Bo"}}], "__typename": "article_mutation_response"}})
    );
    let d = ok(&s, r#"mutation { insert_article_one(object: {id: 12, title: "C", author_id: 3, status: draft}) { id status } }"#).await;
    assert_eq!(
        d,
        json!({"insert_article_one": {"id": 12, "status": "draft"}})
    );
    let d = ok(
        &s,
        r#"mutation { insert_article(objects: []) { affected_rows returning { id } } }"#,
    )
    .await;
    assert_eq!(
        d,
        json!({"insert_article": {"affected_rows": 0, "returning": []}})
    );
    assert_eq!(count(&s, "article").await, 8);
}

#[tokio::test]
async fn upserts_both_ways() {
    let s = TestServer::blog().await;
    let d = ok(&s, r#"mutation { insert_author(objects: [{id: 1, name: "Ann"}], on_conflict: {constraint: author_pkey, update_columns: []}) { affected_rows returning { id } } }"#).await;
    assert_eq!(
        d,
        json!({"insert_author": {"affected_rows": 0, "returning": []}}),
        "do nothing"
    );
    let d = ok(&s, r#"mutation { insert_author(objects: [{id: 9, name: "Ann", bio: "renamed"}, {id: 8, name: "Dee"}], on_conflict: {constraint: author_name_key, update_columns: [bio]}) { affected_rows returning { id name bio } } }"#).await;
    assert_eq!(d["insert_author"]["affected_rows"], 2);
    assert_eq!(
        d["insert_author"]["returning"],
        json!([{"id": 1, "name": "Ann", "bio": "renamed"}, {"id": 8, "name": "Dee", "bio": null}])
    );
    let d = ok(&s, r#"mutation { insert_author_one(object: {id: 2, name: "Bo", bio: "x"}, on_conflict: {constraint: author_pkey, update_columns: [bio], where: {rating: {_gt: 10}}}) { id } }"#).await;
    assert_eq!(
        d,
        json!({"insert_author_one": null}),
        "the where excludes the existing row"
    );
}

#[tokio::test]
async fn nested_inserts_both_directions_depth_three() {
    let s = TestServer::blog().await;
    // Object relationship: the author is inserted first and its key used.
    let d = ok(&s, r#"mutation { insert_article_one(object: {id: 20, title: "New", status: draft, author: {data: {id: 20, name: "Neo"}}}) { id author { id name } } }"#).await;
    assert_eq!(
        d,
        json!({"insert_article_one": {"id": 20, "author": {"id": 20, "name": "Neo"}}})
    );
    // Array relationships, three levels: author → articles → comments (→ comment author object).
    let d = ok(&s, r#"mutation { insert_author(objects: [{id: 21, name: "Deep", articles: {data: [
            {id: 21, title: "One", status: published, comments: {data: [{id: 21, body: "c1", author_id: 1}, {id: 22, body: "c2", author: {data: {id: 22, name: "Commenter"}}}]}},
            {id: 22, title: "Two", status: draft}]}}]) {
        affected_rows returning { name articles(order_by: {id: asc}) { title comments(order_by: {id: asc}) { body author { name } } } } } }"#).await;
    assert_eq!(
        d["insert_author"]["affected_rows"], 6,
        "1 author + 2 articles + 2 comments + 1 comment author"
    );
    assert_eq!(
        d["insert_author"]["returning"],
        json!([{"name": "Deep", "articles": [
        {"title": "One", "comments": [{"body": "c1", "author": {"name": "Ann"}}, {"body": "c2", "author": {"name": "Commenter"}}]},
        {"title": "Two", "comments": []}]}])
    );
    // The relationship's column may not be given in a nested row.
    let r = s.gql(r#"mutation { insert_author_one(object: {id: 30, name: "X", articles: {data: [{id: 30, title: "t", status: draft, author_id: 1}]}}) { id } }"#).await;
    assert_eq!(
        r["errors"][0]["extensions"]["code"], "validation-failed",
        "{r}"
    );
}

/// A column that a nested object insert fills is never taken from the client or a preset too:
/// the request is refused whatever the field order, and nothing is written.
#[tokio::test]
async fn nested_object_insert_never_overwrites_a_given_column() {
    let s = TestServer::blog().await;
    let (articles, authors) = (count(&s, "article").await, count(&s, "author").await);
    for (q, path) in [
        (
            r#"mutation { insert_article(objects: [{id: 40, title: "x", status: draft, author_id: 1, author: {data: {id: 40, name: "A"}}}]) { affected_rows } }"#,
            "$.selectionSet.insert_article.args.objects[0].author_id",
        ),
        (
            r#"mutation { insert_article_one(object: {author: {data: {id: 40, name: "A"}}, id: 40, title: "x", status: draft, author_id: 1}) { id } }"#,
            "$.selectionSet.insert_article_one.args.object.author_id",
        ),
    ] {
        let r = s.gql(q).await;
        assert_eq!(
            r,
            json!({"errors": [{"message": "cannot insert into column \"author_id\": its value comes from the nested insert's relationship",
                "extensions": {"path": path, "code": "validation-failed"}}]}),
            "{q}"
        );
    }
    assert_eq!(count(&s, "article").await, articles);
    assert_eq!(count(&s, "author").await, authors);
    // A preset on the filled column is refused as well: it would be silently replaced.
    s.ok(
        json!({"type": "create_insert_permission", "args": {"table": "author", "role": "user",
        "permission": {"check": {}, "columns": ["id", "name"]}}}),
    )
    .await;
    let r = as_user(
        &s,
        r#"mutation { insert_comment_one(object: {id: 40, article_id: 1, body: "b", author: {data: {id: 41, name: "Me"}}}) { id } }"#,
        "1",
    )
    .await;
    assert_eq!(
        r,
        json!({"errors": [{"message": "cannot insert through a relationship into column \"author_id\": the insert permission presets it",
            "extensions": {"path": "$.selectionSet.insert_comment_one.args.object", "code": "validation-failed"}}]})
    );
    // The array direction: the comment's preset author_id against the new author's key.
    let r = as_user(
        &s,
        r#"mutation { insert_author_one(object: {id: 41, name: "Me", comments: {data: [{id: 41, article_id: 1, body: "b"}]}}) { id } }"#,
        "1",
    )
    .await;
    assert_eq!(
        r,
        json!({"errors": [{"message": "cannot insert through a relationship into column \"author_id\": the insert permission presets it",
            "extensions": {"path": "$.selectionSet.insert_author_one.args.object.comments.data[0]", "code": "validation-failed"}}]})
    );
    assert_eq!(count(&s, "author").await, authors);
    // Without the column, the nested row's key is used.
    let d = ok(&s, r#"mutation { insert_article_one(object: {id: 40, title: "x", status: draft, author: {data: {id: 40, name: "A"}}}) { author_id author { name } } }"#).await;
    assert_eq!(
        d,
        json!({"insert_article_one": {"author_id": 40, "author": {"name": "A"}}})
    );
}

/// The row version (`xmin`) of row 1 of `table`: it changes whenever the row is written.
async fn row_version(s: &TestServer, table: &str) -> String {
    let r = s
        .ok(json!({"type": "run_sql", "args": {"sql": format!("SELECT xmin::text FROM {table} WHERE id = 1")}}))
        .await;
    r["result"][1][0].as_str().unwrap().to_owned()
}

/// Empty update operators (a form with no changed field) write nothing and touch no row; no
/// operator at all is still an error.
#[tokio::test]
async fn updates_with_nothing_to_write() {
    let s = TestServer::blog().await;
    let (article, author) = (
        row_version(&s, "article").await,
        row_version(&s, "author").await,
    );
    let d = ok(
        &s,
        r#"mutation { update_article(where: {id: {_eq: 1}}, _set: {}) { affected_rows returning { id } }
            empty_inc: update_article(where: {id: {_eq: 1}}, _inc: {}, _append: {}) { __typename affected_rows }
            update_article_by_pk(pk_columns: {id: 1}, _set: {}) { id }
            update_popular_article(where: {id: {_eq: 3}}, _set: {}) { affected_rows returning { id } } }"#,
    )
    .await;
    assert_eq!(
        d,
        json!({"update_article": {"affected_rows": 0, "returning": []},
            "empty_inc": {"__typename": "article_mutation_response", "affected_rows": 0},
            "update_article_by_pk": null,
            "update_popular_article": {"affected_rows": 0, "returning": []}})
    );
    assert_eq!(row_version(&s, "article").await, article, "no row touched");
    // An update whose operators are empty still writes the role's presets.
    s.ok(
        json!({"type": "create_update_permission", "args": {"table": "author", "role": "editor",
        "permission": {"columns": ["bio"], "filter": {}, "set": {"name": "x-svc-user-id"}}}}),
    )
    .await;
    s.ok(
        json!({"type": "create_select_permission", "args": {"table": "author", "role": "editor",
        "permission": {"columns": ["id"], "filter": {}}}}),
    )
    .await;
    let r = s
        .gql_role(
            r#"mutation { update_author(where: {id: {_eq: 1}}, _set: {}) { affected_rows returning { id } } }"#,
            "editor",
            &[("X-Svc-User-Id", "7")],
        )
        .await;
    assert_eq!(
        r,
        json!({"data": {"update_author": {"affected_rows": 1, "returning": [{"id": 1}]}}})
    );
    assert_ne!(
        row_version(&s, "author").await,
        author,
        "the preset was written"
    );
    assert_eq!(
        ok(&s, "{ author(where: {id: {_eq: 1}}) { name } }").await,
        json!({"author": [{"name": "7"}]})
    );
    // With something to set, the preset applies as usual.
    let r = s
        .gql_role(
            r#"mutation { update_author(where: {id: {_eq: 1}}, _set: {bio: "b"}) { affected_rows } }"#,
            "editor",
            &[("X-Svc-User-Id", "8")],
        )
        .await;
    assert_eq!(r, json!({"data": {"update_author": {"affected_rows": 1}}}));
    assert_eq!(
        ok(&s, "{ author(where: {id: {_eq: 1}}) { name bio } }").await,
        json!({"author": [{"name": "8", "bio": "b"}]})
    );
    // No operator argument at all (or only nulls) is still refused.
    for q in [
        r#"mutation { update_article(where: {id: {_eq: 1}}) { affected_rows } }"#,
        r#"mutation { update_article(where: {id: {_eq: 1}}, _set: null) { affected_rows } }"#,
    ] {
        let r = s.gql(q).await;
        assert_eq!(
            r,
            json!({"errors": [{"message": "at least one of _set, _inc, _append, _prepend, _delete_key, _delete_elem, _delete_at_path, _nested is expected",
                "extensions": {"path": "$.selectionSet.update_article.args", "code": "validation-failed"}}]}),
            "{q}"
        );
    }
}

#[tokio::test]
async fn nested_inserts_under_upserts_that_write_nothing() {
    let s = TestServer::blog().await;
    // A parent (object relationship) whose upsert does nothing: no key for the row, an error
    // at the field, and nothing of the request is kept.
    let articles = count(&s, "article").await;
    let r = s.gql(r#"mutation { insert_article_one(object: {id: 40, title: "Orphan", status: draft, author: {data: {id: 1, name: "Ann"}, on_conflict: {constraint: author_pkey, update_columns: []}}}) { id } }"#).await;
    assert_eq!(
        r["errors"][0],
        json!({"message": "the related row in \"author\" was not inserted (on_conflict do nothing)",
               "extensions": {"path": "$.selectionSet.insert_article_one", "code": "constraint-violation"}}),
        "{r}"
    );
    assert_eq!(count(&s, "article").await, articles);
    // A row whose upsert does nothing takes its array-relationship rows with it; the other
    // rows of the same insert keep theirs.
    let d = ok(&s, r#"mutation { insert_author(objects: [
            {id: 1, name: "Ann", articles: {data: [{id: 41, title: "Skipped", status: draft}]}},
            {id: 42, name: "New", articles: {data: [{id: 42, title: "Kept", status: draft, comments: {data: [{id: 42, body: "c", author_id: 1}]}}]}}],
            on_conflict: {constraint: author_pkey, update_columns: []}) { affected_rows returning { id } } }"#).await;
    assert_eq!(
        d,
        json!({"insert_author": {"affected_rows": 3, "returning": [{"id": 42}]}})
    );
    let d = ok(
        &s,
        "{ articles(where: {id: {_in: [41, 42]}}) { id comments { id } } }",
    )
    .await;
    assert_eq!(
        d,
        json!({"articles": [{"id": 42, "comments": [{"id": 42}]}]})
    );
}

#[tokio::test]
async fn every_update_operator_and_by_pk() {
    let s = TestServer::blog().await;
    let d = ok(&s, r#"mutation { update_article(where: {author_id: {_eq: 1}}, _inc: {viewCount: 5}, _set: {title: "Renamed"}) { affected_rows returning { id title viewCount } } }"#).await;
    assert_eq!(d["update_article"]["affected_rows"], 2);
    let mut returned = d["update_article"]["returning"].as_array().unwrap().clone();
    returned.sort_by_key(|r| r["id"].as_i64());
    assert_eq!(
        returned,
        vec![
            json!({"id": 1, "title": "Renamed", "viewCount": 155}),
            json!({"id": 2, "title": "Renamed", "viewCount": 15})
        ]
    );
    let d = ok(&s, r#"mutation { a: update_author_by_pk(pk_columns: {id: 1}, _append: {profile: {pets: 2}}) { profile }
        b: update_author_by_pk(pk_columns: {id: 1}, _prepend: {profile: {city: "Bergen"}}) { profile }
        c: update_author_by_pk(pk_columns: {id: 1}, _delete_key: {profile: "pets"}) { profile }
        d: update_author_by_pk(pk_columns: {id: 1}, _delete_at_path: {profile: ["langs", "0"]}) { profile }
        e: update_article_by_pk(pk_columns: {id: 1}, _delete_elem: {tags: 0}) { tags }
        f: update_article_by_pk(pk_columns: {id: 99}, _set: {title: "x"}) { id } }"#).await;
    assert_eq!(
        d["a"]["profile"],
        json!({"city": "Oslo", "langs": ["no", "en"], "pets": 2})
    );
    assert_eq!(
        d["b"]["profile"],
        json!({"city": "Oslo", "langs": ["no", "en"], "pets": 2}),
        "the existing value wins on prepend"
    );
    assert_eq!(
        d["c"]["profile"],
        json!({"city": "Oslo", "langs": ["no", "en"]})
    );
    assert_eq!(d["d"]["profile"], json!({"city": "Oslo", "langs": ["en"]}));
    assert_eq!(d["e"]["tags"], json!(["systems"]));
    assert_eq!(d["f"], Value::Null);
    let r = s.gql(r#"mutation { update_article(where: {}, _set: {title: "x"}, _inc: {viewCount: 1}) { affected_rows } }"#).await;
    assert!(
        r.get("data").is_some(),
        "different columns in two operators are fine: {r}"
    );
    let r = s.gql(r#"mutation { update_article(where: {}, _set: {viewCount: 1}, _inc: {viewCount: 1}) { affected_rows } }"#).await;
    assert_eq!(r["errors"][0]["extensions"]["code"], "validation-failed");
}

#[tokio::test]
async fn deletes() {
    let s = TestServer::blog().await;
    let d = ok(&s, r#"mutation { delete_comment(where: {article_id: {_eq: 1}}) { affected_rows returning { id article { title } } } }"#).await;
    assert_eq!(d["delete_comment"]["affected_rows"], 2);
    assert_eq!(
        d["delete_comment"]["returning"].as_array().unwrap().len(),
        2
    );
    assert_eq!(
        d["delete_comment"]["returning"][0]["article"]["title"],
        "Rust in practice"
    );
    let d = ok(&s, r#"mutation { delete_comment_by_pk(id: 3) { id body } missing: delete_comment_by_pk(id: 3) { id } }"#).await;
    assert_eq!(
        d,
        json!({"delete_comment_by_pk": {"id": 3, "body": "Nice city"}, "missing": null})
    );
    assert_eq!(count(&s, "comment").await, 1);
}

#[tokio::test]
async fn several_fields_are_one_transaction() {
    let s = TestServer::blog().await;
    let r = s.gql(r#"mutation { a: insert_article_one(object: {id: 40, title: "kept?", author_id: 1, status: draft}) { id }
        b: update_author(where: {id: {_eq: 1}}, _set: {bio: "changed"}) { affected_rows }
        c: insert_article_one(object: {id: 1, title: "dup", author_id: 1, status: draft}) { id } }"#).await;
    assert_eq!(
        r["errors"][0]["extensions"]["path"], "$.selectionSet.c",
        "{r}"
    );
    assert_eq!(r["errors"][0]["extensions"]["code"], "constraint-violation");
    assert_eq!(
        r["errors"][0]["extensions"]["internal"]["error"]["status_code"], "23505",
        "admins see the Postgres detail"
    );
    assert!(r["errors"][0]["message"].as_str().unwrap().starts_with(
        "Uniqueness violation. duplicate key value violates unique constraint \"article_pkey\""
    ));
    assert!(r.get("data").is_none());
    assert_eq!(count(&s, "article").await, 5, "nothing written");
    let d = ok(&s, "{ author_by_pk(id: 1) { bio } }").await;
    assert_eq!(d["author_by_pk"]["bio"], "poet");
    // Mutation fields see what earlier fields wrote.
    let d = ok(&s, r#"mutation { a: insert_article_one(object: {id: 41, title: "t", author_id: 1, status: draft}) { id } b: delete_article(where: {id: {_eq: 41}}) { affected_rows } }"#).await;
    assert_eq!(d["b"]["affected_rows"], 1);
}

#[tokio::test]
async fn error_codes() {
    let s = TestServer::blog().await;
    let cases = [
        (
            r#"mutation { insert_article_one(object: {id: 50, title: "t", author_id: 999, status: draft}) { id } }"#,
            "constraint-violation",
            "Foreign key violation. ",
        ),
        (
            r#"mutation { insert_article_one(object: {id: 50, author_id: 1, status: draft}) { id } }"#,
            "constraint-violation",
            "Not-NULL violation. ",
        ),
        (
            r#"mutation { update_article(where: {id: {_eq: 1}}, _inc: {viewCount: -1000}) { affected_rows } }"#,
            "permission-error",
            "Check constraint violation. ",
        ),
        (
            r#"mutation { insert_author_one(object: {id: 50, name: "Ann"}) { id } }"#,
            "constraint-violation",
            "Uniqueness violation. ",
        ),
        (
            r#"mutation { update_article(where: {id: {_eq: 1}}, _set: {viewCount: "lots"}) { affected_rows } }"#,
            "data-exception",
            "invalid input syntax for type bigint",
        ),
        (
            r#"mutation { delete_author(where: {id: {_eq: 1}}) { affected_rows } }"#,
            "constraint-violation",
            "Foreign key violation. ",
        ),
    ];
    for (q, code, prefix) in cases {
        let r = s.gql(q).await;
        assert_eq!(r["errors"][0]["extensions"]["code"], code, "{q}: {r}");
        assert!(
            r["errors"][0]["message"]
                .as_str()
                .unwrap()
                .starts_with(prefix),
            "{q}: {r}"
        );
        assert!(
            r["errors"][0]["extensions"]["path"]
                .as_str()
                .unwrap()
                .starts_with("$.selectionSet."),
            "{r}"
        );
    }
}

#[tokio::test]
async fn user_permissions_on_writes() {
    let s = TestServer::blog().await;
    // Insert: check holds, the preset overrides, columns are limited.
    let r = as_user(&s, r#"mutation { insert_article_one(object: {id: 60, title: "mine", author_id: 2}) { id status } }"#, "2").await;
    assert_eq!(
        r,
        json!({"data": {"insert_article_one": {"id": 60, "status": "draft"}}})
    );
    let r = as_user(&s, r#"mutation { insert_article(objects: [{id: 61, title: "ok", author_id: 2}, {id: 62, title: "not mine", author_id: 1}]) { affected_rows } }"#, "2").await;
    assert_eq!(
        r["errors"][0],
        json!({"message": "check constraint of an insert permission has failed", "extensions": {"path": "$", "code": "permission-error"}})
    );
    assert_eq!(
        count(&s, "article").await,
        6,
        "neither row of the failed insert was kept"
    );
    for forbidden in ["status: published", "viewCount: 3"] {
        let r = as_user(&s, &format!(r#"mutation {{ insert_article_one(object: {{id: 63, title: "x", author_id: 2, {forbidden}}}) {{ id }} }}"#), "2").await;
        assert_eq!(
            r["errors"][0]["extensions"]["code"], "validation-failed",
            "{forbidden}: {r}"
        );
    }
    // Comments: author_id comes from the session; the check walks a relationship.
    let r = as_user(&s, r#"mutation { insert_comment_one(object: {id: 60, article_id: 3, body: "hi"}) { id author_id } }"#, "2").await;
    assert_eq!(
        r,
        json!({"data": {"insert_comment_one": {"id": 60, "author_id": 2}}})
    );
    let r = as_user(&s, r#"mutation { insert_comment_one(object: {id: 61, article_id: 2, body: "on a draft"}) { id } }"#, "2").await;
    assert_eq!(r["errors"][0]["extensions"]["code"], "permission-error");
    // on_conflict is offered only with an update permission (article yes, comment no).
    let r = as_user(&s, r#"mutation { insert_comment_one(object: {id: 62, article_id: 3, body: "x"}, on_conflict: {constraint: comment_pkey, update_columns: []}) { id } }"#, "2").await;
    assert_eq!(
        r["errors"][0]["message"],
        "'insert_comment_one' has no argument named 'on_conflict'"
    );
    let r = as_user(&s, r#"mutation { insert_article_one(object: {id: 99, title: "for someone else", author_id: 2}) { id } }"#, "1").await;
    assert_eq!(
        r["errors"][0]["extensions"]["code"], "permission-error",
        "the insert check: author 2 is not user 1"
    );
    assert!(
        r["errors"][0]["extensions"].get("internal").is_none(),
        "no internal detail for a non-admin role"
    );
    let r = as_user(&s, r#"mutation { insert_article_one(object: {id: 1, title: "Mine again", author_id: 1}, on_conflict: {constraint: article_pkey, update_columns: [title]}) { id title } }"#, "1").await;
    assert_eq!(
        r,
        json!({"data": {"insert_article_one": {"id": 1, "title": "Mine again"}}})
    );
    let r = as_user(&s, r#"mutation { insert_article_one(object: {id: 3, title: "Not yours", author_id: 1}, on_conflict: {constraint: article_pkey, update_columns: [title]}) { id } }"#, "1").await;
    assert_eq!(
        r,
        json!({"data": {"insert_article_one": null}}),
        "the update filter protects article 3 of author 2"
    );
    // Update: the filter selects rows silently; the check is a post-condition.
    let r = as_user(
        &s,
        r#"mutation { update_article(where: {}, _inc: {viewCount: 1}) { affected_rows } }"#,
        "1",
    )
    .await;
    assert_eq!(
        r["data"]["update_article"]["affected_rows"], 2,
        "only user 1's two articles"
    );
    let r = as_user(&s, r#"mutation { update_article_by_pk(pk_columns: {id: 2}, _set: {title: "forbidden words"}) { id } }"#, "1").await;
    assert_eq!(
        r["errors"][0],
        json!({"message": "check constraint of an update permission has failed", "extensions": {"path": "$", "code": "permission-error"}})
    );
    let r = as_user(
        &s,
        r#"mutation { update_article(where: {}, _set: {status: published}) { affected_rows } }"#,
        "1",
    )
    .await;
    assert_eq!(
        r["errors"][0]["extensions"]["code"], "validation-failed",
        "status is not updatable"
    );
    // Delete: only own drafts.
    let r = as_user(
        &s,
        r#"mutation { delete_article(where: {}) { affected_rows returning { id } } }"#,
        "2",
    )
    .await;
    assert_eq!(
        r["data"]["delete_article"],
        json!({"affected_rows": 2, "returning": [{"id": 4}, {"id": 60}]})
    );
    // Guest and roles without write permissions have no mutations.
    let r = s
        .gql_role(
            r#"mutation { delete_article(where: {}) { affected_rows } }"#,
            "guest",
            &[],
        )
        .await;
    assert_eq!(r["errors"][0]["message"], "no mutations exist");
}

#[tokio::test]
async fn backend_only_inserts() {
    let db = crate::harness::fresh_database().await;
    crate::harness::run_sql(&db, crate::harness::BLOG).await;
    let s = TestServer::on(&db, |c| c.admin_secret = Some("pw".to_owned())).await;
    let metadata: Value = serde_json::from_str(crate::harness::BLOG_METADATA).unwrap();
    s.ok(json!({"type": "replace_metadata", "args": metadata}))
        .await;
    let q = r#"mutation { insert_author_one(object: {id: 70, name: "Svc"}) { id } }"#;
    let r = s
        .graphql_as(json!({"query": q}), &[("X-Svc-Role", "backend")])
        .await;
    assert_eq!(
        r["errors"][0]["message"], "no mutations exist",
        "not flagged: backend-only permission inactive"
    );
    let r = s
        .graphql_as(
            json!({"query": q}),
            &[
                ("X-Svc-Role", "backend"),
                ("X-Svc-Use-Backend-Only-Permissions", "true"),
            ],
        )
        .await;
    assert_eq!(r, json!({"data": {"insert_author_one": {"id": 70}}}));
    let q2 =
        r#"mutation { insert_article_one(object: {id: 71, title: "t", author_id: 1}) { id } }"#;
    let r = s
        .graphql_as(
            json!({"query": q2}),
            &[
                ("X-Svc-Role", "user"),
                ("X-Svc-User-Id", "1"),
                ("X-Svc-Use-Backend-Only-Permissions", "true"),
            ],
        )
        .await;
    assert_eq!(
        r["errors"][0]["message"],
        "field \"insert_article_one\" not found in type: 'mutation_root'",
        "flagged: ordinary inserts inactive: {r}"
    );
    let r = s
        .graphql_as(
            json!({"query": q2}),
            &[("X-Svc-Role", "user"), ("X-Svc-User-Id", "1")],
        )
        .await;
    assert_eq!(r, json!({"data": {"insert_article_one": {"id": 71}}}));
    let r = s
        .graphql_as(
            json!({"query": q2}),
            &[("X-Svc-Use-Backend-Only-Permissions", "maybe")],
        )
        .await;
    assert_eq!(r["errors"][0]["extensions"]["code"], "invalid-headers");
}

#[tokio::test]
async fn injection_attempts_in_mutation_values() {
    let s = TestServer::blog().await;
    let nasty = [
        "x'); DELETE FROM article; --",
        "it's \"quoted\" \\ back",
        "$1",
        "{\"a\": 1}",
    ];
    for (i, value) in nasty.iter().enumerate() {
        let id = 80 + i as i64;
        let r = s
            .graphql_as(
                json!({"query": "mutation($id: Int!, $t: String!, $tags: jsonb!) { insert_article_one(object: {id: $id, title: $t, author_id: 1, status: draft, tags: $tags}) { title tags } update_author(where: {name: {_eq: $t}}, _set: {bio: $t}) { affected_rows } }",
                    "variables": {"id": id, "t": value, "tags": [value]}}),
                &[],
            )
            .await;
        assert_eq!(
            r,
            json!({"data": {"insert_article_one": {"title": value, "tags": [value]}, "update_author": {"affected_rows": 0}}}),
            "{value}"
        );
        let literal = serde_json::to_string(value).unwrap();
        let r = s.gql(&format!("mutation {{ update_article_by_pk(pk_columns: {{id: {id}}}, _set: {{title: {literal}}}, _append: {{tags: {literal}}}) {{ title }} }}")).await;
        assert_eq!(r["data"]["update_article_by_pk"]["title"], *value, "{r}");
    }
    assert_eq!(count(&s, "article").await, 9);
}

#[tokio::test]
async fn writes_through_views() {
    let s = TestServer::blog().await;
    let d = ok(&s, r#"mutation { insert_author_name_one(object: {id: 90, name: "Via view"}) { id name }
        insert_author_name(objects: [{id: 91, name: "Two"}, {id: 92, name: "Three"}]) { affected_rows returning { name } } }"#).await;
    assert_eq!(
        d["insert_author_name_one"],
        json!({"id": 90, "name": "Via view"})
    );
    assert_eq!(d["insert_author_name"]["affected_rows"], 2);
    let d = ok(&s, r#"mutation { update_popular_article(where: {id: {_eq: 3}}, _set: {title: "Lund, again"}, _inc: {views: 1}) { affected_rows returning { title views } } }"#).await;
    assert_eq!(
        d["update_popular_article"],
        json!({"affected_rows": 1, "returning": [{"title": "Lund, again", "views": 301}]})
    );
    let d = ok(
        &s,
        r#"mutation { delete_author_name(where: {id: {_gte: 91}}) { affected_rows } }"#,
    )
    .await;
    assert_eq!(d["delete_author_name"]["affected_rows"], 2);
    let d = ok(&s, "{ author_by_pk(id: 90) { name } }").await;
    assert_eq!(d["author_by_pk"]["name"], "Via view");
}

/// A one-statement mutation's answer row comes before its commit; a deferred constraint that
/// fails at the commit must still fail the request, and nothing is written.
#[tokio::test]
async fn a_deferred_constraint_failing_at_commit_fails_a_one_statement_mutation() {
    let s = TestServer::with_fixture(
        "CREATE TABLE parent (id int PRIMARY KEY);
         CREATE TABLE child (id int PRIMARY KEY,
             parent_id int REFERENCES parent DEFERRABLE INITIALLY DEFERRED);
         INSERT INTO parent VALUES (1);",
    )
    .await;
    for table in ["parent", "child"] {
        s.ok(json!({"type": "track_table", "args": {"table": table}}))
            .await;
    }
    let before = s.running.state.counters.snapshot();
    let r = s
        .gql("mutation { insert_child_one(object: {id: 1, parent_id: 99}) { id } }")
        .await;
    let after = s.running.state.counters.snapshot();
    assert_eq!(
        after.mutation_transactions, before.mutation_transactions,
        "one statement, no transaction around it"
    );
    assert!(r.get("data").is_none(), "{r}");
    assert_eq!(
        r["errors"][0]["extensions"]["code"], "constraint-violation",
        "{r}"
    );
    assert_eq!(
        r["errors"][0]["extensions"]["internal"]["error"]["status_code"], "23503",
        "{r}"
    );
    assert_eq!(count(&s, "child").await, 0);
    // The same write with a parent that exists goes through.
    let d = ok(
        &s,
        "mutation { insert_child_one(object: {id: 1, parent_id: 1}) { id } }",
    )
    .await;
    assert_eq!(d, json!({"insert_child_one": {"id": 1}}));
}
