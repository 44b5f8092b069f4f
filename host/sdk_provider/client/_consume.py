"""The receipt-gated consumption of one session run (docs/behaviour.md#sdk-client-run): skip everything before the
prompt's receipt, validate and hand over every root event from it on, stop at the root ``idle``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from host.sdk_provider.client._subscription import NotificationObserver, SessionNotification, SessionRunOutcome
from host.sdk_provider.client._validation import is_receipt, validate_event

__all__ = ["consume_session_run"]


async def consume_session_run(
    session_id: str,
    message_id: str,
    receive: Callable[[], Awaitable[SessionNotification]],
    on_notification: NotificationObserver | None,
) -> SessionRunOutcome:
    """Consume ``receive()`` up to the root ``idle`` after the receipt of ``message_id``; keep the last ``turn/end``.

    Raises:
        SdkProtocolError: a malformed root event.
    """
    last_turn_end: dict[str, Any] | None = None
    receipt_seen = False
    while True:
        notification = await receive()
        params = notification.params
        if notification.method == "session.event":
            event = params.get("event")
            if not receipt_seen:
                if not is_receipt(event, message_id):
                    continue
                receipt_seen = True
            valid = validate_event(event)
            if on_notification is not None:
                on_notification(notification)
            if valid["type"] == "turn/end":
                last_turn_end = valid
        elif receipt_seen:
            if on_notification is not None:
                on_notification(notification)
            if notification.method == "session.status" and params.get("status") == "idle":
                return SessionRunOutcome(session_id, last_turn_end)
