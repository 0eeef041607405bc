//! Logical models and native queries resolved against the database's answers
//! ([`crate::db_model::Probes`]) and the rest of the metadata (`docs/native-queries.md`): a
//! model's scalar types exist and the models it nests are there; a native query's model is
//! there, its arguments' types exist, Postgres accepts its code and each of the model's scalar
//! fields comes back with its declared type; no root field clashes. What fails is reported
//! inconsistent, with the error the operation that introduced it answers
//! ([`Resolution::deferred`]).

use super::*;
use crate::db_model::{PgType, Probes};
use crate::metadata::error::Missing;
use crate::metadata::types::{LogicalModelEntry, NativeQueryEntry};
use crate::sql::template::Template;

/// A scalar field of a logical model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelScalar {
    pub name: String,
    /// The type as declared (`integer`), for messages.
    pub declared: String,
    /// The declared type's OID, which the query's column must have.
    pub oid: u32,
    /// `pg_type.typname`, for the GraphQL scalar.
    pub type_name: String,
    pub cast: PgType,
    pub nullable: bool,
    pub description: Option<String>,
}

/// A logical model whose types exist.
#[derive(Debug, Clone)]
pub struct ResolvedModel {
    pub name: String,
    pub description: Option<String>,
    /// Scalar fields in declaration order.
    pub scalars: Vec<ModelScalar>,
    /// The model as a relation whose columns are its scalar fields, with each role's select
    /// permission resolved as a table's: what the GraphQL layer reads native queries' rows by.
    pub table: std::sync::Arc<ResolvedTable>,
}

/// The name the relation of logical model `name` goes by: no schema, so no tracked table can
/// have it.
pub fn model_relation(name: &str) -> QualifiedTable {
    QualifiedTable::new("", name)
}

/// An argument of a native query, in the order its parameters are numbered.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryArgument {
    pub name: String,
    pub type_name: String,
    pub cast: PgType,
    pub nullable: bool,
    pub description: Option<String>,
}

/// A native query Postgres accepts for its model.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedNativeQuery {
    pub root_field: String,
    pub template: Template,
    pub arguments: Vec<QueryArgument>,
    /// The model of its rows.
    pub returns: String,
    pub description: Option<String>,
    /// Its relationships, object ones first, each list by name.
    pub relationships: Vec<QueryRelationship>,
}

impl ResolvedNativeQuery {
    /// The GraphQL type of its rows: its model's, or, when it has relationships, its own
    /// (named after the root field) that adds them.
    pub fn row_type(&self) -> &str {
        match self.relationships.is_empty() {
            true => &self.returns,
            false => &self.root_field,
        }
    }
}

/// A relationship from a native query's rows to a table's or another native query's.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryRelationship {
    pub name: String,
    pub kind: RelationshipKind,
    pub target: QueryTarget,
    /// (field of this query's model, the target's field or column), in the order written.
    pub mapping: Vec<(String, String)>,
}

/// What a native query relationship reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryTarget {
    Table(QualifiedTable),
    /// A native query, by root field name.
    NativeQuery(String),
}

/// The validation statement of `query`, when its code reads, its model exists and every
/// argument's type is known (otherwise the resolver reports what is missing).
pub fn statement_of(
    query: &NativeQueryEntry,
    metadata: &Metadata,
    probes: &Probes,
) -> Option<String> {
    let template = Template::parse(&query.code).ok()?;
    let model: &LogicalModelEntry = metadata
        .logical_models
        .iter()
        .find(|m| m.name == query.returns)?;
    let types: Vec<&str> = template
        .arguments()
        .iter()
        .map(|a| {
            let declared = query.arguments.get(*a)?;
            let probed = probes.types.get(&declared.arg_type)?.as_ref()?;
            Some(probed.formatted.as_str())
        })
        .collect::<Option<_>>()?;
    let fields: Vec<&str> = model
        .fields
        .iter()
        .filter(|f| f.field_type.scalar().is_some())
        .map(|f| f.name.0.as_str())
        .collect();
    Some(template.validation_statement(&types, &fields))
}

