"""The one exception hierarchy of subagent-host, by failure kind (drawn as httpx draws its own).

Safe messages (model-visible) are built only from closed-set facts; raw causes ride on ``__cause__`` and reach
the host logger only. A raw error is mapped once, at the boundary where it enters a layer, with
:func:`map_exceptions` (``raise New(...) from raw``). The tree::

    SubagentHostError                      root of everything the host raises
    ├── ConfigError                        load-time config validation (message names the snake_case key)
    │   └── UnsetHostVariableError         a ``${NAME}`` env reference names an unset host variable (.name)
    ├── BatchInputError                    a batch's input is unusable: "line <n>: <problem>" (.line, .problem)
    ├── StartAbortedError                  "subagent request was aborted before the <ACP|SDK> child started"
    ├── RunFailure                         safe "<prefix>: Subagent failure (...)"; .facts; raw on __cause__
    │   ├── AcpRunFailure                  prefix ``subagent-acp``
    │   └── SdkRunFailure                  prefix ``subagent-dsh-sdk``
    ├── AggregateError                     .errors (tuple); str() is exactly its message
    ├── SubagentRunError                   the foreground text of a non-completed run
    ├── ChildError                         raw, host-only: a child process or its connection failed
    │   ├── ProcessTreeSurvivedError       the tree outlived SIGKILL + grace
    │   ├── ConnectionClosedError          the connection ended (EOF, a cut, a local close) with a request pending
    │   │   ├── AcpConnectionClosed        ... as the ACP client reports it
    │   │   └── TransportClosedError       ... as the DSH SDK client reports it (also spawn failure, runtime exit)
    │   ├── LineTooLongError               a line exceeded the reader's bound; the connection was closed
    │   ├── PeerWriteError                 writing to the peer failed (broken pipe)
    │   ├── ResponseError                  the peer answered with an ``error`` object (.code, .message, .data)
    │   │   ├── AcpResponseError           ... an ACP agent's answer
    │   │   └── JsonRpcResponseError       ... a DSH SDK runtime's answer
    │   └── SdkClientError                 DSH SDK client failures the provider classifies by class only
    │       ├── TransportClosedError, JsonRpcResponseError   (also under the kinds above)
    │       ├── RequestTimeoutError        a configured request bound elapsed
    │       └── SdkProtocolError           a response or event outside the DSH SDK protocol
    └── CodedError                         .code; the registry reports info {name, code}
        ├── UnsupportedCapabilityError     UNSUPPORTED_CAPABILITY
        ├── ToolNotFoundError, ToolArgsError, ToolOutputError, ToolTimeoutError
        ├── JobNotFoundError               UNKNOWN_JOB: no background job has that id
        ├── SessionNotFoundError           UNKNOWN_SESSION: no session has that id
        ├── SessionProviderError           SESSION_OTHER_PROVIDER: the session belongs to another provider
        ├── SessionForkError               SESSION_FORK_UNSUPPORTED: the session's agent cannot fork it
        ├── SessionWorkspaceError          SESSION_WORKSPACE: a turn asked for another workspace than its session's
        └── WorkspaceError                 WORKSPACE_<KIND>: a git worktree workspace could not be made, read or
                                           applied (.kind; not-a-repository: WORKSPACE_NOT_A_REPOSITORY)

``JsonRpcError`` is the peer-level name of ``ChildError`` (the peer's own failures are its four kinds above).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Mapping
from contextlib import contextmanager

__all__ = [
    "AcpConnectionClosed",
    "AcpResponseError",
    "AcpRunFailure",
    "AggregateError",
    "BatchInputError",
    "ChildError",
    "CodedError",
    "ConfigError",
    "ConnectionClosedError",
    "JobNotFoundError",
    "JsonRpcError",
    "JsonRpcResponseError",
    "LineTooLongError",
    "PeerWriteError",
    "ProcessTreeSurvivedError",
    "QueueOverflowError",
    "RequestTimeoutError",
    "ResponseError",
    "RunFailure",
    "SdkClientError",
    "SdkProtocolError",
    "SdkRunFailure",
    "SessionForkError",
    "SessionNotFoundError",
    "SessionProviderError",
    "SessionWorkspaceError",
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
    "WorkspaceError",
    "as_response_error",
    "describe_error",
    "map_exceptions",
    "mapped_error",
    "workspace_error_code",
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


class RunFailure(SubagentHostError):
    """Safe run failure: ``str()`` is ``<prefix>: Subagent failure (...)``; the raw error is ``__cause__``."""

    def __init__(self, message: str, facts: Mapping[str, object] | None = None) -> None:
        super().__init__(message)
        self.facts: Mapping[str, object] = dict(facts or {})


class AcpRunFailure(RunFailure):
    """Safe ACP failure: ``str()`` is ``subagent-acp: Subagent failure (...)``."""


class SdkRunFailure(RunFailure):
    """Safe DSH SDK failure: ``str()`` is ``subagent-dsh-sdk: Subagent failure (...)``."""


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


class ChildError(SubagentHostError):
    """Raw, host-only: a child process or its connection failed. Never model-visible."""


JsonRpcError = ChildError
"""The JSON-RPC peer's name for the family of its failures."""


