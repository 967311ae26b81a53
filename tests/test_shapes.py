"""Tests of the shape kernels (core/shapes.py) against the rule book, sections 1, 3 and 5.

The naive references below work on (column, row) coordinates only: they use none of the board
tables, none of the kernels and none of the move generator (gate openness has its own small jump
search written from rule book 3.1-3.2).
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.rules import Ruleset
from core.shapes import (
    KIND_DIAGONAL,
    KIND_FLAT,
    KIND_MIXED,
    dalians,
    find_dalians,
    find_gates,
    find_squares,
    gates,
    shape_counts,
    shape_counts_from,
    squares,
)
from core.movegen import cell_sums, generate_capture_paths, generate_paths, new_path_buffers, square_targets
from core.state import GameState

N = 14
DIRS = ((0, 1), (0, -1), (-1, 0), (1, 0))
RULESETS = [Ruleset(chain_revisit=cr, fly_jump_rule=fj) for cr in ("forbid", "allow")
            for fj in ("strong-side-multi", "all-multi", "none")]


def pt(c: int, r: int) -> int:
    """Point index of 0-based column c, row r (rule book section 1)."""
    return r * N + c


def cr_of(p: int) -> tuple[int, int]:
    return p % N, p // N


def at(board, c: int, r: int):
    """Content of (c, r), or None off the board."""
    if 0 <= c < N and 0 <= r < N:
        return int(board[r * N + c])
    return None


# ============================================================================ naive references
def cell_points(c0: int, r0: int):
    return [(c0, r0), (c0 + 1, r0), (c0, r0 + 1), (c0 + 1, r0 + 1)]


def ref_squares(board, side) -> list[int]:
    """Cells (r0 * 13 + c0) whose 4 corners hold side's stones."""
    me = side + 1
    return [r0 * 13 + c0 for r0 in range(13) for c0 in range(13)
            if all(at(board, c, r) == me for c, r in cell_points(c0, r0))]


def ref_reach(board, side, n_own, n_opp, ruleset) -> dict[tuple[int, int], set[tuple[int, int]]]:
    """For every stone of ``side``: the set of points it can end on with one legal move."""
    me, opp = side + 1, 2 - side
    flying = n_own <= 14
    need = 1
    if ruleset.fly_jump_rule == "strong-side-multi" and n_own > 14 and n_opp <= 14:
        need = 2
    if ruleset.fly_jump_rule == "all-multi" and (n_own <= 14 or n_opp <= 14):
        need = 2
    reach = {}
    for oc in range(N):
        for orow in range(N):
            if at(board, oc, orow) != me:
                continue
            b = {(c, r): int(board[r * N + c]) for c in range(N) for r in range(N)}
            b[(oc, orow)] = 0  # the stone leaves its origin
            ends = set()
            if flying:
                ends |= {p for p, v in b.items() if v == 0 and p != (oc, orow)}
            else:
                ends |= {(oc + dc, orow + dr) for dc, dr in DIRS if b.get((oc + dc, orow + dr)) == 0}

            def dfs(cur, hops, visited):
                for dc, dr in DIRS:
                    mid = (cur[0] + dc, cur[1] + dr)
                    land = (cur[0] + 2 * dc, cur[1] + 2 * dr)
                    if b.get(mid) != opp or b.get(land) != 0:
                        continue
                    if ruleset.chain_revisit == "forbid" and land in visited:
                        continue
                    b[mid] = 0
                    if hops + 1 >= need:
                        ends.add(land)
                    dfs(land, hops + 1, visited | {land})
                    b[mid] = opp

            dfs((oc, orow), 0, {(oc, orow)})
            reach[(oc, orow)] = ends
    return reach


def ref_gates(board, side, n_own, n_opp, ruleset) -> list[tuple[int, int, int]]:
    """(cell, empty corner, open) for every cell with exactly 3 corners of side and the 4th empty."""
    me = side + 1
    reach = None
    out = []
    for r0 in range(13):
        for c0 in range(13):
            pts = cell_points(c0, r0)
            vals = [at(board, c, r) for c, r in pts]
            if vals.count(me) != 3 or vals.count(0) != 1:
                continue
            hole = pts[vals.index(0)]
            if reach is None:
                reach = ref_reach(board, side, n_own, n_opp, ruleset)
            is_open = any(hole in ends for o, ends in reach.items() if o not in pts)
            out.append((r0 * 13 + c0, pt(*hole), int(is_open)))
    return out


