"""The dashboard's pages, rendered on the server from the derived index, the records and the batch files.

Each function returns a whole HTML page. Every value is escaped by ``_html.text``; live parts (the runs table,
a running transcript, the stderr tail) are filled in by ``static/app.js`` from the JSON and event-stream
endpoints, through ``textContent`` only.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any, Final

from host.ui._batches import BatchView
from host.ui._html import bar_chart, batch_query, histogram_chart, href, page, run_href, session_href, text
from host.ui._index import RunRow

__all__ = [
    "NOT_KEPT",
    "NOT_KEPT_NOTE",
    "batch_page",
    "batches_page",
    "not_found_page",
    "run_page",
    "runs_page",
    "session_page",
    "sessions_page",
]

STATUSES: Final = ("starting", "running", "completed", "error", "aborted", "refusal", "max-tokens", "incomplete")
_FILTERS: Final = ("provider", "status", "session", "batch", "q")
NOT_KEPT: Final = "not kept"
"""The state the sessions page shows for a session known only from its runs' records (it has no session file)."""
NOT_KEPT_NOTE: Final = (
    "No session file: this session was not kept, so it cannot be continued (a batch keeps none for its "
    "shared-workspace items, and an expired session's file is removed). Its facts below come from its runs' records."
)


def _duration(milliseconds: int | None) -> str:
    return "-" if milliseconds is None else f"{milliseconds / 1000:.1f}s"


def _runs_table(rows: Sequence[RunRow], *, batch: str | None, with_session: bool = True) -> str:
    head = "<th>run</th><th>started</th><th>provider</th><th>status</th><th>duration</th>"
    head += "<th>session</th>" if with_session else ""
    head += "<th>task</th>"
    body = "".join(_row(row, batch=batch, with_session=with_session) for row in rows)
    return f'<table class="runs"><thead><tr>{head}</tr></thead><tbody id="runs-body">{body}</tbody></table>'


def _row(row: RunRow, *, batch: str | None, with_session: bool) -> str:
    session = ""
    if with_session:
        session = (
            f'<td><a href="{session_href(row.session_id, batch)}">{text(row.session_id[:10])}</a></td>'
            if row.session_id
            else "<td>-</td>"
        )
    return (
        f'<tr data-run="{text(row.run_id)}"><td><a href="{run_href(row.run_id, batch)}">{text(row.run_id[:8])}</a></td>'
        f"<td>{text(row.start_time or '-')}</td><td>{text(row.provider or '-')}</td>"
        f'<td><span class="status status-{text(row.status)}">{text(row.status)}</span></td>'
        f'<td>{_duration(row.duration_ms)}</td>{session}<td class="task">{text(row.task)}</td></tr>'
    )


def _select(name: str, label: str, options: Sequence[str], chosen: str | None) -> str:
    items = [f'<option value="">any {text(label)}</option>']
    items += [
        f'<option value="{text(option)}"{" selected" if option == chosen else ""}>{text(option)}</option>'
        for option in options
    ]
    return f'<label>{text(label)} <select name="{name}">{"".join(items)}</select></label>'


def runs_page(
    rows: Sequence[RunRow],
    total: int,
    filters: Mapping[str, str | None],
    *,
    providers: Sequence[str],
    batches: Sequence[str],
    link_batch: str | None,
) -> str:
    """The runs page: the filter form, then the newest matching runs (refreshed live by the script); ``link_batch``:
    the subdirectory batch whose runs they are (their links carry it)."""
    form = (
        '<form id="filters" method="get" action="/">'
        + _select("provider", "provider", providers, filters.get("provider"))
        + _select("status", "status", STATUSES, filters.get("status"))
        + _select("batch", "batch", batches, filters.get("batch"))
        + f'<label>session <input name="session" value="{text(filters.get("session") or "")}" size="12"></label>'
        + f'<label>task <input name="q" type="search" value="{text(filters.get("q") or "")}"></label>'
        + '<button type="submit">filter</button></form>'
    )
    data = {name: filters.get(name) or "" for name in _FILTERS} | {"batch-query": batch_query(link_batch)}
    body = (
        f'<h1>Runs</h1>{form}<p class="count"><span id="runs-shown">{len(rows)}</span> of '
        f'<span id="runs-total">{total}</span> runs</p>{_runs_table(rows, batch=link_batch)}'
    )
    return page("Runs", body, page_id="runs", data=data)


