"""The dashboard's Starlette app: read-only routes over the state directory, and its security envelope.

Routes: ``/`` (runs), ``/api/runs`` (the runs as JSON), ``/runs/{id}``, ``/api/runs/{id}/events`` (the transcript
as server-sent events, tailing the file every ``TAIL_INTERVAL_S`` until ``run/end``), ``/api/runs/{id}/stderr``,
``/sessions``, ``/sessions/{id}``, ``/batches``, ``/batch?name=``, ``/static/app.js`` and ``/static/app.css``.
A batch ``OUTDIR`` below the state directory keeps its own ``runs/`` and ``sessions/``: the run and session routes
take ``?batch=<name>`` to read there (``records_dir``: a name ``find_batches`` lists, else 404; none or ``.``: the
state directory), and the runs list filtered by such a batch lists it from its own index (``RunIndexes``).
No route writes anything. ``_Guard`` wraps every request: the Host header must be one the server answers to (DNS
rebinding), a token (when configured) must come as ``Authorization: Bearer`` or the cookie set by visiting
``/?token=…`` once, compared in constant time; every response carries a strict CSP and no-sniff headers.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import AsyncIterator, Collection
from importlib import resources
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qsl, urlencode

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from host._text import encode_json
from host.records import TranscriptTail
from host.ui._batches import RecordsDir, ResultsCache, find_batches, load_batch, records_dir
from host.ui._index import RunFilter, RunIndex, RunIndexes, RunRow
from host.ui._pages import (
    NOT_KEPT,
    batch_page,
    batches_page,
    not_found_page,
    run_page,
    runs_page,
    session_page,
    sessions_page,
)
from host.ui._reads import (
    NAME_PATTERN,
    read_patch_files,
    read_run_facts,
    read_sessions,
    read_stderr,
    transcript_path,
)

__all__ = ["CSP", "TAIL_INTERVAL_S", "TOKEN_COOKIE", "create_app"]

TAIL_INTERVAL_S: Final = 0.1
"""How often a live transcript is polled for new records (the stream lags a write by at most this, plus I/O)."""
PAGE_ROWS: Final = 200
"""How many runs the runs page and ``/api/runs`` return at most per request."""
TOKEN_COOKIE: Final = "subagent_host_ui_token"
CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
_SECURITY_HEADERS: Final = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
)
_KEEPALIVE_S: Final = 15.0
_STATIC: Final = {"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8"}


class _Guard:
    """Host check, token check and the security headers around the whole app."""

    def __init__(self, app: ASGIApp, *, allowed_hosts: Collection[str] | None, token: str | None) -> None:
        self._app = app
        self._allowed_hosts = None if allowed_hosts is None else {host.lower() for host in allowed_hosts}
        self._token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = {name.lower(): value for name, value in scope["headers"]}

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *_SECURITY_HEADERS]}
            await send(message)

        host = headers.get(b"host", b"").decode("latin-1").lower()
        if self._allowed_hosts is not None and host not in self._allowed_hosts:
            await PlainTextResponse("invalid Host header\n", status_code=421)(scope, receive, secured)
            return
        if self._token is not None:
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
            offered = query.get("token")
            if offered is not None and _same(offered, self._token):
                await _set_cookie_and_redirect(scope, query, self._token, secured)
                return
            if not self._authorised(headers):
                response = PlainTextResponse("unauthorized\n", status_code=401, headers={"WWW-Authenticate": "Bearer"})
                await response(scope, receive, secured)
                return
        await self._app(scope, receive, secured)

    def _authorised(self, headers: dict[bytes, bytes]) -> bool:
        assert self._token is not None
        authorization = headers.get(b"authorization", b"").decode("latin-1")
        if authorization.startswith("Bearer ") and _same(authorization[len("Bearer ") :], self._token):
            return True
        for part in headers.get(b"cookie", b"").decode("latin-1").split(";"):
            name, _, value = part.strip().partition("=")
            if name == TOKEN_COOKIE and _same(value, self._token):
                return True
        return False


def _same(offered: str, token: str) -> bool:
    return hmac.compare_digest(offered.encode("utf-8", "replace"), token.encode("utf-8"))


async def _set_cookie_and_redirect(scope: Scope, query: dict[str, str], token: str, send: Send) -> None:
    rest = {name: value for name, value in query.items() if name != "token"}
    # Same-origin only: a path such as ``//elsewhere/`` or ``/\\elsewhere`` would be read as another host.
    path = "/" + str(scope["path"]).lstrip("/\\")
    location = path + ("?" + urlencode(rest) if rest else "")
    response = Response(status_code=303, headers={"Location": location})
    response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict", path="/")

    async def no_body() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    await response(scope, no_body, send)


def create_app(state_dir: Path, *, allowed_hosts: Collection[str] | None, token: str | None) -> ASGIApp:
    """The dashboard over ``state_dir``; ``allowed_hosts=None`` accepts any Host (a token is then required)."""
    indexes = RunIndexes(state_dir)  # a subdirectory batch's runs are indexed from its own runs/
    results = ResultsCache()  # a refresh of a batch's pages reads only what its results.jsonl gained
    static = {name: (resources.files("host.ui") / "static" / name).read_bytes() for name in _STATIC}

    def filters_of(request: Request) -> dict[str, str | None]:
        return {
            name: request.query_params.get(name) or None for name in ("provider", "status", "session", "batch", "q")
        }

    def runs_query(filters: dict[str, str | None]) -> tuple[list[RunRow], int, RunIndex, RecordsDir | None]:
        """The runs the filters match: a batch's are those its ``results.jsonl`` names, from its own index."""
        records = records_dir(state_dir, filters["batch"])
        run_ids = None
        if filters["batch"]:
            view = load_batch(state_dir, filters["batch"], results) if records is not None else None
            run_ids = view.run_ids if view is not None else frozenset[str]()
        index = indexes.of(records.path if records is not None else state_dir)
        run_filter = RunFilter(filters["provider"], filters["status"], filters["session"], run_ids, filters["q"])
        rows, total = index.query(run_filter, limit=PAGE_ROWS)
        return rows, total, index, records

    def runs_view(filters: dict[str, str | None]) -> str:
        rows, total, index, records = runs_query(filters)
        link_batch = records.batch if records is not None else None
        batches = find_batches(state_dir)
        return runs_page(rows, total, filters, providers=index.providers(), batches=batches, link_batch=link_batch)

    async def runs(request: Request) -> Response:
        return HTMLResponse(await anyio.to_thread.run_sync(runs_view, filters_of(request)))

    def runs_json(filters: dict[str, str | None]) -> dict[str, Any]:
        rows, total, _index, _records = runs_query(filters)
        return {"schema": 1, "total": total, "runs": [row.as_json() for row in rows]}

    async def api_runs(request: Request) -> Response:
        body = encode_json(await anyio.to_thread.run_sync(runs_json, filters_of(request)))
        return Response(body, media_type="application/json")  # a child's lone surrogate as its \\uXXXX escape

    def run_view(run_id: str, batch: str | None) -> str | None:
        records = records_dir(state_dir, batch)
        path = transcript_path(records.path, run_id) if records is not None else None
        if records is None or path is None:
            return None
        row = next((row for row in indexes.of(records.path).refresh() if row.run_id == run_id), None)
        if row is None:
            return None
        apply_dir = str(records.path) if records.batch is not None else None
        patch = read_patch_files(records.path, run_id)
        return run_page(row, read_run_facts(path), patch, batch=records.batch, apply_state_dir=apply_dir)

    async def run(request: Request) -> Response:
        batch = request.query_params.get("batch")
        body = await anyio.to_thread.run_sync(run_view, request.path_params["run_id"], batch)
        if body is None:
            return HTMLResponse(not_found_page("no recorded run has this id"), status_code=404)
        return HTMLResponse(body)

    def run_transcript(run_id: str, batch: str | None) -> Path | None:
        records = records_dir(state_dir, batch)
        return transcript_path(records.path, run_id) if records is not None else None

    async def events(request: Request) -> Response:
        batch = request.query_params.get("batch")
        path = await anyio.to_thread.run_sync(run_transcript, request.path_params["run_id"], batch)
        if path is None:
            return PlainTextResponse("no such run\n", status_code=404)
        return StreamingResponse(_tail(path), media_type="text/event-stream")

    def run_stderr(run_id: str, batch: str | None) -> str | None:
        records = records_dir(state_dir, batch)
        return read_stderr(records.path, run_id) if records is not None else None

    async def stderr(request: Request) -> Response:
        batch = request.query_params.get("batch")
        tail = await anyio.to_thread.run_sync(run_stderr, request.path_params["run_id"], batch)
        return PlainTextResponse(tail or "", status_code=200 if tail is not None else 404)

    def sessions_view(batch: str | None) -> str | None:
        records = records_dir(state_dir, batch)
        if records is None:
            return None
        return sessions_page(_sessions(indexes.of(records.path), records.path), batch=records.batch)

    async def sessions(request: Request) -> Response:
        body = await anyio.to_thread.run_sync(sessions_view, request.query_params.get("batch"))
        if body is None:
            return HTMLResponse(not_found_page("no batch has this name"), status_code=404)
        return HTMLResponse(body)

    def session_view(session_id: str, batch: str | None) -> str | None:
        records = records_dir(state_dir, batch)
        if records is None or not NAME_PATTERN.fullmatch(session_id):
            return None
        sessions = read_sessions(records.path)
        meta = sessions.get(session_id)
        rows = indexes.of(records.path).refresh()
        turns = [row for row in rows if row.session_id == session_id]
        if meta is None and not turns:
            return None
        turns.sort(key=lambda row: (row.turn if row.turn is not None else 1 << 62, row.started, row.run_id))
        kept = meta is not None
        meta = meta if meta is not None else _meta_of_turns(records.path, turns)
        source, fork_source = meta.get("forked_from"), None
        if isinstance(source, str) and NAME_PATTERN.fullmatch(source):
            fork_source = (source, source in sessions or any(row.session_id == source for row in rows))
        return session_page(session_id, meta, turns, kept=kept, batch=records.batch, fork_source=fork_source)

    async def session(request: Request) -> Response:
        batch = request.query_params.get("batch")
        body = await anyio.to_thread.run_sync(session_view, request.path_params["session_id"], batch)
        if body is None:
            return HTMLResponse(not_found_page("no session has this id"), status_code=404)
        return HTMLResponse(body)

    async def batches(_request: Request) -> Response:
        return HTMLResponse(batches_page(await anyio.to_thread.run_sync(find_batches, state_dir)))

    async def batch(request: Request) -> Response:
        view = await anyio.to_thread.run_sync(load_batch, state_dir, request.query_params.get("name", ""), results)
        if view is None:
            return HTMLResponse(not_found_page("no batch has this name"), status_code=404)
        return HTMLResponse(batch_page(view))

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in static:
            return PlainTextResponse("not found\n", status_code=404)
        return Response(static[name], media_type=_STATIC[name])

    async def no_icon(_request: Request) -> Response:
        return Response(status_code=204)

    routes = [
        Route("/", runs),
        Route("/api/runs", api_runs),
        Route("/runs/{run_id}", run),
        Route("/api/runs/{run_id}/events", events),
        Route("/api/runs/{run_id}/stderr", stderr),
        Route("/sessions", sessions),
        Route("/sessions/{session_id}", session),
        Route("/batches", batches),
        Route("/batch", batch),
        Route("/static/{name}", asset),
        Route("/favicon.ico", no_icon),
    ]
    return _Guard(Starlette(routes=routes), allowed_hosts=allowed_hosts, token=token)


