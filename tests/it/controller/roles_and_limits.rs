//! InheritedRole and ApiLimitPolicy resources: an inherited role waits for the resources that
//! make its parents known and is dropped with its resource, a cycle is the spec's fault, and a
//! Permission whose role an inherited role still needs cannot be deleted before it; one
//! ApiLimitPolicy owns `api_limits` at a time (the owner, else the oldest), limits set through
//! `/v1/query` are adopted only when asked, and both kinds come back from
//! `basalt export --format crds` and adopt the catalog they were exported from.

use super::*;

fn role(name: &str, parents: &[&str]) -> InheritedRole {
    resource(name, json!({"roleName": name, "roleSet": parents}))
}

/// An ApiLimitPolicy created `created` seconds after the epoch.
fn policy(name: &str, created: i64, spec: Value) -> ApiLimitPolicy {
    let mut p: ApiLimitPolicy = resource(name, spec);
    p.metadata.creation_timestamp = Some(Time(
        k8s_openapi::jiff::Timestamp::from_second(created).unwrap(),
    ));
    p
}

fn annotated<K: Kind>(s: &Setup, obj: &K, key: &str, value: &str) -> K {
    let mut current = s.fake.get(obj);
    current
        .meta_mut()
        .annotations
        .get_or_insert_with(Default::default)
        .insert(key.to_owned(), value.to_owned());
    s.fake.put(&current);
    current
}

/// Tracks `article` and lets role `user` read it, through resources: `user` becomes a known
/// role.
async fn user_role(s: &Setup) {
    s.apply(&tracked("article", json!({"table": {"name": "article"}})))
        .await;
    s.apply(&article_user_select(&[])).await;
    assert_eq!(s.condition(&article_user_select(&[]), "Ready").1, "Applied");
}

#[tokio::test]
async fn inherited_role_waits_for_its_parents_and_is_dropped_with_its_resource() {
    let s = setup(false).await;
    let member = role("member", &["user"]);
    let calls = s.apply(&member).await;
    let (status, reason, message) = s.condition(&member, "Ready");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "DependencyNotReady")
    );
    assert!(
        message.contains("the following parent role(s) are not found: user which are required to construct the inherited role: \"member\""),
        "{message}"
    );
    assert_eq!(events(&calls), vec!["ApplyFailed"]);
    assert!(s.server.export().await.get("inherited_roles").is_none());

    // The Permission that makes `user` known lands; the catalog's NOTIFY re-triggers the role.
    user_role(&s).await;
    s.reconcile(&member).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["Applied"]);
    assert_eq!(s.condition(&member, "Ready").1, "Applied");
    assert_eq!(
        s.server.export().await["inherited_roles"],
        json!([{"role_name": "member", "role_set": ["user"]}])
    );
    assert_eq!(s.status(&member).object_keys, vec!["inherited_role:member"]);
    let version = s.version().await;
    s.reconcile(&member).await.unwrap();
    assert!(s.fake.take().is_empty(), "in sync: no API call");
    assert_eq!(s.version().await, version, "and no catalog write");

    // The only permission of `user` cannot go while `member` needs it.
    let permission = article_user_select(&[]);
    s.delete(&permission);
    let err = s.reconcile(&permission).await.unwrap_err();
    assert!(matches!(err, reconcile::Error::DeletionBlocked(_)), "{err}");
    let (_, reason, message) = s.condition(&permission, "Ready");
    assert_eq!(reason, "DeletionBlocked");
    assert!(
        message.starts_with(
            "the inherited role(s) member would lose a parent role: delete or change them first"
        ),
        "{message}"
    );
    assert_eq!(events(&s.fake.take()), vec!["DeletionBlocked"]);

    // Deleting the inherited role drops it; then the permission goes too.
    s.delete(&member);
    s.reconcile(&member).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["Deleted"]);
    assert!(s.server.export().await.get("inherited_roles").is_none());
    s.reconcile(&permission).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["Deleted"]);
    assert!(s.inconsistent().await.is_empty());
}

