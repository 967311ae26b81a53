"""How noisy is the rollout judge? The ``rollout`` agent's layout picks against many more rollouts.

``python -m lab.bench.judge_noise [--positions N] [--rollouts R] [--top K] [--battle-plies P] [--from-ply F]
[--games G] [--seed S] [--workers W] [--save FILE] [--narrow K] [--json]`` draws ``N`` layout positions
(default 60, seeded) at layout plies ``F`` (120) to 195 from the first ``G`` held-out expert games
(``data/heldout-expert``), and gives each of the expert's ``K`` (3) best placements ``R`` (16, even)
expert rollouts of ``P`` (64) battle plies under the same seeds
(``knowledge.agents.RolloutLayoutAgent.layout_rollouts``: the ``rollout`` agent's judge, common random
numbers).

The second half of the seeds is the reference: its best placement by mean stone difference is the
"true" best. The first half makes the picks: with ``n`` = 1, 2, 4, ... rollouts a placement (its
first ``n`` seeds), as ``rollout:rollouts=n`` would pick (ties to the higher expert score), and as
``rollout:rollouts=n,halving_rollouts=m`` would for a few ``(n, m)`` (:data:`HALVING`). Printed
per ``n``: how often the pick is the reference's best, and the mean regret, the reference's mean of
the best minus that of the pick (stones; the reference is noisy too, so both are estimates that are
fair between the rows, not exact values). Row ``n = 0`` is the expert's own best placement (no
rollouts). Also printed: the standard deviation of one rollout's stone difference (within a
placement, across seeds) and the mean gap between the best and second placements of the reference.
A judge is sharp enough when more rollouts no longer raise the agreement. ``--save FILE`` writes
every rollout's stone difference (JSON: per position its ply, JFEN and ``k x R`` matrix), and
``--load FILE`` prints the table again from such a file, without playing the rollouts again.
``--narrow K`` adds to each row the gain when only the expert's first ``K`` placements are compared
under the same seeds (``rollout:top=K`` on the same rollouts) and the paired difference, with their
bootstrap standard errors: what comparing more placements is worth.

``--agent SPEC`` (repeatable) judges a layout agent the same way: it chooses a placement in every
position (seeded by ``--seed`` and the position), and the reference values its choice: the
reference mean of that placement when it is one of the expert's ``k``, else the mean of as many new
rollouts under the reference's own seeds. Printed per agent: how often its placement is among the
expert's ``k``, how often it is the reference's best (among the expert's ``k`` and the agent's
placement), and its gain over the expert's best with the bootstrap standard error, as for the
rows above; and the seconds per choice.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

HALVING = ((2, 2), (2, 3), (4, 4))  # (rollouts, halving_rollouts) rows besides the flat ones
BOOTSTRAP = 2000  # resamples of the positions for the standard error of a gain


def _layout_late(from_ply: int):
    def keep(state) -> bool:
        return state.phase == 0 and from_ply <= state.ply
    return keep


def _judge_position(task: dict) -> dict:
    """One position's rollouts (a worker task): ``{"ply", "diffs": [[float]] (k x R)}``."""
    from core.state import GameState
    from lab.rollout import RolloutLayoutAgent

    state = GameState.from_jfen(task["jfen"])
    agent = RolloutLayoutAgent(0, from_ply=0, top=task["top"], rollouts=1, battle_plies=task["battle_plies"])
    _, diffs = agent.layout_rollouts(state, _reference_seeds(task["seed"], task["index"], task["rollouts"]))
    return {"index": task["index"], "ply": state.ply, "jfen": task["jfen"], "diffs": diffs.tolist()}


def _reference_seeds(seed: int, index: int, rollouts: int) -> list[int]:
    """The ``rollouts`` seeds of position ``index`` (the first half picks, the second half is the reference)."""
    return [int(x) for x in np.random.SeedSequence([seed, index]).generate_state(rollouts, np.uint64) >> 2]


