"""Who is calling: the node's ``caller`` field, as each kind's own accessor shows it to a package.

The fixture packages ``who*`` (tests/fixtures/README.md) answer a tool ``whoami``, a resource
``<pkg>://whoami`` and a prompt ``whoami`` with what their kind's accessor gives:

| class | kind | accessor |
|---|---|---|
| FastMCP1CallerTest, LowLevel1CallerTest | fastmcp1, lowlevel (SDK 1.x) | ``mcp.server.auth.middleware.auth_context.get_access_token()`` |
| MCPServerCallerTest, LowLevel2CallerTest | mcpserver, lowlevel (SDK 2.x) | the same |
| FastMCPCallerTest | fastmcp 4.x | ``fastmcp.server.dependencies.get_access_token()`` |
| GenericCallerTest | generic | ``ramen_runtime.caller()`` |
| StdioCallerTest | stdio (``python -m wholow``) | the request's ``_meta["io.ramen/caller"]`` |
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import unittest
from typing import Any

from .kind_contract import SESSION_CLIENT
from .rtclient import RuntimeProcess, text_of
from .venvs import compat_python, fixture

ALICE = {
    "kind": "oauth",
    "subject": "alice",
    "issuer": "https://idp.example",
    "name": "Alice Example",
    "email": "alice@example.com",
    "groups": ["payments", "staff"],
    "roles": ["Payments.Admin"],
    "scopes": ["mcp:tools"],
    "client_id": "public",
}
BOB = {"kind": "oauth", "subject": "bob", "issuer": "https://idp.example", "groups": ["ops"], "scopes": ["a", "b"]}
KEY = {"kind": "key", "key_id": "k_01HZX", "key_name": "ci-bot"}


class CallerContract:
    root: str
    pkg: str
    rt: RuntimeProcess

    @classmethod
    def python(cls) -> str:
        raise NotImplementedError

    @classmethod
    def setUpClass(cls) -> None:
        cls.rt = RuntimeProcess(cls.root, python=cls.python(), timeout=60)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.rt.close()

    # what the package saw, from the text it answered; None: no caller
    def view(self, text: str) -> Any:
        raise NotImplementedError

    def assert_sees(self, view: Any, caller: dict[str, Any]) -> None:
        raise NotImplementedError

    def who(self, caller: dict[str, Any] | None = None, **fields: Any) -> Any:
        if caller is not None:
            fields["caller"] = caller
        reply = self.rt.call_tool(f"{self.pkg}.whoami", fields.pop("arguments", {}), **fields)
        self.assertNotIn("error", reply)
        self.assertFalse(reply["result"].get("isError"), reply)
        return self.view(text_of(reply["result"]))

    def test_an_oauth_caller(self) -> None:
        self.assert_sees(self.who(ALICE), ALICE)

    def test_a_key_caller(self) -> None:
        self.assert_sees(self.who(KEY), KEY)

    def test_no_caller_is_anonymous_and_a_caller_ends_with_its_call(self) -> None:
        self.assertIsNone(self.who())
        self.assert_sees(self.who(ALICE), ALICE)
        self.assertIsNone(self.who())

    def test_with_a_client_session(self) -> None:
        self.assert_sees(self.who(ALICE, client=SESSION_CLIENT), ALICE)
        self.assert_sees(self.who(KEY, client=SESSION_CLIENT), KEY)
        self.assertIsNone(self.who(client=SESSION_CLIENT))

    def test_resource_reads_and_prompts_see_the_caller(self) -> None:
        uri = f"{self.pkg}://whoami"
        for caller in (ALICE, KEY):
            read = self.rt.request("read_resource", uri=uri, caller=caller)["result"]
            self.assert_sees(self.view(read["contents"][0]["text"]), caller)
            got = self.rt.request("get_prompt", name=f"{self.pkg}.whoami", caller=caller)["result"]
            self.assert_sees(self.view(got["messages"][0]["content"]["text"]), caller)
        read = self.rt.request("read_resource", uri=uri)["result"]
        self.assertIsNone(self.view(read["contents"][0]["text"]))

    def test_concurrent_calls_each_see_their_own_caller(self) -> None:
        # each waits inside the tool until the other has started, then reads its caller
        callers = [ALICE, BOB, KEY, None]
        rids = []
        for i, caller in enumerate(callers):
            fields: dict[str, Any] = {"caller": caller} if caller else {}
            args = {"meet_key": f"pair-{i // 2}-{self.id()}"}
            rids.append(self.rt.start("call_tool", name=f"{self.pkg}.whoami", arguments=args, **fields))
        for rid, caller in zip(rids, callers, strict=True):
            seen = self.view(text_of(self.rt.wait_reply(rid, timeout=15)["result"]))
            if caller is None:
                self.assertIsNone(seen)
            else:
                self.assert_sees(seen, caller)


class TokenContract(CallerContract):
    """Kinds whose accessor is an SDK ``get_access_token()``: the ``AccessToken`` subclass."""

    def view(self, text: str) -> Any:
        return json.loads(text)

    def assert_sees(self, token: Any, caller: dict[str, Any]) -> None:
        self.assertIsNotNone(token, f"no access token for {caller}")
        self.assertTrue(token["sdk_class"])
        self.assertEqual(token["token"], "")  # never the client's credential
        self.assertIsNone(token["expires_at"])
        self.assertIsNone(token["resource"])
        if caller["kind"] == "key":
            self.assertEqual((token["client_id"], token["scopes"]), (caller["key_name"], []))
            self.assertEqual((token["key_id"], token["key_name"]), (caller["key_id"], caller["key_name"]))
            self.assertIsNone(token["subject"])
            self.assertEqual(token["claims"], {"ramen_key_id": caller["key_id"], "ramen_key_name": caller["key_name"]})
            return
        self.assertEqual(token["client_id"], caller.get("client_id", caller["subject"]))
        for field in ("subject", "issuer", "name", "email"):
            self.assertEqual(token[field], caller.get(field), field)
        self.assertEqual((token["groups"], token["scopes"]), (caller["groups"], caller["scopes"]))
        self.assertEqual(token["roles"], caller.get("roles", []))
        claims = token["claims"]
        self.assertEqual((claims["sub"], claims["iss"]), (caller["subject"], caller["issuer"]))
        self.assertEqual((claims["groups"], claims["scope"]), (caller["groups"], " ".join(caller["scopes"])))
        self.assertEqual((claims.get("name"), claims.get("email")), (caller.get("name"), caller.get("email")))
        self.assertEqual(claims.get("roles"), caller.get("roles"))
        self.assertIsNone(token["key_id"])


class FastMCP1CallerTest(TokenContract, unittest.TestCase):
    root, pkg = fixture("mcp1-repo"), "whohigh"

    @classmethod
    def python(cls) -> str:
        return compat_python("mcp1")


class LowLevel1CallerTest(TokenContract, unittest.TestCase):
    root, pkg = fixture("mcp1-repo"), "wholow"

    @classmethod
    def python(cls) -> str:
        return compat_python("mcp1")


class MCPServerCallerTest(TokenContract, unittest.TestCase):
    root, pkg = fixture("mcp2-repo"), "whohigh"

    @classmethod
    def python(cls) -> str:
        return compat_python("mcp2")


class LowLevel2CallerTest(TokenContract, unittest.TestCase):
    root, pkg = fixture("mcp2-repo"), "wholow"

    @classmethod
    def python(cls) -> str:
        return compat_python("mcp2")

    def view(self, text: str) -> Any:
        seen = json.loads(text)
        self.assertIsNone(seen["meta"])  # in-process the caller is the SDK's, never a _meta key
        return seen["token"]

    def test_a_client_meta_key_claims_no_caller(self) -> None:
        spoof = {"io.ramen/caller": {"kind": "oauth", "subject": "mallory"}}
        self.assertIsNone(self.who(meta=spoof))  # view() also checks _meta lost the key
        self.assert_sees(self.who(ALICE, meta=spoof), ALICE)


class FastMCPCallerTest(TokenContract, unittest.TestCase):
    root, pkg = fixture("fastmcp4-repo"), "whofm"

    @classmethod
    def python(cls) -> str:
        return compat_python("fastmcp")

    def test_sync_tools_in_worker_threads_see_the_caller(self) -> None:
        reply = self.rt.call_tool("whofm.whoami_sync", caller=ALICE)
        self.assert_sees(self.view(text_of(reply["result"])), ALICE)

    def test_the_session_request_carries_the_user_as_the_sdk_auth_middleware_sets_it(self) -> None:
        for caller, user in ((ALICE, "public"), (KEY, "ci-bot"), (None, "no user")):
            fields = {"caller": caller} if caller else {}
            reply = self.rt.call_tool("whofm.request_user", client=SESSION_CLIENT, **fields)
            self.assertEqual(text_of(reply["result"]), user)


class GenericCallerTest(CallerContract, unittest.TestCase):
    root, pkg = fixture("generic-repo"), "whogen"

    @classmethod
    def python(cls) -> str:
        return sys.executable  # the package imports nothing but ramen_runtime

    def view(self, text: str) -> Any:
        seen = json.loads(text)
        if seen["caller"] is not None:
            self.assertTrue(seen["read_only"])
        return seen["caller"]

    def assert_sees(self, view: Any, caller: dict[str, Any]) -> None:
        self.assertEqual(view, caller)

    def test_a_malformed_caller_is_refused(self) -> None:
        for caller, message in (
            ("alice", "'caller' must be an object"),
            ({"subject": "alice"}, "'caller.kind' must be a non-empty string"),
            ({"kind": "oauth", "groups": "staff"}, "'caller.groups' must be a list of strings"),
            ({"kind": "key", "key_id": 7}, "'caller.key_id' must be a string"),
        ):
            for op, fields in (
                ("call_tool", {"name": "whogen.whoami", "arguments": {}}),
                ("read_resource", {"uri": "whogen://whoami"}),
                ("get_prompt", {"name": "whogen.whoami"}),
            ):
                with self.subTest(caller=caller, op=op):
                    err = self.rt.request(op, caller=caller, **fields)["error"]
                    self.assertEqual(err, {"code": -32602, "message": message})

    def test_null_fields_are_left_out(self) -> None:
        self.assertEqual(self.who({"kind": "key", "key_id": "k1", "key_name": None}), {"kind": "key", "key_id": "k1"})


class StdioCallerTest(CallerContract, unittest.TestCase):
    """``python -m wholow``: the caller goes to the program in each request's ``_meta``."""

    pkg = "wholow"
    tmp: tempfile.TemporaryDirectory

    @classmethod
    def python(cls) -> str:
        return compat_python("stdio")

    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.TemporaryDirectory()
        cls.root = os.path.join(cls.tmp.name, "snapshot")
        os.makedirs(cls.root)
        with open(os.path.join(cls.root, "ramen.toml"), "w") as fh:
            fh.write(f'[packages.wholow]\ncommand = ["python", "-m", "wholow"]\ncwd = "{fixture("mcp2-repo")}"\n')
        super().setUpClass()

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        cls.tmp.cleanup()

    def view(self, text: str) -> Any:
        seen = json.loads(text)
        self.assertIsNone(seen["token"])  # the program's own client is the runtime
        return seen["meta"]

    def assert_sees(self, view: Any, caller: dict[str, Any]) -> None:
        self.assertEqual(view, caller)

    def test_a_client_meta_key_claims_no_caller(self) -> None:
        spoof = {"io.ramen/caller": {"kind": "oauth", "subject": "mallory"}, "other": 1}
        self.assertIsNone(self.who(meta=spoof))
        self.assertEqual(self.who(ALICE, meta=spoof), ALICE)


if __name__ == "__main__":
    unittest.main()
