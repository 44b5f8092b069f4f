"""Runs expose their child's facts to the record: the permission decision, the stderr tail and the exit code.

Real fake children through a recording ``Host``: a permission request leaves a ``permission`` record of closed facts
only; an ACP child's stderr canary lands in ``<run_id>.stderr`` and never in the ``.jsonl``; a crashing child's exit
code is on ``run/end``.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.conftest import FAKE_ACP_AGENT
from tests.records._helpers import acp_entry, record_run

pytestmark = pytest.mark.anyio

_CANARY = "CANARY-acp-stderr-5d1e"
# The fake agent, behind a prelude that writes the canary (from the env, which is never recorded) to its stderr.
_NOISY_AGENT = (
    "import os, runpy, sys; sys.stderr.write(os.environ['NOISY_CANARY'] + '\\n'); sys.stderr.flush(); "
    "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
)


async def test_a_permission_request_is_recorded_as_closed_facts_only(tmp_path: Path) -> None:
    run = await record_run(tmp_path, acp_entry(MOCK_PERMISSION="1", MOCK_TOOL_KIND="execute", MOCK_TEXT="done"))
    assert run.of_type("permission") == [{"request_kind": "execute", "policy": "reject", "decision": "denied"}]
    assert run.types.index("permission") < run.types.index("run/end")


async def test_an_acp_childs_stderr_is_kept_in_the_stderr_file_and_never_in_the_transcript(tmp_path: Path) -> None:
    entry = {**acp_entry(MOCK_TEXT="answer", NOISY_CANARY=_CANARY), "args": ["-c", _NOISY_AGENT, str(FAKE_ACP_AGENT)]}
    run = await record_run(tmp_path, entry)
    assert run.of_type("run/end")[0]["stop_reason"] == "completed"
    assert _CANARY.encode() in run.jsonl.with_suffix(".stderr").read_bytes()
    assert _CANARY not in run.jsonl.read_text(encoding="utf-8")
    assert _CANARY not in repr(run.result)


async def test_a_crashing_acp_child_leaves_its_exit_code_on_run_end(tmp_path: Path) -> None:
    run = await record_run(tmp_path, acp_entry(MOCK_TEXT="partial", MOCK_CRASH_AFTER_CHUNK="1"))
    end = run.of_type("run/end")[0]
    assert end["stop_reason"] == "error"
    assert end["exit_code"] == 17


async def test_each_acp_stderr_line_is_logged_at_debug_on_the_provider_logger(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="host.acp_provider")
    entry = {**acp_entry(MOCK_TEXT="answer", NOISY_CANARY=_CANARY), "args": ["-c", _NOISY_AGENT, str(FAKE_ACP_AGENT)]}
    await record_run(tmp_path, entry)
    logged = [r for r in caplog.records if r.name == "host.acp_provider" and _CANARY in r.getMessage()]
    assert [r.levelno for r in logged] == [logging.DEBUG]