def _agent_position(task: dict) -> dict:
    """One agent's choice in one saved position, valued by the reference (a worker task):
    ``{"index", "point", "candidate", "reference", "expert_best", "best", "seconds"}`` (stones)."""
    import time as _time

    import catalog  # noqa: F401 - registers the built-in agents
    import lab.slm_rollout  # noqa: F401 - and rollout, slm_rollout, eval.rollout
    from core.state import GameState
    from knowledge.agents import make_agent
    from lab.rollout import RolloutLayoutAgent

    state = GameState.from_jfen(task["jfen"])
    judge = RolloutLayoutAgent(0, from_ply=0, top=task["top"], rollouts=1, battle_plies=task["battle_plies"])
    points = [int(p) for p in judge.candidates(state)]
    diffs = np.array(task["diffs"], np.float64)
    half = diffs.shape[1] // 2
    reference = diffs[:, half:].mean(axis=1)
    agent_seed = int(np.random.SeedSequence([task["seed"], task["index"], 1]).generate_state(1)[0])
    agent = make_agent(task["spec"], seed=agent_seed)
    try:
        t0 = _time.perf_counter()
        point = int(agent.select(state).path[0])
        seconds = _time.perf_counter() - t0
    finally:
        close = getattr(agent, "close", None)
        if close is not None:
            close()
    if point in points:
        value = float(reference[points.index(point)])
    else:
        seeds = _reference_seeds(task["seed"], task["index"], diffs.shape[1])[half:]
        value = float(judge.rollout_matrix(state, [point], seeds).mean())
    return {"index": task["index"], "point": point, "candidate": point in points, "reference": value,
            "expert_best": float(reference[0]), "best": float(max(reference.max(), value)), "seconds": seconds}


def judge_agent(raw: list[dict], spec: str, top: int, battle_plies: int, seed: int = 0, workers: int = 1) -> dict:
    """Agent ``spec``'s placements in the saved positions ``raw`` (``--save`` results, ``k x R``
    rollouts of the expert's ``top`` best with ``battle_plies``, made with ``seed``), judged by the
    reference (module docstring). Returns ``{"spec", "positions", "candidates", "agree", "gain",
    "gain_se", "seconds"}``: shares, stones and seconds per choice (mean)."""
    from train.jobs.workers import map_indexed

    tasks = [{"jfen": r["jfen"], "diffs": r["diffs"], "index": r["index"], "spec": spec, "seed": seed, "top": top,
              "battle_plies": battle_plies} for r in raw if len(r["diffs"]) > 1]
    results = map_indexed(_agent_position, tasks, workers)
    gain = np.array([r["reference"] - r["expert_best"] for r in results])
    rng = np.random.default_rng(0)
    se = float(gain[rng.integers(0, len(gain), (BOOTSTRAP, len(gain)))].mean(axis=1).std()) if len(gain) else 0.0
    n = max(len(results), 1)
    return {"spec": spec, "positions": len(results), "candidates": sum(r["candidate"] for r in results) / n,
            "agree": sum(r["reference"] >= r["best"] for r in results) / n,
            "gain": float(gain.mean()) if len(gain) else 0.0, "gain_se": se,
            "seconds": float(np.mean([r["seconds"] for r in results])) if results else 0.0}


def _pick(d: np.ndarray, n: int, more: int) -> int:
    """The ``rollout`` agent's pick from the rollouts ``d`` (``float64[k, >= n + more]``, placements in
    expert order): ``n`` a placement, then ``more`` for the survivors of the halving round."""
    from lab.rollout import halving_survivors

    means = d[:, :n].mean(axis=1)
    keep = halving_survivors(means)
    if more == 0 or len(keep) < 2:
        return int(np.argmax(means))  # first maximum: the higher expert score
    return int(keep[int(np.argmax(d[keep, : n + more].mean(axis=1)))])


