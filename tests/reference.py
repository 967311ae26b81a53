"""Independent, slow, pure-Python reference implementation of Tibetan Jiu chess.

Written only from the project's rule book (`jiu-rules.md`, kept outside this repository) plus the lead's interpretation
decisions; it deliberately shares no code with the fast engine in ``core/``.  Clarity over speed.

Conventions
-----------
* A board is a tuple of 196 one-character strings: '.' empty, 'W' white, 'B' black.
  Point index ``idx = (row - 1) * 14 + (col - 1)``: a1 = 0, n1 = 13, g7 = 90, h8 = 105, n14 = 195.
* Sides are written 'w' / 'b' (side to move); stones are 'W' / 'B'.

Interpretation points where the rule book is silent or unclear (see the report / module docstrings of
the individual functions) are marked ``RULING:`` in the comments.
"""
from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass

# ---------------------------------------------------------------------------------------------------
# Board geometry
# ---------------------------------------------------------------------------------------------------

SIZE = 14
N_POINTS = SIZE * SIZE  # 196
LAYOUT_PLIES = N_POINTS  # the battle starts after 196 placements
FLY_LIMIT = 14  # a side with <= 14 stones flies
MAX_STONES_PER_COLOUR = 98
COLUMNS = "abcdefghijklmn"
G7 = 6 * 14 + 6  # 90
H8 = 7 * 14 + 7  # 105
CENTRE_POINTS = (G7, H8)

# (column step, row step): up (row + 1), down, left, right
DIRECTIONS = ((0, 1), (0, -1), (-1, 0), (1, 0))


def _col_row(idx: int) -> tuple[int, int]:
    """0-based (column, row) of a point index."""
    return idx % SIZE, idx // SIZE


def _index(col: int, row: int) -> int | None:
    """Point index of 0-based (column, row), or None if off the board."""
    if 0 <= col < SIZE and 0 <= row < SIZE:
        return row * SIZE + col
    return None


def point_name(idx: int) -> str:
    col, row = _col_row(idx)
    return f"{COLUMNS[col]}{row + 1}"


_POINT_NAMES = tuple(point_name(i) for i in range(N_POINTS))
_POINT_BY_NAME = {name: i for i, name in enumerate(_POINT_NAMES)}


def point_index(name: str) -> int:
    """'g7' -> 90. Raises ValueError for anything that is not exactly a point name."""
    if name not in _POINT_BY_NAME:
        raise ValueError(f"unknown point {name!r}")
    return _POINT_BY_NAME[name]


def _build_adjacent() -> tuple[tuple[int, ...], ...]:
    table = []
    for idx in range(N_POINTS):
        col, row = _col_row(idx)
        nbrs = []
        for dc, dr in DIRECTIONS:
            j = _index(col + dc, row + dr)
            if j is not None:
                nbrs.append(j)
        table.append(tuple(nbrs))
    return tuple(table)


def _build_hops() -> tuple[tuple[tuple[int, int], ...], ...]:
    """For each point, the (jumped point, landing point) pairs of a hop, one per direction that fits."""
    table = []
    for idx in range(N_POINTS):
        col, row = _col_row(idx)
        hops = []
        for dc, dr in DIRECTIONS:
            over = _index(col + dc, row + dr)
            land = _index(col + 2 * dc, row + 2 * dr)
            if over is not None and land is not None:
                hops.append((over, land))
        table.append(tuple(hops))
    return tuple(table)


def _build_cells() -> tuple[tuple[tuple[int, int, int, int], ...], ...]:
    """For each point, the cells (2x2 blocks, as their 4 corner indices) that contain it."""
    table = []
    for idx in range(N_POINTS):
        col, row = _col_row(idx)
        cells = []
        for c0 in (col - 1, col):
            for r0 in (row - 1, row):
                if 0 <= c0 <= SIZE - 2 and 0 <= r0 <= SIZE - 2:
                    corners = (
                        _index(c0, r0),
                        _index(c0 + 1, r0),
                        _index(c0, r0 + 1),
                        _index(c0 + 1, r0 + 1),
                    )
                    cells.append(corners)
        table.append(tuple(cells))
    return tuple(table)


