#!/usr/bin/env bash
# The workspace's minimum Rust: `cargo check` of every crate and target, locked, with the
# toolchain named by `rust-version` in Cargo.toml (installed by rustup, minimal profile, when
# missing). A dependency that needs a newer Rust fails here, so `rust-version` stays honest.
# Its own target dir: the check's artifacts are the old toolchain's, shared with no build.
set -euo pipefail
cd "$(dirname "$0")/.."
MSRV=$(sed -n 's/^rust-version = "\([0-9.]*\)"$/\1/p' Cargo.toml)
[ -n "$MSRV" ] || { echo "msrv: no rust-version in Cargo.toml" >&2; exit 1; }
rustup run "$MSRV" rustc --version >/dev/null 2>&1 || rustup toolchain install "$MSRV" --profile minimal
echo "msrv: cargo +$MSRV check --workspace --all-targets --locked"
cargo "+$MSRV" check --workspace --all-targets --locked --target-dir "${CARGO_TARGET_DIR:-target}/msrv"
