"""An MCP client session with one child process, over its stdin/stdout.

The MCP stdio transport: newline-delimited JSON-RPC 2.0 messages, UTF-8, one per line;
the child's stderr is its log. The runtime is the client: it sends ``initialize`` (the
newest handshake revision it speaks), ``notifications/initialized``, then requests.

A request made for a runtime call carries the node's ``meta`` as ``_meta`` (minus the
2026-07-28 envelope keys), a progress token of the session's, and who is calling as
``_meta["io.ramen/caller"]`` (identity.py; a client's own key of that name is dropped).

What the child sends back is routed to the runtime's calls:

* responses complete the request with that id (an error becomes a ``ProtocolError``
  carrying the child's code, message and data);
* ``notifications/progress`` carry the progress token the session put in the request's
  ``_meta``, so they go to that call (without the token: the node adds the client's);
* other notifications (``notifications/message``, list changes) carry nothing that says
  which request they belong to; they go to the call in flight when there is exactly one,
  else to the worker log (sending them to the wrong client would leak data across clients);
* requests from the child: ``ping`` is answered; nothing else is relayed (the session
  declares no client capabilities), so the rest get ``-32601``.

When the child exits or closes its stdout, every request in flight fails at once with
``ServerGone`` and ``closed`` resolves with what happened.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import logging
import os
import signal
import sys
from typing import Any

from . import __version__, identity
from .protocol import INTERNAL_ERROR, MAX_FRAME, METHOD_NOT_FOUND, ProtocolError, dumps

log = logging.getLogger("ramen_runtime")

PROTOCOL_VERSION = "2025-11-25"  # the newest revision with `initialize` (2026-07-28 dropped it)
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
STDERR_TAIL = 40  # lines kept for load errors


class ServerGone(Exception):
    """The child exited (or closed its stdout) before answering."""


class Session:
    def __init__(self, name: str, proc: asyncio.subprocess.Process) -> None:
        self.name = name
        self.proc = proc
        self.loop = asyncio.get_running_loop()
        self.started_at = self.loop.time()
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._calls: dict[int, Any] = {}  # request id -> runtime Call (requests made for a call)
        self._tokens: dict[str, Any] = {}  # progress token -> runtime Call
        self.closed: asyncio.Future[str] = self.loop.create_future()
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL)
        self.init_result: dict[str, Any] = {}
        self.on_closed: Any = None  # called (no arguments) the moment the session ends
        self.on_list_changed: Any = None  # called with the method of a list_changed it sends
        self._tasks = [
            self.loop.create_task(self._read_stdout(), name=f"stdio {name}: stdout"),
            self.loop.create_task(self._read_stderr(), name=f"stdio {name}: stderr"),
        ]

    @classmethod
    async def spawn(cls, name: str, argv: list[str], cwd: str, env: dict[str, str]) -> Session:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=env,
            limit=MAX_FRAME,
        )
        return cls(name, proc)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def capabilities(self) -> dict[str, Any]:
        caps = self.init_result.get("capabilities")
        return caps if isinstance(caps, dict) else {}

    # ------------------------------------------------------------------ handshake
    async def initialize(self, timeout: float) -> None:
        params = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "ramen-runtime", "version": __version__},
        }
        result = await self.request("initialize", params, timeout=timeout)
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if version not in PROTOCOL_VERSIONS:
            raise ProtocolError(
                INTERNAL_ERROR,
                f"it answered initialize with protocol version {version!r}; "
                f"the runtime speaks {', '.join(PROTOCOL_VERSIONS)}",
            )
        self.init_result = result
        self.notify("notifications/initialized")

    # ------------------------------------------------------------------ output
    def _send(self, msg: dict[str, Any]) -> None:
        stdin = self.proc.stdin
        if self.closed.done() or stdin is None or stdin.is_closing():
            raise BrokenPipeError("the server's stdin is closed")
        stdin.write(dumps(msg).encode("utf-8", "replace") + b"\n")

    async def _why_gone(self) -> str:
        """What happened to a child whose stdin broke: its exit, once the stdout reader sees it."""
        try:
            return await asyncio.wait_for(asyncio.shield(self.closed), 3.0)
        except TimeoutError:
            return "closed its stdin"

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        try:
            self._send(msg)
        except OSError:
            pass  # nobody to tell

    async def request(
        self, method: str, params: dict[str, Any], call: Any = None, timeout: float | None = None
    ) -> Any:
        """Send a request and wait for its result; for a runtime `call`, route its notifications to it."""
        rid = next(self._ids)
        if call is not None:
            token = f"ramen-{rid}"
            meta = {**session_meta(call.meta), "progressToken": token}
            if call.caller is not None:
                meta[identity.META_KEY] = identity.thaw(call.caller)
            params = dict(params, _meta=meta)
            self._calls[rid] = call
            self._tokens[token] = call
        fut = self.loop.create_future()
        self._pending[rid] = fut
        try:
            self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
            await self.proc.stdin.drain()  # type: ignore[union-attr]
            return await (asyncio.wait_for(fut, timeout) if timeout else fut)
        except OSError:  # a broken pipe: the child is gone, or going
            raise ServerGone(await self._why_gone()) from None
        except (asyncio.CancelledError, TimeoutError):
            if not fut.done():
                self.notify("notifications/cancelled", {"requestId": rid, "reason": "cancelled by ramen"})
            raise
        finally:
            self._pending.pop(rid, None)
            if self._calls.pop(rid, None) is not None:
                self._tokens.pop(f"ramen-{rid}", None)

    # ------------------------------------------------------------------ input
    async def _read_stdout(self) -> None:
        reader = self.proc.stdout
        assert reader is not None
        why = "closed its stdout"
        try:
            while True:
                try:
                    line = await reader.readline()
                except ValueError:  # longer than MAX_FRAME
                    why = f"wrote a message over {MAX_FRAME} bytes"
                    log.error("stdio server of package %r %s; stopping it", self.name, why)
                    break
                if not line:
                    break
                if line.strip():
                    self._on_line(line)
        finally:
            await self._finish(why)

    def _on_line(self, line: bytes) -> None:
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError):  # nesting past the stack is not a ValueError
            log.warning("stdio server of package %r wrote a line that is not JSON: %.200r", self.name, line)
            return
        for m in msg if isinstance(msg, list) else [msg]:
            if not isinstance(m, dict):
                log.warning("stdio server of package %r wrote a message that is not an object: %.200r", self.name, m)
            elif "method" in m:
                if "id" in m:
                    self._on_request(m)
                else:
                    self._on_notification(m.get("method"), m.get("params"))
            else:
                self._on_response(m)

    def _on_response(self, msg: dict[str, Any]) -> None:
        fut = self._pending.get(msg.get("id"))  # type: ignore[arg-type]
        if fut is None or fut.done():
            return
        err = msg.get("error")
        if err is not None:
            err = err if isinstance(err, dict) else {}
            code = err.get("code")
            fut.set_exception(
                ProtocolError(
                    code if isinstance(code, int) and not isinstance(code, bool) else INTERNAL_ERROR,
                    str(err.get("message", "")),
                    err.get("data"),
                )
            )
        else:
            fut.set_result(msg.get("result"))

    def _on_request(self, msg: dict[str, Any]) -> None:
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg["id"]}
        if msg.get("method") == "ping":
            reply["result"] = {}
        else:
            reply["error"] = {
                "code": METHOD_NOT_FOUND,
                "message": f"Method not found: ramen does not relay {msg.get('method')} from stdio servers",
            }
        try:
            self._send(reply)
        except OSError:
            pass

    def _on_notification(self, method: Any, params: Any) -> None:
        if not isinstance(method, str):
            return
        params = params if isinstance(params, dict) else None
        if method == "notifications/progress" and params is not None:
            call = self._tokens.get(params.get("progressToken"))  # type: ignore[arg-type]
            if call is not None:
                call.rt.notify(call.id, method, {k: v for k, v in params.items() if k != "progressToken"})
            return
        if method == "notifications/cancelled":
            return  # the child gave up on a request of its own; the runtime sends none
        if method.endswith("/list_changed") and self.on_list_changed is not None:
            self.on_list_changed(method)  # the node re-lists whichever call it arrives in
        calls = {id(c): c for c in self._calls.values()}
        if len(calls) == 1:
            call = next(iter(calls.values()))
            call.rt.notify(call.id, method, params)
        else:
            log.info("stdio server of package %r sent %s for no single call: %.500s", self.name, method, dumps(params))

    async def _read_stderr(self) -> None:
        reader = self.proc.stderr
        assert reader is not None
        prefix = f"[{self.name}] "
        while True:
            try:
                line = await reader.readline()
            except ValueError:
                line = await reader.read(1 << 16)
            if not line:
                return
            text = line.decode("utf-8", "replace").rstrip("\n")
            self.stderr_tail.append(text)
            sys.stderr.write(prefix + text + "\n")
            sys.stderr.flush()

    # ------------------------------------------------------------------ end
    async def _finish(self, why: str) -> None:
        if self.closed.done():
            return
        try:
            code = await asyncio.wait_for(self.proc.wait(), 1.0)
            why = _describe_exit(code)
        except TimeoutError:
            self._kill()
        err = ServerGone(why)
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(err)
        self.closed.set_result(why)
        if self.on_closed is not None:
            self.on_closed()
        # the stderr reader ends at EOF; give it a moment so the last lines are kept
        await asyncio.wait([self._tasks[1]], timeout=1.0)

    def _kill(self) -> None:
        if self.proc.returncode is None:
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass

    async def close(self, grace: float = 1.0) -> None:
        """Stop the child: EOF on its stdin (how MCP stdio servers are asked to exit), then signals."""
        stdin = self.proc.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()
        for step, wait in ((None, grace), (signal.SIGTERM, 0.5), (signal.SIGKILL, 2.0)):
            if step is not None and self.proc.returncode is None:
                try:
                    self.proc.send_signal(step)
                except ProcessLookupError:
                    pass
            try:
                await asyncio.wait_for(asyncio.shield(self.closed), wait)
                break
            except TimeoutError:
                continue
        for task in self._tasks:
            if not task.done():
                task.cancel()


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by signal {-code} ({signal.Signals(-code).name})"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


# Keys of a 2026-07-28 request's `_meta` that describe that request's revision and client.
# This session speaks the handshake revision with the program, which (if dual-era) refuses
# a request carrying them; the program sees the runtime as its client anyway.
_ENVELOPE_KEYS = frozenset(
    f"io.modelcontextprotocol/{k}" for k in ("protocolVersion", "clientCapabilities", "clientInfo", "logLevel")
)


def session_meta(meta: Any) -> dict[str, Any]:
    """The node's `_meta` for a request on this (handshake-era) session: the rest goes along."""
    if not isinstance(meta, dict):
        return {}
    # the caller key comes from the node's "caller" field only (request() adds it)
    return {k: v for k, v in meta.items() if k not in _ENVELOPE_KEYS and k != identity.META_KEY}


def child_env(extra: dict[str, str] | None) -> dict[str, str]:
    env = dict(os.environ)
    if extra:
        env.update(extra)
    return env
