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

Nothing is left out. `POST /api/auth/logout` and `POST /api/auth/password` are safe to fuzz
with the run's own session: the run holds no refresh token and sends no refresh cookie, so no
logout it makes can end its session, and no generated `current_password` is the admin's.

    run.py --ramen <binary> --schemathesis <executable>
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import httpx2  # noqa: E402
import scenario  # noqa: E402

SEED = "20261204"
EXCLUDED_PATHS: list[str] = []


def fixtures(api: str, token: str, work: Path) -> str:
    """Things for the run to find, and the config that points it at them.

    Without them every route under a group answers 404 and the run never reaches its handlers:
    a group with a deployed environment (so jobs, workers and packages exist), a second group
    and a user for the destructive routes to spend, so that deleting a group or demoting a user
    never takes the run's own group or its own account (the run's admin would lose the rights
    every later request needs). Names are drawn from these most of the time and generated the
    rest, so unknown names are still tried.
    """
    headers = {"authorization": f"Bearer {token}"}

    def call(method: str, path: str, body: dict | None = None) -> dict:
        answer = httpx2.request(method, f"{api}{path}", json=body, headers=headers, timeout=60)
        if answer.status_code >= 300:
            raise RuntimeError(f"fixture {method} {path}: {answer.status_code} {answer.text}")
        return answer.json() if answer.content else {}

    repo = work / "repo"
    scenario.make_repo(repo)
    zone = "local-a"
    call("POST", "/api/zones", {"name": zone, "provider": "local"})
    for group in ("shop", "doomed"):
        call("POST", "/api/groups", {"name": group, "repo_url": str(repo)})
    call("POST", "/api/groups/shop/environments", {"name": "dev", "zones": [zone]})
    job = call("POST", "/api/groups/shop/environments/dev/deploys", {})
    job_id = job["id"]
    deadline = time.monotonic() + 300
    while (state := call("GET", f"/api/groups/shop/jobs/{job_id}")["state"]) not in ("succeeded", "failed"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the fixture deploy is still {state} after 300 s")
        time.sleep(0.5)
    if state != "succeeded":
        raise RuntimeError(f"the fixture deploy {state}")
    packages = [p["name"] for p in call("GET", f"/api/groups/shop/zones/{zone}/packages")["items"]]
    victim = call("POST", "/api/users", {"email": "victim@example.com"})["user"]["id"]
    key = call("POST", "/api/groups/shop/keys", {"name": "fixture"})["key"]["id"]

    def dictionary(name: str, values: list[str]) -> str:
        return f"[dictionaries.{name}]\nvalues = {values!r}\n".replace("'", '"')

    return "\n".join([
        dictionary("groups", ["shop"]),
        dictionary("environments", ["dev"]),
        dictionary("zones", [zone]),
        dictionary("jobs", [job_id]),
        dictionary("packages", packages),
        dictionary("keys", [key]),
        "[parameters]",
        '"path.group" = { dictionary = "groups", probability = 0.8 }',
        '"path.env" = { dictionary = "environments", probability = 0.8 }',
        '"path.zone" = { dictionary = "zones", probability = 0.8 }',
        '"path.job" = { dictionary = "jobs", probability = 0.8 }',
        '"path.package" = { dictionary = "packages", probability = 0.8 }',
        '"path.key_id" = { dictionary = "keys", probability = 0.5 }',
        "",
        # What a destructive route spends is a fixture of its own.
        '[[operations]]\ninclude-name = "DELETE /api/groups/{group}"\nparameters = { "path.group" = "doomed" }',
        '[[operations]]\ninclude-name = "DELETE /api/users/{user_id}"\n'
        f'parameters = {{ "path.user_id" = "{victim}" }}',
        '[[operations]]\ninclude-name = "PUT /api/users/{user_id}/super-admin"\n'
        f'parameters = {{ "path.user_id" = "{victim}" }}',
        "",
        *semantic_refusals(),
    ])


# Refusals no JSON Schema can state, because they depend on time or on the platform's settings
# rather than on the request: a well-formed request of these operations may be answered 400
# (naming the reason) as well. Every other status stays held to the document, and the
# negative check (what the document forbids is refused) stays on for them all.
SEMANTIC = {
    "POST /api/groups/{group}/keys": "`expires_at` must be in the future",
    "PUT /api/groups/{group}/environments/{env}/auth":
        "OAuth needs the platform's `mcp_auth.public_url` and an issuer (its own or the platform's); "
        "a call rule must allow something and cannot name both keys and token claims",
    "POST /api/groups/{group}/environments": "the same `auth` setting as above",
}


def semantic_refusals() -> list[str]:
    statuses = '["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]'
    return [f'# {why}\n[[operations]]\ninclude-name = "{name}"\n'
            f"checks.positive_data_acceptance.expected-statuses = {statuses}\n"
            for name, why in SEMANTIC.items()]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ramen", type=Path, required=True)
    parser.add_argument("--schemathesis", type=Path, required=True)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ramen-schemathesis-"))
    cluster = scenario.Cluster(args.ramen.resolve(), "up", work)
    # Few workers per placement: the document says the configured bound, so the run scales the
    # fixture's placement within it rather than starting dozens of runtimes on a CI machine.
    cluster.base_env["RAMEN_ZONE__MAX_WORKER_COUNT"] = "2"
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
        config = work / "schemathesis.toml"
        config.write_text(fixtures(cluster.api, token, work))
        command = [str(args.schemathesis), "--config-file", str(config), "run", f"{cluster.api}/api/openapi.json",
                   "--header", f"Authorization: Bearer {token}",
                   "--checks", "all",
                   "--max-examples", "30", "--seed", SEED, "--workers", "1", "--no-color",
                   # Scaling a placement waits for its workers to start.
                   "--request-timeout", "60",
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
