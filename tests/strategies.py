"""Hypothesis strategies for Jiu positions and rulesets.

- ``rulesets()``: every combination of the rule book's options.
- ``battle_boards()``: edge-case battle boards built directly: chosen stone counts (the flying stage
  for one or both sides, near-empty boards, full boards), with planted shapes (nearly complete squares
  and double squares, lines of alternating stones that make multi-hop chains).
- ``played_positions()``: seeded random playouts from such boards with a bias toward captures, so
  that positions reached by play (after squares, chains and flights) are covered too.
- ``layout_positions()``: random layout positions reached by legal placements.

Positions are returned as JFEN strings so both the engine and the reference can parse them.
"""

from __future__ import annotations

import random

from hypothesis import strategies as st

from core.board import NUM_POINTS, SIZE
from core.jfen import format_jfen
from core.rules import Ruleset


@st.composite
def rulesets(draw) -> Ruleset:
    return Ruleset(
        chain_revisit=draw(st.sampled_from(["forbid", "allow"])),
        fly_jump_rule=draw(st.sampled_from(["strong-side-multi", "all-multi", "none"])),
        loss_below=draw(st.sampled_from([1, 4, 14])),
        repetition_draw=draw(st.sampled_from([0, 2, 3])),
        max_battle_plies=draw(st.sampled_from([1, 50, 1000])),
        adjudicate=draw(st.sampled_from(["none", "stones"])),
        end_order=draw(st.sampled_from(["decisive-first", "cap-first"])),
    )


def _plant_shapes(rng: random.Random, cells: list[int], n_shapes: int) -> None:
    """Plant shapes on ``cells`` (0 empty, 1 White, 2 Black), keeping the stone counts roughly as drawn."""
    for _ in range(n_shapes):
        kind = rng.randrange(3)
        c0, r0 = rng.randrange(SIZE - 2), rng.randrange(SIZE - 2)
        colour = rng.choice((1, 2))
        if kind == 0:  # a 2x3 block with one corner empty: gates, squares, a double square nearby
            for dc in range(2):
                for dr in range(3):
                    cells[(r0 + dr) * SIZE + c0 + dc] = colour
            cells[(r0 + rng.choice((0, 2))) * SIZE + c0 + rng.randrange(2)] = 0
        elif kind == 1:  # alternating line: colour, enemy, empty, enemy, empty ... (multi-hop chains)
            horizontal = rng.random() < 0.5
            for i in range(min(SIZE - (c0 if horizontal else r0), 9)):
                p = r0 * SIZE + c0 + i if horizontal else (r0 + i) * SIZE + c0
                cells[p] = colour if i == 0 else (3 - colour if i % 2 else 0)
        else:  # a ring: enemy stones around a point, with empty landing points (chains that turn)
            cc, rr = c0 + 1, r0 + 1
            for dc, dr in ((0, 1), (1, 0), (0, -1), (-1, 0)):
                if 0 <= cc + dc < SIZE and 0 <= rr + dr < SIZE:
                    cells[(rr + dr) * SIZE + cc + dc] = 3 - colour
            cells[rr * SIZE + cc] = colour


def random_battle_jfen(rng: random.Random, n_white: int, n_black: int, shapes: int = 0) -> str:
    """A battle JFEN with about ``n_white``/``n_black`` stones at random (then ``shapes`` planted)."""
    cells = [0] * NUM_POINTS
    points = list(range(NUM_POINTS))
    rng.shuffle(points)
    for i, p in enumerate(points[: n_white + n_black]):
        cells[p] = 1 if i < n_white else 2
    _plant_shapes(rng, cells, shapes)
    if all(cells):  # a battle board always has an empty point
        cells[rng.randrange(NUM_POINTS)] = 0
    for colour in (1, 2):  # at most 98 stones a side
        extra = sum(1 for c in cells if c == colour) - 97
        for p in range(NUM_POINTS):
            if extra <= 0:
                break
            if cells[p] == colour:
                cells[p] = 0
                extra -= 1
    import numpy as np

    board = np.array(cells, np.int8)
    side = rng.randrange(2)
    battle_plies = rng.randrange(60)
    return format_jfen(board, side, 1, rng.randint(0, battle_plies), NUM_POINTS + battle_plies)


_COUNT_RANGES = ((3, 14), (14, 16), (15, 40), (40, 97), (0, 3))


