"""The open-tournament CSV record (rule book 7.3), import only.

Open-tournament CSV (``.csv``, import only; rule book 7.3), one game per line; lines without
``Stage[`` (headers, blank lines) are skipped::

    [anything]Stage[1]: W(G,7), B(H,8), W(A,1), ...  Stage[2]: B(E,7)-O(G,7),TC:W(F,7); W(H,7)-O(H,8),FC:B(A,1); ...

A stone token is ``W(col,row)`` / ``B(col,row)`` / ``O(col,row)`` with column letter ``A``..``N`` and
row number ``1``..``14`` (case and spaces inside the parentheses are free). ``Stage[1]`` lists the
placements in order (``W``/``B`` only). In ``Stage[2]`` a move is a ``W``/``B`` mover token
immediately followed by one or more ``O`` landing tokens (joined by ``-``; a multi-hop jump lists every
landing); ``TC:`` starts the jump-victim list and ``FC:`` the square-victim list of the current move;
victims are ``W``/``B`` tokens. Up to two lone ``W``/``B`` tokens before the first move are read as the
removal of the centre stones and checked. The ``TC:`` and ``FC:`` stones together are matched
against the legal moves exactly like a JIU entry's captured stones (path plus captured set). Between
tokens only whitespace, digits and ``, ; : | " ' - . _ /`` may appear (full-width ``（，）`` inside a
token are accepted); any other leftover text (letters) in a stage is an error. The text before
``Stage[1]`` is kept in ``metadata["csv_prefix"]`` and searched for a result text as in JIU headers.
Errors name the line number and the placement or move index.
"""

from __future__ import annotations

import os
import re
from typing import Any, NamedTuple

from core.board import BLACK, SIZE, WHITE
from core.errors import RecordError
from core.notation import Move
from core.records.record import GBK_TOO, GameRecord, read_record_text
from core.records.resolve import (
    Listed,
    apply_placement,
    check_centre_removals,
    finished_record,
    parse_result_text,
    resolve_move,
)
from core.rules import DEFAULT_RULESET, Ruleset
from core.state import GameState

_CSV_TOKEN = re.compile(
    r"(?P<marker>\b[TtFf][Cc]\s*:)"
    r"|(?P<c>[WBOwbo])\s*[(（]\s*(?P<col>[A-Na-n])\s*[,，]\s*(?P<row>\d{1,2})\s*[)）]",
    re.IGNORECASE,
)
_CSV_FILLER = re.compile(r"[\s,;:|\"'\-.\d_/]*")


class _CsvToken(NamedTuple):
    """A Stage token: ``kind`` ``W``/``B``/``O`` (with its ``point``) or ``TC``/``FC`` (point -1)."""

    kind: str
    point: int
    text: str

    @property
    def listed(self) -> Listed:
        return Listed(self.point, WHITE if self.kind == "W" else BLACK, self.text)


def _csv_tokens(text: str, where: str) -> list[_CsvToken]:
    out, pos = [], 0
    for m in _CSV_TOKEN.finditer(text):
        _check_filler(text[pos : m.start()], where)
        pos = m.end()
        if m["marker"]:
            out.append(_CsvToken(m["marker"][:2].upper(), -1, m[0]))
            continue
        row = int(m["row"])
        if not 1 <= row <= SIZE:
            raise RecordError(f"{where}: {m[0]!r}: row {row} is not in 1..14")
        point = (row - 1) * SIZE + "ABCDEFGHIJKLMN".index(m["col"].upper())
        out.append(_CsvToken(m["c"].upper(), point, m[0]))
    _check_filler(text[pos:], where)
    return out


def _check_filler(text: str, where: str) -> None:
    if not _CSV_FILLER.fullmatch(text):
        raise RecordError(f"{where}: unrecognised text {text.strip()!r}")


