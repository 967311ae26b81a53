"""Tests of the instruments in lab/bench: hand-computed summaries and short runs (search_regret,
judge_noise, layout_candidates, layout_sensitivity, expert_value, target_noise, move_time's twin)."""

import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st


def test_search_regret_of_the_expert_is_zero_by_its_own_one_ply_scores():
    """lab.bench.search_regret: the one-ply expert chooses the best path by its own scores, so its regret
    is 0; the random agent's is not smaller."""
    from lab.bench.search_regret import regret_of, sample_positions
    from train.learning.diagnose import HELDOUT_RECORDS

    states = sample_positions(str(HELDOUT_RECORDS), games=2, positions=12, seed=1)
    assert len(states) == 12
    mine = regret_of("expert:plies=1", states)
    assert mine["positions"] == 12 and mine["mean"] == 0.0 and mine["blunder_rate"] == 0.0
    assert regret_of("random", states)["mean"] >= 0.0


def test_judge_noise_pick_stats_by_hand():
    """lab.bench.judge_noise.pick_stats against counts by hand: picks from the first half of the seeds,
    the reference from the second; ties go to the expert's order; a halving row keeps the better
    half; one task's rollouts have the requested shape."""
    from lab.bench.judge_noise import _judge_position, pick_stats

    # Position 1: placement 1 is the reference's best (means 0, 3, 1); one rollout picks 2, two pick 1.
    a = np.array([[0, 0, 0, 0], [-1, 5, 3, 3], [2, -2, 1, 1]], np.float64)
    # Position 2: all equal in the reference: the best is the expert's first, which every pick takes.
    b = np.zeros((2, 4))
    # Halving (1, 1): one rollout each keeps placements 2 and 0 (means 2, 0, -1); two each tie them at
    # 0, so the expert's order picks 0.
    r = pick_stats([a, b], [1, 2], halving=((1, 1),))
    rows = {(row["n"], row["more"]): row for row in r["rows"]}
    assert list(rows) == [(0, 0), (1, 0), (2, 0), (1, 1)]
    assert rows[0, 0]["agree"] == 0.5 and rows[0, 0]["regret"] == pytest.approx(3.0 / 2) and rows[0, 0]["gain"] == 0
    assert rows[1, 0]["agree"] == 0.5 and rows[1, 0]["regret"] == pytest.approx(2.0 / 2)
    assert rows[1, 0]["gain"] == pytest.approx(1.0 / 2) and rows[1, 0]["gain_se"] > 0
    assert rows[2, 0]["agree"] == 1.0 and rows[2, 0]["regret"] == 0.0 and rows[2, 0]["gain"] == pytest.approx(3.0 / 2)
    assert rows[1, 1]["agree"] == 0.5 and rows[1, 1]["regret"] == pytest.approx(3.0 / 2)
    assert r["gap"] == pytest.approx((2.0 + 0.0) / 2)
    assert r["rollout_sd"] == pytest.approx((np.std(a, axis=1, ddof=1).mean() + 0.0) / 2)
    # Only the expert's first 2 compared: one rollout each picks 0 in position 1 (means 0, -1), where all
    # 3 picked 2 (a gain of 1); two each pick 1 either way.
    narrow = {(row["n"], row["more"]): row for row in pick_stats([a, b], [1, 2], narrow=2)["rows"]}
    assert narrow[1, 0]["narrow_gain"] == 0.0 and narrow[1, 0]["delta"] == pytest.approx(1.0 / 2)
    assert narrow[1, 0]["delta_se"] > 0 and narrow[1, 0]["gain"] == rows[1, 0]["gain"]
    assert narrow[2, 0]["narrow_gain"] == pytest.approx(3.0 / 2) and narrow[2, 0]["delta"] == 0.0
    assert "narrow_gain" not in rows[1, 0]

    from core.state import GameState
    from knowledge.agents import ExpertAgent

    expert = ExpertAgent(seed=3)
    s = GameState.initial()
    while s.ply < 190:
        s = s.apply(expert.select(s))
    out = _judge_position({"jfen": s.to_jfen(), "index": 0, "seed": 1, "top": 2, "rollouts": 2, "battle_plies": 2})
    assert out["ply"] == 190 and np.array(out["diffs"]).shape == (2, 2)

    # An agent's choice is valued by the reference half: its row when it is a candidate, else new
    # rollouts under the reference's seeds (here the same as the candidates': the first half).
    from lab.bench.judge_noise import _agent_position, _reference_seeds, judge_agent
    from lab.rollout import RolloutLayoutAgent

    diffs = [[1.0, 4.0], [2.0, -6.0]]
    task = {"jfen": s.to_jfen(), "diffs": diffs, "index": 0, "seed": 1, "top": 2, "battle_plies": 2}
    judge = RolloutLayoutAgent(0, from_ply=0, top=2, rollouts=1, battle_plies=2)
    points = [int(p) for p in judge.candidates(s)]
    seen = set()
    for spec in ("expert", "random", "random:seed=1"):
        got = _agent_position({**task, "spec": spec})
        seen.add(got["candidate"])
        assert got["expert_best"] == 4.0 and got["candidate"] == (got["point"] in points)
        if got["candidate"]:
            assert got["reference"] == [4.0, -6.0][points.index(got["point"])]
        else:
            again = judge.rollout_matrix(s, [got["point"]], _reference_seeds(1, 0, 2)[1:]).mean()
            assert got["reference"] == again
        assert got["best"] == max(4.0, got["reference"]) and got["seconds"] >= 0
    assert seen == {True, False}
    row = judge_agent([{"jfen": s.to_jfen(), "diffs": diffs, "index": 0}], "expert", 2, 2, seed=1)
    assert row["positions"] == 1 and row["candidates"] == 1.0


