//! Failover between two real `basalt controller` processes on one catalog, against the HTTP
//! fake API server (`crates/fake-kube`), each process with its own bearer token so every API
//! call says who made it: the standby watches from the start (a warm cache) and never writes,
//! and after the leader's SIGKILL it takes the leader lock and gets a new resource Ready within
//! 15 s.

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
    let kubeconfig = dir.join(format!("{token}.kubeconfig"));
    std::fs::write(&kubeconfig, fake.kubeconfig(token)).unwrap();
    let log = std::fs::File::create(dir.join(format!("{token}.log"))).unwrap();
    tokio::process::Command::new(env!("CARGO_BIN_EXE_basalt"))
        .arg("controller")
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
        .kill_on_drop(true)
        .spawn()
        .expect("spawn basalt controller")
}

/// Both processes' logs, for failure messages.
fn logs(dir: &Path) -> String {
    ["replica-a", "replica-b"]
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
