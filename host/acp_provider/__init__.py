"""The ACP v1 provider: one fresh ACP agent child per delegated run, the host acting as the ACP client.

``AcpProvider`` is the registered provider entry (pre-abort, cwd resolution, host logging); ``_run.start_acp_run``
is the run entry for an already-resolved ``AcpRunSpec``. A run's ``result()`` never raises, its ``dispose()`` is
idempotent with one shared outcome, and every model-visible text is built from closed facts only.
"""

from __future__ import annotations

from host.acp_provider._provider import AcpProvider

__all__ = ["AcpProvider"]
