"""The ``stdio`` kind: MCP server programs named in ramen.toml, run as child processes.

With the venv ``compat/stdio`` (scripts/install-compat-servers): the official reference
servers ``mcp-server-time`` and ``mcp-server-git`` from PyPI, and the fixture
``mcp2-repo/low`` run as ``python -m low`` (the kind contract, plus pagination, progress,
logs and a call that hangs so its server can be killed under it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import textwrap
import unittest
from typing import Any

from .kind_contract import CONTRACT_TOOLS, KindContract
from .rtclient import RuntimeProcess, package, text_of
from .venvs import child_running, compat_python, eventually, fixture


def manifest_root(tmp: str, toml: str) -> str:
    root = os.path.join(tmp, "snapshot")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "ramen.toml"), "w") as fh:
        fh.write(textwrap.dedent(toml))
    return root


class StdioContractTest(KindContract, unittest.TestCase):
    """The SDK 2.x low-level fixture server, over stdio instead of in-process."""

    pkg, kind, server = "low", "stdio", "python -m low"
    tools = CONTRACT_TOOLS | {"guarded", "hang"}
    # The SDK 2.x dispatcher in the child runs handlers in its stdin reader's context, which
    # does not hold the ContextVars the lifespan set (in-process, the runtime gives calls the
    # lifespan's context: see ramen_runtime/lifespan.py).
    life = "connected / unset"
    tmp: tempfile.TemporaryDirectory

    @classmethod
    def python(cls) -> str:
        return compat_python("stdio")

    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.TemporaryDirectory()
        cls.root = manifest_root(
            cls.tmp.name,
            f"""
            [packages.low]
            command = ["python", "-m", "low"]
            cwd = "{fixture("mcp2-repo")}"
            env = {{ PYTHONUNBUFFERED = "1" }}
            """,
        )
        super().setUpClass()

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        cls.tmp.cleanup()

    def test_pages_are_followed(self) -> None:
        self.assertEqual(len(package(self.rt.ready, "low")["tools"]), 7)  # 4 pages of 2

    def test_errors_of_the_server_pass_through(self) -> None:
        self.assertEqual(self.call("guarded")["error"], {"code": -32602, "message": "guarded by middleware"})

    def test_the_server_is_restarted_when_it_dies(self) -> None:
        rt = self.start_runtime()
        try:
            pid = eventually(lambda: child_running(rt.proc.pid, "-m low"))
            frames: list[dict[str, Any]] = []
            rid = rt.start("call_tool", name="low.hang")
            first = rt.next_frame()  # the server is running the call
            self.assertEqual((first["id"], first["notification"]["params"]["message"]), (rid, "hanging"))
            os.kill(pid, signal.SIGKILL)
            err = rt.wait_reply(rid, timeout=10, collect=frames)["error"]
            self.assertEqual(err["code"], -32603)
            self.assertIn("package 'low' was killed by signal 9 (SIGKILL) during the request", err["message"])

            def works() -> None:
                reply = rt.call_tool("low.point", {"x": 5, "y": 6}, timeout=20)
                assert "result" in reply, reply
                self.assertEqual(reply["result"]["structuredContent"], {"x": 5, "y": 6})

            eventually(works)
            self.assertNotEqual(child_running(rt.proc.pid, "-m low"), pid)
            # the restarted server still routes progress and logs to the call
            notes: list[dict[str, Any]] = []
            done = rt.wait_reply(rt.start("call_tool", name="low.work", arguments={"steps": 1}), collect=notes)
            self.assertEqual(text_of(done["result"]), "did 1")
            self.assertEqual(
                [f["notification"]["method"] for f in notes],
                ["notifications/message", "notifications/message", "notifications/progress"],
            )
        finally:
            rt.close()
        self.assertIn("restarting it in", rt.stderr_so_far())


class ReferenceServersTest(unittest.TestCase):
    """mcp-server-time and mcp-server-git, pinned in scripts/compat/stdio.txt."""

    rt: RuntimeProcess
    tmp: tempfile.TemporaryDirectory

    @classmethod
    def setUpClass(cls) -> None:
        python = compat_python("stdio")
        cls.tmp = tempfile.TemporaryDirectory()
        cls.repo = os.path.join(cls.tmp.name, "repo")
        git = ["git", "-C", cls.repo, "-c", "user.name=Test", "-c", "user.email=test@example.com"]
        os.makedirs(cls.repo)
        subprocess.run(["git", "init", "-q", "-b", "main", cls.repo], check=True)
        with open(os.path.join(cls.repo, "hello.txt"), "w") as fh:
            fh.write("hello\n")
        subprocess.run([*git, "add", "hello.txt"], check=True)
        subprocess.run([*git, "commit", "-q", "-m", "first commit"], check=True)
        cls.root = manifest_root(
            cls.tmp.name,
            f"""
            [packages.time]
            command = ["python", "-m", "mcp_server_time", "--local-timezone", "UTC"]

            [packages.git]
            command = ["mcp-server-git", "--repository", "{cls.repo}"]
            """,
        )
        cls.rt = RuntimeProcess(cls.root, python=python, timeout=60)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.rt.close()
        cls.tmp.cleanup()

    def test_report(self) -> None:
        time_pkg = package(self.rt.ready, "time")
        self.assertIsNone(time_pkg["error"])
        self.assertEqual(
            (time_pkg["kind"], time_pkg["server"]), ("stdio", "python -m mcp_server_time --local-timezone UTC")
        )
        tools = {t["name"]: t for t in time_pkg["tools"]}
        self.assertEqual(set(tools), {"time.get_current_time", "time.convert_time"})
        current = tools["time.get_current_time"]
        self.assertEqual(current["inputSchema"]["required"], ["timezone"])
        self.assertIn("datetime", current["outputSchema"]["properties"])
        self.assertEqual(current["annotations"]["readOnlyHint"], True)
        self.assertEqual((time_pkg["resources"], time_pkg["prompts"]), ([], []))

        git_pkg = package(self.rt.ready, "git")
        self.assertIsNone(git_pkg["error"])
        self.assertEqual(git_pkg["server"], f"mcp-server-git --repository {self.repo}")
        names = {t["name"] for t in git_pkg["tools"]}
        self.assertLessEqual({"git.git_status", "git.git_log", "git.git_diff", "git.git_commit"}, names)

    def test_time_tools(self) -> None:
        r = self.rt.call_tool("time.get_current_time", {"timezone": "Europe/Paris"})["result"]
        self.assertFalse(r["isError"])
        self.assertEqual(r["structuredContent"]["timezone"], "Europe/Paris")
        r = self.rt.call_tool(
            "time.convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
        )["result"]
        self.assertEqual(r["structuredContent"]["target"]["datetime"][11:16], "21:00")

    def test_calls_from_a_2026_request(self) -> None:
        # The node passes a stateless request's _meta verbatim; the runtime speaks the
        # handshake revision with the program, which refuses that revision's envelope keys.
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
            "progressToken": "p",
        }
        r = self.rt.call_tool("time.get_current_time", {"timezone": "UTC"}, meta=meta)
        self.assertIn("result", r, r)
        self.assertEqual(r["result"]["structuredContent"]["timezone"], "UTC")

    def test_time_tool_error(self) -> None:
        r = self.rt.call_tool("time.get_current_time", {"timezone": ""})["result"]
        self.assertTrue(r["isError"])
        self.assertIn("Missing required argument: timezone", text_of(r))

    def test_git_tools(self) -> None:
        status = self.rt.call_tool("git.git_status", {"repo_path": self.repo})["result"]
        self.assertFalse(status["isError"])
        self.assertIn("On branch main", text_of(status))
        log = self.rt.call_tool("git.git_log", {"repo_path": self.repo})["result"]
        self.assertIn("first commit", text_of(log))
        outside = self.rt.call_tool("git.git_status", {"repo_path": self.tmp.name})["result"]
        self.assertTrue(outside["isError"])  # confined to --repository

    def test_restart_after_the_server_is_killed(self) -> None:
        pid = child_running(self.rt.proc.pid, "mcp_server_time")
        # Stopped, it cannot answer: the call is in flight for sure when the kill lands.
        os.kill(pid, signal.SIGSTOP)
        rid = self.rt.start("call_tool", name="time.get_current_time", arguments={"timezone": "UTC"})
        self.assertEqual(self.rt.request("ping")["result"], {})  # the call was dispatched
        os.kill(pid, signal.SIGKILL)
        err = self.rt.wait_reply(rid, timeout=10)
        self.assertEqual(err["error"]["code"], -32603)  # an error, not a hang

        def works() -> None:
            reply = self.rt.call_tool("time.get_current_time", {"timezone": "UTC"}, timeout=20)
            assert "result" in reply, reply
            self.assertEqual(reply["result"]["structuredContent"]["timezone"], "UTC")

        eventually(works)
        self.assertNotEqual(child_running(self.rt.proc.pid, "mcp_server_time"), pid)
        # The runtime told the node, outside any call, to list again.
        hints = [f for f in self.rt.backlog if "id" not in f and "notification" in f]
        self.assertEqual(hints, [{"notification": {"method": "notifications/tools/list_changed"}}])
        self.assertIsNone(package(self.rt.request("list", timeout=30)["result"], "time")["error"])


class StdioLoadErrorTest(unittest.TestCase):
    """A program that cannot be driven is a load error naming the package, the kind and why."""

    def test_programs_that_do_not_serve_mcp(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            root = manifest_root(
                tmp,
                """
                [packages.missing]
                command = ["no-such-mcp-server-anywhere"]

                [packages.crash]
                command = ["python", "-c", "import sys; print('no database', file=sys.stderr); sys.exit(3)"]

                [packages.chatter]
                command = ["python", "-c", "print('hello, I am not MCP')"]

                [packages.time]
                command = ["python", "-m", "mcp_server_time"]
                """,
            )
            with RuntimeProcess(root, python=compat_python("stdio"), timeout=60) as rt:
                report = rt.ready
                self.assertEqual([p["kind"] for p in report["packages"]], ["stdio"] * 4)
                missing = package(report, "missing")["error"]
                self.assertRegex(
                    missing["message"],
                    r"^cannot drive package 'missing' \(kind 'stdio', no-such-mcp-server-anywhere\): "
                    r"command 'no-such-mcp-server-anywhere' was found neither in /.*/bin nor on PATH$",
                )
                crash = package(report, "crash")["error"]
                self.assertRegex(
                    crash["message"],
                    r"^cannot drive package 'crash' \(kind 'stdio', python -c .*\): "
                    r"it exited with code 3 before answering initialize$",
                )
                self.assertEqual(crash["traceback"], "no database")  # the program's stderr
                chatter = package(report, "chatter")["error"]
                self.assertRegex(chatter["message"], r": it exited with code 0 before answering initialize$")
                self.assertIsNone(package(report, "time")["error"])
                self.assertEqual(len(package(report, "time")["tools"]), 2)


# A stdio server that writes a line nested 100,000 deep (well-formed JSON) before answering
# initialize: Python's parser raises RecursionError on it, not ValueError.
DEEP_LINE_SERVER = """
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "initialize":
        print("[" * 100_000 + "]" * 100_000, flush=True)
        result = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "deep", "version": "0"}}
    elif m["method"] == "tools/list":
        result = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": result}), flush=True)
