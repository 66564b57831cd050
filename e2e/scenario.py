#!/usr/bin/env python3
"""The end-to-end scenario: the built `ramen` binary driven as a user drives it.

    python e2e/scenario.py --ramen target/debug/ramen --topology up|split|migrate

Topology `up` is `ramen up` alone (its own nats-server child, embedded store, local blob
directory). Topology `split` runs every service as its own `ramen serve <service>` process
over a real nats-server, redis-server and an S3-compatible server (moto), each service with
its own embedded store (a service owns its data; they share nothing but the bus, S3 and
Redis).

The scenario: log in as the bootstrap admin, create zones, a group from the example repo, an
environment on both zones, deploy, call tools through the edge with the official MCP clients
— Python in each of its modes (`legacy`: a 2025-11-25 session; `auto` and `2026-07-28`:
stateless requests) and the TypeScript SDK — with and without `ramen-zone`, block a package
(gone from lists in both revisions; the edge refuses a blocked tool of a stateless request by
its `Mcp-Name`), revoke a key, an IP rule excluding the client, a broken ref (canary fails,
stable keeps serving), rollback, a hostile tenant beside the group on local-a (each reach
outside its own tools refused: the control plane's keys, other configs, the node's memory,
the bus with and without a node's credentials, other nodes' ports, a forged `zone.deleted`),
a killed worker (session and stateless calls keep
succeeding), and the group's deletion leaving nothing behind. Between them, MCP clients signing
in with OAuth (e2e/oauth.py) and people signing in with SSO, console and CLI (e2e/sso.py). In `split` also: the deployer
killed mid-deploy, and another deployer process finishing the job.

Every step prints one line; a failed check exits 1 naming what was expected and what came.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any, Callable

import anyio
import httpx2
import nats
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

import oauth
import sso
from traces import Collector, Span, chain, describe

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_REPO = ROOT / "examples" / "hello-repo"
# A package whose tools try what a hostile or compromised dependency would (services/runner).
HOSTILE_REPO = ROOT / "services" / "runner" / "tests" / "fixtures" / "hostile-repo"
SERVICES = ["auth", "zone-manager", "deployer", "rebalancer", "api-gateway"]
GROUP = "demo"
EVIL = "evil"


class Failed(Exception):
    pass


def step(message: str) -> None:
    print(f"--- {message}", flush=True)


def check(condition: bool, what: str, got: Any = None) -> None:
    if not condition:
        raise Failed(f"expected {what}; got {got!r}")


def eventually(what: str, seconds: float, probe: Callable[[], Any]) -> Any:
    """Calls `probe` until it returns something truthy without raising, or fails naming `what`."""
    deadline = time.monotonic() + seconds
    last: Any = None
    while True:
        try:
            result = probe()
            if result:
                return result
            last = result
        except Exception as exc:  # noqa: BLE001 - kept for the failure message
            last = exc
        if time.monotonic() > deadline:
            raise Failed(f"{what} within {seconds:.0f}s; last: {last!r}")
        time.sleep(0.25)


# Ports handed out so far: the kernel may give a port it gave a moment ago once that socket
# closed (a run once got the same port for the API and the deployer), so none is handed twice.
HANDED_OUT: set[int] = set()


def free_port() -> int:
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in HANDED_OUT:
            HANDED_OUT.add(port)
            return port


def git(repo: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="e2e", GIT_AUTHOR_EMAIL="e2e@example.com",
               GIT_COMMITTER_NAME="e2e", GIT_COMMITTER_EMAIL="e2e@example.com")
    return subprocess.run(["git", "-C", str(repo), *args], check=True, env=env,
                          capture_output=True, text=True).stdout.strip()


# What tag `reworded` makes `notes.add` tell the model.
REWORDED = "Add two integers and report the sum to the finance team."


def make_repo(at: Path) -> None:
    """The example repo as a git repo: `main` works; tag `broken` fails to import; tag
    `reworded` changes `notes.add`'s description."""
    shutil.copytree(EXAMPLE_REPO, at)
    git(at, "init", "-q", "-b", "main")
    git(at, "add", "-A")
    git(at, "commit", "-qm", "example")
    git(at, "checkout", "-qb", "broken-branch")
    (at / "weather" / "__init__.py").write_text("import does_not_exist_anywhere\n")
    git(at, "commit", "-qam", "broken import")
    git(at, "tag", "broken")
    git(at, "checkout", "-q", "main")
    # A reworded tool: `notes.add` says something else (a surface change a review catches).
    git(at, "checkout", "-qb", "reworded-branch")
    notes = at / "notes" / "__init__.py"
    notes.write_text(notes.read_text().replace("Add two integers.", REWORDED, 1))
    git(at, "commit", "-qam", "reworded notes.add")
    git(at, "tag", "reworded")
    git(at, "checkout", "-q", "main")
    # New commits with the same packages (each a fresh snapshot to upload).
    git(at, "checkout", "-qb", "docs-branch")
    for tag in ("docs", "docs-2", "docs-3"):
        (at / "NOTES.md").write_text(f"A change that is not code ({tag}).\n")
        git(at, "add", "-A")
        git(at, "commit", "-qm", f"docs only ({tag})")
        git(at, "tag", tag)
    git(at, "checkout", "-q", "main")


