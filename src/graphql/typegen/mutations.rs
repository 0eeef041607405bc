//! `mutation_root` and the write-side types: `<t>_insert_input` and the relationship insert
//! inputs, `<t>_on_conflict` with its constraint and column enums, `<t>_set_input` and the other
//! update operators' inputs, `<t>_pk_columns_input`, `<t>_mutation_response`.

use super::TypeBuilder;
use crate::graphql::model::{MutationKind, RoleColumn, RoleModel, RoleWrite};
use crate::graphql::types::*;
use crate::metadata::types::QualifiedTable;
use crate::resolve::RelationshipKind;
use indexmap::IndexMap;
use serde_json::Value;

impl TypeBuilder<'_> {
    /// Adds `mutation_root` and the write-side types; returns whether a mutation root exists.
    pub(super) fn mutation_types(&mut self, model: &RoleModel) -> bool {
        let (writes, roots) = (&model.writes, &model.mutations);
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
                    if let Some(nested) = self.nested_argument(model, w) {
                        def = def.arg(nested);
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
                MutationKind::UpdateMany => {
                    let updates = self.updates_input(model, w);
                    FieldDef::new(
                        field,
                        TypeRef::List(Box::new(TypeRef::named(format!("{t}_mutation_response")))),
                    )
                    .arg(InputValueDef::new(
                        "updates",
                        TypeRef::list_of_non_null(updates),
                    ))
                    .describe(format!("update multiples rows of table: \"{}\"", w.name))
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
            fields.put(def);
        }
        self.add(TypeDef::Object {
            name: Name::new_static("mutation_root"),
            description: Some(Name::new_static("mutation root")),
            fields,
            interfaces: Vec::new(),
        });
        true
    }

    /// `(argument, input type)` of the update operators a table offers.
    pub(super) fn update_operators(&self, w: &RoleWrite) -> Vec<(&'static str, String)> {
        let t = &w.type_name;
        let Some(u) = &w.update else {
            return Vec::new();
        };
        let mut ops = Vec::new();
        let jsonb = u.has_jsonb();
        if jsonb {
            ops.push(("_append", format!("{t}_append_input")));
            ops.push(("_delete_at_path", format!("{t}_delete_at_path_input")));
            ops.push(("_delete_elem", format!("{t}_delete_elem_input")));
            ops.push(("_delete_key", format!("{t}_delete_key_input")));
        }
        if u.has_numeric() {
            ops.push(("_inc", format!("{t}_inc_input")));
        }
        if jsonb {
            ops.push(("_prepend", format!("{t}_prepend_input")));
        }
        ops.push(("_set", format!("{t}_set_input")));
        ops
    }

    /// The write-side types of one table.
    fn write_types(&mut self, w: &RoleWrite, writes: &IndexMap<QualifiedTable, RoleWrite>) {
        self.response_type(w);
        self.insert_inputs(w, writes);
        self.conflict_types(w);
        self.update_inputs(w);
        self.pk_input(w);
    }

    /// `<t>_mutation_response`, and a `<t>_bool_exp` of connectives only when the role cannot
    /// select the table.
    fn response_type(&mut self, w: &RoleWrite) {
        let t = w.type_name.clone();
        let mut response = IndexMap::new();
        response.put(
            FieldDef::new(
                Name::new_static("affected_rows"),
                TypeRef::non_null(Name::new_static("Int")),
            )
            .describe(Name::new_static("number of rows affected by the mutation")),
        );
        if w.selectable {
            response.put(
                FieldDef::new(
                    Name::new_static("returning"),
                    TypeRef::list_of_non_null(t.as_str()),
                )
                .describe(Name::new_static(
                    "data from the rows affected by the mutation",
                )),
            );
        }
        self.add(TypeDef::Object {
            name: format!("{t}_mutation_response").into(),
            description: Some(
                format!("response of any mutation on the table \"{}\"", w.name).into(),
            ),
            fields: response,
            interfaces: Vec::new(),
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
    }

    /// `<t>_insert_input` and the relationship insert inputs.
    fn insert_inputs(&mut self, w: &RoleWrite, writes: &IndexMap<QualifiedTable, RoleWrite>) {
        let t = w.type_name.clone();
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
    }

    /// `<t>_on_conflict` with `<t>_constraint` and `<t>_update_column`.
    fn conflict_types(&mut self, w: &RoleWrite) {
        let t = w.type_name.clone();
        let on_conflict = w.update.is_some() && !w.constraints.is_empty();
        if on_conflict {
            self.add(TypeDef::Enum {
                name: format!("{t}_constraint").into(),
                description: Some(
                    format!("unique or primary key constraints on table \"{}\"", w.name).into(),
                ),
                values: w
                    .constraints
                    .iter()
                    .map(|c| EnumValueDef {
                        name: c.into(),
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
            self.add(TypeDef::Enum {
                name: format!("{t}_update_column").into(),
                description: Some(format!("update columns of table \"{}\"", w.name).into()),
                values: values
                    .into_iter()
                    .map(|c| EnumValueDef {
                        name: c.into(),
                        description: None,
                    })
                    .collect(),
            });
            let mut update_columns = InputValueDef::new(
                "update_columns",
                TypeRef::list_of_non_null(format!("{t}_update_column")),
            );
            update_columns.default = Some(Box::new(Value::Array(Vec::new())));
            self.input(
                format!("{t}_on_conflict"),
                vec![
                    InputValueDef::new("constraint", TypeRef::non_null(format!("{t}_constraint"))),
                    update_columns,
                    InputValueDef::new("where", TypeRef::named(format!("{t}_bool_exp"))),
                ],
            );
        }
    }

    /// The inputs of the update operators (`_set`, `_inc`, the jsonb ones).
    fn update_inputs(&mut self, w: &RoleWrite) {
        let t = w.type_name.clone();
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
    }

    /// `<t>_pk_columns_input`.
    fn pk_input(&mut self, w: &RoleWrite) {
        let t = w.type_name.clone();
        if let Some(pk) = &w.primary_key {
            let fields = pk
                .iter()
                .map(|(n, c)| InputValueDef::new(n, TypeRef::non_null(&c.scalar)))
                .collect();
            self.input(format!("{t}_pk_columns_input"), fields);
        }
    }
}
