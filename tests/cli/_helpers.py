"""Drive ``subagent-host run`` as a real subprocess (``python -m host``) with TOML configs written to ``tmp_path``.

The CLI never sees the test's ``MOCK_*`` switches or ``SUBAGENT_HOST_CONFIG``; ``json_of`` checks stdout is one JSON
object led by ``"schema": 1`` (which it removes, so expectations pin the rest) and normalizes its random ``run_id``
to ``<run_id>``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import anyio
import psutil
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from host.sessions import is_session_id
from tests._provider_helpers import is_gone as is_gone
from tests._provider_helpers import wait_for_ready_marker as wait_for_ready_marker
from tests._provider_helpers import wait_until_gone
from tests.conftest import FAKE_ACP_AGENT, PYTHON, REPO_ROOT
from tests.sdk_provider._helpers import D, R, pid_alive, wait_for_file

# The ``subagent-host`` console script installed next to this interpreter.
CONSOLE_SCRIPT = str(Path(PYTHON).parent / "subagent-host")
# Two interpreter cold starts (the CLI and its child) plus the handshake: generous on a loaded CI box.
CLI_TIMEOUT_S = 30


def write_config(tmp_path: Path, entries: Mapping[str, Mapping[str, Any]]) -> Path:
    """Write a TOML config with one ``[providers.<name>]`` table per entry (flat values and one ``env`` table)."""
    lines: list[str] = []
    for name, entry in entries.items():
        lines.append(f'[providers."{name}"]')
        for key, value in entry.items():
            if key != "env":
                lines.append(f"{key} = {json.dumps(value)}")
        lines.append(f'[providers."{name}".env]')
        lines.extend(f"{key} = {json.dumps(value)}" for key, value in entry.get("env", {}).items())
    path = tmp_path / "subagent-host.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def acp_entry(**env: str) -> dict[str, Any]:
    """An ``acp`` entry on the fake agent with fast teardown graces."""
    return {
        "kind": "acp",
        "command": PYTHON,
        "args": [str(FAKE_ACP_AGENT)],
        "dispose_eof_grace_ms": 300,
        "dispose_grace_ms": 300,
        "env": env,
    }


def cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCK_") and k != "SUBAGENT_HOST_CONFIG"}
    env["PYTHONPATH"] = str(REPO_ROOT)
    return env


async def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return await anyio.run_process([PYTHON, "-m", "host", "run", *args], cwd=cwd, env=cli_env(), check=False)


async def start_cli(*args: str, cwd: Path) -> Process:
    return await anyio.open_process(
        [PYTHON, "-m", "host", "run", *args], cwd=cwd, env=cli_env(), stdin=subprocess.DEVNULL
    )


async def read_line(process: Process) -> bytes:
    assert process.stdout is not None
    return await BufferedByteReceiveStream(process.stdout).receive_until(b"\n", 1 << 20)


def one_json_object(stdout: bytes) -> dict[str, Any]:
    """The single line of ``stdout``, parsed as a JSON object, whose leading ``"schema": 1`` is checked and removed,
    and whose ``session_id`` (host-minted, so never pinned; tests/sessions/ pins it) is checked and removed."""
    lines = stdout.decode().splitlines()
    assert len(lines) == 1, lines
    data = cast("dict[str, Any]", json.loads(lines[0]))
    assert isinstance(data, dict)
    assert next(iter(data), None) == "schema" and data.pop("schema") == 1, data
    if "session_id" in data:
        assert is_session_id(data.pop("session_id")), data
    return data


def json_of(stdout: bytes) -> dict[str, Any]:
    """``one_json_object`` with a present ``run_id`` checked non-empty and replaced by ``<run_id>``."""
    data = one_json_object(stdout)
    if "run_id" in data:
        assert isinstance(data["run_id"], str) and data["run_id"]
        data["run_id"] = "<run_id>"
    return data


def descendants(pid: int) -> list[psutil.Process]:
    return psutil.Process(pid).children(recursive=True)


def assert_all_gone(processes: list[psutil.Process]) -> None:
    for proc in processes:
        try:
            assert proc.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            pass


def sigterm_trapping_config(tmp_path: Path) -> tuple[Path, Path]:
    """A config whose child hangs after ``partial`` and traps SIGTERM, and its ready file."""
    ready = tmp_path / "ready"
    entry = acp_entry(MOCK_HANG="1", MOCK_TEXT="partial", MOCK_TRAP_SIGTERM="1", MOCK_READY_FILE=str(ready))
    # A long EOF rung keeps the ladder busy while the second signal arrives.
    entry["dispose_eof_grace_ms"] = 1000
    return write_config(tmp_path, {"acp": entry}), ready


async def signal_twice(process: Process, first: signal.Signals) -> tuple[bytes, int]:
    """Send ``first``, read the result line, then SIGINT during the teardown; the line and the exit status."""
    process.send_signal(first)
    line = await read_line(process)
    process.send_signal(signal.SIGINT)
    return line, await process.wait()


ADVERSARY = Path(__file__).resolve().parent / "children" / "adversary.py"


SECRET_MARKERS = ("SECRET_TOKEN", "/private/path")


def adversary_config(tmp_path: Path, mode: str, arg: str | None = None, **entry: Any) -> Path:
    args = [str(ADVERSARY), mode] + ([arg] if arg is not None else [])
    base: dict[str, Any] = {
        "kind": "acp",
        "command": PYTHON,
        "args": args,
        "dispose_eof_grace_ms": 200,
        "dispose_grace_ms": 200,
        "env": {"ADV_DIR": str(tmp_path)},
    }
    base.update(entry)
    return write_config(tmp_path, {"acp": base})


async def run_adversary(
    tmp_path: Path, mode: str, arg: str | None = None, *, task: str = "x", **entry: Any
) -> tuple[int, Any]:
    config = adversary_config(tmp_path, mode, arg, **entry)
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await run_cli("--config", str(config), "--json", task, cwd=tmp_path)
    assert b"Traceback" not in done.stderr, done.stderr[-4000:].decode(errors="replace")
    data = without_stderr_tail(json_of(done.stdout))
    for marker in SECRET_MARKERS:
        assert marker not in json.dumps(data)
    return done.returncode, data


def without_stderr_tail(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without the operator's copy of the child's stderr (``stderr_tail``, which may hold anything the
    child printed) and the ``runs show`` hint that comes with it."""
    if data.pop("stderr_tail", None):
        hints: list[str] = data["hints"]
        assert hints[-1].startswith("subagent-host runs show ") and hints[-1].endswith(" --stderr"), hints
        hints.pop()
        if not hints:
            del data["hints"]
    return data


