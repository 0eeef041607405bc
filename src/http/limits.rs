//! The API limits `/v1/graphql` applies before the engine runs anything (`docs/limits.md`):
//! the rate limit, counted per role and client address or session values, and the headers
//! that report it; and the client address itself, read through trusted proxies. The batch
//! limit is checked in [`super::graphql`]; depth, node and time limits are the engine's.

use crate::engine::{ApiVersion, GraphqlError};
use crate::limits::rate::{Ask, Verdict};
use crate::metadata::types::UniqueParams;
use crate::session::Session;
use crate::state::AppState;
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use std::net::{IpAddr, SocketAddr};

const LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
const REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
const FORWARDED_FOR: &str = "x-forwarded-for";

/// The client's address: the TCP peer's, or with `hops` trusted proxies in front, the
/// `hops`-th address from the right of `X-Forwarded-For` (the left-most when it has fewer).
/// Each proxy appends the address it received the request from, so that entry was written by
/// a trusted proxy; what a client sends further left is not trusted. IPv4-mapped IPv6
/// addresses read as IPv4.
pub(super) fn client_ip(peer: Option<IpAddr>, headers: &HeaderMap, hops: usize) -> Option<IpAddr> {
    let forwarded = (hops > 0)
        .then(|| {
            let entries: Vec<&str> = headers
                .get_all(FORWARDED_FOR)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(','))
                .map(str::trim)
                .filter(|entry| !entry.is_empty())
                .collect();
            let at = entries.len().saturating_sub(hops);
            entries.get(at).and_then(|entry| parse_address(entry))
        })
        .flatten();
    forwarded.or(peer).map(canonical)
}

/// An `X-Forwarded-For` entry: an address, possibly with a port (`[::1]:80`, `1.2.3.4:80`).
fn parse_address(entry: &str) -> Option<IpAddr> {
    entry
        .parse::<IpAddr>()
        .ok()
        .or_else(|| entry.parse::<SocketAddr>().ok().map(|s| s.ip()))
}

fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The bucket a session's operations are counted in: its role, and the client address or the
/// listed session variables' values (a missing variable counts as empty). Written as a JSON
/// array, so no two buckets share a key.
fn bucket(session: &Session, unique: Option<&UniqueParams>, ip: Option<IpAddr>) -> String {
    let mut parts = vec![session.role.clone()];
    match unique {
        Some(UniqueParams::Ip) => parts.push(ip.map(|ip| ip.to_string()).unwrap_or_default()),
        Some(UniqueParams::SessionVariables(names)) => parts.extend(
            names
                .iter()
                .map(|name| session.variables.get(name).cloned().unwrap_or_default()),
        ),
        None => {}
    }
    serde_json::Value::from(parts).to_string()
}

/// Counts one operation per session of `sessions` (a batch's, or one request's) against the
/// rate limits of their roles at `version`, all admitted or none; `None` when no rate limit
/// applies to any of them. Recorded in the metrics by role.
pub(super) fn admit(
    state: &AppState,
    version: &ApiVersion,
    sessions: &[&Session],
    ip: Option<IpAddr>,
) -> Option<Verdict> {
    if version.limits.is_empty() {
        return None;
    }
    let mut asks: Vec<(Ask, &str)> = Vec::new();
    for session in sessions {
        let Some(rate) = version
            .limits
            .of(&session.role)
            .and_then(|l| l.rate.as_ref())
        else {
            continue;
        };
        let key = bucket(session, rate.unique_params.as_ref(), ip);
        match asks.iter_mut().find(|(ask, _)| ask.key == key) {
            Some((ask, _)) => ask.count += 1,
            None => asks.push((
                Ask {
                    key,
                    max: rate.max_reqs_per_min.0,
                    count: 1,
                },
                &session.role,
            )),
        }
    }
    if asks.is_empty() {
        return None;
    }
    let only: Vec<Ask> = asks.iter().map(|(ask, _)| ask.clone()).collect();
    let verdict = state.rate.admit(&only, std::time::Instant::now());
    let admitted = matches!(verdict, Verdict::Admitted { .. });
    for (ask, role) in &asks {
        state
            .metrics
            .rate_limited(role, admitted, u64::from(ask.count));
    }
    Some(verdict)
}

