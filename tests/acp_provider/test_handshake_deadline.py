"""``initialize_timeout_ms`` bounds ``initialize`` and ``session/new`` together; expiry fails the start as ``timeout``.

The failure text is the same closed line ``check`` reports, and the child is rolled back by the ladder.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import anyio
import pytest

from host._exceptions import AcpRunFailure
from host.acp_provider import AcpProvider
from host.acp_provider._run import start_acp_run
from host.diagnostics import AcpFailureFacts, acp_failure_line
from host.run._check import check_entry
from tests._provider_helpers import is_gone
from tests.acp_provider._helpers import PROCESS_TIMEOUT_S, agent_entry, agent_spec, make_request, task_group
from tests.snapshots import assert_snapshot

# A child that never answers: it records its pid, then reads stdin until EOF and exits.
_SILENT_CHILD = "import os, sys; open(sys.argv[1], 'w').write(str(os.getpid())); sys.stdin.read()"


@pytest.mark.anyio
async def test_a_silent_initialize_fails_the_start_as_an_initialize_timeout(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    spec = agent_spec(tmp_path, args=["-c", _SILENT_CHILD, str(pid_file)])
    # Long enough for the interpreter to start and write its pid on a loaded machine.
    spec = dataclasses.replace(spec, initialize_timeout_ms=1000)
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            with pytest.raises(AcpRunFailure) as caught:
                await start_acp_run(make_request(), spec, task_group=group)
    assert str(caught.value) == "subagent-acp: " + acp_failure_line(AcpFailureFacts("initialize", "timeout"))
    assert is_gone(int(pid_file.read_text()))
    assert_snapshot("acp", "initialize-timeout", str(caught.value))


@pytest.mark.anyio
async def test_a_stalled_session_new_fails_through_the_provider_as_a_new_session_timeout(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    entry = agent_entry(MOCK_NEWSESSION_READY=str(ready), MOCK_NEWSESSION_GO=str(tmp_path / "never"))
    entry = entry.model_copy(update={"initialize_timeout_ms": 3000})
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            provider = AcpProvider(entry, task_group=group)
            with pytest.raises(AcpRunFailure) as caught:
                await provider.start(make_request(parent_cwd=str(tmp_path)))
            await provider.aclose()
    assert ready.exists()
    assert str(caught.value) == "subagent-acp: " + acp_failure_line(AcpFailureFacts("new-session", "timeout"))
    assert_snapshot("acp", "new-session-timeout", str(caught.value))


@pytest.mark.anyio
async def test_the_run_and_check_report_the_same_timeout_line(tmp_path: Path) -> None:
    entry = agent_entry(args=["-c", _SILENT_CHILD, str(tmp_path / "pid")])
    entry = entry.model_copy(update={"initialize_timeout_ms": 200})
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        report = await check_entry(entry, cwd=str(tmp_path))
        async with task_group() as group:
            provider = AcpProvider(entry, task_group=group)
            with pytest.raises(AcpRunFailure) as caught:
                await provider.start(make_request(parent_cwd=str(tmp_path)))
            await provider.aclose()
    assert report.diagnostic is not None
    assert str(caught.value) == "subagent-acp: " + report.diagnostic
