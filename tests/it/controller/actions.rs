//! The Action kind against the fake API server and the real catalog: waiting for its custom
//! types, updates of the definition and the permissions, drift, adoption, deletion, and a
//! CustomTypeSet whose deletion an action blocks.

use super::*;
use basalt::controller::kinds::Action as ActionResource;

const ACTIONS: &str = "/apis/basalt.dev/v1alpha1/namespaces/shop/actions";
const CUSTOM_TYPE_SETS: &str = "/apis/basalt.dev/v1alpha1/namespaces/shop/customtypesets";
const KEY: &str = "action:archiveArticle";
const EDITOR: &str = "action_permission:archiveArticle.editor";
const USER: &str = "action_permission:archiveArticle.user";

/// The types `archiveArticle` uses: an input object for an argument, an object for the output.
fn archive_types() -> CustomTypeSet {
    resource(
        "archive-types",
        json!({"inputObjects": [{"name": "ArchiveReason", "fields": [{"name": "text", "type": "String!"}]}],
            "objects": [{"name": "ArchiveResult", "fields": [
                {"name": "article_id", "type": "Int!"}, {"name": "archived_at", "type": "String"}]}]}),
    )
}

fn archive_spec() -> Value {
    json!({"name": "archiveArticle", "comment": "soft delete", "definition": {
        "arguments": [{"name": "id", "type": "Int!", "description": "the article"},
                      {"name": "reason", "type": "ArchiveReason"}],
        "outputType": "ArchiveResult", "handler": "http://127.0.0.1:9/archive",
        "headers": [{"name": "X-Source", "value": "basalt"}], "timeout": 10},
        "permissions": [{"role": "editor"}, {"role": "user", "comment": "own articles"}]})
}

fn archive_article() -> ActionResource {
    resource("archive-article", archive_spec())
}

/// The catalog's actions, as exported.
async fn actions(s: &Setup) -> Value {
    s.server
        .export()
        .await
        .get("actions")
        .cloned()
        .unwrap_or_else(|| json!([]))
}

/// The roles allowed to call `archiveArticle`, with their comments.
async fn roles(s: &Setup) -> Vec<(String, Value)> {
    actions(s).await[0]["permissions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|p| {
            (
                p["role"].as_str().unwrap().to_owned(),
                p.get("comment").cloned().unwrap_or(Value::Null),
            )
        })
        .collect()
}

async fn owned_by_actions(s: &Setup) -> Vec<String> {
    let client = s.ctx.pool.get().await.unwrap();
    let mut keys: Vec<String> = managed::load(&**client)
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.owner.kind == "Action")
        .map(|r| r.key)
        .collect();
    keys.sort();
    keys
}

