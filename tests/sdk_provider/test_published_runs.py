"""Published runs against the real fake runtime: results, stop reasons, fold, env and route
(docs/behaviour.md#sdk-acceptance group B)."""

from __future__ import annotations

import dataclasses
import logging
import re
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from host.config import SdkEntryConfig
from host.config._loader import parse_config
from host.run._contracts import AgentOptions
from host.sdk_provider import DshSdkProvider
from host.sdk_provider._provider import spec_of_entry
from host.sdk_provider._run import start_sdk_run
from tests.conftest import FAKE_DSH_RUNTIME, PYTHON
from tests.sdk_provider._helpers import (
    PROCESS_TIMEOUT_S,
    D,
    RecordingSink,
    assert_no_secrets,
    assert_result_snapshot,
    json_lines,
    make_request,
    open_run,
    run_to_result,
    runtime_entry,
    runtime_spec,
    task_group,
    text_blocks,
)
from tests.sdk_provider._helpers import script_args as _script
from tests.sdk_provider._seams import PATCHED_FAKE_SOURCE as _PATCHED_FAKE
from tests.sdk_provider._seams import RUN_FAILURE, ForwardingClient, RaisingRunClient, recording_factory


@pytest.mark.anyio
async def test_a_completed_run_has_a_host_id_the_text_and_one_shared_teardown(tmp_path: Path) -> None:
    made: list[ForwardingClient] = []
    spec = runtime_spec(tmp_path, FAKE_TEXT="hello from sdk child")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            run = await start_sdk_run(
                make_request(), spec, task_group=group, client_factory=recording_factory(ForwardingClient, made)
            )
            result = await run.result()
            async with anyio.create_task_group() as both:
                both.start_soon(run.dispose)
                both.start_soon(run.dispose)
            await run.dispose()
            other = await start_sdk_run(make_request(), spec, task_group=group)
            await other.dispose()
    assert result.to_json() == {"output": text_blocks("hello from sdk child"), "stop_reason": "completed"}
    assert_result_snapshot("B1-completed", result)
    assert made[0].aclose_calls == 1
    assert other.id != run.id and not run.id.startswith("session-")


@pytest.mark.anyio
async def test_initialize_carries_the_entry_route_without_unset_keys(tmp_path: Path) -> None:
    record = tmp_path / "init.jsonl"
    await run_to_result(runtime_spec(tmp_path, max_tokens=4096, FAKE_RECORD_INIT=str(record)))
    assert json_lines(record) == [
        {"cwd": str(tmp_path), "provider": "fake-provider", "model": "fake-model", "maxTokens": 4096}
    ]


@pytest.mark.anyio
async def test_agent_options_add_reasoning_effort_to_the_entry_route(tmp_path: Path) -> None:
    record = tmp_path / "init.jsonl"
    request = make_request(agent_options=AgentOptions(reasoning_effort="high"))
    await run_to_result(runtime_spec(tmp_path, max_tokens=4096, FAKE_RECORD_INIT=str(record)), request)
    assert json_lines(record) == [
        {
            "cwd": str(tmp_path),
            "provider": "fake-provider",
            "model": "fake-model",
            "reasoningEffort": "high",
            "maxTokens": 4096,
        }
    ]


@pytest.mark.anyio
async def test_concurrent_runs_each_send_their_own_route(tmp_path: Path) -> None:
    options = {
        "a": AgentOptions(provider="provider-a", model="model-a", reasoning_effort="high", max_tokens=111),
        "b": AgentOptions(provider="provider-b", model="model-b", reasoning_effort="max", max_tokens=222),
    }
    provider_records = {key: tmp_path / f"{key}.jsonl" for key in options}

    async def one(key: str) -> None:
        spec = runtime_spec(tmp_path, FAKE_RECORD_INIT=str(provider_records[key]))
        await run_to_result(spec, make_request(agent_options=options[key]))

    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with anyio.create_task_group() as group:
            for key in options:
                group.start_soon(one, key)
    for key, option in options.items():
        assert json_lines(provider_records[key]) == [
            {
                "cwd": str(tmp_path),
                "provider": option.provider,
                "model": option.model,
                "reasoningEffort": option.reasoning_effort,
                "maxTokens": option.max_tokens,
            }
        ]


