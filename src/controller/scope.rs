//! The periodic scan of ownership against the resources that exist (`docs/kubernetes.md`,
//! "Scope and orphans"). Three ways a managed object can lose the resource that manages it:
//!
//! - the resource is gone (deleted while no controller ran, or its finalizer removed by hand):
//!   its rows are marked orphaned (drift `orphaned` in `get_inconsistent_metadata`), reported
//!   once as a Warning Event on the controller's Pod and counted in
//!   `basalt_controller_orphaned_objects`; with `--prune-orphans` its objects are removed;
//! - the resource still exists but no longer matches `--label-selector`: the controller lets
//!   go of it as the orphan deletion policy would — ownership released, objects kept,
//!   finalizer removed, a `Released` Event on the resource;
//! - the resource lives in a namespace the controller no longer watches: the same release, the
//!   finalizer removed when the API still lets the controller.
//!
//! One controller leads per catalog (leader election), so ownership rows outside its scope can
//! only be left over from an earlier scope.

use super::kinds::Kind;
use super::reconcile::{remove_owned, Context, Error, FINALIZER};
use crate::metadata::objects::{Managed, Owner};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{ListParams, Patch, PatchParams};
use kube::core::{DeserializeGuard, ObjectMeta, PartialObjectMeta};
use kube::Api;
use serde_json::json;
use std::collections::BTreeSet;

/// `(kind, namespace, name)` of a resource that exists.
pub type Live = BTreeSet<(String, String, String)>;

/// What a scan did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ScanReport {
    /// Object keys newly found without their resource.
    pub orphaned: Vec<String>,
    /// Resources (`Kind/namespace/name`) whose ownership was released because they left the
    /// controller's scope.
    pub released: Vec<String>,
    /// Object keys removed from the catalog by `--prune-orphans`.
    pub pruned: Vec<String>,
}

/// The resources of kind `K` in one watched namespace (all of them when `scope` is `None`):
/// each is added to `live`, and those outside `selector` that still carry the finalizer are
/// released. Answers the resources released.
pub async fn list<K: Kind>(
    ctx: &Context,
    scope: &Option<String>,
    selector: Option<&str>,
    live: &mut Live,
) -> Result<Vec<String>, Error> {
    let api: Api<DeserializeGuard<K>> = match scope {
        Some(ns) => Api::namespaced(ctx.client.clone(), ns),
        None => Api::all(ctx.client.clone()),
    };
    let kind = K::kind(&()).into_owned();
    let all = api.list_metadata(&ListParams::default()).await?;
    let selected: Option<BTreeSet<String>> = match selector {
        Some(selector) => Some(
            api.list_metadata(&ListParams::default().labels(selector))
                .await?
                .items
                .into_iter()
                .filter_map(|o| o.metadata.uid)
                .collect(),
        ),
        None => None,
    };
    let mut released = Vec::new();
    for item in all.items {
        let meta = &item.metadata;
        live.insert((
            kind.clone(),
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone().unwrap_or_default(),
        ));
        let outside = selected
            .as_ref()
            .is_some_and(|s| !meta.uid.as_ref().is_some_and(|uid| s.contains(uid)));
        if outside && has_finalizer(meta) {
            release::<K>(
                ctx,
                meta,
                "it no longer matches the controller's label selector",
            )
            .await?;
            released.push(describe(&kind, meta));
        }
    }
    Ok(released)
}

