"""Fault-injection wrappers around the real ``SdkClient`` (docs/behaviour.md#sdk-test-seams), used through
``client_factory``.

Each wrapper forwards to a real client driving a real fake runtime and replaces one behaviour; the provider and
the run are never mocked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import anyio
from anyio.abc import TaskGroup

from host._exceptions import SdkProtocolError
from host._json import ContentBlock
from host.process import ProcessOutcome
from host.sdk_provider._run import ClientFactory, SdkClientLike
from host.sdk_provider.client import NotificationObserver, SdkClient, SdkRunSpec, ServerInfo, SessionRunOutcome
from tests.conftest import REPO_ROOT

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

    @property
    def outcome(self) -> ProcessOutcome | None:
        return self.inner.outcome

    @property
    def stderr_tail(self) -> tuple[str, ...]:
        return self.inner.stderr_tail

    @property
    def non_json_lines(self) -> int:
        return self.inner.non_json_lines


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


# The fake runtime with patches selected by AUDIT_* variables (each one documented where it is applied).
PATCHED_FAKE_SOURCE = f"""
import json, os, sys
sys.path.insert(0, {str(REPO_ROOT)!r})
import fake_runtimes.dsh_runtime as rt

SECRET = "LlmFailure at /private/path SECRET_TOKEN"
Runtime = rt._FakeRuntime

if os.environ.get("AUDIT_PROMPT_RECORD"):  # record every session/prompt params object, one JSON line each
    original_prompt = Runtime._prompt
    def record_prompt(self, request_id, params):
        with open(os.environ["AUDIT_PROMPT_RECORD"], "a", encoding="utf-8") as file:
            file.write(json.dumps(params) + "\\n")
        original_prompt(self, request_id, params)
    setattr(Runtime, "_prompt", record_prompt)

if os.environ.get("AUDIT_INTERRUPTED_MESSAGE"):  # every assistant/message carries data.interrupted = true
    original_event = Runtime._event
    def interrupted_event(self, sid, event_type, data=rt._OMIT):
        if event_type == "assistant/message" and isinstance(data, dict):
            data = dict(data, interrupted=True)
        original_event(self, sid, event_type, data)
    setattr(Runtime, "_event", interrupted_event)

if os.environ.get("AUDIT_SECRET_FAILURES"):  # the child's error reason and every JSON-RPC error carry secrets
    original_reason = rt._reason
    def secret_reason(kind, malformed):
        if kind == "error" and malformed is None:
            return {{"kind": "error", "error": {{"message": SECRET, "code": "SECRET_TOKEN", "status": 500}}}}
        return original_reason(kind, malformed)
    rt._reason = secret_reason
    original_error = Runtime._error
    def secret_error(self, request_id, error):
        original_error(self, request_id, dict(error, message=SECRET, data={{"where": SECRET}}))
    setattr(Runtime, "_error", secret_error)

if os.environ.get("AUDIT_IGNORE_SHUTDOWN"):  # never answer shutdown (stdin EOF still ends the runtime)
    original_dispatch = Runtime._dispatch
    def dispatch(self, request_id, method, params):
        if method != "shutdown":
            original_dispatch(self, request_id, method, params)
    setattr(Runtime, "_dispatch", dispatch)

rt.main()
"""
