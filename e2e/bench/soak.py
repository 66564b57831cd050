"""The soak (issue 18, "Load / Soak"), run by `e2e/bench/soak-bench`: mixed MCP traffic through
the edge of `ramen up` at half the measured capacity for a given time, sampling the memory and
file descriptors of every process.

    python e2e/bench/soak.py --ramen target/release/ramen --load target/release/mcp-load --minutes 30

`ramen up` with hello-repo deployed on one local zone (up_cluster.py). The mix (`mcp-load
--mix`: tools/call, tools/list, resources/read, prompts/get, a 200 ms tool, a failing tool) is
first driven at concurrency 16 for `--capacity-seconds` (its capacity through the edge), then
at half that rate, still over 16 sessions, for `--minutes`. Every `--sample-every` seconds:
`VmRSS` and the number of open file descriptors of `ramen` (edge, API and control plane), its
nats-server, each worker node and each node's Python runtime. At the end a markdown table per
process (the RSS slope is a least-squares fit over the samples after `--warmup-minutes`) and
the call totals. Exits 1 on any unexpected error (anything but the right answer: an HTTP or
JSON-RPC error, a wrong result, a timeout); the failing tool's `isError` result is expected.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from scenario import Failed  # noqa: E402
from up_cluster import cluster_in, exit_on_signals, processes, start, stop  # noqa: E402

CONCURRENCY = 16


@dataclass
class Series:
    name: str
    samples: list[tuple[float, int, int, float]] = field(default_factory=list)  # (minute, KiB, fds, CPU s)


def status_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpus_busy() -> dict[str, tuple[float, float]]:
    """Per CPU: (busy, total) seconds since boot, every process of the machine included."""
    found = {}
    for line in Path("/proc/stat").read_text().splitlines():
        name, *values = line.split()
        if name.startswith("cpu") and name != "cpu":
            ticks = [int(v) for v in values[:8]]
            idle = ticks[3] + ticks[4]
            found[name] = ((sum(ticks) - idle) / os.sysconf("SC_CLK_TCK"), sum(ticks) / os.sysconf("SC_CLK_TCK"))
    return found


def fd_count(pid: int) -> int | None:
    try:
        return len(list(Path(f"/proc/{pid}/fd").iterdir()))
    except OSError:
        return None


class Sampler:
    """Names processes by role and worker (`node worker-0`, `runtime of worker-0`) at the first
    sample; a process appearing later (a replaced worker, an autoscaled one) is named with the
    minute it appeared, and reported, since the soak should see none."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.series: dict[int, Series] = {}
        self.changes: list[str] = []
        self.gone: set[int] = set()
        self.machine: list[dict[str, tuple[float, float]]] = []
        self.first = True

    def name(self, pid: int, role: str, worker: str | None, minute: float) -> str:
        if role == "node":
            name = f"node {worker}"
        elif role == "runtime":
            name = f"runtime of {worker}"
        elif role == "ramen":
            name = "ramen (edge, API, control plane)"
        else:
            name = role
        if not self.first:
            name += f" (from {minute:.1f} min)"
            self.changes.append(f"{minute:.1f} min: new process {name}, pid {pid}")
        return name

    def sample(self, minute: float) -> None:
        now = processes(self.cluster)
        order = ["ramen", "nats-server", "node", "runtime"]
        for pid in sorted(now, key=lambda p: (order.index(now[p][0]), now[p][1] or "", p)):
            role, node = now[pid]
            kib, fds, cpu = status_kib(pid), fd_count(pid), cpu_seconds(pid)
            if kib is None or fds is None or cpu is None:
                continue
            if pid not in self.series:
                self.series[pid] = Series(self.name(pid, role, node, minute))
            self.series[pid].samples.append((minute, kib, fds, cpu))
        self.machine.append(cpus_busy())
        for pid, series in self.series.items():
            if pid not in now and pid not in self.gone:
                self.gone.add(pid)
                self.changes.append(f"{minute:.1f} min: {series.name} gone, pid {pid}")
        self.first = False


def slope(points: list[tuple[float, int]]) -> float | None:
    """Least-squares slope of (minute, KiB), in KiB per minute."""
    if len(points) < 2:
        return None
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in points) / sxx


def mcp_load(load: Path, url: str, key: str, *flags: str) -> list[str]:
    return ["taskset", "-c", "1", str(load), "--url", url, "--key", key, "--mix",
            "--concurrency", str(CONCURRENCY), *flags]


def last_json(text: str) -> dict[str, Any]:
    return json.loads(text.strip().splitlines()[-1])


