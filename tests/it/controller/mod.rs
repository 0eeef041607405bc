//! The Kubernetes controller (`src/controller/`) against a fake API server (`kube_fake.rs`,
//! tower-test: every request asserted) and the real Postgres catalog, next to a running engine
//! (`docs/kubernetes.md` describes the reconcile, its conditions and Events). The Action kind's
//! scenarios are in `actions.rs`, objects that no longer match their schema in `invalid.rs`, the
//! CRDs themselves in `crds/`. Failover between two real controller processes is in the slow
//! tier (`slow/controller_failover.rs`).

mod actions;
mod crds;
mod group_commit;
mod invalid;
pub(crate) mod kube_fake;
mod scope;
mod shared_view;

use crate::controller::kube_fake::{context, Call, FakeApi};
use crate::harness::{query_json, TestServer, BLOG};
use crate::remote_schemas::remote_server::{
    blog_newsletter, newsletter_schema, RemoteServer, NEWSLETTER_TOKEN, NEWSLETTER_TOKEN_ENV,
};
use basalt::catalog::managed;
use basalt::controller::crd::*;
use basalt::controller::leader;
use basalt::controller::reconcile::{self, Context, Kind};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::core::error_boundary::InvalidObject;
use kube::core::DeserializeGuard;
use kube::runtime::controller::Action;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub(crate) const NS: &str = "shop";

/// Kubernetes uids are unique; resources of different kinds may share a name.
static NEXT_UID: AtomicU64 = AtomicU64::new(1);

fn meta(name: &str, annotations: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some(NS.into()),
        uid: Some(format!(
            "uid-{name}-{}",
            NEXT_UID.fetch_add(1, Ordering::Relaxed)
        )),
        generation: Some(1),
        annotations: if annotations.is_empty() {
            None
        } else {
            Some(
                annotations
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<BTreeMap<_, _>>(),
            )
        },
        ..Default::default()
    }
}

/// A resource of kind `K` named `name` in the test namespace.
fn resource<K: Kind>(name: &str, spec: Value) -> K {
    serde_json::from_value(
        json!({"apiVersion": "basalt.dev/v1alpha1", "kind": K::kind(&()),
        "metadata": meta(name, &[]), "spec": spec}),
    )
    .unwrap()
}

fn tracked(name: &str, spec: Value) -> TrackedTable {
    TrackedTable {
        metadata: meta(name, &[]),
        spec: serde_json::from_value(spec).unwrap(),
        status: None,
    }
}

fn permission(name: &str, spec: Value, annotations: &[(&str, &str)]) -> Permission {
    Permission {
        metadata: meta(name, annotations),
        spec: serde_json::from_value(spec).unwrap(),
        status: None,
    }
}

fn author() -> TrackedTable {
    tracked(
        "author",
        json!({"table": {"name": "author"}, "arrayRelationships": [{"name": "articles",
            "using": {"foreignKeyConstraintOn": {"table": {"name": "article"}, "column": "author_id"}}}]}),
    )
}

fn article() -> TrackedTable {
    tracked(
        "article",
        json!({"table": {"name": "article"}, "configuration": {"customRootFields": {"select": "posts"}},
            "objectRelationships": [{"name": "author", "using": {"foreignKeyConstraintOn": "author_id"}}]}),
    )
}

fn article_user_select(annotations: &[(&str, &str)]) -> Permission {
    permission(
        "article-user-select",
        json!({"table": {"name": "article"}, "role": "user", "operation": "select",
            "permission": {"columns": ["id", "title"], "filter": {"author_id": {"_eq": "X-Svc-User-Id"}}, "limit": 10}}),
        annotations,
    )
}

/// A fake API server, a context on the server's catalog, and the engine itself.
pub(crate) struct Setup {
    pub(crate) server: TestServer,
    fake: Arc<FakeApi>,
    ctx: Arc<Context>,
}

async fn setup(self_heal: bool) -> Setup {
    let server = TestServer::with_fixture(BLOG).await;
    let fake = Arc::new(FakeApi::default());
    let ctx = context(fake.clone(), &server.db_url, self_heal);
    Setup { server, fake, ctx }
}

impl Setup {
    /// Registers `obj` with the fake API server.
    fn create<K: Kind>(&self, obj: &K) {
        self.fake.put(obj);
    }

    /// One reconcile of the stored `obj`.
    async fn reconcile<K: Kind>(&self, obj: &K) -> Result<Action, reconcile::Error> {
        let current = self.fake.get(obj);
        reconcile::reconcile(Arc::new(DeserializeGuard(Ok(current))), self.ctx.clone()).await
    }

    /// Creates `obj`, reconciles once for the finalizer and once to apply; returns the
    /// calls of the apply.
    async fn apply<K: Kind>(&self, obj: &K) -> Vec<Call> {
        self.create(obj);
        self.reconcile(obj).await.expect("finalizer reconcile");
        self.fake.take();
        self.reconcile(obj).await.expect("apply reconcile");
        self.fake.take()
    }

    /// Applies article and author; each has a relationship to the other, so article is
    /// reconciled again once author exists (as a catalog NOTIFY would trigger).
    async fn apply_tables(&self) {
        self.apply(&article()).await;
        self.apply(&author()).await;
        self.reconcile(&article()).await.expect("article again");
        self.fake.take();
        assert_eq!(self.condition(&article(), "Ready").1, "Applied");
    }

    /// The catalog's resource version.
    async fn catalog_version(&self) -> i64 {
        query_json(
            &self.server.db_url,
            "SELECT resource_version FROM basalt_catalog.metadata",
        )
        .await[0]["resource_version"]
            .as_i64()
            .unwrap()
    }

    fn status<K: Kind>(&self, obj: &K) -> ResourceStatus {
        self.fake
            .get(obj)
            .status()
            .map(|s| s.common().clone())
            .unwrap_or_default()
    }

    /// `status.remote` of a RemoteSchema.
    fn remote(&self, obj: &RemoteSchema) -> Option<RemoteServerStatus> {
        self.fake.get(obj).status.and_then(|s| s.remote)
    }

    fn condition<K: Kind>(&self, obj: &K, type_: &str) -> (String, String, String) {
        let status = self.status(obj);
        let c = status
            .conditions
            .iter()
            .find(|c| c.type_ == type_)
            .unwrap_or_else(|| panic!("no {type_} condition in {status:?}"));
        (c.status.clone(), c.reason.clone(), c.message.clone())
    }

    /// Marks `obj` deleted (as the API server does when a finalizer holds it).
    fn delete<K: Kind>(&self, obj: &K) {
        let mut current = self.fake.get(obj);
        current.meta_mut().deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::now()));
        self.fake.put(&current);
    }

    async fn inconsistent(&self) -> Vec<Value> {
        let r = self
            .server
            .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
            .await;
        r["inconsistent_objects"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    async fn drift_items(&self) -> Vec<Value> {
        self.inconsistent()
            .await
            .into_iter()
            .filter(|i| i["type"] == "drift")
            .collect()
    }

    async fn version(&self) -> i64 {
        let client = self.ctx.pool.get().await.unwrap();
        basalt::catalog::current_version(&**client).await.unwrap()
    }
}

fn events(calls: &[Call]) -> Vec<String> {
    calls
        .iter()
        .filter(|c| c.method == "POST" && c.uri.contains("/events"))
        .map(|c| c.body["reason"].as_str().unwrap_or_default().to_owned())
        .collect()
}

const TABLES: &str = "/apis/basalt.dev/v1alpha1/namespaces/shop/trackedtables";
const PERMISSIONS: &str = "/apis/basalt.dev/v1alpha1/namespaces/shop/permissions";
const REMOTE_SCHEMAS: &str = "/apis/basalt.dev/v1alpha1/namespaces/shop/remoteschemas";
const SSA: &str = "/status?&force=true&fieldManager=basalt-controller";
const EVENTS: &str = "POST /apis/events.k8s.io/v1/namespaces/shop/events?";

#[tokio::test]
async fn new_resource_gets_the_finalizer_and_no_catalog_write() {
    let s = setup(false).await;
    let before = s.version().await;
    s.create(&author());
    let action = s.reconcile(&author()).await.unwrap();
    assert_eq!(action, Action::await_change());
    let calls = s.fake.take();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].line(), format!("PATCH {TABLES}/author?"));
    assert!(calls[0].content_type.contains("json-patch"));
    assert_eq!(
        calls[0].body,
        json!([{"op": "test", "path": "/metadata/finalizers", "value": null},
               {"op": "add", "path": "/metadata/finalizers", "value": ["basalt.dev/catalog-cleanup"]}])
    );
    assert_eq!(
        s.version().await,
        before,
        "no catalog write before the finalizer"
    );
    assert_eq!(s.server.export().await["tables"], json!([]));
}

#[tokio::test]
async fn finalized_resource_is_applied_with_status_and_one_event() {
    let s = setup(false).await;
    s.apply(&article()).await;
    assert_eq!(s.condition(&article(), "Ready").1, "DependencyNotReady");
    let calls = s.apply(&author()).await;
    let lines: Vec<String> = calls.iter().map(Call::line).collect();
    assert_eq!(
        lines,
        vec![format!("PATCH {TABLES}/author{SSA}"), EVENTS.to_owned()],
        "{calls:#?}"
    );
    let patch = &calls[0].body;
    assert!(calls[0].content_type.contains("apply-patch"));
    assert_eq!(patch["apiVersion"], "basalt.dev/v1alpha1");
    assert_eq!(patch["kind"], "TrackedTable");
    assert_eq!(patch["status"]["observedGeneration"], 1);
    assert_eq!(patch["status"]["catalogResourceVersion"], s.version().await);
    assert_eq!(
        patch["status"]["objectKeys"],
        json!(["table:public.author", "relationship:public.author.articles"])
    );
    assert!(patch["status"]["specHash"]
        .as_str()
        .unwrap()
        .starts_with("sha256:"));
    assert_eq!(events(&calls), vec!["Applied"]);
    assert_eq!(s.condition(&author(), "Ready").1, "Applied");
    assert_eq!(s.condition(&author(), "Consistent").0, "True");
    assert_eq!(s.condition(&author(), "Drifted").1, "InSync");
    s.reconcile(&article()).await.unwrap();
    assert_eq!(
        events(&s.fake.take()),
        vec!["Applied"],
        "the waiting relationship landed"
    );
    s.server.running.state.reload(false).await.unwrap();
    // The engine serves what the resources declared.
    let data = s.server.gql("{ posts(order_by: {id: asc}, limit: 1) { id author { name articles(limit: 1) { id } } } }").await;
    assert_eq!(data["data"]["posts"][0]["author"]["name"], "Ann", "{data}");
}

