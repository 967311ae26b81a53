"""train/learning/diagnose.py: hand-computed metrics and a run on real records with the shipped model."""

import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from train.learning.diagnose import DiagnoseError, _masked_stats, diagnose, format_report, value_calibration


def test_value_calibration_by_hand():
    v = np.array([0.5, -0.5, 0.0, 1.0, 0.2])
    z = np.array([1.0, 1.0, -1.0, 1.0, 0.0])  # the draw (0) is dropped
    r = value_calibration(v, z, bins=2)
    assert r["n"] == 4
    # signs: +/+ right, -/+ wrong, 0/- wrong (sign 0 != -1), +/+ right
    assert r["sign_accuracy"] == pytest.approx(0.5)
    p = np.array([0.75, 0.25, 0.5, 1.0])
    win = np.array([1, 1, 0, 1])
    assert r["brier"] == pytest.approx(np.mean((p - win) ** 2))
    assert sum(b["n"] for b in r["bins"]) == 4
    assert value_calibration(np.zeros(2), np.zeros(2))["n"] == 0
    # a NaN target (no value target, nets.losses.value_mse) is dropped like a draw
    with_nan = value_calibration(np.append(v, -0.9), np.append(z, np.nan), bins=2)
    assert with_nan == r


def test_colour_baseline_by_hand():
    from train.learning.diagnose import colour_baseline

    # White to move won twice and lost once, Black to move lost twice (White won), one draw dropped:
    # White won 4 of the 5 decided positions, so "White is ahead" is right 4 times in 5
    sides = [0, 0, 0, 1, 1, 1]
    z = np.array([1.0, 1.0, -1.0, -1.0, -1.0, 0.0])
    assert colour_baseline(sides, z) == pytest.approx(0.8)
    # the same with the colours swapped: Black's side is ahead, right as often
    assert colour_baseline([1 - s for s in sides], z) == pytest.approx(0.8)
    assert colour_baseline([0, 1], np.zeros(2)) is None


def test_masked_stats_by_hand():
    logits = np.array([[5.0, 1.0, 2.0, 3.0], [0.0, 0.0, 9.0, 1.0]], np.float32)
    legal = [np.array([1, 2, 3]), np.array([0, 1, 3])]  # action 0 (row 0) and 2 (row 1) are masked out
    top1, top3, nll = _masked_stats(logits, legal, np.array([3, 1]))
    assert top1.tolist() == [True, False]  # row 1: legal argmax is 3 (logit 1), target 1
    assert top3.tolist() == [True, True]
    z = np.array([1.0, 2.0, 3.0])
    assert nll[0] == pytest.approx(-(3.0 - np.log(np.exp(z).sum())))


def _random_record(seed, rules):
    """The record of a random game (``core.playout``) under ``rules``, up to its end."""
    from core.playout import random_game_moves
    from core.records import GameRecord
    from core.state import GameState

    moves, _, _ = random_game_moves(seed, rules.vector)
    s = GameState.initial(rules)
    played = []
    for m in moves:
        if s.is_terminal():
            break
        played.append(m)
        s = s._play(m)
    return GameRecord.from_moves(played, rules)


def test_diagnose_on_records(tmp_path):
    from core.records import write_json
    from core.rules import Ruleset

    rules = Ruleset(max_battle_plies=60, adjudicate="stones")
    for seed in (1, 2):
        write_json(_random_record(seed, rules), tmp_path / f"g{seed}.json")
    report = diagnose("models/default", [tmp_path], max_positions=300, victims=4, ruleset=rules,
                      victim_reference="eval.expert")  # the one-ply value: the default two-ply one is slow here
    assert report["records"] == 2
    stages = {"slm": ("layout<147", "layout>=147"), "upper": ("battle<50", "battle>=50")}
    for kind in ("slm", "upper"):
        r = report[kind]
        assert r["positions"] > 0 and 0.0 <= r["top1"] <= r["top3"] <= 1.0
        assert sum(r[stage]["positions"] for stage in stages[kind]) == r["positions"]
        assert r["colour_baseline"] is None or 0.5 <= r["colour_baseline"] <= 1.0
    assert "lower" in report and report["lower"]["reference"]["evaluator"] == "eval.expert"
    json.dumps(report)
    assert "policy top-1" in format_report(report) and "against eval.expert" in format_report(report)
    assert "eval.shape after k battle plies vs result: k=8 correlation" in format_report(report)
    with pytest.raises(DiagnoseError):
        diagnose(tmp_path, [tmp_path])


