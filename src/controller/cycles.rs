//! Resources whose objects reference each other in a cycle (`docs/kubernetes.md`, "Cycles"):
//! LogicalModels through their nested fields, NativeQueries through relationships to each
//! other. No member can land before the others, so a reconcile whose objects wait on a member
//! of such a cycle plans and writes every member's objects in one bulk; each member's own
//! reconcile makes the same write (or finds it made) and so reaches the same outcome.

use super::commit::{write_with, Written};
use super::conditions::Reason;
use super::diff::{self, Policy};
use super::kinds::Kind;
use super::reconcile::{owner_of, Context, Error};
use crate::metadata::ids::ObjectId;
use crate::metadata::objects::{Object, Owner};
use crate::metadata::MetadataError;
use kube::api::ListParams;
use kube::core::DeserializeGuard;
use kube::{Api, ResourceExt};
use std::collections::BTreeSet;

/// The keys of the logical models and native queries `object` references.
fn references(object: &Object) -> BTreeSet<String> {
    match object {
        Object::LogicalModel(m) => (m.fields.iter())
            .filter_map(|f| f.field_type.model())
            .map(|name| ObjectId::LogicalModel(name.to_owned()).to_string())
            .collect(),
        Object::NativeQuery(q) => (q.object_relationships.iter())
            .chain(&q.array_relationships)
            .filter_map(|r| r.using.remote_native_query.clone())
            .map(|name| ObjectId::NativeQuery(name).to_string())
            .collect(),
        _ => BTreeSet::new(),
    }
}

/// A resource of the same kind that is applied with the one reconciled.
struct Member {
    owner: Owner,
    generation: i64,
    declared: Vec<Object>,
}

/// Writes `target` (the objects of `resource`), and when some of them wait on a member of a
/// cycle they belong to, writes them again together with every member's objects.
pub(super) async fn write<K: Kind>(
    ctx: &Context,
    resource: &K,
    target: &diff::Resource<'_>,
    policy: Policy,
) -> Result<Result<Written, MetadataError>, Error> {
    let first = write_with(ctx, target, &[], policy, None).await?;
    let blocked = match &first {
        Ok(written) => (written.waiting.iter())
            .any(|(key, _, _)| target.desired.iter().any(|o| &o.key() == key)),
        Err(e) => super::conditions::classify(e, false) == Reason::DependencyNotReady,
    };
    if !blocked || target.desired.iter().all(|o| references(o).is_empty()) {
        return Ok(first);
    }
    let members = members(ctx, resource, target.desired).await?;
    if members.is_empty() {
        return Ok(first);
    }
    let together: Vec<diff::Resource<'_>> = members
        .iter()
        .map(|m| diff::Resource {
            owner: &m.owner,
            generation: m.generation,
            desired: &m.declared,
        })
        .collect();
    // What any member waits for stays in the answer: the cycle lands as a whole or not at all,
    // so every member reports the same.
    write_with(ctx, target, &together, policy, None).await
}

/// The other resources of `resource`'s kind that are in a cycle with it: those its objects
/// reach through references that also reach back to it. Resources being deleted, suspended
/// or whose spec does not map are left out.
async fn members<K: Kind>(
    ctx: &Context,
    resource: &K,
    declared: &[Object],
) -> Result<Vec<Member>, Error> {
    let own_namespace = resource.namespace().unwrap_or_default();
    let scopes = match ctx.settings.scopes.is_empty() {
        true => vec![Some(own_namespace)],
        false => ctx.settings.scopes.clone(),
    };
    let mut params = ListParams::default();
    if let Some(selector) = &ctx.settings.label_selector {
        params = params.labels(selector);
    }
    let uid = resource.uid();
    let mut others = Vec::new();
    for scope in &scopes {
        let api: Api<DeserializeGuard<K>> = match scope {
            Some(ns) => Api::namespaced(ctx.client.clone(), ns),
            None => Api::all(ctx.client.clone()),
        };
        for listed in api.list(&params).await?.items {
            let Ok(other) = listed.0 else { continue };
            let suspended = (other.annotations().get(super::reconcile::RECONCILE))
                .is_some_and(|v| v == "disabled");
            if other.uid() == uid || other.meta().deletion_timestamp.is_some() || suspended {
                continue;
            }
            let Ok(objects) = other.declared() else {
                continue;
            };
            others.push(Member {
                owner: owner_of(&other),
                generation: other.meta().generation.unwrap_or(0),
                declared: objects,
            });
        }
    }
    // Node 0 is the resource itself; an edge i → j when i references an object j declares.
    let mut nodes: Vec<(BTreeSet<String>, BTreeSet<String>)> = vec![(
        declared.iter().map(Object::key).collect(),
        declared.iter().flat_map(references).collect(),
    )];
    nodes.extend(others.iter().map(|m| {
        (
            m.declared.iter().map(Object::key).collect(),
            m.declared.iter().flat_map(references).collect(),
        )
    }));
    let edge = |i: usize, j: usize| nodes[i].1.iter().any(|k| nodes[j].0.contains(k));
    let reach = |forward: bool| {
        let mut seen = BTreeSet::from([0usize]);
        let mut stack = vec![0usize];
        while let Some(i) = stack.pop() {
            for j in 0..nodes.len() {
                let linked = match forward {
                    true => edge(i, j),
                    false => edge(j, i),
                };
                if linked && seen.insert(j) {
                    stack.push(j);
                }
            }
        }
        seen
    };
    let (from, to) = (reach(true), reach(false));
    Ok(others
        .into_iter()
        .enumerate()
        .filter(|(i, _)| from.contains(&(i + 1)) && to.contains(&(i + 1)))
        .map(|(_, m)| m)
        .collect())
}