ADJACENT = _build_adjacent()
HOPS = _build_hops()
CELLS_CONTAINING = _build_cells()


def squares_at(board, point: int, stone: str) -> int:
    """Number of cells containing ``point`` whose four corners all hold ``stone``."""
    count = 0
    for corners in CELLS_CONTAINING[point]:
        if all(board[c] == stone for c in corners):
            count += 1
    return count


def _stone_of(side: str) -> str:
    return side.upper()


def _other_side(side: str) -> str:
    return "b" if side == "w" else "w"


# ---------------------------------------------------------------------------------------------------
# Rules and positions
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RefRules:
    """Ruleset options with the rule book defaults."""

    chain_revisit: str = "forbid"  # 'forbid' | 'allow'
    fly_jump_rule: str = "strong-side-multi"  # 'strong-side-multi' | 'all-multi' | 'none'
    loss_below: int = 4
    repetition_draw: int = 3  # 0 = off; n = the n-th occurrence of (board, side to move) is a draw
    max_battle_plies: int = 1000
    adjudicate: str = "none"  # 'none' | 'stones'
    end_order: str = "decisive-first"  # 'decisive-first' | 'cap-first' (the ply cap before all else)


@dataclass(frozen=True)
class RefPosition:
    board: tuple  # 196 entries of '.', 'W', 'B'
    to_move: str  # 'w' | 'b'
    phase: str  # 'layout' | 'battle'
    quiet: int  # battle plies since the last capture (0 in the layout)
    ply: int  # plies since the start, placements included

    def __post_init__(self):
        if not isinstance(self.board, tuple) or len(self.board) != N_POINTS:
            raise ValueError("RefPosition.board must be a tuple of 196 entries")
        if any(s not in (".", "W", "B") for s in self.board):
            raise ValueError("RefPosition.board entries must be '.', 'W' or 'B'")
        if self.to_move not in ("w", "b"):
            raise ValueError(f"RefPosition.to_move must be 'w' or 'b', not {self.to_move!r}")
        if self.phase not in ("layout", "battle"):
            raise ValueError(f"RefPosition.phase must be 'layout' or 'battle', not {self.phase!r}")

    def count(self, stone: str) -> int:
        return self.board.count(stone)


START_POSITION = RefPosition(board=(".",) * N_POINTS, to_move="w", phase="layout", quiet=0, ply=0)


def _check_rules(rules) -> None:
    if rules.chain_revisit not in ("forbid", "allow"):
        raise ValueError(f"unknown chain_revisit {rules.chain_revisit!r}")
    if rules.fly_jump_rule not in ("strong-side-multi", "all-multi", "none"):
        raise ValueError(f"unknown fly_jump_rule {rules.fly_jump_rule!r}")
    if rules.adjudicate not in ("none", "stones"):
        raise ValueError(f"unknown adjudicate {rules.adjudicate!r}")


# ---------------------------------------------------------------------------------------------------
# JFEN (rule book section 6)
# ---------------------------------------------------------------------------------------------------


def _parse_nonneg_int(text: str, field: str) -> int:
    # RULING: plain decimal, no sign, no leading zeros (canonical form only).
    if not text or not all(ch in "0123456789" for ch in text) or (len(text) > 1 and text[0] == "0"):
        raise ValueError(f"JFEN {field} field: {text!r} is not a non-negative decimal integer")
    return int(text)


