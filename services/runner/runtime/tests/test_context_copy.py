"""The SDK 2.x ``Context`` a call gets is a copy of one built at load (adapters.py).

The kind tests show tools reading their context correctly; this shows the copy is what the
pinned SDK actually gets (a change of the SDK's ``Context`` that made the load-time check fail
would quietly bring back the ~6 us per call of constructing it) and that copies share nothing
that belongs to a call.
"""

from __future__ import annotations

import unittest

from mcp.server.mcpserver import Context, MCPServer

from ramen_runtime.adapters import MCPServerAdapter
from ramen_runtime import session
from ramen_runtime.session import Call


class ContextCopyTest(unittest.TestCase):
    def test_each_call_gets_its_own_copy_of_the_load_time_context(self) -> None:
        server = MCPServer("copy")
        adapter = MCPServerAdapter("copy", server, "copy:server")
        self.assertIsNotNone(adapter._ctx_template, "the SDK's Context no longer passes the copy check")
        first, second = (
            adapter._context(Call(rid, None, "tools/call", {}, None, None, adapter.types_mod)) for rid in (1, 2)
        )
        self.assertIs(type(first), Context)
        self.assertEqual((first.request_context.request_id, second.request_context.request_id), (1, 2))
        self.assertIs(first.mcp_server, server)
        with self.assertRaises(ValueError):  # the template itself never gets a call's request context
            adapter._ctx_template.request_context

    def test_the_http_request_is_built_when_a_tool_first_reads_it(self) -> None:
        # Building it (an ASGI scope and a Starlette Request) was 15 % of a session call's
        # work in the runtime, for tools that almost never read it (the cost gate's
        # "as a node sends it" path).
        adapter = MCPServerAdapter("lazy", MCPServer("lazy"), "lazy:server")
        client = {"protocolVersion": "2025-11-25", "capabilities": {}, "sessionId": "s-1"}
        ctx = adapter._context(Call(1, None, "tools/call", {}, None, client, adapter.types_mod))
        rc = ctx.request_context
        self.assertIs(rc._request, session._UNSET, "built before anything read it")
        request = rc.request
        self.assertEqual(request.headers["mcp-session-id"], "s-1")
        self.assertIs(rc.request, request, "one request per call, however often it is read")
        no_session = adapter._context(Call(2, None, "tools/call", {}, None, None, adapter.types_mod))
        self.assertIsNone(no_session.request_context.request)


if __name__ == "__main__":
    unittest.main()
