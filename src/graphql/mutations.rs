//! The write side of a role's model: which tables it may insert into, update and delete from,
//! with which columns, presets and checks, and the GraphQL types and root fields that follow
//! (`graphql-api.md` §2, §3, §6). Pure.

use super::model::{scalar_for_column, RoleColumn, RoleRelationship, RoleTable, TypeBuilder};
use super::types::*;
use crate::metadata::types::{Columns, GraphQLName, QualifiedTable};
use crate::schema::{is_session_variable, RelationshipKind, Resolved, ResolvedTable};
use indexmap::IndexMap;
use serde_json::{Map, Value};

/// Where a preset's value comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum PresetValue {
    /// A literal.
    Static(Value),
    /// A session variable (lower-case name).
    Session(String),
    /// `now()`.
    Now,
}

/// A column preset of an insert or update permission.
#[derive(Debug, Clone, PartialEq)]
pub struct Preset {
    /// Postgres column.
    pub column: String,
    /// Its type, for the cast.
    pub pg_type: crate::sql::PgType,
    /// The value.
    pub value: PresetValue,
}

/// Insert rules of a role on a table.
#[derive(Debug, Clone)]
pub struct RoleInsert {
    /// Insertable columns by GraphQL name (presets excluded).
    pub columns: IndexMap<String, RoleColumn>,
    /// Presets.
    pub presets: Vec<Preset>,
    /// Check on every inserted row (`None`: none, admin).
    pub check: Option<Value>,
}

/// Update rules of a role on a table.
#[derive(Debug, Clone)]
pub struct RoleUpdate {
    /// Updatable columns by GraphQL name (presets excluded).
    pub columns: IndexMap<String, RoleColumn>,
    /// Presets.
    pub presets: Vec<Preset>,
    /// Which rows may be updated.
    pub filter: Option<Value>,
    /// Post-condition on updated rows.
    pub check: Option<Value>,
}

/// What a role may write to one table.
#[derive(Debug, Clone)]
pub struct RoleWrite {
    /// Table.
    pub name: QualifiedTable,
    /// GraphQL base name.
    pub type_name: String,
    /// Insert rules (when insert is allowed and Postgres can insert).
    pub insert: Option<RoleInsert>,
    /// Update rules.
    pub update: Option<RoleUpdate>,
    /// Delete filter (`Some(None)`: delete without filter, admin).
    pub delete: Option<Option<Value>>,
    /// Unique and primary-key constraints (GraphQL-valid names).
    pub constraints: Vec<String>,
    /// Primary-key columns (GraphQL name, column) when the `_by_pk` fields may exist.
    pub primary_key: Option<Vec<(String, RoleColumn)>>,
    /// Relationships usable in nested inserts (targets the role may insert into).
    pub insert_relationships: IndexMap<String, RoleRelationship>,
    /// The role may select from this table (returning, `_one`, `_by_pk`).
    pub selectable: bool,
}

/// What a mutation root field does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MutationKind {
    /// `insert_<t>`.
    Insert,
    /// `insert_<t>_one`.
    InsertOne,
    /// `update_<t>`.
    Update,
    /// `update_<t>_by_pk`.
    UpdateByPk,
    /// `delete_<t>`.
    Delete,
    /// `delete_<t>_by_pk`.
    DeleteByPk,
}

/// A mutation root field.
#[derive(Debug, Clone)]
pub struct MutationRoot {
    /// Kind.
    pub kind: MutationKind,
    /// Table.
    pub table: QualifiedTable,
}

fn presets(table: &ResolvedTable, set: &Map<String, Value>) -> Vec<Preset> {
    set.iter()
        .filter_map(|(column, value)| {
            let c = table.db.column(column)?;
            let value = match value {
                Value::String(s) if is_session_variable(s) => {
                    PresetValue::Session(s.to_ascii_lowercase())
                }
                Value::String(s) if s.eq_ignore_ascii_case("now()") => PresetValue::Now,
                other => PresetValue::Static(other.clone()),
            };
            Some(Preset {
                column: column.clone(),
                pg_type: c.pg_type(),
                value,
            })
        })
        .collect()
}

