"""The cold start of ``run``: a run on the built-in echo imports neither the other commands, nor the DSH SDK
provider, nor the server and its MCP SDK, nor a TOML parser it has no file for (docs/design.md, the console entry)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli._helpers import CLI_TIMEOUT_S
from tests.cli._script import PYTHON, script_env

_NEVER_IMPORTED_BY_RUN = (
    "host.sdk_provider",
    "host.server",
    "host.run._check",
    "host.cli._checks",
    "host.cli._providers",
    "host.cli._runs",
    "mcp",
    "tomllib",
)


def test_a_run_on_the_echo_imports_neither_other_commands_nor_the_sdk_provider_nor_the_server(tmp_path: Path) -> None:
    probe = (
        "import sys, subagent_host_cli\n"
        "try:\n"
        "    subagent_host_cli.main(['run', '--json', '--no-record', 'hello'])\n"
        "except SystemExit as exit:\n"
        "    status = exit.code\n"
        f"never = {_NEVER_IMPORTED_BY_RUN!r}\n"
        "loaded = sorted(m for m in sys.modules if any(m == n or m.startswith(n + '.') for n in never))\n"
        "sys.stderr.write(repr((status, loaded)))\n"
    )
    done = subprocess.run(
        [PYTHON, "-c", probe], cwd=tmp_path, env=script_env(tmp_path), capture_output=True, timeout=CLI_TIMEOUT_S,
        check=False,
    )  # fmt: skip
    assert json.loads(done.stdout)["output"] == [{"type": "text", "text": "hello"}]
    assert done.stderr.decode().splitlines()[-1].endswith("(0, [])"), done.stderr
