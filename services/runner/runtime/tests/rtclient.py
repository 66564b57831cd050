"""A tiny blocking client for the node <-> runtime framed protocol (tests and benchmarks)."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
from typing import Any

RUNTIME_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # services/runner/runtime
REPO_ROOT = os.path.abspath(os.path.join(RUNTIME_DIR, "..", "..", ".."))
EXAMPLES = os.path.join(REPO_ROOT, "examples")
FIXTURES = os.path.join(REPO_ROOT, "services", "runner", "tests", "fixtures")
HELLO_REPO = os.path.join(EXAMPLES, "hello-repo")


def fixture(name: str) -> str:
    return os.path.join(FIXTURES, name)


def encode(obj: Any) -> bytes:
    body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    return len(body).to_bytes(4, "big") + body


class RuntimeProcess:
    """Spawns ``python -m ramen_runtime`` and exchanges frames with it."""

    def __init__(
        self,
        root: str,
        *args: str,
        python: str | None = None,
        env: dict[str, str] | None = None,
        wait_ready: bool = True,
        timeout: float = 30.0,
    ) -> None:
        full_env = dict(os.environ)
        full_env["PYTHONPATH"] = RUNTIME_DIR
        full_env.setdefault("PYTHONWARNINGS", "ignore")
        if env:
            full_env.update(env)
        self.proc = subprocess.Popen(
            [python or sys.executable, "-m", "ramen_runtime", "--root", root, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=full_env,
            cwd="/",
        )
        self._buf = b""
        self._stderr: list[bytes] = []
        # drain stderr continuously so a chatty runtime never blocks on a full pipe
        self._stderr_thread = threading.Thread(target=self._drain_stderr, daemon=True)
        self._stderr_thread.start()
        self._next_id = 0
        self.backlog: list[dict[str, Any]] = []
        self.ready: dict[str, Any] | None = None
        if wait_ready:
            first = self.recv(timeout)
            assert first.get("op") == "ready", first
            self.ready = first["report"]

    # -- raw I/O --------------------------------------------------------------
    def send(self, obj: Any) -> None:
        self.send_raw(encode(obj))

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def _read_some(self, deadline: float) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("no frame from the runtime in time; stderr:\n" + self.stderr_so_far())
        r, _, _ = select.select([fd], [], [], remaining)
        if not r:
            raise TimeoutError("no frame from the runtime in time; stderr:\n" + self.stderr_so_far())
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            raise EOFError("runtime closed its output; stderr:\n" + self.stderr_so_far())
        self._buf += chunk

    def recv(self, timeout: float = 10.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            if len(self._buf) >= 4:
                n = int.from_bytes(self._buf[:4], "big")
                if len(self._buf) >= 4 + n:
                    body, self._buf = self._buf[4 : 4 + n], self._buf[4 + n :]
                    return json.loads(body)
            self._read_some(deadline)

    def next_frame(self, timeout: float = 10.0) -> dict[str, Any]:
        if self.backlog:
            return self.backlog.pop(0)
        return self.recv(timeout)

    # -- requests -------------------------------------------------------------
    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def start(self, op: str, **fields: Any) -> int:
        rid = self.new_id()
        self.send({"id": rid, "op": op, **fields})
        return rid

    def wait_reply(self, rid: int, timeout: float = 10.0, collect: list | None = None) -> dict[str, Any]:
        """Wait for the final reply of `rid`; other frames go to the backlog (or `collect` if for rid)."""
        for i, f in enumerate(list(self.backlog)):
            if f.get("id") == rid and ("result" in f or "error" in f):
                self.backlog.pop(i)
                return f
        deadline = time.monotonic() + timeout
        while True:
            f = self.recv(max(0.001, deadline - time.monotonic()))
            if f.get("id") == rid and ("result" in f or "error" in f):
                return f
            if collect is not None and f.get("id") == rid:
                collect.append(f)
            else:
                self.backlog.append(f)

    def request(self, op: str, timeout: float = 10.0, **fields: Any) -> dict[str, Any]:
        return self.wait_reply(self.start(op, **fields), timeout)

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
        return self.request("call_tool", name=name, arguments=arguments or {}, **kw)

    # -- lifecycle --------------------------------------------------------------
    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        fd = self.proc.stderr.fileno()
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            self._stderr.append(chunk)

    def stderr_so_far(self) -> str:
        if self.proc.poll() is not None:
            self._stderr_thread.join(2)
        return b"".join(self._stderr).decode(errors="replace")

    def wait_exit(self, timeout: float = 10.0) -> int:
        return self.proc.wait(timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send({"op": "shutdown"})
                self.proc.wait(5)
            except Exception:
                self.proc.kill()
                self.proc.wait()
        self._stderr_thread.join(2)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if f is not None:
                try:
                    f.close()
                except Exception:
                    pass

    def __enter__(self) -> RuntimeProcess:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def package(report: dict[str, Any], name: str) -> dict[str, Any]:
    for p in report["packages"]:
        if p["name"] == name:
            return p
    raise KeyError(f"no package {name!r} in report: {[p['name'] for p in report['packages']]}")


def text_of(result: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in result.get("content", []) if c.get("type") == "text")
