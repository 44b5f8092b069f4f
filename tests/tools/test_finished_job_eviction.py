"""Finished background jobs are evicted oldest first past ``max_finished_jobs`` or past
``max_finished_job_output_bytes`` of their texts; an evicted id answers exactly like an unknown job."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from host import CancelController, Host
from host._exceptions import JobNotFoundError
from host.cancel import CancelSignal
from host.diagnostics import SubagentResult
from host.run._contracts import SubagentRun
from host.stream import FrameObserver
from host.tools import JobRunner
from tests.diagnostics._helpers import ScriptedRun
from tests.tools._helpers import PROCESS_TIMEOUT_S, acp_config, text_of

pytestmark = pytest.mark.anyio


def answering(text: str) -> Callable[[CancelSignal, FrameObserver], Awaitable[SubagentRun]]:
    async def starter(_signal: CancelSignal, _on_frame: FrameObserver) -> SubagentRun:
        output: list[dict[str, object]] = [{"type": "text", "text": text}]
        return ScriptedRun(result_value=SubagentResult.model_validate({"output": output, "stop_reason": "completed"}))

    return starter


async def test_memory_is_flat_over_1000_background_jobs() -> None:
    answer = "x" * 256 * 1024
    cap_bytes = 4 * 1024 * 1024
    peak_jobs = peak_bytes = 0
    job_id = ""
    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            runner = JobRunner(group, max_finished_jobs=256, max_finished_output_bytes=cap_bytes)
            for _ in range(1000):
                job_id = runner.start("label", answering(answer))
                await runner.wait(job_id)
                # Every retained finished job is listed and holds one answer's UTF-8 bytes.
                jobs = len(runner.list_text().splitlines())
                held = jobs * len(answer.encode())
                peak_jobs, peak_bytes = max(peak_jobs, jobs), max(peak_bytes, held)
            assert runner.read(job_id) == answer + "\n[status: completed]"
            assert len(runner.list_text().splitlines()) == peak_jobs
            await runner.aclose()
    assert peak_bytes <= cap_bytes
    assert peak_jobs == cap_bytes // len(answer)


async def test_the_oldest_finished_job_is_evicted_first_and_then_reads_as_unknown() -> None:
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            runner = JobRunner(group, max_finished_jobs=2)
            ids = [runner.start(f"job {n}", answering(f"answer {n}")) for n in range(3)]
            for job_id in ids:
                await runner.wait(job_id)
            with pytest.raises(JobNotFoundError) as evicted:
                runner.read(ids[0])
            with pytest.raises(JobNotFoundError) as unknown:
                runner.read("subagent-99")
            assert str(evicted.value) == "unknown job subagent-1"
            assert str(unknown.value) == "unknown job subagent-99"
            assert [runner.read(job_id) for job_id in ids[1:]] == [
                "answer 1\n[status: completed]",
                "answer 2\n[status: completed]",
            ]
            assert runner.list_text() == (
                "subagent-2 [subagent] completed — job 1\nsubagent-3 [subagent] completed — job 2"
            )
            await runner.aclose()


async def test_the_byte_bound_evicts_oldest_first_and_spares_live_jobs() -> None:
    release = anyio.Event()

    async def hanging(signal: CancelSignal, _on_frame: FrameObserver) -> SubagentRun:
        await release.wait()
        return await answering("late")(signal, _on_frame)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            runner = JobRunner(group, max_finished_output_bytes=10)
            live = runner.start("live", hanging)
            first = runner.start("first", answering("ééé"))  # 6 UTF-8 bytes
            await runner.wait(first)
            second = runner.start("second", answering("abcde"))
            await runner.wait(second)
            # 6 + 5 bytes exceed 10: the oldest finished one goes; the live job is never evicted.
            assert runner.list_text() == (
                "subagent-1 [subagent] running — live\nsubagent-3 [subagent] completed — second"
            )
            release.set()
            await runner.wait(live)
            await runner.aclose()


async def test_an_evicted_job_answers_like_an_unknown_one_through_the_host(tmp_path: Path) -> None:
    config = replace(acp_config(MOCK_TEXT="answer"), max_finished_jobs=1)
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            ids: list[str] = []
            for _ in range(2):
                started = await host.execute(
                    "delegate_acp", {"task": "x", "run_in_background": True}, signal=CancelController().signal
                )
                ids.append(started.to_json()["value"]["job_id"])
                await host.wait_job(ids[-1])
            evicted = await host.execute("job_output", {"job_id": ids[0]}, signal=CancelController().signal)
            unknown = await host.execute("job_output", {"job_id": "subagent-9"}, signal=CancelController().signal)
            kept = await host.execute("job_output", {"job_id": ids[1]}, signal=CancelController().signal)
    assert text_of(evicted) == f"Error: unknown job {ids[0]}"
    assert json.dumps(evicted.to_json()) == json.dumps(unknown.to_json()).replace("subagent-9", ids[0])
    assert text_of(unknown) == "Error: unknown job subagent-9"
    assert text_of(kept) == "answer\n[session: <session_id>]\n[status: completed]"
