"""``SdkRunSpec``: everything one DSH SDK run (and its client) needs, already resolved.

The cwd is absolute, the explicit env is ``${NAME}``-expanded, and the route (provider, model, reasoning effort,
max tokens) is the one sent in ``initialize``. Every bound is a positive finite number of milliseconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from host.config import (
    DISPOSE_EOF_GRACE_MS,
    DISPOSE_GRACE_MS,
    INITIALIZE_TIMEOUT_MS,
    MAX_OUTPUT_BYTES,
    SDK_MODEL,
    SDK_PROVIDER,
    SHUTDOWN_TIMEOUT_MS,
    InheritEnv,
)

__all__ = ["MIN_QUEUE_BYTES", "QUEUE_BYTES_PER_OUTPUT_BYTE", "SdkRunSpec"]

QUEUE_BYTES_PER_OUTPUT_BYTE: Final = 4
"""The default queue bound is this many times ``max_output_bytes`` (32 MiB by default): room for a whole answer,
streamed and then repeated in its final message, with the memory of its events, when a runtime answers the prompt
last."""
MIN_QUEUE_BYTES: Final = 1024 * 1024
"""The default queue bound is never below this (a small ``max_output_bytes`` still leaves room for a few events)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SdkRunSpec:
    """A resolved launch, route and set of bounds for one runtime process (docs/behaviour.md#config-dsh-sdk-entry,
    #sdk-route)."""

    command: str
    """``argv[0]``; a name without ``/`` is looked up on the child environment's ``PATH``."""
    args: tuple[str, ...] = ()
    """``argv[1:]``."""
    cwd: str
    """Absolute: the child's cwd and the ``initialize`` ``cwd``."""
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    """Explicit child variables, merged over the filtered ambient environment."""
    inherit_env: InheritEnv = "scrubbed"
    """Which ambient variables the child inherits (``build_child_env``'s ``inherit``)."""
    provider: str = SDK_PROVIDER
    """The model provider sent in ``initialize``."""
    model: str = SDK_MODEL
    """The model sent in ``initialize``."""
    reasoning_effort: str | None = None
    """Sent in ``initialize`` as ``reasoningEffort`` only when set."""
    max_tokens: int | None = None
    """Sent in ``initialize`` as ``maxTokens`` only when set."""
    shutdown_timeout_ms: float = SHUTDOWN_TIMEOUT_MS
    """Bound of the ``shutdown`` request."""
    dispose_eof_grace_ms: float = DISPOSE_EOF_GRACE_MS
    """Ladder: how long the runtime may take to exit after stdin EOF."""
    dispose_grace_ms: float = DISPOSE_GRACE_MS
    """Ladder: the SIGTERM→SIGKILL window and the post-SIGKILL reap bound."""
    initialize_timeout_ms: float = INITIALIZE_TIMEOUT_MS
    """Bound of the ``initialize`` request."""
    max_output_bytes: int = MAX_OUTPUT_BYTES
    """Bounds what the run keeps (docs/behaviour.md#stream-output-bound); past it the run ends ``error`` /
    ``output-limit``."""

    @property
    def queue_bytes(self) -> int:
        """The bound on the memory of the notifications queued before the prompt's response:
        ``QUEUE_BYTES_PER_OUTPUT_BYTE`` times ``max_output_bytes``, at least ``MIN_QUEUE_BYTES``
        (docs/behaviour.md#sdk-client-subscription)."""
        return max(QUEUE_BYTES_PER_OUTPUT_BYTE * self.max_output_bytes, MIN_QUEUE_BYTES)
