//! The controller scenarios on a real Kubernetes cluster (kind, k3d, any): run with
//! `BASALT_E2E_KUBECONFIG=~/.kube/config cargo test e2e_cluster -- --ignored`. They install
//! the CRDs, work in a fresh namespace, run the controller in-process against a throwaway
//! database and clean up. Not run here: this machine has no cluster.

use crate::harness::{TestServer, BLOG};
use basalt::controller::kinds::*;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::ResourceExt;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

async fn cluster() -> Option<kube::Client> {
    let path = std::env::var("BASALT_E2E_KUBECONFIG").ok()?;
    let kubeconfig = Kubeconfig::read_from(path).expect("readable kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("usable kubeconfig");
    Some(kube::Client::try_from(config).expect("client"))
}

async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..120 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("timed out waiting for: {what}");
}

#[tokio::test]
#[ignore = "needs a real cluster: set BASALT_E2E_KUBECONFIG"]
async fn e2e_cluster_apply_drift_self_heal_and_delete() {
    let Some(client) = cluster().await else {
        eprintln!("BASALT_E2E_KUBECONFIG is not set; skipping");
        return;
    };
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client.clone());
    for crd in basalt::controller::crds() {
        crds.patch(
            &crd.name_any(),
            &PatchParams::apply("basalt-e2e").force(),
            &Patch::Apply(&crd),
        )
        .await
        .expect("install CRD");
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let ns = format!("basalt-e2e-{}", std::process::id());
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap(),
        )
        .await
        .expect("namespace");

    let db = crate::harness::fresh_database().await;
    crate::harness::run_sql(&db, BLOG).await;
    let server = TestServer::on(&db, |_| {}).await;
    let (pool, _) = basalt::pool::pool_for(&db, 4).unwrap();
    let settings = basalt::config::ControllerConfig {
        watch_namespaces: vec![ns.clone()],
        leader_retry_ms: 100,
        ..Default::default()
    };
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(basalt::controller::run::run_with(
        client.clone(),
        pool,
        db.parse().unwrap(),
        settings,
        Arc::new(Default::default()),
        Default::default(),
        stopped,
    ));

    let tables: Api<TrackedTable> = Api::namespaced(client.clone(), &ns);
    let perms: Api<Permission> = Api::namespaced(client.clone(), &ns);
    let table: TrackedTable = serde_json::from_value(
        json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "TrackedTable",
        "metadata": {"name": "article"}, "spec": {"table": {"name": "article"}}}),
    )
    .unwrap();
    let perm: Permission = serde_json::from_value(json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "Permission",
        "metadata": {"name": "article-user-select"}, "spec": {"table": {"name": "article"}, "role": "user",
        "operation": "select", "permission": {"columns": "*", "filter": {}}}})).unwrap();
    tables
        .create(&PostParams::default(), &table)
        .await
        .expect("create table");
    perms
        .create(&PostParams::default(), &perm)
        .await
        .expect("create permission");

    let has_permission = |export: Value| export["tables"][0].get("select_permissions").is_some();
    eventually("resources applied", || async {
        has_permission(server.export().await)
    })
    .await;

    server
        .ok(json!({"type": "drop_select_permission", "args": {"table": "article", "role": "user"}}))
        .await;
    eventually("Drifted=True on the Permission", || async {
        let p = perms.get("article-user-select").await.unwrap();
        p.status.is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == "Drifted" && c.status == "True")
        })
    })
    .await;

    perms
        .patch(
            "article-user-select",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"basalt.dev/self-heal": "true"}}})),
        )
        .await
        .unwrap();
    eventually("self-heal", || async {
        has_permission(server.export().await)
    })
    .await;

    perms
        .delete("article-user-select", &DeleteParams::default())
        .await
        .unwrap();
    tables
        .delete("article", &DeleteParams::default())
        .await
        .unwrap();
    eventually("catalog emptied", || async {
        server.export().await["tables"] == json!([])
    })
    .await;
    let _ = stop.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(10), task).await;
    let _ = namespaces.delete(&ns, &DeleteParams::default()).await;
}
