#!/usr/bin/env bash
# The memory-safety lane: the extension built with AddressSanitizer (nightly Rust,
# `-Zsanitizer=address`, the system allocator instead of mimalloc so that every Rust
# allocation is seen) and the tests that exercise the binding's raw steps (the object walker,
# construction, patch documents, the decoders, the Arrow handover) run on it, with
#   * the ASan runtime preloaded into Python (GCC's shared libasan: the extension is a shared
#     object, and the runtime must be loaded before anything it intercepts),
#   * PYTHONMALLOC=malloc: every Python object a malloc block of its own, so that a read of a
#     freed object or past an object's end is seen (pymalloc's arenas hide both),
#   * detect_leaks=0: CPython keeps objects alive at exit on purpose,
#   * the reports written to files (log_path; pytest's capture holds the test's stderr), and
#     printed here,
#   * the `sanitize` feature, and debug assertions in escape-simd: the two SIMD string
#     escapers then read a string's tail through a copy, not by a 32-byte load that may pass
#     the string's end within its page (harmless on hardware, but outside the allocation,
#     which is what the sanitizer checks; escape-simd's own `asan` feature keeps the wide
#     load in builds without debug assertions),
#   * debug assertions in agui-arrow: every Arrow column it vouches for (the `json` views, the
#     string offsets) is checked again as it is made, before the binding hands it over
#     without arrow's checks,
#   * no Parquet writer (the default `parquet` feature left out): it is safe Rust beside the
#     binding, and parquet is the largest crate of the build; the one test that writes
#     Parquet is left out below.
# Any report fails the lane (halt_on_error, exit code 99).
# Usage: tools/asan.sh PYTHON [pytest arguments...]; PYTHON: an interpreter whose environment
# has the dev extra (the lane makes a venv of its own from it, and builds into it).
set -euo pipefail
cd "$(dirname "$0")/.."
BASE_PY=$1
shift
WORK="${AGUI_ASAN_DIR:-target/asan}"
TARGET=x86_64-unknown-linux-gnu  # given explicitly: build scripts and proc-macros stay unsanitized
LIBASAN=$(gcc -print-file-name=libasan.so)
[ -e "$LIBASAN" ] || { echo "asan: GCC's libasan not found (apt-get install libasan8 gcc)"; exit 1; }
rustup run nightly rustc --version >/dev/null 2>&1 || rustup toolchain install nightly --profile minimal

# A venv of its own: the dev extra and the runtime dependencies (from pyproject.toml), by uv
# when $UV names it (tools/ci.sh's), else pip.
rm -rf "$WORK/venv"
mkdir -p "$WORK"
"$BASE_PY" - >"$WORK/requirements.txt" <<'PY'
import tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
print("\n".join(project["dependencies"] + project["optional-dependencies"]["dev"] + ["maturin>=1.9.4,<2"]))
PY
if [ -n "${UV:-}" ]; then
    "$UV" venv --quiet --python "$BASE_PY" "$WORK/venv"
    "$UV" pip install --quiet --python "$WORK/venv/bin/python" -r "$WORK/requirements.txt"
else
    "$BASE_PY" -m venv "$WORK/venv"
    "$WORK/venv/bin/python" -m pip install --quiet -r "$WORK/requirements.txt"
fi
VPY="$WORK/venv/bin/python"
# Unoptimised, with line tables for the reports (instrumented all the same, in far less CPU
# time), but for the binding (agui-py) and PyO3 at level 1: they are on every call's path,
# and the object walker's recursion keeps frames near an optimised build's size (unoptimised,
# with the redzones, the depth limit's recursion outgrows even the main thread's stack). The
# workspace's crates one codegen unit each (the least CPU; they build one after the other
# anyway); the dependencies without debug info.
RUSTUP_TOOLCHAIN=nightly RUSTFLAGS="-Zsanitizer=address -Cforce-frame-pointers=yes" \
CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
CARGO_PROFILE_RELEASE_OPT_LEVEL=0 CARGO_PROFILE_RELEASE_DEBUG=line-tables-only \
CARGO_TARGET_DIR="$WORK/target" \
    "$WORK/venv/bin/maturin" build --release --target "$TARGET" --no-default-features \
    --features pyo3/extension-module,sanitize --config 'profile.release.package.escape-simd.debug-assertions=true' \
    --config 'profile.release.package.agui-arrow.debug-assertions=true' \
    --config 'profile.release.package."*".debug=false' \
    --config 'profile.release.package.pyo3.opt-level=1' --config 'profile.release.package.agui-py.opt-level=1' \
    --config 'profile.release.package.agui-core.codegen-units=1' \
    --config 'profile.release.package.agui-arrow.codegen-units=1' \
    --config 'profile.release.package.agui-py.codegen-units=1' \
    --out "$WORK/wheel"
"$VPY" -m pip install --quiet --no-deps --force-reinstall "$WORK"/wheel/agui_fast-*.whl 2>/dev/null \
    || "${UV:-false}" pip install --quiet --python "$VPY" --no-deps --reinstall "$WORK"/wheel/agui_fast-*.whl

export LD_PRELOAD="$LIBASAN"
export PYTHONMALLOC=malloc
REPORTS="$WORK/reports"
rm -rf "$REPORTS"
mkdir -p "$REPORTS"
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:exitcode=99:abort_on_error=0:detect_stack_use_after_return=0:log_path=$REPORTS/asan"
"$VPY" -c 'import agui_fast._native as n, sys; assert n.__file__.startswith(sys.prefix), n.__file__'
rc=0
# Left out: the depth limit on a 512 KiB thread stack. The limit keeps the walker's recursion
# within a stack that size in optimised builds; the sanitizer's redzones make each frame
# several times larger, so that stack overflows first there (a property of the instrumented
# build, tested in every other lane). And the Parquet output, not in this build.
"$VPY" -m pytest -q -p no:cacheprovider "$@" \
    --deselect tests/test_json_writer.py::test_depth_limit_in_small_thread_stack \
    --deselect tests/test_arrow.py::test_parquet_of_the_cli_is_read_by_duckdb \
    tests/test_json_writer.py tests/test_construct.py tests/test_patch.py tests/test_state_document.py \
    tests/test_sse_decode.py tests/test_proto.py tests/test_stream_state_objects.py tests/test_arrow.py || rc=$?
[ "$rc" -ne 5 ] || { echo "pytest collected no tests: that is a failure, not a pass"; exit 1; }
if [ -n "$(ls -A "$REPORTS")" ]; then
    cat "$REPORTS"/*
    echo "asan: the sanitizer reported (above)"
    exit 99
fi
exit "$rc"
