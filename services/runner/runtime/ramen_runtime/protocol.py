"""Framing and JSON helpers for the node <-> runtime protocol.

Every frame is a 4-byte unsigned big-endian length N followed by N bytes of a
UTF-8 JSON object. See docs/packages.md, "Node ⇄ runtime protocol".
"""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any

MAX_FRAME = 64 * 1024 * 1024

# JSON-RPC / MCP error codes used on the wire.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002
REQUEST_CANCELLED = -32800


class ProtocolError(Exception):
    """An error answered to the node as `{"id":N,"error":{...}}`."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err


def json_default(obj: Any) -> Any:
    """Serialize the odd objects SDK code hands us (pydantic models, dataclasses, URLs...)."""
    dump = getattr(obj, "model_dump", None)
    if dump is not None:
        try:
            return dump(mode="json", by_alias=True, exclude_none=True)
        except TypeError:
            return dump()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(obj)).decode("ascii")
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    return str(obj)


_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=json_default, allow_nan=False)
dumps = _encoder.encode


def dump_obj(obj: Any) -> Any:
    """An SDK object (pydantic model) or plain data -> plain JSON-able data."""
    dump = getattr(obj, "model_dump", None)
    if dump is not None:
        return dump(mode="json", by_alias=True, exclude_none=True)
    return obj


# Fields of SDK *result* models that belong to newer protocol revisions than the
# one the node speaks (2025-11-25); left out of what we send.
_NEWER_RESULT_FIELDS = ("result_type", "ttl_ms", "cache_scope")
_exclude_cache: dict[type, Any] = {}


def _exclude_for(cls: type) -> Any:
    ex = _exclude_cache.get(cls)
    if ex is None:
        fields = getattr(cls, "model_fields", None) or {}
        found = {f for f in _NEWER_RESULT_FIELDS if f in fields}
        ex = _exclude_cache[cls] = found or False
    return ex or None


def _exclude(obj: Any) -> Any:
    # An `InputRequiredResult` (a 2026-07-28 tool asking for input) keeps its resultType:
    # that field is what the node and the client tell it apart by.
    if getattr(obj, "result_type", None) == "input_required":
        return None
    return _exclude_for(type(obj))


def result_json(obj: Any) -> str:
    """Serialize an SDK result (pydantic model) or a plain dict to a JSON string."""
    dump_json = getattr(obj, "model_dump_json", None)
    if dump_json is not None:
        return dump_json(by_alias=True, exclude_none=True, exclude=_exclude(obj))
    return dumps(obj)


def result_dict(obj: Any) -> Any:
    dump = getattr(obj, "model_dump", None)
    if dump is not None:
        return dump(mode="json", by_alias=True, exclude_none=True, exclude=_exclude(obj))
    return obj


def frame(body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + body
