//! One reconcile of one resource (`docs/kubernetes.md`, "How a resource is reconciled"):
//! finalizer, mapping, plan, catalog write through the metadata API's operations and
//! transaction, consistency, status by server-side apply, Events on transitions. Idempotent:
//! with everything in sync it makes no catalog write and no API call.

use super::commit::Written;
pub(super) use super::commit::{deleted_note, remove_owned};
use super::conditions::{self, Reason, Wanted};
use super::diff::{self, Policy, Step};
use super::kinds::*;
use super::singleton::Claim;
use crate::catalog::{managed, CatalogError};
use crate::metadata::objects::{self, DriftKind, Managed, Object, Owner};
use crate::metadata::{MetadataError, ObjectId};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams};
use kube::core::DeserializeGuard;
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType, Recorder};
use kube::runtime::finalizer::{finalizer, Event as Finalized};
use kube::{Api, Resource, ResourceExt};
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing::Instrument;

/// Finalizer guarding catalog cleanup.
pub const FINALIZER: &str = "basalt.dev/catalog-cleanup";
/// Field manager of every server-side apply.
pub const FIELD_MANAGER: &str = "basalt-controller";
/// API version of every kind.
pub const API_VERSION: &str = "basalt.dev/v1alpha1";
/// Annotation: `"true"`/`"false"` overrides `--self-heal`.
pub const SELF_HEAL: &str = "basalt.dev/self-heal";
/// Annotation: a changed value forces one re-apply.
pub const SYNC_REQUESTED_AT: &str = "basalt.dev/sync-requested-at";
/// Annotation: `disabled` suspends reconciliation.
pub const RECONCILE: &str = "basalt.dev/reconcile";
/// Annotation: `"true"` takes over an existing unmanaged object.
pub const ADOPT: &str = "basalt.dev/adopt";
/// Annotation: `orphan` keeps the objects when the resource is deleted.
pub const DELETION_POLICY: &str = "basalt.dev/deletion-policy";
/// Annotation: `"true"` drops dependants too on delete.
pub const CASCADE_DELETE: &str = "basalt.dev/cascade-delete";

/// Controller-wide settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Re-apply drift unless a resource says otherwise.
    pub self_heal: bool,
    /// Requeue after a successful reconcile (catches database changes without a NOTIFY).
    pub resync: Duration,
    /// The watched namespaces (`None`: all), where a singleton kind's resources compete;
    /// empty: the resource's own namespace.
    pub scopes: Vec<Option<String>>,
    /// `--label-selector`, narrowing the same competition.
    pub label_selector: Option<String>,
    /// Change detection's settings, for the triggers each write keeps in step.
    pub live: crate::resolve::live_change::LivePolicy,
}

/// What every reconcile shares.
pub struct Context {
    pub client: kube::Client,
    /// Catalog database.
    pub pool: deadpool_postgres::Pool,
    pub recorder: Recorder,
    pub settings: Settings,
    /// Consecutive failures per object, for backoff; reset on success.
    failures: Mutex<HashMap<String, u32>>,
    /// What was last reported for each object that does not match its schema (generation,
    /// message): reported again only when that changes.
    invalid: Mutex<HashMap<String, (i64, String)>>,
    /// The resource version at which each resource (by uid) last passed its CEL rules: the
    /// rules read only the object, so a reconcile of an unchanged object skips them.
    cel_passed: Mutex<HashMap<String, String>>,
    /// Resources checked against their CEL rules so far (each check evaluates every rule).
    cel_checks: std::sync::atomic::AtomicU64,
    /// The catalog and database as every reconcile plans against them, read once per change.
    pub(super) view: super::view::SharedView,
    /// Writes waiting to be committed together.
    pub(super) commits: super::commit::GroupCommit,
    /// Reconcile counts and leadership, served on the probe port.
    pub metrics: super::metrics::ControllerMetrics,
}

