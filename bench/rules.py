"""Rules benchmark: the Numba engine against the pure-Python reference (``tests/reference.py``), in one run.

Measured on the same positions (sampled from random games: layout, battle and flying stage):

- legal-move generations per second: the kernel (``generate_paths`` / ``layout_points``), the
  ``GameState.legal_paths()`` API (kernel plus notation strings) and the reference ``legal_paths``;
- full random games per second (uniform path, then uniform victim set): the in-kernel game against
  the reference's, also as plies per second since games differ in length;
- the speed-up of 2 threads playing kernel games concurrently over 1 thread (kernels release the GIL);
- random games driven from Python through ``GameState.legal_moves()`` (``random.choice`` of the lazy
  ``MoveList``, then ``apply``), as plies per second, against the same games through the eager
  complete list (every ``Move`` built and sorted by notation, what ``legal_moves()`` returned before
  it became lazy), capped at ``API_BATTLE_PLIES`` battle plies per game.
"""

from __future__ import annotations

import random
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from core.board import NUM_POINTS
from core.movegen import generate_paths, layout_points, new_path_buffers
from core.playout import random_game, random_game_moves
from core.rules import DEFAULT_RULESET
from core.state import GameState


def sample_positions(games: int = 4, every: int = 15) -> list[GameState]:
    """Every ``every``-th position of ``games`` random games (default ruleset)."""
    states = []
    for seed in range(games):
        moves, _, _ = random_game_moves(seed, DEFAULT_RULESET.vector)
        s = GameState.initial()
        for i, m in enumerate(moves):
            s = s._play(m)
            if i % every == every - 1 and not s.is_terminal():
                states.append(s)
    return states


def _rate(fn, items, seconds: float) -> float:
    """Calls of ``fn(item)`` per second, cycling through ``items`` for about ``seconds``."""
    n, t0 = 0, time.perf_counter()
    while True:
        for it in items:
            fn(it)
        n += len(items)
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return n / elapsed


def _kernel_generate(state: GameState, _buffers=new_path_buffers(4096), _spots=np.empty(NUM_POINTS, np.int16)):
    if state.phase == 0:
        return layout_points(state.board, state.counts[0] + state.counts[1], _spots)
    return generate_paths(state.board, state.side, state.counts[state.side], state.counts[1 - state.side],
                          state.ruleset.vector, *_buffers)[0]


def _games(seeds, seconds: float, threads: int = 1) -> tuple[float, float]:
    """(games/s, plies/s) of kernel random games, ``threads`` playing concurrently."""
    rules = DEFAULT_RULESET.vector
    done = [0, 0]
    stop = time.perf_counter() + seconds

    def worker(offset):
        g = p = 0
        seed = offset
        while time.perf_counter() < stop:
            p += random_game(seeds + seed, rules)[0]
            g += 1
            seed += threads
        return g, p

    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        for g, p in pool.map(worker, range(threads)):
            done[0] += g
            done[1] += p
    elapsed = time.perf_counter() - t0
    return done[0] / elapsed, done[1] / elapsed


API_BATTLE_PLIES = 400


def api_game_plies(seed: int, eager: bool = False) -> int:
    """Play one random game through the Python API (module docstring); returns its plies."""
    rng = random.Random(seed)
    s = GameState.initial()
    plies = 0
    while not s.is_terminal() and s.ply < NUM_POINTS + API_BATTLE_PLIES:
        moves = s.legal_moves()
        if eager:
            moves = sorted(list(moves), key=str)
        s = s.apply(rng.choice(moves))
        plies += 1
    return plies


def api_plies_per_s(seconds: float, eager: bool = False) -> float:
    """Plies per second of :func:`api_game_plies` over seeded games for about ``seconds``."""
    t0, plies, seed = time.perf_counter(), 0, 0
    while time.perf_counter() - t0 < seconds or plies == 0:
        plies += api_game_plies(seed, eager)
        seed += 1
    return plies / (time.perf_counter() - t0)


