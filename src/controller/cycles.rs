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
/// or whose spec does not map (or breaks a CEL rule) are left out.
async fn members<K: Kind>(
    ctx: &Context,
    resource: &K,
    declared: &[Object],
) -> Result<Vec<Member>, Error> {
    let uid = resource.uid();
    let others: Vec<Member> = (super::singleton::applicable(ctx, resource).await?)
        .into_iter()
        .filter(|other| other.uid() != uid)
        .filter_map(|other| {
            Some(Member {
                owner: owner_of(&other),
                generation: other.meta().generation.unwrap_or(0),
                declared: other.declared().ok()?,
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
