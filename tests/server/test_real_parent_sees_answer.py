"""Real MCP parents show their model the child's answer: Codex CLI, Claude Code and Gemini CLI from npm, through
the installed ``serve``.

Each parent's model API is a loopback fake (``_model_api_fakes.py``) that scripts one call,
``delegate_echo {"task": <unique token>}``; the echo child answers with the token, and the test reads the tool
result the parent then sends its model. Codex and Claude Code forward a result's ``structuredContent`` when it has
one (and the text content only when it has none), so the answer reaches their model only if ``structuredContent``
carries it. Gemini CLI forwards the text content, wrapped in ``<untrusted_context>``: its model must see the answer
as the plain text it is, not a JSON serialization.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any, Final

import pytest

from tests.cli._helpers import CONSOLE_SCRIPT, write_config
from tests.conftest import ECHO_AGENT, FAKE_ACP_AGENT, MARKER_NAME, PYTHON
from tests.server._model_api_fakes import ScriptedGeminiApi, ScriptedMessagesApi, ScriptedResponsesApi
from tests.server._parent_helpers import (
    CLAUDE,
    CODEX,
    GEMINI,
    closed_loopback_port,
    installed_parent,
    offline_env,
    parent_output,
    run_parent,
)

pytestmark = pytest.mark.anyio

# Codex's own start-up plus a cold ``serve`` and its child, on a loaded 2-core CI box.
_PARENT_TIMEOUT_S: Final = 150
_SERVER_NAME: Final = "subagents"
_API_KEY_VARIABLE: Final = "SCRIPTED_MODEL_API_KEY"


def _toml(value: Any) -> str:
    # TOML basic strings, arrays and tables of them read JSON's escapes the same way.
    if isinstance(value, dict):
        pairs = ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items())  # pyright: ignore[reportUnknownVariableType]
        return "{" + pairs + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value)


def _serve_env() -> dict[str, str]:
    # A parent may pass its MCP servers only a few variables (Codex: HOME, PATH and its config's env table).
    return {MARKER_NAME: os.environ[MARKER_NAME], "SUBAGENT_HOST_STATE_DIR": os.environ["SUBAGENT_HOST_STATE_DIR"]}


def _echo_config(tmp_path: Path) -> Path:
    """A serve config whose one entry, ``echo``, runs the built-in echo agent (it answers with the task)."""
    return write_config(tmp_path, {"echo": {"kind": "acp", "command": PYTHON, "args": ["-I", "-S", str(ECHO_AGENT)]}})


def _write_codex_config(codex_home: Path, *, base_url: str, serve_config: Path) -> None:
    """Codex's ``config.toml``: the scripted model provider, no approvals, no plugin sync, and ``serve``."""
    settings: list[tuple[str | None, dict[str, Any]]] = [
        (
            None,
            {
                "model": "scripted-model",
                "model_provider": "scripted",
                "approval_policy": "never",
                "sandbox_mode": "read-only",
                "check_for_update_on_startup": False,
            },
        ),
        ("analytics", {"enabled": False}),
        ("feedback", {"enabled": False}),
        ("history", {"persistence": "none"}),
        ("features", {"plugins": False, "apps": False, "remote_plugin": False}),
        (
            "model_providers.scripted",
            {"name": "scripted", "base_url": base_url, "wire_api": "responses", "env_key": _API_KEY_VARIABLE},
        ),
        (
            f"mcp_servers.{_SERVER_NAME}",
            {
                "command": CONSOLE_SCRIPT,
                "args": ["serve", "--config", str(serve_config)],
                "env": _serve_env(),
                # Wait for serve however loaded the box is: this test pins what reaches the model, not start-up.
                "required": True,
                "startup_timeout_sec": 120,
                # delegate_* is not read-only, and approval_policy "never" would otherwise refuse the call.
                "default_tools_approval_mode": "approve",
            },
        ),
    ]
    lines: list[str] = []
    for table, values in settings:
        if table is not None:
            lines.append(f"[{table}]")
        lines.extend(f"{key} = {_toml(value)}" for key, value in values.items())
    codex_home.mkdir(parents=True, mode=0o700)
    (codex_home / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _split_surrogates_config(tmp_path: Path, token: str) -> Path:
    """A serve config whose entry ``echo`` is the fake agent splitting an emoji between two chunks and sending two
    lone surrogates before ``token`` (``MOCK_SPLIT_SURROGATES``, as a JavaScript agent slicing UTF-16 does)."""
    env = {"MOCK_SPLIT_SURROGATES": "1", "MOCK_TEXT": token}
    return write_config(
        tmp_path, {"echo": {"kind": "acp", "command": PYTHON, "args": [str(FAKE_ACP_AGENT)], "env": env}}
    )


@pytest.mark.timeout(_PARENT_TIMEOUT_S + 30)
@pytest.mark.parametrize("child", ["echo", "split surrogates"])
async def test_codex_sends_the_childs_answer_back_to_its_model(tmp_path: Path, child: str) -> None:
    """With ``split surrogates`` the answer reaches Codex (whose JSON reader, serde, refuses a lone surrogate's
    escape) as well-formed text: the emoji joined, each lone half U+FFFD."""
    codex = installed_parent(CODEX)
    token = f"answer-{uuid.uuid4().hex}"
    if child == "echo":
        serve_config = _echo_config(tmp_path)
    else:
        serve_config = _split_surrogates_config(tmp_path, token)
        token = f"smile 😀, lone \ufffd <\ufffd> {token}"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    home = tmp_path / "home"
    api = ScriptedResponsesApi(namespace=f"mcp__{_SERVER_NAME}", name="delegate_echo", arguments={"task": token})
    with api.serving(), closed_loopback_port() as closed_port:
        _write_codex_config(home / ".codex", base_url=api.base_url, serve_config=serve_config)
        env = offline_env(home, closed_port, {"CODEX_HOME": str(home / ".codex"), _API_KEY_VARIABLE: "dummy"})
        argv = [str(codex), "exec", "--strict-config", "--json", "--skip-git-repo-check", "--color", "never"]
        status = await run_parent([*argv, "Delegate the task."], cwd=workspace, env=env, timeout_s=_PARENT_TIMEOUT_S)

    printed = parent_output(workspace)
    assert status == 0, f"codex exec exited {status}:\n{printed}"
    assert "delegate_echo" in api.offered_tools(f"mcp__{_SERVER_NAME}"), f"Codex offered no delegate_echo:\n{printed}"
    output = api.tool_output()
    assert output is not None, f"Codex sent its model no output for the scripted call:\n{printed}"
    assert token in output, f"the child's answer {token!r} is missing from what Codex sent its model: {output!r}"


@pytest.mark.timeout(_PARENT_TIMEOUT_S + 30)
async def test_claude_code_sends_the_childs_answer_back_to_its_model(tmp_path: Path) -> None:
    claude = installed_parent(CLAUDE)
    token = f"answer-{uuid.uuid4().hex}"
    tool = f"mcp__{_SERVER_NAME}__delegate_echo"
    server = {"command": CONSOLE_SCRIPT, "args": ["serve", "--config", str(_echo_config(tmp_path))]}
    mcp_config = tmp_path / "mcp.json"
    mcp_config.write_text(json.dumps({"mcpServers": {_SERVER_NAME: server | {"env": _serve_env()}}}), encoding="utf-8")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    api = ScriptedMessagesApi(tool=tool, arguments={"task": token})
    with api.serving(), closed_loopback_port() as closed_port:
        settings = {
            "ANTHROPIC_BASE_URL": api.base_url,
            "ANTHROPIC_API_KEY": "dummy",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            # Wait for serve however loaded the box is (ms): this test pins what reaches the model, not start-up.
            "MCP_TIMEOUT": "120000",
        }
        env = offline_env(tmp_path / "home", closed_port, settings)
        argv = [str(claude), "-p", "Delegate the task.", "--output-format", "stream-json", "--verbose"]
        argv += ["--mcp-config", str(mcp_config), "--strict-mcp-config", "--allowedTools", tool]
        status = await run_parent(argv, cwd=workspace, env=env, timeout_s=_PARENT_TIMEOUT_S)

    printed = parent_output(workspace)
    assert status == 0, f"claude -p exited {status}:\n{printed}"
    assert tool in api.offered_tools(), f"Claude Code never offered {tool}:\n{printed}"
    output = api.tool_output()
    assert output is not None, f"Claude Code sent its model no result for the scripted call:\n{printed}"
    assert token in output, f"the child's answer {token!r} is missing from what Claude Code sent its model: {output!r}"


@pytest.mark.timeout(_PARENT_TIMEOUT_S + 30)
async def test_gemini_cli_sends_the_childs_answer_back_to_its_model_as_plain_text(tmp_path: Path) -> None:
    gemini = installed_parent(GEMINI)
    token = f"answer-{uuid.uuid4().hex}"
    tool = f"mcp_{_SERVER_NAME}_delegate_echo"
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True, mode=0o700)
    server = {"command": CONSOLE_SCRIPT, "args": ["serve", "--config", str(_echo_config(tmp_path))], "trust": True}
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "telemetry": {"enabled": False},
        "privacy": {"usageStatisticsEnabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "mcpServers": {_SERVER_NAME: server | {"env": _serve_env()}},
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    api = ScriptedGeminiApi(tool=tool, arguments={"task": token})
    with api.serving(), closed_loopback_port() as closed_port:
        variables = {"GOOGLE_GEMINI_BASE_URL": api.base_url, "GEMINI_API_KEY": "dummy"}
        env = offline_env(home, closed_port, variables | {"GEMINI_CLI_TRUST_WORKSPACE": "true"})
        argv = [str(gemini), "-p", "Delegate the task.", "--output-format", "json", "--approval-mode", "yolo"]
        status = await run_parent(argv, cwd=workspace, env=env, timeout_s=_PARENT_TIMEOUT_S)

    printed = parent_output(workspace)
    assert status == 0, f"gemini -p exited {status}:\n{printed}"
    assert tool in api.offered_tools(), f"Gemini CLI never offered {tool}:\n{printed}"
    output = api.tool_output()
    expected = f"<untrusted_context>\n{token}\n</untrusted_context>"
    assert output == expected, f"Gemini CLI's model saw {output!r}, not the child's answer as plain text"