class ProcessTreeSurvivedError(ChildError):
    """A process of the managed tree outlived SIGKILL plus the grace."""


class ConnectionClosedError(ChildError):
    """The connection ended (EOF, an over-long line, or a local close) while the request was pending."""


class LineTooLongError(ChildError):
    """The peer wrote a line longer than the reader's bound; the connection was closed."""


class PeerWriteError(ChildError):
    """Writing to the peer failed (its stdin is gone)."""


class ResponseError(ChildError):
    """The peer answered a request with an ``error`` object; ``code``, ``message`` and ``data`` are preserved."""

    def __init__(self, code: int | None, message: str, data: object = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class AcpConnectionClosed(ConnectionClosedError):
    """The ACP connection closed with a request pending."""


class AcpResponseError(ResponseError):
    """The ACP agent answered a request with an ``error`` object."""


class SdkClientError(ChildError):
    """A failure of the DSH SDK client. The provider classifies these by class only."""


class TransportClosedError(ConnectionClosedError, SdkClientError):
    """Spawn failed, the runtime exited, stdio closed, or the client/subscription was closed."""


class RequestTimeoutError(SdkClientError):
    """A configured request bound elapsed."""


class SdkProtocolError(SdkClientError):
    """A response or event outside the DSH SDK protocol."""


class QueueOverflowError(SdkClientError):
    """A run's notification queue passed its byte bound before the run consumed it (the provider's
    ``output-limit``)."""


class JsonRpcResponseError(ResponseError, SdkClientError):
    """The runtime answered with an ``error`` object."""


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


class SessionNotFoundError(CodedError):
    """No session of this host (or its state directory) has that id, or it expired."""

    code = "UNKNOWN_SESSION"


class SessionProviderError(CodedError):
    """The session belongs to another provider entry than the tool that was called."""

    code = "SESSION_OTHER_PROVIDER"


class SessionForkError(CodedError):
    """``fork_session_id`` names a session whose agent does not offer ``session/fork`` (a DSH SDK runtime never
    does)."""

    code = "SESSION_FORK_UNSUPPORTED"


class SessionWorkspaceError(CodedError):
    """A later turn asked for another workspace (``shared`` / ``worktree``) than its session's first turn fixed."""

    code = "SESSION_WORKSPACE"


class WorkspaceError(CodedError):
    """A ``worktree`` workspace failed; the message is host-built (paths the operator gave, sizes, versions) and
    ``kind`` names the failure from a closed set (``host.workspace.WorkspaceErrorKind``). Raw git text rides on
    ``__cause__`` only. ``code`` is ``WORKSPACE_`` and the kind in upper snake case (``apply-conflict``:
    ``WORKSPACE_APPLY_CONFLICT``), so a tool result says which failure it was (``info {name, code}``)."""

    code = "WORKSPACE"

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message, workspace_error_code(kind))
        self.kind = kind


def workspace_error_code(kind: str) -> str:
    """The ``code`` of a ``WorkspaceError`` of ``kind`` (``not-a-repository``: ``WORKSPACE_NOT_A_REPOSITORY``)."""
    return "WORKSPACE_" + kind.upper().replace("-", "_")


def describe_error(error: BaseException) -> str:
    """``f"{type(e).__name__}: {e}"``: how a detail string embeds an exception."""
    return f"{type(error).__name__}: {error}"


ErrorMapping = Mapping[type[Exception], Callable[[Exception], Exception]]
"""Which raw error class becomes which layer error, in order: the first ``isinstance`` match wins."""


@contextmanager
def map_exceptions(mapping: ErrorMapping) -> Generator[None]:
    """Re-raise a raw error of a mapped class as the layer's own error, chained (``raise New(...) from raw``)."""
    try:
        yield
    except Exception as exc:
        mapped = mapped_error(mapping, exc)
        if mapped is None:
            raise
        raise mapped from exc


def mapped_error(mapping: ErrorMapping, raw: Exception) -> Exception | None:
    """The layer's own error for ``raw`` (the first mapped class it is an instance of), ``None`` when unmapped."""
    for raw_class, build in mapping.items():
        if isinstance(raw, raw_class):
            return build(raw)
    return None


def as_response_error(cls: type[ResponseError]) -> Callable[[Exception], Exception]:
    """A :func:`map_exceptions` builder that re-types a ``ResponseError`` as ``cls``, keeping code, message, data."""

    def build(exc: Exception) -> Exception:
        assert isinstance(exc, ResponseError)
        return cls(exc.code, exc.message, exc.data)

    return build


class BatchInputError(SubagentHostError):
    """A batch's input is unusable (nothing ran): ``str()`` names the 1-based line (when there is one) and the
    problem."""

    def __init__(self, problem: str, line: int | None = None) -> None:
        super().__init__(f"line {line}: {problem}" if line is not None else problem)
        self.line = line
        self.problem = problem
