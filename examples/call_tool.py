#!/usr/bin/env python3
"""Call one tool through the ramen MCP edge with the official MCP Python client.

    python3 examples/call_tool.py <edge-url> <mcp-key> <tool> '<json arguments>'

Lists the tools the key may see, calls one, and prints its result as JSON.
Needs the `mcp` package (`pip install 'mcp>=2.3,<3'`).
"""

import json
import sys

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def main(url: str, key: str, tool: str, arguments: str) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            print("tools:", ", ".join(sorted(tools)), file=sys.stderr)
            result = await client.call_tool(tool, json.loads(arguments))
            if result.is_error:
                raise SystemExit(f"{tool} failed: {result.content}")
            print(json.dumps(result.structured_content))


if __name__ == "__main__":
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    anyio.run(main, *sys.argv[1:])
