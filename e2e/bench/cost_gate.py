"""The per-call cost gate: instructions per request, counted by callgrind, and system calls
per request, counted by strace.

Wall-clock figures on a shared 2-core VM swing by ±20 % between runs; instructions do not
depend on how busy the machine is. The node (release build) runs under
`valgrind --tool=callgrind`; for each path a client outside valgrind warms the path up, the
counters are zeroed (`callgrind_control --zero`), a fixed number of requests is made, and the
counters are dumped: the node's instructions over those requests, divided by their number.
The Python runtime is a child process valgrind does not follow, so its work is not in the node's
figure: it has paths of its own ("runtime: ..."), where the Python runtime runs alone under
callgrind and this script speaks the framed protocol to it, one call at a time, the same way.
Then each path is run again natively under `strace -c -f` for its system calls per request,
by name: the kernel's share of a call, which instructions do not see (`Meter`).

    cost_gate.py --runner <ramen-runner> --baseline <file> [--update] [--calls N] [--keep DIR]
                 [--edge <edge-static>] [--only node|runtime|edge] [--count instructions|syscalls]

Fails (exit 1) when a path costs more instructions than its baseline by more than the
baseline's `margin`, or makes more of any one system call than its baseline by more than
`syscall_slack` per request; `--update` writes the measured figures as the new baseline
(commit it with the reason).
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


class OneWriteConnection(http.client.HTTPConnection):
    """An HTTP/1.1 connection that sends each request, head and body, in one write.

    `http.client` writes a request's head and its body separately, and whether the server then
    reads them in one read or in two, with a sleep in `epoll_wait` between, depends on timing:
    under load the node and the edge took the second read on a share of requests, and their
    counts spread by up to 15 % (`ping`: 30.4k quiet, 33.9k–34.3k beside a CI run). Sent in
    one write, as hyper's clients and `mcp-load` send a request, a path's count is the same
    quiet and loaded (within 0.3 %)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._unsent: list[bytes] = []

    def send(self, data) -> None:
        self._unsent.append(bytes(data))

    def getresponse(self) -> http.client.HTTPResponse:
        if self._unsent:
            if self.sock is None:
                self.connect()
            self.sock.sendall(b"".join(self._unsent))
            self._unsent.clear()
        return super().getresponse()


class Client:
    """One keep-alive connection to the node, as an MCP client would hold it."""

    def __init__(self, port: int, path: str = "/mcp") -> None:
        self.conn = OneWriteConnection("127.0.0.1", port, timeout=120)
        self.path = path
        self.session: str | None = None
        self.next_id = 1

    def post(self, body: dict, headers: dict[str, str] | None = None) -> tuple[int, bytes, dict]:
        h = {"content-type": "application/json", "accept": "application/json, text/event-stream",
             "authorization": f"Bearer {KEY}"}
        if self.session:
            h.update({"mcp-session-id": self.session, "mcp-protocol-version": "2025-11-25"})
        h.update(headers or {})
        self.conn.request("POST", self.path, json.dumps(body), h)
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


