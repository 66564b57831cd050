"""Benchmark of the console's pages (issue 16): the server's answer time for each page on a
fresh `ramen up` holding 20 groups × 3 zones.

    e2e/bench/console-bench [--groups 20] [--deployed 20] [--requests 50] [--ramen PATH]

Seeds through the REST API as the bootstrap admin: 3 local zones; per group an environment on
all three, two MCP keys, a secret, a member; `--deployed` of the groups are deployed (every
zone then has its placement, workers, packages and load cells; the rest stay undeployed).
Then, signed in with the console's session cookie as the super admin (who sees every group:
the largest pages) and as a member of one group, it GETs each page `--requests` times after a
warm-up and prints p50 / p95 / max of the time to the complete answer, as a markdown table.
Sequential requests on loopback; the numbers are for docs/benchmarks.md, never asserted.
The release binary is built first unless `--ramen` names one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "e2e"))

import httpx2  # noqa: E402
from scenario import Cluster, eventually, make_repo  # noqa: E402

PASSWORD = "bench-password-0123456789"


def session(api: str, email: str, password: str) -> httpx2.Client:
    client = httpx2.Client(base_url=api, timeout=120)
    answer = client.post("/api/auth/login", json={"email": email, "password": password})
    answer.raise_for_status()
    client.headers["x-csrf-token"] = answer.json()["csrf_token"]
    return client


def ok(answer: httpx2.Response) -> dict:
    if answer.status_code >= 300:
        raise SystemExit(f"{answer.request.method} {answer.request.url}: {answer.status_code} {answer.text}")
    return answer.json() if answer.content else {}


def seed(admin: httpx2.Client, repo: Path, groups: int, deployed: int) -> tuple[str, str]:
    zones = ["zone-a", "zone-b", "zone-c"]
    for zone in zones:
        ok(admin.post("/api/zones", json={"name": zone, "provider": "local"}))
    member_otp = ok(admin.post("/api/users", json={"email": "member@bench.dev"}))["one_time_password"]
    jobs = []
    for i in range(groups):
        g = f"team-{i:02d}"
        ok(admin.post("/api/groups", json={"name": g, "repo_url": str(repo), "default_ref": "main"}))
        ok(admin.post(f"/api/groups/{g}/environments", json={"name": "prod", "zones": zones}))
        for k in ("laptop", "ci"):
            ok(admin.post(f"/api/groups/{g}/keys", json={"name": k}))
        ok(admin.put(f"/api/groups/{g}/secrets/API_TOKEN", json={"value": f"value-{i}"}))
        if i == 0:
            ok(admin.post(f"/api/groups/{g}/members", json={"email": "member@bench.dev", "role": "member"}))
        if i < deployed:
            jobs.append((g, ok(admin.post(f"/api/groups/{g}/environments/prod/deploys"))["id"]))
    for g, job in jobs:
        def done(g: str = g, job: str = job) -> bool:
            state = ok(admin.get(f"/api/groups/{g}/jobs/{job}"))["state"]
            if state in ("failed", "cancelled", "dead_lettered"):
                raise SystemExit(f"deploy of {g} ended {state}")
            return state == "succeeded"
        eventually(f"deploy of {g}", 900, done)
        print(f"  deployed {g}", file=sys.stderr, flush=True)
    return "member@bench.dev", member_otp


def measure(client: httpx2.Client, path: str, requests: int) -> tuple[float, float, float]:
    for _ in range(5):
        client.get(path).raise_for_status()
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        answer = client.get(path)
        times.append((time.perf_counter() - started) * 1000)
        if answer.status_code != 200:
            raise SystemExit(f"GET {path}: {answer.status_code}")
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1], times[-1]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=20)
    parser.add_argument("--deployed", type=int, default=20)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--ramen", type=Path)
    parser.add_argument("--breakdown", action="store_true",
                        help="also time each REST read behind the group page")
    args = parser.parse_args()
    ramen = args.ramen
    if ramen is None:
        subprocess.run(["cargo", "build", "--release", "--locked", "-q", "-p", "ramen"], cwd=ROOT, check=True)
        ramen = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release" / "ramen"
    work = Path(tempfile.mkdtemp(prefix="ramen-console-bench-"))
    cluster = Cluster(ramen.resolve(), "up", work)
    # No trace export: the benchmark measures the pages, not the exporter.
    cluster.base_env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    cluster.base_env["RAMEN_LOG_LEVEL"] = "warn"
    try:
        cluster.start_up()
        email, otp = cluster.bootstrap_password()
        first = session(cluster.api, email, otp)
        ok(first.post("/api/auth/password", json={"current_password": otp, "new_password": PASSWORD}))
        admin = session(cluster.api, email, PASSWORD)
        repo = work / "repo"
        make_repo(repo)
        print(f"seeding {args.groups} groups × 3 zones ({args.deployed} deployed)…", file=sys.stderr, flush=True)
        member_email, member_otp = seed(admin, repo, args.groups, args.deployed)
        pending = session(cluster.api, member_email, member_otp)
        ok(pending.post("/api/auth/password", json={"current_password": member_otp, "new_password": PASSWORD}))
        member = session(cluster.api, member_email, PASSWORD)
        job = ok(admin.get("/api/groups/team-00/jobs"))["items"]
        job_page = f"/groups/team-00/jobs/{job[0]['id']}" if job else None
        pages = [("/dashboard", "Dashboard"), ("/groups", "Groups"), ("/zones", "Zones"),
                 ("/environments", "Environments"), ("/groups/team-00", "Group page"),
                 *([(job_page, "Job page")] if job_page else []), ("/config", "Config"),
                 ("/audit", "Audit"), ("/users", "Users"), ("/dashboard/cells", "Dashboard cells (live fragment)")]
        print(f"| page | viewer | p50 ms | p95 ms | max ms |\n|---|---|---|---|---|")
        for path, name in pages:
            p50, p95, top = measure(admin, path, args.requests)
            print(f"| {name} `{path}` | super admin | {p50:.1f} | {p95:.1f} | {top:.1f} |", flush=True)
        for path, name in [("/dashboard", "Dashboard"), ("/groups/team-00", "Group page"), ("/environments", "Environments")]:
            p50, p95, top = measure(member, path, args.requests)
            print(f"| {name} `{path}` | member of one group | {p50:.1f} | {p95:.1f} | {top:.1f} |", flush=True)
        if args.breakdown:
            g = "/api/groups/team-00"
            reads = [g, f"{g}/environments?page_size=1000", f"{g}/jobs?page_size=15",
                     f"{g}/zones?page_size=1000", "/api/zones?page_size=1000", f"{g}/keys?page_size=1000",
                     f"{g}/secrets?page_size=1000", f"{g}/members?page_size=1000", f"{g}/service-account",
                     "/api/load?group=team-00&page_size=1000",
                     f"{g}/zones/zone-a/workers?page_size=1000", f"{g}/zones/zone-a/packages?page_size=1000"]
            print(f"\n| REST read behind the group page | p50 ms | p95 ms | max ms |\n|---|---|---|---|")
            for path in reads:
                p50, p95, top = measure(admin, path, args.requests)
                print(f"| `{path}` | {p50:.1f} | {p95:.1f} | {top:.1f} |", flush=True)
    finally:
        cluster.stop()
        subprocess.run(["rm", "-rf", str(work)], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
