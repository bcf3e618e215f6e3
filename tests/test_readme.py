"""The README stays a newcomer's page, and its quick start stays true: exactly two commands, the
first installs and runs the demo, CI runs the second as printed; short lines, no dead links."""

import re

from conftest import repo_file


def quick_start_commands():
    text = repo_file("README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```(?:sh|bash)?\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_quick_start_is_two_commands_and_ci_runs_the_test_one():
    install, test = quick_start_commands()
    assert "pip install ." in install and install.endswith("agui-fast demo")
    ci = repo_file(".ci", "run").read_text()
    test_cmd = re.search(r'^TEST_CMD="(.*)"$', ci, re.M).group(1)
    assert test == test_cmd
    # .ci/run hands it to the full check, which runs it as given.
    assert re.search(r'^AGUI_TEST_CMD="\$TEST_CMD" bash tools/ci\.sh$', ci, re.M), ".ci/run must run TEST_CMD"
    check = repo_file("tools", "ci.sh").read_text()
    assert re.search(r'^TEST_CMD=\$\{AGUI_TEST_CMD:-(.*)\}$', check, re.M).group(1) == test_cmd
    assert 'bash -c "$TEST_CMD"' in check


def test_readme_is_short_with_short_lines():
    lines = repo_file("README.md").read_text().splitlines()
    assert len(lines) <= 200
    long = [f"{i}: {line}" for i, line in enumerate(lines, 1) if len(line) > 100 and not line.startswith("|")]
    assert not long, "README lines over 100 characters:\n" + "\n".join(long)


def test_readme_links_exist():
    text = repo_file("README.md").read_text()
    root = repo_file("README.md").parent
    targets = re.findall(r"\]\(((?!https?://|#)[^)\s]+)\)", text)
    assert targets
    missing = [t for t in targets if not (root / t.split("#")[0]).exists()]
    assert not missing, missing


def test_contributing_gives_the_full_check():
    text = repo_file("CONTRIBUTING.md").read_text()
    assert "bash .ci/run" in text and "tools/test.sh" in text
