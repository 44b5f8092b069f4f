"""The ``subagent-host`` console entry: signals first, then the command line, then (only if needed) ``host``.

SIGINT, SIGTERM and SIGHUP are recorded from the first instant, before ``host`` (anyio, pydantic, the providers) is
imported, so a signal during start-up still ends with the command's promised output and the signal's exit status.
``--version`` imports nothing but ``os`` and ``signal``; ``--help`` adds only ``argparse``. Stdlib only.
"""

from __future__ import annotations

import signal
import sys

from subagent_host_cli import _early

__all__ = ["__version__", "main"]

__version__ = "0.1.0"

_VERSION_ARGV = (["--version"], ["--version", "--json"], ["--json", "--version"])


def main(argv: list[str] | None = None) -> None:
    """The ``subagent-host`` console script: run the command and exit with its status."""
    received = _early.install()
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments in _VERSION_ARGV:
        as_json = "--json" in arguments
        _early.write(
            1, f'{{"schema": 1, "version": "{__version__}"}}\n' if as_json else f"subagent-host {__version__}\n"
        )
        sys.exit(0)
    # What the imports from here to the command build (the parser's modules, then the heavy import of ``host``)
    # lives until exit: no collection runs during them, and it is then frozen, so later collections, and the
    # interpreter's last one at exit, never walk it again.
    import gc

    gc.disable()
    try:
        from subagent_host_cli._parser import parse_command_line

        parsed = parse_command_line(arguments, version=__version__)
        if isinstance(parsed, int):
            sys.exit(parsed)
        if received.first is not None:
            sys.exit(_early.interrupted_before_start(received.first, as_json=parsed.as_json))
        # The heavy import: a signal now is recorded and honoured by the command.
        from host.cli import run_command

        gc.freeze()
    finally:
        gc.enable()

    try:
        status = run_command(parsed.args, received)
    except KeyboardInterrupt:
        # A repeated SIGINT that landed in the instant the event loop handed the handlers back (asyncio restores
        # Python's default_int_handler before the recorder is reinstalled): the command had already reported.
        status = _early.EXIT_BY_SIGNAL[received.first or signal.SIGINT]
    # The status is decided and reported. Interpreter finalization resets Python-level handlers to SIG_DFL, so a
    # late signal would then kill the process with its own status: ignore them for the last instant instead.
    for signum in _early.HANDLED_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    gc.freeze()  # about to exit: the interpreter's last collection need not walk every live object
    if argv is None and parsed.args.command != "serve":
        _exit_without_finalization(status)
    sys.exit(status)


def _exit_without_finalization(status: int) -> None:
    """Exit with ``status``, skipping the interpreter's module teardown, when nothing can be lost by that.

    The ``atexit`` hooks run first (the host's last-resort kill of the trees it still owns, logging's flush and the
    ``weakref.finalize`` hooks), stdout and stderr are flushed, and no thread other than daemons may be alive.
    Returns (to the ordinary ``sys.exit``) when a non-daemon thread is alive or a flush fails: that path then
    reports it exactly as before. Only the console script does this, never ``main(argv)`` called in-process.
    """
    import atexit
    import os
    import threading

    if any(not thread.daemon and thread is not threading.main_thread() for thread in threading.enumerate()):
        return
    if not _flushed():
        return
    atexit._run_exitfuncs()  # pyright: ignore[reportPrivateUsage]
    if _flushed():
        os._exit(status)


def _flushed() -> bool:
    """Flush stdout and stderr (either may be absent); ``False`` if a flush failed."""
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # pyright: ignore[reportUnnecessaryComparison]
                stream.flush()
    except (OSError, ValueError):
        return False
    return True
