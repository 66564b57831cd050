"""The runtime: loads the snapshot's packages and serves the framed protocol.

Protocol summary (full text: docs/packages.md, "Node ⇄ runtime protocol"):

runtime -> node   {"op":"ready","report":REPORT}                       (first frame)
node -> runtime   {"id":N,"op":"call_tool","name":..,"arguments":{..}}  -> {"id":N,"result":CallToolResult}
                  {"id":N,"op":"read_resource","uri":..}               -> {"id":N,"result":ReadResourceResult}
                  {"id":N,"op":"get_prompt","name":..,"arguments":{..}} -> {"id":N,"result":GetPromptResult}
                  (these three may carry "meta", "client", "input" and "caller": who the node
                   authenticated, never the credential itself; see identity.py)
                  {"id":N,"op":"list"}                                 -> {"id":N,"result":REPORT}
                  {"id":N,"op":"ping"}                                 -> {"id":N,"result":{}}
                  {"op":"cancel","target":M}                           (M answers -32800)
                  {"op":"response","rid":K,"result"|"error":..}        (answer to a runtime request)
                  {"op":"shutdown"}                                    (or EOF: exit 0)
runtime -> node   {"id":N,"notification":{"method":..,"params":..}}    (during call N)
                  {"id":N,"request":{"rid":K,"method":..,"params":..}} (sampling/elicitation/...)
                  {"notification":{"method":"notifications/tools/list_changed"}}  (no call: a
                   hint to send `list`, e.g. after a stdio program restarted)
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import itertools
import json
import logging
import os
import platform
import stat
import sys
import threading
from collections.abc import Callable
from typing import Any

from . import identity, loader
from .adapters import Adapter
from .protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    MAX_FRAME,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    RESOURCE_NOT_FOUND,
    ProtocolError,
    dumps,
)
from .session import Call
from .uritemplate import compile_template

log = logging.getLogger("ramen_runtime")

_HEADER = 4
_decode = json.JSONDecoder().decode


class _NodeError(Exception):
    def __init__(self, error: Any) -> None:
        super().__init__(str(error))
        self.error = error if isinstance(error, dict) else {"code": INTERNAL_ERROR, "message": str(error)}


def _sdk_error(error: dict[str, Any]) -> BaseException:
    """The node's JSON-RPC error for a server->client request, as the SDK's own exception type."""
    code = error.get("code", INTERNAL_ERROR)
    message = str(error.get("message", ""))
    data = error.get("data")
    mod = sys.modules.get("mcp.shared.exceptions")
    cls = getattr(mod, "MCPError", None) if mod else None
    if cls is not None:
        try:
            return cls(code=code, message=message, data=data)
        except TypeError:
            pass
    cls = getattr(mod, "McpError", None) if mod else None
    types_mod = sys.modules.get("mcp.types")
    if cls is not None and types_mod is not None and hasattr(types_mod, "ErrorData"):
        return cls(types_mod.ErrorData(code=code, message=message, data=data))
    return RuntimeError(message)


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates from a package: keep the frame valid UTF-8
        return text.encode("utf-8", "replace")


def _id_json(rid: Any) -> str:
    return str(rid) if type(rid) is int else dumps(rid)


class Tables:
    """Dispatch tables built from the packages' listings (swapped atomically on re-list)."""

    def __init__(self) -> None:
        self.tools: dict[str, tuple[Adapter, str]] = {}
        self.prompts: dict[str, tuple[Adapter, str]] = {}
        self.resources: dict[str, Adapter] = {}
        self.templates: list[tuple[Any, Adapter, str]] = []


def call_context(adapter: Adapter | None, call: Call | None) -> contextvars.Context | None:
    """The context a call's task runs in; None: a plain copy of the current one (the fast path).

    A copy of what the package's lifespan set up (see lifespan.py), with the caller bound
    in it (identity.py): set in the call's own copy, so it ends with the call and no other
    call sees it.
    """
    base = adapter.call_context if adapter is not None else None
    who = call.caller if call is not None else None
    if who is None:
        return base.copy() if base is not None else None
    ctx = base.copy() if base is not None else contextvars.copy_context()
    ctx.run(identity.bind, who)
    return ctx


