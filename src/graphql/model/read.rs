//! The read side of a role: the tables it may select, their fields by GraphQL name, and the
//! query root fields.

use super::columns::{scalar_for_column, EnumTables};
use super::*;

/// Pass 1: the tables the role may select, with their visible columns and rules (fields come in
/// [`add_fields`], once every target is known).
pub(super) fn selectable_tables(
    resolved: &Resolved,
    role: &str,
    enums: &EnumTables,
) -> IndexMap<QualifiedTable, RoleTable> {
    let mut tables: IndexMap<QualifiedTable, RoleTable> = IndexMap::new();
    for (name, table) in &resolved.tables {
        if let Some(t) = role_table(table, role, enums) {
            tables.insert(name.clone(), t);
        }
    }
    tables
}

/// What `role` may select of `table` (its fields are added in [`add_fields`]); `None` without
/// a select permission.
pub(super) fn role_table(
    table: &crate::resolve::ResolvedTable,
    role: &str,
    enums: &EnumTables,
) -> Option<RoleTable> {
    let admin = role == ADMIN;
    let name = &table.name;
    let permission = table.permissions.get(role).and_then(|p| p.select.clone());
    if !admin && permission.is_none() {
        return None;
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
        // A column without a GraphQL name (`x y`, `a"b`) is left out unless
        // `custom_column_names` gives it one: no document could select it, and it would
        // make the schema invalid for every client that introspects it.
        if !crate::metadata::types::GraphQLName::is_servable(&field) {
            continue;
        }
        let mut role_column = scalar_for_column(table, column, enums);
        // A cell another parent's rows hide reads as null.
        if permission
            .as_ref()
            .is_some_and(|p| p.cells.contains_key(&column.name))
        {
            role_column.nullable = true;
        }
        columns.insert(field, role_column);
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
    Some(RoleTable {
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
        query_root_fields: permission
            .as_ref()
            .and_then(|p| p.query_root_fields.clone()),
        subscription_root_fields: permission
            .as_ref()
            .and_then(|p| p.subscription_root_fields.clone()),
        cells: permission.map(|p| p.cells).unwrap_or_default(),
    })
}

/// Pass 2: each selectable table's fields: columns, relationships to selectable tables (and
/// their aggregates), computed fields.
pub(super) fn add_fields(
    resolved: &Resolved,
    role: &str,
    tables: &mut IndexMap<QualifiedTable, RoleTable>,
) {
    let admin = role == ADMIN;
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
                    args_type: extra.then(|| format!("{}_args", cf.function.graphql_base_name())),
                    cell: permission
                        .as_ref()
                        .and_then(|p| p.cells.get(&cf.name).cloned()),
                }),
            );
        }
        // Every role that can select the table sees its remote relationships, whatever
        // columns it may read: the join values are read internally.
        for (field, join) in &resolved_table.remote_relationships {
            fields.insert(field.clone(), TableField::RemoteJoin(join.clone()));
        }
        if let Some(t) = tables.get_mut(name) {
            t.fields = fields;
        }
    }
}

/// The query and subscription root fields of the selectable tables, custom names applied and
/// the permission's `query_root_fields` and `subscription_root_fields` respected. `<t>_stream`
/// is a subscription field, for a table with at least one column that can be a cursor.
pub(super) fn root_fields(
    resolved: &Resolved,
    tables: &IndexMap<QualifiedTable, RoleTable>,
) -> (IndexMap<String, RootField>, IndexMap<String, RootField>) {
    let mut query = IndexMap::new();
    let mut subscription = IndexMap::new();
    for (name, t) in tables {
        let Some(resolved_table) = resolved.tables.get(name) else {
            continue;
        };
        let custom = &resolved_table.configuration.custom_root_fields;
        let pick = |c: &Option<crate::metadata::types::GraphQLName>, default: String| {
            c.as_ref().map(|n| n.0.clone()).unwrap_or(default)
        };
        let in_query =
            |f: QueryRootField| t.query_root_fields.as_ref().is_none_or(|l| l.contains(&f));
        let in_subscription = |f: SubscriptionRootField| {
            t.subscription_root_fields
                .as_ref()
                .is_none_or(|l| l.contains(&f))
        };
        let root = |kind| RootField {
            kind,
            table: name.clone(),
        };
        let mut both =
            |field: String, kind: RootKind, q: QueryRootField, s: SubscriptionRootField| {
                if in_query(q) {
                    query.insert(field.clone(), root(kind.clone()));
                }
                if in_subscription(s) {
                    subscription.insert(field, root(kind));
                }
            };
        both(
            pick(&custom.select, t.type_name.clone()),
            RootKind::Select,
            QueryRootField::Select,
            SubscriptionRootField::Select,
        );
        if t.primary_key.is_some() {
            both(
                pick(&custom.select_by_pk, format!("{}_by_pk", t.type_name)),
                RootKind::SelectByPk,
                QueryRootField::SelectByPk,
                SubscriptionRootField::SelectByPk,
            );
        }
        if t.aggregations {
            both(
                pick(
                    &custom.select_aggregate,
                    format!("{}_aggregate", t.type_name),
                ),
                RootKind::Aggregate,
                QueryRootField::SelectAggregate,
                SubscriptionRootField::SelectAggregate,
            );
        }
        if in_subscription(SubscriptionRootField::SelectStream)
            && t.columns.values().any(|c| c.cursor)
        {
            subscription.insert(
                pick(&custom.select_stream, format!("{}_stream", t.type_name)),
                root(RootKind::Stream),
            );
        }
    }
    (query, subscription)
}
