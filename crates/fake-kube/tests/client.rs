//! The fake against a real `kube::Client` configured from its kubeconfig: lists (selectors,
//! pages, metadata only), watches (replayed and live, through kube's watcher and reflector, and
//! streaming lists), the finalizer flow, server-side apply of objects and status, Events from
//! kube's `Recorder`, the recorded calls and the `/_fake/` control API.

use fake_kube::FakeKube;
use futures_util::StreamExt;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
    PostParams, WatchEvent, WatchParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::{reflector, watcher, WatchStreamExt};
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::{json, Value};
use std::time::Duration;

const TOKEN: &str = "test-token";

async fn client(fake: &FakeKube, token: &str) -> Client {
    let kubeconfig = Kubeconfig::from_yaml(&fake.kubeconfig(token)).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    Client::try_from(config).unwrap()
}

fn tables_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("basalt.dev", "v1alpha1", "TrackedTable"),
        "trackedtables",
    )
}

fn tables(client: &Client) -> Api<DynamicObject> {
    Api::default_namespaced_with(client.clone(), &tables_resource())
}

fn table(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "TrackedTable",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"table": {"name": name}}})
}

fn names(objects: &[DynamicObject]) -> Vec<String> {
    objects.iter().map(ResourceExt::name_any).collect()
}

/// Polls `check` every 20 ms for up to 5 s.
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..250 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test]
async fn lists_honour_selectors_pages_and_metadata_only() {
    let fake = FakeKube::start().await.unwrap();
    for (name, env) in [("a", "prod"), ("b", "dev"), ("c", "prod"), ("d", "prod")] {
        fake.apply(&table(name, json!({"env": env}))).unwrap();
    }
    let mut other = table("elsewhere", json!({"env": "prod"}));
    other["metadata"]["namespace"] = json!("other");
    fake.apply(&other).unwrap();
    let api = tables(&client(&fake, TOKEN).await);

    let all = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(names(&all.items), ["a", "b", "c", "d"], "one namespace");
    assert_eq!(all.metadata.resource_version.as_deref(), Some("5"));
    let dev = api
        .list(&ListParams::default().labels("env!=prod"))
        .await
        .unwrap();
    assert_eq!(names(&dev.items), ["b"]);
    let labelled = api
        .list(&ListParams::default().labels("env"))
        .await
        .unwrap();
    assert_eq!(labelled.items.len(), 4);

    let first = api
        .list(&ListParams::default().labels("env=prod").limit(2))
        .await
        .unwrap();
    assert_eq!(names(&first.items), ["a", "c"]);
    let token = first.metadata.continue_.clone().expect("a next page");
    let second = api
        .list(
            &ListParams::default()
                .labels("env=prod")
                .limit(2)
                .continue_token(&token),
        )
        .await
        .unwrap();
    assert_eq!(names(&second.items), ["d"]);
    assert!(second.metadata.continue_.is_none());

    let everywhere: Api<DynamicObject> =
        Api::all_with(client(&fake, TOKEN).await, &tables_resource());
    let everywhere = everywhere.list(&ListParams::default()).await.unwrap();
    assert_eq!(everywhere.items.len(), 5, "all namespaces");

    let metadata = api.list_metadata(&ListParams::default()).await.unwrap();
    assert_eq!(
        metadata
            .items
            .iter()
            .map(|m| m.metadata.name.clone().unwrap())
            .collect::<Vec<_>>(),
        ["a", "b", "c", "d"]
    );
    assert!(metadata.items[0].metadata.uid.is_some());
}

async fn next(
    events: &mut futures_util::stream::BoxStream<'_, kube::Result<WatchEvent<DynamicObject>>>,
) -> WatchEvent<DynamicObject> {
    tokio::time::timeout(Duration::from_secs(5), events.next())
        .await
        .expect("an event")
        .expect("the watch is open")
        .unwrap()
}

#[tokio::test]
async fn a_watch_replays_from_its_version_and_sees_updates_and_deletions() {
    let fake = FakeKube::start().await.unwrap();
    let api = tables(&client(&fake, TOKEN).await);
    fake.apply(&table("a", json!({}))).unwrap();
    let listed = api.list(&ListParams::default()).await.unwrap();
    let version = listed.metadata.resource_version.unwrap();
    // Made after the list: the watch must replay it.
    fake.apply(&table("b", json!({}))).unwrap();
    let mut events = api
        .watch(&WatchParams::default().timeout(10), &version)
        .await
        .unwrap()
        .boxed();
    let WatchEvent::Added(added) = next(&mut events).await else {
        panic!("ADDED first")
    };
    assert_eq!(added.name_any(), "b");
    let mut changed = table("a", json!({}));
    changed["spec"]["table"]["schema"] = json!("public");
    fake.apply(&changed).unwrap();
    let WatchEvent::Modified(modified) = next(&mut events).await else {
        panic!("then MODIFIED")
    };
    assert_eq!(modified.name_any(), "a");
    assert_eq!(modified.metadata.generation, Some(2), "the spec changed");
    fake.delete(&table("b", json!({}))).unwrap();
    let WatchEvent::Deleted(deleted) = next(&mut events).await else {
        panic!("then DELETED")
    };
    assert_eq!(deleted.name_any(), "b");
    assert!(fake.get(&table("b", json!({}))).is_none());
}