#[tokio::test]
async fn second_reconcile_without_change_makes_no_call_and_no_write() {
    let s = setup(false).await;
    s.apply_tables().await;
    let version = s.version().await;
    let action = s.reconcile(&article()).await.unwrap();
    assert_eq!(action, Action::requeue(Duration::from_secs(300)));
    assert!(
        s.fake.take().is_empty(),
        "an in-sync resource makes no API call"
    );
    assert_eq!(s.version().await, version, "and no catalog write");
}

#[tokio::test]
async fn drift_is_reported_only_by_default() {
    let s = setup(false).await;
    s.apply_tables().await;
    s.apply(&article_user_select(&[])).await;
    let version = s.version().await;
    // Someone edits the managed permission through the metadata API.
    s.server
        .ok(json!({"type": "bulk", "args": [
            {"type": "drop_select_permission", "args": {"table": "article", "role": "user"}},
            {"type": "create_select_permission", "args": {"table": "article", "role": "user",
                "permission": {"columns": "*", "filter": {}}}}]}))
        .await;
    let drift = s.drift_items().await;
    assert_eq!(drift.len(), 1, "{drift:?}");
    assert_eq!(
        drift[0]["definition"]["object"],
        "permission:public.article.user.select"
    );
    assert_eq!(drift[0]["definition"]["drift"], "modified");
    assert_eq!(
        drift[0]["definition"]["fields"],
        json!([
            "permission.columns",
            "permission.filter",
            "permission.limit"
        ])
    );
    assert_eq!(
        drift[0]["definition"]["owner"]["name"],
        "article-user-select"
    );
    s.reconcile(&article_user_select(&[])).await.unwrap();
    let calls = s.fake.take();
    assert_eq!(
        calls[0].line(),
        format!("PATCH {PERMISSIONS}/article-user-select{SSA}")
    );
    assert_eq!(events(&calls), vec!["DriftDetected"]);
    let (status, reason, message) = s.condition(&article_user_select(&[]), "Drifted");
    assert_eq!((status.as_str(), reason.as_str()), ("True", "Modified"));
    assert!(message.contains("permission.filter"), "{message}");
    assert_eq!(s.condition(&article_user_select(&[]), "Ready").1, "Drifted");
    assert_eq!(
        s.version().await,
        version + 1,
        "report-only leaves the catalog as edited"
    );
    // drop_inconsistent_metadata cannot resolve a disagreement between two sources of truth.
    s.server
        .ok(json!({"type": "drop_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(s.drift_items().await.len(), 1);
    // Dropping it entirely turns the drift into `missing`.
    s.server
        .ok(json!({"type": "drop_select_permission", "args": {"table": "article", "role": "user"}}))
        .await;
    assert_eq!(s.drift_items().await[0]["definition"]["drift"], "missing");
    s.reconcile(&article_user_select(&[])).await.unwrap();
    assert_eq!(
        s.condition(&article_user_select(&[]), "Drifted").1,
        "Missing"
    );
    assert!(
        events(&s.fake.take()).is_empty(),
        "no new Event without a transition"
    );
}

#[tokio::test]
async fn self_heal_restores_drifted_objects() {
    let s = setup(false).await;
    s.apply_tables().await;
    let healing = article_user_select(&[("basalt.dev/self-heal", "true")]);
    s.apply(&healing).await;
    let wanted = s.server.export().await;
    s.server
        .ok(json!({"type": "drop_select_permission", "args": {"table": "article", "role": "user"}}))
        .await;
    assert_eq!(s.drift_items().await.len(), 1);
    s.reconcile(&healing).await.unwrap();
    let calls = s.fake.take();
    assert_eq!(events(&calls), vec!["DriftCorrected"]);
    assert_eq!(
        s.server.export().await,
        wanted,
        "the permission is back as declared"
    );
    assert!(s.drift_items().await.is_empty());
    assert_eq!(s.condition(&healing, "Drifted").1, "Corrected");
    assert_eq!(s.condition(&healing, "Ready").1, "Applied");
}

#[tokio::test]
async fn controller_wide_self_heal_and_sync_request() {
    let s = setup(true).await;
    s.apply(&article()).await;
    s.server
        .ok(json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "article", "custom_root_fields": {}}}))
        .await;
    s.reconcile(&article()).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["DriftCorrected"]);
    assert_eq!(
        s.server.export().await["tables"][0]["configuration"]["custom_root_fields"]["select"],
        "posts"
    );

    // Report-only controller: a new sync-requested-at value re-applies once.
    // (No relationship here: a sync request counts as handled once everything landed.)
    let s = setup(false).await;
    let article = || {
        tracked(
            "article",
            json!({"table": {"name": "article"},
            "configuration": {"customRootFields": {"select": "posts"}}}),
        )
    };
    s.apply(&article()).await;
    s.server
        .ok(json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "article", "custom_root_fields": {}}}))
        .await;
    s.reconcile(&article()).await.unwrap();
    assert_eq!(s.condition(&article(), "Drifted").0, "True");
    let mut requested = s.fake.get(&article());
    requested.metadata.annotations =
        Some([("basalt.dev/sync-requested-at".to_owned(), "now".to_owned())].into());
    s.fake.put(&requested);
    s.reconcile(&requested).await.unwrap();
    assert_eq!(s.condition(&article(), "Drifted").1, "Corrected");
    assert_eq!(
        s.status(&article()).last_sync_request.as_deref(),
        Some("now")
    );
}

#[tokio::test]
async fn deletion_drops_the_objects_then_releases_the_finalizer() {
    let s = setup(false).await;
    s.apply_tables().await;
    s.apply(&article_user_select(&[])).await;
    s.delete(&article_user_select(&[]));
    s.reconcile(&article_user_select(&[])).await.unwrap();
    let calls = s.fake.take();
    let lines: Vec<String> = calls.iter().map(Call::line).collect();
    assert_eq!(
        lines,
        vec![
            EVENTS.to_owned(),
            format!("PATCH {PERMISSIONS}/article-user-select?")
        ],
        "{calls:#?}"
    );
    assert_eq!(events(&calls), vec!["Deleted"]);
    assert_eq!(
        calls[1].body,
        json!([{"op": "test", "path": "/metadata/finalizers/0", "value": "basalt.dev/catalog-cleanup"},
               {"op": "remove", "path": "/metadata/finalizers/0"}])
    );
    let export = s.server.export().await;
    assert!(
        export["tables"][0].get("select_permissions").is_none(),
        "{export}"
    );
    let client = s.ctx.pool.get().await.unwrap();
    let rows = managed::load(&**client).await.unwrap();
    assert!(rows.iter().all(|r| r.owner.name != "article-user-select"));
}

#[tokio::test]
async fn deletion_blocked_by_dependants_keeps_the_finalizer() {
    let s = setup(false).await;
    s.apply_tables().await;
    s.delete(&author());
    let err = s.reconcile(&author()).await.expect_err("blocked");
    assert!(matches!(err, reconcile::Error::DeletionBlocked(_)), "{err}");
    let calls = s.fake.take();
    assert_eq!(events(&calls), vec!["DeletionBlocked"]);
    assert!(
        calls
            .iter()
            .all(|c| !c.uri.starts_with(&format!("{TABLES}/author?"))),
        "the finalizer stays: {calls:#?}"
    );
    let (_, reason, message) = s.condition(&author(), "Ready");
    assert_eq!(reason, "DeletionBlocked");
    assert!(message.contains("dependency-error"), "{message}");
    // Once the dependant is gone, the deletion converges.
    s.delete(&article());
    s.reconcile(&article()).await.unwrap();
    s.reconcile(&author()).await.unwrap();
    assert_eq!(s.server.export().await["tables"], json!([]));
}

/// The capture triggers Basalt installed in Postgres.
async fn captures(db_url: &str) -> Value {
    query_json(
        db_url,
        "SELECT tgname FROM pg_trigger WHERE tgname LIKE 'notify\\_basalt\\_%' ORDER BY tgname",
    )
    .await
}

/// The event log of trigger `name`, oldest first.
async fn event_log(db_url: &str, name: &str) -> Value {
    query_json(
        db_url,
        &format!(
            "SELECT id, delivered, archived FROM basalt_catalog.event_log \
             WHERE trigger_name = '{name}' ORDER BY created_at, id"
        ),
    )
    .await
}