class Runtime:
    def __init__(self, root: str, namespace_flag: bool | None) -> None:
        self.root = os.path.abspath(root)
        self.namespace_flag = namespace_flag  # False when --no-namespace was given
        self.namespace = True
        self.packages: list[loader.Package] = []
        self.tables = Tables()
        self.calls: dict[Any, asyncio.Task[Any]] = {}
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self._rids = itertools.count(1)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.writer: Any = None
        self.reader: Any = None
        self.done: asyncio.Future[int] | None = None
        self.ops: dict[Any, Callable[[dict[str, Any]], None]] = {
            "call_tool": self.op_call_tool,
            "read_resource": self.op_read_resource,
            "get_prompt": self.op_get_prompt,
            "list": self.op_list,
            "ping": self.op_ping,
            "cancel": self.op_cancel,
            "response": self.op_response,
            "shutdown": self.op_shutdown,
        }

    # ------------------------------------------------------------------ loading
    async def load(self) -> dict[str, Any]:
        if self.root not in sys.path:
            sys.path.insert(0, self.root)
        try:
            manifest_ns, specs = loader.read_manifest(self.root)
        except loader.ManifestError as exc:
            manifest_ns, specs = None, []
            bad = loader.Package(loader.MANIFEST)
            bad.fail(str(exc))
            self.packages.append(bad)
        if manifest_ns is not None:
            self.namespace = manifest_ns
        if self.namespace_flag is False:
            self.namespace = False
        if specs is None:
            specs = loader.discover(self.root)
        programs = []  # stdio server programs start concurrently; imports and lifespans in order
        for spec in specs:
            if spec.command is not None:
                pkg = loader.stdio_package(spec, self.root)
                programs.append(self.loop.create_task(self._start(pkg), name=f"starting package {pkg.name}"))
            else:
                pkg = loader.import_package(spec)
                await self._start(pkg)
            self.packages.append(pkg)
        if programs:
            await asyncio.wait(programs)
        for pkg in self.packages:
            if pkg.adapter is not None:
                pkg.adapter.hint = self.hint
        identity.prepare()  # the SDK's auth classes now, not in the first call with a caller
        return await self.relist()

    async def _start(self, pkg: loader.Package) -> None:
        if pkg.adapter is None:
            return
        try:
            await pkg.adapter.start()
        except Exception as exc:
            error = pkg.adapter.start_error(exc)
            if error is not None:
                pkg.fail(loader.undrivable_message(pkg, error["message"]), error["traceback"])
            else:
                pkg.error = loader.error_from_exception(f"starting the lifespan of {pkg.server_ref} failed")
            pkg.adapter = None

    async def relist(self) -> dict[str, Any]:
        for pkg in self.packages:
            if pkg.adapter is None:
                continue
            pkg.error = None
            try:
                a = pkg.adapter
                pkg.tools = await a.list_tools()
                pkg.resources = await a.list_resources()
                pkg.resource_templates = await a.list_resource_templates()
                pkg.prompts = await a.list_prompts()
            except Exception:
                pkg.tools, pkg.resources, pkg.resource_templates, pkg.prompts = [], [], [], []
                pkg.error = loader.error_from_exception(f"listing the server {pkg.server_ref} failed")
                continue
            reason = pkg.adapter.unserved(pkg)
            if reason is not None:
                pkg.tools, pkg.resources, pkg.resource_templates, pkg.prompts = [], [], [], []
                pkg.fail(loader.undrivable_message(pkg, reason))
        tables, report = self._build(self.packages)
        self.tables = tables
        return report

    def _build(self, packages: list[loader.Package]) -> tuple[Tables, dict[str, Any]]:
        t = Tables()
        tool_owner: dict[str, str] = {}
        prompt_owner: dict[str, str] = {}
        resource_owner: dict[str, str] = {}
        template_owner: dict[str, str] = {}
        out = []
        ns = self.namespace
        for pkg in packages:
            entry: dict[str, Any] = {
                "name": pkg.name,
                "server": pkg.server_ref,
                "kind": pkg.kind,
                "error": pkg.error,
                "tools": [],
                "resources": [],
                "resource_templates": [],
                "prompts": [],
            }
            out.append(entry)
            if pkg.adapter is None or pkg.error is not None:
                continue
            tools = [dict(x, name=f"{pkg.name}.{x['name']}" if ns else x["name"]) for x in pkg.tools]
            prompts = [dict(x, name=f"{pkg.name}.{x['name']}" if ns else x["name"]) for x in pkg.prompts]
            problems = []
            for x in tools:
                if x["name"] in tool_owner:
                    problems.append(f"tool {x['name']!r} is also defined by package {tool_owner[x['name']]!r}")
            for x in prompts:
                if x["name"] in prompt_owner:
                    problems.append(f"prompt {x['name']!r} is also defined by package {prompt_owner[x['name']]!r}")
            for x in pkg.resources:
                if x.get("uri") in resource_owner:
                    problems.append(f"resource {x['uri']!r} is also defined by package {resource_owner[x['uri']]!r}")
            for x in pkg.resource_templates:
                if x.get("uriTemplate") in template_owner:
                    problems.append(
                        f"resource template {x['uriTemplate']!r} is also defined by package "
                        f"{template_owner[x['uriTemplate']]!r}"
                    )
            if problems:
                pkg.fail("duplicate names across packages: " + "; ".join(problems))
                entry["error"] = pkg.error
                continue
            adapter = pkg.adapter
            for x, orig in zip(tools, pkg.tools, strict=True):
                tool_owner[x["name"]] = pkg.name
                t.tools[x["name"]] = (adapter, orig["name"])
            for x, orig in zip(prompts, pkg.prompts, strict=True):
                prompt_owner[x["name"]] = pkg.name
                t.prompts[x["name"]] = (adapter, orig["name"])
            for x in pkg.resources:
                resource_owner[x["uri"]] = pkg.name
                t.resources[x["uri"]] = adapter
            for x in pkg.resource_templates:
                template_owner[x["uriTemplate"]] = pkg.name
                t.templates.append((compile_template(x["uriTemplate"]), adapter, x["uriTemplate"]))
            entry["tools"] = tools
            entry["resources"] = pkg.resources
            entry["resource_templates"] = pkg.resource_templates
            entry["prompts"] = prompts
        report = {"packages": out, "namespace": ns, "python": platform.python_version()}
        return t, report

    # ------------------------------------------------------------------ output
    def write(self, data: bytes, last: bool = False) -> None:
        """Frame and send ``data``; ``last``: no other answer is coming, so send it now."""
        self.writer.write(len(data).to_bytes(_HEADER, "big") + data, last)

    def send_obj(self, obj: dict[str, Any]) -> None:
        data = _utf8(dumps(obj))
        if len(data) > MAX_FRAME:
            rid = obj.get("id")
            log.error("dropping an oversized frame (%d bytes) for id %r", len(data), rid)
            if "result" in obj:
                self.send_error(rid, INTERNAL_ERROR, f"Result too large: {len(data)} bytes (max {MAX_FRAME})")
            return
        # With no other call in flight no other answer will join this one's write: sending
        # it now saves the event-loop iteration the deferred write would cost every call
        # at concurrency 1.
        self.write(data, not self.calls)

    def send_error(self, rid: Any, code: int, message: str, data: Any = None) -> None:
        err: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            err["data"] = data
        self.send_obj({"id": rid, "error": err})

    def hint(self, method: str) -> None:
        """Tell the node, outside any call, that what a package lists may have changed."""
        if self.writer is not None:
            self.send_obj({"notification": {"method": method}})

    def notify(self, call_id: Any, method: str, params: Any) -> None:
        if call_id not in self.calls:
            return  # the call finished or was cancelled: nobody to route it to
        note: dict[str, Any] = {"method": method}
        if params is not None:
            note["params"] = params
        self.send_obj({"id": call_id, "notification": note})

    async def request(self, call_id: Any, method: str, params: Any, timeout: float | None) -> Any:
        """A server->client request made by the tool of call `call_id`, answered by the node."""
        if call_id not in self.calls:
            raise RuntimeError("the call is no longer active")
        rid = next(self._rids)
        fut = self.loop.create_future()
        self.pending[rid] = fut
        req: dict[str, Any] = {"rid": rid, "method": method}
        if params is not None:
            req["params"] = params
        self.send_obj({"id": call_id, "request": req})
        try:
            if timeout:
                return await asyncio.wait_for(fut, timeout)
            return await fut
        except _NodeError as exc:
            raise _sdk_error(exc.error) from None
        finally:
            self.pending.pop(rid, None)

    # ------------------------------------------------------------------ input
    def on_frame(self, body: bytes) -> None:
        try:
            # What json.loads does for UTF-8 bytes, without its encoding sniffing per frame
            # (the node writes UTF-8); anything else still gets json.loads' own answer.
            obj = _decode(body.decode("utf-8", "surrogatepass"))
        except (ValueError, RecursionError):
            try:
                obj = json.loads(body)
            except (ValueError, RecursionError) as exc:  # UnicodeDecodeError; nesting past the stack
                self.send_error(None, PARSE_ERROR, f"Parse error: {exc}")
                return
        if type(obj) is not dict:
            self.send_error(None, PARSE_ERROR, "Parse error: a frame must be a JSON object")
            return
        op = obj.get("op")
        handler = self.ops.get(op) if isinstance(op, str) else None
        if handler is None:
            self.send_error(obj.get("id"), METHOD_NOT_FOUND, f"Unknown op: {op}")
            return
        try:
            handler(obj)
        except Exception:  # a bug here must not take the runtime down
            log.exception("handling op %r failed", op)
            if "id" in obj:
                self.send_error(obj.get("id"), INTERNAL_ERROR, "Internal error in the runtime")

    def on_oversized(self, size: int) -> None:
        log.error("frame of %d bytes exceeds the %d byte limit; exiting", size, MAX_FRAME)
        self.send_error(None, INVALID_REQUEST, f"Frame too large: {size} bytes (max {MAX_FRAME})")
        self.finish(2)

    def on_eof(self) -> None:
        self.finish(0)

    def finish(self, code: int) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_result(code)

    def _request_id(self, obj: dict[str, Any]) -> Any:
        rid = obj.get("id")
        if rid is None or isinstance(rid, (dict, list, bool)):
            self.send_error(None, INVALID_REQUEST, f"op {obj.get('op')!r} needs a scalar 'id'")
            return None
        if rid in self.calls:
            self.send_error(rid, INVALID_REQUEST, f"id {rid!r} is already in flight")
            return None
        return rid

    def _arguments(self, rid: Any, obj: dict[str, Any]) -> dict[str, Any] | None:
        args = obj.get("arguments")
        if args is None:
            return {}
        if type(args) is not dict:
            self.send_error(rid, INVALID_PARAMS, "'arguments' must be an object")
            return None
        return args

    def _call(self, rid: Any, obj: dict[str, Any], adapter: Adapter, method: str, params: Any) -> Call | None:
        """The call's state; None (after answering the error) when its ``caller`` is malformed."""
        meta = obj.get("meta")
        client = obj.get("client")
        inp = obj.get("input")
        try:
            caller = identity.parse(obj.get("caller"))
        except identity.BadCaller as exc:
            self.send_error(rid, INVALID_PARAMS, str(exc))
            return None
        if type(meta) is dict and identity.META_KEY in meta:
            # only the node says who is calling: never a client's own _meta
            meta = {k: v for k, v in meta.items() if k != identity.META_KEY}
        return Call(
            rid,
            self,
            method,
            params,
            meta if type(meta) is dict else None,
            client if type(client) is dict else None,
            adapter.types_mod,
            inp if type(inp) is dict else None,
            caller,
        )

    def spawn(self, rid: Any, coro: Any, adapter: Adapter | None = None, call: Call | None = None) -> None:
        ctx = call_context(adapter, call)
        if ctx is None:
            self.calls[rid] = self.loop.create_task(self.run_call(rid, coro))
        else:
            self.calls[rid] = self.loop.create_task(self.run_call(rid, coro), context=ctx)

    async def run_call(self, rid: Any, coro: Any) -> None:
        try:
            body = await coro
        except asyncio.CancelledError:
            # A cancel op already answered and unregistered the call; still
            # registered means shutdown: answer now.
            if self.calls.pop(rid, None) is not None:
                self.send_error(rid, REQUEST_CANCELLED, "Request cancelled")
            return
        except ProtocolError as exc:
            if self.calls.pop(rid, None) is not None:
                self.send_obj({"id": rid, "error": exc.to_json()})
            return
        except Exception as exc:
            log.exception("request %r failed", rid)
            if self.calls.pop(rid, None) is not None:
                self.send_error(rid, INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}")
            return
        if self.calls.pop(rid, None) is None:
            return
        data = _utf8('{"id":%s,"result":%s}' % (_id_json(rid), body))
        if len(data) > MAX_FRAME:
            log.error("result of request %r is %d bytes, over the frame limit", rid, len(data))
            self.send_error(rid, INTERNAL_ERROR, f"Result too large: {len(data)} bytes (max {MAX_FRAME})")
            return
        # With no other call in flight no other answer will join this one's write: sending
        # it now saves the event-loop iteration the deferred write would cost every call
        # at concurrency 1.
        self.write(data, not self.calls)

    # ------------------------------------------------------------------ ops
    def op_call_tool(self, obj: dict[str, Any]) -> None:
        rid = self._request_id(obj)
        if rid is None:
            return
        name = obj.get("name")
        entry = self.tables.tools.get(name) if type(name) is str else None
        if entry is None:
            self.send_error(rid, INVALID_PARAMS, f"Unknown tool: {name}")
            return
        args = self._arguments(rid, obj)
        if args is None:
            return
        adapter, orig = entry
        call = self._call(rid, obj, adapter, "tools/call", {"name": orig, "arguments": args})
        if call is not None:
            self.spawn(rid, adapter.call_tool(call, orig, args), adapter, call)

    def op_get_prompt(self, obj: dict[str, Any]) -> None:
        rid = self._request_id(obj)
        if rid is None:
            return
        name = obj.get("name")
        entry = self.tables.prompts.get(name) if type(name) is str else None
        if entry is None:
            self.send_error(rid, INVALID_PARAMS, f"Unknown prompt: {name}")
            return
        args = obj.get("arguments")
        if args is not None and type(args) is not dict:
            self.send_error(rid, INVALID_PARAMS, "'arguments' must be an object")
            return
        adapter, orig = entry
        call = self._call(rid, obj, adapter, "prompts/get", {"name": orig, "arguments": args})
        if call is not None:
            self.spawn(rid, adapter.get_prompt(call, orig, args), adapter, call)

    def op_read_resource(self, obj: dict[str, Any]) -> None:
        rid = self._request_id(obj)
        if rid is None:
            return
        uri = obj.get("uri")
        if type(uri) is not str:
            self.send_error(rid, INVALID_PARAMS, "'uri' must be a string")
            return
        tables = self.tables
        candidates: list[Adapter] = []
        static = tables.resources.get(uri)
        if static is not None:
            candidates.append(static)
        for regex, adapter, _template in tables.templates:
            if adapter not in candidates and regex.match(uri):
                candidates.append(adapter)
        if not candidates:
            self.send_error(rid, RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri})
            return
        call = self._call(rid, obj, candidates[0], "resources/read", {"uri": uri})
        if call is not None:
            self.spawn(rid, self._read_resource(call, uri, candidates), candidates[0], call)

    async def _read_resource(self, call: Call, uri: str, candidates: list[Adapter]) -> str:
        last: ProtocolError | None = None
        for i, adapter in enumerate(candidates):
            call.types_mod = adapter.types_mod
            try:
                if i == 0 or adapter.call_context is None:
                    return await adapter.read_resource(call, uri)
                # a later candidate runs in its own package's context, like the first
                ctx = call_context(adapter, call)
                return await self.loop.create_task(adapter.read_resource(call, uri), context=ctx)
            except ProtocolError as exc:
                if exc.code != RESOURCE_NOT_FOUND:
                    raise
                last = exc
        assert last is not None
        raise last

    def op_list(self, obj: dict[str, Any]) -> None:
        rid = self._request_id(obj)
        if rid is None:
            return
        self.spawn(rid, self._list())

    async def _list(self) -> str:
        return dumps(await self.relist())

    def op_ping(self, obj: dict[str, Any]) -> None:
        rid = obj.get("id")
        self.write(_utf8('{"id":%s,"result":{}}' % _id_json(rid)))

    def op_cancel(self, obj: dict[str, Any]) -> None:
        target = obj.get("target")
        if isinstance(target, (dict, list)):
            return
        task = self.calls.pop(target, None)
        if task is None:
            return  # already answered, or never existed: no reply
        self.send_error(target, REQUEST_CANCELLED, "Request cancelled")
        task.cancel()

    def op_response(self, obj: dict[str, Any]) -> None:
        rid = obj.get("rid")
        fut = self.pending.pop(rid, None) if not isinstance(rid, (dict, list)) else None
        if fut is None or fut.done():
            return
        if obj.get("error") is not None:
            fut.set_exception(_NodeError(obj["error"]))
        else:
            result = obj.get("result")
            fut.set_result(result if result is not None else {})

    def op_shutdown(self, obj: dict[str, Any]) -> None:
        self.finish(0)

    # ------------------------------------------------------------------ main
    async def run(self, in_fd: int, out_fd: int) -> int:
        self.loop = asyncio.get_running_loop()
        self.done = self.loop.create_future()
        self.writer = await _make_writer(self.loop, out_fd, self)
        report = await self.load()
        errors = [p["name"] for p in report["packages"] if p["error"]]
        log.info(
            "loaded %d package(s) from %s (namespace=%s)%s",
            len(report["packages"]),
            self.root,
            report["namespace"],
            f"; with errors: {', '.join(errors)}" if errors else "",
        )
        # Everything imported so far lives for the whole process: keep it out of the
        # cyclic GC's scans, and collect young objects less often (calls allocate a lot
        # of short-lived, acyclic objects).
        gc.collect()
        gc.freeze()
        gc.set_threshold(20000, 20, 20)
        self.send_obj({"op": "ready", "report": report})
        self.reader = await _make_reader(self.loop, in_fd, self)
        code = await self.done
        await self._shutdown()
        return code

    async def _shutdown(self) -> None:
        if self.reader is not None:
            self.reader.close()
        tasks = list(self.calls.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=2.0)
        for fut in self.pending.values():
            if not fut.done():
                fut.cancel()
        for pkg in self.packages:
            if pkg.adapter is not None:
                try:
                    await asyncio.wait_for(pkg.adapter.stop(), 2.0)
                except BaseException:  # noqa: BLE001 - best effort on the way out
                    log.warning("stopping package %r failed", pkg.name, exc_info=True)
        await self.writer.flush(5.0)


