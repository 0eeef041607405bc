//! Property tests of the three parsers of untrusted input: GraphQL documents with variables,
//! `/v1/query` bodies, and permission expressions (BoolExps); and one of nested updates.
//!
//! The targets and their input generators live in `targets/`, shared with the
//! cargo-fuzz targets in `fuzz/` (see `fuzz/README.md`). Properties:
//!
//! - pure, many cases: no input makes a target panic, and the oracles of `targets/` hold
//!   (plan-cache variable re-check, stored metadata reloads, every role's schema builds);
//! - with Postgres (the blog fixture): every statement of a document the planner accepts
//!   (query, mutation program, subscription) and of the root fields of a role whose new
//!   permission was accepted is prepared by Postgres, with as many `text` parameters as the
//!   printer reports;
//! - over HTTP against a real server: no `/v1/query` body and no GraphQL request gets a 5xx
//!   (for GraphQL, which answers 200, no `unexpected` or `constraint-error` code), and a
//!   `/v1/query` request that fails, or is a dry run, leaves `export_metadata` and the
//!   catalog's resource version as they were;
//! - one property of the engine's semantics (`nested_updates.rs`): a nested update of an
//!   article's comments writes exactly what the plain update of those comments writes.
//!
//! Case counts are sized for CI (well under a minute on 2 cores). `PROPTEST_CASES=<n>` (read
//! by proptest itself) runs every property with `n` cases instead, for a longer search:
//! `PROPTEST_CASES=5000 cargo test --test it properties::`. A failure prints the shrunk
//! input; `PROPTEST_RNG_SEED=<n>` makes a run repeatable.

mod cron;
mod nested_updates;
mod targets;

use crate::harness::{self, TestServer};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{json, Value};
use targets::{fixture, Compiled, GraphqlRequest, Statement};

/// A runner with `cases` cases, unless `PROPTEST_CASES` says otherwise. Failures are
/// reported, not saved to files.
fn runner(cases: u32) -> TestRunner {
    let mut config = if std::env::var_os("PROPTEST_CASES").is_some() {
        Config::default()
    } else {
        Config::with_cases(cases)
    };
    config.failure_persistence = None;
    config.max_shrink_iters = 4096;
    TestRunner::new(config)
}

/// The choices a generator reads (see `targets/tape.rs`).
fn choices() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..600)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Panics with proptest's report (the shrunk input) when a property failed.
fn report<T: std::fmt::Debug>(result: Result<(), proptest::test_runner::TestError<T>>) {
    if let Err(e) = result {
        panic!("{e}");
    }
}

// ---- pure ---------------------------------------------------------------------------------

#[test]
fn graphql_documents_never_panic_the_planner() {
    let fx = fixture();
    let strategy = choices().prop_map(|bytes| targets::graphql_request(fixture(), &bytes));
    report(runner(512).run(&strategy, |request| {
        let _ = targets::compile_graphql(fx, &request);
        Ok(())
    }));
}

#[test]
fn metadata_requests_never_panic_parse_or_apply() {
    let fx = fixture();
    let strategy = choices().prop_map(|bytes| targets::metadata_request(fixture(), &bytes));
    report(runner(256).run(&strategy, |request| {
        let _ = targets::apply_request(fx, &request);
        Ok(())
    }));
}

#[test]
fn permission_expressions_never_panic_the_checks() {
    let fx = fixture();
    let strategy = choices().prop_map(|bytes| targets::permission_case(fixture(), &bytes));
    report(runner(256).run(&strategy, |case| {
        let _ = targets::check_permission_case(fx, &case);
        Ok(())
    }));
}

/// The generators are worth running: a good share of what they write is accepted, and every
/// kind of operation gets through. (Rejections test the validators; acceptances test the
/// SQL.)
#[test]
fn generators_reach_accepted_inputs() {
    let fx = fixture();
    let n: usize = 400;
    let (mut queries, mut mutations, mut subscriptions) = (0, 0, 0);
    let (mut metadata, mut permissions) = (0, 0);
    for seed in 0..n {
        let bytes = targets::pseudo_random_bytes(seed as u64, 400);
        match targets::compile_graphql(fx, &targets::graphql_request(fx, &bytes)) {
            Ok(Compiled::Query(_)) => queries += 1,
            Ok(Compiled::Mutation(_)) => mutations += 1,
            Ok(Compiled::Live(_)) => subscriptions += 1,
            Err(_) => {}
        }
        if let Ok(Some(_)) = targets::apply_request(fx, &targets::metadata_request(fx, &bytes)) {
            metadata += 1;
        }
        if let Ok(compiled) =
            targets::check_permission_case(fx, &targets::permission_case(fx, &bytes))
        {
            permissions += usize::from(!compiled.is_empty());
        }
    }
    let counts =
        format!("queries {queries}, mutations {mutations}, subscriptions {subscriptions}, metadata changes {metadata}, permissions {permissions} of {n}");
    eprintln!("accepted: {counts}");
    assert!(queries >= n / 8, "{counts}");
    assert!(mutations >= n / 100, "{counts}");
    assert!(subscriptions >= n / 100, "{counts}");
    assert!(metadata >= n / 20, "{counts}");
    assert!(permissions >= n / 10, "{counts}");
}

