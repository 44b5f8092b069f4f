"""Text a JavaScript agent sliced at UTF-16 code units: U+1F600 split between two chunks (each half a ``\\uXXXX``
escape) and two lone surrogates (``MOCK_SPLIT_SURROGATES``). The caller gets well-formed text, the pair as its
character and each lone half as U+FFFD, while the record keeps every chunk as it came; nothing that encodes the text
fails on it: not a background job's outcome (its size check raised inside the host's task group, which ended the
host), not the run record, not a session file whose label holds a lone surrogate (its write raised at the turn's
end and again when the host closed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from host import CancelController, Host
from host.sessions import read_session_file
from tests.sessions._helpers import PROCESS_TIMEOUT_S, session_config, session_entry

pytestmark = pytest.mark.anyio

OUTPUT = "smile 😀, lone \ufffd <\ufffd> mock child answer"
"""The fake's three chunks, the pair joined and the lone halves replaced, then its answer."""


def _value(data: dict[str, Any]) -> dict[str, Any]:
    assert data["is_error"] is False, data
    return data["value"]


async def test_the_pair_is_joined_and_the_lone_halves_are_kept_in_every_result_shape(tmp_path: Path) -> None:
    config = session_config(tmp_path, acp=session_entry(tmp_path, MOCK_SESSION_ECHO="", MOCK_SPLIT_SURROGATES="1"))
    state = tmp_path / "state"
    signal = CancelController().signal
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, state_dir=state) as host:
            foreground = _value((await host.execute("delegate_acp", {"task": "t"}, signal=signal)).to_json())
            job = _value(
                (await host.execute("delegate_acp", {"task": "t", "run_in_background": True}, signal=signal)).to_json()
            )
            outcome = await host.wait_job(job["job_id"])
    assert foreground["output"] == [{"type": "text", "text": OUTPUT}]
    assert outcome.status == "completed"
    assert outcome.output == OUTPUT
    record = [json.loads(line) for line in (state / "runs" / f"{foreground['run_id']}.jsonl").read_text().splitlines()]
    messages = [event["data"] for event in record if event.get("type") == "assistant/message"]
    assert [message["content"] for message in messages] == [[{"type": "text", "text": OUTPUT}]]
    streamed = [chunk["text"] for chunk in messages[0]["stream"] if chunk.get("type") == "text-delta"]
    assert streamed == ["smile \ud83d", "\ude00, lone \udc80 ", "<\ud800> ", "mock child answer"]


async def test_a_label_holding_a_lone_surrogate_is_written_and_read_back(tmp_path: Path) -> None:
    config = session_config(tmp_path, acp=session_entry(tmp_path, MOCK_SESSION_RESUME="1"))
    state = tmp_path / "state"
    signal = CancelController().signal
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, state_dir=state) as host:
            value = _value(
                (await host.execute("delegate_acp", {"task": "t", "label": "odd \udc80"}, signal=signal)).to_json()
            )
        record = read_session_file(state, value["session_id"])
        assert record is not None and record.label == "odd \udc80" and record.state == "cold"
        async with Host.open(config, state_dir=state) as second:
            listed = (await second.execute("session_list", {}, signal=signal)).to_json()
            again = await second.execute(
                "delegate_acp", {"task": "u", "session_id": value["session_id"]}, signal=signal
            )
    assert "odd \udc80" in listed["value"]
    assert again.to_json()["is_error"] is False
