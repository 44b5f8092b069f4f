"""Planted secrets in a DSH SDK child's ``LlmFailure`` and JSON-RPC error ``data`` never reach results or startup
errors (they do reach the host-only sink, so the check is not vacuous).
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from host._exceptions import SdkRunFailure
from host.sdk_provider._run import start_sdk_run
from tests.sdk_provider._helpers import (
    PROCESS_TIMEOUT_S,
    D,
    R,
    RecordingSink,
    assert_no_secrets,
    make_request,
    run_to_result,
    runtime_spec,
    task_group,
    text_blocks,
)
from tests.sdk_provider._helpers import script_args as _script
from tests.sdk_provider._seams import PATCHED_FAKE_SOURCE as _PATCHED_FAKE


@pytest.mark.anyio
async def test_a_childs_llm_failure_and_error_data_secrets_never_reach_results_or_startup_errors(
    tmp_path: Path,
) -> None:
    patched = _script(tmp_path, "patched.py", _PATCHED_FAKE)
    secret_stderr = "stderr /private/path SECRET_TOKEN"
    child_error = await run_to_result(
        runtime_spec(
            tmp_path, args=patched, AUDIT_SECRET_FAILURES="1", FAKE_REASON_KIND="error", FAKE_STDERR=secret_stderr
        )
    )
    assert child_error.to_json() == {
        "output": text_blocks("hello from fake runtime"),
        "stop_reason": "error",
        "diagnostic": D("session-run", "child-error"),
    }
    prompt_sink = RecordingSink()
    prompt_error = await run_to_result(
        runtime_spec(tmp_path, args=patched, AUDIT_SECRET_FAILURES="1", FAKE_PROMPT_ERROR="1"), on_error=prompt_sink
    )
    assert prompt_error.to_json() == {"output": [], "stop_reason": "error", "diagnostic": D("session-run", "protocol")}
    # The planted payload did reach the host side (so the checks below are not vacuous).
    assert "SECRET_TOKEN" in str(prompt_sink.errors[0])
    init_sink = RecordingSink()
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            with pytest.raises(SdkRunFailure) as caught:
                await start_sdk_run(
                    make_request(),
                    runtime_spec(tmp_path, args=patched, AUDIT_SECRET_FAILURES="1", FAKE_INIT_ERROR="1"),
                    task_group=group,
                    on_error=init_sink,
                )
    assert str(caught.value) == R("initialize", "protocol")
    assert "SECRET_TOKEN" in json.dumps(getattr(init_sink.errors[0], "data", None))
    assert_no_secrets(str(child_error.to_json()), str(prompt_error.to_json()), str(caught.value))
