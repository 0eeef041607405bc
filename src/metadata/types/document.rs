//! The whole metadata document, `Metadata`, and its lookups (see `docs/metadata-api.md`,
//! "export_metadata"). Pure serde types: must not depend on anything outside `metadata`.

use super::*;
use serde::{Deserialize, Serialize};

/// The whole metadata document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    /// Always 2 on export.
    #[serde(default = "two")]
    pub version: u32,
    /// Tracked tables and views, in tracking order. Each entry is shared between the
    /// documents a write derives from one another (the state before, the state after, the
    /// state this process's last write left), so a change copies only the entries it edits: reach one mutably with
    /// [`Metadata::table_mut`] (or `Arc::make_mut`), and touch only entries that change.
    pub tables: Vec<std::sync::Arc<TableEntry>>,
    /// Tracked functions, in tracking order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub functions: Vec<FunctionEntry>,
    /// Stitched remote GraphQL servers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remote_schemas: Vec<RemoteSchemaEntry>,
    /// Named GraphQL documents.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub query_collections: Vec<CollectionEntry>,
    /// Collections whose queries non-admin roles may run when the allow-list is on.
    #[serde(default, skip_serializing_if = "Vec::is_empty", alias = "allow_list")]
    pub allowlist: Vec<AllowlistEntry>,
    /// Custom queries and mutations resolved by HTTP handlers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<ActionEntry>,
    /// Types used by actions.
    #[serde(default, skip_serializing_if = "CustomTypes::is_empty")]
    pub custom_types: CustomTypes,
    /// Schedules calling webhooks, in creation order (those not included in metadata are
    /// kept in the catalog but left out of exports).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cron_triggers: Vec<CronTriggerEntry>,
    /// Queries of collections served at URLs, in creation order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rest_endpoints: Vec<RestEndpoint>,
    /// Named row shapes of native queries, in creation order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub logical_models: Vec<LogicalModelEntry>,
    /// SQL queries served as root fields, in creation order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub native_queries: Vec<NativeQueryEntry>,
    /// Per-role guards of the GraphQL API.
    #[serde(default, skip_serializing_if = "ApiLimits::is_empty")]
    pub api_limits: ApiLimits,
    /// Roles derived from other roles, in creation order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inherited_roles: Vec<InheritedRole>,
}

fn two() -> u32 {
    2
}

impl Default for Metadata {
    fn default() -> Self {
        Metadata {
            version: 2,
            tables: Vec::new(),
            functions: Vec::new(),
            remote_schemas: Vec::new(),
            query_collections: Vec::new(),
            allowlist: Vec::new(),
            actions: Vec::new(),
            custom_types: CustomTypes::default(),
            cron_triggers: Vec::new(),
            rest_endpoints: Vec::new(),
            logical_models: Vec::new(),
            native_queries: Vec::new(),
            api_limits: ApiLimits::default(),
            inherited_roles: Vec::new(),
        }
    }
}

impl Metadata {
    /// The entry of a tracked table.
    pub fn table(&self, table: &QualifiedTable) -> Option<&TableEntry> {
        self.tables.iter().find(|t| &t.table == table).map(|t| &**t)
    }

    /// The entry of a tracked table, mutably (copied first when another document still
    /// shares it; see [`Metadata::tables`]).
    pub fn table_mut(&mut self, table: &QualifiedTable) -> Option<&mut TableEntry> {
        self.tables
            .iter_mut()
            .find(|t| &t.table == table)
            .map(std::sync::Arc::make_mut)
    }

    /// The entry of a tracked function.
    pub fn function(&self, function: &QualifiedFunction) -> Option<&FunctionEntry> {
        self.functions.iter().find(|f| &f.function == function)
    }

    /// The entry of a tracked function, mutably.
    pub fn function_mut(&mut self, function: &QualifiedFunction) -> Option<&mut FunctionEntry> {
        self.functions.iter_mut().find(|f| &f.function == function)
    }

    /// Tables flagged as enum tables.
    pub fn enum_tables(&self) -> Vec<QualifiedTable> {
        self.tables
            .iter()
            .filter(|t| t.is_enum)
            .map(|t| t.table.clone())
            .collect()
    }

    /// The inherited role `name`.
    pub fn inherited_role(&self, name: &str) -> Option<&InheritedRole> {
        self.inherited_roles.iter().find(|r| r.role_name.0 == name)
    }

    /// A query collection by name.
    pub fn collection(&self, name: &str) -> Option<&CollectionEntry> {
        self.query_collections.iter().find(|c| c.name.0 == name)
    }
}
