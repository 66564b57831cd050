"""schemathesis against a fresh `ramen up`: the OpenAPI document held to what the API does.

Signs in as the bootstrap admin (its one-time password changed, as a person would), then runs
`schemathesis run /api/openapi.json` with the admin's token: every check, the coverage,
fuzzing and stateful phases, 30 examples per operation, a fixed seed (a finding reproduces,
and a fresh clone sees the run CI saw). Any finding fails.

The document states the rules the services check with (services/api-gateway/src/contract/ and
libs/rules), so `positive_data_acceptance` (what the document allows is accepted) and
`negative_data_rejection` (what it forbids is refused) run too. Where no JSON Schema keyword can
say a rule, the document names a format of ours; `hooks.py` teaches schemathesis to draw values
of each.

Left out, for a stated reason: `POST /api/auth/logout` and `POST /api/auth/password`, which
would end or change the very session the run uses (both are covered by the Rust and e2e tests).

    run.py --ramen <binary> --schemathesis <executable>
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import httpx2  # noqa: E402
import scenario  # noqa: E402

SEED = "20261204"
EXCLUDED_PATHS = ["/api/auth/logout", "/api/auth/password"]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ramen", type=Path, required=True)
    parser.add_argument("--schemathesis", type=Path, required=True)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ramen-schemathesis-"))
    cluster = scenario.Cluster(args.ramen.resolve(), "up", work)
    try:
        cluster.start_up()
        email, one_time = cluster.bootstrap_password()
        first = httpx2.post(f"{cluster.api}/api/auth/login", json={"email": email, "password": one_time}, timeout=30)
        first.raise_for_status()
        changed = httpx2.post(
            f"{cluster.api}/api/auth/password",
            json={"current_password": one_time, "new_password": "schemathesis-password-0123456789"},
            headers={"authorization": f"Bearer {first.json()['access_token']}"}, timeout=30)
        changed.raise_for_status()
        token = changed.json()["access_token"]
        command = [str(args.schemathesis), "run", f"{cluster.api}/api/openapi.json",
                   "--header", f"Authorization: Bearer {token}",
                   "--checks", "all",
                   "--max-examples", "30", "--seed", SEED, "--workers", "1", "--no-color",
                   "--report-dir", str(work / "report")]
        for path in EXCLUDED_PATHS:
            command += ["--exclude-path", path]
        # Its own working directory: no example database carried over from another run.
        env = dict(os.environ, SCHEMATHESIS_HOOKS="hooks", PYTHONPATH=str(HERE))
        result = subprocess.run(command, cwd=work, timeout=1800, env=env)
        print(f"schemathesis: exit {result.returncode} (work dir {work})")
        return result.returncode
    except Exception:
        for name in cluster.logs:
            print(f"\n===== {name} =====\n{cluster.tail(name)}")
        raise
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
