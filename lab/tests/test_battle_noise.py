"""lab.bench.battle_noise: the variance share and the between-position correlation against loop-by-loop
analyses of variance, and the rollouts (and their horizons) against the rollout evaluator played by hand."""

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lab.bench.battle_noise import ROUNDING, between_correlation, run_battle_noise, variance_share
from tests.strategies import played_positions


def _naive_share(rows):
    """One-way random-effects ANOVA written out: mean within-row sample variance, variance of the row
    means less within / R (0 when below ROUNDING times the means' variance), and their ratio."""
    r = len(rows[0])
    means = [sum(row) / r for row in rows]
    within = sum(sum((x - m) ** 2 for x in row) / (r - 1) for row, m in zip(rows, means)) / len(rows)
    grand = sum(means) / len(means)
    spread = sum((m - grand) ** 2 for m in means) / (len(means) - 1)
    between = spread - within / r
    between = between if between > ROUNDING * spread else 0.0
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


def _naive_between_correlation(xs, ys, n):
    """The covariance of the row means less the mean within-row covariance / R, over the square roots
    of the between-row variances (plus x's within / n), written out with loops."""
    p, r = len(xs), len(xs[0])
    mx, my = [sum(row) / r for row in xs], [sum(row) / r for row in ys]
    within = sum(sum((a - ma) * (b - mb) for a, b in zip(rx, ry)) / (r - 1)
                 for rx, ry, ma, mb in zip(xs, ys, mx, my)) / p
    gx, gy = sum(mx) / p, sum(my) / p
    cov = sum((a - gx) * (b - gy) for a, b in zip(mx, my)) / (p - 1) - within / r
    wx, bx, _ = _naive_share(xs)
    _, by, _ = _naive_share(ys)
    var_x = bx + (0.0 if n is None else wx / n)
    return None if var_x <= 0 or by <= 0 else cov / (var_x * by) ** 0.5


@settings(max_examples=80, deadline=None)
@given(st.integers(2, 5).flatmap(lambda r: st.lists(
    st.lists(st.tuples(st.sampled_from([0.0, 0.5, 1.0]), st.integers(-9, 9)), min_size=r, max_size=r),
    min_size=2, max_size=8)), st.sampled_from([None, 1, 4]))
@example(rows=[[(0.0, 0), (0.5, 1)], [(0.0, 0), (0.0, 0)], [(0.0, 0), (0.0, 0)]], n=None)  # rounding / rounding
def test_between_correlation_against_naive_loops(rows, n):
    ys = [[float(a) for a, _ in row] for row in rows]
    xs = [[float(b) for _, b in row] for row in rows]
    want = _naive_between_correlation(xs, ys, n)
    got = between_correlation(np.array(xs), np.array(ys), n)
    assert (got is None) == (want is None)
    if want is not None:
        assert got == pytest.approx(want, rel=1e-9, abs=1e-9)
    with pytest.raises(ValueError, match="paired outcomes"):
        between_correlation(np.array(xs), np.array(ys)[:, :1])


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
    from lab.rollout import ROLLOUT_PLIES_MAX, RolloutEvaluator
    from train.learning.diagnose import HELDOUT_RECORDS
    from train.learning.supervised import read_records, record_files

    horizons = (0, 7, 40, ROLLOUT_PLIES_MAX)
    r = run_battle_noise(games=2, ply=195, rollouts=2, seed=3, horizons=horizons)
    assert r["positions"] == 2 and r["ply"] == 195 and 0.0 <= r["mean_score"] <= 1.0
    judge = RolloutEvaluator(battle_plies=ROLLOUT_PLIES_MAX)
    for j, record in enumerate(read_records(record_files([HELDOUT_RECORDS])[:2])):
        state = GameState.from_jfen(record.replay()[195].to_jfen())
        for i in range(2):
            seed = np.random.SeedSequence([3, j, i])
            end = judge.rollout(state, seed)
            assert end.is_terminal()
            assert r["raw"][j]["score"][i] == (float(end.returns()[0]) + 1.0) / 2.0
            assert r["raw"][j]["diff"][i] == float(int(end.counts[0]) - int(end.counts[1]))
            # each horizon's difference: a rollout of that many battle plies under the same seed
            for h, k in enumerate(horizons):
                at = RolloutEvaluator(battle_plies=k).rollout(state, seed)
                assert r["raw"][j]["at"][i][h] == float(int(at.counts[0]) - int(at.counts[1]))
    assert [h["plies"] for h in r["horizons"]] == list(horizons)
    x = np.array([row["score"] for row in r["raw"]])
    assert r["score"]["within"] == pytest.approx(variance_share(x)["within"])
    assert r["score"]["spread"] == pytest.approx(np.sqrt(variance_share(x)["between"]))
    with pytest.raises(ValueError, match="reach layout ply"):
        run_battle_noise(games=1, rollouts=2)


@settings(max_examples=10, deadline=None)
@given(played_positions(), st.integers(0, 2**32 - 1), st.integers(0, 6))
def test_the_play_out_battle_is_the_arenas_battle(jfen, seed, before):
    """lab.bench.layout_worth's premise: a play-out battles as the arena does. From a battle position
    reached by ``before`` expert plies (so that it has a history, as an arena game's has), the agents
    built from their specs as the arena builds them, ``expert`` and ``rollout`` (``slm_rollout``'s
    class, which battles with its own expert), playing through ``GameState.apply`` and sharing one
    generator, reach the position that RolloutEvaluator.rollout_line reaches from the JFEN alone
    (no history) with that generator's seed, ply for ply."""
    from core.state import GameState
    from knowledge.agents import ExpertAgent, make_agent
    from lab.rollout import RolloutEvaluator

    state = GameState.from_jfen(jfen)
    warm = ExpertAgent(seed % 7)
    for _ in range(before):
        if state.is_terminal():
            break
        state = state.apply(warm.select(state))
    plies = 24
    line = [s.to_jfen() for s in RolloutEvaluator(battle_plies=plies).rollout_line(
        GameState.from_jfen(state.to_jfen()), np.random.SeedSequence(seed))]
    shared = np.random.default_rng(np.random.SeedSequence(seed))
    expert, rollout = make_agent("expert", seed=1), make_agent("rollout", seed=2)
    expert.rng = rollout.expert.rng = shared
    agents = (expert, rollout) if seed % 2 else (rollout, expert)  # either colour
    arena = [state.to_jfen()]
    for _ in range(plies):
        if state.is_terminal():
            break
        state = state.apply(agents[state.current_player()].select(state))
        arena.append(state.to_jfen())
    assert arena == line
