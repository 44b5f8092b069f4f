"""Fault-injection wrappers around the real ``SdkClient`` (sdk-provider.md §7), used through ``client_factory``.

Each wrapper forwards to a real client driving a real fake runtime and replaces one behaviour; the provider and
the run are never mocked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import anyio
from anyio.abc import TaskGroup

from host._exceptions import SdkProtocolError
from host._json import ContentBlock
from host.sdk_provider import ClientFactory, SdkClient, SdkClientLike, SdkRunSpec
from host.sdk_provider.client import NotificationObserver, ServerInfo, SessionRunOutcome

CLEANUP_FAILURE = "cleanup failed /private/path SECRET_TOKEN"
RUN_FAILURE = "unknown SDK failure at /private/path SECRET_TOKEN"


class ForwardingClient(SdkClientLike):
    """Forwards everything to a real ``SdkClient``; subclasses replace one member. Counts ``aclose`` calls."""

    def __init__(self, spec: SdkRunSpec) -> None:
        self.inner = SdkClient(spec)
        self.aclose_calls = 0
        self.start_entered = anyio.Event()

    async def start(self, task_group: TaskGroup) -> ServerInfo:
        self.start_entered.set()
        return await self.inner.start(task_group)

    async def run(
        self,
        session_id: str,
        content_blocks: Sequence[ContentBlock],
        on_notification: NotificationObserver | None = None,
    ) -> SessionRunOutcome:
        return await self.inner.run(session_id, content_blocks, on_notification)

    async def aclose(self) -> None:
        self.aclose_calls += 1
        await self.inner.aclose()


class ReapThenRaiseClient(ForwardingClient):
    """``aclose()`` reaps the runtime for real, then raises a secret-bearing error."""

    async def aclose(self) -> None:
        await super().aclose()
        raise RuntimeError(CLEANUP_FAILURE)


class FailingHandshakeClient(ForwardingClient):
    """The handshake raises ``SdkProtocolError`` at once, before anything is spawned."""

    async def start(self, task_group: TaskGroup) -> ServerInfo:
        self.start_entered.set()
        raise SdkProtocolError("injected handshake failure /private/path SECRET_TOKEN")


class RaisingRunClient(ForwardingClient):
    """``run()`` raises a plain ``RuntimeError`` carrying secrets."""

    async def run(
        self,
        session_id: str,
        content_blocks: Sequence[ContentBlock],
        on_notification: NotificationObserver | None = None,
    ) -> SessionRunOutcome:
        raise RuntimeError(RUN_FAILURE)


def recording_factory(cls: type[ForwardingClient], made: list[ForwardingClient]) -> ClientFactory:
    """A ``client_factory`` building ``cls`` wrappers and recording each one in ``made``."""

    def factory(spec: SdkRunSpec) -> SdkClientLike:
        client = cls(spec)
        made.append(client)
        return client

    return factory


ClientMaker = Callable[[SdkRunSpec], SdkClientLike]
