//! What one role may do, resolved once per metadata version: the tables it may select (visible
//! columns, relationships, computed fields, row filter, limit, aggregations) and the query root
//! fields they give ([`read`]), and what it may write ([`write`]); the column facts both use
//! ([`columns`]). The GraphQL types that follow are `typegen`'s job. Pure. See
//! `docs/architecture.md`.

mod columns;
mod functions;
mod native;
mod nested;
mod read;
mod rules;
mod to_tables;
mod write;

pub use columns::{scalar_for, scalar_for_type, EnumTables};
pub use nested::{nested_target, NestedTarget};
pub use rules::permission;
pub use to_tables::RoleToTable;
pub use write::{MutationKind, MutationRoot, RoleInsert, RoleUpdate, RoleWrite};

use crate::db_model::PgType;
use crate::metadata::types::{QualifiedTable, QueryRootField, SubscriptionRootField};
use crate::resolve::actions::{ResolvedAction, ResolvedCustomTypes};
use crate::resolve::{BoolExp, ComputedReturn, RelationshipKind, Resolved, TypeFamily};
use indexmap::IndexMap;

/// The admin role: sees everything, no permission rules.
pub use crate::session::ADMIN_ROLE as ADMIN;

/// A visible column.
#[derive(Debug, Clone)]
pub struct RoleColumn {
    /// Postgres name.
    pub column: String,
    /// GraphQL scalar (or `<e>_enum`).
    pub scalar: String,
    /// The Postgres type values of the column are bound as.
    pub pg_type: PgType,
    pub nullable: bool,
    /// Eligible for sum/avg/….
    pub numeric: bool,
    /// Eligible for min/max and ordering aggregates.
    pub orderable: bool,
    /// May be a stream's cursor (its type orders with a default b-tree).
    pub cursor: bool,
    /// Which comparisons its `<S>_comparison_exp` offers (`Json` and `Jsonb` columns also take
    /// a `path` argument).
    pub family: TypeFamily,
}

/// A visible relationship.
#[derive(Debug, Clone)]
pub struct RoleRelationship {
    /// Field name.
    pub name: String,
    pub kind: RelationshipKind,
    pub target: QualifiedTable,
    /// (local Postgres column, remote Postgres column).
    pub mapping: Vec<(String, String)>,
}

/// A visible relationship to another native query's rows.
#[derive(Debug, Clone)]
pub struct RoleQueryRelationship {
    /// Field name.
    pub name: String,
    pub kind: RelationshipKind,
    /// The target's position in [`RoleModel::native_queries`].
    pub query: usize,
    /// (local field, the target's field).
    pub mapping: Vec<(String, String)>,
}

/// A visible computed field.
#[derive(Debug, Clone)]
pub struct RoleComputed {
    /// Field name.
    pub name: String,
    pub function: QualifiedTable,
    /// Input arguments; positions match the function.
    pub arguments: Vec<crate::resolve::FunctionArgument>,
    /// Position of the row argument.
    pub table_argument: usize,
    /// Position of the session argument.
    pub session_argument: Option<usize>,
    pub returns: ComputedReturn,
    /// Name of the `<f>_args` input type, when the function takes extra arguments.
    pub args_type: Option<String>,
    /// Readable only on rows where this holds (see [`RoleTable::cells`]).
    pub cell: Option<BoolExp>,
}

/// What a field of a table object is.
#[derive(Debug, Clone)]
pub enum TableField {
    Column(RoleColumn),
    /// A relationship (object or array).
    Relationship(RoleRelationship),
    /// `<rel>_aggregate` of an array relationship.
    RelationshipAggregate(RoleRelationship),
    Computed(RoleComputed),
    /// A field answered by a remote schema (`docs/metadata-api.md`, "Remote relationships").
    RemoteJoin(crate::resolve::remote_join::ResolvedRemoteJoin),
    /// A relationship of a native query's rows to another native query's.
    NativeQuery(RoleQueryRelationship),
}