class Cluster:
    """The processes of one topology, their logs, and the CLI pointed at them."""

    def __init__(self, ramen: Path, topology: str, work: Path, api_port: int | None = None) -> None:
        self.traces = Collector()
        self.ramen = ramen
        self.topology = topology
        self.work = work
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.logs: dict[str, Path] = {}
        self.api_port = api_port or free_port()
        self.api = f"http://127.0.0.1:{self.api_port}"
        self.listen = {
            "RAMEN_LISTEN__API": f"127.0.0.1:{self.api_port}",
            **{f"RAMEN_LISTEN__{n}": f"127.0.0.1:{free_port()}"
               for n in ("AUTH", "DEPLOYER", "ZONE_MANAGER", "REBALANCER")},
        }
        self.admin_ports: dict[str, int] = {}
        # Values that must never appear in a log line or an error: passwords, key plaintexts,
        # secret values, signing keys (`never_shown`, checked by `leaks`).
        self.secret_values: set[str] = set()
        # What the CLI printed on errors and refusals (its successful output may show a key's
        # plaintext once, by design).
        self.cli_errors: list[str] = []
        self.scanned_logs = 0
        self.kept_logs: dict[str, str] = {}
        self.base_env = self._base_env()
        # The split services' data dirs (beside `ramen up`'s `data` when both run, in `migrate`).
        self.split_data = work / ("split" if topology == "migrate" else "data")

    def _base_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAMEN_") or k.startswith("RAMEN_TEST_")}
        venv = Path(sys.executable).parent.parent
        site = next((venv / "lib").glob("python3*/site-packages"))
        env.update(self.listen)
        env.update({
            "RAMEN_LOG_LEVEL": "info",
            "RAMEN_LOG_FORMAT": "pretty",
            "RAMEN_CLI_CONFIG": str(self.work / "cli.json"),
            "RAMEN_API": self.api,
            # Workers reuse this interpreter's MCP SDK instead of installing it from PyPI.
            "RAMEN_ZONE__PYTHON": sys.executable,
            "RAMEN_ZONE__SITE_PACKAGES": f'["{site}"]',
            "RAMEN_ZONE__VENV_WITHOUT_PIP": "true",
            "RAMEN_ZONE__RESTART_TIMEOUT": "90s",
            # The e2e client stands in for a load balancer on loopback: the API and the edge
            # believe its X-Forwarded-For (the client-address step forges and breaks it).
            "RAMEN_GATEWAY__TRUSTED_PROXIES": "127.0.0.1/32",
            # Every process and the workers they start (which inherit OTEL_*) export spans to
            # the scenario's own receiver, promptly.
            "OTEL_EXPORTER_OTLP_ENDPOINT": self.traces.endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "200",
        })
        return env

    def spawn(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        log = self.work / f"{name}.log"
        self.logs[name] = log
        handle = open(log, "ab")  # noqa: SIM115 - lives as long as the process
        proc = subprocess.Popen(args, env=env, stdout=handle, stderr=subprocess.STDOUT,
                                start_new_session=True)
        self.procs[name] = proc
        return proc

    # -- topology up ------------------------------------------------------------------------
    def start_up(self) -> None:
        admin = free_port()
        self.admin_ports["ramen"] = admin
        env = dict(self.base_env, RAMEN_DATA_DIR=str(self.work / "data"),
                   RAMEN_LISTEN__ADMIN=f"127.0.0.1:{admin}")
        self.spawn("ramen", [str(self.ramen), "up"], env)
        self.wait_ready("ramen")

    def stop_up(self) -> None:
        """Stops `ramen up` as Ctrl-C does (SIGTERM): it exits 0 and its workers with it."""
        proc = self.procs["ramen"]
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
        check(proc.returncode == 0, "ramen up to exit 0 on SIGTERM", proc.returncode)
        eventually("its workers stopped with it", 30, lambda: self.worker_pids() == [])

    def restart_up(self) -> None:
        """Stops `ramen up` and starts it again on the same data dir."""
        self.stop_up()
        self.start_up()

    # -- topology split ---------------------------------------------------------------------
    def start_split(self) -> None:
        self.start_backing()
        for service in SERVICES:
            self.start_service(service)
        for service in SERVICES:
            self.wait_ready(service)

    def start_backing(self) -> None:
        """nats-server, redis-server and moto's S3 with the bucket: what the split services share."""
        bin_dir = Path(sys.executable).parent
        nats_port, redis_port, s3_port = free_port(), free_port(), free_port()
        (self.work / "nats").mkdir()
        # NATS in operator mode, as an operator sets it up: `ramen nats-auth init` writes the
        # server's configuration and one user per service; nothing connects without one.
        self.nats_auth = self.work / "nats-auth"
        self.cli("nats-auth", "init", "--out", str(self.nats_auth))
        for creds in self.nats_auth.glob("*.creds"):
            self.never_shown(creds.read_text().split("-----BEGIN USER NKEY SEED-----")[1].split()[0])
        self.never_shown((self.nats_auth / "node-signing.nk").read_text().strip())
        self.spawn("nats", [str(bin_dir / "nats-server"), "-c", str(self.nats_auth / "server-auth.conf"),
                            "-js", "-a", "127.0.0.1", "-p", str(nats_port), "-sd", str(self.work / "nats")],
                   dict(os.environ))
        self.spawn("redis", ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1",
                             "--save", "", "--appendonly", "no", "--dir", str(self.work)],
                   dict(os.environ))
        self.spawn("s3", [str(bin_dir / "moto_server"), "-H", "127.0.0.1", "-p", str(s3_port)],
                   dict(os.environ, MOTO_ALLOW_NONEXISTENT_REGION="true"))
        for port in (nats_port, redis_port, s3_port):
            eventually(f"port {port} listening", 30, lambda p=port: socket.create_connection(("127.0.0.1", p), 1).close() or True)
        self.bucket = "ramen-e2e"
        httpx2.put(f"http://127.0.0.1:{s3_port}/{self.bucket}").raise_for_status()
        self.shared_env = dict(
            self.base_env,
            RAMEN_NATS__URL=f"nats://127.0.0.1:{nats_port}",
            RAMEN_REDIS__URL=f"redis://127.0.0.1:{redis_port}",
            RAMEN_S3__ENDPOINT=f"http://127.0.0.1:{s3_port}",
            RAMEN_S3__BUCKET=self.bucket,
            RAMEN_S3__REGION="us-east-1",
            RAMEN_S3__FORCE_PATH_STYLE="true",
            AWS_ACCESS_KEY_ID="testing",
            AWS_SECRET_ACCESS_KEY="testing",
            RAMEN_JWT_SECRET="e2e-jwt-secret-that-is-long-enough-0123456789",
            RAMEN_SECRETS_KEY="MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
        )
        self.never_shown(self.shared_env["RAMEN_JWT_SECRET"])
        self.never_shown(self.shared_env["RAMEN_SECRETS_KEY"])
        self.s3 = f"http://127.0.0.1:{s3_port}"

    def start_service(self, service: str, name: str | None = None) -> None:
        name = name or service
        admin = free_port()
        self.admin_ports[name] = admin
        env = dict(self.shared_env, RAMEN_DATA_DIR=str(self.split_data / service),
                   RAMEN_LISTEN__ADMIN=f"127.0.0.1:{admin}",
                   RAMEN_NATS_CREDS=str(self.nats_auth / f"{service}.creds"))
        if service == "zone-manager":
            env["RAMEN_NATS_SIGNING_KEY"] = str(self.nats_auth / "node-signing.nk")
        self.spawn(name, [str(self.ramen), "serve", service], env)

    def wait_ready(self, name: str) -> None:
        port = self.admin_ports[name]

        def ready() -> bool:
            proc = self.procs[name]
            if proc.poll() is not None:
                raise Failed(f"{name} exited with {proc.returncode}:\n{self.tail(name)}")
            return httpx2.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200

        eventually(f"{name} ready", 120, ready)

    def tail(self, name: str, lines: int = 40) -> str:
        text = self.logs[name].read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def bootstrap_password(self) -> tuple[str, str]:
        name = "auth" if self.topology == "split" else "ramen"

        def found() -> tuple[str, str] | None:
            text = re.sub(r"\x1b\[[0-9;]*m", "", self.logs[name].read_text(errors="replace"))
            email = re.search(r"email[\"=:\s]+\"?([^\s\"]+@[^\s\"]+)", text)
            password = re.search(r"one[-_]time[-_ ]password[\"=:\s]+\"?([A-Za-z0-9_\-]{8,})", text)
            return (email.group(1), password.group(1)) if email and password else None

        return eventually("the bootstrap admin in the log", 30, found)

    def stop(self) -> None:
        for name, proc in reversed(list(self.procs.items())):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for name, proc in self.procs.items():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)

    # -- the CLI ----------------------------------------------------------------------------
    def cli(self, *args: str, stdin: str | None = None, ok: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([str(self.ramen), *args], env=self.base_env, input=stdin,
                              capture_output=True, text=True, timeout=600)
        self.cli_errors.append(done.stderr)
        if done.returncode != 0:
            self.cli_errors.append(done.stdout)
        if ok and done.returncode != 0:
            raise Failed(f"`ramen {' '.join(args)}` exited {done.returncode}: {done.stderr.strip()}")
        return done

    def cli_json(self, *args: str) -> Any:
        return json.loads(self.cli("--json", *args).stdout)

    def cli_items(self, *args: str) -> list[Any]:
        """A listing's items (the API pages lists: `{"items": [...], "next_page_token"}`)."""
        answer = self.cli_json(*args)
        return answer["items"] if isinstance(answer, dict) else answer

    def never_shown(self, value: str) -> None:
        if len(value) >= 8:
            self.secret_values.add(value)

    def keep_logs(self) -> None:
        """Copies every log under the work directory now (workers' logs go with their group)."""
        self.kept_logs.update({str(path.relative_to(self.work)): path.read_text(errors="replace")
                               for path in self.work.rglob("*.log") if path.is_file()})

    def leaks(self) -> list[str]:
        """Where a secret value shows: every log of every process, every CLI error, and every
        error answer an MCP or REST call got."""
        if self.topology == "up" or self.topology == "migrate":
            key_file = self.work / "data" / "keys" / "secrets.key"
            if key_file.exists():
                self.never_shown(key_file.read_text().strip())
        found = []
        # Every log under the work directory: the processes' own (`spawn` writes them there)
        # and the workers' (under the data dirs), with those kept before a group deletion.
        self.keep_logs()
        texts = dict(self.kept_logs)
        self.scanned_logs = len(texts)
        texts.update({f"cli error {i}": text for i, text in enumerate(self.cli_errors)})
        texts.update({f"error answer {i}": text for i, text in enumerate(ERROR_BODIES)})
        for where, text in texts.items():
            for value in self.secret_values:
                if value in text:
                    found.append(f"{where}: {value[:4]}…")
        return found

    # -- what runs on this machine ----------------------------------------------------------
    def worker_pids(self) -> list[int]:
        """Worker processes started for this cluster (their command line names its work dir)."""
        pids = []
        data = str(self.work)
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            words = [a.decode(errors="replace") for a in argv]
            if "worker" in words and any(data in w for w in words):
                pids.append(int(entry.name))
        return sorted(pids)

    def leftovers(self, group: str) -> list[str]:
        """Files and directories under the data dirs named after the group (placements,
        snapshots, blobs); a store keeps its records inside its own files."""
        found = []
        for path in (self.work / "data").rglob("*"):
            if group in path.relative_to(self.work / "data").parts:
                found.append(str(path))
        return found

    def bucket_keys(self, prefix: str) -> list[str]:
        if self.topology == "up":
            return []
        answer = httpx2.get(f"{self.s3}/{self.bucket}?list-type=2&prefix={prefix}").text
        return re.findall(r"<Key>([^<]+)</Key>", answer)


# -- MCP through the edge, with the official clients ------------------------------------------
# The Python client's modes: `legacy` opens a 2025-11-25 session; `auto` probes server/discover
# and stays on 2026-07-28; `2026-07-28` is stateless from the first request.
MODES = ("legacy", "auto", "2026-07-28")

# Every error answer an MCP or REST call of the scenario got (HTTP bodies of 4xx/5xx, JSON-RPC
# errors as the client raised them), scanned for secret values at the end (`Cluster.leaks`).
ERROR_BODIES: list[str] = []


async def _record_error_body(response: httpx2.Response) -> None:
    if response.status_code >= 400:
        await response.aread()
        ERROR_BODIES.append(f"{response.status_code} {response.request.url.path}: {response.text}")


def mcp(url: str, key: str, action: Callable[[Client], Any], zone: str | None = None, mode: str = "legacy") -> Any:
    headers = {"Authorization": f"Bearer {key}"}
    if zone:
        headers["ramen-zone"] = zone

    async def run() -> Any:
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0),
                                      event_hooks={"response": [_record_error_body]}) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as c:
                return await action(c)

    return anyio.run(run)


