"""Loopback fakes of the model APIs that real MCP parents call, each scripting one call of an MCP tool.

Each fake answers the parent's streaming requests with server-sent events: while the tool has not been called it
asks for the call (Claude Code first has to load a deferred MCP tool through its ``ToolSearch`` tool, so that call
comes first when the tool is not yet offered); once the request carries the tool's result it ends the turn with a
short text. ``tool_output()`` is the text the parent sent its model as that result: what a test asserts on.

* ``ScriptedResponsesApi``: the OpenAI Responses API (``POST /v1/responses``) as Codex CLI calls it; MCP tools are
  offered inside a namespace ``mcp__<server>``, and the call names both.
* ``ScriptedMessagesApi``: the Anthropic Messages API (``POST /v1/messages``) as Claude Code calls it; MCP tools are
  named ``mcp__<server>__<tool>``. Requests that do not stream (side queries) get a short text message.
* ``ScriptedGeminiApi``: the Gemini API (``POST /v1beta/models/<model>:streamGenerateContent?alt=sse``) as Gemini
  CLI calls it; MCP tools are named ``mcp_<server>_<tool>``. Its model router's non-streaming ``generateContent``
  gets the JSON it asks for (a low complexity score).
"""

from __future__ import annotations

import json
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final, cast

from tests.server._parent_helpers import LoopbackApi, Reply, objects

__all__ = ["ScriptedGeminiApi", "ScriptedMessagesApi", "ScriptedResponsesApi", "message_events", "sse"]

_FINAL_TEXT: Final = "done"


def sse(events: Sequence[Mapping[str, Any]]) -> bytes:
    return b"".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events)


def _text_of(content: object) -> str:
    """A tool result's text: a string as is, the ``text`` of each content item joined by newlines."""
    if isinstance(content, str):
        return content
    parts = objects(content)
    return "\n".join(str(part.get("text", "")) for part in parts) if parts else json.dumps(content)


class ScriptedResponsesApi:
    """The Responses API, scripting one call of ``name`` in ``namespace`` with ``arguments``."""

    CALL_ID: Final = "call_subagent_1"

    def __init__(self, *, namespace: str, name: str, arguments: Mapping[str, Any]) -> None:
        self._call = {
            "type": "function_call",
            "id": "fc_1",
            "call_id": self.CALL_ID,
            "namespace": namespace,
            "name": name,
            "arguments": json.dumps(arguments),
        }
        self._api = LoopbackApi(self._respond)

    @property
    def base_url(self) -> str:
        return f"{self._api.origin}/v1"

    @contextmanager
    def serving(self) -> Generator[ScriptedResponsesApi]:
        with self._api.serving():
            yield self

    def offered_tools(self, namespace: str) -> list[str]:
        """The tool names the parent's first request offered its model inside ``namespace``."""
        requests = self._api.requests("/responses")
        names: list[str] = []
        for tool in objects(requests[0].get("tools")) if requests else []:
            if tool.get("type") == "namespace" and tool.get("name") == namespace:
                names.extend(str(member.get("name")) for member in objects(tool.get("tools")))
        return names

    def tool_output(self) -> str | None:
        """The text of the ``function_call_output`` the parent sent back for the scripted call, if it did."""
        for body in self._api.requests("/responses"):
            for item in objects(body.get("input")):
                if item.get("type") == "function_call_output" and item.get("call_id") == self.CALL_ID:
                    return _text_of(item.get("output"))
        return None

    def _respond(self, path: str, body: dict[str, Any]) -> Reply:
        if not path.rstrip("/").endswith("/responses"):
            return 404, "text/plain", b""
        response_id = f"resp_{len(self._api.requests('/responses'))}"
        answered = any(item.get("type") == "function_call_output" for item in objects(body.get("input")))
        item: dict[str, Any] = self._call
        if answered:
            text = [{"type": "output_text", "text": _FINAL_TEXT}]
            item = {"type": "message", "role": "assistant", "id": f"msg_{response_id}", "content": text}
        usage = {
            "input_tokens": 0,
            "input_tokens_details": None,
            "output_tokens": 0,
            "output_tokens_details": None,
            "total_tokens": 0,
        }
        events = [
            {"type": "response.created", "response": {"id": response_id}},
            {"type": "response.output_item.done", "item": item},
            {"type": "response.completed", "response": {"id": response_id, "usage": usage}},
        ]
        return 200, "text/event-stream", sse(events)


