"""The official TypeScript packages for the interop tests: ``node_modules`` next to this
file, unpacked from ``../shared/reference/node/refnode.tgz`` (beside the repository) when
missing, else installed with ``npm ci``; the tests skip, saying why, only when neither works.
Concurrent test runs from one checkout (CI runs the suites two at a time) take a file lock
around the check and the install, so none sees or removes a half-written tree."""

import fcntl
import functools
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
TARBALL = ROOT.parent / "shared" / "reference" / "node" / "refnode.tgz"
PACKAGES = ("client", "core", "encoder", "proto")


def _complete() -> bool:
    return all((HERE / "node_modules" / "@ag-ui" / p / "package.json").is_file() for p in PACKAGES)


def _unpack() -> str:
    """Unpack only ``node_modules/`` (our package.json and lock stay ours), atomically."""
    with tempfile.TemporaryDirectory(dir=HERE) as tmp, tarfile.open(TARBALL) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith("node_modules/")]
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # Python >= 3.10.12
        tar.extractall(tmp, members=members, **safe)
        target = HERE / "node_modules"
        if target.exists():
            shutil.rmtree(target)
        Path(tmp, "node_modules").rename(target)
    return f"unpacked {TARBALL}"


def ensure_node_modules() -> str:
    """'' when ready, else why not."""
    if shutil.which("node") is None:
        return "node (Node.js 20) is not installed"
    if _complete():
        return ""
    return _install_once()


@functools.cache
def _install_once() -> str:
    """One try per test run: a failed ``npm ci`` (no registry) takes ~14 s, and each test
    module that needs the packages asks."""
    # Checked again under the lock: another run may have installed it meanwhile.
    with open(HERE / ".node_modules.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return "" if _complete() else _install()


def _install() -> str:
    """Unpack the tarball, else ``npm ci``: '' when done, else why not (under the lock)."""
    problems = []
    if TARBALL.is_file():
        try:
            _unpack()
        except (OSError, tarfile.TarError) as exc:
            problems.append(f"unpacking {TARBALL} failed: {exc}")
        else:
            if _complete():
                return ""
            problems.append(f"{TARBALL} lacks the @ag-ui packages")
    else:
        problems.append(f"{TARBALL} is missing")
    npm = shutil.which("npm")
    if npm is None:
        problems.append("npm is not installed")
    else:
        try:
            proc = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--fetch-retries=1"], cwd=HERE, capture_output=True,
                                  text=True, timeout=180)
        except subprocess.TimeoutExpired:
            problems.append("npm ci timed out")
        else:
            if proc.returncode == 0 and _complete():
                return ""
            lines = [line for line in proc.stderr.splitlines() if line.startswith("npm error")]
            problems.append(f"npm ci failed: {' '.join(lines[:2]) or proc.stderr.strip()[-200:]}")
    return "; ".join(problems)
