//! The database model: what Basalt knows of the database's tables, views, columns, keys,
//! functions, scalar types, enum rows and capture triggers, and Postgres's type vocabulary
//! ([`PgType`]). Pure data with its JSON form (how goldenfiles describe a database without
//! one); reading it from Postgres is `catalog::database`'s job.

mod types;

pub use crate::names::QualifiedName;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
pub use types::{Encoding, PgType};

/// Everything Basalt knows about the database.
#[derive(Debug, Clone, Default)]
pub struct DbModel {
    /// Relations by name.
    pub tables: IndexMap<QualifiedName, Arc<DbTable>>,
    /// Functions by name; several entries mean the function is overloaded.
    pub functions: IndexMap<QualifiedName, Vec<DbFunction>>,
    /// Names of base, enum, domain and range types.
    pub scalar_types: BTreeSet<String>,
    /// Rows of the tables asked for as enum candidates: (value, description).
    pub enum_rows: HashMap<QualifiedName, Vec<(String, Option<String>)>>,
    /// Event-trigger capture triggers (`notify_basalt_*`) on user tables.
    pub capture_triggers: Vec<CaptureTrigger>,
    /// Capture functions in `basalt_catalog` (`notify_basalt_*`), with or without a trigger.
    pub capture_functions: BTreeSet<String>,
    /// What change detection of live queries has installed outside user tables.
    pub live: LiveCatalog,
    /// What Postgres said of the type names and native queries the metadata names.
    pub probes: Probes,
}

/// Type names and statements described by Postgres for the metadata's native queries and
/// logical models (`docs/native-queries.md`, "Validation by Postgres"): read in the same
/// transaction as the rest of the model, never by executing anything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Probes {
    /// By the name as written: the type it names, or `None` when Postgres knows none.
    pub types: HashMap<String, Option<ProbedType>>,
    /// By statement text: its result columns, or Postgres's refusal.
    pub statements: HashMap<String, Result<Vec<ProbedColumn>, Refusal>>,
}

/// A type a name resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbedType {
    pub oid: u32,
    pub schema: String,
    /// `pg_type.typname`.
    pub name: String,
    /// As `format_type` spells it, for casts.
    pub formatted: String,
    /// `pg_type.typtype`.
    pub kind: String,
    /// The element type's name, for arrays.
    pub element: Option<String>,
}

impl ProbedType {
    /// A column `name` of this type, as a relation would have it.
    pub fn column(&self, name: &str, attnum: i16, nullable: bool) -> DbColumn {
        DbColumn {
            name: name.to_owned(),
            attnum,
            data_type: self.formatted.clone(),
            type_name: self.name.clone(),
            type_schema: self.schema.clone(),
            type_kind: self.kind.clone(),
            element_type: self.element.clone(),
            nullable,
            default: None,
            generated: false,
            identity: false,
            comment: None,
        }
    }
}

/// A result column of a described statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbedColumn {
    pub name: String,
    /// Its type's OID.
    pub oid: u32,
    /// Its type's name, for messages.
    pub type_name: String,
}

/// Why Postgres refused to prepare a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub message: String,
    /// The SQLSTATE, when Postgres gave one.
    pub code: Option<String>,
}

/// What change detection of live queries (`docs/graphql.md`, "When subscriptions run") has
/// installed: its notify function and its triggers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveCatalog {
    /// `basalt_catalog.notify_basalt_live_change()` exists.
    #[serde(default)]
    pub function: bool,
    /// The OID of `basalt_catalog.action_log`, when the catalog has it.
    #[serde(default)]
    pub action_log: Option<u32>,
    /// The tables carrying a `basalt_live_change` trigger, by OID, with its `tgenabled`
    /// (`A`: fires always).
    #[serde(default)]
    pub triggers: std::collections::BTreeMap<u32, String>,
}

/// A capture trigger found in Postgres.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaptureTrigger {
    /// `notify_basalt_<name>_<OP>`.
    pub name: String,
    pub schema: String,
    pub table: String,
    /// The comment of the function it runs: the hash Basalt wrote with it.
    #[serde(default)]
    pub hash: Option<String>,
}