def _parse_board_field(text: str) -> tuple:
    rows = text.split("/")
    if len(rows) != SIZE:
        raise ValueError(f"JFEN board field: expected 14 rows separated by '/', got {len(rows)}")
    board = ["."] * N_POINTS
    for i, row_text in enumerate(rows):
        row = SIZE - 1 - i  # first row written is row 14 (0-based 13)
        label = f"JFEN board field, row {row + 1} ({row_text!r})"
        if row_text == "":
            raise ValueError(f"{label}: empty row")
        col = 0
        pos = 0
        while pos < len(row_text):
            ch = row_text[pos]
            if ch in "WB":
                if col >= SIZE:
                    raise ValueError(f"{label}: adds up to more than 14 points")
                board[row * SIZE + col] = ch
                col += 1
                pos += 1
            elif ch in "0123456789":
                end = pos
                while end < len(row_text) and row_text[end] in "0123456789":
                    end += 1
                run_text = row_text[pos:end]
                if run_text[0] == "0" or not 1 <= int(run_text) <= SIZE:
                    raise ValueError(f"{label}: bad empty-run number {run_text!r} (must be 1..14)")
                col += int(run_text)
                if col > SIZE:
                    raise ValueError(f"{label}: adds up to more than 14 points")
                pos = end
            else:
                raise ValueError(f"{label}: unknown character {ch!r}")
        if col != SIZE:
            raise ValueError(f"{label}: adds up to {col}, not 14")
    return tuple(board)


def parse_jfen(text: str) -> RefPosition:
    """Parse a JFEN line (rule book section 6). Raises ValueError naming the offending field."""
    if not isinstance(text, str):
        raise ValueError("JFEN must be a string")
    # RULING: surrounding whitespace (e.g. a trailing newline) is ignored; inside, exactly single spaces.
    fields = text.strip().split(" ")
    if len(fields) != 5:
        raise ValueError(f"JFEN must have 5 fields separated by single spaces, got {len(fields)}")
    board_text, side, phase, quiet_text, ply_text = fields
    board = _parse_board_field(board_text)
    if side not in ("w", "b"):
        raise ValueError(f"JFEN side-to-move field: {side!r} is not 'w' or 'b'")
    if phase not in ("layout", "battle"):
        raise ValueError(f"JFEN phase field: {phase!r} is not 'layout' or 'battle'")
    quiet = _parse_nonneg_int(quiet_text, "quiet")
    ply = _parse_nonneg_int(ply_text, "ply")

    n_white = board.count("W")
    n_black = board.count("B")
    for stone, n in (("W", n_white), ("B", n_black)):
        if n > MAX_STONES_PER_COLOUR:
            raise ValueError(f"JFEN board field: {n} {stone} stones, more than 98 of a colour")

    total = n_white + n_black
    if phase == "layout":
        if total >= N_POINTS:
            # RULING: the layout->battle transition is automatic, so a full layout board cannot occur.
            raise ValueError("JFEN phase field: a layout position cannot have a full board")
        # White places first: White is to move exactly when an even number of stones has been placed.
        # (The rule book's parenthesis says "White to move when the stone count is even" is the
        # inconsistency; that contradicts the start position, so it is read as "odd".)
        expected_side = "w" if total % 2 == 0 else "b"
        if side != expected_side:
            raise ValueError(
                f"JFEN side-to-move field: {side!r} is inconsistent with a layout position "
                f"with {total} stones (expected {expected_side!r})"
            )
        # RULING: placements alternate from White, so W == B (even count) or W == B + 1 (odd count).
        if n_white - n_black != total % 2:
            raise ValueError(
                f"JFEN board field: {n_white} W and {n_black} B stones cannot arise in the layout"
            )
        if total == 1:
            # RULING: with one stone only placement 1 has happened: a White stone on g7 or h8.
            if not (board[G7] == "W" or board[H8] == "W"):
                raise ValueError("JFEN board field: the first layout stone must be White's on g7 or h8")
        elif total >= 2:
            if sorted((board[G7], board[H8])) != ["B", "W"]:
                raise ValueError(
                    "JFEN board field: layout position without the two centre stones "
                    "(g7 and h8, one of each colour)"
                )
        # RULING: the quiet field is 0 in the layout and ply counts the placements.
        if quiet != 0:
            raise ValueError(f"JFEN quiet field: must be 0 in the layout, got {quiet}")
        if ply != total:
            raise ValueError(f"JFEN ply field: layout position with {total} stones must have ply {total}")
    else:
        # RULING: the battle starts at ply 196, and quiet counts battle plies only.
        if ply < LAYOUT_PLIES:
            raise ValueError(f"JFEN ply field: a battle position has ply >= 196, got {ply}")
        if quiet > ply - LAYOUT_PLIES:
            raise ValueError(
                f"JFEN quiet field: {quiet} quiet plies exceed the {ply - LAYOUT_PLIES} battle plies"
            )
    return RefPosition(board=board, to_move=side, phase=phase, quiet=quiet, ply=ply)