#[tokio::test]
async fn a_cycle_of_inherited_roles_is_an_invalid_spec() {
    let s = setup(false).await;
    user_role(&s).await;
    let a = role("a", &["user"]);
    let b = role("b", &["a"]);
    s.apply(&a).await;
    s.apply(&b).await;
    assert_eq!(s.condition(&b, "Ready").1, "Applied");
    let before = s.server.export().await;

    let mut edited = s.fake.get(&a);
    edited.spec.role_set = vec!["user".into(), "b".into()];
    edited.metadata.generation = Some(2);
    s.fake.put(&edited);
    let action = s.reconcile(&a).await.unwrap();
    assert_eq!(action, Action::await_change(), "waits for a spec change");
    let (status, reason, message) = s.condition(&a, "Ready");
    assert_eq!((status.as_str(), reason.as_str()), ("False", "InvalidSpec"));
    assert!(
        message.contains(r#"cyclic-dependency"#)
            && message.contains(r#"found cycle(s) in roles: ["a","b","a"]"#),
        "{message}"
    );
    assert_eq!(events(&s.fake.take()), vec!["InvalidSpec"]);
    assert_eq!(s.server.export().await, before, "nothing written");
}

#[tokio::test]
async fn one_api_limit_policy_owns_the_limits_at_a_time() {
    let s = setup(false).await;
    let older = policy("limits-a", 1_000, json!({"depthLimit": {"global": 5}}));
    let newer = policy(
        "limits-b",
        2_000,
        json!({"disabled": true, "rateLimit": {"global": {"maxReqsPerMin": 60, "uniqueParams": "IP"}}}),
    );
    s.create(&older);
    // The newer one is reconciled first; the older one goes first all the same.
    let calls = s.apply(&newer).await;
    let (status, reason, message) = s.condition(&newer, "Ready");
    assert_eq!((status.as_str(), reason.as_str()), ("False", "Conflict"));
    assert_eq!(
        message,
        "api_limits is owned by ApiLimitPolicy shop/limits-a"
    );
    assert_eq!(events(&calls), vec!["Conflict"]);
    let event = calls.iter().find(|c| c.uri.contains("/events")).unwrap();
    assert_eq!(event.body["type"], "Warning");
    assert_eq!(event.body["note"], message);
    assert!(
        s.server.export().await.get("api_limits").is_none(),
        "never applied"
    );

    s.reconcile(&older).await.unwrap();
    s.fake.take();
    s.reconcile(&older).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["Applied"]);
    assert_eq!(
        s.server.export().await["api_limits"],
        json!({"disabled": false, "depth_limit": {"global": 5, "per_role": {}}})
    );
    // Retried (a NOTIFY, or the 5-minute requeue): still held, without a new Event, now by
    // the owner's row.
    let version = s.version().await;
    s.reconcile(&newer).await.unwrap();
    let calls = s.fake.take();
    assert!(events(&calls).is_empty(), "{calls:#?}");
    assert_eq!(
        s.condition(&newer, "Ready").2,
        "api_limits is owned by ApiLimitPolicy shop/limits-a"
    );
    assert_eq!(s.ctx.failures("ApiLimitPolicy/shop/limits-b"), 2);
    assert_eq!(s.version().await, version);

    // Deleting the owner removes the limits; on the NOTIFY that follows the next one applies.
    s.delete(&older);
    s.reconcile(&older).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["Deleted"]);
    assert!(s.server.export().await.get("api_limits").is_none());
    s.reconcile(&newer).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["Applied"]);
    assert_eq!(s.condition(&newer, "Ready").1, "Applied");
    assert_eq!(
        s.server.export().await["api_limits"],
        json!({"disabled": true, "rate_limit": {"global": {"max_reqs_per_min": 60, "unique_params": "IP"}, "per_role": {}}})
    );
    assert!(s.drift_items().await.is_empty());
}

#[tokio::test]
async fn limits_set_through_the_api_are_adopted_only_when_asked() {
    let s = setup(false).await;
    s.server
        .ok(json!({"type": "set_api_limits", "args": {"node_limit": {"global": 20}}}))
        .await;
    let limits = policy("limits", 1_000, json!({"nodeLimit": {"global": 20}}));
    let calls = s.apply(&limits).await;
    assert_eq!(events(&calls), vec!["Conflict"]);
    let (_, reason, message) = s.condition(&limits, "Ready");
    assert_eq!(reason, "Conflict");
    assert_eq!(
        message,
        "api_limits already exists and is not managed; annotate basalt.dev/adopt=\"true\" to take it over"
    );

    annotated(&s, &limits, "basalt.dev/adopt", "true");
    s.reconcile(&limits).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["Adopted"]);
    assert_eq!(s.condition(&limits, "Ready").1, "Applied");

    // Now a change through /v1/query is drift of the owner's object.
    s.server
        .ok(json!({"type": "set_api_limits", "args": {"node_limit": {"global": 30}}}))
        .await;
    s.reconcile(&limits).await.unwrap();
    assert_eq!(s.condition(&limits, "Drifted").1, "Modified");
    let drift = s.drift_items().await;
    assert_eq!(drift[0]["definition"]["object"], "api_limits", "{drift:?}");

    // Deleted with the orphan policy, the limits stay (unmanaged).
    annotated(&s, &limits, "basalt.dev/deletion-policy", "orphan");
    s.delete(&limits);
    s.reconcile(&limits).await.unwrap();
    assert_eq!(
        s.server.export().await["api_limits"]["node_limit"]["global"],
        30
    );
    assert!(s.drift_items().await.is_empty());
}

