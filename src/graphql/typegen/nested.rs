//! The input types of nested updates and of `update_<t>_many`: `<t>_nested_update_input`,
//! `<r>_obj_rel_update_input`, `<r>_arr_rel_update_input` and `<t>_updates`. Only the types a
//! root field reaches are generated.

use super::TypeBuilder;
use crate::graphql::model::{nested_target, RoleModel, RoleWrite};
use crate::graphql::types::*;
use crate::metadata::types::QualifiedTable;
use crate::resolve::RelationshipKind;

impl TypeBuilder<'_> {
    /// The `_nested` argument of an update of `w`'s table, with every type it reaches; `None`
    /// when the table has no primary key to read the answer back by, or nothing to nest.
    pub(super) fn nested_argument(
        &mut self,
        model: &RoleModel,
        w: &RoleWrite,
    ) -> Option<InputValueDef> {
        if !model.takes_nested(w) {
            return None;
        }
        let name = self.nested_update_input(model, &w.name)?;
        Some(InputValueDef::new("_nested", TypeRef::named(name)))
    }

    /// `<t>_updates`, one element of `update_<t>_many`: `where`, the operators of `update_<t>`
    /// and its `_nested`.
    pub(super) fn updates_input(&mut self, model: &RoleModel, w: &RoleWrite) -> String {
        let t = &w.type_name;
        let mut fields = vec![InputValueDef::new(
            "where",
            TypeRef::non_null(format!("{t}_bool_exp")),
        )];
        for (op, ty) in self.update_operators(w) {
            fields.push(InputValueDef::new(op, TypeRef::named(ty)));
        }
        fields.extend(self.nested_argument(model, w));
        let name = format!("{t}_updates");
        self.input(name.clone(), fields);
        name
    }

    /// `<t>_nested_update_input` and the relationship inputs it uses; its name, when the table
    /// has one.
    fn nested_update_input(&mut self, model: &RoleModel, t: &QualifiedTable) -> Option<String> {
        let relationships = model.nested_updates.get(t)?;
        let type_name = self.type_name_of(model, t)?;
        let name = format!("{type_name}_nested_update_input");
        if self.types.get(&name).is_some() {
            return Some(name);
        }
        // Registered before its relationships' inputs, which may lead back to it.
        self.input(name.clone(), Vec::new());
        let mut fields = Vec::new();
        for r in relationships {
            let Some(target) = self.relationship_update_input(model, &r.target, r.kind) else {
                continue;
            };
            let ty = match r.kind {
                RelationshipKind::Object => TypeRef::named(target),
                RelationshipKind::Array => TypeRef::nullable_list_of_non_null(target),
            };
            fields.push(InputValueDef::new(r.name.as_str(), ty));
        }
        self.types.types.shift_remove(name.as_str());
        self.input(name.clone(), fields);
        Some(name)
    }

    /// `<r>_obj_rel_update_input` or `<r>_arr_rel_update_input`; its name.
    fn relationship_update_input(
        &mut self,
        model: &RoleModel,
        r: &QualifiedTable,
        kind: RelationshipKind,
    ) -> Option<String> {
        let offers = nested_target(&model.writes, &model.nested_updates, r);
        if !offers.offered(kind) {
            return None;
        }
        let type_name = self.type_name_of(model, r)?;
        let name = match kind {
            RelationshipKind::Object => format!("{type_name}_obj_rel_update_input"),
            RelationshipKind::Array => format!("{type_name}_arr_rel_update_input"),
        };
        if self.types.get(&name).is_some() {
            return Some(name);
        }
        let mut fields = Vec::new();
        if kind == RelationshipKind::Array {
            fields.push(InputValueDef::new(
                "where",
                TypeRef::named(format!("{type_name}_bool_exp")),
            ));
        }
        if let Some(w) = model.writes.get(r).filter(|_| offers.update) {
            for (op, ty) in self.update_operators(w) {
                fields.push(InputValueDef::new(op, TypeRef::named(ty)));
            }
        }
        if kind == RelationshipKind::Array {
            if offers.delete {
                fields.push(InputValueDef::new("_delete", TypeRef::named("Boolean")));
            }
            if offers.insert {
                fields.push(InputValueDef::new(
                    "_insert",
                    TypeRef::named(format!("{type_name}_arr_rel_insert_input")),
                ));
            }
        }
        // A cycle back to this type ends at the nested input registered first.
        if let Some(nested) = offers
            .nested
            .then(|| self.nested_update_input(model, r))
            .flatten()
        {
            fields.push(InputValueDef::new("_nested", TypeRef::named(nested)));
        }
        if self.types.get(&name).is_none() {
            self.input(name.clone(), fields);
        }
        Some(name)
    }

    /// The GraphQL base name of a table the role selects or writes.
    fn type_name_of(&self, model: &RoleModel, t: &QualifiedTable) -> Option<String> {
        model
            .tables
            .get(t)
            .map(|x| x.type_name.clone())
            .or_else(|| model.writes.get(t).map(|w| w.type_name.clone()))
    }
}
