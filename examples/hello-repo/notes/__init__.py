"""A read-only notebook written the ordinary MCP way (server defined right in the package).

Run it on its own with stock MCP tooling: ``python -m notes`` (stdio).
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError

mcp = MCPServer("notes", instructions="A tiny read-only notebook plus a few arithmetic helpers.")

NOTES: dict[str, str] = {
    "welcome": "Welcome to ramen. Each top-level package of this repo is one MCP server.",
    "broth": "Simmer bones for twelve hours; skim often.",
    "noodles": "Alkaline noodles keep their bite in hot broth.",
}


@mcp.tool()
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool()
def divide(a: float, b: float) -> float:
    """Divide a by b. Dividing by zero is reported as a tool error."""
    if b == 0:
        raise ToolError("cannot divide by zero")
    return a / b


@mcp.tool(structured_output=False)
def shout(text: str) -> str:
    """Return the text in upper case (plain text output)."""
    return text.upper() + "!"


@mcp.tool()
def search(query: str) -> list[str]:
    """Names of the notes whose text contains the query (case-insensitive)."""
    q = query.lower()
    return sorted(name for name, text in NOTES.items() if q in text.lower())


@mcp.resource("notes://index", name="index", mime_type="text/plain")
def index() -> str:
    """One line per note: its name."""
    return "\n".join(sorted(NOTES)) + "\n"


@mcp.resource("notes://note/{name}", name="note", mime_type="text/plain")
def note(name: str) -> str:
    """The text of one note."""
    if name not in NOTES:
        raise ResourceNotFoundError(f"no note named {name!r}")
    return NOTES[name]


@mcp.prompt()
def summarize(name: str) -> str:
    """Ask the model to summarize a note."""
    return f"Summarize the note at notes://note/{name} in one sentence."
