"""Opening a file the host wrote under its state directory: only a regular file, never blocking, never unbounded.

Something else may have put a FIFO, a device or a symlink where the host keeps a session file, a run's stderr tail or
a batch's ``results.jsonl``. A plain ``open()`` of a FIFO blocks until a writer appears (on the event loop that
hangs the host; in a worker thread it holds the thread), and a symlink to ``/dev/zero`` reads without end. So:

* ``open_regular`` opens with ``O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW`` (a FIFO opens at once, a symlink
  in the last component is refused: the host never writes one there), checks with ``fstat`` that it is a regular
  file and refuses anything else with ``NotRegularFileError``. ``O_NONBLOCK`` stays set: it changes nothing for a
  regular file's reads (Linux), and clearing it would cost two more system calls per open;
* ``read_regular`` reads such a file whole, refusing one over its ``limit`` with ``FileTooLargeError``.

Both errors are ``OSError``s, so a reader's existing ``except OSError`` treats the file as unreadable. User inputs
that may legitimately be pipes (the config file, a batch's tasks file, token files) do not come through here.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from typing import BinaryIO, Final

__all__ = [
    "FileTooLargeError",
    "NotRegularFileError",
    "create_temporary",
    "open_regular",
    "open_regular_fd",
    "read_regular",
    "write_file_atomically",
]

_CREATE_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_PRIVATE_MODE: Final = 0o600


class NotRegularFileError(OSError):
    """The path names a symlink, a FIFO, a device, a directory or a socket, not a regular file."""


class FileTooLargeError(OSError):
    """A file read whole holds more than the reader's bound."""


def open_regular_fd(
    path: str | os.PathLike[str], *, flags: int = os.O_RDONLY, mode: int = _PRIVATE_MODE, name: str | None = None
) -> int:
    """A descriptor of ``path`` opened with ``flags`` (read-only by default; ``mode`` when ``O_CREAT`` creates it),
    always ``O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC``, if it is a regular file and not a symlink (the caller closes it).
    ``O_NONBLOCK`` stays set (it changes nothing for a regular file). ``name`` prefixes the refusal's text
    (``results.jsonl is a symlink``).

    Raises:
        NotRegularFileError: it is a symlink (``errno.ELOOP``) or something else (``errno.EINVAL``; a FIFO opened for
            writing with no reader: ``errno.ENXIO``, from the open itself).
        OSError: it cannot be opened (``FileNotFoundError``, ``PermissionError``).
    """
    prefix = f"{name} is " if name else ""
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW: the last component is a symlink
            raise NotRegularFileError(errno.ELOOP, f"{prefix}a symlink", os.fspath(path)) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFileError(errno.EINVAL, f"{prefix}not a regular file", os.fspath(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened for buffered binary reading, as ``open_regular_fd`` opens it (the caller closes it).

    Raises:
        NotRegularFileError: it is not a regular file.
        OSError: it cannot be opened.
    """
    fd = open_regular_fd(path)
    try:
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """The whole content of the regular file ``path``, at most ``limit`` bytes.

    Raises:
        FileTooLargeError: it holds more than ``limit`` bytes (``errno.EFBIG``); no more than ``limit + 1`` are read.
        NotRegularFileError: it is not a regular file.
        OSError: it cannot be opened or read.
    """
    with open_regular(path) as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        raise FileTooLargeError(errno.EFBIG, f"larger than {limit} bytes", os.fspath(path))
    return data


def create_temporary(directory: str | os.PathLike[str], name: str) -> tuple[int, str]:
    """A new private file ``<directory>/.<name>.<random>.tmp`` for a write that ``os.replace`` then publishes as
    ``name``: created 0600 with ``O_EXCL | O_NOFOLLOW``, so nothing already there (a stale temporary, a planted
    symlink or FIFO) is ever opened, followed or truncated. Returns the write descriptor and the path (the caller
    closes the one and replaces or removes the other).

    Raises:
        OSError: the file cannot be created.
    """
    while True:
        path = os.path.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(path, _CREATE_FLAGS, _PRIVATE_MODE)
        except FileExistsError:  # 48 random bits taken: draw again
            continue
        try:
            os.fchmod(fd, _PRIVATE_MODE)  # the umask may have masked the mode
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise
        return fd, path


def write_file_atomically(directory: str | os.PathLike[str], name: str, data: bytes) -> None:
    """Publish ``data`` as ``<directory>/<name>`` (0600) whole or not at all: written to a ``create_temporary`` file,
    then ``os.replace``-d over ``name``; the temporary is removed when anything fails.

    Raises:
        OSError: it could not be written.
    """
    fd, temporary = create_temporary(directory, name)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(temporary, os.path.join(directory, name))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
