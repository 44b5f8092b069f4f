"""The one exception hierarchy of subagent-host.

Safe messages (model-visible) are built only from closed-set facts; raw causes ride on ``__cause__`` and reach
the host logger only. The tree::

    SubagentHostError                      root of everything the host raises
    ├── ConfigError                        load-time config validation (message names the snake_case key)
    │   └── UnsetHostVariableError         a ``${NAME}`` env reference names an unset host variable (.name)
    ├── StartAbortedError                  "subagent request was aborted before the <ACP|SDK> child started"
    ├── AcpRunFailure                      safe "subagent-acp: Subagent failure (...)"; .facts; raw on __cause__
    ├── SdkRunFailure                      safe "subagent-dsh-sdk: Subagent failure (...)"; .facts; raw on __cause__
    ├── AggregateError                     .errors (tuple); str() is exactly its message
    ├── SubagentRunError                   the foreground text of a non-completed run
    ├── ProcessTreeSurvivedError           raw, host-only: the tree outlived SIGKILL + grace
    ├── ProcessSpawnError                  raw, host-only: the child could not be spawned (OSError on __cause__)
    ├── JsonRpcError                       raw, host-only failures of the JSON-RPC peer
    │   ├── ConnectionClosedError          the peer's stdout ended (or was cut) with the request pending
    │   ├── LineTooLongError               a line exceeded the reader's bound; the connection was closed
    │   ├── PeerWriteError                 writing to the peer failed (broken pipe)
    │   └── ResponseError                  the peer answered with an ``error`` object (.code, .message, .data)
    ├── AcpConnectionClosed, AcpResponseError   raw, host-only ACP request failures
    ├── SdkClientError                     raw, host-only DSH SDK client failures
    │   ├── TransportClosedError, RequestTimeoutError, SdkProtocolError, JsonRpcResponseError
    └── CodedError                         .code; the registry reports info {name, code}
        ├── UnsupportedCapabilityError     UNSUPPORTED_CAPABILITY
        ├── ToolNotFoundError, ToolArgsError, ToolOutputError, ToolTimeoutError
        └── JobNotFoundError               UNKNOWN_JOB: no background job has that id
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = [
    "AcpConnectionClosed",
    "AcpResponseError",
    "AcpRunFailure",
    "AggregateError",
    "CodedError",
    "ConfigError",
    "ConnectionClosedError",
    "JobNotFoundError",
    "JsonRpcError",
    "JsonRpcResponseError",
    "LineTooLongError",
    "PeerWriteError",
    "ProcessSpawnError",
    "ProcessTreeSurvivedError",
    "RequestTimeoutError",
    "ResponseError",
    "SdkClientError",
    "SdkProtocolError",
    "SdkRunFailure",
    "StartAbortedError",
    "SubagentHostError",
    "SubagentRunError",
    "ToolArgsError",
    "ToolNotFoundError",
    "ToolOutputError",
    "ToolTimeoutError",
    "TransportClosedError",
    "UnsetHostVariableError",
    "UnsupportedCapabilityError",
    "describe_error",
]


class SubagentHostError(Exception):
    """Root of every exception subagent-host raises."""


class ConfigError(SubagentHostError):
    """A config file or entry failed load-time validation; the message names the snake_case key.

    ``str()`` is exactly the spec's message. ``provider`` (the entry name) and ``source`` (the config file) say
    where, when known, so a caller can point at the entry without changing the pinned text.
    """

    def __init__(self, message: str, *, provider: str | None = None, source: str | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.source = source


class UnsetHostVariableError(ConfigError):
    """A ``${NAME}`` reference in a config ``env`` value names an unset host variable; ``.name`` is ``NAME``."""

    def __init__(self, name: str) -> None:
        super().__init__(f"host variable ${{{name}}} is not set")
        self.name = name


class StartAbortedError(SubagentHostError):
    """The request's signal fired before (or while) the child started; nothing is left running."""


class AcpRunFailure(SubagentHostError):
    """Safe ACP failure: ``str()`` is ``subagent-acp: Subagent failure (...)``; the raw error is ``__cause__``."""

    def __init__(self, message: str, facts: Mapping[str, object] | None = None) -> None:
        super().__init__(message)
        self.facts: Mapping[str, object] = dict(facts or {})