def _csv_stages(line: str, where: str) -> tuple[str, str, str]:
    """``(prefix, stage 1 text, stage 2 text)`` of a CSV line."""
    marks = list(re.finditer(r"Stage\s*\[\s*(\d+)\s*\]\s*:?", line, re.IGNORECASE))
    numbers = [int(m[1]) for m in marks]
    if numbers not in ([1], [1, 2]):
        raise RecordError(f"{where}: expected 'Stage[1]:' then optionally 'Stage[2]:', found stages {numbers}")
    stage1_end = marks[1].start() if len(marks) == 2 else len(line)
    stage2 = line[marks[1].end() :] if len(marks) == 2 else ""
    return line[: marks[0].start()], line[marks[0].end() : stage1_end], stage2


def _csv_group_moves(tokens: list[_CsvToken], where: str):
    """Split Stage[2] tokens into centre removals and moves ``(mover, landings, captured)``."""
    removals: list[_CsvToken] = []
    moves: list[tuple[_CsvToken, list[int], list[Listed]]] = []
    mode = None
    for i, tok in enumerate(tokens):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        here = f"{where}, move {len(moves)}" if moves else where
        if tok.kind in ("TC", "FC"):
            if not moves:
                raise RecordError(f"{here}: {tok.text!r} before any move")
            mode = tok.kind
        elif tok.kind == "O":
            if not moves or mode is not None:
                raise RecordError(f"{here}: landing {tok.text!r} is not part of a move's path")
            moves[-1][1].append(tok.point)
        elif nxt is not None and nxt.kind == "O":
            moves.append((tok, [], []))
            mode = None
        elif mode is not None:
            moves[-1][2].append(tok.listed)
        elif not moves:
            removals.append(tok)
        else:
            raise RecordError(f"{here}: stone {tok.text!r} after the path without a 'TC:' or 'FC:' marker")
    return removals, moves


def parse_csv_line(line: str, line_no: int = 1, ruleset: Ruleset = DEFAULT_RULESET) -> GameRecord:
    """One open-tournament CSV game (module docstring), validating every placement and move.
    Raises ``RecordError("line <n>, placement <i> ...")`` or ``("line <n>, move <j> ...")``."""
    where = f"line {line_no}"
    prefix, stage1, stage2 = _csv_stages(line, where)
    state = GameState.initial(ruleset)
    moves: list[Move] = []
    for n, tok in enumerate(_csv_tokens(stage1, f"{where}, Stage[1]"), 1):
        here = f"{where}, placement {n}"
        if tok.kind not in ("W", "B"):
            raise RecordError(f"{here} {tok.text!r}: the layout takes W(...) or B(...) placements only")
        state = apply_placement(state, tok.point, tok.listed.colour, tok.text, here)
        moves.append(Move((tok.point,)))
    removals, battle = _csv_group_moves(_csv_tokens(stage2, f"{where}, Stage[2]"), where)
    if len(removals) > 2:
        raise RecordError(
            f"{where}, Stage[2]: {removals[2].text!r}: a stone without a move"
            " (only the two centre stones may be listed alone)"
        )
    if removals:
        labels = [f"{where}, Stage[2] {t.text!r}" for t in removals]
        check_centre_removals([m.origin for m in moves], [t.listed for t in removals], labels)
    for j, (mover, landings, captured) in enumerate(battle, 1):
        move = resolve_move(state, mover.listed, landings, captured, f"{where}, move {j} {mover.text!r}")
        state = state.apply(move)
        moves.append(move)
    metadata: dict[str, Any] = {"csv_line": line_no}
    if prefix.strip():
        metadata["csv_prefix"] = prefix.strip()
    return finished_record(state, moves, ruleset, parse_result_text(prefix), "White", "Black", None, metadata)


def read_csv(path: str | os.PathLike, ruleset: Ruleset = DEFAULT_RULESET) -> list[GameRecord]:
    """All games of an open-tournament CSV file, one per line holding ``Stage[``; other lines are
    skipped. Raises ``RecordError`` naming the file, line number and placement/move index."""
    records = []
    for line_no, line in enumerate(read_record_text(path, GBK_TOO).splitlines(), 1):
        if not re.search(r"Stage\s*\[", line, re.IGNORECASE):
            continue
        try:
            records.append(parse_csv_line(line, line_no, ruleset))
        except RecordError as exc:
            raise RecordError(f"{path}: {exc}") from None
    if not records:
        raise RecordError(f"{path}: no game lines (a game line holds 'Stage[1]:')")
    return records


