"""``python cli.py bench selfplay``: the self-play engine's speed on the shipped configuration.

Plays ``games`` self-play games of ``kind`` (``upper`` by default: the battle games the shipped model
trains on) with the training configuration of ``models/default/config.toml`` and its nets, exactly as
``python cli.py selfplay`` would (``train.learning.selfplay.selfplay_batch`` on ``workers`` processes, or
in this process with ``workers = 0``), into a temporary run directory, and reports:

- ``positions_per_second``: searched positions (moves decided by a search) per wall second, from the
  first game dispatched to the last written, worker start-up included, and ``steady_positions_per_second``:
  the same over the workers' own driving time (``search.batched.DriveStats.wall_seconds``, summed
  over the workers and divided by their number), without the start-up;
- ``cpu_seconds_per_position``: the CPU seconds of this process and its workers per searched position;
- the batch-size distribution of the evaluations (``batch``: leaves per round, mean, median, maximum);
- ``shares``: the time in the net, the knowledge evaluators (the expert's two-ply leaf value, the
  pool threads' seconds) and the search itself (the drivers' thread: selection, expansion, backups, the
  games' own code), as fractions of their sum.

The figure to compare with an older checkout is ``python -m bench.selfplay_speed 1 KEY=VALUE...`` run
there with the same configuration (``docs/performance.md``).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from knowledge.registry import MODELS_DIR

MODEL_DIR = MODELS_DIR / "default"


def run_selfplay_benchmark(games: int | None = None, games_in_flight: int | None = None, workers: int | None = None,
                           device: str | None = None, kind: str = "upper", seed: int = 2026,
                           progress: Callable[[str], None] | None = None, config: str | Path | None = None,
                           sets: list[str] | None = None) -> dict[str, Any]:
    """Measure self-play (module docstring). ``games`` (default: two waves, ``2 * games_in_flight`` per
    worker), ``games_in_flight`` / ``workers`` / ``device``: as the ``selfplay`` fields (default: the
    configuration's); ``kind``: ``upper`` or ``slm``. ``config``: a training configuration file (default:
    the shipped one, ``models/default/config.toml``) and ``sets`` its ``SECTION.KEY=VALUE`` overrides (the
    search that is measured; the shipped nets play). Raises ``train.learning.config.ConfigError`` for a
    bad value, naming the field and the option that set it."""
    from search.batched import batch_summary
    from train.jobs.workers import make_runner
    from train.learning.config import (
        ConfigError,
        apply_overrides,
        config_to_dict,
        override_origins,
        read_config_file,
        validate_config,
    )
    from train.learning.selfplay import games_in_flight as resolve_in_flight
    from train.learning.selfplay import plan_batches, selfplay_batch

    if kind not in ("upper", "slm"):
        raise ConfigError(f"kind: expected upper or slm, got {kind!r}")
    given = {"selfplay.games_in_flight": games_in_flight, "workers": workers, "device": device}
    given = {k: v for k, v in given.items() if v is not None}
    origins = override_origins(sets, {"selfplay.games_in_flight": "--games-in-flight", "workers": "--workers",
                                      "device": "--device"})
    path = Path(config) if config is not None else MODEL_DIR / "config.toml"
    data = apply_overrides(apply_overrides(read_config_file(path), list(sets or [])), {"seed": seed, **given})
    cfg = validate_config(data, str(config) if config is not None else "models/default/config.toml", origins)
    in_flight = resolve_in_flight(cfg)
    n_workers = max(1, cfg.workers)
    games = int(games) if games is not None else 2 * in_flight * n_workers
    if games < 1:
        raise ConfigError(f"games: expected at least 1, got {games}")
    with tempfile.TemporaryDirectory(prefix="bench-selfplay-") as tmp:
        run = Path(tmp)
        base = {"run_dir": str(run), "config": config_to_dict(cfg), "kind": kind, "iteration": 1,
                "net": str(MODEL_DIR / f"{kind}.safetensors")}
        batches = plan_batches([{**base, "index": g} for g in range(games)], cfg)
        results: list[dict] = []
        runner = make_runner(cfg.workers, "process")
        c0 = _cpu_seconds()
        t0 = time.perf_counter()

        def done(batch_results: list[dict]) -> None:
            results.extend(batch_results)
            if progress is not None:
                rate = sum(r["searched"] for r in results) / max(time.perf_counter() - t0, 1e-9)
                progress(f"game {len(results)}/{games}: {rate:.1f} searched positions/s")

        try:
            runner.run(selfplay_batch, batches, done)
        finally:
            runner.close()
        wall = time.perf_counter() - t0
        cpu = _cpu_seconds() - c0
    searched = sum(r["searched"] for r in results)
    summaries = [r["batch"] for r in results if "batch" in r]
    sizes: Counter = Counter()
    for s in summaries:
        sizes.update({int(k): v for k, v in s["batch"]["sizes"].items()})
    seconds = {k: sum(s["seconds"][k] for s in summaries) for k in ("net", "knowledge", "search", "offload", "wall")}
    total = seconds["net"] + seconds["knowledge"] + seconds["search"]
    drive_wall = seconds["wall"] / max(1, len(summaries))
    return {
        "kind": kind, "games": len(results), "games_in_flight": in_flight, "workers": cfg.workers,
        "threads": int(batches[0]["threads"]) if batches else 1, "device": cfg.device,
        "simulations": cfg.selfplay.search.simulations, "searched_positions": searched,
        "wall_seconds": round(wall, 3), "positions_per_second": round(searched / wall, 3),
        "steady_positions_per_second": round(searched / drive_wall, 3) if drive_wall > 0 else None,
        "cpu_seconds_per_position": round(cpu / searched, 5) if searched else None,
        "batch": batch_summary(sizes),
        "seconds": {k: round(v, 3) for k, v in seconds.items()},
        "shares": {k: round(seconds[k] / total, 4) if total > 0 else 0.0 for k in ("net", "knowledge", "search")},
        "cores": os.cpu_count(),
    }


def _cpu_seconds() -> float:
    """CPU seconds of this process and its finished children (the workers, once they have exited)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system
