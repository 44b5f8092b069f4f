"""Drive the installed ``subagent-host`` console script (from this interpreter's bin directory) in a subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.cli._helpers import CLI_TIMEOUT_S, acp_entry, cli_env, write_config
from tests.conftest import PYTHON, REPO_ROOT

SCRIPT = str(Path(sys.executable).parent / "subagent-host")
OPERATOR_AGENT = str(REPO_ROOT / "tests" / "cli" / "children" / "operator_agent.py")


def script_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The CLI's environment: no test switches, and a private user config dir so the real one is never read."""
    env = cli_env()
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    env.update(extra)
    return env


def run_script(
    *args: str, cwd: Path, env: dict[str, str], stdin: bytes | None = None, timeout: float = CLI_TIMEOUT_S
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [SCRIPT, *args], cwd=cwd, env=env, input=stdin, capture_output=True, timeout=timeout, check=False
    )


def operator_entry(mode: str, *args: str, **fields: Any) -> dict[str, Any]:
    """An ACP entry on the operator test agent in ``mode``."""
    entry: dict[str, Any] = {**acp_entry(), "args": [OPERATOR_AGENT, mode, *args], **fields}
    return entry


def operator_config(tmp_path: Path, mode: str, *args: str, **fields: Any) -> Path:
    return write_config(tmp_path, {"op": operator_entry(mode, *args, **fields)})


def signal_mask(pid: int, field: str) -> int:
    """A ``/proc/<pid>/status`` signal mask (``SigCgt``: signals with a handler)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1], 16)
    raise AssertionError(f"no {field} in /proc/{pid}/status")


__all__ = [
    "OPERATOR_AGENT",
    "PYTHON",
    "SCRIPT",
    "operator_config",
    "operator_entry",
    "run_script",
    "script_env",
    "signal_mask",
]
