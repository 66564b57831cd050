"""A stdio MCP server program named in ``ramen.toml`` (kind ``stdio``).

    [packages.time]
    command = ["python", "-m", "mcp_server_time"]

The runtime starts the program (``python`` is the runtime's own interpreter; another bare
name is looked up in that interpreter's ``bin`` directory, then on ``PATH``), in the
snapshot root unless ``cwd`` says otherwise, and is its MCP client (stdio_client.py).
Its tools, resources and prompts are listed at load like any package's and namespaced the
same way.

If the program dies, the calls in flight fail at once (-32603) and it is started again
after a back-off (0.25 s doubling to 10 s; back to 0.25 s once a run lasted 30 s). Calls
arriving meanwhile wait up to 10 s for it. Once it runs again, and whenever it announces a
list change, the node gets a list_changed hint and re-lists. A program that cannot be
started or does not complete the handshake at load is a load error of its package (no
restart).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
import shutil
import sys
from typing import Any

from .adapters import Adapter, AsMCPError
from .protocol import INTERNAL_ERROR, METHOD_NOT_FOUND, ProtocolError, dumps
from .session import Call
from .stdio_client import ServerGone, Session, child_env

log = logging.getLogger("ramen_runtime")

START_TIMEOUT = 30.0  # spawn + initialize (a cold interpreter importing an SDK can take a while)
CALL_WAIT = 10.0  # how long a call waits for a restarting server
BACKOFF_MIN, BACKOFF_MAX, BACKOFF_RESET = 0.25, 10.0, 30.0
MAX_PAGES = 10_000
_NEWER_FIELDS = ("resultType", "ttlMs", "cacheScope")
_LISTS = {  # method -> (result key, capability that must be declared)
    "tools/list": ("tools", "tools"),
    "resources/list": ("resources", "resources"),
    "resources/templates/list": ("resourceTemplates", "resources"),
    "prompts/list": ("prompts", "prompts"),
}


class StdioStartError(Exception):
    """The program could not be started or did not complete the MCP handshake."""

    def __init__(self, message: str, stderr: str = "") -> None:
        super().__init__(message)
        self.stderr = stderr


class ServerDown(ProtocolError):
    """The program is not running, or died during the request (-32603)."""

    def __init__(self, message: str) -> None:
        super().__init__(INTERNAL_ERROR, message)


def resolve_command(argv: list[str], root: str) -> list[str]:
    exe = argv[0]
    if exe in ("python", "python3"):
        exe = sys.executable
    elif "/" not in exe:
        bindir = os.path.dirname(sys.executable)
        found = shutil.which(exe, path=bindir) or shutil.which(exe)
        if found is None:
            raise StdioStartError(f"command {exe!r} was found neither in {bindir} nor on PATH")
        exe = found
    elif not os.path.isabs(exe):
        exe = os.path.join(root, exe)
    return [exe, *argv[1:]]


class StdioAdapter(Adapter):
    kind = "stdio"

    def __init__(self, package: str, argv: list[str], root: str, cwd: str | None, env: dict[str, str] | None) -> None:
        super().__init__(package, None, shlex.join(argv))
        self.types_mod = None
        self._argv = argv
        self._root = root
        self._cwd = os.path.join(root, cwd) if cwd else root
        self._env = env
        self.session: Session | None = None
        self._live = asyncio.Event()
        self._stopping = False
        self._supervisor: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ lifecycle
    async def _launch(self) -> Session:
        argv = resolve_command(self._argv, self._root)
        try:
            session = await Session.spawn(self.package, argv, self._cwd, child_env(self._env))
        except OSError as exc:
            raise StdioStartError(f"cannot start {argv[0]}: {exc}") from exc
        try:
            await session.initialize(START_TIMEOUT)
        except BaseException as exc:
            await session.close(grace=0.2)
            tail = "\n".join(session.stderr_tail)
            if isinstance(exc, ServerGone):
                raise StdioStartError(f"it {exc} before answering initialize", tail) from None
            if isinstance(exc, TimeoutError):
                raise StdioStartError(f"it did not answer initialize within {START_TIMEOUT:g} s", tail) from None
            if isinstance(exc, ProtocolError):
                raise StdioStartError(f"initialize failed: {exc.message}", tail) from None
            raise
        log.info("stdio server of package %r started (pid %d): %s", self.package, session.pid, self.server_ref)
        session.on_closed = self._live.clear  # at once: no call may pick a dead session
        session.on_list_changed = self._list_changed
        return session

    def _list_changed(self, method: str) -> None:
        if self.hint is not None:
            self.hint(method)

    async def start(self) -> None:
        self.session = await self._launch()
        self._live.set()
        self._supervisor = asyncio.get_running_loop().create_task(
            self._supervise(), name=f"stdio {self.package}: supervisor"
        )

    def start_error(self, exc: BaseException) -> dict[str, str] | None:
        if isinstance(exc, StdioStartError):
            return {"message": str(exc), "traceback": exc.stderr}
        return None

    async def _supervise(self) -> None:
        delay = BACKOFF_MIN
        while True:
            session = self.session
            assert session is not None
            why = await asyncio.shield(session.closed)
            self._live.clear()
            if self._stopping:
                return
            if asyncio.get_running_loop().time() - session.started_at >= BACKOFF_RESET:
                delay = BACKOFF_MIN
            log.warning(
                "stdio server of package %r (pid %d) %s; restarting it in %g s", self.package, session.pid, why, delay
            )
            while True:
                await asyncio.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX)
                try:
                    self.session = await self._launch()
                    break
                except StdioStartError as exc:
                    log.warning("restarting stdio server %r failed: %s; next try in %g s", self.package, exc, delay)
            self._live.set()
            # A restarted program may list something else (an upgrade, a changed config).
            self._list_changed("notifications/tools/list_changed")

    async def stop(self) -> None:
        self._stopping = True
        if self._supervisor is not None:
            self._supervisor.cancel()
        self._live.clear()
        if self.session is not None:
            await self.session.close()

    # ------------------------------------------------------------------ requests
    async def _request(self, call: Call | None, method: str, params: dict[str, Any]) -> Any:
        if not self._live.is_set():
            try:
                await asyncio.wait_for(self._live.wait(), CALL_WAIT)
            except TimeoutError:
                raise ServerDown(
                    f"the stdio server of package {self.package!r} is not running (being restarted)"
                ) from None
        session = self.session
        assert session is not None
        try:
            return await session.request(method, params, call=call)
        except ServerGone as exc:
            raise ServerDown(
                f"the stdio server of package {self.package!r} {exc} during the request; restarting it"
            ) from None

    async def _list(self, method: str) -> list[dict[str, Any]]:
        key, capability = _LISTS[method]
        if not self._live.is_set():
            await asyncio.wait_for(self._live.wait(), CALL_WAIT)
        if self.session is None or capability not in self.session.capabilities:
            return []
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            try:
                page = await self._request(None, method, {"cursor": cursor} if cursor else {})
            except ProtocolError as exc:
                if exc.code == METHOD_NOT_FOUND and method == "resources/templates/list":
                    return []  # resources without templates: some servers do not serve the method
                raise
            page = page if isinstance(page, dict) else {}
            items.extend(x for x in page.get(key) or [] if isinstance(x, dict))
            cursor = page.get("nextCursor")
            if not cursor:
                return items
            if cursor in seen:
                raise RuntimeError(f"{method} returned the cursor {cursor!r} twice")
            seen.add(cursor)
        raise RuntimeError(f"{method} still had more pages after {MAX_PAGES}")

    async def list_tools(self) -> list[dict[str, Any]]:
        return await self._list("tools/list")

    async def list_resources(self) -> list[dict[str, Any]]:
        return await self._list("resources/list")

    async def list_resource_templates(self) -> list[dict[str, Any]]:
        return await self._list("resources/templates/list")

    async def list_prompts(self) -> list[dict[str, Any]]:
        return await self._list("prompts/list")

    def unserved(self, pkg: Any) -> str | None:
        return None

    async def call_tool(self, call: Call, name: str, arguments: dict[str, Any]) -> str:
        return _result(await self._request(call, "tools/call", {"name": name, "arguments": arguments}))

    async def read_resource(self, call: Call, uri: str) -> str:
        try:
            return _result(await self._request(call, "resources/read", {"uri": uri}))
        except ServerDown:
            raise
        except ProtocolError as exc:
            raise self._resource_error(AsMCPError(exc), uri) from None

    async def get_prompt(self, call: Call, name: str, arguments: dict[str, Any] | None) -> str:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return _result(await self._request(call, "prompts/get", params))


def _result(result: Any) -> str:
    if not isinstance(result, dict):
        raise ProtocolError(INTERNAL_ERROR, f"the stdio server answered with a {type(result).__name__}, not a result")
    for key in _NEWER_FIELDS:
        result.pop(key, None)
    return dumps(result)
