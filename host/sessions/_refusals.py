"""The closed refusals of a call on a session: ``session-expired``, and a fork decided before any child is spawned
(docs/behaviour.md#sessions-cold-resume).

A DSH SDK runtime has no fork. An ACP session's file records what its agent advertised at the last handshake
(``SessionRecord.capabilities``); a source whose agent did not advertise ``session/fork`` is refused here. Where
that is unknown (a file an older host wrote), the fork's own handshake learns it, and the turn raises the same
error (``host.tools._session_turns``).
"""

from __future__ import annotations

from typing import Final, Literal

from host._exceptions import SessionForkError, SubagentHostError
from host.diagnostics import AcpFailureFacts, acp_run_failure, sdk_run_failure
from host.sessions._store import SessionRecord

__all__ = ["FORK_UNSUPPORTED", "Kind", "check_forkable", "fork_unsupported", "session_expired"]

Kind = Literal["acp", "dsh-sdk"]

FORK_UNSUPPORTED: Final = (
    'cannot fork session {session_id}: the agent of provider "{provider}" does not support forking'
)
"""The exact text of ``SessionForkError`` (host facts only: a known session id and a configured provider name)."""


def session_expired(kind: Kind) -> SubagentHostError:
    """The closed ``resume`` / ``session-expired`` failure of a session that cannot be continued."""
    if kind == "acp":
        return acp_run_failure(AcpFailureFacts("resume", "session-expired"))
    return sdk_run_failure("resume", "session-expired")


def fork_unsupported(session_id: str, provider: str) -> SessionForkError:
    """The clear tool error of a fork of ``session_id`` that the agent of ``provider`` does not offer."""
    return SessionForkError(FORK_UNSUPPORTED.format(session_id=session_id, provider=provider))


def check_forkable(record: SessionRecord) -> None:
    """Refuse a fork of ``record`` when its kind or its recorded capabilities rule it out.

    Raises:
        SessionForkError: a DSH SDK session, or an ACP session whose agent did not advertise ``session/fork``.
    """
    if record.kind == "dsh-sdk" or (record.capabilities is not None and "fork" not in record.capabilities):
        raise fork_unsupported(record.session_id, record.provider)
