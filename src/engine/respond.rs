//! Stage 5, respond: the response body. Postgres's JSON is spliced in as it arrived, never
//! read back; an operation whose fields come from several places (the database, remembered
//! introspection answers, remote schemas, constants) has each field's bytes placed in the
//! order of the document. Every GraphQL success body is written here.

use super::error::GraphqlError;
use super::introspection::{AnswerBody, RememberedAnswer};
use bytes::Bytes;
use serde_json::Value;

/// What a response body holds before its `data` object.
pub(super) const DATA_PREFIX: &[u8] = b"{\"data\":";
/// What a response body holds after its `data` object.
pub(super) const DATA_SUFFIX: &[u8] = b"}";

/// A response body as the engine has it.
#[derive(Debug)]
pub enum Body {
    Json(Bytes),
    /// JSON, gzip-compressed: a large remembered introspection answer.
    Gzip(Bytes),
}

impl Body {
    /// The JSON, decompressed when it is held compressed.
    pub fn json(self) -> Result<Bytes, GraphqlError> {
        match self {
            Body::Json(json) => Ok(json),
            Body::Gzip(gzip) => super::introspection::gunzip(&gzip),
        }
    }
}

/// What executing an operation produced, before it is written.
#[derive(Debug)]
pub(super) enum Output {
    /// The whole `data` object, as Postgres built it.
    Data(Bytes),
    /// An answer to introspection fields alone (the usual client schema fetch): the whole
    /// `data` object, its keys already in document order.
    Introspection(RememberedAnswer),
    /// The `data` object's fields from several places.
    Fields(Fields),
}

/// One field's value.
#[derive(Debug)]
pub(super) enum FieldValue {
    /// JSON as it arrived (from Postgres, or a slice of a remembered answer).
    Json(Bytes),
    /// A value read from elsewhere (a constant, a remote schema's answer).
    Value(Value),
}

/// The fields of a `data` object by response key, in any order; the writer puts them in the
/// document's.
#[derive(Debug, Default)]
pub(super) struct Fields(Vec<(String, FieldValue)>);

impl Fields {
    /// Adds a field (a key already present keeps its first value).
    pub(super) fn push(&mut self, key: &str, value: FieldValue) {
        if !self.0.iter().any(|(k, _)| k == key) {
            self.0.push((key.to_owned(), value));
        }
    }

    /// The fields whose values are a statement's bytes, to be completed in place.
    pub(super) fn json_mut(&mut self) -> impl Iterator<Item = &mut Bytes> {
        self.0.iter_mut().filter_map(|(_, value)| match value {
            FieldValue::Json(bytes) => Some(bytes),
            FieldValue::Value(_) => None,
        })
    }

    /// Adds the fields a remembered introspection answer holds (the keys it does not answer
    /// are left out).
    pub(super) fn introspection(&mut self, answer: &RememberedAnswer) -> Result<(), GraphqlError> {
        let data = answer.data()?;
        for (key, range) in answer.fields.iter() {
            self.push(key, FieldValue::Json(data.slice(range.clone())));
        }
        Ok(())
    }

    fn take(&mut self, key: &str) -> Option<FieldValue> {
        let at = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.swap_remove(at).1)
    }
}

/// The `data` object's bytes of a `{"data": <data>}` body (a successful answer); `None` for
/// any other body.
pub fn data_of(body: &Bytes) -> Option<Bytes> {
    let framed = body.len() >= DATA_PREFIX.len() + DATA_SUFFIX.len()
        && body.starts_with(DATA_PREFIX)
        && body.ends_with(DATA_SUFFIX);
    framed.then(|| body.slice(DATA_PREFIX.len()..body.len() - DATA_SUFFIX.len()))
}

/// `{"data": <data>}` with the data's bytes as they are.
pub fn data_body(data: &[u8]) -> Bytes {
    let mut body = Vec::with_capacity(data.len() + DATA_PREFIX.len() + DATA_SUFFIX.len());
    body.extend_from_slice(DATA_PREFIX);
    body.extend_from_slice(data);
    body.extend_from_slice(DATA_SUFFIX);
    Bytes::from(body)
}

/// `{"data": {"<key>": <value>}}`: an operation of one field whose value Postgres built.
pub(super) fn one_field(key: &str, value: &[u8]) -> Bytes {
    let mut body = Vec::with_capacity(value.len() + key.len() + 16);
    body.extend_from_slice(b"{\"data\":{");
    json_string(&mut body, key);
    body.push(b':');
    body.extend_from_slice(value);
    body.extend_from_slice(b"}}");
    Bytes::from(body)
}

/// The body of an operation's output; `keys` are its response keys in document order (a key
/// the output has no value for is left out).
pub(super) fn body(output: Output, keys: &[String]) -> Result<Body, GraphqlError> {
    match output {
        Output::Data(data) => Ok(Body::Json(data_body(&data))),
        Output::Introspection(answer) => Ok(match answer.body {
            AnswerBody::Json(data) => Body::Json(data_body(&data)),
            AnswerBody::Gzip(body) => Body::Gzip(body),
        }),
        Output::Fields(mut fields) => {
            let mut body = Vec::from(b"{\"data\":{".as_slice());
            let mut first = true;
            for key in keys {
                let Some(value) = fields.take(key) else {
                    continue;
                };
                if !first {
                    body.push(b',');
                }
                first = false;
                json_string(&mut body, key);
                body.push(b':');
                match value {
                    FieldValue::Json(json) => body.extend_from_slice(&json),
                    // Writing into a vector cannot fail, and a `Value` always serializes.
                    FieldValue::Value(value) => {
                        let _ = serde_json::to_writer(&mut body, &value);
                    }
                }
            }
            body.extend_from_slice(b"}}");
            Ok(Body::Json(Bytes::from(body)))
        }
    }
}

/// Appends `text` as a JSON string.
fn json_string(out: &mut Vec<u8>, text: &str) {
    // Writing into a vector cannot fail, and a `str` always serializes.
    let _ = serde_json::to_writer(out, text);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(body: Body) -> String {
        match body {
            Body::Json(json) => String::from_utf8(json.to_vec()).unwrap(),
            Body::Gzip(_) => panic!("gzip"),
        }
    }

    #[test]
    fn fields_are_written_in_document_order_and_missing_ones_left_out() {
        let mut fields = Fields::default();
        fields.push("b", FieldValue::Json(Bytes::from_static(b"[1, 2]")));
        fields.push("a", FieldValue::Value(serde_json::json!({"x": "y"})));
        fields.push("c\"", FieldValue::Value(Value::Null));
        fields.push("b", FieldValue::Json(Bytes::from_static(b"0")));
        let keys = ["a", "gone", "b", "c\""].map(str::to_owned);
        let body = text(body(Output::Fields(fields), &keys).unwrap());
        assert_eq!(body, r#"{"data":{"a":{"x":"y"},"b":[1, 2],"c\"":null}}"#);
        let parsed: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(parsed["data"]["b"], serde_json::json!([1, 2]));
    }

    #[test]
    fn whole_data_and_single_fields_are_spliced() {
        let body = text(body(Output::Data(Bytes::from_static(b"{\"x\":1}")), &[]).unwrap());
        assert_eq!(body, r#"{"data":{"x":1}}"#);
        assert_eq!(&one_field("k\"", b"null")[..], br#"{"data":{"k\"":null}}"#);
    }
}