def ref_dalians(board, side) -> list[tuple[int, int, int]]:
    """(stone, empty, kind) for every Dalian pair, sorted; kind 0 flat / 1 diagonal / 2 both, from the
    offset of the squares' lower-left corners: parallel to the move = flat, else diagonal."""
    me = side + 1
    sq = {(c0, r0) for r0 in range(13) for c0 in range(13)
          if all(at(board, c, r) == me for c, r in cell_points(c0, r0))}
    out = []
    for sr in range(N):
        for sc in range(N):
            if at(board, sc, sr) != me:
                continue
            left = [a for a in sq if (sc, sr) in cell_points(*a)]
            if not left:
                continue
            for dc, dr in DIRS:
                ec, er = sc + dc, sr + dr
                if at(board, ec, er) != 0:
                    continue
                b2 = list(int(v) for v in board)
                b2[pt(sc, sr)] = 0
                b2[pt(ec, er)] = me
                formed = [(c0, r0) for c0 in range(13) for r0 in range(13)
                          if (ec, er) in cell_points(c0, r0)
                          and all(at(b2, c, r) == me for c, r in cell_points(c0, r0))]
                if not formed:
                    continue
                geoms = set()
                for a in left:
                    for bb in formed:
                        ox, oy = bb[0] - a[0], bb[1] - a[1]
                        geoms.add("flat" if ox * dr - oy * dc == 0 else "diagonal")
                kind = 0 if geoms == {"flat"} else 1 if geoms == {"diagonal"} else 2
                out.append((pt(sc, sr), pt(ec, er), kind))
    return sorted(out)


# ============================================================================ boards
# Shape templates in local (dc, dr) coordinates: stones of one colour and points to leave empty.
FLAT = {"stones": [(0, 0), (1, 0), (0, 1), (1, 1), (3, 0), (2, 1), (3, 1)], "empty": [(2, 0)],
        "s": (1, 0), "e": (2, 0)}
DIAGONAL = {"stones": [(0, 0), (1, 0), (0, 1), (1, 1), (2, 2), (1, 3), (2, 3)], "empty": [(1, 2)],
            "s": (1, 1), "e": (1, 2)}
MIXED = {"stones": [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2), (2, 0), (3, 0), (3, 1)],
         "empty": [(2, 1)], "s": (1, 1), "e": (2, 1)}
SQUARE = {"stones": [(0, 0), (1, 0), (0, 1), (1, 1)], "empty": []}
GATE = {"stones": [(0, 0), (1, 0), (0, 1)], "empty": [(1, 1)]}
TEMPLATES = [FLAT, DIAGONAL, MIXED, SQUARE, GATE]
# The 8 symmetries of the square, as maps of local coordinates.
D4 = [lambda x, y: (x, y), lambda x, y: (-x, y), lambda x, y: (x, -y), lambda x, y: (-x, -y),
      lambda x, y: (y, x), lambda x, y: (-y, x), lambda x, y: (y, -x), lambda x, y: (-y, -x)]


def plant(board, template, colour, sym, rnd: random.Random) -> None:
    """Plant ``template`` on ``board`` under local symmetry ``sym`` at a random place that fits."""
    pts = [(p, 1) for p in template["stones"]] + [(p, 0) for p in template["empty"]]
    mapped = [(D4[sym](*p), v) for p, v in pts]
    xs = [p[0] for p, _ in mapped]
    ys = [p[1] for p, _ in mapped]
    ox = rnd.randrange(-min(xs), N - max(xs))
    oy = rnd.randrange(-min(ys), N - max(ys))
    for (x, y), v in mapped:
        board[pt(x + ox, y + oy)] = colour if v else 0


def random_board(rnd: random.Random, p_empty: float, p_white: float) -> np.ndarray:
    board = np.zeros(N * N, np.int8)
    for i in range(N * N):
        if rnd.random() >= p_empty:
            board[i] = 1 if rnd.random() < p_white else 2
    return board


@st.composite
def random_boards(draw):
    """Random boards with a controlled density of each colour (from near-full to near-empty)."""
    rnd = draw(st.randoms(use_true_random=False))
    p_empty = draw(st.sampled_from([0.01, 0.03, 0.08, 0.15, 0.3, 0.5, 0.8, 0.95]))
    p_white = draw(st.sampled_from([0.1, 0.3, 0.5, 0.7, 0.9]))
    return random_board(rnd, p_empty, p_white)


