"""Which placements does a layout search weigh? The SLM's candidates against the expert's.

``python -m lab.bench.layout_candidates --load FILE [--slm PATH] [--temperatures 1,10] [--mixes 0,0.3,0.5]
[--json]`` reads the positions of a ``lab.bench.judge_noise --save`` file (each with the rollouts of the
expert's best ``top`` placements) and, for each policy temperature ``tau`` (``SearchConfig.
policy_temperature``) and each ``layout_prior_mix`` ``w`` with ``prior.expert_layout``
(``SearchConfig.layout_prior_mix``), forms the search's layout priors ``(1 - w) P_slm ** (1 / tau)
+ w P_expert`` (each normalised over the legal placements) and prints: how often their best
placement is the expert's best, how many of the expert's ``top`` best are among their ``top`` best
(the candidates a Gumbel root search with ``gumbel_m = top`` and no noise weighs), and how often the
placement that the file's rollouts rank first among the expert's ``top`` is among them.

``python -m lab.bench.layout_candidates --games DIR [--from-ply 120] [--json]`` replays the games of an
``arena`` directory and ranks every layout placement of its first agent (``a``) among the expert's
layout scores (``ExpertAgent.layout_scores``, stable order): how often it is the expert's best
before layout ply ``from_ply`` and, from it on, the expert's best and one of its 3 best.
"""

from __future__ import annotations

import argparse
import json

import numpy as np


def coverage(rows, top: int) -> dict:
    """``{"positions", "top1", "overlap", "best_kept"}`` over ``rows`` of ``(priors float64[n], points
    int[n], expert int[k], best int)``: the search's priors over the legal points ``points``, the
    expert's ``k`` best points (best first) and the point the rollouts rank first among them.
    ``top1``: share of rows whose highest prior (first on ties) is ``expert[0]``; ``overlap``: mean
    number of ``expert`` points among the ``top`` highest priors; ``best_kept``: share of rows with
    ``best`` among them."""
    top1 = overlap = kept = 0
    for priors, points, expert, best in rows:
        order = [int(points[i]) for i in np.argsort(-np.asarray(priors, np.float64), kind="stable")[:top]]
        top1 += order[0] == int(expert[0])
        overlap += len(set(order) & {int(p) for p in expert})
        kept += int(best) in order
    n = max(len(rows), 1)
    return {"positions": len(rows), "top1": top1 / n, "overlap": overlap / n, "best_kept": kept / n}


def blend(policy: np.ndarray, knowledge: np.ndarray, tau: float, mix: float) -> np.ndarray:
    """The search's layout priors over one node's placements (``float64[n]``): the policy at
    temperature ``tau`` blended with the ``knowledge`` prior by ``mix``
    (``search.mcts.blend_priors``, the knowledge normalised first as the search does)."""
    from search.mcts import blend_priors, normalised

    return blend_priors(np.asarray(policy, np.float64), normalised(np.asarray(knowledge, np.float64)), tau, mix)


def candidate_table(path: str, slm: str, temperatures, mixes) -> dict:
    """The ``--load`` measurement (module docstring): ``{"positions", "top", "rows": [{"tau", "mix",
    "top1", "overlap", "best_kept"}]}``."""
    from core.state import GameState
    from knowledge.agents import ExpertAgent
    from knowledge.priors import ExpertLayoutPrior
    from lab.bench.judge_noise import load_raw
    from nets.evaluator import NetEvaluator

    data = load_raw(path)
    top = int(data["top"])
    expert, prior = ExpertAgent(), ExpertLayoutPrior()
    cases = []
    with NetEvaluator.from_files(slm=slm) as net:
        for r in data["positions_raw"]:
            diffs = np.array(r["diffs"], np.float64)
            state = GameState.from_jfen(r["jfen"])
            scores = expert.layout_scores(state)
            ranked = [int(p) for p in np.argsort(-scores, kind="stable")[:top] if np.isfinite(scores[p])]
            if len(ranked) < top or diffs.shape[0] != len(ranked):
                continue
            points = np.array(state.placements(), np.int64)
            policy = np.asarray(net.evaluate([state])[0].policy, np.float64)[points]
            knowledge = prior.prior(state).astype(np.float64)[points]
            cases.append((points, policy, knowledge, ranked, ranked[int(np.argmax(diffs.mean(axis=1)))]))
    rows = []
    for tau in temperatures:
        for mix in mixes:
            c = coverage([(blend(pol, kn, tau, mix), pts, ranked, best) for pts, pol, kn, ranked, best in cases], top)
            rows.append({"tau": tau, "mix": mix, **c})
    return {"positions": len(cases), "top": top, "rows": rows}


