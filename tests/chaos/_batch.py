"""Run one chaos batch through one ``Host`` and check every run's invariants; the failures come back as text."""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, get_args

import anyio
import psutil

from host import CancelController, Host, RunHooks, SubagentResult, load_config
from host.diagnostics import (
    AcpCategory,
    AcpStage,
    AcpStopReasonFact,
    AcpToolKind,
    PermissionPolicy,
    SdkCategory,
    SdkStage,
)
from host.diagnostics._lines import PermissionOutcome
from host.diagnostics._result import DIAGNOSTIC_LIMIT_BYTES
from host.run._contracts import SubagentRequest
from tests._provider_helpers import SECRET_MARKERS, is_gone
from tests.chaos._draws import TIMEOUT_MS, Draw
from tests.conftest import PYTHON

CHAOS_CHILD: Final = Path(__file__).resolve().parent / "children" / "chaos_child.py"
# Every bound of one run: the slowest legitimate path is a timeout plus a full ladder on a loaded two-core box.
RUN_BOUND_S: Final = 30.0
# After the batch, how long the keeper may take to sweep the last retired runs' escapees (interval + grace).
SWEEP_BOUND_S: Final = 3.0
# Worker-thread caches of the event loops (idle workers linger ~10 s by design; they are not the host's threads).
_CACHED_WORKER_PREFIXES: Final = ("Trio thread", "AnyIO worker thread", "asyncio_")


def _alternatives(literal: Any) -> str:
    return "|".join(re.escape(value) for value in get_args(literal))


def _vocabulary() -> re.Pattern[str]:
    """The closed diagnostic vocabulary: one or more failure or permission lines built from the closed tables."""
    acp = (
        rf"Subagent failure \(provider: ACP; stage: (?:{_alternatives(AcpStage)}); "
        rf"category: (?:{_alternatives(AcpCategory)})(?:; stop reason: (?:{_alternatives(AcpStopReasonFact)}))?"
        r"(?:; exit code: -?\d+)?(?:; signal: SIG[A-Z0-9]+)?\)"
    )
    sdk = (
        rf"Subagent failure \(provider: DSH SDK; stage: (?:{_alternatives(SdkStage)}); "
        rf"category: (?:{_alternatives(SdkCategory)})\)"
    )
    permission = (
        rf"ACP unattended decision \(policy: (?:{_alternatives(PermissionPolicy)}); "
        rf"request: (?:{_alternatives(AcpToolKind)}); decision: (?:{_alternatives(PermissionOutcome)})\)"
    )
    line = f"(?:{acp}|{sdk}|{permission})"
    return re.compile(rf"{line}(?:\n{line})*")


VOCABULARY: Final = _vocabulary()


def write_chaos_config(tmp_path: Path, *, grace_ms: int = 200) -> Path:
    """Four entries on the chaos child: ACP and DSH SDK, each with and without ``timeout_ms``."""
    lines: list[str] = []
    for kind, name in (("acp", "acp"), ("dsh-sdk", "sdk")):
        for suffix, timeout in (("", None), ("-timeout", TIMEOUT_MS)):
            lines += [
                f'[providers."{name}{suffix}"]',
                f'kind = "{kind}"',
                f"command = {json.dumps(PYTHON)}",
                f"args = {json.dumps([str(CHAOS_CHILD)])}",
                f"dispose_eof_grace_ms = {grace_ms}",
                f"dispose_grace_ms = {grace_ms}",
            ]
            if kind == "dsh-sdk":
                lines.append("shutdown_timeout_ms = 100")
            if timeout is not None:
                lines.append(f"timeout_ms = {timeout}")
    path = tmp_path / "chaos.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@dataclass(slots=True)
class _Observed:
    """What one run handed back: each settlement's model-visible text, and each ``SubagentResult``."""

    settlements: list[str] = field(default_factory=list[str])
    results: list[SubagentResult] = field(default_factory=list[SubagentResult])


def _fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def _threads() -> set[int]:
    return {
        thread.ident or 0 for thread in threading.enumerate() if not thread.name.startswith(_CACHED_WORKER_PREFIXES)
    }


async def run_batch(tmp_path: Path, draws: list[Draw], *, canary: str, concurrency: int) -> list[str]:
    """Run ``draws`` through one ``Host``, ``concurrency`` at a time; every broken invariant, as one line each."""
    config = load_config(write_chaos_config(tmp_path))
    directories = [tmp_path / f"run-{index}" for index in range(len(draws))]
    for directory, one in zip(directories, draws, strict=True):
        directory.mkdir()
        (directory / "chaos.json").write_text(json.dumps(one.script), encoding="utf-8")
    fds_before, threads_before = _fds(), _threads()
    problems: list[str] = []
    limiter = anyio.Semaphore(concurrency)

    def parent_cwd_of(agent: object | None) -> str | None:
        return str(directories[agent]) if isinstance(agent, int) else None

    async with Host.open(config, parent_cwd=parent_cwd_of) as host, anyio.create_task_group() as group:
        for index, one in enumerate(draws):
            group.start_soon(_one_run, host, index, one, directories[index], limiter, canary, problems.append)
    problems += await _survivors(directories)
    # The host's fds and threads are back to baseline once the host closed (the keeper's pipe included).
    with anyio.move_on_after(SWEEP_BOUND_S):
        await poll_until(lambda: not (_fds() - fds_before or _threads() - threads_before))
    if _fds() - fds_before:
        problems.append(f"fds left open: {sorted(_fds() - fds_before)}")
    new_threads = _threads() - threads_before
    if new_threads:
        problems.append(f"threads left: {[t.name for t in threading.enumerate() if t.ident in new_threads]}")
    return problems


