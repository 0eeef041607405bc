//! Typed parsing of request JSON with the JSON path of the first bad field.

use super::error::{parse_failed, MetadataError};
use super::path::JsonPath;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Deserializes `value` (found at `path` in the request) into `T`. Errors carry the path of the
/// offending field and, for a missing key, the wording of `docs/metadata-api.md`, "Request and
/// response".
pub fn parse<T: DeserializeOwned>(value: &Value, path: &JsonPath) -> Result<T, MetadataError> {
    serde_path_to_error::deserialize(value).map_err(|err| {
        let mut at = path.clone();
        for segment in err.path().iter() {
            at = match segment {
                serde_path_to_error::Segment::Seq { index } => at.index(*index),
                serde_path_to_error::Segment::Map { key } => at.key(key),
                serde_path_to_error::Segment::Enum { variant } => at.key(variant),
                serde_path_to_error::Segment::Unknown => at,
            };
        }
        parse_failed(at, reword(&err.inner().to_string()))
    })
}

/// Rewrites serde's messages into the API's wording.
fn reword(message: &str) -> String {
    if let Some(rest) = message.strip_prefix("missing field `") {
        if let Some(key) = rest.strip_suffix('`') {
            return format!("the key '{key}' was not present");
        }
    }
    message.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::types::{ObjRelUsing, QualifiedTable};
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Args {
        table: QualifiedTable,
        using: ObjRelUsing,
    }

    #[test]
    fn missing_key_reports_the_enclosing_object() {
        let err = parse::<Args>(&json!({"table": "a"}), &JsonPath::args()).unwrap_err();
        assert_eq!(err.path.as_str(), "$.args");
        assert_eq!(err.message, "the key 'using' was not present");
    }

    #[test]
    fn nested_errors_carry_their_path() {
        let err = parse::<Args>(
            &json!({"table": "a", "using": {"foreign_key_constraint_on": "x", "manual_configuration": {}}}),
            &JsonPath::args(),
        )
        .unwrap_err();
        assert_eq!(err.path.as_str(), "$.args.using");
        assert_eq!(
            err.message,
            "only one of foreign_key_constraint_on/manual_configuration should be present"
        );
        let err = parse::<Args>(&json!({"table": 3, "using": {}}), &JsonPath::args()).unwrap_err();
        assert_eq!(err.path.as_str(), "$.args.table");
    }
}