@pytest.mark.anyio
async def test_the_ambient_env_is_scrubbed_and_explicit_keys_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSH_TEST_AMBIENT_SECRET_KEY", "leak-me-not")
    spec = runtime_spec(
        tmp_path,
        FAKE_ECHO_ENV="DSH_TEST_AMBIENT_SECRET_KEY,DEEPSEEK_API_KEY",
        DEEPSEEK_API_KEY="explicit-child-key",
        FAKE_TEXT="done",
    )
    text = (await run_to_result(spec)).output[0]["text"]
    assert "DSH_TEST_AMBIENT_SECRET_KEY=\n" in text
    assert "DEEPSEEK_API_KEY=explicit-child-key" in text
    assert "leak-me-not" not in text


@pytest.mark.anyio
async def test_a_forwarded_reference_reaches_the_child_but_the_source_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOST_SECRET_TOKEN", "abc")
    env = {"FORWARDED": "${HOST_SECRET_TOKEN}", "FAKE_ECHO_ENV": "FORWARDED,HOST_SECRET_TOKEN"}
    table = {"kind": "dsh-sdk", "command": PYTHON, "args": [str(FAKE_DSH_RUNTIME)], "env": env}
    entry = parse_config({"providers": {"dsh-sdk": table}}).providers["dsh-sdk"]
    assert isinstance(entry, SdkEntryConfig)
    text = (await run_to_result(runtime_spec(tmp_path, env=entry.env))).output[0]["text"]
    assert "FORWARDED=abc" in text
    assert "HOST_SECRET_TOKEN=\n" in text


@pytest.mark.anyio
async def test_inherit_env_minimal_passes_only_the_allowlist_and_the_entry_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RANDOM_SETTING", "ambient")
    env = {"EXPLICIT": "1", "FAKE_ECHO_ENV": "RANDOM_SETTING,EXPLICIT,PATH", "FAKE_TEXT": "done"}
    table = {"kind": "dsh-sdk", "command": PYTHON, "args": [str(FAKE_DSH_RUNTIME)], "env": env}
    table["inherit_env"] = "minimal"
    entry = parse_config({"providers": {"dsh-sdk": table}}).providers["dsh-sdk"]
    assert isinstance(entry, SdkEntryConfig)
    inherit = spec_of_entry(entry, str(tmp_path)).inherit_env
    spec = dataclasses.replace(runtime_spec(tmp_path, env=entry.env), inherit_env=inherit)
    text = (await run_to_result(spec)).output[0]["text"]
    assert "RANDOM_SETTING=\n" in text
    assert "EXPLICIT=1" in text
    assert "PATH=\n" not in text


