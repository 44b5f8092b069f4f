"""The ``--help`` texts that are more than one line: each command's own exit statuses and the lookups it uses.

Every command lists only the exit statuses it can return (``runs list --help`` does not list ``runs show``'s).
Constants only: imported by the parser, never by ``--version``.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "BATCH_EPILOG",
    "CHECK_EPILOG",
    "PROVIDERS_EPILOG",
    "RUNS_EPILOG",
    "RUNS_LIST_EPILOG",
    "RUNS_APPLY_EPILOG",
    "RUNS_PRUNE_EPILOG",
    "RUNS_SHOW_EPILOG",
    "RUN_EPILOG",
    "SERVE_EPILOG",
    "SESSIONS_EPILOG",
    "TOP_EPILOG",
    "UI_EPILOG",
]

_CONFIG_LOOKUP: Final = """\
config lookup: --config, $SUBAGENT_HOST_CONFIG (must exist), ./subagent-host.toml then each parent directory,
the user config file (config.toml in the user config dir), then the built-in echo provider.
"""
_STATE_DIR: Final = (
    "run records: --state-dir, then $SUBAGENT_HOST_STATE_DIR, then the user state directory (runs/ under it).\n"
)
_SIGNALS: Final = "  129  SIGHUP, 130 SIGINT, 143 SIGTERM"

TOP_EPILOG: Final = (
    """\
exit status: each command's --help lists its own. A usage error is one line on stderr, then
try 'subagent-host <command> --help', and exit status 2.

"""
    + _CONFIG_LOOKUP
    + _STATE_DIR
)
RUN_EPILOG: Final = (
    """\
exit status:
  0    completed
  1    error, remote cancel, or startup failure
  2    usage or config error
  3    refusal
  4    max-tokens
  124  the entry's timeout_ms (or --timeout-ms) expired; the child was torn down
  129  SIGHUP  (like SIGINT and SIGTERM: the result is printed at once, then the child is torn down)
  130  SIGINT
  141  stdout was closed or broken
  143  SIGTERM

provider: --provider, then [host] default_provider, then the only configured entry, then the entry named echo.
"""
    + _CONFIG_LOOKUP
    + _STATE_DIR
)
PROVIDERS_EPILOG: Final = (
    """\
exit status:
  0  listed
  2  usage or config error

"""
    + _CONFIG_LOOKUP
)
CHECK_EPILOG: Final = (
    """\
exit status:
  0    every check passed
  1    a check failed (an entry whose env needs an unset variable fails alone; the others are still checked)
  2    usage or config error
"""
    + _SIGNALS
    + "\n\n"
    + _CONFIG_LOOKUP
)
SESSIONS_EPILOG: Final = """\
exit status:
  0  success
  1  sessions show/close: no session has that id
  2  usage error

sessions: --state-dir, then $SUBAGENT_HOST_STATE_DIR, then the user state directory (sessions/ under it).
"""
RUNS_EPILOG: Final = (
    """\
exit status: 0 success, 1 runs show: no run id starts with RUN_ID or several do, 2 usage or configuration error;
each action's --help lists its own.

"""
    + _STATE_DIR
)
RUNS_LIST_EPILOG: Final = (
    """\
exit status:
  0  success
  2  usage or configuration error

"""
    + _STATE_DIR
)
RUNS_SHOW_EPILOG: Final = (
    """\
exit status:
  0    success (--follow: the run ended, or its writer stopped without run/end and it is incomplete)
  1    no run id starts with RUN_ID, or several do
  2    usage or configuration error
"""
    + _SIGNALS
    + """: --follow stopped following (the run itself goes on)
  141  --follow: stdout was closed or broken

"""
    + _STATE_DIR
)
RUNS_APPLY_EPILOG: Final = (
    """\
exit status:
  0  applied (--check: it applies)
  1  no kept changes match RUN_ID, or several do; or a conflict (nothing was applied; the paths are listed)
  2  usage or configuration error

"""
    + _STATE_DIR
)
RUNS_PRUNE_EPILOG: Final = (
    """\
exit status:
  0  success
  2  usage or configuration error

"""
    + _STATE_DIR
)
SERVE_EPILOG: Final = (
    """\
exit status:
  0    shut down cleanly (stdin EOF, SIGTERM, SIGINT or SIGHUP): every run and job was torn down
  2    usage or config error
"""
    + _SIGNALS
    + """: received before serving started (nothing was served)

"""
    + _STATE_DIR
)
UI_EPILOG: Final = (
    """\
exit status:
  0    stopped cleanly (SIGINT, SIGTERM or SIGHUP)
  2    usage error (a bad address or token file; a non-loopback address without --auth-token-file)
"""
    + _SIGNALS
    + """: received before serving started

state directory: --state-dir, then $SUBAGENT_HOST_STATE_DIR, then the user state directory.
The dashboard is read-only: it never changes records, worktrees or processes.
"""
)
BATCH_EPILOG: Final = (
    """\
input: one JSON object per line: {"id": "<unique>", "task": "<text>", "provider"?: "<entry>", "cwd"?: "<dir>",
"label"?: "<text>", "timeout_ms"?: <int>, "workspace"?: "shared" | "worktree"}; blank lines are skipped. A bad
line, a duplicate id or an unknown provider fails with exit 2 before anything runs. Worktree items keep their
changes under OUTDIR (on Ray too; the branch lives in the repository on the worker's node): `subagent-host runs
apply --state-dir OUTDIR RUN_ID` applies one.

output, under OUTDIR (the batch's state directory: `subagent-host runs list --state-dir OUTDIR` works):
  results.jsonl  one line per finished item, appended as it finishes (a resume skips the ids it holds)
  runs/          every item's run record, stderr tail, and a worktree run's patch and changes file
  summary.json   counts by stop reason, durations, failed ids with diagnostics, wall time

exit status:
  0    every selected item completed
  1    an item did not complete (or is still pending)
  2    usage, config or input error (nothing ran)
  129  SIGHUP, 130 SIGINT, 143 SIGTERM: nothing more started, running items were cancelled (no result line:
       a resume runs them again), the summary was written
"""
    + _CONFIG_LOOKUP
)