#[tokio::test]
async fn kube_watchers_fill_their_stores_with_lists_or_streaming_lists() {
    let fake = FakeKube::start().await.unwrap();
    fake.apply(&table("a", json!({"app": "x"}))).unwrap();
    fake.apply(&table("b", json!({"app": "y"}))).unwrap();
    let client = client(&fake, TOKEN).await;
    for config in [
        watcher::Config::default().labels("app=x"),
        watcher::Config::default().labels("app=x").streaming_lists(),
    ] {
        let writer = reflector::store::Writer::new(tables_resource());
        let reader = writer.as_reader();
        let stream = watcher(tables(&client), config)
            .reflect(writer)
            .applied_objects()
            .boxed();
        let task = tokio::spawn(stream.for_each(|_| async {}));
        tokio::time::timeout(Duration::from_secs(5), reader.wait_until_ready())
            .await
            .expect("the store syncs")
            .unwrap();
        assert_eq!(
            names(
                &reader
                    .state()
                    .iter()
                    .map(|o| (**o).clone())
                    .collect::<Vec<_>>()
            ),
            ["a"]
        );
        let mut updated = table("a", json!({"app": "x"}));
        updated["spec"]["configuration"] = json!({"comment": "watched"});
        fake.apply(&updated).unwrap();
        fake.apply(&table("c", json!({"app": "x"}))).unwrap();
        eventually("the update and the new object in the store", || {
            let state = reader.state();
            state.len() == 2
                && state.iter().any(|o| {
                    o.name_any() == "a" && o.data["spec"]["configuration"]["comment"] == "watched"
                })
        })
        .await;
        task.abort();
        fake.delete(&table("c", json!({}))).unwrap();
    }
    let watches: Vec<_> = fake.calls().into_iter().filter(|c| c.is_watch()).collect();
    assert!(
        watches
            .iter()
            .any(|c| c.uri.contains("sendInitialEvents=true")),
        "{watches:#?}"
    );
    assert!(watches
        .iter()
        .all(|c| c.uri.contains("labelSelector=app%3Dx")));
}

#[tokio::test]
async fn finalizers_hold_deletion_until_removed_by_a_tested_patch() {
    let fake = FakeKube::start().await.unwrap();
    let api = tables(&client(&fake, TOKEN).await);
    let created: DynamicObject = api
        .create(
            &PostParams::default(),
            &serde_json::from_value(table("a", json!({}))).unwrap(),
        )
        .await
        .unwrap();
    assert!(created.metadata.uid.is_some());
    assert!(created.metadata.creation_timestamp.is_some());
    // kube's finalizer helper: test that there are none, then add ours.
    let add = json!([{"op": "test", "path": "/metadata/finalizers", "value": null},
                     {"op": "add", "path": "/metadata/finalizers", "value": ["basalt.dev/catalog-cleanup"]}]);
    let patch: json_patch::Patch = serde_json::from_value(add.clone()).unwrap();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::<()>::Json(patch.clone()),
    )
    .await
    .unwrap();
    let again = api
        .patch("a", &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
        .unwrap_err();
    assert!(
        matches!(&again, kube::Error::Api(s) if s.code == 422),
        "a failed test refuses the patch: {again:?}"
    );
    api.delete("a", &DeleteParams::default()).await.unwrap();
    let deleting = api.get("a").await.unwrap();
    assert!(deleting.metadata.deletion_timestamp.is_some());
    assert_eq!(deleting.finalizers(), ["basalt.dev/catalog-cleanup"]);
    let remove: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/metadata/finalizers/0", "value": "basalt.dev/catalog-cleanup"},
        {"op": "remove", "path": "/metadata/finalizers/0"}]))
    .unwrap();
    api.patch("a", &PatchParams::default(), &Patch::<()>::Json(remove))
        .await
        .unwrap();
    let gone = api.get("a").await.unwrap_err();
    assert!(matches!(&gone, kube::Error::Api(s) if s.code == 404 && s.reason == "NotFound"));
    assert!(fake.objects().is_empty());
}

