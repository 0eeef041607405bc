//! Snapshots of the SQL generated for representative queries (reviewed with `cargo insta`).
//! The model comes from the real blog database; no query is executed here.

use crate::harness::TestServer;
use basalt::graphql::{model, plan};
use basalt::translate;
use serde_json::{json, Map, Value};

async fn compile(s: &TestServer, role: &str, query: &str, variables: Value) -> String {
    let planned = plan_for(s, role, query, variables).await;
    let sql = translate::query(&planned.data);
    let (pretty, params) = pretty(&sql);
    format!("{pretty}\n\n-- params\n{params}")
}

/// The IR of a query planned for `role` against the blog database.
async fn plan_for(s: &TestServer, role: &str, query: &str, variables: Value) -> plan::OperationIr {
    let (client, conn) = tokio_postgres::connect(&s.db_url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let snapshot = basalt::transaction::read(&client).await.unwrap();
    let model = model::build(&snapshot.resolution.resolved, role);
    let prepared = plan::prepare(query, None).unwrap();
    let variables: Map<String, Value> = variables.as_object().cloned().unwrap_or_default();
    let limits = plan::Limits {
        max_depth: 64,
        max_root_fields: 100,
    };
    let types = basalt::graphql::typegen::build(&model);
    plan::plan(
        &model,
        &types,
        &snapshot.resolution.resolved,
        &prepared,
        &variables,
        limits,
    )
    .unwrap()
}

/// Formatted SQL and its parameters, one per line.
pub fn pretty(sql: &basalt::sql::SqlText) -> (String, String) {
    let pretty = sqlformat::format(
        &sql.sql,
        &sqlformat::QueryParams::None,
        &sqlformat::FormatOptions::default(),
    );
    let params: Vec<String> = sql
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| format!("${} = {:?} ({:?})", i + 1, p.source, p.encoding))
        .collect();
    (pretty, params.join("\n"))
}

/// Every step of a mutation program: its guard, what its rows mean, its SQL and parameters;
/// then the operation as one statement, when it has that form.
pub fn program_text(program: &basalt::sql::program::MutationProgram) -> String {
    use basalt::sql::program::FieldProgram;
    let mut parts = Vec::new();
    for (key, field) in &program.fields {
        let (FieldProgram::Write(write) | FieldProgram::Action(write)) = field else {
            continue;
        };
        for (i, step) in write.steps.iter().enumerate() {
            let (sql, params) = pretty(&step.sql);
            let mut repeated = match write.loops.iter().find(|l| l.steps.contains(&i)) {
                Some(l) => format!("; once per row of step {}", l.over),
                None => String::new(),
            };
            if step.plan_each_run {
                repeated.push_str("; planned for its values");
            }
            parts.push(format!(
                "-- {key}: step {i} ({}; {}{repeated})\n{sql}\n-- params\n{params}",
                step.guard, step.output
            ));
        }
    }
    if let Some(single) = &program.single {
        let (sql, params) = pretty(single);
        parts.push(format!("-- as one statement\n{sql}\n-- params\n{params}"));
    }
    parts.join("\n\n")
}

#[tokio::test]
async fn generated_sql() {
    let s = TestServer::blog().await;
    let cases = [
        (
            "by_pk",
            "admin",
            "query($id: Int!) { articleById(id: $id) { id title } }",
            json!({"id": 1}),
        ),
        (
            "list_filter_order_limit",
            "admin",
            r#"{ articles(where: {status: {_eq: published}, viewCount: {_gte: 100}}, order_by: [{viewCount: desc}, {id: asc}], limit: 2, offset: 1) { id title } }"#,
            json!({}),
        ),
        (
            "nested_relationships",
            "admin",
            r#"{ author(limit: 2) { name articles(order_by: {id: desc}, limit: 3, where: {title: {_ilike: "%a%"}}) { title comments { body author { name } } } } }"#,
            json!({}),
        ),
        (
            "aggregate_with_nodes",
            "admin",
            r#"{ article_aggregate(where: {author: {name: {_neq: "x"}}}) { aggregate { count(columns: [author_id], distinct: true) sum { viewCount } max { title } } nodes { id } } }"#,
            json!({}),
        ),
        (
            "order_through_relationships",
            "admin",
            r#"{ articles(order_by: [{author: {name: asc}}]) { id } author(order_by: {articles_aggregate: {count: desc}}) { id } }"#,
            json!({}),
        ),
        (
            "distinct_on_and_in",
            "admin",
            r#"query($ids: [Int!]!) { articles(distinct_on: author_id, order_by: [{author_id: asc}, {viewCount: desc}], where: {id: {_in: $ids}}) { id } }"#,
            json!({"ids": [1, 2]}),
        ),
        (
            "computed_fields",
            "admin",
            r#"{ author { full_name is_me search_articles(args: {term: "x"}, limit: 1) { id } } }"#,
            json!({}),
        ),
        (
            "permissions_user",
            "user",
            r#"{ articles { id author { name } comments { body } } author_aggregate { aggregate { count } } }"#,
            json!({}),
        ),
        (
            "permissions_guest_limit",
            "guest",
            r#"{ author(limit: 10) { id articles { title } } }"#,
            json!({}),
        ),
    ];
    for (name, role, query, variables) in cases {
        let text = compile(&s, role, query, variables).await;
        insta::assert_snapshot!(name, text, query);
    }
}

