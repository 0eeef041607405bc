//! Inherited roles and API limits (see `docs/auth.md`, "Inherited roles", and
//! `docs/metadata-api.md`, "Inherited roles and API limits"). Pure serde types: must not depend
//! on anything outside `metadata`.

use super::*;
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::collections::BTreeMap;

/// A role whose permissions are derived from its parents' (`add_inherited_role`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InheritedRole {
    pub role_name: Name,
    /// The parents, in the given order, without duplicates.
    pub role_set: RoleSet,
}

/// The parents of an inherited role: a non-empty list of role names, duplicates collapsed to
/// their first occurrence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct RoleSet(pub Vec<Name>);

impl<'de> Deserialize<'de> for RoleSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let names = Vec::<Name>::deserialize(d)?;
        if names.is_empty() {
            return Err(de::Error::custom("role_set must not be empty"));
        }
        let mut out: Vec<Name> = Vec::with_capacity(names.len());
        for name in names {
            if !out.contains(&name) {
                out.push(name);
            }
        }
        Ok(RoleSet(out))
    }
}

/// The per-role guards of `/v1/graphql` (`set_api_limits`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiLimits {
    /// Kept but not enforced.
    #[serde(default)]
    pub disabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth_limit: Option<Limit<Count>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_limit: Option<Limit<Count>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<Limit<Seconds>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_limit: Option<Limit<Count>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<Limit<RateLimit>>,
}

impl ApiLimits {
    /// Whether this is the empty object ("no limits"), which export leaves out.
    pub fn is_empty(&self) -> bool {
        self == &ApiLimits::default()
    }
}

/// One limit: a global value, overridden per role name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limit<T> {
    pub global: T,
    #[serde(default = "BTreeMap::new")]
    pub per_role: BTreeMap<Name, T>,
}

impl<T> Limit<T> {
    /// The value for `role`: its own entry, else the global one.
    pub fn for_role(&self, role: &str) -> &T {
        self.per_role
            .iter()
            .find(|(name, _)| name.0 == role)
            .map(|(_, v)| v)
            .unwrap_or(&self.global)
    }
}

/// A count limit (depth, nodes, batch size): an integer ≥ 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Count(pub u32);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        match value.as_u64() {
            Some(n @ 1..=0xFFFF_FFFF) => Ok(Count(n as u32)),
            _ => Err(de::Error::custom(format!(
                "expected an integer of at least 1, encountered {value}"
            ))),
        }
    }
}

/// A time limit in seconds: a number > 0, kept to the millisecond.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seconds {
    /// Whole milliseconds (at least 1).
    pub millis: u64,
}

impl Seconds {
    pub fn duration(self) -> std::time::Duration {
        std::time::Duration::from_millis(self.millis)
    }
}

impl std::fmt::Display for Seconds {
    /// `2`, `0.5`, `1.25`: the seconds as the limit was given.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let whole = self.millis / 1000;
        let frac = self.millis % 1000;
        if frac == 0 {
            return write!(f, "{whole}");
        }
        let digits = format!("{frac:03}");
        write!(f, "{whole}.{}", digits.trim_end_matches('0'))
    }
}

impl Serialize for Seconds {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.millis.is_multiple_of(1000) {
            s.serialize_u64(self.millis / 1000)
        } else {
            s.serialize_f64(self.millis as f64 / 1000.0)
        }
    }
}

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        let seconds = value.as_f64().filter(|s| s.is_finite() && *s > 0.0);
        match seconds {
            // A day at most: longer is no guard.
            Some(s) if s <= 86_400.0 => Ok(Seconds {
                millis: ((s * 1000.0).round() as u64).max(1),
            }),
            _ => Err(de::Error::custom(format!(
                "expected a number of seconds greater than 0 and at most 86400, encountered {value}"
            ))),
        }
    }
}

/// How many operations a key may run per sliding minute.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimit {
    pub max_reqs_per_min: Count,
    /// An empty list is stored as none.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "unique_params"
    )]
    pub unique_params: Option<UniqueParams>,
}

fn unique_params<'de, D: Deserializer<'de>>(d: D) -> Result<Option<UniqueParams>, D::Error> {
    Ok(match Option::<UniqueParams>::deserialize(d)? {
        Some(UniqueParams::SessionVariables(names)) if names.is_empty() => None,
        other => other,
    })
}

/// What splits a role's rate budget into buckets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UniqueParams {
    /// The client's IP address.
    Ip,
    /// The values of these session variables (lower-case names).
    SessionVariables(Vec<String>),
}

const UNIQUE_PARAMS: &str =
    "Not a valid value. Should be either: 'IP' or a list of session variables";

impl Serialize for UniqueParams {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            UniqueParams::Ip => s.serialize_str("IP"),
            UniqueParams::SessionVariables(names) => names.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for UniqueParams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let bad = || de::Error::custom(UNIQUE_PARAMS);
        match Value::deserialize(d)? {
            Value::String(s) if s.eq_ignore_ascii_case("ip") => Ok(UniqueParams::Ip),
            Value::Array(items) => {
                let mut names = Vec::with_capacity(items.len());
                for item in items {
                    let name = item.as_str().ok_or_else(bad)?.to_ascii_lowercase();
                    // Any session variable but the role itself.
                    let valid = matches!(name.strip_prefix("x-svc-"), Some(rest) if !rest.is_empty() && rest != "role");
                    if !valid {
                        return Err(bad());
                    }
                    if !names.contains(&name) {
                        names.push(name);
                    }
                }
                Ok(UniqueParams::SessionVariables(names))
            }
            _ => Err(bad()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn limits_read_and_write_in_their_stored_form() {
        let limits: ApiLimits = serde_json::from_value(json!({
            "time_limit": {"global": 0.5, "per_role": {"report": 2}},
            "rate_limit": {"global": {"max_reqs_per_min": 5, "unique_params": []},
                "per_role": {"user": {"max_reqs_per_min": 1, "unique_params": "ip"}}}
        }))
        .unwrap();
        assert_eq!(
            limits.time_limit.as_ref().unwrap().global.to_string(),
            "0.5"
        );
        assert_eq!(
            serde_json::to_value(&limits).unwrap(),
            json!({"disabled": false,
                "time_limit": {"global": 0.5, "per_role": {"report": 2}},
                "rate_limit": {"global": {"max_reqs_per_min": 5},
                    "per_role": {"user": {"max_reqs_per_min": 1, "unique_params": "IP"}}}})
        );
        let bad = serde_json::from_value::<ApiLimits>(json!({
            "rate_limit": {"global": {"max_reqs_per_min": 5, "unique_params": ["x-svc-role"]}}}));
        assert!(bad.unwrap_err().to_string().contains("Should be either"));
    }
}
