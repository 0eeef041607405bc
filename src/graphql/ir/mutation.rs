//! The plan of a mutation: the rows to insert, the updates (with their nested entries) and the
//! deletes of each root field, and what each field answers. Built by `graphql::plan`, compiled to
//! programs by `translate::mutation`.

use super::*;

/// A value written to a column.
#[derive(Debug, Clone, PartialEq)]
pub enum SetValue {
    /// A bound value.
    Value(ValueExpr),
    /// `now()`.
    Now,
    /// The value of a column of the row inserted for the parent (nested inserts), filled in at
    /// execution time.
    Parent {
        /// Column of the parent row.
        column: String,
        /// Type of the column written.
        cast: PgType,
    },
}

/// One row to insert with its nested rows.
#[derive(Debug, Clone, PartialEq)]
pub struct InsertRow {
    /// (column, value), presets included.
    pub values: Vec<(String, SetValue)>,
    /// Rows inserted first through object relationships; their keys fill this row's columns.
    pub parents: Vec<NestedInsert>,
    /// Rows inserted after through array relationships; this row's keys fill theirs.
    pub children: Vec<NestedInsert>,
}

/// Rows inserted through a relationship.
#[derive(Debug, Clone, PartialEq)]
pub struct NestedInsert {
    /// For object relationships: columns of the owning row filled from the inserted parent,
    /// as (column, its type, parent column).
    pub fill: Vec<(String, PgType, String)>,
    pub insert: InsertPlan,
}

/// `ON CONFLICT` of an insert.
#[derive(Debug, Clone, PartialEq)]
pub struct OnConflict {
    pub constraint: String,
    /// Columns set from the proposed row (`DO NOTHING` when empty).
    pub update_columns: Vec<String>,
    /// Update presets applied on conflict.
    pub presets: Vec<(String, SetValue)>,
    /// Update permission filter and `on_conflict.where`, over the existing row.
    pub filter: Vec<BoolExpr>,
}

/// Rows to insert into one table.
#[derive(Debug, Clone, PartialEq)]
pub struct InsertPlan {
    pub table: QualifiedTable,
    pub rows: Vec<InsertRow>,
    pub on_conflict: Option<OnConflict>,
    /// Insert permission check on every inserted row.
    pub check: Option<BoolExpr>,
    /// Update permission check, for rows an upsert updated.
    pub update_check: Option<BoolExpr>,
    /// The target is a view: rows have no `ctid`, so the write, its check and its answer run
    /// as one statement over the written rows.
    pub view: bool,
}

/// Update operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateOp {
    /// `_set`.
    Set,
    /// `_inc`.
    Inc,
    /// `_append`.
    Append,
    /// `_prepend`.
    Prepend,
    /// `_delete_key`.
    DeleteKey,
    /// `_delete_elem`.
    DeleteElem,
    /// `_delete_at_path`.
    DeleteAtPath,
}

/// An update of one table.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdatePlan {
    pub table: QualifiedTable,
    /// `where` (or primary key) AND update permission filter.
    pub filter: Vec<BoolExpr>,
    /// (column, operator, value): the operators' columns and the permission's presets. Empty
    /// when nothing is written (the rows are then only selected, or untouched).
    pub sets: Vec<(String, UpdateOp, SetValue)>,
    /// Post-condition on updated rows.
    pub check: Option<BoolExpr>,
    /// The target is a view (see [`InsertPlan::view`]).
    pub view: bool,
    /// `_nested`: the entries over the rows this update wrote (or, with nothing to write, only
    /// selected), relationships in byte order of their names and each relationship's entries
    /// in list order. `None` without `_nested`.
    pub nested: Option<Vec<NestedEntry>>,
    /// The table's primary key (column, type): a nested update reads its answer back by it.
    pub key: Vec<(String, PgType)>,
}

/// One entry of `_nested`: what to do with the rows related to the parent level's rows.
#[derive(Debug, Clone, PartialEq)]
pub struct NestedEntry {
    /// The relationship's name.
    pub relationship: String,
    /// (parent column, related table's column, that column's type).
    pub mapping: Vec<(String, String, PgType)>,
    /// The entry's own statement over the related rows.
    pub step: EntryStep,
    /// Entries over the rows `step` updated or selected.
    pub nested: Vec<NestedEntry>,
    /// `_insert`: rows inserted once per parent row, the mapped columns taken from that parent
    /// row ([`SetValue::Parent`]).
    pub insert: Option<InsertPlan>,
}

impl NestedEntry {
    /// The parent-side columns of the mapping.
    pub fn parent_columns(&self) -> impl Iterator<Item = &String> {
        self.mapping.iter().map(|(parent, _, _)| parent)
    }
}

/// The statement a nested entry runs on its related rows.
// Plans are built once per cached document, so variant sizes do not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum EntryStep {
    /// None: the entry only inserts, or its operators hold nothing.
    Nothing,
    /// `UPDATE` (the plan's `filter` is `where` AND the update filter; no `nested`, no `key`).
    Update(UpdatePlan),
    /// `DELETE` (`where` AND the delete filter).
    Delete(DeletePlan),
    /// `SELECT … FOR UPDATE`: the related rows `_nested` goes on from, nothing written.
    Select {
        table: QualifiedTable,
        /// `where` AND the select filter.
        filter: Vec<BoolExpr>,
        /// Views are read without a lock.
        view: bool,
    },
}

/// A delete from one table.
#[derive(Debug, Clone, PartialEq)]
pub struct DeletePlan {
    pub table: QualifiedTable,
    /// `where` (or primary key) AND delete permission filter.
    pub filter: Vec<BoolExpr>,
}

/// A field of `<t>_mutation_response`.
// Plans are built once per cached document, so variant sizes do not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum ResponseField {
    /// `affected_rows`.
    AffectedRows,
    /// `returning { … }`: the affected rows the role may select.
    Returning(Select),
    /// `__typename`.
    Constant(String),
}

/// What a mutation root field answers.
// Plans are built once per cached document, so variant sizes do not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum MutationOutput {
    /// `<t>_mutation_response`.
    Response(Vec<(String, ResponseField)>),
    /// One row (or null): `insert_<t>_one`, `_by_pk` mutations.
    Row(Select),
}

/// What a mutation root field does.
// Plans are built once per cached document, so variant sizes do not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum MutationAction {
    Insert(InsertPlan),
    Update(UpdatePlan),
    /// `update_<t>_many`: the elements in order, each answered by the field's output.
    UpdateMany(Vec<UpdatePlan>),
    Delete(DeletePlan),
}

/// A mutation root field.
// Plans are built once per cached document, so variant sizes do not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum MutationField {
    /// `__typename`.
    Constant(Value),
    /// A write and its answer.
    Write {
        action: MutationAction,
        output: MutationOutput,
    },
    /// A synchronous mutation action: the handler is called at this field's turn.
    Action(ActionField),
    /// An asynchronous mutation action: the call is logged, its id answered.
    AsyncAction(ActionCall),
    /// A mutation-exposed tracked function: called at this field's turn, its rows read under
    /// the select permission (the source is the call).
    Function(Select),
}

/// A mutation operation: root fields run in order in one transaction.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MutationPlan {
    /// (response key, field).
    pub fields: Vec<(String, MutationField)>,
    /// The role's cell rules.
    pub cells: CellRules,
}
