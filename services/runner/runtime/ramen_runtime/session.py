"""Duck-typed per-call request context and session.

The SDKs' `Context` objects (what a tool receives as `ctx`) reach the client
through `ctx.request_context.session`. Instead of a real MCP session we hand
them a `CallSession`, which turns what a tool does into frames to the node:

* progress (`ctx.report_progress`)       -> `{"id":N,"notification":{"method":"notifications/progress",...}}`
* logging  (`ctx.info/debug/...`)        -> `{"id":N,"notification":{"method":"notifications/message",...}}`
* other notifications (list_changed...)  -> `{"id":N,"notification":{...}}`
* server->client requests (sampling, elicitation, roots, ping)
                                         -> `{"id":N,"request":{"rid":K,"method":...,"params":...}}`

It implements the union of the session surface used by the SDK 2.x
`MCPServer` Context, the SDK 1.x `FastMCP` Context and the standalone
`fastmcp` Context. The typed helpers that only *build* a request
(`create_message`, `elicit_form`, ...) are borrowed from the SDK's own
`ServerSession` class at call time (looked up in `sys.modules`, never imported
by the runtime), so their request shapes are exactly the SDK's.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from . import identity
from .protocol import dump_obj

DEFAULT_PROTOCOL_VERSION = "2025-11-25"
_UNSET: Any = object()  # "not computed yet", distinct from a computed None

# ServerSession methods that only build a typed request/notification and then
# call send_request/send_notification: borrowed from the SDK class.
_BORROWED = frozenset(
    {
        "create_message",
        "list_roots",
        "elicit",
        "elicit_form",
        "elicit_url",
        "send_ping",
        "send_resource_updated",
        "send_resource_list_changed",
        "send_tool_list_changed",
        "send_prompt_list_changed",
        "send_elicit_complete",
    }
)


def _sdk_session_class() -> Any:
    mod = sys.modules.get("mcp.server.session")
    return getattr(mod, "ServerSession", None) if mod is not None else None


class Call:
    """State of one in-flight request from the node."""

    __slots__ = ("id", "rt", "meta", "client", "types_mod", "params", "method", "input", "caller")

    def __init__(
        self,
        rid: Any,
        rt: Any,
        method: str,
        params: Any,
        meta: Any,
        client: Any,
        types_mod: Any,
        input: Any = None,
        caller: Any = None,
    ) -> None:
        self.id = rid
        self.rt = rt
        self.method = method
        self.params = params
        self.meta = meta  # the client's `_meta` object as the node passed it, or None
        self.client = client  # optional {"protocolVersion","capabilities","clientInfo"} from the node
        self.types_mod = types_mod
        # a 2026-07-28 retry's {"inputResponses", "requestState"} (multi-round-trip), or None
        self.input = input
        # who is calling (identity.parse: a read-only mapping), or None: anonymous
        self.caller = caller


class _NoClient:
    """The node side of a call made by the runtime itself (listing): nobody to notify or ask."""

    def notify(self, call_id: Any, method: str, params: Any) -> None:
        return None

    async def request(self, call_id: Any, method: str, params: Any, timeout: float | None) -> Any:
        raise RuntimeError(f"{method} is not available while the runtime lists the server")


def listing_call(method: str, params: Any, types_mod: Any) -> Call:
    """A ``Call`` for a request the runtime makes itself (``tools/list``...), for SDKs that need a context."""
    return Call(None, _NoClient(), method, params, None, None, types_mod)


class Meta1:
    """`RequestParams.Meta` look-alike for SDK 1.x (attribute access, camelCase)."""

    def __init__(self, raw: dict[str, Any], progress_token: Any) -> None:
        self.__dict__.update(raw)
        self.progressToken = progress_token

    def __getattr__(self, name: str) -> Any:  # unknown meta keys read as None
        return None


class RequestContext:
    """Stands in for SDK 2.x `ServerRequestContext` and 1.x `RequestContext`."""

    __slots__ = (
        "session",
        "lifespan_context",
        "protocol_version",
        "method",
        "params",
        "request_id",
        "meta",
        "close_sse_stream",
        "close_standalone_sse_stream",
        "experimental",
        "_srctx",
        "_call",
        "_request",
    )

    def __init__(self, call: Call, lifespan_context: Any, meta: Any) -> None:
        self.session = CallSession(call)
        self.lifespan_context = lifespan_context
        self.protocol_version = self.session.protocol_version
        self.method = call.method
        self.params = call.params
        self.request_id = call.id
        self.meta = meta
        self._call = call
        self._request: Any = _UNSET
        self.close_sse_stream = None  # ctx.close_sse_stream() is a no-op (as in the SDK without an event store)
        self.close_standalone_sse_stream = None
        self.experimental = None
        self._srctx = self  # fastmcp reads the SDK context back through this

    @property
    def request(self) -> Any:
        """``request_context.request``, built on first read (see ``_request_for``).

        Most tools never look at it, and building it (an ASGI scope, a Starlette ``Request``)
        on every call cost a session call ~45k instructions, 15 % of the runtime's work.
        """
        request = self._request
        if request is _UNSET:
            request = self._request = _request_for(self._call.client, self._call.caller)
        return request


class _Request:
    """Stand-in for a Starlette ``Request`` when Starlette is not loaded: ``headers`` and ``scope``."""

    __slots__ = ("headers", "scope")

    def __init__(self, scope: dict[str, Any]) -> None:
        self.scope = scope
        self.headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}


def _asgi_scope(headers: dict[str, str]) -> dict[str, Any]:
    """The ASGI scope of a POST to the node's MCP endpoint carrying ``headers``.

    ``user``/``auth`` are set (by ``_request_for``) only for a call with a caller, as the
    SDK's bearer-auth middleware sets them: the node authenticated the client, and code
    that reads ``request.scope.get("user")`` (fastmcp's ``get_access_token``) or
    ``request.user`` sees that caller, token-less (identity.py).
    """
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "server": None,
        "client": None,
        "path": "/mcp",
        "raw_path": b"/mcp",
        "root_path": "",
        "query_string": b"",
        "headers": [(k.encode("latin-1", "replace"), v.encode("latin-1", "replace")) for k, v in headers.items()],
    }


def _request_for(client: Any, caller: Any = None) -> Any:
    """``request_context.request``: None (as on stdio) unless the node passed a session id.

    With a session id the SDKs' HTTP path is what packages expect, and code written for
    it treats the request as a Starlette ``Request`` (fastmcp reads ``.headers`` for
    ``mcp-session-id`` and ``.scope`` for the authenticated user). A header-only stand-in
    broke every fastmcp call with "'_Request' object has no attribute 'scope'", so the
    request is a real ``starlette.requests.Request`` over a synthetic ASGI scope whenever
    a package has Starlette loaded (every SDK and fastmcp does), else the stand-in.
    """
    if not client or not client.get("sessionId"):
        return None
    scope = _asgi_scope({"mcp-session-id": str(client["sessionId"])})
    user = identity.sdk_user(caller)
    if user is not None:
        scope["user"] = user
        auth = sys.modules.get("starlette.authentication")
        credentials = getattr(auth, "AuthCredentials", None) if auth is not None else None
        if credentials is not None:
            scope["auth"] = credentials(list(user.scopes))
    starlette = sys.modules.get("starlette.requests")
    request_cls = getattr(starlette, "Request", None) if starlette is not None else None
    if request_cls is not None:
        return request_cls(scope)
    return _Request(scope)


class CallSession:
    """Duck-typed `ServerSession` scoped to one call."""

    can_send_request = True

    def __init__(self, call: Call) -> None:
        self._call = call
        # Validated on first use: a pydantic model per call would cost every tool call
        # ~18 us although few tools ever ask who the client is.
        self._client_params_cache: Any = _UNSET

    # ---- who the client is -------------------------------------------------
    def _validate(self, type_name: str, data: Any) -> Any:
        model = getattr(self._call.types_mod, type_name, None) if self._call.types_mod else None
        if model is None or data is None:
            return None
        try:
            return model.model_validate(data)
        except Exception:  # noqa: BLE001 - an odd client payload must not break the tool
            return None

    @property
    def _client_params(self) -> Any:
        # The SDK's own ServerSession methods borrowed below read this attribute directly.
        if self._client_params_cache is _UNSET:
            client = self._call.client
            self._client_params_cache = (
                self._validate("InitializeRequestParams", _init_params(client)) if client else None
            )
        return self._client_params_cache

    @property
    def client_params(self) -> Any:
        return self._client_params

    @property
    def client_capabilities(self) -> Any:
        client = self._call.client
        if not client or client.get("capabilities") is None:
            return None
        return self._validate("ClientCapabilities", client["capabilities"])

    @property
    def protocol_version(self) -> str:
        client = self._call.client
        if client and client.get("protocolVersion"):
            return client["protocolVersion"]
        return DEFAULT_PROTOCOL_VERSION

    def check_client_capability(self, capability: Any) -> bool:
        client = self._call.client
        if not client or client.get("capabilities") is None:
            return True  # unknown: let the node decide when the request reaches it
        have = client["capabilities"] or {}
        want = dump_obj(capability) or {}
        for key, value in want.items():
            if key not in have or have[key] is None:
                return False
            if isinstance(value, dict) and isinstance(have[key], dict):
                for sub in value:
                    if sub not in have[key]:
                        return False
        return True

    # ---- notifications -----------------------------------------------------
    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        params: dict[str, Any] = {"progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self._call.rt.notify(self._call.id, "notifications/progress", params)

    async def send_progress_notification(
        self,
        progress_token: Any = None,
        progress: float = 0,
        total: float | None = None,
        message: str | None = None,
        related_request_id: Any = None,
    ) -> None:
        # The node owns the client's progressToken; it fills it in.
        await self.report_progress(progress, total, message)

    async def send_log_message(
        self, level: str, data: Any, logger: str | None = None, related_request_id: Any = None
    ) -> None:
        params: dict[str, Any] = {"level": level, "data": dump_obj(data)}
        if logger is not None:
            params["logger"] = logger
        self._call.rt.notify(self._call.id, "notifications/message", params)

    async def send_notification(self, notification: Any, related_request_id: Any = None) -> None:
        data = dump_obj(notification)
        self._call.rt.notify(self._call.id, data["method"], data.get("params"))

    # SDK 2.x `Outbound` protocol, for code that talks to the channel directly.
    async def notify(self, method: str, params: Any = None) -> None:
        self._call.rt.notify(self._call.id, method, dump_obj(params))

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        await self.report_progress(progress, total, message)

    # ---- server -> client requests ------------------------------------------
    async def send_raw_request(self, method: str, params: Any = None, opts: Any = None) -> Any:
        timeout = opts.get("timeout") if isinstance(opts, dict) else None
        return await self._call.rt.request(self._call.id, method, dump_obj(params), timeout)

    async def send_request(
        self,
        request: Any,
        result_type: Any,
        request_read_timeout_seconds: Any = None,
        metadata: Any = None,
        progress_callback: Any = None,
    ) -> Any:
        data = dump_obj(request)
        if hasattr(data, "get") and "method" not in data and "root" in data:  # pragma: no cover - RootModel
            data = data["root"]
        timeout = request_read_timeout_seconds
        if timeout is not None and hasattr(timeout, "total_seconds"):
            timeout = timeout.total_seconds()
        result = await self._call.rt.request(self._call.id, data["method"], data.get("params"), timeout)
        if result_type is None or not hasattr(result_type, "model_validate"):
            return result
        return result_type.model_validate(result)

    def __getattr__(self, name: str) -> Any:
        if name in _BORROWED:
            cls = _sdk_session_class()
            fn = getattr(cls, name, None) if cls is not None else None
            if fn is not None:
                return types.MethodType(fn, self)
        raise AttributeError(f"{type(self).__name__!s} has no attribute {name!r} (not supported by ramen)")


def _init_params(client: dict[str, Any]) -> dict[str, Any] | None:
    if not client.get("clientInfo"):
        return None
    return {
        "protocolVersion": client.get("protocolVersion") or DEFAULT_PROTOCOL_VERSION,
        "capabilities": client.get("capabilities") or {},
        "clientInfo": client["clientInfo"],
    }
