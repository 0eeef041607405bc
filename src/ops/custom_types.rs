//! `set_custom_types`, validated by `resolve::check_custom_types`. See `docs/metadata-api.md`,
//! "Custom types". Must not do IO, read the clock, or edit anything but the `Metadata` it returns.

use super::Context;
use crate::metadata::error::{Code, MetadataError, Result};
use crate::metadata::parse::parse;
use crate::metadata::path::JsonPath;
use crate::metadata::types::*;
use crate::resolve::actions::check_action_types;
use crate::resolve::{self, Resolution};
use serde_json::Value;

/// `set_custom_types`: replaces every custom type.
#[derive(Debug, Clone)]
pub struct SetCustomTypes(pub CustomTypes);

impl SetCustomTypes {
    pub fn parse(args: &Value, path: &JsonPath) -> Result<Self> {
        parse(args, path).map(SetCustomTypes)
    }

    pub fn apply(
        &self,
        metadata: &Metadata,
        cache: &Resolution,
        ctx: Context<'_>,
    ) -> Result<Metadata> {
        resolve::check_custom_types(&self.0, &cache.resolved, ctx.db)
            .map_err(|e| e.under(&JsonPath::args()))?;
        // An action's types must survive the replacement.
        for action in &metadata.actions {
            if let Err(e) = check_action_types(&action.definition, &self.0, ctx.db) {
                return Err(MetadataError::new(
                    Code::DependencyError,
                    JsonPath::args(),
                    format!(
                        "the custom types are used by action \"{}\": {}",
                        action.name, e.message
                    ),
                ));
            }
        }
        let mut next = metadata.clone();
        next.custom_types = self.0.clone();
        Ok(next)
    }
}