def ts_client(url: str, key: str, refused_tool: str | None = None) -> dict[str, Any]:
    """The TypeScript SDK (scripts/install-ts-sdk) as a client: e2e/ts_client.mjs."""
    sdk = subprocess.run([str(ROOT / "scripts" / "install-ts-sdk"), "--print"], check=True,
                         capture_output=True, text=True).stdout.strip()
    node = shutil.which("node") or "node"
    args = [node, str(ROOT / "e2e" / "ts_client.mjs"), sdk, url, key] + ([refused_tool] if refused_tool else [])
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise Failed(f"the TypeScript client exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


async def era(c: Client) -> dict[str, Any]:
    """Which revision the client speaks, and a call in it."""
    result = await c.call_tool("notes.add", {"a": 2, "b": 3})
    return {"version": c.protocol_version, "add": result.structured_content,
            "tools": sorted(t.name for t in (await c.list_tools()).tools)}


async def tool_names(c: Client) -> list[str]:
    return sorted(t.name for t in (await c.list_tools()).tools)


def add(a: int, b: int) -> Callable[[Client], Any]:
    async def call(c: Client) -> Any:
        result = await c.call_tool("notes.add", {"a": a, "b": b})
        return result.structured_content
    return call


def status_of(url: str, key: str, zone: str | None = None, forwarded: list[str] | None = None) -> int:
    """The HTTP status of an initialize sent straight to the edge (`forwarded`: one
    X-Forwarded-For line each, as a load balancer and the proxies before it would send)."""
    headers: list[tuple[str, str]] = [
        ("Authorization", f"Bearer {key}"), ("Accept", "application/json, text/event-stream"),
        ("Content-Type", "application/json")]
    if zone:
        headers.append(("ramen-zone", zone))
    headers += [("X-Forwarded-For", line) for line in forwarded or []]
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "e2e", "version": "1"}}}
    answer = httpx2.post(url, headers=headers, json=body, timeout=30)
    if answer.status_code >= 400:
        ERROR_BODIES.append(f"{answer.status_code} {url}: {answer.text}")
    return answer.status_code


def call_error(url: str, key: str, tool: str, arguments: dict[str, Any], mode: str = "legacy") -> int | None:
    async def call(c: Client) -> int | None:
        try:
            await c.call_tool(tool, arguments)
        except MCPError as exc:
            ERROR_BODIES.append(f"MCP error {exc.code}: {exc}")
            return exc.code
        return None
    return mcp(url, key, call, mode=mode)


# -- the scenario ------------------------------------------------------------------------------
def children_of(parent: int, name: str | None = None) -> list[int]:
    """Pids whose parent is `parent` (and whose command is `name`, when given), sorted."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            comm = (entry / "comm").read_text().strip()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and name in (None, comm):
            found.append(int(entry.name))
    return sorted(found)


def children_named(parent: int, name: str) -> list[int]:
    return children_of(parent, name)


def deploy_through_a_frozen_s3(cluster: Cluster, url: str, key: str) -> None:
    """SIGSTOP the S3 server as a deploy of a new commit starts (its snapshot must be uploaded
    and fetched), SIGCONT it 8 s later: the job succeeds, stable serves throughout."""
    import threading
    s3 = cluster.procs["s3"]
    result: dict[str, subprocess.CompletedProcess[str]] = {}
    deploy = threading.Thread(target=lambda: result.setdefault("done", cluster.cli(
        "deploy", "prod", "-g", GROUP, "--ref", "docs", "--wait", ok=False)))
    os.kill(s3.pid, signal.SIGSTOP)
    try:
        deploy.start()
        frozen_until = time.monotonic() + 8
        served = 0
        while time.monotonic() < frozen_until:
            check(mcp(url, key, add(1, 1)) == {"result": 2}, "calls while S3 is frozen")
            served += 1
            time.sleep(0.5)
    finally:
        os.kill(s3.pid, signal.SIGCONT)
    deploy.join(600)
    done = result.get("done")
    check(done is not None and done.returncode == 0, "the deploy finished once S3 was back",
          done.stdout[-2000:] + done.stderr[-2000:] if done else "still running")
    check(served > 0, "calls served while S3 was frozen", served)
    jobs = cluster.cli_items("jobs", "-g", GROUP)
    check(jobs[0]["git_ref"] == "docs" and jobs[0]["state"] == "succeeded", "the job succeeded", jobs[0])


class Traffic:
    """MCP calls through the edge on a thread, one after another, until stopped: what a client
    saw during a fault (answers, errors, the longest call)."""

    def __init__(self, url: str, key: str) -> None:
        import threading
        self.url, self.key = url, key
        self.answered, self.failed, self.longest = 0, [], 0.0
        # Sessions a worker restart ended between their initialize and their call: the edge
        # answers 404 before any node saw the call, and the MCP spec has the client start a
        # new session, as done here once. A second failure, or any other, is a failed call.
        self.reinitialized = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            n += 1
            started = time.monotonic()
            try:
                try:
                    got = mcp(self.url, self.key, add(n, 1))
                except Exception as e:  # noqa: BLE001 - only the session-gone 404 is retried
                    while isinstance(e, BaseExceptionGroup) and e.exceptions:
                        e = e.exceptions[0]
                    if "the session's worker is gone" not in str(e):
                        raise
                    self.reinitialized += 1
                    ERROR_BODIES.append(str(e))
                    got = mcp(self.url, self.key, add(n, 1))
                if got == {"result": n + 1}:
                    self.answered += 1
                else:
                    self.failed.append(repr(got))
            except Exception as e:  # noqa: BLE001 - every failure is what the client saw
                while isinstance(e, BaseExceptionGroup) and e.exceptions:
                    e = e.exceptions[0]
                self.failed.append(f"{time.strftime('%H:%M:%S')} {type(e).__name__}: {e}")
                ERROR_BODIES.append(self.failed[-1])
            self.longest = max(self.longest, time.monotonic() - started)
            time.sleep(0.2)

    def stop(self) -> str:
        self._stop.set()
        self._thread.join(60)
        check(not self.failed, "every call through the edge answered", self.failed[:5])
        check(self.answered > 0, "calls answered during the fault", self.answered)
        return (f"{self.answered} calls answered, 0 failed ({self.reinitialized} after a new session), "
                f"the longest {self.longest:.2f} s")


def api_get(cluster: Cluster, path: str) -> Any:
    """A GET on the REST API with the CLI's session (the CLI has no command for every read)."""
    token = json.loads((cluster.work / "cli.json").read_text())["access_token"]
    answer = httpx2.get(f"{cluster.api}{path}", headers={"authorization": f"Bearer {token}"}, timeout=10)
    if answer.status_code >= 400:
        ERROR_BODIES.append(f"{answer.status_code} {path}: {answer.text}")
    answer.raise_for_status()
    return answer.json()


def listed(answer: Any) -> list[Any]:
    """A listing's items, whichever name the page gives them."""
    if isinstance(answer, list):
        return answer
    return answer.get("items", answer.get("calls", []))


def calls_on_record(cluster: Cluster, url: str, first_key: dict[str, Any], weather_tool: str) -> None:
    """Issue 30: every call is on record. Calls with two keys (an ok, a tool error, an unknown
    tool, a blocked tool earlier); read back from the API and the CLI with the right caller,
    tool and outcome, and no argument values (the environment does not record them)."""
    second = cluster.cli_json("keys", "create", "-g", GROUP, "e2e-second")
    cluster.never_shown(second.get("plaintext", ""))
    second_key, second_id = second["plaintext"], second["key"]["id"]
    first_id = first_key["key"]["id"]
    eventually("the second key accepted", 60, lambda: status_of(url, second_key) == 200)
    check(mcp(url, second_key, add(20, 22)) == {"result": 42}, "a call with the second key")
    sentinel = "e2e-argument-value-4b1d"

    async def shout(c: Client) -> Any:
        return (await c.call_tool("notes.shout", {"text": sentinel})).content[0].text
    check(mcp(url, second_key, shout, mode="2026-07-28") == sentinel.upper() + "!", "notes.shout statelessly")
    check(call_error(url, second_key, "notes.divide", {"a": 1, "b": 0}) is None, "a tool error is a result")
    check(call_error(url, second_key, "notes.nope", {}) is not None, "an unknown tool is an error")

    def second_calls() -> list[Any]:
        calls = listed(api_get(cluster, f"/api/groups/{GROUP}/calls?caller={second_id}"))
        if len(calls) < 4:
            raise AssertionError(f"{len(calls)} of the second key's 4 calls on record")
        return calls
    calls = eventually("the second key's calls on record", 60, second_calls)
    check(all(c["caller_id"] == second_id and c["caller_name"] == "e2e-second" for c in calls),
          "every record names the second key", calls)
    check(all(c["environment"] == "prod" and c["zone"] in ("local-a", "local-b") for c in calls),
          "environment and zone on each record", calls)
    outcomes = {c["target"]: c["outcome"] for c in calls}
    check(outcomes.get("notes.add") == "ok" and outcomes.get("notes.shout") == "ok", "ok calls", outcomes)
    check(outcomes.get("notes.divide") == "tool_error", "the tool error", outcomes)
    check(outcomes.get("notes.nope") == "error", "the unknown tool", outcomes)
    check(all(c["duration_us"] > 0 and c["response_bytes"] > 0 for c in calls), "durations and sizes", calls)
    text = json.dumps(calls)
    check(sentinel not in text and not any("arguments" in c for c in calls),
          "no argument values unless the environment records them", text[:2000])

    firsts = listed(api_get(cluster, f"/api/groups/{GROUP}/calls?caller={first_id}&tool=notes.add&outcome=ok"))
    check(len(firsts) >= 3 and all(c["caller_name"] == "e2e" and c["target"] == "notes.add" for c in firsts),
          "the first key's notes.add calls, filtered", firsts[:3])
    blocked = listed(api_get(cluster, f"/api/groups/{GROUP}/calls?tool={weather_tool}&outcome=blocked"))
    check(len(blocked) >= 1, "the blocked call on record", blocked)

    cli_calls = listed(cluster.cli_json("calls", "-g", GROUP, "--caller", second_id))
    check({c["target"] for c in cli_calls} >= {"notes.add", "notes.shout", "notes.divide", "notes.nope"},
          "the CLI reads the same records", cli_calls)
    table = cluster.cli("calls", "-g", GROUP, "--tool", "notes.divide").stdout
    check("e2e-second" in table and "tool_error" in table, "the CLI's table names caller and outcome", table)
    usage = cluster.cli_json("usage", "-g", GROUP, "--environment", "prod")
    check(usage["total"]["calls"] >= 8, "the usage summary counts the calls", usage.get("total"))


