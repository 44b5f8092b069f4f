"""The provider entry: config through the real loader, environment, working directory, capabilities
(docs/behaviour.md#acp-acceptance)."""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

import anyio
import pytest

from host import Host
from host._exceptions import AcpRunFailure, ConfigError, UnsupportedCapabilityError
from host.acp_provider import AcpProvider
from host.cancel import CancelController
from host.config import AcpEntryConfig
from host.config._loader import parse_config
from host.run._contracts import AgentOptions, SubagentRequest, check_capabilities
from tests.acp_provider._helpers import PROCESS_TIMEOUT_S, agent_entry, make_request, task_group
from tests.cli._helpers import CONSOLE_SCRIPT, acp_entry, cli_env, write_config
from tests.conftest import FAKE_ACP_AGENT, PYTHON
from tests.tools._helpers import acp_config

CONFIGURATION = "subagent-acp: Subagent failure (provider: ACP; stage: initialize; category: configuration)"
PROCESS_START = "subagent-acp: Subagent failure (provider: ACP; stage: process; category: process-start)"


def load_entry(table: dict[str, object], *, base_dir: Path, environ: dict[str, str] | None = None) -> AcpEntryConfig:
    document: dict[str, object] = {
        "providers": {"acp": {"kind": "acp", "command": PYTHON, "args": [str(FAKE_ACP_AGENT)], **table}}
    }
    entry = parse_config(document, base_dir=str(base_dir), environ=environ or {}).entry("acp")
    assert isinstance(entry, AcpEntryConfig)
    return entry


async def output_text(entry: AcpEntryConfig, parent_cwd: str | None) -> str:
    async with task_group() as group:
        provider = AcpProvider(entry, task_group=group)
        run = await provider.start(make_request(parent_cwd=parent_cwd))
        result = await run.result()
        await provider.aclose()
    assert result.stop_reason == "completed", result
    return "".join(block["text"] for block in result.output)


@pytest.mark.parametrize("key", ["dispose_eof_grace_ms", "dispose_grace_ms", "timeout_ms"])
@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), 2147483648, True])
def test_durations_must_be_positive_finite_and_bounded(tmp_path: Path, key: str, value: object) -> None:
    with pytest.raises(ConfigError) as caught:
        load_entry({key: value}, base_dir=tmp_path)
    assert str(caught.value) == f"subagent-acp: {key} must be a positive finite number no greater than 2147483647"


@pytest.mark.parametrize("value", [2147483647, 0.5])
def test_bounded_durations_load(tmp_path: Path, value: float) -> None:
    assert load_entry({"dispose_grace_ms": value}, base_dir=tmp_path).dispose_grace_ms == value


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"cwd": ""}, "subagent-acp: config cwd must not be empty — omit the key to inherit the parent session cwd"),
        (
            {"cwd": "/nonexistent/acp-child-workspace"},
            "subagent-acp: config cwd is not an accessible directory: /nonexistent/acp-child-workspace",
        ),
        ({"disposeGraceMs": 5}, 'subagent-acp: unknown config key "disposeGraceMs"'),
        ({"command": ""}, "subagent-acp: command must be a non-empty string"),
        ({"permission": "ask"}, 'subagent-acp: permission must be "allow" or "reject"'),
        ({"env": {"X": "${NOPE_UNSET_VAR}"}}, "subagent-acp: env.X references unset host variable ${NOPE_UNSET_VAR}"),
    ],
)
def test_entry_validation_messages_are_exact(tmp_path: Path, table: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_entry(table, base_dir=tmp_path)
    assert str(caught.value) == message


def test_a_missing_command_and_an_unknown_kind_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as missing:
        parse_config({"providers": {"acp": {"kind": "acp"}}}, base_dir=str(tmp_path), environ={})
    assert str(missing.value) == "subagent-acp: command is required"
    with pytest.raises(ConfigError) as other:
        parse_config({"providers": {"acp": {"kind": "other", "command": "x"}}}, base_dir=str(tmp_path), environ={})
    assert str(other.value) == 'subagent-host: providers.acp.kind must be "acp" or "dsh-sdk"'


def test_a_config_cwd_without_search_permission_is_rejected(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o600)
    config = write_config(tmp_path, {"acp": {**acp_entry(), "cwd": str(locked)}})
    argv = [CONSOLE_SCRIPT, "run", "--config", str(config), "--no-record", "go"]
    if os.geteuid() == 0:  # root searches any directory: without these two capabilities it cannot
        argv = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *argv]
    done = subprocess.run(argv, capture_output=True, cwd=tmp_path, env=cli_env(), timeout=60, check=False)
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr.decode() == (
        f"subagent-acp: config cwd is not an accessible directory: {locked} (providers.acp in {config})\n"
    )


@pytest.mark.anyio
async def test_an_acp_entry_registers_a_provider_under_its_name(tmp_path: Path) -> None:
    entry = load_entry({}, base_dir=tmp_path)
    async with task_group() as group:
        provider = AcpProvider(entry, task_group=group)
        assert (provider.name, provider.kind) == ("acp", "acp")
        assert provider.capabilities.agent_options is False
        await provider.aclose()