def test_drift_report_against_the_targets_by_hand(tmp_path):
    """The drift diagnostic scores the value against drift_values at the battle positions that give
    upper samples: a constant value has R^2 = -(c - mean)^2 / var and no correlation; the report goes
    through diagnose and its text, and needs records and an upper net."""
    import math
    from dataclasses import replace

    from core.records import write_json
    from core.rules import Ruleset
    from train.learning.diagnose import drift_report
    from train.learning.drift import DriftTarget, drift_values

    rules = Ruleset(max_battle_plies=60, adjudicate="stones")
    record = _random_record(3, rules)
    write_json(record, tmp_path / "g.json")
    drift = DriftTarget(2, "eval.expert")
    replay = record.replay()
    d = drift_values(replay, drift)
    z = np.array([d[i] for i in range(len(replay) - 1)
                  if replay[i].phase == 1 and replay[i].paths().m > 1 and not math.isnan(d[i])], np.float64)
    assert len(z) > 10 and z.var() > 0

    class Constant(torch.nn.Module):
        def forward(self, x):
            return torch.zeros(len(x), 4), torch.full((len(x),), 0.25)

    r = drift_report(Constant(), [record], drift)
    assert r["positions"] == len(z) and r["target"] == "drift:2:eval.expert"
    assert r["mse"] == pytest.approx(np.mean((0.25 - z) ** 2), abs=1e-6)
    assert r["r2"] == pytest.approx(-((0.25 - z.mean()) ** 2) / z.var(), abs=1e-6) and r["correlation"] is None
    # against the results at the same positions: the result for the side to move, by hand
    final = replay[-1]
    winner = final.winner()
    res = np.array([(1.0 if winner == replay[i].side else -1.0) for i in range(len(replay) - 1)
                    if replay[i].phase == 1 and replay[i].paths().m > 1 and not math.isnan(d[i])], np.float64)
    target, value = r["results"]["target"], r["results"]["value"]
    assert target["n"] == value["n"] == len(res)
    assert target["sign_accuracy"] == pytest.approx(np.mean(np.sign(z) == res))
    assert target["correlation"] == pytest.approx(np.corrcoef(z, res)[0, 1])
    assert value["sign_accuracy"] == pytest.approx(np.mean(res == 1.0)) and value["correlation"] is None
    assert r["results"] is not None and drift_report(Constant(), [record], replace(drift, ends="drop"))["results"] is None
    report = diagnose("models/default", [tmp_path], max_positions=300, victims=4, ruleset=rules,
                      victim_reference=None, drift=drift)
    got = report["upper"]["drift"]
    assert got["positions"] == len(z) and got["r2"] is not None and -1.0 <= got["correlation"] <= 1.0
    assert "drift value (drift:2:eval.expert" in format_report(report)
    assert "against the results: the target sign accuracy" in format_report(report)
    with pytest.raises(DiagnoseError, match="records"):
        diagnose("models/default", [], shard_paths=["/nonexistent"], drift=drift)


def test_expert_regret_by_hand():
    """Logits on the expert's best path give regret 0; on its worst, the score gap (a blunder when it
    is a stone or more); paths are compared through their upper actions, as the search sees them."""
    from core.state import GameState
    from knowledge.agents import ExpertAgent
    from nets.encoding import NUM_UPPER_ACTIONS, encode_paths
    from train.learning.diagnose import BLUNDER_UNITS, expert_regret

    s = GameState.from_jfen("14/14/14/14/5WW7/5WB7/5BBW6/6WB6/7B6/14/14/14/14/14 w battle 0 200")
    ps = s.paths()
    acts = encode_paths(ps.pts, ps.off, ps.jump, ps.m).astype(np.int64)
    scores, _ = ExpertAgent(plies=1).battle_scores(s)
    gap = float(scores.max() - scores.min())
    assert gap >= BLUNDER_UNITS  # the position has a move that loses a stone
    rows = np.zeros((2, NUM_UPPER_ACTIONS), np.float32)
    rows[0, acts[int(np.argmax(scores))]] = 5.0
    rows[1, acts] = -5.0
    worst = acts[int(np.argmin(scores))]
    rows[1, worst] = 5.0
    want_worst = float(scores.max() - scores[acts == worst].max())
    r = expert_regret([s, s], [acts, acts], rows)
    assert r["positions"] == 2
    assert r["mean"] == pytest.approx(min(want_worst, 100.0) / 2)
    assert r["blunder_rate"] == (0.5 if want_worst >= BLUNDER_UNITS else 0.0)


