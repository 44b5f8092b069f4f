"""The teardown graces a shutting-down process allows: a shared cap the ladder consults as it climbs each rung.

A :class:`GraceCap` is bound to a context with :func:`bind_grace_cap`; every task started from that context sees the
same object, so the ladder reads it in whichever task disposes a run (a call, a job, the host's close). Until
:meth:`GraceCap.engage` every rung uses its entry's configured grace, as with no cap at all. Once engaged, a rung
that starts waits at most ``min(configured, cap)``, and a rung already waiting is cut to ``cap`` after its start.
:meth:`GraceCap.cut_eof` ends every EOF rung at once (and makes later ones wait zero), so the tree gets its SIGTERM
now; the SIGTERM → SIGKILL rung is never skipped.
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal

import anyio

__all__ = ["GraceCap", "bind_grace_cap", "eof_rung", "term_grace", "term_rung"]

_Kind = Literal["eof", "term"]


@dataclass(slots=True)
class _Rung:
    kind: _Kind
    started: float
    scope: anyio.CancelScope


class GraceCap:
    """Caps on the EOF and SIGTERM → SIGKILL graces, applied from :meth:`engage` on."""

    def __init__(self, *, eof_ms: float, term_ms: float) -> None:
        """Remember the caps; nothing is capped until :meth:`engage`."""
        self._caps: dict[_Kind, float] = {"eof": eof_ms, "term": term_ms}
        self._engaged = False
        self._eof_cut = False
        self._rungs: list[_Rung] = []

    @property
    def engaged(self) -> bool:
        """Whether :meth:`engage` was called."""
        return self._engaged

    def engage(self) -> None:
        """Cap every rung from now on; a rung already waiting ends ``cap`` after it started (idempotent)."""
        if self._engaged:
            return
        self._engaged = True
        for rung in self._rungs:
            rung.scope.deadline = min(rung.scope.deadline, rung.started + self._caps[rung.kind] / 1000)

    def cut_eof(self) -> None:
        """Engage, end every EOF rung now and make later ones wait zero: each tree gets its SIGTERM at once."""
        self.engage()
        self._eof_cut = True
        for rung in self._rungs:
            if rung.kind == "eof":
                rung.scope.cancel()

    def grace(self, kind: _Kind, configured_ms: float) -> float:
        """The grace a ``kind`` rung starting now waits, in milliseconds."""
        if kind == "eof" and self._eof_cut:
            return 0.0
        return min(configured_ms, self._caps[kind]) if self._engaged else configured_ms

    @contextmanager
    def rung(self, kind: _Kind, configured_ms: float) -> Generator[float]:
        """Run one rung's wait inside: yields its grace now; the block is cancelled when the cap cuts it shorter."""
        scope = anyio.CancelScope()
        rung = _Rung(kind, anyio.current_time(), scope)
        grace_ms = self.grace(kind, configured_ms)
        if kind == "eof" and self._eof_cut:
            scope.cancel()
        self._rungs.append(rung)
        try:
            with scope:
                yield grace_ms
        finally:
            self._rungs.remove(rung)


_bound: ContextVar[GraceCap | None] = ContextVar("subagent_host_grace_cap", default=None)


@contextmanager
def bind_grace_cap(cap: GraceCap) -> Generator[GraceCap]:
    """Make ``cap`` the grace cap of this context and of every task started from it, until the block exits."""
    token = _bound.set(cap)
    try:
        yield cap
    finally:
        _bound.reset(token)


@contextmanager
def eof_rung(configured_ms: float) -> Generator[float]:
    """The EOF rung's wait: yields its grace (``configured_ms`` when no cap is bound); see :meth:`GraceCap.rung`."""
    with _rung("eof", configured_ms) as grace_ms:
        yield grace_ms


@contextmanager
def term_rung(configured_ms: float) -> Generator[float]:
    """The SIGTERM → SIGKILL rung's wait: yields its grace; see :meth:`GraceCap.rung`."""
    with _rung("term", configured_ms) as grace_ms:
        yield grace_ms


def term_grace(configured_ms: float) -> float:
    """The signal grace a bound that starts now allows (the reap after SIGKILL, a keeper's sweep)."""
    cap = _bound.get()
    return configured_ms if cap is None else cap.grace("term", configured_ms)


@contextmanager
def _rung(kind: _Kind, configured_ms: float) -> Generator[float]:
    cap = _bound.get()
    if cap is None:
        yield configured_ms
        return
    with cap.rung(kind, configured_ms) as grace_ms:
        yield grace_ms
