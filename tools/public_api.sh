#!/usr/bin/env bash
# The Python suite with AGUI_FAST_PUBLIC_API=1: the extension reads every object through
# CPython's public API and builds Structs through `tp_call`, the paths taken by interpreters
# whose memory layouts it does not know (3.14 and later), tested here on one whose layouts it
# knows (CI runs it light: AGUI_TEST_LIGHT=1). Usage: tools/public_api.sh PYTHON [pytest
# arguments...], PYTHON an environment with agui_fast and the dev extra installed.
set -euo pipefail
PY=$1
shift
cd "$(dirname "$0")/.."
# The switch is on: no direct read, no vectorcall.
AGUI_FAST_PUBLIC_API=1 "$PY" -c 'from agui_fast import _native; import agui_fast.core
assert not any(_native._testing.direct_reads().values()) and not _native.struct_meta_vectorcall()'
rc=0
AGUI_FAST_PUBLIC_API=1 "$PY" -m pytest -q -p no:cacheprovider "$@" || rc=$?
[ "$rc" -ne 5 ] || { echo "pytest collected no tests: that is a failure, not a pass"; exit 1; }
exit "$rc"