// ---- Postgres -----------------------------------------------------------------------------

/// A client on a fresh database holding the blog fixture and the catalog (whose
/// `check_failed` function one-statement mutations call).
async fn blog_database() -> tokio_postgres::Client {
    let db = harness::fresh_database().await;
    harness::run_sql(&db, harness::BLOG).await;
    let (mut client, conn) = tokio_postgres::connect(&db, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    basalt::catalog::migrate(&mut client).await.unwrap();
    client
}

/// Prepares each statement with `text` parameters, as `execute` does, and checks Postgres
/// sees as many parameters as the printer reported.
async fn prepare_all(
    client: &tokio_postgres::Client,
    statements: &[Statement],
    context: &dyn std::fmt::Debug,
) -> Result<(), TestCaseError> {
    for statement in statements {
        let types = vec![tokio_postgres::types::Type::TEXT; statement.params];
        match client.prepare_typed(&statement.sql, &types).await {
            Ok(prepared) => prop_assert_eq!(
                prepared.params().len(),
                statement.params,
                "parameter count of {}\nfor {:?}",
                statement.sql,
                context
            ),
            Err(e) => {
                return Err(TestCaseError::fail(format!(
                    "accepted, but Postgres does not prepare the SQL: {}\nSQL: {}\nfor {context:?}",
                    e.as_db_error().map(|d| d.message()).unwrap_or_default(),
                    statement.sql
                )))
            }
        }
    }
    Ok(())
}

#[test]
fn accepted_documents_prepare_in_postgres() {
    let rt = runtime();
    let client = rt.block_on(blog_database());
    let fx = fixture();
    let strategy = choices().prop_map(|bytes| targets::graphql_request(fixture(), &bytes));
    report(runner(256).run(&strategy, |request| {
        let Ok(compiled) = targets::compile_graphql(fx, &request) else {
            return Ok(());
        };
        rt.block_on(prepare_all(&client, &compiled.statements(), &request))
    }));
}

/// Every root field of every role, queried and written the simplest way, plans and prepares.
#[test]
fn every_root_field_of_every_role_prepares() {
    let rt = runtime();
    let client = rt.block_on(blog_database());
    let fx = fixture();
    let mut count = 0;
    for (i, session) in targets::SESSIONS.iter().enumerate() {
        for (root, found) in targets::probes(&fx.role(*session).schema, &fx.cache.resolved, i) {
            let Some((request, compiled)) = found else {
                panic!("no simple document selecting {root} plans for {session:?}");
            };
            if let Err(e) = rt.block_on(prepare_all(&client, &compiled.statements(), &request)) {
                panic!("{e}");
            }
            count += 1;
        }
    }
    assert!(count > 40, "only {count} root fields");
}

#[test]
fn accepted_permissions_prepare_in_postgres() {
    let rt = runtime();
    let client = rt.block_on(blog_database());
    let fx = fixture();
    let strategy = choices().prop_map(|bytes| targets::permission_case(fixture(), &bytes));
    report(runner(128).run(&strategy, |case| {
        let Ok(compiled) = targets::check_permission_case(fx, &case) else {
            return Ok(());
        };
        for (request, compiled) in compiled {
            let context = format!("{case:?}  document: {request:?}");
            rt.block_on(prepare_all(&client, &compiled.statements(), &context))?;
        }
        Ok(())
    }));
}

// ---- HTTP ---------------------------------------------------------------------------------

/// A server on the blog fixture serving the fixture's metadata (with the `editor` rules).
async fn server() -> TestServer {
    let s = TestServer::with_fixture(harness::BLOG).await;
    let metadata: Value = serde_json::from_str(targets::METADATA_JSON).unwrap();
    s.ok(json!({"type": "replace_metadata", "args": metadata}))
        .await;
    s
}

fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .unwrap()
}

