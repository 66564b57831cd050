"""End-to-end tests of the runtime: spawn it as a subprocess and speak the framed protocol.

Run from the repo root with the venv that has mcp 2.3.0:
    ~/.cache/ramen/venv/bin/python -m unittest discover -s services/runner/runtime/tests -t services/runner/runtime
"""

from __future__ import annotations

import json
import os
import tempfile
import textwrap
import time
import unittest

from .rtclient import HELLO_REPO, RuntimeProcess, encode, fixture, package, text_of


class HelloRepoTest(unittest.TestCase):
    """The example repo, one runtime shared by the class."""

    rt: RuntimeProcess

    @classmethod
    def setUpClass(cls) -> None:
        cls.rt = RuntimeProcess(HELLO_REPO)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.rt.close()

    # -- the ready report ----------------------------------------------------
    def test_ready_report_lists_everything(self) -> None:
        report = self.rt.ready
        assert report is not None
        self.assertTrue(report["namespace"])
        self.assertRegex(report["python"], r"^3\.\d+\.\d+")
        self.assertEqual([p["name"] for p in report["packages"]], ["notes", "weather"])

        weather = package(report, "weather")
        self.assertIsNone(weather["error"])
        self.assertEqual(weather["server"], "weather.server:mcp")
        self.assertEqual(weather["kind"], "mcpserver")
        tools = {t["name"]: t for t in weather["tools"]}
        self.assertEqual(set(tools), {"weather.forecast", "weather.convert", "weather.survey"})
        forecast = tools["weather.forecast"]
        self.assertEqual(forecast["inputSchema"]["required"], ["city"])
        self.assertEqual(forecast["inputSchema"]["properties"]["days"]["maximum"], 7)
        self.assertIn("days", forecast["outputSchema"]["properties"])
        self.assertEqual(forecast["annotations"], {"readOnlyHint": True})
        self.assertEqual(tools["weather.convert"]["outputSchema"]["required"], ["value", "unit"])
        self.assertEqual([r["uri"] for r in weather["resources"]], ["weather://cities"])
        self.assertEqual(weather["resources"][0]["mimeType"], "application/json")
        self.assertEqual([t["uriTemplate"] for t in weather["resource_templates"]], ["weather://forecast/{city}"])
        prompts = {p["name"]: p for p in weather["prompts"]}
        self.assertEqual(set(prompts), {"weather.plan_trip"})
        self.assertEqual(
            prompts["weather.plan_trip"]["arguments"],
            [{"name": "city", "required": True}, {"name": "days", "required": False}],
        )

        notes = package(report, "notes")
        self.assertIsNone(notes["error"])
        self.assertEqual(notes["server"], "notes:mcp")
        self.assertEqual(
            {t["name"] for t in notes["tools"]}, {"notes.add", "notes.divide", "notes.shout", "notes.search"}
        )
        add = next(t for t in notes["tools"] if t["name"] == "notes.add")
        self.assertEqual(add["inputSchema"]["properties"]["a"]["type"], "integer")
        self.assertEqual([r["uri"] for r in notes["resources"]], ["notes://index"])
        self.assertEqual([t["uriTemplate"] for t in notes["resource_templates"]], ["notes://note/{name}"])
        self.assertEqual([p["name"] for p in notes["prompts"]], ["notes.summarize"])

    def test_list_op_returns_the_report(self) -> None:
        reply = self.rt.request("list")
        self.assertEqual(reply["result"], self.rt.ready)

    def test_ping(self) -> None:
        self.assertEqual(self.rt.request("ping"), {"id": self.rt._next_id, "result": {}})

    # -- tools ---------------------------------------------------------------
    def test_call_tool_simple(self) -> None:
        reply = self.rt.call_tool("notes.add", {"a": 2, "b": 40})
        self.assertEqual(reply["result"]["structuredContent"], {"result": 42})
        self.assertEqual(text_of(reply["result"]), "42")
        self.assertFalse(reply["result"]["isError"])

    def test_call_tool_structured_output(self) -> None:
        reply = self.rt.call_tool("weather.forecast", {"city": "Paris", "days": 2})
        result = reply["result"]
        self.assertFalse(result["isError"])
        self.assertEqual(result["structuredContent"]["city"], "paris")
        self.assertEqual(
            result["structuredContent"]["days"],
            [
                {"day": 1, "high_c": 15.0, "low_c": 9.0, "conditions": "rain"},
                {"day": 2, "high_c": 17.0, "low_c": 11.0, "conditions": "cloudy"},
            ],
        )
        self.assertEqual(json.loads(text_of(result)), result["structuredContent"])
        conv = self.rt.call_tool("weather.convert", {"value": 100, "to": "C"})["result"]
        self.assertEqual(conv["structuredContent"], {"value": 37.78, "unit": "C"})

    def test_plain_text_tool(self) -> None:
        result = self.rt.call_tool("notes.shout", {"text": "hello"})["result"]
        self.assertEqual(result["content"], [{"type": "text", "text": "HELLO!"}])
        self.assertNotIn("structuredContent", result)

    def test_tool_error_is_a_result(self) -> None:
        reply = self.rt.call_tool("notes.divide", {"a": 1, "b": 0})
        self.assertNotIn("error", reply)
        self.assertTrue(reply["result"]["isError"])
        self.assertIn("cannot divide by zero", text_of(reply["result"]))

    def test_invalid_arguments_are_a_tool_error(self) -> None:
        reply = self.rt.call_tool("weather.forecast", {"city": "oslo", "days": 99})
        self.assertTrue(reply["result"]["isError"])
        self.assertIn("days", text_of(reply["result"]))

    def test_unknown_tool(self) -> None:
        reply = self.rt.call_tool("weather.nope", {})
        self.assertEqual(reply["error"]["code"], -32602)
        self.assertEqual(reply["error"]["message"], "Unknown tool: weather.nope")
        # the un-namespaced name does not exist while namespacing is on
        self.assertEqual(self.rt.call_tool("add", {"a": 1, "b": 1})["error"]["code"], -32602)

    def test_arguments_must_be_an_object(self) -> None:
        reply = self.rt.request("call_tool", name="notes.add", arguments=[1, 2])
        self.assertEqual(reply["error"]["code"], -32602)

    # -- resources -----------------------------------------------------------
    def test_read_static_resource(self) -> None:
        reply = self.rt.request("read_resource", uri="weather://cities")
        self.assertEqual(
            reply["result"],
            {
                "contents": [
                    {
                        "uri": "weather://cities",
                        "mimeType": "application/json",
                        "text": '["lima", "oslo", "paris", "tokyo"]',
                    }
                ]
            },
        )

    def test_read_template_resource(self) -> None:
        reply = self.rt.request("read_resource", uri="weather://forecast/lima")
        (content,) = reply["result"]["contents"]
        self.assertEqual(content["uri"], "weather://forecast/lima")
        self.assertEqual(json.loads(content["text"])["city"], "lima")
        note = self.rt.request("read_resource", uri="notes://note/broth")["result"]["contents"][0]
        self.assertEqual(note["text"], "Simmer bones for twelve hours; skim often.")

    def test_read_unknown_resource(self) -> None:
        reply = self.rt.request("read_resource", uri="nope://x")
        self.assertEqual(reply["error"]["code"], -32002)
        self.assertEqual(reply["error"]["data"], {"uri": "nope://x"})
        # matches the template, but the package says it does not exist
        reply = self.rt.request("read_resource", uri="notes://note/zzz")
        self.assertEqual(reply["error"]["code"], -32002)
        self.assertEqual(reply["error"]["data"], {"uri": "notes://note/zzz"})

    # -- prompts -------------------------------------------------------------
    def test_get_prompt(self) -> None:
        reply = self.rt.request("get_prompt", name="weather.plan_trip", arguments={"city": "Oslo", "days": "2"})
        result = reply["result"]
        self.assertEqual(result["description"], "Ask the model to plan a trip around the forecast.")
        (msg,) = result["messages"]
        self.assertEqual(msg["role"], "user")
        self.assertIn("visiting Oslo for 2 days", msg["content"]["text"])

    def test_get_prompt_errors(self) -> None:
        self.assertEqual(self.rt.request("get_prompt", name="weather.nope")["error"]["code"], -32602)
        missing = self.rt.request("get_prompt", name="notes.summarize", arguments={})
        self.assertEqual(missing["error"]["code"], -32602)
        self.assertIn("name", missing["error"]["message"])

    # -- notifications ---------------------------------------------------------
    def test_progress_and_log_notifications(self) -> None:
        frames: list = []
        rid = self.rt.start("call_tool", name="weather.survey", arguments={"city": "oslo", "steps": 3})
        reply = self.rt.wait_reply(rid, collect=frames)
        self.assertEqual(text_of(reply["result"]), "surveyed 3 stations in oslo")
        notes = [f["notification"] for f in frames]
        self.assertTrue(all(f["id"] == rid for f in frames))
        progress = [n["params"] for n in notes if n["method"] == "notifications/progress"]
        self.assertEqual([p["progress"] for p in progress], [0, 1, 2, 3])
        self.assertTrue(all(p["total"] == 3 for p in progress))
        self.assertEqual(progress[0]["message"], "station 1 of 3")
        self.assertNotIn("progressToken", progress[0])  # the node fills it in
        logs = [n["params"] for n in notes if n["method"] == "notifications/message"]
        self.assertEqual(
            logs,
            [
                {"level": "info", "data": "surveying oslo (3 stations)"},
                {"level": "info", "data": "survey of oslo complete"},
            ],
        )
        # notifications precede the result
        self.assertEqual(notes[0]["method"], "notifications/message")

    # -- protocol robustness ------------------------------------------------------
    def test_unknown_op(self) -> None:
        reply = self.rt.request("frobnicate")
        self.assertEqual(reply["error"], {"code": -32601, "message": "Unknown op: frobnicate"})

    def test_malformed_frames(self) -> None:
        self.rt.send_raw(encode(b"{not json"))
        f = self.rt.next_frame()
        self.assertIsNone(f["id"])
        self.assertEqual(f["error"]["code"], -32700)
        self.rt.send_raw(encode(b"[1, 2, 3]"))
        self.assertEqual(self.rt.next_frame()["error"]["code"], -32700)
        self.rt.send_raw(encode(b"\xff\xfe\xfd"))
        self.assertEqual(self.rt.next_frame()["error"]["code"], -32700)
        self.rt.send_raw(encode(b""))
        self.assertEqual(self.rt.next_frame()["error"]["code"], -32700)
        # Nesting deeper than Python's stack (RecursionError, not a ValueError): the node
        # refuses such bodies first, and the runtime must survive one all the same.
        deep = b'{"id": 1, "op": "call_tool", "arguments": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
        self.rt.send_raw(encode(deep))
        f = self.rt.next_frame()
        self.assertEqual(f["error"]["code"], -32700)
        self.assertIn("recursion", f["error"]["message"])
        # still alive
        self.assertEqual(self.rt.request("ping")["result"], {})

    def test_frames_split_and_coalesced(self) -> None:
        a = encode({"id": 9001, "op": "ping"})
        b = encode({"id": 9002, "op": "call_tool", "name": "notes.add", "arguments": {"a": 1, "b": 2}})
        data = a + b
        for i in range(len(data)):  # byte by byte
            self.rt.send_raw(data[i : i + 1])
        self.assertEqual(self.rt.wait_reply(9001)["result"], {})
        self.assertEqual(self.rt.wait_reply(9002)["result"]["structuredContent"], {"result": 3})

    def test_duplicate_in_flight_id(self) -> None:
        survey = {"op": "call_tool", "name": "weather.survey", "arguments": {"city": "lima", "steps": 2}}
        self.rt.send({"id": 7777, **survey})
        self.rt.send({"id": 7777, **survey})
        frames: list = []
        # the first final answer for 7777 is the rejection of the duplicate
        reply = self.rt.wait_reply(7777, collect=frames)
        self.assertEqual(reply["error"]["code"], -32600)
        final = self.rt.wait_reply(7777, collect=frames)
        self.assertEqual(text_of(final["result"]), "surveyed 2 stations in lima")

    def test_many_concurrent_calls(self) -> None:
        ids = {}
        for i in range(64):
            ids[self.rt.start("call_tool", name="notes.add", arguments={"a": i, "b": 1000})] = i
        for rid, i in ids.items():
            self.assertEqual(self.rt.wait_reply(rid)["result"]["structuredContent"], {"result": i + 1000})