def test_layout_candidates_by_hand(tmp_path):
    """lab.bench.layout_candidates: the blend of the search's layout priors and the candidate counts by
    hand; a saved judge_noise file round-trips through load_raw, and a bad one is refused."""
    from lab.bench.judge_noise import load_raw
    from lab.bench.layout_candidates import blend, coverage, placement_ranks

    p = blend(np.array([0.5, 0.25, 0.25]), np.array([0.0, 2.0, 2.0]), tau=1.0, mix=0.5)
    assert p == pytest.approx([0.25, 0.375, 0.375])
    assert blend(np.array([0.64, 0.36]), np.array([1.0, 0.0]), tau=2.0, mix=0.0) == pytest.approx([8 / 14, 6 / 14])
    points = np.array([10, 20, 30, 40])
    rows = [(np.array([0.1, 0.4, 0.3, 0.2]), points, [20, 10, 40], 10),  # top 2: 20, 30 (10 left out)
            (np.array([0.4, 0.1, 0.1, 0.4]), points, [40, 10, 20], 40)]  # top 2: 10, 40 (ties: first)
    c = coverage(rows, top=2)
    assert c == {"positions": 2, "top1": 0.5, "overlap": pytest.approx(1.5), "best_kept": 0.5}

    good = tmp_path / "judge.json"
    good.write_text(json.dumps({"rollouts": 2, "top": 2, "battle_plies": 4, "from_ply": 120, "seconds": 1.0,
                                "positions_raw": [{"ply": 150, "jfen": "x", "diffs": [[1, 2], [3, 4]]}]}))
    assert load_raw(str(good))["positions_raw"][0]["diffs"] == [[1, 2], [3, 4]]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"rollouts": 2, "positions_raw": []}))
    with pytest.raises(ValueError, match="missing field 'top'"):
        load_raw(str(bad))
    with pytest.raises(ValueError, match="no games directory"):
        placement_ranks(str(tmp_path), 120)

    # One game: the first agent (White) places the expert's best point, Black its second best.
    from core.board import POINT_NAMES
    from core.notation import Move
    from core.state import GameState
    from knowledge.agents import ExpertAgent

    expert, state, moves = ExpertAgent(), GameState.initial(), []
    for _ in range(10):
        order = np.argsort(-expert.layout_scores(state), kind="stable")
        point = int(order[0] if state.side == 0 or len(state.placements()) < 2 else order[1])
        moves.append(POINT_NAMES[point])
        state = state._play(Move((point,)))
    (tmp_path / "games").mkdir()
    (tmp_path / "games" / "0000.json").write_text(json.dumps({"moves": moves, "metadata": {"a_colour": "w"}}))
    r = placement_ranks(str(tmp_path), 4)
    assert r["games"] == 1 and r["before"] == {"placements": 2, "top1": 1.0}
    assert r["after"] == {"placements": 3, "top1": 1.0, "top3": 1.0}
    (tmp_path / "games" / "0000.json").write_text(json.dumps({"moves": moves, "metadata": {"a_colour": "b"}}))
    r = placement_ranks(str(tmp_path), 4)
    assert r["before"]["placements"] == 2 and r["after"] == {"placements": 3, "top1": 0.0, "top3": 1.0}


