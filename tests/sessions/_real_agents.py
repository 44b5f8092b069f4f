"""Real ACP agents from npm behind the host's sessions, each against a loopback fake of its model API.

The agents (``@agentclientprotocol/codex-acp``, ``@agentclientprotocol/claude-agent-acp``) are installed pinned by
``scripts/test-setup.sh`` into ``.tools/npm``; a missing one fails its test naming that script (never a skip). Each
runs offline exactly as the real MCP parents do (``tests/server/_parent_helpers.py``): a private HOME, a dummy key,
telemetry and update checks off, every proxy variable at a closed loopback port, ``NO_PROXY=127.0.0.1,localhost``,
and ``inherit_env = "minimal"`` so nothing of the test process's environment but that reaches it.

The model fakes hold a conversation: every generating request is answered with one text, ``reply_for(token)`` for
the last ``tok-<hex>`` token in the request's last user message, so a later request proves what the agent kept by
carrying an earlier turn's task and answer in its history (a ``Dialect`` says how each API carries one). A task
holding ``STALL`` is answered only once ``release()`` is called (or after ``_STALL_LIMIT_S``): a turn stays in flight
for as long as a test needs.

Every agent runs behind ``children/acp_wire_tap.py``, which logs each host-to-agent JSON-RPC method, so a test
observes ``session/resume``, ``session/fork`` and ``session/cancel`` on the wire, and which process (the tap's
pid) served a turn.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import uuid
from collections.abc import Callable, Generator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, Protocol

from tests.conftest import PYTHON
from tests.server._model_api_fakes import message_events, sse
from tests.server._parent_helpers import NPM_PREFIX, LoopbackApi, Reply, installed_parent, objects, offline_env

__all__ = [
    "CLAUDE_AGENT_ACP",
    "CODEX_ACP",
    "DUMMY_KEY",
    "STALL",
    "MESSAGES",
    "RESPONSES",
    "ConversationApi",
    "Dialect",
    "agent_entry",
    "reply_for",
    "tap_log",
]

CODEX_ACP: Final = NPM_PREFIX / "node_modules" / ".bin" / "codex-acp"
CLAUDE_AGENT_ACP: Final = NPM_PREFIX / "node_modules" / ".bin" / "claude-agent-acp"
WIRE_TAP: Final = Path(__file__).resolve().parent / "children" / "acp_wire_tap.py"
STALL: Final = "STALL"
_TOKEN: Final = re.compile(r"tok-[0-9a-f]{8,}")
# How long a stalled request waits for release() at most (a test that forgot to release still ends).
_STALL_LIMIT_S: Final = 60.0
_API_KEY_VARIABLE: Final = "SCRIPTED_MODEL_API_KEY"
DUMMY_KEY: Final = f"sk-dummy-{uuid.uuid4().hex}"
"""The agents' model API key: unique, so a test can prove it never reaches a result, a diagnostic or a record."""


def reply_for(token: str) -> str:
    """The fake model's answer to a task holding ``token`` (distinct from the token, so history shows both)."""
    return "reply-" + hashlib.sha256(token.encode()).hexdigest()[:12]


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    return " ".join(str(part.get("text", "")) for part in objects(value))


class Dialect(Protocol):
    """How one model API carries a conversation: what a request holds and how a text answer is sent."""

    path: str
    """The part of a request path that names the API's generating endpoint."""
    url_suffix: str
    """What follows the origin in the base URL the agent is configured with."""

    def is_turn(self, body: dict[str, Any]) -> bool:
        """Whether a request is a turn of the agent's own loop: streamed, offering the agent's tools."""
        ...

    def history(self, body: dict[str, Any]) -> list[str]:
        """The user and assistant texts the request carries, in order."""
        ...

    def last_user_text(self, body: dict[str, Any]) -> str: ...

    def reply(self, path: str, body: dict[str, Any], number: int, answer: Callable[[], str]) -> Reply:
        """The HTTP answer to a request (``answer()`` is the text of a generated answer)."""
        ...


class ResponsesDialect:
    """The OpenAI Responses API (``POST /v1/responses``) as Codex's app-server calls it."""

    path = "/responses"
    url_suffix = "/v1"

    def is_turn(self, body: dict[str, Any]) -> bool:
        return bool(objects(body.get("tools")))

    def history(self, body: dict[str, Any]) -> list[str]:
        items = objects(body.get("input"))
        return [_text(item.get("content")) for item in items if item.get("role") in ("user", "assistant")]

    def last_user_text(self, body: dict[str, Any]) -> str:
        users = [item for item in objects(body.get("input")) if item.get("role") == "user"]
        return _text(users[-1].get("content")) if users else ""

    def reply(self, path: str, body: dict[str, Any], number: int, answer: Callable[[], str]) -> Reply:
        if not path.rstrip("/").endswith("/responses"):
            return 404, "text/plain", b""
        response_id = f"resp_{number}"
        text: list[dict[str, Any]] = [{"type": "output_text", "text": answer(), "annotations": []}]
        item: dict[str, Any] = {"type": "message", "role": "assistant", "id": f"msg_{response_id}", "content": text}
        usage = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": {"id": response_id}},
            {"type": "response.output_item.done", "item": item},
            {"type": "response.completed", "response": {"id": response_id, "usage": usage}},
        ]
        return 200, "text/event-stream", sse(events)


