//! `examples/blog/` applied by the controller: every resource Ready, and the engine serves the
//! user role and the inherited staff role what the example declares, including an author's
//! updates of an article and the comments on it, one table at a time and as one nested update.

use super::*;

#[tokio::test]
async fn blog_example_applies_and_serves_the_user_role() {
    let s = applied_blog_example().await;
    // `user` subscribes to the article list and the article stream only.
    let article = exported_table(&s.server.export().await, "article");
    assert_eq!(
        article["select_permissions"][0]["permission"]["subscription_root_fields"],
        json!(["select", "select_stream"]),
        "{article}"
    );
    s.server.running.state.reload(false).await.unwrap();
    s.server
        .sql("INSERT INTO author (name, bio) VALUES ('Ann', 'poet')")
        .await;
    let inserted = s
        .server
        .graphql_as(
            json!({"query": "mutation { insert_article_one(object: {title: \"Hello\", body: \"...\"}) { id published author { fullName } } }"}),
            &[("X-Svc-Role", "user"), ("X-Svc-User-Id", "1")],
        )
        .await;
    assert_eq!(
        inserted["data"]["insert_article_one"]["published"], false,
        "{inserted}"
    );
    assert_eq!(
        inserted["data"]["insert_article_one"]["author"]["fullName"], "Ann (poet)",
        "{inserted}"
    );
    let authors = s
        .server
        .gql_role(
            "{ authors { name articles { title } } }",
            "user",
            &[("X-Svc-User-Id", "1")],
        )
        .await;
    assert_eq!(
        authors["data"]["authors"][0]["articles"][0]["title"], "Hello",
        "{authors}"
    );
    // The tracked search function, as `user`: the article's title mentions the term.
    let found = s
        .server
        .gql_role(
            r#"{ search_articles(args: {term: "hel"}) { title } }"#,
            "user",
            &[("X-Svc-User-Id", "1")],
        )
        .await;
    assert_eq!(
        found,
        json!({"data": {"search_articles": [{"title": "Hello"}]}})
    );
    // `staff` inherits from `user` and `moderator`: it reads the comments of an unpublished
    // article, which `user` may not.
    s.server
        .sql("INSERT INTO comment (article_id, author_id, body) VALUES (1, 1, 'first!')")
        .await;
    let comments = |role: &'static str| {
        let server = &s.server;
        async move {
            server
                .gql_role("{ comment { body } }", role, &[("X-Svc-User-Id", "1")])
                .await
        }
    };
    assert_eq!(comments("user").await, json!({"data": {"comment": []}}));
    // The RestEndpoint serves the allow-listed query at a URL, as the caller's role.
    let rest = s
        .server
        .http
        .get(format!("{}/api/rest/articles/1", s.server.base))
        .header("X-Svc-Role", "staff")
        .header("X-Svc-User-Id", "1")
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status().as_u16(), 200);
    assert_eq!(
        rest.json::<Value>().await.unwrap(),
        json!({"article_by_pk": {"id": 1, "title": "Hello", "body": "...",
            "comments": [{"id": 1, "body": "first!"}]}})
    );
    assert_eq!(
        comments("staff").await,
        json!({"data": {"comment": [{"body": "first!"}]}})
    );
    if let Ok(out) = std::process::Command::new("kubectl")
        .args([
            "kustomize",
            concat!(env!("CARGO_MANIFEST_DIR"), "/examples/blog"),
        ])
        .output()
    {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // One document per resource (an Action's spec has a `kind:` of its own).
        assert_eq!(
            String::from_utf8_lossy(&out.stdout)
                .matches("apiVersion: basalt.dev/v1alpha1")
                .count(),
            22
        );
    } else {
        eprintln!("kubectl not found: skipping `kubectl kustomize examples/blog`");
    }
}

/// Two authors, Ann (user 1) and Bo (user 2), with a published article each and comments on
/// both: comments 1-3 are on Ann's article 1, comments 4-6 on Bo's article 2, and each article
/// has a comment `spam`.
async fn two_authors_with_comments(s: &Setup) {
    s.server
        .sql(
            "INSERT INTO author (name) VALUES ('Ann'), ('Bo');
             INSERT INTO article (author_id, title, published) VALUES (1, 'Hello', true), (2, 'Other', true);
             INSERT INTO comment (article_id, author_id, body) VALUES
               (1, 2, 'nice'), (1, 1, 'thanks'), (1, 2, 'spam'),
               (2, 1, 'hi Bo'), (2, 2, 'me again'), (2, 2, 'spam')",
        )
        .await;
}

