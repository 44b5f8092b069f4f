"""``hint:`` lines built only from host-side facts: config keys, the PATH lookup, the policy, scrubbed names.

Never from child text: the inputs are the entry, the closed diagnostic line, the tool's closed error code and the
host's own environment (names only, never values).
"""

from __future__ import annotations

import os
import re
import shutil
from typing import Final

from host import EntryConfig
from host.cli._internals import format_ms, scrubbed_names

__all__ = ["SESSION_EXPIRED_HINT", "hints_for"]

_DENIAL: Final = re.compile(r"policy: reject; request: ([a-z_]+); decision: denied")
_MAX_NAMES: Final = 6
# A failure during the handshake: ACP `initialize` / `new-session`, DSH SDK `initialize`.
_HANDSHAKE_STAGE: Final = re.compile(r"stage: (initialize|new-session);")
_NOT_ACP: Final = (
    "the child wrote {n} line(s) of non-JSON text to stdout; is this command its ACP mode "
    "(for example gemini --acp, fast-agent serve --transport acp)?"
)
SESSION_EXPIRED_HINT: Final = (
    "the session could not be resumed (the agent offers neither session/resume nor session/load, or refused it); "
    "run without --session to start a new one, or pass --if-lost new to continue in a fresh session"
)


def hints_for(
    entry: EntryConfig,
    *,
    diagnostic: str | None,
    timed_out: bool,
    timeout_ms: float | None,
    non_json_lines: int = 0,
) -> list[str]:
    """The hints for one outcome of ``entry`` (without the ``hint: `` prefix).

    ``non_json_lines`` counts the non-blank lines the child wrote to stdout that were no JSON-RPC message.
    """
    hints: list[str] = []
    text = diagnostic or ""
    handshake_failed = _HANDSHAKE_STAGE.search(text) is not None
    if "category: process-start" in text:
        hints.extend(_launch_hints(entry))
    denial = _DENIAL.search(text)
    if denial is not None:
        hints.append(
            f'the child asked for "{denial.group(1)}" and the policy is reject; set permission = "allow" in '
            f"[providers.{entry.name}] or pass --permission allow"
        )
    if handshake_failed and non_json_lines > 0:
        hints.append(_NOT_ACP.format(n=non_json_lines))
    if "category: auth-required" in text or (handshake_failed and "category: timeout" not in text):
        # The child failed to start or to authenticate: a variable the scrub removed may be what it missed.
        hints.extend(_auth_hints(entry))
    if "category: timeout" in text and ("stage: initialize" in text or "stage: new-session" in text):
        hints.append(f"providers.{entry.name} initialize_timeout_ms = {format_ms(entry.initialize_timeout_ms)}")
    if "category: session-expired" in text:
        hints.append(SESSION_EXPIRED_HINT)
    if timed_out and timeout_ms is not None:
        hints.append(f"providers.{entry.name} timeout_ms = {format_ms(timeout_ms)}; raise it or pass --timeout-ms N")
    return hints


def _launch_hints(entry: EntryConfig) -> list[str]:
    command = entry.command
    if " " in command and not os.path.exists(command):
        return ["command holds spaces; put the arguments in args = [...]"]
    if "/" not in command:
        path = entry.env.get("PATH", os.environ.get("PATH", os.defpath))
        if shutil.which(command, path=path) is None:
            return [f'"{command}" was not found on PATH']
        return []
    if not os.path.exists(command):
        return [f"{command} does not exist (a command with a slash resolves against the config file's directory)"]
    if not os.access(command, os.X_OK):
        return [f"{command} is not executable"]
    return []


def _auth_hints(entry: EntryConfig) -> list[str]:
    removed = [name for name in scrubbed_names(entry.env) if not name.upper().startswith("DSH_")]
    if not removed:
        return []
    shown = ", ".join(removed[:_MAX_NAMES]) + (" …" if len(removed) > _MAX_NAMES else "")
    first = removed[0]
    return [
        f"the host removed {shown} from the child's environment; pass one through with "
        f'[providers.{entry.name}.env] {first} = "${{{first}}}"'
    ]