async def poll_until(condition: Callable[[], bool]) -> None:
    """Return once ``condition()`` holds, polling from 5 ms up to 50 ms (callers bound it)."""
    interval = 0.005
    while not condition():
        await anyio.sleep(interval)
        interval = min(interval * 2, 0.05)


async def _one_run(
    host: Host,
    index: int,
    one: Draw,
    directory: Path,
    limiter: anyio.Semaphore,
    canary: str,
    report: Callable[[str], None],
) -> None:
    async with limiter:
        observed = _Observed()
        controller = CancelController()
        label = f"run {index} ({one.behaviour} on {one.entry}, cancel {one.cancel_after_s})"
        try:
            with anyio.fail_after(RUN_BOUND_S):
                async with anyio.create_task_group() as group:
                    if one.cancel_after_s is not None:
                        group.start_soon(_cancel_later, controller, one.cancel_after_s)
                    # One run in four goes straight through its provider, to see dispose() itself return.
                    if index % 4 == 0 and not one.entry.endswith("-timeout"):
                        await _through_provider(host, one, directory, controller, observed)
                    else:
                        await _through_tool(host, index, one, controller, observed)
                    group.cancel_scope.cancel()
        except TimeoutError:
            report(f"{label}: did not settle and dispose within {RUN_BOUND_S}s")
            return
        for problem in _check(observed, canary):
            report(f"{label}: {problem}")


async def _cancel_later(controller: CancelController, delay_s: float) -> None:
    await anyio.sleep(delay_s)
    controller.cancel("chaos cancel")


async def _through_tool(host: Host, index: int, one: Draw, controller: CancelController, observed: _Observed) -> None:
    hooks = RunHooks(on_result=lambda _run_id, result: observed.results.append(result))
    name = "delegate_" + one.entry.replace("-", "_")
    tool_result = await host.execute(name, {"task": "chaos"}, signal=controller.signal, agent=index, hooks=hooks)
    observed.settlements.append(repr(tool_result))


async def _through_provider(
    host: Host, one: Draw, directory: Path, controller: CancelController, observed: _Observed
) -> None:
    request = SubagentRequest(
        label="chaos",
        prompt=[{"type": "text", "text": "chaos"}],
        signal=controller.signal,
        parent_cwd=str(directory),
    )
    try:
        run = await host.providers[one.entry].start(request)
    except Exception as exc:  # a start failure settles the call: its safe message is what a caller shows
        observed.settlements.append(str(exc))
        return
    try:
        observed.results.append(await run.result())
    finally:
        await run.dispose()
    observed.settlements.append("")


def _check(observed: _Observed, canary: str) -> list[str]:
    problems: list[str] = []
    if len(observed.settlements) != 1:
        problems.append(f"{len(observed.settlements)} settlements")
    if len(observed.results) > 1:
        problems.append(f"{len(observed.results)} results")
    visible = list(observed.settlements)
    for result in observed.results:
        visible.append(result.model_dump_json())
        diagnostic = result.diagnostic
        if diagnostic is not None:
            if len(diagnostic.encode()) > DIAGNOSTIC_LIMIT_BYTES:
                problems.append(f"diagnostic of {len(diagnostic.encode())} bytes")
            if not VOCABULARY.fullmatch(diagnostic):
                problems.append(f"diagnostic outside the closed vocabulary: {diagnostic!r}")
    problems.extend(
        f"{secret!r} in model-visible text {text[:300]!r}"
        for text in visible
        for secret in (canary, *SECRET_MARKERS)
        if secret in text
    )
    return problems


def recorded_pids(directory: Path) -> set[int]:
    """The pids the chaos child and its escapees wrote to ``pid.<pid>`` files in ``directory``."""
    return {int(path.name.removeprefix("pid.")) for path in directory.glob("pid.*")}


async def _survivors(directories: list[Path]) -> list[str]:
    """No process of any run survives: every pid a chaos child or escapee recorded is gone (bounded poll)."""
    pids = [pid for directory in directories for pid in recorded_pids(directory)]
    with anyio.move_on_after(SWEEP_BOUND_S):
        await poll_until(lambda: all(is_gone(pid) for pid in pids))
    left = [pid for pid in pids if not is_gone(pid)]
    for pid in left:
        try:
            psutil.Process(pid).kill()
        except psutil.Error:
            pass
    return [f"processes survived the batch: {left}"] if left else []
