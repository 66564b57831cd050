#!/usr/bin/env python3
"""Lists an environment's tools through the MCP edge with the official MCP client, as JSON:

    python e2e/console/mcp_tools.py URL KEY           ->   ["notes.add", ...]
    python e2e/console/mcp_tools.py URL KEY --calls   ->   ["ok", "ok", "ok", "tool_error", ...]

`--calls` makes calls for the Calls and Usage pages to show: three that succeed, one a tool
error (dividing by zero) and one to `notes.add` (`blocked` when the JSON-RPC call fails).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scenario import mcp, tool_names  # noqa: E402


async def calls(c: Any) -> list[str]:
    outcomes = []
    for a, b in [(6, 3), (9, 3), (1, 4), (1, 0)]:
        result = await c.call_tool("notes.divide", {"a": a, "b": b})
        outcomes.append("tool_error" if result.is_error else "ok")
    try:
        result = await c.call_tool("notes.add", {"a": 1, "b": 2})
        outcomes.append("tool_error" if result.is_error else "ok")
    except Exception:  # the JSON-RPC error of a blocked tool
        outcomes.append("blocked")
    return outcomes


if __name__ == "__main__":
    action = calls if sys.argv[3:] == ["--calls"] else tool_names
    print(json.dumps(mcp(sys.argv[1], sys.argv[2], action)))