def test_layout_sensitivity_counts():
    """lab.bench.layout_sensitivity.summarize against counts by hand; one short game task (battles cut at
    20 plies) reports variants at the plies and sides it may change, with results."""
    from lab.bench.layout_sensitivity import game_task, summarize

    rows = [{"base": "w", "control": "w", "variants": [{"ply": 160, "side": "b", "result": "b"},
                                                       {"ply": 161, "side": "w", "result": "w"}]},
            {"base": "draw", "control": "b", "variants": [{"ply": 170, "side": "b", "result": "w"},
                                                          {"ply": 171, "side": "w", "result": "w"}]}]
    s = summarize(rows)
    assert (s["games"], s["variants"]) == (2, 4)
    assert s["white_score"] == 0.75 and s["control_flip_rate"] == 0.5
    assert s["flip_rate"] == 0.75 and s["better_rate"] == 0.5 and s["worse_rate"] == 0.25
    assert s["mean_change"] == pytest.approx((1.0 + 0.0 - 0.5 + 0.5) / 4)
    assert s["best_of"] == {"w": 1.0, "b": 0.5}
    assert summarize([])["flip_rate"] is None

    row = game_task({"index": 3, "seed": 1, "variants": 2, "from_ply": 190,
                     "rules": {"max_battle_plies": 20, "adjudicate": "stones"}})
    assert row["index"] == 3 and len(row["variants"]) == 2
    for v in row["variants"]:
        assert 191 <= v["ply"] <= 195 and v["side"] == "wb"[(v["ply"] - 1) % 2]
        assert v["result"] in ("w", "b", "draw")
    assert row["base"] in ("w", "b", "draw") and row["control"] in ("w", "b", "draw")


def test_the_expert_value_benchmark_finds_the_cut_exact():
    from lab.bench.expert_value import run_expert_value_benchmark

    r = run_expert_value_benchmark(positions=4, games=2)
    assert r["positions"] == 4 and r["max_mismatches"] == 0
    assert all(v > 0 for v in r["ms"].values())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=2, max_size=8), st.integers(0, 2**31 - 1), st.integers(2, 6))
def test_target_noise_repeat_stats_against_direct_sums(weights, seed, repeats):
    """lab.bench.target_noise.repeat_stats: a target against itself agrees with zero distance and no
    noise; the cross-entropy under its own probabilities is its entropy and never below it under other
    priors (Gibbs); the mean target's entropy is never below the targets' mean entropy (concavity);
    each number against a direct sum over the children."""
    from lab.bench.target_noise import repeat_stats

    w = np.asarray(weights) + 1e-3
    t = w / w.sum()
    rng = np.random.default_rng(seed)
    other = rng.dirichlet(np.ones(len(t)))
    same = repeat_stats(np.stack([t] * repeats), t)
    assert same["agree"] == 1.0 and same["tv"] == 0.0 and same["prior_top1"] == 1.0
    entropy = -sum(p * np.log(p) for p in t)
    for key in ("entropy", "mean_entropy", "half_entropy", "prior_ce"):
        assert same[key] == pytest.approx(entropy), key
    targets = np.stack([t, other, *rng.dirichlet(np.ones(len(t)), repeats - 2)])
    r = repeat_stats(targets, other)
    assert r["tv"] == pytest.approx(sum(abs(a - b) for a, b in zip(t, other)) / 2)
    assert r["agree"] == float(np.argmax(t) == np.argmax(other)) == r["prior_top1"]
    mean = [sum(row[j] for row in targets) / repeats for j in range(len(t))]
    assert r["prior_ce"] == pytest.approx(-sum(p * np.log(q) for p, q in zip(mean, other)))
    assert r["mean_entropy"] == pytest.approx(-sum(p * np.log(p) for p in mean if p > 0))
    assert r["entropy"] == pytest.approx(np.mean([-sum(p * np.log(p) for p in row if p > 0) for row in targets]))
    assert r["prior_ce"] >= r["mean_entropy"] - 1e-9 and r["mean_entropy"] >= r["entropy"] - 1e-9
    kinds = np.array(["step", "jump", "flight"] * 3)[: len(t)]
    by = repeat_stats(targets, other, kinds)
    assert {k: by[k] for k in r} == r
    assert sum(by[f"kl_{k}"] for k in ("step", "jump", "flight")) == pytest.approx(r["prior_ce"] - r["mean_entropy"])
    for k in ("step", "jump", "flight"):
        assert by[f"mass_{k}"] == pytest.approx(sum(m for m, kk in zip(mean, kinds) if kk == k))
        assert by[f"prior_mass_{k}"] == pytest.approx(sum(q for q, kk in zip(other, kinds) if kk == k))
    with pytest.raises(ValueError, match="kinds"):
        repeat_stats(targets, other, kinds[:1])
    with pytest.raises(ValueError):
        repeat_stats(np.stack([t, t])[:, :1], t[:1])
    with pytest.raises(ValueError):
        repeat_stats(t[None, :], t)


