#!/usr/bin/env bash
# CI smoke run: build every fuzz target and run each for a few seconds from the seeds
# (tests/vectors, written by seed_corpus.py), failing on any crash, panic, leak of
# memory past the RSS limit or timeout.
# Usage: fuzz/smoke.sh [seconds per target, default 5]
#   FUZZ_SANITIZER: `none` by default (a cheap build for CI; the properties the targets
#   assert are checked the same); the long runs use `address` (see README.md).
#   FUZZ_JOBS: targets run at once (default 1; CI runs one per core).
#   FUZZ_BUILD_ONLY=1: build the targets and stop (CI builds them beside its other jobs and
#   runs them once the machine is quieter: the runs are timed in wall seconds).
# Needs the nightly toolchain; installs cargo-fuzz from crates.io when it is missing.
set -euo pipefail
cd "$(dirname "$0")"
secs="${1:-5}"
san="${FUZZ_SANITIZER:-none}"
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== cargo install cargo-fuzz --locked"
    cargo install cargo-fuzz --locked --quiet
fi
python3 seed_corpus.py
# Debug assertions (overflow checks included) on, as in the long runs. A smoke run is seconds
# of inputs a target, so its build is optimised at level 1, not 3 (the eight targets: 162 ->
# 146 CPU-s on a quiet machine, 194 -> 154 on a busy one; debug info off saved nothing more),
# for 0-20% fewer inputs in a smoke run and the same checks.
# Set in the environment, so that `cargo fuzz run` below finds this same build; the long
# runs (README.md) keep level 3.
export CARGO_PROFILE_RELEASE_OPT_LEVEL="${CARGO_PROFILE_RELEASE_OPT_LEVEL:-1}"
# libfuzzer-sys compiles libFuzzer's 26 C++ files with full debug info (cc's -gdwarf-4, as the
# profile has line tables); a crash report symbolizes the target's frames, not libFuzzer's.
# Without it: 23.5 -> 18.4 CPU-s (g++ 12, -O1).
export CXXFLAGS_x86_64_unknown_linux_gnu="${CXXFLAGS_x86_64_unknown_linux_gnu:--g0}"
cargo +nightly fuzz build -O -a -s "$san"
[ "${FUZZ_BUILD_ONLY:-0}" = 1 ] && exit 0
smoke() {  # smoke TARGET: its run, summed up in one line; on failure its log's tail
    local target=$1 log="artifacts/$1/smoke.log" start=$SECONDS runs cov
    mkdir -p "corpus/$target" "artifacts/$target"
    # -timeout: a single input slower than 10 s is a hang (quadratic time is a finding).
    if ! cargo +nightly fuzz run -O -a -s "$san" "$target" "corpus/$target" -- \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 -print_final_stats=1 >"$log" 2>&1; then
        tail -n 40 "$log"
        echo "fuzz smoke: $target failed (log: fuzz/$log, reproducer in fuzz/artifacts/$target/)" >&2
        return 1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -n 1)
    echo "== $target: ${runs:-?} inputs in $((SECONDS - start))s, $cov"
}
# FUZZ_JOBS at once, waited for in order (the runs take about the same time); every target
# runs, and any failure fails the smoke run.
pids=()
failed=0
for target in $(cargo +nightly fuzz list); do
    smoke "$target" &
    pids+=("$!")
    if [ "${#pids[@]}" -ge "${FUZZ_JOBS:-1}" ]; then
        wait "${pids[0]}" || failed=1
        pids=("${pids[@]:1}")
    fi
done
for pid in "${pids[@]}"; do
    wait "$pid" || failed=1
done
exit "$failed"
