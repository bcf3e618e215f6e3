//! The allocation budget of every target: the Rust heap (what the core crate allocates;
//! libFuzzer's own C++ allocations are not counted) holds at most [`ALLOC_LIMIT_MB`] at once.
//! An allocation past it fails as an out-of-memory does (`handle_alloc_error` aborts, and
//! libFuzzer keeps the input as a crash), so an input that makes the core allocate more than
//! the budget is a finding in every build. libFuzzer's `-malloc_limit_mb` (which smoke.sh
//! passes too) works only in sanitizer builds, and its `-rss_limit_mb` only notices memory
//! after the fact, every second.
use cap::Cap;
use std::alloc::System;

/// The budget, in MiB: far above what an input of a few KiB needs with the targets' limits
/// (the largest, replay_patch, replays a log several ways with patch budgets of at most
/// 4 MiB), far below the RSS limit of the runs (2048 MiB).
pub const ALLOC_LIMIT_MB: usize = 512;

#[global_allocator]
static ALLOC: Cap<System> = Cap::new(System, ALLOC_LIMIT_MB << 20);
