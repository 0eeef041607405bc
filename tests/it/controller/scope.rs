//! The ownership scan (`docs/kubernetes.md`, "Scope and orphans"): resources that leave the
//! label selector or the watched namespaces are released (ownership rows gone, objects kept,
//! finalizer removed); objects whose resource vanished are reported as a Warning Event on the
//! controller's Pod, counted, and removed with `--prune-orphans`.

use super::*;
use basalt::controller::run::scan;
use k8s_openapi::api::core::v1::ObjectReference;

fn pod() -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: Some("basalt-controller-0".into()),
        namespace: Some("basalt-system".into()),
        ..Default::default()
    }
}

fn labelled(mut table: TrackedTable, labels: &[(&str, &str)]) -> TrackedTable {
    table.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    table
}

fn finalizers<K: Kind>(s: &Setup, obj: &K) -> Vec<String> {
    s.fake
        .get(obj)
        .meta()
        .finalizers
        .clone()
        .unwrap_or_default()
}

async fn owned_keys(s: &Setup) -> Vec<String> {
    let client = s.ctx.pool.get().await.unwrap();
    managed::load(&**client)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.key)
        .collect()
}

/// Event notes of `reason` posted since the last `take`.
fn events(calls: &[Call], reason: &str) -> Vec<Value> {
    calls
        .iter()
        .filter(|c| c.method == "POST" && c.uri.contains("/events") && c.body["reason"] == reason)
        .map(|c| c.body.clone())
        .collect()
}

#[tokio::test]
async fn a_resource_leaving_the_label_selector_is_released_and_keeps_its_objects() {
    let s = setup(false).await;
    let article = labelled(article(), &[("app", "blog")]);
    let author = labelled(author(), &[("app", "blog")]);
    s.apply(&article).await;
    s.apply(&author).await;
    s.reconcile(&article).await.unwrap();
    let scopes = vec![Some(NS.to_owned())];
    let report = scan(&s.ctx, &scopes, Some("app=blog"), false, None)
        .await
        .unwrap();
    assert!(report.released.is_empty(), "{report:?}");

    // The author resource is relabelled out of the controller's selector.
    let mut moved = s.fake.get(&author);
    moved.metadata.labels = Some([("app".to_owned(), "elsewhere".to_owned())].into());
    s.fake.put(&moved);
    s.fake.take();
    let report = scan(&s.ctx, &scopes, Some("app=blog"), false, None)
        .await
        .unwrap();
    assert_eq!(report.released, vec![format!("TrackedTable/{NS}/author")]);
    assert!(report.orphaned.is_empty(), "{report:?}");
    assert!(!finalizers(&s, &author).contains(&reconcile::FINALIZER.to_owned()));
    let keys = owned_keys(&s).await;
    assert!(
        keys.iter()
            .all(|k| k != "table:public.author" && !k.contains(":public.author.")),
        "{keys:?}"
    );
    assert!(
        keys.contains(&"table:public.article".to_owned()),
        "{keys:?}"
    );
    let released = events(&s.fake.take(), "Released");
    assert_eq!(released.len(), 1, "{released:?}");
    assert_eq!(released[0]["regarding"]["name"], "author");
    // The catalog objects stay, now unmanaged.
    let tables = s.server.export().await["tables"].clone();
    assert!(tables
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["table"]["name"] == "author"));
    // A second scan has nothing left to do.
    let again = scan(&s.ctx, &scopes, Some("app=blog"), false, None)
        .await
        .unwrap();
    assert_eq!(again, Default::default());
}

#[tokio::test]
async fn resources_in_a_namespace_no_longer_watched_are_released() {
    let s = setup(false).await;
    s.apply_tables().await;
    s.fake.take();
    let report = scan(&s.ctx, &vec![Some("other".to_owned())], None, false, None)
        .await
        .unwrap();
    let mut released = report.released.clone();
    released.sort();
    assert_eq!(
        released,
        vec![
            format!("TrackedTable/{NS}/article"),
            format!("TrackedTable/{NS}/author")
        ]
    );
    assert!(owned_keys(&s).await.is_empty());
    assert!(finalizers(&s, &article()).is_empty());
    assert_eq!(
        s.server.export().await["tables"].as_array().unwrap().len(),
        2
    );
}

#[tokio::test]
async fn orphans_are_reported_on_the_pod_counted_and_pruned_on_request() {
    let s = setup(false).await;
    s.apply_tables().await;
    let permission = article_user_select(&[]);
    s.apply(&permission).await;
    let scopes = vec![Some(NS.to_owned())];
    // The permission resource vanishes without its cleanup (finalizer removed by hand).
    s.fake.remove(&permission);
    s.fake.take();
    let report = scan(&s.ctx, &scopes, None, false, Some(&pod()))
        .await
        .unwrap();
    assert_eq!(
        report.orphaned,
        vec!["permission:public.article.user.select".to_owned()]
    );
    assert!(report.pruned.is_empty());
    let calls = s.fake.take();
    let orphaned = events(&calls, "Orphaned");
    assert_eq!(orphaned.len(), 1, "{calls:?}");
    assert_eq!(orphaned[0]["type"], "Warning");
    assert_eq!(orphaned[0]["regarding"]["kind"], "Pod");
    assert_eq!(orphaned[0]["regarding"]["name"], "basalt-controller-0");
    assert!(orphaned[0]["note"]
        .as_str()
        .unwrap()
        .contains("permission:public.article.user.select"));
    let metrics = s.ctx.metrics.render().unwrap();
    assert!(
        metrics.contains("basalt_controller_orphaned_objects 1"),
        "{metrics}"
    );
    // Reported once: the next scan finds nothing new.
    let again = scan(&s.ctx, &scopes, None, false, Some(&pod()))
        .await
        .unwrap();
    assert!(again.orphaned.is_empty());
    assert!(events(&s.fake.take(), "Orphaned").is_empty());
    let article_perms = |export: Value| {
        export["tables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["table"]["name"] == "article")
            .unwrap()["select_permissions"]
            .as_array()
            .map(Vec::len)
            .unwrap_or(0)
    };
    assert_eq!(article_perms(s.server.export().await), 1);

    // --prune-orphans removes the object and its row.
    let pruned = scan(&s.ctx, &scopes, None, true, Some(&pod()))
        .await
        .unwrap();
    assert_eq!(
        pruned.pruned,
        vec!["permission:public.article.user.select".to_owned()]
    );
    assert_eq!(article_perms(s.server.export().await), 0);
    assert!(owned_keys(&s)
        .await
        .iter()
        .all(|k| !k.starts_with("permission:")));
    assert_eq!(events(&s.fake.take(), "Pruned").len(), 1);
    assert!(s
        .ctx
        .metrics
        .render()
        .unwrap()
        .contains("basalt_controller_orphaned_objects 0"));
}