def to_jfen(pos: RefPosition) -> str:
    """Canonical JFEN: maximal empty runs, rows 14 down to 1."""
    rows = []
    for row in range(SIZE - 1, -1, -1):
        text = ""
        run = 0
        for col in range(SIZE):
            s = pos.board[row * SIZE + col]
            if s == ".":
                run += 1
            else:
                if run:
                    text += str(run)
                    run = 0
                text += s
        if run:
            text += str(run)
        rows.append(text)
    return f"{'/'.join(rows)} {pos.to_move} {pos.phase} {pos.quiet} {pos.ply}"


START_JFEN = to_jfen(START_POSITION)


# ---------------------------------------------------------------------------------------------------
# Move generation
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Path:
    """One legal battle path: origin, landing sequence (one entry for a step/flight), jump victims."""

    origin: int
    landings: tuple  # final point is landings[-1]
    jumped: tuple  # jump victims, in hop order (empty for a step / flight)
    squares: int  # k: squares of the mover formed at the destination


def _layout_placements(pos: RefPosition) -> list[int]:
    stones = N_POINTS - pos.board.count(".")
    if stones == 0:
        return [G7, H8]
    if stones == 1:
        return [H8] if pos.board[G7] != "." else [G7]
    return [i for i in range(N_POINTS) if pos.board[i] == "."]


def _min_hops(n_me: int, n_opp: int, rules) -> int:
    rule = rules.fly_jump_rule
    if rule == "none":
        return 1
    if rule == "strong-side-multi":
        return 2 if (n_me > FLY_LIMIT and n_opp <= FLY_LIMIT) else 1
    if rule == "all-multi":
        return 2 if (n_me <= FLY_LIMIT or n_opp <= FLY_LIMIT) else 1
    raise ValueError(f"unknown fly_jump_rule {rule!r}")


def _battle_paths(pos: RefPosition, rules) -> dict[str, _Path]:
    """All legal battle paths of the side to move, ignoring whether the game is over."""
    _check_rules(rules)
    me = _stone_of(pos.to_move)
    opp = _stone_of(_other_side(pos.to_move))
    n_me = pos.board.count(me)
    n_opp = pos.board.count(opp)
    flying = n_me <= FLY_LIMIT
    min_hops = _min_hops(n_me, n_opp, rules)
    allow_revisit = rules.chain_revisit == "allow"
    empties = [i for i in range(N_POINTS) if pos.board[i] == "."]

    board = list(pos.board)  # scratch board, restored after every candidate
    paths: dict[str, _Path] = {}

    def extend_chain(origin, current, landings, jumped, visited):
        for over, land in HOPS[current]:
            if board[over] != opp or board[land] != ".":
                continue
            if not allow_revisit and land in visited:
                continue
            board[over] = "."  # the jumped stone is removed at once
            new_landings = landings + (land,)
            new_jumped = jumped + (over,)
            if len(new_landings) >= min_hops:
                board[land] = me
                k = squares_at(board, land, me)
                board[land] = "."
                name = "x".join(_POINT_NAMES[p] for p in (origin,) + new_landings)
                paths[name] = _Path(origin, new_landings, new_jumped, k)
            extend_chain(origin, land, new_landings, new_jumped, visited | {land})
            board[over] = opp

    for origin in range(N_POINTS):
        if pos.board[origin] != me:
            continue
        board[origin] = "."  # the moving stone leaves its origin
        # steps (not flying) or flights (flying: any empty point, adjacent ones included)
        targets = empties if flying else [d for d in ADJACENT[origin] if board[d] == "."]
        for dest in targets:
            board[dest] = me
            k = squares_at(board, dest, me)
            board[dest] = "."
            name = f"{_POINT_NAMES[origin]}-{_POINT_NAMES[dest]}"
            paths[name] = _Path(origin, (dest,), (), k)
        # jump chains (the origin counts as visited)
        extend_chain(origin, origin, (), (), frozenset((origin,)))
        board[origin] = me
    return paths