class NamespaceTest(unittest.TestCase):
    def test_no_namespace_flag(self) -> None:
        with RuntimeProcess(HELLO_REPO, "--no-namespace") as rt:
            self.assertFalse(rt.ready["namespace"])
            names = {t["name"] for p in rt.ready["packages"] for t in p["tools"]}
            self.assertIn("add", names)
            self.assertIn("forecast", names)
            self.assertEqual(rt.call_tool("add", {"a": 1, "b": 2})["result"]["structuredContent"], {"result": 3})
            self.assertEqual(rt.request("get_prompt", name="plan_trip", arguments={"city": "x"})["id"], rt._next_id)
            self.assertEqual(rt.call_tool("notes.add", {"a": 1, "b": 2})["error"]["code"], -32602)

    def test_same_names_are_fine_when_namespaced(self) -> None:
        with RuntimeProcess(fixture("dup-repo")) as rt:
            for name in ("alpha", "beta"):
                pkg = package(rt.ready, name)
                self.assertIsNone(pkg["error"])
                self.assertIn(f"{name}.echo", {t["name"] for t in pkg["tools"]})
            self.assertEqual(text_of(rt.call_tool("beta.echo", {"text": "x"})["result"]), "beta: x")
            self.assertEqual(text_of(rt.call_tool("alpha.echo", {"text": "x"})["result"]), "alpha: x")

    def test_duplicate_names_without_namespace_are_a_load_error(self) -> None:
        with RuntimeProcess(fixture("dup-repo"), "--no-namespace") as rt:
            alpha, beta = package(rt.ready, "alpha"), package(rt.ready, "beta")
            self.assertIsNone(alpha["error"])
            self.assertEqual({t["name"] for t in alpha["tools"]}, {"echo", "only_alpha"})
            err = beta["error"]["message"]
            self.assertIn("tool 'echo' is also defined by package 'alpha'", err)
            self.assertIn("prompt 'greet' is also defined by package 'alpha'", err)
            self.assertEqual(beta["tools"], [])
            self.assertEqual(text_of(rt.call_tool("echo", {"text": "x"})["result"]), "alpha: x")
            self.assertEqual(rt.call_tool("only_beta")["error"]["code"], -32602)