class SdkRunFailure(SubagentHostError):
    """Safe DSH SDK failure: ``str()`` is ``subagent-dsh-sdk: Subagent failure (...)``; raw error on ``__cause__``."""

    def __init__(self, message: str, facts: Mapping[str, object] | None = None) -> None:
        super().__init__(message)
        self.facts: Mapping[str, object] = dict(facts or {})


class AggregateError(SubagentHostError):
    """Several errors at once. A plain exception (not an ExceptionGroup), so ``str()`` is exactly the message."""

    def __init__(self, errors: Iterable[BaseException], message: str | None = None) -> None:
        self.errors: tuple[BaseException, ...] = tuple(errors)
        self.message: str = message if message is not None else "; ".join(str(e) for e in self.errors)
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


class SubagentRunError(SubagentHostError):
    """The foreground delegation text of a run that did not complete."""


class ProcessTreeSurvivedError(SubagentHostError):
    """Raw, host-only: a process of the managed tree outlived SIGKILL plus the grace."""


class ProcessSpawnError(SubagentHostError):
    """Raw, host-only: the child could not be spawned; the ``OSError`` is ``__cause__``."""


class JsonRpcError(SubagentHostError):
    """Raw, host-only failure of a request on the JSON-RPC peer."""


class ConnectionClosedError(JsonRpcError):
    """The connection ended (EOF, an over-long line, or a local close) while the request was pending."""


class LineTooLongError(JsonRpcError):
    """The peer wrote a line longer than the reader's bound; the connection was closed."""


class PeerWriteError(JsonRpcError):
    """Writing to the peer failed (its stdin is gone)."""


class ResponseError(JsonRpcError):
    """The peer answered a request with an ``error`` object. Raw and host-only: never model-visible."""

    def __init__(self, code: int | None, message: str, data: object = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class AcpConnectionClosed(SubagentHostError):
    """Raw, host-only: the ACP connection closed with a request pending."""


class AcpResponseError(SubagentHostError):
    """Raw, host-only: the ACP agent answered a request with an ``error`` object."""

    def __init__(self, code: int | None, message: str, data: object = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class SdkClientError(SubagentHostError):
    """Raw, host-only failure of the DSH SDK client. The provider classifies these by class only."""


class TransportClosedError(SdkClientError):
    """Spawn failed, the runtime exited, stdio closed, or the client/subscription was closed."""


class RequestTimeoutError(SdkClientError):
    """A configured request bound elapsed."""


class SdkProtocolError(SdkClientError):
    """A response or event outside the DSH SDK protocol."""


class JsonRpcResponseError(SdkClientError):
    """The runtime answered with an ``error`` object; ``code``, ``message`` and ``data`` are preserved."""

    def __init__(self, code: int | None, message: str, data: object = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class CodedError(SubagentHostError):
    """An error with a stable ``code``; the tool registry reports it as ``info {name, code}``."""

    code: str = "ERROR"

    def __init__(self, message: str = "", code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class UnsupportedCapabilityError(CodedError):
    """The request needs a capability the provider lacks; nothing was spawned."""

    code = "UNSUPPORTED_CAPABILITY"


class ToolNotFoundError(CodedError):
    """No tool of that name is registered."""

    code = "UNKNOWN_TOOL"


class ToolArgsError(CodedError):
    """The arguments failed the tool's parameter model."""

    code = "INVALID_ARGS"


class ToolOutputError(CodedError):
    """The tool's value or rendered content broke its output contract."""

    code = "INVALID_TOOL_OUTPUT"


class ToolTimeoutError(CodedError):
    """The tool's declared ``timeout_ms`` elapsed."""

    code = "TOOL_TIMEOUT"


class JobNotFoundError(CodedError):
    """No background job of this host has that id."""

    code = "UNKNOWN_JOB"


def describe_error(error: BaseException) -> str:
    """``f"{type(e).__name__}: {e}"``: how a detail string embeds an exception."""
    return f"{type(error).__name__}: {error}"
