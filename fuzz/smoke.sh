#!/usr/bin/env bash
# CI smoke run: build every fuzz target and run each for a few seconds from the seeds
# (tests/vectors, written by seed_corpus.py), failing on the first crash, panic, leak of
# memory past the RSS limit or timeout.
# Usage: fuzz/smoke.sh [seconds per target, default 5]
#   FUZZ_SANITIZER: `none` by default (a cheap build for CI; the properties the targets
#   assert are checked the same); the long runs use `address` (see README.md).
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
# Debug assertions (overflow checks included) on, as in the long runs.
cargo +nightly fuzz build -O -a -s "$san"
for target in $(cargo +nightly fuzz list); do
    mkdir -p "corpus/$target" "artifacts/$target"
    log="artifacts/$target/smoke.log"
    start=$SECONDS
    # -timeout: a single input slower than 10 s is a hang (quadratic time is a finding).
    if ! cargo +nightly fuzz run -O -a -s "$san" "$target" "corpus/$target" -- \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1; then
        tail -n 40 "$log"
        echo "fuzz smoke: $target failed (log: fuzz/$log, reproducer in fuzz/artifacts/$target/)" >&2
        exit 1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -n 1)
    echo "== $target: ${runs:-?} inputs in $((SECONDS - start))s, $cov"
done
