//! The reference engine's own function test cases (query functions with table arguments and
//! aggregates, functions reading the session, mutation functions among other mutation fields,
//! defaults and unnamed arguments), ported as HTTP tests against this fixture.

use crate::harness::TestServer;
use serde_json::json;

const FIXTURE: &str = r#"
CREATE TABLE post (id serial PRIMARY KEY, title text NOT NULL, content text NOT NULL,
  author text NOT NULL, score int NOT NULL DEFAULT 0);
INSERT INTO post (title, content, author) VALUES
  ('post by alice', 'graphql is great', 'alice'), ('post by bob', 'postgres is great', 'bob'),
  ('another by alice', 'functions in graphql', 'alice'), ('draft', 'nothing yet', 'carol');
CREATE TABLE session_value (key text PRIMARY KEY, value text);
CREATE FUNCTION search_posts(search text) RETURNS SETOF post AS $$
  SELECT * FROM post WHERE title ILIKE '%' || search || '%' OR content ILIKE '%' || search || '%'
$$ LANGUAGE sql STABLE;
CREATE FUNCTION session_values(basalt_session jsonb) RETURNS SETOF session_value AS $$
  SELECT key, value FROM jsonb_each_text(basalt_session)
$$ LANGUAGE sql STABLE;
CREATE FUNCTION my_posts(basalt_session json) RETURNS SETOF post AS $$
  SELECT * FROM post WHERE author = basalt_session->>'x-svc-user-id'
$$ LANGUAGE sql STABLE;
CREATE FUNCTION add_to_score(search text, increment int DEFAULT 1) RETURNS SETOF post AS $$
  UPDATE post SET score = score + increment WHERE title ILIKE '%' || search || '%' RETURNING *
$$ LANGUAGE sql VOLATILE;
CREATE FUNCTION fail_after_bump(post_id int) RETURNS post AS $$
BEGIN
  UPDATE post SET score = score + 100 WHERE id = post_id;
  RAISE EXCEPTION 'refused by the function';
END
$$ LANGUAGE plpgsql VOLATILE;
CREATE FUNCTION window_of(int, int DEFAULT 2, skip int DEFAULT 0) RETURNS SETOF post AS $$
  SELECT * FROM post WHERE id >= $1 ORDER BY id OFFSET skip LIMIT $2
$$ LANGUAGE sql STABLE;
CREATE FUNCTION posts_from(start int, step int DEFAULT 1, int DEFAULT 10) RETURNS SETOF post AS $$
  SELECT * FROM post WHERE id >= start AND id % step = 0 LIMIT $3
$$ LANGUAGE sql STABLE;
"#;

async fn server() -> TestServer {
    let s = TestServer::with_fixture(FIXTURE).await;
    s.ok(json!({"type": "bulk", "args": [
        {"type": "track_table", "args": {"table": "post"}},
        {"type": "track_table", "args": {"table": "session_value"}},
        {"type": "create_select_permission", "args": {"table": "post", "role": "user",
            "permission": {"columns": "*", "filter": {}, "allow_aggregations": true}}},
        {"type": "create_select_permission", "args": {"table": "session_value", "role": "user",
            "permission": {"columns": "*", "filter": {}}}},
        {"type": "track_function", "args": {"name": "search_posts"}},
        {"type": "track_function", "version": 2, "args": {"function": "session_values",
            "configuration": {"session_argument": "basalt_session"}}},
        {"type": "track_function", "version": 2, "args": {"function": "my_posts",
            "configuration": {"session_argument": "basalt_session"}}},
        {"type": "track_function", "args": {"name": "add_to_score"}},
        {"type": "track_function", "args": {"name": "fail_after_bump"}},
        {"type": "track_function", "args": {"name": "window_of"}},
        {"type": "track_function", "args": {"name": "posts_from"}},
        {"type": "create_function_permission", "args": {"function": "add_to_score", "role": "user"}}
    ]}))
    .await;
    s
}

