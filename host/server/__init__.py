"""``subagent-host serve``: the host's tool registry as an MCP server (stdio, or Streamable HTTP).

Only the command-line layer is imported here; the MCP SDK is imported when ``run_serve`` starts serving, so
``subagent-host run`` never pays for it.
"""

from __future__ import annotations

from host.server._options import run_serve

__all__ = ["run_serve"]
