"""Record files of any format: the format from the name or the content, and reading/writing by format."""

from __future__ import annotations

import os
import re
from pathlib import Path

from core.errors import RecordError
from core.records.csv import read_csv
from core.records.jiu import read_jiu, write_jiu
from core.records.json import read_json, write_json
from core.records.record import Format, GameRecord, check_same_ruleset
from core.rules import DEFAULT_RULESET, Ruleset

_EXTENSIONS: dict[str, Format] = {".json": "json", ".jiu": "jiu", ".csv": "csv"}
FORMATS = ("json", "jiu", "csv")


def _check_format(fmt: str) -> Format:
    if fmt not in FORMATS:
        raise RecordError(f"format {fmt!r}: expected one of {', '.join(FORMATS)}")
    return fmt  # type: ignore[return-value]


def _head(path: str | os.PathLike, size: int = 65536) -> bytes:
    with open(path, "rb") as f:
        return f.read(size)


def detect_format(path: str | os.PathLike) -> Format:
    """``"json"``, ``"jiu"`` or ``"csv"`` from the extension (``.json``, ``.jiu``, ``.csv``); for
    ``.txt`` and other names from the content: ``{`` -> json, ``[`` -> jiu, ``Stage[`` -> csv
    (``.txt`` defaults to jiu). Raises ``RecordError`` if it cannot tell, ``OSError`` if unreadable."""
    suffix = Path(path).suffix.lower()
    if suffix in _EXTENSIONS:
        return _EXTENSIONS[suffix]
    head = _head(path).decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if head.startswith("{"):
        return "json"
    if head.startswith("["):
        return "jiu"
    if re.search(r"Stage\s*\[", head, re.IGNORECASE):
        return "csv"
    if suffix == ".txt":
        return "jiu"
    raise RecordError(f"{path}: cannot tell the record format; name it .json, .jiu or .csv or pass the format")


def read_record(
    path: str | os.PathLike, fmt: str | None = None, ruleset: Ruleset = DEFAULT_RULESET, check_ruleset: bool = False
) -> list[GameRecord]:
    """The games in a record file (one for JSON and JIU, one per line for CSV). A record's own
    ruleset decides its rules (JSON always carries one, JIU in its ``[ruleset ...]`` header field);
    ``ruleset`` applies to records that carry none (CSV, JIU without the field). With
    ``check_ruleset`` (the caller's rules were given explicitly, e.g. ``-r``) a carried ruleset that
    differs from ``ruleset`` is an error naming the option. Raises ``RecordError`` (bad format name,
    bad content), ``InputError`` (too large, not text), ``OSError`` if unreadable."""
    fmt = _check_format(fmt) if fmt is not None else detect_format(path)
    if fmt == "json":
        record = read_json(path)
        if check_ruleset:
            check_same_ruleset(record.ruleset, ruleset, f"{path}: field 'ruleset'")
        return [record]
    if fmt == "jiu":
        return [read_jiu(Path(path), ruleset, check_ruleset)]
    return read_csv(path, ruleset)


def write_record(record: GameRecord, path: str | os.PathLike, fmt: str | None = None) -> None:
    """Write ``record`` atomically as ``fmt`` (default from the extension: ``.json`` -> json,
    ``.jiu``/``.txt`` -> jiu). Raises ``RecordError`` for CSV (import only), an unknown format or an
    unserialisable record; ``OSError`` on I/O failure."""
    if fmt is None:
        suffix = Path(path).suffix.lower()
        fmt = {".json": "json", ".jiu": "jiu", ".txt": "jiu", ".csv": "csv"}.get(suffix)
        if fmt is None:
            raise RecordError(f"{path}: cannot tell the output format from the name; use .json or .jiu, or pass it")
    fmt = _check_format(fmt)
    if fmt == "csv":
        raise RecordError("format 'csv': the open-tournament CSV is import only; write json or jiu")
    (write_json if fmt == "json" else write_jiu)(record, path)
