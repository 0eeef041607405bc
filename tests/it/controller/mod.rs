//! The Kubernetes controller against a fake API server (`kube_fake.rs`, tower-test: every
//! request asserted) and the real Postgres catalog, next to a running engine
//! (`docs/kubernetes.md` describes the reconcile, its conditions and Events). One file per
//! topic or kind; the shared setup (resources of the blog fixture, [`Setup`], the applied
//! `examples/blog/`) is here. Failover between two real controller processes is in the slow
//! tier (`slow/controller_failover.rs`).

mod actions;
mod blog_example;
mod crds;
mod cron_triggers;
mod event_triggers;
mod export;
mod group_commit;
mod invalid;
pub(crate) mod kube_fake;
mod lifecycle;
mod native_queries;
mod ownership;
mod remote_relationships;
mod remote_schemas;
mod rest_endpoints;
mod roles_and_limits;
mod root_fields;
mod running;
mod scope;
mod shared_view;
mod table_configuration;
mod tracked_functions;

use crate::controller::kube_fake::{context, Call, FakeApi};
use crate::harness::{query_json, TestServer, BLOG};
use crate::remote_schemas::remote_server::{
    blog_newsletter, newsletter_schema, RemoteServer, NEWSLETTER_TOKEN, NEWSLETTER_TOKEN_ENV,
};
use basalt::catalog::managed;
use basalt::controller::kinds::Kind;
use basalt::controller::kinds::*;
use basalt::controller::leader;
use basalt::controller::reconcile::{self, Context};
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
    assert_eq!(resources.len(), 22);
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
                "InheritedRole" => {
                    let r: InheritedRole = serde_json::from_value($m.clone()).unwrap();
                    r.validate_cel().unwrap();
                    drop(s.$run(&r).await);
                }
                "ApiLimitPolicy" => {
                    let r: ApiLimitPolicy = serde_json::from_value($m.clone()).unwrap();
                    r.validate_cel().unwrap();
                    drop(s.$run(&r).await);
                }
                "TrackedFunction" => {
                    let r: basalt::controller::kinds::TrackedFunction =
                        serde_json::from_value($m.clone()).unwrap();
                    r.validate_cel().unwrap();
                    drop(s.$run(&r).await);
                }
                "RestEndpoint" => {
                    let r: RestEndpoint = serde_json::from_value($m.clone()).unwrap();
                    r.validate_cel().unwrap();
                    drop(s.$run(&r).await);
                }
                "Action" => {
                    let r: basalt::controller::kinds::Action =
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

/// The manifests of `examples/<name>/` in its kustomization's order, each given the
/// namespace, uid and generation the API server would, with the example's directory.
pub(super) fn example_manifests(name: &str) -> (std::path::PathBuf, Vec<Value>) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name);
    let read = |file: &str| std::fs::read_to_string(dir.join(file)).unwrap();
    let kustomization: Value = serde_yaml::from_str(&read("kustomization.yaml")).unwrap();
    let manifests = kustomization["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .map(|file| {
            let mut manifest: Value = serde_yaml::from_str(&read(file)).unwrap();
            manifest["metadata"]["namespace"] = json!(NS);
            manifest["metadata"]["uid"] = json!(format!("uid-{file}"));
            manifest["metadata"]["generation"] = json!(1);
            manifest
        })
        .collect();
    (dir, manifests)
}

/// The table entry `name` of an export.
pub(super) fn exported_table(export: &Value, name: &str) -> Value {
    export["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"]["name"] == name)
        .cloned()
        .unwrap_or(Value::Null)
}
