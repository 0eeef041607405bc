//! The reference engine's own function test cases, ported as HTTP tests.