/// The table entry `name` of an export.
fn exported_table(export: &Value, name: &str) -> Value {
    export["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"]["name"] == name)
        .cloned()
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn event_trigger_is_applied_replaced_reported_and_removed() {
    let s = setup(false).await;
    s.apply_tables().await;
    let db = s.server.db_url.clone();
    // Port 9 refuses connections: events stay undelivered, retried a minute later.
    let trigger: EventTrigger = resource(
        "article-status",
        json!({"name": "article_status", "table": {"name": "article"},
            "webhook": "http://127.0.0.1:9/status",
            "update": {"columns": ["status"], "payload": ["id", "status"]},
            "headers": [{"name": "X-Source", "value": "basalt"}],
            "retryConf": {"numRetries": 5, "intervalSec": 60}}),
    );
    let calls = s.apply(&trigger).await;
    assert_eq!(events(&calls), vec!["Applied"], "{calls:#?}");
    assert_eq!(
        calls[0].line(),
        format!(
            "PATCH /apis/basalt.dev/v1alpha1/namespaces/shop/eventtriggers/article-status{SSA}"
        )
    );
    assert_eq!(s.condition(&trigger, "Ready").1, "Applied");
    assert_eq!(s.condition(&trigger, "Consistent").0, "True");
    assert_eq!(
        s.status(&trigger).object_keys,
        vec!["event_trigger:article_status"]
    );
    assert_eq!(
        captures(&db).await,
        json!([{"tgname": "notify_basalt_article_status_UPDATE"}])
    );

    // In the catalog as declared, owned by the resource.
    let r = s
        .server
        .ok(json!({"type": "export_metadata", "args": {"include_owners": true}}))
        .await;
    assert_eq!(
        r["owners"]["event_trigger:article_status"],
        json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "EventTrigger", "namespace": NS, "name": "article-status"}),
        "{r}"
    );
    assert_eq!(
        exported_table(&r, "article")["event_triggers"],
        json!([{"name": "article_status",
            "definition": {"enable_manual": false,
                "update": {"columns": ["status"], "payload": ["id", "status"]}},
            "retry_conf": {"num_retries": 5, "interval_sec": 60, "timeout_sec": 60},
            "webhook": "http://127.0.0.1:9/status",
            "headers": [{"name": "X-Source", "value": "basalt"}]}])
    );

    // A row change waits in the event log.
    s.server
        .sql("UPDATE article SET status = 'draft' WHERE id = 1")
        .await;
    let log = event_log(&db, "article_status").await;
    assert_eq!(log.as_array().unwrap().len(), 1, "{log}");
    let event_id = log[0]["id"].clone();

    // A spec edit replaces the trigger in place: its undelivered event stays in the log.
    let mut edited = s.fake.get(&trigger);
    edited.metadata.generation = Some(2);
    edited.spec.webhook = Some("http://127.0.0.1:9/v2".into());
    edited.spec.insert = Some(serde_json::from_value(json!({"columns": "*"})).unwrap());
    s.fake.put(&edited);
    s.reconcile(&edited).await.unwrap();
    s.fake.take();
    assert_eq!(s.condition(&edited, "Ready").1, "Applied");
    assert_eq!(s.status(&edited).observed_generation, Some(2));
    let exported = exported_table(&s.server.export().await, "article");
    assert_eq!(
        exported["event_triggers"][0]["webhook"],
        "http://127.0.0.1:9/v2"
    );
    assert_eq!(
        exported["event_triggers"][0]["definition"]["insert"],
        json!({"columns": "*"})
    );
    assert_eq!(
        captures(&db).await,
        json!([{"tgname": "notify_basalt_article_status_INSERT"},
               {"tgname": "notify_basalt_article_status_UPDATE"}])
    );
    let log = event_log(&db, "article_status").await;
    assert_eq!(
        (&log[0]["id"], &log[0]["archived"], &log[0]["delivered"]),
        (&event_id, &json!(false), &json!(false)),
        "{log}"
    );

    // A capture dropped in Postgres makes the trigger inconsistent, and the report names
    // the resource to look at.
    s.server
        .sql("DROP TRIGGER \"notify_basalt_article_status_INSERT\" ON article")
        .await;
    let broken: Vec<Value> = s
        .inconsistent()
        .await
        .into_iter()
        .filter(|i| i["type"] == "event_trigger")
        .collect();
    assert_eq!(broken.len(), 1, "{broken:?}");
    assert_eq!(
        broken[0]["owner"],
        json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "EventTrigger", "namespace": NS, "name": "article-status"})
    );
    s.server
        .ok(json!({"type": "reload_metadata", "args": {}}))
        .await;
    assert_eq!(captures(&db).await.as_array().unwrap().len(), 2);

    // Changed through /v1/query behind the resource's back: drift, reported only.
    s.server
        .ok(
            json!({"type": "create_event_trigger", "args": {"name": "article_status",
            "table": "article", "webhook": "http://127.0.0.1:9/elsewhere",
            "update": {"columns": "*"}, "replace": true}}),
        )
        .await;
    let drift = s.drift_items().await;
    assert_eq!(drift.len(), 1, "{drift:?}");
    assert_eq!(
        drift[0]["definition"]["object"],
        "event_trigger:article_status"
    );
    assert_eq!(drift[0]["definition"]["drift"], "modified");
    assert_eq!(drift[0]["definition"]["owner"]["kind"], "EventTrigger");
    assert_eq!(
        drift[0]["definition"]["fields"],
        json!([
            "configuration.definition",
            "configuration.headers",
            "configuration.retry_conf",
            "configuration.webhook"
        ])
    );
    s.reconcile(&edited).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["DriftDetected"]);
    let (status, reason, _) = s.condition(&edited, "Drifted");
    assert_eq!((status.as_str(), reason.as_str()), ("True", "Modified"));
    assert_eq!(s.condition(&edited, "Ready").1, "Drifted");
    // A sync request puts the declared trigger back (replaced again, events kept).
    let mut requested = s.fake.get(&edited);
    requested.metadata.annotations =
        Some([("basalt.dev/sync-requested-at".to_owned(), "now".to_owned())].into());
    s.fake.put(&requested);
    s.reconcile(&requested).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["DriftCorrected"]);
    assert!(s.drift_items().await.is_empty());
    assert_eq!(
        exported_table(&s.server.export().await, "article")["event_triggers"][0]["webhook"],
        "http://127.0.0.1:9/v2"
    );
    assert_eq!(event_log(&db, "article_status").await[0]["archived"], false);

    // Deleting the resource deletes the trigger: captures gone, pending events archived.
    s.delete(&requested);
    s.reconcile(&requested).await.unwrap();
    let calls = s.fake.take();
    assert_eq!(events(&calls), vec!["Deleted"], "{calls:#?}");
    assert!(calls
        .iter()
        .any(|c| c.body.to_string().contains("/metadata/finalizers/0")));
    let exported = exported_table(&s.server.export().await, "article");
    assert_eq!(exported["table"]["name"], "article", "the table stays");
    assert!(exported.get("event_triggers").is_none(), "{exported}");
    assert_eq!(captures(&db).await, json!([]));
    let log = event_log(&db, "article_status").await;
    assert_eq!(
        (&log[0]["archived"], &log[0]["delivered"]),
        (&json!(true), &json!(false)),
        "{log}"
    );
    let client = s.ctx.pool.get().await.unwrap();
    let rows = managed::load(&**client).await.unwrap();
    assert!(rows.iter().all(|r| r.owner.kind != "EventTrigger"));
}

#[tokio::test]
async fn event_trigger_waits_for_its_table_and_reports_a_missing_environment_variable() {
    let s = setup(false).await;
    let waiting: EventTrigger = resource(
        "comment-created",
        json!({"name": "comment_created", "table": {"name": "comment"},
            "webhook": "http://127.0.0.1:9/comments", "insert": {"columns": "*"}}),
    );
    let calls = s.apply(&waiting).await;
    assert_eq!(events(&calls), vec!["ApplyFailed"]);
    let (_, reason, message) = s.condition(&waiting, "Ready");
    assert_eq!(reason, "DependencyNotReady", "{message}");
    s.apply(&tracked("comment", json!({"table": {"name": "comment"}})))
        .await;
    s.reconcile(&waiting).await.unwrap();
    assert_eq!(s.condition(&waiting, "Ready").1, "Applied");

    // The controller resolves environment variables as the engine does: one it lacks is an
    // apply failure naming the variable, retried with backoff.
    let unset = "BASALT_TEST_UNSET_EVENT_WEBHOOK_URL";
    assert!(std::env::var_os(unset).is_none());
    let from_env: EventTrigger = resource(
        "comment-deleted",
        json!({"name": "comment_deleted", "table": {"name": "comment"},
            "webhookFromEnv": unset, "delete": {"columns": "*"}}),
    );
    s.apply(&from_env).await;
    let (_, reason, message) = s.condition(&from_env, "Ready");
    assert_eq!(reason, "ApplyFailed");
    assert!(
        message.contains("not-found") && message.contains(unset),
        "{message}"
    );
    assert!(
        !s.server
            .export()
            .await
            .to_string()
            .contains("comment_deleted"),
        "nothing written"
    );
}