impl Context {
    pub fn new(
        client: kube::Client,
        pool: deadpool_postgres::Pool,
        recorder: Recorder,
        settings: Settings,
    ) -> Self {
        let metrics = super::metrics::ControllerMetrics::default();
        Context {
            client,
            pool,
            recorder,
            settings,
            failures: Mutex::new(HashMap::new()),
            invalid: Mutex::new(HashMap::new()),
            cel_passed: Mutex::new(HashMap::new()),
            cel_checks: std::sync::atomic::AtomicU64::new(0),
            view: super::view::SharedView::default(),
            commits: super::commit::GroupCommit::new(metrics.commit_queue()),
            metrics,
        }
    }

    /// Counts a failure of `object` and returns how many in a row.
    fn failed(&self, object: &str) -> u32 {
        let mut map = match self.failures.lock() {
            Ok(m) => m,
            Err(p) => p.into_inner(),
        };
        let n = map.entry(object.to_owned()).or_insert(0);
        *n += 1;
        *n
    }

    fn succeeded(&self, object: &str) {
        let mut map = match self.failures.lock() {
            Ok(m) => m,
            Err(p) => p.into_inner(),
        };
        map.remove(object);
    }

    /// Records what is reported for an invalid `object`; false when exactly that was reported
    /// already (nothing to write).
    pub(super) fn report_invalid(&self, object: &str, generation: i64, message: &str) -> bool {
        let mut map = match self.invalid.lock() {
            Ok(m) => m,
            Err(p) => p.into_inner(),
        };
        let state = (generation, message.to_owned());
        if map.get(object) == Some(&state) {
            return false;
        }
        map.insert(object.to_owned(), state);
        true
    }

    /// `object` reads again (or is gone): a later invalid state is a transition.
    pub(super) fn forget_invalid(&self, object: &str) {
        let mut map = match self.invalid.lock() {
            Ok(m) => m,
            Err(p) => p.into_inner(),
        };
        map.remove(object);
    }

    /// Checks `resource` against its kind's CEL rules, unless it passed them at its current
    /// resource version already: a pass over thousands of unchanged resources then evaluates
    /// no rule, where evaluating them all would be a large part of its work.
    pub(super) fn check_cel<K: Kind>(&self, resource: &K) -> Result<(), SpecError> {
        let check = || {
            self.cel_checks
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            resource.check_cel()
        };
        let (Some(uid), Some(version)) = (&resource.meta().uid, &resource.meta().resource_version)
        else {
            return check();
        };
        let lock = || match self.cel_passed.lock() {
            Ok(m) => m,
            Err(p) => p.into_inner(),
        };
        if lock().get(uid) == Some(version) {
            return Ok(());
        }
        check()?;
        lock().insert(uid.clone(), version.clone());
        Ok(())
    }