/// Type names every schema has.
const BUILT_IN_TYPES: [&str; 9] = [
    "query_root",
    "mutation_root",
    "subscription_root",
    "order_by",
    "String",
    "Int",
    "Float",
    "Boolean",
    "ID",
];

/// The definition inconsistencies report: the export entry.
fn definition<T: serde::Serialize>(entry: &T) -> Value {
    serde_json::to_value(entry).unwrap_or(Value::Null)
}

/// Resolves every logical model, then every native query, in metadata order.
pub(super) fn resolve_all(metadata: &Metadata, db: &DbModel, cache: &mut Resolution) {
    if metadata.logical_models.is_empty() && metadata.native_queries.is_empty() {
        return;
    }
    // Models add no root field: what tables, actions and functions take is read once.
    let super::functions::Taken {
        fields: mut taken,
        types,
    } = super::functions::taken_names(&cache.resolved);
    for model in &metadata.logical_models {
        let result = match types.contains(&model.name.0) {
            true => Err(conflict("logical model", &model.name.0, &model.name.0)),
            false => check_model(model, metadata, &db.probes, &cache.resolved),
        };
        match result {
            Ok(resolved) => {
                // A role named only by a model's permission has a schema of its own too.
                (cache.resolved.roles).extend(resolved.table.permissions.keys().cloned());
                cache.resolved.logical_models.push(resolved)
            }
            Err(err) => report(
                cache,
                ObjectId::LogicalModel(model.name.0.clone()),
                "logical_model",
                definition(model),
                err,
            ),
        }
    }
    // The types the models and queries generate, and the schema's own, which the row type
    // of a query with relationships must not be named like.
    let mut generated: std::collections::HashSet<String> =
        BUILT_IN_TYPES.iter().map(|t| (*t).to_owned()).collect();
    for m in &metadata.logical_models {
        let m = &m.name.0;
        generated.extend([
            m.clone(),
            format!("{m}_bool_exp"),
            format!("{m}_order_by"),
            format!("{m}_enum_name"),
        ]);
    }
    generated.extend(
        (metadata.native_queries.iter()).map(|q| format!("{}_arguments", q.root_field_name)),
    );
    for query in &metadata.native_queries {
        let arguments = format!("{}_arguments", query.root_field_name);
        let name = &query.root_field_name.0;
        // With relationships its rows have a type of their own, named after it.
        let related =
            !query.object_relationships.is_empty() || !query.array_relationships.is_empty();
        let own_type = related && (types.contains(name) || generated.contains(name));
        let result = match (types.contains(&arguments), own_type) {
            (true, _) => Err(conflict("native query", name, &arguments)),
            (false, true) => Err(conflict("native query", name, name)),
            (false, false) => check_query(query, metadata, db, cache, &taken),
        };
        match result {
            Ok(resolved) => {
                taken.insert(resolved.root_field.clone());
                cache.resolved.native_queries.push(resolved);
            }
            Err(err) => report(
                cache,
                ObjectId::NativeQuery(query.root_field_name.0.clone()),
                "native_query",
                definition(query),
                err,
            ),
        }
    }
}

/// Reports `object` inconsistent with `err`: its message (prefixed as the error's reason
/// reads) as the reason, the whole error for the operation that introduced it.
fn report(
    cache: &mut Resolution,
    object: ObjectId,
    kind: &'static str,
    definition: Value,
    err: MetadataError,
) {
    let reason = match err.code {
        // The operation's text names the model as the request did; the report, as a build
        // finds it gone.
        Code::NotFound
            if kind == "native_query"
                && err.message == model_missing(returned(&definition)).message =>
        {
            format!(
                "The logical model {} could not be found",
                returned(&definition)
            )
        }
        Code::ValidationFailed => {
            let detail = err
                .internal
                .as_ref()
                .and_then(|i| i["error"]["message"].as_str())
                .unwrap_or_default();
            format!("{}: {detail}", err.message)
        }
        _ => err.message.clone(),
    };
    cache.inconsistencies.push(Inconsistency {
        object: object.clone(),
        kind,
        definition,
        reason,
        conflict: false,
    });
    cache.deferred.push((object, err));
}

