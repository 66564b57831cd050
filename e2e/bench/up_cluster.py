"""`ramen up` with hello-repo deployed, for the benchmarks that load the edge and the API
(soak.py, hostile-bench): the first steps of e2e/scenario.py (its `Cluster`, driven through the
CLI), on ports the kernel picks and a fresh data dir.

    python e2e/bench/up_cluster.py --ramen target/release/ramen --info up.json

starts it, writes `up.json` once an MCP key is accepted through the edge, and runs until
SIGTERM or SIGINT, then stops everything it started. `up.json`: `api` (base URL of the API,
console and edge: one listener), `mcp` (the environment's edge URL), `key` (an MCP key),
`token` (the admin's access token for the REST API), `ramen_pid`, `work`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from scenario import Cluster, Failed, children_named, children_of, eventually, make_repo, status_of  # noqa: E402

GROUP = "bench"
ENV = "prod"
ZONE = "local"
PASSWORD = "bench-password-0123456789"


def cluster_in(ramen: Path, work: Path) -> Cluster:
    """The cluster, not started yet (so a `finally` can stop whatever `start` got to)."""
    cluster = Cluster(ramen.resolve(), "up", work)
    # No span export: the scenario's collector keeps every span in memory, and a long run
    # would measure exporting as much as serving. Warnings only: at thousands of calls a
    # second the info lines of every worker would fill the disk.
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_BSP_SCHEDULE_DELAY"):
        cluster.base_env.pop(name, None)
    cluster.base_env["RAMEN_LOG_LEVEL"] = "warn"
    cluster.traces.server.shutdown()
    cluster.traces.server.server_close()
    return cluster


def start(cluster: Cluster) -> dict[str, Any]:
    """Starts `ramen up` and deploys hello-repo to environment `prod` of group `bench` on one
    local zone; returns what a client needs."""
    work = cluster.work
    cluster.start_up()
    email, one_time = cluster.bootstrap_password()
    cluster.cli("login", email, "--password-stdin", "--new-password", stdin=f"{one_time}\n{PASSWORD}\n")
    cluster.cli("zone", "create", ZONE)
    repo = work / "repo"
    make_repo(repo)
    cluster.cli("group", "create", GROUP, "--repo", str(repo), "--ref", "main")
    cluster.cli("env", "create", ENV, "-g", GROUP, "--ref", "main", "--zone", ZONE)
    cluster.cli("deploy", ENV, "-g", GROUP, "--wait")
    key = cluster.cli_json("keys", "create", "-g", GROUP, "bench")["plaintext"]
    url = f"{cluster.api}/mcp/{GROUP}/{ENV}"
    # Keys reach the running nodes over the bus, within seconds.
    eventually("the new key accepted", 60, lambda: status_of(url, key) == 200)
    token = json.loads((work / "cli.json").read_text())["access_token"]
    info = {"api": cluster.api, "mcp": url, "key": key, "token": token,
            "ramen_pid": cluster.procs["ramen"].pid, "work": str(work)}
    return info


def processes(cluster: Cluster) -> dict[int, tuple[str, str | None]]:
    """pid → (role, worker) of every process of the cluster now: `ramen` (edge, API and
    control plane), its `nats-server` child, each worker `node` and each node's Python
    `runtime`, with the worker's name (`worker-0`, `worker-canary-0`: its directory)."""
    ramen = cluster.procs["ramen"].pid
    found: dict[int, tuple[str, str | None]] = {ramen: ("ramen", None)}
    found.update({p: ("nats-server", None) for p in children_named(ramen, "nats-server")})
    for worker in cluster.worker_pids():
        name = worker_name(worker)
        found[worker] = ("node", name)
        for child in children_of(worker):
            found[child] = ("runtime", name)
    return found


def worker_name(pid: int) -> str:
    """The directory of the worker's `--config` file (`.../workers/worker-0/node.toml`)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return str(pid)
    config = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--config"), None)
    return Path(config).parent.name if config else str(pid)


def stop(cluster: Cluster) -> None:
    cluster.stop()
    for pid in cluster.worker_pids():
        os.kill(pid, signal.SIGKILL)
    shutil.rmtree(cluster.work, ignore_errors=True)


def exit_on_signals() -> None:
    """SIGTERM and SIGHUP unwind like Ctrl-C, so `finally` blocks stop the cluster."""
    def unwind(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, unwind)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ramen", required=True, type=Path)
    parser.add_argument("--info", required=True, type=Path)
    args = parser.parse_args()
    exit_on_signals()
    cluster = cluster_in(args.ramen, Path(tempfile.mkdtemp(prefix="ramen-bench-up-")))
    try:
        info = start(cluster)
        tmp = args.info.with_suffix(".tmp")
        tmp.write_text(json.dumps(info))
        tmp.rename(args.info)
        signal.pause()
    except KeyboardInterrupt:
        pass
    except Failed as failure:
        print(f"FAILED: {failure}\n{cluster.tail('ramen')}", file=sys.stderr)
        return 1
    finally:
        stop(cluster)
    return 0


if __name__ == "__main__":
    sys.exit(main())
