//! Updates through HTTP on a fixture of authors, articles and comments: `update_<t>_many`,
//! updates that write only the permission's presets, and nested updates (`_nested`), with role
//! `user`'s permissions applied at every level. Each test asserts the exact response and the
//! rows the database holds afterwards.

use crate::harness::{fresh_database, query_json, run_sql, TestServer};
use serde_json::{json, Value};

/// Two authors; articles 1 and 2 by author 1, article 3 by author 2; comments 10 and 11 on
/// article 1 and comment 12 on article 2.
const FIXTURE: &str = "
create table author  (id int primary key, name text not null);
create table article (id int primary key, author_id int not null references author(id), title text not null,
                      rating int not null default 0, is_published boolean not null default false, edited_by text);
create table comment (id int primary key, article_id int not null references article(id), body text not null,
                      hidden boolean not null default false);
insert into author  values (1,'Ann'), (2,'Bo');
insert into article values (1,1,'a1',1,false,null), (2,1,'a2',5,false,null), (3,2,'b1',3,true,null);
insert into comment values (10,1,'x',false), (11,1,'y',false), (12,2,'z',false);
";

/// The fixture server's admin secret: "admin" requests carry it and no role.
const ADMIN_SECRET: &str = "nested-updates-secret";

/// Role `user`'s update permission on `article`: the rows of its author, a rating of at most 5
/// afterwards, and `edited_by` preset to the user.
fn article_update(filter: Value) -> Value {
    json!({"type": "create_update_permission", "args": {"table": "article", "role": "user",
        "permission": {"columns": ["title", "rating", "is_published"], "filter": filter,
            "check": {"rating": {"_lte": 5}}, "set": {"edited_by": "X-Svc-User-Id"}}}})
}

/// Role `user`'s update permission on `author`: the name only.
fn author_update(filter: Value) -> Value {
    json!({"type": "create_update_permission", "args": {"table": "author", "role": "user",
        "permission": {"columns": ["name"], "filter": filter}}})
}

/// A server (with an admin secret) on a fresh database holding the fixture: the three tables
/// tracked, the relationships `article.author`, `article.comments`, `author.articles` and
/// `comment.article`, and role `user`, who reads everything, updates its own author row, its
/// own articles (checked and preset) and the comments on them, and deletes and inserts those
/// comments.
pub(crate) async fn fixture() -> TestServer {
    let db = fresh_database().await;
    run_sql(&db, FIXTURE).await;
    let s = TestServer::on(&db, |c| c.admin_secret = Some(ADMIN_SECRET.to_owned())).await;
    let on_own_article = json!({"article": {"author_id": "X-Svc-User-Id"}});
    let mut requests = vec![];
    for table in ["author", "article", "comment"] {
        requests.push(json!({"type": "track_table", "args": {"table": table}}));
        requests.push(
            json!({"type": "create_select_permission", "args": {"table": table,
            "role": "user", "permission": {"columns": "*", "filter": {}}}}),
        );
    }
    requests.extend([
        json!({"type": "create_object_relationship", "args": {"table": "article", "name": "author",
            "using": {"foreign_key_constraint_on": "author_id"}}}),
        json!({"type": "create_array_relationship", "args": {"table": "article", "name": "comments",
            "using": {"foreign_key_constraint_on": {"table": "comment", "column": "article_id"}}}}),
        json!({"type": "create_array_relationship", "args": {"table": "author", "name": "articles",
            "using": {"foreign_key_constraint_on": {"table": "article", "column": "author_id"}}}}),
        json!({"type": "create_object_relationship", "args": {"table": "comment", "name": "article",
            "using": {"foreign_key_constraint_on": "article_id"}}}),
        author_update(json!({"id": "X-Svc-User-Id"})),
        article_update(json!({"author_id": "X-Svc-User-Id"})),
        json!({"type": "create_update_permission", "args": {"table": "comment", "role": "user",
            "permission": {"columns": ["body", "hidden"], "filter": on_own_article}}}),
        json!({"type": "create_delete_permission", "args": {"table": "comment", "role": "user",
            "permission": {"filter": on_own_article}}}),
        json!({"type": "create_insert_permission", "args": {"table": "comment", "role": "user",
            "permission": {"columns": ["id", "article_id", "body"], "check": on_own_article}}}),
    ]);
    for request in requests {
        s.ok(request).await;
    }
    s
}

/// A GraphQL request as admin (the admin secret, no role).
async fn admin(s: &TestServer, q: &str) -> Value {
    s.gql(q).await
}

/// A GraphQL request as role `user` with `X-Svc-User-Id: id`.
async fn user(s: &TestServer, id: &str, q: &str) -> Value {
    s.gql_role(q, "user", &[("X-Svc-User-Id", id)]).await
}

async fn authors(s: &TestServer) -> Value {
    query_json(&s.db_url, "SELECT id, name FROM author ORDER BY id").await
}

async fn articles(s: &TestServer) -> Value {
    query_json(
        &s.db_url,
        "SELECT id, author_id, title, rating, is_published, edited_by FROM article ORDER BY id",
    )
    .await
}

async fn comments(s: &TestServer) -> Value {
    query_json(
        &s.db_url,
        "SELECT id, article_id, body, hidden FROM comment ORDER BY id",
    )
    .await
}

fn initial_authors() -> Value {
    json!([{"id": 1, "name": "Ann"}, {"id": 2, "name": "Bo"}])
}