#[tokio::test]
async fn a_policy_without_limits_owns_the_empty_object_without_drift() {
    let s = setup(false).await;
    let none = policy("no-limits", 1_000, json!({}));
    s.apply(&none).await;
    assert_eq!(s.condition(&none, "Ready").1, "Applied");
    assert!(s.server.export().await.get("api_limits").is_none());
    assert!(s.drift_items().await.is_empty());
    let version = s.version().await;
    s.reconcile(&none).await.unwrap();
    assert!(s.fake.take().is_empty(), "in sync");
    assert_eq!(s.version().await, version);
    assert_eq!(s.condition(&none, "Drifted").1, "InSync");
}

#[tokio::test]
async fn exported_inherited_roles_and_limits_adopt_the_catalog() {
    let s = setup(false).await;
    s.server
        .ok(json!({"type": "bulk", "args": [
            {"type": "track_table", "args": {"table": "article"}},
            {"type": "create_select_permission", "args": {"table": "article", "role": "user",
                "permission": {"columns": ["id", "title"], "filter": {}}}},
            {"type": "create_select_permission", "args": {"table": "article", "role": "guest",
                "permission": {"columns": ["id"], "filter": {}}}},
            {"type": "add_inherited_role", "args": {"role_name": "member", "role_set": ["user", "guest"]}},
            {"type": "set_api_limits", "args": {
                "depth_limit": {"global": 4, "per_role": {"member": 6}},
                "time_limit": {"global": 1.5},
                "rate_limit": {"global": {"max_reqs_per_min": 100, "unique_params": ["x-svc-user-id"]}}}}
        ]}))
        .await;
    let wanted = s.server.export().await;
    let metadata = serde_json::from_value(wanted.clone()).unwrap();
    let export = basalt::controller::export::resources(&metadata, NS).unwrap();
    let ours: Vec<(&str, &str, &Value)> = export
        .resources
        .iter()
        .filter(|r| matches!(r.kind, "InheritedRole" | "ApiLimitPolicy"))
        .map(|r| (r.kind, r.name.as_str(), &r.manifest["spec"]))
        .collect();
    assert_eq!(
        ours,
        vec![
            (
                "InheritedRole",
                "member",
                &json!({"roleName": "member", "roleSet": ["user", "guest"]})
            ),
            (
                "ApiLimitPolicy",
                "api-limits",
                &json!({"depthLimit": {"global": 4, "perRole": {"member": 6}},
                    "timeLimit": {"global": 1.5},
                    "rateLimit": {"global": {"maxReqsPerMin": 100, "uniqueParams": ["x-svc-user-id"]}}})
            ),
        ]
    );
    // Applied through the controller, every exported resource adopts what is there, in
    // the table's order (roles after the permissions that make them known).
    let typed = |r: &basalt::controller::export::Exported| {
        let mut manifest = r.manifest.clone();
        manifest["metadata"]["uid"] = json!(format!("uid-{}-{}", r.kind, r.name));
        manifest["metadata"]["generation"] = json!(1);
        manifest
    };
    for r in &export.resources {
        let manifest = typed(r);
        let calls = match r.kind {
            "TrackedTable" => s.apply(&from::<TrackedTable>(manifest)).await,
            "Permission" => s.apply(&from::<Permission>(manifest)).await,
            "InheritedRole" => s.apply(&from::<InheritedRole>(manifest)).await,
            other => {
                assert_eq!(other, "ApiLimitPolicy");
                s.apply(&from::<ApiLimitPolicy>(manifest)).await
            }
        };
        assert_eq!(events(&calls), vec!["Adopted"], "{} {}", r.kind, r.name);
    }
    assert_eq!(s.server.export().await, wanted);
    assert!(s.drift_items().await.is_empty());
    let owners = s
        .server
        .ok(json!({"type": "export_metadata", "args": {"include_owners": true}}))
        .await["owners"]
        .clone();
    assert_eq!(owners["inherited_role:member"]["kind"], "InheritedRole");
    assert_eq!(owners["api_limits"]["name"], "api-limits");
}

fn from<K: Kind>(manifest: Value) -> K {
    let resource: K = serde_json::from_value(manifest).unwrap();
    resource.check_cel().expect("the CRD's rules accept it");
    resource
}
