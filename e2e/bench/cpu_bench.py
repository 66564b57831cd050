"""CPU per request of the node and of the edge, the `/proc/<pid>/stat` way, under load.

The cost gate (cost_gate.py) counts instructions, one request at a time; issue 32's targets are
microseconds of CPU per call, which depend on concurrency (at 1, each request pays the
wake-ups of a sleeping server; at 16, wake-ups are shared). This runs one node (examples/
hello-repo, a key required, as the gate configures it) and `edge-static` in front of it,
both natively and unpinned, and drives them with `mcp-load` on CPU 1: for each request kind
and concurrency, once at the node directly (the node's CPU per call) and once through the
edge (the edge's). The process's user + system time over the run, divided by the calls made.
The requests: `tools/call` in a 2025-11-25 session, the same as 2026-07-28 stateless requests
(no session; the `_meta` envelope and its headers on every call), and `ping` in a session.
Not gated: the figure moves with the machine; read rounds side by side.

With `--floor <proxy-floor>`, the same points are run once more through `proxy-floor` (hyper
alone forwarding to the node, none of the edge's own work) in front of the same node: the least
any edge on hyper and tokio could cost on this machine, measured beside the edge. `--floor` may
be given more than once (`--floor <byte-floor>`: no hyper at all, docs/benchmarks.md "Thirteenth
round"); each gets a column named after its binary.

`--local` adds a second `edge-static` that reaches the node over the node's abstract Unix socket,
as a local zone's edge does (docs/benchmarks.md, "Seventeenth round"), and two columns: that
edge's CPU per call, and the node's in the same run (the node fed over the socket, against its
column fed over TCP by `mcp-load` directly).

`--answer <answer-floor>` adds a first column: one loopback HTTP request, served by hyper with a
fixed answer and no MCP behind it (issue 32's yardstick: "a loopback HTTP request costs about
6.5 µs of CPU here"; docs/benchmarks.md, "Nineteenth round"), driven by the same `mcp-load` at
the same concurrency. The other columns read against it say what the node and the edge cost on
this machine in loopback requests, a figure that does not move with the VM's speed as µs do
(docs/benchmarks.md, "Twentieth round"); with `--answer` a second table after the rounds gives
every figure in those units, lowest–highest of the rounds.

`--edge-threads N` runs the edge and the floor on N tokio worker threads (`TOKIO_WORKER_THREADS`)
instead of one per CPU (docs/benchmarks.md, "Ninth round": one thread sleeps and wakes less
often per request than two).

    cpu_bench.py --runner <ramen-runner> --edge <edge-static> --load <mcp-load>
                 [--floor <proxy-floor> ...] [--answer <answer-floor>] [--local] [--edge-threads N] [--seconds 5] [--rounds 2]
                 [--concurrency 1,4,16]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cost_gate import KEY, cpu_seconds, node_local, start_edge, start_node, stop  # noqa: E402


# Each request kind measured, with the `mcp-load` flags that make it: issue 32's node target
# covers `tools/call` on both the 2025-11-25 session path and the 2026-07-28 stateless one.
KINDS = (
    ("tools/call", []),
    ("tools/call, stateless", ["--stateless"]),
    ("ping", ["--ping"]),
)


def per_call(pid: int, load: list[str]) -> float:
    """µs of process `pid`'s CPU per call of one `mcp-load` run."""
    return per_call_of([pid], load)[0]


def per_call_of(pids: list[int], load: list[str]) -> list[float]:
    """µs of each process's CPU per call of one `mcp-load` run."""
    before = [cpu_seconds(pid) for pid in pids]
    out = subprocess.run(load, check=True, capture_output=True, text=True).stdout
    used = [cpu_seconds(pid) - b for pid, b in zip(pids, before)]
    calls = json.loads(out.strip().splitlines()[-1])["calls"]
    if not calls:
        raise RuntimeError(f"no call answered: {out[-500:]}")
    return [round(u / calls * 1e6, 1) for u in used]