/// The model a native query's definition returns.
fn returned(definition: &Value) -> &str {
    definition["returns"].as_str().unwrap_or_default()
}

fn model_missing(name: &str) -> MetadataError {
    MetadataError::new(
        Code::NotFound,
        JsonPath::args(),
        format!("Logical model \"{name}\" not found."),
    )
    .with_missing(Missing::Metadata)
}

/// `<what> "<name>" conflicts with existing field or type "<taken>"`.
fn conflict(what: &str, name: &str, taken: &str) -> MetadataError {
    MetadataError::new(
        Code::ConstraintViolation,
        JsonPath::args(),
        format!("{what} \"{name}\" conflicts with existing field or type \"{taken}\""),
    )
}

fn type_missing(name: &str) -> MetadataError {
    MetadataError::new(
        Code::NotExists,
        JsonPath::args(),
        format!("type \"{name}\" does not exist"),
    )
    .with_missing(Missing::DatabaseObject)
}

fn check_model(
    model: &LogicalModelEntry,
    metadata: &Metadata,
    probes: &Probes,
    resolved: &Resolved,
) -> Result<ResolvedModel, MetadataError> {
    let mut scalars = Vec::new();
    let mut columns = Vec::new();
    for field in &model.fields {
        match &field.field_type {
            LogicalModelType::Scalar { scalar, nullable } => {
                let probed = probes
                    .types
                    .get(scalar)
                    .and_then(Option::as_ref)
                    .ok_or_else(|| type_missing(scalar))?;
                let attnum = i16::try_from(columns.len() + 1).unwrap_or(i16::MAX);
                columns.push(probed.column(&field.name.0, attnum, *nullable));
                scalars.push(ModelScalar {
                    name: field.name.0.clone(),
                    declared: scalar.clone(),
                    oid: probed.oid,
                    type_name: probed.name.clone(),
                    cast: PgType::from_catalog(
                        &probed.formatted,
                        &probed.schema,
                        &probed.name,
                        None,
                    ),
                    nullable: *nullable,
                    description: field.description.clone(),
                });
            }
            nested => {
                let target = nested.model().unwrap_or_default();
                if !metadata.logical_models.iter().any(|m| m.name.0 == target) {
                    return Err(model_missing(target));
                }
            }
        }
    }
    let relation = model_relation(&model.name.0);
    let db_table = crate::db_model::DbTable {
        oid: 0,
        schema: String::new(),
        name: model.name.0.clone(),
        // Neither a table nor a view: the rows come from SQL that may read the session.
        kind: "q".to_owned(),
        comment: model.description.clone(),
        columns,
        constraints: Vec::new(),
        updatable_bits: 0,
        row_security: false,
        parents: Vec::new(),
        reads: None,
    };
    let mut table = ResolvedTable {
        name: relation.clone(),
        db: std::sync::Arc::new(db_table),
        enum_values: None,
        configuration: TableConfig::default(),
        relationships: IndexMap::new(),
        computed_fields: IndexMap::new(),
        permissions: IndexMap::new(),
        reads: BTreeSet::new(),
        remote_relationships: IndexMap::new(),
    };
    // Filters are checked as a table's, `_exists` reaching the tracked tables.
    let mut view = Resolved {
        tables: resolved.tables.clone(),
        ..Resolved::default()
    };
    view.tables
        .insert(relation.clone(), std::sync::Arc::new(table.clone()));
    for p in &model.select_permissions {
        let rules = json!({"columns": p.permission.columns, "filter": p.permission.filter});
        let checked = check_permission(&view, &relation, &p.role.0, PermissionKind::Select, &rules)
            .map_err(|e| e.under(&JsonPath::args().key("permission")))?;
        let select = SelectRule {
            columns: p.permission.columns.clone(),
            computed_fields: Vec::new(),
            filter: checked.filter.unwrap_or(BoolExp::And(Vec::new())),
            limit: p.permission.limit,
            allow_aggregations: false,
            query_root_fields: None,
            subscription_root_fields: None,
            cells: IndexMap::new(),
        };
        table.permissions.insert(
            p.role.0.clone(),
            RolePermissions {
                select: Some(select),
                ..RolePermissions::default()
            },
        );
    }
    Ok(ResolvedModel {
        name: model.name.0.clone(),
        description: model.description.clone(),
        scalars,
        table: std::sync::Arc::new(table),
    })
}

