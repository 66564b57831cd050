"""The per-call cost gate: instructions the node executes per request, counted by callgrind.

Wall-clock figures on a shared 2-core VM swing by ±20 % between runs; instructions do not
depend on how busy the machine is. The node (release build) runs under
`valgrind --tool=callgrind`; for each path a client outside valgrind warms the path up, the
counters are zeroed (`callgrind_control --zero`), a fixed number of requests is made, and the
counters are dumped: the node's instructions over those requests, divided by their number.
The Python runtime is a child process valgrind does not follow, so its work is not in the node's
figure (its own figure is `runtime-direct`'s, not gated here).

    cost_gate.py --runner <ramen-runner> --baseline <file> [--update] [--calls N] [--keep DIR]

Fails (exit 1) when a path costs more than its baseline by more than the baseline's margin;
`--update` writes the measured figures as the new baseline (commit it with the reason).
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import os
import signal
import site
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
KEY = "rk_costgate_0123456789abcdef"
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "cost-gate", "version": "1"}}


class Client:
    """One keep-alive connection to the node, as an MCP client would hold it."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.session: str | None = None
        self.next_id = 1

    def post(self, body: dict, headers: dict[str, str] | None = None) -> tuple[int, bytes, dict]:
        h = {"content-type": "application/json", "accept": "application/json, text/event-stream",
             "authorization": f"Bearer {KEY}"}
        if self.session:
            h.update({"mcp-session-id": self.session, "mcp-protocol-version": "2025-11-25"})
        h.update(headers or {})
        self.conn.request("POST", "/mcp", json.dumps(body), h)
        answer = self.conn.getresponse()
        data = answer.read()
        return answer.status, data, {k.lower(): v for k, v in answer.getheaders()}

    def rpc(self, method: str, params: dict | None = None, headers: dict[str, str] | None = None) -> bytes:
        body: dict = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            body["params"] = params
        self.next_id += 1
        status, data, _ = self.post(body, headers)
        if status != 200 or b'"error"' in data:
            raise RuntimeError(f"{method}: {status} {data[:300]!r}")
        return data

    def initialize(self) -> None:
        params = {"protocolVersion": "2025-11-25", "capabilities": {},
                  "clientInfo": {"name": "cost-gate", "version": "1"}}
        status, data, headers = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
        if status != 200:
            raise RuntimeError(f"initialize: {status} {data[:300]!r}")
        self.session = headers["mcp-session-id"]
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})


ADD = {"name": "notes.add", "arguments": {"a": 20, "b": 22}}
STATELESS = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "notes.add"}


def paths(port: int) -> dict:
    """Each gated path: a function making one request on its own client."""
    session = Client(port)
    session.initialize()
    stateless = Client(port)
    return {
        "node: tools/call, 2025-11-25 session": lambda: session.rpc("tools/call", ADD),
        "node: tools/call, 2026-07-28 stateless": lambda: stateless.rpc(
            "tools/call", {**ADD, "_meta": META}, STATELESS),
        "node: tools/list, session": lambda: session.rpc("tools/list"),
        "node: ping, session": lambda: session.rpc("ping"),
    }


def bound_ports(path: Path, pid: int) -> tuple[int | None, int | None]:
    """The MCP and admin ports the node `pid` wrote to its ports file, once it has."""
    try:
        ports = json.loads(path.read_text())
    except (OSError, ValueError):
        return None, None
    if ports.get("pid") != pid:
        return None, None
    return int(ports["mcp"].rsplit(":", 1)[1]), int(ports["admin"].rsplit(":", 1)[1])


def callgrind_control(*args: str) -> None:
    subprocess.run(["callgrind_control", *args], check=True, capture_output=True, timeout=120)


def instructions(dump_dir: Path, pid: int, before: set[Path]) -> int:
    """The `summary:` (total Ir) of the dump `callgrind_control --dump` just wrote."""
    new = sorted(set(dump_dir.glob(f"callgrind.out.{pid}*")) - before, key=lambda p: p.stat().st_mtime)
    if not new:
        raise RuntimeError("callgrind wrote no dump")
    for line in new[-1].read_text(errors="replace").splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise RuntimeError(f"no summary in {new[-1]}")


