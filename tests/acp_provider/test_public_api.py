"""The public surface of ``host.acp_provider`` is a deliberate decision: pin it."""

from __future__ import annotations

import host.acp_provider as acp_provider


def test_all_lists_exactly_the_public_names() -> None:
    public = {name for name in vars(acp_provider) if not name.startswith("_")} - {"annotations"}
    assert set(acp_provider.__all__) == public
    assert acp_provider.__all__ == [
        "HOST_LOGGER_NAME",
        "START_ABORTED_MESSAGE",
        "AcpProvider",
        "AcpRunSpec",
        "SpawnFn",
        "start_acp_run",
    ]
