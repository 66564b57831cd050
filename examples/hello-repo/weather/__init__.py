"""Weather tools for the hello-repo example.

The server lives in ``weather/server.py`` (ramen finds it as ``weather.server:mcp``).
Run it on its own with stock MCP tooling: ``python -m weather.server`` (stdio).
"""
