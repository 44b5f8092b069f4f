"""Our own pydantic models of the MCP request params ``serve`` reads, validated at the edge.

Lenient where the specification is open (unknown members are kept and ignored) and strict where a wrong type would
change meaning (a ``bool`` is never a request id or a progress token). A validation failure is answered with the
fixed ``-32602`` text, never pydantic's message, which would echo the input.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, StrictStr, TypeAdapter

from host.mcp._wire import LoggingLevel

__all__ = [
    "CallToolParams",
    "CancelledParams",
    "InitializeParams",
    "ListToolsParams",
    "ProgressToken",
    "RequestMeta",
    "SetLevelParams",
    "meta_of",
]

ProgressToken: TypeAlias = Annotated[int, Field(strict=True)] | StrictStr
_REQUEST_ID: TypeAlias = Annotated[int, Field(strict=True)] | StrictStr


class _Params(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class RequestMeta(_Params):
    """A request's ``_meta``: the progress token, and the per-request log level of 2026-07-28."""

    progress_token: ProgressToken | None = Field(default=None, alias="progressToken")
    log_level: LoggingLevel | None = Field(default=None, alias="io.modelcontextprotocol/logLevel")


class _WithMeta(_Params):
    meta: RequestMeta | None = Field(default=None, alias="_meta")


class _Implementation(_Params):
    name: StrictStr
    version: StrictStr


class InitializeParams(_WithMeta):
    """``initialize``: the offered version, the client's capabilities and its name."""

    protocol_version: StrictStr = Field(alias="protocolVersion")
    capabilities: dict[str, Any]
    client_info: _Implementation = Field(alias="clientInfo")


class ListToolsParams(_WithMeta):
    """``tools/list``: one page holds every tool, so the cursor is accepted and ignored."""

    cursor: StrictStr | None = None


class CallToolParams(_WithMeta):
    """``tools/call``: the tool and its arguments (absent: ``{}``)."""

    name: StrictStr
    arguments: dict[str, Any] | None = None


class SetLevelParams(_WithMeta):
    """``logging/setLevel``: the lowest level this connection wants."""

    level: LoggingLevel


class CancelledParams(_Params):
    """``notifications/cancelled``: the request the client gave up on."""

    request_id: _REQUEST_ID = Field(alias="requestId")
    reason: StrictStr | None = None


_META_ADAPTER: TypeAdapter[_WithMeta] = TypeAdapter(_WithMeta)


def meta_of(params: dict[str, Any]) -> RequestMeta | None:
    """The validated ``_meta`` of ``params`` (raises ``ValidationError`` for a malformed one)."""
    return _META_ADAPTER.validate_python(params).meta