# ---------------------------------------------------------------------- I/O


class _FrameReader(asyncio.Protocol):
    """Splits the input byte stream into frames."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.buf = bytearray()
        self.transport: Any = None
        self.stopped = False

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self.stopped:
            return
        buf = self.buf
        if not buf and len(data) > _HEADER:
            # The common case, one whole frame in one read: no copy through the buffer.
            size = int.from_bytes(data[:_HEADER], "big")
            if len(data) == _HEADER + size:
                self.rt.on_frame(data[_HEADER:])
                return
        buf += data
        pos = 0
        end = len(buf)
        on_frame = self.rt.on_frame
        while end - pos >= _HEADER:
            size = int.from_bytes(buf[pos : pos + _HEADER], "big")
            if size > MAX_FRAME:
                self.stopped = True
                self.rt.on_oversized(size)
                return
            if end - pos - _HEADER < size:
                break
            start = pos + _HEADER
            body = bytes(buf[start : start + size])
            pos = start + size
            on_frame(body)
            if self.stopped:
                return
        if pos:
            del buf[:pos]

    def eof_received(self) -> bool:
        self.rt.on_eof()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.rt.on_eof()

    def close(self) -> None:
        self.stopped = True
        if self.transport is not None:
            self.transport.close()


class _ThreadReader:
    """Fallback for inputs asyncio cannot watch (regular files): a reader thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, proto: _FrameReader) -> None:
        self.proto = proto

        def pump() -> None:
            while True:
                try:
                    data = os.read(fd, 1 << 16)
                except OSError:
                    data = b""
                if not data:
                    loop.call_soon_threadsafe(proto.eof_received)
                    return
                loop.call_soon_threadsafe(proto.data_received, data)

        threading.Thread(target=pump, name="ramen-runtime-stdin", daemon=True).start()

    def close(self) -> None:
        self.proto.stopped = True