/// A remote schema created through `/v1/query` (here by `replace_metadata`), adopted by a
/// RemoteSchema whose status then reports the server as the catalog last saw it; deleted with
/// the orphan policy, it stays in the catalog. No `add_remote_schema` runs.
#[tokio::test]
async fn remote_schema_is_adopted_reports_its_server_and_is_orphaned() {
    let s = setup(false).await;
    let server = RemoteServer::start(newsletter_schema()).await;
    let mut document = s.server.export().await;
    document["remote_schemas"] = json!([{"name": "newsletter", "comment": "subscribers",
        "definition": {"url": server.url, "timeout_seconds": 10}}]);
    s.server
        .ok(json!({"type": "replace_metadata", "args": document}))
        .await;
    let spec = json!({"name": "newsletter", "comment": "subscribers",
        "definition": {"url": server.url, "timeoutSeconds": 10}});
    let plain: RemoteSchema = resource("newsletter", spec.clone());
    let calls = s.apply(&plain).await;
    assert_eq!(events(&calls), vec!["Conflict"]);
    assert_eq!(
        calls[0].line(),
        format!("PATCH {REMOTE_SCHEMAS}/newsletter{SSA}")
    );
    let (_, reason, message) = s.condition(&plain, "Ready");
    assert_eq!(reason, "Conflict");
    assert!(
        message.contains("remote_schema:newsletter") && message.contains("basalt.dev/adopt"),
        "{message}"
    );
    assert_eq!(s.remote(&plain), None, "not reported before it is applied");

    // The catalog's record of the last introspection (written by the engine when it
    // introspects; set here so the test does not depend on when that happens).
    let db = s.server.db_url.clone();
    crate::harness::run_sql(
        &db,
        "INSERT INTO basalt_catalog.remote_schemas (name, definition_hash, introspection, introspected_at)
         VALUES ('newsletter', 'sha256:test', '{}', '2026-01-02T03:04:05Z')
         ON CONFLICT (name) DO UPDATE SET introspected_at = EXCLUDED.introspected_at,
             error = NULL, failed_at = NULL",
    )
    .await;
    let mut adopting = s.fake.get(&plain);
    adopting.metadata.annotations =
        Some([("basalt.dev/adopt".to_owned(), "true".to_owned())].into());
    s.fake.put(&adopting);
    s.reconcile(&adopting).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["Adopted"]);
    assert_eq!(s.condition(&adopting, "Ready").1, "Applied");
    assert_eq!(
        s.status(&adopting).object_keys,
        vec!["remote_schema:newsletter"]
    );
    assert_eq!(
        s.remote(&adopting),
        Some(RemoteServerStatus {
            reachable: true,
            last_introspected: Some("2026-01-02T03:04:05Z".into()),
            last_error: None,
            last_error_time: None,
        })
    );
    let r = s
        .server
        .ok(json!({"type": "export_metadata", "args": {"include_owners": true}}))
        .await;
    assert_eq!(
        r["owners"]["remote_schema:newsletter"],
        json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "RemoteSchema", "namespace": NS, "name": "newsletter"}),
        "{r}"
    );
    // In sync, nothing new known: no write, no API call.
    let version = s.version().await;
    s.reconcile(&adopting).await.unwrap();
    assert!(s.fake.take().is_empty());
    assert_eq!(s.version().await, version);

    // A failed introspection: the status says so, and keeps when it last succeeded.
    crate::harness::run_sql(
        &db,
        "UPDATE basalt_catalog.remote_schemas SET error = 'connection refused',
             failed_at = '2026-01-02T04:00:00Z' WHERE name = 'newsletter'",
    )
    .await;
    s.reconcile(&adopting).await.unwrap();
    let calls = s.fake.take();
    assert!(
        calls
            .iter()
            .any(|c| c.line() == format!("PATCH {REMOTE_SCHEMAS}/newsletter{SSA}")),
        "{calls:#?}"
    );
    assert_eq!(
        s.remote(&adopting),
        Some(RemoteServerStatus {
            reachable: false,
            last_introspected: Some("2026-01-02T03:04:05Z".into()),
            last_error: Some("connection refused".into()),
            last_error_time: Some("2026-01-02T04:00:00Z".into()),
        })
    );

    // Deleted with the orphan policy: ownership is released, the remote schema stays.
    let mut orphaning = s.fake.get(&adopting);
    orphaning
        .metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert("basalt.dev/deletion-policy".into(), "orphan".into());
    s.fake.put(&orphaning);
    s.delete(&orphaning);
    s.reconcile(&orphaning).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["Deleted"]);
    assert_eq!(
        s.server.export().await["remote_schemas"][0]["name"],
        "newsletter"
    );
    let client = s.ctx.pool.get().await.unwrap();
    let rows = managed::load(&**client).await.unwrap();
    assert!(rows.iter().all(|r| r.owner.kind != "RemoteSchema"));
}

/// Needs `add_remote_schema` (the metadata half of remote schemas): a RemoteSchema is
/// introspected with its headers (one from the environment), reported reachable, replaced by
/// remove + add on a spec change, reported as drift when changed through `/v1/query`, put back
/// on a sync request, and removed with the resource.
#[tokio::test]
async fn remote_schema_is_applied_replaced_reported_and_removed() {
    blog_newsletter();
    let server = RemoteServer::start(newsletter_schema()).await;
    let s = setup(false).await;
    let remote: RemoteSchema = resource(
        "newsletter",
        json!({"name": "newsletter", "comment": "subscribers", "definition": {
            "url": server.url, "timeoutSeconds": 10,
            "headers": [{"name": "Authorization", "valueFromEnv": NEWSLETTER_TOKEN_ENV},
                        {"name": "X-Source", "value": "basalt"}]}}),
    );
    let calls = s.apply(&remote).await;
    assert_eq!(events(&calls), vec!["Applied"], "{calls:#?}");
    assert_eq!(
        calls[0].line(),
        format!("PATCH {REMOTE_SCHEMAS}/newsletter{SSA}")
    );
    assert_eq!(s.condition(&remote, "Ready").1, "Applied");
    assert_eq!(s.condition(&remote, "Consistent").0, "True");
    assert_eq!(
        s.status(&remote).object_keys,
        vec!["remote_schema:newsletter"]
    );
    // Introspected with its headers, the secret one read from the environment.
    let seen = server.headers();
    assert!(
        seen.iter()
            .any(|h| h["authorization"] == NEWSLETTER_TOKEN && h["x-source"] == "basalt"),
        "{seen:?}"
    );
    let status = s.remote(&remote).expect("status.remote");
    assert!(status.reachable, "{status:?}");
    assert!(status.last_introspected.is_some(), "{status:?}");
    assert_eq!(status.last_error, None);

    // In the catalog as declared (the secret by its variable's name), owned by the resource.
    let r = s
        .server
        .ok(json!({"type": "export_metadata", "args": {"include_owners": true}}))
        .await;
    assert_eq!(
        r["remote_schemas"],
        json!([{"name": "newsletter", "comment": "subscribers", "definition": {
            "url": server.url, "timeout_seconds": 10,
            "headers": [{"name": "Authorization", "value_from_env": NEWSLETTER_TOKEN_ENV},
                        {"name": "X-Source", "value": "basalt"}]}}]),
        "{r}"
    );
    assert_eq!(
        r["owners"]["remote_schema:newsletter"],
        json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "RemoteSchema", "namespace": NS, "name": "newsletter"})
    );

    // A spec edit: removed and added again in one write.
    let mut edited = s.fake.get(&remote);
    edited.metadata.generation = Some(2);
    edited.spec.definition.timeout_seconds = Some(20);
    s.fake.put(&edited);
    s.reconcile(&edited).await.unwrap();
    s.fake.take();
    assert_eq!(s.condition(&edited, "Ready").1, "Applied");
    assert_eq!(s.status(&edited).observed_generation, Some(2));
    assert_eq!(
        s.server.export().await["remote_schemas"][0]["definition"]["timeout_seconds"],
        20
    );

    // Changed through /v1/query behind the resource's back: drift, reported only.
    s.server
        .ok(json!({"type": "bulk", "args": [
            {"type": "remove_remote_schema", "args": {"name": "newsletter"}},
            {"type": "add_remote_schema", "args": {"name": "newsletter",
                "definition": {"url": server.url, "timeout_seconds": 30}}}]}))
        .await;
    let drift = s.drift_items().await;
    assert_eq!(drift.len(), 1, "{drift:?}");
    assert_eq!(drift[0]["definition"]["object"], "remote_schema:newsletter");
    assert_eq!(drift[0]["definition"]["drift"], "modified");
    assert_eq!(drift[0]["definition"]["owner"]["kind"], "RemoteSchema");
    assert_eq!(
        drift[0]["definition"]["fields"],
        json!([
            "comment",
            "definition.headers",
            "definition.timeout_seconds"
        ])
    );
    s.reconcile(&edited).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["DriftDetected"]);
    let (status, reason, _) = s.condition(&edited, "Drifted");
    assert_eq!((status.as_str(), reason.as_str()), ("True", "Modified"));
    assert_eq!(s.condition(&edited, "Ready").1, "Drifted");
    // A sync request puts the declared definition back.
    let mut requested = s.fake.get(&edited);
    requested.metadata.annotations =
        Some([("basalt.dev/sync-requested-at".to_owned(), "now".to_owned())].into());
    s.fake.put(&requested);
    s.reconcile(&requested).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["DriftCorrected"]);
    assert!(s.drift_items().await.is_empty());
    assert_eq!(
        s.server.export().await["remote_schemas"][0]["definition"]["timeout_seconds"],
        20
    );

    // The remote goes down; a reload records the failure, and the status reports it
    // unreachable with the error (its stored schema is still served).
    let mut server = server;
    server.stop().await;
    s.server
        .ok(json!({"type": "reload_metadata", "args": {"reload_remote_schemas": true}}))
        .await;
    s.reconcile(&requested).await.unwrap();
    s.fake.take();
    let status = s.remote(&requested).expect("status.remote");
    assert!(!status.reachable, "{status:?}");
    assert!(status.last_error.is_some(), "{status:?}");
    assert!(status.last_introspected.is_some(), "{status:?}");

    // Deleting the resource removes the remote schema.
    s.delete(&requested);
    s.reconcile(&requested).await.unwrap();
    let calls = s.fake.take();
    assert_eq!(events(&calls), vec!["Deleted"], "{calls:#?}");
    let exported = s.server.export().await;
    assert!(
        exported
            .get("remote_schemas")
            .and_then(Value::as_array)
            .is_none_or(|r| r.is_empty()),
        "{exported}"
    );
    let client = s.ctx.pool.get().await.unwrap();
    let rows = managed::load(&**client).await.unwrap();
    assert!(rows.iter().all(|r| r.owner.kind != "RemoteSchema"));
}

/// Needs `add_remote_schema` (the metadata half of remote schemas): a server that does not
/// answer, or a URL variable the controller lacks, is an apply failure, retried; nothing is
/// written.
#[tokio::test]
async fn remote_schema_that_cannot_be_introspected_is_an_apply_failure() {
    let s = setup(false).await;
    // Port 9 refuses connections.
    let down: RemoteSchema = resource(
        "down",
        json!({"name": "down", "definition": {"url": "http://127.0.0.1:9/graphql", "timeoutSeconds": 2}}),
    );
    let calls = s.apply(&down).await;
    assert_eq!(events(&calls), vec!["ApplyFailed"], "{calls:#?}");
    let (_, reason, message) = s.condition(&down, "Ready");
    assert_eq!(reason, "ApplyFailed", "{message}");
    assert_eq!(
        s.remote(&down),
        None,
        "only a successful reconcile reports the server"
    );

    let unset = "BASALT_TEST_UNSET_REMOTE_SCHEMA_URL";
    assert!(std::env::var_os(unset).is_none());
    let from_env: RemoteSchema = resource(
        "from-env",
        json!({"name": "from_env", "definition": {"urlFromEnv": unset}}),
    );
    s.apply(&from_env).await;
    let (_, reason, message) = s.condition(&from_env, "Ready");
    assert_eq!(reason, "ApplyFailed", "{message}");
    assert!(message.contains(unset), "{message}");
    let exported = s.server.export().await.to_string();
    assert!(
        !exported.contains("\"down\"") && !exported.contains("from_env"),
        "nothing written: {exported}"
    );
}

