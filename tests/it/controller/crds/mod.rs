//! The CustomResourceDefinitions the controller generates (`basalt crds`, committed in `crds/`
//! and the chart): the files up to date, structural schemas, printer columns, client-side CEL
//! rules, and the mapping of resources to metadata. The Action kind's are in `actions.rs`, the
//! InheritedRole and ApiLimitPolicy kinds' in `roles_and_limits.rs`.

mod actions;
mod generated;
mod roles_and_limits;
mod rules;
mod to_metadata;

use basalt::controller::kinds::*;
use basalt::controller::{crd_files, crds};
use kube::core::ObjectMeta;
use serde_json::{json, Value};
use std::collections::BTreeMap;

type Crd =
    k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// The CRD of `kind`.
fn crd_of(kind: &str) -> Crd {
    crds()
        .into_iter()
        .find(|c| c.spec.names.kind == kind)
        .unwrap_or_else(|| panic!("no CRD for {kind}"))
}

/// The CRD's printer columns are exactly `wanted` (name, JSON path, priority), in order.
fn assert_columns(crd: &Crd, wanted: &[(&str, &str, i32)]) {
    let columns: Vec<(String, String, i32)> = crd.spec.versions[0]
        .additional_printer_columns
        .as_ref()
        .unwrap()
        .iter()
        .map(|c| (c.name.clone(), c.json_path.clone(), c.priority.unwrap_or(0)))
        .collect();
    let wanted: Vec<(String, String, i32)> = wanted
        .iter()
        .map(|(n, p, prio)| (n.to_string(), p.to_string(), *prio))
        .collect();
    assert_eq!(columns, wanted);
}

fn schema_of(
    crd: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
) -> Value {
    let version = &crd.spec.versions[0];
    serde_json::to_value(&version.schema.as_ref().unwrap().open_api_v3_schema).unwrap()
}
