"""The DSH SDK client's host-only failure texts: transport facts, exit facts and the stderr tail.

None of these is model-visible: they ride on the raw ``SdkClientError`` the provider classifies by class only.
The texts for a connection that ended (by the peer, or by us) are the JSON-RPC peer's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from host._json import format_ms
from host.jsonrpc import JsonRpcPeer
from host.process import ManagedProcess

__all__ = [
    "CLIENT_CLOSED_MESSAGE",
    "FAILED_TO_START_MESSAGE",
    "NOT_RUNNING_MESSAGE",
    "RUNTIME_CLOSED_MESSAGE",
    "RUNTIME_EXITED_MESSAGE",
    "TEARDOWN_AGGREGATE_MESSAGE",
    "closed_reason",
    "failure_context",
    "method_not_found",
    "timeout_text",
]

FAILED_TO_START_MESSAGE: Final = "DSH SDK runtime failed to start"
RUNTIME_EXITED_MESSAGE: Final = "DSH SDK runtime exited"
NOT_RUNNING_MESSAGE: Final = "DSH SDK runtime is not running"
RUNTIME_CLOSED_MESSAGE: Final = "DSH SDK runtime closed"
CLIENT_CLOSED_MESSAGE: Final = "DSH SDK runtime client is closed"
TEARDOWN_AGGREGATE_MESSAGE: Final = "DSH SDK runtime teardown failed"
_METHOD_NOT_FOUND: Final = "method not found: {method}"
_TIMEOUT_MESSAGE: Final = "{method} timed out after {ms}ms waiting for the DSH SDK runtime"


def failure_context(handle: ManagedProcess | None) -> str:
    """The exit facts and stderr tail appended to a transport failure (empty before the spawn)."""
    if handle is None:
        return ""
    context = ""
    outcome = handle.outcome
    if outcome is not None:
        if outcome.exit_code is not None:
            context += f"\nexit code: {outcome.exit_code}"
        elif outcome.signal is not None:
            context += f"\nsignal: {outcome.signal}"
    tail = handle.stderr_tail
    if tail:
        context += "\nstderr tail:\n" + "\n".join(tail)
    return context


def timeout_text(method: str, timeout_ms: float | None, stderr_tail: Sequence[str]) -> str:
    """The text of a request whose bound elapsed, with the stderr tail if any."""
    text = _TIMEOUT_MESSAGE.format(method=method, ms=format_ms(timeout_ms or 0.0))
    if stderr_tail:
        text += "; stderr tail:\n" + "\n".join(stderr_tail)
    return text


def closed_reason(peer: JsonRpcPeer) -> str:
    """Why a write found the connection gone: the peer's own closed texts, else ``not running``."""
    if peer.close_reason in ("eof", "line-too-long"):
        return "JSON-RPC input closed"
    if peer.close_reason == "closed":
        return "JSON-RPC transport closed"
    return NOT_RUNNING_MESSAGE


def method_not_found(method: str) -> str:
    """The ``-32601`` message for a runtime request the host does not serve."""
    return _METHOD_NOT_FOUND.format(method=method)