/// The GraphQL scalar a Postgres type (`pg_type.typname`) is exposed as: the built-in scalars
/// for the types they fit, the type's own name otherwise (`String` when that is not a GraphQL
/// name).
pub fn graphql_scalar(type_name: &str) -> String {
    let mapped = match type_name {
        "int4" => "Int",
        "int2" => "smallint",
        "int8" => "bigint",
        "float4" => "Float",
        "float8" => "float8",
        "numeric" => "numeric",
        "bool" => "Boolean",
        "text" | "varchar" => "String",
        other => other,
    };
    let mut chars = mapped.chars();
    let is_name = chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric());
    match is_name {
        true => mapped.to_owned(),
        false => "String".to_owned(),
    }
}

impl DbModel {
    /// A relation by schema and name.
    pub fn table(&self, schema: &str, name: &str) -> Option<&DbTable> {
        self.shared_table(schema, name).map(|t| &**t)
    }

    /// A relation, shared: what a resolved schema keeps of it (a reference, not a copy, so
    /// resolving the metadata again copies no column lists).
    pub fn shared_table(&self, schema: &str, name: &str) -> Option<&Arc<DbTable>> {
        self.tables.get(&QualifiedName::new(schema, name))
    }
}

/// A relation: a table, view, materialized view or foreign table (see `kind`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DbTable {
    /// Its OID (stable across renames).
    #[serde(default)]
    pub oid: u32,
    pub schema: String,
    pub name: String,
    /// `r` table, `p` partitioned, `f` foreign, `v` view, `m` materialized view.
    pub kind: String,
    /// `COMMENT ON`.
    pub comment: Option<String>,
    /// Columns in attnum order.
    pub columns: Vec<DbColumn>,
    /// Primary key, unique and foreign-key constraints.
    pub constraints: Vec<DbConstraint>,
    /// Bitmask of `pg_relation_is_updatable`.
    pub updatable_bits: i32,
    /// Row-level security is enabled (`relrowsecurity`): its policies may read settings.
    #[serde(default)]
    pub row_security: bool,
    /// The OIDs of the tables it is a partition or inheritance child of.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parents: Vec<u32>,
    /// For a view: what its query reads and calls (from its rewrite rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads: Option<ViewReads>,
}

/// What a view's query reads and whether it calls anything not `IMMUTABLE`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewReads {
    /// The OIDs of the relations it references.
    #[serde(default)]
    pub relations: Vec<u32>,
    /// It calls a function that is not `IMMUTABLE` (`now()`, for one).
    #[serde(default)]
    pub volatile: bool,
}

impl DbTable {
    /// Whether reading it can run SQL that observes the session setting: a view (its query),
    /// a foreign table, or a table with row-level security (its policies). Plain tables and
    /// materialized views cannot.
    pub fn may_observe_session(&self) -> bool {
        !matches!(self.kind.as_str(), "r" | "p" | "m") || self.row_security
    }

    pub fn column(&self, name: &str) -> Option<&DbColumn> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// Primary-key columns, if there is a primary key.
    pub fn primary_key(&self) -> Option<&[String]> {
        self.constraints
            .iter()
            .find(|c| c.kind == "p")
            .map(|c| c.columns.as_slice())
    }

    pub fn foreign_keys(&self) -> impl Iterator<Item = &DbConstraint> {
        self.constraints.iter().filter(|c| c.kind == "f")
    }

    /// Whether Postgres can insert into it.
    pub fn is_insertable(&self) -> bool {
        self.updatable_bits & 8 != 0
    }

    /// Whether Postgres can update it.
    pub fn is_updatable(&self) -> bool {
        self.updatable_bits & 4 != 0
    }

    /// Whether Postgres can delete from it.
    pub fn is_deletable(&self) -> bool {
        self.updatable_bits & 16 != 0
    }

