"""``subagent-host serve``'s transports and lifetime: the MCP layer (``host.mcp``) over stdio or Streamable HTTP.

Starlette and uvicorn are imported only when ``--http`` is given; nothing here imports the MCP SDK.
"""

from __future__ import annotations

from host.server._app import EarlySignal, serve
from host.server._options import ServeOptions, ServeUsageError, parse_serve_options

__all__ = ["EarlySignal", "ServeOptions", "ServeUsageError", "parse_serve_options", "serve"]
