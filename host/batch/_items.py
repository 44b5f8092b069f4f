"""Batch items: one JSON object per line of a JSONL file, validated strictly before anything runs.

``read_items`` reads every line first and fails with ``BatchInputError`` (naming the 1-based line number and the
problem) on a bad line, a duplicate id or an unknown provider, so a batch never starts on input it would stop on
half way. Blank lines are skipped. Child-controlled text never appears here: these are the operator's own lines.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from host._exceptions import BatchInputError

__all__ = ["BatchItem", "parse_items", "read_items", "select_slice"]

_MAX_TIMEOUT_MS: Final = 2147483647
_MAX_PROBLEM_CHARS: Final = 200


class BatchItem(BaseModel):
    """One delegation of a batch (one line of the input)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Annotated[StrictStr, Field(min_length=1, max_length=256)]
    """The item's unique id: resume skips the ids already in ``results.jsonl``."""
    task: Annotated[StrictStr, Field(min_length=1)]
    """The complete task text for the child."""
    provider: StrictStr | None = None
    """The provider entry (default: ``--provider``, the only entry, or ``echo``)."""
    cwd: StrictStr | None = None
    """The parent workspace the child works in (default: ``--cwd`` or the working directory)."""
    label: StrictStr | None = None
    """A short label for logs and records."""
    timeout_ms: Annotated[StrictInt, Field(gt=0, le=_MAX_TIMEOUT_MS)] | None = None
    """This item's deadline per attempt (default: ``--timeout-ms``, else the entry's ``timeout_ms``)."""
    workspace: Literal["shared", "worktree"] | None = None
    """``worktree``: the child works in a git worktree of its own and its changes are kept as a patch and a branch
    (default: ``--workspace``, else the entry's ``workspace``)."""


def parse_items(
    lines: Iterable[str | bytes], *, providers: Sequence[str], default_provider: str | None
) -> list[BatchItem]:
    """Validate ``lines`` (one JSON object each, blank lines skipped) into items with their provider resolved.

    Args:
        lines: the input lines (their numbers count every line, blank ones too).
        providers: the configured entry names.
        default_provider: the provider of items that name none (``None``: such an item is an error).

    Raises:
        BatchInputError: a line is not a JSON object, fails validation, repeats an id, names an unknown provider
            or names none while there is no default.
    """
    items: list[BatchItem] = []
    first_line_of: dict[str, int] = {}
    known = set(providers)
    for number, raw in enumerate(lines, start=1):
        text = _decoded(raw, number)
        if not text.strip():
            continue
        item = _parse_line(text, number)
        if item.id in first_line_of:
            raise BatchInputError(f'duplicate id "{_shown(item.id)}" (first on line {first_line_of[item.id]})', number)
        first_line_of[item.id] = number
        provider = item.provider if item.provider is not None else default_provider
        if provider is None:
            raise BatchInputError("no provider: several are configured; set provider or pass --provider", number)
        if provider not in known:
            raise BatchInputError(f'unknown provider "{_shown(provider)}" (configured: {", ".join(providers)})', number)
        if item.provider != provider:
            item = item.model_copy(update={"provider": provider})
        items.append(item)
    return items


def read_items(
    path: str | os.PathLike[str], *, providers: Sequence[str], default_provider: str | None
) -> list[BatchItem]:
    """``parse_items`` over the lines of the UTF-8 file at ``path``.

    Raises:
        BatchInputError: the file cannot be read, or a line is bad (see ``parse_items``).
    """
    try:
        with open(path, "rb") as file:
            return parse_items(file, providers=providers, default_provider=default_provider)
    except OSError as exc:
        raise BatchInputError(f"cannot read {os.fspath(path)}: {exc.strerror or type(exc).__name__}") from exc


def select_slice(items: list[BatchItem], spec: str | None) -> list[BatchItem]:
    """The items of ``START:STOP`` (Python slice bounds over the valid items; either may be empty or negative).

    Raises:
        BatchInputError: ``spec`` is not ``START:STOP`` with integer bounds.
    """
    if spec is None:
        return items
    start_text, colon, stop_text = spec.partition(":")
    try:
        if not colon:
            raise ValueError(spec)
        start = int(start_text) if start_text.strip() else None
        stop = int(stop_text) if stop_text.strip() else None
    except ValueError:
        raise BatchInputError(f"--slice must be START:STOP with integer bounds, not {spec!r}") from None
    return items[start:stop]


def _decoded(raw: str | bytes, number: int) -> str:
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BatchInputError("not valid UTF-8", number) from None


def _parse_line(text: str, number: int) -> BatchItem:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BatchInputError(f"not valid JSON ({exc.msg} at column {exc.colno})", number) from None
    except RecursionError:
        raise BatchInputError("not valid JSON (nested too deeply)", number) from None
    if not isinstance(data, dict):
        raise BatchInputError(f"expected a JSON object, got {_json_kind(data)}", number)
    try:
        return BatchItem.model_validate(data)
    except ValidationError as exc:
        raise BatchInputError(_validation_problem(exc), number) from None


def _validation_problem(error: ValidationError) -> str:
    """The first problem, named by its field: pydantic's message, never the offending value."""
    first = error.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in first["loc"]) or "the object"
    if first["type"] == "extra_forbidden":
        return f'unknown field "{_shown(where)}"'
    if first["type"] == "missing":
        return f'missing field "{where}"'
    return f'field "{where}": {first["msg"]}'


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    return "a number" if isinstance(value, int | float) and not isinstance(value, bool) else "a boolean"


def _shown(text: str) -> str:
    """``text`` as it may appear in a one-line message: printable, bounded."""
    shown = text.encode("unicode_escape").decode("ascii").replace('"', '\\"')
    return shown if len(shown) <= _MAX_PROBLEM_CHARS else shown[:_MAX_PROBLEM_CHARS] + "…"
