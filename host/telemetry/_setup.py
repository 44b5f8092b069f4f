"""Set up the OpenTelemetry SDK from the standard environment, once, when no program did it first.

Only when the global ``TracerProvider`` is still the API's default: a ``TracerProvider`` whose ``Resource`` reads
``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES`` (service name ``subagent-host`` unless set), one
``BatchSpanProcessor`` per exporter ``OTEL_TRACES_EXPORTER`` names (entry point group
``opentelemetry_traces_exporter``: ``console`` ships with the SDK, ``otlp`` with ``opentelemetry-exporter-otlp``),
and a ``MeterProvider`` with a periodic reader per ``OTEL_METRICS_EXPORTER`` exporter when that names any. An
exporter that is not installed is skipped with a warning.
"""

from __future__ import annotations

import logging
import os
import threading
from importlib.metadata import entry_points
from typing import Any, Final

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from host.telemetry._config import env_exporter_names, global_provider_set

__all__ = ["ensure_sdk"]

logger = logging.getLogger(__name__)

_DEFAULT_SERVICE_NAME: Final = "subagent-host"
_lock = threading.Lock()
_done = False


def ensure_sdk() -> None:
    """Configure the SDK from the environment unless a global provider is already set; idempotent."""
    global _done
    with _lock:
        if _done or global_provider_set():
            _done = True
            return
        _done = True
        attributes: dict[str, Any] = {}
        if not os.environ.get("OTEL_SERVICE_NAME"):
            attributes["service.name"] = _DEFAULT_SERVICE_NAME
        resource = Resource.create(attributes)
        provider = TracerProvider(resource=resource)
        for exporter in _exporters("opentelemetry_traces_exporter", env_exporter_names()):
            provider.add_span_processor(BatchSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        metric_names = [
            name.strip()
            for name in os.environ.get("OTEL_METRICS_EXPORTER", "").split(",")
            if name.strip() and name.strip() != "none"
        ]
        readers = [PeriodicExportingMetricReader(e) for e in _exporters("opentelemetry_metrics_exporter", metric_names)]
        if readers:
            metrics.set_meter_provider(MeterProvider(resource=resource, metric_readers=readers))


def _exporters(group: str, names: list[str]) -> list[Any]:
    found: list[Any] = []
    available = {point.name: point for point in entry_points(group=group)}
    for name in names:
        point = available.get(name)
        if point is None:
            logger.warning("subagent-host: OpenTelemetry exporter %r is not installed; skipped", name)
            continue
        found.append(point.load()())
    return found
