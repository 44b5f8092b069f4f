"""``python -m host``: the ``subagent-host`` command line (see ``host._cli``)."""

from __future__ import annotations

from host._cli import main

if __name__ == "__main__":
    main()
