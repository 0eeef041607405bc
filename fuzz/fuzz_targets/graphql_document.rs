//! GraphQL documents with variables, planned and translated as a role (prepare → plan →
//! translate → print). The input is a JSON request (`{"role", "query", "variables",
//! "operationName"}`, as in the seed corpus) or, when it is not one, the choices of a
//! generator that writes documents against the role's schema (`targets::graphql_request`).

#![no_main]

#[path = "../../tests/it/properties/targets/mod.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let fx = targets::fixture();
    let request = targets::graphql_from_bytes(fx, data);
    if let Ok(compiled) = targets::compile_graphql(fx, &request) {
        // Printing must hold up too (it is what reaches Postgres).
        for statement in compiled.statements() {
            assert!(!statement.sql.is_empty());
        }
    }
});
