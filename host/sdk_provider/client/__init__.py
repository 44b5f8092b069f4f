"""The host-side DSH SDK client (docs/behaviour.md#sdk-wire-framing to #sdk-client-errors): one runtime process per
client, newline JSON-RPC on stdio.

Requests carry ids ``req_<uuid4 hex>``; runtime→host requests get ``-32601``; notifications are routed to
per-session subscriptions; ``run`` is gated on the prompt's receipt and ends at the root ``idle``. Failures are the
typed, host-only ``SdkClientError`` family; ``aclose`` is idempotent, shielded and bounded.
"""

from __future__ import annotations

from host.sdk_provider.client._client import (
    CLIENT_CLOSED_MESSAGE,
    FAILED_TO_START_MESSAGE,
    NOT_RUNNING_MESSAGE,
    RUNTIME_CLOSED_MESSAGE,
    RUNTIME_EXITED_MESSAGE,
    STDERR_TAIL_LINES,
    TEARDOWN_AGGREGATE_MESSAGE,
    NotificationObserver,
    SdkClient,
    SessionRunOutcome,
)
from host.sdk_provider.client._spec import SdkRunSpec
from host.sdk_provider.client._subscription import SUBSCRIPTION_CLOSED_MESSAGE, SessionNotification, Subscription
from host.sdk_provider.client._validation import (
    MAX_CONTENT_DEPTH,
    RECEIPT_EVENT_TYPE,
    ServerInfo,
    compact_json,
    is_receipt,
    message_id_of,
    server_info_of,
    turn_end_reason,
    validate_event,
)

__all__ = [
    "CLIENT_CLOSED_MESSAGE",
    "FAILED_TO_START_MESSAGE",
    "MAX_CONTENT_DEPTH",
    "NOT_RUNNING_MESSAGE",
    "RECEIPT_EVENT_TYPE",
    "RUNTIME_CLOSED_MESSAGE",
    "RUNTIME_EXITED_MESSAGE",
    "STDERR_TAIL_LINES",
    "SUBSCRIPTION_CLOSED_MESSAGE",
    "TEARDOWN_AGGREGATE_MESSAGE",
    "NotificationObserver",
    "SdkClient",
    "SdkRunSpec",
    "ServerInfo",
    "SessionNotification",
    "SessionRunOutcome",
    "Subscription",
    "compact_json",
    "is_receipt",
    "message_id_of",
    "server_info_of",
    "turn_end_reason",
    "validate_event",
]