class Meter:
    """How a path is measured, `kind`:

    - `instructions` (the gate): under callgrind, the process's instructions per request.
    - `syscalls` (the gate): natively, under `strace -c -f`, the process's system calls per
      request, by name. Callgrind counts no kernel work, and at concurrency 1 most of a call's
      CPU here is the kernel's: a system call or a wake-up added per call (tokio's timer, the
      fifteenth round; a socket's spurious `EPOLLOUT`, the seventeenth) moved instructions by
      under 3 %, within their margin, and the kernel time by far more. Under valgrind the
      count would include every clock read (no vDSO there), so it is taken natively; the client
      waits for each answer before it sends the next request, so the count does not depend
      on timing.
    - `cpu`: natively, the process's CPU time per request from /proc (a figure in µs to read
      beside the others, too coarse and too load-dependent to gate on)."""

    def __init__(self, calls: int, keep: Path | None, kind: str = "instructions") -> None:
        self.calls = calls
        self.keep = keep
        self.kind = kind

    def prefix(self, dumps: Path) -> list[str]:
        """What to run a measured process under."""
        dumps.mkdir(parents=True, exist_ok=True)
        if self.kind != "instructions":
            return []
        return ["valgrind", "--tool=callgrind", f"--callgrind-out-file={dumps}/callgrind.out.%p",
                "--dump-instr=no", "--compress-strings=no"]

    def count(self, pid: int, dumps: Path, name: str, request):
        """Process `pid`'s instructions (or system calls by name, or µs of CPU) per
        `request()`, after a warm-up."""
        calls = self.calls
        for _ in range(max(20, calls // 10)):
            request()
        if self.kind == "cpu":
            before_cpu = cpu_seconds(pid)
            for _ in range(calls):
                request()
            return round((cpu_seconds(pid) - before_cpu) / calls * 1e6, 1)
        if self.kind == "syscalls":
            return syscalls_per_request(pid, dumps, calls, request)
        callgrind_control("--zero", str(pid))
        for _ in range(calls):
            request()
        before = set(dumps.glob("callgrind.out.*"))
        callgrind_control("--dump", str(pid))
        figure = instructions(dumps, pid, before) // calls
        if self.keep:
            self.keep.mkdir(parents=True, exist_ok=True)
            newest = max(set(dumps.glob("callgrind.out.*")) - before, key=lambda p: p.stat().st_mtime)
            slug = "".join(c if c.isalnum() else "-" for c in name).strip("-")
            (self.keep / f"{slug}.callgrind").write_bytes(newest.read_bytes())
        return figure


def traced_by(pid: int, tracer: int) -> bool:
    """Whether every thread of `pid` is traced by `tracer` (strace attaches to them one by one)."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
        for task in tasks:
            status = (task / "status").read_text()
            line = next(l for l in status.splitlines() if l.startswith("TracerPid:"))
            if int(line.split()[1]) != tracer:
                return False
    except (OSError, StopIteration):
        return False
    return bool(tasks)


# A system call strace makes its tracee make: an interrupted wait resumed when strace attaches.
NOT_THE_PATHS = {"restart_syscall"}


def syscalls_per_request(pid: int, dumps: Path, calls: int, request) -> dict[str, float]:
    """System calls of process `pid` (all its threads) per `request()`, by name."""
    out = dumps / f"strace.{pid}.{time.monotonic_ns()}"
    tracer = subprocess.Popen(["strace", "-f", "-c", "-o", str(out), "-p", str(pid)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not traced_by(pid, tracer.pid):
            if tracer.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"strace could not attach to {pid}: {tracer.stderr.read().decode()[-1000:]}")
            time.sleep(0.01)
        for _ in range(calls):
            request()
    finally:
        tracer.send_signal(signal.SIGINT)
        tracer.wait(timeout=60)
    counts: dict[str, float] = {}
    # `strace -c`'s table: % time, seconds, usecs/call, calls, [errors,] syscall
    for line in out.read_text().splitlines():
        fields = line.split()
        if len(fields) in (5, 6) and fields[3].isdigit() and fields[-1] not in ("total", *NOT_THE_PATHS):
            counts[fields[-1]] = round(int(fields[3]) / calls, 3)
    return dict(sorted(counts.items()))


def cpu_seconds(pid: int) -> float:
    """User + system CPU time process `pid` has used so far."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Framed:
    """The node's side of the runtime's framed protocol (docs/packages.md), one call at a time."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.out = proc.stdin.fileno()
        self.inp = proc.stdout.fileno()
        self.buf = bytearray()
        self.next_id = 1

    def frame(self) -> bytes:
        buf = self.buf
        while True:
            if len(buf) >= 4:
                size = int.from_bytes(buf[:4], "big")
                if len(buf) >= 4 + size:
                    body = bytes(buf[4 : 4 + size])
                    del buf[: 4 + size]
                    return body
            chunk = os.read(self.inp, 1 << 16)
            if not chunk:
                raise RuntimeError("the runtime closed its output")
            buf += chunk

    def send(self, body: bytes) -> None:
        os.write(self.out, len(body).to_bytes(4, "big") + body)

    def call(self, op: bytes, expect: bytes) -> None:
        rid = self.next_id
        self.next_id += 1
        self.send(b'{"id":%d,%s}' % (rid, op))
        answer = self.frame()
        if not answer.startswith(b'{"id":%d,' % rid) or expect not in answer:
            raise RuntimeError(f"unexpected answer {answer[:300]!r}")


# What a node adds to a session's `call_tool` frame for a client that presented a key from the
# node's `key_hashes` (no id or name): `runtime-direct --client ... --caller ...` in
# runner-bench sends the same.
NODE_FIELDS = (b',"client":{"protocolVersion":"2025-11-25","capabilities":{},'
               b'"clientInfo":{"name":"cost-gate","version":"1"},"sessionId":"0123456789abcdef0123456789abcdef"},'
               b'"caller":{"kind":"key","key_id":"","key_name":""}')


def measure_runtime(meter: Meter, work: Path) -> dict[str, float]:
    """The Python runtime's instructions per framed request, examples/hello-repo, concurrency 1."""
    dumps = work / "runtime-dumps"
    log = open(work / "runtime.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [*meter.prefix(dumps), sys.executable, "-m", "ramen_runtime",
         "--root", str(ROOT / "examples/hello-repo")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "services/runner/runtime"),
             "RAMEN_RUNTIME_LOG_LEVEL": "WARNING"})
    try:
        rt = Framed(proc)
        ready = rt.frame()  # imports under callgrind take a minute; the first frame says when
        if not ready.startswith(b'{"op":"ready"'):
            raise RuntimeError(f"the runtime's first frame is not ready: {ready[:300]!r}")
        add = b'"op":"call_tool","name":"notes.add","arguments":{"a":20,"b":22}'
        paths = {
            # An `async def` tool of the SDK 2.x MCPServer kind: frame in, dispatch, the SDK's
            # own call, result conversion, frame out.
            "runtime: call_tool, async def tool (SDK MCPServer)":
                lambda: rt.call(add, b'"structuredContent":{"result":42}'),
            # The same call in the frame a node sends for a session whose client signed in with
            # a key: the session's client description (with its id, so the SDK context carries a
            # request) and who the caller is (identity.py binds it for the call).
            "runtime: call_tool, as a node sends it (session, key caller)":
                lambda: rt.call(add + NODE_FIELDS, b'"structuredContent":{"result":42}'),
            # The framing and the event loop alone.
            "runtime: ping": lambda: rt.call(b'"op":"ping"', b'"result":{}'),
        }
        return {name: meter.count(proc.pid, dumps, name, request) for name, request in paths.items()}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


