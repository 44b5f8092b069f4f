"""``RunLifecycle`` settlement races on plain in-process callables: no child, no connection, no process.

Which of cancel, startup failure and release failure wins, and that the release runs exactly once, is pure logic;
the providers' suites pin the same rules against real children.
"""

from __future__ import annotations

import anyio
import pytest
from anyio.abc import TaskGroup

from host._exceptions import AggregateError, SdkRunFailure, StartAbortedError, SubagentHostError
from host._json import ContentBlock
from host.cancel import CancelController
from host.diagnostics import SubagentResult
from host.run._contracts import SubagentRequest
from host.run._lifecycle import RunLifecycle

pytestmark = pytest.mark.anyio

ABORTED = "aborted before the fake child started"


class Fixture:
    """The provider side of one lifecycle: counts releases and release failures, serves a partial output."""

    def __init__(self, *, release_error: Exception | None = None) -> None:
        self.controller = CancelController()
        self.releases = 0
        self.release_failures = 0
        self.release_error = release_error
        self.partial: list[ContentBlock] = [{"type": "text", "text": "partial"}]

    def lifecycle(self, task_group: TaskGroup) -> RunLifecycle[str]:
        return RunLifecycle(
            SubagentRequest(label="fake", prompt=[], signal=self.controller.signal),
            kind="acp",
            provider_name="fake",
            task_group=task_group,
            on_error=None,
            start_aborted_message=ABORTED,
            output=lambda: [dict(block) for block in self.partial],
            freeze=lambda: None,
            release=self.release,
            release_failure=self.failure_of,
            report_interrupted_release=False,
        )

    async def release(self) -> None:
        self.releases += 1
        if self.release_error is not None:
            raise self.release_error

    def failure_of(self, raw: Exception) -> SubagentHostError:
        self.release_failures += 1
        return SdkRunFailure("release failed")


async def _no_startup_failure(failure: str) -> SubagentHostError:
    return SubagentHostError(failure)


async def test_a_cancel_during_the_handshake_aborts_the_start_and_releases_once() -> None:
    fixture = Fixture()
    entered = anyio.Event()

    async def handshake() -> str | None:
        entered.set()
        await anyio.sleep_forever()
        return None

    async def attempt() -> SubagentResult:
        raise AssertionError("never published")

    async with anyio.create_task_group() as group:
        lifecycle = fixture.lifecycle(group)

        async def cancel_once_entered() -> None:
            await entered.wait()
            fixture.controller.cancel("stop")

        group.start_soon(cancel_once_entered)
        with anyio.fail_after(5), pytest.raises(StartAbortedError, match=f"^{ABORTED}$"):
            await lifecycle.start(
                handshake, startup_failure=_no_startup_failure, attempt=attempt, diagnostic=lambda: None, name="t"
            )
        assert not lifecycle.published
    assert fixture.releases == 1


async def test_a_startup_failure_whose_release_fails_raises_both_in_order() -> None:
    fixture = Fixture(release_error=OSError("ladder"))

    async def handshake() -> str | None:
        return "handshake refused"

    async def attempt() -> SubagentResult:
        raise AssertionError("never published")

    async with anyio.create_task_group() as group:
        lifecycle = fixture.lifecycle(group)
        with anyio.fail_after(5), pytest.raises(AggregateError) as caught:
            await lifecycle.start(
                handshake, startup_failure=_no_startup_failure, attempt=attempt, diagnostic=lambda: None, name="t"
            )
        assert [str(error) for error in caught.value.errors] == ["handshake refused", "release failed"]
    assert fixture.releases == 1


async def test_a_local_cancel_settles_aborted_at_once_with_the_partial_output_while_the_attempt_runs() -> None:
    fixture = Fixture()
    attempt_started = anyio.Event()

    async def handshake() -> str | None:
        return None

    async with anyio.create_task_group() as group:
        lifecycle = fixture.lifecycle(group)

        async def attempt() -> SubagentResult:
            with lifecycle.interruptible():
                attempt_started.set()
                await anyio.sleep_forever()
            return SubagentResult(output=[], stop_reason="aborted")

        with anyio.fail_after(5):
            await lifecycle.start(
                handshake, startup_failure=_no_startup_failure, attempt=attempt, diagnostic=lambda: None, name="t"
            )
            await attempt_started.wait()
            fixture.controller.cancel("stop")
            result = await lifecycle.result()
            assert result.stop_reason == "aborted" and result.diagnostic is None
            assert result.output == fixture.partial
            await lifecycle.dispose()
            await lifecycle.dispose()
        assert fixture.releases == 1 and lifecycle.disposed


async def test_every_dispose_sees_the_same_release_failure_built_once() -> None:
    fixture = Fixture(release_error=OSError("ladder"))

    async def handshake() -> str | None:
        return None

    async def attempt() -> SubagentResult:
        return SubagentResult(output=[], stop_reason="completed", diagnostic="dropped")

    failures: list[BaseException] = []
    async with anyio.create_task_group() as group:
        lifecycle = fixture.lifecycle(group)
        with anyio.fail_after(5):
            await lifecycle.start(
                handshake, startup_failure=_no_startup_failure, attempt=attempt, diagnostic=lambda: None, name="t"
            )
            result = await lifecycle.result()
            for _ in range(2):
                try:
                    await lifecycle.dispose()
                except SdkRunFailure as exc:
                    failures.append(exc)
        assert result.stop_reason == "completed" and result.diagnostic is None
    assert len(failures) == 2 and failures[0] is failures[1]
    assert (fixture.releases, fixture.release_failures) == (1, 1)
