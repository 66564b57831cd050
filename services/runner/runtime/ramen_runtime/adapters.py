"""Adapters that drive one package's MCP server object.

Supported server objects (detected by the modules their classes live in, never
by importing an SDK here):

* ``mcpserver`` - the official SDK 2.x ``mcp.server.mcpserver.MCPServer``
* ``fastmcp1``  - the official SDK 1.x ``mcp.server.fastmcp.FastMCP``
* ``fastmcp``   - the standalone ``fastmcp`` package's ``FastMCP``
* ``generic``   - anything else with async ``list_tools`` / ``call_tool``

Each adapter turns the server's public async methods into plain JSON: lists of
MCP Tool/Resource/ResourceTemplate/Prompt objects, and CallToolResult /
ReadResourceResult / GetPromptResult JSON strings for calls.
"""

from __future__ import annotations

import base64
import inspect
import json
import logging
import sys
from typing import Any

from .protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    RESOURCE_NOT_FOUND,
    ProtocolError,
    dump_obj,
    dumps,
    result_dict,
    result_json,
)
from .session import Call, Meta1, RequestContext

log = logging.getLogger("ramen_runtime")


# ---------------------------------------------------------------------------
# helpers


def looks_like_server(obj: Any) -> bool:
    if obj is None or isinstance(obj, type) or inspect.ismodule(obj):
        return False
    return inspect.iscoroutinefunction(getattr(obj, "list_tools", None)) and inspect.iscoroutinefunction(
        getattr(obj, "call_tool", None)
    )


def detect_kind(obj: Any) -> str:
    for cls in type(obj).__mro__:
        mod = getattr(cls, "__module__", "") or ""
        if mod.startswith("mcp.server.mcpserver"):
            return "mcpserver"
        if mod.startswith("mcp.server.fastmcp"):
            return "fastmcp1"
        if mod == "fastmcp" or mod.startswith("fastmcp."):
            return "fastmcp"
    return "generic"


def _has_class_named(exc: BaseException, *names: str) -> bool:
    return any(c.__name__ in names for c in type(exc).__mro__)


def mcp_error(exc: BaseException) -> ProtocolError | None:
    """An SDK ``MCPError``/``McpError`` (anything carrying ``.error`` ErrorData) -> ProtocolError."""
    err = getattr(exc, "error", None)
    code = getattr(err, "code", None)
    if isinstance(code, int) and not isinstance(code, bool):
        return ProtocolError(code, str(getattr(err, "message", "") or exc), dump_obj(getattr(err, "data", None)))
    return None


def tool_error_json(text: str) -> str:
    return dumps({"content": [{"type": "text", "text": text}], "isError": True})


def contents_json(uri: str, items: Any) -> str:
    """``Iterable[ReadResourceContents]`` -> ReadResourceResult JSON (as the SDKs' handlers build it)."""
    contents = []
    for item in items:
        content = getattr(item, "content", item)
        mime = getattr(item, "mime_type", None)
        meta = getattr(item, "meta", None)
        if isinstance(content, (bytes, bytearray, memoryview)):
            entry = {
                "uri": uri,
                "mimeType": mime or "application/octet-stream",
                "blob": base64.b64encode(bytes(content)).decode("ascii"),
            }
        else:
            entry = {"uri": uri, "mimeType": mime or "text/plain", "text": content}
        if meta:
            entry["_meta"] = dump_obj(meta)
        contents.append(entry)
    return dumps({"contents": contents})


