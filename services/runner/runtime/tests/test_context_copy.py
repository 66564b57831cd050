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


if __name__ == "__main__":
    unittest.main()