/// A collection whose queries are reordered and changed in its resource ends in the
/// resource's order: applied once, then in sync (no drift item, no Drifted condition, and a
/// second reconcile writes nothing).
#[tokio::test]
async fn query_collection_edits_keep_the_resources_order() {
    let s = setup(false).await;
    let spec = |queries: &[(&str, &str)]| {
        let queries: Vec<Value> = queries
            .iter()
            .map(|(name, query)| json!({"name": name, "query": query}))
            .collect();
        json!({"name": "app", "definition": {"queries": queries}})
    };
    let collection = resource::<QueryCollection>(
        "app",
        spec(&[
            ("a", "query { author { id } }"),
            ("b", "query { article { id } }"),
            ("c", "query { author { name } }"),
        ]),
    );
    s.apply(&collection).await;
    assert_eq!(s.condition(&collection, "Ready").1, "Applied");
    // Reordered, one query changed, one new: c, a (changed), d.
    let mut edited = s.fake.get(&collection);
    edited.metadata.generation = Some(2);
    edited.spec = resource::<QueryCollection>(
        "app",
        spec(&[
            ("c", "query { author { name } }"),
            ("a", "query { author { id name } }"),
            ("d", "query { article { title } }"),
        ]),
    )
    .spec;
    s.fake.put(&edited);
    s.reconcile(&edited).await.unwrap();
    s.fake.take();
    assert_eq!(s.condition(&edited, "Ready").1, "Applied");
    let exported = s.server.export().await;
    let queries: Vec<(String, String)> = exported["query_collections"][0]["definition"]["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            (
                q["name"].as_str().unwrap().to_owned(),
                q["query"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        queries,
        [
            ("c".to_owned(), "query { author { name } }".to_owned()),
            ("a".to_owned(), "query { author { id name } }".to_owned()),
            ("d".to_owned(), "query { article { title } }".to_owned()),
        ]
    );
    assert!(
        s.drift_items().await.is_empty(),
        "{:?}",
        s.drift_items().await
    );
    let version = s.version().await;
    s.reconcile(&edited).await.unwrap();
    assert_eq!(s.version().await, version, "in sync: nothing written again");
    assert!(
        s.status(&edited)
            .conditions
            .iter()
            .all(|c| c.type_ != "Drifted" || c.status == "False"),
        "{:?}",
        s.status(&edited)
    );
}

#[tokio::test]
async fn conflict_backs_off_until_adopted() {
    let s = setup(false).await;
    s.server
        .ok(json!({"type": "track_table", "args": {"table": "article"}}))
        .await;
    let plain = tracked("article", json!({"table": {"name": "article"}}));
    let calls = s.apply(&plain).await;
    assert_eq!(events(&calls), vec!["Conflict"]);
    let (_, reason, message) = s.condition(&plain, "Ready");
    assert_eq!(reason, "Conflict");
    assert!(message.contains("basalt.dev/adopt"), "{message}");
    assert_eq!(s.ctx.failures("TrackedTable/shop/article"), 1);
    s.reconcile(&plain).await.unwrap();
    assert_eq!(s.ctx.failures("TrackedTable/shop/article"), 2);
    assert!(events(&s.fake.take()).is_empty(), "no repeated Event");

    let mut adopting = s.fake.get(&plain);
    adopting.metadata.annotations =
        Some([("basalt.dev/adopt".to_owned(), "true".to_owned())].into());
    adopting.spec = serde_json::from_value(json!({"table": {"name": "article"},
        "configuration": {"customRootFields": {"select": "posts"}}}))
    .unwrap();
    s.fake.put(&adopting);
    s.reconcile(&adopting).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["Adopted"]);
    assert_eq!(s.ctx.failures("TrackedTable/shop/article"), 0);
    assert_eq!(s.condition(&plain, "Ready").1, "Applied");
    let export = s.server.export().await;
    assert_eq!(
        export["tables"][0]["configuration"]["custom_root_fields"]["select"],
        "posts"
    );
}

#[tokio::test]
async fn relationship_waits_for_its_target_without_blocking_the_table() {
    // `posts` needs the popular_article view tracked, which happens later.
    let s2 = setup(false).await;
    let calls = s2
        .apply(&tracked("author", json!({"table": {"name": "author"}, "arrayRelationships": [
            {"name": "posts", "using": {"manualConfiguration": {"remoteTable": {"name": "popular_article"}, "columnMapping": {"id": "author_id"}}}}]})))
        .await;
    assert_eq!(events(&calls), vec!["ApplyFailed"]);
    let waiting = s2
        .fake
        .get(&tracked("author", json!({"table": {"name": "author"}})));
    let (_, reason, message) = s2.condition(&waiting, "Ready");
    assert_eq!(reason, "DependencyNotReady");
    assert!(
        message.contains("relationship:public.author.posts"),
        "{message}"
    );
    assert_eq!(
        s2.server.export().await["tables"][0]["table"]["name"],
        "author",
        "the table is tracked"
    );
    s2.server
        .ok(json!({"type": "track_table", "args": {"table": "popular_article"}}))
        .await;
    s2.reconcile(&waiting).await.unwrap();
    assert_eq!(s2.condition(&waiting, "Ready").1, "Applied");
    let export = s2.server.export().await;
    assert_eq!(
        export["tables"][0]["array_relationships"][0]["name"], "posts",
        "{export}"
    );
}

#[tokio::test]
async fn unchecked_run_sql_drop_makes_resources_inconsistent() {
    let s = setup(false).await;
    s.apply_tables().await;
    s.apply(&article_user_select(&[])).await;
    s.server
        .ok(json!({"type": "run_sql", "args": {"sql": "DROP TABLE comment; DROP TABLE article CASCADE", "check_metadata_consistency": false}}))
        .await;
    s.reconcile(&article()).await.unwrap();
    s.reconcile(&article_user_select(&[])).await.unwrap();
    for (status, what) in [
        (s.condition(&article(), "Consistent"), "table"),
        (
            s.condition(&article_user_select(&[]), "Consistent"),
            "permission",
        ),
    ] {
        assert_eq!(
            (status.0.as_str(), status.1.as_str()),
            ("False", "Inconsistent"),
            "{what}"
        );
    }
    assert_eq!(s.condition(&article(), "Ready").1, "Inconsistent");
    assert!(events(&s.fake.take()).contains(&"Inconsistent".to_owned()));
    // Each inconsistent object says who owns it: the resource to fix, or the API.
    let r = s
        .server
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    let owner_of = |kind: &str| -> Value {
        r["inconsistent_objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["type"] == kind)
            .map(|i| i["owner"].clone())
            .unwrap_or(Value::Null)
    };
    assert_eq!(
        owner_of("table"),
        json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "TrackedTable", "namespace": NS, "name": "article"}),
        "{r}"
    );
    assert_eq!(
        owner_of("select_permission"),
        json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "Permission", "namespace": NS, "name": "article-user-select"})
    );
}

#[tokio::test]
async fn export_says_who_owns_each_object() {
    let s = setup(false).await;
    s.apply_tables().await;
    s.server
        .ok(
            json!({"type": "create_select_permission", "args": {"table": "author", "role": "guest",
            "permission": {"columns": ["id"], "filter": {}}}}),
        )
        .await;
    let plain = s.server.export().await;
    assert!(plain.get("owners").is_none(), "only when asked");
    let r = s
        .server
        .ok(json!({"type": "export_metadata", "args": {"include_owners": true}}))
        .await;
    let owners = &r["owners"];
    assert_eq!(
        owners["table:public.author"],
        json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "TrackedTable", "namespace": NS, "name": "author"}),
        "{owners}"
    );
    assert_eq!(
        owners["relationship:public.author.articles"]["name"],
        "author"
    );
    assert_eq!(owners["permission:public.author.guest.select"], "api");
    // The document itself is unchanged, and can be replaced as it is (owners are ignored).
    let mut document = r.clone();
    document.as_object_mut().unwrap().remove("owners");
    assert_eq!(document, plain);
    s.server
        .ok(json!({"type": "replace_metadata", "args": r}))
        .await;
    assert_eq!(s.server.export().await, plain);
}