def _sessions(index: RunIndex, state_dir: Path) -> list[dict[str, Any]]:
    """Every session: its file's facts, else what its turns' records say; newest use first."""
    found: dict[str, dict[str, Any]] = {}
    for row in index.refresh():
        if row.session_id is None:
            continue
        entry = found.setdefault(row.session_id, {"session_id": row.session_id, "provider": row.provider, "turns": 0})
        entry["turns"] += 1
        entry.setdefault("last_used", row.start_time)
    for session_id, meta in read_sessions(state_dir).items():
        entry = found.setdefault(session_id, {"session_id": session_id, "turns": 0})
        for name in ("provider", "state", "last_used"):
            if isinstance(meta.get(name), str):
                entry[name] = meta[name]
        turns = meta.get("turns", meta.get("turn_count"))
        if isinstance(turns, int) and not isinstance(turns, bool):
            entry["turns"] = max(entry["turns"], turns)
    for entry in found.values():
        entry.setdefault("state", NOT_KEPT)  # no file: known from its runs only, it cannot be continued
    return sorted(found.values(), key=lambda entry: str(entry.get("last_used") or ""), reverse=True)


def _meta_of_turns(state_dir: Path, turns: list[RunRow]) -> dict[str, Any]:
    """What the records of a session's turns (oldest first) tell of a session that has no file."""
    first = turns[0]
    path = transcript_path(state_dir, first.run_id)
    cwd = read_run_facts(path).get("cwd") if path is not None else None
    meta: dict[str, Any] = {"provider": first.provider or "-", "state": NOT_KEPT}
    if isinstance(cwd, str):
        meta["cwd"] = cwd
    started = sorted(row.start_time for row in turns if row.start_time)
    if started:
        meta["created"], meta["last_used"] = started[0], started[-1]
    return meta


