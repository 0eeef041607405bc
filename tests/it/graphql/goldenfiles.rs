//! Translation goldenfiles: SQL from a description of the database, without one.
//!
//! Each case is a folder under `tests/goldenfiles/` holding `request.graphql`, and optionally
//! `variables.json` and `session.json` (`{"x-svc-role": "user", "x-svc-user-id": "1"}`; admin
//! when absent). `db.json` (a database model, `DbModel::to_json`) and `metadata.json` are taken
//! from the case folder or its nearest parent that has them, so a set of cases shares one
//! database. The case is resolved, planned and translated in memory and the result (SQL
//! pretty-printed with its parameters; for a mutation, every step of its program) is compared
//! with `expected.snap` in the folder (`cargo insta review` to accept a change). A query case
//! in a folder named `shared` is compiled to the statement concurrent requests share
//! (`translate::shared_query`), as a subscription is to its live query.
//!
//! Adding a case is adding a folder. The other tests here keep the set honest: `db.json` must
//! be what introspecting the blog fixture gives, and every case must run on that database in
//! real Postgres.

use super::sql_snapshots::{pretty, program_text};
use crate::harness::TestServer;
use basalt::db_model::DbModel;
use basalt::graphql::{model, plan, typegen};
use basalt::metadata::Metadata;
use basalt::sql::program::{FieldProgram, MutationProgram};
use basalt::sql::SqlText;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/goldenfiles");

/// Every case folder, sorted.
fn cases() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                if path.join("request.graphql").exists() {
                    out.push(path.clone());
                }
                walk(&path, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(Path::new(ROOT), &mut out);
    out
}