def normalize_tool_output(results: Any) -> str:
    """What a 1.x-style ``call_tool`` returns -> CallToolResult JSON (the SDK 1.x lowlevel rules)."""
    if hasattr(results, "model_dump_json") and _has_class_named_type(type(results), "CallToolResult"):
        return result_json(results)
    structured = None
    if isinstance(results, tuple) and len(results) == 2:
        unstructured, structured = results
    elif isinstance(results, dict):
        structured = results
        unstructured = [{"type": "text", "text": json.dumps(results, indent=2)}]
    elif hasattr(results, "__iter__") and not isinstance(results, (str, bytes)):
        unstructured = results
    elif hasattr(results, "model_dump_json"):
        return result_json(results)
    else:
        return tool_error_json(f"Unexpected return type from tool: {type(results).__name__}")
    out: dict[str, Any] = {"content": [dump_obj(c) for c in unstructured]}
    if structured is not None:
        out["structuredContent"] = dump_obj(structured)
    out["isError"] = False
    return dumps(out)


def _has_class_named_type(cls: type, name: str) -> bool:
    return any(c.__name__ == name for c in cls.__mro__)


def _raw_meta_with_token(call: Call) -> dict[str, Any]:
    raw = dict(call.meta) if isinstance(call.meta, dict) else {}
    token = raw.get("progressToken")
    # With no client token the node drops progress it cannot route; a
    # placeholder keeps SDKs that gate on a token (1.x, fastmcp) reporting.
    raw["progress_token"] = token if token is not None else call.id
    return raw


# ---------------------------------------------------------------------------
# adapters


class Adapter:
    kind = "generic"

    def __init__(self, package: str, server: Any, server_ref: str) -> None:
        self.package = package
        self.server = server
        self.server_ref = server_ref
        self.lifespan_context: Any = {}
        self._lifespan_cm: Any = None
        self.types_mod = sys.modules.get("mcp_types") or sys.modules.get("mcp.types")

    # lifecycle -------------------------------------------------------------
    async def start(self) -> None:
        settings = getattr(self.server, "settings", None)
        lifespan = getattr(settings, "lifespan", None)
        if lifespan is not None:
            self._lifespan_cm = lifespan(self.server)
            self.lifespan_context = await self._lifespan_cm.__aenter__()

    async def stop(self) -> None:
        cm, self._lifespan_cm = self._lifespan_cm, None
        if cm is not None:
            await cm.__aexit__(None, None, None)

    # listing ---------------------------------------------------------------
    async def _list(self, method: str) -> list[dict[str, Any]]:
        fn = getattr(self.server, method, None)
        if fn is None:
            return []
        return [dump_obj(item) for item in await fn()]

    async def list_tools(self) -> list[dict[str, Any]]:
        return await self._list("list_tools")

    async def list_resources(self) -> list[dict[str, Any]]:
        return await self._list("list_resources")

    async def list_resource_templates(self) -> list[dict[str, Any]]:
        return await self._list("list_resource_templates")

    async def list_prompts(self) -> list[dict[str, Any]]:
        return await self._list("list_prompts")

    # calls (generic: no context) ---------------------------------------------
    async def call_tool(self, call: Call, name: str, arguments: dict[str, Any]) -> str:
        try:
            results = await self.server.call_tool(name, arguments)
        except Exception as exc:
            perr = mcp_error(exc)
            if perr is not None:
                raise perr from exc
            log.info("tool %r of package %r failed: %r", name, self.package, str(exc))
            return tool_error_json(str(exc))
        return normalize_tool_output(results)

    async def read_resource(self, call: Call, uri: str) -> str:
        try:
            items = await self.server.read_resource(uri)
        except Exception as exc:
            raise self._resource_error(exc, uri) from exc
        return self._contents(uri, items)

    async def get_prompt(self, call: Call, name: str, arguments: dict[str, Any] | None) -> str:
        try:
            result = await self.server.get_prompt(name, arguments)
        except Exception as exc:
            raise self._prompt_error(exc) from exc
        return result_json(result)

    # error mapping -------------------------------------------------------------
    def _resource_error(self, exc: BaseException, uri: str) -> ProtocolError:
        perr = mcp_error(exc)
        if perr is not None:
            if perr.code == INVALID_PARAMS and "not found" in perr.message.lower():
                return ProtocolError(RESOURCE_NOT_FOUND, perr.message, {"uri": uri})
            return perr
        text = str(exc)
        if _has_class_named(exc, "ResourceNotFoundError", "NotFoundError", "DisabledError") or text.startswith(
            "Unknown resource"
        ):
            return ProtocolError(RESOURCE_NOT_FOUND, text or f"Resource not found: {uri}", {"uri": uri})
        log.warning("resource %r of package %r failed: %r", uri, self.package, text)
        return ProtocolError(INTERNAL_ERROR, text or f"Error reading resource {uri}", {"uri": uri})

    def _prompt_error(self, exc: BaseException) -> ProtocolError:
        perr = mcp_error(exc)
        if perr is not None:
            return perr
        return ProtocolError(INVALID_PARAMS, str(exc) or type(exc).__name__)

    def _contents(self, uri: str, items: Any) -> str:
        if hasattr(items, "model_dump_json"):  # a full result model (e.g. InputRequiredResult)
            return result_json(items)
        return contents_json(uri, items)