    /// True for views and materialized views.
    pub fn is_view(&self) -> bool {
        self.kind == "v" || self.kind == "m"
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DbColumn {
    pub name: String,
    /// Position (stable across renames).
    pub attnum: i16,
    /// Full type as Postgres prints it (`character varying(20)`, `integer[]`).
    pub data_type: String,
    /// `pg_type.typname` (`int4`, `_int4`, `varchar`).
    pub type_name: String,
    pub type_schema: String,
    /// `pg_type.typtype`: `b` base, `e` enum, `c` composite, `d` domain, `r` range …
    pub type_kind: String,
    /// Element type name for arrays.
    pub element_type: Option<String>,
    pub nullable: bool,
    /// Default expression.
    pub default: Option<String>,
    /// `GENERATED ALWAYS AS`.
    pub generated: bool,
    /// An identity column (`GENERATED … AS IDENTITY`).
    pub identity: bool,
    /// `COMMENT ON COLUMN`.
    pub comment: Option<String>,
}

impl DbColumn {
    /// The type values of the column are bound as.
    pub fn pg_type(&self) -> PgType {
        PgType::from_catalog(
            &self.data_type,
            &self.type_schema,
            &self.type_name,
            self.element_type.as_deref(),
        )
    }
}

/// A primary key (`p`), unique (`u`) or foreign-key (`f`) constraint.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DbConstraint {
    pub name: String,
    /// `p`, `u` or `f`.
    pub kind: String,
    /// Constrained columns, in key order.
    pub columns: Vec<String>,
    /// Referenced schema (foreign keys).
    pub ref_schema: Option<String>,
    /// Referenced table (foreign keys).
    pub ref_table: Option<String>,
    /// Referenced columns (foreign keys).
    pub ref_columns: Option<Vec<String>>,
}

impl DbConstraint {
    /// The referenced table of a foreign key.
    pub fn referenced_table(&self) -> Option<QualifiedName> {
        Some(QualifiedName::new(
            self.ref_schema.clone()?,
            self.ref_table.clone()?,
        ))
    }
}

/// A type reference in a function signature.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DbTypeRef {
    pub schema: String,
    pub name: String,
    /// `pg_type.typtype`.
    pub kind: String,
    /// The type as SQL writes it (`format_type`: quoted and qualified as needed), for casts.
    #[serde(default)]
    pub formatted: Option<String>,
    /// The element type's name, for arrays.
    #[serde(default)]
    pub element: Option<String>,
    /// Schema of the relation whose row type this is.
    pub relation_schema: Option<String>,
    /// Relation whose row type this is.
    pub relation: Option<String>,
}

impl DbTypeRef {
    /// The type values of this type are bound as.
    pub fn pg_type(&self) -> PgType {
        match &self.formatted {
            Some(formatted) => {
                PgType::from_catalog(formatted, &self.schema, &self.name, self.element.as_deref())
            }
            None => PgType::Qualified(crate::names::QualifiedName::new(
                self.schema.as_str(),
                self.name.as_str(),
            )),
        }
    }