class LoadErrorTest(unittest.TestCase):
    def test_broken_package_is_reported_and_others_load(self) -> None:
        with RuntimeProcess(fixture("broken-repo")) as rt:
            bad = package(rt.ready, "bad")
            self.assertIsNone(bad["server"])
            self.assertIn("importing package 'bad' failed: ModuleNotFoundError", bad["error"]["message"])
            tb = bad["error"]["traceback"]
            self.assertTrue(tb.startswith("Traceback (most recent call last):"), tb)
            self.assertIn(os.path.join("bad", "__init__.py"), tb)
            self.assertIn("ramen_fixture_module_that_does_not_exist", tb)
            self.assertNotIn("ramen_runtime", tb)  # the runtime's own frames are trimmed
            self.assertEqual(bad["tools"], [])
            good = package(rt.ready, "good")
            self.assertIsNone(good["error"])
            self.assertEqual(text_of(rt.call_tool("good.echo", {"text": "hi"})["result"]), "hi")

    def test_printing_package_does_not_corrupt_frames(self) -> None:
        with RuntimeProcess(fixture("broken-repo")) as rt:
            for _ in range(3):
                reply = rt.call_tool("good.chatty", {"text": "quiet please"})
                self.assertEqual(text_of(reply["result"]), "quiet please")
            self.assertEqual(rt.request("ping")["result"], {})
            rt.close()
            err = rt.stderr_so_far()
        self.assertIn("good: printed to stdout while importing", err)
        self.assertIn("chatty: print() quiet please", err)
        self.assertIn("chatty: os.write(1)", err)


