"""Retries are for infrastructure only: a child that never answered the handshake or died before the prompt was
answered is tried again (``attempts`` counts every try); a refusal, an error from the child itself and a timeout
are results on the first attempt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from host import BatchItem, LocalExecutor, load_config, open_batch
from host.batch import is_infrastructure_failure
from tests.batch._helpers import acp_entry, write_config

pytestmark = pytest.mark.anyio

_BATCH_TIMEOUT_S = 60


async def _one_item(tmp_path: Path, retries: int, **env: str) -> dict[str, Any]:
    config = load_config(write_config(tmp_path, {"agent": acp_entry(**env)}))
    lines: list[dict[str, Any]] = []
    with anyio.fail_after(_BATCH_TIMEOUT_S):
        async with open_batch(
            [BatchItem(id="only", task="do it", timeout_ms=1500 if "MOCK_HANG" in env else None)],
            outdir=tmp_path / "out",
            config=config,
            executor=LocalExecutor(workers=1),
            retries=retries,
            retry_backoff_s=0.01,
        ) as batch:
            lines.extend([result.line async for result in batch])
    assert len(lines) == 1
    return lines[0]


@pytest.mark.parametrize(
    ("env", "diagnostic"),
    [
        (
            {"MOCK_CRASH_ON_INITIALIZE": "1"},
            "Subagent failure (provider: ACP; stage: initialize; category: process-exit; exit code: 11)",
        ),
        (
            {"MOCK_CRASH_ON_PROMPT": "1"},
            "Subagent failure (provider: ACP; stage: process; category: process-exit; exit code: 1)",
        ),
    ],
)
async def test_an_infrastructure_failure_is_retried_and_counted(
    tmp_path: Path, env: dict[str, str], diagnostic: str
) -> None:
    line = await _one_item(tmp_path, 2, **env)
    assert (line["stop_reason"], line["diagnostic"], line["attempts"]) == ("error", diagnostic, 3)
    assert (tmp_path / "out" / "runs" / f"{line['run_id']}.jsonl").is_file()  # the last attempt's record


async def test_a_spawn_failure_is_retried(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, {"agent": {**acp_entry(), "command": str(tmp_path / "missing")}}))
    with anyio.fail_after(_BATCH_TIMEOUT_S):
        async with open_batch(
            [BatchItem(id="only", task="do it")],
            outdir=tmp_path / "out",
            config=config,
            retries=1,
            retry_backoff_s=0.01,
        ) as batch:
            lines = [result.line async for result in batch]
    assert lines[0]["diagnostic"] == "Subagent failure (provider: ACP; stage: process; category: process-start)"
    assert lines[0]["attempts"] == 2
    # A start that failed is a recorded run too: the line names an attempt's record.
    records = {path.name.removesuffix(".jsonl") for path in (tmp_path / "out" / "runs").glob("*.jsonl")}
    assert len(records) == 2 and lines[0]["run_id"] in records


@pytest.mark.parametrize(
    ("env", "stop_reason", "error_code"),
    [
        ({"MOCK_STOP": "refusal"}, "refusal", None),
        ({"MOCK_STOP": "max_turn_requests"}, "error", None),  # an error from the child itself
        ({"MOCK_HANG": "1"}, "aborted", "TOOL_TIMEOUT"),
    ],
)
async def test_refusals_child_errors_and_timeouts_are_never_retried(
    tmp_path: Path, env: dict[str, str], stop_reason: str, error_code: str | None
) -> None:
    line = await _one_item(tmp_path, 3, **env)
    assert (line["stop_reason"], line.get("error_code"), line["attempts"]) == (stop_reason, error_code, 1)
    assert isinstance(line["run_id"], str)


def test_only_handshake_and_pre_answer_deaths_count_as_infrastructure() -> None:
    def line(stage: str, category: str) -> str:
        return f"Subagent failure (provider: ACP; stage: {stage}; category: {category})"

    assert is_infrastructure_failure(line("process", "process-start"))
    assert is_infrastructure_failure(line("initialize", "transport"))
    assert is_infrastructure_failure(line("process", "process-exit") + "; exit code: 1")
    assert not is_infrastructure_failure(line("initialize", "timeout"))
    assert not is_infrastructure_failure(line("new-session", "process-exit"))
    assert not is_infrastructure_failure(line("prompt", "transport"))
    assert not is_infrastructure_failure(line("initialize", "auth-required"))
    assert not is_infrastructure_failure(line("session-run", "child-error").replace("ACP", "DSH SDK"))
    assert is_infrastructure_failure(line("initialize", "transport").replace("ACP", "DSH SDK"))
    assert not is_infrastructure_failure(None)