/// Article titles and comment bodies, by id.
async fn articles_and_comments(s: &Setup) -> Value {
    let db = &s.server.db_url;
    json!({
        "article": query_json(db, "SELECT id, title FROM article ORDER BY id").await,
        "comment": query_json(db, "SELECT id, body FROM comment ORDER BY id").await,
    })
}

/// What Ann's edits leave: her article renamed, the spam on it deleted and Bo's comment on it
/// hidden; Bo's article and every comment on it as they were.
fn after_anns_edits() -> Value {
    json!({
        "article": [{"id": 1, "title": "Hello again"}, {"id": 2, "title": "Other"}],
        "comment": [{"id": 1, "body": "(hidden by the author)"}, {"id": 2, "body": "thanks"},
                    {"id": 4, "body": "hi Bo"}, {"id": 5, "body": "me again"}, {"id": 6, "body": "spam"}],
    })
}

/// The update and delete permissions of `user`, one root field at a time: an author updates
/// their own article and the comments on it, and not Bo's article or the comments on it.
#[tokio::test]
async fn blog_example_lets_an_author_edit_an_article_and_its_comments() {
    let s = applied_blog_example().await;
    s.server.running.state.reload(false).await.unwrap();
    two_authors_with_comments(&s).await;
    let ann = |query: &'static str| {
        let server = &s.server;
        async move {
            server
                .gql_role(query, "user", &[("X-Svc-User-Id", "1")])
                .await
        }
    };
    assert_eq!(
        ann(r#"mutation { update_article_by_pk(pk_columns: {id: 1}, _set: {title: "Hello again"}) { id title } }"#).await,
        json!({"data": {"update_article_by_pk": {"id": 1, "title": "Hello again"}}})
    );
    assert_eq!(
        ann(r#"mutation { update_article_by_pk(pk_columns: {id: 2}, _set: {title: "Taken"}) { id } }"#).await,
        json!({"data": {"update_article_by_pk": null}})
    );
    assert_eq!(
        ann(r#"mutation { delete_comment(where: {body: {_eq: "spam"}}) { affected_rows } }"#).await,
        json!({"data": {"delete_comment": {"affected_rows": 1}}})
    );
    assert_eq!(
        ann(r#"mutation { update_comment(where: {author_id: {_eq: 2}}, _set: {body: "(hidden by the author)"}) { affected_rows } }"#).await,
        json!({"data": {"update_comment": {"affected_rows": 1}}})
    );
    assert_eq!(articles_and_comments(&s).await, after_anns_edits());
}

/// The same edits as one nested update of the article (`_nested`, the README's "Nested
/// updates"): the comments it reaches are those of the updated article, each entry within the
/// comment permissions; on Bo's article nothing runs.
#[tokio::test]
async fn blog_example_lets_an_author_update_an_article_and_its_comments_at_once() {
    let s = applied_blog_example().await;
    s.server.running.state.reload(false).await.unwrap();
    two_authors_with_comments(&s).await;
    let ann = |query: &'static str| {
        let server = &s.server;
        async move {
            server
                .gql_role(query, "user", &[("X-Svc-User-Id", "1")])
                .await
        }
    };
    let updated = ann(r#"mutation {
          update_article_by_pk(
            pk_columns: {id: 1}
            _set: {title: "Hello again"}
            _nested: {comments: [
              {where: {body: {_eq: "spam"}}, _delete: true}
              {where: {author_id: {_eq: 2}}, _set: {body: "(hidden by the author)"}}
            ]}
          ) { id title comments(order_by: {id: asc}) { id body } }
        }"#)
    .await;
    assert_eq!(
        updated,
        json!({"data": {"update_article_by_pk": {"id": 1, "title": "Hello again", "comments": [
            {"id": 1, "body": "(hidden by the author)"}, {"id": 2, "body": "thanks"}]}}})
    );
    let refused = ann(r#"mutation {
          update_article_by_pk(pk_columns: {id: 2}, _set: {title: "Taken"},
            _nested: {comments: [{_set: {body: "taken"}}]}) { id }
        }"#)
    .await;
    assert_eq!(refused, json!({"data": {"update_article_by_pk": null}}));
    assert_eq!(articles_and_comments(&s).await, after_anns_edits());
}
