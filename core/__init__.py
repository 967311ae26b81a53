"""Rules engine of Tibetan Jiu chess: Numba kernels, ``GameState``, notation, JFEN and records.

The rule book is ``../shared/jiu-rules.md``; this package follows it to the letter.
"""

from core.board import BLACK, DRAW, POINT_NAMES, WHITE
from core.errors import IllegalMoveError, InvalidPositionError, JiuError, NotationError, RecordError
from core.jfen import START_JFEN
from core.notation import Move, parse_move
from core.rules import DEFAULT_RULESET, Ruleset
from core.state import GameState, Outcome

__all__ = [
    "BLACK",
    "DRAW",
    "DEFAULT_RULESET",
    "GameState",
    "IllegalMoveError",
    "InvalidPositionError",
    "JiuError",
    "Move",
    "NotationError",
    "Outcome",
    "POINT_NAMES",
    "RecordError",
    "Ruleset",
    "START_JFEN",
    "WHITE",
    "parse_move",
]
