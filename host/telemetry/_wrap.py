"""The one seam the host calls: wrap a provider for tracing only when telemetry is configured."""

from __future__ import annotations

import logging
from typing import Final, Protocol

from host.config import EntryConfig
from host.run._contracts import Provider
from host.telemetry._config import telemetry_configured

__all__ = ["ClosableProvider", "maybe_traced"]

logger = logging.getLogger(__name__)

_NOT_INSTALLED: Final = (
    "subagent-host: OTEL_* asks for traces but OpenTelemetry is not installed (pip install 'subagent-host[otel]')"
)


class ClosableProvider(Provider, Protocol):
    """A provider the host closes (every provider it builds)."""

    async def aclose(self) -> None:
        """Dispose every live run; later starts raise."""
        ...


def maybe_traced(provider: ClosableProvider, entry: EntryConfig) -> ClosableProvider:
    """``provider`` itself when telemetry is off; else a wrapper tracing every run it starts.

    Without the ``[otel]`` extra a configured environment logs a warning and traces nothing.
    """
    if not telemetry_configured():
        return provider
    try:
        from host.telemetry._otel import TracedProvider
    except ImportError:
        logger.warning(_NOT_INSTALLED)
        return provider
    return TracedProvider(provider, entry)
