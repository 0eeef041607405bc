//! Permission: one permission of one role on one table.

use super::common::*;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use super::{ExportedSpec, Kind};
use crate::metadata::ids::PermissionKind;
use crate::metadata::objects::Object;
use crate::metadata::parse::parse;
use crate::metadata::types::{Metadata, PermissionEntry, QualifiedTable};
use crate::metadata::MetadataError;
use serde_json::{json, Map, Value};

/// Which permission operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Operation {
    /// `create_insert_permission`.
    Insert,
    /// `create_select_permission`.
    Select,
    /// `create_update_permission`.
    Update,
    /// `create_delete_permission`.
    Delete,
}

/// A query root field of the table, as `queryRootFields` lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum QueryRootFieldSpec {
    /// The list query (`<t>`).
    Select,
    /// `<t>_by_pk`.
    SelectByPk,
    /// `<t>_aggregate` (needs `allowAggregations`).
    SelectAggregate,
}

/// A subscription root field of the table, as `subscriptionRootFields` lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SubscriptionRootFieldSpec {
    /// The live list (`<t>`).
    Select,
    /// `<t>_by_pk`.
    SelectByPk,
    /// `<t>_aggregate` (needs `allowAggregations`).
    SelectAggregate,
    /// The streaming subscription `<t>_stream`.
    SelectStream,
}

/// One permission of one role on one table.
#[derive(CustomResource, KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "basalt.dev",
    version = "v1alpha1",
    kind = "Permission",
    namespaced,
    status = "ResourceStatus",
    shortname = "bperm",
    category = "basalt",
    cel,
    printcolumn = r#"{"name":"Table","type":"string","jsonPath":".spec.table.name"}"#,
    printcolumn = r#"{"name":"Role","type":"string","jsonPath":".spec.role"}"#,
    printcolumn = r#"{"name":"Operation","type":"string","jsonPath":".spec.operation"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","priority":1}"#,
    printcolumn = r#"{"name":"Drifted","type":"string","jsonPath":".status.conditions[?(@.type==\"Drifted\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("self.operation != 'insert' || has(self.permission.check)").message("insert needs permission.check"),
    validation = Rule::new("self.operation != 'select' || (has(self.permission.columns) && has(self.permission.filter))").message("select needs permission.columns and permission.filter"),
    validation = Rule::new("self.operation != 'update' || (has(self.permission.columns) && has(self.permission.filter))").message("update needs permission.columns and permission.filter"),
    validation = Rule::new("self.operation != 'delete' || has(self.permission.filter)").message("delete needs permission.filter"),
    validation = Rule::new("self.operation == 'insert' || !has(self.permission.backendOnly)").message("backendOnly is for insert only"),
    validation = Rule::new("self.operation == 'select' || (!has(self.permission.computedFields) && !has(self.permission.limit) && !has(self.permission.allowAggregations))").message("computedFields, limit and allowAggregations are for select only"),
    validation = Rule::new("self.operation == 'select' || (!has(self.permission.queryRootFields) && !has(self.permission.subscriptionRootFields))").message("queryRootFields and subscriptionRootFields are for select only"),
    validation = Rule::new("self.operation == 'insert' || self.operation == 'update' || !has(self.permission.set)").message("set is for insert and update only"),
    validation = Rule::new("self.operation != 'delete' || (!has(self.permission.columns) && !has(self.permission.check))").message("delete takes only permission.filter"),
    validation = Rule::new("self.operation != 'insert' || !has(self.permission.filter)").message("insert takes permission.check, not permission.filter")
)]
pub struct PermissionSpec {
    /// Table (immutable).
    #[x_kube(validation = Rule::new("self == oldSelf").message("table is immutable"))]
    pub table: QualifiedName,
    /// Role (immutable, not admin).
    #[x_kube(validation = Rule::new("self == oldSelf").message("role is immutable"), validation = Rule::new("self != 'admin'").message("cannot define permission for admin role"))]
    pub role: String,
    /// Operation (immutable).
    #[x_kube(validation = Rule::new("self == oldSelf").message("operation is immutable"))]
    pub operation: Operation,
    /// The rules.
    pub permission: PermissionRules,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// Permission rules (which apply depends on `operation`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRules {
    /// BoolExp on written rows (insert, update).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserved_object")]
    pub check: Option<Value>,
    /// Column presets (insert, update).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserved_object")]
    pub set: Option<Value>,
    /// `"*"` or a list of columns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserved_any")]
    pub columns: Option<Value>,
    /// Insert only for trusted backends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_only: Option<bool>,
    /// Selectable computed fields (select).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub computed_fields: Option<Vec<String>>,
    /// Row filter (select, update, delete).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserved_object")]
    pub filter: Option<Value>,
    /// Row cap (select).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub limit: Option<i64>,
    /// Aggregates allowed (select).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_aggregations: Option<bool>,
    /// Which query root fields of the table the role gets (select; absent: every one the
    /// other rules allow, `[]`: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_root_fields: Option<Vec<QueryRootFieldSpec>>,
    /// Which subscription root fields of the table the role gets (select; as
    /// `queryRootFields`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription_root_fields: Option<Vec<SubscriptionRootFieldSpec>>,
}

/// The permission kind of an operation.
fn permission_kind(operation: Operation) -> PermissionKind {
    match operation {
        Operation::Insert => PermissionKind::Insert,
        Operation::Select => PermissionKind::Select,
        Operation::Update => PermissionKind::Update,
        Operation::Delete => PermissionKind::Delete,
    }
}

