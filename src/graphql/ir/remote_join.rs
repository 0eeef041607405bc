//! One occurrence of a remote relationship in an operation (`docs/metadata-api.md`, "Remote
//! relationships"): where it leads, the client's arguments and selection, and the variables
//! that selection uses. The statement writes a slot in place of each row's field; the engine
//! sends one request per occurrence for all of them.

use async_graphql_value::ConstValue;
use serde_json::{Map, Value};

/// The key a join slot object starts with, before its occurrence number:
/// `__basalt_join_<random>_`, drawn once per process, so that no stored JSON value (a `jsonb`
/// column's) can pose as a slot.
pub fn join_slot_key() -> &'static str {
    use std::hash::{BuildHasher, Hasher};
    static KEY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    KEY.get_or_init(|| {
        // A `RandomState` is seeded from the operating system's randomness.
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(std::process::id().into());
        format!("__basalt_join_{:016x}_", hasher.finish())
    })
}

/// A relationship field at one position of the selection.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteJoinPart {
    /// Its number among the operation's occurrences (the slots carry it).
    pub occurrence: usize,
    /// The remote schema.
    pub remote: String,
    /// The chain of remote fields from the query root to the leaf, each with its argument
    /// templates (`"$column"` filled per row).
    pub chain: Vec<(String, Map<String, Value>)>,
    /// The client's arguments on the relationship field, variables resolved: merged into
    /// the leaf's, input objects key by key.
    pub client_arguments: Vec<(String, ConstValue)>,
    /// The client's selection under the leaf, printed (`{ … }`); empty for a scalar leaf.
    pub selection: String,
    /// Declarations (`$v: T`) of the variables the selection uses, and their names.
    pub declarations: Vec<String>,
    pub variables: Vec<String>,
}
