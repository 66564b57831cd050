"""What every supported server kind must do through the runtime's framed protocol.

Each fixture package (tests/fixtures/README.md) offers the same tools, resources and prompt,
so one mixin checks a kind end to end: the report and its schemas, structured output, tool
errors, progress and log notifications, resource/template reads, prompts, the lifespan as
calls see it, cancellation, calls from a client with a session id, and a clean stop.
"""

from __future__ import annotations

import json
from typing import Any

from .rtclient import RuntimeProcess, package, text_of

CONTRACT_TOOLS = {"point", "refuse", "work", "life", "slow"}
SESSION_CLIENT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "kind-tests", "version": "1"},
    "sessionId": "session-1",
}
STOP_PROBLEMS = ("Traceback", " ERROR ", "stopping package", "was created in a different Context")


class KindContract:
    # set by each test class
    root: str  # the snapshot
    pkg: str  # the package under test
    kind: str
    server: str  # the report's "server"
    tools = CONTRACT_TOOLS
    lifespan = True  # the fixture's lifespan prints "<pkg>: lifespan entered/exited"
    life = "connected / set by the lifespan"  # what the `life` tool answers
    rt: RuntimeProcess

    @classmethod
    def python(cls) -> str:
        raise NotImplementedError

    @classmethod
    def start_runtime(cls) -> RuntimeProcess:
        return RuntimeProcess(cls.root, python=cls.python(), timeout=60)

    @classmethod
    def setUpClass(cls) -> None:
        cls.rt = cls.start_runtime()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.rt.close()

    def name(self, tool: str) -> str:
        return f"{self.pkg}.{tool}"

    def call(self, tool: str, arguments: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
        return self.rt.call_tool(self.name(tool), arguments, **kw)

    # ---------------------------------------------------------------- the report
    def test_report(self) -> None:
        p = package(self.rt.ready, self.pkg)
        self.assertIsNone(p["error"])
        self.assertEqual((p["kind"], p["server"]), (self.kind, self.server))
        tools = {t["name"]: t for t in p["tools"]}
        self.assertEqual(set(tools), {self.name(t) for t in self.tools})
        point = tools[self.name("point")]
        self.assertEqual(point["inputSchema"]["type"], "object")
        self.assertEqual(point["inputSchema"]["properties"]["x"]["type"], "integer")
        self.assertEqual(sorted(point["inputSchema"]["required"]), ["x", "y"])
        out = point["outputSchema"]
        self.assertEqual(out["type"], "object")
        self.assertEqual(sorted(out["required"]), ["x", "y"])
        self.assertEqual(out["properties"]["x"]["description"], "horizontal")
        self.assertIn("reason", tools[self.name("refuse")]["inputSchema"]["properties"])
        info = next(r for r in p["resources"] if r["uri"] == f"{self.pkg}://info")
        self.assertEqual(info["mimeType"], "text/plain")
        self.assertEqual([t["uriTemplate"] for t in p["resource_templates"]], [f"{self.pkg}://item/{{name}}"])
        self.assertEqual([x["name"] for x in p["prompts"]], [self.name("greet")])
        arg = p["prompts"][0]["arguments"][0]
        self.assertEqual((arg["name"], arg["required"]), ("name", True))

    def test_list_op_lists_the_same(self) -> None:
        relisted = self.rt.request("list", timeout=30)["result"]
        self.assertEqual(package(relisted, self.pkg), package(self.rt.ready, self.pkg))

    # ---------------------------------------------------------------- tools
    def test_structured_output(self) -> None:
        r = self.call("point", {"x": 1, "y": 2})["result"]
        self.assertFalse(r.get("isError", False))
        self.assertEqual(r["structuredContent"], {"x": 1, "y": 2})
        self.assertEqual(json.loads(text_of(r)), {"x": 1, "y": 2})

    def test_tool_error_is_an_error_result(self) -> None:
        r = self.call("refuse", {"reason": "no"})["result"]
        self.assertTrue(r["isError"])
        self.assertIn("refused: no", text_of(r))

    def test_progress_and_log_notifications(self) -> None:
        frames: list[dict[str, Any]] = []
        rid = self.rt.start("call_tool", name=self.name("work"), arguments={"steps": 3})
        self.assertEqual(text_of(self.rt.wait_reply(rid, collect=frames)["result"]), "did 3")
        notes = [f["notification"] for f in frames]
        progress = [n["params"] for n in notes if n["method"] == "notifications/progress"]
        self.assertEqual(
            progress, [{"progress": i, "total": 3, "message": f"step {i}"} for i in (1, 2, 3)]
        )  # never the progressToken: the node adds the client's
        logs = [n["params"] for n in notes if n["method"] == "notifications/message"]
        self.assertEqual([x["level"] for x in logs], ["info", "warning"])
        self.assertIn("working", json.dumps(logs[0]["data"]))
        self.assertIn("careful", json.dumps(logs[1]["data"]))

    def test_lifespan_is_what_calls_see(self) -> None:
        self.assertEqual(text_of(self.call("life")["result"]), self.life)

    def test_cancel(self) -> None:
        rid = self.rt.start("call_tool", name=self.name("slow"), arguments={"seconds": 30})
        self.rt.send({"op": "cancel", "target": rid})
        self.assertEqual(self.rt.wait_reply(rid, timeout=3)["error"]["code"], -32800)
        self.assertEqual(text_of(self.call("slow", {"seconds": 0})["result"]), "done")

    # ---------------------------------------------------------------- resources, prompts
    def test_resource_and_template_reads(self) -> None:
        info = self.rt.request("read_resource", uri=f"{self.pkg}://info")["result"]["contents"]
        self.assertEqual(info, [{"uri": f"{self.pkg}://info", "mimeType": "text/plain", "text": f"{self.pkg} info"}])
        item = self.rt.request("read_resource", uri=f"{self.pkg}://item/abc")["result"]["contents"][0]
        self.assertEqual((item["uri"], item["text"]), (f"{self.pkg}://item/abc", "item abc"))
        missing = self.rt.request("read_resource", uri=f"{self.pkg}://nothing-here")["error"]
        self.assertEqual(missing["code"], -32002)

    def test_prompt(self) -> None:
        msg = self.rt.request("get_prompt", name=self.name("greet"), arguments={"name": "Ann"})["result"]
        self.assertEqual(msg["messages"][0]["role"], "user")
        self.assertEqual(msg["messages"][0]["content"], {"type": "text", "text": "Hello Ann"})
        err = self.rt.request("get_prompt", name=self.name("greet"), arguments={})["error"]
        self.assertEqual(err["code"], -32602)

    # ---------------------------------------------------------------- client, stop
    def test_calls_from_a_client_with_a_session(self) -> None:
        """What the node passes for a streamable-HTTP client (the fastmcp '_Request.scope' failure)."""
        r = self.call("point", {"x": 3, "y": 4}, client=SESSION_CLIENT, meta={"progressToken": "p"})["result"]
        self.assertEqual(r["structuredContent"], {"x": 3, "y": 4})
        read = self.rt.request("read_resource", uri=f"{self.pkg}://info", client=SESSION_CLIENT)["result"]
        self.assertEqual(read["contents"][0]["text"], f"{self.pkg} info")
        got = self.rt.request("get_prompt", name=self.name("greet"), arguments={"name": "Bo"}, client=SESSION_CLIENT)
        self.assertEqual(got["result"]["messages"][0]["content"]["text"], "Hello Bo")

    def test_clean_stop(self) -> None:
        rt = self.start_runtime()
        try:
            self.assertEqual(text_of(rt.call_tool(self.name("life"))["result"]), self.life)
            rt.send({"op": "shutdown"})
            self.assertEqual(rt.wait_exit(15), 0)
        finally:
            rt.close()
        err = rt.stderr_so_far()
        if self.lifespan:
            self.assertIn(f"{self.pkg}: lifespan entered", err)
            self.assertIn(f"{self.pkg}: lifespan exited", err)
        for problem in STOP_PROBLEMS:
            self.assertNotIn(problem, err)
