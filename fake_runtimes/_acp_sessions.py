"""The fake ACP agent's session switches (docs/behaviour.md#acp-fake-agent, sessions): stdlib only.

* ``MOCK_SESSION_RESUME=1`` advertises ``sessionCapabilities.resume`` and serves ``session/resume``;
  ``MOCK_SESSION_LOAD=1`` advertises ``loadSession`` and serves ``session/load``, replaying every earlier turn as
  ``user_message_chunk`` and ``agent_message_chunk`` updates (text ``replayed: <task>``) before it answers ``{}``;
  ``MOCK_SESSION_CLOSE=1`` advertises and serves ``session/close``; ``MOCK_SESSION_FORK=1`` advertises and serves
  ``session/fork``. An unknown session id is answered with ``-32002`` (resource not found).
* ``MOCK_SESSION_DIR=<dir>``: every session's tasks are kept in ``<dir>/<sessionId>.json``, so a new process can
  resume or load it; without it they live in the process only.
* ``MOCK_SESSION_ECHO=1``: a prompt is answered with ``pid=<pid> session=<n> tasks=<t1> | <t2> | ...``: this
  process, the session's ordinal in it, and every task of the session so far (a cancelled one included).
* ``MOCK_SESSION_LOG=<file>``: one line per session method received (``new``, ``prompt``, ``cancel``, ``resume``,
  ``load``, ``close``, ``fork``), each followed by the session id.
* ``MOCK_HANG_ON=<text>``: a prompt whose task contains ``<text>`` streams its answer, then waits for
  ``session/cancel`` (as ``MOCK_HANG`` does for every prompt).
"""

from __future__ import annotations

import json
import os
import uuid
from typing import cast

JsonObject = dict[str, object]
RESOURCE_NOT_FOUND = -32002


def flag(name: str) -> bool:
    return os.environ.get(name) == "1"


def log(line: str) -> None:
    path = os.environ.get("MOCK_SESSION_LOG")
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, (line + "\n").encode("utf-8"))
        finally:
            os.close(fd)


def capabilities() -> JsonObject:
    """The ``agentCapabilities`` members the session switches add."""
    added: JsonObject = {}
    if flag("MOCK_SESSION_LOAD"):
        added["loadSession"] = True
    session: JsonObject = {}
    for switch, name in (
        ("MOCK_SESSION_RESUME", "resume"),
        ("MOCK_SESSION_CLOSE", "close"),
        ("MOCK_SESSION_FORK", "fork"),
    ):
        if flag(switch):
            session[name] = {}
    if session:
        added["sessionCapabilities"] = session
    return added


class SessionBook:
    """Every session's tasks, in memory and (with ``MOCK_SESSION_DIR``) on disk."""

    def __init__(self) -> None:
        self._tasks: dict[str, list[str]] = {}
        self._ordinals: dict[str, int] = {}
        self._directory = os.environ.get("MOCK_SESSION_DIR")

    def _path(self, session_id: str) -> str | None:
        if self._directory is None or "/" in session_id:
            return None
        return os.path.join(self._directory, f"{session_id}.json")

    def _save(self, session_id: str) -> None:
        path = self._path(session_id)
        if path is not None:
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w", encoding="utf-8") as handle:
                json.dump(self._tasks[session_id], handle)
            os.replace(tmp, path)

    def _open(self, session_id: str, tasks: list[str]) -> None:
        self._tasks[session_id] = tasks
        self._ordinals.setdefault(session_id, len(self._ordinals) + 1)

    def new(self, session_id: str) -> None:
        self._open(session_id, [])
        self._save(session_id)
        log(f"new {session_id}")

    def find(self, session_id: str) -> list[str] | None:
        """The session's tasks, from memory or disk; ``None`` when it is unknown."""
        if session_id in self._tasks:
            return self._tasks[session_id]
        path = self._path(session_id)
        if path is None or not os.path.exists(path):
            return None
        with open(path, encoding="utf-8") as handle:
            tasks = cast(list[str], json.load(handle))
        self._open(session_id, tasks)
        return tasks

    def prompt(self, session_id: str, task: str) -> None:
        log(f"prompt {session_id}")
        tasks = self.find(session_id)
        if tasks is None:
            self._open(session_id, [])
            tasks = self._tasks[session_id]
        tasks.append(task)
        self._save(session_id)

    def fork(self, source: str) -> str | None:
        tasks = self.find(source)
        if tasks is None:
            return None
        forked = str(uuid.uuid4())
        self._open(forked, list(tasks))
        self._save(forked)
        log(f"fork {source} {forked}")
        return forked

    def echo(self, session_id: str) -> str:
        tasks = self._tasks.get(session_id, [])
        ordinal = self._ordinals.get(session_id, 0)
        return f"pid={os.getpid()} session={ordinal} tasks=" + " | ".join(tasks)
