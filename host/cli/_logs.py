"""Host logging for the CLI: ``--log-level`` / ``$SUBAGENT_HOST_LOG_LEVEL`` and ``--log-format text|json``.

Log lines go to stderr through the CLI's ordered ``Output``, so one never shares a line with streamed text.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Final

from host.cli._output import Output

__all__ = ["install_logging"]

_LEVELS: Final = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


class _OutputHandler(logging.Handler):
    def __init__(self, output: Output, *, as_json: bool) -> None:
        super().__init__()
        self._output = output
        self._as_json = as_json

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self._as_json:
                line = json.dumps(
                    {
                        "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
                        + f".{int(record.msecs):03d}Z",
                        "level": record.levelname.lower(),
                        "logger": record.name,
                        "message": record.getMessage(),
                        **(
                            {"exception": logging.Formatter().formatException(record.exc_info)}
                            if record.exc_info
                            else {}
                        ),
                    }
                )
            else:
                line = self.format(record)
            self._output.err(line + "\n")
        except Exception:  # a log line must never break a run
            self.handleError(record)


def install_logging(output: Output, *, level: str, log_format: str) -> None:
    """Route the ``host`` logger (and warnings of libraries) to stderr at ``level``."""
    handler = _OutputHandler(output, as_json=log_format == "json")
    handler.setFormatter(logging.Formatter("subagent-host: %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(_LEVELS[level])
