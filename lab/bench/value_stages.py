"""How well an upper net's value and the expert's two-ply value predict the result, by the stage of the
battle (the stones of the side with fewer): where a search should take its leaf value from which
(``SearchConfig.value_mix``, ``endgame_value_mix``; docs/results.md, "Where the searches lose to `expert`").

``python -m lab.bench.value_stages UPPER ARENA_DIR [ARENA_DIR ...] [--records 60] [--every 6]`` takes
every ``every``-th battle position from ply 200 of the first ``records`` decided games of each arena
directory, values each for its side to move with the net ``UPPER`` (a ``.safetensors`` file) and with
``eval.expert:plies=2`` (``knowledge.evaluation.ExpertEvaluator``), and prints per stage (:data:`STAGES`)
the positions, each value's mean squared error against the result ``z`` (+1 won, -1 lost; 1.0 is the
error of always saying 0), each value's sign accuracy, and the weight ``w`` of the expert's value in
``(1 - w) net + w expert`` (on a grid of 0.05) with the smallest error."""

from __future__ import annotations

import argparse

import numpy as np

STAGES = ((60, 98), (30, 59), (17, 29), (14, 16), (10, 13), (0, 9))  # stones of the side with fewer, inclusive
MIX_GRID = np.linspace(0.0, 1.0, 21)
FROM_PLY = 200  # positions from this ply on (the battle; lab.bench.sibling_values takes the same)


def stage_rows(upper: str, arena_dirs: list[str], records: int = 60, every: int = 6) -> np.ndarray:
    """``float64 (N, 4)`` rows ``(fewer side's stones, net value, expert two-ply value, z)`` of the
    positions described in the module docstring, both values for the side to move in ``[-1, 1]``.
    Raises ``ValueError`` for ``records`` or ``every`` below 1, ``FileNotFoundError`` for a directory
    without a ``games`` folder."""
    from core.board import PHASE_BATTLE
    from knowledge.evaluation import ExpertEvaluator
    from lab.bench.conversion import decided_records
    from nets.evaluator import NetEvaluator
    from search.agents import load_net

    if records < 1 or every < 1:
        raise ValueError(f"records and every must be >= 1, got {records!r} and {every!r}")
    decided = decided_records(arena_dirs, records)  # every directory checked before any work
    net = NetEvaluator(None, load_net(upper, "upper"), max_batch=64, inference_threads=0)
    expert = ExpertEvaluator(plies=2)
    rows = []
    for record in decided:
        winner = 0 if record.result == "w" else 1
        states = [s for s in record.replay()[FROM_PLY:-1:every] if s.phase == PHASE_BATTLE and not s.is_terminal()]
        for s, e in zip(states, net.evaluate(states)):
            rows.append((min(int(s.counts[0]), int(s.counts[1])), float(e.value), expert.value(s),
                         1.0 if s.side == winner else -1.0))
    return np.asarray(rows, dtype=np.float64).reshape(-1, 4)


def stage_table(rows: np.ndarray) -> list[dict]:
    """One dict per stage of :data:`STAGES` with positions: ``stage`` (low, high), ``n``, ``mse_net``,
    ``mse_expert``, ``sign_net``, ``sign_expert`` (fractions; a value of 0 counts as wrong), ``best_mix``
    (the expert's weight on :data:`MIX_GRID` with the smallest error, the lower on a tie) and ``mse_best``."""
    out = []
    for lo, hi in STAGES:
        sel = rows[(rows[:, 0] >= lo) & (rows[:, 0] <= hi)]
        if not len(sel):
            continue
        net, expert, z = sel[:, 1], sel[:, 2], sel[:, 3]
        errors = [float(np.mean(((1.0 - w) * net + w * expert - z) ** 2)) for w in MIX_GRID]
        best = int(np.argmin(errors))
        out.append({"stage": (lo, hi), "n": len(sel), "mse_net": float(np.mean((net - z) ** 2)),
                    "mse_expert": float(np.mean((expert - z) ** 2)), "sign_net": float(np.mean(np.sign(net) == z)),
                    "sign_expert": float(np.mean(np.sign(expert) == z)), "best_mix": float(MIX_GRID[best]),
                    "mse_best": errors[best]})
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("upper")
    parser.add_argument("arena_dirs", nargs="+", metavar="arena_dir")
    parser.add_argument("--records", type=int, default=60)
    parser.add_argument("--every", type=int, default=6)
    args = parser.parse_args(argv)
    try:
        rows = stage_rows(args.upper, args.arena_dirs, args.records, args.every)
    except (ValueError, FileNotFoundError) as exc:
        parser.error(str(exc))
    print(f"{len(rows)} battle positions")
    print("fewer side's stones | positions | MSE net | MSE expert | sign net | sign expert | best w | MSE at best w")
    for r in stage_table(rows):
        lo, hi = r["stage"]
        print(f"{lo:2d}-{hi:2d} | {r['n']} | {r['mse_net']:.3f} | {r['mse_expert']:.3f} | {r['sign_net']:.2f} | "
              f"{r['sign_expert']:.2f} | {r['best_mix']:.2f} | {r['mse_best']:.3f}")


if __name__ == "__main__":
    main()
