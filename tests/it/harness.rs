//! Test infrastructure: one throwaway PostgreSQL cluster per test run (or
//! `BASALT_TEST_DATABASE_URL`), a fresh database per test, and Basalt servers on loopback.

#![allow(dead_code)]

use basalt::app::{self, Running};
use basalt::config::ServeConfig;
use basalt::embedded::{EmbeddedPostgres, StartOptions};
use serde_json::Value;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// The library fixture.
pub const LIBRARY: &str = include_str!("../fixtures/library.sql");

/// The blog fixture (data included) and its metadata.
pub const BLOG: &str = include_str!("../fixtures/blog.sql");
/// Metadata tracking the blog fixture.
pub const BLOG_METADATA: &str = include_str!("../fixtures/blog_metadata.json");

struct Cluster {
    /// URL of a maintenance database on the server.
    admin_url: String,
}

static CLUSTER: OnceLock<Cluster> = OnceLock::new();
static DATABASES: AtomicU32 = AtomicU32::new(0);

fn cluster() -> &'static Cluster {
    CLUSTER.get_or_init(|| {
        if let Ok(url) = std::env::var("BASALT_TEST_DATABASE_URL") {
            return Cluster { admin_url: url };
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let base = std::env::temp_dir().join(format!("basalt-test-{}-{nanos}", std::process::id()));
        let pg = EmbeddedPostgres::start(&base, StartOptions { ephemeral: true })
            .expect("start the test PostgreSQL cluster");
        spawn_watchdog(&pg);
        Cluster {
            admin_url: pg.url("postgres"),
        }
    })
}

/// Statics never drop, so a detached shell waits for this process to exit (however it exits)
/// and then stops the cluster and removes its directory.
fn spawn_watchdog(pg: &EmbeddedPostgres) {
    use std::os::unix::process::CommandExt;
    let script = format!(
        "while kill -0 {pid} 2>/dev/null; do sleep 1; done; \
         kill -QUIT {postmaster} 2>/dev/null; sleep 2; rm -rf '{base}'",
        pid = std::process::id(),
        postmaster = pg.postmaster_pid().expect("postmaster pid"),
        base = pg.base_dir.display(),
    );
    // Deliberately never waited for: it must outlive this process.
    #[allow(clippy::zombie_processes)]
    std::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .expect("spawn the cluster watchdog");
}

fn with_database(url: &str, database: &str) -> String {
    let mut parsed = url::Url::parse(url).expect("database URL");
    parsed.set_path(&format!("/{database}"));
    parsed.to_string()
}

/// Creates an empty database for one test and returns its URL.
pub async fn fresh_database() -> String {
    let cluster = cluster();
    let name = format!(
        "basalt_test_{}_{}",
        std::process::id(),
        DATABASES.fetch_add(1, Ordering::SeqCst)
    );
    let (client, conn) = tokio_postgres::connect(&cluster.admin_url, tokio_postgres::NoTls)
        .await
        .expect("connect to the test cluster");
    tokio::spawn(conn);
    client
        .batch_execute(&format!("CREATE DATABASE \"{name}\" TEMPLATE template0"))
        .await
        .expect("create test database");
    with_database(&cluster.admin_url, &name)
}

