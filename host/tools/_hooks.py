"""``Hooks``: the registry's ordered callback sets, each registration with its own idempotent remover."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Hooks"]

T = TypeVar("T")


class Hooks(Generic[T]):
    """An ordered set of callbacks; each registration gets its own idempotent remover."""

    __slots__ = ("_items", "_next_key")

    def __init__(self) -> None:
        self._items: dict[int, T] = {}
        self._next_key = 0

    def add(self, item: T) -> Callable[[], None]:
        key = self._next_key
        self._next_key += 1
        self._items[key] = item

        def remove() -> None:
            self._items.pop(key, None)

        return remove

    def snapshot(self) -> tuple[T, ...]:
        return tuple(self._items.values())
