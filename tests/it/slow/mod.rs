//! The slow tier: tests that start and kill real processes, run for a fixed time, drive a
//! browser or need a real cluster. `cargo test --test it slow::` runs them alone and
//! `cargo test --test it -- --skip slow::` everything else; `docs/testing.md` lists why each
//! is here.

mod actions_crash;
mod console;
mod controller_failover;
mod crashes;
mod e2e_cluster;
mod events_delivery;
mod soak;