def _row(diffs: list[np.ndarray], n: int, more: int, k: int | None = None) -> tuple[np.ndarray, ...]:
    """Per position: whether the pick is the reference's best (bool), its regret and its gain over
    the expert's best (stones), the pick made as in :func:`pick_stats` among the expert's first ``k``
    placements only (``None``: all), the reference over all."""
    agree, regret, gain = [], [], []
    for d in diffs:
        half = d.shape[1] // 2
        ref = d[:, half:].mean(axis=1)
        best = int(np.argmax(ref))
        pick = 0 if n == 0 else _pick(d[:k, :half], n, more)
        agree.append(pick == best)
        regret.append(float(ref[best] - ref[pick]))
        gain.append(float(ref[pick] - ref[0]))
    return np.array(agree, bool), np.array(regret, np.float64), np.array(gain, np.float64)


def pick_stats(diffs: list[np.ndarray], ns: list[int], halving: tuple[tuple[int, int], ...] = (),
               narrow: int | None = None) -> dict:
    """Agreement and regret of picks from the first half of each position's seeds against the second
    half (module docstring). ``diffs``: per position ``float64[k, R]``, placements in expert order;
    ``ns`` the flat rollouts a placement, ``halving`` ``(n, more)`` pairs for ``rollouts=n,
    halving_rollouts=more`` (``n + more <= R / 2``). Returns ``{"rows": [{"n", "more", "agree",
    "regret", "gain", "gain_se"}], "rollout_sd", "gap"}`` (stones; ``n = 0``: the expert's best;
    ``gain``: the reference's mean of the pick minus that of the expert's best, ``gain_se`` its
    bootstrap standard error over the positions, :data:`BOOTSTRAP` resamples, seeded). With
    ``narrow`` (an int >= 1), each row also has ``"narrow_gain"`` (``_se``), the gain when only the
    expert's first ``narrow`` placements are compared under the same seeds, and ``"delta"``
    (``_se``), the paired gain of comparing all of them over that (bootstrap over the positions)."""
    rows = []
    sds, gaps = [], []
    rng = np.random.default_rng(0)
    resamples = rng.integers(0, len(diffs), (BOOTSTRAP, len(diffs))) if diffs else None

    def mean_se(x: np.ndarray) -> tuple[float, float]:
        return (float(x.mean()), float(x[resamples].mean(axis=1).std())) if diffs else (0.0, 0.0)

    for n, more in [(0, 0), *((n, 0) for n in ns), *halving]:
        agree, regret, gain = _row(diffs, n, more)
        row = {"n": n, "more": more, "agree": float(np.mean(agree)) if diffs else 0.0,
               "regret": float(np.mean(regret)) if diffs else 0.0}
        row["gain"], row["gain_se"] = mean_se(gain)
        if narrow is not None:
            narrowed = _row(diffs, n, more, narrow)[2]
            row["narrow_gain"], row["narrow_gain_se"] = mean_se(narrowed)
            row["delta"], row["delta_se"] = mean_se(gain - narrowed)
        rows.append(row)
    for d in diffs:
        half = d.shape[1] // 2
        sds.append(float(d.std(axis=1, ddof=1).mean()))
        ref = np.sort(d[:, half:].mean(axis=1))[::-1]
        if len(ref) > 1:
            gaps.append(float(ref[0] - ref[1]))
    return {"rows": rows, "rollout_sd": float(np.mean(sds)), "gap": float(np.mean(gaps)) if gaps else 0.0}


def run_judge_noise(positions: int = 60, rollouts: int = 16, top: int = 3, battle_plies: int = 64,
                    from_ply: int = 120, games: int = 30, seed: int = 0, workers: int = 1,
                    records: str | None = None, progress=None, narrow: int | None = None) -> dict:
    """The measurement of the module docstring; ``progress(done, total)`` after each position; ``narrow``
    as in :func:`pick_stats`.
    Returns ``{"positions", "rollouts", "top", "battle_plies", "from_ply", "seconds", "rows",
    "rollout_sd", "gap", "raw"}`` (``raw``: the tasks' results, positions in sample order)."""
    from lab.bench.search_regret import sample_positions
    from train.jobs.workers import map_indexed
    from train.learning.diagnose import HELDOUT_RECORDS

    states = sample_positions(str(records or HELDOUT_RECORDS), games, positions, seed=seed,
                              keep=_layout_late(from_ply))
    tasks = [{"jfen": s.to_jfen(), "index": i, "seed": seed, "top": top, "rollouts": rollouts,
              "battle_plies": battle_plies} for i, s in enumerate(states)]
    t0 = time.perf_counter()
    results = map_indexed(_judge_position, tasks, workers, progress)
    return {"rollouts": rollouts, "top": top, "battle_plies": battle_plies, "from_ply": from_ply, "seed": seed,
            "seconds": time.perf_counter() - t0, **summarize(results, rollouts, narrow), "raw": results}