# The `cause` a `run --json` object carries for each stop reason unless a test names another.
_USUAL_CAUSE = {
    "completed": "completed",
    "error": "failed",
    "aborted": "cancelled",
    "refusal": "child-stopped",
    "max-tokens": "child-stopped",
}


def run_object(
    stop_reason: str, text: str | None, diagnostic: str | None = None, *, cause: str | None = None
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "run_id": "<run_id>",
        "provider": "acp",
        "stop_reason": stop_reason,
        "output": [] if text is None else [{"type": "text", "text": text}],
    }
    if diagnostic is not None:
        obj["diagnostic"] = diagnostic
    obj["cause"] = cause or _USUAL_CAUSE[stop_reason]
    return obj


def adversary_pids(tmp_path: Path) -> list[int]:
    return [int(line) for line in (tmp_path / "pids").read_text().split()]


async def wait_all_gone(pids: list[int]) -> None:
    for pid in pids:
        await wait_until_gone(pid)


ACP_STARTUP_ABORT = {
    "run_id": "<run_id>",  # a start the signal aborted is a recorded run
    "provider": "acp",
    "error": "subagent request was aborted before the ACP child started",
    "cause": "cancelled",
}


async def signal_when_ready(
    tmp_path: Path, mode: str, signals: list[signal.Signals], *, task: str = "x", **entry: Any
) -> tuple[int, dict[str, Any], list[int]]:
    """Start the CLI, wait for the child's ready file, send ``signals`` (the rest after the result line)."""
    config = adversary_config(tmp_path, mode, **entry)
    argv = [PYTHON, "-m", "host", "run", "--config", str(config), "--json", task]
    # stderr (the CLI's and the child's) goes to a file: an undrained pipe could block either process.
    with (tmp_path / "stderr").open("wb") as stderr, anyio.fail_after(CLI_TIMEOUT_S):
        async with await anyio.open_process(
            argv, cwd=tmp_path, env=cli_env(), stdin=subprocess.DEVNULL, stderr=stderr
        ) as process:
            await wait_for_ready_marker(tmp_path / "ready")
            pids = [proc.pid for proc in descendants(process.pid)]
            process.send_signal(signals[0])
            assert process.stdout is not None
            # A flooding child's partial output can be large: read the one result line with a generous bound.
            line = await BufferedByteReceiveStream(process.stdout).receive_until(b"\n", 1 << 30)
            for later in signals[1:]:
                process.send_signal(later)
            status = await process.wait()
    assert pids
    stderr_text = (tmp_path / "stderr").read_text(errors="replace")
    assert "Traceback" not in stderr_text, stderr_text[-4000:]
    # Answers to what a dead child left queued must not each log an asyncio "pipe closed by peer" warning.
    assert "asyncio" not in stderr_text, stderr_text[-4000:]
    return status, json_of(line), pids


