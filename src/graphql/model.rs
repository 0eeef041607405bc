//! What one role may query, resolved once per metadata version: visible tables, their fields by
//! GraphQL name, permission rules, root fields, and the role's GraphQL type system. Pure.

use super::types::*;
use crate::introspect::DbColumn;
use crate::metadata::types::QualifiedTable;
use crate::schema::{ComputedReturn, RelationshipKind, Resolved, ResolvedTable};
use indexmap::IndexMap;
use serde_json::Value;

/// The admin role: sees everything, no permission rules.
pub const ADMIN: &str = "admin";

/// Aggregate operators over numeric columns, each giving `<t>_<op>_fields`.
pub const NUMERIC_AGGREGATES: [&str; 8] = [
    "avg",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "sum",
    "var_pop",
    "var_samp",
    "variance",
];

/// A visible column.
#[derive(Debug, Clone)]
pub struct RoleColumn {
    /// Postgres name.
    pub column: String,
    /// GraphQL scalar (or `<e>_enum`).
    pub scalar: String,
    /// Full Postgres type, for casts (`integer`, `character varying(20)`).
    pub pg_type: String,
    /// NULL allowed.
    pub nullable: bool,
    /// Eligible for sum/avg/….
    pub numeric: bool,
    /// Eligible for min/max and ordering aggregates.
    pub orderable: bool,
    /// `json` or `jsonb` (takes a `path` argument).
    pub json: bool,
}

/// A visible relationship.
#[derive(Debug, Clone)]
pub struct RoleRelationship {
    /// Field name.
    pub name: String,
    /// Cardinality.
    pub kind: RelationshipKind,
    /// Target table.
    pub target: QualifiedTable,
    /// (local Postgres column, remote Postgres column).
    pub mapping: Vec<(String, String)>,
}

/// A visible computed field.
#[derive(Debug, Clone)]
pub struct RoleComputed {
    /// Field name.
    pub name: String,
    /// Function.
    pub function: QualifiedTable,
    /// Input arguments; positions match the function.
    pub arguments: Vec<crate::schema::FunctionArgument>,
    /// Position of the row argument.
    pub table_argument: usize,
    /// Position of the session argument.
    pub session_argument: Option<usize>,
    /// Return shape.
    pub returns: ComputedReturn,
    /// Name of the `<f>_args` input type, when the function takes extra arguments.
    pub args_type: Option<String>,
}

/// What a field of a table object is.
#[derive(Debug, Clone)]
pub enum TableField {
    /// A column.
    Column(RoleColumn),
    /// A relationship (object or array).
    Relationship(RoleRelationship),
    /// `<rel>_aggregate` of an array relationship.
    RelationshipAggregate(RoleRelationship),
    /// A computed field.
    Computed(RoleComputed),
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
    /// Row filter (metadata BoolExp JSON); `None` for admin.
    pub filter: Option<Value>,
    /// Row cap.
    pub limit: Option<u32>,
    /// `<t>_aggregate` and `<rel>_aggregate` allowed.
    pub aggregations: bool,
    /// Primary key as GraphQL column names, when every key column is visible.
    pub primary_key: Option<Vec<String>>,
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
}

/// A query root field.
#[derive(Debug, Clone)]
pub struct RootField {
    /// Which kind.
    pub kind: RootKind,
    /// Which table.
    pub table: QualifiedTable,
}

/// Everything one role can query.
#[derive(Debug, Clone)]
pub struct RoleModel {
    /// The role.
    pub role: String,
    /// Selectable tables.
    pub tables: IndexMap<QualifiedTable, RoleTable>,
    /// Query root fields by name.
    pub roots: IndexMap<String, RootField>,
    /// Tables the role may write to.
    pub writes: IndexMap<QualifiedTable, super::mutations::RoleWrite>,
    /// Mutation root fields by name.
    pub mutations: IndexMap<String, super::mutations::MutationRoot>,
    /// Empty select views of tables the role writes but cannot select (`where` has only the
    /// connectives there).
    pub write_views: IndexMap<QualifiedTable, RoleTable>,
    /// The GraphQL type system.
    pub types: TypeSystem,
}