def test_victim_report_against_its_reference(tmp_path):
    """A scorer that is the reference itself agrees with it on every capture with zero regret; the
    pruner's first set agrees as often as a direct count says, with a regret >= 0."""
    from core.notation import Move, parse_move
    from core.records import GameRecord
    from core.rules import Ruleset
    from core.state import GameState
    from knowledge.agents import make_agent
    from knowledge.evaluation import EvaluatorVictimScorer
    from knowledge.plugins import REGISTRY
    from train.learning.diagnose import victim_report

    rules = Ruleset(max_battle_plies=60, adjudicate="stones")
    expert, s, moves = make_agent("expert", seed=2), GameState.initial(rules), []
    while not s.is_terminal():
        m = expert.select(s)
        moves.append(str(m))
        s = s.apply(m)
    record = GameRecord(ruleset=rules, result=s.outcome().winner_code, moves=tuple(moves))
    evaluator = REGISTRY.create("eval.expert", "evaluator")
    r = victim_report(EvaluatorVictimScorer(evaluator), [record], candidates=4, reference="eval.expert")
    ref = r["reference"]
    assert r["captures"] > 0 and ref["lower_net_top1"] == 1.0 and ref["lower_net_regret"] == 0.0
    pruner, n, hits, regret = REGISTRY.create("prune.capture", "capture_pruner"), 0, 0, 0.0
    for state, text in zip(record.replay(), record.moves):
        move = parse_move(text)
        if state.phase == 1 and move.victims:
            sets = [tuple(sorted(x)) for x in pruner.candidates(state, move.path, move.jump)[0]][:4]
            if len(sets) > 1:
                v = [-evaluator.value(state._play(Move(move.path, move.jump, x))) for x in sets]
                n, hits, regret = n + 1, hits + (v[0] == max(v)), regret + max(v) - v[0]
    assert n == r["captures"]
    assert ref["pruner_top1"] == pytest.approx(hits / n) and ref["pruner_regret"] == pytest.approx(regret / n, abs=1e-6)
    assert ref["pruner_regret"] >= 0


def test_first_square_report_by_hand():
    """Battle moves after the 196 placements, Black first: a move with ``/`` forms a square."""
    from types import SimpleNamespace

    from train.learning.diagnose import first_square_report

    layout = ["a1"] * 196  # placements are not read
    games = [
        SimpleNamespace(moves=layout + ["g7-h7/a1", "b1-b2"], result="w"),  # Black's square, White won
        SimpleNamespace(moves=layout + ["g7-h7", "b1-b2/a3"], result="w"),  # White's square, White won
        SimpleNamespace(moves=layout + ["g7-h7/a1"], result="draw"),  # Black's square, drawn: not decided
        SimpleNamespace(moves=layout + ["g7-h7", "b1-b2"], result="b"),  # no square
    ]
    r = first_square_report(games)
    assert r["games"] == 4
    assert r["results"] == {"w": 2, "b": 1, "draw": 1}
    assert r["first_square"] == {"w": 1, "b": 2, "none": 1}
    assert (r["decided_with_square"], r["first_square_won"]) == (2, 1)


def test_first_square_report_by_colour():
    """The first-square count split by the colour that formed it (the hand games above plus one)."""
    from types import SimpleNamespace

    from train.learning.diagnose import first_square_report

    layout = ["a1"] * 196
    games = [
        SimpleNamespace(moves=layout + ["g7-h7/a1", "b1-b2"], result="w"),  # Black's square, White won
        SimpleNamespace(moves=layout + ["g7-h7/a1", "b1-b2"], result="b"),  # Black's square, Black won
        SimpleNamespace(moves=layout + ["g7-h7/a1"], result="b"),  # Black's square, Black won
        SimpleNamespace(moves=layout + ["g7-h7", "b1-b2/a3"], result="b"),  # White's square, Black won
        SimpleNamespace(moves=layout + ["g7-h7", "b1-b2/a3"], result="draw"),  # White's, not decided
    ]
    r = first_square_report(games)
    assert r["by_colour"] == {"b": {"decided": 3, "won": 2}, "w": {"decided": 1, "won": 0}}
    assert (r["decided_with_square"], r["first_square_won"]) == (4, 2)


