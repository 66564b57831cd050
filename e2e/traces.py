"""An OTLP/HTTP trace receiver for the e2e scenario: every ramen process (and every worker
they start, which inherit `OTEL_*`) exports its spans here, and the scenario asserts that one
user action is one trace across every hop.

It is an in-memory exporter in the sense that matters: nothing leaves the test, spans are kept
as the processes sent them (protobuf, decoded with the official `opentelemetry-proto`).
"""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass(frozen=True)
class Span:
    trace: str
    id: str
    parent: str
    name: str
    service: str
    attrs: dict[str, str] = field(default_factory=dict, hash=False, compare=False)


def _value(any_value) -> str:  # an OTLP AnyValue as text
    kind = any_value.WhichOneof("value")
    return str(getattr(any_value, kind)) if kind else ""


class Collector:
    """Listens on a port of its own choosing; `endpoint` is what OTEL_EXPORTER_OTLP_ENDPOINT
    should say."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path.rstrip("/") == "/v1/traces":
                    collector._receive(ExportTraceServiceRequest.FromString(body))
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *_args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _receive(self, request: ExportTraceServiceRequest) -> None:
        received = []
        for resource_spans in request.resource_spans:
            service = next((_value(a.value) for a in resource_spans.resource.attributes
                            if a.key == "service.name"), "")
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    received.append(Span(
                        trace=span.trace_id.hex(),
                        id=span.span_id.hex(),
                        parent=span.parent_span_id.hex(),
                        name=span.name,
                        service=service,
                        attrs={a.key: _value(a.value) for a in span.attributes},
                    ))
        with self.lock:
            self.spans.extend(received)

    def snapshot(self) -> list[Span]:
        with self.lock:
            return list(self.spans)

    def trace(self, trace_id: str) -> list[Span]:
        return [s for s in self.snapshot() if s.trace == trace_id]

    def stop(self) -> None:
        self.server.shutdown()


def chain(spans: list[Span], leaf: Span) -> list[Span]:
    """`leaf` and its ancestors in `spans`, root last."""
    by_id = {s.id: s for s in spans}
    out = [leaf]
    while out[-1].parent and out[-1].parent in by_id:
        out.append(by_id[out[-1].parent])
    return out


def describe(spans: list[Span]) -> str:
    return "; ".join(f"{s.service}:{s.name}{' ' + s.attrs.get('path', '') if 'path' in s.attrs else ''}"
                     for s in spans)