/// A table the role can select.
#[derive(Debug, Clone)]
pub struct RoleTable {
    /// Postgres name.
    pub name: QualifiedTable,
    /// GraphQL base name `<t>`.
    pub type_name: String,
    /// Fields by GraphQL name, in schema order.
    pub fields: IndexMap<String, TableField>,
    /// Visible columns by GraphQL name.
    pub columns: IndexMap<String, RoleColumn>,
    /// Row filter; `None` for admin.
    pub filter: Option<BoolExp>,
    /// Row cap.
    pub limit: Option<u32>,
    /// `<t>_aggregate` and `<rel>_aggregate` allowed.
    pub aggregations: bool,
    /// Primary key as GraphQL column names, when every key column is visible.
    pub primary_key: Option<Vec<String>>,
    /// Columns and scalar computed fields (by Postgres name) readable only on the rows where
    /// their condition holds, `null` elsewhere: an inherited role's fields that only some of
    /// its parents may read.
    pub cells: IndexMap<String, BoolExp>,
    /// The query root fields the permission lists (`None`: all).
    pub query_root_fields: Option<Vec<QueryRootField>>,
    /// The subscription root fields the permission lists (`None`: all).
    pub subscription_root_fields: Option<Vec<SubscriptionRootField>>,
}

impl RoleTable {
    /// The GraphQL name of a Postgres column, if visible.
    pub fn field_of_column(&self, column: &str) -> Option<&str> {
        self.columns
            .iter()
            .find(|(_, c)| c.column == column)
            .map(|(n, _)| n.as_str())
    }
}

/// What a query root field does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootKind {
    /// List of rows.
    Select,
    /// One row by primary key.
    SelectByPk,
    /// Aggregate over rows.
    Aggregate,
    /// New rows in cursor order (`<t>_stream`, subscriptions only).
    Stream,
    /// The rows of a tracked function ([`RoleModel::functions`] at this position).
    Function(usize),
    /// An aggregate over a tracked function's rows.
    FunctionAggregate(usize),
    /// The rows of a native query ([`RoleModel::native_queries`] at this position).
    NativeQuery(usize),
}

/// A query root field.
#[derive(Debug, Clone)]
pub struct RootField {
    pub kind: RootKind,
    pub table: QualifiedTable,
}

/// Everything one role can query.
#[derive(Debug, Clone)]
pub struct RoleModel {
    pub role: String,
    /// Selectable tables.
    pub tables: IndexMap<QualifiedTable, RoleTable>,
    /// Query root fields by name.
    pub roots: IndexMap<String, RootField>,
    /// Subscription root fields of tables by name.
    pub subscription_roots: IndexMap<String, RootField>,
    /// Tables the role may write to.
    pub writes: IndexMap<QualifiedTable, RoleWrite>,
    /// Mutation root fields by name.
    pub mutations: IndexMap<String, MutationRoot>,
    /// The relationships of each table's `<t>_nested_update_input`, by name in byte order;
    /// tables without one are absent.
    pub nested_updates: IndexMap<QualifiedTable, Vec<RoleRelationship>>,
    /// Empty select views of tables the role writes but cannot select (`where` has only the
    /// connectives there).
    pub write_views: IndexMap<QualifiedTable, RoleTable>,
    /// Enum tables the role's columns may refer to: their GraphQL enum types.
    pub enums: EnumTables,
    /// Actions the role may call (admin: all), in metadata order.
    pub actions: Vec<ResolvedAction>,
    /// The custom types (empty when the role may call no action).
    pub custom_types: ResolvedCustomTypes,
    /// The cell rules of its tables, as its plans carry them.
    pub cells: crate::graphql::ir::CellRules,
    /// The remote schema → table relationships it may follow, by remote object type and
    /// field name.
    pub to_tables: IndexMap<(String, String), RoleToTable>,
    /// The tracked functions it may call, in metadata order.
    pub functions: Vec<crate::resolve::functions::ResolvedFunction>,
    /// Mutation root fields of tracked functions: name → position in [`RoleModel::functions`].
    pub function_mutations: IndexMap<String, usize>,
    /// The native queries it may run, in metadata order.
    pub native_queries: Vec<crate::resolve::native_queries::ResolvedNativeQuery>,
    /// What it may select of the logical models those queries return, by model name.
    pub models: IndexMap<String, RoleTable>,
    /// The rows of the native queries with relationships, by root field name: their model's
    /// view, named after the query, with the relationships whose targets the role may read.
    pub query_rows: IndexMap<String, RoleTable>,
    /// The descriptions of those models and their fields, by model name.
    pub model_docs: IndexMap<String, ModelDocs>,
}

