"""Search benchmark (the JFA paper's Table 3 on this machine), measured in one run.

For layout and battle positions, with the tiny nets (the shipped weights when present, else a seeded
random initialisation — speed does not depend on the weights), both compiled for inference
(``nets.inference``) everywhere:

- serial MCTS: one thread in all: one search thread, nets called one position at a time
  (``max_batch=1``) on one torch thread;
- WU-UCT with T = 1, 2, 4, 8, 16 threads sharing a batched evaluator with two batches in flight
  (``clients = T``, ``in_flight = 2``, ``max_batch = ceil(T / 2)``, ``max_wait_ms = 2``) served by
  ``inference_threads`` inference threads (default 2: the nets use both cores, the search threads
  fit in between; 1 keeps the net on one core and the search on the other, the CPU analogue of a
  net on a GPU) on ``torch_threads`` torch intra-op threads each (default 1);
- at 400, 800 and 1,600 simulations: decision time per move (seconds) and simulations per second;
- net-only throughput (positions/s of the raw compiled forward pass) at the same batch sizes, with
  as many concurrent callers as inference threads, on ``torch_threads`` threads (batch 1: one caller
  on one thread, as serial);
- the search's own cost: seconds per simulation of the serial search with the uniform evaluator,
  wall (``search_seconds_per_simulation``) and CPU (``search_cpu_seconds_per_simulation``).

Ratios printed: WU-UCT (best T) over serial at each simulation count, 2 threads over 1, the search's
simulations/s over the net-only throughput at the same batch size (largest T; also per T), and an
**estimated ceiling** of WU-UCT over serial on this machine: every simulation costs at least ``n``
core-seconds of net (one position at the best one-thread net-only throughput measured, any batch) plus
``s`` of search work, so ``C`` cores run at most ``C / (n + s)`` simulations/s; divided by serial's
measured rate. It ignores the lock and GIL hand-offs between threads, and inherits the noise of the
short net-only runs.
The settings used are returned under ``settings``.

Torch threads: two threads raise the net's batch throughput on an idle machine, but collapse when
other processes load it (OpenMP threads spin; see ``nets.evaluator``): measured while three other
Python processes ran, serial battle search fell from ~240 to 6-13 simulations/s. So
``torch_threads=2`` (``bench search --torch-threads 2``) is for an otherwise idle machine only.
"""

from __future__ import annotations

import random
import time

from core.state import GameState
from search.mcts import Search, SearchConfig

SIMULATIONS = (400, 800, 1600)
THREADS = (1, 2, 4, 8, 16)
IN_FLIGHT = 2
MAX_WAIT_MS = 2.0


def _positions() -> dict[str, list[GameState]]:
    """Two layout and two battle positions reached by seeded random play."""
    from core.playout import random_game_moves
    from core.rules import DEFAULT_RULESET

    out: dict[str, list[GameState]] = {"layout": [], "battle": []}
    for seed in (1, 2):
        moves, _, _ = random_game_moves(seed, DEFAULT_RULESET.vector)
        s = GameState.initial()
        for i, m in enumerate(moves[:196 + 60]):
            s = s._play(m)
            if i == 20:
                out["layout"].append(s)
        out["battle"].append(s)
    return out


def search_cost_per_simulation(states, sims: int) -> tuple[float, float]:
    """``(wall, cpu)`` seconds per simulation of serial searches of ``sims`` simulations with the
    uniform evaluator over ``states`` (a fresh tree each; ``python -m lab.bench.search_cost`` prints
    it alone, and can time an older checkout with it)."""
    from nets.evaluator import UniformEvaluator

    wall = cpu = 0.0
    for st in states:
        with Search(UniformEvaluator(), SearchConfig(simulations=sims, threads=1, reuse_tree=False, seed=0)) as search:
            t0, c0 = time.perf_counter(), time.process_time()
            search.run(st)
            wall += time.perf_counter() - t0
            cpu += time.process_time() - c0
    return wall / len(states) / sims, cpu / len(states) / sims


def _nets():
    from nets.config import preset
    from nets.model import build

    import torch

    torch.manual_seed(0)
    return build(preset("slm", "tiny")), build(preset("upper", "tiny"))


def _time_search(evaluator, threads: int, sims: int, states: list[GameState]) -> float:
    """Mean seconds per decision over ``states`` (fresh tree each time)."""
    total = 0.0
    for st in states:
        with Search(evaluator, SearchConfig(simulations=sims, threads=threads, reuse_tree=False, seed=0)) as search:
            t0 = time.perf_counter()
            search.run(st)
            total += time.perf_counter() - t0
    return total / len(states)