/// `name` in `dir` or its nearest parent inside the goldenfiles folder.
fn find_up(dir: &Path, name: &str) -> PathBuf {
    let mut current = Some(dir);
    while let Some(d) = current {
        if d.join(name).exists() {
            return d.join(name);
        }
        if d == Path::new(ROOT) {
            break;
        }
        current = d.parent();
    }
    panic!("no {name} for the case {}", dir.display());
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One case, loaded.
struct Case {
    name: String,
    db: DbModel,
    metadata: Metadata,
    query: String,
    variables: Map<String, Value>,
    session: BTreeMap<String, String>,
}

impl Case {
    fn load(dir: &Path) -> Self {
        let optional = |file: &str| {
            let path = dir.join(file);
            path.exists().then(|| read_json(&path))
        };
        let session = optional("session.json")
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| {
                (
                    k.to_ascii_lowercase(),
                    v.as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        Case {
            name: dir.strip_prefix(ROOT).unwrap().display().to_string(),
            db: DbModel::from_json(read_json(&find_up(dir, "db.json"))).unwrap(),
            metadata: serde_json::from_value(read_json(&find_up(dir, "metadata.json"))).unwrap(),
            query: std::fs::read_to_string(dir.join("request.graphql")).unwrap(),
            variables: optional("variables.json")
                .and_then(|v| v.as_object().cloned())
                .unwrap_or_default(),
            session,
        }
    }

    fn role(&self) -> &str {
        self.session
            .get("x-svc-role")
            .map(String::as_str)
            .unwrap_or("admin")
    }
}

/// What a case translates to.
enum Compiled {
    Query(SqlText),
    Mutation(MutationProgram),
    /// A subscription: its multiplexed live-query statement.
    Live(basalt::sql::print::MultiplexedSql),
}

fn compile(case: &Case) -> Compiled {
    let cache = basalt::resolve::resolve(&case.metadata, &case.db);
    assert!(
        cache.inconsistencies.is_empty(),
        "{}: {:?}",
        case.name,
        cache.inconsistencies
    );
    let backend = case
        .session
        .get("x-svc-use-backend-only-permissions")
        .is_some_and(|v| v == "true");
    let model = model::build_for(&cache.resolved, case.role(), backend, &Default::default());
    let types = typegen::build(&model);
    let prepared = plan::prepare(&case.query, None).unwrap();
    let limits = plan::Limits {
        max_depth: 64,
        max_root_fields: 100,
    };
    let planned = plan::plan(
        &model,
        &types,
        &cache.resolved,
        &prepared,
        &case.variables,
        limits,
    )
    .unwrap_or_else(|e| panic!("{}: {e:?}", case.name));
    match &planned.mutation {
        Some(mutation) => Compiled::Mutation(basalt::translate::mutation(mutation)),
        None if planned.subscription => {
            Compiled::Live(basalt::translate::live_query(&planned.data))
        }
        None if case.name.split('/').any(|part| part == "shared") => {
            Compiled::Live(basalt::translate::shared_query(&planned.data))
        }
        None => Compiled::Query(basalt::translate::query(&planned.data)),
    }
}

fn text(compiled: &Compiled) -> String {
    match compiled {
        Compiled::Query(sql) => {
            let (sql, params) = pretty(sql);
            format!("{sql}\n\n-- params\n{params}")
        }
        Compiled::Mutation(program) => program_text(program),
        Compiled::Live(live) => {
            let (sql, params) = pretty(&basalt::sql::SqlText {
                sql: live.sql.clone(),
                params: live.params.clone(),
            });
            format!("{sql}\n\n-- each cohort's column pN (in $N+1, a text[])\n{params}")
        }
    }
}

#[test]
fn translation_goldenfiles() {
    let cases = cases();
    assert!(cases.len() >= 20, "only {} cases", cases.len());
    for dir in cases {
        let case = Case::load(&dir);
        let output = text(&compile(&case));
        insta::with_settings!({
            snapshot_path => dir.clone(),
            prepend_module_to_snapshot => false,
            description => case.query.trim().to_owned(),
            omit_expression => true,
        }, {
            insta::assert_snapshot!("expected", output);
        });
    }
}

/// `db.json` without what varies from one database to the next (OIDs).
fn stable(mut model: Value) -> Value {
    for list in ["tables", "functions"] {
        for item in model[list].as_array_mut().into_iter().flatten() {
            if let Some(object) = item.as_object_mut() {
                object.remove("oid");
                object.remove("parents");
                if let Some(reads) = object.get_mut("reads").and_then(Value::as_object_mut) {
                    reads.remove("relations");
                }
            }
        }
    }
    if let Some(object) = model.as_object_mut() {
        object.remove("live");
    }
    model
}

#[tokio::test]
async fn goldenfile_database_is_the_blog_fixture() {
    let s = TestServer::blog().await;
    let blog = Path::new(ROOT).join("blog");
    assert_eq!(
        read_json(&blog.join("metadata.json")),
        serde_json::from_str::<Value>(crate::harness::BLOG_METADATA).unwrap(),
        "goldenfiles/blog/metadata.json is the blog fixture's metadata"
    );
    let (client, conn) = tokio_postgres::connect(&s.db_url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let metadata: Metadata = serde_json::from_str(crate::harness::BLOG_METADATA).unwrap();
    let model = basalt::catalog::database::read_model(&client, &metadata.enum_tables())
        .await
        .unwrap();
    let fresh = stable(model.to_json());
    let path = blog.join("db.json");
    if std::env::var("BASALT_UPDATE_GOLDENFILES").is_ok_and(|v| v == "1") {
        let text = serde_json::to_string_pretty(&fresh).unwrap();
        std::fs::write(&path, text + "\n").unwrap();
    }
    assert_eq!(
        read_json(&path),
        fresh,
        "goldenfiles/blog/db.json is stale: run BASALT_UPDATE_GOLDENFILES=1 cargo test goldenfile_database"
    );
}

#[tokio::test]
async fn goldenfile_sql_runs_on_postgres() {
    let s = TestServer::blog().await;
    let (pool, _) = basalt::pool::pool_for(&s.db_url, 1).unwrap();
    let counters = basalt::stats::Counters::default();
    for dir in cases() {
        let case = Case::load(&dir);
        let binding = basalt::execute::Binding {
            variables: &case.variables,
            session: &case.session,
            provided: None,
        };
        let mut client = pool.get().await.unwrap();
        match compile(&case) {
            Compiled::Query(sql) => {
                let conn = basalt::execute::Connection::of(&client, &counters);
                let bytes = basalt::execute::run(conn, &sql, &binding)
                    .await
                    .unwrap_or_else(|e| panic!("{}: {e:?}", case.name));
                let data: Value = serde_json::from_slice(&bytes).unwrap();
                assert!(data.is_object(), "{}: {data}", case.name);
            }
            Compiled::Live(live) => {
                // Two cohorts with the same values: two rows, the same answer.
                let values = basalt::execute::bind(&live.params, &binding, None).unwrap();
                let conn = basalt::execute::Connection::of(&client, &counters);
                let mut rows = basalt::execute::run_multiplexed(
                    conn,
                    &live,
                    &[values.as_slice(), values.as_slice()],
                )
                .await
                .unwrap_or_else(|e| panic!("{}: {e:?}", case.name));
                rows.sort_by_key(|(i, _)| *i);
                assert_eq!(rows.len(), 2, "{}", case.name);
                assert_eq!((rows[0].0, rows[1].0), (0, 1));
                let data: Value = serde_json::from_slice(&rows[0].1).unwrap();
                assert!(data.is_object(), "{}: {data}", case.name);
                assert_eq!(rows[0].1, rows[1].1);
            }
            Compiled::Mutation(program) => {
                // Written and rolled back: every case sees the fixture as it is.
                let tx = client.transaction().await.unwrap();
                let conn = basalt::execute::Connection::of_transaction(&tx, &counters);
                basalt::execute::statement(conn, &program.session, &binding)
                    .await
                    .unwrap();
                let mut answers = Vec::new();
                for (key, field) in &program.fields {
                    let FieldProgram::Write(write) = field else {
                        continue;
                    };
                    let bytes = basalt::execute::run_program(conn, write, &binding)
                        .await
                        .unwrap_or_else(|e| panic!("{} {key}: {e:?}", case.name));
                    answers.push(serde_json::from_slice::<Value>(&bytes).unwrap());
                }
                drop(tx);
                // The one-statement form answers exactly what the program does.
                if let Some(single) = &program.single {
                    let tx = client.transaction().await.unwrap();
                    let conn = basalt::execute::Connection::of_transaction(&tx, &counters);
                    let bytes = basalt::execute::run(conn, single, &binding)
                        .await
                        .unwrap_or_else(|e| panic!("{} as one statement: {e:?}", case.name));
                    let answer: Value = serde_json::from_slice(&bytes).unwrap();
                    assert_eq!(answers, [answer], "{}", case.name);
                }
            }
        }
    }
}
