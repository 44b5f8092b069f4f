"""A plain ``pip install`` (no extras) can serve HTTP: ``serve --http``, in a bare venv that can import only the
project and the closure of its runtime ``dependencies`` (each linked in from this environment: no ``mcp``,
``mcp_types`` or any other test extra, and none of Starlette's or uvicorn's optional packages), answers both eras and
runs a call. A fresh venv's ``pip install .`` then ``serve --http`` answering ``initialize`` was also checked by hand.
"""

from __future__ import annotations

import re
import subprocess
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

from tests.cli._helpers import cli_env
from tests.conftest import PYTHON, REPO_ROOT
from tests.server._helpers import acp_entry, write_config
from tests.server._http_helpers import HttpServer, modern_headers, modern_params, sse_messages

_PROJECT = "subagent-host"
_ENTRY = "import sys; from subagent_host_cli import main; sys.argv[0] = 'subagent-host'; main()"


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_closure(distribution: str) -> set[str]:
    """``distribution`` and everything its unconditional requirements pull in, by normalized name."""
    seen: set[str] = set()
    pending = [distribution]
    while pending:
        name = normalized(pending.pop())
        if name in seen:
            continue
        seen.add(name)
        for line in metadata.requires(name) or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                pending.append(requirement.name)
    return seen


def plain_venv(root: Path) -> Path:
    """A venv without pip whose site-packages holds only the runtime closure (linked) and the project (a .pth)."""
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(root)], check=True, timeout=60)
    (site,) = root.glob("lib/python3*/site-packages")
    for name in runtime_closure(_PROJECT) - {_PROJECT}:
        distribution = metadata.distribution(name)
        tops = {Path(str(file)).parts[0] for file in distribution.files or [] if not str(file).startswith("..")}
        for top in tops:
            source = Path(str(distribution.locate_file(top)))
            if source.exists() and not (site / top).exists():
                (site / top).symlink_to(source)
    (site / "subagent_host_checkout.pth").write_text(f"{REPO_ROOT}\n", encoding="utf-8")
    return root / "bin" / "python"


def test_serve_http_runs_on_the_runtime_dependencies_alone(tmp_path: Path) -> None:
    python = plain_venv(tmp_path / "venv")
    probe = subprocess.run(
        [str(python), "-c", "import mcp"], capture_output=True, timeout=60, env=cli_env(), cwd=tmp_path
    )
    assert probe.returncode == 1 and b"ModuleNotFoundError" in probe.stderr  # the test extra is out of reach
    config = write_config(tmp_path, {"echo": acp_entry()})
    with HttpServer.open(config, command=[str(python), "-c", _ENTRY]) as server:
        session_id = server.initialize()
        listed = server.post(
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=[("Mcp-Session-Id", session_id)]
        )
        call = {
            "jsonrpc": "2.0",
            "id": "m1",
            "method": "tools/call",
            "params": modern_params({"name": "delegate_echo", "arguments": {"task": "plain"}}),
        }
        called = server.post(call, headers=modern_headers("tools/call", "delegate_echo"))
    assert listed.status == 200 and [tool["name"] for tool in listed.json()["result"]["tools"]][0] == "delegate_echo"
    (answer,) = sse_messages(called.body)
    assert answer["result"]["content"] == [{"type": "text", "text": "plain"}]
