//! Measurement switches: environment variables that turn one of the
//! engine's rules off (`NAME=0`) to measure what the rule changes, or one
//! not yet measured on (`NAME=1`), read once per process.

use std::sync::OnceLock;

/// Whether the rule behind the variable `name` is on: yes unless it is set
/// to `0`. `cell` keeps the answer for the rest of the process.
pub(crate) fn on_unless_zero(cell: &'static OnceLock<bool>, name: &str) -> bool {
    *cell.get_or_init(|| std::env::var(name).map_or(true, |v| v.trim() != "0"))
}

/// Whether the rule behind the variable `name`, off by default (not yet
/// measured), is on: only where it is set to `1`. `cell` keeps the answer
/// for the rest of the process.
pub(crate) fn on_if_one(cell: &'static OnceLock<bool>, name: &str) -> bool {
    *cell.get_or_init(|| std::env::var(name).is_ok_and(|v| v.trim() == "1"))
}