class ManifestTest(unittest.TestCase):
    def test_manifest_lists_packages_and_servers(self) -> None:
        with RuntimeProcess(fixture("manifest-repo")) as rt:
            names = [p["name"] for p in rt.ready["packages"]]
            self.assertEqual(names, ["alpha", "helpers"])  # `ignored` is never imported
            alpha = package(rt.ready, "alpha")
            self.assertEqual(alpha["server"], "alpha.app:service")
            self.assertEqual([t["name"] for t in alpha["tools"]], ["alpha.hello"])
            helpers = package(rt.ready, "helpers")
            self.assertIn("no MCP server object found in package 'helpers'", helpers["error"]["message"])
            self.assertEqual(text_of(rt.call_tool("alpha.hello", {"name": "ramen"})["result"]), "hello ramen")

    def test_flag_overrides_manifest_namespace(self) -> None:
        with RuntimeProcess(fixture("manifest-repo"), "--no-namespace") as rt:
            self.assertFalse(rt.ready["namespace"])
            self.assertEqual([t["name"] for t in package(rt.ready, "alpha")["tools"]], ["hello"])

    def test_manifest_can_switch_namespacing_off(self) -> None:
        with RuntimeProcess(fixture("conformance-repo")) as rt:
            self.assertFalse(rt.ready["namespace"])
            pkg = package(rt.ready, "conformance")
            self.assertIsNone(pkg["error"])
            self.assertIn("test_simple_text", {t["name"] for t in pkg["tools"]})

    def test_bad_manifest_is_reported(self) -> None:
        with tempfile.TemporaryDirectory() as root:
            with open(os.path.join(root, "ramen.toml"), "w") as fh:
                fh.write("namespace = maybe\n")
            with RuntimeProcess(root) as rt:
                (entry,) = rt.ready["packages"]
                self.assertEqual(entry["name"], "ramen.toml")
                self.assertIn("cannot read ramen.toml", entry["error"]["message"])


