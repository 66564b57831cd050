"""The other supported server objects: SDK 1.x ``FastMCP`` and the standalone ``fastmcp``.

Each needs its own virtualenv (they cannot share one with mcp 2.x), created by
``scripts/install-compat-servers``: ``compat/mcp1`` (mcp 1.x) and ``compat/fastmcp``
(fastmcp 4.x) under ``${RAMEN_CACHE_DIR:-~/.cache/ramen}``, or ``$RAMEN_TEST_MCP1_PYTHON`` /
``$RAMEN_TEST_FASTMCP_PYTHON``. Without them the tests fail, naming the script to run.
"""

from __future__ import annotations

import unittest

from .rtclient import RuntimeProcess, fixture, package, text_of
from .venvs import compat_python


class _CompatMixin:
    repo: str
    pkg: str
    kind: str
    venv: str
    rt: RuntimeProcess

    @classmethod
    def setUpClass(cls) -> None:
        cls.rt = RuntimeProcess(fixture(cls.repo), python=compat_python(cls.venv))

    @classmethod
    def tearDownClass(cls) -> None:
        cls.rt.close()

    def test_report(self) -> None:
        p = package(self.rt.ready, self.pkg)
        self.assertIsNone(p["error"])
        self.assertEqual(p["kind"], self.kind)
        self.assertEqual(p["server"], f"{self.pkg}:mcp")
        names = {t["name"] for t in p["tools"]}
        self.assertLessEqual({f"{self.pkg}.add", f"{self.pkg}.point", f"{self.pkg}.work"}, names)
        self.assertEqual([r["uri"] for r in p["resources"]], [f"{self.pkg}://info"])
        self.assertEqual([t["uriTemplate"] for t in p["resource_templates"]], [f"{self.pkg}://item/{{name}}"])
        self.assertEqual([x["name"] for x in p["prompts"]], [f"{self.pkg}.hello"])

    def test_structured_output(self) -> None:
        r = self.rt.call_tool(f"{self.pkg}.point", {"x": 1, "y": 2})["result"]
        self.assertEqual(r["structuredContent"], {"x": 1, "y": 2})
        added = self.rt.call_tool(f"{self.pkg}.add", {"a": 1, "b": 2})["result"]
        self.assertEqual(added["structuredContent"], {"result": 3})

    def test_tool_error(self) -> None:
        r = self.rt.call_tool(f"{self.pkg}.fail")["result"]
        self.assertTrue(r["isError"])
        self.assertIn("failure", text_of(r))

    def test_progress_and_logs(self) -> None:
        frames: list = []
        rid = self.rt.start("call_tool", name=f"{self.pkg}.work", arguments={"steps": 2})
        self.assertEqual(text_of(self.rt.wait_reply(rid, collect=frames)["result"]), "did 2")
        methods = [f["notification"]["method"] for f in frames]
        self.assertEqual(methods.count("notifications/progress"), 2)
        self.assertEqual(methods.count("notifications/message"), 1)

    def test_cancel(self) -> None:
        rid = self.rt.start("call_tool", name=f"{self.pkg}.slow", arguments={"seconds": 10})
        self.rt.send({"op": "cancel", "target": rid})
        self.assertEqual(self.rt.wait_reply(rid, timeout=3)["error"]["code"], -32800)

    def test_resources_and_prompts(self) -> None:
        info = self.rt.request("read_resource", uri=f"{self.pkg}://info")["result"]["contents"][0]
        self.assertEqual(info["text"], f"{self.pkg} info")
        item = self.rt.request("read_resource", uri=f"{self.pkg}://item/abc")["result"]["contents"][0]
        self.assertEqual(item["text"], "item abc")
        self.assertEqual(self.rt.request("read_resource", uri=f"{self.pkg}://zzz")["error"]["code"], -32002)
        msg = self.rt.request("get_prompt", name=f"{self.pkg}.hello", arguments={"name": "Ann"})["result"]
        self.assertEqual(msg["messages"][0]["content"]["text"], "Hello Ann")

    def test_server_request(self) -> None:
        rid = self.rt.start("call_tool", name=f"{self.pkg}.ask", arguments={"prompt": "hi"})
        req = self.rt.next_frame()["request"]
        if req["method"] == "sampling/createMessage":
            answer = {"role": "assistant", "content": {"type": "text", "text": "yo"}, "model": "m"}
        else:
            answer = {"action": "accept", "content": {"value": "yo"}}
        self.rt.send({"op": "response", "rid": req["rid"], "result": answer})
        self.assertIn("yo", text_of(self.rt.wait_reply(rid)["result"]))


class FastMCP1Test(_CompatMixin, unittest.TestCase):
    repo, pkg, kind, venv = "fastmcp1-repo", "legacy", "fastmcp1", "mcp1"


class StandaloneFastMCPTest(_CompatMixin, unittest.TestCase):
    repo, pkg, kind, venv = "fastmcp-repo", "standalone", "fastmcp", "fastmcp"
