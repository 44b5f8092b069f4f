"""``python -m host``: the ``subagent-host`` command line (see ``subagent_host_cli``)."""

from __future__ import annotations

from subagent_host_cli import main

if __name__ == "__main__":
    main()
