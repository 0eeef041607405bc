//! Failover between two real `basalt controller` processes on one catalog, against the HTTP
//! fake API server (`crates/fake-kube`), each process with its own bearer token so every API
//! call says who made it: the standby watches from the start (a warm cache) and never writes,
//! and after the leader's SIGKILL it takes the leader lock and gets a new resource Ready within
//! 15 s. And `serve --controller` drains on SIGTERM: it exits in time, releases the leader
//! lock, and leaves nothing half-written.

use crate::harness::{fresh_database, run_sql};
use fake_kube::{Call, FakeKube};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// The bound the test asserts between the leader's death and the next resource being Ready.
const TAKEOVER: Duration = Duration::from_secs(15);

fn table(name: &str) -> Value {
    json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "TrackedTable",
        "metadata": {"name": name.replace('_', "-"), "namespace": "default"},
        "spec": {"table": {"name": name}}})
}

fn is_ready(fake: &FakeKube, manifest: &Value) -> bool {
    fake.get(manifest)
        .and_then(|o| o.pointer("/status/conditions").cloned())
        .and_then(|c| c.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `basalt controller` against `fake` as `token`; its log goes to `<dir>/<token>.log`.
fn spawn_controller(fake: &FakeKube, db: &str, token: &str, dir: &Path) -> tokio::process::Child {
    controller_command(fake, db, token, dir, &["controller"])
        .spawn()
        .expect("spawn basalt controller")
}

/// `basalt <args>` with the controller's settings for `fake` as `token`, logging to
/// `<dir>/<token>.log`.
fn controller_command(
    fake: &FakeKube,
    db: &str,
    token: &str,
    dir: &Path,
    args: &[&str],
) -> tokio::process::Command {
    let kubeconfig = dir.join(format!("{token}.kubeconfig"));
    std::fs::write(&kubeconfig, fake.kubeconfig(token)).unwrap();
    let log = std::fs::File::create(dir.join(format!("{token}.log"))).unwrap();
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_basalt"));
    command
        .args(args)
        .env("KUBECONFIG", &kubeconfig)
        .env("BASALT_DATABASE_URL", db)
        .env("BASALT_CONTROLLER_PROBE_PORT", free_port().to_string())
        .env("BASALT_LEADER_RETRY_MS", "200")
        .env("BASALT_WATCH_NAMESPACES", "default")
        .env("BASALT_LOG_FORMAT", "pretty")
        .env("RUST_LOG", "info")
        .env_remove("POD_NAMESPACE")
        .env_remove("POD_NAME")
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .kill_on_drop(true);
    command
}

/// Both processes' logs, for failure messages.
fn logs(dir: &Path) -> String {
    logs_of(dir, &["replica-a", "replica-b"])
}

/// The last lines of each of `tokens`' logs.
fn logs_of(dir: &Path, tokens: &[&str]) -> String {
    tokens
        .iter()
        .map(|t| {
            let text = std::fs::read_to_string(dir.join(format!("{t}.log"))).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(40).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            format!("--- {t} ---\n{}", tail.join("\n"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Polls `check` every 100 ms until `deadline`; whether it held.
async fn eventually(deadline: Instant, mut check: impl FnMut() -> bool) -> bool {
    loop {
        if check() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn watches_tables(calls: &[Call], token: &str) -> bool {
    calls.iter().any(|c| {
        c.token.as_deref() == Some(token) && c.is_watch() && c.path().ends_with("/trackedtables")
    })
}

#[tokio::test]
async fn the_warm_standby_takes_over_within_15_seconds_of_the_leaders_sigkill() {
    let db = fresh_database().await;
    run_sql(
        &db,
        "CREATE TABLE first_table (id int PRIMARY KEY); CREATE TABLE second_table (id int PRIMARY KEY);",
    )
    .await;
    let fake = FakeKube::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let tokens = ["replica-a", "replica-b"];
    let mut replicas = tokens.map(|t| spawn_controller(&fake, &db, t, dir.path()));
    let generous = || Instant::now() + Duration::from_secs(60);
    assert!(
        eventually(generous(), || {
            let calls = fake.calls();
            tokens.iter().all(|t| watches_tables(&calls, t))
        })
        .await,
        "both replicas watch from the start\n{}",
        logs(dir.path())
    );

    let first = table("first_table");
    fake.apply(&first).unwrap();
    assert!(
        eventually(generous(), || is_ready(&fake, &first)).await,
        "the leader gets the first table Ready: {:#?}\n{}",
        fake.get(&first),
        logs(dir.path())
    );
    let writers: Vec<usize> = (0..2)
        .filter(|i| !fake.writes_by(tokens[*i]).is_empty())
        .collect();
    assert_eq!(
        writers.len(),
        1,
        "exactly one replica writes\n{}",
        logs(dir.path())
    );
    let (leader, standby) = (writers[0], 1 - writers[0]);

    replicas[leader].start_kill().unwrap();
    let killed = Instant::now();
    replicas[leader].wait().await.unwrap();
    let before_kill = fake.calls();
    assert!(
        !before_kill
            .iter()
            .any(|c| c.is_write() && c.token.as_deref() == Some(tokens[standby])),
        "the standby made no write while the leader lived: {:#?}",
        fake.writes_by(tokens[standby])
    );
    assert!(
        watches_tables(&before_kill, tokens[standby]),
        "the standby's cache was warm before the kill"
    );

    let second = table("second_table");
    fake.apply(&second).unwrap();
    let took_over = eventually(killed + TAKEOVER, || is_ready(&fake, &second)).await;
    assert!(
        took_over,
        "the standby gets the second table Ready within {TAKEOVER:?} of the kill: {:#?}\n{}",
        fake.get(&second),
        logs(dir.path())
    );
    let standby_writes = fake.writes_by(tokens[standby]);
    assert!(
        standby_writes.iter().any(
            |c| c.method == "PATCH" && c.path().ends_with("/trackedtables/second-table/status")
        ),
        "the second table's status came from the standby: {standby_writes:#?}"
    );
    let calls = fake.calls();
    assert!(
        calls[before_kill.len()..]
            .iter()
            .all(|c| c.token.as_deref() != Some(tokens[leader])),
        "the killed leader makes no call"
    );
    for replica in &mut replicas {
        let _ = replica.start_kill();
    }
}

/// `serve --controller` stopped by SIGTERM while it is applying resources: it stops taking
/// work, lets the reconciles in flight finish and exits with success well within the drain
/// bound; Postgres has its leader lock back at once (a successor need not wait for keepalives
/// to notice a dead session); every resource it reported Ready is in the catalog; and the
/// successor finishes the rest.
#[tokio::test]
async fn serve_with_the_controller_drains_on_sigterm_and_hands_over_at_once() {
    const TABLES: usize = 40;
    let db = fresh_database().await;
    let ddl: String = (0..TABLES)
        .map(|i| format!("CREATE TABLE drained_{i} (id int PRIMARY KEY);"))
        .collect();
    run_sql(&db, &ddl).await;
    let fake = FakeKube::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut serve = controller_command(&fake, &db, "serve", dir.path(), &["serve", "--controller"])
        .env("BASALT_HOST", "127.0.0.1")
        .env("BASALT_PORT", port.to_string())
        .env("BASALT_DATABASE_URL", &db)
        .spawn()
        .expect("spawn basalt serve --controller");
    crate::harness::wait_ready(&format!("http://127.0.0.1:{port}")).await;
    let generous = || Instant::now() + Duration::from_secs(60);
    assert!(
        eventually(generous(), || watches_tables(&fake.calls(), "serve")).await,
        "the controller watches\n{}",
        logs_of(dir.path(), &["serve"])
    );
    let tables: Vec<Value> = (0..TABLES)
        .map(|i| table(&format!("drained_{i}")))
        .collect();
    for manifest in &tables {
        fake.apply(manifest).unwrap();
    }
    // Stopped mid-way: some resources are Ready, the rest queued or in flight.
    assert!(
        eventually(generous(), || tables.iter().any(|t| is_ready(&fake, t))).await,
        "a first resource is Ready\n{}",
        logs_of(dir.path(), &["serve"])
    );
    let pid = serve.id().unwrap().to_string();
    let signalled = Instant::now();
    assert!(std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let status = tokio::time::timeout(Duration::from_secs(30), serve.wait())
        .await
        .expect("exits within the drain bound")
        .unwrap();
    let drained_in = signalled.elapsed();
    let log = logs_of(dir.path(), &["serve"]);
    assert!(status.success(), "exit {status:?}\n{log}");
    assert!(
        drained_in < Duration::from_secs(20),
        "{drained_in:?}\n{log}"
    );
    let full_log = std::fs::read_to_string(dir.path().join("serve.log")).unwrap();
    assert!(
        !full_log.contains("did not drain in time"),
        "the reconciles in flight finished\n{log}"
    );

    // The lock session was closed, not abandoned: it is free now.
    let (client, connection) = tokio_postgres::connect(&db, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let free: bool = client
        .query_one(
            "SELECT pg_try_advisory_lock($1)",
            &[&basalt::controller::leader::LEADER_LOCK],
        )
        .await
        .unwrap()
        .get(0);
    assert!(free, "the leader lock is released at exit");
    client
        .execute(
            "SELECT pg_advisory_unlock($1)",
            &[&basalt::controller::leader::LEADER_LOCK],
        )
        .await
        .unwrap();

    // Nothing half-done: what was reported Ready is tracked.
    let document: String = client
        .query_one(
            "SELECT metadata::text FROM basalt_catalog.metadata WHERE id = 1",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let document: Value = serde_json::from_str(&document).unwrap();
    let tracked: Vec<&str> = document["tables"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["table"]["name"].as_str())
        .collect();
    let ready: Vec<usize> = (0..TABLES)
        .filter(|i| is_ready(&fake, &tables[*i]))
        .collect();
    for i in &ready {
        assert!(
            tracked.contains(&format!("drained_{i}").as_str()),
            "drained_{i} is Ready but not tracked: {tracked:?}"
        );
    }

    // A successor takes over at once and finishes the rest.
    let mut successor = spawn_controller(&fake, &db, "successor", dir.path());
    assert!(
        eventually(generous(), || tables.iter().all(|t| is_ready(&fake, t))).await,
        "the successor gets every resource Ready ({} were before the signal)\n{}",
        ready.len(),
        logs_of(dir.path(), &["serve", "successor"])
    );
    let _ = successor.start_kill();
}
