"""The standalone ``fastmcp`` package (kind ``fastmcp``, 4.x checked).

Driven through its public API (``list_*``, ``call_tool``, ``read_resource``,
``render_prompt``) inside ``fastmcp.server.dependencies.bind_request_context``, the
binding fastmcp's own protocol handlers use, so ``Context`` and the dependency helpers
see the request. The results are shaped for the wire the way fastmcp's handshake-era
handlers shape them (``mixins/mcp_operations.py``: non-object outputs wrapped as
``{"result": ...}``, unknown tools an error result).
"""

from __future__ import annotations

import sys
from typing import Any

from .adapters import (
    Adapter,
    Undrivable,
    _has_class_named,
    _has_class_named_type,
    _raw_meta_with_token,
    mcp_error,
    normalize_tool_output,
    tool_error_json,
)
from .protocol import INVALID_PARAMS, ProtocolError, dump_obj, result_json
from .session import Call, RequestContext

# what the adapter calls; checked at load so an incompatible fastmcp is a load error
_SERVER_API = (
    "list_tools",
    "list_resources",
    "list_resource_templates",
    "list_prompts",
    "call_tool",
    "read_resource",
    "render_prompt",
    "_lifespan_manager",
)


class FastMCPAdapter(Adapter):
    """Standalone ``fastmcp`` (4.x): public API plus its ``bind_request_context``."""

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
        self._extract_version = getattr(deps, "extract_version_spec", None)
        self._version_spec = getattr(versions, "VersionSpec", None)

    def check(self) -> None:
        version = getattr(sys.modules.get("fastmcp"), "__version__", "?")
        if self._bind_cm is None:
            raise Undrivable(
                f"fastmcp {version} has no fastmcp.server.dependencies.bind_request_context "
                "(the runtime drives fastmcp 4.x)"
            )
        missing = [m for m in _SERVER_API if not callable(getattr(self.server, m, None))]
        if missing:
            raise Undrivable(
                f"this fastmcp {version} {type(self.server).__name__} has no {', '.join(missing)} "
                "(the runtime drives fastmcp 4.x)"
            )

    def _lifespan_cm(self) -> Any:
        # fastmcp's own manager: the user lifespan, SharedContext, extensions, providers
        return self.server._lifespan_manager()

    async def start(self) -> None:
        await super().start()
        # What Context.lifespan_context reads first; the request context's copy is the fallback.
        self.lifespan_context = getattr(self.server, "_lifespan_result", None) or {}

    def _rc(self, call: Call) -> RequestContext:
        meta = _raw_meta_with_token(call)
        if isinstance(call.params, dict):
            call.params = dict(call.params, _meta=dict(call.meta or {}))
        return RequestContext(call, self.lifespan_context, meta)

    def _version(self, call: Call) -> dict[str, Any]:
        """``version=`` for a client that picked a component version in ``_meta`` (as fastmcp does)."""
        if not call.meta or self._extract_version is None or self._version_spec is None:
            return {}
        spec = self._extract_version(call.meta)
        return {"version": self._version_spec(eq=spec)} if spec else {}

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
                result = await self.server.call_tool(name, arguments, **self._version(call))
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
        result = self._wrapped(result)
        to_mcp = result.to_mcp_result
        out = to_mcp()
        if hasattr(out, "model_dump_json"):
            return result_json(out)
        return normalize_tool_output(out)

    @staticmethod
    def _wrapped(result: Any) -> Any:
        """A non-object structured result under the ``result`` key its listed schema advertises."""
        structured = getattr(result, "structured_content", None)
        raw = _has_class_named_type(type(result), "RawStructuredToolResult")
        if not raw and (structured is None or isinstance(structured, dict)):
            return result
        meta = dict(getattr(result, "meta", None) or {})
        fastmcp_meta = meta.get("fastmcp")
        if isinstance(fastmcp_meta, dict) and fastmcp_meta.get("wrap_result") is True:
            return result
        meta["fastmcp"] = {**(fastmcp_meta if isinstance(fastmcp_meta, dict) else {}), "wrap_result": True}
        plain = next((c for c in type(result).__mro__ if c.__name__ == "ToolResult"), type(result))
        return plain(
            content=result.content,
            structured_content={"result": structured},
            meta=meta,
            is_error=getattr(result, "is_error", False),
        )

    async def read_resource(self, call: Call, uri: str) -> str:
        rc = self._rc(call)
        try:
            with self._bind_cm(rc):
                result = await self.server.read_resource(uri, **self._version(call))
        except Exception as exc:
            raise self._resource_error(exc, uri) from exc
        if hasattr(result, "to_mcp_result"):
            return result_json(result.to_mcp_result(uri))
        return self._contents(uri, result)

    async def get_prompt(self, call: Call, name: str, arguments: dict[str, Any] | None) -> str:
        rc = self._rc(call)
        try:
            with self._bind_cm(rc):
                result = await self.server.render_prompt(name, arguments, **self._version(call))
        except Exception as exc:
            if _has_class_named(exc, "NotFoundError", "DisabledError"):
                raise ProtocolError(INVALID_PARAMS, f"Unknown prompt: {name!r}") from exc
            raise self._prompt_error(exc) from exc
        if hasattr(result, "to_mcp_prompt_result"):
            return result_json(result.to_mcp_prompt_result())
        return result_json(result)
