"""Atomic file writes, the one implementation used by records, nets, shards, checkpoints and runs.

A write goes to a temporary file in the target's directory, is flushed and ``fsync``-ed, keeps the
target's permissions, and replaces the target with ``os.replace``; the directory is then ``fsync``-ed
(best effort) so the rename survives a crash. On any failure the temporary file is removed and an
existing target is left untouched. Raises ``OSError`` with ``filename`` set to the target (a full
disk says which file could not be written), or whatever ``write`` raises.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable


def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], object]) -> Path:
    """Atomically create or replace ``path`` with what ``write(binary_file)`` writes; returns the path."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        mode = target.stat().st_mode & 0o777 if target.exists() else 0o644
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        if exc.filename is None or str(exc.filename).endswith(".tmp"):
            raise _naming(exc, target) from exc
        raise
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename in (None, tmp):
            raise _naming(exc, target) from exc
        raise
    _fsync_directory(directory)
    return target


def _naming(exc: OSError, target: Path) -> OSError:
    """``exc`` as an ``OSError`` of the same type and errno whose ``filename`` is the target (the
    error may have come from the temporary file, ``fsync`` or ``os.replace``, naming nothing useful)."""
    try:
        return type(exc)(exc.errno, exc.strerror or str(exc), str(target))
    except TypeError:  # an OSError subclass with another constructor
        return OSError(exc.errno, exc.strerror or str(exc), str(target))


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Atomically write ``data`` to ``path``."""
    return atomic_write(path, lambda f: f.write(data))


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Atomically write ``text`` to ``path`` as UTF-8 with ``\\n`` line ends."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def _fsync_directory(directory: Path) -> None:
    """Make the rename durable where the OS allows it (best effort)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
