"""Test child: ignore stdin entirely and sleep until signalled (an EOF-deaf child with default SIGTERM)."""

from __future__ import annotations

import time

while True:
    time.sleep(3600)
