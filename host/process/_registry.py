"""Every process tree the host still owns, and the ``atexit`` hook that SIGKILLs them synchronously.

A tree is registered at spawn and forgotten once its absence was observed, so an interpreter exit that skipped
teardown still leaves no child behind.
"""

from __future__ import annotations

import atexit
import threading

from host.process._tree import ProcessTree

__all__ = ["forget_tree", "kill_owned_trees", "register_tree"]

_owned: dict[int, ProcessTree] = {}
_lock = threading.Lock()
_hook_installed = False


def register_tree(tree: ProcessTree) -> None:
    """Own ``tree`` until :func:`forget_tree`; installs the ``atexit`` hook on first use."""
    global _hook_installed
    with _lock:
        _owned[tree.pgid] = tree
        if not _hook_installed:
            atexit.register(kill_owned_trees)
            _hook_installed = True


def forget_tree(tree: ProcessTree) -> None:
    """Stop owning ``tree`` (its absence was observed)."""
    with _lock:
        if _owned.get(tree.pgid) is tree:
            del _owned[tree.pgid]


def kill_owned_trees() -> None:
    """SIGKILL every tree still owned, synchronously (the ``atexit`` hook)."""
    with _lock:
        trees = list(_owned.values())
        _owned.clear()
    for tree in trees:
        tree.kill_now()