def test_target_noise_measure_is_decided_by_its_seed():
    """lab.bench.target_noise: battle positions from expert games; the one-thread self-play searches of a
    seed give the same rows again, rows whose numbers are in range; the summary's means and Wilson
    interval against the rows."""
    from core.rules import Ruleset
    from lab.bench.target_noise import battle_positions, measure, summarize
    from nets.config import preset
    from nets.model import build
    from train.learning.config import validate_config

    rules = Ruleset(max_battle_plies=40, adjudicate="stones")
    states = battle_positions(rules, 3, seed=2)
    assert len(states) == 3 and all(s.phase != 0 and not s.is_terminal() for s in states)
    cfg = validate_config({"selfplay": {"search": {"value_evaluator": "eval.expert", "victim_evaluator": None}}})
    torch.manual_seed(0)
    net = build(preset("upper", "tiny"))
    rows = measure(cfg, net, states, simulations=4, seed=5, repeats=3)
    assert rows == measure(cfg, net, states, simulations=4, seed=5, repeats=3)
    assert 1 <= len(rows) <= 3
    for r in rows:
        assert r["agree"] in (0.0, 1.0) and 0.0 <= r["tv"] <= 1.0
        assert 0.0 <= r["entropy"] <= r["mean_entropy"] + 1e-9 <= r["prior_ce"] + 2e-9
    with pytest.raises(ValueError, match="repeats"):
        measure(cfg, net, states, simulations=4, seed=5, repeats=1)
    s = summarize(rows)
    assert s["positions"] == len(rows) and s["agree"] == pytest.approx(np.mean([r["agree"] for r in rows]))
    lo, hi = s["agreement_ci"]
    assert 0.0 <= lo <= s["agree"] <= hi <= 1.0
    assert summarize([])["agree"] is None
    assert s["noise"] == pytest.approx(s["mean_entropy"] - s["entropy"])
    assert s["removable"] == pytest.approx(s["prior_ce"] - s["mean_entropy"])
    assert s["kl_step"] + s["kl_jump"] + s["kl_flight"] == pytest.approx(s["removable"])
    assert s["mass_step"] + s["mass_jump"] + s["mass_flight"] == pytest.approx(1.0)


def test_target_noise_positions_from_records():
    """lab.bench.target_noise.record_positions: battle positions of the records, at most
    POSITIONS_PER_GAME from a game, the same for the same seed; a missing path is a one-line error."""
    from core.rules import Ruleset
    from lab.bench.target_noise import POSITIONS_PER_GAME, record_positions
    from train.learning.diagnose import HELDOUT_RECORDS
    from train.learning.supervised import SupervisedError

    rules = Ruleset(max_battle_plies=300, adjudicate="stones")
    states = record_positions([HELDOUT_RECORDS], rules, POSITIONS_PER_GAME + 3, seed=1)
    assert len(states) == POSITIONS_PER_GAME + 3
    assert all(s.phase != 0 and not s.is_terminal() for s in states)
    assert [s.ply for s in states] == [s.ply for s in record_positions([HELDOUT_RECORDS], rules, POSITIONS_PER_GAME + 3, seed=1)]
    assert len({s.ply for s in states[:POSITIONS_PER_GAME]}) == POSITIONS_PER_GAME  # one game's, distinct plies
    with pytest.raises(SupervisedError, match="no such file"):
        record_positions(["no/such/records"], rules, 3, seed=1)


@pytest.mark.parametrize("spec", [
    "jfa",
    "hbm:simulations=24,c_puct=0.5,gumbel_m=8",
    "jfa:value_eval=none,expansion_pruner=prune.expansion,victim_eval=none,simulations=32,c_puct=1.25,twofold_draw=true",
    "jfa:root=puct,dirichlet_epsilon=0.25,fpu_reduction=0.1,backup=hybrid,value_mix=0.3,battle_prior=prior.expert",
    "jfa:value_eval=eval.expert:plies=2,value_mix=0.25,endgame_value_mix=0,endgame_stones=20",
])
def test_the_twin_is_the_same_battle_search_with_knowledge_for_the_nets(spec):
    """lab.bench.move_time.twin_spec: the twin's battle search equals the net agent's in every
    SearchConfig field but the five it replaces (simulations, value_mix 1, no endgame_value_mix, the value
    plugin, the victim chooser), the expert lays out and the priors are uniform."""
    from knowledge.registry import REGISTRY
    from lab.bench.move_time import TWIN_VALUE, TWIN_VICTIMS, twin_spec

    twin = twin_spec(spec, 72)
    layout, _, battle = twin.partition("+")
    assert layout == "expert"
    _, net = REGISTRY.check(spec, "agent")
    _, mine = REGISTRY.check(battle, "agent")
    assert mine.eval == "uniform"
    want = net.search_config().model_dump()
    want.update(simulations=72, value_mix=1.0, endgame_value_mix=None, value_evaluator=net.value_evaluator or TWIN_VALUE,
                victim_evaluator=net.victim_evaluator or TWIN_VICTIMS)
    assert mine.search_config().model_dump() == want