def run_page(
    row: RunRow,
    facts: Mapping[str, Any],
    patch_files: Sequence[dict[str, Any]] | None,
    *,
    batch: str | None = None,
    apply_state_dir: str | None = None,
) -> str:
    """One run: header facts, prompt, the live transcript, diagnostic and hints, stderr on demand, changes.

    ``batch``: the subdirectory batch whose runs directory holds the run (its session link and the script's event
    and stderr requests carry it); ``apply_state_dir``: the ``--state-dir`` the apply command must name then.
    """
    items = [
        ("run", row.run_id),
        ("provider", f"{row.provider or '-'} ({facts.get('kind') or '-'})"),
        ("cwd", facts.get("cwd") or "-"),
        ("started", row.start_time or "-"),
    ]
    facts_html = "".join(f"<dt>{text(name)}</dt><dd>{text(value)}</dd>" for name, value in items)
    session = row.session_id
    session_html = f'<a href="{session_href(session, batch)}">{text(session)}</a>' if session else "-"
    facts_html += f'<dt>session</dt><dd id="run-session">{session_html}</dd>'
    facts_html += f'<dt>status</dt><dd><span id="run-status" class="status status-{text(row.status)}">'
    facts_html += (
        f'{text(row.status)}</span></dd><dt>duration</dt><dd id="run-duration">{_duration(row.duration_ms)}</dd>'
    )
    body = [
        f'<h1>Run {text(row.run_id[:8])}</h1><dl class="facts">{facts_html}</dl>',
        '<section><h2>Prompt</h2><pre id="prompt" class="prompt"></pre></section>',
        '<section><h2>Transcript</h2><div id="transcript" class="transcript"></div></section>',
        '<section id="outcome" hidden><h2>Outcome</h2><p id="diagnostic" class="diagnostic"></p>'
        '<ul id="hints" class="hints"></ul></section>',
        '<section><details id="stderr"><summary>stderr tail</summary><pre id="stderr-text"></pre></details></section>',
    ]
    if patch_files is not None:
        body.append(_changes(row.run_id, patch_files, apply_state_dir))
    data = {"run": row.run_id, "batch-query": batch_query(batch)}
    return page(f"Run {row.run_id[:8]}", "".join(body), page_id="run", data=data)


def _changes(run_id: str, files: Sequence[dict[str, Any]], state_dir: str | None) -> str:
    sections: list[str] = []
    for changed in files:
        lines = "".join(f'<span class="diff-{kind}">{text(line)}</span>\n' for kind, line in changed["lines"])
        sections.append(
            f'<details class="file" open><summary>{text(changed["path"])}</summary>'
            f'<pre class="diff">{lines}</pre></details>'
        )
    state_option = f"--state-dir {shlex.quote(state_dir)} " if state_dir is not None else ""
    command = f"subagent-host runs apply {state_option}{run_id}"
    return (
        f'<section id="changes"><h2>Changes</h2><p>Apply them to the parent\'s working tree with '
        f"<code>{text(command)}</code> (or the <code>changes_apply</code> tool).</p>{''.join(sections)}</section>"
    )