/// The GraphQL scalar for a Postgres column type (`graphql-api.md` §4).
pub fn scalar_for(column: &DbColumn) -> String {
    let name = column.type_name.as_str();
    let mapped = match name {
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
    if crate::metadata::types::GraphQLName::is_valid(mapped) {
        mapped.to_owned()
    } else {
        "String".to_owned()
    }
}

fn is_numeric_scalar(scalar: &str) -> bool {
    matches!(
        scalar,
        "Int" | "smallint" | "bigint" | "Float" | "float8" | "numeric" | "money"
    )
}

fn is_orderable_scalar(scalar: &str, column: &DbColumn) -> bool {
    is_numeric_scalar(scalar)
        || column.is_text_like()
        || matches!(
            column.type_name.as_str(),
            "date" | "time" | "timetz" | "timestamp" | "timestamptz" | "interval" | "uuid"
        )
}

/// The base name of a function for `<f>_args`.
fn function_base_name(f: &QualifiedTable) -> String {
    f.graphql_base_name()
}

/// Enum tables: table → (GraphQL enum name, values).
pub(super) type EnumTables = IndexMap<QualifiedTable, (String, Vec<(String, Option<String>)>)>;

fn enum_tables(resolved: &Resolved) -> EnumTables {
    resolved
        .tables
        .iter()
        .filter_map(|(name, t)| {
            let values = t.enum_values.clone()?;
            Some((
                name.clone(),
                (format!("{}_enum", name.graphql_base_name()), values),
            ))
        })
        .collect()
}

/// The enum type of a column that references an enum table's key.
fn enum_of_column(table: &ResolvedTable, column: &str, enums: &EnumTables) -> Option<String> {
    table.db.foreign_keys().find_map(|fk| {
        if fk.columns.len() != 1 || fk.columns[0] != column {
            return None;
        }
        enums
            .get(&crate::schema::qualified_table(fk.referenced_table()?))
            .map(|(name, _)| name.clone())
    })
}

/// The role-facing description of a column (scalar, enum type, numeric/orderable flags).
pub(super) fn scalar_for_column(
    table: &ResolvedTable,
    column: &DbColumn,
    enums: &EnumTables,
) -> RoleColumn {
    let base = scalar_for(column);
    let scalar = enum_of_column(table, &column.name, enums).unwrap_or_else(|| base.clone());
    RoleColumn {
        column: column.name.clone(),
        pg_type: column.data_type.clone(),
        nullable: column.nullable,
        numeric: is_numeric_scalar(&base),
        orderable: is_orderable_scalar(&base, column),
        json: column.is_json() || column.is_jsonb(),
        scalar,
    }
}

/// Builds the model of every role: admin and each role named by a permission.
pub fn build_all(resolved: &Resolved) -> IndexMap<String, RoleModel> {
    let mut roles = vec![ADMIN.to_owned()];
    roles.extend(resolved.roles.iter().filter(|r| *r != ADMIN).cloned());
    roles
        .into_iter()
        .map(|r| (r.clone(), build(resolved, &r)))
        .collect()
}

/// Builds one role's model for ordinary requests.
pub fn build(resolved: &Resolved, role: &str) -> RoleModel {
    build_for(resolved, role, false)
}

/// Whether any insert permission of the role is backend-only (it then has a second schema for
/// backend-flagged requests).
pub fn has_backend_only(resolved: &Resolved, role: &str) -> bool {
    resolved.tables.values().any(|t| {
        t.permissions
            .get(role)
            .and_then(|p| p.insert.as_ref())
            .is_some_and(|i| i.backend_only.unwrap_or(false))
    })
}

/// Builds one role's model; `backend_flagged` selects which insert permissions are active.
pub fn build_for(resolved: &Resolved, role: &str, backend_flagged: bool) -> RoleModel {
    let admin = role == ADMIN;
    let enums = enum_tables(resolved);
    // Pass 1: which tables are selectable, with their column sets and rules.
    let mut tables: IndexMap<QualifiedTable, RoleTable> = IndexMap::new();
    for (name, table) in &resolved.tables {
        let permission = table.permissions.get(role).and_then(|p| p.select.clone());
        if !admin && permission.is_none() {
            continue;
        }
        let visible = |c: &str| {
            admin
                || permission
                    .as_ref()
                    .map(|p| p.columns.contains(c))
                    .unwrap_or(false)
        };
        let mut columns = IndexMap::new();
        for column in table.db.columns.iter().filter(|c| visible(&c.name)) {
            let field = table
                .configuration
                .custom_column_names
                .get(&column.name)
                .map(|n| n.0.clone())
                .unwrap_or_else(|| column.name.clone());
            columns.insert(field, scalar_for_column(table, column, &enums));
        }
        let primary_key = table
            .db
            .primary_key()
            .filter(|_| !table.db.is_view())
            .and_then(|pk| {
                pk.iter()
                    .map(|c| {
                        columns
                            .iter()
                            .find(|(_, rc)| &rc.column == c)
                            .map(|(n, _)| n.clone())
                    })
                    .collect::<Option<Vec<_>>>()
            });
        tables.insert(
            name.clone(),
            RoleTable {
                name: name.clone(),
                type_name: name.graphql_base_name(),
                fields: IndexMap::new(),
                columns,
                filter: permission.as_ref().map(|p| p.filter.clone()),
                limit: permission.as_ref().and_then(|p| p.limit),
                aggregations: admin
                    || permission
                        .as_ref()
                        .map(|p| p.allow_aggregations)
                        .unwrap_or(false),
                primary_key,
            },
        );
    }
    // Pass 2: fields, now that targets are known.
    let selectable: Vec<QualifiedTable> = tables.keys().cloned().collect();
    let aggregatable: Vec<QualifiedTable> = tables
        .values()
        .filter(|t| t.aggregations)
        .map(|t| t.name.clone())
        .collect();
    for name in &selectable {
        let Some(resolved_table) = resolved.tables.get(name) else {
            continue;
        };
        let permission = resolved_table
            .permissions
            .get(role)
            .and_then(|p| p.select.clone());
        let mut fields = IndexMap::new();
        let Some(role_table) = tables.get(name) else {
            continue;
        };
        for (field, column) in &role_table.columns {
            fields.insert(field.clone(), TableField::Column(column.clone()));
        }
        for rel in resolved_table.relationships.values() {
            if !selectable.contains(&rel.target) {
                continue;
            }
            let r = RoleRelationship {
                name: rel.name.clone(),
                kind: rel.kind,
                target: rel.target.clone(),
                mapping: rel.mapping.clone(),
            };
            if rel.kind == RelationshipKind::Array && aggregatable.contains(&rel.target) {
                fields.insert(
                    format!("{}_aggregate", rel.name),
                    TableField::RelationshipAggregate(r.clone()),
                );
            }
            fields.insert(rel.name.clone(), TableField::Relationship(r));
        }
        for cf in resolved_table.computed_fields.values() {
            let allowed = match &cf.returns {
                ComputedReturn::Scalar(_) => {
                    admin
                        || permission
                            .as_ref()
                            .map(|p| p.computed_fields.contains(&cf.name))
                            .unwrap_or(false)
                }
                ComputedReturn::Table { table, .. } => selectable.contains(table),
            };
            if !allowed {
                continue;
            }
            let extra = cf
                .arguments
                .iter()
                .enumerate()
                .any(|(i, _)| i != cf.table_argument && Some(i) != cf.session_argument);
            fields.insert(
                cf.name.clone(),
                TableField::Computed(RoleComputed {
                    name: cf.name.clone(),
                    function: cf.function.clone(),
                    arguments: cf.arguments.clone(),
                    table_argument: cf.table_argument,
                    session_argument: cf.session_argument,
                    returns: cf.returns.clone(),
                    args_type: extra.then(|| format!("{}_args", function_base_name(&cf.function))),
                }),
            );
        }
        if let Some(t) = tables.get_mut(name) {
            t.fields = fields;
        }
    }
    let mut roots = IndexMap::new();
    for (name, t) in &tables {
        let Some(resolved_table) = resolved.tables.get(name) else {
            continue;
        };
        let custom = &resolved_table.configuration.custom_root_fields;
        let pick = |c: &Option<crate::metadata::types::GraphQLName>, default: String| {
            c.as_ref().map(|n| n.0.clone()).unwrap_or(default)
        };
        roots.insert(
            pick(&custom.select, t.type_name.clone()),
            RootField {
                kind: RootKind::Select,
                table: name.clone(),
            },
        );
        if t.primary_key.is_some() {
            roots.insert(
                pick(&custom.select_by_pk, format!("{}_by_pk", t.type_name)),
                RootField {
                    kind: RootKind::SelectByPk,
                    table: name.clone(),
                },
            );
        }
        if t.aggregations {
            roots.insert(
                pick(
                    &custom.select_aggregate,
                    format!("{}_aggregate", t.type_name),
                ),
                RootField {
                    kind: RootKind::Aggregate,
                    table: name.clone(),
                },
            );
        }
    }
    let (writes, mutations) =
        super::mutations::build(resolved, role, &tables, &enums, backend_flagged);
    let types = TypeBuilder {
        tables: &tables,
        enums: &enums,
        types: TypeSystem::default(),
    }
    .build(&roots, &writes, &mutations);
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
            };
            (w.name.clone(), view)
        })
        .collect();
    RoleModel {
        role: role.to_owned(),
        tables,
        roots,
        writes,
        mutations,
        write_views,
        types,
    }
}