@st.composite
def shape_boards(draw):
    """A random background with classic shapes planted (any symmetry, either colour, overlapping)."""
    rnd = draw(st.randoms(use_true_random=False))
    board = random_board(rnd, draw(st.sampled_from([0.2, 0.5, 0.8, 1.0])), 0.5)
    for _ in range(draw(st.integers(1, 6))):
        plant(board, rnd.choice(TEMPLATES), rnd.choice((1, 2)), rnd.randrange(8), rnd)
    return board


any_board = st.one_of(random_boards(), shape_boards())


@st.composite
def board_and_counts(draw):
    """A board, a side, stone counts (the board's own, or chosen to exercise flight and the fly
    jump rules) and a ruleset."""
    board = draw(any_board)
    side = draw(st.integers(0, 1))
    own = int(np.count_nonzero(board == side + 1))
    opp = int(np.count_nonzero(board == 2 - side))
    n_own = draw(st.sampled_from([own, own, 3, 14, 15, 60]))
    n_opp = draw(st.sampled_from([opp, opp, 3, 14, 15, 60]))
    return board, side, n_own, n_opp, draw(st.sampled_from(RULESETS))


FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def rotate(board):
    """The 180-degree rotation idx -> 195 - idx (rule book section 8)."""
    return board[::-1].copy()


def reflect(board):
    """The reflection (c, r) -> (r, c) across the g7-h8 diagonal."""
    return board.reshape(N, N).T.reshape(-1).copy()


def rot_p(p: int) -> int:
    return 195 - p


def refl_p(p: int) -> int:
    c, r = cr_of(p)
    return pt(r, c)


SYMMETRIES = [  # (name, board map, point map)
    ("identity", lambda b: b.copy(), lambda p: p),
    ("rotation", rotate, rot_p),
    ("reflection", reflect, refl_p),
    ("rotation+reflection", lambda b: rotate(reflect(b)), lambda p: rot_p(refl_p(p))),
]


# ============================================================================ property tests vs references
@FAST
@given(any_board, st.integers(0, 1))
def test_squares_match_reference(board, side):
    got = find_squares(board, side)
    assert got.dtype == np.int16
    assert got.tolist() == ref_squares(board, side)


@FAST
@given(board_and_counts())
def test_gates_match_reference(args):
    board, side, n_own, n_opp, ruleset = args
    cells, empty, opn = find_gates(board, side, n_own, n_opp, ruleset.vector)
    assert (cells.dtype, empty.dtype, opn.dtype) == (np.int16, np.int16, np.int8)
    got = list(zip(cells.tolist(), empty.tolist(), opn.tolist()))
    assert got == ref_gates(board, side, n_own, n_opp, ruleset)


@FAST
@given(any_board, st.integers(0, 1))
def test_dalians_match_reference(board, side):
    stones, empties, kinds = find_dalians(board, side)
    assert (stones.dtype, empties.dtype, kinds.dtype) == (np.int16, np.int16, np.int8)
    got = list(zip(stones.tolist(), empties.tolist(), kinds.tolist()))
    assert got == ref_dalians(board, side)


@FAST
@given(board_and_counts())
def test_shape_counts_match_detectors(args):
    board, side, n_own, n_opp, ruleset = args
    counts = shape_counts(board, side, n_own, n_opp, ruleset.vector)
    g = ref_gates(board, side, n_own, n_opp, ruleset)
    expect = (len(ref_squares(board, side)), len(g), sum(o for _, _, o in g), len(ref_dalians(board, side)))
    assert tuple(int(x) for x in counts) == expect


@FAST
@given(any_board)
def test_cell_sums_count_every_corner(board):
    """``cell_sums`` holds, per cell, its White, Black and empty corners (in the bits that
    ``cell_count`` reads), as counted corner by corner."""
    from core.board import CELL_CORNERS, NUM_CELLS
    from core.movegen import CELL_CODE

    sums = cell_sums(board, np.full(NUM_CELLS, -1, np.int16))
    for c in range(NUM_CELLS):
        corners = [int(board[q]) for q in CELL_CORNERS[c]]
        assert int(sums[c]) == sum(int(CELL_CODE[v]) for v in corners)
        t = int(sums[c])
        assert (t >> 6, t & 7, (t >> 3) & 7) == (corners.count(0), corners.count(1), corners.count(2))