async def _tail(path: Path) -> AsyncIterator[str]:
    """The transcript's records as events, then new ones as they are written, until ``run/end`` (or until the
    writer is gone without one: ``event: end`` either way). Read through ``TranscriptTail``: whole records only,
    bounded memory, a line longer than one read taken over several."""
    try:
        tail = await anyio.to_thread.run_sync(TranscriptTail, path)
    except OSError:
        yield "event: end\ndata: {}\n\n"
        return
    try:
        idle = 0.0
        while True:
            # The lock is probed first: when it was free, everything the writer wrote is in the bytes read after it.
            locked = await anyio.to_thread.run_sync(tail.writer_alive)
            records = await anyio.to_thread.run_sync(tail.read_records)
            for record in records:
                yield f"data: {json.dumps(record, ensure_ascii=True, separators=(',', ':'))}\n\n"
                if record.get("type") == "run/end":
                    yield "event: end\ndata: {}\n\n"
                    return
            if records or not tail.drained:
                idle = 0.0
                continue
            if not locked:
                yield "event: end\ndata: {}\n\n"
                return
            await anyio.sleep(TAIL_INTERVAL_S)
            idle += TAIL_INTERVAL_S
            if idle >= _KEEPALIVE_S:
                idle = 0.0
                yield ": keepalive\n\n"
    finally:
        tail.close()