#[tokio::test]
async fn query_functions_take_table_arguments_and_aggregates() {
    let s = server().await;
    let answer = s
        .gql(r#"{ search_posts(args: {search: "graphql"}, where: {author: {_eq: "alice"}}, order_by: {id: desc}, limit: 1, offset: 1) { id title } }"#)
        .await;
    assert_eq!(
        answer,
        json!({"data": {"search_posts": [{"id": 1, "title": "post by alice"}]}})
    );
    let answer = s
        .gql(r#"{ search_posts(args: {search: "great"}, distinct_on: author, order_by: [{author: asc}, {id: desc}]) { id author } }"#)
        .await;
    assert_eq!(
        answer,
        json!({"data": {"search_posts": [{"id": 1, "author": "alice"}, {"id": 2, "author": "bob"}]}})
    );
    let answer = s
        .gql_role(
            r#"{ search_posts_aggregate(args: {search: "alice"}) { aggregate { count max { id } } nodes { title } } }"#,
            "user",
            &[],
        )
        .await;
    assert_eq!(
        answer,
        json!({"data": {"search_posts_aggregate": {"aggregate": {"count": 2, "max": {"id": 3}},
            "nodes": [{"title": "post by alice"}, {"title": "another by alice"}]}}})
    );
}

#[tokio::test]
async fn a_session_argument_receives_every_session_variable() {
    let s = server().await;
    let answer = s
        .gql_role(
            "{ session_values(order_by: {key: asc}) { key value } }",
            "user",
            &[("X-Svc-User-Id", "alice"), ("X-Svc-Org", "Acme")],
        )
        .await;
    assert_eq!(
        answer,
        json!({"data": {"session_values": [{"key": "x-svc-org", "value": "Acme"},
            {"key": "x-svc-role", "value": "user"}, {"key": "x-svc-user-id", "value": "alice"}]}})
    );
    let answer = s
        .gql_role(
            "{ my_posts(order_by: {id: asc}) { id } }",
            "user",
            &[("X-Svc-User-Id", "alice")],
        )
        .await;
    assert_eq!(
        answer,
        json!({"data": {"my_posts": [{"id": 1}, {"id": 3}]}})
    );
    // The session argument is never a GraphQL argument: the field takes no `args`.
    let answer = s
        .gql(r#"{ my_posts(args: {basalt_session: "{}"}) { id } }"#)
        .await;
    assert_eq!(
        answer["errors"][0]["extensions"]["code"],
        "validation-failed"
    );
}

#[tokio::test]
async fn mutation_functions_run_in_document_order_in_one_transaction() {
    let s = server().await;
    let answer = s
        .gql_role(
            r#"mutation { first: add_to_score(args: {search: "alice"}, order_by: {id: asc}) { id score }
                second: add_to_score(args: {search: "alice", increment: 10}, where: {id: {_eq: 3}}) { id score } }"#,
            "user",
            &[],
        )
        .await;
    assert_eq!(
        answer,
        json!({"data": {"first": [{"id": 1, "score": 1}, {"id": 3, "score": 1}],
            "second": [{"id": 3, "score": 11}]}})
    );
    // The `where` did not narrow what the function wrote: row 1 was bumped by the second call.
    let scores = s.gql("{ post(order_by: {id: asc}) { score } }").await;
    assert_eq!(
        scores,
        json!({"data": {"post": [{"score": 11}, {"score": 0}, {"score": 11}, {"score": 0}]}})
    );
    // An exception raised by a later field rolls back the earlier ones.
    let answer = s
        .gql(r#"mutation { add_to_score(args: {search: "bob"}) { id } fail_after_bump(args: {post_id: 2}) { id } }"#)
        .await;
    assert_eq!(answer["data"], serde_json::Value::Null, "{answer}");
    assert_eq!(
        answer["errors"][0]["extensions"]["code"], "unexpected",
        "{answer}"
    );
    assert_eq!(
        answer["errors"][0]["message"], "database query error",
        "{answer}"
    );
    let bob = s.gql("{ post_by_pk(id: 2) { score } }").await;
    assert_eq!(bob, json!({"data": {"post_by_pk": {"score": 0}}}));
    // No grant, no field: the role sees only the granted mutation.
    let answer = s
        .gql_role(
            "mutation { fail_after_bump(args: {post_id: 1}) { id } }",
            "user",
            &[],
        )
        .await;
    assert_eq!(
        answer["errors"][0]["extensions"]["code"],
        "validation-failed"
    );
}

#[tokio::test]
async fn arguments_are_positional_until_one_is_left_out_then_named() {
    let s = server().await;
    // Unnamed arguments are arg_1, arg_2; both defaults left to SQL.
    let answer = s.gql("{ window_of(args: {arg_1: 2}) { id } }").await;
    assert_eq!(
        answer,
        json!({"data": {"window_of": [{"id": 2}, {"id": 3}]}})
    );
    let answer = s
        .gql("{ window_of(args: {arg_1: 1, arg_2: 3, skip: 1}) { id } }")
        .await;
    assert_eq!(
        answer,
        json!({"data": {"window_of": [{"id": 2}, {"id": 3}, {"id": 4}]}})
    );
    // arg_2 left out, then a named argument: passed by name.
    let answer = s
        .gql("{ window_of(args: {arg_1: 1, skip: 3}) { id } }")
        .await;
    assert_eq!(answer, json!({"data": {"window_of": [{"id": 4}]}}));
    // An unnamed argument after a left-out one cannot be passed by name.
    let answer = s
        .gql("{ posts_from(args: {start: 1, arg_1: 1}) { id } }")
        .await;
    assert_eq!(
        answer,
        json!({"errors": [{"message": "Only last set of positional arguments can be omitted",
            "extensions": {"path": "$.selectionSet.posts_from.args.args", "code": "not-supported"}}]})
    );
    let answer = s
        .gql("{ posts_from(args: {start: 1, step: 2, arg_1: 1}) { id } }")
        .await;
    assert_eq!(answer, json!({"data": {"posts_from": [{"id": 2}]}}));
    let answer = s.gql("{ window_of(args: {arg_2: 1}) { id } }").await;
    assert_eq!(
        answer,
        json!({"errors": [{"message": "Non default arguments cannot be omitted",
            "extensions": {"path": "$.selectionSet.window_of.args.args", "code": "not-supported"}}]})
    );
}
