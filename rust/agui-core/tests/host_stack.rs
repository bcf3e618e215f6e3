//! A host that checks its own recursion by the stack pointer (CPython 3.14 and later,
//! `limits::set_host_checks_stack`) keeps nested work on its thread's stack. Its own test
//! binary: the switch is process-wide.

use agui_core::limits::{deep, nest, set_host_checks_stack, DEFAULT_MAX_DEPTH};

/// (The stack left on a small thread, the stack left inside `deep` and inside `nest`.)
fn left_on_a_small_thread() -> (usize, usize, usize) {
    let left = || stacker::remaining_stack().expect("known on this platform");
    std::thread::Builder::new()
        .stack_size(64 << 10)
        .spawn(move || (left(), deep(DEFAULT_MAX_DEPTH, left), nest(left)))
        .expect("a thread")
        .join()
        .expect("no panic")
}

#[test]
fn a_host_that_checks_its_stack_keeps_nested_work_on_its_thread() {
    // By default a small thread's nested work moves onto a segment with room for it.
    let (outer, in_deep, in_nest) = left_on_a_small_thread();
    assert!(in_deep > outer && in_nest > outer, "{outer} {in_deep} {in_nest}");
    set_host_checks_stack(true);
    let (outer, in_deep, in_nest) = left_on_a_small_thread();
    assert!(in_deep <= outer && in_nest <= outer, "{outer} {in_deep} {in_nest}");
    set_host_checks_stack(false);
}