SCENARIOS: list[tuple[str, dict[str, str], dict[str, object]]] = [
    ("B7-max-tokens", {"FAKE_REASON_KIND": "max-tokens"}, {"stop_reason": "max-tokens"}),
    (
        "B8-child-error",
        {"FAKE_REASON_KIND": "error", "FAKE_TEXT": "partial answer"},
        {
            "stop_reason": "error",
            "diagnostic": D("session-run", "child-error"),
            "output": text_blocks("partial answer"),
        },
    ),
    (
        "B9-malformed-message",
        {"FAKE_MALFORMED_MESSAGE": "1", "FAKE_TEXT": "stream-only answer"},
        {
            "stop_reason": "error",
            "diagnostic": D("session-run", "protocol"),
            "output": text_blocks("stream-only answer"),
        },
    ),
    (
        "B10-malformed-reason",
        {"FAKE_MALFORMED_REASON": "1", "FAKE_TEXT": "partial before bad reason"},
        {
            "stop_reason": "error",
            "diagnostic": D("session-run", "protocol"),
            "output": text_blocks("partial before bad reason"),
        },
    ),
    *[
        (
            f"B11-malformed-reason-{variant}",
            {"FAKE_MALFORMED_REASON": variant},
            {"stop_reason": "error", "diagnostic": D("session-run", "protocol")},
        )
        for variant in ("aborted", "no-data", "null-data", "abort-unknown", "hook")
    ],
    (
        "B12-usage-only-message",
        {"FAKE_EMPTY_MESSAGE": "1", "FAKE_REASON_KIND": "max-tokens"},
        {"stop_reason": "max-tokens", "output": text_blocks("hello from fake runtime")},
    ),
    (
        "B13-missing-terminal",
        {"FAKE_REASON_KIND": "none"},
        {"stop_reason": "error", "diagnostic": D("session-run", "missing-terminal")},
    ),
    ("B14-blocked", {"FAKE_REASON_KIND": "blocked"}, {"stop_reason": "refusal"}),
    (
        "B15-aborted-disposed",
        {"FAKE_REASON_KIND": "aborted", "FAKE_ABORT_REASON_KIND": "disposed"},
        {"stop_reason": "aborted", "diagnostic": D("session-run", "child-disposed")},
    ),
    ("B16-aborted-user", {"FAKE_REASON_KIND": "aborted", "FAKE_ABORT_REASON_KIND": "user"}, {"stop_reason": "aborted"}),
    (
        "B17-unknown-reason",
        {"FAKE_REASON_KIND": "private/path/SECRET_TOKEN"},
        {"stop_reason": "error", "diagnostic": D("session-run", "child-unknown")},
    ),
    (
        "B18-stream-then-malformed",
        {"FAKE_STREAM_THEN_MALFORMED": "1"},
        {"stop_reason": "error", "diagnostic": D("session-run", "protocol"), "output": []},
    ),
    (
        "B19-exit-during-prompt",
        {
            "FAKE_EXIT_DURING_PROMPT": "1",
            "FAKE_TEXT": "partial before transport exit",
            "FAKE_STDERR": "private/path SECRET_TOKEN must remain Host-only",
        },
        {
            "stop_reason": "error",
            "diagnostic": D("session-run", "transport"),
            "output": text_blocks("partial before transport exit"),
        },
    ),
    (
        "B25-nested-child",
        {"FAKE_SUBAGENT": "1"},
        {"stop_reason": "completed", "output": text_blocks("hello from fake runtime")},
    ),
    (
        "B26-malformed-event",
        {"FAKE_MALFORMED_EVENT": "1"},
        {"stop_reason": "error", "diagnostic": D("session-run", "protocol"), "output": []},
    ),
    (
        "B27-message-without-data",
        {"FAKE_MESSAGE_WITHOUT_DATA": "1"},
        {
            "stop_reason": "error",
            "diagnostic": D("session-run", "protocol"),
            "output": text_blocks("hello from fake runtime"),
        },
    ),
    (
        "B28-prompt-error",
        {"FAKE_PROMPT_ERROR": "1"},
        {"stop_reason": "error", "diagnostic": D("session-run", "protocol")},
    ),
    (
        "B29-two-turns",
        {"FAKE_TWO_TURNS": "1"},
        {"stop_reason": "completed", "output": text_blocks("hello from fake runtime")},
    ),
    (
        "B30-pre-receipt-noise",
        {"FAKE_PRE_RECEIPT_NOISE": "1"},
        {"stop_reason": "completed", "output": text_blocks("hello from fake runtime")},
    ),
    (
        "B31-malformed-chunk",
        {"FAKE_MALFORMED_CHUNK": "1", "FAKE_TEXT": "before bad chunk"},
        {"stop_reason": "error", "diagnostic": D("session-run", "protocol"), "output": text_blocks("before bad chunk")},
    ),
    (
        "B32-unknown-event",
        {"FAKE_UNKNOWN_EVENT": "1"},
        {"stop_reason": "completed", "output": text_blocks("hello from fake runtime")},
    ),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("name", "env", "expected"), SCENARIOS, ids=[name for name, _, _ in SCENARIOS])
async def test_child_outcomes_map_to_exact_results(
    tmp_path: Path, name: str, env: dict[str, str], expected: dict[str, object]
) -> None:
    sink = RecordingSink()
    result = await run_to_result(runtime_spec(tmp_path, env=env), on_error=sink)
    actual = result.to_json()
    for key, value in expected.items():
        assert actual[key] == value
    if "diagnostic" not in expected:
        assert "diagnostic" not in actual
    assert_no_secrets(str(actual))
    assert_result_snapshot(name, result)
    # Only classified failures reach the sink; a child's own terminal answer is not a failure.
    category = str(expected.get("diagnostic", "")).rsplit("category: ", 1)[-1].rstrip(")")
    assert len(sink.calls) == (1 if category in {"protocol", "transport", "unknown"} else 0)


@pytest.mark.anyio
async def test_an_injected_run_failure_is_unknown_and_secret_free(tmp_path: Path) -> None:
    sink = RecordingSink()
    factory = recording_factory(RaisingRunClient, [])
    result = await run_to_result(runtime_spec(tmp_path), client_factory=factory, on_error=sink)
    assert result.to_json() == {"output": [], "stop_reason": "error", "diagnostic": D("session-run", "unknown")}
    assert_no_secrets(str(result.to_json()))
    assert [str(e) for e in sink.errors] == [RUN_FAILURE]
    assert_result_snapshot("B20-injected-run-failure", result)


