"""The official SDK's low-level ``mcp.server.lowlevel.Server`` (kind ``lowlevel``).

Such a server is a table of request handlers, not an object with ``call_tool`` methods,
so the runtime plays the SDK's own dispatcher: it builds the request the SDK would have
parsed from the wire, makes the request context available the way the SDK does, calls
the registered handler and passes its result through.

* SDK 1.x (``@server.list_tools()``, ``@server.call_tool()``, ...): handlers keyed by
  request type in ``server.request_handlers``, called with the typed request; the context
  is the ``request_ctx`` ContextVar behind ``server.request_context``.
* SDK 2.x (``Server(on_list_tools=..., on_call_tool=...)`` or ``add_request_handler``):
  ``server.get_request_handler(method)`` gives ``(params_type, handler)``, called as
  ``handler(ctx, params)`` with a ``ServerRequestContext``, inside ``server.middleware``
  like the SDK's ``ServerRunner`` does.

Listings follow ``nextCursor`` pages. Progress from a handler needs a progress token in
the request's ``_meta``; without a client token the runtime supplies a placeholder (the
node routes or drops progress, see docs/packages.md).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import sys
from typing import Any

from .adapters import Adapter, AsMCPError, Undrivable, _has_class_named, mcp_error
from .protocol import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, ProtocolError, dump_obj, dumps
from .session import Call, Meta1, RequestContext, listing_call

log = logging.getLogger("ramen_runtime")

MAX_PAGES = 10_000
# result fields of revisions newer than the node's 2025-11-25 (as protocol.result_json drops them)
_NEWER_FIELDS = ("resultType", "ttlMs", "cacheScope")
_LISTS = {
    "tools/list": "tools",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
    "prompts/list": "prompts",
}


def _wire(result: Any) -> dict[str, Any]:
    out = dump_obj(result)
    if not isinstance(out, dict):
        raise TypeError(f"handler returned {type(result).__name__}, not a result object")
    for key in _NEWER_FIELDS:
        out.pop(key, None)
    return out


def _error_data(result: Any) -> ProtocolError | None:
    if _has_class_named(result, "ErrorData"):
        return ProtocolError(result.code, result.message, dump_obj(getattr(result, "data", None)))
    return None


class _LowLevelAdapter(Adapter):
    kind = "lowlevel"

    def _has(self, method: str) -> bool:
        raise NotImplementedError

    async def _request(self, call: Call, method: str, params: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _lifespan_cm(self) -> Any:
        lifespan = getattr(self.server, "lifespan", None)
        return lifespan(self.server) if callable(lifespan) else None

    def _params(self, call: Call, params: dict[str, Any]) -> dict[str, Any]:
        meta = dict(call.meta) if isinstance(call.meta, dict) else {}
        if meta.get("progressToken") is None and call.id is not None:
            meta["progressToken"] = call.id  # placeholder: the node substitutes or drops
        if meta:
            params["_meta"] = meta
        call.params = params
        return params

    async def _list(self, method: str) -> list[dict[str, Any]]:
        if not self._has(method):
            return []
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            params = {"cursor": cursor} if cursor is not None else {}
            page = await self._call(listing_call(method, params, self.types_mod), method, params)
            items.extend(page.get(_LISTS[method]) or [])
            cursor = page.get("nextCursor")
            if not cursor:
                return items
            if cursor in seen:
                raise RuntimeError(f"{method} returned the cursor {cursor!r} twice")
            seen.add(cursor)
        raise RuntimeError(f"{method} still had more pages after {MAX_PAGES}")

    async def _call(self, call: Call, method: str, params: dict[str, Any]) -> dict[str, Any]:
        result = await self._request(call, method, self._params(call, params))
        perr = _error_data(result)
        if perr is not None:
            raise perr
        return _wire(result)

    def _protocol_error(self, exc: BaseException, what: str) -> ProtocolError:
        perr = mcp_error(exc)
        if perr is not None:
            return perr
        if _has_class_named(exc, "ValidationError"):
            return ProtocolError(INVALID_PARAMS, "Invalid request parameters")
        log.error("%s handler of package %r raised", what, self.package, exc_info=exc)
        return ProtocolError(INTERNAL_ERROR, str(exc) or type(exc).__name__)

    async def list_tools(self) -> list[dict[str, Any]]:
        return await self._list("tools/list")

    async def list_resources(self) -> list[dict[str, Any]]:
        return await self._list("resources/list")

    async def list_resource_templates(self) -> list[dict[str, Any]]:
        return await self._list("resources/templates/list")

    async def list_prompts(self) -> list[dict[str, Any]]:
        return await self._list("prompts/list")

    def unserved(self, pkg: Any) -> str | None:
        needs = (
            (pkg.tools, "tools/call"),
            (pkg.resources or pkg.resource_templates, "resources/read"),
            (pkg.prompts, "prompts/get"),
        )
        for listed, method in needs:
            if listed and not self._has(method):
                return f"it lists {method.split('/')[0]} but registers no {method} handler"
        return None

    async def call_tool(self, call: Call, name: str, arguments: dict[str, Any]) -> str:
        try:
            return dumps(await self._call(call, "tools/call", {"name": name, "arguments": arguments}))
        except ProtocolError:
            raise
        except Exception as exc:
            raise self._protocol_error(exc, f"tools/call {name!r}") from exc

    async def read_resource(self, call: Call, uri: str) -> str:
        try:
            return dumps(await self._call(call, "resources/read", {"uri": uri}))
        except Exception as exc:
            if isinstance(exc, ProtocolError):
                exc = AsMCPError(exc)
            raise self._resource_error(exc, uri) from exc

    async def get_prompt(self, call: Call, name: str, arguments: dict[str, Any] | None) -> str:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        try:
            return dumps(await self._call(call, "prompts/get", params))
        except ProtocolError:
            raise
        except Exception as exc:
            raise self._prompt_error(exc) from exc


class LowLevel1Adapter(_LowLevelAdapter):
    """SDK 1.x: ``server.request_handlers[RequestType](request)`` with ``request_ctx`` set."""

    _REQUESTS = {
        "tools/list": "ListToolsRequest",
        "tools/call": "CallToolRequest",
        "resources/list": "ListResourcesRequest",
        "resources/templates/list": "ListResourceTemplatesRequest",
        "resources/read": "ReadResourceRequest",
        "prompts/list": "ListPromptsRequest",
        "prompts/get": "GetPromptRequest",
    }

    def __init__(self, package: str, server: Any, server_ref: str) -> None:
        super().__init__(package, server, server_ref)
        self.types_mod = sys.modules.get("mcp.types")
        self._request_ctx = getattr(sys.modules.get("mcp.server.lowlevel.server"), "request_ctx", None)

    def check(self) -> None:
        if self._request_ctx is None or self.types_mod is None:
            raise Undrivable("mcp.server.lowlevel.server.request_ctx or mcp.types is missing (SDK 1.x expected)")
        missing = [n for n in self._REQUESTS.values() if not hasattr(self.types_mod, n)]
        if missing:
            raise Undrivable(f"mcp.types has no {', '.join(missing)}")

    def _has(self, method: str) -> bool:
        return getattr(self.types_mod, self._REQUESTS[method]) in self.server.request_handlers

    async def _request(self, call: Call, method: str, params: dict[str, Any]) -> Any:
        request = getattr(self.types_mod, self._REQUESTS[method]).model_validate({"method": method, "params": params})
        raw = dict(params.get("_meta") or {})
        token = raw.pop("progressToken", None)
        token_ctx = self._request_ctx.set(RequestContext(call, self.lifespan_context, Meta1(raw, token)))
        try:
            result = await self.server.request_handlers[type(request)](request)
        finally:
            self._request_ctx.reset(token_ctx)
        return getattr(result, "root", result)  # ServerResult wraps the result model


def _apply_middleware(middleware: Any, call_next: Any, ctx: Any) -> Any:
    return middleware(ctx, call_next)


class LowLevel2Adapter(_LowLevelAdapter):
    """SDK 2.x: ``server.get_request_handler(method)``, a ``ServerRequestContext``, ``server.middleware``."""

    def __init__(self, package: str, server: Any, server_ref: str) -> None:
        super().__init__(package, server, server_ref)
        self.types_mod = sys.modules.get("mcp_types") or self.types_mod
        self._ctx_cls = getattr(sys.modules.get("mcp.server.context"), "ServerRequestContext", None)
        fields = dataclasses.fields(self._ctx_cls) if dataclasses.is_dataclass(self._ctx_cls) else ()
        self._ctx_fields = {f.name for f in fields}

    def check(self) -> None:
        if not self._ctx_fields:
            raise Undrivable("mcp.server.context.ServerRequestContext is missing (SDK 2.x expected)")

    def _has(self, method: str) -> bool:
        return self.server.get_request_handler(method) is not None

    def _context(self, call: Call, method: str, params: dict[str, Any]) -> Any:
        meta = None
        if "_meta" in params:
            meta = dict(params["_meta"])
            if "progressToken" in meta:
                meta["progress_token"] = meta.pop("progressToken")
        rc = RequestContext(call, self.lifespan_context, meta)
        values = {
            "session": rc.session,
            "lifespan_context": self.lifespan_context,
            "protocol_version": rc.protocol_version,
            "method": method,
            "params": params,
            "request_id": call.id,
            "meta": meta,
            "request": rc.request,
        }
        return self._ctx_cls(**{k: v for k, v in values.items() if k in self._ctx_fields})

    async def _request(self, call: Call, method: str, params: dict[str, Any]) -> Any:
        async def handle(ctx: Any) -> Any:
            entry = self.server.get_request_handler(ctx.method)
            if entry is None:
                raise ProtocolError(METHOD_NOT_FOUND, "Method not found", ctx.method)
            typed = entry.params_type.model_validate({} if ctx.params is None else ctx.params, by_name=False)
            return await entry.handler(ctx, typed)

        chain: Any = handle
        for middleware in reversed(list(getattr(self.server, "middleware", None) or [])):
            chain = functools.partial(_apply_middleware, middleware, chain)
        return await chain(self._context(call, method, params))
