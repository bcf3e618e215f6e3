#!/usr/bin/env bash
# The test suite on one CPython, from a checkout: a venv (.venv), the development extras, the
# extension built and installed (editable, the dev-fast profile: optimised, without the
# release build's whole-program LTO), then the Python suite and, beside it, the Rust crates'
# tests. The README's quick start gives this command; CI runs it first (.ci/run).
#
#   PYTHON=python3.12 bash tools/test.sh    # the interpreter (default: python3, >= 3.10)
#   AGUI_VENV=path                          # the venv (default: .venv, made if missing)
#   bash tools/test.sh -k decoder -x        # arguments go to pytest
#
# Needs Rust (stable, >= the workspace's rust-version) with cargo, and a C compiler.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PYTHON=${PYTHON:-python3}
VENV=${AGUI_VENV:-$ROOT/.venv}
LOGS=$ROOT/target/test
mkdir -p "$LOGS"
rm -f "$LOGS/built"
START=$SECONDS
say() { printf '== [%3ds] %s\n' "$((SECONDS - START))" "$*"; }

command -v cargo >/dev/null || { echo "test.sh: cargo not found: install Rust (https://rustup.rs)" >&2; exit 1; }
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null \
    || { echo "test.sh: $PYTHON is not CPython >= 3.10 (set PYTHON=...)" >&2; exit 1; }

# uv makes the venv and installs in seconds where it is on PATH; pip does the same otherwise.
if [ ! -x "$VENV/bin/python" ]; then
    say "venv $VENV ($("$PYTHON" -c 'import platform; print(platform.python_version())'))"
    if command -v uv >/dev/null; then
        uv venv --quiet --python "$PYTHON" "$VENV"
    else
        "$PYTHON" -m venv "$VENV"
        "$VENV/bin/python" -m pip install --quiet --upgrade pip
    fi
fi
pip_install() {
    if command -v uv >/dev/null; then
        uv pip install --quiet --python "$VENV/bin/python" "$@"
    else
        "$VENV/bin/python" -m pip install --quiet "$@"
    fi
}

# The Rust tests build beside the extension (in a target dir of their own, so that neither
# build waits for the other's lock) and run beside the Python suite: on two cores the whole
# command takes about as long as the longer of the two. Their build is niced (the
# extension's build and the suite are the critical path); their run is not (some Rust tests
# bound their own wall time). serde_json, miniz_oxide, memchr and simdutf8, where the tests
# spend their time (the vectors, the gzipped ones, the frame searches and UTF-8 checks, whose
# SIMD kernels are a function call an instruction when unoptimised), are optimised at level
# 1; debug assertions and overflow checks stay on.
CARGO_TEST=(cargo test -p agui-core -p agui-arrow --locked --target-dir "$ROOT/target/tests"
            --config 'profile.dev.package.serde_json.opt-level=1'
            --config 'profile.dev.package.miniz_oxide.opt-level=1'
            --config 'profile.dev.package.memchr.opt-level=1'
            --config 'profile.dev.package.simdutf8.opt-level=1')
rust_tests() {
    CARGO_PROFILE_DEV_DEBUG=line-tables-only nice -n 10 "${CARGO_TEST[@]}" --no-run
    CARGO_PROFILE_DEV_DEBUG=line-tables-only "${CARGO_TEST[@]}"
}
say "background: ${CARGO_TEST[*]} (log: $LOGS/rust.log)"
rust_tests >"$LOGS/rust.log" 2>&1 &
RUST=$!
trap 'kill "$RUST" 2>/dev/null || true' EXIT

say "the package with the development extras (editable; builds the extension)"
# uv would reuse its cached build of an unchanged pyproject.toml: the Rust may have changed.
reinstall=()
command -v uv >/dev/null && reinstall=(--reinstall-package agui-fast)
MATURIN_PEP517_ARGS="--profile dev-fast" pip_install -e ".[dev]" "${reinstall[@]}"
"$VENV/bin/python" -c 'import agui_fast._native'
touch "$LOGS/built"  # CI tests this build on the other CPythons from here on

say "the Python suite"
rc=0
"$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@" || rc=$?

say "the Rust tests"
if wait "$RUST"; then
    grep -E '^test result:' "$LOGS/rust.log" | awk '{p += $4; f += $6} END {print "   " p " passed, " f " failed"}'
else
    rc=1
    tail -n 60 "$LOGS/rust.log"
    echo "test.sh: the Rust tests failed (log: $LOGS/rust.log)" >&2
fi
trap - EXIT
[ "$rc" -eq 0 ] && say "all passed" || say "FAILED"
exit "$rc"
