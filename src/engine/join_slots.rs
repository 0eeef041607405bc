//! Where a response's remote relationship values go (`docs/metadata-api.md`, "Remote
//! relationships"): the statement writes, in place of each relationship field, a slot object
//! `{"__basalt_join_<random>_<occurrence>" : {<join field> : <value>, …}}` (or `null` when a join value
//! is null). [`find`] walks the response bytes once, without building values, and reports each
//! slot with its byte range, its join values and the client path of its field; [`splice`] copies
//! the bytes with each slot replaced by the remote's answer. Everything else Postgres wrote is
//! copied as it is.

use bytes::Bytes;
use serde_json::{Map, Value};
use std::ops::Range;

use crate::graphql::ir::join_slot_key;

/// One step of a client path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Key(String),
    Index(usize),
}

/// A slot found in a response.
#[derive(Debug, Clone, PartialEq)]
pub struct Slot {
    /// Which occurrence of a relationship in the query it belongs to.
    pub occurrence: usize,
    /// The slot object's bytes.
    pub range: Range<usize>,
    /// The row's join values.
    pub values: Map<String, Value>,
    /// The client path of the relationship field (response keys and list indices).
    pub path: Vec<Step>,
}

/// The response was not the JSON the statement writes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed response at byte {0}")]
pub struct ScanError(pub usize);

/// An open container while scanning.
enum Open {
    /// An object, with the key whose value comes next (or came last).
    Object(Option<String>),
    /// An array, with the index of the element coming next.
    Array(usize),
}

/// Every slot in `bytes`, in order.
pub fn find(bytes: &[u8]) -> Result<Vec<Slot>, ScanError> {
    let mut slots = Vec::new();
    let mut stack: Vec<Open> = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'{' => {
                let start = at;
                at = skip_space(bytes, at + 1);
                if bytes.get(at) == Some(&b'"') {
                    let end = string_end(bytes, at)?;
                    let key: String =
                        serde_json::from_slice(&bytes[at..end]).map_err(|_| ScanError(at))?;
                    if let Some(occurrence) = key
                        .strip_prefix(join_slot_key())
                        .and_then(|n| n.parse::<usize>().ok())
                    {
                        let (slot, next) = slot(bytes, start, end, occurrence, &stack)?;
                        slots.push(slot);
                        at = next;
                        continue;
                    }
                    stack.push(Open::Object(Some(key)));
                    at = end;
                    continue;
                }
                stack.push(Open::Object(None));
            }
            b'[' => {
                stack.push(Open::Array(0));
                at += 1;
            }
            b'}' | b']' => {
                stack.pop();
                at += 1;
            }
            b',' => {
                if let Some(Open::Array(index)) = stack.last_mut() {
                    *index += 1;
                }
                at += 1;
                // The next key of an object.
                let next = skip_space(bytes, at);
                if let (Some(Open::Object(key)), Some(b'"')) = (stack.last_mut(), bytes.get(next)) {
                    let end = string_end(bytes, next)?;
                    *key = Some(
                        serde_json::from_slice(&bytes[next..end]).map_err(|_| ScanError(next))?,
                    );
                    at = end;
                }
            }
            b'"' => at = string_end(bytes, at)?,
            _ => at += 1,
        }
    }
    Ok(slots)
}

/// The slot object starting at `start` whose key string ends at `key_end`: its values, path
/// and range, and where scanning goes on.
fn slot(
    bytes: &[u8],
    start: usize,
    key_end: usize,
    occurrence: usize,
    stack: &[Open],
) -> Result<(Slot, usize), ScanError> {
    let colon = skip_space(bytes, key_end);
    if bytes.get(colon) != Some(&b':') {
        return Err(ScanError(colon));
    }
    let value_start = skip_space(bytes, colon + 1);
    let mut values = serde_json::Deserializer::from_slice(&bytes[value_start..])
        .into_iter::<Map<String, Value>>();
    let map = match values.next() {
        Some(Ok(map)) => map,
        _ => return Err(ScanError(value_start)),
    };
    let close = skip_space(bytes, value_start + values.byte_offset());
    if bytes.get(close) != Some(&b'}') {
        return Err(ScanError(close));
    }
    let path = stack
        .iter()
        .filter_map(|open| match open {
            Open::Object(Some(key)) => Some(Step::Key(key.clone())),
            Open::Object(None) => None,
            Open::Array(index) => Some(Step::Index(*index)),
        })
        .collect();
    Ok((
        Slot {
            occurrence,
            range: start..close + 1,
            values: map,
            path,
        },
        close + 1,
    ))
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    at
}

