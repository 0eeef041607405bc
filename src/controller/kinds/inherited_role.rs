//! InheritedRole: a role whose permissions are derived from its parent roles
//! (`add_inherited_role`, `drop_inherited_role`). Its parents are roles that Permission,
//! Action or other InheritedRole resources make known, so it waits for them
//! (`DependencyNotReady`); a definition that closes a cycle is `InvalidSpec`.

use super::common::*;
use super::{ExportedSpec, Kind};
use crate::metadata::objects::Object;
use crate::metadata::parse::parse;
use crate::metadata::types::{InheritedRole as InheritedRoleEntry, Metadata};
use crate::metadata::MetadataError;
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A role whose permissions are derived from its parents' (`add_inherited_role`).
#[derive(CustomResource, KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "basalt.dev",
    version = "v1alpha1",
    kind = "InheritedRole",
    plural = "inheritedroles",
    namespaced,
    status = "ResourceStatus",
    shortname = "brole",
    category = "basalt",
    cel,
    printcolumn = r#"{"name":"Role","type":"string","jsonPath":".spec.roleName"}"#,
    printcolumn = r#"{"name":"Parents","type":"string","jsonPath":".spec.roleSet"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","priority":1}"#,
    printcolumn = r#"{"name":"Drifted","type":"string","jsonPath":".status.conditions[?(@.type==\"Drifted\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("self.roleName != 'admin'").message("cannot define an inherited role named \"admin\""),
    validation = Rule::new("!(self.roleName in self.roleSet)").message("an inherited role name cannot be in the role combination")
)]
pub struct InheritedRoleSpec {
    /// The inherited role's name (immutable, not admin).
    #[x_kube(validation = Rule::new("self == oldSelf").message("roleName is immutable"))]
    #[schemars(length(min = 1, max = 256))]
    pub role_name: String,
    /// The parent roles (at most 100), each listed once: roles with permissions, or other
    /// inherited roles.
    // The bounds on the list and its names keep the API server's cost estimate of the CEL
    // rules within its budget.
    #[schemars(
        length(min = 1, max = 100),
        inner(length(min = 1, max = 256)),
        extend("x-kubernetes-list-type" = "set")
    )]
    pub role_set: Vec<String>,
}

impl InheritedRoleSpec {
    /// An InheritedRole as the catalog's entry, parsed as `add_inherited_role` parses its
    /// arguments (a repeated parent is kept once, at its first place).
    pub fn entry(&self) -> Result<InheritedRoleEntry, MetadataError> {
        let path = spec_path();
        Ok(InheritedRoleEntry {
            role_name: parse(&json!(self.role_name), &path.key("roleName"))?,
            role_set: parse(&json!(self.role_set), &path.key("roleSet"))?,
        })
    }

    /// The catalog object an InheritedRole declares.
    pub fn objects(&self) -> Result<Vec<Object>, MetadataError> {
        Ok(vec![Object::InheritedRole(self.entry()?)])
    }
}

impl Kind for InheritedRole {
    fn declared(&self) -> Result<Vec<Object>, MetadataError> {
        self.spec.objects()
    }

    fn export(metadata: &Metadata) -> Vec<ExportedSpec> {
        metadata
            .inherited_roles
            .iter()
            .map(|r| {
                let parents: Vec<&str> = r.role_set.0.iter().map(|p| p.0.as_str()).collect();
                let spec = json!({"roleName": r.role_name.0, "roleSet": parents});
                ExportedSpec::new(vec![r.role_name.0.clone()], spec)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(value: serde_json::Value) -> InheritedRoleSpec {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn spec_maps_to_the_entry_and_back() {
        let s = spec(json!({"roleName": "manager_employee", "roleSet": ["manager", "employee", "manager"]}));
        let entry = s.entry().unwrap();
        assert_eq!(
            serde_json::to_value(&entry).unwrap(),
            json!({"role_name": "manager_employee", "role_set": ["manager", "employee"]}),
            "camelCase to snake_case, a repeated parent kept once"
        );
        let metadata: Metadata = serde_json::from_value(json!({"version": 2, "tables": [],
            "inherited_roles": [entry]}))
        .unwrap();
        let exported = InheritedRole::export(&metadata);
        assert_eq!(exported.len(), 1);
        assert_eq!(exported[0].name, vec!["manager_employee".to_owned()]);
        assert_eq!(
            exported[0].spec,
            json!({"roleName": "manager_employee", "roleSet": ["manager", "employee"]})
        );
        assert_eq!(spec(exported[0].spec.clone()).entry().unwrap(), entry);
    }

    #[test]
    fn an_empty_role_set_or_name_is_refused_with_the_spec_path() {
        let err = spec(json!({"roleName": "r", "roleSet": []})).entry().unwrap_err();
        assert_eq!(err.path.as_str(), "$.spec.roleSet", "{err:?}");
        assert_eq!(err.message, "role_set must not be empty");
        let err = spec(json!({"roleName": "", "roleSet": ["a"]})).entry().unwrap_err();
        assert_eq!(err.path.as_str(), "$.spec.roleName", "{err:?}");
    }
}
