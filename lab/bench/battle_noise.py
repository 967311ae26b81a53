"""How much does the position decide? Expert games played out from the same position many times.

``python -m lab.bench.battle_noise [--games G] [--ply F] [--rollouts R] [--seed S] [--workers W] [--records DIR]
[--horizons K,K,...] [--json]`` takes the position after ``F`` layout plies (default 196: the first
battle position, the layout finished) of each of the first ``G`` (40) held-out expert games
(``data/heldout-expert``) and plays it out ``R`` (8) times to the game's end, the expert on both
sides (the rollout of :meth:`knowledge.agents.RolloutEvaluator.rollout` with no limit on the battle
plies), rollout ``i`` of position ``j`` seeded with ``(S, j, i)``: what is left to chance is the
expert's tie-breaks (a game still going after 100,000 battle plies would count as a draw).

Printed: White's mean score (win 1, draw 1/2), and for the score and for the final stone difference
(White's minus Black's) the share of one game's variance that the position decides, the intraclass
correlation of a one-way analysis of variance (:func:`variance_share`), with its bootstrap standard
error over the positions, and the spread (standard deviation) of the positions' expected values.
A share near 0 says that from this position on the game is mostly the battle's chance; a layout agent
can then move the expected score only as far as that spread.

With ``--horizons``, for each ``K`` the stone difference after ``K`` battle plies of the same
play-outs (the final one when the game ended sooner), the measure a rollout judge with
``battle_plies=K`` scores by: the share of its variance the position decides, and how well it
predicts the position's expected score (:func:`between_correlation`): its positions' expected values'
correlation with the expected scores, and the correlation of one rollout's and of the mean of 4
rollouts' value with the expected score (a judge's rollouts are that mean).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from core.board import NUM_POINTS

BOOTSTRAP = 2000  # resamples of the positions for the standard error of a share
ROUNDING = 1e-9  # a between-position variance below this share of the position means' variance is 0


def variance_share(x: np.ndarray) -> dict:
    """One-way random-effects analysis of ``x`` (``float64[P, R]``: ``R`` >= 2 outcomes of each of
    ``P`` >= 2 positions): ``{"within"`` (the mean of the positions' sample variances, ddof 1),
    ``"between"`` (the variance of the positions' expected values, estimated as the variance of the
    position means less ``within / R``, floored at 0; a difference below ``ROUNDING`` times the
    means' variance is rounding error and counts as 0), ``"share"`` (``between / (between + within)``,
    the intraclass correlation ICC(1); ``None`` when both are 0)``}``. Raises ``ValueError`` for fewer
    than 2 positions or outcomes."""
    x = np.asarray(x, np.float64)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 2:
        raise ValueError(f"variance_share needs at least 2 positions x 2 outcomes, got shape {x.shape}")
    within = float(x.var(axis=1, ddof=1).mean())
    spread = float(x.mean(axis=1).var(ddof=1))  # the variance of the position means
    between = spread - within / x.shape[1]
    between = between if between > ROUNDING * spread else 0.0
    total = between + within
    return {"within": within, "between": between, "share": between / total if total > 0 else None}


def between_correlation(x: np.ndarray, y: np.ndarray, n: int | None = None) -> float | None:
    """How well ``x`` predicts the expected value of ``y`` across positions (both ``float64[P, R]``:
    ``R`` >= 2 paired outcomes of each of ``P`` >= 2 positions, one play-out giving ``x[p, i]`` and
    ``y[p, i]``). The covariance of the positions' expected values is estimated as the covariance of
    the position means less the mean within-position sample covariance over ``R``; it is divided by
    the square roots of ``y``'s between-position variance (:func:`variance_share`) and of ``x``'s
    (``n`` None: the correlation of the expected values) or of that variance plus ``within / n``
    (the correlation of the mean of ``n`` fresh outcomes of ``x`` with ``y``'s expected value).
    ``None`` when a variance in the denominator is 0. Raises ``ValueError`` for other shapes."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if x.shape != y.shape:
        raise ValueError(f"between_correlation needs paired outcomes, got shapes {x.shape} and {y.shape}")
    vx, vy = variance_share(x), variance_share(y)
    p, r = x.shape
    within = float(np.mean([np.cov(x[j], y[j])[0, 1] for j in range(p)]))
    cov = float(np.cov(x.mean(axis=1), y.mean(axis=1))[0, 1]) - within / r
    var_x = vx["between"] + (0.0 if n is None else vx["within"] / n)
    if var_x <= 0 or vy["between"] <= 0:
        return None
    return cov / float(np.sqrt(var_x * vy["between"]))


def _share_se(x: np.ndarray, seed: int) -> float | None:
    """Bootstrap standard error of :func:`variance_share`'s share over the positions (rows) of ``x``."""
    rng = np.random.default_rng(seed)
    shares = [variance_share(x[rng.integers(0, len(x), len(x))])["share"] for _ in range(BOOTSTRAP)]
    shares = [s for s in shares if s is not None]
    return float(np.std(shares, ddof=1)) if len(shares) > 1 else None


def play_out(task: dict) -> dict:
    """One position's play-outs to the game's end, the expert on both sides (a worker task:
    ``{"index", "jfen", "seed", "rollouts"}``, optional ``"key"`` (int, default ``index``),
    ``"ruleset"`` (a ``core.rules.Ruleset`` as a dict, default the default rules) and ``"horizons"``
    (battle plies, ints)); play-out ``i`` seeded with ``(seed, key, i)``. Returns ``{"index",
    "score": [White's score: 1, 1/2 or 0], "diff": [White's stones minus Black's at the end], "at":
    [[that difference after each horizon's battle plies, the final one when the game ended sooner]]}``,
    one entry per play-out."""
    from core.rules import DEFAULT_RULESET, Ruleset
    from core.state import GameState
    from lab.rollout import ROLLOUT_PLIES_MAX, RolloutEvaluator

    ruleset = Ruleset(**task["ruleset"]) if task.get("ruleset") is not None else DEFAULT_RULESET
    state = GameState.from_jfen(task["jfen"], ruleset)
    judge = RolloutEvaluator(battle_plies=ROLLOUT_PLIES_MAX)
    horizons = [int(k) for k in task.get("horizons", ())]
    score, diff, at = [], [], []
    for i in range(task["rollouts"]):
        seen, seeds = [], np.random.SeedSequence([task["seed"], task.get("key", task["index"]), i])
        for k, end in enumerate(judge.rollout_line(state, seeds)):
            seen.append(float(int(end.counts[0]) - int(end.counts[1])))
        score.append((float(end.returns()[0]) + 1.0) / 2.0 if end.is_terminal() else 0.5)
        diff.append(seen[-1])
        at.append([seen[min(h, k)] for h in horizons])
    return {"index": task["index"], "score": score, "diff": diff, "at": at}


def run_battle_noise(games: int = 40, ply: int = NUM_POINTS, rollouts: int = 8, seed: int = 0, workers: int = 1,
                     records: str | None = None, progress=None, horizons=()) -> dict:
    """The measurement of the module docstring; ``progress(done, total)`` after each position. Returns
    ``{"positions", "ply", "rollouts", "seed", "seconds", "mean_score", "score", "diff", "raw"}``
    (``score`` / ``diff``: :func:`variance_share` with ``"share_se"`` and ``"spread"``, the square
    root of ``between``; ``raw``: per position its rollouts' scores and differences) and, per battle
    ply count of ``horizons``, ``"horizons": [{"plies", "share", "correlation", "single", "mean4"}]``
    (:func:`variance_share` and :func:`between_correlation` of the stone difference there with the
    score: ``n`` None, 1 and 4). Raises ``ValueError`` when fewer than 2 games reach layout ply
    ``ply``."""
    from train.jobs.workers import map_indexed
    from train.learning.diagnose import HELDOUT_RECORDS
    from train.learning.supervised import read_records, record_files

    states = []
    for record in read_records(record_files([str(records or HELDOUT_RECORDS)])[:games]):
        line = record.replay()
        if len(line) > ply:
            states.append(line[ply])
    if len(states) < 2:
        raise ValueError(f"fewer than 2 games reach layout ply {ply}")
    tasks = [{"jfen": s.to_jfen(), "index": j, "seed": seed, "rollouts": rollouts, "horizons": list(horizons)}
             for j, s in enumerate(states)]
    t0 = time.perf_counter()
    results = map_indexed(play_out, tasks, workers, progress)
    out = {"positions": len(results), "ply": ply, "rollouts": rollouts, "seed": seed,
           "seconds": time.perf_counter() - t0, "raw": results}
    for key in ("score", "diff"):
        x = np.array([r[key] for r in results], np.float64)
        v = variance_share(x)
        out[key] = {**v, "share_se": _share_se(x, seed), "spread": float(np.sqrt(v["between"]))}
    score = np.array([r["score"] for r in results], np.float64)
    out["mean_score"] = float(score.mean())
    out["horizons"] = []
    for h, k in enumerate(horizons):
        x = np.array([[a[h] for a in r["at"]] for r in results], np.float64)
        out["horizons"].append({"plies": int(k), "share": variance_share(x)["share"],
                                **{name: between_correlation(x, score, n)
                                   for name, n in (("correlation", None), ("single", 1), ("mean4", 4))}})
    return out


def main() -> None:  # pragma: no cover - command line
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, default=40, help="held-out games, one position each")
    parser.add_argument("--ply", type=int, default=NUM_POINTS,
                        help=f"layout plies made before the position (default {NUM_POINTS}: the layout's end)")
    parser.add_argument("--rollouts", type=int, default=8, help="expert games played out from each position")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1, help="processes")
    parser.add_argument("--records", default=None, help="a directory of expert games (default: the held-out ones)")
    parser.add_argument("--horizons", default="",
                        help="battle plies (comma-separated) after which the stone difference is also judged")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    args = parser.parse_args()
    try:
        horizons = [int(k) for k in args.horizons.split(",")] if args.horizons.strip() else []
    except ValueError:
        parser.exit(2, f"error: --horizons must be comma-separated integers, got {args.horizons!r}\n")
    from lab.rollout import ROLLOUT_PLIES_MAX

    if any(not 0 <= k <= ROLLOUT_PLIES_MAX for k in horizons):
        parser.exit(2, f"error: --horizons must be in 0..{ROLLOUT_PLIES_MAX}, got {args.horizons!r}\n")
    checks = [("--games", args.games, 2, 100_000), ("--ply", args.ply, 0, NUM_POINTS),
              ("--rollouts", args.rollouts, 2, 10_000), ("--seed", args.seed, 0, 2**32 - 1),
              ("--workers", args.workers, 1, 64)]
    for name, value, lo, hi in checks:
        if not lo <= value <= hi:
            parser.exit(2, f"error: {name} must be in {lo}..{hi}, got {value}\n")

    def progress(done: int, total: int) -> None:
        print(f"  {done}/{total} positions", file=sys.stderr if args.json else sys.stdout, flush=True)

    from train.learning.supervised import SupervisedError

    try:
        r = run_battle_noise(args.games, args.ply, args.rollouts, args.seed, args.workers, args.records, progress,
                             horizons)
    except SupervisedError as e:  # before ValueError: it is one
        parser.exit(2, f"error: --records: {e}\n")
    except ValueError as e:
        parser.exit(2, f"error: --ply: {e}\n")
    r.pop("raw")
    if args.json:
        print(json.dumps(r))
        return
    print(f"{r['positions']} positions after {r['ply']} layout plies, {r['rollouts']} expert games to the end from "
          f"each ({r['seconds']:.0f} s); White's mean score {100 * r['mean_score']:.1f}%")
    for key, label, unit in (("score", "White's score", ""), ("diff", "final stone difference", " stones")):
        v = r[key]
        share = "n/a" if v["share"] is None else f"{100 * v['share']:.1f}%"
        se = "" if v["share_se"] is None else f" (s.e. {100 * v['share_se']:.1f})"
        print(f"  {label}: the position decides {share}{se} of one game's variance; spread of the positions' "
              f"expected values sd {v['spread']:.3f}{unit}, one game's sd within a position "
              f"{np.sqrt(v['within']):.3f}{unit}")
    for h in r["horizons"]:
        cells = " ".join(f"{name} {'n/a' if h[key] is None else format(h[key], '+.2f')}" for key, name in
                         (("correlation", "expected values"), ("single", "one rollout"), ("mean4", "mean of 4")))
        share = "n/a" if h["share"] is None else f"{100 * h['share']:.0f}%"
        print(f"  stone difference after {h['plies']} battle plies: the position decides {share}; correlation "
              f"with the expected score: {cells}")


if __name__ == "__main__":  # pragma: no cover
    main()