def reported_since(cluster: Cluster, since: float) -> bool:
    """Whether every load cell of the group has a report newer than `since` (epoch seconds)."""
    from datetime import datetime
    cells = api_get(cluster, f"/api/load?group={GROUP}")["items"]
    stamps = [c.get("last_report_at") for c in cells]
    return bool(stamps) and all(
        s is not None and datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp() > since for s in stamps)


def deploy_through_a_killed_bus(cluster: Cluster, url: str, key: str, ref: str) -> None:
    """SIGKILL nats-server while a deploy of `ref` runs: in the split topology it is started
    again 5 s later (same port and JetStream store), under `ramen up` its supervisor starts
    it again. Calls through the edge go on (the data plane does not need the bus), the
    deploy in progress finishes, and the zones' load reports reach the rebalancer again."""
    import threading
    traffic = Traffic(url, key)
    result: dict[str, subprocess.CompletedProcess[str]] = {}
    deploy = threading.Thread(target=lambda: result.setdefault("done", cluster.cli(
        "deploy", "prod", "-g", GROUP, "--ref", ref, "--wait", ok=False)))
    deploy.start()
    eventually("the deploy running", 60, lambda: any(
        j["git_ref"] == ref and j["state"] == "running" for j in cluster.cli_items("jobs", "-g", GROUP)))
    if cluster.topology == "split":
        nats = cluster.procs["nats"]
        nats.kill()
        nats.wait(10)
        time.sleep(5)  # the outage itself: what is measured is how the platform rides it out
        cluster.spawn("nats", nats.args, dict(os.environ))
    else:
        ramen = cluster.procs["ramen"].pid
        (child,) = eventually("ramen up's nats-server child", 30,
                              lambda: children_named(ramen, "nats-server") or None)
        os.kill(child, signal.SIGKILL)
        eventually("a new nats-server child", 60,
                   lambda: [p for p in children_named(ramen, "nats-server") if p != child] or None)
    back = time.time()
    deploy.join(600)
    done = result.get("done")
    check(done is not None and done.returncode == 0, "the deploy in progress finished",
          done.stdout[-2000:] + done.stderr[-2000:] if done else "still running")
    finished = time.time() - back
    jobs = cluster.cli_items("jobs", "-g", GROUP)
    check(jobs[0]["git_ref"] == ref and jobs[0]["state"] == "succeeded", "the job succeeded", jobs[0])
    eventually("load reports after the bus came back", 120, lambda: reported_since(cluster, back))
    print(f"    {traffic.stop()}; the deploy finished {finished:.1f} s after the bus came back, "
          f"load reports {time.time() - back:.1f} s after", flush=True)


def deploy_with_s3_down_past_its_budget(cluster: Cluster, url: str, key: str) -> None:
    """SIGKILL the S3 server and deploy a new commit: its snapshot cannot be uploaded, so the
    sync step is retried in place and the job redelivered until its deliveries are spent. The
    job ends dead-lettered with an error naming the blob store; stable serves the old commit
    throughout. moto keeps nothing, so it comes back with an empty bucket (the last step)."""
    traffic = Traffic(url, key)
    s3 = cluster.procs["s3"]
    s3.kill()
    s3.wait(10)
    started = time.monotonic()
    failed = cluster.cli("deploy", "prod", "-g", GROUP, "--ref", "docs-3", "--wait", ok=False)
    took = time.monotonic() - started
    check(failed.returncode != 0, "the deploy fails", failed.stdout)
    job = cluster.cli_items("jobs", "-g", GROUP)[0]
    check(job["git_ref"] == "docs-3" and job["state"] == "dead_lettered", "the job is dead-lettered", job)
    error = job.get("error", "")
    check("max deliveries" in error and "blob store unavailable" in error,
          "the job's error names the blob store and its budget", error)
    before = git(cluster.work / "repo", "rev-parse", "docs-2")
    for zone in ("local-a", "local-b"):
        workers = api_get(cluster, f"/api/groups/{GROUP}/zones/{zone}/workers")["items"]
        stable = [w["loaded_commit"] for w in workers if w["track"] == "worker"]
        check(stable and all(c == before for c in stable), f"stable on {zone} still on the commit before", workers)
    cluster.spawn("s3", s3.args, dict(os.environ, MOTO_ALLOW_NONEXISTENT_REGION="true"))
    eventually("the S3 server back", 30, lambda: httpx2.put(f"{cluster.s3}/{cluster.bucket}").is_success)
    print(f"    the job dead-lettered {took:.0f} s after it started ({error[:160]}); {traffic.stop()}",
          flush=True)