/// Writable columns by GraphQL name: allowed by `columns`, not generated, not preset.
fn writable_columns(
    table: &ResolvedTable,
    allowed: &Columns,
    presets: &[Preset],
    enums: &super::model::EnumTables,
) -> IndexMap<String, RoleColumn> {
    table
        .db
        .columns
        .iter()
        .filter(|c| {
            allowed.contains(&c.name) && !c.generated && !presets.iter().any(|p| p.column == c.name)
        })
        .map(|c| {
            let field = table
                .configuration
                .custom_column_names
                .get(&c.name)
                .map(|n| n.0.clone())
                .unwrap_or_else(|| c.name.clone());
            (field, scalar_for_column(table, c, enums))
        })
        .collect()
}

/// Builds the write side of a role. `backend_flagged`: the request is trusted backend-only.
pub fn build(
    resolved: &Resolved,
    role: &str,
    selectable: &IndexMap<QualifiedTable, RoleTable>,
    enums: &super::model::EnumTables,
    backend_flagged: bool,
) -> (
    IndexMap<QualifiedTable, RoleWrite>,
    IndexMap<String, MutationRoot>,
) {
    let admin = role == super::model::ADMIN;
    let mut writes: IndexMap<QualifiedTable, RoleWrite> = IndexMap::new();
    for (name, table) in &resolved.tables {
        let perms = table.permissions.get(role);
        let insert = if admin {
            table.db.is_insertable().then(|| RoleInsert {
                columns: writable_columns(table, &Columns::All, &[], enums),
                presets: Vec::new(),
                check: None,
            })
        } else {
            perms
                .and_then(|p| p.insert.as_ref())
                .filter(|p| {
                    p.backend_only.unwrap_or(false) == backend_flagged && table.db.is_insertable()
                })
                .map(|p| {
                    let presets = presets(table, &p.set);
                    let allowed = p.columns.clone().unwrap_or(Columns::All);
                    RoleInsert {
                        columns: writable_columns(table, &allowed, &presets, enums),
                        presets,
                        check: Some(p.check.clone()),
                    }
                })
        };
        let update = if admin {
            table.db.is_updatable().then(|| RoleUpdate {
                columns: writable_columns(table, &Columns::All, &[], enums),
                presets: Vec::new(),
                filter: None,
                check: None,
            })
        } else {
            perms
                .and_then(|p| p.update.as_ref())
                .filter(|_| table.db.is_updatable())
                .map(|p| {
                    let presets = presets(table, &p.set);
                    RoleUpdate {
                        columns: writable_columns(table, &p.columns, &presets, enums),
                        presets,
                        filter: Some(p.filter.clone()),
                        check: p.check.clone(),
                    }
                })
        };
        let delete = if admin {
            table.db.is_deletable().then_some(None)
        } else {
            perms
                .and_then(|p| p.delete.as_ref())
                .filter(|_| table.db.is_deletable())
                .map(|p| Some(p.filter.clone()))
        };
        if insert.is_none() && update.is_none() && delete.is_none() {
            continue;
        }
        let constraints = table
            .db
            .constraints
            .iter()
            .filter(|c| (c.kind == "p" || c.kind == "u") && GraphQLName::is_valid(&c.name))
            .map(|c| c.name.clone())
            .collect();
        let select = selectable.get(name);
        let primary_key = select.and_then(|s| {
            s.primary_key.as_ref().map(|pk| {
                pk.iter()
                    .filter_map(|f| s.columns.get(f).map(|c| (f.clone(), c.clone())))
                    .collect()
            })
        });
        writes.insert(
            name.clone(),
            RoleWrite {
                name: name.clone(),
                type_name: name.graphql_base_name(),
                insert,
                update,
                delete,
                constraints,
                primary_key,
                insert_relationships: IndexMap::new(),
                selectable: select.is_some(),
            },
        );
    }
    // Nested inserts may follow relationships toward tables the role can insert into.
    let insertable: Vec<QualifiedTable> = writes
        .values()
        .filter(|w| w.insert.is_some())
        .map(|w| w.name.clone())
        .collect();
    for w in writes.values_mut() {
        let Some(table) = resolved.tables.get(&w.name) else {
            continue;
        };
        w.insert_relationships = table
            .relationships
            .values()
            .filter(|r| insertable.contains(&r.target))
            .map(|r| {
                (
                    r.name.clone(),
                    RoleRelationship {
                        name: r.name.clone(),
                        kind: r.kind,
                        target: r.target.clone(),
                        mapping: r.mapping.clone(),
                    },
                )
            })
            .collect();
    }
    let mut roots = IndexMap::new();
    for (name, w) in &writes {
        let Some(table) = resolved.tables.get(name) else {
            continue;
        };
        let custom = &table.configuration.custom_root_fields;
        let pick = |c: &Option<GraphQLName>, default: String| {
            c.as_ref().map(|n| n.0.clone()).unwrap_or(default)
        };
        let t = &w.type_name;
        let by_pk = w.primary_key.is_some() && !table.db.is_view();
        let mut add = |field: String, kind| {
            roots.insert(
                field,
                MutationRoot {
                    kind,
                    table: name.clone(),
                },
            );
        };
        if w.insert.is_some() {
            add(
                pick(&custom.insert, format!("insert_{t}")),
                MutationKind::Insert,
            );
            if w.selectable {
                add(
                    pick(&custom.insert_one, format!("insert_{t}_one")),
                    MutationKind::InsertOne,
                );
            }
        }
        if let Some(u) = &w.update {
            if !u.columns.is_empty() {
                add(
                    pick(&custom.update, format!("update_{t}")),
                    MutationKind::Update,
                );
                if by_pk {
                    add(
                        pick(&custom.update_by_pk, format!("update_{t}_by_pk")),
                        MutationKind::UpdateByPk,
                    );
                }
            }
        }
        if w.delete.is_some() {
            add(
                pick(&custom.delete, format!("delete_{t}")),
                MutationKind::Delete,
            );
            if by_pk {
                add(
                    pick(&custom.delete_by_pk, format!("delete_{t}_by_pk")),
                    MutationKind::DeleteByPk,
                );
            }
        }
    }
    (writes, roots)
}