def _visible_end(pos: RefPosition, rules) -> bool:
    """Ends visible without history and without move generation: stone counts and the ply cap."""
    if pos.phase != "battle":
        return False
    n_me = pos.board.count(_stone_of(pos.to_move))
    n_opp = pos.board.count(_stone_of(_other_side(pos.to_move)))
    if n_me < rules.loss_below or n_opp < rules.loss_below:
        return True
    return pos.ply - LAYOUT_PLIES >= rules.max_battle_plies


def _judge(pos: RefPosition, rules, history, paths=None) -> tuple[bool, str | None, str | None]:
    """(terminal, winner, reason). ``paths`` may be passed in to avoid generating them twice."""
    _check_rules(rules)
    if pos.phase == "layout":
        return False, None, None
    me_side = pos.to_move
    opp_side = _other_side(me_side)
    n_me = pos.board.count(_stone_of(me_side))
    n_opp = pos.board.count(_stone_of(opp_side))

    def ply_cap():
        if pos.ply - LAYOUT_PLIES < rules.max_battle_plies:
            return None
        if rules.adjudicate == "stones" and n_me != n_opp:
            return True, me_side if n_me > n_opp else opp_side, "ply-cap"
        return True, "draw", "ply-cap"

    # (0) the lead's end_order option: the cap may be checked before everything else
    if getattr(rules, "end_order", "decisive-first") == "cap-first" and ply_cap():
        return ply_cap()
    # (1) stone counts: the side to move first, then the opponent
    if n_me < rules.loss_below:
        return True, opp_side, "stones"
    if n_opp < rules.loss_below:
        return True, me_side, "stones"
    # (2) no legal move
    if paths is None:
        paths = _battle_paths(pos, rules)
    if not paths:
        return True, opp_side, "no-move"
    # (3) repetition of (board, side to move) within the battle
    if rules.repetition_draw > 0:
        hist = list(history) if history else [pos]
        if hist[-1] != pos:
            # RULING (leniency): a history that does not end with pos is taken to be followed by pos.
            hist.append(pos)
        occurrences = sum(
            1 for h in hist if h.phase == "battle" and h.board == pos.board and h.to_move == pos.to_move
        )
        if occurrences >= rules.repetition_draw:
            return True, "draw", "repetition"
    # (4) battle ply cap
    return ply_cap() or (False, None, None)


def outcome(pos: RefPosition, rules, history=None) -> tuple[bool, str | None]:
    """(terminal, winner) with winner in {'w', 'b', 'draw', None}.

    ``history``: the battle's positions so far including ``pos`` as the last element (None = [pos]).
    """
    terminal, winner, _ = _judge(pos, rules, history)
    return terminal, winner


def legal_paths(pos: RefPosition, rules) -> dict[str, int]:
    """Battle: path -> k (squares formed, before capping). Layout: placement point -> 0.

    Empty if the position is terminal as far as can be seen from the position alone (stone counts,
    no legal move, ply cap); repetition needs a history and is not looked at here.
    """
    _check_rules(rules)
    if pos.phase == "layout":
        return {_POINT_NAMES[i]: 0 for i in _layout_placements(pos)}
    if _visible_end(pos, rules):
        return {}
    return {name: p.squares for name, p in _battle_paths(pos, rules).items()}


