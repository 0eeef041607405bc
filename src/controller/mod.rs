//! The Kubernetes side of Basalt (`../design/kubernetes.md`). This release ships the custom
//! resource definitions and their mapping to metadata; the reconciling controller builds on
//! them. Never writes SQL.

pub mod crd;
pub mod mapping;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// Every CRD, in a stable order.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        crd::TrackedTable::crd(),
        crd::Permission::crd(),
        crd::ComputedField::crd(),
        crd::CustomTypeSet::crd(),
        crd::QueryCollection::crd(),
        crd::AllowListEntry::crd(),
    ]
}

/// `(file name, YAML)` of every CRD, as `basalt crds --out DIR` writes them.
pub fn crd_files() -> Result<Vec<(String, String)>, serde_yaml::Error> {
    crds()
        .into_iter()
        .map(|crd| {
            let name = format!("{}.yaml", crd.metadata.name.clone().unwrap_or_default());
            serde_yaml::to_string(&crd).map(|yaml| (name, yaml))
        })
        .collect()
}