impl TypeBuilder<'_> {
    /// Adds `mutation_root` and the write-side types; returns whether a mutation root exists.
    pub(super) fn mutation_types(
        &mut self,
        writes: &IndexMap<QualifiedTable, RoleWrite>,
        roots: &IndexMap<String, MutationRoot>,
    ) -> bool {
        if roots.is_empty() {
            return false;
        }
        for w in writes.values() {
            self.write_types(w, writes);
        }
        let mut fields = IndexMap::new();
        for (field, root) in roots {
            let Some(w) = writes.get(&root.table) else {
                continue;
            };
            let t = &w.type_name;
            let on_conflict = w.update.is_some() && !w.constraints.is_empty();
            let def = match root.kind {
                MutationKind::Insert | MutationKind::InsertOne => {
                    let (arg, ty, result) = if root.kind == MutationKind::Insert {
                        (
                            "objects",
                            TypeRef::list_of_non_null(format!("{t}_insert_input")),
                            TypeRef::named(format!("{t}_mutation_response")),
                        )
                    } else {
                        (
                            "object",
                            TypeRef::non_null(format!("{t}_insert_input")),
                            TypeRef::named(t),
                        )
                    };
                    let mut def = FieldDef::new(field, result)
                        .arg(InputValueDef::new(arg, ty))
                        .describe(format!("insert data into the table: \"{}\"", w.name));
                    if on_conflict {
                        def = def.arg(InputValueDef::new(
                            "on_conflict",
                            TypeRef::named(format!("{t}_on_conflict")),
                        ));
                    }
                    def
                }
                MutationKind::Update | MutationKind::UpdateByPk => {
                    let result = if root.kind == MutationKind::Update {
                        TypeRef::named(format!("{t}_mutation_response"))
                    } else {
                        TypeRef::named(t)
                    };
                    let mut def = FieldDef::new(field, result)
                        .describe(format!("update data of the table: \"{}\"", w.name));
                    for (op, ty) in self.update_operators(w) {
                        def = def.arg(InputValueDef::new(op, TypeRef::named(ty)));
                    }
                    if root.kind == MutationKind::Update {
                        def.arg(InputValueDef::new(
                            "where",
                            TypeRef::non_null(format!("{t}_bool_exp")),
                        ))
                    } else {
                        def.arg(InputValueDef::new(
                            "pk_columns",
                            TypeRef::non_null(format!("{t}_pk_columns_input")),
                        ))
                    }
                }
                MutationKind::Delete => {
                    FieldDef::new(field, TypeRef::named(format!("{t}_mutation_response")))
                        .arg(InputValueDef::new(
                            "where",
                            TypeRef::non_null(format!("{t}_bool_exp")),
                        ))
                        .describe(format!("delete data from the table: \"{}\"", w.name))
                }
                MutationKind::DeleteByPk => {
                    let mut def = FieldDef::new(field, TypeRef::named(t))
                        .describe(format!("delete single row from the table: \"{}\"", w.name));
                    for (name, c) in w.primary_key.iter().flatten() {
                        def = def.arg(InputValueDef::new(name, TypeRef::non_null(&c.scalar)));
                    }
                    def
                }
            };
            fields.insert(field.clone(), def);
        }
        self.types.add(TypeDef::Object {
            name: "mutation_root".to_owned(),
            description: Some("mutation root".to_owned()),
            fields,
        });
        true
    }

    /// `(argument, input type)` of the update operators a table offers.
    fn update_operators(&self, w: &RoleWrite) -> Vec<(&'static str, String)> {
        let t = &w.type_name;
        let Some(u) = &w.update else {
            return Vec::new();
        };
        let mut ops = Vec::new();
        let jsonb = u.columns.values().any(|c| c.scalar == "jsonb");
        if jsonb {
            ops.push(("_append", format!("{t}_append_input")));
            ops.push(("_delete_at_path", format!("{t}_delete_at_path_input")));
            ops.push(("_delete_elem", format!("{t}_delete_elem_input")));
            ops.push(("_delete_key", format!("{t}_delete_key_input")));
        }
        if u.columns.values().any(|c| c.numeric) {
            ops.push(("_inc", format!("{t}_inc_input")));
        }
        if jsonb {
            ops.push(("_prepend", format!("{t}_prepend_input")));
        }
        ops.push(("_set", format!("{t}_set_input")));
        ops
    }

    fn input(&mut self, name: String, fields: Vec<InputValueDef>) {
        let fields = fields.into_iter().map(|f| (f.name.clone(), f)).collect();
        self.types.add(TypeDef::Input {
            name,
            description: None,
            fields,
        });
    }

    fn write_types(&mut self, w: &RoleWrite, writes: &IndexMap<QualifiedTable, RoleWrite>) {
        let t = w.type_name.clone();
        let mut response = IndexMap::new();
        response.insert(
            "affected_rows".to_owned(),
            FieldDef::new("affected_rows", TypeRef::non_null("Int"))
                .describe("number of rows affected by the mutation"),
        );
        if w.selectable {
            response.insert(
                "returning".to_owned(),
                FieldDef::new("returning", TypeRef::list_of_non_null(&t))
                    .describe("data from the rows affected by the mutation"),
            );
        }
        self.types.add(TypeDef::Object {
            name: format!("{t}_mutation_response"),
            description: Some(format!(
                "response of any mutation on the table \"{}\"",
                w.name
            )),
            fields: response,
        });
        if self.types.get(&format!("{t}_bool_exp")).is_none() {
            // Not selectable: only the connectives.
            let be = format!("{t}_bool_exp");
            self.input(
                be.clone(),
                vec![
                    InputValueDef::new("_and", TypeRef::nullable_list_of_non_null(&be)),
                    InputValueDef::new("_not", TypeRef::named(&be)),
                    InputValueDef::new("_or", TypeRef::nullable_list_of_non_null(&be)),
                ],
            );
        }
        let on_conflict = w.update.is_some() && !w.constraints.is_empty();
        if let Some(insert) = &w.insert {
            let mut fields = Vec::new();
            for (name, c) in &insert.columns {
                self.scalar_type(&c.scalar);
                fields.push(InputValueDef::new(name, TypeRef::named(&c.scalar)));
            }
            for (name, r) in &w.insert_relationships {
                let Some(target) = writes.get(&r.target) else {
                    continue;
                };
                let suffix = if r.kind == RelationshipKind::Object {
                    "obj_rel_insert_input"
                } else {
                    "arr_rel_insert_input"
                };
                fields.push(InputValueDef::new(
                    name,
                    TypeRef::named(format!("{}_{suffix}", target.type_name)),
                ));
            }
            self.input(format!("{t}_insert_input"), fields);
            let mut obj = vec![InputValueDef::new(
                "data",
                TypeRef::non_null(format!("{t}_insert_input")),
            )];
            let mut arr = vec![InputValueDef::new(
                "data",
                TypeRef::list_of_non_null(format!("{t}_insert_input")),
            )];
            if on_conflict {
                obj.push(InputValueDef::new(
                    "on_conflict",
                    TypeRef::named(format!("{t}_on_conflict")),
                ));
                arr.push(InputValueDef::new(
                    "on_conflict",
                    TypeRef::named(format!("{t}_on_conflict")),
                ));
            }
            self.input(format!("{t}_obj_rel_insert_input"), obj);
            self.input(format!("{t}_arr_rel_insert_input"), arr);
        }
        if on_conflict {
            self.types.add(TypeDef::Enum {
                name: format!("{t}_constraint"),
                description: Some(format!(
                    "unique or primary key constraints on table \"{}\"",
                    w.name
                )),
                values: w
                    .constraints
                    .iter()
                    .map(|c| EnumValueDef {
                        name: c.clone(),
                        description: None,
                    })
                    .collect(),
            });
            let columns: Vec<String> = w
                .update
                .as_ref()
                .map(|u| u.columns.keys().cloned().collect())
                .unwrap_or_default();
            let values = if columns.is_empty() {
                vec!["_PLACEHOLDER".to_owned()]
            } else {
                columns
            };
            self.types.add(TypeDef::Enum {
                name: format!("{t}_update_column"),
                description: Some(format!("update columns of table \"{}\"", w.name)),
                values: values
                    .into_iter()
                    .map(|c| EnumValueDef {
                        name: c,
                        description: None,
                    })
                    .collect(),
            });
            let mut update_columns = InputValueDef::new(
                "update_columns",
                TypeRef::list_of_non_null(format!("{t}_update_column")),
            );
            update_columns.default = Some(Value::Array(Vec::new()));
            self.input(
                format!("{t}_on_conflict"),
                vec![
                    InputValueDef::new("constraint", TypeRef::non_null(format!("{t}_constraint"))),
                    update_columns,
                    InputValueDef::new("where", TypeRef::named(format!("{t}_bool_exp"))),
                ],
            );
        }
        if let Some(update) = &w.update {
            let columns: Vec<(String, RoleColumn)> = update
                .columns
                .iter()
                .map(|(n, c)| (n.clone(), c.clone()))
                .collect();
            for (_, c) in &columns {
                self.scalar_type(&c.scalar);
            }
            let set = columns
                .iter()
                .map(|(n, c)| InputValueDef::new(n, TypeRef::named(&c.scalar)))
                .collect();
            self.input(format!("{t}_set_input"), set);
            let inc: Vec<InputValueDef> = columns
                .iter()
                .filter(|(_, c)| c.numeric)
                .map(|(n, c)| InputValueDef::new(n, TypeRef::named(&c.scalar)))
                .collect();
            if !inc.is_empty() {
                self.input(format!("{t}_inc_input"), inc);
            }
            let jsonb: Vec<&String> = columns
                .iter()
                .filter(|(_, c)| c.scalar == "jsonb")
                .map(|(n, _)| n)
                .collect();
            if !jsonb.is_empty() {
                let make = |ty: TypeRef| {
                    jsonb
                        .iter()
                        .map(|n| InputValueDef::new(*n, ty.clone()))
                        .collect::<Vec<_>>()
                };
                self.input(format!("{t}_append_input"), make(TypeRef::named("jsonb")));
                self.input(format!("{t}_prepend_input"), make(TypeRef::named("jsonb")));
                self.input(
                    format!("{t}_delete_key_input"),
                    make(TypeRef::named("String")),
                );
                self.input(
                    format!("{t}_delete_elem_input"),
                    make(TypeRef::named("Int")),
                );
                self.input(
                    format!("{t}_delete_at_path_input"),
                    make(TypeRef::nullable_list_of_non_null("String")),
                );
            }
        }
        if let Some(pk) = &w.primary_key {
            let fields = pk
                .iter()
                .map(|(n, c)| InputValueDef::new(n, TypeRef::non_null(&c.scalar)))
                .collect();
            self.input(format!("{t}_pk_columns_input"), fields);
        }
    }
}
