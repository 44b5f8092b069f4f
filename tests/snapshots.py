"""Snapshot assertions shared by the suites: ``snapshots/<kind>/<name>.json`` pins an exact JSON value.

``assert_snapshot(kind, name, value)`` compares ``value`` with the stored file, every host-minted session id in it
(``[session: <id>]`` in a text, a ``session_id`` member) replaced by ``<session_id>`` first (``scrub_session_ids``),
and every job's ``[run: <uuid>]`` in a text by ``[run: <run_id>]`` (``scrub_run_ids``).
Only when ``UPDATE_SNAPSHOTS=1`` is
set does it (re)write the file instead; a missing snapshot is a failure otherwise, so CI never invents one.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import cast

__all__ = ["SNAPSHOT_ROOT", "UPDATE_ENV_VAR", "assert_snapshot", "scrub_run_ids", "scrub_session_ids", "snapshot_path"]

SNAPSHOT_ROOT = Path(__file__).resolve().parent.parent / "snapshots"
"""Where snapshots live: ``<repo>/snapshots/<kind>/<name>.json``."""
UPDATE_ENV_VAR = "UPDATE_SNAPSHOTS"
"""Set to ``1`` to rewrite snapshots from the current values."""

_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_SESSION_IN_TEXT = re.compile(r"\[session: [A-Za-z0-9_-]{32}\]")
_RUN_IN_TEXT = re.compile(r"\[run: [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\]")


def scrub_run_ids(text: str) -> str:
    """``text`` with each ``[run: <uuid>]`` (a job's run id in ``job_list``, random) shown as ``[run: <run_id>]``."""
    return _RUN_IN_TEXT.sub("[run: <run_id>]", text)


def scrub_session_ids(value: object) -> object:
    """``value`` with each session id (random, so never pinned) replaced by ``<session_id>``."""
    if isinstance(value, str):
        return _SESSION_IN_TEXT.sub("[session: <session_id>]", value)
    if isinstance(value, list):
        return [scrub_session_ids(item) for item in cast("list[object]", value)]
    if isinstance(value, dict):
        return {
            key: "<session_id>" if key == "session_id" and isinstance(item, str) else scrub_session_ids(item)
            for key, item in cast("dict[str, object]", value).items()
        }
    return value


def snapshot_path(kind: str, name: str) -> Path:
    """The file of snapshot ``name`` of ``kind``; both must be plain file-name components."""
    for part in (kind, name):
        if not _SAFE_NAME.match(part):
            raise ValueError(f"snapshot kind and name must be plain file names, got {part!r}")
    return SNAPSHOT_ROOT / kind / f"{name}.json"


def _render(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def assert_snapshot(kind: str, name: str, value: object) -> None:
    """Assert that ``value`` equals the stored snapshot (key order included); rewrite it under ``UPDATE_SNAPSHOTS=1``.

    Raises:
        AssertionError: the snapshot is missing or differs.
    """
    path = snapshot_path(kind, name)
    value = _scrub_run_ids_in(scrub_session_ids(value))
    rendered = _render(value)
    if os.environ.get(UPDATE_ENV_VAR) == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != rendered:
            path.write_text(rendered, encoding="utf-8")
        return
    if not path.exists():
        raise AssertionError(f"missing snapshot {path}; run with {UPDATE_ENV_VAR}=1 to create it")
    stored = path.read_text(encoding="utf-8")
    assert json.loads(stored) == value, f"snapshot {kind}/{name} differs:\nstored:  {stored}\nactual:  {rendered}"
    assert stored == rendered, f"snapshot {kind}/{name} differs in key order or formatting"


def _scrub_run_ids_in(value: object) -> object:
    if isinstance(value, str):
        return scrub_run_ids(value)
    if isinstance(value, list):
        return [_scrub_run_ids_in(item) for item in cast("list[object]", value)]
    if isinstance(value, dict):
        return {key: _scrub_run_ids_in(item) for key, item in cast("dict[str, object]", value).items()}
    return value