def wuuct_batch(threads: int) -> int:
    """The WU-UCT evaluator's batch size for ``threads`` search threads (two batches in flight)."""
    return -(-threads // IN_FLIGHT)


def time_serial(slm, upper, sims: int, states: list[GameState]) -> float:
    """Mean seconds per move of serial MCTS (one search thread, the nets called one position at a
    time on one torch thread) over ``states``."""
    from nets.evaluator import NetEvaluator

    with NetEvaluator(slm, upper, max_batch=1, max_wait_ms=0, num_threads=1) as ev:
        return _time_search(ev, 1, sims, states)


def time_wuuct(slm, upper, threads: int, sims: int, states: list[GameState], torch_threads: int = 1,
               inference_threads: int = 2) -> tuple[float, dict]:
    """``(seconds per move, evaluator batch statistics)`` of WU-UCT with ``threads`` search threads
    sharing a batched evaluator (module docstring) over ``states``."""
    from nets.evaluator import NetEvaluator

    with NetEvaluator(slm, upper, max_batch=wuuct_batch(threads), max_wait_ms=MAX_WAIT_MS, clients=threads,
                      in_flight=IN_FLIGHT, num_threads=torch_threads, inference_threads=inference_threads) as ev:
        t = _time_search(ev, threads, sims, states)
        return t, ev.stats()


def measure_decision_time(phase: str, sims: int, threads: int, torch_threads: int = 1,
                          inference_threads: int = 2) -> dict:
    """One row of JFA Table 3: decision seconds per move of serial MCTS and of WU-UCT with ``threads``
    threads at ``sims`` simulations on the ``phase`` (``"layout"``: the SLM, as the paper;
    ``"battle"``: the HBM upper net) positions of this benchmark, after a short warm-up. Returns
    ``{"phase", "simulations", "threads", "serial_seconds", "parallel_seconds", "reduction",
    "positions", "batches"}``. Used by ``python cli.py experiment table3``."""
    if phase not in ("layout", "battle"):
        raise ValueError(f"phase: expected 'layout' or 'battle', got {phase!r}")
    slm, upper = _nets()
    states = _positions()[phase]
    time_serial(slm, upper, 16, states[:1])  # warm-up: kernels, nets, thread start
    serial = time_serial(slm, upper, sims, states)
    parallel, batches = time_wuuct(slm, upper, threads, sims, states, torch_threads, inference_threads)
    return {"phase": phase, "simulations": sims, "threads": threads, "serial_seconds": serial,
            "parallel_seconds": parallel, "reduction": serial / parallel, "positions": len(states),
            "batches": batches}


def run_search_benchmark(simulations=SIMULATIONS, threads=THREADS, progress: bool = True, net_seconds: float = 1.5,
                         torch_threads: int = 1, inference_threads: int = 2) -> dict:
    """Run the benchmark; returns a dict of the figures (see the module docstring). ``torch_threads``:
    torch intra-op threads of the WU-UCT evaluators and of the net-only measurement (serial: 1);
    ``inference_threads``: threads serving the WU-UCT evaluators' queue (net-only: as many callers)."""
    import torch
    from rich.console import Console
    from rich.table import Table

    from nets.evaluator import NetEvaluator, available_cores, net_throughput
    from nets.inference import compile_for_inference

    console = Console(quiet=not progress, stderr=True)
    slm, upper = _nets()
    positions = _positions()
    random.seed(0)
    rows: list[dict] = []
    settings = {"torch_threads": torch_threads, "serial_torch_threads": 1, "serial_max_batch": 1,
                "wuuct_max_batch": "ceil(threads / 2)", "wuuct_clients": "threads", "wuuct_in_flight": IN_FLIGHT,
                "inference_threads": inference_threads,
                "max_wait_ms": MAX_WAIT_MS, "threads": list(threads), "simulations": list(simulations),
                "compiled_nets": True, "cores": available_cores(),
                "positions_per_phase": {p: len(s) for p, s in positions.items()}}
    with console.status("warming up"):
        with NetEvaluator(slm, upper, max_batch=1, num_threads=1) as ev:
            _time_search(ev, 1, 16, positions["layout"][:1] + positions["battle"][:1])
    for phase, states in positions.items():
        for sims in simulations:
            with console.status(f"{phase}: serial MCTS, {sims} simulations"):
                t = time_serial(slm, upper, sims, states)
            rows.append({"phase": phase, "search": "serial", "threads": 1, "simulations": sims,
                         "seconds_per_move": t, "sims_per_s": sims / t})
            for T in threads:
                with console.status(f"{phase}: WU-UCT, {T} threads, {sims} simulations"):
                    t, batches = time_wuuct(slm, upper, T, sims, states, torch_threads, inference_threads)
                rows.append({"phase": phase, "search": "wu-uct", "threads": T, "simulations": sims,
                             "seconds_per_move": t, "sims_per_s": sims / t, "batches": batches})
    with console.status("search cost (serial, uniform evaluator)"):
        costs = {phase: search_cost_per_simulation(states, max(simulations)) for phase, states in positions.items()}
        search_cost = {phase: wall for phase, (wall, _) in costs.items()}
        search_cpu = {phase: cpu for phase, (_, cpu) in costs.items()}
    with console.status("net-only throughput"):
        net = {"layout": slm, "battle": upper}
        fast = {phase: compile_for_inference(m) for phase, m in net.items()}  # what the evaluators run
        batches = sorted({1, 16} | {wuuct_batch(T) for T in threads})

        def throughput(phase, batch, callers=1):
            return net_throughput(net[phase], batch, net_seconds, forward=fast[phase], callers=callers)

        torch.set_num_threads(1)
        one_thread = {phase: {b: throughput(phase, b) for b in batches} for phase in positions}
        serial_net = {phase: one_thread[phase][1] for phase in positions}
        torch.set_num_threads(torch_threads)
        same = torch_threads == 1 and inference_threads == 1
        net_only = {phase: {T: one_thread[phase][wuuct_batch(T)] if same else throughput(phase, wuuct_batch(T), inference_threads)
                            for T in threads} for phase in positions}

    def rate(phase, search, T, sims):
        return next(r["sims_per_s"] for r in rows if (r["phase"], r["search"], r["threads"], r["simulations"]) == (phase, search, T, sims))

    result: dict = {"settings": settings, "rows": rows,
                    "net_only_per_s": {p: {str(k): v for k, v in d.items()} for p, d in net_only.items()},
                    "net_only_serial_per_s": serial_net,
                    "net_only_one_thread_per_s": {p: {str(k): v for k, v in d.items()} for p, d in one_thread.items()},
                    "search_seconds_per_simulation": search_cost,
                    "search_cpu_seconds_per_simulation": search_cpu}
    best_t = max(threads)
    for sims in simulations:
        result[f"wuuct_vs_serial_{sims}"] = min(
            max(rate(p, "wu-uct", T, sims) for T in threads) / rate(p, "serial", 1, sims) for p in positions)
    if 1 in threads and 2 in threads:
        result["two_vs_one_thread"] = min(rate(p, "wu-uct", 2, s) / rate(p, "wu-uct", 1, s) for p in positions for s in simulations)
    result["search_vs_net_only"] = min(rate(p, "wu-uct", best_t, s) / net_only[p][best_t] for p in positions for s in simulations)
    result["search_vs_net_only_by_threads"] = {
        str(T): min(rate(p, "wu-uct", T, s) / net_only[p][T] for p in positions for s in simulations) for T in threads}

    # The estimated ceiling (module docstring): net core-seconds at the best one-thread batch plus search work.
    sims = min(simulations)
    result["ceiling_vs_serial"] = {
        p: settings["cores"] / (1.0 / max(one_thread[p].values()) + search_cost[p]) / rate(p, "serial", 1, sims)
        for p in positions}

    table = Table(title="search benchmark (tiny nets; seconds per move, simulations/s)")
    for col in ("phase", "search", "threads", "simulations", "s/move", "sims/s", "mean batch", "net-only pos/s (same batch)",
                "search/net"):
        table.add_column(col, justify="right")
    for r in rows:
        cap = serial_net[r["phase"]] if r["search"] == "serial" else net_only[r["phase"]][r["threads"]]
        table.add_row(r["phase"], r["search"], str(r["threads"]), str(r["simulations"]), f"{r['seconds_per_move']:.2f}",
                      f"{r['sims_per_s']:,.0f}", f"{r['batches']['mean_batch']:.2f}" if "batches" in r else "1.00", f"{cap:,.0f}", f"{r['sims_per_s'] / cap:.0%}")
    console.print(table)
    console.print(f"torch threads: serial 1, WU-UCT {torch_threads}; WU-UCT clients = T, {IN_FLIGHT} batches in flight "
                  f"of max_batch = ceil(T / {IN_FLIGHT}), max_wait_ms = {MAX_WAIT_MS}, {inference_threads} inference "
                  "thread(s); nets compiled")
    for p in positions:
        console.print(f"{p}: search work {search_cost[p] * 1e3:.2f} ms/simulation ({search_cpu[p] * 1e3:.2f} ms CPU); estimated ceiling of WU-UCT/serial on "
                      f"{settings['cores']} cores at {sims} simulations: {result['ceiling_vs_serial'][p]:.2f}")
    for key in [k for k in result if k.startswith("wuuct_vs_serial") or k in ("two_vs_one_thread", "search_vs_net_only")]:
        console.print(f"{key}: {result[key]:.2f}")
    return result


if __name__ == "__main__":  # pragma: no cover
    import json

    print(json.dumps(run_search_benchmark(), default=float))