/// The metadata API form of a Permission's rules (only the fields of its operation).
fn permission_rules_json(operation: Operation, p: &PermissionRules) -> Value {
    let mut m = Map::new();
    match operation {
        Operation::Insert => {
            put(&mut m, "check", &p.check);
            put(&mut m, "set", &p.set);
            put(&mut m, "columns", &p.columns);
            put(&mut m, "backend_only", &p.backend_only);
        }
        Operation::Select => {
            put(&mut m, "columns", &p.columns);
            put(&mut m, "computed_fields", &p.computed_fields);
            put(&mut m, "filter", &p.filter);
            put(&mut m, "limit", &p.limit);
            put(&mut m, "allow_aggregations", &p.allow_aggregations);
            put(&mut m, "query_root_fields", &p.query_root_fields);
            put(&mut m, "subscription_root_fields", &p.subscription_root_fields);
        }
        Operation::Update => {
            put(&mut m, "columns", &p.columns);
            put(&mut m, "filter", &p.filter);
            put(&mut m, "check", &p.check);
            put(&mut m, "set", &p.set);
        }
        Operation::Delete => put(&mut m, "filter", &p.filter),
    }
    Value::Object(m)
}

impl PermissionSpec {
    /// A Permission as (table, kind, permission entry), its rules checked against the kind's shape.
    pub fn entry(&self) -> Result<(QualifiedTable, PermissionKind, PermissionEntry<Value>), MetadataError> {
        let rules = permission_rules_json(self.operation, &self.permission);
        let path = spec_path().key("permission");
        // Parse with the typed rules of the kind, as create_<op>_permission does, and keep the
        // typed form so defaults are explicit (as the catalog stores them).
        fn typed<P: serde::de::DeserializeOwned + serde::Serialize>(
            rules: &Value,
            path: &JsonPath,
        ) -> Result<Value, MetadataError> {
            let parsed: P = parse(rules, path)?;
            Ok(serde_json::to_value(parsed).unwrap_or(Value::Null))
        }
        let rules = match self.operation {
            Operation::Insert => typed::<crate::metadata::types::InsertPermission>(&rules, &path)?,
            Operation::Select => typed::<crate::metadata::types::SelectPermission>(&rules, &path)?,
            Operation::Update => typed::<crate::metadata::types::UpdatePermission>(&rules, &path)?,
            Operation::Delete => typed::<crate::metadata::types::DeletePermission>(&rules, &path)?,
        };
        let table: QualifiedTable = parse(&table_name(&self.table), &spec_path().key("table"))?;
        let entry = PermissionEntry {
            role: parse(&json!(self.role), &spec_path().key("role"))?,
            permission: rules,
            comment: self.comment.clone(),
        };
        if self.operation == Operation::Select {
            let select: crate::metadata::types::SelectPermission =
                parse(&entry.permission, &path)?;
            crate::ops::check_select_root_fields(&table, &entry.role, &select, &spec_path())?;
        }
        Ok((table, permission_kind(self.operation), entry))
    }

    /// The catalog object a Permission declares.
    pub fn objects(&self) -> Result<Vec<Object>, MetadataError> {
        let (table, kind, entry) = self.entry()?;
        Ok(vec![Object::Permission(table, kind, entry)])
    }
}

/// The rules of a permission, metadata field → CRD field (user data copied verbatim).
fn rules_spec(rules: &Value) -> Value {
    let mut out = Map::new();
    if let Value::Object(map) = rules {
        for (key, value) in map {
            let field = match key.as_str() {
                "backend_only" => "backendOnly",
                "computed_fields" => "computedFields",
                "allow_aggregations" => "allowAggregations",
                "query_root_fields" => "queryRootFields",
                "subscription_root_fields" => "subscriptionRootFields",
                "check" => "check",
                "set" => "set",
                "columns" => "columns",
                "filter" => "filter",
                "limit" => "limit",
                _ => continue,
            };
            put_value(&mut out, field, Some(value.clone()));
        }
    }
    Value::Object(out)
}

fn spec_of<P: serde::Serialize>(
    table: &QualifiedTable,
    kind: PermissionKind,
    p: &PermissionEntry<P>,
) -> Value {
    let rules = serde_json::to_value(&p.permission).unwrap_or(Value::Null);
    let mut spec = Map::new();
    spec.insert("table".into(), qualified(table));
    spec.insert("role".into(), json!(p.role.0));
    spec.insert("operation".into(), json!(kind.as_str()));
    spec.insert("permission".into(), rules_spec(&rules));
    put_value(&mut spec, "comment", text(&p.comment));
    Value::Object(spec)
}

impl Kind for Permission {
    fn declared(&self) -> Result<Vec<Object>, MetadataError> {
        self.spec.objects()
    }

    fn export(metadata: &Metadata) -> Vec<ExportedSpec> {
        let mut out = Vec::new();
        for e in &metadata.tables {
            let t = &e.table;
            let mut push = |role: &str, kind: PermissionKind, spec: Value| {
                let mut name = table_parts(t);
                name.extend([role.to_owned(), kind.as_str().to_owned()]);
                out.push(ExportedSpec::new(name, spec));
            };
            for p in &e.insert_permissions {
                push(&p.role.0, PermissionKind::Insert, spec_of(t, PermissionKind::Insert, p));
            }
            for p in &e.select_permissions {
                push(&p.role.0, PermissionKind::Select, spec_of(t, PermissionKind::Select, p));
            }
            for p in &e.update_permissions {
                push(&p.role.0, PermissionKind::Update, spec_of(t, PermissionKind::Update, p));
            }
            for p in &e.delete_permissions {
                push(&p.role.0, PermissionKind::Delete, spec_of(t, PermissionKind::Delete, p));
            }
        }
        out
    }
}
