"""The game record object shared by every format (rule book section 7), and record-file reading.

:class:`GameRecord` holds one game; the format modules (``core.records.json``, ``.jiu``, ``.csv``)
convert it. :func:`read_record_text` is the bounded read every record reader uses
(``core.inputs.MAX_RECORD_BYTES``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from core.errors import IllegalMoveError, NotationError, RecordError
from core.inputs import MAX_RECORD_BYTES, read_text
from core.notation import Move, parse_move
from core.rules import DEFAULT_RULESET, Ruleset
from core.state import GameState

COLOUR_NAMES = ("White", "Black")
Result = Literal["w", "b", "draw"]
Format = Literal["json", "jiu", "csv"]




def _check_json_value(value: Any) -> None:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"not JSON-serialisable: {exc}") from None



class GameRecord(BaseModel):
    """One game: ruleset, players, result, moves in rule-book notation from the start position.

    Fields: ``ruleset``; ``white`` and ``black`` (player names); ``result`` (``"w"``, ``"b"``,
    ``"draw"`` or ``None`` when unknown/unfinished); ``reason`` (free text such as ``"stones"``,
    ``"no-move"``, ``"repetition"``, ``"ply-cap"``, ``"resign"``, ``"unfinished"``, or ``None``);
    ``start_time`` (ISO 8601 string or ``None``); ``moves`` (notation strings, placements included);
    ``search`` (``None`` or one ``dict``/``None`` per move, e.g. ``{"visits": 800, "value": 0.1}``);
    ``metadata`` (any JSON-serialisable mapping: seeds, event, ...).

    Construction validates the shapes (pydantic ``ValidationError`` naming the field): notation
    syntax of every move, ``search`` length, JSON-serialisability of ``search`` and ``metadata``,
    ISO ``start_time``. Legality is checked by :meth:`replay`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    ruleset: Ruleset = DEFAULT_RULESET
    white: str = "White"
    black: str = "Black"
    result: Result | None = None
    reason: str | None = None
    start_time: str | None = None
    moves: tuple[str, ...] = ()
    search: tuple[dict[str, Any] | None, ...] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("start_time")
    @classmethod
    def _iso_time(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                datetime.fromisoformat(v)
            except ValueError:
                raise ValueError(f"{v!r} is not an ISO 8601 date/time") from None
        return v

    @field_validator("moves")
    @classmethod
    def _notation(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for i, text in enumerate(v, 1):
            try:
                parse_move(text)
            except NotationError as exc:
                raise ValueError(f"move {i} {text!r}: {exc}") from None
        return v

    @field_validator("metadata")
    @classmethod
    def _metadata_json(cls, v: dict[str, Any]) -> dict[str, Any]:
        _check_json_value(v)
        return v

    @model_validator(mode="after")
    def _search_matches_moves(self) -> "GameRecord":
        if self.search is not None:
            if len(self.search) != len(self.moves):
                raise ValueError(
                    f"field 'search': {len(self.search)} entries for {len(self.moves)} moves"
                    " (one per move, null allowed)"
                )
            try:
                _check_json_value(list(self.search))
            except ValueError as exc:
                raise ValueError(f"field 'search': {exc}") from None
        return self

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_moves(
        cls,
        moves: Sequence[str | Move],
        ruleset: Ruleset = DEFAULT_RULESET,
        **fields: Any,
    ) -> "GameRecord":
        """A record of ``moves`` (validated by replay). ``result`` and ``reason`` default to the
        final position's outcome (``reason="unfinished"``, ``result=None`` when it is not terminal);
        other ``fields`` are passed through. Raises ``RecordError`` on an illegal move."""
        record = cls(ruleset=ruleset, moves=tuple(str(m) for m in moves), **fields)
        final = record.final_state()
        outcome = final.outcome()
        defaults: dict[str, Any] = {}
        if "result" not in fields:
            defaults["result"] = outcome.winner_code
        if "reason" not in fields:
            defaults["reason"] = outcome.reason if outcome.terminal else "unfinished"
        return record.model_copy(update=defaults) if defaults else record

    # ------------------------------------------------------------------ replay
    def _states(self):
        state = GameState.initial(self.ruleset)
        yield state
        for i, text in enumerate(self.moves, 1):
            try:
                state = state.apply(text)
            except (NotationError, IllegalMoveError) as exc:
                raise RecordError(f"move {i} {text!r}: {exc}") from None
            yield state

    def replay(self) -> list[GameState]:
        """All states from the start position, ``len(moves) + 1`` of them, validating every move.
        Raises ``RecordError("move <i> '<text>': <engine reason>")`` (1-based ``i``) on the first
        move that is not well-formed or not legal."""
        return list(self._states())

    def final_state(self) -> GameState:
        """The state after the last move (validating every move like :meth:`replay`)."""
        state = None
        for state in self._states():
            pass
        return state


def check_same_ruleset(carried: Ruleset, given: Ruleset, source: str) -> None:
    """``RecordError`` naming the first option in which a record's own ruleset (``carried``) differs
    from the one the caller gave (e.g. ``-r`` on the command line); nothing if they are equal."""
    mine, theirs = carried.model_dump(), given.model_dump()
    for key, value in mine.items():
        if theirs[key] != value:
            raise RecordError(
                f"{source}: {key}={value}, but the given rules say {key}={theirs[key]}"
                " (the record carries its own ruleset; drop the conflicting -r option)"
            )


GBK_TOO = ("utf-8-sig", "gb18030")
"""Encodings tried for JIU and CSV files, in order (referee software may write GBK)."""


def read_record_text(path: str | os.PathLike, encodings: Sequence[str] = ("utf-8-sig",)) -> str:
    """Text of a record file (at most ``MAX_RECORD_BYTES``), trying ``encodings`` in order. Raises
    ``InputError`` (a ``JiuError`` naming the file) if it is too large or no encoding fits,
    ``OSError`` if the file cannot be read."""
    return read_text(path, MAX_RECORD_BYTES, "record file", encodings)