def print_in_loopback_requests(columns: list[str], measured: dict[tuple[str, int], list[list[float]]]) -> None:
    """Each figure over the loopback request of its own round (the first figure of each round),
    lowest–highest of the rounds: the issue's units, which do not move with the VM's speed as µs
    do (docs/benchmarks.md, "Twentieth round"). Targets in them: node 3.85 per `tools/call`, 1.54
    per `ping`; edge 2.31 per proxied call."""
    names = [column.replace(" µs/call", "") for column in columns]
    print()
    print("In loopback HTTP requests (each figure over its round's answer-floor; lowest–highest of the rounds):")
    print()
    print("| request | concurrency | " + " | ".join(names) + " |")
    print("|" + "---|" * (len(names) + 2))
    for (kind, c), rounds in measured.items():
        cells = []
        for i in range(1, len(rounds[0])):
            ratios = [figures[i] / figures[0] for figures in rounds]
            cells.append(f"{min(ratios):.1f}–{max(ratios):.1f}")
        print(f"| {kind} | {c} | " + " | ".join(cells) + " |", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runner", type=Path, required=True)
    parser.add_argument("--edge", type=Path, required=True)
    parser.add_argument("--load", type=Path, required=True, help="the release mcp-load")
    parser.add_argument("--floor", type=Path, action="append", default=[],
                        help="a release proxy-floor, half-floor or byte-floor, measured beside the edge; repeatable")
    parser.add_argument("--answer", type=Path,
                        help="a release answer-floor: one loopback HTTP request's CPU, measured first")
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--concurrency", default="1,4,16")
    parser.add_argument("--local", action="store_true",
                        help="also an edge reaching the node over its abstract Unix socket")
    parser.add_argument("--edge-threads", type=int, help="tokio worker threads of the edge and the floor")
    args = parser.parse_args()
    threads = ["env", f"TOKIO_WORKER_THREADS={args.edge_threads}"] if args.edge_threads else []
    levels = [int(c) for c in args.concurrency.split(",")]
    pin = ["taskset", "-c", "1"] if shutil.which("taskset") and os.cpu_count() and os.cpu_count() > 1 else []
    with tempfile.TemporaryDirectory(prefix="cpu-bench-") as tmp:
        work = Path(tmp)
        node, node_port, _ = start_node(args.runner, work / "node", [], local=args.local)
        try:
            edge, edge_port = start_edge(args.edge, node_port, work, threads)
            floors: list[tuple[subprocess.Popen, int]] = []
            local_edge = None
            answer = None
            try:
                if args.answer:
                    (work / "answer").mkdir()
                    answer = start_edge(args.answer, node_port, work / "answer", threads)
                for n, binary in enumerate(args.floor):
                    (work / f"floor-{n}").mkdir()
                    floors.append(start_edge(binary, node_port, work / f"floor-{n}", threads))
                if args.local:
                    (work / "local").mkdir()
                    local_edge = start_edge(args.edge, node_port, work / "local", threads,
                                            local=node_local(work / "node"))
                # One column per figure of a round, in the order each round measures them.
                figure_columns = [*(["loopback HTTP request µs (answer-floor)"] if answer else []),
                                  "node µs/call (directly)", "edge µs/call (in front)",
                                  *(f"{binary.name} µs/call (in front)" for binary in args.floor),
                                  *(["edge µs/call (over the node's socket)",
                                     "node µs/call (fed over its socket)"] if local_edge else [])]
                columns = ["request", "concurrency", "round", *figure_columns]
                print("| " + " | ".join(columns) + " |")
                print("|" + "---|" * len(columns))
                # (request kind, concurrency) -> each round's figures, in the columns' order
                measured: dict[tuple[str, int], list[list[float]]] = {}
                for round_ in range(1, args.rounds + 1):
                    for kind, flag in KINDS:
                        for c in levels:
                            def load(url: str) -> list[str]:
                                return [*pin, str(args.load), "--url", url, "--key", KEY,
                                        "--concurrency", str(c), "--seconds", str(args.seconds),
                                        "--warmup", "0", "--tool", "notes.add", *flag]
                            figures: list[float] = []
                            if answer:
                                figures.append(per_call(answer[0].pid, load(f"http://127.0.0.1:{answer[1]}/mcp")))
                            figures.append(per_call(node.pid, load(f"http://127.0.0.1:{node_port}/mcp")))
                            figures.append(per_call(edge.pid, load(f"http://127.0.0.1:{edge_port}/mcp/bench/prod")))
                            for floor, floor_port in floors:
                                figures.append(per_call(floor.pid, load(f"http://127.0.0.1:{floor_port}/mcp/bench/prod")))
                            if local_edge:
                                url = f"http://127.0.0.1:{local_edge[1]}/mcp/bench/prod"
                                figures.extend(per_call_of([local_edge[0].pid, node.pid], load(url)))
                            measured.setdefault((kind, c), []).append(figures)
                            print(f"| {kind} | {c} | {round_} | " + " | ".join(map(str, figures)) + " |", flush=True)
                if answer:
                    # every figure but the loopback request itself, over it
                    print_in_loopback_requests(figure_columns[1:], measured)
            finally:
                stop(edge)
                if answer:
                    stop(answer[0])
                if local_edge:
                    stop(local_edge[0])
                for floor, _ in floors:
                    stop(floor)
        finally:
            stop(node)
    return 0


if __name__ == "__main__":
    sys.exit(main())
