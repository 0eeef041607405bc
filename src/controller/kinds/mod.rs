//! The `basalt.dev/v1alpha1` resource kinds (`docs/kubernetes.md`, "Kinds"): the one table of
//! them (`kinds!` below) and the [`Kind`] trait each implements in its own module, with its
//! CRD types (spec fields are the metadata API's arguments in camelCase; user data such as
//! BoolExps, presets and column maps passes through verbatim), the objects a spec declares and
//! the specs that reproduce a document's objects (`basalt export`).
//!
//! Everything that goes over every kind reads the table: the CRDs ([`crds`]), the controller's
//! watches and orphan scans (`for_each_kind`), the export and `basalt diff` ([`declared`],
//! [`rank`], [`singleton`]). A new kind is a module here and one line in the table.

mod common;

pub use crate::names::QualifiedName;
pub use common::{preserved_any, preserved_object, HeaderSpec, KindStatus, ResourceStatus};

use crate::catalog::CatalogError;
use crate::metadata::objects::Object;
use crate::metadata::{Metadata, MetadataError};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::object::HasStatus;
use kube::{CustomResourceExt, Resource};
use serde_json::Value;

/// A resource kind the controller reconciles.
pub trait Kind:
    Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
    + HasStatus<Status: KindStatus>
    + CustomResourceExt
    + Clone
    + std::fmt::Debug
    + serde::de::DeserializeOwned
    + serde::Serialize
    + Send
    + Sync
    + 'static
{
    /// Whether at most one resource of the kind may own its object at a time, because the
    /// catalog holds one such object (`api_limits`): the owner keeps it, and with no owner the
    /// oldest resource applies while the others report `Conflict` (`super::singleton`).
    const SINGLETON: bool = false;

    /// The catalog objects the spec declares.
    fn declared(&self) -> Result<Vec<Object>, MetadataError>;

    /// The CRD's CEL rules, evaluated client-side (for objects created before a rule
    /// existed).
    fn check_cel(&self) -> Result<(), SpecError> {
        super::cel::validate(self).map_err(SpecError::Cel)
    }

    /// Fills the kind's own status fields after a reconcile that brought the catalog in line
    /// (or found it so), from what the catalog knows.
    fn observe(
        &self,
        _pool: &deadpool_postgres::Pool,
        _status: &mut <Self as HasStatus>::Status,
    ) -> impl std::future::Future<Output = Result<(), CatalogError>> + Send {
        std::future::ready(Ok(()))
    }

    /// The resources of this kind that reproduce the objects of `metadata`, in the
    /// document's order.
    fn export(metadata: &Metadata) -> Vec<ExportedSpec>;
}

/// Why a resource's spec cannot be applied as it stands; reported as `InvalidSpec`, never
/// retried until the spec changes.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// A CEL validation rule of the CRD fails.
    #[error("validation rule failed: {0}")]
    Cel(kube::core::cel::ValidationErrors),
    /// The spec does not map to metadata objects.
    #[error("{}: {}", .0.path, .0.message)]
    Mapping(MetadataError),
}

/// Why a resource declares no objects: its manifest does not fit its kind's schema, or its spec
/// cannot be applied ([`SpecError`]).
#[derive(Debug, thiserror::Error)]
pub enum DeclareError {
    #[error("does not match its schema: {0}")]
    Schema(serde_json::Error),
    #[error(transparent)]
    Spec(#[from] SpecError),
}

/// One resource an export writes: the parts its name is made of, and its spec.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportedSpec {
    pub name: Vec<String>,
    pub spec: Value,
}

impl ExportedSpec {
    fn new(name: Vec<String>, spec: Value) -> Self {
        ExportedSpec { name, spec }
    }
}

/// The table of kinds: each kind's module and type, in the order resources are applied
/// (dependencies first: types and remote schemas need nothing, tables come before what is
/// defined on them, types before the actions that use them, permissions and actions before the
/// inherited roles whose parents they make known; nothing depends on API limits). It declares the modules and
/// writes every function that goes over all kinds.
macro_rules! kinds {
    // `$d` is a `$` passed in, for the macro this one writes.
    ($d:tt; $($module:ident::$kind:ident),+ $(,)?) => {
        $(
            pub mod $module;
            pub use $module::*;
        )+

        /// Runs `$m!(Kind)` for every kind, in the table's order.
        macro_rules! for_each_kind {
            ($d m:ident) => { $( $d m!($crate::controller::kinds::$kind); )+ };
        }
        pub(crate) use for_each_kind;

        /// Every CRD, in the table's order.
        pub fn crds() -> Vec<CustomResourceDefinition> {
            vec![$( <$kind as CustomResourceExt>::crd() ),+]
        }

        /// Every kind's name, in the table's order.
        pub const NAMES: &[&str] = &[$( stringify!($kind) ),+];

        /// The objects a resource of kind `kind` declares, checked as the controller checks
        /// them (its schema, its CEL rules, its mapping); `None` for a kind Basalt does not
        /// have.
        pub fn declared(
            kind: &str,
            manifest: &Value,
        ) -> Option<Result<Vec<Object>, DeclareError>> {
            $(
                if kind == stringify!($kind) {
                    return Some(declared_by::<$kind>(manifest));
                }
            )+
            None
        }

        /// Whether `kind` is a singleton kind ([`Kind::SINGLETON`]).
        pub fn singleton(kind: &str) -> bool {
            $(
                if kind == stringify!($kind) {
                    return <$kind as Kind>::SINGLETON;
                }
            )+
            false
        }

        /// Every kind's resources reproducing `metadata`, kind by kind in the table's order:
        /// (kind, name parts, manifest checked against the kind's schema).
        pub fn export(metadata: &Metadata) -> Vec<(&'static str, ExportedSpec, ExportCheck)> {
            let mut out = Vec::new();
            $(
                for spec in <$kind as Kind>::export(metadata) {
                    out.push((stringify!($kind), spec, fits::<$kind> as ExportCheck));
                }
            )+
            out
        }
    };
}

kinds! { $;
    custom_type_set::CustomTypeSet,
    remote_schema::RemoteSchema,
    tracked_table::TrackedTable,
    computed_field::ComputedField,
    permission::Permission,
    tracked_function::TrackedFunction,
    logical_model::LogicalModel,
    native_query::NativeQuery,
    event_trigger::EventTrigger,
    cron_trigger::CronTrigger,
    action::Action,
    query_collection::QueryCollection,
    allowlist_entry::AllowListEntry,
    rest_endpoint::RestEndpoint,
    inherited_role::InheritedRole,
    api_limit_policy::ApiLimitPolicy,
}

/// Where a kind's resources go among the others (its row in the table); kinds Basalt does not
/// have go last.
pub fn rank(kind: &str) -> usize {
    NAMES.iter().position(|k| *k == kind).unwrap_or(NAMES.len())
}

/// Checks a manifest against the schema of the kind it was exported as.
pub type ExportCheck = fn(&Value) -> Result<(), serde_json::Error>;

fn fits<K: Kind>(manifest: &Value) -> Result<(), serde_json::Error> {
    serde_json::from_value::<K>(manifest.clone()).map(|_| ())
}

fn declared_by<K: Kind>(manifest: &Value) -> Result<Vec<Object>, DeclareError> {
    let resource: K = serde_json::from_value(manifest.clone()).map_err(DeclareError::Schema)?;
    resource.check_cel()?;
    Ok(resource.declared().map_err(SpecError::Mapping)?)
}
