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
            // Other tables' `<rel>_aggregate` fields and their orderings name these types only
            // when this table is aggregatable (`model::read::add_fields`): none is needed.
            return;
        }
        let numeric: Vec<(&String, &RoleColumn)> =
            t.columns.iter().filter(|(_, c)| c.numeric).collect();
        let orderable: Vec<(&String, &RoleColumn)> =
            t.columns.iter().filter(|(_, c)| c.orderable).collect();
        let order_by = Name::new_static("order_by");
        let count = Name::new_static("count");
        let mut fields = IndexMap::new();
        fields.put(
            FieldDef::new(count.clone(), TypeRef::non_null(Name::new_static("Int")))
                .arg(InputValueDef::new(
                    Name::new_static("columns"),
                    TypeRef::nullable_list_of_non_null(format!("{tn}_select_column")),
                ))
                .arg(InputValueDef::new(
                    Name::new_static("distinct"),
                    TypeRef::named(Name::new_static("Boolean")),
                )),
        );
        let mut order_fields = IndexMap::new();
        order_fields.put(InputValueDef::new(count, TypeRef::named(order_by.clone())));
        for function in AggregateFunction::ALL {
            let columns = if function.numeric_only() {
                &numeric
            } else {
                &orderable
            };
            if columns.is_empty() {
                continue;
            }
            let op = Name::new_static(function.name());
            let type_name = Name::from(format!("{tn}_{op}_fields"));
            let order_name = Name::from(format!("{tn}_{op}_order_by"));
            let mut op_fields = IndexMap::new();
            let mut op_order = IndexMap::new();
            for (name, c) in columns {
                let name = Name::from(name.as_str());
                let scalar = if function.keeps_type() {
                    Name::from(c.scalar.as_str())
                } else {
                    Name::new_static("Float")
                };
                op_fields.put(FieldDef::new(name.clone(), TypeRef::named(scalar)));
                op_order.put(InputValueDef::new(name, TypeRef::named(order_by.clone())));
            }
            self.add(TypeDef::Object {
                name: type_name.clone(),
                description: None,
                fields: op_fields,
                interfaces: Vec::new(),
            });
            self.add(TypeDef::Input {
                name: order_name.clone(),
                description: None,
                fields: op_order,
            });
            fields.put(FieldDef::new(op.clone(), TypeRef::named(type_name)));
            order_fields.put(InputValueDef::new(op, TypeRef::named(order_name)));
        }
        let fields_name = Name::from(format!("{tn}_aggregate_fields"));
        self.add(TypeDef::Object {
            name: fields_name.clone(),
            description: Some(format!("aggregate fields of \"{}\"", t.name).into()),
            fields,
            interfaces: Vec::new(),
        });
        let mut aggregate = IndexMap::new();
        aggregate.put(FieldDef::new(
            Name::new_static("aggregate"),
            TypeRef::named(fields_name),
        ));
        aggregate.put(FieldDef::new(
            Name::new_static("nodes"),
            TypeRef::list_of_non_null(tn.as_str()),
        ));
        self.add(TypeDef::Object {
            name: format!("{tn}_aggregate").into(),
            description: Some(format!("aggregated selection of \"{}\"", t.name).into()),
            fields: aggregate,
            interfaces: Vec::new(),
        });
        self.add(TypeDef::Input {
            name: format!("{tn}_aggregate_order_by").into(),
            description: Some(format!("order by aggregate values of table \"{}\"", t.name).into()),
            fields: order_fields,
        });
    }
}