class MCPServerAdapter(Adapter):
    """SDK 2.x ``MCPServer``: its methods take the SDK ``Context`` explicitly."""

    kind = "mcpserver"

    def __init__(self, package: str, server: Any, server_ref: str) -> None:
        super().__init__(package, server, server_ref)
        self.types_mod = sys.modules.get("mcp_types") or self.types_mod
        self._ctx_cls = _find_context_class(server)
        self._ctx_kwargs: dict[str, Any] = {}
        if self._ctx_cls is not None:
            params = inspect.signature(self._ctx_cls.__init__).parameters
            if "mcp_server" in params:
                self._ctx_kwargs["mcp_server"] = server
            if "subscriptions" in params:
                self._ctx_kwargs["subscriptions"] = getattr(server, "_subscriptions", None)

    def _context(self, call: Call) -> Any:
        meta = None
        if call.meta is not None:
            meta = dict(call.meta)
            if "progressToken" in meta:
                meta["progress_token"] = meta["progressToken"]
        rc = RequestContext(call, self.lifespan_context, meta)
        if self._ctx_cls is None:
            return None
        return self._ctx_cls(request_context=rc, **self._ctx_kwargs)

    async def call_tool(self, call: Call, name: str, arguments: dict[str, Any]) -> str:
        ctx = self._context(call)
        try:
            result = await self.server.call_tool(name, arguments, ctx)
        except Exception as exc:
            perr = mcp_error(exc)
            if perr is not None:
                raise perr from exc
            if _has_class_named(exc, "ToolError") and not _has_class_named(exc, "UnexpectedToolError"):
                log.info("tool %r of package %r failed: %r", name, self.package, str(exc))
            else:
                log.error("tool %r of package %r raised an unexpected exception", name, self.package, exc_info=exc)
            return tool_error_json(str(exc))
        return result_json(result)

    async def read_resource(self, call: Call, uri: str) -> str:
        ctx = self._context(call)
        try:
            items = await self.server.read_resource(uri, ctx)
        except Exception as exc:
            raise self._resource_error(exc, uri) from exc
        return self._contents(uri, items)

    async def get_prompt(self, call: Call, name: str, arguments: dict[str, Any] | None) -> str:
        ctx = self._context(call)
        try:
            result = await self.server.get_prompt(name, arguments, ctx)
        except Exception as exc:
            raise self._prompt_error(exc) from exc
        return result_json(result)


