"""The host-side DSH SDK client (docs/behaviour.md#sdk-wire-framing to #sdk-client-errors): one runtime process per
client, newline JSON-RPC on stdio.

Requests carry ids ``req_<uuid4 hex>``; runtime→host requests get ``-32601``; notifications are routed to
per-session subscriptions; ``run`` is gated on the prompt's receipt and ends at the root ``idle``. Failures are the
typed, host-only ``SdkClientError`` family; ``aclose`` is idempotent, shielded and bounded.
"""

from __future__ import annotations

from host.sdk_provider.client._client import NotificationObserver, SdkClient, SessionRunOutcome
from host.sdk_provider.client._spec import SdkRunSpec
from host.sdk_provider.client._subscription import SessionNotification
from host.sdk_provider.client._validation import ServerInfo, turn_end_reason

__all__ = [
    "NotificationObserver",
    "SdkClient",
    "SdkRunSpec",
    "ServerInfo",
    "SessionNotification",
    "SessionRunOutcome",
    "turn_end_reason",
]