SDK_ADVERSARY = Path(__file__).resolve().parents[1] / "sdk_provider" / "children" / "adversarial_runtime.py"


SDK_START_ABORTED = "subagent request was aborted before the SDK child started"


SDK_RUN: dict[str, Any] = {"run_id": "<run_id>", "provider": "dsh-sdk"}


SDK_OK = [{"type": "text", "text": "ok"}]


def sdk_completed(output: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    output = SDK_OK if output is None else output
    return {**SDK_RUN, "stop_reason": "completed", "output": output, "cause": "completed"}


def sdk_failed(category: str, output: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    diagnostic = D("session-run", category)
    return {**SDK_RUN, "stop_reason": "error", "output": output or [], "diagnostic": diagnostic, "cause": "failed"}


def sdk_rejected(category: str) -> dict[str, Any]:
    """A start that failed: a recorded run too (its run id and cause), with the safe error."""
    cause = "timeout" if category == "timeout" else "failed"
    return {"run_id": "<run_id>", "provider": "dsh-sdk", "error": R("initialize", category), "cause": cause}


def adversarial_entry(tmp_path: Path, tricks: str, **settings: Any) -> dict[str, Any]:
    """A ``dsh-sdk`` entry on the adversarial runtime with fast teardown; ``env`` extras go in ``settings["env"]``."""
    env = {"ADV": tricks, "ADV_PIDS": str(tmp_path / "pids"), **settings.pop("env", {})}
    return {
        "kind": "dsh-sdk",
        "command": PYTHON,
        "args": [str(SDK_ADVERSARY)],
        "shutdown_timeout_ms": 100,
        "dispose_eof_grace_ms": 200,
        "dispose_grace_ms": 200,
        "initialize_timeout_ms": 2000,
        **settings,
        "env": env,
    }


def sdk_recorded_pids(tmp_path: Path) -> list[int]:
    path = tmp_path / "pids"
    return [int(line) for line in path.read_text(encoding="utf-8").split()] if path.exists() else []


def assert_descendants_gone(tmp_path: Path) -> None:
    survivors = [pid for pid in sdk_recorded_pids(tmp_path) if pid_alive(pid)]
    assert not survivors, f"descendants survived the run: {survivors}"


def assert_no_planted_secret(stdout: bytes) -> None:
    assert b"SECRET_TOKEN" not in stdout and b"/private/path" not in stdout


async def run_adversarial(
    tmp_path: Path, entry: dict[str, Any], task: str = "do it"
) -> subprocess.CompletedProcess[bytes]:
    config = write_config(tmp_path, {"dsh-sdk": entry})
    with anyio.fail_after(CLI_TIMEOUT_S):
        return await run_cli("--config", str(config), "--json", task, cwd=tmp_path)


async def signal_at(
    tmp_path: Path, tricks: str, stage: str, signals: list[signal.Signals], **settings: Any
) -> tuple[dict[str, Any], int]:
    """Start the CLI, wait until the runtime reached ``stage``, send ``signals`` in turn; the object and status."""
    ready = tmp_path / "ready"
    env = {"ADV_READY": str(ready), "ADV_READY_AT": stage, "ADV_GRANDCHILDREN": "4"}
    config = write_config(tmp_path, {"dsh-sdk": adversarial_entry(tmp_path, tricks, env=env, **settings)})
    with anyio.fail_after(CLI_TIMEOUT_S):
        async with await start_cli("--config", str(config), "--json", "task", cwd=tmp_path) as process:
            await wait_for_file(ready)
            process.send_signal(signals[0])
            # Every later signal lands while the teardown ladder runs (the result line is printed first).
            line = await read_line(process) if len(signals) > 1 else b""
            for extra in signals[1:]:
                process.send_signal(extra)
            assert process.stdout is not None
            # Read to EOF before waiting: a large partial output must not block the CLI on a full pipe.
            rest = b"".join([chunk async for chunk in process.stdout])
            returncode = await process.wait()
    return json_of(line + rest), returncode
