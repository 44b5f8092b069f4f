"""The request, run handle and provider contracts every out-of-process provider implements, plus the capability gate.

``check_capabilities`` runs before ``provider.start``: a request needing a capability the provider lacks is rejected
with ``UnsupportedCapabilityError`` and nothing is spawned. ``SubagentRun.result()`` never raises; ``dispose()`` is
idempotent with one shared outcome.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Final, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from host._exceptions import UnsupportedCapabilityError
from host._json import MAX_SAFE_INTEGER, ContentBlock
from host.cancel import CancelSignal
from host.config import WorkspaceMode
from host.diagnostics import SubagentResult
from host.run._attempt import AttemptObserver
from host.run._lease import SessionLease
from host.stream import FrameObserver, ProviderKind, TranscriptEvent

__all__ = [
    "AgentOptions",
    "Capabilities",
    "MAX_TOKENS_LIMIT",
    "Provider",
    "SubagentRequest",
    "SubagentRun",
    "check_capabilities",
]

MAX_TOKENS_LIMIT: Final = MAX_SAFE_INTEGER
"""Largest ``max_tokens`` an ``AgentOptions`` accepts (the largest integer a JSON peer reads exactly)."""

_UNSUPPORTED_AGENT_OPTIONS: Final = 'subagent provider "{name}" does not support the "agent_options" capability'

_NonEmptyStr = Annotated[StrictStr, Field(min_length=1)]


class AgentOptions(BaseModel):
    """Per-run overrides of the child's route; only providers with the ``agent_options`` capability accept them."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)  # built when first given

    provider: _NonEmptyStr | None = None
    """The model provider the child should use."""
    model: _NonEmptyStr | None = None
    """The model the child should use."""
    reasoning_effort: _NonEmptyStr | None = None
    """The child's reasoning effort."""
    max_tokens: Annotated[StrictInt, Field(ge=1, le=MAX_TOKENS_LIMIT)] | None = None
    """The child's output-token ceiling per step (``bool`` is rejected)."""


@dataclass(frozen=True, slots=True)
class SubagentRequest:
    """One delegated task.

    ``signal`` is required and caller-owned: it is the provider's only cancellation channel.
    """

    label: str
    """A short label for logs and job lists (never sent to the child)."""
    prompt: list[ContentBlock]
    """The task. ACP sends only its text blocks; the DSH SDK sends it verbatim."""
    signal: CancelSignal
    """The caller-owned cancellation signal."""
    parent_cwd: str | None = None
    """The parent session's working directory, if known."""
    agent_options: AgentOptions | None = None
    """Per-run route overrides; capability-gated."""
    on_frame: FrameObserver | None = None
    """Synchronous observer of the run's live stream and transcript frames."""
    workspace: WorkspaceMode | None = None
    """Per-call override of the entry's ``workspace`` (``None``: the entry's)."""
    run_id: str | None = None
    """The host-minted run id to use (a workspace names its branch after it, a background job mints it up front);
    ``None``: a fresh one."""
    cwd: str | None = None
    """A host-chosen child cwd (the run's worktree); it wins over the entry's ``cwd`` and the parent's."""
    traceparent: str | None = None
    """A checked W3C ``traceparent`` the child is given (ACP ``_meta``, ``TRACEPARENT``); ``None``: none."""
    job_id: str | None = None
    """The background job this run belongs to, for its record (never sent to the child)."""
    on_attempt: AttemptObserver | None = None
    """Host-only observer of the run's start (the run records): its id before the spawn, its handshake facts."""
    lease: SessionLease | None = None
    """The session this run is a turn of (``None``: a one-shot run that owns its child, as before sessions)."""


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What optional request fields a provider accepts."""

    agent_options: bool


@runtime_checkable
class SubagentRun(Protocol):
    """A published run, owned by whoever received it from ``Provider.start``."""

    @property
    def id(self) -> str:
        """A fresh ``uuid4`` minted by the host, never the child's own session id."""
        ...

    @property
    def transcript(self) -> tuple[TranscriptEvent, ...]:
        """A snapshot of the run's transcript."""
        ...

    async def result(self) -> SubagentResult:
        """Wait for the settled result. Never raises; any number of awaiters."""
        ...

    async def dispose(self) -> None:
        """Release the child. Idempotent: every call awaits one shared teardown and sees its outcome.

        Raises:
            AcpRunFailure | SdkRunFailure: releasing the child failed (safe message, raw error on ``__cause__``).
        """
        ...


class Provider(Protocol):
    """A registered out-of-process provider: one fresh child per run."""

    @property
    def name(self) -> str:
        """The provider entry name."""
        ...

    @property
    def kind(self) -> ProviderKind:
        """The provider kind."""
        ...

    @property
    def capabilities(self) -> Capabilities:
        """The optional request fields this provider accepts."""
        ...

    async def start(self, request: SubagentRequest) -> SubagentRun:
        """Start a run; returns only once the child is ready, and the caller then owns the run."""
        ...


def check_capabilities(provider: Provider, request: SubagentRequest) -> None:
    """Reject a request that needs a capability the provider lacks, before anything is spawned.

    Raises:
        UnsupportedCapabilityError: the request sets ``agent_options`` and the provider does not support them.
    """
    if request.agent_options is not None and not provider.capabilities.agent_options:
        raise UnsupportedCapabilityError(_UNSUPPORTED_AGENT_OPTIONS.format(name=provider.name))
