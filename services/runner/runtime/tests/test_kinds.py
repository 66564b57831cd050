"""Every in-process server kind, driven with the real SDKs from PyPI (scripts/install-compat-servers).

| class | kind | venv |
|---|---|---|
| FastMCPTest | fastmcp (standalone fastmcp 4.x) | compat/fastmcp |
| FastMCP1Test, LowLevel1Test | fastmcp1, lowlevel (SDK 1.x) | compat/mcp1 |
| MCPServerTest, LowLevel2Test | mcpserver, lowlevel (SDK 2.x) | compat/mcp2 |
| UndrivableTest | load errors for objects the runtime cannot drive | all three |
"""

from __future__ import annotations

import tempfile
import textwrap
import unittest

from .kind_contract import CONTRACT_TOOLS, SESSION_CLIENT, KindContract
from .rtclient import RuntimeProcess, package, text_of
from .venvs import compat_python, fixture


class FastMCPTest(KindContract, unittest.TestCase):
    root, pkg, kind, server = fixture("fastmcp4-repo"), "fm", "fastmcp", "fm:mcp"
    tools = CONTRACT_TOOLS | {"remember", "recall", "shared", "versioned"}

    @classmethod
    def python(cls) -> str:
        return compat_python("fastmcp")

    def test_session_state_follows_the_client_session_id(self) -> None:
        other = dict(SESSION_CLIENT, sessionId="session-2")
        sid = text_of(self.call("remember", {"value": "kept"}, client=SESSION_CLIENT)["result"])
        self.assertEqual(sid, "session-1")  # fastmcp reads the mcp-session-id header of the request
        self.assertEqual(text_of(self.call("recall", client=SESSION_CLIENT)["result"]), "kept")
        self.assertEqual(text_of(self.call("recall", client=other)["result"]), "None")

    def test_shared_dependencies_live_as_long_as_the_lifespan(self) -> None:
        for _ in range(2):
            self.assertEqual(text_of(self.call("shared")["result"]), "pool #1, opened 1 time(s)")

    def test_component_versions(self) -> None:
        self.assertEqual(text_of(self.call("versioned")["result"]), "v2")  # the highest
        pinned = self.call("versioned", meta={"fastmcp": {"version": "1"}})["result"]
        self.assertEqual(text_of(pinned), "v1")

    def test_non_object_output_is_wrapped_as_fastmcp_does(self) -> None:
        r = self.call("remember", {"value": "v"})["result"]
        self.assertEqual(r["structuredContent"], {"result": r["content"][0]["text"]})
        self.assertEqual(r["_meta"]["fastmcp"]["wrap_result"], True)


class FastMCP1Test(KindContract, unittest.TestCase):
    root, pkg, kind, server = fixture("mcp1-repo"), "high", "fastmcp1", "high:mcp"

    @classmethod
    def python(cls) -> str:
        return compat_python("mcp1")


class LowLevel1Test(KindContract, unittest.TestCase):
    root, pkg, kind, server = fixture("mcp1-repo"), "low", "lowlevel", "low:server"

    @classmethod
    def python(cls) -> str:
        return compat_python("mcp1")

    def test_pages_are_followed(self) -> None:
        uris = [r["uri"] for r in package(self.rt.ready, "low")["resources"]]
        self.assertEqual(uris, ["low://extra/0", "low://extra/1", "low://extra/2", "low://info"])  # 2 pages of 2

    def test_input_is_validated_by_the_sdk(self) -> None:
        r = self.call("point", {"x": "one", "y": 2})["result"]
        self.assertTrue(r["isError"])
        self.assertIn("Input validation error", text_of(r))


class MCPServerTest(KindContract, unittest.TestCase):
    root, pkg, kind, server = fixture("mcp2-repo"), "high", "mcpserver", "high:mcp"

    @classmethod
    def python(cls) -> str:
        return compat_python("mcp2")


class LowLevel2Test(KindContract, unittest.TestCase):
    root, pkg, kind, server = fixture("mcp2-repo"), "low", "lowlevel", "low:server"
    tools = CONTRACT_TOOLS | {"guarded", "hang"}

    @classmethod
    def python(cls) -> str:
        return compat_python("mcp2")

    def test_pages_are_followed(self) -> None:
        names = [t["name"] for t in package(self.rt.ready, "low")["tools"]]
        self.assertEqual(len(names), 7)  # 4 pages of 2

    def test_server_middleware_runs(self) -> None:
        err = self.call("guarded")["error"]
        self.assertEqual(err, {"code": -32602, "message": "guarded by middleware"})


def write_repo(root: str, files: dict[str, str]) -> None:
    import os

    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            fh.write(textwrap.dedent(text))


class UndrivableTest(unittest.TestCase):
    """An object the runtime cannot drive is a load error naming the package, the kind and why."""

    def load(self, venv: str, files: dict[str, str]) -> dict:
        with tempfile.TemporaryDirectory() as root:
            write_repo(root, files)
            with RuntimeProcess(root, python=compat_python(venv), timeout=60) as rt:
                return rt.ready

    def test_lowlevel_servers_without_the_handlers_they_list(self) -> None:
        v2 = """
            import mcp_types as types
            from mcp.server.lowlevel import Server

            async def list_tools(ctx, params):
                return types.ListToolsResult(tools=[types.Tool(name="t", input_schema={"type": "object"})])

            server = Server("half", on_list_tools=list_tools)
        """
        v1 = """
            import mcp.types as types
            from mcp.server.lowlevel import Server

            server = Server("half")

            @server.list_prompts()
            async def list_prompts():
                return [types.Prompt(name="p")]
        """
        for venv, text, what in (("mcp2", v2, "tools/call"), ("mcp1", v1, "prompts/get")):
            with self.subTest(venv=venv):
                half = package(self.load(venv, {"half/__init__.py": text, "ok/__init__.py": ""}), "half")
                self.assertEqual(half["kind"], "lowlevel")
                self.assertEqual(half["tools"] + half["prompts"], [])
                self.assertEqual(
                    half["error"]["message"],
                    f"cannot drive package 'half' (kind 'lowlevel', half:server): it lists "
                    f"{what.split('/')[0]} but registers no {what} handler",
                )

    def test_generic_object_listing_resources_it_cannot_read(self) -> None:
        text = """
            class Server:
                async def list_tools(self):
                    return []
                async def call_tool(self, name, arguments):
                    return []
                async def list_resources(self):
                    return [{"uri": "gen://x", "name": "x"}]

            app = Server()
        """
        gen = package(self.load("mcp2", {"gen/__init__.py": text}), "gen")
        self.assertEqual(gen["kind"], "generic")
        self.assertEqual(
            gen["error"]["message"],
            "cannot drive package 'gen' (kind 'generic', gen:app): it lists resources but has no read_resource method",
        )
        self.assertEqual(gen["resources"], [])

    def test_an_mcp_client_is_not_a_server(self) -> None:
        files = {
            "cl/__init__.py": """
                from fastmcp import Client, FastMCP
                client = Client(FastMCP("elsewhere"))
            """,
            "named/__init__.py": """
                from fastmcp import Client, FastMCP
                client = Client(FastMCP("elsewhere"))
            """,
            "ramen.toml": """
                [packages.cl]
                [packages.named]
                server = "named:client"
            """,
        }
        report = self.load("fastmcp", files)
        self.assertIn("no MCP server object found in package 'cl'", package(report, "cl")["error"]["message"])
        self.assertEqual(
            package(report, "named")["error"]["message"],
            "named:client is an MCP client (fastmcp.client.client.Client), not a server",
        )


if __name__ == "__main__":
    unittest.main()
