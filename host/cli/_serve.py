"""``subagent-host serve``: options and config from the command line, then ``host.server.serve`` to the end.

Exit status: 0 after a clean shutdown, 2 on a usage or config error, 128 + N when signal N arrived before serving
started. Like every command, a config lookup that found no file says so on stderr and serves the built-in echo.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Final

import anyio

from host._exceptions import ConfigError
from host.cli._select import no_config_notice
from host.cli._support import EXIT_BY_SIGNAL
from host.config import load_config
from host.process import adopt_orphans
from host.server import EarlySignal, ServeUsageError, parse_serve_options, serve

__all__ = ["run_serve"]

_EXIT_OK: Final = 0
_EXIT_USAGE: Final = 2


def run_serve(args: argparse.Namespace, *, early_signal: EarlySignal, owns_process: bool = False) -> int:
    """Run ``serve`` to completion and return the exit status (see the module docstring)."""
    logging.basicConfig(level=logging.WARNING, format="subagent-host: %(levelname)s %(name)s: %(message)s")
    try:
        options = parse_serve_options(args)
        config = load_config(options.config)
    except ServeUsageError as exc:
        sys.stderr.write(f"{exc}\n")
        return _EXIT_USAGE
    except ConfigError as exc:
        where = f" (providers.{exc.provider})" if exc.provider is not None else ""
        sys.stderr.write(f"{exc}{where}\n")
        return _EXIT_USAGE
    notice = no_config_notice(config)
    if notice is not None:
        sys.stderr.write(notice)
        sys.stderr.flush()
    if owns_process:
        # A grandchild that setsid()-s away from its parent is adopted and swept before exiting.
        adopt_orphans()
    served = anyio.run(serve, options, config, early_signal)  # False: a signal came before serving started
    if not served:
        received = early_signal()
        assert received is not None
        sys.stderr.write(f"subagent-host: interrupted by {received.name} before serving started\n")
        return EXIT_BY_SIGNAL[received]
    if owns_process:
        # Every run, job and orphan is gone: flush and leave now, without finalizing every module.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_EXIT_OK)
    return _EXIT_OK