    /// Resources checked against their CEL rules by this context's reconciles so far.
    pub fn cel_checks(&self) -> u64 {
        self.cel_checks.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Forgets what is remembered about the resource of `uid` (it was deleted).
    fn forget(&self, uid: &str) {
        match self.cel_passed.lock() {
            Ok(mut m) => m.remove(uid),
            Err(p) => p.into_inner().remove(uid),
        };
    }

    /// Reads of the database model by this context's reconciles so far.
    pub fn introspections(&self) -> u64 {
        self.metrics.introspections().get()
    }

    /// Consecutive failures recorded for `object`.
    pub fn failures(&self, object: &str) -> u32 {
        match self.failures.lock() {
            Ok(m) => m.get(object).copied().unwrap_or(0),
            Err(p) => p.into_inner().get(object).copied().unwrap_or(0),
        }
    }

    pub(super) async fn publish(
        &self,
        reference: &k8s_openapi::api::core::v1::ObjectReference,
        reason: &str,
        warning: bool,
        note: String,
    ) {
        let event = Event {
            type_: if warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: reason.to_owned(),
            note: Some(truncate(note, 1000)),
            action: "Reconcile".to_owned(),
            secondary: None,
        };
        // Never fatal: a terminating namespace refuses Events, and cleanup must still finish.
        if let Err(err) = self.recorder.publish(&event, reference).await {
            tracing::warn!(%err, reason, "cannot publish event");
        }
    }
}

fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

/// Failures of a reconcile that `error_policy` retries.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The Kubernetes API refused or failed.
    #[error("Kubernetes API error: {0}")]
    Kube(#[from] kube::Error),
    /// The catalog database failed.
    #[error("catalog error: {0}")]
    Catalog(#[from] CatalogError),
    /// A catalog write failed other than by refusing the resource's objects.
    #[error("catalog error: {0}")]
    Transaction(#[from] crate::transaction::TransactionError),
    /// Cleanup refused by the catalog; the finalizer stays.
    #[error("deletion blocked: {} ({}): {}", .0.code.as_str(), .0.path, .0.message)]
    DeletionBlocked(MetadataError),
    /// The finalizer helper failed (adding or removing the finalizer, or an unnamed object).
    #[error("finalizer: {0}")]
    Finalizer(Box<kube::runtime::finalizer::Error<Error>>),
}

/// `kind/namespace/name`, the key of per-object state.
pub fn object_name<K: Resource<DynamicType = ()>>(obj: &K) -> String {
    format!(
        "{}/{}/{}",
        K::kind(&()),
        obj.meta().namespace.clone().unwrap_or_default(),
        obj.meta().name.clone().unwrap_or_default()
    )
}

/// Reconciles one resource (or reports why it cannot be read).
pub async fn reconcile<K: Kind>(
    guarded: Arc<DeserializeGuard<K>>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    let resource = match &guarded.0 {
        Ok(resource) => {
            ctx.forget_invalid(&object_name(resource));
            Arc::new(resource.clone())
        }
        Err(invalid) => return super::invalid::reconcile::<K>(invalid, &ctx).await,
    };
    let namespace = resource.namespace().unwrap_or_default();
    let api: Api<K> = Api::namespaced(ctx.client.clone(), &namespace);
    let span = tracing::info_span!("reconcile", kind = K::kind(&()).as_ref(), %namespace, name = %resource.name_any());
    let reconciled = finalizer(&api, FINALIZER, resource, |event| async {
        match event {
            Finalized::Apply(r) => apply(r, &ctx).await,
            Finalized::Cleanup(r) => cleanup(r, &ctx).await,
        }
    })
    .instrument(span);
    crate::catalog::database::counting(ctx.metrics.introspections(), reconciled)
        .await
        .map_err(|e| match e {
            kube::runtime::finalizer::Error::ApplyFailed(e)
            | kube::runtime::finalizer::Error::CleanupFailed(e) => e,
            other => Error::Finalizer(Box::new(other)),
        })
}

/// Retry policy for failed reconciles: backoff by error class, per object.
pub fn error_policy<K: Kind>(
    guarded: Arc<DeserializeGuard<K>>,
    error: &Error,
    ctx: Arc<Context>,
) -> Action {
    let name = object_name(guarded.as_ref());
    // A blocked deletion was already counted when its status was reported.
    let failures = match error {
        Error::DeletionBlocked(_) => ctx.failures(&name).max(1),
        _ => ctx.failed(&name),
    };
    let reason = match error {
        Error::DeletionBlocked(_) => Reason::DeletionBlocked,
        _ => Reason::ApplyFailed,
    };
    tracing::warn!(object = %name, %error, failures, "reconcile failed");
    let delay =
        conditions::backoff(reason, failures, seed(&name)).unwrap_or(Duration::from_secs(300));
    Action::requeue(delay)
}

pub(super) fn seed(name: &str) -> u64 {
    name.bytes()
        .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)))
}

fn annotation<'a, K: Resource>(obj: &'a K, key: &str) -> Option<&'a str> {
    obj.meta()
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

