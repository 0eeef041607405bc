//! One occurrence of a remote schema → table relationship in an operation
//! (`docs/remote-schemas.md`, "Relationships to tables"): where its objects sit in a remote's
//! answer, the client's key for the field, the join fields the remote was also asked for, and
//! the rows to read per distinct key. The engine collects the keys once the remote has
//! answered, reads every occurrence of one answer in one statement, and puts the rows in.

use super::OutputSelect;

/// The prefix of the keys the join fields are asked for under (`__basalt_join_<type>_<field>`).
pub const TABLE_JOIN_FIELD: &str = "__basalt_join_";

/// Whose answer holds an occurrence's objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JoinOwner {
    /// The operation's remote root fields.
    Root,
    /// The answers of table → remote relationship occurrence `n`, each from the leaf of its
    /// chain.
    Join(usize),
}

/// A remote → table relationship field at one position of a remote selection.
#[derive(Debug, Clone, PartialEq)]
pub struct TableJoinPart {
    /// Its number among the operation's occurrences (it names its key parameter).
    pub occurrence: usize,
    pub owner: JoinOwner,
    /// The remote schema whose answer holds the objects.
    pub remote: String,
    /// Response keys from the answer's root to the objects (lists on the way are crossed).
    pub at: Vec<String>,
    /// The remote object type the relationship is on.
    pub type_name: String,
    /// The client's response key of the relationship field.
    pub key: String,
    /// The objects' join fields.
    pub fields: Vec<String>,
    /// The rows for each distinct key, from a list of `{<join field>: value}` objects: one
    /// object per key, whose field `v` is the relationship's value.
    pub output: OutputSelect,
}

impl TableJoinPart {
    /// The name its list of keys is bound by.
    pub fn parameter(&self) -> String {
        format!("table_join_{}", self.occurrence)
    }
}

/// The key the join field `field` of objects of `type_name` is asked for under
/// (`__basalt_join_<type>_<field>`): only objects of that type carry it, and two types' fields
/// of one name never share a key.
pub fn join_field_key(type_name: &str, field: &str) -> String {
    format!("{TABLE_JOIN_FIELD}{type_name}_{field}")
}
