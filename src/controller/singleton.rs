//! One owner for an object the catalog holds once (`docs/kubernetes.md`, "One owner for the
//! API limits"): the kinds marked [`Kind::SINGLETON`] (ApiLimitPolicy, owning `api_limits`).
//! The resource that owns the object keeps it while it exists. With no owner (none yet, or the
//! owner deleted, or gone without cleanup), the oldest resource of the kind in the watched
//! namespaces applies — by `creationTimestamp`, then `namespace/name` in byte order, among
//! those that can be applied — and every other one is held in `Conflict` without touching the
//! catalog. Deciding reads the shared view's ownership rows; only when no resource owns the
//! object are the kind's resources listed.

use super::kinds::Kind;
use super::reconcile::{Context, Error, RECONCILE};
use crate::metadata::objects::{Object, Owner};
use kube::api::ListParams;
use kube::core::DeserializeGuard;
use kube::{Api, Resource, ResourceExt};

/// Whether a resource of a singleton kind may apply its object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Claim {
    /// It owns the object, or it is first in line; `take_orphaned` when it takes the object
    /// over from a resource that no longer exists.
    Apply { take_orphaned: bool },
    /// Another resource owns the object or comes first: the `Conflict` message naming it.
    Held(String),
}

/// `<key> is owned by <Kind> <namespace>/<name>`.
fn held(key: &str, kind: &str, namespace: &str, name: &str) -> Claim {
    Claim::Held(format!("{key} is owned by {kind} {namespace}/{name}"))
}

/// Decides whether `resource` (identified as `owner`, declaring `declared`) may apply.
pub(super) async fn claim<K: Kind>(
    ctx: &Context,
    resource: &K,
    owner: &Owner,
    declared: &[Object],
) -> Result<Claim, Error> {
    let Some(key) = declared.first().map(Object::key) else {
        return Ok(Claim::Apply {
            take_orphaned: false,
        });
    };
    let row = {
        let view = ctx.view.current(&ctx.pool).await?;
        view.rows.get(&key).map(|r| (r.owner.clone(), r.orphaned))
    };
    let same_name =
        |o: &Owner| o.kind == owner.kind && o.namespace == owner.namespace && o.name == owner.name;
    match &row {
        Some((current, _)) if current.uid == owner.uid => {
            return Ok(Claim::Apply {
                take_orphaned: false,
            })
        }
        // Re-created under the same name after its predecessor vanished: its own rows.
        Some((current, true)) if same_name(current) => {
            return Ok(Claim::Apply {
                take_orphaned: false,
            })
        }
        Some((current, false)) => {
            return Ok(held(&key, &current.kind, &current.namespace, &current.name))
        }
        _ => {}
    }
    let first = first_in_line(ctx, resource).await?;
    Ok(match first {
        Some((namespace, name)) if namespace != owner.namespace || name != owner.name => {
            held(&key, &owner.kind, &namespace, &name)
        }
        _ => Claim::Apply {
            take_orphaned: row.is_some(),
        },
    })
}

/// The resource of `resource`'s kind that applies when none owns the object: the oldest of
/// those in the watched namespaces (and label selector) that can be applied — not being
/// deleted, not suspended, valid — by creation time, then `namespace/name` in byte order.
/// `resource` itself always competes, listed or not.
async fn first_in_line<K: Kind>(
    ctx: &Context,
    resource: &K,
) -> Result<Option<(String, String)>, Error> {
    let mut candidates = vec![rank(resource)];
    let listed = in_scope(ctx, resource).await?;
    candidates.extend(listed.iter().filter(|r| can_apply(ctx, *r)).map(rank));
    candidates.sort();
    Ok(candidates.into_iter().next().map(|(_, _, _, named)| named))
}

/// The order of candidates: created earlier first (an object without a creation time, which
/// an API server never serves, last), then `namespace/name` in byte order.
type Rank = (
    bool,
    Option<k8s_openapi::jiff::Timestamp>,
    String,
    (String, String),
);

fn rank<K: Resource>(resource: &K) -> Rank {
    let created = resource.meta().creation_timestamp.as_ref().map(|t| t.0);
    let namespace = resource.meta().namespace.clone().unwrap_or_default();
    let name = resource.meta().name.clone().unwrap_or_default();
    (
        created.is_none(),
        created,
        format!("{namespace}/{name}"),
        (namespace, name),
    )
}

/// The resources of `resource`'s kind in the watched namespaces (its own when none are set)
/// and label selector, each that reads as its kind.
pub(super) async fn in_scope<K: Kind>(ctx: &Context, resource: &K) -> Result<Vec<K>, Error> {
    let own_namespace = resource.namespace().unwrap_or_default();
    let scopes = match ctx.settings.scopes.is_empty() {
        true => vec![Some(own_namespace)],
        false => ctx.settings.scopes.clone(),
    };
    let mut params = ListParams::default();
    if let Some(selector) = &ctx.settings.label_selector {
        params = params.labels(selector);
    }
    let mut out = Vec::new();
    for scope in &scopes {
        let api: Api<DeserializeGuard<K>> = match scope {
            Some(ns) => Api::namespaced(ctx.client.clone(), ns),
            None => Api::all(ctx.client.clone()),
        };
        // One that does not read as its kind cannot be applied.
        out.extend(
            api.list(&params)
                .await?
                .items
                .into_iter()
                .filter_map(|l| l.0.ok()),
        );
    }
    Ok(out)
}

/// Whether a resource is suspended (`basalt.dev/reconcile: "disabled"`).
pub(super) fn suspended<K: Kind>(resource: &K) -> bool {
    resource
        .meta()
        .annotations
        .as_ref()
        .and_then(|a| a.get(RECONCILE))
        .is_some_and(|v| v == "disabled")
}

/// Whether a resource could apply its object when its turn comes: not being deleted, not
/// suspended, valid.
fn can_apply<K: Kind>(ctx: &Context, resource: &K) -> bool {
    resource.meta().deletion_timestamp.is_none()
        && !suspended(resource)
        && ctx.check_cel(resource).is_ok()
        && resource.declared().is_ok()
}