@FAST
@given(board_and_counts())
def test_shape_counts_from_paths_match_detectors(args):
    """``shape_counts_from`` gives the reference's counts with the side's capture paths (or every
    path) in place of the chains it would generate, and with none."""
    board, side, n_own, n_opp, ruleset = args
    g = ref_gates(board, side, n_own, n_opp, ruleset)
    expect = (len(ref_squares(board, side)), len(g), sum(o for _, _, o in g), len(ref_dalians(board, side)))
    sums = cell_sums(board, np.empty(169, np.int16))
    v = ruleset.vector
    captures = generate_capture_paths(board, side, n_own, n_opp, v, *new_path_buffers(4), square_targets(board, side + 1))
    for m, pts, off, nsq, jump in (captures, generate_paths(board, side, n_own, n_opp, v, *new_path_buffers(4)),
                                   (-1, np.empty(0, np.int16), np.zeros(1, np.int32), None, np.empty(0, np.int8))):
        counts = shape_counts_from(board, sums, side, n_own, n_opp, v, pts, off, jump, m)
        assert tuple(int(x) for x in counts) == expect


@settings(max_examples=150, deadline=None)
@given(any_board, st.integers(0, 1), st.sampled_from(SYMMETRIES[1:]))
def test_detectors_commute_with_board_symmetries(board, side, sym):
    """Rule book section 8: the rules, hence every shape and its kind, map onto themselves."""
    _, bmap, pmap = sym
    b2 = bmap(board)
    s1, e1, k1 = find_dalians(board, side)
    s2, e2, k2 = find_dalians(b2, side)
    assert sorted((pmap(s), pmap(e), k) for s, e, k in zip(s1.tolist(), e1.tolist(), k1.tolist())) == \
        list(zip(s2.tolist(), e2.tolist(), k2.tolist()))
    rules = Ruleset().vector
    own = int(np.count_nonzero(board == side + 1))
    opp = int(np.count_nonzero(board == 2 - side))
    _, h1, o1 = find_gates(board, side, own, opp, rules)
    _, h2, o2 = find_gates(b2, side, own, opp, rules)
    assert sorted((pmap(h), o) for h, o in zip(h1.tolist(), o1.tolist())) == sorted(zip(h2.tolist(), o2.tolist()))
    assert len(find_squares(board, side)) == len(find_squares(b2, side))


@settings(max_examples=200, deadline=None)
@given(any_board, st.integers(0, 1))
def test_every_dalian_is_flat_or_diagonal(board, side):
    """The geometric claim in core/shapes.py's docstring: a square left by s and a square formed at e
    are offset by 2 along the move and by 0 or 1 across it, never anything else."""
    me = side + 1
    for s, e, _ in ref_dalians(board, side):
        (sc, sr), (ec, er) = cr_of(s), cr_of(e)
        dc, dr = ec - sc, er - sr
        b2 = board.copy()
        b2[s], b2[e] = 0, me
        for a in [(c0, r0) for c0 in range(13) for r0 in range(13)
                  if (sc, sr) in cell_points(c0, r0) and all(at(board, c, r) == me for c, r in cell_points(c0, r0))]:
            for b in [(c0, r0) for c0 in range(13) for r0 in range(13)
                      if (ec, er) in cell_points(c0, r0) and all(at(b2, c, r) == me for c, r in cell_points(c0, r0))]:
                ox, oy = b[0] - a[0], b[1] - a[1]
                along = ox * dc + oy * dr
                across = abs(ox * dr - oy * dc)
                assert along == 2 and across in (0, 1)


# ============================================================================ classic Dalians (rule book 5)
def build(template, colour, origin, sym=0):
    """An otherwise empty board holding ``template`` under local symmetry ``sym``, its bounding box's
    lower-left corner at ``origin``; returns the board and the template's (stone, empty) pair."""
    board = np.zeros(N * N, np.int8)
    mapped = [D4[sym](*p) for p in template["stones"] + template["empty"]]
    ox = origin[0] - min(x for x, _ in mapped)
    oy = origin[1] - min(y for _, y in mapped)

    def place(p):
        x, y = D4[sym](*p)
        assert 0 <= x + ox < N and 0 <= y + oy < N
        return pt(x + ox, y + oy)

    for p in template["stones"]:
        board[place(p)] = colour
    return board, place(template["s"]), place(template["e"])