#[tokio::test]
async fn resources_build_the_same_catalog_as_the_metadata_api() {
    let s = setup(false).await;
    let resources_json = [
        json!({"kind": "ComputedField", "name": "author-full-name", "spec": {"table": {"name": "author"}, "name": "full_name",
            "definition": {"function": {"name": "author_full_name"}}, "comment": "name and bio"}}),
        json!({"kind": "CustomTypeSet", "name": "types", "spec": {"scalars": [{"name": "Email"}],
            "inputObjects": [{"name": "SignupInput", "fields": [{"name": "email", "type": "Email!"}]}]}}),
        json!({"kind": "QueryCollection", "name": "allowed", "spec": {"name": "allowed",
            "definition": {"queries": [{"name": "titles", "query": "query { article { title } }"}]}}}),
        json!({"kind": "AllowListEntry", "name": "allowed", "spec": {"collection": "allowed"}}),
        json!({"kind": "EventTrigger", "name": "article-status", "spec": {"name": "article_status",
            "table": {"name": "article"}, "webhook": "http://127.0.0.1:9/status",
            "update": {"columns": ["status"], "payload": "*"}, "delete": {"columns": "*"},
            "headers": [{"name": "X-Source", "value": "basalt"}],
            "retryConf": {"numRetries": 2, "timeoutSec": 5}, "enableManual": true}}),
    ];
    // Dependants first: they wait (and are retried) until what they need exists.
    s.apply(&article_user_select(&[])).await;
    assert_eq!(
        s.condition(&article_user_select(&[]), "Ready").1,
        "DependencyNotReady"
    );
    s.apply(&article()).await;
    s.apply(&author()).await;
    s.reconcile(&article()).await.unwrap();
    s.reconcile(&article_user_select(&[])).await.unwrap();
    for r in &resources_json {
        let (name, spec) = (r["name"].as_str().unwrap(), r["spec"].clone());
        match r["kind"].as_str().unwrap() {
            "ComputedField" => s.apply(&resource::<ComputedField>(name, spec)).await,
            "CustomTypeSet" => s.apply(&resource::<CustomTypeSet>(name, spec)).await,
            "QueryCollection" => s.apply(&resource::<QueryCollection>(name, spec)).await,
            "EventTrigger" => s.apply(&resource::<EventTrigger>(name, spec)).await,
            _ => s.apply(&resource::<AllowListEntry>(name, spec)).await,
        };
    }
    assert_eq!(s.condition(&article_user_select(&[]), "Ready").1, "Applied");

    // The same metadata through /v1/query on another database.
    let imperative = TestServer::with_fixture(BLOG).await;
    imperative
        .ok(json!({"type": "bulk", "args": [
            {"type": "track_table", "version": 2, "args": {"table": "article", "configuration": {"custom_root_fields": {"select": "posts"}}}},
            {"type": "track_table", "args": {"table": "author"}},
            {"type": "create_object_relationship", "args": {"table": "article", "name": "author", "using": {"foreign_key_constraint_on": "author_id"}}},
            {"type": "create_array_relationship", "args": {"table": "author", "name": "articles", "using": {"foreign_key_constraint_on": {"table": "article", "column": "author_id"}}}},
            {"type": "create_select_permission", "args": {"table": "article", "role": "user", "permission": {"columns": ["id", "title"], "filter": {"author_id": {"_eq": "X-Svc-User-Id"}}, "limit": 10}}},
            {"type": "add_computed_field", "args": {"table": "author", "name": "full_name", "definition": {"function": "author_full_name"}, "comment": "name and bio"}},
            {"type": "set_custom_types", "args": {"scalars": [{"name": "Email"}], "input_objects": [{"name": "SignupInput", "fields": [{"name": "email", "type": "Email!"}]}]}},
            {"type": "create_query_collection", "args": {"name": "allowed", "definition": {"queries": [{"name": "titles", "query": "query { article { title } }"}]}}},
            {"type": "add_collection_to_allowlist", "args": {"collection": "allowed"}},
            {"type": "create_event_trigger", "args": {"name": "article_status", "table": "article",
                "webhook": "http://127.0.0.1:9/status",
                "update": {"columns": ["status"], "payload": "*"}, "delete": {"columns": "*"},
                "headers": [{"name": "X-Source", "value": "basalt"}],
                "retry_conf": {"num_retries": 2, "timeout_sec": 5}, "enable_manual": true}}
        ]}))
        .await;
    let ours = normalize(s.server.export().await);
    let theirs = normalize(imperative.export().await);
    assert_eq!(ours, theirs);
    assert!(s.inconsistent().await.is_empty());
}

/// Tables in name order (the order resources were applied in is not meaningful).
fn normalize(mut export: Value) -> Value {
    if let Some(tables) = export["tables"].as_array_mut() {
        tables.sort_by_key(|t| t["table"]["name"].as_str().unwrap_or_default().to_owned());
    }
    export
}

#[tokio::test]
async fn reject_mode_refuses_imperative_changes_to_managed_objects() {
    let db = crate::harness::fresh_database().await;
    crate::harness::run_sql(&db, BLOG).await;
    let server = TestServer::on(&db, |c| {
        c.managed_metadata = basalt::config::ManagedMetadata::Reject;
    })
    .await;
    let fake = Arc::new(FakeApi::default());
    let s = Setup {
        ctx: context(fake.clone(), &db, false),
        fake,
        server,
    };
    s.apply(&article()).await;
    s.apply(&article_user_select(&[])).await;
    let response = s
        .server
        .fails(
            json!({"type": "drop_select_permission", "args": {"table": "article", "role": "user"}}),
            400,
            "not-supported",
            "$.args",
        )
        .await;
    assert_eq!(
        response["error"],
        "permission:public.article.user.select is managed by basalt.dev/v1alpha1 Permission shop/article-user-select"
    );
    s.server
        .fails(
            json!({"type": "clear_metadata", "args": {}}),
            400,
            "not-supported",
            "$.args",
        )
        .await;
    // Unmanaged objects are still the metadata API's.
    s.server
        .ok(json!({"type": "track_table", "args": {"table": "comment"}}))
        .await;
    s.server
        .ok(json!({"type": "untrack_table", "args": {"table": "comment"}}))
        .await;
}

#[tokio::test]
async fn orphans_are_reported_and_release_ownership_forgets_them() {
    let s = setup(false).await;
    s.apply_tables().await;
    let orphaned = reconcile::mark_orphans(&s.ctx.pool, &Default::default(), &[Some(NS.into())])
        .await
        .unwrap();
    assert_eq!(
        orphaned,
        vec![
            "relationship:public.article.author",
            "relationship:public.author.articles",
            "table:public.article",
            "table:public.author"
        ]
    );
    let drift = s.drift_items().await;
    assert_eq!(drift.len(), 4);
    assert!(drift.iter().all(|d| d["definition"]["drift"] == "orphaned"));
    // Unwatched namespaces are never judged.
    let other = reconcile::mark_orphans(&s.ctx.pool, &Default::default(), &[Some("other".into())])
        .await
        .unwrap();
    assert!(other.is_empty());
    let client = s.ctx.pool.get().await.unwrap();
    assert_eq!(managed::release(&**client, Some(NS)).await.unwrap(), 4);
    assert!(s.drift_items().await.is_empty());
    assert!(s.inconsistent().await.is_empty());
}

#[tokio::test]
async fn deletion_in_any_order_converges() {
    let s = setup(false).await;
    s.apply_tables().await;
    s.apply(&article_user_select(&[])).await;
    // The referenced table first: blocked until the table whose relationship points at it
    // is gone; the permission last, after its table took it along.
    s.delete(&author());
    assert!(s.reconcile(&author()).await.is_err());
    s.delete(&article());
    s.reconcile(&article()).await.unwrap();
    s.reconcile(&author()).await.unwrap();
    s.delete(&article_user_select(&[]));
    s.reconcile(&article_user_select(&[])).await.unwrap();
    assert_eq!(s.server.export().await["tables"], json!([]));
    let client = s.ctx.pool.get().await.unwrap();
    assert!(managed::load(&**client).await.unwrap().is_empty());
    assert!(s.drift_items().await.is_empty());
}

#[tokio::test]
async fn one_leader_and_failover_when_it_dies() {
    let db = crate::harness::fresh_database().await;
    let config: tokio_postgres::Config = db.parse().unwrap();
    let retry = Duration::from_millis(50);
    let first = leader::acquire(&config, retry).await;
    let second = tokio::spawn({
        let config = config.clone();
        async move { leader::acquire(&config, retry).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!second.is_finished(), "a second controller stands by");
    drop(first);
    let _leader = tokio::time::timeout(Duration::from_secs(5), second)
        .await
        .expect("the standby takes over")
        .unwrap();
}

#[tokio::test]
async fn standby_watches_without_writing_and_takes_over_from_its_cache() {
    let db = crate::harness::fresh_database().await;
    let config: tokio_postgres::Config = db.parse().unwrap();
    let held = leader::acquire(&config, Duration::from_millis(50)).await;
    let fake = Arc::new(FakeApi::default());
    // Already in the API when the standby starts: its cache holds it.
    fake.put(&tracked("article", json!({"table": {"name": "article"}})));
    let client = crate::controller::kube_fake::client(fake.clone());
    let (pool, _) = basalt::pool::pool_for(&db, 2).unwrap();
    {
        let mut c = pool.get().await.unwrap();
        basalt::catalog::migrate(&mut c).await.unwrap();
    }
    let settings = basalt::config::ControllerConfig {
        watch_namespaces: vec![NS.into()],
        leader_retry_ms: 50,
        ..Default::default()
    };
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let ready = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let metrics = basalt::controller::metrics::ControllerMetrics::default();
    let task = tokio::spawn(basalt::controller::run::run_with(
        client,
        pool,
        config,
        settings,
        ready.clone(),
        metrics.clone(),
        stopped,
    ));
    for _ in 0..100 {
        if ready.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        ready.load(std::sync::atomic::Ordering::Relaxed),
        "a standby is ready once its caches are synced"
    );
    // Time for a (wrong) reconcile to show up.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        metrics
            .render()
            .unwrap()
            .contains("basalt_controller_leader 0"),
        "a standby is not the leader"
    );
    let standby = fake.take();
    let writes: Vec<_> = standby.iter().filter(|c| c.method != "GET").collect();
    assert!(writes.is_empty(), "a standby never writes: {writes:#?}");
    let table_watches = |calls: &[Call]| {
        calls
            .iter()
            .filter(|c| c.uri.starts_with(&format!("{TABLES}?")) && c.uri.contains("watch=true"))
            .count()
    };
    assert_eq!(
        table_watches(&standby),
        1,
        "a standby watches: {standby:#?}"
    );
    drop(held);
    let finalizer_patch =
        |c: &Call| c.method == "PATCH" && c.uri.starts_with(&format!("{TABLES}/article?"));
    let mut calls = Vec::new();
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        calls.extend(fake.take());
        if calls.iter().any(finalizer_patch) {
            break;
        }
    }
    assert!(
        calls.iter().any(finalizer_patch),
        "the new leader reconciles what its cache held: {calls:#?}"
    );
    assert_eq!(
        table_watches(&calls),
        0,
        "no new watch (nor its list) on takeover: {calls:#?}"
    );
    assert!(metrics
        .render()
        .unwrap()
        .contains("basalt_controller_leader 1"));
    let _ = stop.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
}

