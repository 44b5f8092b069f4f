"""``subagent-host ui``: a local, read-only web dashboard of the runs, sessions, batches and changes of a state
directory.

Only option parsing is imported here; Starlette and uvicorn are imported when serving starts, so no other command
pays for them. The app (``_app``) reads the records through a derived in-memory index (``_index``), the batch
files (``_batches``) and the other state files (``_reads``); pages are rendered on the server (``_pages``,
``_html``) and their live parts are filled in by ``static/app.js``.
"""

from __future__ import annotations

from host.ui._serve import DEFAULT_UI_ADDRESS, UiOptions, UiUsageError, parse_ui_options, run_ui

__all__ = ["DEFAULT_UI_ADDRESS", "UiOptions", "UiUsageError", "parse_ui_options", "run_ui"]