    /// The relation when this is a table's row type.
    pub fn relation(&self) -> Option<QualifiedName> {
        Some(QualifiedName::new(
            self.relation_schema.clone()?,
            self.relation.clone()?,
        ))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DbFunction {
    /// OID (identifies one overload).
    #[serde(default)]
    pub oid: u32,
    pub schema: String,
    pub name: String,
    /// Names of all arguments (input and output), possibly empty strings.
    pub arg_names: Vec<String>,
    /// Modes of all arguments (`i`, `o`, `b`, `v`, `t`) or null when all are input.
    pub arg_modes: Option<Vec<String>>,
    /// Types of the input arguments.
    pub input_types: Vec<DbTypeRef>,
    pub return_type: DbTypeRef,
    /// `RETURNS SETOF`.
    pub returns_set: bool,
    /// How many of the last input arguments have a default (`pronargdefaults`).
    #[serde(default)]
    pub arg_defaults: usize,
    /// `i` immutable, `s` stable, `v` volatile.
    pub volatility: String,
    /// `COMMENT ON FUNCTION`.
    pub comment: Option<String>,
}

impl DbFunction {
    /// Names of the input arguments, aligned with `input_types` (empty string when unnamed).
    pub fn input_names(&self) -> Vec<String> {
        let names = match &self.arg_modes {
            None => self.arg_names.clone(),
            Some(modes) => self
                .arg_names
                .iter()
                .zip(modes)
                .filter(|(_, m)| matches!(m.as_str(), "i" | "b" | "v"))
                .map(|(n, _)| n.clone())
                .collect(),
        };
        (0..self.input_types.len())
            .map(|i| names.get(i).cloned().unwrap_or_default())
            .collect()
    }
}

/// The database model as one JSON document: what `database_model.sql` returns (`tables`,
/// `functions`, `scalar_types`) plus the rows of enum tables. It is how translation
/// goldenfiles describe a database without one.
#[derive(Serialize, Deserialize)]
struct ModelDocument {
    tables: Vec<Arc<DbTable>>,
    functions: Vec<DbFunction>,
    scalar_types: BTreeSet<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    enum_rows: Vec<EnumRows>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    capture_triggers: Vec<CaptureTrigger>,
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    capture_functions: BTreeSet<String>,
    #[serde(default, skip_serializing_if = "LiveCatalog::is_empty")]
    live: LiveCatalog,
}

impl LiveCatalog {
    fn is_empty(&self) -> bool {
        *self == LiveCatalog::default()
    }
}

/// The rows of one enum table in a [`ModelDocument`].
#[derive(Serialize, Deserialize)]
struct EnumRows {
    schema: String,
    name: String,
    rows: Vec<(String, Option<String>)>,
}

impl DbModel {
    /// A model from its JSON document (see [`DbModel::to_json`]); OIDs may be left out.
    pub fn from_json(value: serde_json::Value) -> Result<DbModel, serde_json::Error> {
        Ok(DbModel::from_document(serde_json::from_value(value)?))
    }

    /// [`DbModel::from_json`] from the document's text, as introspection reads it.
    pub fn from_slice(text: &[u8]) -> Result<DbModel, serde_json::Error> {
        Ok(DbModel::from_document(serde_json::from_slice(text)?))
    }

    fn from_document(document: ModelDocument) -> DbModel {
        let mut model = DbModel {
            tables: document
                .tables
                .into_iter()
                .map(|t| (QualifiedName::new(t.schema.clone(), t.name.clone()), t))
                .collect(),
            functions: IndexMap::new(),
            scalar_types: document.scalar_types,
            enum_rows: document
                .enum_rows
                .into_iter()
                .map(|e| (QualifiedName::new(e.schema, e.name), e.rows))
                .collect(),
            capture_triggers: document.capture_triggers,
            capture_functions: document.capture_functions,
            live: document.live,
            probes: Probes::default(),
        };
        for f in document.functions {
            model
                .functions
                .entry(QualifiedName::new(f.schema.clone(), f.name.clone()))
                .or_default()
                .push(f);
        }
        model
    }

    /// The model as a JSON document: tables and functions in model order, enum rows sorted by
    /// table name.
    pub fn to_json(&self) -> serde_json::Value {
        let mut enum_rows: Vec<EnumRows> = self
            .enum_rows
            .iter()
            .map(|(name, rows)| EnumRows {
                schema: name.schema.clone(),
                name: name.name.clone(),
                rows: rows.clone(),
            })
            .collect();
        enum_rows.sort_by(|a, b| (&a.schema, &a.name).cmp(&(&b.schema, &b.name)));
        let document = ModelDocument {
            tables: self.tables.values().cloned().collect(),
            functions: self.functions.values().flatten().cloned().collect(),
            scalar_types: self.scalar_types.clone(),
            enum_rows,
            capture_triggers: self.capture_triggers.clone(),
            capture_functions: self.capture_functions.clone(),
            live: self.live.clone(),
        };
        serde_json::to_value(document).unwrap_or(serde_json::Value::Null)
    }
}
