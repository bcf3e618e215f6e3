#!/usr/bin/env bash
# The browser of the report's browser tests (tests/test_report_browser.py): Chromium from the
# system's packages (apt, when run as root and Chromium is missing) and Playwright from PyPI
# into the given Python (default: python3 on PATH) when it lacks it. Playwright drives the
# system Chromium: no browser download. Idempotent: does nothing when both are there.
#   bash tools/install_browser.sh [PYTHON]
set -euo pipefail
PYTHON=${1:-python3}

chromium=""
for name in chromium chromium-browser google-chrome google-chrome-stable; do
    if command -v "$name" >/dev/null 2>&1; then chromium=$(command -v "$name"); break; fi
done
if [[ -z $chromium ]]; then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends chromium >/dev/null
        chromium=$(command -v chromium)
    else
        echo "install_browser: no Chromium, and cannot install one (needs root and apt-get)" >&2
        exit 1
    fi
fi

if ! "$PYTHON" -c "import playwright.sync_api" >/dev/null 2>&1; then
    if command -v uv >/dev/null 2>&1; then
        uv pip install --python "$PYTHON" "playwright>=1.45"
    else
        "$PYTHON" -m pip install --quiet "playwright>=1.45"
    fi
fi
echo "install_browser: $("$chromium" --version 2>/dev/null | head -n1) at $chromium; Playwright $("$PYTHON" -c 'from importlib.metadata import version; print(version("playwright"))')"
