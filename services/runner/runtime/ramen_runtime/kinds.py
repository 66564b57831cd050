"""Which kind of MCP server an object is, and the adapter that drives it.

Kinds are told apart by the modules their classes come from; the runtime never imports
an SDK itself:

* ``mcpserver`` - the official SDK 2.x ``mcp.server.mcpserver.MCPServer``
* ``fastmcp1``  - the official SDK 1.x ``mcp.server.fastmcp.FastMCP``
* ``fastmcp``   - the standalone ``fastmcp`` package's ``FastMCP``
* ``lowlevel``  - the official SDK's ``mcp.server.lowlevel.Server`` (1.x or 2.x)
* ``generic``   - anything else with async ``list_tools`` / ``call_tool``

(``stdio`` packages are programs named in ``ramen.toml``, not objects: see adapter_stdio.py.)
"""

from __future__ import annotations

import inspect
from typing import Any

from .adapter_fastmcp import FastMCPAdapter
from .adapter_lowlevel import LowLevel1Adapter, LowLevel2Adapter
from .adapters import Adapter, FastMCP1Adapter, MCPServerAdapter, Undrivable

_LOWLEVEL_MODULE = "mcp.server.lowlevel.server"
_CLIENT_MODULES = ("mcp.client", "fastmcp.client")


def _modules(obj: Any) -> list[str]:
    return [getattr(cls, "__module__", "") or "" for cls in type(obj).__mro__]


def is_lowlevel(obj: Any) -> bool:
    return any(cls.__name__ == "Server" and cls.__module__ == _LOWLEVEL_MODULE for cls in type(obj).__mro__)


def client_class(obj: Any) -> str | None:
    """``module.Class`` when obj is an MCP *client* (it has async list_tools/call_tool too)."""
    if obj is None or isinstance(obj, type) or inspect.ismodule(obj):
        return None
    for cls in type(obj).__mro__:
        mod = getattr(cls, "__module__", "") or ""
        if any(mod == m or mod.startswith(m + ".") for m in _CLIENT_MODULES):
            return f"{cls.__module__}.{cls.__qualname__}"
    return None


def looks_like_server(obj: Any) -> bool:
    if obj is None or isinstance(obj, type) or inspect.ismodule(obj) or client_class(obj):
        return False
    if is_lowlevel(obj):
        return True
    return inspect.iscoroutinefunction(getattr(obj, "list_tools", None)) and inspect.iscoroutinefunction(
        getattr(obj, "call_tool", None)
    )


def detect_kind(obj: Any) -> str:
    if is_lowlevel(obj):
        return "lowlevel"
    for mod in _modules(obj):
        if mod.startswith("mcp.server.mcpserver"):
            return "mcpserver"
        if mod.startswith("mcp.server.fastmcp"):
            return "fastmcp1"
        if mod == "fastmcp" or mod.startswith("fastmcp."):
            return "fastmcp"
    return "generic"


ADAPTERS: dict[str, type[Adapter]] = {
    "mcpserver": MCPServerAdapter,
    "fastmcp1": FastMCP1Adapter,
    "fastmcp": FastMCPAdapter,
    "generic": Adapter,
}


def make_adapter(package: str, server: Any, server_ref: str) -> Adapter:
    """The adapter for ``server``; raises ``Undrivable`` when its API is not what the kind needs."""
    kind = detect_kind(server)
    if kind == "lowlevel":
        # 2.x registers handlers by method name, 1.x by request type
        v2 = hasattr(server, "get_request_handler")
        if not v2 and not isinstance(getattr(server, "request_handlers", None), dict):
            raise Undrivable("it has neither get_request_handler (SDK 2.x) nor a request_handlers dict (SDK 1.x)")
        cls: type[Adapter] = LowLevel2Adapter if v2 else LowLevel1Adapter
    else:
        cls = ADAPTERS[kind]
    adapter = cls(package, server, server_ref)
    adapter.check()
    return adapter


__all__ = ["client_class", "detect_kind", "is_lowlevel", "looks_like_server", "make_adapter", "Undrivable"]
