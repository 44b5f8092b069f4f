"""Traced runs: one ``invoke_agent {entry}`` CLIENT span per run, ``execute_tool`` child spans, the duration metric
(docs/behaviour.md#telemetry-spans). Imported only once telemetry is configured.

The span starts before ``provider.start`` (its parent: the request's ``traceparent``, else the current context) and
ends after ``dispose``, so it covers spawn, handshake, prompt and teardown. The child is given the span's own
``traceparent`` (``SubagentRequest.traceparent``: ACP ``_meta`` and the ``TRACEPARENT`` variable). Attributes are
closed facts: the entry name, the diagnostic's category as ``error.type``, the usage totals. Content (a tool call's
title and id) is attached only when ``capture_content()``.
"""

from __future__ import annotations

import dataclasses
import re
import time
from typing import Any, Final

import anyio.to_thread
from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from host._exceptions import SubagentHostError
from host._version import package_version
from host.config import EntryConfig
from host.run._after_dispose import AfterDisposeRun
from host.run._contracts import Capabilities, SubagentRequest, SubagentRun
from host.stream import ChunkFrame, ProviderKind, StreamFrame, ToolCallChunk, TranscriptEvent, usage_of_transcript
from host.telemetry._config import capture_content
from host.telemetry._setup import ensure_sdk
from host.telemetry._wrap import ClosableProvider

__all__ = ["FLUSH_TIMEOUT_MS", "MAX_TOOL_SPANS", "TracedProvider", "agent_id_of"]

MAX_TOOL_SPANS: Final = 1024
"""Bounds the ``execute_tool`` spans of one run; later tool calls get none."""
FLUSH_TIMEOUT_MS: Final = 2000
"""Bounds the export of a closing provider's spans and metrics (each of the two providers)."""
_INSTRUMENTATION: Final = "subagent-host"
_CATEGORY: Final = re.compile(r"category: ([a-z][a-z-]*)")
_PROPAGATOR: Final = TraceContextTextMapPropagator()
_TOOL_DONE: Final = frozenset({"completed", "failed"})


class TracedProvider:
    """A provider whose every run is traced; everything else is the inner provider's."""

    def __init__(self, inner: ClosableProvider, entry: EntryConfig) -> None:
        ensure_sdk()
        self._inner = inner
        self._entry = entry
        self._tracer = trace.get_tracer(_INSTRUMENTATION, package_version())
        self._duration = metrics.get_meter(_INSTRUMENTATION, package_version()).create_histogram(
            "gen_ai.client.operation.duration", unit="s", description="GenAI operation duration."
        )

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def kind(self) -> ProviderKind:
        return self._inner.kind

    @property
    def capabilities(self) -> Capabilities:
        return self._inner.capabilities

    async def start(self, request: SubagentRequest) -> SubagentRun:
        name = self._entry.name
        parent = _parent_context(request.traceparent)
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": name,
            "gen_ai.agent.name": name,
        }
        span = self._tracer.start_span(
            f"invoke_agent {name}", context=parent, kind=SpanKind.CLIENT, attributes=attributes
        )
        started = time.monotonic()
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(span))
        tools = _ToolSpans(self._tracer, span, capture=capture_content())
        observer = request.on_frame

        def observe(frame: StreamFrame) -> None:
            tools.on_frame(frame)
            if observer is not None:
                observer(frame)

        traced_request = dataclasses.replace(request, on_frame=observe, traceparent=carrier.get("traceparent"))
        try:
            run = await self._inner.start(traced_request)
        except BaseException as exc:
            tools.end_all()
            self._end(span, started, _error_type_of(exc))
            raise

        async def finish() -> None:
            self._finish(span, started, tools, run.transcript)

        return AfterDisposeRun(run, finish)

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            # A batch processor exports on a timer: hand over this provider's spans before the process may exit.
            await anyio.to_thread.run_sync(_force_flush)

    def _finish(self, span: Span, started: float, tools: _ToolSpans, transcript: tuple[TranscriptEvent, ...]) -> None:
        tools.end_all()
        end = transcript[-1].data if transcript and transcript[-1].type == "run/end" else {}
        usage = usage_of_transcript(transcript)
        if usage is not None:
            if usage.input_tokens is not None:
                span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
            if usage.output_tokens is not None:
                span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
            if usage.cost is not None:
                span.set_attribute("subagent_host.usage.cost", usage.cost.amount)
                span.set_attribute("subagent_host.usage.cost_currency", usage.cost.currency)
        agent_id = agent_id_of(transcript)
        if agent_id is not None:
            span.set_attribute("gen_ai.agent.id", agent_id)
        conversation_id = conversation_id_of(transcript)
        if conversation_id is not None:
            span.set_attribute("gen_ai.conversation.id", conversation_id)
        stop_reason = end.get("stop_reason")
        if isinstance(stop_reason, str):
            span.set_attribute("gen_ai.response.finish_reasons", [stop_reason])
        self._end(span, started, _error_type_of_end(end))

    def _end(self, span: Span, started: float, error_type: str | None) -> None:
        metric_attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": self._entry.name,
        }
        if error_type is not None:
            span.set_attribute("error.type", error_type)
            span.set_status(Status(StatusCode.ERROR))
            metric_attributes["error.type"] = error_type
        span.end()
        self._duration.record(time.monotonic() - started, attributes=metric_attributes)


