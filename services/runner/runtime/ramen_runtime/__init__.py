"""ramen's Python runtime: hosts a snapshot's MCP server packages behind a framed stdio protocol.

Standard library only. Run as ``python -m ramen_runtime --root <snapshot> [--no-namespace]``.
See docs/packages.md for the package contract and the node ⇄ runtime protocol.
"""

__version__ = "0.1.0"  # before the imports: stdio_client reports it to the servers it starts

from .identity import caller  # noqa: E402
from .main import main  # noqa: E402

__all__ = ["caller", "main"]
