"""How much ``prune.capture``'s ``pool`` changes the search's two-victim choices.

``python -m lab.bench.victim_pool [SIMULATIONS] [POOL...]`` runs the serial searches of
``lab.bench.search_cost`` on the search benchmark's 2 battle positions (uniform evaluator, 1,600
simulations by default), records every distinct position after a path with two square victims pending
that the search resolves, and ranks each again with ``pool`` = each POOL (default 12, the default,
and 30, the former default) and with every stone left in the pool (the exact top ``top``). It
prints one JSON object: per pool, how many of those positions get another best pair, or another
set of 8 best pairs (the lower net's ``victim_candidates`` default), than the exact ranking.
"""

from __future__ import annotations

import json
import sys


def main(sims: int = 1600, pools: tuple[int, ...] = (12, 30)) -> dict:
    import numpy as np

    from bench.search import _positions
    from knowledge.pruning import CapturePruner
    from nets.evaluator import UniformEvaluator
    from search.mcts import Search, SearchConfig

    seen: dict[bytes, tuple] = {}

    class Recorder(CapturePruner):
        def ranked(self, board, me, n_me, k, rules):
            if k == 2:
                seen.setdefault(bytes(board) + bytes((me,)), (np.array(board), me, n_me, k, np.array(rules)))
            return super().ranked(board, me, n_me, k, rules)

    for st in _positions()["battle"]:
        with Search(UniformEvaluator(), SearchConfig(simulations=sims, threads=1, reuse_tree=False, seed=0)) as search:
            search.capture_pruner = Recorder()
            search.run(st)
    out = {"simulations": sims, "positions": len(seen), "pools": {}}
    exact = CapturePruner(pool=196, cache=0)
    want = [exact.ranked(*args)[0] for args in seen.values()]
    for pool in pools:
        pruner = CapturePruner(pool=pool, cache=0)
        best = top8 = 0
        for args, w in zip(seen.values(), want):
            got = pruner.ranked(*args)[0]
            best += not np.array_equal(got[0], w[0])
            top8 += {tuple(s) for s in got[:8].tolist()} != {tuple(s) for s in w[:8].tolist()}
        out["pools"][str(pool)] = {"other_best_pair": best, "other_8_best_pairs": top8}
    return out


if __name__ == "__main__":  # pragma: no cover
    args = [int(a) for a in sys.argv[1:]]
    print(json.dumps(main(args[0] if args else 1600, tuple(args[1:]) or (12, 30))))
