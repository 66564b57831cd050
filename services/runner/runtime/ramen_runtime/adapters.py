"""Adapters that drive one package's MCP server object: the base, SDK 2.x and SDK 1.x.

Each adapter turns the server's public async methods into plain JSON: lists of
MCP Tool/Resource/ResourceTemplate/Prompt objects, and CallToolResult /
ReadResourceResult / GetPromptResult JSON strings for calls. The base class also
holds the server's lifespan (lifespan.py) and maps SDK errors to protocol errors.

* ``Adapter``          - ``generic``: anything with async ``list_tools`` / ``call_tool``
* ``MCPServerAdapter`` - ``mcpserver``: SDK 2.x ``mcp.server.mcpserver.MCPServer``
* ``FastMCP1Adapter``  - ``fastmcp1``: SDK 1.x ``mcp.server.fastmcp.FastMCP``

The other kinds live in adapter_fastmcp.py, adapter_lowlevel.py and adapter_stdio.py;
kinds.py tells the kinds apart.
"""

from __future__ import annotations

import base64
import contextvars
import inspect
import json
import logging
import sys
from typing import Any

from .lifespan import Lifespan
from .protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    RESOURCE_NOT_FOUND,
    ProtocolError,
    dump_obj,
    dumps,
    result_json,
)
from .session import Call, Meta1, RequestContext

log = logging.getLogger("ramen_runtime")


# ---------------------------------------------------------------------------
# helpers


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


class Undrivable(Exception):
    """The server object is of a known kind but lacks what the runtime needs to drive it."""


class AsMCPError(Exception):
    """A ProtocolError in the ``.error`` shape of an SDK ``MCPError``, for ``Adapter._resource_error``."""

    def __init__(self, perr: ProtocolError) -> None:
        super().__init__(perr.message)
        self.error = perr


class Adapter:
    kind = "generic"
    # the context of the lifespan's holding task, copied for each call (see lifespan.py)
    call_context: contextvars.Context | None = None
    # set by the runtime once loaded: sends the node a call-less list_changed hint
    hint: Any = None

    def __init__(self, package: str, server: Any, server_ref: str) -> None:
        self.package = package
        self.server = server
        self.server_ref = server_ref
        self.lifespan_context: Any = {}
        self._lifespan: Lifespan | None = None
        self.types_mod = sys.modules.get("mcp_types") or sys.modules.get("mcp.types")

    def check(self) -> None:
        """Raise ``Undrivable`` when the object lacks an API this adapter calls (run at load)."""

    def start_error(self, exc: BaseException) -> dict[str, str] | None:
        """A load error of this adapter's own for ``start()`` raising exc; None: the lifespan's traceback."""
        return None

    def unserved(self, pkg: Any) -> str | None:
        """After listing: why what the server lists could not be served, or None."""
        if (pkg.resources or pkg.resource_templates) and not callable(getattr(self.server, "read_resource", None)):
            return "it lists resources but has no read_resource method"
        if pkg.prompts and not callable(getattr(self.server, "get_prompt", None)):
            return "it lists prompts but has no get_prompt method"
        return None

    # lifecycle -------------------------------------------------------------
    def _lifespan_cm(self) -> Any:
        """The async context manager to hold open from load to stop, or None."""
        settings = getattr(self.server, "settings", None)
        lifespan = getattr(settings, "lifespan", None)
        return lifespan(self.server) if lifespan is not None else None

    async def start(self) -> None:
        cm = self._lifespan_cm()
        if cm is None:
            return
        self._lifespan = Lifespan(self.package, cm)
        self.lifespan_context = await self._lifespan.enter()
        self.call_context = self._lifespan.context

    async def stop(self) -> None:
        held, self._lifespan = self._lifespan, None
        if held is not None:
            await held.exit()

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
            self._takes_input = "input_params" in params
        self._ctx_template = self._context_template()

    def _context_template(self) -> Any:
        """A ``Context`` without a request, to copy for each call; None: construct each one.

        Constructing the SDK's ``Context`` (a pydantic model) costs ~6 us per call: it runs
        pydantic's validator and sets each private attribute through ``__setattr__``. A copy
        of one built at load with the call's request context put in its place is the same
        object for a third of that. Used only when a copy is provably what the constructor
        makes (same class, fields, extras and private attributes, compared here), so an SDK
        whose ``Context`` does more gets constructed as before.
        """
        cls = self._ctx_cls
        if cls is None or not callable(getattr(cls, "__copy__", None)):
            return None
        try:
            template = cls(**self._ctx_kwargs)
            probe = object()
            built = cls(request_context=probe, **self._ctx_kwargs)
            copied = self._copy_context(template, probe)
            same = (
                type(copied) is type(built)
                and vars(copied) == vars(built)
                and copied.__pydantic_private__ == built.__pydantic_private__
                and copied.__pydantic_fields_set__ == built.__pydantic_fields_set__
                and copied.__pydantic_extra__ == built.__pydantic_extra__
            )
        except Exception:  # noqa: BLE001 - not the pydantic model we know: construct per call
            return None
        return template if same else None

    @staticmethod
    def _copy_context(template: Any, request_context: Any) -> Any:
        ctx = template.__copy__()
        ctx.__pydantic_private__["_request_context"] = request_context
        return ctx

    def check(self) -> None:
        if self._ctx_cls is None:
            raise Undrivable(f"no Context class next to {type(self.server).__qualname__} (SDK 2.x expected)")
        # the context is passed positionally after the method's own arguments
        for method, positional in (("call_tool", 3), ("read_resource", 2), ("get_prompt", 3)):
            params = inspect.signature(getattr(self.server, method)).parameters.values()
            if sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params) < positional:
                raise Undrivable(f"its {method} takes no context argument (SDK 2.x MCPServer expected)")

    def _context(self, call: Call) -> Any:
        meta = None
        if call.meta is not None:
            meta = dict(call.meta)
            if "progressToken" in meta:
                meta["progress_token"] = meta["progressToken"]
        rc = RequestContext(call, self.lifespan_context, meta)
        if self._ctx_cls is None:
            return None
        if call.input is not None and self._takes_input:
            return self._ctx_cls(request_context=rc, input_params=self._input_params(call), **self._ctx_kwargs)
        if self._ctx_template is not None:
            return self._copy_context(self._ctx_template, rc)
        return self._ctx_cls(request_context=rc, **self._ctx_kwargs)

    def _input_params(self, call: Call) -> Any:
        """A 2026-07-28 retry's inputResponses/requestState as the SDK's own params model."""
        model = getattr(self.types_mod, "InputResponseRequestParams", None)
        if model is None:
            return None
        try:
            return model.model_validate(call.input)
        except Exception as exc:  # pydantic's ValidationError: the client's answers are malformed
            raise ProtocolError(INVALID_PARAMS, f"invalid inputResponses or requestState: {exc}") from None

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

    def check(self) -> None:
        if self._request_ctx is None:
            raise Undrivable("mcp.server.lowlevel.server.request_ctx is missing (SDK 1.x expected)")

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


def _find_context_class(server: Any) -> Any:
    for cls in type(server).__mro__:
        mod = sys.modules.get(getattr(cls, "__module__", ""))
        ctx = getattr(mod, "Context", None) if mod is not None else None
        if isinstance(ctx, type):
            return ctx
    return None