def soak(cluster: Any, info: dict[str, Any], args: argparse.Namespace) -> int:
    print(f"ramen up: {info['api']} (work dir {info['work']}); processes: "
          f"{sorted(role for role, _ in processes(cluster).values())}", flush=True)

    done = subprocess.run(mcp_load(args.load, info["mcp"], info["key"], "--seconds",
                                   str(args.capacity_seconds), "--warmup", "3"),
                          capture_output=True, text=True, check=True)
    sys.stderr.write(done.stderr)
    capacity = last_json(done.stdout)
    rate = max(1, round(capacity["calls_per_sec"] / 2))
    print(f"capacity of the mix at concurrency {CONCURRENCY}: {capacity['calls_per_sec']:.0f} calls/s "
          f"(p50 {capacity['p50_us']} µs, p99 {capacity['p99_us']} µs, "
          f"{capacity['errors']} unexpected errors); soaking at {rate} calls/s for {args.minutes} min",
          flush=True)

    seconds = args.minutes * 60
    proc = subprocess.Popen(mcp_load(args.load, info["mcp"], info["key"], "--rate", str(rate),
                                     "--seconds", str(seconds), "--warmup", "0",
                                     "--report-every", str(args.sample_every)),
                            stdout=subprocess.PIPE, text=True)
    lines: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            interval = json.loads(line)
            if "t_s" in interval:
                add = interval["by_kind"].get("notes.add", {})
                print(f"  {interval['t_s'] / 60:5.1f} min: {interval['calls_per_sec']:.0f} calls/s, "
                      f"p50 {interval['p50_us']} µs, p99 {interval['p99_us']} µs "
                      f"(notes.add: p50 {add.get('p50_us')} µs, p99 {add.get('p99_us')} µs), "
                      f"{interval['errors']} unexpected, {interval['expected_errors']} expected errors",
                      flush=True)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    sampler = Sampler(cluster)
    started = time.monotonic()
    # The first sample one period in, with the load's connections open and its sessions made.
    next_at = started + args.sample_every
    try:
        # Samples on a fixed schedule while the load runs (a measurement period, not a wait).
        while proc.poll() is None:
            if cluster.procs["ramen"].poll() is not None:
                print(f"ramen up exited with {cluster.procs['ramen'].returncode}:\n"
                      f"{cluster.tail('ramen')}", file=sys.stderr)
                return 1
            if time.monotonic() >= next_at:
                sampler.sample((time.monotonic() - started) / 60)
                next_at += args.sample_every
            time.sleep(min(1.0, max(0.0, next_at - time.monotonic())))
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join()
    if proc.returncode != 0:
        print(f"mcp-load exited {proc.returncode}", file=sys.stderr)
        return 1
    total = last_json("".join(lines))
    report(sampler, capacity, rate, total, args)
    unexpected = total["errors"] + capacity["errors"]
    return 1 if unexpected else 0


def report(sampler: Sampler, capacity: dict[str, Any], rate: int, total: dict[str, Any],
           args: argparse.Namespace) -> None:
    print()
    print(f"| process | RSS first / last / min / max | slope after {args.warmup_minutes:g} min "
          f"| growth after {args.warmup_minutes:g} min | fds first / last / max | CPU |")
    print("|---|---|---|---|---|---|")
    for series in sampler.series.values():
        kib = [k for _, k, _, _ in series.samples]
        fds = [f for _, _, f, _ in series.samples]
        steady = [(m, k) for m, k, _, _ in series.samples if m >= args.warmup_minutes]
        s = slope(steady)
        fit = "—" if s is None else f"{s:+.1f} KiB/min"
        growth = "—" if len(steady) < 2 else f"{steady[-1][1] - steady[0][1]:+,} KiB"
        (m0, _, _, c0), (m1, _, _, c1) = series.samples[0], series.samples[-1]
        cpu = "—" if m1 == m0 else f"{100 * (c1 - c0) / ((m1 - m0) * 60):.0f}%"
        print(f"| {series.name} | {kib[0]:,} / {kib[-1]:,} / {min(kib):,} / {max(kib):,} KiB "
              f"| {fit} | {growth} | {fds[0]} / {fds[-1]} / {max(fds)} | {cpu} |")
    if len(sampler.machine) >= 2:
        first, last = sampler.machine[0], sampler.machine[-1]
        busy = ", ".join(f"{name} {100 * (last[name][0] - first[name][0]) / (last[name][1] - first[name][1]):.0f}%"
                         for name in sorted(last) if name in first)
        print(f"\nthe machine's CPUs busy over the samples (every process): {busy}; "
              f"CPU is of one core, over the same span")
    print()
    print("| phase | calls/s | calls | unexpected errors | expected tool errors | p50 | p99 |")
    print("|---|---|---|---|---|---|---|")
    for name, r in ((f"capacity, {args.capacity_seconds:g} s at concurrency {CONCURRENCY}", capacity),
                    (f"soak, {args.minutes:g} min at {rate} calls/s", total)):
        print(f"| {name} | {r['calls_per_sec']:,.0f} | {r['calls']:,} | {r['errors']} "
              f"| {r['expected_errors']:,} | {r['p50_us']:,} µs | {r['p99_us']:,} µs |")
    print()
    print("| soak, by kind | calls | unexpected errors | p50 | p99 |")
    print("|---|---|---|---|---|")
    for kind, r in total["by_kind"].items():
        print(f"| {kind} | {r['calls']:,} | {r['errors']} | {r['p50_us']:,} µs | {r['p99_us']:,} µs |")
    for example in total.get("unexpected_examples", []) + capacity.get("unexpected_examples", []):
        print(f"unexpected: {example}")
    for change in sampler.changes:
        print(f"process change: {change}")
    print()
    print("samples (minute: KiB / fds per process):")
    names = [s.name for s in sampler.series.values()]
    print("  minute | " + " | ".join(names))
    rows: dict[float, dict[str, str]] = {}
    for series in sampler.series.values():
        for minute, kib, fds, _ in series.samples:
            rows.setdefault(round(minute, 1), {})[series.name] = f"{kib} / {fds}"
    for minute in sorted(rows):
        print(f"  {minute:6.1f} | " + " | ".join(rows[minute].get(n, "-") for n in names))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ramen", required=True, type=Path)
    parser.add_argument("--load", required=True, type=Path, help="the mcp-load binary")
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--capacity-seconds", type=float, default=20)
    parser.add_argument("--sample-every", type=float, default=30)
    parser.add_argument("--warmup-minutes", type=float, default=2)
    args = parser.parse_args()
    exit_on_signals()
    cluster = cluster_in(args.ramen, Path(tempfile.mkdtemp(prefix="ramen-soak-")))
    try:
        return soak(cluster, start(cluster), args)
    except Failed as failure:
        print(f"FAILED: {failure}\n{cluster.tail('ramen')}", file=sys.stderr)
        return 1
    finally:
        stop(cluster)


if __name__ == "__main__":
    sys.exit(main())
