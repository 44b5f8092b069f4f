"""Run one delegation through a ``Host`` in a process of its own, then print what OpenTelemetry saw as JSON.

``python -m tests.telemetry._traced_host CONFIG TOOL TRACEPARENT MODE``: MODE ``memory`` sets a global SDK
``TracerProvider`` with the in-memory exporter (and an in-memory metric reader) before the host opens, as an
embedding program would; MODE ``none`` sets nothing. A process of its own, because a global provider can be set once
per process and would turn tracing on for every later test in a shared one.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, cast

import anyio


def main() -> None:
    config, tool, traceparent, mode = sys.argv[1:5]
    exporter: Any = None
    reader: Any = None
    if mode == "memory":
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        reader = InMemoryMetricReader()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))

    from host import CancelController, Host, RunHooks

    async def run() -> dict[str, Any]:
        async with Host.open(config, parent_cwd=os.getcwd()) as host:
            hooks = RunHooks(traceparent=traceparent or None)
            result = await host.execute(tool, {"task": "hi"}, signal=CancelController().signal, hooks=hooks)
            return result.to_json()

    result = anyio.run(run)
    report: dict[str, Any] = {
        "result": result,
        "otel_imported": any(name.startswith("opentelemetry") for name in sys.modules),
        "spans": [],
        "metrics": [],
    }
    if exporter is not None:
        report["spans"] = [
            {
                "name": span.name,
                "kind": span.kind.name,
                "trace_id": f"{span.context.trace_id:032x}",
                "span_id": f"{span.context.span_id:016x}",
                "parent_id": f"{span.parent.span_id:016x}" if span.parent is not None else None,
                "attributes": _attributes(span.attributes),
                "status": span.status.status_code.name,
            }
            for span in exporter.get_finished_spans()
        ]
        report["metrics"] = _metric_points(reader.get_metrics_data())
    sys.stdout.write(json.dumps(report) + "\n")


def _attributes(attributes: Any) -> dict[str, Any]:
    return {key: _plain(value) for key, value in cast("dict[str, Any]", dict(attributes or {})).items()}


def _plain(value: object) -> object:
    if isinstance(value, tuple):
        return list(cast("tuple[object, ...]", value))
    return value


def _metric_points(data: Any) -> list[dict[str, Any]]:
    points: list[dict[str, Any]] = []
    if data is None:
        return points
    for resource_metrics in cast("list[Any]", data.resource_metrics):
        for scope_metrics in cast("list[Any]", resource_metrics.scope_metrics):
            for metric in cast("list[Any]", scope_metrics.metrics):
                for point in cast("list[Any]", metric.data.data_points):
                    attributes = cast("dict[str, Any]", dict(point.attributes or {}))
                    points.append(
                        {"name": metric.name, "unit": metric.unit, "attributes": attributes, "count": point.count}
                    )
    return points


if __name__ == "__main__":
    main()
