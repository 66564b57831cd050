"""Direct throughput of the Python runtime, without the node.

Spawns ``python -m ramen_runtime`` on examples/hello-repo and drives ``call_tool`` of the
trivial ``notes.add(a, b)`` tool over the framed protocol, closed-loop, at several
concurrency levels. Every answer is checked. Prints calls/s, p50/p99 latency and the
runtime process's CPU time per call (user+system, from /proc; meaningful even on a busy
machine).

    ~/.cache/ramen/venv/bin/python services/runner/runtime/bench_direct.py [--seconds 5] [--warmup 1]
        [--concurrency 1,16,64] [--tool notes.add] [--pin] [--bare]

Each call carries what a node adds to a session's call for a client that signed in with a key:
the session's client description and who the caller is (the runtime builds the call's context
from both). ``--bare`` sends the tool's name and arguments alone, as this script did before
2026-12-06: a call no node makes.

``--pin`` pins the runtime to CPU 0 and this driver to CPU 1 (like the SDK comparison in
shared/MCP-NOTES.md).
"""

from __future__ import annotations

import argparse
import os
import select
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
HELLO_REPO = os.path.join(REPO_ROOT, "examples", "hello-repo")
# What a node adds to a session's call_tool frame for a key from its `key_hashes` (the cost
# gate's "as a node sends it" path and runner-bench's runtime-direct send the same).
NODE_FIELDS = (
    ',"client":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"},'
    '"sessionId":"0123456789abcdef0123456789abcdef"},"caller":{"kind":"key","key_id":"","key_name":""}'
)


class Driver:
    def __init__(self, root: str, pin: bool) -> None:
        env = dict(os.environ, PYTHONPATH=HERE, PYTHONWARNINGS="ignore")
        cmd = [sys.executable, "-m", "ramen_runtime", "--root", root]
        if pin:
            cmd = ["taskset", "-c", "0", *cmd]
            os.sched_setaffinity(0, {1})
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        assert self.proc.stdin and self.proc.stdout
        self.wfd = self.proc.stdin.fileno()
        self.rfd = self.proc.stdout.fileno()
        self.buf = bytearray()
        ready = self.read_frames(timeout=60)
        assert ready and ready[0].startswith(b'{"op":"ready"'), ready

    def read_frames(self, timeout: float = 10.0) -> list[bytes]:
        out: list[bytes] = []
        while not out:
            r, _, _ = select.select([self.rfd], [], [], timeout)
            if not r:
                raise TimeoutError("runtime did not answer")
            chunk = os.read(self.rfd, 1 << 20)
            if not chunk:
                raise EOFError("runtime exited")
            buf = self.buf
            buf += chunk
            pos = 0
            while len(buf) - pos >= 4:
                n = int.from_bytes(buf[pos : pos + 4], "big")
                if len(buf) - pos - 4 < n:
                    break
                out.append(bytes(buf[pos + 4 : pos + 4 + n]))
                pos += 4 + n
            del buf[:pos]
        return out

    def cpu_seconds(self) -> float:
        """User + system CPU time the runtime process has used so far."""
        with open(f"/proc/{self.proc.pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def run(
        self, tool: str, concurrency: int, seconds: float, warmup: float, bare: bool
    ) -> tuple[int, float, list[float], float]:
        prefix = b'{"id":'
        suffix = (',"op":"call_tool","name":"%s","arguments":{"a":20,"b":22}%s}' % (tool, "" if bare else NODE_FIELDS)).encode()
        expect = b'"structuredContent":{"result":42}'
        sent_at: dict[int, float] = {}
        next_id = 1
        lat: list[float] = []
        done = 0
        errors = 0
        calls_from = 0
        cpu_per_call = 0.0

        def send(k: int) -> None:
            nonlocal next_id
            data = bytearray()
            now = time.perf_counter()
            for _ in range(k):
                body = prefix + str(next_id).encode() + suffix
                data += len(body).to_bytes(4, "big") + body
                sent_at[next_id] = now
                next_id += 1
            os.write(self.wfd, data)

        start = time.perf_counter()
        measure_from = start + warmup
        cpu_from: float | None = None
        stop_at = measure_from + seconds
        send(concurrency)
        measured = 0
        while True:
            frames = self.read_frames()
            now = time.perf_counter()
            if cpu_from is None and now >= measure_from:
                cpu_from, calls_from = self.cpu_seconds(), done
            for body in frames:
                rid = int(body[6 : body.index(b",", 6)])
                t0 = sent_at.pop(rid)
                if expect not in body:
                    errors += 1
                done += 1
                if t0 >= measure_from and now <= stop_at:
                    lat.append(now - t0)
                    measured += 1
            if now >= stop_at:
                cpu_per_call = (self.cpu_seconds() - (cpu_from or 0.0)) / max(1, done - calls_from)
                break
            send(len(frames))
        # drain what is still in flight
        while sent_at:
            for body in self.read_frames():
                sent_at.pop(int(body[6 : body.index(b",", 6)]), None)
        if errors:
            raise AssertionError(f"{errors} wrong answers")
        return measured, seconds, lat, cpu_per_call

    def close(self) -> None:
        body = b'{"op":"shutdown"}'
        os.write(self.wfd, len(body).to_bytes(4, "big") + body)
        self.proc.wait(10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=HELLO_REPO)
    ap.add_argument("--tool", default="notes.add")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--concurrency", default="1,16,64")
    ap.add_argument("--pin", action="store_true", help="runtime on CPU 0, driver on CPU 1")
    ap.add_argument("--bare", action="store_true", help="no session client or caller in the frame")
    args = ap.parse_args()

    drv = Driver(args.root, args.pin)
    print(f"runtime: {sys.executable} -m ramen_runtime --root {args.root}")
    frame = "bare (name and arguments)" if args.bare else "as a node sends it (session client, key caller)"
    print(f"tool: {args.tool}(a=20, b=22), {frame}; {args.warmup:g} s warm-up + {args.seconds:g} s per level")
    print(f"{'concurrency':>11}  {'calls/s':>9}  {'p50 ms':>8}  {'p99 ms':>8}  {'runtime CPU/call':>16}")
    try:
        for c in (int(x) for x in args.concurrency.split(",")):
            n, secs, lat, cpu = drv.run(args.tool, c, args.seconds, args.warmup, args.bare)
            lat.sort()
            p50 = statistics.median(lat) * 1e3
            p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1e3
            print(f"{c:>11}  {n / secs:>9.0f}  {p50:>8.3f}  {p99:>8.3f}  {cpu * 1e6:>13.0f} µs", flush=True)
    finally:
        drv.close()


if __name__ == "__main__":
    main()