"""


class StdioHostileOutputTest(unittest.TestCase):
    def test_a_line_nested_past_the_stack_is_skipped_like_any_line_that_is_not_json(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, "deep_server.py")
            with open(script, "w") as fh:
                fh.write(DEEP_LINE_SERVER)
            root = manifest_root(tmp, f"""
                [packages.deep]
                command = ["python", "{script}"]
                """)
            with RuntimeProcess(root, python=compat_python("stdio"), timeout=60) as rt:
                self.assertIsNone(package(rt.ready, "deep")["error"])
                self.assertEqual([t["name"] for t in package(rt.ready, "deep")["tools"]], ["deep.t"])
                self.assertIn("wrote a line that is not JSON", rt.stderr_so_far())


class StdioManifestTest(unittest.TestCase):
    def test_array_form_with_env_and_cwd(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            root = manifest_root(
                tmp,
                """
                [[packages]]
                name = "clock-1"
                command = ["python", "launch.py"]
                cwd = "work"
                env = { CLOCK = "on" }
                """,
            )
            os.makedirs(os.path.join(root, "work"))
            with open(os.path.join(root, "work", "launch.py"), "w") as fh:
                fh.write(
                    textwrap.dedent(
                        """
                        import os, runpy, sys
                        assert os.environ["CLOCK"] == "on" and os.path.basename(os.getcwd()) == "work"
                        sys.argv = ["mcp_server_time"]
                        runpy.run_module("mcp_server_time", run_name="__main__")
                        """
                    )
                )
            with RuntimeProcess(root, python=compat_python("stdio"), timeout=60) as rt:
                clock = package(rt.ready, "clock-1")
                self.assertIsNone(clock["error"], rt.stderr_so_far())
                r = rt.call_tool("clock-1.get_current_time", {"timezone": "UTC"})["result"]
                self.assertEqual(r["structuredContent"]["timezone"], "UTC")

    def test_bad_command_entries(self) -> None:
        cases = {
            '[packages.x]\nserver = "x:mcp"\ncommand = ["python"]': "packages.x has both 'server' and 'command'",
            '[packages.x]\ncommand = "python -m x"': "packages.x.command must be a non-empty array of strings",
            '[packages.x]\nenv = { A = "1" }': "packages.x.env needs a 'command'",
            '[[packages]]\nname = "a.b"\ncommand = ["python"]': "packages[0]: a command package's name must be",
            '[packages.x]\ncommand = ["python"]\nenv = { A = 1 }': "packages.x.env must be a table of strings",
        }
        for toml, message in cases.items():
            with self.subTest(toml=toml), tempfile.TemporaryDirectory() as tmp:
                with RuntimeProcess(manifest_root(tmp, toml)) as rt:
                    (bad,) = rt.ready["packages"]
                    self.assertEqual(bad["name"], "ramen.toml")
                    self.assertIn(message, bad["error"]["message"])


if __name__ == "__main__":
    unittest.main()
