//! Cron triggers (`docs/scheduled-triggers.md`): a named schedule calling a webhook, and the
//! retry settings it shares with one-off scheduled events. Pure serde types: must not depend
//! on anything outside `metadata`.

use super::*;
use serde::{de, Deserialize, Deserializer, Serialize};

/// A cron trigger as the metadata holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CronTriggerEntry {
    pub name: String,
    /// The URL, `{{VAR}}` templates unexpanded.
    pub webhook: String,
    /// Five cron fields, evaluated in UTC.
    pub schedule: String,
    /// Sent as `payload` (`null` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<Header>,
    /// Exported only when it differs from the defaults.
    #[serde(default, skip_serializing_if = "ScheduledRetryConf::is_default")]
    pub retry_conf: ScheduledRetryConf,
    /// Whether `export_metadata` (and `replace_metadata`) carry it.
    pub include_in_metadata: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// Retries, timeout and tolerance of scheduled events. Seconds may be fractional.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ScheduledRetryConf {
    /// Retries after the first failed attempt.
    pub num_retries: u32,
    /// Wait after a failed attempt, unless the answer says `Retry-After`.
    #[serde(serialize_with = "seconds")]
    pub retry_interval_seconds: f64,
    /// HTTP timeout of one attempt.
    #[serde(serialize_with = "seconds")]
    pub timeout_seconds: f64,
    /// An event picked up later than this after its time is not sent: it is `dead`.
    #[serde(serialize_with = "seconds")]
    pub tolerance_seconds: f64,
}

/// Whole seconds as an integer (`30`, not `30.0`), others as they are.
fn seconds<S: serde::Serializer>(value: &f64, s: S) -> Result<S::Ok, S::Error> {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        s.serialize_i64(*value as i64)
    } else {
        s.serialize_f64(*value)
    }
}

impl Default for ScheduledRetryConf {
    fn default() -> Self {
        ScheduledRetryConf {
            num_retries: 0,
            retry_interval_seconds: 10.0,
            timeout_seconds: 60.0,
            tolerance_seconds: 21600.0,
        }
    }
}

impl ScheduledRetryConf {
    pub fn is_default(&self) -> bool {
        *self == ScheduledRetryConf::default()
    }
}

/// The longest wait, timeout or tolerance (about 31 years).
pub const MAX_SECONDS: f64 = 1e9;

/// The written form: every key optional, numbers checked for sign and size.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RetryForm {
    #[serde(default)]
    num_retries: Option<i64>,
    #[serde(default)]
    retry_interval_seconds: Option<f64>,
    #[serde(default)]
    timeout_seconds: Option<f64>,
    #[serde(default)]
    tolerance_seconds: Option<f64>,
}

impl<'de> Deserialize<'de> for ScheduledRetryConf {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let form = RetryForm::deserialize(d)?;
        let defaults = ScheduledRetryConf::default();
        let num_retries = match form.num_retries {
            Some(n) if n < 0 => {
                return Err(de::Error::custom("num_retries cannot be a negative value"))
            }
            Some(n) => {
                u32::try_from(n).map_err(|_| de::Error::custom("num_retries is too large"))?
            }
            None => defaults.num_retries,
        };
        let seconds = |value: Option<f64>, key: &str, default: f64| match value {
            Some(v) if !(v >= 0.0 && v.is_finite()) => Err(de::Error::custom(format!(
                "{key} cannot be a negative value"
            ))),
            Some(v) if v > MAX_SECONDS => Err(de::Error::custom(format!(
                "{key} is at most {MAX_SECONDS} seconds"
            ))),
            Some(v) => Ok(v),
            None => Ok(default),
        };
        Ok(ScheduledRetryConf {
            num_retries,
            retry_interval_seconds: seconds(
                form.retry_interval_seconds,
                "retry_interval_seconds",
                defaults.retry_interval_seconds,
            )?,
            timeout_seconds: seconds(
                form.timeout_seconds,
                "timeout_seconds",
                defaults.timeout_seconds,
            )?,
            tolerance_seconds: seconds(
                form.tolerance_seconds,
                "tolerance_seconds",
                defaults.tolerance_seconds,
            )?,
        })
    }
}
