"""Usage and cost a child reports: kept as ``usage`` records of checked numbers, totalled in ``run/end`` and
``run --json``, and shown by ``runs list`` (ACP ``usage_update`` and prompt-response ``usage``; DSH SDK message
``usage``). Hostile values (strings, negatives, floats, bools, huge numbers, a lower-case or escape-laden currency)
never reach a record."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.cli._helpers import acp_entry, cli_env, json_of, run_cli, write_config
from tests.conftest import FAKE_DSH_RUNTIME, PYTHON

pytestmark = pytest.mark.anyio

TIMEOUT_S = 30

ACP_TOTALS: dict[str, Any] = {
    "input_tokens": 1000,
    "output_tokens": 200,
    "context_tokens": 1200,
    "context_size": 200000,
    "cost": {"amount": 0.75, "currency": "USD"},
}
SDK_TOTALS: dict[str, Any] = {"input_tokens": 1000, "output_tokens": 75, "cost": {"amount": 0.75, "currency": "EUR"}}


def sdk_entry(**env: str) -> dict[str, Any]:
    return {"kind": "dsh-sdk", "command": PYTHON, "args": [str(FAKE_DSH_RUNTIME)], "dispose_grace_ms": 300, "env": env}


def config(tmp_path: Path) -> Path:
    return write_config(
        tmp_path,
        {
            "acp": acp_entry(MOCK_USAGE="1"),
            "acp-hostile": acp_entry(MOCK_USAGE="hostile"),
            "sdk": sdk_entry(FAKE_USAGE="1"),
            "sdk-hostile": sdk_entry(FAKE_USAGE="hostile"),
        },
    )


async def run_json(tmp_path: Path, provider: str) -> dict[str, Any]:
    done = await run_cli(
        "--config",
        str(config(tmp_path)),
        "--state-dir",
        str(tmp_path / "state"),
        "--provider",
        provider,
        "--json",
        "hi",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    return json_of(done.stdout)


def records_of(tmp_path: Path) -> list[dict[str, Any]]:
    (path,) = (tmp_path / "state" / "runs").glob("*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


async def runs_list(tmp_path: Path, *extra: str) -> str:
    done = await anyio.run_process(
        [PYTHON, "-m", "host", "runs", "list", "--state-dir", str(tmp_path / "state"), *extra],
        cwd=tmp_path,
        env=cli_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.decode()


async def test_acp_usage_updates_and_the_prompt_usage_are_recorded_and_totalled(tmp_path: Path) -> None:
    with anyio.fail_after(TIMEOUT_S):
        obj = await run_json(tmp_path, "acp")
        listed = await runs_list(tmp_path)
        listed_json = json.loads(await runs_list(tmp_path, "--json"))
    records = records_of(tmp_path)
    assert obj["usage"] == ACP_TOTALS
    assert [r["data"] for r in records if r["type"] == "usage"] == [
        {"context_tokens": 800, "context_size": 200000, "cost": {"amount": 0.25, "currency": "USD"}},
        {"context_tokens": 1200, "context_size": 200000, "cost": {"amount": 0.75, "currency": "USD"}},
        {"input_tokens": 1000, "output_tokens": 200},
    ]
    assert records[-1]["type"] == "run/end" and records[-1]["data"]["usage"] == ACP_TOTALS
    assert re.search(r"  completed +0\.7500 USD  hi$", listed, re.M)
    assert listed_json["runs"][0]["usage"] == ACP_TOTALS


async def test_hostile_acp_usage_keeps_only_checked_numbers(tmp_path: Path) -> None:
    with anyio.fail_after(TIMEOUT_S):
        obj = await run_json(tmp_path, "acp-hostile")
        listed = await runs_list(tmp_path)
    records = records_of(tmp_path)
    assert obj["usage"] == {"context_size": 100}
    assert [r["data"] for r in records if r["type"] == "usage"] == [{"context_size": 100}]
    assert records[-1]["data"]["usage"] == {"context_size": 100}
    assert re.search(r"  completed +-  hi$", listed, re.M)
    raw = (next((tmp_path / "state" / "runs").glob("*.jsonl"))).read_text()
    # Only JSON values are checked: the run's random ids may hold "999" or "NaN" as substrings.
    assert "\\u001b" not in raw
    assert not re.search(r'[:\[,]\s*(NaN|-?Infinity|"999"|"1200"|"usd"|"NaN"|1e\+?300|18446744073709551616)', raw)


async def test_sdk_message_usage_adds_up_per_step(tmp_path: Path) -> None:
    with anyio.fail_after(TIMEOUT_S):
        obj = await run_json(tmp_path, "sdk")
        listed = await runs_list(tmp_path)
    records = records_of(tmp_path)
    assert obj["output"] == [{"type": "text", "text": "hello from fake runtime"}]
    assert obj["usage"] == SDK_TOTALS
    assert [r["data"] for r in records if r["type"] == "usage"] == [
        {"input_tokens": 300, "output_tokens": 25, "cost": {"amount": 0.25, "currency": "EUR"}},
        {"input_tokens": 700, "output_tokens": 50, "cost": {"amount": 0.5, "currency": "EUR"}},
    ]
    assert records[-1]["data"]["usage"] == SDK_TOTALS
    assert re.search(r"  completed +0\.7500 EUR  hi$", listed, re.M)


async def test_hostile_sdk_usage_leaves_no_usage_at_all(tmp_path: Path) -> None:
    with anyio.fail_after(TIMEOUT_S):
        obj = await run_json(tmp_path, "sdk-hostile")
    records = records_of(tmp_path)
    assert "usage" not in obj
    assert [r for r in records if r["type"] == "usage"] == []
    assert "usage" not in records[-1]["data"]