def _pollable(fd: int) -> bool:
    """Pipes and sockets go through the event loop; files, ttys and /dev/null cannot be epolled."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


async def _make_reader(loop: asyncio.AbstractEventLoop, fd: int, rt: Runtime) -> Any:
    proto = _FrameReader(rt)
    if not _pollable(fd):
        return _ThreadReader(loop, fd, proto)
    pipe = os.fdopen(fd, "rb", buffering=0, closefd=False)
    await loop.connect_read_pipe(lambda: proto, pipe)
    return proto


class _PipeWriter(asyncio.BaseProtocol):
    """Writes frames through an asyncio write-pipe transport.

    Frames are always written whole. Frames produced during one event-loop
    iteration are coalesced into a single write() (one syscall per batch, not per
    frame); they go out at the start of the next iteration, unless the writer is told
    that a frame is the last one for now (``last``): then it goes out at once, with
    anything still pending before it.
    """

    def __init__(self, rt: Runtime, loop: asyncio.AbstractEventLoop) -> None:
        self.rt = rt
        self.loop = loop
        self.transport: Any = None
        self.closed = False
        self.pending: list[bytes] = []

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.rt.finish(0)  # the node is gone

    def write(self, data: bytes, last: bool = False) -> None:
        if self.closed:
            return
        pending = self.pending
        pending.append(data)
        if last:
            self._send()  # a `_send` already scheduled finds nothing pending
        elif len(pending) == 1:
            self.loop.call_soon(self._send)

    def _send(self) -> None:
        pending = self.pending
        if not pending or self.closed:
            pending.clear()
            return
        data = pending[0] if len(pending) == 1 else b"".join(pending)
        pending.clear()
        self.transport.write(data)

    async def flush(self, timeout: float) -> None:
        self._send()
        deadline = self.loop.time() + timeout
        while not self.closed and self.transport.get_write_buffer_size() and self.loop.time() < deadline:
            await asyncio.sleep(0.005)


class _BlockingWriter:
    """Fallback for outputs asyncio cannot watch (regular files)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.closed = False

    def write(self, data: bytes, last: bool = False) -> None:
        view = memoryview(data)
        while view and not self.closed:
            try:
                n = os.write(self.fd, view)
            except OSError:
                self.closed = True
                return
            view = view[n:]

    async def flush(self, timeout: float) -> None:
        return None


async def _make_writer(loop: asyncio.AbstractEventLoop, fd: int, rt: Runtime) -> Any:
    if not _pollable(fd):
        return _BlockingWriter(fd)
    pipe = os.fdopen(fd, "wb", buffering=0, closefd=False)
    proto = _PipeWriter(rt, loop)
    await loop.connect_write_pipe(lambda: proto, pipe)
    return proto
