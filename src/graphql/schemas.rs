//! The GraphQL schema of a role at one metadata version ([`RoleSchema`]: what it may do and
//! its types), and what every role's schema of that version shares while it is built
//! ([`SchemaBuilder`]: the remote schemas' types, and type definitions equal across roles).
//! Caching plans and answers is the engine's business, not this module's.

use super::model::{self, RoleModel};
use super::remote::RemoteTypes;
use super::types::{Name, TypeDef, TypeSystem};
use crate::resolve::Resolved;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// One role's schema.
pub struct RoleSchema {
    /// What the role may query and write.
    pub model: RoleModel,
    /// The role's GraphQL types, which documents are validated against and introspection
    /// answers from.
    pub types: TypeSystem,
}

impl std::fmt::Debug for RoleSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoleSchema")
            .field("role", &self.model.role)
            .finish()
    }
}

/// Builds the role schemas of one metadata version, each holding the type definitions of
/// the schemas built before it wherever they are equal (see [`TypeSystem::share`]).
#[derive(Debug)]
pub struct SchemaBuilder {
    /// The served remote schemas, merged into every role's types.
    remotes: Vec<RemoteTypes>,
    /// Every type definition of the role schemas built so far, by name.
    shared: RwLock<HashMap<Name, Arc<TypeDef>>>,
    /// The server settings the roles' models follow.
    settings: model::ModelSettings,
}

impl SchemaBuilder {
    /// A builder for the schemas of `resolved`, under `settings`.
    pub fn new(resolved: &Resolved, settings: model::ModelSettings) -> Self {
        SchemaBuilder {
            remotes: super::remote::parse_all(resolved),
            shared: RwLock::new(HashMap::new()),
            settings,
        }
    }

    /// The schema of `role` in `resolved` (the metadata this builder was made for). Roles
    /// without permissions get an empty schema; with `backend_flagged`, a non-admin role sees
    /// only its backend-only insert permissions.
    pub fn build(&self, resolved: &Resolved, role: &str, backend_flagged: bool) -> RoleSchema {
        let model = model::build_for(resolved, role, backend_flagged, &self.settings);
        let mut types = {
            let known = self.shared.read().unwrap_or_else(|p| p.into_inner());
            super::typegen::build_sharing(&model, &known)
        };
        for remote in &self.remotes {
            super::remote::merge(&mut types, remote);
        }
        super::remote_join::add_fields(&mut types, &model, &self.remotes);
        super::remote_to_table::add_fields(&mut types, &model);
        types.share(&mut self.shared.write().unwrap_or_else(|p| p.into_inner()));
        RoleSchema { model, types }
    }
}

/// The roles that have a schema of their own in `resolved`: admin and every role a permission
/// names. Any other role gets the empty schema.
pub fn roles(resolved: &Resolved) -> impl Iterator<Item = &str> {
    std::iter::once(model::ADMIN).chain(resolved.roles.iter().map(String::as_str))
}