@st.composite
def battle_boards(draw) -> str:
    """Edge-case battle positions (JFEN)."""
    seed = draw(st.integers(0, 2**32 - 1))
    lo_w, hi_w = draw(st.sampled_from(_COUNT_RANGES))
    lo_b, hi_b = draw(st.sampled_from(_COUNT_RANGES))
    rng = random.Random(seed)
    return random_battle_jfen(rng, rng.randint(lo_w, hi_w), rng.randint(lo_b, hi_b), draw(st.integers(0, 4)))


def random_playout(state, rng: random.Random, plies: int):
    """Up to ``plies`` uniformly random full moves from ``state``; the states visited, ``state`` first."""
    visited = [state]
    for _ in range(plies):
        moves = state.legal_moves()
        if not moves:
            break
        state = state.apply(rng.choice(moves))
        visited.append(state)
    return visited


def biased_playout(state, rng: random.Random, plies: int, capture_bias: float = 0.7):
    """Play up to ``plies`` random moves from ``state`` preferring captures with probability
    ``capture_bias``; returns the list of states visited (``state`` first)."""
    visited = [state]
    for _ in range(plies):
        if state.is_terminal():
            break
        ps = state.paths()
        captures = [i for i in range(ps.m) if ps.jump[i] or ps.nsq[i]]
        i = rng.choice(captures) if captures and rng.random() < capture_bias else rng.randrange(ps.m)
        from core.notation import Move

        path, jump = ps.path(i), bool(ps.jump[i])
        left = state.victims_left(path, jump)
        victims = tuple(sorted(rng.sample(left, min(int(ps.nsq[i]), len(left)))))
        state = state.apply(Move(path, jump, victims))
        visited.append(state)
    return visited


@st.composite
def played_positions(draw, ruleset: Ruleset | None = None) -> str:
    """A position reached by a capture-biased random playout from an edge-case board (JFEN)."""
    from core.state import GameState

    start = draw(battle_boards())
    seed = draw(st.integers(0, 2**32 - 1))
    plies = draw(st.integers(0, 30))
    state = GameState.from_jfen(start, ruleset or Ruleset())
    return biased_playout(state, random.Random(seed), plies)[-1].to_jfen()


@st.composite
def layout_positions(draw) -> str:
    """A layout position after a random number of random legal placements (JFEN)."""
    from core.state import GameState

    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(0, 195))
    s = GameState.initial()
    for _ in range(n):
        s = s._play(rng.choice(s.legal_moves()))
    return s.to_jfen()


def shuffle_to_a_draw(white: int, black: int, seed: int):
    """A battle game of quiet steps back and forth (White a-b, Black c-d, twice) whose next Black step
    ``d-c`` repeats the start position a third time (a draw, rule book: ``repetition_draw`` 3); the
    step is among Black's 12 best by the expert's score (the ones its repetition check looks at).
    Returns ``(state before that step, index of the step)`` or ``None`` for this board."""
    import numpy as np

    from core.notation import Move
    from core.state import GameState
    from knowledge.agents import ExpertAgent

    def quiet_step(s, a, b):
        ps = s.paths()
        for i in range(ps.m):
            if ps.path(i) == (a, b) and not ps.jump[i] and ps.nsq[i] == 0:
                return i
        return None

    start = GameState.from_jfen(random_battle_jfen(random.Random(seed), white, black))
    if start.side != 0 or start.is_terminal():
        return None
    expert, ps = ExpertAgent(plies=1), start.paths()
    for i in range(ps.m):
        a, b = ps.path(i) if len(ps.path(i)) == 2 else (None, None)
        if a is None or ps.jump[i] or ps.nsq[i]:
            continue
        p1 = start._play(Move((a, b)))  # paths of the position itself: legal, so played unchecked
        q = p1.paths()
        for j in range(q.m):
            c, d = q.path(j) if len(q.path(j)) == 2 else (None, None)
            if c is None or q.jump[j] or q.nsq[j]:
                continue
            p2 = p1._play(Move((c, d)))
            if quiet_step(p2, b, a) is None:
                continue
            p3 = p2._play(Move((b, a)))
            back = quiet_step(p3, d, c)
            if back is None:
                continue
            s = p3._play(Move((d, c)))._play(Move((a, b)))._play(Move((c, d)))._play(Move((b, a)))
            k = quiet_step(s, d, c)
            scores = expert.battle_scores(s)[0]
            if k is not None and k in np.argsort(-scores, kind="stable")[:12] and not s.is_terminal():
                return s, k
    return None