def write_repo(root: str, files: dict[str, str]) -> str:
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as fh:
            fh.write(textwrap.dedent(text))
    return root


SIMPLE_SERVER = """
    from mcp.server.mcpserver import MCPServer
    mcp = MCPServer("x")

    @mcp.tool()
    def hi() -> str:
        return "hi"
"""


class DiscoveryTest(unittest.TestCase):
    """Repos built on the fly for the corners of package discovery."""

    def test_discovery_rules(self) -> None:
        with tempfile.TemporaryDirectory() as root:
            write_repo(
                root,
                {
                    "plain/__init__.py": SIMPLE_SERVER,
                    "viasub/__init__.py": "",
                    "viasub/server.py": SIMPLE_SERVER.replace("mcp = ", "anything = ").replace("@mcp.", "@anything."),
                    "brokensub/__init__.py": "",
                    "brokensub/server.py": "raise RuntimeError('boom in brokensub.server')\n",
                    "noserver/__init__.py": "x = 1\n",
                    "tests/__init__.py": "raise RuntimeError('tests must be skipped')\n",
                    "_private/__init__.py": "raise RuntimeError('_private must be skipped')\n",
                    "notapackage/module.py": "raise RuntimeError('no __init__, not a package')\n",
                },
            )
            with RuntimeProcess(root) as rt:
                names = [p["name"] for p in rt.ready["packages"]]
                self.assertEqual(names, ["brokensub", "noserver", "plain", "viasub"])
                self.assertEqual(package(rt.ready, "plain")["server"], "plain:mcp")
                self.assertEqual(package(rt.ready, "viasub")["server"], "viasub.server:anything")
                self.assertEqual(text_of(rt.call_tool("viasub.hi")["result"]), "hi")
                broken = package(rt.ready, "brokensub")["error"]
                self.assertIn("RuntimeError: boom in brokensub.server", broken["message"])
                self.assertIn(os.path.join("brokensub", "server.py"), broken["traceback"])
                self.assertIn("no MCP server object found", package(rt.ready, "noserver")["error"]["message"])

    def test_lifespan_failure_and_listing_failure(self) -> None:
        with tempfile.TemporaryDirectory() as root:
            write_repo(
                root,
                {
                    "badlife/__init__.py": """
                        from contextlib import asynccontextmanager
                        from mcp.server.mcpserver import MCPServer

                        @asynccontextmanager
                        async def lifespan(server):
                            raise ConnectionError("database unreachable")
                            yield

                        mcp = MCPServer("badlife", lifespan=lifespan)
                    """,
                    "badlist/__init__.py": """
                        class Server:
                            async def list_tools(self):
                                raise RuntimeError("cannot list")

                            async def call_tool(self, name, arguments):
                                return []

                        mcp = Server()
                    """,
                    "good/__init__.py": SIMPLE_SERVER,
                },
            )
            with RuntimeProcess(root) as rt:
                life = package(rt.ready, "badlife")["error"]
                self.assertIn("ConnectionError: database unreachable", life["message"])
                self.assertIn("database unreachable", life["traceback"])
                lst = package(rt.ready, "badlist")
                self.assertEqual(lst["kind"], "generic")
                self.assertIn("RuntimeError: cannot list", lst["error"]["message"])
                self.assertIsNone(package(rt.ready, "good")["error"])

    def test_generic_server_object(self) -> None:
        with tempfile.TemporaryDirectory() as root:
            write_repo(
                root,
                {
                    "gen/__init__.py": """
                        class Server:
                            async def list_tools(self):
                                return [{"name": "twice", "inputSchema": {"type": "object"}}]

                            async def call_tool(self, name, arguments):
                                if arguments.get("n") is None:
                                    raise ValueError("n is required")
                                return {"value": 2 * arguments["n"]}

                        app = Server()
                    """,
                },
            )
            with RuntimeProcess(root) as rt:
                pkg = package(rt.ready, "gen")
                self.assertEqual((pkg["kind"], pkg["server"]), ("generic", "gen:app"))
                self.assertEqual([t["name"] for t in pkg["tools"]], ["gen.twice"])
                result = rt.call_tool("gen.twice", {"n": 21})["result"]
                self.assertEqual(result["structuredContent"], {"value": 42})
                err = rt.call_tool("gen.twice", {})["result"]
                self.assertTrue(err["isError"])
                self.assertEqual(text_of(err), "n is required")

    def test_duplicate_resource_uri_is_always_an_error(self) -> None:
        res = (
            SIMPLE_SERVER
            + """
    @mcp.resource("shared://thing")
    def thing() -> str:
        return "thing"
"""
        )
        with tempfile.TemporaryDirectory() as root:
            write_repo(root, {"aaa/__init__.py": res, "bbb/__init__.py": res})
            with RuntimeProcess(root) as rt:
                self.assertIsNone(package(rt.ready, "aaa")["error"])
                self.assertIn(
                    "resource 'shared://thing' is also defined by package 'aaa'",
                    package(rt.ready, "bbb")["error"]["message"],
                )
                self.assertEqual(rt.call_tool("bbb.hi")["error"]["code"], -32602)


