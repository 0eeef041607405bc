//! ComputedField: a field of a table computed by a SQL function.

use super::common::*;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use super::{ExportedSpec, Kind};
use crate::metadata::objects::Object;
use crate::metadata::parse::parse;
use crate::metadata::types::{ComputedFieldEntry, Metadata, QualifiedTable};
use crate::metadata::MetadataError;
use serde_json::{json, Map, Value};

/// A computed field of a table.
#[derive(CustomResource, KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "basalt.dev",
    version = "v1alpha1",
    kind = "ComputedField",
    namespaced,
    status = "ResourceStatus",
    shortname = "bcf",
    category = "basalt",
    cel,
    printcolumn = r#"{"name":"Table","type":"string","jsonPath":".spec.table.name"}"#,
    printcolumn = r#"{"name":"Field","type":"string","jsonPath":".spec.name"}"#,
    printcolumn = r#"{"name":"Function","type":"string","jsonPath":".spec.definition.function.name","priority":1}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","priority":1}"#,
    printcolumn = r#"{"name":"Drifted","type":"string","jsonPath":".status.conditions[?(@.type==\"Drifted\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ComputedFieldSpec {
    /// Table (immutable).
    #[x_kube(validation = Rule::new("self == oldSelf").message("table is immutable"))]
    pub table: QualifiedName,
    /// Field name (immutable).
    #[x_kube(validation = Rule::new("self == oldSelf").message("name is immutable"))]
    pub name: String,
    /// The function and how it is called.
    pub definition: ComputedFieldDefinitionSpec,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// `definition` of a computed field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComputedFieldDefinitionSpec {
    /// The SQL function.
    pub function: QualifiedName,
    /// Argument taking the row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_argument: Option<String>,
    /// Argument taking the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_argument: Option<String>,
}

impl ComputedFieldSpec {
    /// The metadata API form of a ComputedField.
    pub fn to_json(&self) -> Value {
        let mut definition = Map::new();
        definition.insert("function".into(), table_name(&self.definition.function));
        put(
            &mut definition,
            "table_argument",
            &self.definition.table_argument,
        );
        put(
            &mut definition,
            "session_argument",
            &self.definition.session_argument,
        );
        let mut m = Map::new();
        m.insert("name".into(), json!(self.name));
        m.insert("definition".into(), Value::Object(definition));
        put(&mut m, "comment", &self.comment);
        Value::Object(m)
    }

    /// A ComputedField as (table, entry).
    pub fn entry(&self) -> Result<(QualifiedTable, ComputedFieldEntry), MetadataError> {
        let table = parse(&table_name(&self.table), &spec_path().key("table"))?;
        Ok((table, parse(&self.to_json(), &spec_path())?))
    }

    /// The catalog object a ComputedField declares.
    pub fn objects(&self) -> Result<Vec<Object>, MetadataError> {
        let (table, entry) = self.entry()?;
        Ok(vec![Object::ComputedField(table, entry)])
    }
}

fn spec_of(table: &QualifiedTable, c: &ComputedFieldEntry) -> Value {
    let mut definition = Map::new();
    definition.insert(
        "function".into(),
        json!({"schema": c.definition.function.schema, "name": c.definition.function.name}),
    );
    put_value(
        &mut definition,
        "tableArgument",
        text(&c.definition.table_argument),
    );
    put_value(
        &mut definition,
        "sessionArgument",
        text(&c.definition.session_argument),
    );
    let mut spec = Map::new();
    spec.insert("table".into(), qualified(table));
    spec.insert("name".into(), json!(c.name.0));
    spec.insert("definition".into(), Value::Object(definition));
    put_value(&mut spec, "comment", text(&c.comment));
    Value::Object(spec)
}

impl Kind for ComputedField {
    fn declared(&self) -> Result<Vec<Object>, MetadataError> {
        self.spec.objects()
    }

    fn export(metadata: &Metadata) -> Vec<ExportedSpec> {
        let mut out = Vec::new();
        for e in &metadata.tables {
            for c in &e.computed_fields {
                let mut name = table_parts(&e.table);
                name.push(c.name.0.clone());
                out.push(ExportedSpec::new(name, spec_of(&e.table, c)));
            }
        }
        out
    }
}