@pytest.mark.anyio
async def test_agent_options_are_rejected_by_the_capability_gate_before_spawn(tmp_path: Path) -> None:
    sentinel = tmp_path / "sentinel"
    async with task_group() as group:
        provider = AcpProvider(agent_entry(command="touch", args=[str(sentinel)]), task_group=group)
        request = SubagentRequest(
            label="x",
            prompt=[{"type": "text", "text": "x"}],
            signal=CancelController().signal,
            parent_cwd=str(tmp_path),
            agent_options=AgentOptions(model="m"),
        )
        with pytest.raises(UnsupportedCapabilityError) as caught:
            check_capabilities(provider, request)
        await provider.aclose()
    assert caught.value.code == "UNSUPPORTED_CAPABILITY"
    assert str(caught.value) == 'subagent provider "acp" does not support the "agent_options" capability'
    assert not sentinel.exists()


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("table", "ambient", "expected"),
    [
        ({"env": {"MOCK_ECHO_ENV": "ACP_TEST_AMBIENT_SECRET_TOKEN"}}, {}, "<ACP_TEST_AMBIENT_SECRET_TOKEN unset>"),
        ({"env": {"DEEPSEEK_API_KEY": "explicit", "MOCK_ECHO_ENV": "DEEPSEEK_API_KEY"}}, {}, "explicit"),
        ({"env": {"MOCK_ECHO_ENV": "DSH_ACP_TEST_FACT", "DSH_ACP_TEST_FACT": "managed"}}, {}, "managed"),
        (
            {"env": {"FORWARDED": "${HOST_SECRET_TOKEN}", "MOCK_ECHO_ENV": "FORWARDED"}},
            {"HOST_SECRET_TOKEN": "abc"},
            "abc",
        ),
        ({"env": {"MOCK_TEXT": "cost $${HOME} $5"}}, {}, "cost ${HOME} $5"),
    ],
    ids=["ambient-secret-scrubbed", "explicit-wins", "explicit-dsh", "opt-in-passthrough", "dollar-escapes"],
)
async def test_child_environment_is_scrubbed_then_explicitly_merged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: dict[str, object], ambient: dict[str, str], expected: str
) -> None:
    monkeypatch.setenv("ACP_TEST_AMBIENT_SECRET_TOKEN", "leak-me")
    entry = load_entry(table, base_dir=tmp_path, environ=ambient)
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        assert await output_text(entry, str(tmp_path)) == expected


@pytest.mark.anyio
async def test_the_parent_cwd_is_the_child_cwd_and_the_session_cwd(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        text = await output_text(agent_entry(MOCK_ECHO_CWD="1"), str(tmp_path))
    assert text == f"{await anyio.Path(tmp_path).resolve()}\n{tmp_path}"


@pytest.mark.anyio
async def test_a_configured_cwd_wins_over_the_parent_cwd(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        text = await output_text(agent_entry(cwd=str(a), MOCK_ECHO_CWD="1"), str(b))
    assert text == f"{await anyio.Path(a).resolve()}\n{a}"


@pytest.mark.anyio
async def test_a_relative_config_cwd_is_resolved_lexically_at_load(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    entry = load_entry({"cwd": "link", "env": {"MOCK_ECHO_CWD": "1"}}, base_dir=tmp_path)
    absolute = str(tmp_path / "link")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        text = await output_text(entry, None)
    assert text == f"{await anyio.Path(absolute).resolve()}\n{absolute}"


@pytest.mark.anyio
@pytest.mark.parametrize("case", ["missing", "relative", "file", "removed"])
async def test_an_unusable_parent_cwd_is_a_configuration_failure_and_spawns_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, case: str
) -> None:
    sentinel = tmp_path / "sentinel"
    a_file = tmp_path / "file"
    a_file.write_text("x")
    removed = tmp_path / "removed"
    removed.mkdir()
    removed.rmdir()
    parent_cwd = {"missing": None, "relative": "relative/workspace", "file": str(a_file), "removed": str(removed)}[case]
    caplog.set_level(logging.WARNING)
    with anyio.fail_after(5):
        async with task_group() as group:
            provider = AcpProvider(agent_entry(command="touch", args=[str(sentinel)]), task_group=group)
            with pytest.raises(AcpRunFailure) as caught:
                await provider.start(make_request(parent_cwd=parent_cwd))
            await provider.aclose()
    assert str(caught.value) == CONFIGURATION
    assert isinstance(caught.value.__cause__, ConfigError)
    assert not sentinel.exists()
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) == 1
    assert lines[0].startswith('subagent-acp "acp": child start failed: ConfigError(')


@pytest.mark.anyio
async def test_a_config_cwd_removed_after_load_is_a_process_start_failure(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    entry = load_entry({"cwd": str(workspace)}, base_dir=tmp_path)
    workspace.rmdir()
    with anyio.fail_after(5):
        async with task_group() as group:
            provider = AcpProvider(entry, task_group=group)
            with pytest.raises(AcpRunFailure) as caught:
                await provider.start(make_request(parent_cwd=str(tmp_path)))
            await provider.aclose()
    assert str(caught.value) == PROCESS_START


@pytest.mark.anyio
async def test_the_host_lists_its_acp_provider_after_load_and_none_after_it_closes() -> None:
    with anyio.fail_after(5):
        async with Host.open(acp_config()) as host:
            assert list(host.providers) == ["acp"]
    assert list(host.providers) == []
