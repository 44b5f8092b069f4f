"""The arguments ``subagent-host run`` passes to ``delegate_<name>``, built from its command line.

``call_arguments`` reads only the parsed options and, for ``--continue``, the run records' newest session of the
entry in its child's cwd; it starts nothing and raises ``UsageError`` (exit 2) for a ``--continue`` with nothing to
continue.
"""

from __future__ import annotations

import argparse

from host import EntryConfig, resolve_state_dir
from host.cli._internals import newest_session
from host.cli._select import UsageError

__all__ = ["call_arguments"]


def call_arguments(args: argparse.Namespace, entry: EntryConfig, parent_cwd: str) -> dict[str, object]:
    """The delegation call's arguments: the task, and the session to continue (``--session`` or ``--continue``).

    Raises:
        UsageError: ``--continue`` found no session of the provider in this workspace (or nothing is recorded).
    """
    arguments: dict[str, object] = {"task": args.task}
    session_id: str | None = args.session
    if args.continue_newest:
        cwd = entry.cwd if entry.cwd is not None else parent_cwd
        newest = None if args.no_record else newest_session(resolve_state_dir(args.state_dir), entry.name, cwd)
        if newest is None:
            raise UsageError(f"subagent-host: no session of provider {entry.name} in {cwd} to continue")
        session_id = newest.session_id
    if session_id is not None:
        arguments["session_id"] = session_id
    if args.if_lost != "error":
        arguments["if_lost"] = args.if_lost
    if args.workspace is not None:  # explicit, so a session's later turn cannot silently switch its workspace
        arguments["workspace"] = args.workspace
    return arguments