pub(super) fn owner_of<K: Kind>(obj: &K) -> Owner {
    Owner {
        api_version: API_VERSION.to_owned(),
        kind: K::kind(&()).into_owned(),
        namespace: obj.namespace().unwrap_or_default(),
        name: obj.name_any(),
        uid: obj.uid().unwrap_or_default(),
    }
}

/// The outcome a status is computed from.
struct Outcome {
    ready: Reason,
    message: String,
    consistent: Option<(bool, String)>,
    drifted: Option<(DriftKind, Vec<String>)>,
    corrected: bool,
    adopted: bool,
    wrote: bool,
    version: Option<i64>,
}

impl Outcome {
    fn failure(reason: Reason, message: String) -> Self {
        Outcome {
            ready: reason,
            message,
            consistent: None,
            drifted: None,
            corrected: false,
            adopted: false,
            wrote: false,
            version: None,
        }
    }
}

async fn apply<K: Kind>(resource: Arc<K>, ctx: &Context) -> Result<Action, Error> {
    let generation = resource.meta().generation.unwrap_or(0);
    if annotation(&*resource, RECONCILE) == Some("disabled") {
        let outcome = Outcome::failure(
            Reason::Suspended,
            format!("{RECONCILE} is \"disabled\": the catalog is not touched"),
        );
        return finish(&*resource, ctx, outcome, Vec::new()).await;
    }
    let declared = match ctx
        .check_cel(&*resource)
        .and_then(|()| resource.declared().map_err(SpecError::Mapping))
    {
        Ok(d) => d,
        Err(err) => {
            let outcome = Outcome::failure(Reason::InvalidSpec, err.to_string());
            return finish(&*resource, ctx, outcome, Vec::new()).await;
        }
    };
    let owner = owner_of(&*resource);
    let mut take_orphaned = false;
    if K::SINGLETON {
        match super::singleton::claim(ctx, &*resource, &owner, &declared).await? {
            Claim::Apply { take_orphaned: t } => take_orphaned = t,
            Claim::Held(message) => {
                let outcome = Outcome::failure(Reason::Conflict, message);
                return finish(&*resource, ctx, outcome, keys(&declared)).await;
            }
        }
    }
    let status = resource
        .status()
        .map(|s| s.common().clone())
        .unwrap_or_default();
    let sync_request = annotation(&*resource, SYNC_REQUESTED_AT).map(str::to_owned);
    let policy = Policy {
        self_heal: match annotation(&*resource, SELF_HEAL) {
            Some("true") => true,
            Some("false") => false,
            _ => ctx.settings.self_heal,
        },
        sync_requested: sync_request.is_some() && sync_request != status.last_sync_request,
        adopt: annotation(&*resource, ADOPT) == Some("true"),
        take_orphaned,
    };
    let target = diff::Resource {
        owner: &owner,
        generation,
        desired: &declared,
    };
    let written = match super::cycles::write(ctx, &*resource, &target, policy).await? {
        Ok(w) => w,
        Err(e) => {
            let reason = conditions::classify(&e, false);
            let message = format!("{} ({}): {}", e.code.as_str(), e.path, e.message);
            return finish(
                &*resource,
                ctx,
                Outcome::failure(reason, message),
                keys(&declared),
            )
            .await;
        }
    };
    let outcome = evaluate(ctx, &written, &declared).await?;
    finish(&*resource, ctx, outcome, keys(&declared)).await
}

fn keys(declared: &[Object]) -> Vec<String> {
    declared.iter().map(Object::key).collect()
}

