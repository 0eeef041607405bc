//! Answering an operation's introspection fields, remembered per role and version: a client
//! fetching the schema again costs a lookup, not a run. Large answers are remembered
//! gzip-compressed (introspection JSON repeats itself and compresses well), sent as they are
//! to a client that accepts gzip and decompressed for one that does not.

use super::error::{GraphqlError, InternalError};
use super::plan_cache::MAX_CACHED_DOCUMENT;
use super::respond::{DATA_PREFIX, DATA_SUFFIX};
use super::version::RoleApi;
use crate::graphql::introspection;
use crate::stats::Counters;
use bytes::Bytes;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// Largest introspection answer remembered as it is, in bytes; larger ones are remembered
/// gzip-compressed.
pub const MAX_PLAIN_INTROSPECTION: usize = 1024 * 1024;

/// Introspection answers kept per role before that cache is emptied.
const INTROSPECTION_CACHE_SIZE: usize = 16;

/// A remembered answer: its body, and where each root field's value lies in the `data`
/// object.
#[derive(Debug, Clone)]
pub(super) struct RememberedAnswer {
    pub(super) body: AnswerBody,
    pub(super) fields: Arc<[(String, Range<usize>)]>,
}

/// How an answer is held.
#[derive(Debug, Clone)]
pub(super) enum AnswerBody {
    /// The `data` object's JSON.
    Json(Bytes),
    /// A whole response body, `{"data": answer}`, gzip-compressed.
    Gzip(Bytes),
}

impl RememberedAnswer {
    /// Remembers an answer: as it is when it is small, compressed when it is large.
    fn new(answer: introspection::Answer) -> std::io::Result<Self> {
        let fields = answer.fields.into();
        if answer.json.len() <= MAX_PLAIN_INTROSPECTION {
            return Ok(RememberedAnswer {
                body: AnswerBody::Json(answer.json.into()),
                fields,
            });
        }
        use std::io::Write;
        let mut encoder = flate2::write::GzEncoder::new(
            Vec::with_capacity(answer.json.len() / 16),
            flate2::Compression::default(),
        );
        encoder.write_all(DATA_PREFIX)?;
        encoder.write_all(&answer.json)?;
        encoder.write_all(DATA_SUFFIX)?;
        Ok(RememberedAnswer {
            body: AnswerBody::Gzip(encoder.finish()?.into()),
            fields,
        })
    }

    /// The `data` object's JSON, decompressed when it is held compressed.
    pub(super) fn data(&self) -> Result<Bytes, GraphqlError> {
        let gzip = match &self.body {
            AnswerBody::Json(answer) => return Ok(answer.clone()),
            AnswerBody::Gzip(gzip) => gzip,
        };
        let body = gunzip(gzip)?;
        super::respond::data_of(&body)
            .ok_or_else(|| InternalError::Remembered("not a response body".into()).into())
    }
}

/// Decompresses a remembered gzip body.
pub(super) fn gunzip(gzip: &[u8]) -> Result<Bytes, GraphqlError> {
    use std::io::Read;
    let mut body = Vec::with_capacity(gzip.len() * 32);
    flate2::read::GzDecoder::new(gzip)
        .read_to_end(&mut body)
        .map_err(|e| InternalError::Remembered(e.to_string()))?;
    Ok(body.into())
}

/// Remembered answers of one role at one version, by introspection document.
#[derive(Debug, Default)]
pub(super) struct AnswerCache(Mutex<HashMap<String, RememberedAnswer>>);

/// The answer to the introspection document of an operation (printed by the planner from
/// its introspection root fields), remembered per role (documents up to
/// [`MAX_CACHED_DOCUMENT`], a bounded number of them: clients send the same few).
pub(super) fn answer(
    counters: &Counters,
    role: &RoleApi,
    document: &str,
) -> Result<RememberedAnswer, GraphqlError> {
    let cache = &role.answers.0;
    if let Some(answer) = cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(document)
    {
        return Ok(answer.clone());
    }
    Counters::bump(&counters.introspections_run);
    let answer = RememberedAnswer::new(introspection::answer(&role.schema.types, document)?)
        .map_err(|e| InternalError::Remembered(e.to_string()))?;
    if document.len() <= MAX_CACHED_DOCUMENT {
        let mut answers = cache.lock().unwrap_or_else(|p| p.into_inner());
        if answers.len() >= INTROSPECTION_CACHE_SIZE {
            answers.clear();
        }
        answers.insert(document.to_owned(), answer.clone());
    }
    Ok(answer)
}
