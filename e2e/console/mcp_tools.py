#!/usr/bin/env python3
"""Lists an environment's tools through the MCP edge with the official MCP client, as JSON:

    python e2e/console/mcp_tools.py URL KEY   ->   ["notes.add", ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scenario import mcp, tool_names  # noqa: E402

if __name__ == "__main__":
    print(json.dumps(mcp(sys.argv[1], sys.argv[2], tool_names)))