CLASSIC = [(FLAT, KIND_FLAT), (DIAGONAL, KIND_DIAGONAL)]
POSITIONS = [(0, 0), (5, 4), (10, 10), (3, 9)]  # template origins (a1 corner, centre, top right, ...)


@pytest.mark.parametrize("template,kind", CLASSIC, ids=["flat", "diagonal"])
@pytest.mark.parametrize("origin", POSITIONS)
@pytest.mark.parametrize("local_sym", [0, 5])  # as drawn, and turned by 90 degrees
@pytest.mark.parametrize("sym", SYMMETRIES, ids=[s[0] for s in SYMMETRIES])
@pytest.mark.parametrize("side", [0, 1])
def test_classic_dalian_found(template, kind, origin, local_sym, sym, side):
    _, bmap, pmap = sym
    board, s, e = build(template, side + 1, origin, local_sym)
    # Some opponent stones away from the shape must not matter.
    for p in (pt(13, 0), pt(0, 13), pt(12, 13)):
        if board[p] == 0 and p != e and all(abs(a - b) > 1 for a, b in zip(cr_of(p), cr_of(s))):
            board[p] = 2 - side
    board = bmap(board)
    s, e = pmap(s), pmap(e)
    stones, empties, kinds = find_dalians(board, side)
    assert list(zip(stones.tolist(), empties.tolist(), kinds.tolist())) == [(s, e, kind)]
    assert len(find_dalians(board, 1 - side)[0]) == 0
    assert len(find_squares(board, side)) == 1
    # Shuttle: after s -> e the stone stands on e and e -> s is again a Dalian of the same kind.
    board[s], board[e] = 0, side + 1
    stones, empties, kinds = find_dalians(board, side)
    assert list(zip(stones.tolist(), empties.tolist(), kinds.tolist())) == [(e, s, kind)]


@pytest.mark.parametrize("template", [FLAT, DIAGONAL], ids=["flat", "diagonal"])
@pytest.mark.parametrize("missing", range(7))
def test_six_stone_near_miss_is_no_dalian(template, missing):
    board, s, e = build(template, 1, (4, 4))
    removed = [p for p in np.flatnonzero(board)][missing]
    board[removed] = 0
    assert len(find_dalians(board, 0)[0]) == 0


@pytest.mark.parametrize("template", [FLAT, DIAGONAL], ids=["flat", "diagonal"])
def test_occupied_shuttle_point_is_no_dalian(template):
    board, s, e = build(template, 1, (4, 4))
    board[e] = 2  # the opponent sits on the empty point
    assert len(find_dalians(board, 0)[0]) == 0
    board[e] = 1  # own stone: two squares, nothing to shuttle into
    assert len(find_dalians(board, 0)[0]) == 0


def test_mixed_dalian():
    board, s, e = build(MIXED, 2, (6, 6))
    stones, empties, kinds = find_dalians(board, 1)
    assert (s, e, KIND_MIXED) in list(zip(stones.tolist(), empties.tolist(), kinds.tolist()))


def test_wrappers_on_a_jfen_position():
    # Row 2: a2 b2 c2 d2 white; row 1: a1 b1 . d1 white: the flat gate Dalian b1 <-> c1.
    # Rows 4-7: the diagonal gate in Black: squares k4 l4 k5 l5 and l6 m6 l7 m7, shuttle l5 <-> l6.
    jfen = "14/14/14/14/14/14/14/11BB1/12B1/10BB2/10BB2/14/WWWW10/WW1W10 w battle 0 200"
    state = GameState.from_jfen(jfen)
    assert dalians(state, 0) == [("b1", "c1", "flat")]
    assert dalians(state, 1) == [("l5", "l6", "diagonal")]
    assert squares(state, 0) == ["a1"]
    assert squares(state, 1) == ["k4"]
    assert ("b1", "c1", True) in gates(state, 0)
    assert ("l6", "l6", True) in gates(state, 1)  # cell l6 (l6 m6 l7 m7), empty corner l6


# ============================================================================ gate openness
DEFAULT = Ruleset()


def gate_at(board, side, cell_ll, n_own, n_opp, rules=DEFAULT):
    cells, empty, opn = find_gates(board, side, n_own, n_opp, rules.vector)
    cell = cell_ll[1] * 13 + cell_ll[0]
    hits = [(int(h), int(o)) for c, h, o in zip(cells, empty, opn) if c == cell]
    assert len(hits) == 1, "the gate itself was not found"
    return hits[0]