def summarize(raw: list[dict], rollouts: int, narrow: int | None = None) -> dict:
    """:func:`pick_stats` of the positions ``raw`` (task results: ``"diffs"`` ``k x rollouts``) with at
    least two candidates, for every flat and :data:`HALVING` row the seeds allow (``narrow`` passed on);
    plus ``"positions"``."""
    diffs = [np.array(r["diffs"], np.float64) for r in raw if len(r["diffs"]) > 1]
    ns = [n for n in (1, 2, 4, 8, 16, 32, 64) if n <= rollouts // 2]
    halving = tuple((n, more) for n, more in HALVING if n + more <= rollouts // 2)
    return {"positions": len(diffs), **pick_stats(diffs, ns, halving, narrow)}


def load_raw(path: str) -> dict:
    """The measurement saved by ``--save`` at ``path`` as written (``"positions_raw"``: per position its
    ``"ply"``, ``"jfen"`` and ``k x rollouts`` ``"diffs"``; ``"rollouts"``, ``"top"``, ...); raises
    ``ValueError`` naming the file and the reason when it is not such a file."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        raw, rollouts = data["positions_raw"], int(data["rollouts"])
        if any(np.array(r["diffs"], np.float64).shape[1:] not in ((rollouts,), ()) for r in raw):
            raise ValueError(f"a position's rollouts are not {rollouts} a placement")
        if any(not isinstance(r["jfen"], str) for r in raw):
            raise ValueError("a position's jfen is not a string")
        missing = [k for k in ("top", "battle_plies", "from_ply", "seconds") if k not in data]
        if missing:
            raise KeyError(missing[0])
    except (OSError, ValueError, KeyError, TypeError) as e:
        reason = f"missing field {e}" if isinstance(e, KeyError) else str(e)
        raise ValueError(f"--load {path}: not a judge_noise file: {reason}") from None
    return data


def load(path: str, narrow: int | None = None) -> dict:
    """The measurement saved by ``--save`` at ``path``, summarized again (:func:`summarize`, ``narrow``
    passed on); raises ``ValueError`` as :func:`load_raw`."""
    data = load_raw(path)
    meta = {k: data[k] for k in ("rollouts", "top", "battle_plies", "from_ply", "seconds")}
    return {**meta, "seed": int(data.get("seed", 0)), **summarize(data["positions_raw"], int(data["rollouts"]), narrow)}


def main() -> None:  # pragma: no cover - command line
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--positions", type=int, default=60, help="layout positions drawn from the games")
    parser.add_argument("--rollouts", type=int, default=16,
                        help="rollouts a placement, even: the first half picks, the second is the reference")
    parser.add_argument("--top", type=int, default=3, help="the expert's best placements compared")
    parser.add_argument("--battle-plies", type=int, default=64, help="expert battle plies a rollout plays")
    parser.add_argument("--from-ply", type=int, default=120, help="the first layout ply positions are drawn from")
    parser.add_argument("--games", type=int, default=30,
                        help="the first games of the records the positions are drawn from")
    parser.add_argument("--seed", type=int, default=0, help="seeds the draw, the rollouts and the --agent choices")
    parser.add_argument("--workers", type=int, default=1, help="processes")
    parser.add_argument("--records", default=None, help="a directory of expert games (default: the held-out ones)")
    parser.add_argument("--save", default=None, metavar="FILE", help="write every rollout's stone difference (JSON)")
    parser.add_argument("--load", default=None, metavar="FILE", help="summarize a file written by --save again")
    parser.add_argument("--agent", action="append", default=[], metavar="SPEC",
                        help="judge this layout agent's placements too (repeatable)")
    parser.add_argument("--narrow", type=int, default=None, metavar="K",
                        help="also the gain with only the expert's K best compared, and the paired difference")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    args = parser.parse_args()
    if args.agent:
        import catalog  # noqa: F401 - registers the built-in agents
        import lab.slm_rollout  # noqa: F401 - and rollout, slm_rollout, eval.rollout
        from knowledge.agents import validate_agent_spec
        from knowledge.registry import SpecError

        for spec in args.agent:
            try:
                validate_agent_spec(spec)
            except SpecError as e:
                parser.exit(2, f"error: --agent: {e}\n")
    checks = [("--positions", args.positions, 1, 100_000), ("--rollouts", args.rollouts, 2, 1_000),
              ("--top", args.top, 2, 196), ("--battle-plies", args.battle_plies, 0, 100_000),
              ("--from-ply", args.from_ply, 2, 195), ("--games", args.games, 1, 100_000),
              ("--seed", args.seed, 0, 2**32 - 1), ("--workers", args.workers, 1, 64)]
    for name, value, lo, hi in checks:
        if not lo <= value <= hi:
            parser.exit(2, f"error: {name} must be in {lo}..{hi}, got {value}\n")
    if args.narrow is not None and not 1 <= args.narrow <= 196:
        parser.exit(2, f"error: --narrow must be in 1..196, got {args.narrow}\n")
    if args.rollouts % 2:
        parser.exit(2, f"error: --rollouts must be even (half picks, half reference), got {args.rollouts}\n")

    def progress(done: int, total: int) -> None:
        print(f"  {done}/{total} positions", file=sys.stderr if args.json else sys.stdout, flush=True)

    if args.load:
        try:
            r, raw = load(args.load, args.narrow), load_raw(args.load)["positions_raw"]
        except ValueError as e:
            parser.exit(2, f"error: {e}\n")
    else:
        r = run_judge_noise(args.positions, args.rollouts, args.top, args.battle_plies, args.from_ply, args.games,
                            args.seed, args.workers, args.records, progress, args.narrow)
        raw = r.pop("raw")
        if args.save:
            from core.atomic import atomic_write_text

            atomic_write_text(args.save, json.dumps({**r, "positions_raw": raw}))
    r["agents"] = [judge_agent(raw, spec, int(r["top"]), int(r["battle_plies"]), int(r["seed"]), args.workers)
                   for spec in args.agent]
    if args.json:
        print(json.dumps(r))
        return
    print(f"{r['positions']} layout positions (plies {r['from_ply']}-195), the expert's {r['top']} best placements, "
          f"{r['rollouts']} rollouts each of {r['battle_plies']} battle plies ({r['seconds']:.0f} s)")
    print(f"  one rollout's stone difference: sd {r['rollout_sd']:.2f}; reference best - second: {r['gap']:.2f} stones")
    narrow = "" if args.narrow is None else f"   the expert's {args.narrow} best only (s.e.)   difference (s.e.)"
    print("    rollouts a placement   picks the reference's best   regret (stones)   gain over the expert's best (s.e.)"
          + narrow)
    for row in r["rows"]:
        label = "expert's best" if row["n"] == 0 else str(row["n"])
        if row["more"]:
            label = f"{row['n']}, {row['more']} more for half"
        more = "" if args.narrow is None else (f"   {row['narrow_gain']:+27.2f} ({row['narrow_gain_se']:.2f})"
                                               f"   {row['delta']:+10.2f} ({row['delta_se']:.2f})")
        print(f"  {label:>24s}   {100 * row['agree']:26.1f}%   {row['regret']:15.2f}   "
              f"{row['gain']:+.2f} ({row['gain_se']:.2f})" + more)
    for a in r["agents"]:
        print(f"  {a['spec']}: {a['positions']} placements, {100 * a['candidates']:.1f}% among the expert's "
              f"{r['top']} best, the reference's best {100 * a['agree']:.1f}%, gain over the expert's best "
              f"{a['gain']:+.2f} ({a['gain_se']:.2f}), {a['seconds']:.3f} s a choice")


if __name__ == "__main__":  # pragma: no cover
    main()