/// Applied before its custom types, an Action waits for them (nothing written), lands once a
/// CustomTypeSet brings them, keeps permissions made through the API when its definition
/// changes, and takes the action and all its permissions with it when deleted.
#[tokio::test]
async fn action_waits_for_its_types_then_is_applied_updated_and_removed() {
    let s = setup(false).await;
    let calls = s.apply(&archive_article()).await;
    assert_eq!(events(&calls), vec!["ApplyFailed"], "{calls:#?}");
    let (status, reason, message) = s.condition(&archive_article(), "Ready");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "DependencyNotReady")
    );
    assert!(message.contains("ArchiveReason"), "{message}");
    assert_eq!(actions(&s).await, json!([]), "nothing written");

    // The types arrive: the next trigger (a catalog NOTIFY, here a reconcile) applies it.
    s.apply(&archive_types()).await;
    assert_eq!(s.condition(&archive_types(), "Ready").1, "Applied");
    s.reconcile(&archive_article()).await.unwrap();
    let calls = s.fake.take();
    let lines: Vec<String> = calls.iter().map(Call::line).collect();
    assert_eq!(
        lines,
        vec![
            format!("PATCH {ACTIONS}/archive-article{SSA}"),
            EVENTS.to_owned()
        ],
        "{calls:#?}"
    );
    assert_eq!(events(&calls), vec!["Applied"]);
    assert_eq!(calls[0].body["kind"], "Action");
    assert_eq!(s.condition(&archive_article(), "Ready").1, "Applied");
    assert_eq!(s.condition(&archive_article(), "Consistent").0, "True");
    assert_eq!(
        s.status(&archive_article()).object_keys,
        vec![KEY, EDITOR, USER]
    );
    assert_eq!(
        actions(&s).await,
        json!([{"name": "archiveArticle", "comment": "soft delete", "definition": {
            "handler": "http://127.0.0.1:9/archive", "output_type": "ArchiveResult",
            "headers": [{"name": "X-Source", "value": "basalt"}],
            "arguments": [{"name": "id", "type": "Int!", "description": "the article"},
                          {"name": "reason", "type": "ArchiveReason"}],
            "type": "mutation", "timeout": 10},
            "permissions": [{"role": "editor"}, {"role": "user", "comment": "own articles"}]}])
    );
    assert_eq!(owned_by_actions(&s).await, vec![KEY, EDITOR, USER]);
    let r = s
        .server
        .ok(json!({"type": "export_metadata", "args": {"include_owners": true}}))
        .await;
    for key in [KEY, EDITOR, USER] {
        assert_eq!(
            r["owners"][key],
            json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "Action", "namespace": NS, "name": "archive-article"}),
            "{key}: {r}"
        );
    }
    // In sync: no write, no API call.
    let version = s.version().await;
    s.reconcile(&archive_article()).await.unwrap();
    assert!(s.fake.take().is_empty());
    assert_eq!(s.version().await, version);

    // A role allowed through the API is no object of the resource's: no drift, and kept.
    s.server
        .ok(json!({"type": "create_action_permission", "args": {"action": "archiveArticle", "role": "auditor"}}))
        .await;
    assert!(s.drift_items().await.is_empty());

    // A spec edit: a new handler and timeout (update_action), a permission's new comment
    // (dropped and created), one role removed and one added.
    let mut edited = s.fake.get(&archive_article());
    edited.metadata.generation = Some(2);
    edited.spec =
        serde_json::from_value(json!({"name": "archiveArticle", "comment": "soft delete",
        "definition": {"arguments": [{"name": "id", "type": "Int!"}], "outputType": "ArchiveResult",
            "handler": "http://127.0.0.1:9/archive/v2", "timeout": 20},
        "permissions": [{"role": "editor", "comment": "the desk"}, {"role": "guest"}]}))
        .unwrap();
    s.fake.put(&edited);
    s.reconcile(&edited).await.unwrap();
    s.fake.take();
    assert_eq!(s.condition(&edited, "Ready").1, "Applied");
    assert_eq!(s.status(&edited).observed_generation, Some(2));
    let definition = &actions(&s).await[0]["definition"];
    assert_eq!(definition["handler"], "http://127.0.0.1:9/archive/v2");
    assert_eq!(definition["timeout"], 20);
    assert_eq!(
        definition["arguments"],
        json!([{"name": "id", "type": "Int!"}])
    );
    assert_eq!(
        roles(&s).await,
        vec![
            ("auditor".to_owned(), Value::Null),
            ("editor".to_owned(), json!("the desk")),
            ("guest".to_owned(), Value::Null),
        ]
    );
    assert_eq!(
        owned_by_actions(&s).await,
        vec![KEY, EDITOR, "action_permission:archiveArticle.guest"]
    );
    assert!(s.drift_items().await.is_empty());

    // Deleted: the action goes, with every permission (drop_action), the types stay.
    s.delete(&edited);
    s.reconcile(&edited).await.unwrap();
    let calls = s.fake.take();
    assert_eq!(events(&calls), vec!["Deleted"], "{calls:#?}");
    assert_eq!(
        calls.last().unwrap().line(),
        format!("PATCH {ACTIONS}/archive-article?"),
        "the finalizer is released"
    );
    assert_eq!(actions(&s).await, json!([]));
    assert!(owned_by_actions(&s).await.is_empty());
    assert_eq!(
        s.server.export().await["custom_types"]["objects"][0]["name"],
        "ArchiveResult"
    );
}

