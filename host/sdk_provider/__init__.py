"""The DSH SDK provider: one fresh DSH SDK runtime per delegated run, driven over newline JSON-RPC on stdio.

``DshSdkProvider`` is the registered provider entry (pre-abort, cwd resolution, route, host logging);
``start_sdk_run`` is the run entry for a resolved ``SdkRunSpec``. A run's ``result()`` never raises, its
``dispose()`` is idempotent with one shared outcome, and every model-visible text is built from closed facts only.
"""

from __future__ import annotations

from host.sdk_provider._mapping import OutputFold, classify_error, map_turn_end, result_of_events
from host.sdk_provider._provider import HOST_LOGGER_NAME, DshSdkProvider, spec_of_entry
from host.sdk_provider._run import (
    START_ABORTED_MESSAGE,
    ClientFactory,
    SdkClientLike,
    SdkRun,
    resolve_route,
    start_sdk_run,
)
from host.sdk_provider.client import SdkClient, SdkRunSpec

__all__ = [
    "HOST_LOGGER_NAME",
    "START_ABORTED_MESSAGE",
    "ClientFactory",
    "DshSdkProvider",
    "OutputFold",
    "SdkClient",
    "SdkClientLike",
    "SdkRun",
    "SdkRunSpec",
    "classify_error",
    "map_turn_end",
    "resolve_route",
    "result_of_events",
    "spec_of_entry",
    "start_sdk_run",
]