def test_layout_end_report_against_numpy():
    """Each evaluator's values at the first battle position, turned to White's view, against the
    results: distinct values, sign accuracy and Pearson's correlation, recomputed here with numpy; a
    constant evaluator has one value and no correlation."""
    from core.board import PHASE_LAYOUT
    from train.learning.diagnose import HELDOUT_RECORDS, layout_end_report
    from train.learning.supervised import read_records, record_files

    records = read_records(record_files([HELDOUT_RECORDS])[:12])

    class Stones:  # a spread of values from the position's hash, for the side to move
        name = "stones"

        def value(self, s):
            return ((int(s.hash) % 1000) / 1000.0 - 0.5) * (1.0 if s.side == 0 else -1.0)

    class Constant:
        name = "constant"

        def value(self, s):
            return 0.25

    r = layout_end_report(records, [Stones(), Constant()])
    starts = [next(s for s in rec.replay() if s.phase != PHASE_LAYOUT) for rec in records]
    z = np.array([{"w": 1.0, "b": -1.0}.get(rec.result, 0.0) for rec in records])
    v = np.array([(int(s.hash) % 1000) / 1000.0 - 0.5 for s in starts])  # White's view
    d = z != 0
    e = r["evaluators"]["stones"]
    assert r["games"] == len(records) and r["decided"] == int(d.sum())
    assert e["distinct"] == len(set(np.round(v, 6)))
    assert e["sign_accuracy"] == pytest.approx(np.mean(np.sign(v[d]) == z[d]))
    assert e["correlation"] == pytest.approx(np.corrcoef(v, z)[0, 1])
    c = r["evaluators"]["constant"]
    assert c["distinct"] == 1 and c["correlation"] is None
    # Black is to move at the first battle position: a constant +0.25 for the mover is -0.25 for White
    assert c["sign_accuracy"] == pytest.approx(np.mean(z[d] == -1.0))


def test_early_battle_against_numpy():
    """``layout_end_report``'s early battle: the stone difference after k battle plies (counted on the
    board here), against the results: correlation, sign accuracy over the decided games with a
    difference, and the mean; each evaluator's value at that position (one valuing every position +1
    for the side to move: White's view is the colour to move, recomputed here); a battle shorter than
    k counts at its last position; a negative k is refused."""
    from core.board import PHASE_LAYOUT
    from train.learning.diagnose import HELDOUT_RECORDS, layout_end_report
    from train.learning.supervised import read_records, record_files

    records = read_records(record_files([HELDOUT_RECORDS])[:12])
    class Mover:  # +1 for the side to move, whatever the position: -1 or +1 for White
        name = "mover"

        def value(self, s):
            return 1.0

    r = layout_end_report(records, [Mover()], (0, 8, 10_000))
    z = np.array([{"w": 1.0, "b": -1.0}.get(rec.result, 0.0) for rec in records])
    assert r["games"] == len(records) and r["decided"] == int((z != 0).sum())
    for k in (0, 8, 10_000):
        d, white = [], []
        for rec in records:
            battle = [s for s in rec.replay() if s.phase != PHASE_LAYOUT]
            at = battle[min(k, len(battle) - 1)]
            d.append(float(np.sum(at.board == 1) - np.sum(at.board == 2)))
            white.append(1.0 if at.side == 0 else -1.0)
        d, white = np.array(d), np.array(white)
        e = r["plies"][k]
        m = e["evaluators"]["mover"]  # the evaluator at the position after k battle plies, White's view
        assert m["distinct"] == len(set(white))
        assert m["sign_accuracy"] == pytest.approx(np.mean(white[z != 0] == z[z != 0]))
        if len(set(white)) > 1:
            assert m["correlation"] == pytest.approx(np.corrcoef(white, z)[0, 1])
        else:
            assert m["correlation"] is None
        use = (z != 0) & (d != 0)
        assert e["differing"] == int(use.sum()) and e["mean_difference"] == pytest.approx(d.mean())
        if k == 0:  # 97 v 97 at the first battle position: nothing to correlate
            assert e["correlation"] is None and e["sign_accuracy"] is None and not d.any()
        else:
            assert e["correlation"] == pytest.approx(np.corrcoef(d, z)[0, 1])
            assert e["sign_accuracy"] == pytest.approx(np.mean(np.sign(d[use]) == z[use]))
    last = r["plies"][10_000]  # every battle has ended by then: its final difference decides the result
    assert last["sign_accuracy"] > 0.9
    with pytest.raises(ValueError, match="early battle plies"):
        layout_end_report(records, (), (-1,))


class _FixedNet(torch.nn.Module):
    """A stand-in net: row ``i`` of its input gets ``logits[i]`` and ``values[i]`` (the input's first
    scalar tells the row)."""

    def __init__(self, logits: np.ndarray, values: np.ndarray):
        super().__init__()
        self.logits = torch.from_numpy(np.asarray(logits, np.float32))
        self.values = torch.from_numpy(np.asarray(values, np.float32))

    def forward(self, x):
        rows = x[:, 0, 0, 0].long()
        return self.logits[rows], self.values[rows]