def gate_board():
    """White gate on cell (3,4): corners (3,4), (3,5), (4,5) white, (4,4) empty. Returns the board."""
    board = np.zeros(N * N, np.int8)
    for p in ((3, 4), (3, 5), (4, 5)):
        board[pt(*p)] = 1
    return board


def test_gate_closed_when_only_its_corners_touch_the_hole():
    board = gate_board()
    board[pt(10, 10)] = 1  # far away, not flying: cannot reach
    assert gate_at(board, 0, (3, 4), 50, 50) == (pt(4, 4), 0)


def test_gate_open_by_step():
    board = gate_board()
    board[pt(5, 4)] = 1  # right of the hole, outside the cell
    assert gate_at(board, 0, (3, 4), 50, 50) == (pt(4, 4), 1)
    board[pt(5, 4)], board[pt(4, 3)] = 0, 1  # below the hole
    assert gate_at(board, 0, (3, 4), 50, 50) == (pt(4, 4), 1)


def test_gate_open_by_flight_only():
    board = gate_board()
    board[pt(10, 10)] = 1
    assert gate_at(board, 0, (3, 4), 14, 50) == (pt(4, 4), 1)  # flying: any stone anywhere
    assert gate_at(board, 0, (3, 4), 15, 50) == (pt(4, 4), 0)  # one stone more: steps only
    board[pt(10, 10)] = 0
    assert gate_at(board, 0, (3, 4), 3, 50) == (pt(4, 4), 0)  # flying but only the corners exist


def test_gate_open_by_jump_only():
    board = gate_board()
    board[pt(4, 2)], board[pt(4, 3)] = 1, 2  # (4,2) jumps the black (4,3) onto the hole
    assert gate_at(board, 0, (3, 4), 50, 50) == (pt(4, 4), 1)
    # strong-side-multi: White > 14, Black <= 14: single jumps are illegal.
    assert gate_at(board, 0, (3, 4), 50, 10) == (pt(4, 4), 0)
    assert gate_at(board, 0, (3, 4), 50, 10, Ruleset(fly_jump_rule="none")) == (pt(4, 4), 1)
    # A two-hop chain (4,0) x (4,2) x (4,4) is legal under that rule.
    board[pt(4, 2)], board[pt(4, 1)], board[pt(4, 0)] = 0, 2, 1
    assert gate_at(board, 0, (3, 4), 50, 10) == (pt(4, 4), 1)
    # The landing is blocked: closed.
    board[pt(4, 2)] = 2
    assert gate_at(board, 0, (3, 4), 50, 50) == (pt(4, 4), 0)


def test_gate_open_only_with_chain_revisit():
    """(4,2) loops (6,2) (6,0) (4,0) back to its origin, then jumps (4,3) onto the hole: 5 hops; the
    direct single hop is illegal under strong-side-multi (White 50 > 14, Black 10 <= 14)."""
    board = gate_board()
    board[pt(4, 2)] = 1
    for p in ((5, 2), (6, 1), (5, 0), (4, 1), (4, 3)):
        board[pt(*p)] = 2
    assert gate_at(board, 0, (3, 4), 50, 10, Ruleset(chain_revisit="forbid")) == (pt(4, 4), 0)
    assert gate_at(board, 0, (3, 4), 50, 10, Ruleset(chain_revisit="allow")) == (pt(4, 4), 1)
    assert ref_gates(board, 0, 50, 10, Ruleset(chain_revisit="allow"))[0][2] == 1


def test_gate_with_opponent_on_fourth_corner_or_two_holes_is_no_gate():
    board = gate_board()
    board[pt(4, 4)] = 2
    assert len(find_gates(board, 0, 50, 50, DEFAULT.vector)[0]) == 0
    board[pt(4, 4)], board[pt(3, 5)] = 0, 0
    assert len(find_gates(board, 0, 50, 50, DEFAULT.vector)[0]) == 0


def test_readonly_board_is_accepted_and_untouched():
    board = gate_board()
    board[pt(4, 2)], board[pt(4, 3)] = 1, 2
    before = board.copy()
    board.setflags(write=False)
    shape_counts(board, 0, 50, 50, DEFAULT.vector)
    find_gates(board, 0, 50, 50, DEFAULT.vector)
    find_dalians(board, 0)
    assert np.array_equal(board, before)