def test_twin_spec_refuses_an_agent_without_a_battle_search():
    from knowledge.registry import SpecError
    from lab.bench.move_time import twin_spec

    for spec in ("expert", "slm", "jfa:battle=expert"):
        with pytest.raises(SpecError, match="not a net agent"):
            twin_spec(spec, 64)
    with pytest.raises(ValueError, match="simulations"):
        twin_spec("jfa", 0)


def test_equal_time_simulations_by_hand():
    from lab.bench.move_time import equal_time_simulations

    points = [(64, 0.06), (128, 0.12), (256, 0.24)]
    assert equal_time_simulations(0.09, points) == 96  # between the first two
    assert equal_time_simulations(0.18, points) == 192  # between the last two
    assert equal_time_simulations(0.36, points) == 384  # beyond: the last two extended
    assert equal_time_simulations(0.0915, points) == 98  # 97.6, to the nearest integer
    assert equal_time_simulations(0.0001, points) == 1  # at least 1
    with pytest.raises(ValueError):
        equal_time_simulations(0.1, points[:1])


def test_mean_seconds_warms_up_untimed_and_interleaves(monkeypatch):
    """lab.bench.move_time.mean_seconds: each agent makes one untimed select of the state it times last
    (a cold first search counts against no spec); then in each round every agent searches once, the
    order rotated by one a round, agent i from the (i * states // specs)-th state on, so no two search
    the same state in a round; every agent is closed; the means come back in the order of the specs."""
    import knowledge.agents
    from lab.bench import move_time

    calls = []

    class Counting:
        def __init__(self, spec):
            self.spec = spec

        def select(self, state):
            calls.append((self.spec, state))

        def close(self):
            calls.append((self.spec, "closed"))

    monkeypatch.setattr(knowledge.agents, "make_agent", lambda spec, seed=None: Counting(spec))
    means = move_time.mean_seconds(["x", "y"], ["a", "b", "c", "d"])
    assert len(means) == 2 and all(m >= 0 for m in means)
    assert calls == [("x", "d"), ("y", "b"),  # the untimed warm-ups: each agent's last state
                     ("x", "a"), ("y", "c"), ("y", "d"), ("x", "b"), ("x", "c"), ("y", "a"), ("y", "b"), ("x", "d"),
                     ("x", "closed"), ("y", "closed")]


@pytest.fixture(scope="module")
def greedy_vs_expert(tmp_path_factory):
    """An arena directory holding one finished game record, greedy (White) against expert."""
    from core.records import write_record
    from train.matches.arena import play_game

    root = tmp_path_factory.mktemp("arena")
    (root / "games").mkdir()
    record = play_game("greedy", "expert", white_seed=1, black_seed=2)
    write_record(record, root / "games" / "0000.json")
    return root, record


def test_conversion_positions_by_a_direct_scan(greedy_vs_expert):
    """lab.bench.conversion.conversion_positions: the first battle position where a side has at most
    ``at`` stones, found by scanning the replay here; the lead is the non-expert side's; ``losses``
    keeps it only when that side lost; an unreachable lead or threshold keeps nothing."""
    from core.board import PHASE_BATTLE
    from lab.bench.conversion import conversion_positions

    root, record = greedy_vs_expert
    replay = record.replay()
    greedy_won = record.result == "w"
    for at in (98, 60, 30):
        plies = [i for i, s in enumerate(replay) if s.phase == PHASE_BATTLE and not s.is_terminal()
                 and min(s.counts) <= at]
        found = conversion_positions(str(root), at=at, lead=0)
        lead = int(replay[plies[0]].counts[0]) - int(replay[plies[0]].counts[1]) if plies else -1
        if not plies or lead < 0:
            assert found == []
            if plies:  # greedy trails there: found with behind, by exactly its deficit
                (trail,) = conversion_positions(str(root), at=at, lead=-lead, behind=True)
                assert (trail.ply, trail.lead) == (plies[0], lead)
                assert conversion_positions(str(root), at=at, lead=-lead + 1, behind=True) == []
            continue
        (pos,) = found
        assert (pos.ply, pos.side, pos.lead, pos.won) == (plies[0], 0, lead, greedy_won)
        assert pos.counts == tuple(int(c) for c in replay[plies[0]].counts)
        assert conversion_positions(str(root), at=at, lead=0, losses=True) == ([] if greedy_won else [pos])
        assert conversion_positions(str(root), at=at, lead=lead + 1) == []
        if lead == 0:  # level: it trails by 0 as well, by no more
            assert conversion_positions(str(root), at=at, lead=0, behind=True) == [pos]
            assert conversion_positions(str(root), at=at, lead=1, behind=True) == []
        else:
            assert conversion_positions(str(root), at=at, lead=0, behind=True) == []
    assert conversion_positions(str(root), at=0, lead=0) == []  # a side with no stone: the game ended before


