//! Tracked functions through `run_sql` and other metadata operations.