fn check_query(
    query: &NativeQueryEntry,
    metadata: &Metadata,
    db: &DbModel,
    cache: &Resolution,
    taken: &std::collections::HashSet<String>,
) -> Result<ResolvedNativeQuery, MetadataError> {
    let name = &query.root_field_name.0;
    let model = &query.returns.0;
    let Some(resolved_model) = cache
        .resolved
        .logical_models
        .iter()
        .find(|m| &m.name == model)
    else {
        return Err(model_missing(model));
    };
    let template = Template::parse(&query.code)
        .map_err(|e| MetadataError::new(Code::ValidationFailed, JsonPath::args(), e.to_string()))?;
    let mut arguments = Vec::new();
    for arg in template.arguments() {
        let Some(declared) = query.arguments.get(arg) else {
            continue;
        };
        let probed = db
            .probes
            .types
            .get(&declared.arg_type)
            .and_then(Option::as_ref)
            .ok_or_else(|| type_missing(&declared.arg_type))?;
        arguments.push(QueryArgument {
            name: arg.to_owned(),
            type_name: probed.name.clone(),
            cast: PgType::from_catalog(&probed.formatted, &probed.schema, &probed.name, None),
            nullable: declared.nullable,
            description: declared.description.clone(),
        });
    }
    let failed = |message: String, status: Option<&str>| {
        let mut error = serde_json::Map::new();
        error.insert("message".into(), Value::String(message));
        if let Some(code) = status {
            error.insert("status_code".into(), Value::String(code.to_owned()));
        }
        MetadataError::new(
            Code::ValidationFailed,
            JsonPath::args(),
            "Failed to validate query",
        )
        .with_internal(json!({"error": Value::Object(error)}))
    };
    let statement = statement_of(query, metadata, &db.probes)
        .ok_or_else(|| failed("the query could not be described".to_owned(), None))?;
    let columns = match db.probes.statements.get(&statement) {
        Some(Ok(columns)) => columns,
        Some(Err(refusal)) => return Err(failed(refusal.message.clone(), refusal.code.as_deref())),
        None => return Err(failed("the query was not described".to_owned(), None)),
    };
    for field in &resolved_model.scalars {
        let actual = columns.iter().find(|c| c.name == field.name);
        if let Some(actual) = actual {
            if field.oid != actual.oid {
                return Err(failed(
                    format!(
                        "Return column '{}' has a type mismatch. The expected type is '{}', but the actual type is '{}'.",
                        field.name, field.declared, actual.type_name
                    ),
                    None,
                ));
            }
        }
    }
    if taken.contains(name) {
        return Err(conflict("native query", name, name));
    }
    let relationships = check_relationships(query, metadata, cache)?;
    Ok(ResolvedNativeQuery {
        root_field: name.clone(),
        template,
        arguments,
        returns: model.clone(),
        description: query.description.clone(),
        relationships,
    })
}

fn column_missing(column: &str) -> MetadataError {
    MetadataError::new(
        Code::NotExists,
        JsonPath::args(),
        format!("column \"{column}\" does not exist"),
    )
}

/// The scalar fields of logical model `name`, when it is tracked.
fn scalar_fields<'m>(metadata: &'m Metadata, name: &str) -> Option<Vec<&'m str>> {
    let model = metadata.logical_models.iter().find(|m| m.name.0 == name)?;
    Some(
        (model.fields.iter())
            .filter(|f| f.field_type.scalar().is_some())
            .map(|f| f.name.0.as_str())
            .collect(),
    )
}

