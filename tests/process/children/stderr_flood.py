"""Writes about 10 MiB of numbered lines to stderr, then an unterminated ``last fragment``, then exits 0."""

import sys

LINES = 10 * 1024 * 1024 // 32
out = sys.stderr.buffer
for start in range(0, LINES, 1024):
    out.write(b"".join(b"flood line %024d\n" % n for n in range(start, min(start + 1024, LINES))))
out.write(b"\n\n   \nlast fragment")
out.flush()