/// Releases the resources of kind `K` that own rows in namespaces outside `scopes`. The
/// finalizer is removed when the API allows (the controller's RBAC may no longer cover the
/// namespace: then only the ownership is released, and the finalizer is left for an operator).
pub async fn release_unwatched<K: Kind>(
    ctx: &Context,
    scopes: &[Option<String>],
    rows: &[Managed],
) -> Result<Vec<String>, Error> {
    let kind = K::kind(&()).into_owned();
    let owners: BTreeSet<(String, String, String)> = rows
        .iter()
        .filter(|r| r.owner.kind == kind && !watched(scopes, &r.owner.namespace))
        .map(|r| {
            (
                r.owner.namespace.clone(),
                r.owner.name.clone(),
                r.owner.uid.clone(),
            )
        })
        .collect();
    let mut released = Vec::new();
    for (namespace, name, uid) in owners {
        let api: Api<DeserializeGuard<K>> = Api::namespaced(ctx.client.clone(), &namespace);
        let meta = match api.get_metadata_opt(&name).await {
            Ok(Some(found)) if found.metadata.uid.as_deref() == Some(uid.as_str()) => {
                found.metadata
            }
            Ok(_) => {
                // Gone, or re-created as another resource: only the rows remain to release.
                gone_meta(&namespace, &name, &uid)
            }
            Err(err) => {
                tracing::warn!(%err, %namespace, %name, "cannot read a resource outside the watched namespaces; releasing its ownership only");
                gone_meta(&namespace, &name, &uid)
            }
        };
        release::<K>(
            ctx,
            &meta,
            "its namespace is no longer watched by the controller",
        )
        .await?;
        released.push(describe(&kind, &meta));
    }
    Ok(released)
}

/// Whether `namespace` is among the watched `scopes`.
pub fn watched(scopes: &[Option<String>], namespace: &str) -> bool {
    scopes
        .iter()
        .any(|s| s.as_deref().is_none_or(|scope| scope == namespace))
}

/// Marks rows whose resource is gone (in watched namespaces), reports the new ones on the
/// controller's Pod, counts them, and with `prune` removes their objects from the catalog.
pub async fn settle_orphans(
    ctx: &Context,
    live: &Live,
    scopes: &[Option<String>],
    prune: bool,
    pod: Option<&ObjectReference>,
    report: &mut ScanReport,
) -> Result<(), Error> {
    report.orphaned = super::reconcile::mark_orphans(&ctx.pool, live, scopes).await?;
    let client = ctx
        .pool
        .get()
        .await
        .map_err(crate::catalog::CatalogError::from)?;
    let rows = crate::catalog::managed::load(&**client).await?;
    drop(client);
    let orphans: Vec<&Managed> = rows
        .iter()
        .filter(|r| r.orphaned && watched(scopes, &r.owner.namespace))
        .collect();
    ctx.metrics.set_orphaned(orphans.len());
    if !report.orphaned.is_empty() {
        tracing::warn!(keys = ?report.orphaned, "managed objects whose resource no longer exists");
        if let Some(pod) = pod {
            let note = format!(
                "{} managed object(s) lost their resource: {}{}",
                report.orphaned.len(),
                report.orphaned.join(", "),
                if prune {
                    " (removed: --prune-orphans)"
                } else {
                    " (kept; reported as drift \"orphaned\")"
                }
            );
            ctx.publish(pod, "Orphaned", true, note).await;
        }
    }
    if !prune {
        return Ok(());
    }
    let owners: BTreeSet<(String, String, String, String)> = orphans
        .iter()
        .map(|r| {
            (
                r.owner.kind.clone(),
                r.owner.namespace.clone(),
                r.owner.name.clone(),
                r.owner.uid.clone(),
            )
        })
        .collect();
    for (kind, namespace, name, uid) in owners {
        let owner = Owner {
            api_version: super::reconcile::API_VERSION.to_owned(),
            kind,
            namespace,
            name,
            uid,
        };
        match remove_owned(ctx, &owner, 0, false, false).await? {
            Ok(written) => report
                .pruned
                .extend(written.plan.steps.iter().map(|(k, _)| k.clone())),
            Err(blocked) => {
                tracing::warn!(owner = %owner.describe(), error = %blocked.message, "cannot prune orphaned objects")
            }
        }
    }
    if !report.pruned.is_empty() {
        let client = ctx
            .pool
            .get()
            .await
            .map_err(crate::catalog::CatalogError::from)?;
        let left = crate::catalog::managed::load(&**client)
            .await?
            .iter()
            .filter(|r| r.orphaned && watched(scopes, &r.owner.namespace))
            .count();
        ctx.metrics.set_orphaned(left);
        if let Some(pod) = pod {
            let note = format!("removed orphaned objects: {}", report.pruned.join(", "));
            ctx.publish(pod, "Pruned", false, note).await;
        }
    }
    Ok(())
}