/// The relationships of `query` checked against its model and their targets
/// (`docs/native-queries.md`, "Relationships"). A target native query only has to be tracked:
/// one that is inconsistent just leaves the relationship out of the schema.
fn check_relationships(
    query: &NativeQueryEntry,
    metadata: &Metadata,
    cache: &Resolution,
) -> Result<Vec<QueryRelationship>, MetadataError> {
    let q = &query.root_field_name.0;
    let m = &query.returns.0;
    let Some(model) = metadata.logical_models.iter().find(|e| &e.name.0 == m) else {
        return Err(model_missing(m));
    };
    let lists = [
        (RelationshipKind::Object, &query.object_relationships),
        (RelationshipKind::Array, &query.array_relationships),
    ];
    let mut out = Vec::new();
    for (kind, list) in lists {
        for r in list {
            let name = &r.name.0;
            let field = model.fields.iter().find(|f| &f.name.0 == name);
            if field.is_some_and(|f| f.field_type.scalar().is_some()) {
                return Err(MetadataError::new(
                    Code::AlreadyExists,
                    JsonPath::args(),
                    format!("field \"{name}\" of native query \"{q}\" already exists"),
                ));
            }
            let (target, target_fields, target_model) =
                match (&r.using.remote_native_query, &r.using.remote_table) {
                    (Some(target), _) => {
                        let Some(entry) = (metadata.native_queries.iter())
                            .find(|n| &n.root_field_name.0 == target)
                        else {
                            return Err(MetadataError::new(
                                Code::NotFound,
                                JsonPath::args(),
                                format!(
                                    "Native query \"{target}\" not found in source \"default\"."
                                ),
                            )
                            .with_missing(Missing::Metadata));
                        };
                        let fields = scalar_fields(metadata, &entry.returns.0)
                            .ok_or_else(|| model_missing(&entry.returns.0))?;
                        let fields = fields.into_iter().map(str::to_owned).collect::<Vec<_>>();
                        let target = QueryTarget::NativeQuery(target.clone());
                        (target, fields, Some(entry.returns.0.clone()))
                    }
                    (None, Some(table)) => {
                        let Some(resolved) = cache.resolved.tables.get(table) else {
                            return Err(crate::metadata::error::not_exists_in_metadata(
                                JsonPath::args(),
                                format!("table \"{table}\" does not exist"),
                            ));
                        };
                        let columns = resolved.db.columns.iter().map(|c| c.name.clone()).collect();
                        (QueryTarget::Table(table.clone()), columns, None)
                    }
                    // One target each is checked by the operation.
                    (None, None) => continue,
                };
            if let Some(f) = field {
                let matches = match (&f.field_type, kind) {
                    (LogicalModelType::Model { model, .. }, RelationshipKind::Object)
                    | (LogicalModelType::Array { model, .. }, RelationshipKind::Array) => {
                        target_model.as_deref() == Some(model.as_str())
                    }
                    _ => false,
                };
                if !matches {
                    return Err(MetadataError::new(
                        Code::ValidationFailed,
                        JsonPath::args(),
                        format!(
                            "relationship \"{name}\" does not match field \"{name}\" of logical model \"{m}\""
                        ),
                    ));
                }
            }
            let local = model
                .fields
                .iter()
                .filter(|f| f.field_type.scalar().is_some());
            let mut mapping = Vec::new();
            for (from, to) in &r.using.column_mapping {
                if !local.clone().any(|f| &f.name.0 == from) {
                    return Err(column_missing(from));
                }
                if !target_fields.iter().any(|c| c == to) {
                    return Err(column_missing(to));
                }
                mapping.push((from.clone(), to.clone()));
            }
            out.push(QueryRelationship {
                name: name.clone(),
                kind,
                target,
                mapping,
            });
        }
    }
    Ok(out)
}