fn initial_articles() -> Value {
    json!([
        {"id": 1, "author_id": 1, "title": "a1", "rating": 1, "is_published": false, "edited_by": null},
        {"id": 2, "author_id": 1, "title": "a2", "rating": 5, "is_published": false, "edited_by": null},
        {"id": 3, "author_id": 2, "title": "b1", "rating": 3, "is_published": true, "edited_by": null}
    ])
}

fn initial_comments() -> Value {
    json!([
        {"id": 10, "article_id": 1, "body": "x", "hidden": false},
        {"id": 11, "article_id": 1, "body": "y", "hidden": false},
        {"id": 12, "article_id": 2, "body": "z", "hidden": false}
    ])
}

/// The response of one GraphQL error.
fn error(message: &str, path: &str, code: &str) -> Value {
    json!({"errors": [{"message": message, "extensions": {"path": path, "code": code}}]})
}

/// The rows of every table are those of the fixture.
async fn assert_unchanged(s: &TestServer) {
    assert_eq!(authors(s).await, initial_authors());
    assert_eq!(articles(s).await, initial_articles());
    assert_eq!(comments(s).await, initial_comments());
}

// ---- update_<t>_many ------------------------------------------------------------------------

/// `r` with the `returning` list of each element of `field` sorted by `id`: rows an element
/// returns come in no set order.
fn by_id(mut r: Value, field: &str) -> Value {
    let elements = r
        .get_mut("data")
        .and_then(|d| d.get_mut(field))
        .and_then(Value::as_array_mut);
    for element in elements.into_iter().flatten() {
        if let Some(rows) = element["returning"].as_array_mut() {
            rows.sort_by_key(|row| row["id"].as_i64());
        }
    }
    r
}

/// The second element matches article 1 because the first one published it.
#[tokio::test]
async fn update_many_elements_see_the_earlier_elements() {
    let s = fixture().await;
    let r = admin(&s, "mutation { update_article_many(updates: [{where: {rating: {_lte: 1}}, _set: {is_published: true}}, {where: {is_published: {_eq: true}}, _inc: {rating: 10}}]) { affected_rows } }").await;
    assert_eq!(
        r,
        json!({"data": {"update_article_many": [{"affected_rows": 1}, {"affected_rows": 2}]}})
    );
    let mut expected = initial_articles();
    expected[0]["is_published"] = json!(true);
    expected[0]["rating"] = json!(11);
    expected[2]["rating"] = json!(13);
    assert_eq!(articles(&s).await, expected);
}

/// Each element's `returning` is read right after it: a later element's change to the same row
/// does not show in it.
#[tokio::test]
async fn update_many_returning_is_read_after_each_element() {
    let s = fixture().await;
    let r = admin(&s, r#"mutation { update_article_many(updates: [
        {where: {id: {_eq: 1}}, _set: {title: "first"}},
        {where: {id: {_eq: 1}}, _set: {title: "second"}, _inc: {rating: 1}},
        {where: {author_id: {_eq: 1}}, _inc: {rating: -1}},
        {where: {id: {_eq: 99}}, _set: {title: "none"}}]) { affected_rows returning { id title rating } } }"#).await;
    let r = by_id(r, "update_article_many");
    assert_eq!(
        r,
        json!({"data": {"update_article_many": [
            {"affected_rows": 1, "returning": [{"id": 1, "title": "first", "rating": 1}]},
            {"affected_rows": 1, "returning": [{"id": 1, "title": "second", "rating": 2}]},
            {"affected_rows": 2, "returning": [{"id": 1, "title": "second", "rating": 1}, {"id": 2, "title": "a2", "rating": 4}]},
            {"affected_rows": 0, "returning": []}]}})
    );
    let mut expected = initial_articles();
    expected[0]["title"] = json!("second");
    expected[0]["rating"] = json!(1);
    expected[1]["rating"] = json!(4);
    assert_eq!(articles(&s).await, expected);
    // As user 1, every element writes the preset, and the filter keeps article 3 out.
    let r = user(&s, "1", r#"mutation { update_article_many(updates: [
        {where: {}, _set: {title: "mine"}},
        {where: {id: {_eq: 3}}, _set: {title: "not mine"}}]) { affected_rows returning { id title edited_by } } }"#).await;
    let r = by_id(r, "update_article_many");
    assert_eq!(
        r,
        json!({"data": {"update_article_many": [
            {"affected_rows": 2, "returning": [{"id": 1, "title": "mine", "edited_by": "1"}, {"id": 2, "title": "mine", "edited_by": "1"}]},
            {"affected_rows": 0, "returning": []}]}})
    );
    assert_eq!(articles(&s).await[2], initial_articles()[2]);
}

#[tokio::test]
async fn update_many_with_no_elements_runs_nothing() {
    let s = fixture().await;
    let r = admin(
        &s,
        "mutation { update_article_many(updates: []) { affected_rows } }",
    )
    .await;
    assert_eq!(r, json!({"data": {"update_article_many": []}}));
    let r = user(
        &s,
        "1",
        "mutation { update_article_many(updates: []) { affected_rows returning { id } } }",
    )
    .await;
    assert_eq!(
        r,
        json!({"data": {"update_article_many": []}}),
        "no preset is written without an element"
    );
    assert_unchanged(&s).await;
}

