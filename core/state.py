"""``GameState``: an immutable position with the OpenSpiel-style API over the rules kernels.

A state is a small record of fixed-dtype data: ``board`` ``int8[196]`` (read-only), ``side`` (0 White,
1 Black, to move), ``phase`` (0 layout, 1 battle), ``counts`` (stones of White, Black), ``quiet``
(battle plies since the last capture), ``ply`` (plies since the start, placements included),
``hash`` (Zobrist, ``uint64``) and ``history`` (``uint64[n]``: hashes of the battle positions since
the last capture, this one last; what the repetition rule needs). ``last_move`` is kept for the
feature planes; it is not part of the position's identity.

Typical use::

    s = GameState.initial()
    s = s.apply("g7")            # or a Move
    s.legal_moves()              # [Move('h8')]
    GameState.from_jfen(text).legal_paths()   # {'a1-a2': 0, 'c3xc5': 1, ...}
"""

from __future__ import annotations

from math import comb
from typing import NamedTuple

import numpy as np

from core.board import (
    BLACK,
    DRAW,
    EMPTY,
    FLY_THRESHOLD,
    NUM_POINTS,
    PHASE_BATTLE,
    PHASE_LAYOUT,
    POINT_NAMES,
    WHITE,
)
from core.errors import IllegalMoveError
from core.jfen import START_JFEN, format_jfen, parse_jfen
from core.movelist import MoveList, battle_list, placement_list
from core.movegen import find_path, generate_paths, has_battle_move, layout_points, new_path_buffers
from core.play import play
from core.notation import Move, parse_move
from core.rules import DEFAULT_RULESET, Ruleset
from core.status import END_REASONS, ONGOING, battle_status
from core.zobrist import zobrist_hash


class Outcome(NamedTuple):
    """Terminal status: ``reason`` in ``core.status.END_REASONS``; ``winner`` ``WHITE``/``BLACK``/
    ``DRAW`` or ``None`` while the game goes on."""

    reason: str
    winner: int | None

    @property
    def terminal(self) -> bool:
        return self.reason != "ongoing"

    @property
    def winner_code(self) -> str | None:
        """``"w"``, ``"b"``, ``"draw"`` or ``None``."""
        return {WHITE: "w", BLACK: "b", DRAW: "draw", None: None}[self.winner]


class PathSet(NamedTuple):
    """The legal battle paths of a state in the CSR layout of ``core.movegen`` (``m`` paths)."""

    m: int
    pts: np.ndarray
    off: np.ndarray
    nsq: np.ndarray
    jump: np.ndarray

    def path(self, i: int) -> tuple[int, ...]:
        return tuple(int(p) for p in self.pts[self.off[i] : self.off[i + 1]])

    def path_str(self, i: int) -> str:
        return ("x" if self.jump[i] else "-").join(POINT_NAMES[p] for p in self.pts[self.off[i] : self.off[i + 1]])


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


_NO_HISTORY = _readonly(np.empty(0, np.uint64))