def _victim_count(pos: RefPosition, path: _Path) -> int:
    opp = _stone_of(_other_side(pos.to_move))
    left = pos.board.count(opp) - len(path.jumped)
    return min(path.squares, left)


def _victim_candidates(pos: RefPosition, path: _Path) -> list[int]:
    """Opponent stones still on the board after the jump victims, ascending by index."""
    opp = _stone_of(_other_side(pos.to_move))
    jumped = set(path.jumped)
    return [i for i in range(N_POINTS) if pos.board[i] == opp and i not in jumped]


def _move_string(path_name: str, victims) -> str:
    return path_name + "".join("/" + _POINT_NAMES[v] for v in sorted(victims))


def _full_moves(pos: RefPosition, rules):
    """Yield (move string, _Path or placement index, victims tuple) for every full legal move."""
    if pos.phase == "layout":
        for i in _layout_placements(pos):
            yield _POINT_NAMES[i], i, ()
        return
    if _visible_end(pos, rules):
        return
    for name, path in _battle_paths(pos, rules).items():
        m = _victim_count(pos, path)
        for victims in itertools.combinations(_victim_candidates(pos, path), m):
            yield _move_string(name, victims), path, victims


def legal_moves(pos: RefPosition, rules) -> list[str]:
    """All full legal moves (path plus each victim set), sorted as strings; [] if terminal."""
    _check_rules(rules)
    return sorted(move for move, _, _ in _full_moves(pos, rules))


# ---------------------------------------------------------------------------------------------------
# Making moves
# ---------------------------------------------------------------------------------------------------


def _place(pos: RefPosition, point: int) -> RefPosition:
    board = list(pos.board)
    board[point] = _stone_of(pos.to_move)
    ply = pos.ply + 1
    if "." not in board:
        # Section 2.4: the board is full; both centre stones are removed and Black moves first.
        board[G7] = "."
        board[H8] = "."
        return RefPosition(tuple(board), "b", "battle", 0, ply)
    return RefPosition(tuple(board), _other_side(pos.to_move), "layout", 0, ply)


def _play(pos: RefPosition, path: _Path, victims) -> RefPosition:
    board = list(pos.board)
    me = board[path.origin]
    board[path.origin] = "."
    for j in path.jumped:
        board[j] = "."
    board[path.landings[-1]] = me
    for v in victims:
        board[v] = "."
    captured = bool(path.jumped) or bool(victims)
    quiet = 0 if captured else pos.quiet + 1
    return RefPosition(tuple(board), _other_side(pos.to_move), "battle", quiet, pos.ply + 1)


def _check_path_shape(path_text: str, flying: bool) -> None:
    """Reject malformed paths with a message naming the token (before looking at legality)."""
    if "-" in path_text and "x" in path_text:
        raise ValueError(f"move path {path_text!r}: mixes '-' and 'x'")
    if "-" in path_text:
        tokens = path_text.split("-")
        if len(tokens) != 2:
            raise ValueError(f"move path {path_text!r}: a step or flight has exactly two points")
        a, b = (point_index(t) for t in tokens)
        if not flying and b not in ADJACENT[a]:
            raise ValueError(f"move path {path_text!r}: step between non-adjacent points {tokens[0]}, {tokens[1]}")
    elif "x" in path_text:
        tokens = path_text.split("x")
        points = [point_index(t) for t in tokens]
        for t_from, t_to, a, b in zip(tokens, tokens[1:], points, points[1:]):
            if b not in [land for _, land in HOPS[a]]:
                raise ValueError(f"move path {path_text!r}: hop {t_from}x{t_to} is not 2 points along a line")
    else:
        raise ValueError(f"move path {path_text!r}: not a step, flight or jump")