/// An action or permission changed through `/v1/query` is drift on that object, reported and
/// put back on request; the CustomTypeSet whose types the action uses cannot be deleted before
/// the action.
#[tokio::test]
async fn action_drift_is_reported_and_healed_and_blocks_deleting_its_types() {
    let s = setup(false).await;
    s.apply(&archive_types()).await;
    s.apply(&archive_article()).await;
    assert_eq!(s.condition(&archive_article(), "Ready").1, "Applied");

    s.server
        .ok(json!({"type": "bulk", "args": [
            {"type": "update_action", "args": {"name": "archiveArticle", "comment": "soft delete",
                "definition": {"handler": "http://127.0.0.1:9/archive", "output_type": "ArchiveResult",
                    "arguments": [{"name": "id", "type": "Int!", "description": "the article"},
                                  {"name": "reason", "type": "ArchiveReason"}],
                    "headers": [{"name": "X-Source", "value": "basalt"}], "timeout": 60}}},
            {"type": "drop_action_permission", "args": {"action": "archiveArticle", "role": "editor"}}]}))
        .await;
    let drift = s.drift_items().await;
    let found: Vec<(&str, &str, &Value)> = drift
        .iter()
        .map(|d| {
            (
                d["definition"]["object"].as_str().unwrap(),
                d["definition"]["drift"].as_str().unwrap(),
                &d["definition"]["fields"],
            )
        })
        .collect();
    assert_eq!(
        found,
        vec![
            (KEY, "modified", &json!(["definition.timeout"])),
            (EDITOR, "missing", &Value::Null),
        ],
        "{drift:#?}"
    );
    assert!(drift
        .iter()
        .all(|d| d["definition"]["owner"]["kind"] == "Action"));
    let version = s.version().await;
    s.reconcile(&archive_article()).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["DriftDetected"]);
    let (status, reason, message) = s.condition(&archive_article(), "Drifted");
    assert_eq!((status.as_str(), reason.as_str()), ("True", "Missing"));
    assert!(
        message.contains("action:archiveArticle: definition.timeout")
            && message.contains("action_permission:archiveArticle.editor: missing"),
        "{message}"
    );
    assert_eq!(s.condition(&archive_article(), "Ready").1, "Drifted");
    assert_eq!(s.version().await, version, "reported only");

    // A sync request puts both back.
    let mut requested = s.fake.get(&archive_article());
    requested.metadata.annotations =
        Some([("basalt.dev/sync-requested-at".to_owned(), "now".to_owned())].into());
    s.fake.put(&requested);
    s.reconcile(&requested).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["DriftCorrected"]);
    assert!(s.drift_items().await.is_empty());
    assert_eq!(actions(&s).await[0]["definition"]["timeout"], 10);
    assert_eq!(
        roles(&s).await,
        vec![
            ("user".to_owned(), json!("own articles")),
            ("editor".to_owned(), Value::Null)
        ]
    );

    // The types are in use: their deletion is blocked and the finalizer stays.
    s.delete(&archive_types());
    let err = s
        .reconcile(&archive_types())
        .await
        .expect_err("blocked by the action");
    assert!(matches!(err, reconcile::Error::DeletionBlocked(_)), "{err}");
    let calls = s.fake.take();
    assert_eq!(events(&calls), vec!["DeletionBlocked"]);
    assert!(
        calls.iter().all(|c| !c
            .uri
            .starts_with(&format!("{CUSTOM_TYPE_SETS}/archive-types?"))),
        "the finalizer stays: {calls:#?}"
    );
    let (_, reason, message) = s.condition(&archive_types(), "Ready");
    assert_eq!(reason, "DeletionBlocked");
    assert!(
        message.contains("dependency-error") && message.contains("archiveArticle"),
        "{message}"
    );
    assert_eq!(
        s.server.export().await["custom_types"]["objects"][0]["name"],
        "ArchiveResult"
    );
    // Once the action is gone, the deletion converges.
    s.delete(&requested);
    s.reconcile(&requested).await.unwrap();
    s.reconcile(&archive_types()).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["Deleted", "Deleted"]);
    let exported = s.server.export().await;
    assert!(exported.get("actions").is_none(), "{exported}");
    assert!(exported.get("custom_types").is_none(), "{exported}");
}

/// An action made through `/v1/query` is a conflict until the resource adopts it; adopted, it
/// is owned without being rewritten, and the permission the resource adds is created.
#[tokio::test]
async fn action_made_through_the_api_is_adopted() {
    let s = setup(false).await;
    s.apply(&archive_types()).await;
    s.server
        .ok(json!({"type": "bulk", "args": [
            {"type": "create_action", "args": {"name": "archiveArticle", "comment": "soft delete",
                "definition": {"handler": "http://127.0.0.1:9/archive", "output_type": "ArchiveResult",
                    "arguments": [{"name": "id", "type": "Int!", "description": "the article"},
                                  {"name": "reason", "type": "ArchiveReason"}],
                    "headers": [{"name": "X-Source", "value": "basalt"}], "timeout": 10}}},
            {"type": "create_action_permission", "args": {"action": "archiveArticle", "role": "editor"}}]}))
        .await;
    let calls = s.apply(&archive_article()).await;
    assert_eq!(events(&calls), vec!["Conflict"]);
    let (_, reason, message) = s.condition(&archive_article(), "Ready");
    assert_eq!(reason, "Conflict");
    assert!(
        message.contains(KEY) && message.contains("basalt.dev/adopt"),
        "{message}"
    );

    let mut adopting = s.fake.get(&archive_article());
    adopting.metadata.annotations =
        Some([("basalt.dev/adopt".to_owned(), "true".to_owned())].into());
    s.fake.put(&adopting);
    s.reconcile(&adopting).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["Adopted"]);
    assert_eq!(s.condition(&adopting, "Ready").1, "Applied");
    assert_eq!(owned_by_actions(&s).await, vec![KEY, EDITOR, USER]);
    assert_eq!(
        roles(&s).await,
        vec![
            ("editor".to_owned(), Value::Null),
            ("user".to_owned(), json!("own articles"))
        ]
    );
    assert!(s.drift_items().await.is_empty());
    let version = s.version().await;
    s.reconcile(&adopting).await.unwrap();
    assert!(s.fake.take().is_empty(), "in sync");
    assert_eq!(s.version().await, version);
}

