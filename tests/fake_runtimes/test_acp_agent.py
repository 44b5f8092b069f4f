"""Drive the real fake ACP agent (``fake_runtimes/acp_agent.py``) over stdio and check every
docs/behaviour.md#acp-fake-agent switch.

Every byte each side writes is teed into ``WireRecorder``s and checked against the ACP schema oracle; the
deliberately off-schema switches are asserted to produce exactly the messages the oracle rejects.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anyio
import psutil
import pytest
from anyio.abc import ByteSendStream, Process
from anyio.streams.buffered import BufferedByteReceiveStream

from tests._provider_helpers import wait_for_file, wait_until_gone
from tests.acp_conformance import (
    WireRecorder,
    validate_agent_message,
    validate_client_message,
    validate_conversation,
)
from tests.conftest import FAKE_ACP_AGENT, PYTHON

# Real-process tests: an interpreter cold start on a loaded 2-core CI box can take seconds, so these waits are
# wider than the 5 s standard.
PROCESS_TIMEOUT = 15
# Bounds the "still alive after X" observations of the EOF-deaf switches (a bound, not a synchronisation sleep).
_STILL_ALIVE_BOUND = 0.3
_MAX_LINE = 64 * 1024 * 1024

pytestmark = pytest.mark.anyio

Message = dict[str, Any]
Deviation = Callable[[Message], bool]


@dataclass(eq=False)
class AgentUnderTest:
    """A tiny client-side JSON-RPC driver for one fake-agent process."""

    process: Process
    stdin: ByteSendStream
    stdout: BufferedByteReceiveStream
    client_wire: WireRecorder
    agent_wire: WireRecorder
    methods: dict[int, str] = field(default_factory=lambda: {})
    next_id: int = 0

    async def send(self, message: Message) -> None:
        await self.stdin.send((json.dumps({"jsonrpc": "2.0", **message}, separators=(",", ":")) + "\n").encode())

    async def request(self, method: str, params: Message) -> int:
        request_id = self.next_id
        self.next_id += 1
        self.methods[request_id] = method
        await self.send({"id": request_id, "method": method, "params": params})
        return request_id

    async def notify(self, method: str, params: Message) -> None:
        await self.send({"method": method, "params": params})

    async def answer(self, request_id: object, result: Message) -> None:
        await self.send({"id": request_id, "result": result})

    async def answer_method_not_found(self, request_id: object) -> None:
        await self.send({"id": request_id, "error": {"code": -32601, "message": "Method not found"}})

    async def receive(self) -> Message:
        line = await self.stdout.receive_until(b"\n", _MAX_LINE)
        return cast(Message, json.loads(line))

    async def receive_until_response(self, request_id: int) -> tuple[Message, list[Message]]:
        """Read until the response to ``request_id``; return it and the messages read before it."""
        before: list[Message] = []
        while True:
            message = await self.receive()
            if "method" not in message and message.get("id") == request_id:
                return message, before
            before.append(message)

    async def call(self, method: str, params: Message) -> Message:
        response, before = await self.receive_until_response(await self.request(method, params))
        assert before == []
        return response

    async def handshake(self, cwd: str = "/") -> str:
        await self.call("initialize", INITIALIZE_PARAMS)
        response = await self.call("session/new", {"cwd": cwd, "mcpServers": []})
        return cast(str, response["result"]["sessionId"])

    async def prompt(self, session_id: str, *texts: str) -> int:
        blocks = [{"type": "text", "text": text} for text in texts]
        return await self.request("session/prompt", {"sessionId": session_id, "prompt": blocks})

    async def close_stdin(self) -> None:
        try:
            await self.stdin.aclose()
        except (anyio.BrokenResourceError, OSError):
            pass  # the agent is already gone

    async def drain(self) -> list[Message]:
        """Read every remaining message until stdout ends."""
        messages: list[Message] = []
        while True:
            try:
                messages.append(await self.receive())
            except (anyio.IncompleteRead, anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return messages

    async def exit_code(self) -> int:
        """Close stdin, drain stdout and return the exit code."""
        await self.close_stdin()
        await self.drain()
        return await self.process.wait()


INITIALIZE_PARAMS: Message = {
    "protocolVersion": 1,
    "clientCapabilities": {},
    "clientInfo": {"name": "subagent-host", "version": "0.1.0"},
}
INITIALIZE_RESULT: Message = {
    "protocolVersion": 1,
    "agentCapabilities": {"promptCapabilities": {"image": False, "audio": False, "embeddedContext": False}},
    "authMethods": [],
}


def _child_env(env: Mapping[str, str]) -> dict[str, str]:
    base = {name: value for name, value in os.environ.items() if not name.startswith("MOCK_")}
    return {**base, **env}


@asynccontextmanager
async def open_agent(
    env: Mapping[str, str] | None = None, *, cwd: Path | None = None
) -> AsyncGenerator[AgentUnderTest]:
    """Spawn the fake agent; on exit close stdin, then kill it if it lingers, bounded and shielded."""
    process = await anyio.open_process(
        [PYTHON, str(FAKE_ACP_AGENT)], env=_child_env(env or {}), cwd=cwd, stderr=None, start_new_session=True
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        client_wire, agent_wire = WireRecorder(), WireRecorder()
        yield AgentUnderTest(
            process=process,
            stdin=client_wire.tee_send(process.stdin),
            stdout=BufferedByteReceiveStream(agent_wire.tee_receive(process.stdout)),
            client_wire=client_wire,
            agent_wire=agent_wire,
        )
    finally:
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(2):
                if process.stdin is not None:
                    try:
                        await process.stdin.aclose()
                    except (anyio.BrokenResourceError, OSError):
                        pass
                await process.wait()
            if process.returncode is None:
                process.kill()
            with anyio.move_on_after(5):
                await process.aclose()


def assert_wire_conforms(agent: AgentUnderTest, *, deviation: Deviation | None = None) -> None:
    """Every message both sides wrote is on-schema, except exactly those ``deviation`` marks (which must exist)."""
    client_messages, agent_messages = agent.client_wire.messages, agent.agent_wire.messages
    agent_requests = {m["id"]: m["method"] for m in agent_messages if "method" in m and "id" in m}
    for message in client_messages:
        validate_client_message(message, answered_method=agent_requests.get(message.get("id")))
    deviating = [m for m in agent_messages if deviation is not None and deviation(m)]
    if deviation is not None:
        assert deviating, "the off-schema switch produced no off-schema message"
    for message in agent_messages:
        request_method = None if "method" in message else agent.methods.get(message["id"])
        if message in deviating:
            with pytest.raises(AssertionError):
                validate_agent_message(message, request_method=request_method)
        else:
            validate_agent_message(message, request_method=request_method)


def _text_chunk(session_id: str, text: str, kind: str = "agent_message_chunk") -> Message:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": session_id,
            "update": {"sessionUpdate": kind, "content": {"type": "text", "text": text}},
        },
    }


def _result(request_id: int, result: Message) -> Message:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


# -- default echo and the MOCK_* defaults -------------------------------------------------------------------------


async def test_without_mock_variables_the_agent_echoes_the_prompt_text_and_exits_0_on_eof() -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent() as agent:
            assert (await agent.call("initialize", INITIALIZE_PARAMS))["result"] == INITIALIZE_RESULT
            sid = await agent.handshake()
            prompt_id = await agent.request(
                "session/prompt",
                {
                    "sessionId": sid,
                    "prompt": [
                        {"type": "text", "text": "hello "},
                        {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                        {"type": "text", "text": "world"},
                    ],
                },
            )
            response, updates = await agent.receive_until_response(prompt_id)
            assert updates == [_text_chunk(sid, "hello world")]
            assert response == _result(prompt_id, {"stopReason": "end_turn"})
            assert await agent.exit_code() == 0
    validate_conversation(agent.client_wire.messages, agent.agent_wire.messages)
    assert_wire_conforms(agent)


async def test_any_mock_variable_switches_to_the_spec_default_text_and_session_id() -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_SESSION_ID": "acp-child-session"}) as agent:
            sid = await agent.handshake()
            assert sid == "acp-child-session"
            response, updates = await agent.receive_until_response(await agent.prompt(sid, "ignored prompt"))
            assert updates == [_text_chunk(sid, "mock child answer")]
            assert response["result"] == {"stopReason": "end_turn"}
            assert await agent.exit_code() == 0
    assert_wire_conforms(agent)


async def test_session_ids_are_fresh_uuids_without_mock_session_id() -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_TEXT": "x"}) as agent:
            await agent.call("initialize", INITIALIZE_PARAMS)
            first = await agent.call("session/new", {"cwd": "/", "mcpServers": []})
            second = await agent.call("session/new", {"cwd": "/", "mcpServers": []})
            assert first["result"]["sessionId"] != second["result"]["sessionId"]
            assert len(first["result"]["sessionId"]) == 36
    assert_wire_conforms(agent)


async def test_mock_text_may_be_empty_and_is_still_sent_as_one_chunk() -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_TEXT": "", "MOCK_STOP": "refusal"}) as agent:
            sid = await agent.handshake()
            response, updates = await agent.receive_until_response(await agent.prompt(sid, "q"))
            assert updates == [_text_chunk(sid, "")]
            assert response["result"] == {"stopReason": "refusal"}
    assert_wire_conforms(agent)


@pytest.mark.parametrize("stop", ["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"])
async def test_schema_stop_reasons_pass_through_on_schema(stop: str) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_STOP": stop}) as agent:
            sid = await agent.handshake()
            response, _ = await agent.receive_until_response(await agent.prompt(sid, "q"))
            assert response["result"] == {"stopReason": stop}
    assert_wire_conforms(agent)


async def test_an_arbitrary_mock_stop_is_passed_verbatim_as_the_only_off_schema_message() -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_STOP": "private/path/SECRET_TOKEN"}) as agent:
            sid = await agent.handshake()
            response, _ = await agent.receive_until_response(await agent.prompt(sid, "q"))
            assert response["result"] == {"stopReason": "private/path/SECRET_TOKEN"}
    assert_wire_conforms(agent, deviation=lambda m: m.get("result") == {"stopReason": "private/path/SECRET_TOKEN"})


async def test_mock_omit_stop_answers_an_empty_result_as_the_only_off_schema_message() -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_OMIT_STOP": "1"}) as agent:
            sid = await agent.handshake()
            response, updates = await agent.receive_until_response(await agent.prompt(sid, "q"))
            assert response["result"] == {}
            assert updates == [_text_chunk(sid, "mock child answer")]
    assert_wire_conforms(agent, deviation=lambda m: m.get("result") == {})


async def test_mock_missing_session_id_answers_session_new_with_an_empty_object() -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_MISSING_SESSION_ID": "1"}) as agent:
            await agent.call("initialize", INITIALIZE_PARAMS)
            response = await agent.call("session/new", {"cwd": "/", "mcpServers": []})
            assert response["result"] == {}
    assert_wire_conforms(agent, deviation=lambda m: m.get("result") == {})


async def test_authenticate_answers_an_empty_object() -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_TEXT": "x"}) as agent:
            await agent.call("initialize", INITIALIZE_PARAMS)
            response = await agent.call("authenticate", {"methodId": "none"})
            assert response["result"] == {}
    assert_wire_conforms(agent)


async def test_unknown_requests_get_method_not_found_and_unknown_notifications_are_ignored() -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent() as agent:
            await agent.notify("_vendor/notice", {"x": 1})
            request_id = await agent.request("session/load", {"sessionId": "s", "cwd": "/", "mcpServers": []})
            # The notification was read first; an answer to it would precede this response.
            assert await agent.receive() == {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {"code": -32601, "message": "Method not found"},
            }


# -- initialize switches and exit codes ----------------------------------------------------------------------------


async def test_record_init_appends_the_compact_initialize_params(tmp_path: Path) -> None:
    record = tmp_path / "init.jsonl"
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_RECORD_INIT": str(record)}) as agent:
            await agent.call("initialize", INITIALIZE_PARAMS)
            assert record.read_text() == (
                '{"protocolVersion":1,"clientCapabilities":{},"clientInfo":{"name":"subagent-host","version":"0.1.0"}}\n'
            )
    assert_wire_conforms(agent)


async def test_crash_on_initialize_exits_11_without_answering() -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_CRASH_ON_INITIALIZE": "1"}) as agent:
            await agent.request("initialize", INITIALIZE_PARAMS)
            assert await agent.drain() == []
            assert await agent.process.wait() == 11


async def test_crash_on_prompt_exits_1_without_any_update() -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_CRASH_ON_PROMPT": "1"}) as agent:
            sid = await agent.handshake()
            await agent.prompt(sid, "q")
            assert await agent.drain() == []
            assert await agent.process.wait() == 1


async def test_crash_after_chunk_exits_17_after_flushing_the_chunk() -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_CRASH_AFTER_CHUNK": "1", "MOCK_TEXT": "partial answer"}) as agent:
            sid = await agent.handshake()
            await agent.prompt(sid, "q")
            assert await agent.drain() == [_text_chunk(sid, "partial answer")]
            assert await agent.process.wait() == 17
    assert_wire_conforms(agent)


# -- answer text ---------------------------------------------------------------------------------------------------


async def test_echo_cwd_answers_the_process_cwd_and_the_session_new_cwd(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_ECHO_CWD": "1"}, cwd=tmp_path) as agent:
            sid = await agent.handshake(cwd="/session/cwd")
            _, updates = await agent.receive_until_response(await agent.prompt(sid, "q"))
            real_cwd = await anyio.Path(tmp_path).resolve()
            assert updates == [_text_chunk(sid, f"{real_cwd}\n/session/cwd")]
    assert_wire_conforms(agent)


@pytest.mark.parametrize(
    ("extra_env", "expected"),
    [({"ACP_FAKE_ECHO_FACT": "managed"}, "managed"), ({}, "<ACP_FAKE_ECHO_FACT unset>")],
)
async def test_echo_env_answers_the_variable_or_an_unset_marker(extra_env: dict[str, str], expected: str) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_ECHO_ENV": "ACP_FAKE_ECHO_FACT", **extra_env}) as agent:
            sid = await agent.handshake()
            _, updates = await agent.receive_until_response(await agent.prompt(sid, "q"))
            assert updates == [_text_chunk(sid, expected)]
    assert_wire_conforms(agent)


async def test_huge_chunk_sends_one_line_of_n_mebibytes_of_x() -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_HUGE_CHUNK_MIB": "2"}) as agent:
            sid = await agent.handshake()
            response, updates = await agent.receive_until_response(await agent.prompt(sid, "q"))
            assert updates == [_text_chunk(sid, "x" * (2 * 1048576))]
            assert response["result"] == {"stopReason": "end_turn"}
    assert_wire_conforms(agent)


async def test_stdin_eof_exits_0_even_while_a_write_to_an_unread_stdout_blocks() -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_HUGE_CHUNK_MIB": "4"}) as agent:
            sid = await agent.handshake()
            await agent.prompt(sid, "q")  # the 4 MiB line cannot fit the pipe, which nobody reads
            await agent.close_stdin()
            assert await agent.process.wait() == 0


async def test_a_broken_stdout_pipe_does_not_stop_the_agent_from_exiting_0_on_eof() -> None:
    read_fd, write_fd = os.pipe()
    try:
        with anyio.fail_after(PROCESS_TIMEOUT):
            process = await anyio.open_process(
                [PYTHON, str(FAKE_ACP_AGENT)], env=_child_env({"MOCK_TEXT": "x"}), stdout=write_fd, stderr=None
            )
            async with process:
                os.close(write_fd)
                write_fd = -1
                os.close(read_fd)  # every answer now hits EPIPE
                read_fd = -1
                assert process.stdin is not None
                for request_id, method in enumerate(("initialize", "session/new", "session/prompt")):
                    message: Message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {}}
                    await process.stdin.send((json.dumps(message) + "\n").encode())
                await process.stdin.aclose()
                assert await process.wait() == 0
    finally:
        for fd in (read_fd, write_fd):
            if fd >= 0:
                os.close(fd)


# -- update switches -----------------------------------------------------------------------------------------------


async def test_thought_and_tool_call_updates_precede_the_answer_chunk_in_order() -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_THOUGHT": "1", "MOCK_TOOL_CALL": "1", "MOCK_TEXT": "final answer"}) as agent:
            sid = await agent.handshake()
            _, updates = await agent.receive_until_response(await agent.prompt(sid, "q"))
            assert [u["params"]["update"] for u in updates] == [
                {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "thinking…"}},
                {
                    "sessionUpdate": "tool_call",
                    "toolCallId": "mock-tool",
                    "title": "mock tool",
                    "kind": "read",
                    "status": "pending",
                },
                {"sessionUpdate": "tool_call_update", "toolCallId": "mock-tool", "status": "completed"},
                {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "final answer"}},
            ]
    assert_wire_conforms(agent)


def _is_extra_update_deviation(message: Message) -> bool:
    if message.get("method") == "_mock/notice":
        return True
    update = message.get("params", {}).get("update", {})
    return isinstance(update, dict) and cast(Message, update).get("sessionUpdate") == "future_update_kind"


async def test_extra_updates_are_sent_in_order_with_exactly_two_deliberate_deviations() -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_EXTRA_UPDATES": "1", "MOCK_TEXT": "ok"}) as agent:
            sid = await agent.handshake()
            response, messages = await agent.receive_until_response(await agent.prompt(sid, "q"))
            assert [(m["method"], m["params"].get("update", m["params"])) for m in messages] == [
                ("session/update", {"sessionUpdate": "future_update_kind", "payload": 1}),
                (
                    "session/update",
                    {
                        "sessionUpdate": "plan",
                        "entries": [{"content": "mock step", "priority": "medium", "status": "pending"}],
                    },
                ),
                ("session/update", {"sessionUpdate": "usage_update", "used": 1, "size": 10}),
                ("_mock/notice", {"text": "ignored"}),
                ("session/update", {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "ok"}}),
            ]
            assert response["result"] == {"stopReason": "end_turn"}
    assert_wire_conforms(agent, deviation=_is_extra_update_deviation)
    notice = next(m for m in agent.agent_wire.messages if m.get("method") == "_mock/notice")
    validate_agent_message(notice, allow_extensions=True)


async def test_late_text_follows_the_prompt_answer() -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_LATE_TEXT": "late"}) as agent:
            sid = await agent.handshake()
            prompt_id = await agent.prompt(sid, "q")
            assert await agent.receive() == _text_chunk(sid, "mock child answer")
            assert await agent.receive() == _result(prompt_id, {"stopReason": "end_turn"})
            assert await agent.receive() == _text_chunk(sid, "late")
    assert_wire_conforms(agent)


# -- permission ----------------------------------------------------------------------------------------------------

ALLOW_OPTION: Message = {"optionId": "yes", "name": "Allow", "kind": "allow_once"}
REJECT_OPTION: Message = {"optionId": "no", "name": "Reject", "kind": "reject_once"}


async def test_permission_selected_continues_the_turn_and_logs_the_outcome(tmp_path: Path) -> None:
    log = tmp_path / "permission.log"
    env = {"MOCK_PERMISSION": "1", "MOCK_TEXT": "approved answer", "MOCK_PERMISSION_LOG": str(log)}
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent(env) as agent:
            sid = await agent.handshake()
            prompt_id = await agent.prompt(sid, "q")
            ask = await agent.receive()
            assert ask["method"] == "session/request_permission"
            assert ask["params"] == {
                "sessionId": sid,
                "toolCall": {"toolCallId": "mock-call", "title": "mock side effect"},
                "options": [ALLOW_OPTION, REJECT_OPTION],
            }
            await agent.answer(ask["id"], {"outcome": {"outcome": "selected", "optionId": "yes"}})
            response, updates = await agent.receive_until_response(prompt_id)
            assert updates == [_text_chunk(sid, "approved answer")]
            assert response["result"] == {"stopReason": "end_turn"}
            assert log.read_text() == '{"outcome":"selected","optionId":"yes"}\n'
    assert_wire_conforms(agent)


async def test_permission_cancelled_answers_the_prompt_cancelled_without_a_chunk(tmp_path: Path) -> None:
    log = tmp_path / "permission.log"
    env = {"MOCK_PERMISSION": "1", "MOCK_TOOL_KIND": "execute", "MOCK_PERMISSION_LOG": str(log)}
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent(env) as agent:
            sid = await agent.handshake()
            prompt_id = await agent.prompt(sid, "q")
            ask = await agent.receive()
            assert ask["params"]["toolCall"] == {
                "toolCallId": "mock-call",
                "title": "mock side effect",
                "kind": "execute",
            }
            await agent.answer(ask["id"], {"outcome": {"outcome": "cancelled"}})
            response, updates = await agent.receive_until_response(prompt_id)
            assert updates == []
            assert response["result"] == {"stopReason": "cancelled"}
            assert log.read_text() == '{"outcome":"cancelled"}\n'
    assert_wire_conforms(agent)


async def test_permission_with_no_allow_offers_only_the_reject_option() -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_PERMISSION": "1", "MOCK_NO_ALLOW": "1"}) as agent:
            sid = await agent.handshake()
            await agent.prompt(sid, "q")
            ask = await agent.receive()
            assert ask["params"]["options"] == [REJECT_OPTION]
            await agent.answer(ask["id"], {"outcome": {"outcome": "cancelled"}})
            await agent.receive()
    assert_wire_conforms(agent)


async def test_permission_ignore_decision_finishes_the_turn_after_a_denial() -> None:
    env = {
        "MOCK_PERMISSION": "1",
        "MOCK_PERMISSION_IGNORE_DECISION": "1",
        "MOCK_TOOL_KIND": "read",
        "MOCK_STOP": "max_tokens",
    }
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent(env) as agent:
            sid = await agent.handshake()
            prompt_id = await agent.prompt(sid, "q")
            ask = await agent.receive()
            await agent.answer(ask["id"], {"outcome": {"outcome": "cancelled"}})
            response, updates = await agent.receive_until_response(prompt_id)
            assert updates == [_text_chunk(sid, "mock child answer")]
            assert response["result"] == {"stopReason": "max_tokens"}
    assert_wire_conforms(agent)


async def test_a_future_tool_kind_is_the_only_off_schema_message() -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_PERMISSION": "1", "MOCK_TOOL_KIND": "future_kind"}) as agent:
            sid = await agent.handshake()
            await agent.prompt(sid, "q")
            ask = await agent.receive()
            assert ask["params"]["toolCall"]["kind"] == "future_kind"
            await agent.answer(ask["id"], {"outcome": {"outcome": "selected", "optionId": "yes"}})
            await agent.receive()
    assert_wire_conforms(agent, deviation=lambda m: m.get("method") == "session/request_permission")


# -- probe requests ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method", ["fs/read_text_file", "fs/write_text_file", "terminal/create", "_vendor/extension", "no/such_method"]
)
async def test_probe_request_reports_the_error_code_of_the_answer(method: str) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_PROBE_REQUEST": method}) as agent:
            sid = await agent.handshake()
            prompt_id = await agent.prompt(sid, "q")
            probe = await agent.receive()
            assert probe["method"] == method
            assert probe["params"] == {"sessionId": sid}
            await agent.answer_method_not_found(probe["id"])
            response, updates = await agent.receive_until_response(prompt_id)
            assert updates == [_text_chunk(sid, f"probe {method}: -32601")]
            assert response["result"] == {"stopReason": "end_turn"}
    # The probe carries only a sessionId, whatever the method's schema params: that request is the deviation.
    assert_wire_conforms(agent, deviation=lambda m: m.get("method") == method)


async def test_probe_request_reports_ok_when_a_result_comes_back() -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_PROBE_REQUEST": "_vendor/extension"}) as agent:
            sid = await agent.handshake()
            prompt_id = await agent.prompt(sid, "q")
            probe = await agent.receive()
            await agent.answer(probe["id"], {})
            _, updates = await agent.receive_until_response(prompt_id)
            assert updates == [_text_chunk(sid, "probe _vendor/extension: ok")]
    validate_agent_message(probe, allow_extensions=True)


async def test_agent_request_ids_are_integers_from_zero_in_the_agents_own_id_space() -> None:
    env = {"MOCK_PERMISSION": "1", "MOCK_PROBE_REQUEST": "no/such_method"}
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent(env) as agent:
            sid = await agent.handshake()
            await agent.prompt(sid, "q")
            ask = await agent.receive()
            await agent.answer(ask["id"], {"outcome": {"outcome": "selected", "optionId": "yes"}})
            probe = await agent.receive()
            assert (ask["id"], probe["id"]) == (0, 1)


# -- hang and cancel -----------------------------------------------------------------------------------------------


async def test_hang_is_answered_cancelled_by_session_cancel_and_logged_once(tmp_path: Path) -> None:
    ready, cancel_log = tmp_path / "ready", tmp_path / "cancel.log"
    env = {"MOCK_HANG": "1", "MOCK_READY_FILE": str(ready), "MOCK_CANCEL_LOG": str(cancel_log)}
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent(env) as agent:
            sid = await agent.handshake()
            prompt_id = await agent.prompt(sid, "q")
            assert await agent.receive() == _text_chunk(sid, "mock child answer")
            assert await wait_for_file(ready) == "ready"
            await agent.notify("session/cancel", {"sessionId": sid})
            assert await agent.receive() == _result(prompt_id, {"stopReason": "cancelled"})
            assert cancel_log.read_text() == "cancel\n"
            assert await agent.exit_code() == 0
    assert_wire_conforms(agent)


async def test_stdin_eof_exits_0_even_with_a_hanging_prompt(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_HANG": "1", "MOCK_READY_FILE": str(ready)}) as agent:
            sid = await agent.handshake()
            await agent.prompt(sid, "q")
            await wait_for_file(ready)
            await agent.close_stdin()
            assert await agent.drain() == [_text_chunk(sid, "mock child answer")]
            assert await agent.process.wait() == 0


async def test_crash_on_cancel_exits_1_after_logging_the_cancel(tmp_path: Path) -> None:
    ready, cancel_log = tmp_path / "ready", tmp_path / "cancel.log"
    env = {
        "MOCK_HANG": "1",
        "MOCK_CRASH_ON_CANCEL": "1",
        "MOCK_READY_FILE": str(ready),
        "MOCK_CANCEL_LOG": str(cancel_log),
    }
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent(env) as agent:
            sid = await agent.handshake()
            await agent.prompt(sid, "q")
            await wait_for_file(ready)
            await agent.notify("session/cancel", {"sessionId": sid})
            assert await agent.drain() == [_text_chunk(sid, "mock child answer")]
            assert await agent.process.wait() == 1
            assert cancel_log.read_text() == "cancel\n"


async def test_ignore_cancel_leaves_the_hanging_prompt_unanswered(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    env = {"MOCK_HANG": "1", "MOCK_IGNORE_CANCEL": "1", "MOCK_READY_FILE": str(ready)}
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent(env) as agent:
            sid = await agent.handshake()
            await agent.prompt(sid, "q")
            assert await agent.receive() == _text_chunk(sid, "mock child answer")
            await wait_for_file(ready)
            await agent.notify("session/cancel", {"sessionId": sid})
            # Messages are handled in order, so the cancel was processed before this request got its answer.
            ping_id = await agent.request("x/ping", {})
            assert (await agent.receive())["id"] == ping_id
            assert await agent.exit_code() == 0


async def test_permission_on_cancel_asks_logs_the_answer_then_answers_cancelled(tmp_path: Path) -> None:
    ready, log = tmp_path / "ready", tmp_path / "permission.log"
    env = {
        "MOCK_HANG": "1",
        "MOCK_PERMISSION_ON_CANCEL": "1",
        "MOCK_PERMISSION_LOG": str(log),
        "MOCK_READY_FILE": str(ready),
    }
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent(env) as agent:
            sid = await agent.handshake()
            prompt_id = await agent.prompt(sid, "q")
            await agent.receive()
            await wait_for_file(ready)
            await agent.notify("session/cancel", {"sessionId": sid})
            ask = await agent.receive()
            assert ask["method"] == "session/request_permission"
            assert ask["params"] == {
                "sessionId": sid,
                "toolCall": {"toolCallId": "mock-call", "title": "mock side effect", "kind": "execute"},
                "options": [ALLOW_OPTION, REJECT_OPTION],
            }
            await agent.answer(ask["id"], {"outcome": {"outcome": "cancelled"}})
            assert await agent.receive() == _result(prompt_id, {"stopReason": "cancelled"})
            assert log.read_text() == '{"outcome":"cancelled"}\n'
    assert_wire_conforms(agent)


async def test_a_cancel_that_arrives_while_awaiting_permission_ends_a_hanging_prompt_cancelled() -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_HANG": "1", "MOCK_PERMISSION": "1"}) as agent:
            sid = await agent.handshake()
            prompt_id = await agent.prompt(sid, "q")
            ask = await agent.receive()
            await agent.notify("session/cancel", {"sessionId": sid})
            await agent.answer(ask["id"], {"outcome": {"outcome": "selected", "optionId": "yes"}})
            response, updates = await agent.receive_until_response(prompt_id)
            assert updates == [_text_chunk(sid, "mock child answer")]
            assert response["result"] == {"stopReason": "cancelled"}
    assert_wire_conforms(agent)


# -- file handshakes -----------------------------------------------------------------------------------------------


async def test_new_session_gate_writes_ready_and_answers_only_after_go(tmp_path: Path) -> None:
    ready, go = tmp_path / "ready", tmp_path / "go"
    env = {"MOCK_NEWSESSION_READY": str(ready), "MOCK_NEWSESSION_GO": str(go), "MOCK_SESSION_ID": "gated"}
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent(env) as agent:
            await agent.call("initialize", INITIALIZE_PARAMS)
            new_id = await agent.request("session/new", {"cwd": "/", "mcpServers": []})
            assert await wait_for_file(ready) == "at-newSession"
            go.write_text("go")
            assert await agent.receive() == _result(new_id, {"sessionId": "gated"})
    assert_wire_conforms(agent)


async def test_initialize_gate_writes_ready_and_answers_only_after_go(tmp_path: Path) -> None:
    ready, go = tmp_path / "ready", tmp_path / "go"
    env = {"MOCK_INITIALIZE_READY": str(ready), "MOCK_INITIALIZE_GO": str(go)}
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent(env) as agent:
            init_id = await agent.request("initialize", INITIALIZE_PARAMS)
            assert await wait_for_file(ready) == "at-initialize"
            go.write_text("go")
            assert await agent.receive() == _result(init_id, INITIALIZE_RESULT)
    assert_wire_conforms(agent)


async def test_stdin_eof_while_gated_exits_0(tmp_path: Path) -> None:
    ready, go = tmp_path / "ready", tmp_path / "go"
    env = {"MOCK_NEWSESSION_READY": str(ready), "MOCK_NEWSESSION_GO": str(go)}
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent(env) as agent:
            await agent.request("session/new", {"cwd": "/", "mcpServers": []})
            await wait_for_file(ready)
            assert await agent.exit_code() == 0
            assert not go.exists()


async def test_flush_on_eof_waits_the_delay_writes_flushed_and_exits_0(tmp_path: Path) -> None:
    flushed = tmp_path / "flushed"
    env = {"MOCK_HANG": "1", "MOCK_FLUSH_ON_EOF": str(flushed), "MOCK_FLUSH_DELAY_MS": "20"}
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent(env) as agent:
            sid = await agent.handshake()
            await agent.prompt(sid, "q")
            await agent.receive()
            assert not flushed.exists()
            assert await agent.exit_code() == 0
            assert flushed.read_text() == "flushed"


async def test_trap_sigterm_writes_armed_and_survives_sigterm_and_eof_until_sigkill(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_TRAP_SIGTERM": "1", "MOCK_READY_FILE": str(ready)}) as agent:
            assert await wait_for_file(ready) == "trap-armed"
            agent.process.terminate()
            # An ignored signal is discarded when sent, so a later answer proves the agent outlived it.
            await agent.call("initialize", INITIALIZE_PARAMS)
            await agent.close_stdin()
            with anyio.move_on_after(_STILL_ALIVE_BOUND):
                await agent.process.wait()
            assert agent.process.returncode is None
            agent.process.kill()
            assert await agent.process.wait() == -signal.SIGKILL


async def test_ignore_eof_stays_alive_and_its_sigterm_handler_writes_the_file_and_exits_0(tmp_path: Path) -> None:
    ready, sigterm_file = tmp_path / "ready", tmp_path / "sigterm"
    env = {"MOCK_IGNORE_EOF": "1", "MOCK_READY_FILE": str(ready), "MOCK_SIGTERM_FILE": str(sigterm_file)}
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent(env) as agent:
            assert await wait_for_file(ready) == "ignore-eof-armed"
            await agent.close_stdin()
            with anyio.move_on_after(_STILL_ALIVE_BOUND):
                await agent.process.wait()
            assert agent.process.returncode is None
            agent.process.terminate()
            assert await agent.process.wait() == 0
            assert sigterm_file.exists()


# -- grandchildren -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("setsid", [False, True])
async def test_grandchild_sleeps_in_or_out_of_the_agents_group_and_dies_on_sigterm(
    tmp_path: Path, setsid: bool
) -> None:
    pid_file = tmp_path / "grandchild.pid"
    env = {"MOCK_GRANDCHILD_PID_FILE": str(pid_file), "MOCK_TRAP_SIGTERM": "1"}
    if setsid:
        env["MOCK_GRANDCHILD_SETSID"] = "1"
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent(env) as agent:
            grandchild = int(await wait_for_file(pid_file))
            try:
                assert psutil.Process(grandchild).ppid() == agent.process.pid
                if setsid:
                    assert os.getsid(grandchild) == grandchild
                else:
                    assert os.getpgid(grandchild) == agent.process.pid
                # The agent's SIGTERM trap must not leak into the grandchild.
                os.kill(grandchild, signal.SIGTERM)
                await wait_until_gone(grandchild)
            finally:
                try:
                    os.kill(grandchild, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            agent.process.kill()
            await agent.process.wait()


async def test_grandchild_stdio_is_dev_null(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_GRANDCHILD_PID_FILE": str(pid_file)}) as agent:
            grandchild = int(await wait_for_file(pid_file))
            try:
                targets = {fd: os.readlink(f"/proc/{grandchild}/fd/{fd}") for fd in (0, 1, 2)}
                assert targets == {0: os.devnull, 1: os.devnull, 2: os.devnull}
            finally:
                os.kill(grandchild, signal.SIGKILL)
                await wait_until_gone(grandchild)
            assert await agent.exit_code() == 0


# -- the oracle itself ---------------------------------------------------------------------------------------------


def test_the_oracle_accepts_the_hosts_exact_client_messages() -> None:
    validate_client_message({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE_PARAMS})
    validate_client_message(
        {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/w", "mcpServers": []}}
    )
    validate_client_message(
        {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": "s", "prompt": []}}
    )
    validate_client_message({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}})
    validate_client_message({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "cancelled"}}})
    validate_client_message(
        {"jsonrpc": "2.0", "id": "a", "result": {"outcome": {"outcome": "selected", "optionId": "yes"}}}
    )
    validate_client_message({"jsonrpc": "2.0", "id": 3, "error": {"code": -32601, "message": "Method not found"}})


OFF_SCHEMA_CLIENT_MESSAGES: list[Message] = [
    {"id": 0, "method": "initialize", "params": INITIALIZE_PARAMS},
    {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": None},
    {"jsonrpc": "2.0", "id": True, "method": "initialize", "params": INITIALIZE_PARAMS},
    {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {**INITIALIZE_PARAMS, "protocolVersion": "1"}},
    {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {**INITIALIZE_PARAMS, "protocolVersion": True}},
    {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/w"}},
    {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/w", "mcpServers": [], "x": 1}},
    {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": "s", "prompt": [{"x": 1}]}},
    {"jsonrpc": "2.0", "method": "session/cancel"},
    {"jsonrpc": "2.0", "id": 9, "method": "session/load", "params": {}},
    {"jsonrpc": "2.0", "method": "_vendor/notice", "params": {}},
    {"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected"}}},
    {"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "allowed", "optionId": "yes"}}},
    {"jsonrpc": "2.0", "id": 0, "result": {}, "error": {"code": -32601, "message": "Method not found"}},
    {"jsonrpc": "2.0", "id": 0, "error": {"code": "-32601", "message": "Method not found"}},
    {"jsonrpc": "2.0", "id": 0, "extra": 1, "error": {"code": -32601, "message": "Method not found"}},
]


def test_the_oracle_rejects_off_schema_client_messages() -> None:
    # One test over the table: each case is cheap, and the suite's per-test leak check is not.
    for message in OFF_SCHEMA_CLIENT_MESSAGES:
        with pytest.raises(AssertionError, match="ACP client message"):
            validate_client_message(message)
            pytest.fail(f"accepted an off-schema client message: {message!r}")


def test_the_oracle_accepts_a_result_only_for_session_request_permission() -> None:
    with pytest.raises(AssertionError, match="only with an error"):
        validate_client_message({"jsonrpc": "2.0", "id": 0, "result": {}}, answered_method="fs/read_text_file")


def test_the_oracle_needs_the_answered_method_to_validate_an_agent_result() -> None:
    message = _result(0, INITIALIZE_RESULT)
    validate_agent_message(message, request_method="initialize")
    with pytest.raises(AssertionError, match="needs request_method"):
        validate_agent_message(message)
    with pytest.raises(AssertionError, match="NewSessionResponse"):
        validate_agent_message(message, request_method="session/new")


def test_the_oracle_matches_responses_to_requests_across_a_conversation() -> None:
    client = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE_PARAMS}]
    validate_conversation(client, [_result(0, INITIALIZE_RESULT)])
    with pytest.raises(AssertionError, match="answers no client request"):
        validate_conversation(client, [_result(1, INITIALIZE_RESULT)])


def test_the_wire_recorder_reassembles_lines_split_across_reads() -> None:
    recorder = WireRecorder()
    for piece in (b'{"jsonrpc":"2.0","met', b'hod":"a"}\n\nnot json\n[1]\n{"id"', b":1}"):
        recorder.feed(piece)
    assert recorder.messages == [{"jsonrpc": "2.0", "method": "a"}]
    assert recorder.undecodable == [b"not json", b"[1]"]
    recorder.feed(b"\n")
    assert recorder.messages[-1] == {"id": 1}


async def test_the_wire_recorder_tees_real_pipes_in_both_directions() -> None:
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with open_agent({"MOCK_TEXT": "teed"}) as agent:
            sid = await agent.handshake()
            await agent.receive_until_response(await agent.prompt(sid, "q"))
    assert [m.get("method") for m in agent.client_wire.messages] == ["initialize", "session/new", "session/prompt"]
    assert agent.agent_wire.messages[-2] == _text_chunk(sid, "teed")


def test_the_fake_agent_runs_under_a_bare_interpreter_without_third_party_imports() -> None:
    # -S -I: no site-packages, no environment; the fake must still answer (stdlib only).
    completed = subprocess.run(
        [PYTHON, "-S", "-I", str(FAKE_ACP_AGENT)],
        input=json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE_PARAMS}) + "\n",
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT,
        check=False,
    )
    assert completed.returncode == 0
    assert json.loads(completed.stdout) == _result(0, INITIALIZE_RESULT)