def _policy_samples(policies, z):
    from nets.features import NUM_PLANES
    from train.learning.samples import SampleBuilder

    b = SampleBuilder("upper")
    for i, ((acts, vals), zi) in enumerate(zip(policies, z)):
        planes = np.zeros((NUM_PLANES, 14, 14), np.float32)
        planes[0, 0, 0] = i
        b.add_policy(planes, np.array(acts), np.array(vals, np.float64), zi)
    return b.build()


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_target_report_against_direct_sums(data):
    """Cross-entropy, entropy, KL, uniform cross-entropy and top-1 of ``target_report`` against sums
    written out per sample; Gibbs: the KL is never negative, and 0 for a net whose policy is the target."""
    from train.learning.diagnose import target_report

    n, n_actions = data.draw(st.integers(1, 6)), 12
    policies, logits = [], np.zeros((n, n_actions), np.float32)
    for i in range(n):
        k = data.draw(st.integers(1, 5))
        acts = sorted(data.draw(st.sets(st.integers(0, n_actions - 1), min_size=k, max_size=k)))
        vals = data.draw(st.lists(st.integers(0, 9), min_size=k, max_size=k))
        policies.append((acts, vals))
        logits[i] = data.draw(st.lists(st.floats(-4, 4, width=32), min_size=n_actions, max_size=n_actions))
    z = data.draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=n, max_size=n))
    samples = _policy_samples(policies, z)
    values = np.array(data.draw(st.lists(st.floats(-0.99, 0.99), min_size=n, max_size=n)), np.float32)
    r = target_report(_FixedNet(logits, values), samples)
    ce, ent, uni, top = [], [], [], []
    for i in range(n):
        acts, pi = samples.policy(i)
        if len(acts) < 2:
            continue
        pi = pi.astype(np.float64)
        q = np.exp(logits[i, acts].astype(np.float64))
        q /= q.sum()
        ce.append(-sum(p * np.log(qq) for p, qq in zip(pi, q)))
        ent.append(-sum(p * np.log(p) for p in pi if p > 0))
        uni.append(np.log(len(acts)))
        top.append(int(np.argmax(q)) == int(np.argmax(pi)))
    assert r["positions"] == len(ce)
    if not ce:
        assert r["cross_entropy"] is None and r["kl"] is None
        return
    assert r["cross_entropy"] == pytest.approx(np.mean(ce), rel=1e-6, abs=1e-9)
    assert r["target_entropy"] == pytest.approx(np.mean(ent), rel=1e-6, abs=1e-9)
    assert r["uniform_cross_entropy"] == pytest.approx(np.mean(uni))
    assert r["top1"] == pytest.approx(np.mean(top))
    assert r["kl"] >= -1e-9
    exact = np.full((n, n_actions), -30.0, np.float32)  # a net whose masked policy is the target
    for i in range(n):
        acts, pi = samples.policy(i)
        exact[i, acts] = np.log(np.maximum(pi, 1e-12))
    assert target_report(_FixedNet(exact, values), samples)["kl"] == pytest.approx(0.0, abs=1e-5)


def test_diagnose_on_shards_alone(tmp_path):
    """A run's checkpoint file and its shards: only the targets are reported, in the JSON and the text;
    lower shards are skipped, and a path that is neither a shard nor a directory is refused."""
    from train.learning.samples import write_shard

    rng = np.random.default_rng(0)
    policies = [(list(rng.choice(48804, 4, replace=False)), list(rng.random(4))) for _ in range(5)]
    write_shard(tmp_path / "shards" / "i0000-g0000.npz", _policy_samples(policies, [1.0, -1.0] * 2 + [1.0]))
    report = diagnose("models/default/upper.safetensors", [], shard_paths=[tmp_path / "shards"])
    assert set(report) == {"model_dir", "upper"} and set(report["upper"]) == {"targets"}
    t = report["upper"]["targets"]
    assert t["positions"] == 5 and t["mean_actions"] == 4.0
    assert t["uniform_cross_entropy"] == pytest.approx(np.log(4))
    json.dumps(report)
    assert "on the shards' targets (5 positions" in format_report(report)
    by_pattern = diagnose("models/default/upper.safetensors", [], shard_paths=[str(tmp_path / "shards" / "i0000-*.npz")])
    assert by_pattern["upper"]["targets"] == t
    with pytest.raises(DiagnoseError, match="no file matches"):
        diagnose("models/default", [], shard_paths=[str(tmp_path / "shards" / "i0001-*.npz")])
    with pytest.raises(DiagnoseError, match="neither a shard"):
        diagnose("models/default", [], shard_paths=[tmp_path / "nope.txt"])
    with pytest.raises(DiagnoseError, match="give records or shards"):
        diagnose("models/default", [])