class ScriptedMessagesApi:
    """The Messages API, scripting one call of ``tool`` with ``arguments`` (found through ``ToolSearch`` first)."""

    CALL_ID: Final = "toolu_subagent_call"
    SEARCH_ID: Final = "toolu_subagent_search"

    def __init__(self, *, tool: str, arguments: Mapping[str, Any]) -> None:
        self._tool = tool
        self._arguments = dict(arguments)
        self._api = LoopbackApi(self._respond)

    @property
    def base_url(self) -> str:
        return self._api.origin

    @contextmanager
    def serving(self) -> Generator[ScriptedMessagesApi]:
        with self._api.serving():
            yield self

    def offered_tools(self) -> list[str]:
        """Every tool name any streaming request offered the model (deferred tools appear once loaded)."""
        names: dict[str, None] = {}
        for body in self._api.requests("/v1/messages"):
            names.update((str(tool.get("name")), None) for tool in objects(body.get("tools")))
        return list(names)

    def tool_output(self) -> str | None:
        """The text of the ``tool_result`` the parent sent back for the scripted call, if it did."""
        for body in self._api.requests("/v1/messages"):
            result = self._results(body).get(self.CALL_ID)
            if result is not None:
                return _text_of(result.get("content"))
        return None

    @staticmethod
    def _results(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
        results: dict[str, dict[str, Any]] = {}
        for message in objects(body.get("messages")):
            for block in objects(message.get("content")):
                if block.get("type") == "tool_result":
                    results[str(block.get("tool_use_id"))] = block
        return results

    def _respond(self, path: str, body: dict[str, Any]) -> Reply:
        if "/v1/messages" not in path:
            return 404, "text/plain", b""
        if "count_tokens" in path:
            return 200, "application/json", json.dumps({"input_tokens": 1}).encode()
        number = len(self._api.requests("/v1/messages"))
        if not body.get("stream"):
            text = [{"type": "text", "text": _FINAL_TEXT}]
            message = {"id": f"msg_{number}", "type": "message", "role": "assistant", "content": text}
            message |= {"model": body.get("model"), "stop_reason": "end_turn", "usage": _usage()}
            return 200, "application/json", json.dumps(message).encode()
        offered = {str(tool.get("name")) for tool in objects(body.get("tools"))}
        results = self._results(body)
        call = {"type": "tool_use", "id": self.CALL_ID, "name": self._tool, "input": self._arguments}
        if self.CALL_ID in results:
            block: dict[str, Any] = {"type": "text", "text": _FINAL_TEXT}
        elif self._tool in offered or self.SEARCH_ID in results or "ToolSearch" not in offered:
            block = call
        else:
            block = {"type": "tool_use", "id": self.SEARCH_ID, "name": "ToolSearch"}
            block["input"] = {"query": f"select:{self._tool}"}
        return 200, "text/event-stream", sse(message_events(f"msg_{number}", str(body.get("model")), block))


def _usage() -> dict[str, int]:
    return {"input_tokens": 1, "output_tokens": 1}


def message_events(message_id: str, model: str, block: dict[str, Any]) -> list[dict[str, Any]]:
    """The stream of one assistant message holding one text or ``tool_use`` block."""
    start: dict[str, Any] = {"id": message_id, "type": "message", "role": "assistant", "model": model, "content": []}
    start |= {"stop_reason": None, "stop_sequence": None, "usage": _usage()}
    if block["type"] == "text":
        opened: dict[str, Any] = {"type": "text", "text": ""}
        delta: dict[str, Any] = {"type": "text_delta", "text": block["text"]}
        stop_reason = "end_turn"
    else:
        opened = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        stop_reason = "tool_use"
    return [
        {"type": "message_start", "message": start},
        {"type": "content_block_start", "index": 0, "content_block": opened},
        {"type": "content_block_delta", "index": 0, "delta": delta},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None}, "usage": _usage()},
        {"type": "message_stop"},
    ]


class ScriptedGeminiApi:
    """The Gemini API, scripting one call of ``tool`` with ``arguments``."""

    _ROUTER_ANSWER: Final = {"complexity_reasoning": "scripted", "complexity_score": 10}

    def __init__(self, *, tool: str, arguments: Mapping[str, Any]) -> None:
        self._tool = tool
        self._arguments = dict(arguments)
        self._api = LoopbackApi(self._respond)

    @property
    def base_url(self) -> str:
        return self._api.origin

    @contextmanager
    def serving(self) -> Generator[ScriptedGeminiApi]:
        with self._api.serving():
            yield self

    def offered_tools(self) -> list[str]:
        """Every function any streaming request declared to the model."""
        names: dict[str, None] = {}
        for body in self._api.requests(":streamGenerateContent"):
            for tool in objects(body.get("tools")):
                names.update((str(decl.get("name")), None) for decl in objects(tool.get("functionDeclarations")))
        return list(names)

    def tool_output(self) -> str | None:
        """The ``output`` of the ``functionResponse`` the parent sent back for the tool, if it did."""
        for body in self._api.requests(":streamGenerateContent"):
            for content in objects(body.get("contents")):
                for part in objects(content.get("parts")):
                    response = part.get("functionResponse")
                    if isinstance(response, dict) and cast(dict[str, Any], response).get("name") == self._tool:
                        return _text_of(cast(dict[str, Any], response).get("response", {}).get("output"))
        return None

    def _respond(self, path: str, body: dict[str, Any]) -> Reply:
        if ":countTokens" in path:
            return 200, "application/json", json.dumps({"totalTokens": 1}).encode()
        if ":generateContent" in path:
            return 200, "application/json", json.dumps(_candidate({"text": json.dumps(self._ROUTER_ANSWER)})).encode()
        if ":streamGenerateContent" not in path:
            return 404, "text/plain", b""
        answered = any(
            "functionResponse" in part
            for content in objects(body.get("contents"))
            for part in objects(content.get("parts"))
        )
        part: dict[str, Any] = {"functionCall": {"name": self._tool, "args": self._arguments}}
        if answered:
            part = {"text": _FINAL_TEXT}
        return 200, "text/event-stream", f"data: {json.dumps(_candidate(part))}\n\n".encode()


def _candidate(part: dict[str, Any]) -> dict[str, Any]:
    """A ``GenerateContentResponse`` holding one finished model turn of one part."""
    content = {"role": "model", "parts": [part]}
    usage = {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}
    return {"candidates": [{"content": content, "finishReason": "STOP", "index": 0}], "usageMetadata": usage}