def test_leader_results_by_a_direct_scan(greedy_vs_expert, tmp_path):
    """lab.bench.conversion.leader_results: for each threshold, the lead of the side with more stones at
    the first battle position (not terminal) where a side has at most ``at`` stones, scanned here, and
    that side's score in the record; a level position or an unreached threshold gives nothing; records
    of any players count (the copy with the names swapped too)."""
    import json

    from core.board import PHASE_BATTLE
    from lab.bench.conversion import leader_results

    root, record = greedy_vs_expert
    swapped = tmp_path / "arena"
    (swapped / "games").mkdir(parents=True)
    data = json.loads((root / "games" / "0000.json").read_text())
    data["players"] = {"white": "expert", "black": "greedy"}
    (swapped / "games" / "0000.json").write_text(json.dumps(data))
    replay = record.replay()
    for at in (98, 60, 40, 30, 20, 0):
        plies = [i for i, s in enumerate(replay) if s.phase == PHASE_BATTLE and not s.is_terminal()
                 and min(s.counts) <= at]
        expected = []
        if plies:
            white, black = (int(c) for c in replay[plies[0]].counts)
            if white != black:
                leader = "w" if white > black else "b"
                expected = [(abs(white - black), 1.0 if record.result == leader
                             else 0.0 if record.result in ("w", "b") else 0.5)]
        assert leader_results(str(root), at) == expected
        assert leader_results(str(swapped), at) == expected
    with pytest.raises(ValueError):
        leader_results(str(root), 99)


def test_first_fliers_by_a_direct_scan(greedy_vs_expert, tmp_path):
    """lab.bench.conversion.first_fliers: for each threshold, at the first battle position (not terminal)
    where a side has at most ``at`` stones, scanned here, and only one side does: that side's player,
    the other's stones and the first side's score in the record (the copy with the names swapped too)."""
    import json

    from core.board import PHASE_BATTLE
    from lab.bench.conversion import first_fliers

    root, record = greedy_vs_expert
    swapped = tmp_path / "arena"
    (swapped / "games").mkdir(parents=True)
    data = json.loads((root / "games" / "0000.json").read_text())
    data["players"] = {"white": data["players"]["black"], "black": data["players"]["white"]}
    (swapped / "games" / "0000.json").write_text(json.dumps(data))
    replay = record.replay()
    seen = 0
    for at in (98, 80, 60, 40, 30, 20, 14, 0):
        plies = [i for i, s in enumerate(replay) if s.phase == PHASE_BATTLE and not s.is_terminal()
                 and min(s.counts) <= at]
        for directory, names in ((root, (record.white, record.black)), (swapped, (record.black, record.white))):
            expected = []
            if plies:
                white, black = (int(c) for c in replay[plies[0]].counts)
                if max(white, black) > at:
                    first = 0 if white <= at else 1
                    expected = [(names[first], max(white, black), 1.0 if record.result == "wb"[first]
                                 else 0.0 if record.result in ("w", "b") else 0.5)]
                    seen += 1
            assert first_fliers(str(directory), at) == expected
    assert seen >= 4  # the record reaches several thresholds with one side below
    with pytest.raises(ValueError):
        first_fliers(str(root), 99)


def test_conversion_play_on_continues_the_record(greedy_vs_expert):
    """lab.bench.conversion.play_on: the game from the position keeps the record's moves up to the ply
    and ends; bad thresholds and a directory without games are refused."""
    from lab.bench.conversion import conversion_positions, play_on

    root, record = greedy_vs_expert
    (pos,) = conversion_positions(str(root), at=98, lead=0)
    played = play_on("greedy", pos, seed=1)
    assert played.moves[: pos.ply] == record.moves[: pos.ply] and len(played.moves) > pos.ply
    assert played.result in ("w", "b", "draw") and played.white == "greedy" and played.black == "expert"
    for bad in ({"at": 99}, {"at": -1}, {"lead": 99}):
        with pytest.raises(ValueError):
            conversion_positions(str(root), **bad)
    with pytest.raises(FileNotFoundError, match="no games folder"):
        conversion_positions(str(root / "games"))