class MessagesDialect:
    """The Anthropic Messages API (``POST /v1/messages``) as Claude Code (in the Claude Agent SDK) calls it."""

    path = "/v1/messages"
    url_suffix = ""

    def is_turn(self, body: dict[str, Any]) -> bool:
        return bool(body.get("stream")) and bool(objects(body.get("tools")))

    def history(self, body: dict[str, Any]) -> list[str]:
        return [_text(message.get("content")) for message in objects(body.get("messages"))]

    def last_user_text(self, body: dict[str, Any]) -> str:
        users = [message for message in objects(body.get("messages")) if message.get("role") == "user"]
        return _text(users[-1].get("content")) if users else ""

    def reply(self, path: str, body: dict[str, Any], number: int, answer: Callable[[], str]) -> Reply:
        if "/v1/messages" not in path:
            return 404, "text/plain", b""
        if "count_tokens" in path:
            return 200, "application/json", json.dumps({"input_tokens": 1}).encode()
        if not body.get("stream"):  # side queries (titles, summaries): a short text, never part of the session
            usage = {"input_tokens": 1, "output_tokens": 1}
            message = {"id": f"msg_{number}", "type": "message", "role": "assistant", "model": body.get("model")}
            message |= {"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "usage": usage}
            return 200, "application/json", json.dumps(message).encode()
        block = {"type": "text", "text": answer()}
        return 200, "text/event-stream", sse(message_events(f"msg_{number}", str(body.get("model")), block))


RESPONSES: Final = ResponsesDialect()
MESSAGES: Final = MessagesDialect()


class ConversationApi:
    """A model API fake that answers every generating request with ``reply_for`` its last user token."""

    def __init__(self, dialect: Dialect) -> None:
        self._dialect = dialect
        self._api = LoopbackApi(self._respond)
        self._released = threading.Event()
        self.stalled = threading.Event()
        """Set once a stalled request arrived."""

    @property
    def base_url(self) -> str:
        return self._api.origin + self._dialect.url_suffix

    @contextmanager
    def serving(self) -> Generator[ConversationApi]:
        with self._api.serving():
            try:
                yield self
            finally:
                self.release()

    def release(self) -> None:
        """Answer every stalled request (and every later one) at once."""
        self._released.set()

    def turns(self) -> list[list[str]]:
        """The conversation each turn request carried: its user and assistant texts, in order.

        Side queries that offer no tools (a title for the session) are left out.
        """
        requests = self._api.requests(self._dialect.path)
        return [self._dialect.history(body) for body in requests if self._dialect.is_turn(body)]

    def _answer(self, body: dict[str, Any]) -> str:
        user = self._dialect.last_user_text(body)
        if STALL in user:
            self.stalled.set()
            self._released.wait(_STALL_LIMIT_S)
        tokens = _TOKEN.findall(user)
        return reply_for(tokens[-1]) if tokens else "ok"

    def _respond(self, path: str, body: dict[str, Any]) -> Reply:
        number = len(self._api.requests(self._dialect.path))
        return self._dialect.reply(path, body, number, lambda: self._answer(body))


def _codex_config(codex_home: Path, base_url: str) -> None:
    """Codex's ``config.toml``: the scripted Responses provider, no approvals, nothing that calls home."""
    provider = {"name": "scripted", "base_url": base_url, "wire_api": "responses", "env_key": _API_KEY_VARIABLE}
    lines = [
        'model = "scripted-model"',
        'model_provider = "scripted"',
        'approval_policy = "never"',
        'sandbox_mode = "read-only"',
        "check_for_update_on_startup = false",
        "[analytics]\nenabled = false",
        "[feedback]\nenabled = false",
        '[history]\npersistence = "none"',
        "[features]\nplugins = false\napps = false\nremote_plugin = false",
        "[model_providers.scripted]",
        *(f"{key} = {json.dumps(value)}" for key, value in provider.items()),
    ]
    codex_home.mkdir(parents=True, mode=0o700, exist_ok=True)
    (codex_home / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


_LAUNCHERS: Final = {"codex": CODEX_ACP, "claude": CLAUDE_AGENT_ACP}


def tap_log(tmp_path: Path) -> list[dict[str, Any]]:
    """Every host-to-agent message the wire tap logged, in order."""
    path = tmp_path / "wire.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def agent_entry(
    agent: str, tmp_path: Path, api: ConversationApi, closed_port: int, *, home: str = "home", **settings: Any
) -> dict[str, Any]:
    """An ``acp`` entry running ``agent`` (``codex`` or ``claude``) offline behind the wire tap.

    The agent's HOME (where it keeps its sessions) is ``tmp_path / home``; the tap logs to ``tmp_path``.
    """
    home_dir = tmp_path / home
    home_dir.mkdir(mode=0o700, exist_ok=True)
    variables: Mapping[str, str]
    argv = [str(installed_parent(_LAUNCHERS[agent]))]
    if agent == "codex":
        _codex_config(home_dir / ".codex", api.base_url)
        variables = {"CODEX_HOME": str(home_dir / ".codex"), _API_KEY_VARIABLE: DUMMY_KEY}
    else:
        variables = {
            "ANTHROPIC_BASE_URL": api.base_url,
            "ANTHROPIC_API_KEY": DUMMY_KEY,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
        }
    return {
        "kind": "acp",
        "command": PYTHON,
        "args": [str(WIRE_TAP), str(tmp_path / "wire.jsonl"), "--", *argv],
        "inherit_env": "minimal",
        "env": offline_env(home_dir, closed_port, variables),
        **settings,
    }