class CallLifecycleTest(unittest.TestCase):
    """Cancellation, concurrency, crashes and shutdown, on the slow fixture."""

    def setUp(self) -> None:
        self.rt = RuntimeProcess(fixture("slow-repo"))

    def tearDown(self) -> None:
        self.rt.close()

    def stats(self) -> dict:
        return self.rt.call_tool("slow.stats")["result"]["structuredContent"]

    def test_cancel_stops_the_task(self) -> None:
        rid = self.rt.start("call_tool", name="slow.sleep", arguments={"seconds": 5})
        frames: list = []
        # wait until it is running (first progress notification)
        first = self.rt.next_frame()
        self.assertEqual(first["id"], rid)
        self.assertEqual(first["notification"]["method"], "notifications/progress")
        t0 = time.monotonic()
        self.rt.send({"op": "cancel", "target": rid})
        reply = self.rt.wait_reply(rid, timeout=2, collect=frames)
        self.assertLess(time.monotonic() - t0, 1.0)
        self.assertEqual(reply["error"], {"code": -32800, "message": "Request cancelled"})
        time.sleep(0.1)
        self.assertEqual(self.stats(), {"running": 0, "finished": 0, "cancelled": 1})
        # nothing more arrives for the cancelled call
        self.assertEqual(self.rt.request("ping")["result"], {})
        self.assertFalse([f for f in self.rt.backlog if f.get("id") == rid])

    def test_cancel_of_unknown_or_finished_call_is_ignored(self) -> None:
        self.rt.send({"op": "cancel", "target": 424242})
        rid = self.rt.start("call_tool", name="slow.fast")
        self.rt.wait_reply(rid)
        self.rt.send({"op": "cancel", "target": rid})
        ping = self.rt.start("ping")
        self.assertEqual(self.rt.next_frame(), {"id": ping, "result": {}})

    def test_slow_call_does_not_block_fast_calls(self) -> None:
        slow = self.rt.start("call_tool", name="slow.sleep", arguments={"seconds": 0.8})
        fast = self.rt.start("call_tool", name="slow.fast")
        order = []
        while len(order) < 2:
            f = self.rt.next_frame(timeout=5)
            if "result" in f or "error" in f:
                order.append(f["id"])
        self.assertEqual(order, [fast, slow])

    def test_interleaved_slow_calls_run_concurrently(self) -> None:
        t0 = time.monotonic()
        ids = [self.rt.start("call_tool", name="slow.sleep", arguments={"seconds": 0.5}) for _ in range(10)]
        for rid in ids:
            self.assertEqual(text_of(self.rt.wait_reply(rid, timeout=5)["result"]), "slept 0.5")
        self.assertLess(time.monotonic() - t0, 2.5)  # not 10 x 0.5 s

    def test_shutdown_cancels_in_flight_calls_and_exits_0(self) -> None:
        rid = self.rt.start("call_tool", name="slow.sleep", arguments={"seconds": 30})
        self.assertEqual(self.rt.next_frame()["id"], rid)  # running
        self.rt.send({"op": "shutdown"})
        reply = self.rt.wait_reply(rid, timeout=5)
        self.assertEqual(reply["error"]["code"], -32800)
        self.assertEqual(self.rt.wait_exit(10), 0)

    def test_client_params_come_from_the_client_the_node_passes(self) -> None:
        client = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "inspector", "version": "1"}}
        reply = self.rt.call_tool("slow.client_name", client=client)
        self.assertEqual(text_of(reply["result"]), "inspector")
        self.assertEqual(text_of(self.rt.call_tool("slow.client_name")["result"]), "unknown")

    def test_lifespan_is_entered_and_exited(self) -> None:
        self.assertEqual(text_of(self.rt.call_tool("slow.lifespan_state")["result"]), "connected")
        self.rt.send({"op": "shutdown"})
        self.assertEqual(self.rt.wait_exit(10), 0)
        err = self.rt.stderr_so_far()
        self.assertIn("slow: lifespan started", err)
        self.assertIn("slow: lifespan closed", err)

    def test_eof_exits_0(self) -> None:
        assert self.rt.proc.stdin is not None
        self.rt.proc.stdin.close()
        self.assertEqual(self.rt.wait_exit(10), 0)

    def test_oversized_frame_exits_2(self) -> None:
        self.rt.send_raw((64 * 1024 * 1024 + 1).to_bytes(4, "big"))
        f = self.rt.next_frame()
        self.assertIsNone(f["id"])
        self.assertIn("Frame too large", f["error"]["message"])
        self.assertEqual(self.rt.wait_exit(10), 2)

    def test_crash_kills_the_process(self) -> None:
        self.rt.start("call_tool", name="slow.crash")
        self.assertEqual(self.rt.wait_exit(10), 1)


