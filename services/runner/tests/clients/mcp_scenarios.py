"""Scenarios driven by the official MCP Python client (the pinned `mcp` 2.x SDK) against a
ramen worker node, for the node's Rust integration tests (`tests/node/official.rs` and
others).

    python mcp_scenarios.py <scenario> <url> <key>

Every scenario but `drive` prints ONE JSON object on stdout and exits 0; the Rust test
asserts on it. A failure the scenario itself detects exits non-zero with a message on
stderr. `drive` is interactive: it prints a JSON line once connected, then answers each
JSON command read from stdin with one JSON line (`Driver` here, and its Rust side in
`tests/node/pyclient.rs`), so a test can change the node (policy, drain, crash) between
steps while this client keeps its session open.

The client uses the classic handshake (`mode="legacy"`: initialize, then the session's GET
stream) unless the scenario says otherwise, with `Authorization: Bearer <key>`.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError


class Recorder:
    """What the client saw on the wire, via httpx2 event hooks and the message handler."""

    def __init__(self) -> None:
        self.session_ids: list[str] = []
        self.posted_methods: list[str] = []  # JSON-RPC method per POST, else the HTTP verb
        self.get_stream_open = anyio.Event()
        self.notifications: list[str] = []
        self.changed = anyio.Event()
        self.logs: list[dict[str, Any]] = []

    async def on_request(self, request: httpx2.Request) -> None:
        if request.method == "POST":
            body = json.loads(request.content or b"{}")
            self.posted_methods.append(body.get("method") or "<response>")
        else:
            self.posted_methods.append(request.method)

    async def on_response(self, response: httpx2.Response) -> None:
        sid = response.headers.get("mcp-session-id")
        if sid and sid not in self.session_ids:
            self.session_ids.append(sid)
        if response.request.method == "GET" and response.status_code == 200:
            # The node subscribes the GET stream before it answers, so from here on every
            # server notification reaches this client.
            self.get_stream_open.set()

    async def on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            print(f"transport error: {message!r}", file=sys.stderr)
            return
        if isinstance(message, types.ServerNotification):
            method = getattr(message, "method", None) or type(message).__name__
            self.notifications.append(method)
            self.changed.set()

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append({"level": params.level, "data": params.data})

    def count(self, method: str) -> int:
        return sum(1 for m in self.notifications if m == method)


def http_client(key: str | None, recorder: Recorder, **headers: str) -> httpx2.AsyncClient:
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    return httpx2.AsyncClient(
        headers=headers,
        timeout=httpx2.Timeout(30.0, read=300.0),
        event_hooks={"request": [recorder.on_request], "response": [recorder.on_response]},
    )


def client(url: str, http: httpx2.AsyncClient, recorder: Recorder, mode: str = "legacy") -> Client:
    return Client(
        streamable_http_client(url, http_client=http),
        mode=mode,
        cache=None,  # every list must reach the node (blocked lists change live)
        message_handler=recorder.on_message,
        logging_callback=recorder.on_log,
    )


def error_of(exc: MCPError) -> dict[str, Any]:
    return {"code": exc.code, "message": str(exc)}


async def paged(fetch: Callable[[str | None], Awaitable[Any]], field: str) -> tuple[list[Any], int]:
    """Follows `nextCursor` to the end; returns every item and how many pages it took."""
    items: list[Any] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = await fetch(cursor)
        pages += 1
        items.extend(getattr(page, field))
        cursor = page.next_cursor
        if cursor is None:
            return items, pages
        if pages > 100:
            raise SystemExit("pagination does not end")


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def listing(c: Client) -> dict[str, Any]:
    tools, tool_pages = await paged(lambda cur: c.list_tools(cursor=cur), "tools")
    resources, resource_pages = await paged(lambda cur: c.list_resources(cursor=cur), "resources")
    templates, template_pages = await paged(lambda cur: c.list_resource_templates(cursor=cur), "resource_templates")
    prompts, prompt_pages = await paged(lambda cur: c.list_prompts(cursor=cur), "prompts")
    return {
        "tools": [dump(t) for t in tools],
        "resources": [dump(r) for r in resources],
        "templates": [dump(t) for t in templates],
        "prompts": [dump(p) for p in prompts],
        "pages": {
            "tools": tool_pages,
            "resources": resource_pages,
            "templates": template_pages,
            "prompts": prompt_pages,
        },
    }


# --- scenarios -----------------------------------------------------------------------------


async def e2e(url: str, key: str) -> dict[str, Any]:
    """Every method of the 2025-11-25 handshake era against hello-repo."""
    rec = Recorder()
    async with http_client(key, rec) as http, client(url, http, rec) as c:
        out: dict[str, Any] = {
            "protocol_version": c.protocol_version,
            "server_name": c.server_info.name if c.server_info else None,
            "capabilities": dump(c.server_capabilities),
        }
        out["ping"] = dump(await c.send_ping())
        out.update(await listing(c))
        out["add"] = dump(await c.call_tool("notes.add", {"a": 2, "b": 40}))
        out["forecast"] = dump(await c.call_tool("weather.forecast", {"city": "Oslo", "days": 2}))
        out["divide_by_zero"] = dump(await c.call_tool("notes.divide", {"a": 1, "b": 0}))
        out["index"] = dump(await c.read_resource("notes://index"))
        out["note"] = dump(await c.read_resource("notes://note/broth"))
        out["city_forecast"] = dump(await c.read_resource("weather://forecast/paris"))
        out["summarize"] = dump(await c.get_prompt("notes.summarize", {"name": "broth"}))
        out["plan_trip"] = dump(await c.get_prompt("weather.plan_trip", {"city": "Lima", "days": "2"}))
        try:
            await c.call_tool("notes.no_such_tool", {})
            out["unknown_tool"] = None
        except MCPError as exc:
            out["unknown_tool"] = error_of(exc)

        progress: list[dict[str, Any]] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append({"progress": value, "total": total, "message": message})

        await c.set_logging_level("info")
        out["survey"] = dump(
            await c.call_tool("weather.survey", {"city": "Lima", "steps": 4}, progress_callback=on_progress)
        )
        out["progress"] = progress
        out["logs"] = rec.logs
        out["session_ids"] = rec.session_ids
        return out


async def cancel(url: str, key: str) -> dict[str, Any]:
    """Cancels a slow call (slow-repo) once it has reported progress; the tool must stop."""
    rec = Recorder()
    async with http_client(key, rec) as http, client(url, http, rec) as c:
        progressed = anyio.Event()

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progressed.set()

        outcome: dict[str, Any] = {}

        async def slow_call(scope: anyio.CancelScope) -> None:
            with scope:
                result = await c.call_tool("slow.sleep", {"seconds": 30}, progress_callback=on_progress)
                outcome["result"] = dump(result)

        started = time.monotonic()
        scope = anyio.CancelScope()
        async with anyio.create_task_group() as tg:
            tg.start_soon(slow_call, scope)
            with anyio.fail_after(20):
                await progressed.wait()
            running = (await c.call_tool("slow.stats")).structured_content
            scope.cancel()
        # The node must have told the runtime: the sleep stops and counts as cancelled.
        with anyio.fail_after(20):
            while True:
                stats = (await c.call_tool("slow.stats")).structured_content
                if stats and stats["cancelled"] >= 1 and stats["running"] == 0:
                    break
                await anyio.sleep(0.05)
        return {
            "while_running": running,
            "after_cancel": stats,
            "seconds": time.monotonic() - started,
            "completed": outcome.get("result"),
            "posted": rec.posted_methods,
        }


async def sessions(url: str, key: str) -> dict[str, Any]:
    """Two clients get two sessions; leaving one sends DELETE and its id is then 404."""
    first, second = Recorder(), Recorder()
    async with http_client(key, second) as http2, client(url, http2, second) as c2:
        async with http_client(key, first) as http1, client(url, http1, first) as c1:
            tools1 = [t.name for t in (await c1.list_tools()).tools]
            tools2 = [t.name for t in (await c2.list_tools()).tools]
        async with httpx2.AsyncClient() as raw:
            stale = await raw.post(
                url,
                headers={
                    "Authorization": f"Bearer {key}",
                    "Accept": "application/json, text/event-stream",
                    "Content-Type": "application/json",
                    "Mcp-Session-Id": first.session_ids[0],
                    "MCP-Protocol-Version": "2025-11-25",
                },
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            )
        still = dump(await c2.send_ping())
        return {
            "first": first.session_ids,
            "second": second.session_ids,
            "tools_equal": tools1 == tools2 and len(tools1) > 0,
            "first_sent": first.posted_methods,
            "stale_status": stale.status_code,
            "second_ping_after": still,
        }


async def in_mode(url: str, key: str, mode: str) -> dict[str, Any]:
    """One client `mode` (`legacy`: initialize; `auto`: discover, then whichever revision the
    server offers; `2026-07-28`: stateless from the first request) against hello-repo."""
    rec = Recorder()
    async with http_client(key, rec) as http, client(url, http, rec, mode=mode) as c:
        progress: list[float] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(value)

        tools = [t.name for t in (await c.list_tools()).tools]
        add = await c.call_tool("notes.add", {"a": 1, "b": 1})
        survey = await c.call_tool("weather.survey", {"city": "Oslo", "steps": 3}, progress_callback=on_progress)
        read = await c.read_resource("weather://forecast/paris")
        prompt = await c.get_prompt("notes.summarize", {"name": "broth"})
        try:
            await c.call_tool("notes.no_such_tool", {})
            unknown: Any = None
        except MCPError as exc:
            unknown = error_of(exc)
        return {
            "posted": rec.posted_methods,
            "session_ids": rec.session_ids,
            "protocol_version": c.protocol_version,
            "tools": tools,
            "add": dump(add),
            "survey": dump(survey),
            "progress": progress,
            "read": dump(read),
            "prompt": dump(prompt),
            "unknown_tool": unknown,
        }


async def fastmcp(url: str, key: str) -> dict[str, Any]:
    """A fastmcp 4.x package (fm, runtime fixture fastmcp4-repo): session state follows the
    session (legacy mode) and is per call without one (2026-07-28); `_meta` picks a
    component version; progress and structured output in both modes."""
    out: dict[str, Any] = {}
    for mode in ("legacy", "2026-07-28"):
        rec = Recorder()
        async with http_client(key, rec) as http, client(url, http, rec, mode=mode) as c:
            progress: list[float] = []

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                progress.append(value)

            remembered = await c.call_tool("fm.remember", {"value": f"kept in {mode}"})
            recalled = await c.call_tool("fm.recall")
            async with http_client(key, Recorder()) as http2, client(url, http2, Recorder(), mode=mode) as other:
                elsewhere = await other.call_tool("fm.recall")
            out[mode] = {
                "protocol_version": c.protocol_version,
                "session_ids": rec.session_ids,
                "remember": dump(remembered),
                "recall": dump(recalled),
                "other_client_recall": dump(elsewhere),
                "versioned": dump(await c.call_tool("fm.versioned")),
                "versioned_v1": dump(await c.call_tool("fm.versioned", meta={"fastmcp": {"version": "1"}})),
                "point": dump(await c.call_tool("fm.point", {"x": 3, "y": 4})),
                "work": dump(await c.call_tool("fm.work", {"steps": 3}, progress_callback=on_progress)),
                "progress": progress,
                "refuse": dump(await c.call_tool("fm.refuse", {"reason": "no"})),
                "info": dump(await c.read_resource("fm://info")),
                "greet": dump(await c.get_prompt("fm.greet", {"name": "Ada"})),
            }
    return out


async def time_server(url: str, key: str) -> dict[str, Any]:
    """The reference stdio server mcp-server-time as a package, in both client modes."""
    out: dict[str, Any] = {}
    for mode in ("legacy", "2026-07-28"):
        rec = Recorder()
        async with http_client(key, rec) as http, client(url, http, rec, mode=mode) as c:
            tools = {t.name: dump(t) for t in (await c.list_tools()).tools}
            now = await c.call_tool("time.get_current_time", {"timezone": "UTC"})
            converted = await c.call_tool(
                "time.convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
            )
            bad = await c.call_tool("time.get_current_time", {"timezone": "Mars/Olympus"})
            out[mode] = {
                "protocol_version": c.protocol_version,
                "tools": tools,
                "now": dump(now),
                "converted": dump(converted),
                "bad_zone": dump(bad),
            }
    return out


async def multi_round(url: str, key: str) -> dict[str, Any]:
    """The conformance fixture's multi-round-trip tools in 2026-07-28 mode: the client meets
    each `InputRequiredResult` with its callbacks and retries on its own."""
    asked: list[str] = []

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        fields = params.requested_schema["properties"]
        return types.ElicitResult(action="accept", content={f: "Ada" if f in ("name", "username") else "teal" for f in fields})

    async def on_sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked.append("sampling")
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="Paris"), model="test-model"
        )

    rec = Recorder()
    async with http_client(key, rec) as http:
        c = Client(
            streamable_http_client(url, http_client=http),
            mode="2026-07-28",
            cache=None,
            elicitation_callback=on_elicit,
            sampling_callback=on_sample,
        )
        async with c:
            greeting = await c.call_tool("test_input_required_result_elicitation")
            rounds = await c.call_tool("test_input_required_result_multi_round")
            sampled = await c.call_tool("test_input_required_result_sampling")
            prompt = await c.get_prompt("test_input_required_result_prompt")
            # Tools written for sessions, asking mid-call: the node asks for them.
            elicited = await c.call_tool("test_elicitation", {"message": "Who are you?"})
            sampled_mid_call = await c.call_tool("test_sampling", {"prompt": "Capital of France?"})
    return {
        "elicited": dump(elicited),
        "sampled_mid_call": dump(sampled_mid_call),
        "greeting": dump(greeting),
        "multi_round": dump(rounds),
        "sampled": dump(sampled),
        "prompt": dump(prompt),
        "asked": asked,
        "posted": rec.posted_methods,
    }


async def auto(url: str, key: str) -> dict[str, Any]:
    return await in_mode(url, key, "auto")


async def legacy(url: str, key: str) -> dict[str, Any]:
    return await in_mode(url, key, "legacy")


async def stateless(url: str, key: str) -> dict[str, Any]:
    return await in_mode(url, key, "2026-07-28")


async def outcome(call: Awaitable[Any]) -> dict[str, Any]:
    """A result, a JSON-RPC error, or (connection gone, ...) what the client raised."""
    try:
        return {"result": dump(await call)}
    except MCPError as exc:
        return {"error": error_of(exc)}
    except Exception as exc:  # noqa: BLE001 - reported to the test, which decides
        return {"exception": repr(exc)}


class Driver:
    """The `drive` scenario: one JSON command per stdin line, one JSON answer per stdout line.

    Commands: `list`; `call` {name, arguments}; `read` {uri}; `prompt` {name, arguments};
    `start` {tag, name, arguments} (a call left running) and `join` {tag}; `wait`
    {method, count, timeout} (until that many notifications of `method` arrived); `quit`.
    """

    def __init__(self, c: Client, rec: Recorder, tg: anyio.abc.TaskGroup) -> None:
        self.c, self.rec, self.tg = c, rec, tg
        self.done: dict[str, anyio.Event] = {}
        self.results: dict[str, dict[str, Any]] = {}

    async def list(self, cmd: dict[str, Any]) -> dict[str, Any]:
        everything = await listing(self.c)
        keys = {"tools": "name", "resources": "uri", "templates": "uriTemplate", "prompts": "name"}
        return {kind: [item[key] for item in everything[kind]] for kind, key in keys.items()}

    async def call(self, cmd: dict[str, Any]) -> dict[str, Any]:
        return await outcome(self.c.call_tool(cmd["name"], cmd.get("arguments", {})))

    async def read(self, cmd: dict[str, Any]) -> dict[str, Any]:
        return await outcome(self.c.read_resource(cmd["uri"]))

    async def prompt(self, cmd: dict[str, Any]) -> dict[str, Any]:
        return await outcome(self.c.get_prompt(cmd["name"], cmd.get("arguments", {})))

    async def start(self, cmd: dict[str, Any]) -> dict[str, Any]:
        tag = cmd["tag"]
        self.done[tag] = anyio.Event()

        async def run() -> None:
            self.results[tag] = await self.call(cmd)
            self.done[tag].set()

        self.tg.start_soon(run)
        return {"started": tag}

    async def join(self, cmd: dict[str, Any]) -> dict[str, Any]:
        with anyio.fail_after(60):
            await self.done[cmd["tag"]].wait()
        return self.results[cmd["tag"]]

    async def wait(self, cmd: dict[str, Any]) -> dict[str, Any]:
        method, count = cmd["method"], cmd.get("count", 1)
        with anyio.move_on_after(cmd.get("timeout", 15)):
            while self.rec.count(method) < count:
                self.rec.changed = anyio.Event()
                await self.rec.changed.wait()
        return {"count": self.rec.count(method), "notifications": self.rec.notifications}


async def drive(url: str, key: str) -> int:
    rec = Recorder()
    async with http_client(key, rec) as http, client(url, http, rec) as c, anyio.create_task_group() as tg:
        with anyio.fail_after(15):
            await rec.get_stream_open.wait()
        emit({"ready": True, "session": rec.session_ids[0], "protocol_version": c.protocol_version})
        driver = Driver(c, rec, tg)
        while line := await anyio.to_thread.run_sync(sys.stdin.readline):
            cmd = json.loads(line)
            if cmd["op"] == "quit":
                break
            emit(await getattr(driver, cmd["op"])(cmd))
        tg.cancel_scope.cancel()
    emit({"bye": True})
    return 0


def emit(value: dict[str, Any]) -> None:
    print(json.dumps(value), flush=True)


SCENARIOS = {
    "e2e": e2e,
    "cancel": cancel,
    "sessions": sessions,
    "auto": auto,
    "legacy": legacy,
    "stateless": stateless,
    "fastmcp": fastmcp,
    "time": time_server,
    "multi-round": multi_round,
}


async def main(argv: list[str]) -> int:
    if len(argv) != 4 or argv[1] not in {*SCENARIOS, "drive"}:
        print(f"usage: {argv[0]} <{'|'.join([*SCENARIOS, 'drive'])}> <url> <key>", file=sys.stderr)
        return 64
    name, url, key = argv[1:]
    if name == "drive":
        return await drive(url, key)
    emit(await SCENARIOS[name](url, key))
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main, sys.argv))
