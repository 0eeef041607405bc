//! `<t>_aggregate`, `<t>_aggregate_fields`, one `<t>_<f>_fields` per aggregate function a
//! table's columns allow, and the matching `_order_by` inputs.

use super::TypeBuilder;
use crate::graphql::ir::AggregateFunction;
use crate::graphql::model::{RoleColumn, RoleTable};
use crate::graphql::types::*;
use indexmap::IndexMap;

impl TypeBuilder<'_> {
    pub(super) fn aggregate_types(&mut self, t: &RoleTable) {
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
        for function in AggregateFunction::ALL {
            let columns = if function.numeric_only() {
                &numeric
            } else {
                &orderable
            };
            if columns.is_empty() {
                continue;
            }
            let op = function.name();
            let type_name = format!("{tn}_{op}_fields");
            let mut op_fields = IndexMap::new();
            let mut op_order = IndexMap::new();
            for (name, c) in columns {
                let scalar = if function.keeps_type() {
                    c.scalar.clone()
                } else {
                    "Float".to_owned()
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
                interfaces: Vec::new(),
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
            interfaces: Vec::new(),
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
            interfaces: Vec::new(),
        });
        self.types.add(TypeDef::Input {
            name: format!("{tn}_aggregate_order_by"),
            description: Some(format!("order by aggregate values of table \"{}\"", t.name)),
            fields: order_fields,
        });
    }
}
