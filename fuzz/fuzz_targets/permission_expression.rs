//! Permission expressions: the BoolExp checker, `check_permission` and
//! `create_<kind>_permission`, and for an accepted permission, its role's schema and the SQL of
//! its root fields. The input is a `create_<kind>_permission` body (as in the seed corpus) or
//! the choices of a generator of permissions (`targets::permission_case`).

#![no_main]

#[path = "../../tests/it/properties/targets/mod.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let fx = targets::fixture();
    let case = targets::permission_from_bytes(fx, data);
    let _ = targets::check_permission_case(fx, &case);
});