@pytest.mark.anyio
async def test_concurrent_failing_runs_keep_their_own_diagnostics(tmp_path: Path) -> None:
    results: dict[str, str | None] = {}

    async def one(kind: str) -> None:
        results[kind] = (await run_to_result(runtime_spec(tmp_path, FAKE_REASON_KIND=kind))).diagnostic

    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with anyio.create_task_group() as group:
            group.start_soon(one, "error")
            group.start_soon(one, "unknown-reason")
    assert results == {"error": D("session-run", "child-error"), "unknown-reason": D("session-run", "child-unknown")}


@pytest.mark.anyio
async def test_a_raising_sink_is_called_once_and_contained(tmp_path: Path) -> None:
    sink = RecordingSink(raises=True)
    result = await run_to_result(runtime_spec(tmp_path, FAKE_MALFORMED_PROMPT="1"), on_error=sink)
    assert (result.stop_reason, result.diagnostic) == ("error", D("session-run", "protocol"))
    assert len(sink.calls) == 1


@pytest.mark.anyio
async def test_a_provider_run_failure_logs_exactly_one_host_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            provider = DshSdkProvider(runtime_entry(FAKE_MALFORMED_PROMPT="1"), task_group=group)
            run = await provider.start(make_request(parent_cwd=str(tmp_path)))
            result = await run.result()
            await provider.aclose()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1
    assert 'subagent-dsh-sdk "dsh-sdk": child run failed (error)' in warnings[0]
    assert result.diagnostic == D("session-run", "protocol")


@pytest.mark.anyio
async def test_a_configured_cwd_is_the_childs_physical_cwd(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            provider = DshSdkProvider(
                runtime_entry(cwd=str(work), FAKE_ECHO_CWD="1", FAKE_TEXT="done"), task_group=group
            )
            run = await provider.start(make_request(parent_cwd=str(tmp_path)))
            result = await run.result()
            await run.dispose()
    assert f"cwd={await anyio.Path(work).resolve()}" in result.output[0]["text"]


@pytest.mark.anyio
async def test_a_runtime_to_host_request_is_answered_method_not_found(tmp_path: Path) -> None:
    result = await run_to_result(runtime_spec(tmp_path, FAKE_SERVER_REQUEST="client/whatever", FAKE_TEXT="x"))
    assert result.stop_reason == "completed"
    assert result.output[0]["text"].startswith("probe client/whatever: -32601")
    assert_result_snapshot("B33-server-request", result)


@pytest.mark.anyio
async def test_the_prompt_is_sent_verbatim_with_every_block_type(tmp_path: Path) -> None:
    # Without FAKE_* switches the fake echoes the prompt's text blocks; the image block must not break anything.
    request = make_request(text="echo me")
    request.prompt.append({"type": "image", "data": "AAAA", "mimeType": "image/png"})
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(request, runtime_spec(tmp_path)) as run:
            result = await run.result()
    assert result.output == text_blocks("echo me")


@pytest.mark.anyio
async def test_the_prompt_goes_to_a_private_session_with_every_block_verbatim(tmp_path: Path) -> None:
    record = tmp_path / "prompts.jsonl"
    request = make_request(text="look at this")
    image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    resource = {"type": "resource_link", "uri": "file:///tmp/x", "name": "x", "annotations": {"priority": 1}}
    request.prompt.extend([image, resource])
    spec = runtime_spec(tmp_path, args=_script(tmp_path, "patched.py", _PATCHED_FAKE), AUDIT_PROMPT_RECORD=str(record))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(request, spec) as run:
            result = await run.result()
            run_id = run.id
    (recorded,) = json_lines(record)
    assert isinstance(recorded, dict)
    params = cast("dict[str, Any]", recorded)
    assert set(params) == {"sessionId", "contentBlocks"}
    assert re.fullmatch(r"session-[0-9a-f]{32}", params["sessionId"])
    assert params["sessionId"] != f"session-{run_id}" and run_id not in params["sessionId"]
    assert params["contentBlocks"] == [{"type": "text", "text": "look at this"}, image, resource]
    assert result.stop_reason == "completed"


@pytest.mark.anyio
async def test_an_interrupted_assistant_message_still_counts_as_output(tmp_path: Path) -> None:
    spec = runtime_spec(
        tmp_path,
        args=_script(tmp_path, "patched.py", _PATCHED_FAKE),
        AUDIT_INTERRUPTED_MESSAGE="1",
        FAKE_TEXT="kept despite interruption",
    )
    result = await run_to_result(spec)
    assert result.to_json() == {"output": text_blocks("kept despite interruption"), "stop_reason": "completed"}