/// The error a refusal answers (`None` for an admission).
pub(super) fn refusal(verdict: Verdict) -> Option<GraphqlError> {
    match verdict {
        Verdict::Refused { limit, .. } => Some(GraphqlError::RateLimited { max: limit }),
        Verdict::Admitted { .. } => None,
    }
}

/// The headers that report a rate limit's verdict: the budget, what is left of it in this
/// process's window, and for a refusal when to try again.
pub(super) fn headers(headers: &mut HeaderMap, verdict: Verdict) {
    let (limit, remaining) = match verdict {
        Verdict::Admitted { limit, remaining } => (limit, remaining),
        Verdict::Refused { limit, retry_after } => {
            headers.insert(
                axum::http::header::RETRY_AFTER,
                HeaderValue::from(retry_after),
            );
            (limit, 0)
        }
    };
    headers.insert(LIMIT, HeaderValue::from(limit));
    headers.insert(REMAINING, HeaderValue::from(remaining));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn forwarded(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(FORWARDED_FOR, HeaderValue::from_str(v).unwrap());
        }
        headers
    }

    fn ip(text: &str) -> Option<IpAddr> {
        Some(text.parse().unwrap())
    }

    #[test]
    fn the_client_address_is_the_peer_or_the_trusted_proxies_entry() {
        let peer = ip("10.0.0.9");
        let headers = forwarded(&["203.0.113.7, 198.51.100.2", "10.0.0.1"]);
        assert_eq!(client_ip(peer, &headers, 0), peer, "no trusted proxy");
        assert_eq!(client_ip(peer, &headers, 1), ip("10.0.0.1"));
        assert_eq!(client_ip(peer, &headers, 2), ip("198.51.100.2"));
        assert_eq!(client_ip(peer, &headers, 3), ip("203.0.113.7"));
        assert_eq!(
            client_ip(peer, &headers, 9),
            ip("203.0.113.7"),
            "fewer: left-most"
        );
        assert_eq!(
            client_ip(peer, &HeaderMap::new(), 1),
            peer,
            "no header: the peer"
        );
        let ported = forwarded(&["[2001:db8::1]:443, 192.0.2.4:8080"]);
        assert_eq!(client_ip(peer, &ported, 1), ip("192.0.2.4"));
        assert_eq!(client_ip(peer, &ported, 2), ip("2001:db8::1"));
    }

    #[test]
    fn ipv4_mapped_addresses_read_as_ipv4() {
        let mapped = ip("::ffff:192.0.2.1");
        assert_eq!(client_ip(mapped, &HeaderMap::new(), 0), ip("192.0.2.1"));
        let headers = forwarded(&["::ffff:198.51.100.3"]);
        assert_eq!(client_ip(None, &headers, 1), ip("198.51.100.3"));
        assert_eq!(client_ip(ip("::1"), &HeaderMap::new(), 0), ip("::1"));
    }

    #[test]
    fn buckets_split_by_role_and_unique_params() {
        let session = |role: &str, vars: &[(&str, &str)]| Session {
            role: role.to_owned(),
            variables: vars
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>(),
            backend_only: false,
            expires: None,
        };
        let user = session("user", &[("x-svc-user-id", "1")]);
        assert_eq!(bucket(&user, None, ip("192.0.2.1")), r#"["user"]"#);
        assert_eq!(
            bucket(&user, Some(&UniqueParams::Ip), ip("192.0.2.1")),
            r#"["user","192.0.2.1"]"#
        );
        let names = UniqueParams::SessionVariables(vec![
            "x-svc-user-id".to_owned(),
            "x-svc-org-id".to_owned(),
        ]);
        assert_eq!(bucket(&user, Some(&names), None), r#"["user","1",""]"#);
        let other = session("user", &[("x-svc-org-id", "1")]);
        assert_ne!(
            bucket(&user, Some(&names), None),
            bucket(&other, Some(&names), None)
        );
    }
}
