"""``host.jsonrpc`` exports exactly its contract."""

from __future__ import annotations

import host.jsonrpc


def test_jsonrpc_exports_exactly_the_peer_contract() -> None:
    assert host.jsonrpc.__all__ == ["CloseReason", "JsonRpcPeer", "MAX_LINE_BYTES", "RequestHandler", "RequestId"]
    public = {name for name in vars(host.jsonrpc) if not name.startswith("_") and name != "annotations"}
    assert public == set(host.jsonrpc.__all__)