/// Runs SQL directly against a database.
pub async fn run_sql(db_url: &str, sql: &str) {
    let (client, conn) = tokio_postgres::connect(db_url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    client.batch_execute(sql).await.expect("fixture SQL");
}

/// A Basalt server on its own database.
pub struct TestServer {
    pub running: Running,
    pub base: String,
    pub db_url: String,
    pub http: reqwest::Client,
    pub admin_secret: Option<String>,
}

impl TestServer {
    /// A server on a fresh database loaded with `fixture`.
    pub async fn with_fixture(fixture: &str) -> Self {
        let db = fresh_database().await;
        run_sql(&db, fixture).await;
        Self::on(&db, |_| {}).await
    }

    /// A server on a fresh database with the library fixture.
    pub async fn library() -> Self {
        Self::with_fixture(LIBRARY).await
    }

    /// A server on `db_url`, configured by `configure`.
    pub async fn on(db_url: &str, configure: impl FnOnce(&mut ServeConfig)) -> Self {
        let mut config = ServeConfig::for_database(db_url);
        configure(&mut config);
        let admin_secret = config.admin_secret.clone();
        let running = app::start(config).await.expect("start basalt");
        TestServer {
            base: format!("http://{}", running.addr),
            running,
            db_url: db_url.to_owned(),
            http: reqwest::Client::new(),
            admin_secret,
        }
    }

    /// POSTs a metadata request with the admin secret (if any); returns status and body.
    pub async fn query(&self, body: Value) -> (u16, Value) {
        let mut request = self
            .http
            .post(format!("{}/v1/query", self.base))
            .json(&body);
        if let Some(secret) = &self.admin_secret {
            request = request.header("X-Svc-Admin-Secret", secret);
        }
        let response = request.send().await.expect("request");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// A request that must succeed; returns the body.
    pub async fn ok(&self, body: Value) -> Value {
        let (status, response) = self.query(body.clone()).await;
        assert_eq!(status, 200, "request {body} failed: {response}");
        response
    }

    /// A request that must fail with `status`, `code` and `path`; returns the body.
    pub async fn fails(&self, body: Value, status: u16, code: &str, path: &str) -> Value {
        let (got, response) = self.query(body.clone()).await;
        assert_eq!(got, status, "request {body}: {response}");
        assert_eq!(response["code"], code, "request {body}: {response}");
        assert_eq!(response["path"], path, "request {body}: {response}");
        response
    }

    /// A server on the blog fixture with its metadata applied.
    pub async fn blog() -> Self {
        let s = Self::with_fixture(BLOG).await;
        let metadata: Value = serde_json::from_str(BLOG_METADATA).expect("blog metadata");
        s.ok(serde_json::json!({"type": "replace_metadata", "args": metadata}))
            .await;
        s
    }

    /// POSTs a GraphQL request with extra headers; returns the response body.
    pub async fn graphql_as(&self, body: Value, headers: &[(&str, &str)]) -> Value {
        let mut request = self
            .http
            .post(format!("{}/v1/graphql", self.base))
            .json(&body);
        if let Some(secret) = &self.admin_secret {
            request = request.header("X-Svc-Admin-Secret", secret);
        }
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let response = request.send().await.expect("request");
        assert_eq!(response.status().as_u16(), 200);
        response.json().await.expect("json body")
    }

    /// Runs a GraphQL query as admin and returns the body.
    pub async fn gql(&self, query: &str) -> Value {
        self.graphql_as(serde_json::json!({"query": query}), &[])
            .await
    }

    /// Runs a query as a role with session variables.
    pub async fn gql_role(&self, query: &str, role: &str, vars: &[(&str, &str)]) -> Value {
        let mut headers = vec![("X-Svc-Role", role)];
        headers.extend_from_slice(vars);
        self.graphql_as(serde_json::json!({"query": query}), &headers)
            .await
    }

    /// Runs SQL against this server's database.
    pub async fn sql(&self, sql: &str) {
        run_sql(&self.db_url, sql).await;
    }

    /// The exported metadata.
    pub async fn export(&self) -> Value {
        self.ok(serde_json::json!({"type": "export_metadata", "args": {}}))
            .await
    }
}

/// A directory under the target directory with the npm `packages` (each `name@version`)
/// installed and `script` (a file of `tests/js/`) copied in; npm runs only when a package is
/// missing or at another version. Callers keep the result in a `OnceLock`.
pub fn npm_workspace(name: &str, packages: &[&str], script: &str) -> std::path::PathBuf {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let installed = packages.iter().all(|spec| {
        let (package, version) = spec.rsplit_once('@').expect("name@version");
        let manifest = dir.join("node_modules").join(package).join("package.json");
        std::fs::read(manifest)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
            .is_some_and(|m| m["version"] == version)
    });
    if !installed {
        std::fs::create_dir_all(&dir).unwrap();
        let status = std::process::Command::new("npm")
            .args(["install", "--silent", "--no-audit", "--no-fund", "--prefix"])
            .arg(&dir)
            .args(packages)
            .status()
            .expect("npm must be installed (Node.js 20) for the tests that use JavaScript clients");
        assert!(status.success(), "npm install {packages:?} failed");
    }
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/js")
        .join(script);
    std::fs::copy(source, dir.join(script)).unwrap();
    dir
}

/// A Python virtual environment in the target directory with `packages` (`name==version`)
/// installed from PyPI once per machine; answers its interpreter.
pub fn python_venv(name: &str, packages: &[&str]) -> std::path::PathBuf {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let python = dir.join("bin/python");
    let stamp = dir.join("installed.txt");
    let wanted = packages.join("\n");
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(wanted.as_str()) {
        let made = std::process::Command::new("python3")
            .args(["-m", "venv"])
            .arg(&dir)
            .status()
            .expect("python3 (with venv) must be installed for the tests that use Python tools");
        assert!(made.success(), "python3 -m venv {dir:?} failed");
        let installed = std::process::Command::new(dir.join("bin/pip"))
            .args(["install", "-q"])
            .args(packages)
            .status()
            .expect("pip");
        assert!(installed.success(), "pip install {packages:?} failed");
        std::fs::write(&stamp, wanted).unwrap();
    }
    python
}

/// Runs `script` of the npm workspace `dir` with `args` (from `dir`, so its `node_modules`
/// resolve) and returns the JSON it printed; a failing script fails the test with its stderr.
pub async fn node_json(dir: &std::path::Path, script: &str, args: &[&std::ffi::OsStr]) -> Value {
    let output = tokio::process::Command::new("node")
        .arg(dir.join(script))
        .args(args)
        .current_dir(dir)
        .output()
        .await
        .expect("node must be installed (Node.js 20)");
    assert!(
        output.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the script prints JSON")
}

/// Rows of `sql` (a query) as a JSON array of objects.
pub async fn query_json(db_url: &str, sql: &str) -> Value {
    let (client, conn) = tokio_postgres::connect(db_url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    client
        .query_one(
            &format!("SELECT coalesce(json_agg(t), '[]'::json) FROM ({sql}) AS t"),
            &[],
        )
        .await
        .expect("query")
        .get(0)
}

/// A `basalt serve` process (the real binary) on loopback.
pub struct Spawned {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// The process; killed when dropped.
    pub child: tokio::process::Child,
}

/// Starts `basalt serve` on `db_url` with the admin secret `secret` and the extra
/// environment `env`, and waits until `/readyz` answers 200.
pub async fn spawn_serve(db_url: &str, secret: &str, env: &[(&str, &str)]) -> Spawned {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_basalt"));
    command
        .arg("serve")
        .env("BASALT_HOST", "127.0.0.1")
        .env("BASALT_PORT", port.to_string())
        .env("BASALT_DATABASE_URL", db_url)
        .env("BASALT_ADMIN_SECRET", secret)
        .env("RUST_LOG", "warn")
        .kill_on_drop(true);
    for (k, v) in env {
        command.env(k, v);
    }
    let child = command.spawn().expect("spawn basalt serve");
    let base = format!("http://127.0.0.1:{port}");
    wait_ready(&base).await;
    Spawned { base, child }
}

/// Waits (up to 30 s) until a spawned server at `base` answers `/readyz` with 200.
pub async fn wait_ready(base: &str) {
    let http = reqwest::Client::new();
    for _ in 0..300 {
        if let Ok(r) = http.get(format!("{base}/readyz")).send().await {
            if r.status() == 200 {
                return;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("basalt serve did not become ready at {base}");
}

/// A metadata request to a spawned server; panics unless it answers 200.
pub async fn spawned_query(s: &Spawned, secret: &str, body: Value) -> Value {
    let r = reqwest::Client::new()
        .post(format!("{}/v1/query", s.base))
        .header("X-Svc-Admin-Secret", secret)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status();
    let body: Value = r.json().await.unwrap();
    assert_eq!(status, 200, "{body}");
    body
}
