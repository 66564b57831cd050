"""Who is calling: the node's ``caller`` object, made visible to one call the way each SDK shows it.

The node authenticates the client (OAuth access token or ramen key) and passes what it
learned as ``"caller"`` on ``call_tool`` / ``read_resource`` / ``get_prompt``; absent means
anonymous. The token or key itself never reaches the runtime. For the duration of the call
(ContextVars set in the call's own task, so concurrent calls never see each other's):

* ``ramen_runtime.caller()`` - a read-only mapping of the caller, for every kind;
* the official SDK's ``mcp.server.auth.middleware.auth_context.get_access_token()`` (and
  fastmcp's ``get_access_token()``, which falls back to it) - an ``AccessToken`` subclass
  whose ``token`` is always ``""``, built on first use (most tools never ask);
* stdio programs get the caller in the request's ``_meta["io.ramen/caller"]`` (adapter_stdio).

The SDK classes are looked up only when a call has a caller and the package has imported
the SDK: the runtime never imports an SDK on its own.
"""

from __future__ import annotations

import contextvars
import importlib
import logging
import sys
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

log = logging.getLogger("ramen_runtime")

META_KEY = "io.ramen/caller"  # the stdio programs' _meta key (and never trusted from a client)

_STR_FIELDS = ("kind", "subject", "issuer", "name", "email", "client_id", "key_id", "key_name")
_LIST_FIELDS = ("groups", "roles", "scopes")
_FIELD_TYPES: dict[str, type] = {**dict.fromkeys(_STR_FIELDS, str), **dict.fromkeys(_LIST_FIELDS, list)}

_current: contextvars.ContextVar[Mapping[str, Any] | None] = contextvars.ContextVar("ramen_caller", default=None)


class BadCaller(ValueError):
    """The node's ``caller`` field is not the documented shape."""