class _ToolSpans:
    """One ``execute_tool`` span per tool call the child reports, ended when it completes or fails (or at run end)."""

    def __init__(self, tracer: trace.Tracer, parent: Span, *, capture: bool) -> None:
        self._tracer = tracer
        self._context = trace.set_span_in_context(parent)
        self._capture = capture
        self._open: dict[str, Span] = {}
        self._count = 0

    def on_frame(self, frame: StreamFrame) -> None:
        if not isinstance(frame, ChunkFrame) or not isinstance(frame.chunk, ToolCallChunk):
            return
        chunk = frame.chunk
        span = self._open.get(chunk.tool_call_id)
        if span is None:
            if self._count >= MAX_TOOL_SPANS:
                return
            self._count += 1
            attributes: dict[str, Any] = {
                "gen_ai.operation.name": "execute_tool",
                "subagent_host.tool.kind": chunk.kind,
            }
            if self._capture:
                attributes["gen_ai.tool.call.id"] = chunk.tool_call_id
            span = self._tracer.start_span(
                "execute_tool", context=self._context, kind=SpanKind.INTERNAL, attributes=attributes
            )
            self._open[chunk.tool_call_id] = span
        if self._capture and chunk.title:
            span.set_attribute("gen_ai.tool.name", chunk.title)
            span.update_name(f"execute_tool {chunk.title}")
        if chunk.status in _TOOL_DONE:
            if chunk.status == "failed":
                span.set_attribute("error.type", "tool_error")
                span.set_status(Status(StatusCode.ERROR))
            span.end()
            del self._open[chunk.tool_call_id]

    def end_all(self) -> None:
        for span in self._open.values():
            span.end()
        self._open.clear()


def _force_flush() -> None:
    for provider in (trace.get_tracer_provider(), metrics.get_meter_provider()):
        flush = getattr(provider, "force_flush", None)
        if callable(flush):
            flush(FLUSH_TIMEOUT_MS)


def _parent_context(traceparent: str | None) -> Context | None:
    """The caller's ``traceparent``, unless the current span already belongs to that trace (a server span opened
    for the same call, e.g. the MCP SDK's ``tools/call``): then the current context, so the run nests under it."""
    if traceparent is None:
        return None
    extracted = _PROPAGATOR.extract({"traceparent": traceparent})
    current = trace.get_current_span().get_span_context()
    if current.is_valid and current.trace_id == trace.get_current_span(extracted).get_span_context().trace_id:
        return None
    return extracted


def agent_id_of(transcript: tuple[TranscriptEvent, ...]) -> str | None:
    """``name@version`` of the agent, from a ``handshake`` record's ``agent_name``/``agent_version`` when the run
    has one (``None`` otherwise)."""
    for event in transcript:
        if str(event.type) == "handshake":
            name, version = event.data.get("agent_name"), event.data.get("agent_version")
            if isinstance(name, str) and name:
                return f"{name}@{version}" if isinstance(version, str) and version else name
    return None


def conversation_id_of(transcript: tuple[TranscriptEvent, ...]) -> str | None:
    """The session a run belongs to (``gen_ai.conversation.id``): ``None`` until sessions exist.

    The hook for sessions: a run that continues a session will record its handle, and this returns it.
    """
    del transcript
    return None


def _error_type_of_end(end: dict[str, Any]) -> str | None:
    diagnostic = end.get("diagnostic")
    if isinstance(diagnostic, str):
        match = _CATEGORY.search(diagnostic)
        if match is not None:
            return match.group(1)
    stop_reason = end.get("stop_reason")
    if stop_reason in ("error", "aborted"):
        return str(stop_reason)
    return None


def _error_type_of(exc: BaseException) -> str:
    if isinstance(exc, SubagentHostError):
        match = _CATEGORY.search(str(exc))
        if match is not None:
            return match.group(1)
    return type(exc).__qualname__
