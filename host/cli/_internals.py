"""The one seam through which ``run``'s modules use host internals that are not public API (docs/design.md).

Each name is shared with other layers, so it cannot move into ``host.cli``, and none is sensible for a library user:
``format_ms`` (a millisecond count printed as a JSON number would be, as in the host's own timeout texts),
``scrubbed_names`` (which host variables the child environment scrub removes: names only) and ``encode_line`` (the
transcript's line encoding, so ``--stream-json`` prints each record exactly as the file holds it),
``newest_session`` (``run --continue``: the newest session file of a provider in a workspace) and ``open_regular``
(a state file opened only when it is a regular file, never blocking: the failed run's stderr tail).
``tests/cli/test_run_command_imports.py`` pins this list.
"""

from __future__ import annotations

from host._files import open_regular
from host._json import format_ms
from host.process import scrubbed_names
from host.records import encode_line
from host.sessions import newest_session

__all__ = ["encode_line", "format_ms", "newest_session", "open_regular", "scrubbed_names"]
