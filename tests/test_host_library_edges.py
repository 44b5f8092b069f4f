"""Library edges: ``Host.open`` takes a path, a bad ``signal`` fails at once, the ``host`` logger is quiet
by default, and an entry's description keeps the standard usage text."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from host import Host
from host.config._loader import parse_config
from host.tools._delegation import USAGE_TEXT, session_text

pytestmark = pytest.mark.anyio


async def test_host_open_takes_a_config_file_path(tmp_path: Path) -> None:
    path = tmp_path / "x.toml"
    path.write_text('[providers.a]\nkind = "acp"\ncommand = "agent"\n', encoding="utf-8")
    with anyio.fail_after(5):
        for given in (str(path), path):
            async with Host.open(given) as host:
                assert list(host.providers) == ["a"]
                assert host.config.source == str(path)


async def test_host_open_rejects_anything_else_with_type_error() -> None:
    with pytest.raises(TypeError):
        async with Host.open(cast("Any", 42)):
            pass


@pytest.mark.parametrize("bad_signal", [None, "cancel", object()])
async def test_a_wrong_signal_raises_type_error_at_once_and_the_host_closes_promptly(bad_signal: object) -> None:
    config = parse_config({"providers": {"a": {"kind": "acp", "command": "agent"}}})
    started = time.monotonic()
    with anyio.fail_after(5):
        async with Host.open(config) as host:
            with pytest.raises(TypeError):
                await host.execute("delegate_a", {"task": "x"}, signal=cast("Any", bad_signal))
            assert host.tools()  # nothing was registered or left outstanding by the rejected call
    assert time.monotonic() - started < 5


def test_the_host_logger_has_a_null_handler() -> None:
    assert any(isinstance(handler, logging.NullHandler) for handler in logging.getLogger("host").handlers)


async def test_an_entry_description_is_followed_by_the_standard_usage_text() -> None:
    config = parse_config({"providers": {"a": {"kind": "acp", "command": "agent", "description": "Reviews diffs."}}})
    with anyio.fail_after(5):
        async with Host.open(config, parent_cwd=None) as host:
            (tool,) = [tool for tool in host.tools() if tool["name"] == "delegate_a"]
    assert tool["description"] == f"Reviews diffs. {USAGE_TEXT} {session_text(config.providers['a'], 7)}"
    assert "run_in_background" in tool["description"] and "job_kill" in tool["description"]
