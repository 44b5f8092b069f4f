"""HTML building blocks for the dashboard: escaping, the page frame, links and the SVG charts.

Every string that reaches a page goes through ``text`` (HTML-escaped, quotes included, and control characters,
line separators, bidi overrides and lone surrogates shown as visible ``\\xNN`` / ``\\uNNNN`` escapes, as on a
terminal), so a child's ``<script>``,
``onerror=`` or ``javascript:`` is shown as text and never parsed. Links are built only from host facts (run ids
from the directory listing, batch names from the state directory's listing), every path segment and query value
URL-encoded, then HTML-escaped. The page loads one script and one stylesheet from ``/static/``; no inline script or
style exists, so the CSP can forbid both.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping
from typing import Final
from urllib.parse import quote, urlencode

__all__ = ["bar_chart", "batch_query", "histogram_chart", "href", "page", "run_href", "session_href", "text"]

_CONTROL: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAV: Final = (("/", "Runs"), ("/sessions", "Sessions"), ("/batches", "Batches"))


def _escape_control(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def text(value: object) -> str:
    """``value`` as safe HTML text: control characters made visible, then HTML-escaped (quotes too)."""
    return html.escape(_CONTROL.sub(_escape_control, str(value)), quote=True)


def href(path: str, params: Mapping[str, str | None] | None = None) -> str:
    """An attribute-safe URL: ``path`` (host-built) with its ``params`` URL-encoded (empty ones dropped)."""
    query = urlencode({k: v for k, v in (params or {}).items() if v}) if params else ""
    return text(f"{path}?{query}" if query else path)


def batch_query(batch: str | None) -> str:
    """``batch=<name>`` URL-encoded (pure ASCII, safe in an attribute as it is), or empty for no batch: what the
    script appends to the run and session URLs it builds."""
    return urlencode({"batch": batch}) if batch else ""


def run_href(run_id: str, batch: str | None = None) -> str:
    """The run page of ``run_id``; ``batch``: the subdirectory batch whose runs directory holds it."""
    return href("/runs/" + quote(run_id, safe=""), {"batch": batch})


def session_href(session_id: str, batch: str | None = None) -> str:
    """The session page of ``session_id``; ``batch``: the subdirectory batch whose records name it."""
    return href("/sessions/" + quote(session_id, safe=""), {"batch": batch})


def page(title: str, body: str, *, page_id: str, data: Mapping[str, str] | None = None) -> str:
    """A whole page: the frame, ``body`` (already safe HTML) and ``data-*`` attributes the script reads."""
    attributes = "".join(f' data-{name}="{text(value)}"' for name, value in (data or {}).items())
    nav = " ".join(f'<a href="{path}">{label}</a>' for path, label in _NAV)
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{text(title)} · subagent-host</title>"
        '<link rel="stylesheet" href="/static/app.css"><script src="/static/app.js" defer></script>'
        f'</head><body data-page="{text(page_id)}"{attributes}>'
        f"<header><strong>subagent-host</strong> <nav>{nav}</nav></header><main>{body}</main></body></html>\n"
    )


def bar_chart(counts: Mapping[str, int], *, label: str) -> str:
    """A horizontal SVG bar chart of ``counts`` (names are escaped; no style attributes)."""
    if not counts:
        return '<p class="empty">nothing yet</p>'
    top = max(counts.values()) or 1
    row, width, name_width = 24, 420, 140
    bars: list[str] = []
    for i, (name, count) in enumerate(counts.items()):
        y = i * row
        length = max(1, round((width - name_width - 60) * count / top))
        bars.append(
            f'<text x="0" y="{y + 16}" class="label">{text(name)}</text>'
            f'<rect x="{name_width}" y="{y + 4}" width="{length}" height="{row - 8}" class="bar bar-{_css(name)}"/>'
            f'<text x="{name_width + length + 6}" y="{y + 16}" class="count">{count}</text>'
        )
    height = row * len(counts)
    return (
        f'<svg class="chart" role="img" aria-label="{text(label)}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">{"".join(bars)}</svg>'
    )


def histogram_chart(bins: Iterable[tuple[float, float, int]], *, label: str) -> str:
    """An SVG histogram of ``(from_ms, to_ms, count)`` bins."""
    bins = list(bins)
    if not bins:
        return '<p class="empty">nothing yet</p>'
    top = max(count for _, _, count in bins) or 1
    width, height, axis = 480, 160, 20
    column = width / len(bins)
    shapes: list[str] = []
    for i, (low, high, count) in enumerate(bins):
        bar = round((height - axis - 14) * count / top)
        x = round(i * column, 1)
        shapes.append(
            f'<rect x="{x}" y="{height - axis - bar}" width="{round(column - 2, 1)}" height="{bar}" class="bar">'
            f"<title>{_seconds(low)}–{_seconds(high)}: {count}</title></rect>"
        )
        if count:
            shapes.append(f'<text x="{x + 2}" y="{height - axis - bar - 3}" class="count">{count}</text>')
    first, last = bins[0][0], bins[-1][1]
    shapes.append(f'<text x="0" y="{height - 4}" class="label">{_seconds(first)}</text>')
    shapes.append(f'<text x="{width - 60}" y="{height - 4}" class="label">{_seconds(last)}</text>')
    return (
        f'<svg class="chart" role="img" aria-label="{text(label)}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">{"".join(shapes)}</svg>'
    )


def _seconds(milliseconds: float) -> str:
    return f"{milliseconds / 1000:.1f}s"


def _css(name: str) -> str:
    return re.sub(r"[^a-z0-9-]", "-", name.lower())[:32]
