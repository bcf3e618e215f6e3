"""What users read speaks about the product as it is now: README, the guides, the changelog and
the code's comments name no development history (milestone numbers, branch or worktree names,
who did what, scratch paths, issue numbers as a story, instruction counts from one revision to
the next). That history lives in git and in the commit messages."""

import re
import subprocess

import pytest
from conftest import ROOT

# What users read: the top-level documents and every tracked text file of these trees.
SCOPE = [
    "README.md",
    "CONTRIBUTING.md",
    "CHANGELOG.md",
    "benches",
    "docs",
    "python",
    "rust",
    "tools",
    "examples",
    "fuzz",
    ".ci",
    ".github",
]

PATTERNS = {
    "a development milestone ('stop N')": r"\b[Ss]tops? [0-9]{1,3}\b",
    "a branch name": r"\bs[0-9]{2}-[a-z]+|\b[Mm]erge (of )?branch\b|\bbranch(es)? `[a-z0-9-]+`",
    "a scratch or machine path": r"/w[o]rk/|/tmp/s[0-9]{2}|(?<![\w.$}/-])/tmp/",
    "the people or sessions who worked on it": (
        r"\bhelpers?\b.*\b(branch|merged)\b|\bengineers?\b"
    ),
    "an issue number as history": r"\b[Ii]ssues? #?[0-9]+\b|\bfinding #?[0-9]+\b",
    "a before/after count of one revision": (
        r"\b[0-9][0-9.,]*\s?[MKG]?\s?(Ir\s?)?(->|→)\s?[0-9][0-9.,]*\s?[MKG]\b"
    ),
}
HISTORY = re.compile("|".join(f"(?:{p})" for p in PATTERNS.values()))


def tracked_files():
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--", *SCOPE], cwd=ROOT, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("needs the git checkout (the scope is its tracked files)")
    files = [ROOT / name for name in out.decode().split("\0") if name]
    if not files:
        pytest.skip(f"no tracked files of {SCOPE} under {ROOT}")
    return files


def history_lines(text):
    """``(line number, line, what it names)`` of each line naming development history."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in PATTERNS.items():
            if re.search(pattern, line):
                found.append((number, line.strip(), what))
    return found


def test_readme_docs_and_comments_name_no_development_history():
    bad = []
    for path in tracked_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue  # binary (charts, fuzz regressions) or deleted in the working tree
        for number, line, what in history_lines(text):
            bad.append(f"{path.relative_to(ROOT)}:{number}: {what}: {line[:120]}")
    assert not bad, "development history in what users read:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    "line",
    [
        "measured at stop 28, 822 s at stop 27",
        "Stop 24: two threads cost 8-13% more CPU",
        "the merged build of s29-rows and s26-slots",
        "Merge branch 'docs'",
        "see branch `engine`",
        "python benches/_stream_log.py /tmp/stream_100k.sse",
        "compare against /tmp/s29/before.so",
        "built in /w" "ork/wt/docs",
        "after both helpers had merged their branch",
        "another engineer building and benchmarking",
        "linear (issue 14 #5)",
        "@ag-ui/proto writes inf (finding 12)",
        "SSE 138.31M -> 133.83M",
        "protobuf 256.53M Ir → 254.06M",
    ],
)
def test_history_is_recognised(line):
    assert history_lines(line), line


@pytest.mark.parametrize(
    "line",
    [
        "Events stop at the first error: the events before it are delivered.",
        "AGUI_WHEELHOUSE=\"$WHEELHOUSE\" pytest --basetemp=\"$WORK/tmp/py$v\"",
        "a helper function that reads one frame",
        "~650 instructions an event (callgrind)",
        "a ratio of 5.2-6.1x by median",
        "tests.json#87: leading-zero array index",
        "branch prediction and the table's branches",
    ],
)
def test_user_facing_text_passes(line):
    assert not history_lines(line), line