#[tokio::test]
async fn generated_mutation_sql() {
    let s = TestServer::blog().await;
    let (client, conn) = tokio_postgres::connect(&s.db_url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let snapshot = basalt::transaction::read(&client).await.unwrap();
    let cases = [
        (
            "mutation_insert_upsert_user",
            "user",
            r#"mutation { insert_article(objects: [{id: 1, title: "t", author_id: 1}], on_conflict: {constraint: article_pkey, update_columns: [title], where: {viewCount: {_lt: 10}}}) { affected_rows returning { id title } } }"#,
        ),
        (
            "mutation_update_user",
            "user",
            r#"mutation { update_article(where: {title: {_like: "a%"}}, _inc: {viewCount: 1}, _set: {title: "x"}, _append: {tags: ["n"]}) { affected_rows } }"#,
        ),
        (
            "mutation_insert_one_user",
            "user",
            r#"mutation { insert_article_one(object: {id: 7, title: "t", author_id: 1}) { id title status } }"#,
        ),
        (
            "mutation_delete_by_pk",
            "admin",
            r#"mutation { delete_comment_by_pk(id: 3) { id article { title } } }"#,
        ),
    ];
    for (name, role, query) in cases {
        let model = model::build(&snapshot.resolution.resolved, role);
        let prepared = plan::prepare(query, None).unwrap();
        let limits = plan::Limits {
            max_depth: 64,
            max_root_fields: 100,
        };
        let types = basalt::graphql::typegen::build(&model);
        let planned = plan::plan(
            &model,
            &types,
            &snapshot.resolution.resolved,
            &prepared,
            &Map::new(),
            limits,
        )
        .unwrap();
        let mutation = planned.mutation.unwrap();
        let program = translate::mutation(&mutation);
        let (session, _) = pretty(&program.session);
        assert_eq!(session, "SELECT\n  set_config('basalt.user', $1, true)");
        let mut text = program_text(&program);
        if let Some(shared) = translate::shared_insert(&mutation, 2) {
            // Each copy binds the one statement's parameters, in order.
            let single = program
                .single
                .as_ref()
                .expect("a shared insert is one statement");
            assert_eq!(
                shared.params,
                [single.params.clone(), single.params.clone()].concat()
            );
            let (sql, params) = pretty(&shared);
            text.push_str(&format!(
                "\n\n-- two requests in one statement\n{sql}\n-- params\n{params}"
            ));
        }
        insta::assert_snapshot!(name, text, query);
    }
}

#[tokio::test]
async fn generated_action_sql() {
    let s = TestServer::blog().await;
    s.ok(json!({"type": "set_custom_types", "args": {"objects": [
        {"name": "Card", "fields": [{"name": "ok", "type": "Boolean!"}, {"name": "author_id", "type": "Int"},
                                    {"name": "inner", "type": "[Inner!]"}],
         "relationships": [
            {"name": "author", "type": "object", "remote_table": "author", "field_mapping": {"author_id": "id"}},
            {"name": "articles", "type": "array", "remote_table": "article", "field_mapping": {"author_id": "author_id"}}]},
        {"name": "Inner", "fields": [{"name": "n", "type": "Int"}]}]}}))
        .await;
    for (name, definition) in [
        (
            "card",
            json!({"type": "query", "handler": "http://127.0.0.1:9/card", "output_type": "[Card!]!"}),
        ),
        (
            "archive",
            json!({"handler": "http://127.0.0.1:9/a", "output_type": "Card"}),
        ),
        (
            "later",
            json!({"handler": "http://127.0.0.1:9/l", "output_type": "Card", "kind": "asynchronous",
                         "arguments": [{"name": "id", "type": "Int!"}]}),
        ),
    ] {
        s.ok(json!({"type": "create_action", "args": {"name": name, "definition": definition}}))
            .await;
        s.ok(json!({"type": "create_action_permission", "args": {"action": name, "role": "user"}}))
            .await;
    }
    let (client, conn) = tokio_postgres::connect(&s.db_url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let snapshot = basalt::transaction::read(&client).await.unwrap();
    let model = model::build(&snapshot.resolution.resolved, "user");
    let types = basalt::graphql::typegen::build(&model);
    let limits = plan::Limits {
        max_depth: 64,
        max_root_fields: 100,
    };
    let plan_of = |query: &str| {
        let prepared = plan::prepare(query, None).unwrap();
        plan::plan(
            &model,
            &types,
            &snapshot.resolution.resolved,
            &prepared,
            &Map::new(),
            limits,
        )
        .unwrap()
    };
    // A query action joined to tables with the user's permissions, and an asynchronous
    // result read by id for the same session.
    let planned = plan_of(
        r#"{ card { ok inner { n } author { name } articles(limit: 1) { title } } later(id: "00000000-0000-0000-0000-000000000000") { id errors output { ok author { id } } } }"#,
    );
    let (sql, params) = pretty(&translate::query(&planned.data));
    insta::assert_snapshot!("action_query", format!("{sql}\n\n-- params\n{params}"));
    // A synchronous mutation action shaped after its call, an asynchronous one logged.
    let planned = plan_of(r#"mutation { archive { ok author { name } } later(id: 3) }"#);
    let program = translate::mutation(&planned.mutation.unwrap());
    insta::assert_snapshot!("action_mutation", program_text(&program));
}

/// An operation whose response also holds introspection fields reads its database fields one
/// column each, named by response key; its constant fields are not in the statement.
#[tokio::test]
async fn generated_sql_of_fields_placed_among_others() {
    let s = TestServer::blog().await;
    let query = r#"{ __typename first: author(limit: 1) { id } __schema { queryType { name } } count: article_aggregate { aggregate { count } } }"#;
    let planned = plan_for(&s, "admin", query, json!({})).await;
    let (sql, keys) = translate::query_fields(&planned.data, false);
    assert_eq!(keys, ["first", "count"]);
    let (pretty, params) = pretty(&sql);
    insta::assert_snapshot!(
        "fields_placed_among_others",
        format!("{pretty}\n\n-- params\n{params}"),
        query
    );
}