class GameState:
    """An immutable Jiu position under a ``Ruleset``. See the module docstring."""

    __slots__ = ("board", "side", "phase", "counts", "quiet", "ply", "hash", "history", "ruleset", "last_move", "_memo")

    def __init__(self, board, side, phase, quiet, ply, ruleset=DEFAULT_RULESET, history=None, last_move=None, counts=None):
        self.board = _readonly(np.ascontiguousarray(board, np.int8))
        self.side = int(side)
        self.phase = int(phase)
        self.quiet = int(quiet)
        self.ply = int(ply)
        self.ruleset = ruleset
        if counts is None:
            counts = (int(np.count_nonzero(self.board == 1)), int(np.count_nonzero(self.board == 2)))
        self.counts = tuple(counts)
        self.hash = int(zobrist_hash(self.board, self.side, self.phase))
        if history is None:
            history = [self.hash] if self.phase == PHASE_BATTLE else []
        self.history = _readonly(np.asarray(history, np.uint64))
        self.last_move = last_move
        self._memo = {}

    @classmethod
    def from_arrays(cls, board, side, phase, quiet, ply, counts, hash_, history, ruleset=DEFAULT_RULESET,
                    last_move=None) -> "GameState":
        """A state from data its caller already holds, without recounting or rehashing: ``board``
        ``int8[196]`` (owned by the state from now on and made read-only: pass a copy), ``counts``
        (White, Black), ``hash_`` its Zobrist hash (``core.zobrist``; the caller guarantees it matches)
        and ``history`` (``uint64[n]``, battle hashes since the last capture, this position last; made
        read-only). What the search and ``_play`` use; ``GameState(...)`` checks nothing either but
        recomputes counts and hash."""
        self = object.__new__(cls)
        self.board = _readonly(board)
        self.side = int(side)
        self.phase = int(phase)
        self.quiet = int(quiet)
        self.ply = int(ply)
        self.ruleset = ruleset
        self.counts = (int(counts[0]), int(counts[1]))
        self.hash = int(hash_)
        self.history = _readonly(history)
        self.last_move = last_move
        self._memo = {}
        return self

    # ----------------------------------------------------------------- construction and output
    @classmethod
    def initial(cls, ruleset: Ruleset = DEFAULT_RULESET) -> "GameState":
        """The start position: empty board, White to place."""
        return cls.from_jfen(START_JFEN, ruleset)

    @classmethod
    def from_jfen(cls, text: str, ruleset: Ruleset = DEFAULT_RULESET) -> "GameState":
        """Parse a JFEN (raises ``InvalidPositionError`` naming the field). Repetition history
        starts at this position."""
        f = parse_jfen(text)
        return cls(f.board, f.side, f.phase, f.quiet, f.ply, ruleset)

    def to_jfen(self) -> str:
        return format_jfen(self.board, self.side, self.phase, self.quiet, self.ply)

    def __repr__(self) -> str:
        return f"GameState({self.to_jfen()!r})"

    def __eq__(self, other) -> bool:
        """Same position (board, side, phase, counters) and ruleset; history is not compared."""
        return (
            isinstance(other, GameState)
            and self.hash == other.hash
            and self.to_jfen() == other.to_jfen()
            and self.ruleset == other.ruleset
        )

    def __hash__(self) -> int:
        return self.hash

    # ----------------------------------------------------------------- OpenSpiel-style queries
    def current_player(self) -> int:
        """The side to move: ``WHITE`` (0) or ``BLACK`` (1), also in terminal positions."""
        return self.side

    def flying(self, player: int) -> bool:
        """Whether ``player`` is in the flying stage (battle and at most 14 stones)."""
        return self.phase == PHASE_BATTLE and self.counts[player] <= FLY_THRESHOLD

    def paths(self) -> PathSet:
        """Legal battle paths as arrays (empty in the layout and in terminal positions)."""
        if "paths" not in self._memo:
            if self.phase == PHASE_LAYOUT or self.outcome().terminal:
                self._memo["paths"] = PathSet(0, *new_path_buffers(1))
            else:
                self._memo["paths"] = self._generate()
        return self._memo["paths"]

    def _generate(self) -> PathSet:
        buffers = new_path_buffers(256)
        own, opp = self.counts[self.side], self.counts[1 - self.side]
        m, *arrays = generate_paths(self.board, self.side, own, opp, self.ruleset.vector, *buffers)
        return PathSet(m, *arrays)

    def placements(self) -> list[int]:
        """Legal placement points in the layout (empty list in the battle)."""
        if self.phase != PHASE_LAYOUT:
            return []
        out = np.empty(NUM_POINTS, np.int16)
        n = layout_points(self.board, self.counts[0] + self.counts[1], out)
        return [int(p) for p in out[:n]]

    def legal_paths(self) -> dict[str, int]:
        """Path notation -> squares formed at the destination, sorted by string. In the layout each
        placement maps to 0. Empty when terminal."""
        if self.phase == PHASE_LAYOUT:
            return {POINT_NAMES[p]: 0 for p in sorted(self.placements(), key=lambda p: POINT_NAMES[p])}
        ps = self.paths()
        return dict(sorted((ps.path_str(i), int(ps.nsq[i])) for i in range(ps.m)))

    def victims_left(self, path: tuple[int, ...], jump: bool) -> list[int]:
        """Opponent stones still on the board after ``path``'s jump victims are removed, ascending."""
        stones = np.flatnonzero(self.board == 2 - self.side).tolist()
        if not jump:
            return stones
        jumped = {(a + b) // 2 for a, b in zip(path, path[1:])}
        return [p for p in stones if p not in jumped]

    def legal_moves(self) -> MoveList:
        """Every full legal move (each victim set separately), sorted by notation string, as a lazy
        ``core.movelist.MoveList`` (a ``Sequence[Move]``: ``len``, indexing, iteration;
        ``list(...)`` for the complete list). Empty when terminal."""
        if self.phase == PHASE_LAYOUT:
            out = np.empty(NUM_POINTS, np.int16)
            return placement_list(out[: layout_points(self.board, self.counts[0] + self.counts[1], out)])
        ps = self.paths()
        return battle_list(self.board, self.side, self.counts[1 - self.side], ps.m, ps.pts, ps.off, ps.nsq, ps.jump)

    def count_moves(self) -> int:
        """Number of full legal moves without listing them (``sum C(left, k)`` over paths)."""
        if self.phase == PHASE_LAYOUT:
            return len(self.placements())
        ps = self.paths()
        n_opp = self.counts[1 - self.side]
        total = 0
        for i in range(ps.m):
            left = n_opp - (ps.off[i + 1] - ps.off[i] - 1 if ps.jump[i] else 0)
            total += comb(left, min(int(ps.nsq[i]), left))
        return total

    # ----------------------------------------------------------------- terminal status
    def outcome(self) -> Outcome:
        """Terminal status under the ruleset (rule book 3.4; order in ``core.status``)."""
        if "outcome" not in self._memo:
            if self.phase == PHASE_LAYOUT:
                self._memo["outcome"] = Outcome("ongoing", None)
            else:
                own, opp = self.counts[self.side], self.counts[1 - self.side]
                rules = self.ruleset.vector
                has_move = has_battle_move(self.board, self.side, own, opp, rules)
                counts = np.array(self.counts, np.int64)
                reason, winner = battle_status(
                    self.side, counts, self.ply, self.history, len(self.history), has_move, rules
                )
                self._memo["outcome"] = Outcome(END_REASONS[reason], None if reason == ONGOING else int(winner))
        return self._memo["outcome"]

    def is_terminal(self) -> bool:
        return self.outcome().terminal

    def winner(self) -> int | None:
        """``WHITE``, ``BLACK``, ``DRAW`` (-1), or ``None`` while the game goes on."""
        return self.outcome().winner

    def returns(self) -> tuple[float, float]:
        """Rewards of (White, Black): +1/-1 for a decided game, 0/0 for a draw or an ongoing game."""
        w = self.winner()
        if w is None or w == DRAW:
            return (0.0, 0.0)
        return (1.0, -1.0) if w == WHITE else (-1.0, 1.0)

    # ----------------------------------------------------------------- moves
    def parse_move(self, text: str) -> Move:
        """Parse notation and check it is legal here; raises ``NotationError`` for bad notation and
        ``IllegalMoveError`` saying why the move is not legal."""
        return self.check_move(parse_move(text))

    def check_move(self, move: Move) -> Move:
        """Return ``move`` if legal here, else raise ``IllegalMoveError`` with the reason."""
        if self.is_terminal():
            raise IllegalMoveError(f"move {move}: the game is over ({self.outcome().reason})")
        if self.phase == PHASE_LAYOUT:
            if not move.is_placement:
                raise IllegalMoveError(f"move {move}: the layout phase takes placements only")
            if move.origin not in self.placements():
                raise IllegalMoveError(f"placement {move}: {self._placement_reason(move.origin)}")
            return move
        if move.is_placement:
            raise IllegalMoveError(f"move {move}: placements end with the layout; give a path like a1-a2")
        ps = self.paths()
        i = find_path(ps.pts, ps.off, ps.jump, ps.m, np.array(move.path, np.int16), int(move.jump))
        if i < 0:
            raise IllegalMoveError(f"move {move}: {self._path_reason(move)}")
        left = self.victims_left(move.path, move.jump)
        need = min(int(ps.nsq[i]), len(left))
        if len(move.victims) != need:
            raise IllegalMoveError(
                f"move {move}: the path forms {int(ps.nsq[i])} square(s), so it takes exactly {need}"
                f" victim(s); {len(move.victims)} given"
            )
        left_set = set(left)
        for v in move.victims:
            if v not in left_set:
                raise IllegalMoveError(f"move {move}: victim {POINT_NAMES[v]} is not an opponent stone left on the board")
        return move

    def _placement_reason(self, p: int) -> str:
        if self.board[p] != EMPTY:
            return f"{POINT_NAMES[p]} is occupied"
        return "the first two placements go on the centre points g7 and h8"

    def _path_reason(self, move: Move) -> str:
        me, o, d = self.side + 1, move.origin, move.destination
        if self.board[o] != me:
            return f"{POINT_NAMES[o]} holds no stone of the side to move"
        if move.jump:
            return "not a legal jump chain here (each hop must jump one opponent stone onto an empty point;" \
                f" fly_jump_rule={self.ruleset.fly_jump_rule}, chain_revisit={self.ruleset.chain_revisit})"
        if self.board[d] != EMPTY:
            return f"{POINT_NAMES[d]} is occupied"
        return f"{POINT_NAMES[o]} and {POINT_NAMES[d]} are not adjacent and the side to move is not flying (more than 14 stones)"

    def apply(self, move: Move | str) -> "GameState":
        """The state after a legal move (notation string or ``Move``); raises ``NotationError`` or
        ``IllegalMoveError``. The 196th placement starts the battle: both centre stones are removed
        and Black moves (rule book 2.4)."""
        move = self.parse_move(move) if isinstance(move, str) else self.check_move(move)
        return self._play(move)

    def _play(self, move: Move) -> "GameState":
        """Apply a move already known to be legal (``core.play.play``: incremental hash)."""
        board = self.board.copy()
        counts = np.array(self.counts, np.int64)
        side, phase, quiet, ply, h, captured = play(
            board, counts, self.side, self.phase, self.quiet, self.ply, np.uint64(self.hash),
            np.array(move.path, np.int16), move.jump, np.array(move.victims, np.int16), 0)
        if phase == PHASE_LAYOUT:
            history = _NO_HISTORY
        elif captured or self.phase == PHASE_LAYOUT:
            history = np.array([h], np.uint64)
        else:
            history = np.empty(len(self.history) + 1, np.uint64)
            history[:-1] = self.history
            history[-1] = h
        return GameState.from_arrays(board, side, phase, quiet, ply, counts, h, history, self.ruleset, move)
