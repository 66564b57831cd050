#!/usr/bin/env python3
"""Runs the README quickstart as written, against a fresh `ramen up`.

    python e2e/readme.py --ramen target/debug/ramen

The block after `<!-- quickstart -->` in README.md runs in bash, line by line as a script,
with only these changes: `ramen` is the binary under test; the API port is a free one; `/tmp/`
is this run's temporary directory; the login reads the one-time and new passwords from stdin
(`--password-stdin`) instead of the terminal; and the MCP client's virtualenv is the test
venv instead of a fresh download. The block must end with the tool's result, `{"result": 5}`.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scenario import Cluster, Failed  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def quickstart() -> str:
    text = (ROOT / "README.md").read_text()
    found = re.search(r"<!-- quickstart -->\s*```sh\n(.*?)```", text, re.S)
    if not found:
        raise SystemExit("README.md has no ```sh block after <!-- quickstart -->")
    return found.group(1)


def adapt(block: str, cluster: Cluster, tmp: Path, one_time: str) -> str:
    venv_bin = Path(sys.executable).parent
    lines = []
    for line in block.splitlines():
        if line.startswith("python3 -m venv /tmp/mcp-client"):
            continue  # the test venv already holds the pinned client
        line = line.replace("/tmp/mcp-client/bin/", f"{venv_bin}/")
        line = line.replace("/tmp/", f"{tmp}/")
        line = line.replace("127.0.0.1:8080", f"127.0.0.1:{cluster.api_port}")
        if line.startswith("ramen login"):
            line = f"printf '%s\\n%s\\n' '{one_time}' 'readme-password-0123456789' | {line} --password-stdin"
        lines.append(line)
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ramen", required=True, type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ramen-readme-"))
    cluster = Cluster(args.ramen.resolve(), "up", work)
    tmp = work / "tmp"
    tmp.mkdir()
    bin_dir = work / "bin"
    bin_dir.mkdir()
    (bin_dir / "ramen").symlink_to(args.ramen.resolve())
    try:
        cluster.start_up()
        _, one_time = cluster.bootstrap_password()
        script = adapt(quickstart(), cluster, tmp, one_time)
        env = dict(cluster.base_env, PATH=f"{bin_dir}:{cluster.base_env['PATH']}")
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=900)
        print(done.stderr, file=sys.stderr)
        print(done.stdout)
        if done.returncode != 0:
            raise Failed(f"the quickstart exited {done.returncode}")
        last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        if last.replace(" ", "") != '{"result":5}':
            raise Failed(f'the quickstart to end with {{"result": 5}}, got {last!r}')
    except Failed as failure:
        print(f"FAILED (README quickstart): {failure}", file=sys.stderr)
        for name in cluster.logs:
            print(f"\n===== last lines of {name}.log =====\n{cluster.tail(name)}", file=sys.stderr)
        return 1
    finally:
        cluster.stop()
        for pid in cluster.worker_pids():
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(work, ignore_errors=True)
    print("README quickstart: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
