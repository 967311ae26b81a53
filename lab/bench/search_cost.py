"""The search's own cost: seconds per simulation of the serial search with the uniform evaluator.

``python -m lab.bench.search_cost [SIMULATIONS]`` prints one JSON object: wall and CPU seconds per
simulation on the search benchmark's 2 layout and 2 battle positions (``bench.search``), 1,600
simulations by default; ``python cli.py bench search`` reports the same numbers among its others
(``bench.search.search_cost_per_simulation``). It uses only ``bench.search._positions`` and
``bench.search.search_cost_per_simulation``, which every checkout from 823e529 on has, so the same
file can time an older checkout: ``cd OLD && PYTHONPATH=. python NEW/lab/bench/search_cost.py``.
CPU time (``time.process_time``, one thread works) is what to compare on a loaded machine: other
processes inflate the wall time.
"""

from __future__ import annotations

import json
import sys


def main(sims: int = 1600) -> dict:
    from bench.search import _positions, search_cost_per_simulation

    positions = _positions()
    search_cost_per_simulation(positions["layout"][:1] + positions["battle"][:1], 50)  # compile or load kernels
    out = {}
    for phase, states in positions.items():
        wall, cpu = search_cost_per_simulation(states, sims)
        out[phase] = {"wall_seconds_per_simulation": wall, "cpu_seconds_per_simulation": cpu}
    return {"simulations": sims, "search_cost": out}


if __name__ == "__main__":  # pragma: no cover
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1600)))