#[tokio::test]
async fn server_side_apply_creates_updates_and_patches_status_only_on_status() {
    let fake = FakeKube::start().await.unwrap();
    let api = tables(&client(&fake, TOKEN).await);
    let params = PatchParams::apply("basalt-controller").force();
    let created = api
        .patch("a", &params, &Patch::Apply(table("a", json!({}))))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1), "created when absent");
    let status = json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "TrackedTable",
        "spec": {"ignored": true},
        "status": {"observedGeneration": 1, "conditions": [{"type": "Ready", "status": "True"}]}});
    let patched = api
        .patch_status("a", &params, &Patch::Apply(&status))
        .await
        .unwrap();
    assert_eq!(patched.data["status"], status["status"]);
    assert_eq!(
        patched.data["spec"],
        json!({"table": {"name": "a"}}),
        "spec untouched"
    );
    assert_eq!(patched.metadata.generation, Some(1));
    let mut changed = table("a", json!({}));
    changed["status"] = json!({"forged": true});
    changed["spec"]["table"]["schema"] = json!("other");
    let updated = api
        .patch("a", &params, &Patch::Apply(&changed))
        .await
        .unwrap();
    assert_eq!(updated.metadata.generation, Some(2));
    assert_eq!(updated.data["status"], status["status"], "status untouched");
    let merged = api
        .patch_status(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"observedGeneration": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(merged.data["status"]["observedGeneration"], 2);
    assert_eq!(merged.data["status"]["conditions"][0]["type"], "Ready");
    let strategic = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {}})),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&strategic, kube::Error::Api(s) if s.code == 415),
        "{strategic:?}"
    );
    let missing = api
        .patch_status("b", &params, &Patch::Apply(&status))
        .await
        .unwrap_err();
    assert!(matches!(&missing, kube::Error::Api(s) if s.code == 404));
}

#[tokio::test]
async fn events_are_stored_and_calls_say_which_client_made_them() {
    use k8s_openapi::api::events::v1::Event as K8sEvent;
    use kube::runtime::events::{Event, EventType, Recorder, Reporter};
    let fake = FakeKube::start().await.unwrap();
    let stored = fake.apply(&table("a", json!({}))).unwrap();
    let reader = client(&fake, "reader").await;
    let writer = client(&fake, "writer").await;
    tables(&reader).list(&ListParams::default()).await.unwrap();
    let recorder = Recorder::new(
        writer.clone(),
        Reporter {
            controller: "basalt-controller".into(),
            instance: None,
        },
    );
    let object: DynamicObject = serde_json::from_value(stored).unwrap();
    let reference = object.object_ref(&tables_resource());
    recorder
        .publish(
            &Event {
                type_: EventType::Normal,
                reason: "Applied".into(),
                note: Some("applied".into()),
                action: "Reconcile".into(),
                secondary: None,
            },
            &reference,
        )
        .await
        .unwrap();
    let events: Api<K8sEvent> = Api::default_namespaced(reader.clone());
    let listed = events.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].reason.as_deref(), Some("Applied"));

    let writes = fake.writes_by("writer");
    assert_eq!(writes.len(), 1, "{writes:#?}");
    assert_eq!(writes[0].method, "POST");
    assert_eq!(
        writes[0].path(),
        "/apis/events.k8s.io/v1/namespaces/default/events"
    );
    assert!(fake.writes_by("reader").is_empty());
    assert!(fake
        .calls()
        .iter()
        .any(|c| c.token.as_deref() == Some("reader") && c.method == "GET"));

    let unknown = reader
        .request::<Value>(
            axum::http::Request::get("/apis/basalt.dev/v1alpha1/namespaces/default/widgets")
                .body(Vec::new())
                .unwrap(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&unknown, kube::Error::Api(s) if s.code == 404 && s.reason == "NotFound"),
        "{unknown:?}"
    );
}

#[tokio::test]
async fn the_control_api_applies_lists_deletes_and_reports_calls() {
    let fake = FakeKube::start().await.unwrap();
    let http = reqwest::Client::new();
    let url = fake.url();
    let applied: Value = http
        .post(format!("{url}/_fake/apply"))
        .json(&json!([table("a", json!({})), table("b", json!({}))]))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(applied.as_array().unwrap().len(), 2);
    let kubeconfig = http
        .get(format!("{url}/_fake/kubeconfig?token=bench"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(kubeconfig, fake.kubeconfig("bench"));
    let config = kube::Config::from_custom_kubeconfig(
        Kubeconfig::from_yaml(&kubeconfig).unwrap(),
        &KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    let api = tables(&Client::try_from(config).unwrap());
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        2
    );
    let bad = http
        .post(format!("{url}/_fake/apply"))
        .json(&json!({"apiVersion": "v1", "kind": "Widget", "metadata": {"name": "w"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 404);
    http.post(format!("{url}/_fake/delete"))
        .json(&table("a", json!({})))
        .send()
        .await
        .unwrap()
        .error_for_status()
        .unwrap();
    let objects: Value = http
        .get(format!("{url}/_fake/objects?kind=TrackedTable"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(objects.as_array().unwrap().len(), 1);
    assert_eq!(objects[0]["metadata"]["name"], "b");
    let calls: Value = http
        .get(format!("{url}/_fake/calls?since=0"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(calls["total"], 1, "only the API call is recorded: {calls}");
    assert_eq!(calls["calls"][0]["method"], "GET");
    assert_eq!(calls["calls"][0]["token"], "bench");
    assert!(calls["calls"][0].get("body").is_none());
}