def run_rules_benchmark(seconds: float = 3.0, progress: bool = True) -> dict:
    """Run every measurement (about ``8 * seconds`` in all) and return the figures as a dict."""
    from rich.console import Console
    from rich.table import Table

    from tests import reference as ref

    console = Console(quiet=not progress, stderr=True)
    random_game(0, DEFAULT_RULESET.vector)  # compile or load from cache outside the timings
    with console.status("sampling positions from random games"):
        states = sample_positions()
        ref_positions = [ref.parse_jfen(s.to_jfen()) for s in states]
    rules = DEFAULT_RULESET
    with console.status("legal-move generation"):
        kernel_rate = _rate(_kernel_generate, states, seconds)
        api_rate = _rate(lambda s: GameState(s.board, s.side, s.phase, s.quiet, s.ply).legal_paths(), states, seconds)
        ref_rate = _rate(lambda p: ref.legal_paths(p, rules), ref_positions, seconds)
    with console.status("random games"):
        games_1, plies_1 = _games(1000, seconds, 1)
        games_2, plies_2 = _games(2000, seconds, 2)
        t0, n_ref, plies_ref = time.perf_counter(), 0, 0
        while time.perf_counter() - t0 < seconds or n_ref == 0:
            moves, _, _ = ref.random_game(n_ref, rules)
            plies_ref += len(moves)
            n_ref += 1
        ref_elapsed = time.perf_counter() - t0
    with console.status("random games through legal_moves()"):
        api_game_plies(0)  # compile or load the notation-order kernel outside the timing
        api_lazy = api_plies_per_s(seconds)
        api_eager = api_plies_per_s(seconds, eager=True)
    result = {
        "positions": len(states),
        "movegen_per_s": {"numba_kernel": kernel_rate, "numba_api": api_rate, "reference": ref_rate},
        "random_games_per_s": {"numba_1_thread": games_1, "numba_2_threads": games_2, "reference": n_ref / ref_elapsed},
        "random_plies_per_s": {"numba_1_thread": plies_1, "reference": plies_ref / ref_elapsed},
        "movegen_ratio": kernel_rate / ref_rate,
        "api_movegen_ratio": api_rate / ref_rate,
        "random_game_ratio": games_1 / (n_ref / ref_elapsed),
        "random_ply_ratio": plies_1 / (plies_ref / ref_elapsed),
        "two_thread_speedup": games_2 / games_1,
        "api_random_plies_per_s": {"legal_moves": api_lazy, "eager_sorted_list": api_eager},
        "api_lazy_vs_eager": api_lazy / api_eager,
    }
    result["numba_vs_reference"] = min(result["movegen_ratio"], result["random_game_ratio"])
    table = Table(title=f"rules benchmark ({len(states)} positions, {seconds:g} s per measurement)")
    for col in ("measure", "numba", "reference", "ratio"):
        table.add_column(col, justify="right" if col != "measure" else "left")
    table.add_row("move generations/s (kernel)", f"{kernel_rate:,.0f}", f"{ref_rate:,.0f}", f"{result['movegen_ratio']:.0f}x")
    table.add_row("move generations/s (GameState API)", f"{api_rate:,.0f}", f"{ref_rate:,.0f}", f"{result['api_movegen_ratio']:.0f}x")
    table.add_row("random games/s", f"{games_1:,.2f}", f"{n_ref / ref_elapsed:,.3f}", f"{result['random_game_ratio']:.0f}x")
    table.add_row("random plies/s", f"{plies_1:,.0f}", f"{plies_ref / ref_elapsed:,.0f}", f"{result['random_ply_ratio']:.0f}x")
    table.add_row("2 threads vs 1 (games/s)", f"{games_2:,.2f}", "", f"{result['two_thread_speedup']:.2f}x")
    table.add_row("API random plies/s: legal_moves() vs eager sorted list", f"{api_lazy:,.0f}", f"{api_eager:,.0f}",
                  f"{result['api_lazy_vs_eager']:.1f}x")
    console.print(table)
    return result