def caller() -> Mapping[str, Any] | None:
    """The caller of the current tool call, resource read or prompt get; None when anonymous.

    A read-only mapping: ``kind`` ("oauth" or "key") and, when the node knows them,
    ``subject``, ``issuer``, ``name``, ``email``, ``groups``, ``scopes``, ``client_id``
    (OAuth) or ``key_id``, ``key_name`` (keys). Lists are tuples.
    """
    return _current.get()


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """A frozen caller back to plain JSON values (for a stdio program's ``_meta``)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value


def parse(raw: Any) -> Mapping[str, Any] | None:
    """The frame's ``caller`` field, checked and frozen; None for absent/null. Raises ``BadCaller``.

    One pass over the fields the node sent (every call with a caller pays this), not one
    look-up per documented field.
    """
    if raw is None:
        return None
    if type(raw) is not dict:
        raise BadCaller("'caller' must be an object")
    kind = raw.get("kind")
    if type(kind) is not str or not kind:
        raise BadCaller("'caller.kind' must be a non-empty string")
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if value is None:
            continue
        want = _FIELD_TYPES.get(key)
        if want is str:
            if type(value) is not str:
                raise BadCaller(f"'caller.{key}' must be a string")
        elif want is list:
            if type(value) is not list or any(type(x) is not str for x in value):
                raise BadCaller(f"'caller.{key}' must be a list of strings")
            value = tuple(value)
        else:
            value = _freeze(value)  # a field this runtime does not know: kept, read-only
        out[key] = value
    return MappingProxyType(out)


def bind(who: Mapping[str, Any] | None) -> None:
    """Make ``who`` the caller in the current context (run it inside the call's context copy)."""
    if who is None:
        return
    _current.set(who)
    sdk = _sdk()
    if sdk is not None:
        var, user_cls = sdk
        var.set(user_cls(who))


def prepare() -> None:
    """Look the SDK's auth classes up once the packages are imported (no-op without an SDK)."""
    _sdk()


def sdk_user(who: Mapping[str, Any] | None) -> Any:
    """The SDK's ``AuthenticatedUser`` for ``who`` (for a request scope's ``user``), or None."""
    if who is None:
        return None
    sdk = _sdk()
    if sdk is None:
        return None
    var, user_cls = sdk
    bound = var.get()
    if isinstance(bound, user_cls) and bound._who is who:
        return bound  # the one get_access_token() gives: one token object per call
    return user_cls(who)


# ---------------------------------------------------------------------------- SDK classes

_SDK_MODULE = "mcp.server.auth.middleware.auth_context"
_sdk_cache: dict[str, Any] = {}


def _sdk() -> tuple[contextvars.ContextVar[Any], type] | None:
    """(auth_context_var, user class) of the SDK the packages imported, or None without one.

    Built once per token base class: fastmcp's ``AccessToken`` (a subclass of the SDK's)
    when fastmcp is loaded, so fastmcp's ``get_access_token()`` returns ours unconverted
    instead of copying it into its own class without ramen's fields.
    """
    if "mcp" not in sys.modules:
        return None
    base_key = "fastmcp" if "fastmcp.server.auth" in sys.modules else "mcp"
    if base_key in _sdk_cache:
        return _sdk_cache[base_key]
    try:
        auth_context = importlib.import_module(_SDK_MODULE)
        bearer = importlib.import_module("mcp.server.auth.middleware.bearer_auth")
        base = getattr(sys.modules.get("fastmcp.server.auth"), "AccessToken", None) or importlib.import_module(
            "mcp.server.auth.provider"
        ).AccessToken
        found: Any = (auth_context.auth_context_var, _user_class(bearer.AuthenticatedUser, _token_class(base)))
    except Exception as exc:  # noqa: BLE001 - an SDK of another shape must not fail calls
        log.warning("the SDK's get_access_token() will not show callers (%s: %s)", type(exc).__name__, exc)
        found = None
    _sdk_cache[base_key] = found
    return found


def _token_class(base: type) -> type:
    """``RamenAccessToken(base)``: the SDK's AccessToken plus who the caller is."""
    pydantic = sys.modules["pydantic"]
    fields: dict[str, Any] = {
        "subject": (str | None, None),
        "issuer": (str | None, None),
        "name": (str | None, None),
        "email": (str | None, None),
        "groups": (list[str], pydantic.Field(default_factory=list)),
        "roles": (list[str], pydantic.Field(default_factory=list)),
        "key_id": (str | None, None),
        "key_name": (str | None, None),
        "claims": (dict[str, Any] | None, None),
    }
    have = getattr(base, "model_fields", {})
    extra = {k: v for k, v in fields.items() if k not in have}
    cls = pydantic.create_model("RamenAccessToken", __base__=base, **extra)
    cls.__doc__ = (
        "The caller ramen authenticated, as the SDK's AccessToken. `token` is always empty: "
        "the node checks the client's token or key and never passes it to the package."
    )
    return cls


def client_id(who: Mapping[str, Any]) -> str:
    """The AccessToken's ``client_id``: the key's name (else id), or the OAuth client (else subject)."""
    if who["kind"] == "key":
        return who.get("key_name") or who.get("key_id") or ""
    return who.get("client_id") or who.get("subject") or ""


def token_fields(who: Mapping[str, Any]) -> dict[str, Any]:
    """The AccessToken fields for ``who`` (``token`` empty: the package never gets the credential)."""
    if who["kind"] == "key":
        key_id, key_name = who.get("key_id"), who.get("key_name")
        claims = {k: v for k, v in (("ramen_key_id", key_id), ("ramen_key_name", key_name)) if v is not None}
        return {
            "token": "",
            "client_id": client_id(who),
            "scopes": [],
            "key_id": key_id,
            "key_name": key_name,
            "claims": claims,
        }
    scopes = list(who.get("scopes", ()))
    groups = list(who.get("groups", ()))
    roles = list(who.get("roles", ()))
    claims = {
        "sub": who.get("subject"),
        "iss": who.get("issuer"),  # the SDK's principal_components reads the issuer here
        "name": who.get("name"),
        "email": who.get("email"),
        "groups": groups if "groups" in who else None,
        "roles": roles if "roles" in who else None,
        "scope": " ".join(scopes) if "scopes" in who else None,
        "client_id": who.get("client_id"),
    }
    return {
        "token": "",
        "client_id": client_id(who),
        "scopes": scopes,
        "subject": who.get("subject"),
        "issuer": who.get("issuer"),
        "name": who.get("name"),
        "email": who.get("email"),
        "groups": groups,
        "roles": roles,
        "claims": {k: v for k, v in claims.items() if v is not None},
    }


def _user_class(authenticated_user: type, token_cls: type) -> type:
    """An ``AuthenticatedUser`` whose ``access_token`` is built on first read."""
    model_fields = token_cls.model_fields

    class RamenUser(authenticated_user):  # type: ignore[misc, valid-type]
        def __init__(self, who: Mapping[str, Any]) -> None:
            # not AuthenticatedUser.__init__: it needs the token, which most calls never read
            self.username = client_id(who)  # what AuthenticatedUser's SimpleUser holds
            self.scopes = list(who.get("scopes", ()))
            self._who = who
            self._token: Any = None

        @property
        def access_token(self) -> Any:
            if self._token is None:
                values = token_fields(self._who)
                if "resource" in model_fields:
                    values["resource"] = None
                values["expires_at"] = None
                self._token = token_cls(**{k: v for k, v in values.items() if k in model_fields})
            return self._token

    return RamenUser


__all__ = [
    "BadCaller",
    "META_KEY",
    "bind",
    "caller",
    "client_id",
    "parse",
    "prepare",
    "sdk_user",
    "thaw",
    "token_fields",
]
