"""The README's quick start stays true: exactly two commands, and CI runs the second."""

import re

from conftest import repo_file


def quick_start_commands():
    text = repo_file("README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```(?:sh|bash)?\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_quick_start_is_two_commands_and_ci_runs_the_test_one():
    commands = quick_start_commands()
    assert len(commands) == 2
    ci = repo_file(".ci", "run").read_text()
    test_cmd = re.search(r'^TEST_CMD="(.*)"$', ci, re.M).group(1)
    assert commands[1] == test_cmd
    assert re.search(r'^bash -c "\$TEST_CMD"$', ci, re.M), ".ci/run must run TEST_CMD"