/// Turns the plan's steps and the catalog's consistency into an outcome.
async fn evaluate(ctx: &Context, written: &Written, declared: &[Object]) -> Result<Outcome, Error> {
    let mut outcome = Outcome::failure(Reason::Applied, "the catalog matches the spec".to_owned());
    outcome.wrote = written.wrote();
    outcome.version = Some(written.version);
    let mut conflicts = Vec::new();
    for (key, step) in &written.plan.steps {
        match step {
            Step::Conflict(None) => conflicts.push(format!(
                "{key} already exists and is not managed; annotate {ADOPT}=\"true\" to take it over"
            )),
            Step::Conflict(Some(owner)) => {
                conflicts.push(format!("{key} is managed by {}", owner.describe()))
            }
            Step::Drift(kind, fields) => {
                let (previous, mut all) = outcome.drifted.take().unwrap_or((*kind, Vec::new()));
                if fields.is_empty() {
                    all.push(format!("{key}: {}", kind.as_str()));
                } else {
                    all.extend(fields.iter().map(|f| format!("{key}: {f}")));
                }
                // Missing wins over modified when several objects drifted.
                let kind = if previous == DriftKind::Missing {
                    previous
                } else {
                    *kind
                };
                outcome.drifted = Some((kind, all));
            }
            Step::Heal(..) => outcome.corrected = true,
            Step::Adopt => outcome.adopted = true,
            _ => {}
        }
    }
    // Consistency of what this resource declares, by the engine's own check.
    let view = match &written.planned_on {
        Some(view) => view.clone(),
        None => ctx.view.current(&ctx.pool).await?,
    };
    let inconsistent: Vec<String> = view
        .catalog
        .resolution
        .inconsistencies
        .iter()
        .filter(|i| {
            declared.iter().any(|d| {
                d.id() == i.object
                    || d.table()
                        .is_some_and(|t| i.object == ObjectId::Table(t.clone()))
            })
        })
        .map(|i| format!("{}: {}", i.object, i.reason))
        .collect();
    outcome.consistent = Some(if inconsistent.is_empty() {
        (true, "consistent with the database".to_owned())
    } else {
        (false, inconsistent.join("; "))
    });
    if !conflicts.is_empty() {
        outcome.ready = Reason::Conflict;
        outcome.message = conflicts.join("; ");
    } else if !written.waiting.is_empty() {
        outcome.ready = conditions::awaited(written.waiting.iter().map(|(_, _, r)| *r));
        outcome.message = written
            .waiting
            .iter()
            .map(|(_, waits, _)| waits.clone())
            .collect::<Vec<_>>()
            .join("; ");
    } else if let Some((_, fields)) = &outcome.drifted {
        outcome.ready = Reason::Drifted;
        outcome.message = format!("the catalog differs from the spec: {}", fields.join(", "));
    } else if let Some((false, message)) = &outcome.consistent {
        outcome.ready = Reason::Inconsistent;
        outcome.message = message.clone();
    }
    Ok(outcome)
}

