//! The CRDs' CEL rules checked client-side, as the API server would (a resource that slipped
//! past admission, or came from an older CRD, is reported rather than applied). kube's
//! generated `validate_cel` builds the CRD's schema and compiles its rules on every call, which
//! is expensive when many resources are applied; here each kind's schema is compiled once per
//! thread (compiled CEL programs are not `Sync`).

use kube::core::cel::{compile_schema, CompiledSchema, ValidationErrors, Validator};
use kube::CustomResourceExt;
use std::any::TypeId;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

thread_local! {
    static COMPILED: RefCell<HashMap<TypeId, Rc<(Validator, CompiledSchema)>>> =
        RefCell::new(HashMap::new());
}

/// The CRD schema of `T` with its CEL rules compiled, made once per thread.
fn compiled<T: CustomResourceExt + 'static>() -> Rc<(Validator, CompiledSchema)> {
    COMPILED.with(|cache| {
        cache
            .borrow_mut()
            .entry(TypeId::of::<T>())
            .or_insert_with(|| {
                let crd = T::crd();
                let schema = crd
                    .spec
                    .versions
                    .first()
                    .and_then(|v| v.schema.as_ref())
                    .and_then(|s| s.open_api_v3_schema.as_ref())
                    .and_then(|s| serde_json::to_value(s).ok())
                    .unwrap_or_default();
                Rc::new((Validator::new(), compile_schema(&schema)))
            })
            .clone()
    })
}

/// Checks `resource` against its kind's CEL rules (`x-kubernetes-validations`).
pub fn validate<T>(resource: &T) -> Result<(), ValidationErrors>
where
    T: CustomResourceExt + serde::Serialize + 'static,
{
    let compiled = compiled::<T>();
    let object = serde_json::to_value(resource).unwrap_or_default();
    compiled.0.validate_compiled(&compiled.1, &object, None)
}
