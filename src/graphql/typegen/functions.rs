//! The fields of tracked functions (`docs/functions.md`, "The GraphQL schema"): the root field
//! over the returned table's rows, its aggregate field, and the `<fn>_args` input type. The
//! rows use the table's own types.

use super::{list_args, with_args, TypeBuilder};
use crate::graphql::model::{scalar_for_type, RoleModel, RoleTable};
use crate::graphql::types::*;
use crate::resolve::functions::ResolvedFunction;
use indexmap::IndexMap;

impl TypeBuilder<'_> {
    /// The root field of `f` over `t`'s rows (`aggregate`: its aggregate field), with `args`
    /// when the function takes anything from the client.
    pub(super) fn function_field(
        &mut self,
        field: Name,
        f: &ResolvedFunction,
        t: &RoleTable,
        aggregate: bool,
    ) -> FieldDef {
        let tn = t.type_name.as_str();
        let ty = match (aggregate, f.set) {
            (true, _) => TypeRef::non_null(format!("{tn}_aggregate")),
            (false, true) => TypeRef::list_of_non_null(tn),
            (false, false) => TypeRef::named(tn),
        };
        let mut args = Vec::new();
        if f.client_arguments().next().is_some() {
            self.function_args_type(f);
            let required = f.client_arguments().any(|a| !a.sql.has_default);
            let ty = match required {
                true => TypeRef::non_null(f.args_type.as_str()),
                false => TypeRef::named(f.args_type.as_str()),
            };
            args.push(InputValueDef::new(Name::new_static("args"), ty));
        }
        args.extend(list_args(tn));
        let description = match (&f.comment, aggregate) {
            (Some(comment), false) => comment.clone(),
            (_, true) => format!(
                "execute function \"{}\" and query aggregates on result of table type \"{}\"",
                f.function, f.returns
            ),
            (None, false) => format!(
                "execute function \"{}\" which returns \"{}\"",
                f.function, f.returns
            ),
        };
        with_args(FieldDef::new(field, ty), args).describe(description)
    }

    /// `<fn>_args`: one nullable field per argument the client passes, in declaration order.
    fn function_args_type(&mut self, f: &ResolvedFunction) {
        let mut fields = IndexMap::new();
        for arg in f.client_arguments() {
            let scalar = scalar_for_type(&arg.sql.type_name);
            self.scalar(&scalar);
            let name = Name::from(arg.graphql.as_str());
            fields.insert(
                name.clone(),
                InputValueDef::new(name, TypeRef::named(scalar)),
            );
        }
        self.add(TypeDef::Input {
            name: f.args_type.as_str().into(),
            description: None,
            fields,
        });
    }

    /// The mutation root's fields of the mutation-exposed functions the role may call.
    pub(super) fn function_mutation_fields(
        &mut self,
        model: &RoleModel,
    ) -> IndexMap<Name, FieldDef> {
        let mut out = IndexMap::new();
        for (name, &i) in &model.function_mutations {
            let (Some(f), Some(t)) = (
                model.functions.get(i),
                model
                    .functions
                    .get(i)
                    .and_then(|f| model.tables.get(&f.returns)),
            ) else {
                continue;
            };
            let name = Name::from(name.as_str());
            out.insert(name.clone(), self.function_field(name, f, t, false));
        }
        out
    }
}
