//! Per-role API limits (`docs/limits.md`): what each role is held to at one metadata version
//! ([`RoleLimits`], worked out once when the version is installed), and the per-process rate
//! limiter ([`rate`]). No IO and no clock of its own (the limiter is given the time), nothing
//! about HTTP or sockets: `http` derives the client address and answers refusals, `engine`
//! enforces the depth, node and time limits.

pub mod rate;

use crate::metadata::types::{ApiLimits, Limit, RateLimit, Seconds};
use crate::session::ADMIN_ROLE;
use std::collections::{BTreeSet, HashMap};

/// The API limits one role is held to, on top of the server's own (`--max-query-depth`,
/// `--max-batch-size`), which apply to every role.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Effective {
    /// Most fields with a selection set on one path from a root field.
    pub depth: Option<u32>,
    /// Most field occurrences with a selection set in one operation.
    pub nodes: Option<u32>,
    /// Longest batch.
    pub batch: Option<u32>,
    /// Longest run of one operation.
    pub time: Option<Seconds>,
    /// Operations per sliding minute, and what splits the role's budget into buckets.
    pub rate: Option<RateLimit>,
}

impl Effective {
    fn is_empty(&self) -> bool {
        self == &Effective::default()
    }
}

/// The limits of every role at one metadata version: a role's own entries where it has any,
/// the global values otherwise.
#[derive(Debug, Default)]
pub struct RoleLimits {
    /// For roles without an entry of their own; `None` when nothing applies to them.
    global: Option<Effective>,
    /// Roles named in some limit's `per_role`.
    per_role: HashMap<String, Effective>,
}

impl RoleLimits {
    /// The limits `limits` sets: none at all when it is disabled.
    pub fn new(limits: &ApiLimits) -> Self {
        if limits.disabled {
            return RoleLimits::default();
        }
        let named: BTreeSet<&str> = role_names(&limits.depth_limit)
            .chain(role_names(&limits.node_limit))
            .chain(role_names(&limits.batch_limit))
            .chain(role_names(&limits.time_limit))
            .chain(role_names(&limits.rate_limit))
            .collect();
        let of = |role: Option<&str>| Effective {
            depth: limits.depth_limit.as_ref().map(|l| value(l, role).0),
            nodes: limits.node_limit.as_ref().map(|l| value(l, role).0),
            batch: limits.batch_limit.as_ref().map(|l| value(l, role).0),
            time: limits.time_limit.as_ref().map(|l| *value(l, role)),
            rate: limits.rate_limit.as_ref().map(|l| value(l, role).clone()),
        };
        let global = Some(of(None)).filter(|e| !e.is_empty());
        let per_role = named
            .into_iter()
            .filter(|role| *role != ADMIN_ROLE)
            .map(|role| (role.to_owned(), of(Some(role))))
            .filter(|(_, e)| !e.is_empty())
            .collect();
        RoleLimits { global, per_role }
    }

    /// What `role` is held to; `None` for `admin`, and when no limit applies to the role.
    pub fn of(&self, role: &str) -> Option<&Effective> {
        if role == ADMIN_ROLE {
            return None;
        }
        self.per_role.get(role).or(self.global.as_ref())
    }

    /// Whether no role is held to anything.
    pub fn is_empty(&self) -> bool {
        self.global.is_none() && self.per_role.is_empty()
    }
}

/// A limit's value for `role` (its entry, else the global value), or the global value.
fn value<'a, T>(limit: &'a Limit<T>, role: Option<&str>) -> &'a T {
    match role {
        Some(role) => limit.for_role(role),
        None => &limit.global,
    }
}

/// The role names a limit has entries for.
fn role_names<T>(limit: &Option<Limit<T>>) -> impl Iterator<Item = &str> {
    limit
        .iter()
        .flat_map(|l| l.per_role.keys().map(|name| name.0.as_str()))
}

/// The smaller of a server limit and an API limit, when there is one.
pub fn tightest(server: usize, api: Option<u32>) -> usize {
    match api {
        Some(api) => server.min(usize::try_from(api).unwrap_or(usize::MAX)),
        None => server,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn limits(value: serde_json::Value) -> RoleLimits {
        RoleLimits::new(&serde_json::from_value(value).unwrap())
    }

    #[test]
    fn a_role_entry_overrides_the_global_value_of_its_own_limit_only() {
        let l = limits(json!({
            "depth_limit": {"global": 3, "per_role": {"editor": 5}},
            "node_limit": {"global": 10},
            "time_limit": {"global": 0.5, "per_role": {"reader": 2}},
        }));
        let editor = l.of("editor").unwrap();
        assert_eq!((editor.depth, editor.nodes), (Some(5), Some(10)));
        assert_eq!(editor.time.unwrap().millis, 500);
        let reader = l.of("reader").unwrap();
        assert_eq!((reader.depth, reader.time.unwrap().millis), (Some(3), 2000));
        let other = l.of("anyone").unwrap();
        assert_eq!(
            (other.depth, other.nodes, other.batch),
            (Some(3), Some(10), None)
        );
        assert!(other.rate.is_none());
    }

    #[test]
    fn admin_disabled_and_empty_limits_hold_no_one() {
        let set = json!({"depth_limit": {"global": 1, "per_role": {"admin": 1}}});
        assert!(limits(set.clone()).of("admin").is_none());
        assert!(limits(set.clone()).of("user").is_some());
        let mut disabled = set;
        disabled["disabled"] = json!(true);
        assert!(limits(disabled).is_empty());
        assert!(limits(json!({})).of("user").is_none());
        let only = limits(json!({"batch_limit": {"global": 4, "per_role": {"user": 2}}}));
        assert_eq!(only.of("user").unwrap().batch, Some(2));
        assert_eq!(only.of("guest").unwrap().batch, Some(4));
    }

    #[test]
    fn the_tightest_of_the_server_and_api_limits() {
        assert_eq!(tightest(64, Some(3)), 3);
        assert_eq!(tightest(2, Some(3)), 2);
        assert_eq!(tightest(64, None), 64);
    }
}