/// Patches the status when it changed, publishes Events on transitions, and picks the requeue.
async fn finish<K: Kind>(
    resource: &K,
    ctx: &Context,
    outcome: Outcome,
    object_keys: Vec<String>,
) -> Result<Action, Error> {
    let before = resource.status().cloned().unwrap_or_default();
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let mut status = before.clone();
    *status.common_mut() = next_status(resource, before.common(), &outcome, &object_keys, &now);
    if synced(outcome.ready) {
        resource.observe(&ctx.pool, &mut status).await?;
    }
    if status != before {
        let api: Api<K> = Api::namespaced(
            ctx.client.clone(),
            &resource.namespace().unwrap_or_default(),
        );
        let patch = json!({"apiVersion": API_VERSION, "kind": K::kind(&()), "status": status});
        api.patch_status(
            &resource.name_any(),
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await?;
    }
    publish_transition(resource, ctx, before.common(), &outcome, &object_keys).await;
    let name = object_name(resource);
    Ok(match outcome.ready {
        Reason::Applied | Reason::Drifted | Reason::Inconsistent => {
            ctx.succeeded(&name);
            Action::requeue(ctx.settings.resync)
        }
        other => {
            let failures = ctx.failed(&name);
            match conditions::backoff(other, failures, seed(&name)) {
                Some(delay) => Action::requeue(delay),
                None => Action::await_change(),
            }
        }
    })
}

/// The conditions an outcome asks for: `Ready` always, `Consistent` and `Drifted` when the
/// catalog was evaluated.
fn wanted_conditions(outcome: &Outcome) -> Vec<Wanted> {
    let ready = outcome.ready;
    let mut wanted = vec![Wanted {
        type_: "Ready",
        status: match ready {
            Reason::Applied => "True",
            Reason::Suspended => "Unknown",
            _ => "False",
        },
        reason: ready.as_str(),
        message: outcome.message.clone(),
    }];
    if let Some((ok, message)) = &outcome.consistent {
        wanted.push(Wanted {
            type_: "Consistent",
            status: if *ok { "True" } else { "False" },
            reason: if *ok { "Consistent" } else { "Inconsistent" },
            message: message.clone(),
        });
        wanted.push(match &outcome.drifted {
            Some((kind, fields)) => Wanted {
                type_: "Drifted",
                status: "True",
                reason: if *kind == DriftKind::Missing {
                    "Missing"
                } else {
                    "Modified"
                },
                message: fields.join(", "),
            },
            None if outcome.corrected => Wanted {
                type_: "Drifted",
                status: "False",
                reason: "Corrected",
                message: "drift was re-applied from the spec".to_owned(),
            },
            None => Wanted {
                type_: "Drifted",
                status: "False",
                reason: "InSync",
                message: "the catalog matches the spec".to_owned(),
            },
        });
    }
    wanted
}

/// The status after a reconcile: conditions merged (transition times kept), what was written
/// and which objects the resource declares.
fn next_status<K: Kind>(
    resource: &K,
    before: &ResourceStatus,
    outcome: &Outcome,
    object_keys: &[String],
    now: &Time,
) -> ResourceStatus {
    let generation = resource.meta().generation.unwrap_or(0);
    let mut merged = conditions::merge(
        &before.conditions,
        &wanted_conditions(outcome),
        generation,
        now,
    );
    if outcome.consistent.is_none() {
        // Not evaluated this time (failure before the catalog check): keep what was known.
        merged.extend(
            before
                .conditions
                .iter()
                .filter(|c| c.type_ == "Consistent" || c.type_ == "Drifted")
                .cloned(),
        );
    }
    let declared_hash = objects::hash(&json!(object_keys));
    let synced = synced(outcome.ready);
    ResourceStatus {
        observed_generation: Some(generation),
        catalog_resource_version: if outcome.wrote {
            outcome.version
        } else {
            before.catalog_resource_version.or(outcome.version)
        },
        object_keys: object_keys.to_vec(),
        spec_hash: if object_keys.is_empty() {
            before.spec_hash.clone()
        } else {
            Some(spec_hash(resource).unwrap_or(declared_hash))
        },
        last_applied_time: if outcome.wrote {
            Some(now_text(now))
        } else {
            before.last_applied_time.clone()
        },
        last_sync_request: if !synced {
            before.last_sync_request.clone()
        } else {
            annotation(resource, SYNC_REQUESTED_AT)
                .map(str::to_owned)
                .or(before.last_sync_request.clone())
        },
        conditions: merged,
    }
}

/// Whether a reconcile ending in `ready` brought the catalog in line with the spec (or found
/// it so): applied, or applied and then drifted or inconsistent.
fn synced(ready: Reason) -> bool {
    matches!(
        ready,
        Reason::Applied | Reason::Drifted | Reason::Inconsistent
    )
}

/// Events on transitions only: a correction, an adoption, or a new `Ready` reason.
async fn publish_transition<K: Kind>(
    resource: &K,
    ctx: &Context,
    before: &ResourceStatus,
    outcome: &Outcome,
    object_keys: &[String],
) {
    let reference = resource.object_ref(&());
    let previous = conditions::find(&before.conditions, "Ready").map(|c| c.reason.clone());
    if outcome.corrected {
        ctx.publish(
            &reference,
            "DriftCorrected",
            false,
            "drifted objects were re-applied from the spec".into(),
        )
        .await;
    } else if outcome.adopted {
        ctx.publish(
            &reference,
            "Adopted",
            false,
            format!("took ownership of {}", object_keys.join(", ")),
        )
        .await;
    } else if previous.as_deref() != Some(outcome.ready.as_str()) {
        if let Some((reason, warning)) = outcome.ready.event() {
            ctx.publish(&reference, reason, warning, outcome.message.clone())
                .await;
        }
    }
}

fn now_text(now: &Time) -> String {
    serde_json::to_value(now)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Hash of the canonical desired definitions (snake_case form), as the status reports it.
fn spec_hash<K: Kind>(resource: &K) -> Option<String> {
    let declared = resource.declared().ok()?;
    let canonical: Vec<Value> = declared.iter().map(Object::canonical).collect();
    Some(objects::hash(&Value::Array(canonical)))
}

async fn cleanup<K: Kind>(resource: Arc<K>, ctx: &Context) -> Result<Action, Error> {
    let owner = owner_of(&*resource);
    let orphan = annotation(&*resource, DELETION_POLICY) == Some("orphan");
    let cascade = annotation(&*resource, CASCADE_DELETE) == Some("true");
    let generation = resource.meta().generation.unwrap_or(0);
    match super::cycles::remove(ctx, &*resource, &owner, generation, (orphan, cascade)).await? {
        Ok(written) => {
            let reference = resource.object_ref(&());
            ctx.publish(&reference, "Deleted", false, deleted_note(&written, orphan))
                .await;
            ctx.succeeded(&object_name(&*resource));
            ctx.forget(&owner.uid);
            Ok(Action::await_change())
        }
        Err(e) => {
            // Whatever the catalog refused, the deletion is blocked: report it (naming the
            // inherited roles a dropped parent would strand) and keep the finalizer;
            // error_policy retries with backoff.
            let reason = Reason::DeletionBlocked;
            let message = conditions::blocked_message(&e);
            let keys = resource
                .status()
                .map(|s| s.common().object_keys.clone())
                .unwrap_or_default();
            let outcome = Outcome::failure(reason, message);
            let _ = finish(&*resource, ctx, outcome, keys).await?;
            Err(Error::DeletionBlocked(e))
        }
    }
}

/// Marks managed rows whose owner no longer exists among `live` (kind, namespace, name) —
/// only for the namespaces this controller watches — and clears the mark when it is back.
/// Returns the keys newly orphaned.
pub async fn mark_orphans(
    pool: &deadpool_postgres::Pool,
    live: &BTreeSet<(String, String, String)>,
    watched: &[Option<String>],
) -> Result<Vec<String>, CatalogError> {
    let watched = |ns: &str| {
        watched
            .iter()
            .any(|s| s.as_deref().is_none_or(|scope| scope == ns))
    };
    let client = pool.get().await?;
    let rows: Vec<Managed> = managed::load(&**client).await?;
    let (mut gone, mut back) = (Vec::new(), Vec::new());
    for row in rows.iter().filter(|r| watched(&r.owner.namespace)) {
        let id = (
            row.owner.kind.clone(),
            row.owner.namespace.clone(),
            row.owner.name.clone(),
        );
        match (live.contains(&id), row.orphaned) {
            (false, false) => gone.push(row.key.clone()),
            (true, true) => back.push(row.key.clone()),
            _ => {}
        }
    }
    if !gone.is_empty() {
        managed::set_orphaned(&**client, &gone, true).await?;
    }
    if !back.is_empty() {
        managed::set_orphaned(&**client, &back, false).await?;
    }
    Ok(gone)
}
