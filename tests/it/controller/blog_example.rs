//! `examples/blog/` applied by the controller: every resource Ready, and the engine serves the
//! user role and the inherited staff role what the example declares.

use super::*;

#[tokio::test]
async fn blog_example_applies_and_serves_the_user_role() {
    let s = applied_blog_example().await;
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
            17
        );
    } else {
        eprintln!("kubectl not found: skipping `kubectl kustomize examples/blog`");
    }
}
