"""``host.tools`` and ``host.cancel`` export exactly their sorted public names."""

from __future__ import annotations

import host.cancel
import host.tools


def test_tools_and_cancel_export_every_public_name_and_nothing_else() -> None:
    for module in (host.tools, host.cancel):
        public = {name for name in vars(module) if not name.startswith("_") and name != "annotations"}
        public -= {"timeout_policy"}  # the submodule attribute, importable as host.tools.timeout_policy
        assert set(module.__all__) == public
        assert list(module.__all__) == sorted(module.__all__, key=lambda n: (not n.isupper(), n))
