#!/usr/bin/env python3
"""The console's browser end-to-end: a fresh `ramen up` (its own data dir and ports), then the
browser suite (`console.test.mjs`, node's test runner driving headless Chromium through
playwright-core) against it.

    python e2e/console/run.py --ramen target/debug/ramen --shots DIR --playwright DIR

The suite gets the console URL, the bootstrap admin's one-time password (from the log, as a
user reads it), a git copy of examples/hello-repo (tag `broken` fails to import), the
command that lists tools with the official MCP client through the edge (`mcp_tools.py`), and
the OpenID provider people sign in with (SSO, e2e/sso.py), started before `ramen up`: SSO is
static config. The provider names `localhost` as its host, the console is on 127.0.0.1: two
sites, as a real provider and a real console are, so the browser applies its SameSite rules
to the redirects between them as it would in production.
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

import sso  # noqa: E402
from scenario import REWORDED, Cluster, Failed, free_port, make_repo  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ramen", required=True, type=Path)
    parser.add_argument("--shots", required=True, type=Path)
    parser.add_argument("--playwright", required=True, type=Path)
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()
    args.shots.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="ramen-console-e2e-"))
    cluster = Cluster(args.ramen.resolve(), "up", work)
    code = 1
    people = None
    try:
        people = sso.People(work, free_port, cluster.api, issuer_host="localhost")
        # `hello` is the group the suite creates before alice signs in.
        cluster.base_env.update(people.settings(memberships="payments=hello:member"))
        cluster.start_up()
        email, one_time = cluster.bootstrap_password()
        repo = work / "repo"
        make_repo(repo)
        env = dict(
            os.environ,
            CONSOLE_URL=cluster.api,
            CONSOLE_ADMIN_EMAIL=email,
            CONSOLE_ADMIN_OTP=one_time,
            CONSOLE_REPO=str(repo),
            CONSOLE_SHOTS=str(args.shots.resolve()),
            CONSOLE_PLAYWRIGHT=str(args.playwright.resolve()),
            CONSOLE_MCP_TOOLS=f"{sys.executable} {HERE / 'mcp_tools.py'}",
            CONSOLE_SSO_ISSUER=people.issuer,
            CONSOLE_SSO_NAME=sso.DISPLAY_NAME,
            CONSOLE_REWORDED=REWORDED,
        )
        done = subprocess.run(["node", "--test", "--test-reporter=spec", "--test-concurrency=1",
                               str(HERE / "console.test.mjs")], env=env, timeout=1500)
        code = done.returncode
    except (Failed, RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"FAILED: {exc}", flush=True)
    finally:
        cluster.stop()
        if people is not None:
            people.stop()
        if code != 0:
            print(f"--- last lines of ramen up ({work}):\n{cluster.tail('ramen', 60)}", flush=True)
            if people is not None:
                print(f"--- the OpenID provider's log:\n{people.log.read_text(errors='replace')[-3000:]}", flush=True)
    print(f"console screenshots: {args.shots.resolve()}", flush=True)
    if not args.keep and code == 0:
        subprocess.run(["rm", "-rf", str(work)], check=False)
    return code


if __name__ == "__main__":
    sys.exit(main())
