"""When telemetry is on, decided without importing OpenTelemetry (docs/behaviour.md#telemetry-configuration).

Telemetry is **configured** when ``OTEL_SDK_DISABLED`` is not ``true`` and either

* the embedding program already set a global ``TracerProvider`` (``opentelemetry.trace`` is imported and its
  provider is not the API's default proxy), or
* the environment names a traces exporter: ``OTEL_TRACES_EXPORTER`` other than ``none``, or, with it unset, an
  ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (the standard default exporter is OTLP).
  The host then sets up the SDK from that environment itself, once (``host.telemetry._setup``).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from typing import Final

__all__ = [
    "CAPTURE_CONTENT_ENV_VAR",
    "TRACEPARENT_ENV_VAR",
    "capture_content",
    "env_exporter_names",
    "global_provider_set",
    "telemetry_configured",
    "valid_traceparent",
    "with_traceparent",
]

CAPTURE_CONTENT_ENV_VAR: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""``true`` attaches content (a tool call's title and id) to spans; off by default, as the GenAI conventions ask."""
TRACEPARENT_ENV_VAR: Final = "TRACEPARENT"
"""The variable a child gets its trace context in (OTEP 258's environment carrier)."""
_TRACEPARENT: Final = re.compile(r"00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}")


def telemetry_configured() -> bool:
    """Whether runs are traced (see the module docstring); never imports OpenTelemetry."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return global_provider_set() or bool(env_exporter_names())


def global_provider_set() -> bool:
    """Whether a program already imported OpenTelemetry and set a real global ``TracerProvider``."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return False
    provider = trace.get_tracer_provider()
    return type(provider).__name__ not in ("ProxyTracerProvider", "NoOpTracerProvider")


def env_exporter_names() -> list[str]:
    """The traces exporters the environment names (``[]``: none)."""
    raw = os.environ.get("OTEL_TRACES_EXPORTER")
    if raw is None:
        endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        return ["otlp"] if endpoint else []
    return [name for name in (part.strip() for part in raw.split(",")) if name and name != "none"]


def capture_content() -> bool:
    """Whether the operator opted into content on spans (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``)."""
    return os.environ.get(CAPTURE_CONTENT_ENV_VAR, "").strip().lower() == "true"


def valid_traceparent(value: object) -> str | None:
    """``value`` when it is a W3C version-00 ``traceparent`` (lower-case hex, non-zero ids), else ``None``."""
    if isinstance(value, str) and len(value) == 55 and _TRACEPARENT.fullmatch(value):
        return value
    return None


def with_traceparent(env: Mapping[str, str], traceparent: str | None) -> dict[str, str]:
    """The entry's explicit child variables, plus ``TRACEPARENT`` when the run has a trace context."""
    explicit = dict(env)
    if traceparent is not None:
        explicit[TRACEPARENT_ENV_VAR] = traceparent
    return explicit