/// The index just past the string starting (at its quote) at `start`.
fn string_end(bytes: &[u8], start: usize) -> Result<usize, ScanError> {
    let mut at = start + 1;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b'"' => return Ok(at + 1),
            _ => at += 1,
        }
    }
    Err(ScanError(start))
}

/// `bytes` with each slot's range replaced by its replacement (`slots` in order, as [`find`]
/// gives them).
pub fn splice(bytes: &[u8], slots: &[Slot], replacements: &[Bytes]) -> Bytes {
    let extra: usize = replacements.iter().map(Bytes::len).sum();
    let mut out = Vec::with_capacity(bytes.len() + extra);
    let mut from = 0;
    for (slot, replacement) in slots.iter().zip(replacements) {
        out.extend_from_slice(&bytes[from..slot.range.start]);
        out.extend_from_slice(replacement);
        from = slot.range.end;
    }
    out.extend_from_slice(&bytes[from..]);
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn slots_are_found_with_their_paths_and_replaced() {
        // Postgres's spacing, a key that looks like a slot inside a string and in stored JSON
        // (without the process's key), escapes, nesting.
        let text = r#"{"profiles" : [{"id" : 1, "note" : "{\"__basalt_join_0\" : 1}", "meta" : {"__basalt_join_0" : {"msg_id" : 9}}, "message" : {"SLOT0" : {"msg_id" : 1}}}, {"id" : 4, "message" : null}, {"id" : 2, "message" : {"SLOT0" : {"msg_id" : 2}}, "deep" : {"x" : [null, {"SLOT1" : {"name" : "b\"o"}}]}}]}"#
            .replace("SLOT", join_slot_key());
        let slots = find(text.as_bytes()).unwrap();
        assert_eq!(slots.len(), 3);
        let key = |k: &str| Step::Key(k.to_owned());
        assert_eq!(
            slots[0].path,
            [key("profiles"), Step::Index(0), key("message")]
        );
        assert_eq!(
            slots[0].values,
            json!({"msg_id": 1}).as_object().cloned().unwrap()
        );
        assert_eq!(
            slots[1].path,
            [key("profiles"), Step::Index(2), key("message")]
        );
        assert_eq!(slots[2].occurrence, 1);
        assert_eq!(
            slots[2].path,
            [
                key("profiles"),
                Step::Index(2),
                key("deep"),
                key("x"),
                Step::Index(1)
            ]
        );
        assert_eq!(slots[2].values["name"], "b\"o");
        let spliced = splice(
            text.as_bytes(),
            &slots,
            &[
                Bytes::from_static(br#"{"msg":"You win!"}"#),
                Bytes::from_static(br#"{"msg":"You lose!"}"#),
                Bytes::from_static(b"[]"),
            ],
        );
        let value: Value = serde_json::from_slice(&spliced).unwrap();
        assert_eq!(value["profiles"][0]["message"], json!({"msg": "You win!"}));
        assert_eq!(value["profiles"][0]["note"], "{\"__basalt_join_0\" : 1}");
        assert_eq!(
            value["profiles"][0]["meta"],
            json!({"__basalt_join_0": {"msg_id": 9}})
        );
        assert_eq!(value["profiles"][1]["message"], Value::Null);
        assert_eq!(value["profiles"][2]["message"], json!({"msg": "You lose!"}));
        assert_eq!(value["profiles"][2]["deep"]["x"], json!([null, []]));
    }

    #[test]
    fn a_response_without_slots_is_left_alone() {
        let text = br#"{"a" : [1, 2, {"b" : "c"}], "d" : {}}"#;
        assert!(find(text).unwrap().is_empty());
        assert_eq!(&splice(text, &[], &[])[..], &text[..]);
        assert!(find(br#"{"a" : "unterminated"#).is_err());
    }
}
