"""Where strength is lost: diagnostics of a model directory against held-out expert games.

``python cli.py diagnose MODEL_DIR --records DIR`` (issue "Learning that surpasses the expert", point 2):

- **policy agreement**: on every position of the held-out records with at least two legal moves, the
  net's most probable legal action (the policy masked to the legal actions, as the search uses it) is
  compared with the move played (records of the expert are the expert's choices): top-1 and top-3
  agreement, separately for the SLM (layout placements) and the upper net (battle paths: the upper
  action of the played path), and the mean cross-entropy of the played move under the masked policy;
- **value calibration**: on the same positions, the value head's estimate ``v`` in [-1, 1] for the
  side to move against the game's result ``z`` (+1 win, -1 loss; drawn games are left out): sign
  accuracy ``P(sign v = z)``, the Brier score of ``p = (1 + v) / 2`` as the probability of a win (0.25
  is a coin's score, 0 perfect), and a reliability table (mean ``p`` and observed win rate in five bins);
  battle positions are also split by stage (first 50 battle plies, later), layout positions too (the
  first 147 placements, the last quarter), and beside the value's sign accuracy stands the colour
  baseline, that of a value knowing only which colour won more of these games;
- **regret in the expert's units** (upper net): on the first ``regret_positions`` battle positions, the
  expert's one-ply score (``knowledge.agents.ExpertAgent`` with ``plies=1``: captures, the reply safety
  check, shapes; 10 units per stone) of the best legal path minus that of the net's most probable
  path: the mean regret and the blunder rate (regret of at least one stone, 10 units). Top-1 agreement
  counts every other move as wrong; the regret tells a harmless alternative from a move that hangs stones;
- **the first square** (:func:`first_square_report`): who formed the first square of each battle, and
  whether that side won (what JFA's first-square reward assumes), overall and by colour;
- **the layout's end** (:func:`layout_end_report`, with an SLM): whether the knowledge evaluations
  (``LAYOUT_END_EVALUATORS``) tell the records' layouts apart at the first battle position, and how
  their values go with the results (what a layout search valued by them could steer by),
  and, from the same positions, the early battle: how well the stone difference a few battle plies
  after the layout (``EARLY_BATTLE_PLIES``) predicts the result, i.e. how soon the battle shows what
  the layout decided (what the ``rollout`` layout agent steers by), and how well the same evaluations
  do at those positions (what its rollouts could be scored by instead);
- **victim choice** (the lower net, JFA Eq. 6): on every square capture of the records, whether the
  lower net's best set among the capture pruner's ``victims`` best sets is the set the expert took, beside
  the capture pruner's own first choice; and both against a reference, the set a deeper evaluation
  prefers (``VICTIM_REFERENCE``, the expert's two-ply search value of the position after each set,
  what ``selfplay.lower_eval`` trains towards): how often each picks the reference's set, and the mean
  regret (the reference's value of its best set minus that of the chosen one, for the capturing side,
  in value units of ``[-1, 1]``).

- **self-play targets** (:func:`target_report`, with shards): on training samples the net was not
  trained on (the shards a run wrote after the net's checkpoint), the learner's policy loss, the mean
  cross-entropy of the search's target ``pi`` under the net's policy masked to the target's actions,
  beside the targets' mean entropy (the loss's floor: their difference is the KL divergence the net
  could still remove) and a uniform prior's cross-entropy over the same actions; how often the net's
  most probable action is the target's; and the value's calibration against the samples' ``z``. It tells
  whether self-play's policy learning generalises to new positions, which the training loss cannot.

- **the drift value** (:func:`drift_report`, ``--value-drift K``): on the records' battle positions, how
  well the upper net's value predicts the drift value target (``train.learning.drift.drift_values``: the
  change of the expert's two-ply margin over the game's next ``K`` plies, what ``pretrain --value-drift``
  and ``selfplay.value_drift`` train): the coefficient of determination ``R^2`` (1 - mean squared error
  over the target's variance; 0 is a constant's, negative is worse), the correlation, and the target's
  spread. A net whose value is to be added to the search's leaf values (``value_mix < 1``) has to know
  where the game goes from a leaf; ``R^2`` says how much of that it knows. Beside it, the target and the
  net's value against the games' results at the same positions (sign accuracy, Brier score,
  correlation): whether the teacher still predicts who wins better than its student.

Strength against the number of simulations is measured by matches (``arena jfa:sims=S expert``); this
module measures the nets alone. All numbers are computed in one process on the CPU, seeded, in batches.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from core.board import NUM_POINTS  # the layout fills every point: a record's battle starts at this ply
from core.errors import JiuError

HELDOUT_RECORDS = Path(__file__).resolve().parents[2] / "data" / "heldout-expert"  # games no shipped net saw


class DiagnoseError(JiuError):
    """Bad input to the diagnostics (no model file, no records); the message names which."""


def _masked_log_softmax(logits: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """``log p(a)`` for ``a`` in ``actions``, ``p`` the softmax of ``logits[actions]`` alone (the policy
    masked to those actions, as the learner's loss masks it). ``logits`` float ``(A,)``, ``actions`` int
    ``(k,)``, ``k >= 1``; returns float64 ``(k,)`` in the order of ``actions``."""
    z = logits[actions].astype(np.float64)
    z -= z.max()
    return z - np.log(np.exp(z).sum())


def _masked_stats(logits: np.ndarray, legal: Sequence[np.ndarray], target: np.ndarray) -> tuple[np.ndarray, ...]:
    """Top-1 / top-3 hit and cross-entropy of ``target`` under ``logits`` masked to ``legal``.

    ``logits`` ``float32 (B, A)``; ``legal[i]`` int64 legal actions of sample ``i``; ``target`` int64 (B,).
    Returns ``(top1 bool (B,), top3 bool (B,), nll float64 (B,))``."""
    top1 = np.zeros(len(target), bool)
    top3 = np.zeros(len(target), bool)
    nll = np.zeros(len(target), np.float64)
    for i, acts in enumerate(legal):
        acts = np.unique(acts)
        logp = _masked_log_softmax(logits[i], acts)
        order = acts[np.argsort(-logp, kind="stable")]
        top1[i] = order[0] == target[i]
        top3[i] = target[i] in order[:3]
        nll[i] = -logp[np.searchsorted(acts, target[i])]
    return top1, top3, nll


def value_calibration(v: np.ndarray, z: np.ndarray, bins: int = 5) -> dict[str, Any]:
    """Sign accuracy, Brier score and a reliability table of values ``v`` (float, [-1, 1]) against
    results ``z`` (+1/-1; zeros and NaN, no value target, are dropped). Returns ``{"n", "sign_accuracy", "brier", "bins": [...]}``
    with each bin ``{"p_mean", "win_rate", "n"}`` over ``p = (1 + v) / 2``."""
    v = np.asarray(v, np.float64)
    z = np.asarray(z, np.float64)
    keep = np.isfinite(z) & (z != 0)
    v, z = v[keep], z[keep]
    if len(v) == 0:
        return {"n": 0, "sign_accuracy": None, "brier": None, "bins": []}
    p = (1.0 + v) / 2.0
    win = (z > 0).astype(np.float64)
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.digitize(p, edges[1:-1]), 0, bins - 1)
    table = []
    for b in range(bins):
        sel = which == b
        if sel.any():
            table.append({"p_mean": float(p[sel].mean()), "win_rate": float(win[sel].mean()), "n": int(sel.sum())})
    return {
        "n": int(len(v)),
        "sign_accuracy": float(np.mean(np.sign(v) == z)),
        "brier": float(np.mean((p - win) ** 2)),
        "bins": table,
    }


def _positions(records, kind: str, max_positions: int, rng: np.random.Generator):
    """Held-out positions of ``kind`` (``slm`` or ``upper``): ``(planes float32 (n, C, 14, 14), legal
    actions per position, target action int64 (n,), z float32 (n,), battle ply int (n,))``, at most
    ``max_positions`` drawn uniformly from all of them."""
    from core.notation import parse_move
    from nets.encoding import encode_paths, encode_upper
    from nets.features import state_planes

    rows = []
    for record in records:
        states = record.replay()
        z = {"w": (1.0, -1.0), "b": (-1.0, 1.0)}.get(record.result or "", (0.0, 0.0))
        for i, text in enumerate(record.moves):
            s = states[i]
            if kind == "slm" and s.phase == 0:
                legal = np.array(s.placements(), np.int64)
                target = parse_move(text).origin
            elif kind == "upper" and s.phase == 1:
                ps = s.paths()
                legal = encode_paths(ps.pts, ps.off, ps.jump, ps.m).astype(np.int64)
                target = encode_upper(parse_move(text))
            else:
                continue
            if len(np.unique(legal)) < 2:
                continue
            rows.append((s, legal, target, z[s.side]))
    if len(rows) > max_positions:
        rows = [rows[i] for i in np.sort(rng.choice(len(rows), max_positions, replace=False))]
    planes = np.stack([state_planes(s) for s, *_ in rows]) if rows else np.zeros((0, 1, 14, 14), np.float32)
    battle_ply = np.array([max(0, s.ply - 196) for s, *_ in rows], np.int64)
    return (planes, [r[1] for r in rows], np.array([r[2] for r in rows], np.int64),
            np.array([r[3] for r in rows], np.float32), battle_ply, [r[0] for r in rows])


def target_report(model, samples, max_positions: int = 4000, seed: int = 0) -> dict[str, Any]:
    """How well ``model`` (a policy/value net of ``samples.kind``) predicts the policy and value targets of
    ``samples`` (``train.learning.samples.Samples`` of kind ``slm`` or ``upper``), at most ``max_positions`` drawn
    uniformly (module docstring, "self-play targets"). Entropies and cross-entropies in nats, per sample
    ``-sum_a pi(a) log p(a)`` over the target's actions ``a`` (``p``: the net's softmax over those actions
    only, as the learner's loss masks it). Returns ``{"positions", "cross_entropy", "target_entropy",
    "kl", "uniform_cross_entropy", "top1", "mean_actions", "value"}`` (``value``: :func:`value_calibration`
    against ``sign(z)``); the means are ``None`` when there is no sample with two actions or more."""
    rng = np.random.default_rng(seed)
    counts = np.diff(samples.pi_off)
    rows = np.flatnonzero(counts >= 2)
    if len(rows) > max_positions:
        rows = np.sort(rng.choice(rows, max_positions, replace=False))
    logits, v = _forward(model, samples.planes[rows])
    ce = np.zeros(len(rows), np.float64)
    ent = np.zeros(len(rows), np.float64)
    uniform = np.zeros(len(rows), np.float64)
    top1 = np.zeros(len(rows), bool)
    for j, i in enumerate(rows):
        acts, pi = samples.policy(int(i))
        pi = pi.astype(np.float64) / pi.sum()
        logp = _masked_log_softmax(logits[j], acts)
        ce[j] = -(pi * logp).sum()
        nz = pi > 0
        ent[j] = -(pi[nz] * np.log(pi[nz])).sum()
        uniform[j] = np.log(len(acts))
        top1[j] = np.argmax(logp) == np.argmax(pi)

    def mean(x):
        return float(x.mean()) if len(x) else None

    return {
        "positions": int(len(rows)),
        "cross_entropy": mean(ce),
        "target_entropy": mean(ent),
        "kl": mean(ce - ent),
        "uniform_cross_entropy": mean(uniform),
        "top1": mean(top1),
        "mean_actions": mean(counts[rows].astype(np.float64)),
        "value": value_calibration(v, np.sign(samples.z[rows])),
    }


def read_target_shards(paths: Sequence[str | os.PathLike]) -> dict[str, Any]:
    """The policy samples (``slm``, ``upper``) of shard files, directories of shards and glob patterns of
    them (``train.learning.samples.read_shards``), one ``train.learning.samples.Samples`` per kind; ``lower`` shards are
    skipped. Raises ``DiagnoseError`` when a path does not exist, a pattern matches nothing or no policy
    shard is found, ``train.learning.samples.ShardError`` (naming the file) for an unreadable shard."""
    from train.learning.samples import ShardPathError, read_shards

    try:
        return read_shards(paths, ("slm", "upper"))
    except ShardPathError as exc:
        raise DiagnoseError(str(exc)) from None


BLUNDER_UNITS = 10.0  # one stone in the expert's battle score (knowledge.expert_kernels.BATTLE_WEIGHTS W_GAIN)
REGRET_CAP = 100.0  # ten stones: the mean is taken of min(regret, cap), since a missed win or a walk into a
DECISIVE_UNITS = 5000.0  # loss scores 1e4-1e5 (W_WIN, W_LOSE) and would swamp it; those are counted apart


def expert_regret(states, legal: Sequence[np.ndarray], logits: np.ndarray) -> dict[str, Any]:
    """Regret of the net's most probable legal path by the expert's one-ply scores (module docstring):
    ``{"positions", "mean", "blunder_rate", "decisive_rate"}`` (``None`` values without positions):
    ``mean`` of the regret capped at :data:`REGRET_CAP`, the share of regrets of at least a stone, and
    the share of at least :data:`DECISIVE_UNITS` (a missed win, or a move into a loss). ``legal[i]`` holds the
    upper actions of ``states[i]``'s paths in ``state.paths()`` order; paths sharing the chosen action
    count as the best-scoring of them."""
    from knowledge.agents import ExpertAgent

    expert = ExpertAgent(plies=1)
    regrets = []
    for s, acts, row in zip(states, legal, logits):
        scores, _ = expert.battle_scores(s)
        chosen = acts[int(np.argmax(row[acts]))]
        regrets.append(float(scores.max() - scores[acts == chosen].max()))
    return regret_summary(regrets)


def regret_summary(regrets: Sequence[float]) -> dict[str, Any]:
    """``{"positions", "mean", "blunder_rate", "decisive_rate"}`` of regrets in the expert's units (see
    :func:`expert_regret`; ``None`` values when there are none)."""
    r = np.asarray(regrets, np.float64)
    if not len(r):
        return {"positions": 0, "mean": None, "blunder_rate": None, "decisive_rate": None}
    return {"positions": len(r), "mean": float(np.minimum(r, REGRET_CAP).mean()),
            "blunder_rate": float((r >= BLUNDER_UNITS).mean()), "decisive_rate": float((r >= DECISIVE_UNITS).mean())}


def drift_report(model, records: Sequence, drift, max_positions: int = 4000, seed: int = 0) -> dict[str, Any]:
    """How well the value of ``model`` (an upper net) predicts the drift value target ``drift`` (a
    ``train.learning.drift.DriftTarget``) on the battle positions of ``records`` with one, at most
    ``max_positions`` drawn uniformly (module docstring). Returns ``{"target", "positions", "r2",
    "correlation", "mse", "target_sd", "target_mean", "results"}``, the statistics ``None`` without two
    positions. ``results`` (``None`` when ``drift.ends`` is ``"drop"``, whose positions are not every
    result sample's) sets the target and the value against the games' results at the same positions:
    ``{"target": ..., "value": ...}``, each :func:`value_calibration` plus ``"correlation"`` over the
    decided games' positions. It says whether the target predicts who wins better than the net does."""
    from train.learning.supervised import samples_from_records

    samples = samples_from_records(records, "upper", drift=drift)
    rng = np.random.default_rng(seed)
    rows = np.arange(len(samples))
    if len(rows) > max_positions:
        rows = np.sort(rng.choice(rows, max_positions, replace=False))
    _, v = _forward(model, samples.planes[rows])
    z = samples.z[rows].astype(np.float64)
    v = v.astype(np.float64)
    out: dict[str, Any] = {"target": drift.spec(), "positions": int(len(rows)), "r2": None, "correlation": None,
                           "mse": None, "target_sd": None, "target_mean": None, "results": None}
    if len(rows) >= 2:
        mse = float(np.mean((v - z) ** 2))
        var = float(np.var(z))
        out.update(mse=mse, target_sd=var ** 0.5, target_mean=float(z.mean()),
                   r2=1.0 - mse / var if var > 0 else None,
                   correlation=float(np.corrcoef(v, z)[0, 1]) if var > 0 and np.std(v) > 0 else None)
    if drift.ends == "result" and len(rows):
        result = samples_from_records(records, "upper").z  # the same positions, in order, valued by the result
        if len(result) != len(samples):
            raise DiagnoseError(f"drift samples ({len(samples)}) and result samples ({len(result)}) differ")
        r = result[rows].astype(np.float64)
        decided = np.isfinite(r) & (r != 0) & np.isfinite(z)
        out["results"] = {name: {**value_calibration(x, r), "correlation": _correlation(x[decided], r[decided])}
                          for name, x in (("target", z), ("value", v))}
    return out


def _forward(model, planes: np.ndarray, batch: int = 256) -> tuple[np.ndarray, np.ndarray]:
    import torch

    logits, values = [], []
    with torch.inference_mode():
        for a in range(0, len(planes), batch):
            out_logits, out_v = model(torch.from_numpy(np.ascontiguousarray(planes[a:a + batch], np.float32)))
            logits.append(out_logits.float().numpy())
            values.append(out_v.float().numpy())
    if not logits:
        return np.zeros((0, 1), np.float32), np.zeros(0, np.float32)
    return np.concatenate(logits), np.concatenate(values)


BATTLE_EARLY = 50  # the first 50 battle plies, the opening of the battle
BATTLE_STAGES = (f"battle<{BATTLE_EARLY}", f"battle>={BATTLE_EARLY}")
LAYOUT_LATE = 147  # the last quarter of the layout (placements 148-196), where the SLM and the expert part most
LAYOUT_STAGES = (f"layout<{LAYOUT_LATE}", f"layout>={LAYOUT_LATE}")
STAGES = (*BATTLE_STAGES, *LAYOUT_STAGES)


def policy_value_report(model, records, kind: str, max_positions: int = 4000, seed: int = 0,
                        regret_positions: int = 1000) -> dict[str, Any]:
    """Policy agreement and value calibration of one policy/value net (``kind`` ``slm`` or ``upper``)
    on ``records``, and for ``upper`` the expert regret on the first ``regret_positions`` positions
    (module docstring)."""
    rng = np.random.default_rng(seed)
    planes, legal, target, z, battle_ply, states = _positions(records, kind, max_positions, rng)
    logits, v = _forward(model, planes)
    top1, top3, nll = _masked_stats(logits, legal, target)
    out: dict[str, Any] = {
        "positions": int(len(target)),
        "top1": float(top1.mean()) if len(top1) else None,
        "top3": float(top3.mean()) if len(top3) else None,
        "cross_entropy": float(nll.mean()) if len(nll) else None,
        "mean_legal": float(np.mean([len(np.unique(a)) for a in legal])) if legal else None,
        "value": value_calibration(v, z),
    }
    if kind == "upper" and len(target) and regret_positions > 0:
        k = min(regret_positions, len(states))
        out["expert_regret"] = expert_regret(states[:k], legal[:k], logits[:k])
    if len(target):
        out["colour_baseline"] = colour_baseline([st.side for st in states], z)
        if kind == "upper":
            names, early = BATTLE_STAGES, battle_ply < BATTLE_EARLY
        else:
            names, early = LAYOUT_STAGES, np.array([st.ply for st in states], np.int64) < LAYOUT_LATE
        for name, sel in zip(names, (early, ~early)):
            out[name] = {"positions": int(sel.sum()), "top1": float(top1[sel].mean()) if sel.any() else None,
                         "value": value_calibration(v[sel], z[sel])}
    return out


def colour_baseline(sides: Sequence[int], z: np.ndarray) -> float | None:
    """Sign accuracy of the value that knows only the colour: ``+1`` for the side whose colour won more
    of these decided positions, ``-1`` for the other (``sides`` ``0`` White / ``1`` Black per position,
    ``z`` its result for the side to move, ``0`` a draw, dropped). ``None`` without decided positions.
    A value net whose sign accuracy is not above it has learnt nothing but the colour."""
    sides = np.asarray(sides, np.int64)
    z = np.asarray(z, np.float64)
    keep = z != 0
    if not keep.any():
        return None
    white_wins = np.where(sides[keep] == 0, z[keep], -z[keep]) > 0
    return float(max(white_wins.mean(), 1.0 - white_wins.mean()))


def first_square_report(records) -> dict[str, Any]:
    """Who formed the first square of each game's battle and who won (JFA's first-square reward credits
    the former): ``{"games", "results": {"w", "b", "draw"}, "first_square": {"w", "b", "none"},
    "decided_with_square", "first_square_won"}``: the colours' results, the colour of the first
    square-forming move (a move with victims, ``/`` in the rule book's notation; the battle starts
    after the 196 placements, Black first), and among the decided games with a square how many the first square's side won;
    ``"by_colour"``: the same count for each colour, ``{"w"|"b": {"decided", "won"}}``, to set beside that
    colour's share of all decided games (the reward is informative only if it beats the colour). ``records``:
    objects with ``moves`` (notation strings from the start) and ``result`` (``"w"``, ``"b"``, ``"draw"``)."""
    results = {"w": 0, "b": 0, "draw": 0}
    first = {"w": 0, "b": 0, "none": 0}
    by_colour = {c: {"decided": 0, "won": 0} for c in ("w", "b")}
    for record in records:
        result = record.result if record.result in ("w", "b") else "draw"
        results[result] += 1
        battle = record.moves[NUM_POINTS:]
        ply = next((i for i, m in enumerate(battle) if "/" in m), None)
        side = "none" if ply is None else ("b" if ply % 2 == 0 else "w")
        first[side] += 1
        if side != "none" and result != "draw":
            by_colour[side]["decided"] += 1
            by_colour[side]["won"] += side == result
    return {"games": len(records), "results": results, "first_square": first,
            "decided_with_square": sum(c["decided"] for c in by_colour.values()),
            "first_square_won": sum(c["won"] for c in by_colour.values()), "by_colour": by_colour}


LAYOUT_END_EVALUATORS = ("eval.expert", "eval.shape", "eval.expert:plies=2")  # layout_end_report's default
EARLY_BATTLE_PLIES = (8, 32, 64, 128)  # layout_end_report's default battle plies


def _correlation(v: np.ndarray, z: np.ndarray) -> float | None:
    """Pearson's correlation of ``v`` and ``z``, ``None`` when either is constant (or fewer than two)."""
    return float(np.corrcoef(v, z)[0, 1]) if len(v) > 1 and np.ptp(v) > 1e-6 and np.ptp(z) > 0 else None


def layout_end_report(records, evaluators: Sequence[Any] = LAYOUT_END_EVALUATORS,
                      plies: Sequence[int] = EARLY_BATTLE_PLIES) -> dict[str, Any]:
    """Whether the records' layouts can be told apart by their results, at the first battle position
    (after the 196 placements) and a few battle plies on; ``z`` = +1 White won, -1 Black, 0 drawn.

    - ``"evaluators"``: each evaluator (an ``evaluator`` plugin spec, or an object with ``value(state)``)
      values the first battle position of every game, turned to White's view; per evaluator
      ``{"distinct"`` (values that differ by more than 1e-6), ``"sign_accuracy"`` (``sign v = z`` over the
      decided games), ``"correlation"`` (Pearson's of ``v`` and ``z``; ``None`` when either is
      constant)``}``;
    - ``"plies"`` (the early battle): for each ``k`` of ``plies`` (battle plies, >= 0; a battle that ended
      sooner counts at its last position) the difference ``d`` = White's stones minus Black's after ``k``
      battle plies; per ``k``: ``"correlation"`` (as above), ``"sign_accuracy"`` (``sign d = z`` over the
      decided games with ``d != 0``, ``None`` when there are none), ``"differing"`` (how many those are),
      ``"mean_difference"``, and ``"evaluators"``: each evaluator's values at that position, as at the
      first battle position (what a rollout judge could score its rollouts by instead of ``d``);

    and ``"games"`` (records with a battle), ``"decided"``. ``records``: objects with ``replay()`` (the
    positions from the start, ``core.records.GameRecord``) and ``result``. Raises ``ValueError`` for a
    negative ``k``."""
    from core.board import PHASE_LAYOUT
    from knowledge.plugins import REGISTRY

    if any(int(k) < 0 for k in plies):
        raise ValueError(f"early battle plies must be >= 0, got {list(plies)}")
    starts, later, z = [], [], []
    for record in records:
        battle = [s for s in record.replay() if s.phase != PHASE_LAYOUT]
        if battle:
            starts.append(battle[0])
            later.append([battle[min(int(k), len(battle) - 1)] for k in plies])
            z.append({"w": 1.0, "b": -1.0}.get(record.result, 0.0))
    z_arr = np.array(z)
    decided = z_arr != 0
    named = [(spec if isinstance(spec, str) else getattr(spec, "name", repr(spec)),
              REGISTRY.create(spec, "evaluator") if isinstance(spec, str) else spec) for spec in evaluators]

    def stats(states) -> dict[str, dict[str, Any]]:  # each evaluator's values at ``states``, White's view
        by_name = {}
        for name, evaluator in named:
            v = np.array([evaluator.value(s) * (1.0 if s.side == 0 else -1.0) for s in states])
            acc = float(np.mean(np.sign(v[decided]) == z_arr[decided])) if decided.any() else None
            by_name[name] = {"distinct": int(len(np.unique(np.round(v, 6)))) if len(v) else 0, "sign_accuracy": acc,
                             "correlation": _correlation(v, z_arr)}
        return by_name

    out: dict[str, Any] = {"games": len(starts), "decided": int(decided.sum()), "evaluators": stats(starts),
                           "plies": {}}
    for j, k in enumerate(plies):
        at = [row[j] for row in later]
        d = np.array([int(s.counts[0]) - int(s.counts[1]) for s in at], np.float64)
        use = decided & (d != 0)
        out["plies"][int(k)] = {
            "correlation": _correlation(d, z_arr),
            "sign_accuracy": float(np.mean(np.sign(d[use]) == z_arr[use])) if use.any() else None,
            "differing": int(use.sum()),
            "mean_difference": float(d.mean()) if len(d) else None,
            "evaluators": stats(at)}
    return out


VICTIM_REFERENCE = "eval.expert:plies=2"  # the victim report's reference evaluator


def victim_report(lower, records, candidates: int = 8, max_captures: int = 1000, seed: int = 0,
                  reference: str | None = VICTIM_REFERENCE) -> dict[str, Any]:
    """How often the lower net's best among the capture pruner's ``candidates`` best victim sets, and the
    pruner's own first set, are the set the records' player took (square captures with at least two
    candidate sets). ``lower``: the lower net (a module) or any victim scorer (``q_values``); with
    ``reference`` (an ``evaluator`` plugin spec, or ``None``) also how often each is the set after
    which the reference's value for the opponent is lowest, and the mean regret against it (module
    docstring)."""
    from core.notation import parse_move
    from knowledge.evaluation import EvaluatorVictimScorer
    from knowledge.plugins import REGISTRY
    from nets.evaluator import NetVictimScorer

    pruner = REGISTRY.create("prune.capture", "capture_pruner")
    scorer = lower if hasattr(lower, "q_values") else NetVictimScorer(lower)
    judge = EvaluatorVictimScorer.from_spec(reference) if reference else None
    rng = np.random.default_rng(seed)
    cases = []
    for record in records:
        states = record.replay()
        for i, text in enumerate(record.moves):
            if states[i].phase == 1:
                move = parse_move(text)
                if move.victims:
                    cases.append((states[i], move))
    if len(cases) > max_captures:
        cases = [cases[i] for i in np.sort(rng.choice(len(cases), max_captures, replace=False))]
    from core.notation import Move
    from nets.encoding import encode_upper

    n = net_hits = pruner_hits = in_candidates = 0
    net_ref = pruner_ref = 0
    net_regret = pruner_regret = 0.0
    for state, move in cases:
        sets, _ = pruner.candidates(state, move.path, move.jump)
        sets = [tuple(sorted(s)) for s in sets[:candidates]] if candidates > 0 else [tuple(sorted(s)) for s in sets]
        if len(sets) < 2:
            continue
        played = tuple(sorted(move.victims))
        after = [state._play(Move(move.path, move.jump, s)) for s in sets]
        actions = [encode_upper(move)] * len(after)
        j = int(np.argmax(scorer.q_values(after, actions)))
        n += 1
        in_candidates += played in sets
        net_hits += sets[j] == played
        pruner_hits += sets[0] == played
        if judge is not None:
            r = judge.q_values(after, actions)
            best = float(r.max())
            net_ref += bool(r[j] == best)
            pruner_ref += bool(r[0] == best)
            net_regret += best - float(r[j])
            pruner_regret += best - float(r[0])
    out = {
        "captures": n,
        "candidates": candidates,
        "played_in_candidates": in_candidates / n if n else None,
        "lower_net_top1": net_hits / n if n else None,
        "pruner_top1": pruner_hits / n if n else None,
    }
    if judge is not None:
        out["reference"] = {"evaluator": reference, "lower_net_top1": net_ref / n if n else None,
                            "pruner_top1": pruner_ref / n if n else None,
                            "lower_net_regret": net_regret / n if n else None,
                            "pruner_regret": pruner_regret / n if n else None}
    return out


def model_nets(model: str | os.PathLike) -> dict[str, Path]:
    """The nets to diagnose, ``{kind: path}``: a model directory's ``slm``, ``upper`` and ``lower``
    ``.safetensors`` (each optional), or one net file (a run's checkpoint, say) under its own kind.
    Raises ``DiagnoseError`` when there is no net; ``ValueError`` (naming the file) for a bad net file."""
    from nets.io import load

    model = Path(model)
    if model.is_file():
        _, config, _ = load(model)
        return {config.kind: model}
    nets = {k: model / f"{k}.safetensors" for k in ("slm", "upper", "lower")}
    nets = {k: p for k, p in nets.items() if p.is_file()}
    if not nets:
        raise DiagnoseError(f"model directory {model}: no slm/upper/lower .safetensors file")
    return nets


def diagnose(model_dir: str | os.PathLike, record_paths: Sequence[str | os.PathLike], max_records: int = 200,
             max_positions: int = 4000, victims: int = 8, seed: int = 0, ruleset=None,
             victim_reference: str | None = VICTIM_REFERENCE,
             shard_paths: Sequence[str | os.PathLike] = (), drift=None) -> dict[str, Any]:
    """Every diagnostic of the nets of ``model_dir`` (:func:`model_nets`: a model directory or one net
    file) on at most ``max_records`` games of ``record_paths`` (the last ones, in file order; none: no
    record diagnostics) and, with ``shard_paths`` (:func:`read_target_shards`), on those samples' targets
    (:func:`target_report`, under ``report[kind]["targets"]``); ``victim_reference``: the victim
    report's reference evaluator (:func:`victim_report`); ``drift`` (a ``train.learning.drift.DriftTarget``,
    with records): the upper net's :func:`drift_report` under ``report["upper"]["drift"]``. Raises
    ``DiagnoseError`` when ``drift`` is given without records or an upper net, when there is no
    net, when record paths are given but hold no records, or when neither records nor shards are given."""
    import torch

    from core.rules import DEFAULT_RULESET
    from nets.io import load
    from train.learning.supervised import read_records, record_files

    torch.set_num_threads(1)
    nets = model_nets(model_dir)
    if not record_paths and not shard_paths:
        raise DiagnoseError("nothing to diagnose on: give records or shards")
    if drift is not None and (not record_paths or "upper" not in nets):
        raise DiagnoseError("the drift value is scored on records' battle positions by an upper net: give --records "
                            "and a model with upper.safetensors")
    report: dict[str, Any] = {"model_dir": str(model_dir)}
    records = None
    if record_paths:
        files = record_files(record_paths)
        if not files:
            raise DiagnoseError("records: no record files found")
        files = files[-max_records:]
        records = read_records(files, ruleset or DEFAULT_RULESET)
        report.update({"records": len(records), "record_files": [str(files[0]), str(files[-1])],
                       "first_square": first_square_report(records)})
        if "slm" in nets:
            report["layout_end"] = layout_end_report(records)
    targets = read_target_shards(shard_paths) if shard_paths else {}
    for kind, path in nets.items():
        model, _, _ = load(path, expected_kind=kind)
        out: dict[str, Any] = {}
        if records is not None:
            if kind == "lower":
                out = victim_report(model, records, candidates=victims, seed=seed, reference=victim_reference)
            else:
                out = policy_value_report(model, records, kind, max_positions=max_positions, seed=seed)
                if kind == "upper" and drift is not None:
                    out["drift"] = drift_report(model, records, drift, max_positions=max_positions, seed=seed)
        if kind in targets:
            out["targets"] = target_report(model, targets[kind], max_positions=max_positions, seed=seed)
        if out:
            report[kind] = out
    return report


def format_report(report: dict[str, Any]) -> str:
    """The report as a few plain-text lines."""
    def pct(x):
        return "n/a" if x is None else f"{100 * x:.1f}%"

    def num(x, f="{:.3f}"):
        return "n/a" if x is None else f.format(x)

    lines = [f"model {report['model_dir']}: {report['records']} held-out games" if "records" in report
             else f"model {report['model_dir']}"]
    fs = report.get("first_square")
    if fs:
        res, first = fs["results"], fs["first_square"]
        lines.append(f"games: White won {res['w']}, Black {res['b']}, drawn {res['draw']}; first square formed by "
                     f"White {first['w']}, Black {first['b']}, none {first['none']}; its side won "
                     f"{fs['first_square_won']} of {fs['decided_with_square']} decided games")
        colour = fs.get("by_colour")
        if colour:
            decided = res["w"] + res["b"]
            lines.append("      by colour: " + "; ".join(
                f"{name} formed it in {colour[c]['decided']} decided games and won {colour[c]['won']} "
                f"(all decided games: {name} won {pct(res[c] / decided if decided else None)})"
                for c, name in (("w", "White"), ("b", "Black"))))
    le = report.get("layout_end")
    if le:
        lines.append(f"layout end ({le['games']} first battle positions, {le['decided']} decided): " + "; ".join(
            f"{name} {e['distinct']} distinct values, sign accuracy {pct(e['sign_accuracy'])}, correlation "
            f"{num(e['correlation'], '{:+.2f}')}" for name, e in le["evaluators"].items()))
        if le["plies"]:
            lines.append(f"early battle ({le['games']} games, {le['decided']} decided), stone difference after k battle "
                         "plies vs result: " + "; ".join(
                             f"k={k} correlation {num(e['correlation'], '{:+.2f}')}, sign accuracy "
                             f"{pct(e['sign_accuracy'])} ({e['differing']} decided games with a difference)"
                             for k, e in le["plies"].items()))
            for name in le["evaluators"]:
                lines.append(f"      {name} after k battle plies vs result: " + "; ".join(
                    f"k={k} correlation {num(e['evaluators'][name]['correlation'], '{:+.2f}')}, sign accuracy "
                    f"{pct(e['evaluators'][name]['sign_accuracy'])}" for k, e in le["plies"].items()))
    for kind in ("slm", "upper"):
        r = report.get(kind)
        if r and "targets" in r:
            t = r["targets"]
            lines.append(f"{kind:5s} on the shards' targets ({t['positions']} positions, mean "
                         f"{num(t['mean_actions'], '{:.1f}')} actions): cross-entropy {num(t['cross_entropy'])} "
                         f"(target entropy {num(t['target_entropy'])}, KL {num(t['kl'])}; uniform "
                         f"{num(t['uniform_cross_entropy'])}), top-1 {pct(t['top1'])}, value sign accuracy "
                         f"{pct(t['value']['sign_accuracy'])}, Brier {num(t['value']['brier'])}")
        if not r or "value" not in r:
            continue
        val = r["value"]
        lines.append(
            f"{kind:5s} policy top-1 {pct(r['top1'])}, top-3 {pct(r['top3'])}, cross-entropy "
            f"{num(r['cross_entropy'])} over {r['positions']} positions (mean {num(r['mean_legal'], '{:.0f}')} legal)"
        )
        lines.append(f"      value sign accuracy {pct(val['sign_accuracy'])}, Brier {num(val['brier'])} "
                     f"({val['n']} decided positions)")
        if r.get("expert_regret"):
            g = r["expert_regret"]
            lines.append(f"      expert regret (one-ply score, 10 = a stone, capped at 100) mean "
                         f"{num(g['mean'], '{:.1f}')}, blunders (>= 1 stone) {pct(g['blunder_rate'])}, missed wins"
                         f" or moves into a loss {pct(g['decisive_rate'])} over {g['positions']} positions")
        if r.get("drift"):
            d = r["drift"]
            lines.append(f"      drift value ({d['target']}, {d['positions']} positions): R^2 {num(d['r2'])}, "
                         f"correlation {num(d['correlation'], '{:+.3f}')}, target sd {num(d['target_sd'])}")
            if d.get("results"):
                lines.append("      against the results: " + "; ".join(
                    f"{who} sign accuracy {pct(e['sign_accuracy'])}, Brier {num(e['brier'])}, correlation "
                    f"{num(e['correlation'], '{:+.3f}')}" for who, e in (("the target", d["results"]["target"]),
                                                                         ("the net's value", d["results"]["value"]))))
        if r.get("colour_baseline") is not None:
            lines.append(f"      colour baseline (the winning colour's side is ahead) {pct(r['colour_baseline'])}")
        for stage in STAGES:
            if stage in r:
                s = r[stage]
                lines.append(f"      {stage}: top-1 {pct(s['top1'])}, value sign accuracy "
                             f"{pct(s['value']['sign_accuracy'])}, Brier {num(s['value']['brier'])} "
                             f"({s['positions']} positions)")
    r = report.get("lower")
    if r and "captures" in r:
        lines.append(f"lower victim choice over {r['captures']} captures (pruner's best {r['candidates']} sets): "
                     f"lower net = played {pct(r['lower_net_top1'])}, pruner's first = played "
                     f"{pct(r['pruner_top1'])}, played among candidates {pct(r['played_in_candidates'])}")
        ref = r.get("reference")
        if ref:
            lines.append(f"      against {ref['evaluator']}'s best set: lower net {pct(ref['lower_net_top1'])} "
                         f"(regret {num(ref['lower_net_regret'])}), pruner's first {pct(ref['pruner_top1'])} "
                         f"(regret {num(ref['pruner_regret'])})")
    return "\n".join(lines)
