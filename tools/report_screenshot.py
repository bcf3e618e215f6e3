"""docs/report.png: the report of the demo run (`python -m agui_fast demo`), in headless
Chromium (tools/install_browser.sh installs it and Playwright).

    python tools/report_screenshot.py [OUT.png]
"""

import shutil
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from agui_fast import report
from agui_fast.cli import _demo_events
from agui_fast.encoder import EventEncoder

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "report.png"
    chromium = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "run.sse"
        log.write_bytes(EventEncoder().encode_many(_demo_events()))
        page_file = Path(tmp) / "run.html"
        report.build(log, title="run.sse").save(page_file)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1180, "height": 760}, color_scheme="light")
            page.goto(page_file.as_uri())
            page.screenshot(path=str(out), full_page=True)
            browser.close()
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
