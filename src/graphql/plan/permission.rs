//! The role's row filters in the plan (see [`crate::graphql::model::permission`]).

use super::Planner;
use crate::graphql::ir::*;
pub use crate::graphql::model::permission;
use crate::graphql::model::RoleTable;

impl Planner<'_> {
    /// The role's row filter for a table; `["$", col]` inside it refers to that table.
    pub(super) fn permission_filter(&self, table: &RoleTable) -> Option<BoolExpr> {
        table.filter.as_ref().map(permission)
    }
}