#[tokio::test]
async fn running_controller_applies_resources_and_heals_on_catalog_notify() {
    let db = crate::harness::fresh_database().await;
    crate::harness::run_sql(&db, BLOG).await;
    let server = TestServer::on(&db, |_| {}).await;
    let fake = Arc::new(FakeApi::default());
    let finalized = |mut m: ObjectMeta| {
        m.finalizers = Some(vec!["basalt.dev/catalog-cleanup".into()]);
        m
    };
    let mut table = tracked("article", json!({"table": {"name": "article"}}));
    table.metadata = finalized(table.metadata);
    let mut perm = article_user_select(&[]);
    perm.metadata = finalized(perm.metadata);
    fake.put(&table);
    fake.put(&perm);
    let (pool, _) = basalt::pool::pool_for(&db, 4).unwrap();
    let settings = basalt::config::ControllerConfig {
        watch_namespaces: vec![NS.into()],
        self_heal: true,
        leader_retry_ms: 50,
        ..Default::default()
    };
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let metrics = basalt::controller::metrics::ControllerMetrics::default();
    let task = tokio::spawn(basalt::controller::run::run_with(
        crate::controller::kube_fake::client(fake.clone()),
        pool,
        db.parse().unwrap(),
        settings,
        Arc::new(Default::default()),
        metrics.clone(),
        stopped,
    ));
    let has_permission = |export: &Value| export["tables"][0].get("select_permissions").is_some();
    let mut applied = false;
    for _ in 0..200 {
        if has_permission(&server.export().await) {
            applied = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(applied, "the running controller applies both resources");
    // An imperative drop is noticed through the catalog NOTIFY and healed well before the
    // 10 s poll or the 300 s resync could have done it.
    server
        .ok(json!({"type": "drop_select_permission", "args": {"table": "article", "role": "user"}}))
        .await;
    let mut healed = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if has_permission(&server.export().await) {
            healed = true;
            break;
        }
    }
    assert!(healed, "self-heal after the NOTIFY");
    // Every reconcile is counted by kind once it finishes; this replica leads.
    let reconciles = |kind: &str| -> f64 {
        let text = metrics.render().unwrap();
        let lines = text.lines().map(|l| Ok(l.to_owned()));
        prometheus_parse::Scrape::parse(lines)
            .unwrap()
            .samples
            .iter()
            .filter(|s| {
                s.metric == "basalt_controller_reconciles_total"
                    && s.labels.get("kind") == Some(kind)
            })
            .map(|s| match s.value {
                prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) => v,
                _ => 0.0,
            })
            .sum()
    };
    for _ in 0..100 {
        if reconciles("Permission") >= 2.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let text = metrics.render().unwrap();
    assert!(reconciles("TrackedTable") >= 1.0, "{text}");
    assert!(
        reconciles("Permission") >= 2.0,
        "applied, then healed: {text}"
    );
    assert!(text.contains("basalt_controller_leader 1"), "{text}");
    // Every write that queued for a group commit left the queue.
    assert!(text.contains("basalt_controller_commit_queue 0"), "{text}");
    let calls = fake.take();
    assert!(
        calls
            .iter()
            .any(|c| c.method == "POST" && c.body["reason"] == "DriftCorrected"),
        "{calls:#?}"
    );
    let _ = stop.send(true);
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("graceful shutdown")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn suspended_resources_are_left_alone_and_orphan_policy_keeps_objects() {
    let s = setup(false).await;
    let before = s.version().await;
    let suspended = permission(
        "suspended",
        json!({"table": {"name": "article"}, "role": "user", "operation": "delete", "permission": {"filter": {}}}),
        &[("basalt.dev/reconcile", "disabled")],
    );
    s.apply(&suspended).await;
    let (status, reason, _) = s.condition(&suspended, "Ready");
    assert_eq!((status.as_str(), reason.as_str()), ("Unknown", "Suspended"));
    assert_eq!(
        s.version().await,
        before,
        "a suspended resource never touches the catalog"
    );

    let kept = tracked("kept", json!({"table": {"name": "comment"}}));
    let mut kept_meta = kept.clone();
    kept_meta.metadata.annotations =
        Some([("basalt.dev/deletion-policy".to_owned(), "orphan".to_owned())].into());
    s.apply(&kept_meta).await;
    s.delete(&kept_meta);
    s.reconcile(&kept_meta).await.unwrap();
    let calls = s.fake.take();
    assert_eq!(events(&calls), vec!["Deleted"]);
    assert!(
        calls[0].body["note"]
            .as_str()
            .unwrap()
            .contains("released ownership"),
        "{calls:#?}"
    );
    assert_eq!(
        s.server.export().await["tables"][0]["table"]["name"],
        "comment",
        "object kept"
    );
    let client = s.ctx.pool.get().await.unwrap();
    assert!(
        managed::load(&**client).await.unwrap().is_empty(),
        "ownership released"
    );
}

/// Relationship lists in name order: a relationship that waited for its target is appended
/// when it lands, and the order of relationships carries no meaning.
fn sort_relationships(mut export: Value) -> Value {
    for table in export["tables"].as_array_mut().into_iter().flatten() {
        for key in ["object_relationships", "array_relationships"] {
            if let Some(list) = table.get_mut(key).and_then(Value::as_array_mut) {
                list.sort_by_key(|r| r["name"].as_str().unwrap_or_default().to_owned());
            }
        }
    }
    export
}

#[tokio::test]
async fn exported_resources_rebuild_the_catalog_exactly() {
    let source = TestServer::blog().await;
    source
        .ok(json!({"type": "bulk", "args": [
            {"type": "set_custom_types", "args": {
                "scalars": [{"name": "Email", "description": "an address"}],
                "enums": [{"name": "Mood", "values": [{"value": "HAPPY"}, {"value": "SAD", "is_deprecated": true}]}],
                "input_objects": [{"name": "SignupInput", "fields": [{"name": "email", "type": "Email!"}]}],
                "objects": [{"name": "SignupResult", "fields": [{"name": "author_id", "type": "Int!"}],
                    "relationships": [{"name": "author", "type": "object", "remote_table": "author", "field_mapping": {"author_id": "id"}}]}]}},
            {"type": "create_query_collection", "args": {"name": "allowed", "comment": "production",
                "definition": {"queries": [{"name": "titles", "query": "query { article { title } }"}]}}},
            {"type": "add_collection_to_allowlist", "args": {"collection": "allowed"}},
            // An action on the custom types above, with a header from the environment and two
            // roles allowed.
            {"type": "create_action", "args": {"name": "signUp", "comment": "new author",
                "definition": {"handler": "http://127.0.0.1:9/sign-up", "output_type": "SignupResult",
                    "arguments": [{"name": "input", "type": "SignupInput!"}, {"name": "mood", "type": "Mood"}],
                    "headers": [{"name": "X-Path", "value_from_env": "PATH"}],
                    "kind": "asynchronous", "timeout": 15}}},
            {"type": "create_action_permission", "args": {"action": "signUp", "role": "user"}},
            {"type": "create_action_permission", "args": {"action": "signUp", "role": "guest", "comment": "sign-up page"}},
            {"type": "set_table_custom_fields", "version": 2, "args": {"table": "comment",
                "custom_root_fields": {"select_by_pk": "commentById"}, "custom_column_names": {"body": "text"}}},
            // A header read from the environment (PATH: set in every process, engine and
            // controller alike) is exported by the variable's name, never its value.
            {"type": "create_event_trigger", "args": {"name": "article_status", "table": "article",
                "webhook_from_env": "PATH", "update": {"columns": ["status"]}, "insert": {"columns": "*", "payload": ["id"]},
                "headers": [{"name": "X-Path", "value_from_env": "PATH"}, {"name": "X-Source", "value": "basalt"}],
                "retry_conf": {"num_retries": 1}}}
        ]}))
        .await;
    let wanted = source.export().await;
    let metadata = serde_json::from_value(wanted.clone()).unwrap();
    let export = basalt::controller::export::resources(&metadata, NS).unwrap();
    let kinds: BTreeMap<&str, usize> = export.resources.iter().fold(BTreeMap::new(), |mut m, r| {
        *m.entry(r.kind).or_default() += 1;
        m
    });
    assert_eq!(kinds["TrackedTable"], 6);
    assert_eq!(kinds["CustomTypeSet"], 1);
    assert_eq!(kinds["AllowListEntry"], 1);
    assert_eq!(kinds["EventTrigger"], 1);
    assert_eq!(kinds["Action"], 1);
    let action = export
        .resources
        .iter()
        .find(|r| r.kind == "Action")
        .unwrap();
    assert_eq!(action.name, "signup");
    assert_eq!(
        action.manifest["spec"],
        json!({"name": "signUp", "comment": "new author", "definition": {
            "type": "mutation", "kind": "asynchronous",
            "arguments": [{"name": "input", "type": "SignupInput!"}, {"name": "mood", "type": "Mood"}],
            "outputType": "SignupResult", "handler": "http://127.0.0.1:9/sign-up",
            "headers": [{"name": "X-Path", "valueFromEnv": "PATH"}], "timeout": 15},
            "permissions": [{"role": "user"}, {"role": "guest", "comment": "sign-up page"}]})
    );
    let trigger = export
        .resources
        .iter()
        .find(|r| r.kind == "EventTrigger")
        .unwrap();
    assert_eq!(trigger.name, "article-status");
    assert_eq!(
        trigger.manifest["spec"],
        json!({"name": "article_status", "table": {"schema": "public", "name": "article"},
            "webhookFromEnv": "PATH",
            "insert": {"columns": "*", "payload": ["id"]}, "update": {"columns": ["status"]},
            "headers": [{"name": "X-Path", "valueFromEnv": "PATH"}, {"name": "X-Source", "value": "basalt"}],
            "retryConf": {"numRetries": 1, "intervalSec": 10, "timeoutSec": 60}})
    );
    let path = std::env::var("PATH").unwrap();
    let files = export.files().unwrap();
    let (_, yaml) = files
        .iter()
        .find(|(f, _)| f == "eventtrigger-article-status.yaml")
        .expect("one file per resource, named like the others");
    assert!(
        !yaml.contains(&path),
        "no resolved value is exported: {yaml}"
    );

    // Applied to a fresh catalog of the same database schema, through the controller.
    let s = setup(false).await;
    let typed = |r: &basalt::controller::export::Exported| {
        let mut manifest = r.manifest.clone();
        manifest["metadata"]["uid"] = json!(format!("uid-{}-{}", r.kind, r.name));
        manifest["metadata"]["generation"] = json!(1);
        manifest
    };
    macro_rules! each {
        ($r:expr, $run:ident) => {
            match $r.kind {
                "TrackedTable" => drop(
                    s.$run(&serde_json::from_value::<TrackedTable>(typed($r)).unwrap())
                        .await,
                ),
                "Permission" => drop(
                    s.$run(&serde_json::from_value::<Permission>(typed($r)).unwrap())
                        .await,
                ),
                "ComputedField" => drop(
                    s.$run(&serde_json::from_value::<ComputedField>(typed($r)).unwrap())
                        .await,
                ),
                "CustomTypeSet" => drop(
                    s.$run(&serde_json::from_value::<CustomTypeSet>(typed($r)).unwrap())
                        .await,
                ),
                "QueryCollection" => drop(
                    s.$run(&serde_json::from_value::<QueryCollection>(typed($r)).unwrap())
                        .await,
                ),
                "EventTrigger" => drop(
                    s.$run(&serde_json::from_value::<EventTrigger>(typed($r)).unwrap())
                        .await,
                ),
                "Action" => drop(
                    s.$run(
                        &serde_json::from_value::<basalt::controller::crd::Action>(typed($r))
                            .unwrap(),
                    )
                    .await,
                ),
                _ => drop(
                    s.$run(&serde_json::from_value::<AllowListEntry>(typed($r)).unwrap())
                        .await,
                ),
            }
        };
    }
    // In two waves, as a GitOps tool applies them: tables (their relationships wait for one
    // another and land on the second reconcile, as a NOTIFY triggers it live), then the rest.
    let (tables, rest): (Vec<_>, Vec<_>) = export
        .resources
        .iter()
        .partition(|r| r.kind == "TrackedTable");
    for r in &tables {
        each!(r, apply);
    }
    for r in &tables {
        each!(r, reconcile);
    }
    for r in &rest {
        each!(r, apply);
    }
    assert_eq!(
        sort_relationships(s.server.export().await),
        sort_relationships(wanted)
    );
    assert!(s.drift_items().await.is_empty());
}

#[tokio::test]
async fn export_command_writes_resources_and_a_kustomization() {
    let source = TestServer::blog().await;
    let dir = tempfile::tempdir().unwrap();
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_basalt"))
        .args(["export", "--format", "crds", "--namespace", "blog", "--out"])
        .arg(dir.path())
        .env("BASALT_DATABASE_URL", &source.db_url)
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let kustomization: Value = serde_yaml::from_str(
        &std::fs::read_to_string(dir.path().join("kustomization.yaml")).unwrap(),
    )
    .unwrap();
    let files: Vec<String> = kustomization["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_owned())
        .collect();
    assert!(
        files.contains(&"trackedtable-article.yaml".to_owned()),
        "{files:?}"
    );
    assert!(
        files.contains(&"permission-article-user-select.yaml".to_owned()),
        "{files:?}"
    );
    let permission: Permission = serde_yaml::from_str(
        &std::fs::read_to_string(dir.path().join("permission-article-user-select.yaml")).unwrap(),
    )
    .unwrap();
    assert_eq!(permission.metadata.namespace.as_deref(), Some("blog"));
    assert_eq!(permission.spec.role, "user");
    assert_eq!(
        permission.metadata.annotations.as_ref().unwrap()["basalt.dev/adopt"],
        "true"
    );
    permission
        .validate_cel()
        .expect("the CRD's rules accept it");
    // Without --out: one YAML stream on stdout.
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_basalt"))
        .args(["export", "--format", "crds"])
        .env("BASALT_DATABASE_URL", &source.db_url)
        .output()
        .await
        .unwrap();
    let stream = String::from_utf8(output.stdout).unwrap();
    assert_eq!(
        stream.matches("\n---\n").count() + 1,
        files.len(),
        "{stream}"
    );
}

/// `examples/blog/` as typed resources, in kustomization order.
fn blog_example() -> Vec<(String, Value)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/blog");
    let kustomization: Value =
        serde_yaml::from_str(&std::fs::read_to_string(dir.join("kustomization.yaml")).unwrap())
            .unwrap();
    kustomization["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let file = f.as_str().unwrap();
            let mut manifest: Value =
                serde_yaml::from_str(&std::fs::read_to_string(dir.join(file)).unwrap()).unwrap();
            manifest["metadata"]["namespace"] = json!(NS);
            manifest["metadata"]["uid"] = json!(format!("uid-{file}"));
            manifest["metadata"]["generation"] = json!(1);
            (file.to_owned(), manifest)
        })
        .collect()
}

/// `examples/blog/` applied by the controller (to its schema, in namespace [`NS`]), every
/// resource Ready.
pub(crate) async fn applied_blog_example() -> Setup {
    let db = crate::harness::fresh_database().await;
    crate::harness::run_sql(&db, include_str!("../../../examples/blog/schema.sql")).await;
    let fake = Arc::new(FakeApi::default());
    let s = Setup {
        server: TestServer::on(&db, |_| {}).await,
        ctx: context(fake.clone(), &db, false),
        fake,
    };
    // The example's RemoteSchema reads the newsletter service's URL and token from the
    // environment: a live server for the whole process, and both variables set.
    blog_newsletter();
    // The example's Action reads its handler's URL and a header from the environment.
    actions::blog_actions_env();
    let resources = blog_example();
    assert_eq!(resources.len(), 14);
    macro_rules! each {
        ($m:expr, $run:ident) => {
            match $m["kind"].as_str().unwrap() {
                "TrackedTable" => {
                    let r: TrackedTable = serde_json::from_value($m.clone()).unwrap();
                    r.validate_cel().unwrap();
                    drop(s.$run(&r).await);
                }
                "Permission" => {
                    let r: Permission = serde_json::from_value($m.clone()).unwrap();
                    r.validate_cel().unwrap();
                    drop(s.$run(&r).await);
                }
                "ComputedField" => {
                    let r: ComputedField = serde_json::from_value($m.clone()).unwrap();
                    r.validate_cel().unwrap();
                    drop(s.$run(&r).await);
                }
                "CustomTypeSet" => drop(
                    s.$run(&serde_json::from_value::<CustomTypeSet>($m.clone()).unwrap())
                        .await,
                ),
                "QueryCollection" => {
                    let r: QueryCollection = serde_json::from_value($m.clone()).unwrap();
                    r.validate_cel().unwrap();
                    drop(s.$run(&r).await);
                }
                "EventTrigger" => {
                    let r: EventTrigger = serde_json::from_value($m.clone()).unwrap();
                    r.validate_cel().unwrap();
                    drop(s.$run(&r).await);
                }
                "RemoteSchema" => {
                    let r: RemoteSchema = serde_json::from_value($m.clone()).unwrap();
                    r.validate_cel().unwrap();
                    drop(s.$run(&r).await);
                }
                "Action" => {
                    let r: basalt::controller::crd::Action =
                        serde_json::from_value($m.clone()).unwrap();
                    r.validate_cel().unwrap();
                    drop(s.$run(&r).await);
                }
                other => {
                    assert_eq!(other, "AllowListEntry");
                    let r: AllowListEntry = serde_json::from_value($m.clone()).unwrap();
                    r.validate_cel().unwrap();
                    drop(s.$run(&r).await);
                }
            }
        };
    }
    // `kubectl apply -k` sends everything at once; the controller converges whatever the
    // order, re-triggered by catalog changes. Two rounds stand in for those triggers here.
    for (_, m) in &resources {
        each!(m, apply);
    }
    for (_, m) in &resources {
        each!(m, reconcile);
    }
    for (file, m) in &resources {
        let stored = s.fake.raw(m);
        let ready = stored["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
            .cloned()
            .unwrap_or(Value::Null);
        assert_eq!(ready["reason"], "Applied", "{file}: {stored}");
    }
    s
}

#[tokio::test]
async fn blog_example_applies_and_serves_the_user_role() {
    let s = applied_blog_example().await;
    s.server.running.state.reload(false).await.unwrap();
    s.server
        .sql("INSERT INTO author (name, bio) VALUES ('Ann', 'poet')")
        .await;
    let inserted = s
        .server
        .graphql_as(
            json!({"query": "mutation { insert_article_one(object: {title: \"Hello\", body: \"...\"}) { id published author { fullName } } }"}),
            &[("X-Svc-Role", "user"), ("X-Svc-User-Id", "1")],
        )
        .await;
    assert_eq!(
        inserted["data"]["insert_article_one"]["published"], false,
        "{inserted}"
    );
    assert_eq!(
        inserted["data"]["insert_article_one"]["author"]["fullName"], "Ann (poet)",
        "{inserted}"
    );
    let authors = s
        .server
        .gql_role(
            "{ authors { name articles { title } } }",
            "user",
            &[("X-Svc-User-Id", "1")],
        )
        .await;
    assert_eq!(
        authors["data"]["authors"][0]["articles"][0]["title"], "Hello",
        "{authors}"
    );
    if let Ok(out) = std::process::Command::new("kubectl")
        .args([
            "kustomize",
            concat!(env!("CARGO_MANIFEST_DIR"), "/examples/blog"),
        ])
        .output()
    {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // One document per resource (an Action's spec has a `kind:` of its own).
        assert_eq!(
            String::from_utf8_lossy(&out.stdout)
                .matches("apiVersion: basalt.dev/v1alpha1")
                .count(),
            14
        );
    } else {
        eprintln!("kubectl not found: skipping `kubectl kustomize examples/blog`");
    }
}
