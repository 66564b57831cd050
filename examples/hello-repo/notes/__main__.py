from notes import mcp

mcp.run()
