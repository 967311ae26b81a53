"""How repeatable the self-play search's policy target is: the signal a policy net can learn from it.

``python -m lab.bench.target_noise [--model-dir models/default | --run RUN --upper NET] [--records DIR ...]
[--simulations 16 64] [--positions 60] [--repeats 2] [--seed 0] [--json FILE]`` takes ``positions`` battle
positions (at most ``POSITIONS_PER_GAME`` per game, uniformly over the battle plies; positions where the
search has a single candidate are skipped) from expert-vs-expert games
(``train.matches.arena.build_agent("expert")``, the configuration's rules) or, with ``--records``, from
those game records (a run's ``RUN/records``: the positions its learner trains on) and, for each
simulation count, searches every position ``repeats`` times, each seeded differently, with the upper
net and the self-play search of the configuration (``train.learning.selfplay.open_search``: the same
pruners, value evaluator, square victims and Gumbel root search as ``python cli.py selfplay``, one
search thread so that a seed decides the search). The configuration is a model directory's
(``--model-dir``, its ``upper.safetensors``) or a training run's (``--run``, ``RUN/config.json``, with the
checkpoint ``--upper``). It prints, per simulation count:

- ``agreement``: the share of positions where the first two targets put their largest probability on
  the same move (with its Wilson interval). A target that names another best move on every second
  search of the same position is mostly noise to the net that learns from it;
- ``tv``: the mean total-variation distance between the first two targets (0 identical, 1 disjoint);
- ``entropy``: the targets' mean entropy ``mean_k H(t_k)`` (nats), the floor of the learner's policy
  loss were each position's target always the same;
- ``mean_entropy``: ``H(t_bar)``, the entropy of the position's mean target ``t_bar = mean_k t_k``; the
  learner's expected loss on a position is ``CE(t_bar, p)`` (the cross-entropy is linear in the target),
  so no net goes below ``H(t_bar)``: ``noise = mean_entropy - entropy`` is the part of the loss the
  search's randomness puts there (estimated low with few repeats: ``half_entropy``, the same from the
  first half of the repeats, shows how far it has converged);
- ``prior_ce``: ``CE(t_bar, p)`` under the search's own root priors ``p`` (the net's policy over the kept
  paths, as the learner's loss masks it, nats), and ``prior_top1``: the share where the prior's largest
  entry is the first target's. ``removable = prior_ce - mean_entropy`` (``KL(t_bar || p)``) is what a
  better net could still take off the loss on these positions; by kind of move (step, jump chain,
  flight), the mean target's and the priors' mass on it and its terms of ``removable``.

The numbers are from this run only (the docs hold measured ones).
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

POSITIONS_PER_GAME = 10


def battle_positions(rules, count: int, seed: int) -> list:
    """``count`` battle positions (``core.state.GameState``, not terminal) from expert-vs-expert games
    seeded from ``seed``: at most ``POSITIONS_PER_GAME`` per game, drawn uniformly without replacement
    from its battle plies. ``rules``: a ``core.rules.Ruleset``. Raises ``ValueError`` if ``count < 1``."""
    from core.state import PHASE_LAYOUT, GameState
    from train.matches.arena import build_agent

    if count < 1:
        raise ValueError(f"count: expected at least 1, got {count}")

    def games():
        game = 0
        while True:
            agents = (build_agent("expert", 2 * (seed + game)), build_agent("expert", 2 * (seed + game) + 1))
            state, battle = GameState.initial(rules), []
            while not state.is_terminal():
                if state.phase != PHASE_LAYOUT:
                    battle.append(state)
                state = state.apply(agents[state.current_player()].select(state))
            yield battle
            game += 1

    return _sample_positions(games(), count, seed)


def _sample_positions(games, count: int, seed: int) -> list:
    """At most ``POSITIONS_PER_GAME`` positions of each list of ``games`` (an iterable of lists of
    positions, read lazily), drawn uniformly without replacement (seeded from ``seed``) and kept in
    order, until ``count`` are drawn or ``games`` ends."""
    rng = np.random.default_rng(seed)
    out: list = []
    for battle in games:
        take = min(POSITIONS_PER_GAME, len(battle), count - len(out))
        out.extend(battle[i] for i in sorted(rng.choice(len(battle), take, replace=False)))
        if len(out) >= count:
            break
    return out


def _entropy(p: np.ndarray) -> float:
    nz = p > 0
    return float(-(p[nz] * np.log(p[nz])).sum())


def repeat_stats(targets: np.ndarray, priors: np.ndarray, kinds: np.ndarray | None = None) -> dict[str, float]:
    """The numbers of one position (module docstring): ``targets`` ``(K, k)`` float, ``K >= 2`` searches'
    targets over the same ``k >= 2`` root children, and ``priors`` ``(k,)`` the first search's root
    priors, each row summing to 1. Returns ``agree`` (1.0 when the first two targets' largest entries
    are the same child, ties broken to the first), ``tv`` (total variation between the first two),
    ``entropy`` (mean of the targets' entropies), ``mean_entropy`` (of their mean), ``half_entropy`` (of
    the mean of the first ``K // 2``), ``prior_ce`` (cross-entropy of the mean target under ``priors``;
    zero priors are floored at 1e-12), ``prior_top1`` (the priors' and the first target's largest entries
    the same child); nats. With ``kinds`` (``(k,)`` str, each child's ``nets.encoding.UPPER_KINDS`` entry),
    also, per kind ``K``: ``mass_K`` (the mean target's probability on such children), ``prior_mass_K``
    (the priors') and ``kl_K`` (the kind's terms ``t_bar(a) log(t_bar(a) / p(a))`` of ``removable``; the
    three sum to it). Raises ``ValueError`` on other shapes."""
    targets, priors = np.asarray(targets, np.float64), np.asarray(priors, np.float64)
    if targets.ndim != 2 or targets.shape[0] < 2 or targets.shape[1] < 2 or priors.shape != targets.shape[1:]:
        raise ValueError(f"expected (K, k) targets and (k,) priors with K, k >= 2, got {targets.shape}, {priors.shape}")
    first, second = targets[0], targets[1]
    mean = targets.mean(axis=0)
    nz = mean > 0
    out = {"agree": float(np.argmax(first) == np.argmax(second)),
            "tv": 0.5 * float(np.abs(first - second).sum()),
            "entropy": float(np.mean([_entropy(t) for t in targets])),
            "mean_entropy": _entropy(mean),
            "half_entropy": _entropy(targets[: len(targets) // 2].mean(axis=0)),
            "prior_ce": float(-(mean[nz] * np.log(np.maximum(priors[nz], 1e-12))).sum()),
            "prior_top1": float(np.argmax(priors) == np.argmax(first))}
    if kinds is not None:
        from nets.encoding import UPPER_KINDS

        kinds = np.asarray(kinds)
        if kinds.shape != priors.shape:
            raise ValueError(f"expected (k,) kinds, got {kinds.shape} for k = {len(priors)}")
        terms = np.zeros_like(mean)
        terms[nz] = mean[nz] * (np.log(mean[nz]) - np.log(np.maximum(priors[nz], 1e-12)))
        for kind in UPPER_KINDS:
            sel = kinds == kind
            out.update({f"mass_{kind}": float(mean[sel].sum()), f"prior_mass_{kind}": float(priors[sel].sum()),
                        f"kl_{kind}": float(terms[sel].sum())})
    return out


def summarize(rows: list[dict[str, float]]) -> dict[str, Any]:
    """Means of ``repeat_stats`` rows, ``positions``, ``noise`` (``mean_entropy - entropy``), ``removable``
    (``prior_ce - mean_entropy``) and ``agreement_ci`` (Wilson 95% of ``agree``); ``None`` values when
    there are no rows."""
    from train.matches.stats import wilson_interval

    n = len(rows)
    keys = ("agree", "tv", "entropy", "mean_entropy", "half_entropy", "prior_ce", "prior_top1")
    keys += tuple(k for k in (rows[0] if n else {}) if k.startswith(("mass_", "prior_mass_", "kl_")))
    out: dict[str, Any] = {"positions": n}
    out.update({k: float(np.mean([r[k] for r in rows])) if n else None for k in keys})
    out["noise"] = out["mean_entropy"] - out["entropy"] if n else None
    out["removable"] = out["prior_ce"] - out["mean_entropy"] if n else None
    out["agreement_ci"] = list(wilson_interval(sum(r["agree"] for r in rows), n)) if n else None
    return out


def measure(cfg, upper_net, states, simulations: int, seed: int, repeats: int = 2) -> list[dict[str, float]]:
    """``repeat_stats`` of each of ``states`` searched ``repeats`` times (``open_search`` of ``cfg`` with
    ``selfplay.search.simulations = simulations`` and one search thread, seeds drawn from ``seed`` per
    position and search); positions with fewer than two root children are skipped. Raises
    ``ValueError`` if ``repeats < 2``."""
    from nets.encoding import upper_kind
    from train.learning.selfplay import _close, open_search, selfplay_evaluator

    if repeats < 2:
        raise ValueError(f"repeats: expected at least 2, got {repeats}")
    search = cfg.selfplay.search.model_copy(update={"simulations": simulations, "threads": 1})
    sp = cfg.selfplay.model_copy(update={"search": search})
    cfg = cfg.model_copy(update={"selfplay": sp})
    evaluator = selfplay_evaluator(cfg, upper_net=upper_net)
    rows = []
    try:
        for i, state in enumerate(states):
            results = []
            for rep in range(repeats):
                search = open_search(cfg, int(np.random.SeedSequence([seed, simulations, i, rep]).generate_state(1)[0]),
                                     True, evaluator)
                try:
                    results.append(search.run(state))
                finally:
                    _close(search)
            first = results[0]
            if len(first.moves) >= 2:
                rows.append(repeat_stats(np.stack([r.target() for r in results]),
                                         first.priors / max(float(first.priors.sum()), 1e-12),
                                         np.array([upper_kind(int(a)) for a in first.actions])))
    finally:
        _close(evaluator)
    return rows


def record_positions(paths, rules, count: int, seed: int) -> list:
    """``count`` battle positions (not terminal) from the game records of ``paths``
    (``train.learning.supervised.read_records``), at most ``POSITIONS_PER_GAME`` per game drawn uniformly
    (seeded) from its battle plies, games in file order; fewer if the records hold fewer. Raises
    ``ValueError`` if ``count < 1``, ``SupervisedError`` for a missing or unreadable record."""
    from core.state import PHASE_LAYOUT
    from train.learning.supervised import read_records

    if count < 1:
        raise ValueError(f"count: expected at least 1, got {count}")
    games = ([s for s in record.replay() if s.phase != PHASE_LAYOUT and not s.is_terminal()]
             for record in read_records(paths, rules))
    return _sample_positions(games, count, seed)


def main() -> None:  # pragma: no cover - command line
    import json
    import sys
    import time
    from pathlib import Path

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-dir", default="models/default")
    parser.add_argument("--run", default=None, help="a training run: its config.json instead of --model-dir's")
    parser.add_argument("--upper", default=None, help="with --run: the upper net checkpoint to search with")
    parser.add_argument("--records", nargs="+", default=None, help="positions from these game records")
    parser.add_argument("--simulations", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--positions", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="also write the rows and the summaries to this file")
    args = parser.parse_args()
    for name, value, low, high in (("--positions", args.positions, 1, 100_000), ("--seed", args.seed, 0, 2**32 - 1),
                                   ("--repeats", args.repeats, 2, 1_000),
                                   *(("--simulations", s, 2, 100_000) for s in args.simulations)):
        if not low <= value <= high:
            parser.exit(2, f"error: {name}: expected {low}..{high}, got {value}\n")
    if (args.run is None) != (args.upper is None):
        parser.exit(2, "error: --run and --upper: give both (a run's configuration and its checkpoint) or neither\n")
    from nets.io import load
    from train.jobs.rundir import TrainError
    from train.learning.config import ConfigError, validate_config
    from train.learning.modeldir import load_run_config, read_model_config
    from train.learning.supervised import SupervisedError

    model_dir = Path(args.model_dir)
    try:
        if args.run is not None:
            cfg = load_run_config(args.run, device="cpu")
            upper, _, _ = load(args.upper, expected_kind="upper")
        else:
            cfg = validate_config(read_model_config(model_dir) or {}, str(model_dir / "config.toml"))
            upper, _, _ = load(model_dir / "upper.safetensors", expected_kind="upper")
    except (ConfigError, TrainError, OSError, ValueError) as e:
        parser.exit(2, f"error: {'--run/--upper' if args.run else '--model-dir ' + str(model_dir)}: {e}\n")
    t0 = time.perf_counter()
    try:
        states = (record_positions(args.records, cfg.ruleset, args.positions, args.seed) if args.records
                  else battle_positions(cfg.ruleset, args.positions, args.seed))
    except SupervisedError as e:
        parser.exit(2, f"error: --records: {e}\n")
    print(f"[{time.perf_counter() - t0:.0f} s] {len(states)} positions", file=sys.stderr, flush=True)
    report: dict[str, Any] = {"args": vars(args), "summaries": {}, "rows": {}}
    for sims in args.simulations:
        rows = measure(cfg, upper, states, sims, args.seed, args.repeats)
        s = summarize(rows)
        report["summaries"][sims], report["rows"][sims] = s, rows
        lo, hi = s["agreement_ci"] or (float("nan"), float("nan"))
        print(f"[{time.perf_counter() - t0:.0f} s] {sims} simulations, {s['positions']} positions, {args.repeats} "
              f"searches each: agreement {s['agree']:.3f} [{lo:.3f}, {hi:.3f}], tv {s['tv']:.3f}, entropy "
              f"{s['entropy']:.3f}, mean_entropy {s['mean_entropy']:.3f} (half {s['half_entropy']:.3f}), prior_ce "
              f"{s['prior_ce']:.3f}: noise {s['noise']:.3f}, removable {s['removable']:.3f}; prior_top1 "
              f"{s['prior_top1']:.3f}", flush=True)
        if s["positions"] and "kl_step" in s:
            print("  by kind of move (mean target's mass / the priors' mass / share of removable): " + ", ".join(
                f"{k} {s['mass_' + k]:.3f} / {s['prior_mass_' + k]:.3f} / {s['kl_' + k]:.3f}"
                for k in ("step", "jump", "flight")), flush=True)
    if args.json:
        from core.atomic import atomic_write_text

        atomic_write_text(args.json, json.dumps(report, indent=1))


if __name__ == "__main__":  # pragma: no cover
    main()