# `--nats-url`: the node records its calls and publishes them there (a bus with the calls
# stream, e.g. `calls-sink`'s): what recording costs per call, read against the baselines.
NATS_URL = ""
# `--node-threads`: the node config's `threads` (its own default, one, when 0): with `--cpu`,
# what a second serving thread costs per request.
NODE_THREADS = 0


def start_node(runner: Path, work: Path, prefix: list[str],
               local: bool = False) -> tuple[subprocess.Popen, int, Path]:
    """A node serving examples/hello-repo, run under `prefix`: (process, MCP port, dump dir).
    `local`: it serves MCP on an abstract Unix socket too (`node_local` names it)."""
    work.mkdir(parents=True, exist_ok=True)
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
{"listen_local = true" if local else ""}
admin = "127.0.0.1:0"
grpc = "127.0.0.1:0"
ports_file = "{ports_file}"
workdir = "{work / 'node'}"
python = "{sys.executable}"
site_packages = ["{site.getsitepackages()[0]}"]
in_flight_cap = 64
{f'nats_url = "{NATS_URL}"' if NATS_URL else ""}
{f"threads = {NODE_THREADS}" if NODE_THREADS else ""}
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
    log = open(work / "node.log", "wb")  # noqa: SIM115
    node = subprocess.Popen(
        [*prefix, str(runner), "--config", str(work / "node.toml")],
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
    except BaseException:
        stop(node)
        raise
    return node, port, dumps


def node_local(work: Path) -> str:
    """`@name` of the abstract socket of the node started in `work` with `local`."""
    return json.loads((work / "ports.json").read_text())["mcp_local"]


def stop(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def measure(runner: Path, meter: Meter, work: Path) -> dict[str, float]:
    """The node's instructions per request on each of its paths."""
    node, port, dumps = start_node(runner, work / "node-alone", meter.prefix(work / "node-alone" / "dumps"))
    try:
        return {name: meter.count(node.pid, dumps, name, request) for name, request in paths(port).items()}
    finally:
        stop(node)


def start_edge(edge: Path, node_port: int, work: Path, prefix: list[str],
               local: str | None = None) -> tuple[subprocess.Popen, int]:
    """`edge-static` in front of the node at `node_port` (reached at its abstract socket
    `local` when given), run under `prefix`: (process, port)."""
    reach = ["--local", local] if local else []
    proc = subprocess.Popen(
        [*prefix, str(edge), "--listen", "127.0.0.1:0", "--worker", f"127.0.0.1:{node_port}", *reach],
        stdout=subprocess.PIPE, stderr=open(work / "edge.log", "wb"),  # noqa: SIM115
        env={**os.environ, "RUST_LOG": "warn"}, start_new_session=True)
    line = proc.stdout.readline().decode()  # "listening on 127.0.0.1:PORT"
    if not line.startswith("listening on "):
        stop(proc)
        raise RuntimeError(f"edge-static did not start: {line!r} {(work / 'edge.log').read_text()[-2000:]}")
    return proc, int(line.rsplit(":", 1)[1])


# The edge's paths, and how the edge reaches its node on them: over TCP, as a cloud zone's edge
# does ("edge: ..."), and over the node's abstract Unix socket, as the local zone's edge does
# ("edge, socket to the node: ...").
EDGE_PATHS = {"edge": False, "edge, socket to the node": True}


def measure_edge(runner: Path, edge: Path, meter: Meter, work: Path, label: str, local: bool) -> dict:
    """The edge's instructions (or system calls) per proxied request, its paths named after
    `label`: `edge-static` measured, the node behind it run natively."""
    node_work = work / f"node-behind-{'socket' if local else 'tcp'}"
    node, node_port, _ = start_node(runner, node_work, [], local=local)
    dumps = work / "edge-dumps"
    try:
        proc, port = start_edge(edge, node_port, work, meter.prefix(dumps),
                                local=node_local(node_work) if local else None)
    except BaseException:
        stop(node)
        raise
    try:
        session = Client(port, "/mcp/bench/prod")
        session.initialize()
        stateless = Client(port, "/mcp/bench/prod")
        edge_paths = {
            f"{label}: tools/call, 2025-11-25 session": lambda: session.rpc("tools/call", ADD),
            f"{label}: tools/call, 2026-07-28 stateless": lambda: stateless.rpc(
                "tools/call", {**ADD, "_meta": META}, STATELESS),
            f"{label}: ping, session": lambda: session.rpc("ping"),
        }
        return {name: meter.count(proc.pid, dumps, name, request) for name, request in edge_paths.items()}
    finally:
        stop(proc)
        stop(node)


def measure_all(args: argparse.Namespace, meter: Meter) -> dict:
    """Every path `--only` selects, counted by `meter`."""
    figures: dict = {}
    with tempfile.TemporaryDirectory(prefix="cost-gate-") as work:
        if args.only in (None, "node"):
            figures.update(measure(args.runner, meter, Path(work)))
        if args.only in (None, "runtime"):
            figures.update(measure_runtime(meter, Path(work)))
        if args.only in (None, "edge"):
            for label, local in EDGE_PATHS.items():
                figures.update(measure_edge(args.runner, args.edge, meter, Path(work), label, local))
    return figures


def judge_instructions(figures: dict[str, int], baseline: dict, margin: float) -> list[str]:
    """Print each path's instructions beside its baseline; the paths over it by more than `margin`."""
    failed = []
    print("| path | instructions per request | baseline | change |\n|---|---|---|---|")
    for name, measured in figures.items():
        base = baseline.get(name)
        change = "" if not base else f"{(measured - base) / base:+.1%}"
        print(f"| {name} | {measured:,} | {f'{base:,}' if base else '—'} | {change} |")
        if base and measured > base * (1 + margin):
            failed.append(f"{name}: {measured:,} instructions per request, over {base:,} by more than {margin:.0%}")
        elif base and measured < base * (1 - margin):
            print(f"  ({name} got cheaper by more than {margin:.0%}: lower its baseline with --update)")
    return failed


def judge_syscalls(figures: dict[str, dict[str, float]], baseline: dict, slack: float) -> list[str]:
    """Print each path's system calls beside its baseline; the paths making more of any one
    system call than their baseline by more than `slack` per request."""
    failed = []
    print("\n| path | system calls per request | baseline | by name (baseline) |\n|---|---|---|---|")
    for name, counts in figures.items():
        base = baseline.get(name)
        total = sum(counts.values())
        names = sorted(set(counts) | set(base or {}))
        detail = ", ".join(f"{n} {counts.get(n, 0):g}" + (f" ({base.get(n, 0):g})" if base is not None else "")
                           for n in names)
        print(f"| {name} | {total:.2f} | {f'{sum(base.values()):.2f}' if base is not None else '—'} | {detail} |")
        if base is None:
            continue
        for n in names:
            if counts.get(n, 0) > base.get(n, 0) + slack:
                failed.append(f"{name}: {counts.get(n, 0):g} {n} per request, over {base.get(n, 0):g} "
                              f"by more than {slack:g}")
    return failed


# What each count's baselines are called in the baseline file.
BASELINE_KEYS = {"instructions": "paths", "syscalls": "syscalls"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runner", type=Path, help="the release ramen-runner (for the node's paths)")
    parser.add_argument("--baseline", type=Path, required=True)
    parser.add_argument("--calls", type=int, help="requests per path (500; 5,000 with --cpu)")
    parser.add_argument("--cpu", action="store_true",
                        help="report µs of CPU per request of each process run natively instead (not gated)")
    parser.add_argument("--update", action="store_true")
    parser.add_argument("--keep", type=Path, help="copy each path's callgrind dump here (for callgrind_annotate)")
    parser.add_argument("--edge", type=Path, help="the release edge-static (for the edge's paths)")
    parser.add_argument("--only", choices=("node", "runtime", "edge"),
                        help="measure only these paths (--update then replaces only their baselines)")
    parser.add_argument("--count", choices=("instructions", "syscalls"),
                        help="count only this (--update then replaces only its baselines); default both")
    parser.add_argument("--nats-url", default="",
                        help="nodes record their calls and publish them to this bus (compare, never --update)")
    parser.add_argument("--node-threads", type=int, default=0,
                        help="the nodes' `threads` (compare, never --update; default: the node's own, one)")
    args = parser.parse_args()
    if args.nats_url and args.update:
        parser.error("--nats-url measures recording against the baselines; it never updates them")
    if args.node_threads and args.update:
        parser.error("--node-threads compares against the baselines; it never updates them")
    global NATS_URL, NODE_THREADS
    NATS_URL = args.nats_url
    NODE_THREADS = args.node_threads
    if args.only != "runtime" and args.runner is None:
        parser.error("--runner is needed for the node's and the edge's paths")
    if args.only in (None, "edge") and args.edge is None:
        parser.error("--edge is needed for the edge's paths")
    if args.cpu:
        figures = measure_all(args, Meter(args.calls or 5000, None, "cpu"))
        print("| path | µs of CPU per request (this process, natively; not gated) |\n|---|---|")
        for name, micros in figures.items():
            print(f"| {name} | {micros} |")
        return 0
    baseline = json.loads(args.baseline.read_text()) if args.baseline.exists() else {}
    failed: list[str] = []
    measured: dict[str, dict] = {}
    for kind in (args.count,) if args.count else ("instructions", "syscalls"):
        figures = measure_all(args, Meter(args.calls or 500, args.keep, kind))
        measured[kind] = figures
        known = baseline.get(BASELINE_KEYS[kind], {})
        if kind == "instructions":
            failed += judge_instructions(figures, known, baseline.get("margin", 0.05))
        else:
            failed += judge_syscalls(figures, known, baseline.get("syscall_slack", 0.25))
    if args.update:
        for kind, figures in measured.items():
            key = BASELINE_KEYS[kind]
            baseline[key] = {**baseline.get(key, {}), **figures} if args.only else figures
        args.baseline.write_text(json.dumps(baseline, indent=2, sort_keys=True) + "\n")
        print(f"baseline written to {args.baseline}")
        return 0
    for kind, figures in measured.items():
        known = baseline.get(BASELINE_KEYS[kind], {})
        missing = [n for n in figures if n not in known]
        if missing:
            failed.append(f"no {kind} baseline for {missing}: run with --update and commit it")
        gone = [n for n in known if n not in figures] if not args.only else []
        if gone:
            failed.append(f"{kind} baseline paths no longer measured: {gone} (renamed? run with --update)")
    for line in failed:
        print(f"REGRESSION {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
