"""Release metadata and the built wheel: what pip and PyPI see, checked on the installed package
(tools/ci.sh installs the built wheel on the other CPythons; an editable install checks the same
metadata)."""

import os
import re
import sys
from importlib import metadata
from pathlib import Path

import pytest

import agui_fast._native

from conftest import ROOT, repo_file

DIST = metadata.distribution("agui-fast")
META = DIST.metadata


def declared_pythons():
    prefix = "Programming Language :: Python :: 3."
    return sorted(
        (c.removeprefix("Programming Language :: Python :: ") for c in META.get_all("Classifier")
         if c.startswith(prefix) and c[len(prefix):].isdigit()),
        key=lambda v: tuple(map(int, v.split("."))),
    )


def test_spdx_license_and_license_file_are_shipped():
    assert META["License-Expression"] == "MIT"
    assert "License" not in META  # the pre-PEP 639 field is not written next to the expression
    assert not [c for c in META.get_all("Classifier") if c.startswith("License ::")]
    assert META.get_all("License-File") == ["LICENSE"]
    shipped = [f for f in DIST.files if f.name == "LICENSE"]
    assert shipped, "the LICENSE file is not in the installed distribution"
    assert shipped[0].read_text().startswith("MIT License")


def test_running_python_is_declared_and_allowed():
    assert f"{sys.version_info[0]}.{sys.version_info[1]}" in declared_pythons()
    assert META["Requires-Python"] == f">={declared_pythons()[0]}"


def test_ci_tests_exactly_the_declared_pythons():
    script = repo_file("tools", "ci.sh").read_text()
    tested = re.search(r"^PYTHONS=\(([^)]*)\)", script, re.M).group(1).split()
    assert tested == declared_pythons()


def test_readme_states_the_declared_rust_and_python_versions():
    cargo = repo_file("Cargo.toml").read_text()
    rust_version = re.search(r'^rust-version = "([\d.]+)"$', cargo, re.M).group(1)
    install = repo_file("README.md").read_text().split("## Install", 1)[1].split("\n## ", 1)[0]
    assert f"Rust ≥ {rust_version}" in install
    assert f"every CPython from {declared_pythons()[0]} on" in install


def test_project_urls_and_keywords():
    urls = dict(u.split(", ", 1) for u in META.get_all("Project-URL"))
    assert {"Homepage", "Repository", "Issues", "Documentation"} <= set(urls)
    assert all(u.startswith("https://") for u in urls.values())
    assert "ag-ui" in META["Keywords"].split(",")


@pytest.fixture
def wheelhouse():
    where = os.environ.get("AGUI_WHEELHOUSE")
    if not where:
        pytest.skip("AGUI_WHEELHOUSE is not set: tools/ci.sh sets it to the wheels it built")
    return Path(where)


def test_the_installed_package_is_the_built_wheel(wheelhouse):
    (wheel,) = wheelhouse.glob("agui_fast-*.whl")
    name, version, python, abi, platforms = wheel.name.removesuffix(".whl").split("-")
    assert (python, abi) == ("cp310", "abi3")
    installed = [line.split(": ", 1)[1] for line in DIST.read_text("WHEEL").splitlines()
                 if line.startswith("Tag: ")]
    assert sorted(installed) == sorted(f"{python}-{abi}-{p}" for p in platforms.split("."))
    native = Path(agui_fast._native.__file__).resolve()
    assert native.is_relative_to(Path(sys.prefix).resolve()), f"not the installed wheel: {native}"
    assert not native.is_relative_to(ROOT / "python"), f"testing the checkout's tree: {native}"