/// Generates the GraphQL types of a role from its tables.
pub(super) struct TypeBuilder<'a> {
    pub(super) tables: &'a IndexMap<QualifiedTable, RoleTable>,
    pub(super) enums: &'a EnumTables,
    pub(super) types: TypeSystem,
}

/// Arguments of list fields: `distinct_on`, `limit`, `offset`, `order_by`, `where`.
fn list_args(t: &str) -> Vec<InputValueDef> {
    vec![
        InputValueDef::new(
            "distinct_on",
            TypeRef::nullable_list_of_non_null(format!("{t}_select_column")),
        ),
        InputValueDef::new("limit", TypeRef::named("Int")),
        InputValueDef::new("offset", TypeRef::named("Int")),
        InputValueDef::new(
            "order_by",
            TypeRef::nullable_list_of_non_null(format!("{t}_order_by")),
        ),
        InputValueDef::new("where", TypeRef::named(format!("{t}_bool_exp"))),
    ]
}

fn with_args(mut field: FieldDef, args: Vec<InputValueDef>) -> FieldDef {
    for a in args {
        field = field.arg(a);
    }
    field
}

impl TypeBuilder<'_> {
    fn build(
        mut self,
        roots: &IndexMap<String, RootField>,
        writes: &IndexMap<QualifiedTable, super::mutations::RoleWrite>,
        mutations: &IndexMap<String, super::mutations::MutationRoot>,
    ) -> TypeSystem {
        self.types.query_root = "query_root".to_owned();
        self.order_by_enum();
        let mut root_fields = IndexMap::new();
        for (field, root) in roots {
            let Some(t) = self.tables.get(&root.table) else {
                continue;
            };
            let tn = &t.type_name;
            let def = match root.kind {
                RootKind::Select => with_args(
                    FieldDef::new(field, TypeRef::list_of_non_null(tn)),
                    list_args(tn),
                )
                .describe(format!("fetch data from the table: \"{}\"", root.table)),
                RootKind::Aggregate => with_args(
                    FieldDef::new(field, TypeRef::non_null(format!("{tn}_aggregate"))),
                    list_args(tn),
                )
                .describe(format!(
                    "fetch aggregated fields from the table: \"{}\"",
                    root.table
                )),
                RootKind::SelectByPk => {
                    let mut def = FieldDef::new(field, TypeRef::named(tn)).describe(format!(
                        "fetch data from the table: \"{}\" using primary key columns",
                        root.table
                    ));
                    for column in t.primary_key.iter().flatten() {
                        if let Some(c) = t.columns.get(column) {
                            def = def.arg(InputValueDef::new(column, TypeRef::non_null(&c.scalar)));
                        }
                    }
                    def
                }
            };
            root_fields.insert(field.clone(), def);
        }
        if root_fields.is_empty() {
            root_fields.insert(
                "no_queries_available".to_owned(),
                FieldDef::new("no_queries_available", TypeRef::non_null("String")),
            );
        }
        for t in self.tables.values() {
            self.table_types(t);
        }
        let has_mutations = self.mutation_types(writes, mutations);
        self.types.add(TypeDef::Object {
            name: "query_root".to_owned(),
            description: None,
            fields: root_fields,
        });
        if has_mutations {
            self.types.mutation_root = Some("mutation_root".to_owned());
        }
        // The root first, as introspection clients expect it near the top.
        let mut ordered = TypeSystem {
            types: IndexMap::new(),
            query_root: self.types.query_root.clone(),
            mutation_root: self.types.mutation_root.clone(),
        };
        if let Some(root) = self.types.types.shift_remove("query_root") {
            ordered.add(root);
        }
        for (_, def) in self.types.types {
            ordered.add(def);
        }
        ordered
    }

    fn order_by_enum(&mut self) {
        let values = [
            ("asc", "in ascending order, nulls last"),
            ("asc_nulls_first", "in ascending order, nulls first"),
            ("asc_nulls_last", "in ascending order, nulls last"),
            ("desc", "in descending order, nulls first"),
            ("desc_nulls_first", "in descending order, nulls first"),
            ("desc_nulls_last", "in descending order, nulls last"),
        ];
        self.types.add(TypeDef::Enum {
            name: "order_by".to_owned(),
            description: Some("column ordering options".to_owned()),
            values: values
                .iter()
                .map(|(n, d)| EnumValueDef {
                    name: (*n).to_owned(),
                    description: Some((*d).to_owned()),
                })
                .collect(),
        });
    }

    /// Registers a custom scalar (built-ins and enum types are skipped).
    pub(super) fn scalar_type(&mut self, scalar: &str) {
        self.scalar(scalar);
    }

    fn scalar(&mut self, scalar: &str) {
        if BUILTIN_SCALARS.contains(&scalar)
            || scalar.ends_with("_enum") && self.is_enum_type(scalar)
        {
            return;
        }
        self.types.add(TypeDef::Scalar {
            name: scalar.to_owned(),
            description: None,
        });
    }

    fn is_enum_type(&self, name: &str) -> bool {
        self.enums.values().any(|(n, _)| n == name)
    }

    /// `<S>_comparison_exp` for a column's scalar.
    fn comparison(&mut self, column: &RoleColumn) -> String {
        let s = column.scalar.clone();
        let name = format!("{s}_comparison_exp");
        if self.types.get(&name).is_some() {
            return name;
        }
        self.scalar(&s);
        let mut fields = IndexMap::new();
        let mut add = |n: &str, ty: TypeRef| {
            fields.insert(n.to_owned(), InputValueDef::new(n, ty));
        };
        let enum_column = self.is_enum_type(&s);
        let json_only = s == "json";
        if enum_column {
            add("_eq", TypeRef::named(&s));
            add("_in", TypeRef::nullable_list_of_non_null(&s));
            add("_is_null", TypeRef::named("Boolean"));
            add("_neq", TypeRef::named(&s));
            add("_nin", TypeRef::nullable_list_of_non_null(&s));
        } else if json_only {
            add("_is_null", TypeRef::named("Boolean"));
        } else {
            let jsonb = s == "jsonb";
            let text = matches!(s.as_str(), "String" | "bpchar" | "citext" | "name");
            if jsonb {
                self.jsonb_cast();
                add("_cast", TypeRef::named("jsonb_cast_exp"));
                add("_contained_in", TypeRef::named("jsonb"));
                add("_contains", TypeRef::named("jsonb"));
            }
            add("_eq", TypeRef::named(&s));
            add("_gt", TypeRef::named(&s));
            add("_gte", TypeRef::named(&s));
            if jsonb {
                add("_has_key", TypeRef::named("String"));
                add(
                    "_has_keys_all",
                    TypeRef::nullable_list_of_non_null("String"),
                );
                add(
                    "_has_keys_any",
                    TypeRef::nullable_list_of_non_null("String"),
                );
            }
            if text {
                add("_ilike", TypeRef::named("String"));
            }
            add("_in", TypeRef::nullable_list_of_non_null(&s));
            if text {
                add("_iregex", TypeRef::named("String"));
            }
            add("_is_null", TypeRef::named("Boolean"));
            if text {
                add("_like", TypeRef::named("String"));
            }
            add("_lt", TypeRef::named(&s));
            add("_lte", TypeRef::named(&s));
            add("_neq", TypeRef::named(&s));
            if text {
                for op in [
                    "_nilike",
                    "_niregex",
                    "_nlike",
                    "_nregex",
                    "_nsimilar",
                    "_regex",
                    "_similar",
                ] {
                    add(op, TypeRef::named("String"));
                }
            }
            add("_nin", TypeRef::nullable_list_of_non_null(&s));
        }
        self.types.add(TypeDef::Input {
            name: name.clone(),
            description: Some(format!("Boolean expression to compare columns of type \"{s}\". All fields are combined with logical 'AND'.")),
            fields,
        });
        name
    }

    fn jsonb_cast(&mut self) {
        if self.types.get("jsonb_cast_exp").is_some() {
            return;
        }
        let string = RoleColumn {
            column: String::new(),
            scalar: "String".to_owned(),
            pg_type: "text".to_owned(),
            nullable: true,
            numeric: false,
            orderable: true,
            json: false,
        };
        self.comparison(&string);
        let mut fields = IndexMap::new();
        fields.insert(
            "String".to_owned(),
            InputValueDef::new("String", TypeRef::named("String_comparison_exp")),
        );
        self.types.add(TypeDef::Input {
            name: "jsonb_cast_exp".to_owned(),
            description: None,
            fields,
        });
    }

    fn target(&self, name: &QualifiedTable) -> Option<&RoleTable> {
        self.tables.get(name)
    }

    fn table_types(&mut self, t: &RoleTable) {
        let tn = t.type_name.clone();
        let mut object = IndexMap::new();
        let mut bool_exp = IndexMap::new();
        let mut order_by = IndexMap::new();
        for name in ["_and", "_or"] {
            bool_exp.insert(
                name.to_owned(),
                InputValueDef::new(
                    name,
                    TypeRef::nullable_list_of_non_null(format!("{tn}_bool_exp")),
                ),
            );
        }
        bool_exp.insert(
            "_not".to_owned(),
            InputValueDef::new("_not", TypeRef::named(format!("{tn}_bool_exp"))),
        );
        for (field, value) in &t.fields {
            match value {
                TableField::Column(c) => {
                    self.scalar(&c.scalar);
                    let ty = if c.nullable {
                        TypeRef::named(&c.scalar)
                    } else {
                        TypeRef::non_null(&c.scalar)
                    };
                    let mut def = FieldDef::new(field, ty);
                    if c.json {
                        def = def.arg(InputValueDef {
                            name: "path".to_owned(),
                            description: Some("JSON select path".to_owned()),
                            ty: TypeRef::named("String"),
                            default: None,
                        });
                    }
                    object.insert(field.clone(), def);
                    let cmp = self.comparison(c);
                    bool_exp.insert(
                        field.clone(),
                        InputValueDef::new(field, TypeRef::named(cmp)),
                    );
                    order_by.insert(
                        field.clone(),
                        InputValueDef::new(field, TypeRef::named("order_by")),
                    );
                }
                TableField::Relationship(r) => {
                    let Some(target) = self.target(&r.target) else {
                        continue;
                    };
                    let rn = target.type_name.clone();
                    let def = match r.kind {
                        RelationshipKind::Object => {
                            order_by.insert(
                                field.clone(),
                                InputValueDef::new(field, TypeRef::named(format!("{rn}_order_by"))),
                            );
                            FieldDef::new(field, TypeRef::named(&rn))
                                .describe("An object relationship")
                        }
                        RelationshipKind::Array => with_args(
                            FieldDef::new(field, TypeRef::list_of_non_null(&rn)),
                            list_args(&rn),
                        )
                        .describe("An array relationship"),
                    };
                    object.insert(field.clone(), def);
                    bool_exp.insert(
                        field.clone(),
                        InputValueDef::new(field, TypeRef::named(format!("{rn}_bool_exp"))),
                    );
                }
                TableField::RelationshipAggregate(r) => {
                    let Some(target) = self.target(&r.target) else {
                        continue;
                    };
                    let rn = target.type_name.clone();
                    object.insert(
                        field.clone(),
                        with_args(
                            FieldDef::new(field, TypeRef::non_null(format!("{rn}_aggregate"))),
                            list_args(&rn),
                        )
                        .describe("An aggregate relationship"),
                    );
                    order_by.insert(
                        field.clone(),
                        InputValueDef::new(
                            field,
                            TypeRef::named(format!("{rn}_aggregate_order_by")),
                        ),
                    );
                }
                TableField::Computed(cf) => {
                    let mut args = Vec::new();
                    if let Some(args_type) = &cf.args_type {
                        self.function_args(cf, args_type);
                        args.push(InputValueDef::new("args", TypeRef::named(args_type)));
                    }
                    let def = match &cf.returns {
                        ComputedReturn::Scalar(pg) => {
                            let scalar = scalar_for(&pseudo_column(pg));
                            self.scalar(&scalar);
                            with_args(FieldDef::new(field, TypeRef::named(scalar)), args)
                        }
                        ComputedReturn::Table { table, set } => {
                            let Some(target) = self.target(table) else {
                                continue;
                            };
                            let rn = target.type_name.clone();
                            if *set {
                                args.extend(list_args(&rn));
                                with_args(
                                    FieldDef::new(field, TypeRef::list_of_non_null(&rn)),
                                    args,
                                )
                            } else {
                                with_args(FieldDef::new(field, TypeRef::named(&rn)), args)
                            }
                        }
                    };
                    object.insert(field.clone(), def.describe("A computed field"));
                }
            }
        }
        self.types.add(TypeDef::Object {
            name: tn.clone(),
            description: Some(format!("columns and relationships of \"{}\"", t.name)),
            fields: object,
        });
        self.types.add(TypeDef::Input {
            name: format!("{tn}_bool_exp"),
            description: Some(format!("Boolean expression to filter rows from the table \"{}\". All fields are combined with a logical 'AND'.", t.name)),
            fields: bool_exp,
        });
        self.types.add(TypeDef::Input {
            name: format!("{tn}_order_by"),
            description: Some(format!(
                "Ordering options when selecting data from \"{}\".",
                t.name
            )),
            fields: order_by,
        });
        self.types.add(TypeDef::Enum {
            name: format!("{tn}_select_column"),
            description: Some(format!("select columns of table \"{}\"", t.name)),
            values: t
                .columns
                .keys()
                .map(|c| EnumValueDef {
                    name: c.clone(),
                    description: Some("column name".to_owned()),
                })
                .collect(),
        });
        self.aggregate_types(t);
        if let Some((name, values)) = self.enums.get(&t.name).cloned() {
            self.types.add(TypeDef::Enum {
                name,
                description: None,
                values: values
                    .into_iter()
                    .map(|(v, d)| EnumValueDef {
                        name: v,
                        description: d,
                    })
                    .collect(),
            });
        }
        for (enum_table, (name, values)) in self.enums.iter() {
            let used = t.columns.values().any(|c| &c.scalar == name);
            if used && enum_table != &t.name {
                let values = values.clone();
                self.types.add(TypeDef::Enum {
                    name: name.clone(),
                    description: None,
                    values: values
                        .into_iter()
                        .map(|(v, d)| EnumValueDef {
                            name: v,
                            description: d,
                        })
                        .collect(),
                });
            }
        }
    }

    fn function_args(&mut self, cf: &RoleComputed, args_type: &str) {
        let mut fields = IndexMap::new();
        for (i, arg) in cf.arguments.iter().enumerate() {
            let (name, pg_type) = (&arg.name, &arg.type_name);
            if i == cf.table_argument || Some(i) == cf.session_argument || name.is_empty() {
                continue;
            }
            let scalar = scalar_for(&pseudo_column(pg_type));
            self.scalar(&scalar);
            fields.insert(
                name.clone(),
                InputValueDef::new(name, TypeRef::named(scalar)),
            );
        }
        self.types.add(TypeDef::Input {
            name: args_type.to_owned(),
            description: None,
            fields,
        });
    }

    fn aggregate_types(&mut self, t: &RoleTable) {
        let tn = &t.type_name;
        if !t.aggregations {
            // Still needed by `<rel>_aggregate` order_by of other tables? Only when aggregatable.
            return;
        }
        let numeric: Vec<(&String, &RoleColumn)> =
            t.columns.iter().filter(|(_, c)| c.numeric).collect();
        let orderable: Vec<(&String, &RoleColumn)> =
            t.columns.iter().filter(|(_, c)| c.orderable).collect();
        let mut fields = IndexMap::new();
        fields.insert(
            "count".to_owned(),
            FieldDef::new("count", TypeRef::non_null("Int"))
                .arg(InputValueDef::new(
                    "columns",
                    TypeRef::nullable_list_of_non_null(format!("{tn}_select_column")),
                ))
                .arg(InputValueDef::new("distinct", TypeRef::named("Boolean"))),
        );
        let mut order_fields = IndexMap::new();
        order_fields.insert(
            "count".to_owned(),
            InputValueDef::new("count", TypeRef::named("order_by")),
        );
        let mut ops: Vec<(&str, Vec<(&String, &RoleColumn)>)> = Vec::new();
        if !numeric.is_empty() {
            for op in NUMERIC_AGGREGATES {
                ops.push((op, numeric.clone()));
            }
        }
        if !orderable.is_empty() {
            ops.push(("max", orderable.clone()));
            ops.push(("min", orderable.clone()));
        }
        ops.sort_by_key(|(op, _)| *op);
        for (op, columns) in ops {
            let type_name = format!("{tn}_{op}_fields");
            let mut op_fields = IndexMap::new();
            let mut op_order = IndexMap::new();
            for (name, c) in &columns {
                let scalar = match op {
                    "sum" | "max" | "min" => c.scalar.clone(),
                    _ => "Float".to_owned(),
                };
                op_fields.insert(
                    (*name).clone(),
                    FieldDef::new(*name, TypeRef::named(scalar)),
                );
                op_order.insert(
                    (*name).clone(),
                    InputValueDef::new(*name, TypeRef::named("order_by")),
                );
            }
            self.types.add(TypeDef::Object {
                name: type_name.clone(),
                description: None,
                fields: op_fields,
            });
            self.types.add(TypeDef::Input {
                name: format!("{tn}_{op}_order_by"),
                description: None,
                fields: op_order,
            });
            fields.insert(op.to_owned(), FieldDef::new(op, TypeRef::named(type_name)));
            order_fields.insert(
                op.to_owned(),
                InputValueDef::new(op, TypeRef::named(format!("{tn}_{op}_order_by"))),
            );
        }
        self.types.add(TypeDef::Object {
            name: format!("{tn}_aggregate_fields"),
            description: Some(format!("aggregate fields of \"{}\"", t.name)),
            fields,
        });
        let mut aggregate = IndexMap::new();
        aggregate.insert(
            "aggregate".to_owned(),
            FieldDef::new(
                "aggregate",
                TypeRef::named(format!("{tn}_aggregate_fields")),
            ),
        );
        aggregate.insert(
            "nodes".to_owned(),
            FieldDef::new("nodes", TypeRef::list_of_non_null(tn)),
        );
        self.types.add(TypeDef::Object {
            name: format!("{tn}_aggregate"),
            description: Some(format!("aggregated selection of \"{}\"", t.name)),
            fields: aggregate,
        });
        self.types.add(TypeDef::Input {
            name: format!("{tn}_aggregate_order_by"),
            description: Some(format!("order by aggregate values of table \"{}\"", t.name)),
            fields: order_fields,
        });
    }
}

/// A column stand-in for mapping a function type name to a scalar.
fn pseudo_column(type_name: &str) -> DbColumn {
    DbColumn {
        name: String::new(),
        attnum: 0,
        data_type: type_name.to_owned(),
        type_name: type_name.to_owned(),
        type_schema: "pg_catalog".to_owned(),
        type_kind: "b".to_owned(),
        element_type: None,
        nullable: true,
        default: None,
        generated: false,
        identity: false,
        comment: None,
    }
}