class FastMCP1Adapter(Adapter):
    """SDK 1.x ``FastMCP``: reads the request context from the lowlevel ``request_ctx`` ContextVar."""

    kind = "fastmcp1"

    def __init__(self, package: str, server: Any, server_ref: str) -> None:
        super().__init__(package, server, server_ref)
        self.types_mod = sys.modules.get("mcp.types") or self.types_mod
        lowlevel = sys.modules.get("mcp.server.lowlevel.server")
        self._request_ctx = getattr(lowlevel, "request_ctx", None)

    def _bind(self, call: Call) -> Any:
        raw = _raw_meta_with_token(call)
        token = raw.pop("progress_token")
        rc = RequestContext(call, self.lifespan_context, Meta1(raw, token))
        if self._request_ctx is not None:
            self._request_ctx.set(rc)  # each call runs in its own task: its own context copy
        return rc

    async def call_tool(self, call: Call, name: str, arguments: dict[str, Any]) -> str:
        self._bind(call)
        return await super().call_tool(call, name, arguments)

    async def read_resource(self, call: Call, uri: str) -> str:
        self._bind(call)
        return await super().read_resource(call, uri)

    async def get_prompt(self, call: Call, name: str, arguments: dict[str, Any] | None) -> str:
        self._bind(call)
        return await super().get_prompt(call, name, arguments)


