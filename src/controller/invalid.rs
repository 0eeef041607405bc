//! Resources that no longer match their schema — a CRD upgraded under them, or an object
//! written past validation — arrive as [`InvalidObject`]s: metadata and a parse error, no
//! spec. They are reported as `Ready=False/InvalidSpec` once per change (not on every catalog
//! notification), and they can always be deleted: the finalizer's cleanup needs only the
//! owner and the annotations, which the metadata still has, so a namespace holding one is not
//! stuck terminating.

use super::conditions::{self, Reason, Wanted};
use super::kinds::Kind;
use super::reconcile::{
    deleted_note, remove_owned, Context, Error, CASCADE_DELETE, DELETION_POLICY, FINALIZER,
};
use crate::metadata::objects::Owner;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams};
use kube::core::error_boundary::InvalidObject;
use kube::core::DeserializeGuard;
use kube::runtime::controller::Action;
use kube::Api;
use serde_json::json;

/// Reconciles an object that does not deserialize: its cleanup when it is being deleted, its
/// `InvalidSpec` status otherwise.
pub(super) async fn reconcile<K: Kind>(
    invalid: &InvalidObject,
    ctx: &Context,
) -> Result<Action, Error> {
    if invalid.metadata.deletion_timestamp.is_some() {
        return delete::<K>(invalid, ctx).await;
    }
    report::<K>(invalid, ctx).await
}

fn name(invalid: &InvalidObject) -> (String, String) {
    (
        invalid.metadata.namespace.clone().unwrap_or_default(),
        invalid.metadata.name.clone().unwrap_or_default(),
    )
}

fn reference<K: Kind>(invalid: &InvalidObject) -> ObjectReference {
    let (namespace, name) = name(invalid);
    ObjectReference {
        api_version: Some(super::reconcile::API_VERSION.to_owned()),
        kind: Some(K::kind(&()).into_owned()),
        name: Some(name),
        namespace: Some(namespace),
        uid: invalid.metadata.uid.clone(),
        ..Default::default()
    }
}

fn object_key<K: Kind>(invalid: &InvalidObject) -> String {
    let (namespace, name) = name(invalid);
    format!("{}/{namespace}/{name}", K::kind(&()))
}

/// `Ready=False/InvalidSpec` by merge patch, and a Warning Event — only when the generation or
/// the parse error changed since the last report.
async fn report<K: Kind>(invalid: &InvalidObject, ctx: &Context) -> Result<Action, Error> {
    let (namespace, name) = name(invalid);
    let generation = invalid.metadata.generation.unwrap_or(0);
    let message = format!("the resource does not match its schema: {}", invalid.error);
    if !ctx.report_invalid(&object_key::<K>(invalid), generation, &message) {
        return Ok(Action::await_change());
    }
    let api: Api<DeserializeGuard<K>> = Api::namespaced(ctx.client.clone(), &namespace);
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let wanted = [Wanted {
        type_: "Ready",
        status: "False",
        reason: Reason::InvalidSpec.as_str(),
        message: message.clone(),
    }];
    let patch = json!({"status": {
        "observedGeneration": generation,
        "conditions": conditions::merge(&[], &wanted, generation, &now),
    }});
    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    ctx.publish(&reference::<K>(invalid), "InvalidSpec", true, message)
        .await;
    Ok(Action::await_change())
}

/// The finalizer's cleanup from the metadata alone, then the finalizer removed (with the
/// object's resource version, so a concurrent change is not overwritten).
async fn delete<K: Kind>(invalid: &InvalidObject, ctx: &Context) -> Result<Action, Error> {
    let finalizers = invalid.metadata.finalizers.clone().unwrap_or_default();
    if !finalizers.iter().any(|f| f == FINALIZER) {
        return Ok(Action::await_change());
    }
    let (namespace, name) = name(invalid);
    let owner = Owner {
        api_version: super::reconcile::API_VERSION.to_owned(),
        kind: K::kind(&()).into_owned(),
        namespace: namespace.clone(),
        name: name.clone(),
        uid: invalid.metadata.uid.clone().unwrap_or_default(),
    };
    let annotation = |key: &str| {
        invalid
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .map(String::as_str)
    };
    let orphan = annotation(DELETION_POLICY) == Some("orphan");
    let cascade = annotation(CASCADE_DELETE) == Some("true");
    let generation = invalid.metadata.generation.unwrap_or(0);
    let written = match remove_owned(ctx, &owner, generation, orphan, cascade).await? {
        Ok(written) => written,
        Err(e) => return Err(Error::DeletionBlocked(e)),
    };
    let api: Api<DeserializeGuard<K>> = Api::namespaced(ctx.client.clone(), &namespace);
    super::scope::drop_finalizer(&api, &invalid.metadata).await?;
    ctx.forget_invalid(&object_key::<K>(invalid));
    ctx.publish(
        &reference::<K>(invalid),
        "Deleted",
        false,
        deleted_note(&written, orphan),
    )
    .await;
    Ok(Action::await_change())
}