def test_value_stages_table_by_hand():
    """lab.bench.value_stages.stage_table: errors, sign accuracies and the best mix of hand-made rows."""
    from lab.bench.value_stages import stage_table

    rows = np.array([
        # fewer side's stones, net, expert, z
        [70, 1.0, 0.0, 1.0],
        [65, -1.0, 0.0, 1.0],
        [5, 0.0, 1.0, 1.0],
        [3, 0.0, -1.0, -1.0],
    ])
    table = {r["stage"]: r for r in stage_table(rows)}
    assert set(table) == {(60, 98), (0, 9)}
    top = table[(60, 98)]
    assert top["n"] == 2 and top["mse_net"] == pytest.approx(2.0) and top["mse_expert"] == pytest.approx(1.0)
    assert top["sign_net"] == 0.5 and top["sign_expert"] == 0.0
    # (1-w)(+1) + 0 - 1 = -w and (1-w)(-1) - 1 = w - 2: mean of w^2 and (w-2)^2, smallest at w = 1.
    assert top["best_mix"] == pytest.approx(1.0) and top["mse_best"] == pytest.approx(1.0)
    end = table[(0, 9)]
    assert end["mse_net"] == pytest.approx(1.0) and end["mse_expert"] == 0.0 and end["sign_expert"] == 1.0
    assert end["best_mix"] == pytest.approx(1.0) and end["mse_best"] == 0.0


def test_value_stages_rows_from_an_arena(greedy_vs_expert):
    """lab.bench.value_stages.stage_rows: every kept position of the game, both values in [-1, 1], z the
    result for the side to move; bad arguments are refused."""
    from lab.bench.value_stages import stage_rows

    root, record = greedy_vs_expert
    if record.result not in ("w", "b"):
        pytest.skip("the game was drawn")
    upper = "models/default/upper.safetensors"
    rows = stage_rows(upper, [str(root)], records=1, every=25)
    replay = record.replay()
    kept = [s for s in replay[200:-1:25] if s.phase == 1 and not s.is_terminal()]
    assert rows.shape == (len(kept), 4)
    assert np.all(np.abs(rows[:, 1:3]) <= 1.0)
    winner = 0 if record.result == "w" else 1
    assert list(rows[:, 3]) == [1.0 if s.side == winner else -1.0 for s in kept]
    assert list(rows[:, 0]) == [min(s.counts) for s in kept]
    with pytest.raises(ValueError):
        stage_rows(upper, [str(root)], records=0)
    with pytest.raises(FileNotFoundError):
        stage_rows(upper, [str(root / "games")])


def test_sibling_values_positions_by_a_direct_scan(greedy_vs_expert):
    """lab.bench.sibling_values.flight_positions: every ``every``-th battle position from ply 200 where the
    side with fewer has at most ``stones``, found here by scanning the replay; limits and bad arguments."""
    from core.board import PHASE_BATTLE
    from lab.bench.sibling_values import flight_positions

    root, record = greedy_vs_expert
    if record.result not in ("w", "b"):
        pytest.skip("the game was drawn")
    replay = record.replay()
    for stones in (98, 40):
        want = [i for i in range(200, len(replay) - 1, 7) if replay[i].phase == PHASE_BATTLE
                and not replay[i].is_terminal() and min(replay[i].counts) <= stones]
        found = flight_positions([str(root)], stones=stones, records=1, every=7, limit=1000)
        assert [ply for _, ply, _ in found] == want
        assert all(s == replay[ply] for _, ply, s in found)
        assert [ply for _, ply, _ in flight_positions([str(root)], stones=stones, every=7, limit=2)] == want[:2]
    for bad in ({"records": 0}, {"every": 0}, {"limit": 0}, {"stones": 99}, {"stones": -1}):
        with pytest.raises(ValueError):
            flight_positions([str(root)], **bad)
    with pytest.raises(FileNotFoundError):
        flight_positions([str(root / "games")])


def test_sibling_values_rows_and_summary(greedy_vs_expert):
    """lab.bench.sibling_values: a short run's rows (flags 0/1, spreads >= 0, the search's children), the
    summary of hand-made rows, and a child's values checked against the net and
    the expert evaluated here."""
    from knowledge.evaluation import ExpertEvaluator
    from lab.bench.sibling_values import child_values, flight_positions, playouts, sibling_rows, sibling_summary
    from nets.evaluator import NetEvaluator
    from search.agents import load_net

    from train.matches.arena import a_points  # how playout_pair scores a result for the side to move

    assert [a_points(r, "wb"[side]) for r in ("w", "b", "draw") for side in (0, 1)] == [1.0, 0.0, 0.0, 1.0, 0.5, 0.5]
    hand = np.array([[4, 0.1, 0.0, 1, 1, 0, 1], [3, 0.3, 0.2, 0, 0, 1, 0]], dtype=np.float64)
    r = sibling_summary(hand)
    assert r["positions"] == 2 and r["children"] == 3.5 and r["net_spread"] == pytest.approx(0.2)
    assert r["expert_spread_mean"] == pytest.approx(0.1) and r["agree"] == 0.5 and r["chose_prior"] == 0.5
    with pytest.raises(ValueError):
        sibling_summary(np.zeros((0, 7)))
    for bad in ({"limit": 0}, {"rank": "visits"}):
        with pytest.raises(ValueError):
            playouts("jfa", "models/default/upper.safetensors", "expert", [], **{"limit": 1, **bad})

    root, record = greedy_vs_expert
    if record.result not in ("w", "b"):
        pytest.skip("the game was drawn")
    upper = "models/default/upper.safetensors"
    positions = flight_positions([str(root)], stones=98, records=1, every=40, limit=2)
    rows = sibling_rows("jfa:simulations=4", upper, positions)
    assert rows.shape[1] == 7 and len(rows) <= len(positions)
    assert np.all(rows[:, 0] >= 2) and np.all(rows[:, 1:3] >= 0) and np.all(np.isin(rows[:, 3:], (0.0, 1.0)))

    s = positions[0][2]
    children = [s.apply(m) for m in list(s.legal_moves())[:3]]
    net = NetEvaluator(None, load_net(upper, "upper"), max_batch=8, inference_threads=0)
    expert = ExpertEvaluator(plies=2)
    net_v, expert_v = child_values(s, children, net, expert)
    for c, n, e in zip(children, net_v, expert_v):
        sign = 1.0 if c.side == s.side else -1.0
        assert n == pytest.approx(sign * float(net.evaluate([c])[0].value), abs=1e-5)
        assert e == pytest.approx(sign * expert.value(c))
    net_only, none = child_values(s, children, net)  # no expert: its values are not computed
    assert none is None and net_only == pytest.approx(net_v, abs=1e-5)