/// The second element breaks the check (article 2's rating becomes 6), so the first element's
/// write is rolled back too.
#[tokio::test]
async fn a_failing_check_in_one_element_rolls_back_every_element() {
    let s = fixture().await;
    let updates = r#"updates: [{where: {id: {_eq: 1}}, _set: {title: "a1*"}}, {where: {id: {_eq: 2}}, _inc: {rating: 1}}]"#;
    // The answer is the same whatever the selection and whichever element fails: errors and no
    // data.
    let first_fails = r#"updates: [{where: {id: {_eq: 2}}, _inc: {rating: 1}}, {where: {id: {_eq: 1}}, _set: {title: "a1*"}}]"#;
    for (updates, selection) in [
        (updates, "affected_rows"),
        (updates, "affected_rows returning { id title }"),
        (first_fails, "affected_rows"),
        (first_fails, "affected_rows returning { id title }"),
    ] {
        let q = format!("mutation {{ update_article_many({updates}) {{ {selection} }} }}");
        let r = user(&s, "1", &q).await;
        assert_eq!(
            r,
            error(
                "check constraint of an update permission has failed",
                "$",
                "permission-error"
            ),
            "{q}"
        );
        assert_unchanged(&s).await;
    }
}

/// An element with nothing to write, or with a column in two operators, is refused at its own
/// path before any element runs.
#[tokio::test]
async fn update_many_refuses_an_element_at_its_path() {
    let s = fixture().await;
    let r = admin(
        &s,
        "mutation { update_comment_many(updates: [{where: {id: {_eq: 1}}}]) { affected_rows } }",
    )
    .await;
    assert_eq!(
        r,
        error(
            "at least one of _set, _inc, _nested is expected",
            "$.selectionSet.update_comment_many.args.updates[0]",
            "validation-failed"
        )
    );
    let r = admin(&s, r#"mutation { update_comment_many(updates: [{where: {id: {_eq: 10}}, _set: {body: "b"}}, {where: {id: {_eq: 11}}}]) { affected_rows } }"#).await;
    assert_eq!(
        r,
        error(
            "at least one of _set, _inc, _nested is expected",
            "$.selectionSet.update_comment_many.args.updates[1]",
            "validation-failed"
        )
    );
    let r = admin(&s, "mutation { update_article_many(updates: [{where: {id: {_eq: 1}}, _set: {rating: 2}, _inc: {rating: 1}}]) { affected_rows } }").await;
    assert_eq!(
        r,
        error(
            "column \"rating\" can be used in only one update operator",
            "$.selectionSet.update_article_many.args.updates[0]",
            "validation-failed"
        )
    );
    assert_unchanged(&s).await;
}

// ---- updates that write only presets --------------------------------------------------------

/// With no operator, the update writes the permission's preset on the rows its filter allows.
#[tokio::test]
async fn a_preset_only_update_writes_the_preset() {
    let s = fixture().await;
    let q = "mutation { update_article(where: {id: {_eq: 1}}) { affected_rows returning { id title edited_by } } }";
    let r = user(&s, "1", q).await;
    assert_eq!(
        r,
        json!({"data": {"update_article": {"affected_rows": 1, "returning": [{"id": 1, "title": "a1", "edited_by": "1"}]}}})
    );
    let r = user(&s, "2", q).await;
    assert_eq!(
        r,
        json!({"data": {"update_article": {"affected_rows": 0, "returning": []}}})
    );
    let mut expected = initial_articles();
    expected[0]["edited_by"] = json!("1");
    assert_eq!(articles(&s).await, expected);
    // Empty operator objects write the preset as well.
    let r = user(&s, "1", "mutation { update_article_by_pk(pk_columns: {id: 2}, _set: {}, _inc: {}) { id edited_by } }").await;
    assert_eq!(
        r,
        json!({"data": {"update_article_by_pk": {"id": 2, "edited_by": "1"}}})
    );
}

/// Admin has no presets, so an update with no operator and no `_nested` has nothing to write.
#[tokio::test]
async fn an_update_with_nothing_to_write_is_refused() {
    let s = fixture().await;
    let r = admin(
        &s,
        "mutation { update_comment(where: {id: {_eq: 10}}) { affected_rows } }",
    )
    .await;
    assert_eq!(
        r,
        error(
            "at least one of _set, _inc, _nested is expected",
            "$.selectionSet.update_comment.args",
            "validation-failed"
        )
    );
    assert_unchanged(&s).await;
}

/// A preset from a session variable the request lacks fails the request; nothing is written.
#[tokio::test]
async fn a_preset_from_a_missing_session_variable_is_an_error() {
    let s = fixture().await;
    let missing = error(
        "missing session variable: \"x-svc-user-id\"",
        "$",
        "not-found",
    );
    // Role `user`: the filter needs the variable too.
    let r = s
        .gql_role(
            "mutation { update_article(where: {id: {_eq: 1}}) { affected_rows } }",
            "user",
            &[],
        )
        .await;
    assert_eq!(r, missing);
    // A role whose filter needs no session variable: only the preset does.
    s.ok(json!({"type": "create_update_permission", "args": {"table": "article", "role": "editor",
        "permission": {"columns": ["title"], "filter": {}, "set": {"edited_by": "X-Svc-User-Id"}}}}))
        .await;
    s.ok(
        json!({"type": "create_select_permission", "args": {"table": "article", "role": "editor",
        "permission": {"columns": "*", "filter": {}}}}),
    )
    .await;
    for q in [
        "mutation { update_article(where: {id: {_eq: 1}}) { affected_rows } }",
        r#"mutation { update_article(where: {id: {_eq: 1}}, _set: {title: "t"}) { affected_rows } }"#,
        "mutation { update_article_many(updates: [{where: {id: {_eq: 1}}}]) { affected_rows } }",
    ] {
        let r = s.gql_role(q, "editor", &[]).await;
        assert_eq!(r, missing, "{q}");
    }
    assert_unchanged(&s).await;
    // With the variable, the same role writes it.
    let r = s
        .gql_role(
            "mutation { update_article(where: {id: {_eq: 1}}) { affected_rows } }",
            "editor",
            &[("X-Svc-User-Id", "7")],
        )
        .await;
    assert_eq!(r, json!({"data": {"update_article": {"affected_rows": 1}}}));
    assert_eq!(articles(&s).await[0]["edited_by"], "7");
}

// ---- nested updates -------------------------------------------------------------------------

#[tokio::test]
async fn a_nested_entry_updates_the_matching_children() {
    let s = fixture().await;
    let r = user(&s, "1", r#"mutation { update_article_by_pk(pk_columns: {id: 1}, _set: {title: "a1*"}, _nested: {comments: [{where: {body: {_eq: "x"}}, _set: {hidden: true}}]}) { title edited_by comments(order_by: {id: asc}) { id hidden } } }"#).await;
    assert_eq!(
        r,
        json!({"data": {"update_article_by_pk": {"title": "a1*", "edited_by": "1",
            "comments": [{"id": 10, "hidden": true}, {"id": 11, "hidden": false}]}}})
    );
    let mut expected = initial_articles();
    expected[0]["title"] = json!("a1*");
    expected[0]["edited_by"] = json!("1");
    assert_eq!(articles(&s).await, expected);
    let mut expected = initial_comments();
    expected[0]["hidden"] = json!(true);
    assert_eq!(comments(&s).await, expected);
    assert_eq!(authors(&s).await, initial_authors());
}

/// `_delete` and `_insert` in one entry replace the children; `affected_rows` counts the
/// root's preset write, both deletes and the insert.
#[tokio::test]
async fn a_nested_delete_and_insert_replace_the_children() {
    let s = fixture().await;
    let r = user(&s, "1", r#"mutation { update_article(where: {id: {_eq: 1}}, _nested: {comments: [{_delete: true, _insert: {data: [{id: 20, body: "new"}]}}]}) { affected_rows returning { id comments { id body } } } }"#).await;
    assert_eq!(
        r,
        json!({"data": {"update_article": {"affected_rows": 4,
            "returning": [{"id": 1, "comments": [{"id": 20, "body": "new"}]}]}}})
    );
    assert_eq!(
        comments(&s).await,
        json!([
            {"id": 12, "article_id": 2, "body": "z", "hidden": false},
            {"id": 20, "article_id": 1, "body": "new", "hidden": false}
        ])
    );
    assert_eq!(articles(&s).await[0]["edited_by"], "1");
}

/// Article 1 is not user 2's: the root matches nothing, so no nested step runs.
#[tokio::test]
async fn a_by_pk_root_outside_the_filter_runs_no_nested_step() {
    let s = fixture().await;
    let r = user(&s, "2", "mutation { update_article_by_pk(pk_columns: {id: 1}, _nested: {comments: [{_set: {hidden: true}}]}) { id } }").await;
    assert_eq!(r, json!({"data": {"update_article_by_pk": null}}));
    assert_unchanged(&s).await;
}

/// A root with nothing to write is only selected; its object relationship's row is written.
#[tokio::test]
async fn a_select_only_root_updates_its_related_row() {
    let s = fixture().await;
    let r = admin(&s, r#"mutation { update_article_by_pk(pk_columns: {id: 3}, _nested: {author: {_set: {name: "Bob"}}}) { id author { name } } }"#).await;
    assert_eq!(
        r,
        json!({"data": {"update_article_by_pk": {"id": 3, "author": {"name": "Bob"}}}})
    );
    assert_eq!(
        authors(&s).await,
        json!([{"id": 1, "name": "Ann"}, {"id": 2, "name": "Bob"}])
    );
    assert_eq!(articles(&s).await, initial_articles());
    assert_eq!(comments(&s).await, initial_comments());
}

#[tokio::test]
async fn delete_combined_with_operators_is_refused() {
    let s = fixture().await;
    let r = user(&s, "1", "mutation { update_article_by_pk(pk_columns: {id: 1}, _nested: {comments: [{_delete: true, _set: {hidden: true}}]}) { id } }").await;
    assert_eq!(
        r,
        error(
            "\"_delete\" cannot be combined with update operators or \"_nested\"",
            "$.selectionSet.update_article_by_pk.args._nested.comments[0]",
            "validation-failed"
        )
    );
    assert_unchanged(&s).await;
}

/// A nested row that fails its table's update check fails the whole request: the root's write
/// is rolled back with it.
#[tokio::test]
async fn a_failing_check_in_a_nested_entry_rolls_back_the_root() {
    let s = fixture().await;
    let check_failed = error(
        "check constraint of an update permission has failed",
        "$",
        "permission-error",
    );
    // Array relationship: article 2's rating would be 15.
    let r = user(&s, "1", r#"mutation { update_author_by_pk(pk_columns: {id: 1}, _set: {name: "Ann2"}, _nested: {articles: [{where: {id: {_eq: 2}}, _inc: {rating: 10}}]}) { id } }"#).await;
    assert_eq!(r, check_failed);
    assert_unchanged(&s).await;
    // Object relationship: article 1's rating would be 6.
    let r = user(&s, "1", r#"mutation { update_comment_by_pk(pk_columns: {id: 10}, _set: {body: "x2"}, _nested: {article: {_inc: {rating: 5}}}) { id } }"#).await;
    assert_eq!(r, check_failed);
    assert_unchanged(&s).await;
    // Three levels down: the comment is only selected, article 1 gets its preset, author 1 is
    // only selected, and its articles break the check.
    let r = user(&s, "1", r#"mutation { update_comment(where: {id: {_eq: 10}}, _nested: {article: {_nested: {author: {_nested: {articles: [{_set: {rating: 9}}]}}}}}) { affected_rows } }"#).await;
    assert_eq!(r, check_failed);
    assert_unchanged(&s).await;
    // Within the check, the same update goes through: article 1 is written twice (its preset,
    // then the rating), article 2 once.
    let r = user(&s, "1", r#"mutation { update_comment(where: {id: {_eq: 10}}, _nested: {article: {_nested: {author: {_nested: {articles: [{_set: {rating: 4}}]}}}}}) { affected_rows returning { id article { author { articles(order_by: {id: asc}) { id rating edited_by } } } } } }"#).await;
    assert_eq!(
        r,
        json!({"data": {"update_comment": {"affected_rows": 3, "returning": [{"id": 10, "article": {"author": {"articles": [
            {"id": 1, "rating": 4, "edited_by": "1"}, {"id": 2, "rating": 4, "edited_by": "1"}]}}}]}}})
    );
}

/// Each level's update filter limits the rows it writes: a root outside its filter writes
/// nothing and runs no nested step; inside it, only the related rows change.
#[tokio::test]
async fn update_filters_limit_the_rows_at_every_level() {
    let s = fixture().await;
    run_sql(&s.db_url, "insert into comment values (13, 3, 'w', false)").await;
    let mut expected_comments = initial_comments();
    expected_comments
        .as_array_mut()
        .unwrap()
        .push(json!({"id": 13, "article_id": 3, "body": "w", "hidden": false}));
    // User 1 through its own author row: its two articles change, article 3 does not.
    let r = user(&s, "1", r#"mutation { update_author_by_pk(pk_columns: {id: 1}, _nested: {articles: [{_set: {title: "t"}}]}) { name articles(order_by: {id: asc}) { id title edited_by } } }"#).await;
    assert_eq!(
        r,
        json!({"data": {"update_author_by_pk": {"name": "Ann", "articles": [
            {"id": 1, "title": "t", "edited_by": "1"}, {"id": 2, "title": "t", "edited_by": "1"}]}}})
    );
    let mut expected_articles = initial_articles();
    for i in [0, 1] {
        expected_articles[i]["title"] = json!("t");
        expected_articles[i]["edited_by"] = json!("1");
    }
    assert_eq!(articles(&s).await, expected_articles);
    // User 1 through author 2 or article 3: outside the filters, nothing changes.
    let r = user(&s, "1", r#"mutation { update_author_by_pk(pk_columns: {id: 2}, _nested: {articles: [{_set: {title: "t"}}]}) { id } }"#).await;
    assert_eq!(r, json!({"data": {"update_author_by_pk": null}}));
    let r = user(&s, "1", r#"mutation { update_article(where: {id: {_eq: 3}}, _nested: {comments: [{_set: {hidden: true}}]}) { affected_rows returning { id } } }"#).await;
    assert_eq!(
        r,
        json!({"data": {"update_article": {"affected_rows": 0, "returning": []}}})
    );
    assert_eq!(articles(&s).await, expected_articles);
    assert_eq!(comments(&s).await, expected_comments);
    // User 2 on every article: only article 3 (its own) and its comment 13 are written.
    let r = user(&s, "2", r#"mutation { update_article(where: {}, _nested: {comments: [{_set: {hidden: true}}]}) { affected_rows returning { id edited_by comments(order_by: {id: asc}) { id hidden } } } }"#).await;
    assert_eq!(
        r,
        json!({"data": {"update_article": {"affected_rows": 2, "returning": [
            {"id": 3, "edited_by": "2", "comments": [{"id": 13, "hidden": true}]}]}}})
    );
    expected_articles[2]["edited_by"] = json!("2");
    expected_comments[3]["hidden"] = json!(true);
    assert_eq!(articles(&s).await, expected_articles);
    assert_eq!(comments(&s).await, expected_comments);
    assert_eq!(authors(&s).await, initial_authors());
}

/// With the parents' filters opened to every row, a related row outside its own table's update
/// (or delete) filter is still left alone, without an error.
#[tokio::test]
async fn a_child_outside_its_own_filter_is_left_alone() {
    let s = fixture().await;
    run_sql(&s.db_url, "insert into comment values (13, 3, 'w', false)").await;
    let reopen = |table: &str| json!({"type": "drop_update_permission", "args": {"table": table, "role": "user"}});
    s.ok(reopen("author")).await;
    s.ok(author_update(json!({}))).await;
    // Author 2 is renamed; its article 3 is outside user 1's article filter.
    let r = user(&s, "1", r#"mutation { update_author_by_pk(pk_columns: {id: 2}, _set: {name: "Bo2"}, _nested: {articles: [{_set: {title: "t"}}]}) { name articles { id title } } }"#).await;
    assert_eq!(
        r,
        json!({"data": {"update_author_by_pk": {"name": "Bo2", "articles": [{"id": 3, "title": "b1"}]}}})
    );
    assert_eq!(
        authors(&s).await,
        json!([{"id": 1, "name": "Ann"}, {"id": 2, "name": "Bo2"}])
    );
    assert_eq!(articles(&s).await, initial_articles());
    s.ok(reopen("article")).await;
    s.ok(article_update(json!({}))).await;
    // Article 3 is written; its comment 13 is outside user 1's comment update and delete filters.
    let r = user(&s, "1", r#"mutation { update_article(where: {id: {_eq: 3}}, _set: {title: "b1*"}, _nested: {comments: [{_set: {hidden: true}}, {where: {id: {_eq: 13}}, _delete: true}]}) { affected_rows returning { title edited_by comments { id hidden } } } }"#).await;
    assert_eq!(
        r,
        json!({"data": {"update_article": {"affected_rows": 1, "returning": [
            {"title": "b1*", "edited_by": "1", "comments": [{"id": 13, "hidden": false}]}]}}})
    );
    let mut expected = initial_articles();
    expected[2]["title"] = json!("b1*");
    expected[2]["edited_by"] = json!("1");
    assert_eq!(articles(&s).await, expected);
    let mut expected = initial_comments();
    expected
        .as_array_mut()
        .unwrap()
        .push(json!({"id": 13, "article_id": 3, "body": "w", "hidden": false}));
    assert_eq!(comments(&s).await, expected);
}

/// Nested steps run in order, each one seeing the steps before it: a related row is found by the
/// parent's values after the parent's own statement, a later entry sees an earlier entry's
/// change, and `_insert` runs after the entry's `_delete`.
#[tokio::test]
async fn nested_steps_see_the_steps_before_them() {
    let s = fixture().await;
    // The new author_id, not the old one, leads to the author.
    let r = admin(&s, r#"mutation { update_article_by_pk(pk_columns: {id: 1}, _set: {author_id: 2}, _nested: {author: {_set: {name: "Bob"}}}) { author_id author { name } } }"#).await;
    assert_eq!(
        r,
        json!({"data": {"update_article_by_pk": {"author_id": 2, "author": {"name": "Bob"}}}})
    );
    assert_eq!(
        authors(&s).await,
        json!([{"id": 1, "name": "Ann"}, {"id": 2, "name": "Bob"}])
    );
    // The second entry matches the body the first one wrote; `_delete: false` is no delete.
    let r = admin(&s, r#"mutation { update_article_by_pk(pk_columns: {id: 1}, _set: {}, _nested: {comments: [
        {where: {id: {_eq: 10}}, _set: {body: "first"}},
        {where: {body: {_eq: "first"}}, _delete: false, _set: {hidden: true}}]}) { id comments(order_by: {id: asc}) { id body hidden } } }"#).await;
    assert_eq!(
        r,
        json!({"data": {"update_article_by_pk": {"id": 1, "comments": [
            {"id": 10, "body": "first", "hidden": true}, {"id": 11, "body": "y", "hidden": false}]}}}),
        "an empty _set with _nested selects the root instead of answering null"
    );
    // The deleted comment's key is free again for the insert of the same entry (article 1 is
    // user 2's now).
    let r = user(&s, "2", r#"mutation { update_article_by_pk(pk_columns: {id: 1}, _nested: {comments: [{where: {id: {_eq: 11}}, _delete: true, _insert: {data: [{id: 11, body: "again"}]}}]}) { comments(order_by: {id: asc}) { id body hidden } } }"#).await;
    assert_eq!(
        r,
        json!({"data": {"update_article_by_pk": {"comments": [
            {"id": 10, "body": "first", "hidden": true}, {"id": 11, "body": "again", "hidden": false}]}}})
    );
    assert_eq!(
        comments(&s).await,
        json!([
            {"id": 10, "article_id": 1, "body": "first", "hidden": true},
            {"id": 11, "article_id": 1, "body": "again", "hidden": false},
            {"id": 12, "article_id": 2, "body": "z", "hidden": false}
        ])
    );
}

/// `update_<t>_many` elements take `_nested` too; each element's `affected_rows` counts its
/// nested writes and its `returning` shows them.
#[tokio::test]
async fn update_many_elements_with_nested_entries() {
    let s = fixture().await;
    let r = user(&s, "1", r#"mutation { update_article_many(updates: [
        {where: {id: {_eq: 1}}, _nested: {comments: [{_set: {hidden: true}}]}},
        {where: {id: {_eq: 2}}, _set: {title: "a2*"}}]) { affected_rows returning { id title comments(order_by: {id: asc}) { id hidden } } } }"#).await;
    assert_eq!(
        r,
        json!({"data": {"update_article_many": [
            {"affected_rows": 3, "returning": [{"id": 1, "title": "a1", "comments": [{"id": 10, "hidden": true}, {"id": 11, "hidden": true}]}]},
            {"affected_rows": 1, "returning": [{"id": 2, "title": "a2*", "comments": [{"id": 12, "hidden": false}]}]}]}})
    );
    let mut expected = initial_articles();
    expected[0]["edited_by"] = json!("1");
    expected[1]["title"] = json!("a2*");
    expected[1]["edited_by"] = json!("1");
    assert_eq!(articles(&s).await, expected);
    let mut expected = initial_comments();
    expected[0]["hidden"] = json!(true);
    expected[1]["hidden"] = json!(true);
    assert_eq!(comments(&s).await, expected);
}

/// Nested entries that cannot run are refused at their own path, however deep, before anything
/// is written.
#[tokio::test]
async fn nested_entries_are_refused_at_their_path() {
    let s = fixture().await;
    let refusals = [
        // Comments have no preset for user 1: an entry with only a `where` does nothing.
        (
            "1",
            r#"mutation { update_article_by_pk(pk_columns: {id: 1}, _set: {title: "t"}, _nested: {comments: [{_set: {hidden: true}}, {where: {id: {_eq: 10}}}]}) { id } }"#,
            "nested update of relationship \"comments\" has nothing to do",
            "$.selectionSet.update_article_by_pk.args._nested.comments[1]",
        ),
        // An object relationship's path has no index; deeper levels append `._nested.<rel>`.
        (
            "1",
            r#"mutation { update_comment_by_pk(pk_columns: {id: 10}, _set: {body: "b"}, _nested: {article: {_nested: {author: {}}}}) { id } }"#,
            "nested update of relationship \"author\" has nothing to do",
            "$.selectionSet.update_comment_by_pk.args._nested.article._nested.author",
        ),
        (
            "admin",
            r#"mutation { update_author_by_pk(pk_columns: {id: 1}, _nested: {articles: [{where: {id: {_eq: 2}}, _nested: {comments: [{_set: {body: "q"}}, {_delete: true, _nested: {article: {_set: {title: "t"}}}}]}}]}) { id } }"#,
            "\"_delete\" cannot be combined with update operators or \"_nested\"",
            "$.selectionSet.update_author_by_pk.args._nested.articles[0]._nested.comments[1]",
        ),
        (
            "1",
            r#"mutation { update_author_by_pk(pk_columns: {id: 1}, _nested: {articles: [{_set: {rating: 1}, _inc: {rating: 1}}]}) { id } }"#,
            "column \"rating\" can be used in only one update operator",
            "$.selectionSet.update_author_by_pk.args._nested.articles[0]",
        ),
        (
            "1",
            r#"mutation { update_article_by_pk(pk_columns: {id: 1}, _nested: {articles: [{_set: {title: "t"}}]}) { id } }"#,
            "field \"articles\" not found in type: 'article_nested_update_input'",
            "$.selectionSet.update_article_by_pk.args._nested.articles",
        ),
    ];
    for (who, q, message, path) in refusals {
        let r = match who {
            "admin" => admin(&s, q).await,
            id => user(&s, id, q).await,
        };
        assert_eq!(r, error(message, path, "validation-failed"), "{q}");
    }
    // A column the relationship fills is refused in `_insert.data` as in a nested insert.
    let r = admin(&s, r#"mutation { insert_article_one(object: {id: 9, author_id: 1, title: "t", comments: {data: [{id: 90, body: "b", article_id: 2}]}}) { id } }"#).await;
    let message = r["errors"][0]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("article_id"), "{r}");
    for (who, q) in [
        (
            "admin",
            r#"mutation { update_article_by_pk(pk_columns: {id: 1}, _nested: {comments: [{_insert: {data: [{id: 20, body: "b"}, {id: 21, body: "b", article_id: 2}]}}]}) { id } }"#,
        ),
        (
            "1",
            r#"mutation { update_article_by_pk(pk_columns: {id: 1}, _nested: {comments: [{_insert: {data: [{id: 20, body: "b"}, {id: 21, body: "b", article_id: 2}]}}]}) { id } }"#,
        ),
    ] {
        let r = match who {
            "admin" => admin(&s, q).await,
            id => user(&s, id, q).await,
        };
        assert_eq!(
            r,
            error(
                &message,
                "$.selectionSet.update_article_by_pk.args._nested.comments[0]._insert.data[1].article_id",
                "validation-failed"
            ),
            "{who}: {q}"
        );
    }
    assert_unchanged(&s).await;
}

/// A database error in a nested step fails the request with the usual code and rolls back the
/// steps before it.
#[tokio::test]
async fn a_database_error_in_a_nested_step_rolls_everything_back() {
    let s = fixture().await;
    // Article 1 still has comments: the foreign key blocks its delete.
    let r = admin(&s, r#"mutation { update_author_by_pk(pk_columns: {id: 1}, _set: {name: "Ann2"}, _nested: {articles: [{where: {id: {_eq: 2}}, _set: {title: "kept?"}}, {where: {id: {_eq: 1}}, _delete: true}]}) { id } }"#).await;
    assert!(r.get("data").is_none(), "{r}");
    assert_eq!(r["errors"][0]["extensions"]["code"], "constraint-violation");
    let message = r["errors"][0]["message"].as_str().unwrap();
    assert!(message.starts_with("Foreign key violation. "), "{r}");
    // `_insert` runs once per parent row: under two articles the same key collides.
    let r = admin(&s, r#"mutation { update_article(where: {id: {_in: [1, 3]}}, _set: {title: "t"}, _nested: {comments: [{_insert: {data: [{id: 30, body: "twice"}]}}]}) { affected_rows } }"#).await;
    assert!(r.get("data").is_none(), "{r}");
    assert_eq!(r["errors"][0]["extensions"]["code"], "constraint-violation");
    let message = r["errors"][0]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "Uniqueness violation. duplicate key value violates unique constraint \"comment_pkey\""
        ),
        "{r}"
    );
    assert_unchanged(&s).await;
    // Under one article, the insert goes through.
    let r = admin(&s, r#"mutation { update_article(where: {id: {_in: [3]}}, _set: {title: "t"}, _nested: {comments: [{_insert: {data: [{id: 30, body: "once"}]}}]}) { affected_rows } }"#).await;
    assert_eq!(r, json!({"data": {"update_article": {"affected_rows": 2}}}));
}

// ---- schema ---------------------------------------------------------------------------------

/// A type as GraphQL writes it (`[comment_arr_rel_update_input!]`), from introspection.
fn type_name(t: &Value) -> String {
    match t["kind"].as_str().unwrap() {
        "NON_NULL" => format!("{}!", type_name(&t["ofType"])),
        "LIST" => format!("[{}]", type_name(&t["ofType"])),
        _ => t["name"].as_str().unwrap().to_owned(),
    }
}

const TYPE_REF: &str =
    "type { kind name ofType { kind name ofType { kind name ofType { kind name } } } }";

/// `name: type` of each field (or input field, or argument) of `fields`, sorted.
fn signatures(fields: &Value) -> Vec<String> {
    let mut found: Vec<String> = fields
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {fields}"))
        .iter()
        .map(|f| format!("{}: {}", f["name"].as_str().unwrap(), type_name(&f["type"])))
        .collect();
    found.sort();
    found
}

fn sorted(fields: &[&str]) -> Vec<String> {
    let mut fields: Vec<String> = fields.iter().map(|f| (*f).to_owned()).collect();
    fields.sort();
    fields
}

/// Role `user`'s input types for `update_<t>_many` and nested updates, and the root fields
/// that take them.
#[tokio::test]
async fn the_input_types_of_role_user() {
    let s = fixture().await;
    let expected: [(&str, &[&str]); 8] = [
        (
            "article_updates",
            &[
                "where: article_bool_exp!",
                "_set: article_set_input",
                "_inc: article_inc_input",
                "_nested: article_nested_update_input",
            ],
        ),
        (
            "article_nested_update_input",
            &[
                "author: author_obj_rel_update_input",
                "comments: [comment_arr_rel_update_input!]",
            ],
        ),
        (
            "author_obj_rel_update_input",
            &[
                "_set: author_set_input",
                "_nested: author_nested_update_input",
            ],
        ),
        (
            "author_nested_update_input",
            &["articles: [article_arr_rel_update_input!]"],
        ),
        (
            "article_arr_rel_update_input",
            &[
                "where: article_bool_exp",
                "_set: article_set_input",
                "_inc: article_inc_input",
                "_nested: article_nested_update_input",
            ],
        ),
        (
            "comment_arr_rel_update_input",
            &[
                "where: comment_bool_exp",
                "_set: comment_set_input",
                "_delete: Boolean",
                "_insert: comment_arr_rel_insert_input",
                "_nested: comment_nested_update_input",
            ],
        ),
        (
            "comment_nested_update_input",
            &["article: article_obj_rel_update_input"],
        ),
        (
            "article_obj_rel_update_input",
            &[
                "_set: article_set_input",
                "_inc: article_inc_input",
                "_nested: article_nested_update_input",
            ],
        ),
    ];
    for (name, fields) in expected {
        let q =
            format!(r#"{{ __type(name: "{name}") {{ kind inputFields {{ name {TYPE_REF} }} }} }}"#);
        let r = user(&s, "1", &q).await;
        assert_eq!(r["data"]["__type"]["kind"], "INPUT_OBJECT", "{name}: {r}");
        assert_eq!(
            signatures(&r["data"]["__type"]["inputFields"]),
            sorted(fields),
            "{name}"
        );
    }
    let q = format!(
        r#"{{ __type(name: "mutation_root") {{ fields {{ name args {{ name {TYPE_REF} }} {TYPE_REF} }} }} }}"#
    );
    let r = user(&s, "1", &q).await;
    let fields = r["data"]["__type"]["fields"].as_array().unwrap();
    let field = |name: &str| {
        let f = fields
            .iter()
            .find(|f| f["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {r}"));
        (signatures(&f["args"]), type_name(&f["type"]))
    };
    assert_eq!(
        field("update_article_many"),
        (
            sorted(&["updates: [article_updates!]!"]),
            "[article_mutation_response]".to_owned()
        )
    );
    assert_eq!(
        field("update_article"),
        (
            sorted(&[
                "where: article_bool_exp!",
                "_set: article_set_input",
                "_inc: article_inc_input",
                "_nested: article_nested_update_input",
            ]),
            "article_mutation_response".to_owned()
        )
    );
    assert_eq!(
        field("update_article_by_pk"),
        (
            sorted(&[
                "pk_columns: article_pk_columns_input!",
                "_set: article_set_input",
                "_inc: article_inc_input",
                "_nested: article_nested_update_input",
            ]),
            "article".to_owned()
        )
    );
    assert_eq!(
        field("update_author_many"),
        (
            sorted(&["updates: [author_updates!]!"]),
            "[author_mutation_response]".to_owned()
        )
    );
    // A permission whose columns are all presets gives no update field, `_many` included.
    s.ok(
        json!({"type": "create_update_permission", "args": {"table": "article", "role": "stamper",
        "permission": {"columns": ["edited_by"], "filter": {}, "set": {"edited_by": "x"}}}}),
    )
    .await;
    let r = s
        .gql_role(
            r#"{ __type(name: "mutation_root") { name } }"#,
            "stamper",
            &[],
        )
        .await;
    assert_eq!(r, json!({"data": {"__type": null}}));
    assert_eq!(
        field("update_comment_many"),
        (
            sorted(&["updates: [comment_updates!]!"]),
            "[comment_mutation_response]".to_owned()
        )
    );
}