/// What the controller cannot resolve is reported, not written: a handler template or header
/// variable it lacks is an apply failure (retried: the Deployment's environment brings it), a
/// query action with a kind is refused by the CRD's rule.
#[tokio::test]
async fn action_with_a_missing_variable_or_an_invalid_spec_is_not_written() {
    let s = setup(false).await;
    s.apply(&archive_types()).await;
    let unset = "BASALT_TEST_UNSET_ACTION_URL";
    assert!(std::env::var_os(unset).is_none());
    let mut spec = archive_spec();
    spec["definition"]["handler"] = json!(format!("{{{{{unset}}}}}/archive"));
    let from_env: ActionResource = resource("from-env", spec);
    s.apply(&from_env).await;
    let (_, reason, message) = s.condition(&from_env, "Ready");
    assert_eq!(reason, "ApplyFailed", "{message}");
    assert!(
        message.contains("not-found") && message.contains(unset),
        "{message}"
    );

    let secret = "BASALT_TEST_UNSET_ACTION_SECRET";
    assert!(std::env::var_os(secret).is_none());
    let mut spec = archive_spec();
    spec["definition"]["headers"] = json!([{"name": "X-Secret", "valueFromEnv": secret}]);
    let header: ActionResource = resource("header", spec);
    s.apply(&header).await;
    let (_, reason, message) = s.condition(&header, "Ready");
    assert_eq!(reason, "ApplyFailed", "{message}");
    assert!(message.contains(secret), "{message}");

    let mut spec = archive_spec();
    spec["definition"]["type"] = json!("query");
    spec["definition"]["kind"] = json!("asynchronous");
    let query: ActionResource = resource("query", spec);
    let calls = s.apply(&query).await;
    assert_eq!(events(&calls), vec!["InvalidSpec"]);
    let (_, reason, message) = s.condition(&query, "Ready");
    assert_eq!(reason, "InvalidSpec");
    assert!(message.contains("kind is for mutations only"), "{message}");
    assert_eq!(actions(&s).await, json!([]), "nothing written");
}

/// The variable `examples/blog/action-archive-article.yaml` reads its handler's URL from.
pub(crate) const BLOG_ACTIONS_URL_ENV: &str = "BLOG_ACTIONS_URL";
/// The variable its secret header's value comes from.
pub(crate) const BLOG_ACTIONS_SECRET_ENV: &str = "BLOG_ACTIONS_SECRET";

/// Sets the blog example's action variables for the whole test process (the engine, the
/// controller and `basalt` child processes alike). No handler answers there: the catalog only
/// checks that the variables resolve.
pub(crate) fn blog_actions_env() {
    static SET: std::sync::Once = std::sync::Once::new();
    SET.call_once(|| {
        std::env::set_var(BLOG_ACTIONS_URL_ENV, "http://127.0.0.1:9");
        std::env::set_var(BLOG_ACTIONS_SECRET_ENV, "blog-action-secret");
    });
}

/// The blog example's Action, applied, is what `basalt export --format crds` writes back for
/// the catalog: the file and the export agree field for field (the template and the secret by
/// name, never their values).
#[tokio::test]
async fn blog_example_action_is_what_export_writes() {
    let s = applied_blog_example().await;
    let metadata = serde_json::from_value(s.server.export().await).unwrap();
    let export = basalt::controller::export::resources(&metadata, NS).unwrap();
    let exported = export
        .resources
        .iter()
        .find(|r| r.kind == "Action")
        .expect("the action is exported");
    assert_eq!(exported.name, "archivearticle");
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/blog/action-archive-article.yaml");
    let written: ActionResource =
        serde_yaml::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let from_export: ActionResource = serde_json::from_value(exported.manifest.clone()).unwrap();
    assert_eq!(from_export.spec, written.spec);
    let text = serde_json::to_string(&exported.manifest).unwrap();
    assert!(
        text.contains("{{BLOG_ACTIONS_URL}}/archive-article")
            && !text.contains("127.0.0.1")
            && !text.contains("blog-action-secret"),
        "{text}"
    );
    let key = "action_permission:archiveArticle.user";
    let r = s
        .server
        .ok(json!({"type": "export_metadata", "args": {"include_owners": true}}))
        .await;
    assert_eq!(r["owners"][key]["name"], "archive-article", "{r}");
}
