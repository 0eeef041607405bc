//! `/v1/query` bodies: `Op::parse`, then `ops::apply` of every operation against the fixed
//! metadata and database model, the "no new inconsistency" rule, and, for accepted changes,
//! the stored document reloading and every role's schema building. The input is a JSON body
//! (as in the seed corpus) or the choices of a generator of bodies
//! (`targets::metadata_request`).

#![no_main]

#[path = "../../tests/it/properties/targets/mod.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let fx = targets::fixture();
    let request = targets::request_from_bytes(fx, data);
    let _ = targets::apply_request(fx, &request);
});