def apply_move(pos: RefPosition, move: str, rules) -> RefPosition:
    """Play a full move (section 4 notation). Raises ValueError if it is malformed or not legal."""
    _check_rules(rules)
    if not isinstance(move, str):
        raise ValueError("a move must be a string")
    if pos.phase == "layout":
        point = point_index(move)
        if point not in _layout_placements(pos):
            raise ValueError(f"placement {move!r} is not legal here")
        return _place(pos, point)

    tokens = move.split("/")
    path_text, victim_tokens = tokens[0], tokens[1:]
    flying = pos.board.count(_stone_of(pos.to_move)) <= FLY_LIMIT
    _check_path_shape(path_text, flying)
    victims = [point_index(t) for t in victim_tokens]
    if len(set(victims)) != len(victims):
        raise ValueError(f"move {move!r}: repeated victim")
    if victims != sorted(victims):
        raise ValueError(f"move {move!r}: victims out of order (must be ascending by point index)")
    if _visible_end(pos, rules):
        raise ValueError(f"move {move!r}: the position is terminal")
    paths = _battle_paths(pos, rules)
    if path_text not in paths:
        raise ValueError(f"move {move!r}: path {path_text!r} is not legal in this position")
    path = paths[path_text]
    need = _victim_count(pos, path)
    if len(victims) != need:
        raise ValueError(f"move {move!r}: takes {len(victims)} square victims, must take exactly {need}")
    allowed = set(_victim_candidates(pos, path))
    for t, v in zip(victim_tokens, victims):
        if v not in allowed:
            raise ValueError(f"move {move!r}: victim {t} is not an opponent stone left on the board")
    return _play(pos, path, tuple(victims))


# ---------------------------------------------------------------------------------------------------
# Perft and random games
# ---------------------------------------------------------------------------------------------------


def perft(pos: RefPosition, rules, depth: int) -> int:
    """Number of full-move leaves at ``depth``; terminal nodes above the leaves contribute 0.

    Terminality here is what the position alone shows (stone counts, no move, ply cap): perft carries
    no repetition history.
    """
    _check_rules(rules)
    if depth == 0:
        return 1
    if pos.phase == "layout":
        points = _layout_placements(pos)
        if depth == 1:
            return len(points)
        return sum(perft(_place(pos, p), rules, depth - 1) for p in points)
    if _visible_end(pos, rules):
        return 0
    total = 0
    for path in _battle_paths(pos, rules).values():
        m = _victim_count(pos, path)
        candidates = _victim_candidates(pos, path)
        if depth == 1:
            total += math.comb(len(candidates), m)
        else:
            for victims in itertools.combinations(candidates, m):
                total += perft(_play(pos, path, victims), rules, depth - 1)
    return total


def random_game(seed: int, rules) -> tuple[list[str], str | None, str]:
    """Play a uniformly random game from the start position.

    Each ply: ``rng.choice`` over the legal paths sorted as strings (placement points in the layout),
    then, if the path must take m > 0 square victims, ``rng.sample(candidates, m)`` over the opponent's
    remaining stones in ascending index order (a uniform m-subset). Returns (moves, winner, reason).
    """
    _check_rules(rules)
    rng = random.Random(seed)
    pos = START_POSITION
    moves: list[str] = []
    history: list[RefPosition] = []
    while True:
        if pos.phase == "layout":
            names = sorted(_POINT_NAMES[i] for i in _layout_placements(pos))
            choice = rng.choice(names)
            moves.append(choice)
            pos = _place(pos, point_index(choice))
            continue
        history.append(pos)
        paths = _battle_paths(pos, rules)
        terminal, winner, reason = _judge(pos, rules, history, paths)
        if terminal:
            return moves, winner, reason
        name = rng.choice(sorted(paths))
        path = paths[name]
        m = _victim_count(pos, path)
        victims = tuple(sorted(rng.sample(_victim_candidates(pos, path), m))) if m > 0 else ()
        moves.append(_move_string(name, victims))
        pos = _play(pos, path, victims)
