"""The search's own cost: seconds per simulation of the serial search with the uniform evaluator.

``python -m bench.search_cost [SIMULATIONS]`` prints one JSON object: wall and CPU seconds per
simulation on the search benchmark's 2 layout and 2 battle positions (``bench.search``), 1,600
simulations by default. It uses only the long-standing API (``Search``, ``SearchConfig``,
``UniformEvaluator``, ``bench.search._positions``), so the same file can time an older checkout:
``cd OLD && PYTHONPATH=. python NEW/bench/search_cost.py``. CPU time (``time.process_time``, one
thread works) is what to compare on a loaded machine: other processes inflate the wall time.
"""

from __future__ import annotations

import json
import sys
import time


def search_cost_per_simulation(states, sims: int) -> tuple[float, float]:
    """``(wall, cpu)`` seconds per simulation of serial searches of ``sims`` simulations with the
    uniform evaluator over ``states`` (a fresh tree each)."""
    from nets.evaluator import UniformEvaluator
    from search.mcts import Search, SearchConfig

    wall = cpu = 0.0
    for st in states:
        with Search(UniformEvaluator(), SearchConfig(simulations=sims, threads=1, reuse_tree=False, seed=0)) as search:
            t0, c0 = time.perf_counter(), time.process_time()
            search.run(st)
            wall += time.perf_counter() - t0
            cpu += time.process_time() - c0
    return wall / len(states) / sims, cpu / len(states) / sims


def main(sims: int = 1600) -> dict:
    from bench.search import _positions

    positions = _positions()
    search_cost_per_simulation(positions["layout"][:1] + positions["battle"][:1], 50)  # compile or load kernels
    out = {}
    for phase, states in positions.items():
        wall, cpu = search_cost_per_simulation(states, sims)
        out[phase] = {"wall_seconds_per_simulation": wall, "cpu_seconds_per_simulation": cpu}
    return {"simulations": sims, "search_cost": out}


if __name__ == "__main__":  # pragma: no cover
    import os

    if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
        sys.path.pop(0)  # run as a file: bench/search.py must not shadow the search package
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1600)))