def measure(runner: Path, calls: int, work: Path, keep: Path | None = None) -> dict[str, int]:
    blobs = work / "blobs"
    packed = subprocess.run([sys.executable, str(HERE / "pack.py"), str(ROOT / "examples/hello-repo"),
                             str(blobs), "c0ffee"], check=True, capture_output=True, text=True).stdout.split()
    # Every port is 0: the node binds what the kernel gives it and writes the addresses to
    # `ports_file` (what the local zone provider reads too), so no other process can take a
    # port between our choosing it and the node binding it.
    ports_file = work / "ports.json"
    (work / "node.toml").write_text(f"""
node_id = "cost"
group = "bench"
zone = "local"
listen = "127.0.0.1:0"
admin = "127.0.0.1:0"
grpc = "127.0.0.1:0"
ports_file = "{ports_file}"
workdir = "{work / 'node'}"
python = "{sys.executable}"
site_packages = ["{site.getsitepackages()[0]}"]
in_flight_cap = 64
[blob]
dir = "{blobs}"
[snapshot]
commit = "c0ffee"
key = "{packed[0]}"
digest = "{packed[1]}"
[policy]
require_key = true
key_hashes = ["{hashlib.sha256(KEY.encode()).hexdigest()}"]
# Landlock's system calls are unknown to valgrind, which would refuse them in the child
# before it execs the runtime: the gate measures the node, unconfined (what confinement costs
# per call is nothing on the request path: it is applied once, at the runtime's start).
[sandbox]
enabled = false
""")
    dumps = work / "dumps"
    dumps.mkdir()
    log = open(work / "node.log", "wb")  # noqa: SIM115
    node = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={dumps}/callgrind.out.%p",
         "--dump-instr=no", "--compress-strings=no", str(runner), "--config", str(work / "node.toml")],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "RAMEN_LOG_LEVEL": "warn"},
        start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while True:
            # Valgrind runs the node in its own process: the pid the node writes is ours.
            port, admin = bound_ports(ports_file, node.pid)
            try:
                if admin is None:
                    raise OSError("the node has not written its ports yet")
                c = http.client.HTTPConnection("127.0.0.1", admin, timeout=5)
                c.request("GET", "/readyz")
                if c.getresponse().status == 200:
                    break
            except OSError:
                pass
            if node.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the node did not get ready: {(work / 'node.log').read_text()[-3000:]}")
            time.sleep(0.5)
        figures = {}
        for name, request in paths(port).items():
            for _ in range(max(20, calls // 10)):
                request()
            callgrind_control("--zero", str(node.pid))
            for _ in range(calls):
                request()
            before = set(dumps.glob("callgrind.out.*"))
            callgrind_control("--dump", str(node.pid))
            figures[name] = instructions(dumps, node.pid, before) // calls
            if keep:
                keep.mkdir(parents=True, exist_ok=True)
                newest = max(set(dumps.glob("callgrind.out.*")) - before, key=lambda p: p.stat().st_mtime)
                slug = "".join(c if c.isalnum() else "-" for c in name).strip("-")
                (keep / f"{slug}.callgrind").write_bytes(newest.read_bytes())
        return figures
    finally:
        os.killpg(node.pid, signal.SIGTERM)
        try:
            node.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(node.pid, signal.SIGKILL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runner", type=Path, required=True)
    parser.add_argument("--baseline", type=Path, required=True)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--update", action="store_true")
    parser.add_argument("--keep", type=Path, help="copy each path's callgrind dump here (for callgrind_annotate)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cost-gate-") as work:
        figures = measure(args.runner, args.calls, Path(work), args.keep)
    baseline = json.loads(args.baseline.read_text()) if args.baseline.exists() else {"margin": 0.1, "paths": {}}
    margin = baseline["margin"]
    failed = []
    print(f"| path | instructions per request | baseline | change |\n|---|---|---|---|")
    for name, measured in figures.items():
        base = baseline["paths"].get(name)
        change = "" if not base else f"{(measured - base) / base:+.1%}"
        print(f"| {name} | {measured:,} | {f'{base:,}' if base else '—'} | {change} |")
        if base and measured > base * (1 + margin):
            failed.append(f"{name}: {measured:,} instructions per request, over {base:,} by more than {margin:.0%}")
        elif base and measured < base * (1 - margin):
            print(f"  ({name} got cheaper by more than {margin:.0%}: lower its baseline with --update)")
    if args.update:
        baseline["paths"] = figures
        args.baseline.write_text(json.dumps(baseline, indent=2, sort_keys=True) + "\n")
        print(f"baseline written to {args.baseline}")
        return 0
    missing = [n for n in figures if n not in baseline["paths"]]
    if missing:
        failed.append(f"no baseline for {missing}: run with --update and commit it")
    for line in failed:
        print(f"REGRESSION {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