class FastMCPAdapter(Adapter):
    """Standalone ``fastmcp`` (2.x+/4.x): public API plus its ``bind_request_context``."""

    kind = "fastmcp"

    def __init__(self, package: str, server: Any, server_ref: str) -> None:
        super().__init__(package, server, server_ref)
        self.types_mod = sys.modules.get("mcp_types") or self.types_mod
        deps = sys.modules.get("fastmcp.server.dependencies")
        self._bind_cm = getattr(deps, "bind_request_context", None)
        versions = sys.modules.get("fastmcp.utilities.versions")
        self._dedupe = getattr(versions, "dedupe_with_versions", None)
        schema = sys.modules.get("fastmcp.utilities.json_schema")
        self._is_object_schema = getattr(schema, "is_object_schema", None)
        self._lifespan_gen: Any = None

    async def start(self) -> None:
        manager = getattr(self.server, "_lifespan_manager", None)
        if manager is not None:
            self._lifespan_gen = manager()
            await self._lifespan_gen.__aenter__()

    async def stop(self) -> None:
        gen, self._lifespan_gen = self._lifespan_gen, None
        if gen is not None:
            await gen.__aexit__(None, None, None)

    def _rc(self, call: Call) -> RequestContext:
        meta = _raw_meta_with_token(call)
        if isinstance(call.params, dict):
            call.params = dict(call.params, _meta=dict(call.meta or {}))
        return RequestContext(call, self.lifespan_context, meta)

    def _deduped(self, items: list[Any], key: Any) -> list[Any]:
        if self._dedupe is not None:
            return list(self._dedupe(items, key))
        seen: dict[Any, Any] = {}
        for item in items:
            seen.setdefault(key(item), item)
        return list(seen.values())

    async def list_tools(self) -> list[dict[str, Any]]:
        tools = self._deduped(list(await self.server.list_tools()), lambda t: t.name)
        out = []
        for tool in tools:
            if not hasattr(tool, "to_mcp_tool"):
                out.append(dump_obj(tool))
                continue
            schema = getattr(tool, "output_schema", None)
            kwargs: dict[str, Any] = {"name": tool.name}
            if schema is not None:
                kwargs["outputSchema"] = self._legacy_output_schema(schema)
            out.append(dump_obj(tool.to_mcp_tool(**kwargs)))
        return out

    def _legacy_output_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        # Mirrors fastmcp's handshake-era rule: MCP 2025-11-25 wants an object at the root.
        is_obj = self._is_object_schema(schema) if self._is_object_schema else schema.get("type") == "object"
        if is_obj:
            return schema if schema.get("type") == "object" else {**schema, "type": "object"}
        wrapped = {
            "type": "object",
            "properties": {"result": schema},
            "required": ["result"],
            "x-fastmcp-wrap-result": True,
        }
        for key in ("$defs", "definitions"):
            if key in schema:
                wrapped[key] = schema[key]
        return wrapped

    async def list_resources(self) -> list[dict[str, Any]]:
        items = self._deduped(list(await self.server.list_resources()), lambda r: str(r.uri))
        return [dump_obj(r.to_mcp_resource(uri=str(r.uri)) if hasattr(r, "to_mcp_resource") else r) for r in items]

    async def list_resource_templates(self) -> list[dict[str, Any]]:
        items = self._deduped(list(await self.server.list_resource_templates()), lambda t: t.uri_template)
        return [
            dump_obj(t.to_mcp_template(uri_template=t.uri_template) if hasattr(t, "to_mcp_template") else t)
            for t in items
        ]

    async def list_prompts(self) -> list[dict[str, Any]]:
        items = self._deduped(list(await self.server.list_prompts()), lambda p: p.name)
        return [dump_obj(p.to_mcp_prompt(name=p.name) if hasattr(p, "to_mcp_prompt") else p) for p in items]

    async def call_tool(self, call: Call, name: str, arguments: dict[str, Any]) -> str:
        rc = self._rc(call)
        try:
            with self._bind_cm(rc):
                result = await self.server.call_tool(name, arguments)
        except Exception as exc:
            perr = mcp_error(exc)
            if perr is not None:
                raise perr from exc
            if _has_class_named(exc, "NotFoundError", "DisabledError"):
                return tool_error_json(f"Unknown tool: {name!r}")
            return tool_error_json(str(exc))
        if _has_class_named_type(type(result), "InputRequiredToolResult"):
            raise ProtocolError(
                INVALID_PARAMS,
                f"Tool {name!r} returned an InputRequiredResult, which needs MCP 2026-07-28; "
                "use ctx.elicit() on 2025-11-25",
            )
        to_mcp = getattr(result, "to_mcp_result", None)
        if to_mcp is None:
            return result_json(result)
        structured = getattr(result, "structured_content", None)
        if structured is not None and not isinstance(structured, dict):
            result = type(result)(
                content=result.content,
                structured_content={"result": structured},
                meta=getattr(result, "meta", None),
                is_error=getattr(result, "is_error", False),
            )
            to_mcp = result.to_mcp_result
        out = to_mcp()
        if hasattr(out, "model_dump_json"):
            return result_json(out)
        return normalize_tool_output(out)

    async def read_resource(self, call: Call, uri: str) -> str:
        rc = self._rc(call)
        try:
            with self._bind_cm(rc):
                result = await self.server.read_resource(uri)
        except Exception as exc:
            raise self._resource_error(exc, uri) from exc
        if hasattr(result, "to_mcp_result"):
            return result_json(result.to_mcp_result(uri))
        return self._contents(uri, result)

    async def get_prompt(self, call: Call, name: str, arguments: dict[str, Any] | None) -> str:
        rc = self._rc(call)
        try:
            with self._bind_cm(rc):
                result = await self.server.render_prompt(name, arguments)
        except Exception as exc:
            if _has_class_named(exc, "NotFoundError", "DisabledError"):
                raise ProtocolError(INVALID_PARAMS, f"Unknown prompt: {name!r}") from exc
            raise self._prompt_error(exc) from exc
        if hasattr(result, "to_mcp_prompt_result"):
            return result_json(result.to_mcp_prompt_result())
        return result_json(result)


def _find_context_class(server: Any) -> Any:
    for cls in type(server).__mro__:
        mod = sys.modules.get(getattr(cls, "__module__", ""))
        ctx = getattr(mod, "Context", None) if mod is not None else None
        if isinstance(ctx, type):
            return ctx
    return None


ADAPTERS: dict[str, type[Adapter]] = {
    "mcpserver": MCPServerAdapter,
    "fastmcp1": FastMCP1Adapter,
    "fastmcp": FastMCPAdapter,
    "generic": Adapter,
}


def make_adapter(package: str, server: Any, server_ref: str) -> Adapter:
    return ADAPTERS[detect_kind(server)](package, server, server_ref)


__all__ = ["Adapter", "make_adapter", "looks_like_server", "detect_kind", "result_dict"]
