"""ramen's Python runtime: hosts a snapshot's MCP server packages behind a framed stdio protocol.

Standard library only. Run as ``python -m ramen_runtime --root <snapshot> [--no-namespace]``.
See docs/packages.md for the package contract and the node ⇄ runtime protocol.
"""

from .main import main

__all__ = ["main"]
__version__ = "0.1.0"