/// The controller's own Pod, from the downward API (`POD_NAME`, `POD_NAMESPACE`): where
/// orphans are reported. `None` outside a cluster.
pub fn own_pod() -> Option<ObjectReference> {
    let name = std::env::var("POD_NAME").ok().filter(|n| !n.is_empty())?;
    let namespace = std::env::var("POD_NAMESPACE")
        .ok()
        .filter(|n| !n.is_empty())?;
    Some(ObjectReference {
        api_version: Some("v1".to_owned()),
        kind: Some("Pod".to_owned()),
        name: Some(name),
        namespace: Some(namespace),
        uid: std::env::var("POD_UID").ok().filter(|u| !u.is_empty()),
        ..Default::default()
    })
}

fn has_finalizer(meta: &ObjectMeta) -> bool {
    meta.finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|f| f == FINALIZER))
}

fn describe(kind: &str, meta: &ObjectMeta) -> String {
    format!(
        "{kind}/{}/{}",
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default()
    )
}

fn gone_meta(namespace: &str, name: &str, uid: &str) -> ObjectMeta {
    ObjectMeta {
        namespace: Some(namespace.to_owned()),
        name: Some(name.to_owned()),
        uid: Some(uid.to_owned()),
        ..Default::default()
    }
}

/// Lets go of a resource: its ownership released under the catalog lock (the objects stay, as
/// with the orphan deletion policy), then its finalizer removed and a `Released` Event.
async fn release<K: Kind>(ctx: &Context, meta: &ObjectMeta, why: &str) -> Result<(), Error> {
    let owner = Owner {
        api_version: super::reconcile::API_VERSION.to_owned(),
        kind: K::kind(&()).into_owned(),
        namespace: meta.namespace.clone().unwrap_or_default(),
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
    };
    let generation = meta.generation.unwrap_or(0);
    if let Err(blocked) = remove_owned(ctx, &owner, generation, true, false).await? {
        tracing::warn!(owner = %owner.describe(), error = %blocked.message, "cannot release ownership");
        return Ok(());
    }
    if !has_finalizer(meta) {
        return Ok(());
    }
    let api: Api<DeserializeGuard<K>> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    if let Err(err) = drop_finalizer(&api, meta).await {
        tracing::warn!(%err, owner = %owner.describe(), "ownership released, but the finalizer could not be removed");
        return Ok(());
    }
    let reference = ObjectReference {
        api_version: Some(owner.api_version.clone()),
        kind: Some(owner.kind.clone()),
        name: Some(owner.name.clone()),
        namespace: Some(owner.namespace.clone()),
        uid: meta.uid.clone(),
        ..Default::default()
    };
    let note = format!(
        "released: {why}; its catalog objects stay, unmanaged (annotate basalt.dev/adopt=\"true\" to take them over again)"
    );
    ctx.publish(&reference, "Released", false, note).await;
    Ok(())
}

/// Removes the controller's finalizer by a merge patch carrying the resource version read, so a
/// concurrent change to the finalizers is not overwritten (the patch then fails).
pub(super) async fn drop_finalizer<K: Kind>(
    api: &Api<DeserializeGuard<K>>,
    meta: &ObjectMeta,
) -> Result<(), kube::Error> {
    let kept: Vec<&String> = meta
        .finalizers
        .iter()
        .flatten()
        .filter(|f| *f != FINALIZER)
        .collect();
    let patch = json!({"metadata": {
        "finalizers": kept,
        "resourceVersion": meta.resource_version,
    }});
    let name = meta.name.clone().unwrap_or_default();
    api.patch_metadata(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(|_: PartialObjectMeta<DeserializeGuard<K>>| ())
}
