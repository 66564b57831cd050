"""The virtualenvs the kind tests run the runtime with, and small helpers shared by them.

``scripts/install-compat-servers`` creates one venv per file ``scripts/compat/<name>.txt``
at ``${RAMEN_CACHE_DIR:-~/.cache/ramen}/compat/<name>``; ``$RAMEN_TEST_<NAME>_PYTHON``
points a test at another interpreter instead. A missing or out-of-date venv fails the
tests (never skips them) with the command to run.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from typing import Any

from .rtclient import REPO_ROOT, RUNTIME_DIR

CACHE = os.environ.get("RAMEN_CACHE_DIR") or os.path.expanduser("~/.cache/ramen")
COMPAT_DIR = os.path.join(REPO_ROOT, "scripts", "compat")
FIXTURES = os.path.join(RUNTIME_DIR, "tests", "fixtures")
SCRIPT = "scripts/install-compat-servers"


def fixture(name: str) -> str:
    return os.path.join(FIXTURES, name)


def compat_python(name: str) -> str:
    """The interpreter of venv `name` (fastmcp, mcp1, mcp2, stdio); raises with the fix when missing."""
    override = f"RAMEN_TEST_{name.upper()}_PYTHON"
    if os.environ.get(override):
        python = os.environ[override]
        if not os.access(python, os.X_OK):
            raise RuntimeError(f"${override}={python} is not an executable")
        return python
    venv = os.path.join(CACHE, "compat", name)
    python = os.path.join(venv, "bin", "python")
    if not os.access(python, os.X_OK):
        raise RuntimeError(f"no virtualenv {venv} for these tests: run {SCRIPT} (or set ${override})")
    with open(os.path.join(COMPAT_DIR, f"{name}.txt"), "rb") as fh:
        want = hashlib.sha256(fh.read()).hexdigest()
    try:
        with open(os.path.join(venv, ".ramen-requirements.sha256")) as fh:
            have = fh.read().strip()
    except OSError:
        have = ""
    if have != want:
        raise RuntimeError(f"the virtualenv {venv} does not match scripts/compat/{name}.txt: run {SCRIPT}")
    return python


PATIENCE = float(os.environ.get("RAMEN_TEST_PATIENCE", "1"))  # scales every deadline


def eventually(check: Callable[[], Any], timeout: float = 20.0, interval: float = 0.05) -> Any:
    """Call `check` until it returns without raising (its value is returned) or the deadline passes."""
    deadline = time.monotonic() + timeout * PATIENCE
    while True:
        try:
            return check()
        except (AssertionError, LookupError, TimeoutError) as exc:
            if time.monotonic() >= deadline:
                raise AssertionError(f"not true within {timeout * PATIENCE:g} s: {exc}") from exc
        time.sleep(interval)


def children(pid: int) -> dict[int, str]:
    """The live child processes of `pid`: {pid: command line} (from /proc)."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parens, so split after the last ')'
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z" and int(fields[1]) == pid:
            out[int(entry)] = cmdline
    return out


def child_running(pid: int, marker: str) -> int:
    """The pid of the one child of `pid` whose command line contains `marker` (LookupError if none)."""
    found = [p for p, cmd in children(pid).items() if marker in cmd]
    if len(found) != 1:
        raise LookupError(f"{len(found)} children of {pid} run {marker!r}: {children(pid)}")
    return found[0]