def placement_ranks(games_dir: str, from_ply: int) -> dict:
    """The ``--games`` measurement (module docstring): ``{"games", "before": {"placements", "top1"},
    "after": {"placements", "top1", "top3"}}``."""
    from pathlib import Path

    from core.notation import parse_move
    from core.state import GameState
    from knowledge.agents import ExpertAgent

    if not Path(games_dir, "games").is_dir():
        raise ValueError(f"--games {games_dir}: no games directory in it (an arena --out directory)")
    expert = ExpertAgent()
    ranks_before, ranks_after = [], []
    files = sorted(Path(games_dir, "games").glob("*.json"))
    for f in files:
        record = json.loads(f.read_text(encoding="utf-8"))
        colour = record["metadata"]["a_colour"]
        state = GameState.initial()
        for text in record["moves"]:
            if state.phase != 0:
                break
            move = parse_move(text)
            if "wb"[state.side] == colour:
                order = np.argsort(-expert.layout_scores(state), kind="stable")
                rank = int(np.flatnonzero(order == move.path[0])[0])
                (ranks_before if state.ply < from_ply else ranks_after).append(rank)
            state = state._play(move)
    before, after = np.array(ranks_before), np.array(ranks_after)
    return {"games": len(files), "from_ply": from_ply,
            "before": {"placements": len(before), "top1": float(np.mean(before == 0)) if len(before) else 0.0},
            "after": {"placements": len(after), "top1": float(np.mean(after == 0)) if len(after) else 0.0,
                      "top3": float(np.mean(after < 3)) if len(after) else 0.0}}


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def main() -> None:  # pragma: no cover - command line
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--load", metavar="FILE", help="a lab.bench.judge_noise --save file")
    parser.add_argument("--games", metavar="DIR", help="an arena --out directory")
    parser.add_argument("--slm", default="models/default/slm.safetensors")
    parser.add_argument("--temperatures", default="1,10")
    parser.add_argument("--mixes", default="0,0.3,0.5")
    parser.add_argument("--from-ply", type=int, default=120)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if (args.load is None) == (args.games is None):
        parser.exit(2, "error: give exactly one of --load FILE and --games DIR\n")
    if not 0 <= args.from_ply <= 196:
        parser.exit(2, f"error: --from-ply must be in 0..196, got {args.from_ply}\n")
    try:
        temperatures, mixes = _floats(args.temperatures), _floats(args.mixes)
    except ValueError:
        parser.exit(2, "error: --temperatures and --mixes take comma-separated numbers\n")
    if not temperatures or any(not 0.05 <= t <= 10 for t in temperatures):
        parser.exit(2, f"error: --temperatures must be numbers in 0.05..10, got {args.temperatures}\n")
    if not mixes or any(not 0 <= w <= 1 for w in mixes):
        parser.exit(2, f"error: --mixes must be numbers in 0..1, got {args.mixes}\n")
    try:
        if args.games:
            r = placement_ranks(args.games, args.from_ply)
        else:
            r = candidate_table(args.load, args.slm, temperatures, mixes)
    except (OSError, ValueError, KeyError) as e:
        parser.exit(2, f"error: {e}\n")
    if args.json:
        print(json.dumps(r))
        return
    if args.games:
        b, a = r["before"], r["after"]
        print(f"{r['games']} games: before layout ply {r['from_ply']}, {b['placements']} placements, the expert's "
              f"best {100 * b['top1']:.1f}%; from it on, {a['placements']} placements, the expert's best "
              f"{100 * a['top1']:.1f}%, one of its 3 best {100 * a['top3']:.1f}%")
        return
    k = r["top"]
    print(f"{r['positions']} positions; the search's {k} best placements by prior against the expert's {k} best")
    print("    tau    mix   best = expert's best   expert's among them   rollouts' best among them")
    for row in r["rows"]:
        print(f"  {row['tau']:5.2f}  {row['mix']:5.2f}   {100 * row['top1']:20.1f}%   {row['overlap']:19.2f}   "
              f"{100 * row['best_kept']:24.1f}%")


if __name__ == "__main__":  # pragma: no cover
    main()
