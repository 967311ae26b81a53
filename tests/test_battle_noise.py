"""bench.battle_noise: the variance share against a loop-by-loop analysis of variance, and the rollouts
against the rollout evaluator played by hand."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.battle_noise import run_battle_noise, variance_share


def _naive_share(rows):
    """One-way random-effects ANOVA written out: mean within-row sample variance, variance of the row
    means less within / R (floored at 0), and their ratio."""
    r = len(rows[0])
    means = [sum(row) / r for row in rows]
    within = sum(sum((x - m) ** 2 for x in row) / (r - 1) for row, m in zip(rows, means)) / len(rows)
    grand = sum(means) / len(means)
    between = max(0.0, sum((m - grand) ** 2 for m in means) / (len(means) - 1) - within / r)
    total = between + within
    return within, between, (between / total if total > 0 else None)


@settings(max_examples=80, deadline=None)
@given(st.integers(2, 6).flatmap(lambda r: st.lists(
    st.lists(st.sampled_from([0.0, 0.5, 1.0, -3.0, 7.0]), min_size=r, max_size=r), min_size=2, max_size=8)))
def test_variance_share_against_naive_anova(rows):
    within, between, share = _naive_share(rows)
    v = variance_share(np.array(rows))
    assert v["within"] == pytest.approx(within, abs=1e-9) and v["between"] == pytest.approx(between, abs=1e-9)
    assert (v["share"] is None) == (share is None)
    if share is not None:
        assert v["share"] == pytest.approx(share, abs=1e-9) and 0.0 <= v["share"] <= 1.0


def test_variance_share_extremes_and_errors():
    # the position decides everything: constant rows that differ
    assert variance_share(np.array([[0.0, 0.0], [1.0, 1.0]]))["share"] == pytest.approx(1.0)
    # nothing: every row the same outcomes
    assert variance_share(np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0]]))["share"] == 0.0
    for shape in ((1, 4), (4, 1), (4,)):
        with pytest.raises(ValueError, match="at least 2 positions"):
            variance_share(np.zeros(shape))


def test_run_battle_noise_plays_the_rollout_evaluator_to_the_end():
    """Each rollout is RolloutEvaluator.rollout without a battle limit from the held-out game's position,
    seeded (seed, position, rollout): White's score from the final position's returns, the stone
    difference from its counts; seeded runs repeat."""
    from core.state import GameState
    from knowledge.agents import ROLLOUT_PLIES_MAX, RolloutEvaluator
    from train.diagnose import HELDOUT_RECORDS
    from train.supervised import read_records, record_files

    r = run_battle_noise(games=2, ply=195, rollouts=2, seed=3)
    assert r["positions"] == 2 and r["ply"] == 195 and 0.0 <= r["mean_score"] <= 1.0
    judge = RolloutEvaluator(battle_plies=ROLLOUT_PLIES_MAX)
    for j, record in enumerate(read_records(record_files([HELDOUT_RECORDS])[:2])):
        state = GameState.from_jfen(record.replay()[195].to_jfen())
        for i in range(2):
            end = judge.rollout(state, np.random.SeedSequence([3, j, i]))
            assert end.is_terminal()
            assert r["raw"][j]["score"][i] == (float(end.returns()[0]) + 1.0) / 2.0
            assert r["raw"][j]["diff"][i] == float(int(end.counts[0]) - int(end.counts[1]))
    x = np.array([row["score"] for row in r["raw"]])
    assert r["score"]["within"] == pytest.approx(variance_share(x)["within"])
    assert r["score"]["spread"] == pytest.approx(np.sqrt(variance_share(x)["between"]))
    with pytest.raises(ValueError, match="reach layout ply"):
        run_battle_noise(games=1, rollouts=2)