def test_draw_endings_by_hand(tmp_path, greedy_vs_expert):
    """lab.bench.conversion.draw_endings: a game cut by a ply cap is listed with its end and the stones
    of each side in its last position, a decided game is not; a directory without games is refused."""
    from core.records import write_record
    from core.rules import Ruleset
    from lab.bench.conversion import draw_endings
    from train.matches.arena import play_game

    root, decided = greedy_vs_expert
    assert draw_endings(str(root)) == []
    (tmp_path / "games").mkdir()
    capped = play_game("greedy", "expert", Ruleset(max_battle_plies=30), 1, 2)
    write_record(capped, tmp_path / "games" / "0001.json")
    write_record(decided, tmp_path / "games" / "0000.json")
    white, black = (int(c) for c in capped.replay()[-1].counts)
    assert capped.result == "draw" and decided.result in ("w", "b")
    assert draw_endings(str(tmp_path)) == [(f"{tmp_path.name}/0001", "ply-cap", max(white, black), min(white, black))]
    with pytest.raises(FileNotFoundError, match="no games folder"):
        draw_endings(str(tmp_path / "games"))


def test_colour_leads_by_a_direct_scan(greedy_vs_expert, tmp_path):
    """lab.bench.conversion.colour_leads: the named player's colour, its stone lead at the battle plies
    asked (counted here from the battle's first position) and at the first position where a side has at
    most ``at`` stones (scanned here), ``None`` past the game's end, and its score; a record without the
    player gives nothing, one where it plays both sides counts it as White; bad arguments raise."""
    import json

    from core.board import PHASE_BATTLE
    from lab.bench.conversion import colour_leads

    root, record = greedy_vs_expert
    replay = record.replay()
    first = [i for i, s in enumerate(replay) if s.phase == PHASE_BATTLE][0]
    length = len(replay) - first
    plies = (0, 7, length - 1, length)
    at = 60
    reached = [i for i, s in enumerate(replay) if s.phase == PHASE_BATTLE and not s.is_terminal() and min(s.counts) <= at]
    points = {"w": (1.0, 0.0), "b": (0.0, 1.0)}.get(record.result, (0.5, 0.5))
    for name, side in (("greedy", 0), ("expert", 1)):
        def lead(i):
            return int(replay[i].counts[side]) - int(replay[i].counts[1 - side])
        expected = [lead(first + p) if first + p < len(replay) else None for p in plies]
        expected.append(lead(reached[0]) if reached else None)
        assert colour_leads(str(root), name, at=at, plies=plies) == [(side, expected, points[side])]
    assert expected[-2] is None  # one ply past the last position
    assert colour_leads(str(root), "random", at=at) == []
    both = tmp_path / "arena"
    (both / "games").mkdir(parents=True)
    data = json.loads((root / "games" / "0000.json").read_text())
    data["players"] = {"white": "expert", "black": "expert"}
    (both / "games" / "0000.json").write_text(json.dumps(data))
    ((side, leads, score),) = colour_leads(str(both), "expert", at=at, plies=(0,))
    assert (side, score) == (0, points[0]) and leads[0] == int(replay[first].counts[0]) - int(replay[first].counts[1])
    with pytest.raises(ValueError, match="at"):
        colour_leads(str(root), "greedy", at=99)
    with pytest.raises(ValueError, match="plies"):
        colour_leads(str(root), "greedy", plies=(-1,))
