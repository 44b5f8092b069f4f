"""Opt-in OpenTelemetry: every run an ``invoke_agent {entry}`` CLIENT span, a no-op unless configured.

Nothing here imports ``opentelemetry`` until ``telemetry_configured()`` says telemetry is on
(docs/behaviour.md#telemetry-configuration), so a host without the ``[otel]`` extra, or with it but unconfigured,
pays one environment check per host. ``maybe_traced(provider, entry)`` wraps a provider so each run it starts is
traced (``host.telemetry._otel``, imported only then); ``valid_traceparent`` checks a W3C ``traceparent`` before it
reaches a child.
"""

from __future__ import annotations

from host.telemetry._config import (
    CAPTURE_CONTENT_ENV_VAR,
    capture_content,
    telemetry_configured,
    valid_traceparent,
)
from host.telemetry._wrap import maybe_traced

__all__ = ["CAPTURE_CONTENT_ENV_VAR", "capture_content", "maybe_traced", "telemetry_configured", "valid_traceparent"]
