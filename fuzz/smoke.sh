#!/usr/bin/env bash
# CI smoke run: build every fuzz target and run each for a few seconds from the seeds
# (tests/vectors). Usage: fuzz/smoke.sh [seconds per target, default 10]
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
set -euo pipefail
cd "$(dirname "$0")"
secs="${1:-10}"
python3 seed_corpus.py
cargo +nightly fuzz build -O
for target in $(cargo +nightly fuzz list); do
    echo "== $target (${secs}s)"
    mkdir -p "corpus/$target"
    cargo +nightly fuzz run -O "$target" "corpus/$target" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1 2>&1 | grep -E "^(#|Done|stat::number_of_executed_units|==)" | tail -3
done