def sessions_page(sessions: Sequence[Mapping[str, Any]], *, batch: str | None = None) -> str:
    """Every session: id, provider, state, turns, last used; ``batch``: the subdirectory batch they belong to."""
    rows = "".join(
        f'<tr><td><a href="{session_href(s["session_id"], batch)}">{text(s["session_id"][:12])}</a></td>'
        f"<td>{text(s.get('provider') or '-')}</td><td>{text(s.get('state') or '-')}</td>"
        f"<td>{text(s.get('turns', 0))}</td><td>{text(s.get('last_used') or '-')}</td></tr>"
        for s in sessions
    )
    table = (
        '<table class="sessions"><thead><tr><th>session</th><th>provider</th><th>state</th><th>turns</th>'
        f"<th>last used</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    empty = "" if sessions else '<p class="empty">no sessions recorded</p>'
    title = f"Sessions of batch {text(batch)}" if batch is not None else "Sessions"
    return page("Sessions", f"<h1>{title}</h1>{table}{empty}", page_id="sessions")


def session_page(
    session_id: str,
    meta: Mapping[str, Any],
    turns: Sequence[RunRow],
    *,
    kept: bool,
    batch: str | None = None,
    fork_source: tuple[str, bool] | None = None,
) -> str:
    """One session's turns, in order, each linking to its run; ``kept=False``: the session has no file (its facts
    come from its turns' records), and the page says it cannot be continued; ``batch``: the subdirectory batch whose
    records hold it (the run links carry it); ``fork_source``: the id of the session it was forked from (checked
    against ``NAME_PATTERN``) and whether the state directory still knows that session (then it is a link)."""
    facts = "".join(
        f"<dt>{text(name)}</dt><dd>{text(meta.get(name, '-'))}</dd>"
        for name in ("provider", "state", "cwd", "created", "last_used")
        if name in meta
    )
    if fork_source is not None:  # a session id the state directory knows: a link (one it no longer knows: text)
        source, known = fork_source
        shown = f'<a href="{session_href(source, batch)}">{text(source[:12])}</a>' if known else text(source)
        facts += f'<dt>forked from</dt><dd id="session-fork-source">{shown}</dd>'
    items = "".join(
        f'<li><a href="{run_href(row.run_id, batch)}">turn {row.turn or i}: {text(row.run_id[:8])}</a> '
        f'<span class="status status-{text(row.status)}">{text(row.status)}</span> {text(row.task)}</li>'
        for i, row in enumerate(turns, start=1)
    )
    note = "" if kept else f'<p id="session-not-kept" class="note">{text(NOT_KEPT_NOTE)}</p>'
    body = f'<h1>Session {text(session_id[:12])}</h1>{note}<dl class="facts">{facts}</dl><ol class="turns">{items}</ol>'
    return page("Session", body, page_id="session")


def batches_page(names: Sequence[str]) -> str:
    """Every batch found in the state directory."""
    items = "".join(f'<li><a href="{href("/batch", {"name": name})}">{text(name)}</a></li>' for name in names)
    empty = "" if names else '<p class="empty">no batch (a results.jsonl) in this state directory</p>'
    return page("Batches", f"<h1>Batches</h1><ul>{items}</ul>{empty}", page_id="batches")


def batch_page(view: BatchView) -> str:
    """A batch: progress, stop reasons, the duration histogram, the slowest and the failed items, linking to their
    runs (with the batch as a parameter when it is a subdirectory, whose own ``runs/`` holds them)."""
    batch = None if view.name == "." else view.name
    total = f" of {view.total}" if view.total is not None else ""
    wall = f"; wall time {_duration(view.wall_ms)}" if view.wall_ms is not None and not view.running else ""
    state = " (running)" if view.running else ""
    progress = ""
    if view.total:
        progress = f'<progress id="batch-progress" max="{view.total}" value="{view.done}"></progress>'
    slowest = "".join(_item_row(item, batch) for item in view.slowest)
    failed = "".join(
        _item_row(item, batch)
        + f'<tr class="diag"><td colspan="4">{text(item["diagnostic"] or item["error_code"] or "-")}</td></tr>'
        for item in view.failed
    )
    head = "<thead><tr><th>item</th><th>run</th><th>stop reason</th><th>duration</th></tr></thead>"
    body = (
        f'<h1>Batch {text(view.name)}</h1><p class="count">{view.done}{total} items done{state}{wall}</p>{progress}'
        f'<p><a id="batch-runs" href="{href("/", {"batch": view.name})}">its runs</a></p>'
        f"<section><h2>Stop reasons</h2>{bar_chart(view.counts, label='items by stop reason')}</section>"
        f"<section><h2>Durations</h2>{histogram_chart(view.histogram, label='item durations')}</section>"
        f'<section><h2>Slowest</h2><table class="items">{head}<tbody>{slowest}</tbody></table></section>'
        f'<section><h2>Failed ({len(view.failed)})</h2><table class="items failed">{head}<tbody>{failed}</tbody>'
        "</table></section>"
    )
    return page(f"Batch {view.name}", body, page_id="batch", data={"batch": view.name})


def _item_row(item: Mapping[str, Any], batch: str | None) -> str:
    run_id = item.get("run_id")
    run = f'<a href="{run_href(run_id, batch)}">{text(run_id[:8])}</a>' if isinstance(run_id, str) else "-"
    return (
        f"<tr><td>{text(item['id'])}</td><td>{run}</td><td>{text(item['stop_reason'])}</td>"
        f"<td>{_duration(item.get('duration_ms'))}</td></tr>"
    )


def not_found_page(what: str) -> str:
    """The page for an unknown run, session or batch."""
    return page("Not found", f'<h1>Not found</h1><p>{text(what)}</p><p><a href="/">all runs</a></p>', page_id="none")