class ServerRequestsTest(unittest.TestCase):
    """Server -> client requests (sampling, elicitation) and the conformance fixture."""

    rt: RuntimeProcess

    @classmethod
    def setUpClass(cls) -> None:
        cls.rt = RuntimeProcess(fixture("conformance-repo"))

    @classmethod
    def tearDownClass(cls) -> None:
        cls.rt.close()

    def test_sampling_round_trip(self) -> None:
        rid = self.rt.start("call_tool", name="test_sampling", arguments={"prompt": "Test prompt"})
        f = self.rt.next_frame()
        self.assertEqual(f["id"], rid)
        req = f["request"]
        self.assertEqual(req["method"], "sampling/createMessage")
        self.assertEqual(
            req["params"],
            {"messages": [{"role": "user", "content": {"type": "text", "text": "Test prompt"}}], "maxTokens": 100},
        )
        self.rt.send(
            {
                "op": "response",
                "rid": req["rid"],
                "result": {
                    "role": "assistant",
                    "content": {"type": "text", "text": "hello from the client"},
                    "model": "test-model",
                    "stopReason": "endTurn",
                },
            }
        )
        self.assertEqual(text_of(self.rt.wait_reply(rid)["result"]), "LLM response: hello from the client")

    def test_sampling_error_answer(self) -> None:
        rid = self.rt.start("call_tool", name="test_sampling", arguments={"prompt": "x"})
        req = self.rt.next_frame()["request"]
        self.rt.send({"op": "response", "rid": req["rid"], "error": {"code": -32601, "message": "no sampling here"}})
        self.assertEqual(
            text_of(self.rt.wait_reply(rid)["result"]), "Sampling not supported or error: no sampling here"
        )

    def test_elicitation_round_trip(self) -> None:
        rid = self.rt.start("call_tool", name="test_elicitation", arguments={"message": "Who are you?"})
        req = self.rt.next_frame()["request"]
        self.assertEqual(req["method"], "elicitation/create")
        self.assertEqual(req["params"]["message"], "Who are you?")
        self.assertEqual(req["params"]["requestedSchema"]["required"], ["username", "email"])
        answer = {"action": "accept", "content": {"username": "u", "email": "e"}}
        self.rt.send({"op": "response", "rid": req["rid"], "result": answer})
        self.assertEqual(
            text_of(self.rt.wait_reply(rid)["result"]),
            'User response: action=accept, content={"username":"u","email":"e"}',
        )

    def test_cancelling_a_call_waiting_on_the_client(self) -> None:
        rid = self.rt.start("call_tool", name="test_elicitation", arguments={"message": "?"})
        req = self.rt.next_frame()["request"]
        self.rt.send({"op": "cancel", "target": rid})
        self.assertEqual(self.rt.wait_reply(rid)["error"]["code"], -32800)
        # a late answer is ignored
        self.rt.send({"op": "response", "rid": req["rid"], "result": {"action": "decline"}})
        self.assertEqual(self.rt.request("ping")["result"], {})

    def test_meta_reaches_the_tool(self) -> None:
        frames: list = []
        rid = self.rt.start("call_tool", name="test_tool_with_progress", arguments={}, meta={"progressToken": "tok-7"})
        reply = self.rt.wait_reply(rid, collect=frames)
        self.assertEqual(text_of(reply["result"]), "tok-7")
        self.assertEqual([f["notification"]["params"]["progress"] for f in frames], [0, 50, 100])

    def test_logging_tool(self) -> None:
        frames: list = []
        rid = self.rt.start("call_tool", name="test_tool_with_logging", arguments={})
        self.rt.wait_reply(rid, collect=frames)
        self.assertEqual(
            [f["notification"]["params"]["data"] for f in frames],
            ["Tool execution started", "Tool processing data", "Tool execution completed"],
        )

    def test_close_sse_stream_is_a_no_op(self) -> None:
        frames: list = []
        rid = self.rt.start("call_tool", name="test_reconnection", arguments={})
        reply = self.rt.wait_reply(rid, collect=frames)
        self.assertEqual(text_of(reply["result"]), "Reconnection test completed")
        self.assertEqual(
            [f["notification"]["params"]["data"] for f in frames], ["Before disconnect", "After reconnect"]
        )

    def test_content_types(self) -> None:
        image = self.rt.call_tool("test_image_content")["result"]["content"][0]
        self.assertEqual((image["type"], image["mimeType"]), ("image", "image/png"))
        audio = self.rt.call_tool("test_audio_content")["result"]["content"][0]
        self.assertEqual((audio["type"], audio["mimeType"]), ("audio", "audio/wav"))
        mixed = self.rt.call_tool("test_multiple_content_types")["result"]["content"]
        self.assertEqual([c["type"] for c in mixed], ["text", "image", "resource"])
        err = self.rt.call_tool("test_error_handling")["result"]
        self.assertTrue(err["isError"])
        self.assertIn("This tool intentionally returns an error for testing", text_of(err))

    def test_binary_resource_and_template(self) -> None:
        blob = self.rt.request("read_resource", uri="test://static-binary")["result"]["contents"][0]
        self.assertEqual(blob["mimeType"], "image/png")
        self.assertTrue(blob["blob"].startswith("iVBORw0KGgo"))
        data = self.rt.request("read_resource", uri="test://template/123/data")["result"]["contents"][0]
        self.assertEqual(json.loads(data["text"]), {"id": "123", "templateTest": True, "data": "Data for ID: 123"})

    def test_json_schema_2020_12_preserved(self) -> None:
        tool = next(t for t in self.rt.ready["packages"][0]["tools"] if t["name"] == "json_schema_2020_12_tool")
        schema = tool["inputSchema"]
        self.assertEqual(schema["$schema"], "https://json-schema.org/draft/2020-12/schema")
        self.assertIn("address", schema["$defs"])
        self.assertIs(schema["additionalProperties"], False)


if __name__ == "__main__":
    unittest.main()
