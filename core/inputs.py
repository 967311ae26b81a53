"""Bounded reading of user-supplied files and streams: the one implementation every reader uses.

Each read takes at most ``limit + 1`` bytes and refuses the input beyond ``limit``, so a huge file,
``/dev/zero`` or an endless pipe gives an ``InputError`` naming the file instead of filling memory.
Decoding errors name the file, the encoding and the byte offset. ``OSError`` (missing file, no
permission) passes through unchanged; its ``filename`` names the file.

Limits (bytes): ``MAX_RECORD_BYTES`` for a game-record file (JSON, JIU, CSV: a CSV may hold
thousands of games), ``MAX_CONFIG_BYTES`` for a configuration file, ``MAX_LINE_BYTES`` for one line
of a line-oriented input such as a JFEN list (a JFEN is at most about 250 characters).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import IO, BinaryIO

from core.errors import InputError

MAX_RECORD_BYTES = 64 * 2**20
MAX_CONFIG_BYTES = 2**20
MAX_LINE_BYTES = 4096


def read_bytes(path: str | os.PathLike, limit: int, what: str = "file") -> bytes:
    """The bytes of ``path``, at most ``limit`` of them. Raises ``InputError("<path>: <what> larger
    than <limit> bytes")`` beyond it, ``OSError`` if the file cannot be read (e.g. a directory)."""
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"{path}: {what} larger than {limit} bytes; refused")
    return data


def decode(data: bytes, source: str, encodings: Sequence[str] = ("utf-8-sig",)) -> str:
    """``data`` decoded with the first of ``encodings`` that fits. Raises ``InputError`` naming
    ``source`` and where the first encoding failed (binary data, a wrong encoding)."""
    first: UnicodeDecodeError | None = None
    for encoding in encodings:
        try:
            return data.decode(encoding)
        except UnicodeDecodeError as exc:
            first = first or exc
    assert first is not None
    names = " or ".join(e.removesuffix("-sig") for e in encodings)
    raise InputError(f"{source}: not {names} text (byte 0x{data[first.start]:02x} at offset {first.start})")


def read_text(path: str | os.PathLike, limit: int, what: str = "file",
              encodings: Sequence[str] = ("utf-8-sig",)) -> str:
    """:func:`read_bytes` then :func:`decode`."""
    return decode(read_bytes(path, limit, what), str(path), encodings)


def bounded_lines(stream: IO, limit: int) -> Iterator[tuple[int, bytes | str | None]]:
    """``(line number, line)`` of each line of ``stream`` (binary or text; line end kept), each read
    with at most ``limit + 1`` bytes (characters) held in memory. A line longer than ``limit`` gives
    ``None``, yielded as soon as the limit is passed; its rest is read and dropped only when the next
    line is asked for, so an endless line (``/dev/zero``) is reported in bounded memory."""
    n = 0
    while True:
        raw = stream.readline(limit + 1)
        if not raw:
            return
        n += 1
        end = b"\n" if isinstance(raw, bytes) else "\n"
        if len(raw) > limit and not raw.endswith(end):
            yield n, None
            while raw and not raw.endswith(end):
                raw = stream.readline(limit + 1)
            continue
        yield n, raw


def iter_lines(stream: BinaryIO, source: str, limit: int = MAX_LINE_BYTES) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each line of a binary ``stream`` (UTF-8), line ends stripped.
    Raises ``InputError`` naming ``source`` and the line for a line longer than ``limit`` bytes or
    one that is not UTF-8."""
    for n, raw in bounded_lines(stream, limit):
        if raw is None:
            raise InputError(f"{source}: line {n} longer than {limit} bytes; refused")
        yield n, decode(raw, f"{source}: line {n}", ("utf-8-sig",) if n == 1 else ("utf-8",)).rstrip("\r\n")
