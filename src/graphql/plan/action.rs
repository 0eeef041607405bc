//! Action root fields: the call (arguments as the document gives them) and the selection on
//! the output — its fields, nested objects, and relationships to tables with the role's
//! select permissions folded in; an asynchronous action's mutation (logged, answers an id)
//! and its result read by id.

use super::Problem;
use super::{Collected, Input, PlanError, Planner, Result};
use crate::db_model::PgType;
use crate::graphql::ir::*;
use crate::graphql::types::{TypeDef, TypeRef};
use crate::metadata::types::ActionType;
use crate::resolve::actions::ResolvedAction;
use crate::resolve::RelationshipKind;
use async_graphql_parser::types::Field as AstField;
use indexmap::IndexMap;

/// `Input` as an action's argument value.
fn arg_value(input: &Input) -> ArgValue {
    match input {
        Input::Null => ArgValue::Null,
        Input::Value(p) => ArgValue::Value(p.clone()),
        Input::Enum(e) => ArgValue::Enum(e.clone()),
        Input::List(items) => ArgValue::List(items.iter().map(arg_value).collect()),
        Input::Object(fields) => ArgValue::Object(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), arg_value(v)))
                .collect(),
        ),
    }
}

impl<'a> Planner<'a> {
    /// The action the role may call whose root field is `name` on the root `root_type`.
    pub(super) fn action_on(&self, name: &str, root_type: &str) -> Option<&'a ResolvedAction> {
        let model: &'a crate::graphql::model::RoleModel = self.model;
        let action = model.actions.iter().find(|a| a.name() == name)?;
        let on = match root_type {
            "mutation_root" => action.entry.definition.action_type == ActionType::Mutation,
            "subscription_root" => action.is_async(),
            _ => action.entry.definition.action_type == ActionType::Query || action.is_async(),
        };
        on.then_some(action)
    }

    /// A query or subscription root field of an action: a query action's call, or an
    /// asynchronous action's result by id.
    pub(super) fn action_root(
        &mut self,
        action: &'a ResolvedAction,
        fields: &[&AstField],
        path: &str,
        root_type: &str,
    ) -> Result<RootField> {
        let name = action.name();
        let def = self.field_def(root_type, name, path)?;
        let args = self.field_args(&def, fields[0], path)?;
        if !action.is_async() {
            let call = self.action_call(action, &args);
            let output = self.output_select(&def.ty, fields, path, 1)?;
            return Ok(RootField::Action(ActionField { call, output }));
        }
        let Some(Input::Value(id)) = args.get("id") else {
            return Err(PlanError::at(path, Problem::MissingField("id".into())));
        };
        let sub = self.sub_fields(fields, name, path, 1)?;
        let mut out = Vec::new();
        for (key, fields) in &sub {
            let field = fields[0];
            let fpath = format!("{path}.selectionSet.{key}");
            let planned = match field.name.node.as_str() {
                "__typename" => ResultField::Constant(name.to_owned()),
                "id" => ResultField::Id,
                "created_at" => ResultField::CreatedAt,
                "errors" => ResultField::Errors,
                "output" => {
                    let def = self.field_def(name, "output", &fpath)?;
                    ResultField::Output(self.output_select(&def.ty, fields, &fpath, 2)?)
                }
                other => return Err(PlanError::unknown_field(&fpath, other, name)),
            };
            if !matches!(planned, ResultField::Output(_)) {
                Self::no_selection(field, &fpath)?;
            }
            out.push((key.clone(), planned));
        }
        Ok(RootField::ActionResult(ActionResult {
            action: name.to_owned(),
            id: ValueExpr {
                param: id.clone(),
                cast: PgType::Catalog("uuid".to_owned()),
            },
            same_session: self.model.role != crate::graphql::model::ADMIN,
            fields: out,
        }))
    }

    /// A mutation root field of an action: called at its turn, or (asynchronous) logged.
    pub(super) fn action_mutation(
        &mut self,
        action: &'a ResolvedAction,
        fields: &[&AstField],
        path: &str,
    ) -> Result<MutationField> {
        let def = self.field_def("mutation_root", action.name(), path)?;
        let args = self.field_args(&def, fields[0], path)?;
        let call = self.action_call(action, &args);
        if action.is_async() {
            Self::no_selection(fields[0], path)?;
            return Ok(MutationField::AsyncAction(call));
        }
        let output = self.output_select(&def.ty, fields, path, 1)?;
        Ok(MutationField::Action(ActionField { call, output }))
    }

    fn action_call(&self, action: &ResolvedAction, args: &IndexMap<String, Input>) -> ActionCall {
        ActionCall {
            action: action.name().to_owned(),
            input: args
                .iter()
                .map(|(k, v)| (k.clone(), arg_value(v)))
                .collect(),
        }
    }

    /// The selection on an output of type `ty` (an object type, or a list of it).
    fn output_select(
        &mut self,
        ty: &TypeRef,
        fields: &[&AstField],
        path: &str,
        depth: usize,
    ) -> Result<OutputSelect> {
        let list = matches!(ty.nullable(), TypeRef::List(_));
        let type_name = ty.base().to_owned();
        let sub = self.sub_fields(fields, &type_name, path, depth)?;
        Ok(OutputSelect {
            list,
            object: self.output_object(&type_name, &sub, path, depth)?,
        })
    }

    /// The fields selected on an output object of type `type_name`.
    fn output_object(
        &mut self,
        type_name: &str,
        sub: &Collected<'_>,
        path: &str,
        depth: usize,
    ) -> Result<OutputObject> {
        let model: &'a crate::graphql::model::RoleModel = self.model;
        let custom = &model.custom_types;
        let mut object = OutputObject {
            fields: Vec::new(),
            keys: Vec::new(),
        };
        for (key, fields) in sub {
            let field = fields[0];
            let name = field.name.node.as_str();
            let fpath = format!("{path}.selectionSet.{key}");
            if name == "__typename" {
                Self::no_selection(field, &fpath)?;
                object
                    .fields
                    .push((key.clone(), OutputField::Constant(type_name.to_owned())));
                continue;
            }
            let def = self.field_def(type_name, name, &fpath)?;
            if let Some(rel) = custom.relationship(type_name, name) {
                let args = self.field_args(&def, field, &fpath)?;
                let table = self.table(&rel.target, &fpath)?;
                let sub = self.sub_fields(fields, &table.type_name, &fpath, depth + 1)?;
                let join = rel
                    .mapping
                    .iter()
                    .map(|(f, c, _)| (f.clone(), c.clone()))
                    .collect();
                let select = self.select(
                    table,
                    Source::Table(rel.target.clone()),
                    join,
                    &args,
                    &sub,
                    &fpath,
                    rel.kind == RelationshipKind::Object,
                    depth + 1,
                )?;
                for (f, _, ty) in &rel.mapping {
                    if !object.keys.iter().any(|(k, _)| k == f) {
                        object.keys.push((f.clone(), ty.clone()));
                    }
                }
                object
                    .fields
                    .push((key.clone(), OutputField::Relationship(Box::new(select))));
                continue;
            }
            if !field.arguments.is_empty() {
                return Err(PlanError::at(
                    &fpath,
                    Problem::NoArguments(name.to_string()),
                ));
            }
            let planned = match self.types.get(def.ty.base()) {
                Some(TypeDef::Object { .. }) => OutputField::Object {
                    field: name.to_owned(),
                    select: Box::new(self.output_select(&def.ty, fields, &fpath, depth + 1)?),
                },
                _ => {
                    Self::no_selection(field, &fpath)?;
                    OutputField::Value(name.to_owned())
                }
            };
            object.fields.push((key.clone(), planned));
        }
        Ok(object)
    }
}
