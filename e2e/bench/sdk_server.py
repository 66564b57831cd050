"""The comparison baseline: a package of the example repo served by the official Python MCP
SDK's own streamable HTTP server (uvicorn), in its fastest configuration (JSON responses)
unless --sse is given; --stateless serves without sessions (`stateless_http=True`: what a
2026-07-28 client's requests get from it). Usage: sdk_server.py <repo> <package> <port>
[--sse] [--stateless]"""

import importlib
import sys

import uvicorn

repo, package, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, repo)
server = importlib.import_module(package).mcp
app = server.streamable_http_app(json_response="--sse" not in sys.argv, stateless_http="--stateless" in sys.argv)
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