/// The catalog as stored: its resource version and exported document.
async fn catalog_state(s: &TestServer, db: &tokio_postgres::Client) -> (i32, Value) {
    let version: i32 = db
        .query_one(
            "SELECT resource_version FROM basalt_catalog.metadata WHERE id = 1",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    (version, s.export().await)
}

#[test]
fn metadata_requests_over_http_never_fail_with_5xx_nor_change_the_catalog_when_refused() {
    let rt = runtime();
    let (s, db) = rt.block_on(async {
        let s = server().await;
        let (db, conn) = tokio_postgres::connect(&s.db_url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        (s, db)
    });
    let http = http_client();
    let original: Value = serde_json::from_str(targets::METADATA_JSON).unwrap();
    // Mostly generated bodies; sometimes bytes that are not JSON at all.
    let strategy = choices().prop_map(|bytes| match bytes.first() {
        Some(0xff) => Err(String::from_utf8_lossy(&bytes[1..]).into_owned()),
        _ => Ok(targets::metadata_request(fixture(), &bytes)),
    });
    report(runner(128).run(&strategy, |body| {
        rt.block_on(async {
            let before = catalog_state(&s, &db).await;
            let text = match &body {
                Ok(value) => value.to_string(),
                Err(raw) => raw.clone(),
            };
            let response = http
                .post(format!("{}/v1/query", s.base))
                .header("content-type", "application/json")
                .body(text)
                .send()
                .await
                .map_err(|e| TestCaseError::fail(format!("no response: {e}")))?;
            let status = response.status().as_u16();
            let header = response
                .headers()
                .get("x-basalt-resource-version")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<i32>().ok());
            let answer = response.text().await.unwrap_or_default();
            prop_assert!(status < 500, "{status} {answer}");
            let after = catalog_state(&s, &db).await;
            let dry_run = body
                .as_ref()
                .is_ok_and(|b| b.get("dry_run") == Some(&Value::Bool(true)));
            if status != 200 || dry_run {
                prop_assert_eq!(
                    after.0,
                    before.0,
                    "a refused request or dry run ({}: {}) changed the resource version",
                    status,
                    answer
                );
                prop_assert!(
                    after.1 == before.1,
                    "a refused request or dry run ({status}: {answer}) changed the metadata"
                );
            } else if header.is_some() {
                prop_assert_eq!(header, Some(after.0), "{}", answer);
            }
            // Start the next case from the fixture's metadata.
            if after.0 != before.0 {
                s.ok(json!({"type": "replace_metadata", "args": original}))
                    .await;
            }
            Ok(())
        })
    }));
    // Whatever the requests did, the server still answers.
    rt.block_on(async {
        let (status, _) = s
            .query(json!({"type": "export_metadata", "args": {}}))
            .await;
        assert_eq!(status, 200);
    });
}

/// The codes a GraphQL error may have when Postgres is up and the SQL is right.
fn is_client_error(code: &str) -> bool {
    !matches!(code, "unexpected" | "constraint-error")
}

#[test]
fn graphql_requests_over_http_never_fail_internally() {
    let rt = runtime();
    let s = rt.block_on(server());
    let http = http_client();
    let strategy = (choices(), 0..8u8)
        .prop_map(|(bytes, batch)| (targets::graphql_request(fixture(), &bytes), batch == 0));
    report(
        runner(128).run(&strategy, |(request, batch): (GraphqlRequest, bool)| {
            rt.block_on(async {
                let body = if batch {
                    json!([request.body(), request.body()])
                } else {
                    request.body()
                };
                let mut post = http.post(format!("{}/v1/graphql", s.base)).json(&body);
                for (name, value) in targets::headers(request.session()) {
                    post = post.header(name, value);
                }
                let response = post
                    .send()
                    .await
                    .map_err(|e| TestCaseError::fail(format!("no response: {e}")))?;
                let status = response.status().as_u16();
                let text = response.text().await.unwrap_or_default();
                prop_assert_eq!(status, 200, "{}", text);
                let answer: Value = serde_json::from_str(&text)
                    .map_err(|e| TestCaseError::fail(format!("not JSON ({e}): {text}")))?;
                let answers = match answer {
                    Value::Array(items) => items,
                    one => vec![one],
                };
                for answer in answers {
                    for error in answer["errors"].as_array().into_iter().flatten() {
                        let code = error["extensions"]["code"].as_str().unwrap_or_default();
                        prop_assert!(is_client_error(code), "{}", error);
                    }
                }
                Ok(())
            })
        }),
    );
}

// ---- defects found, kept fixed ------------------------------------------------------------

/// Found by `permission_expressions_never_panic_the_checks`: a string whose sixth byte falls
/// inside a character (`aaaa日`, `x-svcé-id`) made the session-variable test slice it and
/// panic, so any permission with such a value killed the request's task (no response).
#[tokio::test]
async fn permission_values_with_multibyte_characters_are_checked() {
    for value in [
        "aaaa\u{65e5}",
        "x-svc\u{e9}-id",
        "a\u{e9}\u{e9}\u{e9}\u{e9}",
    ] {
        let request = json!({"type": "create_select_permission", "args": {
            "table": "article", "role": "fuzz", "permission": {
                "columns": ["id"], "filter": {"title": {"_nilike": value}}}}});
        assert!(targets::apply_request(fixture(), &request).is_ok());
    }
    let s = server().await;
    s.ok(json!({"type": "create_insert_permission", "args": {
        "table": "article", "role": "fuzz",
        "permission": {"check": {"title": {"_eq": "x-svc\u{e9}"}}, "set": {"tags": "aaaa\u{65e5}"}}}}))
        .await;
}

/// Found by `permission_expressions_never_panic_the_checks`: a role that may insert into
/// `article` but not select it named `article_status_enum` in its insert input without the
/// type, so its introspection schema did not build (`unexpected` on every introspection query).
#[tokio::test]
async fn a_write_only_role_has_the_enum_types_of_its_columns() {
    let s = server().await;
    s.ok(json!({"type": "create_insert_permission", "args": {
        "table": "article", "role": "writer", "permission": {"check": {}, "columns": "*"}}}))
        .await;
    let answer = s
        .gql_role(
            r#"{ __type(name: "article_status_enum") { enumValues { name } } }"#,
            "writer",
            &[],
        )
        .await;
    assert_eq!(
        answer,
        json!({"data": {"__type": {"enumValues": [{"name": "draft"}, {"name": "published"}]}}})
    );
}

/// Found by `accepted_documents_prepare_in_postgres`: a computed field whose function argument
/// has no default, left out of `args`, was called without it, and Postgres found no such
/// function (`constraint-error`). It is now passed as NULL; one with a default is still left
/// to its default.
#[tokio::test]
async fn computed_field_arguments_left_out_are_null_unless_defaulted() {
    let s = server().await;
    let compiled = targets::compile_graphql(
        fixture(),
        &GraphqlRequest {
            session: 0,
            query: "subscription { author_by_pk(id: 1) { search_articles { id } } }".into(),
            variables: Default::default(),
            operation_name: None,
        },
    );
    assert!(matches!(compiled, Ok(Compiled::Live(Some(_)))));
    assert_eq!(
        s.gql("{ author_by_pk(id: 1) { search_articles { id } } }")
            .await,
        json!({"data": {"author_by_pk": {"search_articles": []}}})
    );
    s.ok(json!({"type": "run_sql", "args": {"sql":
        "CREATE FUNCTION author_greeting(a author, greeting text DEFAULT 'hi') RETURNS text
         LANGUAGE sql STABLE AS $$ SELECT greeting || ' ' || a.name $$"}}))
        .await;
    s.ok(json!({"type": "add_computed_field", "args": {
        "table": "author", "name": "greeting",
        "definition": {"function": "author_greeting"}}}))
        .await;
    assert_eq!(
        s.gql(r#"{ author_by_pk(id: 1) { greeting g: greeting(args: {greeting: "yo"}) } }"#)
            .await,
        json!({"data": {"author_by_pk": {"greeting": "hi Ann", "g": "yo Ann"}}})
    );
}

/// Found while writing the fragment generator: fragments that each spread the next one twice
/// expand exponentially (2^30 selections below the nesting limit, from about 1.5 KB), so one request
/// could exhaust the server's memory. Collection is now bounded.
#[test]
fn fragments_that_double_at_each_level_are_refused_quickly() {
    let mut query = String::from("query { ...F0 }\n");
    let levels = 30;
    for i in 0..levels {
        let next = i + 1;
        query.push_str(&format!(
            "fragment F{i} on query_root {{ ...F{next} ...F{next} }}\n"
        ));
    }
    query.push_str(&format!(
        "fragment F{levels} on query_root {{ __typename }}\n"
    ));
    let request = GraphqlRequest {
        session: 0,
        query,
        variables: Default::default(),
        operation_name: None,
    };
    let started = std::time::Instant::now();
    let error = targets::compile_graphql(fixture(), &request).unwrap_err();
    assert!(
        error.to_string().contains("more than 100000 fields"),
        "{error:?}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

/// Found by `accepted_permissions_prepare_in_postgres`: a column comparison between columns
/// Postgres cannot compare (`{"nicknames": {"_ceq": "id"}}`, `text[] = integer`) was accepted,
/// and every statement the rule then applied to failed to prepare. It is refused now; numeric
/// with numeric (the fixture's `views` `$cgte` `id`) and text with text still compare.
#[test]
fn column_comparisons_of_incomparable_types_are_refused() {
    let request = json!({"type": "create_insert_permission", "args": {
        "table": "author", "role": "fuzz",
        "permission": {"check": {"$and": [{}, {"nicknames": {"_ceq": "id"}}]}}}});
    let error = targets::apply_request(fixture(), &request).unwrap_err();
    assert_eq!(error.code.as_str(), "parse-failed", "{error:?}");
    assert_eq!(
        error.path.as_str(),
        "$.args.permission.check['$and'][1].nicknames._ceq"
    );
    let request = json!({"type": "create_select_permission", "args": {
        "table": "author", "role": "fuzz", "permission": {"columns": ["id"],
            "filter": {"rating": {"_cgt": "id"}, "name": {"_cne": "bio"}}}}});
    assert!(targets::apply_request(fixture(), &request).is_ok());
}

/// The fuzzers' seed corpus (`fuzz/corpus/`) runs through the same targets, and every GraphQL
/// seed plans and prepares, so the seeds stay valid as the schema changes.
#[test]
fn fuzz_seed_corpus_runs() {
    let rt = runtime();
    let client = rt.block_on(blog_database());
    let fx = fixture();
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let read = |target: &str| -> Vec<(String, Vec<u8>)> {
        let mut files: Vec<_> = std::fs::read_dir(corpus.join(target))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        files
            .into_iter()
            .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
            .collect()
    };
    for (name, bytes) in read("graphql_document") {
        let request = targets::graphql_from_bytes(fx, &bytes);
        let compiled =
            targets::compile_graphql(fx, &request).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        if let Err(e) = rt.block_on(prepare_all(&client, &compiled.statements(), &request)) {
            panic!("{name}: {e}");
        }
    }
    for (_, bytes) in read("metadata_request") {
        let _ = targets::apply_request(fx, &targets::request_from_bytes(fx, &bytes));
    }
    for (_, bytes) in read("permission_expression") {
        let _ = targets::check_permission_case(fx, &targets::permission_from_bytes(fx, &bytes));
    }
}

/// Found by `accepted_permissions_prepare_in_postgres` (a longer run): a `now()` preset on a
/// column that cannot take a timestamp (`jsonb`) was accepted, and every update of the role
/// then failed to prepare (`column "profile" is of type jsonb but expression is of type
/// timestamp with time zone`). It is refused now; text and time columns still take it.
#[test]
fn now_presets_only_on_columns_that_take_a_timestamp() {
    let preset = |column: &str| {
        json!({"type": "create_update_permission", "args": {
            "table": "author", "role": "fuzz", "permission": {
                "columns": ["name"], "filter": {}, "set": {column: "now()"}}}})
    };
    let error = targets::apply_request(fixture(), &preset("profile")).unwrap_err();
    assert_eq!(
        (error.code.as_str(), error.path.as_str()),
        ("parse-failed", "$.args.permission.set.profile")
    );
    assert!(targets::apply_request(fixture(), &preset("joined")).is_ok());
    assert!(targets::apply_request(fixture(), &preset("bio")).is_ok());
}

/// Found by `graphql_requests_over_http_never_fail_internally`: an upsert naming a column
/// twice in `update_columns` printed `SET "title" = …, "title" = …`, which Postgres refuses
/// (`multiple assignments to same column`). Each column is set once now.
#[tokio::test]
async fn upserts_set_each_update_column_once() {
    let s = server().await;
    let answer = s
        .gql(r#"mutation { insert_article(objects: [{id: 1, title: "again", author_id: 1, status: draft}],
                on_conflict: {constraint: article_pkey, update_columns: [title, title]}) {
                returning { id title } } }"#)
        .await;
    assert_eq!(
        answer,
        json!({"data": {"insert_article": {"returning": [{"id": 1, "title": "again"}]}}})
    );
}

/// Found by `metadata_requests_over_http_never_fail_with_5xx_nor_change_the_catalog_when_refused`
/// (a longer run): an event trigger on a view was accepted, and installing its capture trigger
/// (`AFTER INSERT … FOR EACH ROW`, which Postgres refuses on views) failed the request with a
/// 500. It is refused with `not-supported` now.
#[tokio::test]
async fn event_triggers_on_views_are_refused() {
    let s = server().await;
    s.fails(
        json!({"type": "create_event_trigger", "args": {
            "name": "on_view", "table": "popular_article", "webhook": "http://127.0.0.1:9/hook",
            "insert": {"columns": "*"}}}),
        400,
        "not-supported",
        "$.args.table",
    )
    .await;
}
