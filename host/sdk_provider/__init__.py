"""The DSH SDK provider: one fresh DSH SDK runtime per delegated run, driven over newline JSON-RPC on stdio.

``DshSdkProvider`` is the registered provider entry (pre-abort, cwd resolution, route, host logging);
``_run.start_sdk_run`` is the run entry for a resolved ``SdkRunSpec``. A run's ``result()`` never raises, its
``dispose()`` is idempotent with one shared outcome, and every model-visible text is built from closed facts only.
"""

from __future__ import annotations

from host.sdk_provider._provider import DshSdkProvider

__all__ = ["DshSdkProvider"]
