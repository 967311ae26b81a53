"""Expert battle kernels benchmark: the new kernels against the frozen pre-change copy, in one run.

``python -m bench.expert_kernels [--games 2] [--repeats 5]`` builds a fixed set of battle positions
(seeded expert-vs-expert games with noise, every third battle ply, and the position after one seeded
random legal move from each: a search leaf is a position one move off the game), then times on the
same positions, interleaved, the frozen kernels of ``tests/reference_expert_kernels.py`` (``old``) and
those of ``knowledge/expert_kernels.py`` (``new``), each position timed with both in alternating order:

- ``one_ply``: ``ExpertKnowledge(cache=0).one_ply`` (levels and ``battle_scores``);
- ``two_ply_scores``: ``ExpertKnowledge(cache=0).two_ply_scores`` (one-ply scores, then
  ``refine_scores`` with every score exact);
- ``best_score``: ``ExpertKnowledge(cache=0).best_score`` (the alpha cut: the ``eval.expert:plies=2``
  leaf value);
- ``battle_scores`` / ``refine_scores``: the kernels alone on precomputed paths, levels and one-ply
  scores (``refine_scores`` with the cut, as ``best_score`` calls it).

The old side calls the reference kernels exactly as ``knowledge/expert.py`` called them before the
change. Each measure is the best of ``repeats`` passes over all positions, in milliseconds per call;
every result of the new kernels is checked equal to the old one's first. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import random
import time

import numpy as np

from core.state import GameState
from knowledge.agents import ExpertAgent
from knowledge.expert import ExpertKnowledge
from knowledge.pruning_kernels import path_levels
from tests import reference_expert_kernels as ref


def battle_positions(games: int = 2, every: int = 3, max_battle_plies: int = 300) -> list[GameState]:
    """Battle positions of ``games`` seeded expert-vs-expert games (noise 3, layout noise 1): every
    ``every``-th battle ply, each followed by the position one seeded random legal move later."""
    out: list[GameState] = []
    rng = random.Random(12345)
    for g in range(games):
        agents = [ExpertAgent(seed=2 * g + 1, noise=3.0, layout_noise=1.0),
                  ExpertAgent(seed=2 * g + 2, noise=3.0, layout_noise=1.0)]
        s = GameState.initial()
        battle = 0
        while not s.is_terminal() and battle < max_battle_plies:
            if s.phase != 0:
                if battle % every == 0 and s.paths().m > 0:
                    out.append(s)
                    moves = list(s.legal_moves())
                    leaf = s._play(rng.choice(moves))
                    if not leaf.is_terminal() and leaf.paths().m > 0:
                        out.append(leaf)
                battle += 1
            s = s._play(agents[s.side].select(s))
    return out


def _args(state: GameState):
    s = state.side
    ps = state.paths()
    return state.board, s, int(state.counts[s]), int(state.counts[1 - s]), state.ruleset.vector, ps


class OldExpert:
    """``ExpertKnowledge(cache=0)``'s battle scores through the frozen kernels (as before the change)."""

    def __init__(self, k_full: int = 64):
        self.k_full = k_full
        self.weights = np.array(ref.BATTLE_WEIGHTS, np.float64)
        self.eval_weights = np.array(ref.EVAL_WEIGHTS, np.float64)

    def one_ply(self, state):
        board, s, n_own, n_opp, rules, ps = _args(state)
        levels = path_levels(board, s, n_own, n_opp, ps.pts, ps.off, ps.nsq, ps.jump, ps.m)
        scores, _ = ref.battle_scores(board, s, n_own, n_opp, rules, ps.pts, ps.off, ps.nsq, ps.jump, ps.m, levels,
                                      self.weights, self.k_full)
        return scores, levels

    def two_ply_scores(self, state, top=8, replies=48, margin=np.inf):
        one, _ = self.one_ply(state)
        board, s, _, _, rules, ps = _args(state)
        return ref.refine_scores(board, s, state.counts[s], state.counts[1 - s], rules, ps.pts, ps.off, ps.nsq, ps.jump,
                                 ps.m, one, self.weights, self.eval_weights, int(top), int(replies), float(margin))

    def best_score(self, state, top=8, replies=48):
        return float(self.two_ply_scores(state, top, replies, 0.0).max())


def _time_pair(f_old, f_new, items) -> tuple[float, float]:
    """Milliseconds per call of ``f_old`` and ``f_new`` over ``items``, each item timed with both, the
    order alternating from item to item (the second call of a pair runs on warmer caches)."""
    t_old = t_new = 0.0
    for k, x in enumerate(items):
        first, second = (f_old, f_new) if k % 2 else (f_new, f_old)
        t0 = time.perf_counter()
        first(x)
        t1 = time.perf_counter()
        second(x)
        t2 = time.perf_counter()
        if k % 2:
            t_old, t_new = t_old + t1 - t0, t_new + t2 - t1
        else:
            t_new, t_old = t_new + t1 - t0, t_old + t2 - t1
    return t_old * 1000.0 / len(items), t_new * 1000.0 / len(items)


def run(games: int = 2, repeats: int = 5) -> dict:
    states = battle_positions(games)
    new, old = ExpertKnowledge(cache=0), OldExpert()
    w, ew = new.weights, new.eval_weights
    pre = []
    for st in states:
        board, s, n_own, n_opp, rules, ps = _args(st)
        one, levels = old.one_ply(st)
        pre.append((board, s, n_own, n_opp, rules, ps, levels, one))

    def kernel_battle(mod):
        def f(x):
            board, s, n_own, n_opp, rules, ps, levels, _ = x
            return mod.battle_scores(board, s, n_own, n_opp, rules, ps.pts, ps.off, ps.nsq, ps.jump, ps.m, levels, w,
                                     64)[0]
        return f

    def kernel_refine(mod):
        def f(x):
            board, s, n_own, n_opp, rules, ps, _, one = x
            return mod.refine_scores(board, s, n_own, n_opp, rules, ps.pts, ps.off, ps.nsq, ps.jump, ps.m, one, w, ew, 8,
                                     48, 0.0)
        return f

    from knowledge import expert_kernels as cur

    cases = {
        "one_ply": (states, lambda st: old.one_ply(st)[0], lambda st: new.one_ply(st)[0]),
        "two_ply_scores": (states, old.two_ply_scores, new.two_ply_scores),
        "best_score": (states, old.best_score, new.best_score),
        "battle_scores": (pre, kernel_battle(ref), kernel_battle(cur)),
        "refine_scores": (pre, kernel_refine(ref), kernel_refine(cur)),
    }
    for name, (items, f_old, f_new) in cases.items():  # compile or load, and check equality
        for x in items:
            a, b = np.asarray(f_old(x)), np.asarray(f_new(x))
            if a.dtype != b.dtype or not np.array_equal(a, b):
                raise AssertionError(f"{name}: the new kernels differ from the frozen reference")
    best = {name: [np.inf, np.inf] for name in cases}
    for _ in range(repeats):
        for name, (items, f_old, f_new) in cases.items():
            t_old, t_new = _time_pair(f_old, f_new, items)
            best[name][0] = min(best[name][0], t_old)
            best[name][1] = min(best[name][1], t_new)
    result = {"positions": len(states), "repeats": repeats}
    for name, (o, n) in best.items():
        result[name] = {"old_ms": round(o, 4), "new_ms": round(n, 4), "ratio": round(o / n, 3)}
    return result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    print(json.dumps(run(args.games, args.repeats), indent=1))


if __name__ == "__main__":
    main()