def scenario(cluster: Cluster, people: sso.People) -> None:
    step("log in as the bootstrap admin and set a password")
    email, one_time = cluster.bootstrap_password()
    cluster.cli("login", email, "--password-stdin", "--new-password",
                stdin=f"{one_time}\ne2e-password-0123456789\n")
    cluster.never_shown("e2e-password-0123456789")

    step("zones local-a and local-b")
    for zone in ("local-a", "local-b"):
        cluster.cli("zone", "create", zone)
    zones = [z["name"] for z in cluster.cli_items("zone", "list")]
    check({"local-a", "local-b"} <= set(zones), "both zones listed", zones)

    step("a group from the example repo, environment prod on both zones")
    repo = cluster.work / "repo"
    make_repo(repo)
    cluster.cli("group", "create", GROUP, "--repo", str(repo), "--ref", "main")
    cluster.cli("env", "create", "prod", "-g", GROUP, "--ref", "main", "--zone", "local-a,local-b")
    cluster.cli("secrets", "set", "-g", GROUP, "E2E_TOKEN", stdin="e2e-secret-value-7f3a9c1d\n")
    cluster.never_shown("e2e-secret-value-7f3a9c1d")

    step("deploy --wait: the job succeeds with six steps per zone")
    if cluster.topology == "split":
        deploy_surviving_a_killed_deployer(cluster)
    else:
        cluster.cli("deploy", "prod", "-g", GROUP, "--wait")
    jobs = cluster.cli_items("jobs", "-g", GROUP)
    job = cluster.cli_json("jobs", "-g", GROUP, jobs[0]["id"])
    check(job["state"] == "succeeded", "the job succeeded", job)
    for zone in job["zones"]:
        steps = [s for s in zone["steps"] if s["status"] == "succeeded"]
        check(len(steps) == 6, f"six succeeded steps in {zone['zone']}", zone)
        review = next(s for s in zone["steps"] if s["step"] == "review")
        check(review["outcome"] == "no surface change", "a first deploy does not wait for review", review)
    check(len(job["zones"]) == 2, "both zones in the job", job["zones"])

    if cluster.topology == "up":
        step("the deploy is one trace: gateway, deployer, its work item and steps, zone-manager, the canary node")
        check_deploy_trace(cluster)

    step("an MCP key; tools listed and called through the edge, with and without ramen-zone")
    key = cluster.cli_json("keys", "create", "-g", GROUP, "e2e")
    plaintext = key.get("plaintext")
    check(isinstance(plaintext, str), "the key's plaintext", key)
    cluster.never_shown(plaintext)
    url = f"{cluster.api}/mcp/{GROUP}/prod"
    eventually("the new key accepted", 60, lambda: status_of(url, plaintext) == 200)
    tools = mcp(url, plaintext, tool_names)
    check("notes.add" in tools and any(t.startswith("weather") for t in tools), "notes and weather tools", tools)
    check(mcp(url, plaintext, add(2, 3)) == {"result": 5}, "2 + 3 = 5 through the edge")
    for zone in ("local-a", "local-b"):
        check(mcp(url, plaintext, add(1, 1), zone=zone) == {"result": 2}, f"a call pinned to {zone}")
        check(mcp(url, plaintext, add(1, 2), zone=zone, mode="2026-07-28") == {"result": 3},
              f"a stateless call pinned to {zone}")

    review_a_reworded_tool(cluster, url, plaintext)

    step("every client mode through the edge: Python legacy, auto, 2026-07-28; the TypeScript SDK")
    for mode in MODES:
        seen = mcp(url, plaintext, era, mode=mode)
        want = "2025-11-25" if mode == "legacy" else "2026-07-28"
        check(seen["version"] == want, f"mode {mode} speaks {want}", seen)
        check(seen["add"] == {"result": 5} and seen["tools"] == sorted(tools), f"mode {mode} calls and lists", seen)
    ts = ts_client(url, plaintext)
    check(ts["protocolVersion"] == "2025-11-25" and ts["sessionId"], "the TypeScript SDK holds a session", ts)
    check(ts["add"] == {"result": 5} and ts["tools"] == sorted(tools), "the TypeScript SDK calls and lists", ts)
    check(ts["progress"] == [0, 1, 2] and "lima" in (ts["survey"] or ""), "progress reaches the TypeScript SDK", ts)

    step("a tools/call is one trace: edge, node, runtime call")
    check_call_trace(cluster)

    step("block the weather package: gone from the list, calls answer -32601")
    weather_tool = next(t for t in tools if t.startswith("weather"))
    cluster.cli("block", "prod", "-g", GROUP, "weather")
    eventually("weather gone from tools/list", 60,
               lambda: not any(t.startswith("weather") for t in mcp(url, plaintext, tool_names)))
    code = call_error(url, plaintext, weather_tool, {"city": "Paris"})
    check(code == -32601, "-32601 for a blocked tool", code)
    stateless_tools = mcp(url, plaintext, tool_names, mode="2026-07-28")
    check(not any(t.startswith("weather") for t in stateless_tools), "weather gone from 2026-07-28 lists", stateless_tools)
    # The edge refuses by Mcp-Name from the environment's blocked list (GetEnvironment).
    code = call_error(url, plaintext, weather_tool, {"city": "Paris"}, mode="2026-07-28")
    check(code == -32601, "-32601 for a blocked tool in a stateless request", code)
    ts = ts_client(url, plaintext, refused_tool=weather_tool)
    check(ts["refused"] == -32601 and weather_tool not in ts["tools"], "blocked for the TypeScript SDK too", ts)
    step("every call on record: two keys, read back from the API and the CLI")
    calls_on_record(cluster, url, key, weather_tool)
    cluster.cli("unblock", "prod", "-g", GROUP, "weather")
    eventually("weather back", 60, lambda: weather_tool in mcp(url, plaintext, tool_names))
    eventually("weather callable statelessly again", 60,
               lambda: call_error(url, plaintext, "notes.add", {"a": 1, "b": 1}, mode="2026-07-28") is None
               and weather_tool in mcp(url, plaintext, tool_names, mode="2026-07-28"))

    step("a revoked key gets 401")
    other = cluster.cli_json("keys", "create", "-g", GROUP, "short-lived")
    cluster.never_shown(other.get("plaintext", ""))
    other_key = other["plaintext"]
    # Keys reach the running nodes over the bus, within seconds.
    eventually("the new key accepted", 60, lambda: status_of(url, other_key) == 200)
    cluster.cli("keys", "revoke", "-g", GROUP, other["key"]["id"])
    eventually("401 for the revoked key", 60, lambda: status_of(url, other_key) == 401)

    step("a key stops at its expiry with nothing pushed after it was created")
    expires_at = time.time() + 30
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(expires_at))
    expiring = cluster.cli_json("keys", "create", "-g", GROUP, "expiring", "--expires-at", stamp)
    cluster.never_shown(expiring.get("plaintext", ""))
    expires_at = int(expires_at)  # the stamp's whole second
    eventually("the expiring key accepted", 60, lambda: status_of(url, expiring["plaintext"]) == 200)
    check(time.time() < expires_at, "accepted before its expiry (the machine was not too slow)", stamp)
    eventually("401 once expired", 60, lambda: status_of(url, expiring["plaintext"]) == 401)
    check(time.time() >= expires_at, "refused only from its expiry on", stamp)
    shown = [k for k in cluster.cli_items("keys", "list", "-g", GROUP) if k.get("name") == "expiring"]
    check(bool(shown) and shown[0].get("expires_at", "").startswith(stamp[:16]), "the CLI shows its expiry", shown)
    # The edge reports the keys it let through every 30 s: the key in use shows when.
    def last_used(name: str) -> Any:
        return next((k.get("last_used_at") for k in cluster.cli_items("keys", "list", "-g", GROUP)
                     if k.get("name") == name), None)
    eventually("the CLI shows when the e2e key was last used", 90, lambda: last_used("e2e"))

    step("an IP rule excluding the client gets 403; clearing it lets it in again")
    cluster.cli("ip-rules", "local-a", "-g", GROUP, "10.123.0.0/16")
    eventually("403 on local-a", 180, lambda: status_of(url, plaintext, zone="local-a") == 403)
    check(status_of(url, plaintext, zone="local-b") == 200, "local-b still open", None)
    # Behind a trusted proxy (the e2e client stands in for one) the address is the right-most
    # entry of every X-Forwarded-For line: a client's own first line smuggles nothing in.
    inside = status_of(url, plaintext, zone="local-a", forwarded=["10.123.0.5"])
    check(inside == 200, "a forwarded address inside the rule is let in", inside)
    smuggled = status_of(url, plaintext, zone="local-a", forwarded=["10.123.0.5", "203.0.113.7"])
    check(smuggled == 403, "a second X-Forwarded-For line names the client", smuggled)
    malformed = status_of(url, plaintext, zone="local-a", forwarded=["10.123.0.5:4000"])
    check(malformed == 400, "a malformed client entry is refused, not skipped", malformed)
    cluster.cli("ip-rules", "local-a", "-g", GROUP, "--clear")
    eventually("200 on local-a again", 180, lambda: status_of(url, plaintext, zone="local-a") == 200)

    step("the bounds on service-account rules: shown, widened and narrowed back by the super admin")
    shown = cluster.cli_json("bounds")
    check(shown.get("aws", {}).get("wildcards") is False and "roles/owner" in shown.get("gcp", {}).get("denied", []),
          "the safe defaults", shown)
    widened = dict(shown)
    widened["gcp"] = dict(shown["gcp"], unscoped=True)
    written = json.loads(cluster.cli("--json", "bounds", "--set", "-", stdin=json.dumps(widened)).stdout)
    check(written.get("gcp", {}).get("unscoped") is True and written.get("version", 0) > shown.get("version", 0),
          "project scope allowed, a new version", written)
    narrowed = json.dumps(dict(written, gcp=shown["gcp"]))  # carries the version it was read at
    restored = json.loads(cluster.cli("--json", "bounds", "--set", "-", stdin=narrowed).stdout)
    check(restored.get("gcp", {}).get("unscoped") is False, "narrowed back", restored)
    stale = cluster.cli("bounds", "--set", "-", stdin=narrowed, ok=False)
    check(stale.returncode != 0 and "version" in stale.stderr, "the version read before is stale now", stale.stderr)

    oauth.oauth_flow(cluster, GROUP, repo, {"step": step, "check": check, "eventually": eventually,
                                            "free_port": free_port, "git": git, "api_get": api_get})

    helpers: dict[str, Any] = {"step": step, "check": check, "eventually": eventually, "free_port": free_port,
                               "error_bodies": ERROR_BODIES}
    if cluster.topology == "up":
        helpers["new_cluster"] = lambda work, api_port: Cluster(cluster.ramen, "up", work, api_port)
    sso.sso_flow(cluster, GROUP, people, helpers)

    step("a broken ref: the canary fails, stable still serves the old tools")
    broken = cluster.cli("deploy", "prod", "-g", GROUP, "--ref", "broken", "--wait", ok=False)
    check(broken.returncode != 0, "a failing exit code for the broken deploy", broken.stdout)
    envs = cluster.cli_items("env", "list", "-g", GROUP)
    prod = next(e for e in envs if e["name"] == "prod")
    flat = json.dumps(prod)
    check("fail" in flat.lower(), "the environment shows the failure", prod)
    check(weather_tool in mcp(url, plaintext, tool_names), "stable serves the old tools", None)

    step("rollback: deploy main again")
    cluster.cli("deploy", "prod", "-g", GROUP, "--ref", "main", "--wait")
    check(mcp(url, plaintext, add(4, 4)) == {"result": 8}, "calls after the rollback")

    step("a hostile tenant beside it on local-a: every reach outside its own tools refused")
    hostile_tenant(cluster, url, plaintext)

    if cluster.topology == "split":
        step("the S3 server frozen for 8 s during a deploy: the deploy waits it out, calls go on")
        deploy_through_a_frozen_s3(cluster, url, plaintext)
        step("Redis frozen: MCP calls and a login are still answered, none of them hangs")
        redis = cluster.procs["redis"]
        os.kill(redis.pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            for i in range(5):
                check(mcp(url, plaintext, add(i, 3)) == {"result": i + 3}, "calls while Redis is frozen")
            cluster.cli("login", email, "--password-stdin", stdin="e2e-password-0123456789\n")
            frozen = time.monotonic() - started
        finally:
            os.kill(redis.pid, signal.SIGCONT)
        started = time.monotonic()
        cluster.cli("login", email, "--password-stdin", stdin="e2e-password-0123456789\n")
        check(mcp(url, plaintext, add(9, 3)) == {"result": 12}, "calls once Redis is back")
        print(f"    5 calls and a login with Redis frozen: {frozen:.1f} s; a login and a call once it "
              f"is back: {time.monotonic() - started:.1f} s", flush=True)
    if cluster.topology in ("split", "up"):
        step("nats-server killed during a deploy: calls go on, the deploy finishes, load reports resume")
        deploy_through_a_killed_bus(cluster, url, plaintext, "docs-2" if cluster.topology == "split" else "docs")

    if cluster.topology == "up":
        step("stop ramen up and start it again: state kept, workers back")
        cluster.restart_up()
        eventually("calls through the edge after the restart", 180,
                   lambda: mcp(url, plaintext, add(5, 5)) == {"result": 10})
        check(len(cluster.cli_items("jobs", "-g", GROUP)) >= 3, "the jobs kept", None)

    step("kill one worker: calls keep succeeding, the worker is replaced")
    # Both zones serving first: after a restart one zone's worker may be ready before the
    # other's, and killing the only ready one would test nothing but that race.
    for zone in ("local-a", "local-b"):
        eventually(f"{zone} serving before a worker is killed", 180,
                   lambda zone=zone: status_of(url, plaintext, zone=zone) == 200)
    before = cluster.worker_pids()
    check(len(before) >= 2, "a worker per zone running", before)
    killed_at = time.monotonic()
    os.kill(before[0], signal.SIGKILL)
    for i in range(5):
        check(mcp(url, plaintext, add(i, 1)) == {"result": i + 1}, "calls during the replacement")
        check(mcp(url, plaintext, add(i, 2), mode="2026-07-28") == {"result": i + 2},
              "stateless calls during the replacement (the edge moves them on)")
    eventually("the killed worker replaced", 120,
               lambda: len(cluster.worker_pids()) >= len(before) and before[0] not in cluster.worker_pids())
    for zone in ("local-a", "local-b"):
        eventually(f"{zone} serving after the replacement", 180,
                   lambda zone=zone: status_of(url, plaintext, zone=zone) == 200)
    print(f"    the killed worker replaced and both zones serving {time.monotonic() - killed_at:.1f} s "
          "after the kill", flush=True)

    if cluster.topology == "split":
        step("S3 down past a deploy's budget: the job is dead-lettered naming it, stable serves on")
        deploy_with_s3_down_past_its_budget(cluster, url, plaintext)

    cluster.keep_logs()  # the workers' logs go with the group; scanned for secrets at the end
    step("delete the group: no worker, no placement directory, no blobs, no record")
    cluster.cli("group", "delete", GROUP)
    eventually("no worker process left", 120, lambda: cluster.worker_pids() == [])
    eventually("no file or directory of the group left", 120, lambda: cluster.leftovers(GROUP) == [])
    eventually("no bucket object of the group left", 120, lambda: cluster.bucket_keys(f"groups/{GROUP}/") == [])
    eventually("the group gone", 120, lambda: GROUP not in [g["name"] for g in cluster.cli_items("group", "list")])
    gone = cluster.cli("env", "list", "-g", GROUP, ok=False)
    check(gone.returncode != 0, "its environments gone with it", gone.stdout)


# -- a hostile tenant --------------------------------------------------------------------------
def make_hostile_repo(at: Path) -> None:
    shutil.copytree(HOSTILE_REPO, at)
    git(at, "init", "-q", "-b", "main")
    git(at, "add", "-A")
    git(at, "commit", "-qm", "probes")


def zones_root(cluster: Cluster) -> Path:
    """Where the local provider keeps its placements: the zone-manager's data dir."""
    data = cluster.work / "data" if cluster.topology == "up" else cluster.split_data / "zone-manager"
    return data / "zones"


def alive(pid: int) -> bool:
    """Running (a zombie, dead but not yet reaped, has no command line)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes() != b""
    except OSError:
        return False


def serving_node(cluster: Cluster, group: str, zone: str) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    """A running node of `group` in `zone`: its worker directory, config and bound ports."""
    def found() -> tuple[Path, dict[str, Any], dict[str, Any]] | None:
        workers = zones_root(cluster) / zone / group / "workers"
        for worker in sorted(workers.iterdir()) if workers.is_dir() else []:
            try:
                ports = json.loads((worker / "ports.json").read_text())
                config = tomllib.loads((worker / "node.toml").read_text())
            except (OSError, ValueError):
                continue
            if alive(ports["pid"]):
                return worker, config, ports
        return None
    return eventually(f"a running node of {group} in {zone}", 60, found)


def connected_on(name: str) -> int:
    """Connections accepted on the abstract socket `name` (`@...`) now open, by
    /proc/net/unix (state 03: connected; the listener itself is 01)."""
    count = 0
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[7] == name and fields[5] == "03":
            count += 1
    return count


def probe(url: str, key: str, tool: str, **arguments: Any) -> Any:
    """Calls one of the hostile package's tools; they answer what happened instead of raising."""
    async def call(c: Client) -> Any:
        result = await c.call_tool(f"probe.{tool}", arguments)
        if result.is_error:
            raise Failed(f"probe.{tool} failed: {result.content}")
        answer = result.structured_content
        # The SDK wraps a str or list answer as {"result": ...}; a dict answer is itself.
        return answer["result"] if set(answer) == {"result"} else answer
    return mcp(url, key, call)


def refused(what: str, answer: Any) -> None:
    check(isinstance(answer, str) and answer.startswith("refused"), f"{what} refused", answer)


def nats_address(config: dict[str, Any]) -> tuple[str, int]:
    address = re.sub(r"^nats://", "", config["nats_url"]).rsplit("@", 1)[-1]
    host, port = address.rsplit(":", 1)
    return host, int(port)


def bus_attempts(config: dict[str, Any], creds: Path, attempts: list[tuple[str, bytes]]) -> list[str]:
    """Publishes each (subject, payload) as the user of `creds`; the server's refusals."""
    errors: list[str] = []

    async def run() -> None:
        async def on_error(err: Exception) -> None:
            errors.append(str(err))
        nc = await nats.connect(config["nats_url"], user_credentials=str(creds), error_cb=on_error,
                                allow_reconnect=False, connect_timeout=10)
        try:
            for subject, payload in attempts:
                await nc.publish(subject, payload)
            await nc.flush(timeout=10)
            deadline = time.monotonic() + 10
            while len(errors) < len(attempts) and time.monotonic() < deadline:
                await anyio.sleep(0.1)
        finally:
            await nc.close()

    anyio.run(run)
    return errors


def forged_zone_deleted(zone: str) -> bytes:
    return json.dumps({"meta": {"event_id": f"forged-{time.time_ns()}", "actor": "evil",
                                "at_unix_ms": int(time.time() * 1000)}, "zone": zone}).encode()


def hostile_tenant(cluster: Cluster, url: str, key: str) -> None:
    """Group `evil` deploys the hostile package on local-a, beside the victim's workers. Each
    probe is first shown to have something to reach (the file exists, the port listens, the
    process runs), then asserted refused; the victim serves throughout; `evil` is deleted."""
    repo = cluster.work / "evil-repo"
    make_hostile_repo(repo)
    cluster.cli("group", "create", EVIL, "--repo", str(repo), "--ref", "main")
    cluster.cli("env", "create", "prod", "-g", EVIL, "--ref", "main", "--zone", "local-a")
    cluster.cli("deploy", "prod", "-g", EVIL, "--wait")
    evil_key = cluster.cli_json("keys", "create", "-g", EVIL, "probe")["plaintext"]
    cluster.never_shown(evil_key)
    evil = f"{cluster.api}/mcp/{EVIL}/prod"
    eventually("evil's key accepted", 60, lambda: status_of(evil, evil_key) == 200)

    victim_dir, victim, victim_ports = serving_node(cluster, GROUP, "local-a")
    evil_dir, evil_config, evil_ports = serving_node(cluster, EVIL, "local-a")
    seen = probe(evil, evil_key, "environment")
    leaked = [n for n in seen["names"].split(",") if n.startswith(("RAMEN_", "AWS_", "NATS"))]
    check(leaked == [], "none of the node's own variables in the tool's environment", seen)

    # The control plane's keys and stores, other placements' configs, the node's own config
    # (its bus credentials and ticket key): all exist, none readable.
    data = cluster.work / "data"
    secrets = [*data.glob("keys/*.key"), *data.glob("keys/nats/*.nk"), *cluster.work.glob("nats-auth/*"),
               victim_dir / "node.toml", *(zones_root(cluster) / "local-a" / GROUP / "config").glob("*.toml"),
               evil_dir / "node.toml"]
    check(len(secrets) >= 5, "the secrets to reach for are there", secrets)
    for path in secrets:
        refused(f"reading {path.relative_to(cluster.work)}", probe(evil, evil_key, "read", path=str(path)))
    refused("listing the zones", probe(evil, evil_key, "listdir", path=str(zones_root(cluster))))
    found = probe(evil, evil_key, "walk_up",
                  names=["keys/jwt.key", "keys/secrets.key", "nats-auth/zone-manager.creds"])
    check(found == [], "nothing of the data dir found walking up from the tool's directory", found)
    refused("writing into the victim's worker", probe(evil, evil_key, "write", path=str(victim_dir / "planted")))
    for pid in (victim_ports["pid"], evil_ports["pid"]):
        for name in ("environ", "mem"):
            check(Path(f"/proc/{pid}/{name}").exists(), f"/proc/{pid}/{name} exists", None)
            refused(f"reading /proc/{pid}/{name}", probe(evil, evil_key, "read", path=f"/proc/{pid}/{name}"))
        refused(f"signalling node {pid}", probe(evil, evil_key, "signal", pid=pid))

    # The victim node's abstract Unix socket, where the edge on this host reaches it: the edge
    # holds a connection to it just after a call to local-a (kept idle 1 s), this test can
    # connect too, and the tenant's code cannot (Landlock's abstract-socket scope).
    local = victim_ports.get("mcp_local") or ""
    check(local.startswith("@ramen/node/"), "the victim's node serves a local socket", victim_ports)
    eventually(f"the edge connected to {local} for a call to local-a", 60,
               lambda: mcp(url, key, add(1, 1), zone="local-a") == {"result": 2}
               and connected_on(local) > 0)
    with socket.socket(socket.AF_UNIX) as s:
        s.connect("\0" + local[1:])
    refused("connecting to the victim's local socket",
            probe(evil, evil_key, "connect_abstract", name=local[1:]))

    # Ports: the bus, the control plane, the victim node's gRPC and admin ports; each listens.
    host, port = nats_address(victim)
    ports = {"the bus": (host, port), "the API": ("127.0.0.1", cluster.api_port),
             "the victim's gRPC port": tuple(victim_ports["grpc"].rsplit(":", 1)),
             "the victim's admin port": tuple(victim_ports["admin"].rsplit(":", 1))}
    for what, (h, p) in ports.items():
        socket.create_connection((h, int(p)), 5).close()
        refused(f"connecting to {what}", probe(evil, evil_key, "connect", host=h, port=int(p)))
    lines = probe(evil, evil_key, "publish", host=host, port=port,
                  subject="ramen.events.v1.zone.deleted", payload=forged_zone_deleted("local-a").decode())
    check(len(lines) == 1 and lines[0].startswith("refused"), "publishing on the bus refused", lines)
    # What the victim's node accepts from anyone who could reach it: only a ticket for it.
    admin = f"http://{victim_ports['admin']}"
    check(httpx2.get(f"{admin}/status", timeout=10).status_code == 401, "the victim's /status without a ticket: 401")
    check(httpx2.get(f"{admin}/healthz", timeout=10).status_code == 200, "the victim's /healthz stays public")

    # The bus with the node's own credentials (what evil's code would have, could it read its
    # config): events and JetStream's API refused, only its load reports allowed.
    creds = cluster.work / "evil-node.creds"
    creds.write_text(evil_config["nats_credentials"])
    creds.chmod(0o600)
    errors = bus_attempts(evil_config, creds, [
        ("ramen.events.v1.zone.deleted", forged_zone_deleted("local-a")),
        ("$JS.API.STREAM.DELETE.RAMEN_EVENTS", b""),
    ])
    for subject in ("ramen.events.v1.zone.deleted", "$JS.API.STREAM.DELETE.RAMEN_EVENTS"):
        check(any("permissions" in e.lower() and subject.lower() in e.lower() for e in errors),
              f"the node's credentials refused publishing {subject}", errors)

    # A forged zone.deleted sent by a user allowed to publish it (the zone-manager's): the
    # zone's record says it lives, so nothing is torn down.
    log = cluster.logs["ramen" if cluster.topology == "up" else "zone-manager"]
    ignored_before = log.read_text(errors="replace").count("ZoneDeleted ignored")
    zm_creds = zone_manager_creds(cluster)
    errors = bus_attempts(victim, zm_creds, [("ramen.events.v1.zone.deleted", forged_zone_deleted("local-a"))])
    check(errors == [], "the zone-manager's user may publish zone.deleted", errors)
    eventually("the forged zone.deleted logged and ignored", 60,
               lambda: log.read_text(errors="replace").count("ZoneDeleted ignored") > ignored_before)

    for zone in ("local-a", "local-b"):
        check(status_of(url, key, zone=zone) == 200, f"the victim still served on {zone}")
    check(mcp(url, key, add(6, 7)) == {"result": 13}, "the victim's tools still answer")
    check(alive(victim_ports["pid"]), "the victim's node untouched", victim_ports)

    cluster.cli("group", "delete", EVIL)
    eventually("evil's workers gone", 120, lambda: evil_ports["pid"] not in cluster.worker_pids())
    eventually("nothing of evil left", 120, lambda: cluster.leftovers(EVIL) == [])


def zone_manager_creds(cluster: Cluster) -> Path:
    """The zone-manager's NATS credentials: `ramen nats-auth init`'s in split; in `up`, issued
    by the same command from a copy of the key set `ramen up` generated."""
    if cluster.topology != "up":
        return cluster.nats_auth / "zone-manager.creds"
    copy = cluster.work / "up-nats-auth"
    if not copy.exists():
        shutil.copytree(cluster.work / "data" / "keys" / "nats", copy)
        cluster.cli("nats-auth", "init", "--out", str(copy))
        for creds in copy.glob("*.creds"):
            cluster.never_shown(creds.read_text().split("-----BEGIN USER NKEY SEED-----")[1].split()[0])
    return copy / "zone-manager.creds"


def check_deploy_trace(cluster: Cluster) -> None:
    """The deploy POST's trace holds every hop of the deploy, each span a descendant of it."""
    def found() -> list[Span] | None:
        spans = cluster.traces.snapshot()
        posts = [s for s in spans if s.name == "api" and s.attrs.get("path", "").endswith("/deploys")]
        for post in posts:
            trace = cluster.traces.trace(post.trace)
            names = {(s.name, s.attrs.get("path", "")) for s in trace}
            wanted = [
                ("grpc", "/ramen.deployer.v1.DeployerService/StartDeploy"),
                ("deploy.job", ""),
                ("grpc", "/ramen.zone.v1.ZoneService/WriteConfig"),
                ("grpc", "/ramen.zone.v1.ZoneService/RestartTrack"),
                ("grpc", "/ramen.runner.v1.RunnerService/Status"),
            ]
            if all(w in names for w in wanted) and sum(s.name == "deploy.step" for s in trace) >= 10:
                return trace
        return None

    trace = eventually("one trace covering the deploy", 60, found)
    root = next(s for s in trace if s.name == "api")
    for span in trace:
        check(chain(trace, span)[-1] == root, "every span of the deploy descends from its POST",
              describe(chain(trace, span)))
    node = next(s for s in trace if s.attrs.get("path") == "/ramen.runner.v1.RunnerService/Status")
    check(node.service == "ramen-runner", "the canary node's own span in the trace", node)
    job = next(s for s in trace if s.name == "deploy.job")
    check("StartDeploy" in describe(chain(trace, job)), "the job's span under StartDeploy (the work item carries the trace)",
          describe(chain(trace, job)))


def check_call_trace(cluster: Cluster) -> None:
    """A tools/call through the edge: the node's request span and its runtime call in the
    trace of the edge's request."""
    def found() -> list[Span] | None:
        for runtime in (s for s in cluster.traces.snapshot() if s.name == "runtime.call"):
            trace = cluster.traces.trace(runtime.trace)
            path = chain(trace, runtime)
            names = [s.name for s in path]
            if names[:2] == ["runtime.call", "mcp.request"] and path[-1].name == "api" \
                    and path[-1].attrs.get("path", "").startswith("/mcp/"):
                return path
        return None

    path = eventually("a tools/call traced from the edge to the runtime", 60, found)
    check(path[0].service == path[1].service == "ramen-runner", "node spans from the node", describe(path))
    check(path[1].attrs.get("method") == "tools/call", "the node's span is the tools/call", path[1].attrs)


async def add_description(c: Client) -> str:
    """What `notes.add` tells the model."""
    tools = (await c.list_tools()).tools
    return next(t.description for t in tools if t.name == "notes.add") or ""


def review_a_reworded_tool(cluster: Cluster, url: str, key: str) -> None:
    """prod reviews surface changes (its default): a deploy that rewords `notes.add` waits with
    stable serving the old text, shows the change, and `ramen jobs reject` ends it with the
    canary at zero and stable as it was (the later deploys start from main's surface again)."""
    step("a reworded tool waits for review; `ramen jobs reject` scales the canary back")
    envs = cluster.cli_items("env", "list", "-g", GROUP)
    prod = next(e for e in envs if e["name"] == "prod")
    check(prod.get("surface_changes") == "review", "prod reviews surface changes by default", prod)
    started = cluster.cli_json("deploy", "prod", "-g", GROUP, "--ref", "reworded")
    job_id = started.get("id") or started.get("job", {}).get("id")
    check(bool(job_id), "a job id", started)

    def job_now() -> Any:
        return cluster.cli_json("jobs", "-g", GROUP, job_id)

    def waiting() -> Any:
        job = job_now()
        if job["state"] in ("succeeded", "failed", "cancelled", "dead_lettered"):
            raise Failed(f"the job ended {job['state']} without waiting for review: {job['error']}")
        return job if job["state"] == "review" else None

    job = eventually("the job waits for review", 300, waiting)
    changes = [c for z in job["zones"] for c in z["surface_changes"]]
    check(any(c["name"] == "notes.add" and c["change"] == "changed"
              and any(f["path"] == "description" and f["after"] == REWORDED for f in c["fields"])
              for c in changes), "the job shows notes.add's new description", changes)
    check(mcp(url, key, add_description) == "Add two integers.", "stable still serves the old text")
    check(mcp(url, key, add(2, 3)) == {"result": 5}, "stable answers while the job waits")
    cluster.cli("jobs", "reject", job_id, "-g", GROUP, "--reason", "e2e: not this wording")
    done = eventually("the rejected deploy ends", 300, lambda: (
        lambda j: j if j["state"] in ("succeeded", "failed", "cancelled") else None)(job_now()))
    check(done["state"] == "failed", "the rejected deploy failed", done)
    check(done["review"]["decision"] == "rejected" and done["review"]["reason"] == "e2e: not this wording",
          "the decision is on the job", done["review"])
    for zone in done["zones"]:
        rollback = [s for s in zone["steps"] if s["step"] == "canary_rollback"]
        check(rollback and rollback[0]["status"] == "succeeded", f"the canary scaled back in {zone['zone']}", zone)
    check(mcp(url, key, add_description) == "Add two integers.", "stable serves the old text after the reject")
    refused = cluster.cli("jobs", "approve", job_id, "-g", GROUP, ok=False)
    check(refused.returncode == 5, "a decision on a closed review is refused as a conflict", refused.stderr)
    shown = cluster.cli_json("env", "surface-changes", "prod", "-g", GROUP)
    check(shown["surface_changes"] == "review", "`ramen env surface-changes` shows the setting", shown)
    changed = cluster.cli_json("env", "surface-changes", "prod", "allow", "-g", GROUP)
    check(changed["surface_changes"] == "allow", "and changes it", changed)
    cluster.cli("env", "surface-changes", "prod", "review", "-g", GROUP)
    shown = cluster.cli_json("env", "record-arguments", "prod", "-g", GROUP)
    check(shown["record_arguments"] is False, "`ramen env record-arguments` shows it off by default", shown)
    changed = cluster.cli_json("env", "record-arguments", "prod", "on", "-g", GROUP)
    check(changed["record_arguments"] is True, "and turns it on (from the next deploy)", changed)
    cluster.cli("env", "record-arguments", "prod", "off", "-g", GROUP)
    calls = cluster.cli_json("calls", "-g", GROUP, "--since", "1h", "--limit", "5")
    check(isinstance(calls, list) and len(calls) <= 5, "`ramen calls` lists at most --limit calls", calls)
    usage = cluster.cli_json("usage", "-g", GROUP, "--window", "day")
    check(usage["window"] == "day" and len(usage["buckets"]) == 48, "`ramen usage` sums up a day", usage)


def deploy_surviving_a_killed_deployer(cluster: Cluster) -> None:
    """Starts the deploy, kills the deployer once the job runs, starts another deployer
    process, and waits for the job to finish there."""
    started = cluster.cli_json("deploy", "prod", "-g", GROUP)
    job_id = started.get("id") or started.get("job_id") or started.get("job", {}).get("id")
    check(bool(job_id), "a job id", started)

    def running() -> bool:
        return cluster.cli_json("jobs", "-g", GROUP, job_id)["state"] == "running"

    eventually("the job running", 60, running)
    cluster.procs["deployer"].send_signal(signal.SIGKILL)
    cluster.procs["deployer"].wait()
    step("deployer killed mid-job; a second deployer takes over")
    cluster.start_service("deployer", name="deployer-2")
    cluster.wait_ready("deployer-2")

    def finished() -> dict[str, Any] | None:
        job = cluster.cli_json("jobs", "-g", GROUP, job_id)
        return job if job["state"] in ("succeeded", "failed", "cancelled") else None

    job = eventually("the job finished by the second deployer", 300, finished)
    check(job["state"] == "succeeded", "the resumed job succeeded", job)


PASSWORD = "e2e-password-0123456789"


def migration(cluster: Cluster) -> None:
    """Topology `migrate`: a team starts on `ramen up`, stops it, runs `ramen migrate
    to-cloud`, and the split services started on the targets serve what it had."""
    step("on ramen up: a zone, a group deployed on it, an MCP key and a secret")
    email, one_time = cluster.bootstrap_password()
    cluster.cli("login", email, "--password-stdin", "--new-password", stdin=f"{one_time}\n{PASSWORD}\n")
    cluster.cli("zone", "create", "local-a")
    repo = cluster.work / "repo"
    make_repo(repo)
    cluster.cli("group", "create", GROUP, "--repo", str(repo), "--ref", "main")
    cluster.cli("env", "create", "prod", "-g", GROUP, "--ref", "main", "--zone", "local-a")
    cluster.cli("deploy", "prod", "-g", GROUP, "--wait")
    cluster.cli("secrets", "set", "-g", GROUP, "WEATHER_TOKEN", stdin="sealed-value\n")
    cluster.never_shown("sealed-value")
    plaintext = cluster.cli_json("keys", "create", "-g", GROUP, "e2e")["plaintext"]
    cluster.never_shown(plaintext)
    url = f"{cluster.api}/mcp/{GROUP}/prod"
    eventually("the new key accepted", 60, lambda: status_of(url, plaintext) == 200)
    check(mcp(url, plaintext, add(2, 3)) == {"result": 5}, "2 + 3 = 5 on ramen up")
    tools = mcp(url, plaintext, tool_names)

    step("stop ramen up; migrate its data dir to S3 and the services' store")
    cluster.stop_up()
    cluster.start_backing()
    data = cluster.work / "data"
    target = cluster.work / "migrated"
    secrets_key = (data / "keys" / "secrets.key").read_text().strip()
    env = dict(cluster.shared_env, RAMEN_SECRETS_KEY=secrets_key, RAMEN_DATA_DIR=str(target))

    def migrate(*flags: str) -> str:
        done = subprocess.run([str(cluster.ramen), "migrate", "to-cloud", "--data-dir", str(data), *flags],
                              env=env, capture_output=True, text=True, timeout=300)
        check(done.returncode == 0, f"migrate {' '.join(flags)} exits 0", done.stderr)
        return done.stderr

    dry = migrate("--dry-run")
    check(cluster.bucket_keys("groups/") == [], "a dry run writes nothing to S3", dry)
    first = migrate()
    snapshots = cluster.bucket_keys(f"groups/{GROUP}/")
    check(any("snapshot" in k for k in snapshots), "the group's snapshot in the bucket", snapshots)
    check("secrets key: opens all" in first, "the sealed secrets were checked against the key", first)
    check(f"ramen deploy prod -g {GROUP}" in first, "the local zone's environment to deploy again", first)
    again = migrate("--concurrency", "2")
    summary = next(line for line in again.splitlines() if line.startswith("done:"))
    check(re.search(r"objects, 0 written, \d+ unchanged .*documents, 0 written, \d+ unchanged", summary) is not None,
          "a second run writes nothing", summary)

    step("the split services on the migrated store (each its own copy: MongoDB cannot run here)")
    cluster.shared_env["RAMEN_SECRETS_KEY"] = secrets_key
    for service in SERVICES:
        shutil.copytree(target / "store", cluster.split_data / service / "store")
        cluster.start_service(service)
    for service in SERVICES:
        cluster.wait_ready(service)

    step("the same login, group, secret and job; after the deploy the output asked for, the same key and tools")
    cluster.cli("login", email, "--password-stdin", stdin=f"{PASSWORD}\n")
    groups = [g["name"] for g in cluster.cli_items("group", "list")]
    check(GROUP in groups, "the group is there", groups)
    secrets = [s["name"] for s in cluster.cli_items("secrets", "list", "-g", GROUP)]
    check(secrets == ["WEATHER_TOKEN"], "the secret is there", secrets)
    jobs = cluster.cli_items("jobs", "-g", GROUP)
    check([j["state"] for j in jobs] == ["succeeded"], "the deploy job from ramen up", jobs)
    cluster.cli("deploy", "prod", "-g", GROUP, "--wait")
    jobs = cluster.cli_items("jobs", "-g", GROUP)
    check([j["state"] for j in jobs] == ["succeeded", "succeeded"], "a second deploy on the split stack", jobs)
    eventually("the migrated key serves calls", 60, lambda: status_of(url, plaintext) == 200)
    check(mcp(url, plaintext, tool_names) == tools, "the same tools", tools)
    check(mcp(url, plaintext, add(4, 5)) == {"result": 9}, "4 + 5 = 9 on the split services")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ramen", required=True, type=Path)
    parser.add_argument("--topology", choices=["up", "split", "migrate"], required=True)
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix=f"ramen-e2e-{args.topology}-"))
    cluster = Cluster(args.ramen.resolve(), args.topology, work)
    print(f"e2e ({args.topology}) in {work}", flush=True)
    people: sso.People | None = None
    try:
        if args.topology == "migrate":
            cluster.start_up()
            migration(cluster)
        else:
            # SSO is static config: the provider people sign in with runs before ramen starts.
            # `up` also gets a second, short ramen with password sign-in off (e2e/sso.py).
            people = sso.People(work, free_port, cluster.api, spare_api=args.topology == "up")
            cluster.logs["oidc-provider (sso)"] = people.log
            # In split the gateway is told its public URL; in `up` the default (its listen
            # address) is the one the provider knows.
            public = {"public_url": cluster.api} if args.topology == "split" else {}
            cluster.base_env.update(people.settings(memberships=f"payments={GROUP}:member", **public))
            cluster.start_up() if args.topology == "up" else cluster.start_split()
            scenario(cluster, people)
    except Exception as failure:  # noqa: BLE001 - a client's exception is a failure too
        if not isinstance(failure, Failed):
            import traceback
            traceback.print_exc()
        print(f"FAILED ({args.topology}): {failure}", file=sys.stderr)
        for name in cluster.logs:
            print(f"\n===== last lines of {name}.log =====\n{cluster.tail(name)}", file=sys.stderr)
        return 1
    finally:
        cluster.stop()
        cluster.traces.stop()
        if people is not None:
            people.stop()
        shown = cluster.leaks()
        leaked = cluster.worker_pids()
        for pid in leaked:
            os.kill(pid, signal.SIGKILL)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if leaked:
        print(f"FAILED ({args.topology}): workers left running after stop: {leaked}", file=sys.stderr)
        return 1
    if shown:
        print(f"FAILED ({args.topology}): secret values in logs or errors: {shown}", file=sys.stderr)
        return 1
    print(f"e2e ({args.topology}): no secret value in {cluster.scanned_logs} logs and "
          f"{len(cluster.cli_errors)} CLI outputs and {len(ERROR_BODIES)} MCP/API error answers "
          f"({len(cluster.secret_values)} values checked)", flush=True)
    print(f"e2e ({args.topology}): passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
