//! Resources whose objects reference each other in a cycle (`docs/kubernetes.md`, "Cycles"):
//! LogicalModels through their nested fields, NativeQueries through relationships to each
//! other. No member can land before the others, so a reconcile whose objects wait on a member
//! of such a cycle plans and writes every member's objects in one bulk; each member's own
//! reconcile makes the same write (or finds it made) and so reaches the same outcome. Nor can
//! a member go before the others: deleting them removes their objects in one bulk too.

use super::commit::{remove_owned, write_with, Written};
use super::conditions::Reason;
use super::diff::{self, Policy};
use super::kinds::Kind;
use super::reconcile::{owner_of, Context, Error, SELF_HEAL};
use super::singleton::{in_scope, suspended};
use crate::metadata::ids::ObjectId;
use crate::metadata::objects::{Object, Owner};
use crate::metadata::Code;
use crate::metadata::MetadataError;
use kube::ResourceExt;
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

/// A resource of the same kind that is written with the one reconciled.
struct Member {
    owner: Owner,
    generation: i64,
    declared: Vec<Object>,
    /// Its own self-heal setting; it never adopts within another resource's write (its own
    /// reconcile does, once the cycle is in place).
    policy: Policy,
}

/// Writes `target` (the objects of `resource`), and when some of them wait on a member of a
/// cycle they belong to, writes them again together with every member's objects.
pub(super) async fn write<K: Kind>(
    ctx: &Context,
    resource: &K,
    target: &diff::Resource<'_>,
    policy: Policy,
) -> Result<Result<Written, MetadataError>, Error> {
    // Boxed: the write's future is large, and this one holds two.
    let first = Box::pin(write_with(ctx, target, &[], policy, None)).await?;
    let blocked = match &first {
        Ok(written) => (written.waiting.iter())
            .any(|(key, _, _)| target.desired.iter().any(|o| &o.key() == key)),
        Err(e) => super::conditions::classify(e, false) == Reason::DependencyNotReady,
    };
    if !blocked || target.desired.iter().all(|o| references(o).is_empty()) {
        return Ok(first);
    }
    let members = members(ctx, resource, target.desired, false).await?;
    if members.is_empty() {
        return Ok(first);
    }
    // What any member waits for stays in the answer: the cycle lands as a whole or not at all,
    // so every member reports the same.
    Box::pin(write_with(ctx, target, &together(&members), policy, None)).await
}

/// Removes (or releases, `orphan`) what `resource` owns; when the catalog refuses because
/// resources of its kind that are being deleted too still reference its objects, and its
/// objects reference theirs back, removes all of theirs with it.
pub(super) async fn remove<K: Kind>(
    ctx: &Context,
    resource: &K,
    owner: &Owner,
    generation: i64,
    (orphan, cascade): (bool, bool),
) -> Result<Result<Written, MetadataError>, Error> {
    let first = Box::pin(remove_owned(ctx, owner, generation, orphan, cascade)).await?;
    let blocked = matches!(&first, Err(e) if e.code == Code::DependencyError);
    let Ok(declared) = resource.declared() else {
        return Ok(first);
    };
    if orphan || !blocked || declared.iter().all(|o| references(o).is_empty()) {
        return Ok(first);
    }
    let members = members(ctx, resource, &declared, true).await?;
    if members.is_empty() {
        return Ok(first);
    }
    let target = diff::Resource {
        owner,
        generation,
        desired: &[],
    };
    let removal = diff::Removal {
        orphan,
        cascade,
        tables: false,
    };
    let members = together(&members);
    Box::pin(write_with(
        ctx,
        &target,
        &members,
        Policy::default(),
        Some(removal),
    ))
    .await
}

fn together(members: &[Member]) -> Vec<(diff::Resource<'_>, Policy)> {
    members
        .iter()
        .map(|m| {
            let resource = diff::Resource {
                owner: &m.owner,
                generation: m.generation,
                desired: &m.declared,
            };
            (resource, m.policy)
        })
        .collect()
}

/// The other resources of `resource`'s kind that are in a cycle with it: those its objects
/// reach through references that also reach back to it. With `deleting`, among the resources
/// being deleted; otherwise among those that can be applied (not being deleted, not
/// suspended, valid).
async fn members<K: Kind>(
    ctx: &Context,
    resource: &K,
    declared: &[Object],
    deleting: bool,
) -> Result<Vec<Member>, Error> {
    let uid = resource.uid();
    let others: Vec<Member> = (in_scope(ctx, resource).await?)
        .into_iter()
        .filter(|other| other.uid() != uid && !suspended(other))
        .filter(|other| other.meta().deletion_timestamp.is_some() == deleting)
        .filter(|other| ctx.check_cel(other).is_ok())
        .filter_map(|other| {
            let self_heal = match other.annotations().get(SELF_HEAL).map(String::as_str) {
                Some("true") => true,
                Some("false") => false,
                _ => ctx.settings.self_heal,
            };
            Some(Member {
                owner: owner_of(&other),
                generation: other.meta().generation.unwrap_or(0),
                declared: other.declared().ok()?,
                policy: Policy {
                    self_heal,
                    ..Policy::default()
                },
            })
        })
        .collect();
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
