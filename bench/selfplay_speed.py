"""Self-play speed of the default configuration: searched positions per second and CPU seconds per
searched position, for the SLM (layout) and upper (battle) self-play games.

``python -m bench.selfplay_speed [GAMES] [KEY=VALUE...]`` plays ``GAMES`` (default 2) self-play games
of each kind, in this process, with the default training configuration (``configs/default.toml``: 32
simulations, 4 search threads) changed by the ``KEY=VALUE`` overrides (``--set`` syntax, e.g.
``selfplay.precision=float32``) and the shipped nets, and prints one JSON object. It uses only the
long-standing API (``train.learning.selfplay.play_slm_game`` / ``play_upper_game``,
``train.learning.config.load_config``, ``nets.io.load``; ``train.selfplay`` and ``train.config`` in checkouts
before the ``train`` subpackages), so the same file times an older checkout: ``cd OLD && PYTHONPATH=. python
NEW/bench/selfplay_speed.py`` (issue 10's "self-play positions per second" against d930ed1). CPU time (``time.process_time``, all
threads) is what to compare on a loaded machine.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main(games: int = 2, overrides: tuple[str, ...] = ()) -> dict:
    import torch

    from nets.io import load

    try:
        from train.learning.config import load_config
        from train.learning.selfplay import play_slm_game, play_upper_game
    except ImportError:  # a checkout before the train subpackages
        from train.config import load_config
        from train.selfplay import play_slm_game, play_upper_game

    try:  # registers every agent and plugin (older checkouts register them on import)
        import catalog  # noqa: F401
    except ImportError:
        pass
    torch.set_num_threads(1)
    cfg = load_config(None, ["ruleset.max_battle_plies=300", *overrides])
    model_dir = Path("models") / "default"
    out = {}
    for kind, play in (("slm", play_slm_game), ("upper", play_upper_game)):
        net, _, _ = load(model_dir / f"{kind}.safetensors", expected_kind=kind)
        net.eval()
        play(cfg, net, seed=10_000)  # compile / warm up
        searched, wall, cpu = 0, 0.0, 0.0
        for g in range(games):
            t0, c0 = time.perf_counter(), time.process_time()
            game, _, _ = play(cfg, net, seed=g)
            wall += time.perf_counter() - t0
            cpu += time.process_time() - c0
            searched += game.searched
        out[kind] = {"games": games, "searched_positions": searched, "positions_per_second": searched / wall,
                     "cpu_seconds_per_position": cpu / searched}
    return out


if __name__ == "__main__":  # pragma: no cover - command line
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2, tuple(sys.argv[2:]))))
