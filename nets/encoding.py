"""Action encodings for the nets (rule book section 8): layout, battle upper (paths) and lower (victims).

Three action spaces, all plain ``int`` indices:

**Layout** (the SLM's actions): ``NUM_LAYOUT_ACTIONS = 196``; a placement's index is its point index.

**Battle upper** (the path of a move): ``NUM_UPPER_ACTIONS = 48,804``, in three blocks.

============================  ====================================================  ==================
block                         index                                                 range
============================  ====================================================  ==================
step from ``o``, direction d  ``4*o + d`` (0 up = row+1, 1 down, 2 left, 3 right;    0 .. 783
                              the order of ``core.board.DIRECTIONS``)
jump chain ``o`` ... ``e``    ``784 + 49*o + 7*(row0(e)//2) + col0(e)//2``          784 .. 10,387
flight ``o`` -> ``e``         ``10,388 + 196*o + e``                                10,388 .. 48,803
============================  ====================================================  ==================

The first two blocks are the JFA paper's ``196 * 53 = 10,388`` (``PAPER_UPPER_ACTIONS``). A jump
chain's end always has its origin's row and column parity, so the 7 x 7 sub-lattice identifies it.

Decisions (the lead's, recorded here):

- A two-point non-jump path between **adjacent** points always gets its **step** index, also when the
  side is flying (rule book 3.1: a flight to a neighbour is written like a step, so it is the same
  move). The flight block is used only for non-adjacent destinations. The flight indices whose
  destination is adjacent to the origin (``10,388 + 196*o + n`` for a neighbour ``n`` of ``o``) are
  therefore **never produced** by the encoder; :func:`decode_upper` still decodes them to the same
  ``('flight', o, n)`` move, which the caller may treat as the step ``o-n``.
- Several legal paths can share one index: jump chains with the same origin and end (different
  routes). The search keeps them as separate children and splits the prior (rule book section 8).
  Nothing else collides: the encoder is injective on everything but those chains.
- A jump chain ending on its own origin is impossible under the default ``chain_revisit = forbid``
  (the origin counts as occupied), but legal under ``chain_revisit = allow`` (a loop of 4+ hops).
  The encoder encodes it like any chain; :func:`decode_upper` rejects that index unless called with
  ``allow_revisit=True``.

**Battle lower** (the square victims, the paper's 19,307): ``NUM_LOWER_ACTIONS = 19,307``; one victim
``v`` -> ``v`` (0..195); two victims ``i > j`` -> ``196 + i*(i-1)//2 + j`` (196..19,305); no victim ->
``LOWER_NONE = 19,306``.

Three or four victims (only a flight can form 3 or 4 squares, rule book 3.3) do not fit one lower
action; they are a **sequence of two lower actions** (:func:`lower_sequence`), with one canonical
order so that every victim set has exactly one sequence:

- 3 victims ``a < b < c``: ``[pair(c, b), single(a)]`` (the pair of the two largest points first,
  then the smallest point alone);
- 4 victims ``a < b < c < d``: ``[pair(d, c), pair(b, a)]`` (the two largest, then the two smallest).

So in a canonical sequence the first action is always a pair and every victim of the second action
is smaller than both victims of the first. 0, 1 or 2 victims are a one-element sequence
(``[LOWER_NONE]``, ``[v]``, ``[pair]``). :func:`victims_from_sequence` is the exact inverse and rejects
non-canonical sequences. Under a board symmetry transform the *victim set* and re-encode it
(``lower_sequence(transform_move(m, s).victims)``): mapping the two actions one by one keeps the set
but not necessarily the canonical order.

Hot path: :func:`encode_paths` encodes the CSR path arrays of ``core.movegen`` in one Numba kernel,
without a Python object per path.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from core.board import NEIGHBOR, NUM_POINTS, SIZE
from core.jit import inline_kernel, kernel
from core.notation import Move

NUM_LAYOUT_ACTIONS = NUM_POINTS  # 196

NUM_STEP_ACTIONS = 4 * NUM_POINTS  # 784
JUMP_BASE = NUM_STEP_ACTIONS  # 784
HALF = SIZE // 2  # 7: side of the jump-end sub-lattice
JUMP_PER_ORIGIN = HALF * HALF  # 49
FLIGHT_BASE = JUMP_BASE + JUMP_PER_ORIGIN * NUM_POINTS  # 10,388
PAPER_UPPER_ACTIONS = FLIGHT_BASE  # 196 * 53 = 10,388: steps and jumps, the JFA paper's upper space
NUM_UPPER_ACTIONS = FLIGHT_BASE + NUM_POINTS * NUM_POINTS  # 48,804

PAIR_BASE = NUM_POINTS  # 196
NUM_PAIRS = NUM_POINTS * (NUM_POINTS - 1) // 2  # 19,110
LOWER_NONE = PAIR_BASE + NUM_PAIRS  # 19,306
NUM_LOWER_ACTIONS = LOWER_NONE + 1  # 19,307

UPPER_KINDS = ("step", "jump", "flight")


# --------------------------------------------------------------------------------------------- layout
def encode_layout(point: int) -> int:
    """Layout (SLM) action of a placement on ``point``: the point index itself (rule book section 8).

    Accepts an ``int`` point index or a placement ``Move``. Raises ``ValueError`` if the point is not in
    0..195 (or the move is not a placement)."""
    if isinstance(point, Move):
        if not point.is_placement:
            raise ValueError(f"encode_layout: {point} is not a placement")
        point = point.origin
    p = _point(point, "layout point")
    return p


def decode_layout(index: int) -> int:
    """Point index of layout action ``index`` (0..195); raises ``ValueError`` out of range."""
    return _point(index, "layout action")


# --------------------------------------------------------------------------------------------- upper
def _point(p, what: str) -> int:
    if isinstance(p, (bool, np.bool_)) or not isinstance(p, (int, np.integer)):
        raise ValueError(f"{what} {p!r}: not an integer")
    p = int(p)
    if not 0 <= p < NUM_POINTS:
        raise ValueError(f"{what} {p}: out of range 0..{NUM_POINTS - 1}")
    return p


def _step_dir(o: int, e: int) -> int:
    """Direction 0..3 from ``o`` to its neighbour ``e``, or -1 if they are not adjacent."""
    for d in range(4):
        if NEIGHBOR[o, d] == e:
            return d
    return -1


def encode_upper(move_or_path: Move | Sequence[int], jump: bool | None = None) -> int:
    """Upper action (0..48,803) of a battle path (rule book section 8).

    ``move_or_path`` is a ``Move`` (its ``jump`` flag is used unless ``jump`` is given; its victims are
    ignored) or a sequence of point indices (origin, then the destination or every landing) with
    ``jump`` given. Adjacent two-point non-jump paths get the step index (also for a flying side);
    non-adjacent ones the flight index.

    Raises ``ValueError`` for a placement (use :func:`encode_layout`), points out of range, a step or
    flight that does not have exactly two distinct points, a hop that is not two points along a line,
    or a missing/contradicting ``jump`` flag. Legality in a position is not checked.
    """
    if isinstance(move_or_path, Move):
        if jump is not None and bool(jump) != move_or_path.jump:
            raise ValueError(f"encode_upper: jump={jump!r} contradicts move {move_or_path}")
        path, jump = move_or_path.path, move_or_path.jump
    else:
        if jump is None:
            raise ValueError("encode_upper: give jump=True/False with a bare path")
        path = tuple(move_or_path)
    pts = [_point(p, "path point") for p in path]
    if len(pts) < 2:
        raise ValueError(f"encode_upper: path {pts} has fewer than 2 points (a placement? use encode_layout)")
    o, e = pts[0], pts[-1]
    if jump:
        for a, b in zip(pts, pts[1:]):
            (ac, ar), (bc, br) = (a % SIZE, a // SIZE), (b % SIZE, b // SIZE)
            if not ((ac == bc and abs(ar - br) == 2) or (ar == br and abs(ac - bc) == 2)):
                raise ValueError(f"encode_upper: hop {a}->{b} is not two points along a line")
        return JUMP_BASE + JUMP_PER_ORIGIN * o + HALF * ((e // SIZE) // 2) + (e % SIZE) // 2
    if len(pts) != 2:
        raise ValueError(f"encode_upper: a step or flight has exactly 2 points, got {pts}")
    if o == e:
        raise ValueError(f"encode_upper: step/flight from {o} to itself")
    d = _step_dir(o, e)
    if d >= 0:
        return 4 * o + d
    return FLIGHT_BASE + NUM_POINTS * o + e


def upper_kind(index: int) -> str:
    """``'step'``, ``'jump'`` or ``'flight'``: the block of upper action ``index`` (no other check
    than the range; raises ``ValueError`` outside 0..48,803)."""
    i = _upper_index(index)
    return "step" if i < JUMP_BASE else "jump" if i < FLIGHT_BASE else "flight"


def _upper_index(index) -> int:
    if isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer)):
        raise ValueError(f"upper action {index!r}: not an integer")
    i = int(index)
    if not 0 <= i < NUM_UPPER_ACTIONS:
        raise ValueError(f"upper action {i}: out of range 0..{NUM_UPPER_ACTIONS - 1}")
    return i


def decode_upper(index: int, *, allow_revisit: bool = False) -> tuple[str, int, int]:
    """``(kind, origin, end)`` of upper action ``index``; ``kind`` in ``'step'``, ``'jump'``,
    ``'flight'`` (rule book section 8).

    A jump index gives only the chain's origin and end (the route is not encoded). A flight index whose
    end is adjacent to the origin decodes to that ``('flight', o, n)`` move although the encoder never
    produces it (it uses the step index).

    Raises ``ValueError`` for an index outside 0..48,803 or one no path can have: a step off the board,
    a flight to its own origin, and a jump chain ending on its origin unless ``allow_revisit``
    (``chain_revisit = allow`` makes such loops legal).
    """
    i = _upper_index(index)
    if i < JUMP_BASE:
        o, d = divmod(i, 4)
        e = int(NEIGHBOR[o, d])
        if e < 0:
            raise ValueError(f"upper action {i}: step from point {o} in direction {d} leaves the board")
        return "step", o, e
    if i < FLIGHT_BASE:
        o, sub = divmod(i - JUMP_BASE, JUMP_PER_ORIGIN)
        r2, c2 = divmod(sub, HALF)
        e = (2 * r2 + (o // SIZE) % 2) * SIZE + 2 * c2 + (o % SIZE) % 2
        if e == o and not allow_revisit:
            raise ValueError(
                f"upper action {i}: jump chain ending on its origin {o} (only legal with chain_revisit=allow)"
            )
        return "jump", o, e
    o, e = divmod(i - FLIGHT_BASE, NUM_POINTS)
    if o == e:
        raise ValueError(f"upper action {i}: flight from point {o} to itself")
    return "flight", o, e


@inline_kernel
def encode_path(pts, start, stop, is_jump):
    """Upper action of the path ``pts[start:stop]`` (``int16``), a jump chain when ``is_jump``.
    No checks beyond returning -1 for a path of fewer than 2 points. For use inside other kernels."""
    if stop - start < 2:
        return -1
    o = np.int32(pts[start])
    e = np.int32(pts[stop - 1])
    if is_jump:
        return JUMP_BASE + JUMP_PER_ORIGIN * o + HALF * ((e // SIZE) // 2) + (e % SIZE) // 2
    d = e - o
    if d == SIZE:
        return 4 * o
    if d == -SIZE:
        return 4 * o + 1
    if d == -1 and e // SIZE == o // SIZE:
        return 4 * o + 2
    if d == 1 and e // SIZE == o // SIZE:
        return 4 * o + 3
    return FLIGHT_BASE + NUM_POINTS * o + e


@kernel
def encode_paths(pts, off, jump, m):
    """Upper actions of the first ``m`` paths of a CSR path set (``core.movegen``; rule book section 8).

    ``pts`` ``int16[K]``, ``off`` ``int32[M+1]``, ``jump`` ``int8[M]`` with ``M >= m``. Returns
    ``int32[m]``; path ``i`` gets the same index as ``encode_upper`` would give it. The paths are
    assumed well formed (as generated); nothing is validated.
    """
    out = np.empty(m, np.int32)
    for i in range(m):
        out[i] = encode_path(pts, off[i], off[i + 1], jump[i] != 0)
    return out


# --------------------------------------------------------------------------------------------- lower
def _victims(victims: Iterable[int]) -> list[int]:
    vs = sorted(_point(v, "victim") for v in victims)
    for a, b in zip(vs, vs[1:]):
        if a == b:
            raise ValueError(f"victim {a} repeated")
    return vs


def _pair(i: int, j: int) -> int:
    """Lower action of the pair ``i > j``."""
    return PAIR_BASE + i * (i - 1) // 2 + j


def encode_lower(victims: Iterable[int]) -> int:
    """Lower action (0..19,306) of a set of 0, 1 or 2 square victims (point indices, any order):
    ``()`` -> ``LOWER_NONE``, ``(v,)`` -> ``v``, ``{i > j}`` -> ``196 + i*(i-1)//2 + j`` (rule book
    section 8).

    Raises ``ValueError`` for points out of range, repeated victims, or more than 2 victims (those are
    a sequence of lower actions: :func:`lower_sequence`)."""
    vs = _victims(victims)
    if len(vs) == 0:
        return LOWER_NONE
    if len(vs) == 1:
        return vs[0]
    if len(vs) == 2:
        return _pair(vs[1], vs[0])
    raise ValueError(f"encode_lower: {len(vs)} victims do not fit one lower action; use lower_sequence")


def decode_lower(index: int) -> tuple[int, ...]:
    """The victims of lower action ``index`` as an ascending tuple (``()`` for ``LOWER_NONE``).
    Raises ``ValueError`` outside 0..19,306."""
    if isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer)):
        raise ValueError(f"lower action {index!r}: not an integer")
    k = int(index)
    if not 0 <= k < NUM_LOWER_ACTIONS:
        raise ValueError(f"lower action {k}: out of range 0..{NUM_LOWER_ACTIONS - 1}")
    if k == LOWER_NONE:
        return ()
    if k < PAIR_BASE:
        return (k,)
    t = k - PAIR_BASE
    i = int((1 + np.sqrt(1 + 8 * t)) // 2)  # largest i with i*(i-1)/2 <= t, fixed up below
    while i * (i - 1) // 2 > t:
        i -= 1
    while (i + 1) * i // 2 <= t:
        i += 1
    return (t - i * (i - 1) // 2, i)


def lower_sequence(victims: Iterable[int]) -> list[int]:
    """The canonical sequence of lower actions for 0..4 square victims (see the module docstring):
    ``[LOWER_NONE]``, ``[v]``, ``[pair]``, for 3 victims ``a < b < c`` ``[pair(c, b), a]``, for 4
    victims ``a < b < c < d`` ``[pair(d, c), pair(b, a)]``.

    Raises ``ValueError`` for points out of range, repeated victims or more than 4 victims."""
    vs = _victims(victims)
    if len(vs) <= 2:
        return [encode_lower(vs)]
    if len(vs) == 3:
        return [_pair(vs[2], vs[1]), vs[0]]
    if len(vs) == 4:
        return [_pair(vs[3], vs[2]), _pair(vs[1], vs[0])]
    raise ValueError(f"lower_sequence: {len(vs)} victims; a move takes at most 4")


def victims_from_sequence(sequence: Sequence[int]) -> tuple[int, ...]:
    """Inverse of :func:`lower_sequence`: the ascending victim tuple of a canonical sequence.

    Raises ``ValueError`` for an empty or too long sequence, bad indices, ``LOWER_NONE`` inside a
    two-action sequence, repeated victims, or a sequence that is not the canonical one (the first of two
    actions must be a pair, and the victims of the second must all be smaller than those of the
    first)."""
    seq = list(sequence)
    if len(seq) == 1:
        return decode_lower(seq[0])
    if len(seq) != 2:
        raise ValueError(f"victims_from_sequence: {len(seq)} actions; a canonical sequence has 1 or 2")
    first, second = decode_lower(seq[0]), decode_lower(seq[1])
    if len(first) != 2:
        raise ValueError(f"victims_from_sequence: first of two actions must be a victim pair, got {first}")
    if len(second) == 0:
        raise ValueError("victims_from_sequence: LOWER_NONE cannot follow another lower action")
    if max(second) >= min(first):
        raise ValueError(
            f"victims_from_sequence: {seq} is not canonical (victims {second} must all be below {first})"
        )
    return second + first
