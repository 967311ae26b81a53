"""The project's JSON game record (rule book 7.1), lossless.

JSON record (``.json``, lossless, UTF-8), one object::

    {"format": "jiu-record", "version": 1,
     "ruleset": {"chain_revisit": "forbid", ...every Ruleset field...},
     "players": {"white": "A", "black": "B"},
     "result": "w" | "b" | "draw" | null,
     "reason": "stones" | "no-move" | "repetition" | "ply-cap" | "resign" | "unfinished" | ... | null,
     "start_time": ISO 8601 string | null,
     "moves": ["g7", "h8", ..., "i7xg7/g5", ...],          # rule book section 4, from the start
     "search": null | [null | {"visits": 800, "value": 0.12, ...}, ...],   # one entry per move
     "metadata": {...any JSON...}}

``ruleset``, ``players``, ``result`` and ``moves`` are required; ``format``, ``version``, ``reason``,
``start_time``, ``search`` and ``metadata`` are optional; unknown fields are rejected.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from core.atomic import atomic_write_text
from core.errors import JiuError, RecordError
from core.records.record import GameRecord, read_record_text
from core.rules import Ruleset

JSON_FORMAT = "jiu-record"
JSON_VERSION = 1
_JSON_REQUIRED = ("ruleset", "players", "result", "moves")
_JSON_OPTIONAL = ("format", "version", "reason", "start_time", "search", "metadata")


def record_to_dict(record: GameRecord) -> dict[str, Any]:
    """The JSON object of ``record`` (module docstring)."""
    return {
        "format": JSON_FORMAT,
        "version": JSON_VERSION,
        "ruleset": record.ruleset.model_dump(),
        "players": {"white": record.white, "black": record.black},
        "result": record.result,
        "reason": record.reason,
        "start_time": record.start_time,
        "moves": list(record.moves),
        "search": None if record.search is None else list(record.search),
        "metadata": record.metadata,
    }


def record_to_json(record: GameRecord, indent: int | None = None) -> str:
    """``record`` as JSON text (one line unless ``indent``). Raises ``RecordError`` if a value is
    not JSON-serialisable (only possible for records built without validation)."""
    try:
        return json.dumps(record_to_dict(record), ensure_ascii=False, allow_nan=False, indent=indent)
    except (TypeError, ValueError) as exc:
        raise RecordError(f"record: cannot serialise as JSON: {exc}") from None


def _field_name(loc: Sequence[Any]) -> str:
    """JSON field path of a pydantic error location, e.g. ``moves[3]``, ``ruleset.loss_below``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def record_from_dict(data: Any, source: str = "record") -> GameRecord:
    """Build a record from a parsed JSON object. Raises ``RecordError("<source>: field '<name>':
    <reason>")`` for a missing, unknown or bad field."""
    if not isinstance(data, dict):
        raise RecordError(f"{source}: the top level must be a JSON object, got {type(data).__name__}")
    for key in data:
        if key not in _JSON_REQUIRED and key not in _JSON_OPTIONAL:
            raise RecordError(f"{source}: field {key!r}: unknown field")
    for key in _JSON_REQUIRED:
        if key not in data:
            raise RecordError(f"{source}: field {key!r}: missing")
    if data.get("format", JSON_FORMAT) != JSON_FORMAT:
        raise RecordError(f"{source}: field 'format': {data['format']!r}, expected {JSON_FORMAT!r}")
    version = data.get("version", JSON_VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= JSON_VERSION:
        raise RecordError(f"{source}: field 'version': {version!r}, this reader knows version {JSON_VERSION}")
    if not isinstance(data["ruleset"], dict):
        raise RecordError(f"{source}: field 'ruleset': must be an object of ruleset options")
    try:
        ruleset = Ruleset.parse(data["ruleset"])
    except JiuError as exc:
        raise RecordError(f"{source}: {exc}") from None
    players = data["players"]
    if not isinstance(players, dict):
        raise RecordError(f"{source}: field 'players': must be an object with 'white' and 'black'")
    for key in players:
        if key not in ("white", "black"):
            raise RecordError(f"{source}: field 'players.{key}': unknown field")
    for key in ("white", "black"):
        if not isinstance(players.get(key), str):
            raise RecordError(f"{source}: field 'players.{key}': missing or not a string")
    fields = {k: data[k] for k in ("result", "reason", "start_time", "moves", "search", "metadata") if k in data}
    if fields.get("metadata", {}) is None:
        fields.pop("metadata")
    if isinstance(fields.get("moves"), list):
        bad = [i for i, m in enumerate(fields["moves"]) if not isinstance(m, str)]
        if bad:
            raise RecordError(f"{source}: field 'moves[{bad[0]}]': not a string")
    elif "moves" in fields:
        raise RecordError(f"{source}: field 'moves': must be a list of move strings")
    if isinstance(fields.get("search"), list):
        fields["search"] = tuple(fields["search"])
    try:
        return GameRecord(ruleset=ruleset, white=players["white"], black=players["black"], **fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        msg = err["msg"].removeprefix("Value error, ")
        field = _field_name(err["loc"])
        raise RecordError(f"{source}: field {field!r}: {msg}" if field else f"{source}: {msg}") from None


def record_from_json(text: str, source: str = "<json>") -> GameRecord:
    """Parse JSON record text. Raises ``RecordError`` for malformed JSON (with line and column),
    JSON nested deeper than Python's recursion limit, or a bad field (named)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"{source}: not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise RecordError(f"{source}: not a record: JSON nested too deeply") from None
    return record_from_dict(data, source)


def write_json(record: GameRecord, path: str | os.PathLike) -> None:
    """Write ``record`` as a JSON record, atomically (serialised before the file is touched).
    Raises ``RecordError`` if it cannot be serialised, ``OSError`` on I/O failure."""
    atomic_write_text(path, record_to_json(record, indent=1) + "\n")


def read_json(path: str | os.PathLike) -> GameRecord:
    """Read a JSON record (does not replay it; call :meth:`GameRecord.replay`). Raises
    ``RecordError`` naming the file and the bad field, ``OSError`` if unreadable."""
    return record_from_json(read_record_text(path), str(path))