/// What a logical model's GraphQL type says about itself.
#[derive(Debug, Clone, Default)]
pub struct ModelDocs {
    pub description: Option<String>,
    /// Field name → description, for the fields that have one.
    pub fields: IndexMap<String, String>,
}

impl RoleModel {
    /// What the role reads of native query `q`'s rows.
    pub fn rows_of(
        &self,
        q: &crate::resolve::native_queries::ResolvedNativeQuery,
    ) -> Option<&RoleTable> {
        (self.query_rows.get(&q.root_field)).or_else(|| self.models.get(&q.returns))
    }
}

/// Server settings that shape what a role may do.
#[derive(Debug, Clone, Copy)]
pub struct ModelSettings {
    /// A role that may select a query-exposed function's table may call it without a grant.
    pub infer_function_permissions: bool,
}

impl Default for ModelSettings {
    fn default() -> Self {
        ModelSettings {
            infer_function_permissions: true,
        }
    }
}

impl RoleModel {
    /// Whether updates of `w`'s table take `_nested`: the table has a primary key to read the
    /// answer back by, and relationships a nested update may follow.
    pub fn takes_nested(&self, w: &RoleWrite) -> bool {
        w.key.is_some() && self.nested_updates.contains_key(&w.name)
    }
}

/// Builds one role's model for ordinary requests, with the default settings.
pub fn build(resolved: &Resolved, role: &str) -> RoleModel {
    build_for(resolved, role, false, &ModelSettings::default())
}

/// Whether any insert permission of the role is backend-only (it then has a second schema for
/// backend-flagged requests).
pub fn has_backend_only(resolved: &Resolved, role: &str) -> bool {
    resolved.tables.values().any(|t| {
        t.permissions
            .get(role)
            .and_then(|p| p.insert.as_ref())
            .is_some_and(|i| i.backend_only)
    })
}

/// Builds one role's model; `backend_flagged` selects which insert permissions are active.
pub fn build_for(
    resolved: &Resolved,
    role: &str,
    backend_flagged: bool,
    settings: &ModelSettings,
) -> RoleModel {
    let enums = columns::enum_tables(resolved);
    let mut tables = read::selectable_tables(resolved, role, &enums);
    read::add_fields(resolved, role, &mut tables);
    // A table the role sees no field of (a permission with no visible column, or only
    // relationships to such tables) would be a GraphQL type without fields, which makes the
    // role's whole schema invalid: leave it out, and what pointed at it, until none is left.
    while tables.values().any(|t| t.fields.is_empty()) {
        tables.retain(|_, t| !t.fields.is_empty());
        read::add_fields(resolved, role, &mut tables);
    }
    let (mut roots, mut subscription_roots) = read::root_fields(resolved, &tables);
    let functions = functions::visible(resolved, role, &tables, settings);
    let function_mutations =
        functions::add_roots(&functions, &tables, &mut roots, &mut subscription_roots);
    let (native_queries, models, model_docs) =
        native::visible(resolved, role, &enums, &mut roots, &mut subscription_roots);
    let query_rows = native::rows(&native_queries, &models, &tables);
    let (writes, mutations) = write::build(resolved, role, &tables, &enums, backend_flagged);
    let nested_updates = nested::nested_updates(resolved, &tables, &writes);
    let write_views = writes
        .values()
        .filter(|w| !tables.contains_key(&w.name))
        .map(|w| {
            let view = RoleTable {
                name: w.name.clone(),
                type_name: w.type_name.clone(),
                fields: IndexMap::new(),
                columns: IndexMap::new(),
                filter: None,
                limit: None,
                aggregations: false,
                primary_key: None,
                cells: IndexMap::new(),
                query_root_fields: None,
                subscription_root_fields: None,
            };
            (w.name.clone(), view)
        })
        .collect();
    let actions: Vec<ResolvedAction> = resolved
        .actions
        .iter()
        .filter(|a| a.allows(role))
        .cloned()
        .collect();
    RoleModel {
        cells: rules::cell_rules(tables.values()),
        to_tables: to_tables::build(resolved, &tables),
        role: role.to_owned(),
        tables,
        roots,
        subscription_roots,
        writes,
        mutations,
        nested_updates,
        write_views,
        enums,
        custom_types: if actions.is_empty() {
            ResolvedCustomTypes::default()
        } else {
            resolved.custom_types.clone()
        },
        actions,
        functions,
        function_mutations,
        native_queries,
        models,
        query_rows,
        model_docs,
    }
}
