"""Knowledge blended into the search: ``eval.expert`` (the expert's leaf evaluation as a search value)
with ``SearchConfig.value_evaluator`` / ``value_mix``, ``prior.expert`` (the expert's move scores as
a battle prior) with ``SearchConfig.battle_prior`` / ``prior_mix``, and the layout priors with
``layout_prior`` / ``layout_prior_mix``, against slow references.

The leaf reference counts captures with ``tests/reference.py`` (every legal path of each side with its
jump victims and squares formed) and shapes with ``core.shapes.shape_counts`` (itself checked against
a reference in ``tests/test_shapes.py``)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import tests.reference as ref
from core.board import PHASE_BATTLE, PHASE_LAYOUT
from core.shapes import shape_counts
from core.state import GameState
from knowledge.agents import ExpertAgent
from knowledge.evaluation import ExpertEvaluator, ShapeEvaluator
from knowledge.priors import ExpertLayoutPrior, ExpertPathPrior, GaussianPrior
from knowledge.expert_kernels import BATTLE_WEIGHTS, EVAL_WEIGHTS, leaf_value
from nets.evaluator import UniformEvaluator
from search.mcts import Search, SearchConfig
from tests.strategies import battle_boards, layout_positions, played_positions

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


def _best_capture(pos: ref.RefPosition, rules) -> tuple[int, int]:
    """(number of legal paths, most stones one move of the side to move takes)."""
    opp = "B" if pos.to_move == "w" else "W"
    n_opp = pos.board.count(opp)
    paths = ref._battle_paths(pos, rules).values()
    best = max((len(p.jumped) + min(p.squares, n_opp - len(p.jumped)) for p in paths), default=0)
    return len(paths), best


def _shapes(state: GameState, side: int, first: int) -> float:
    n_sq, n_gates, n_open, n_dal = shape_counts(state.board, side, state.counts[side], state.counts[1 - side],
                                                state.ruleset.vector)
    w = BATTLE_WEIGHTS
    return w[first] * n_dal + w[first + 1] * n_sq + w[first + 2] * n_open + w[first + 3] * (n_gates - n_open)


def reference_leaf(text: str) -> float:
    state = GameState.from_jfen(text)
    rules = state.ruleset
    pos = ref.parse_jfen(text)
    me = state.side
    m_me, mine = _best_capture(pos, rules)
    _, theirs = _best_capture(dataclasses.replace(pos, to_move="b" if pos.to_move == "w" else "w"), rules)
    e = EVAL_WEIGHTS
    v = e[0] * (state.counts[me] - state.counts[1 - me]) + e[1] * min(mine, 2) - e[2] * min(theirs, 2)
    if m_me == 0:
        v -= BATTLE_WEIGHTS[9]  # W_WIN
    return v + _shapes(state, me, 11) - _shapes(state, 1 - me, 15)  # S_DALIAN.., O_DALIAN..


@SETTINGS
@given(text=st.one_of(battle_boards(), played_positions()))
def test_leaf_value_matches_the_reference(text):
    state = GameState.from_jfen(text)
    if state.phase != PHASE_BATTLE:
        return
    me = state.side
    before = state.board.copy()
    got = leaf_value(state.board, me, state.counts[me], state.counts[1 - me], state.ruleset.vector,
                     BATTLE_WEIGHTS, EVAL_WEIGHTS)
    assert got == pytest.approx(reference_leaf(text))
    assert np.array_equal(state.board, before)


@SETTINGS
@given(text=battle_boards(), scale=st.floats(1.0, 200.0))
def test_expert_value_is_tanh_of_the_zero_sum_score(text, scale):
    state = GameState.from_jfen(text)
    ev = ExpertEvaluator(scale=scale)
    me = state.side
    assert ev.score(state, me) == pytest.approx(reference_leaf(text))
    assert ev.score(state, 1 - me) == -ev.score(state, me)
    if not state.is_terminal():
        assert ev.value(state) == pytest.approx(math.tanh(reference_leaf(text) / scale))
    else:
        w = state.winner()
        assert ev.value(state) == (0.0 if w not in (0, 1) else (1.0 if w == me else -1.0))


def test_expert_value_is_zero_in_the_layout_and_refuses_a_bad_scale():
    s = GameState.initial()
    assert ExpertEvaluator().value(s) == 0.0 and ExpertEvaluator().score(s, 0) == 0.0
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="scale"):
            ExpertEvaluator(scale=bad)


def _first_child_q(text: str, mix: float, evaluator: str | None = "eval.expert", **config) -> tuple[float, GameState]:
    """Two serial simulations from ``text``: the root, then its first child; returns that child's Q (for
    the root's mover) and the child position. Without the game-end bound (``terminal_bound``), which would
    raise the value of a child whose side can end the game at once: its own tests are in test_search.
    ``config``: more ``SearchConfig`` fields."""
    state = GameState.from_jfen(text)
    cfg = SearchConfig(simulations=2, threads=1, reuse_tree=False, seed=0, value_evaluator=evaluator,
                       value_mix=mix, expansion_pruner=None, capture_pruner=None, terminal_bound=False, **config)
    with Search(UniformEvaluator(), cfg) as search:
        result = search.run(state)
    visited = np.flatnonzero(result.visits > 0)
    assert len(visited) == 1
    i = int(visited[0])
    return float(result.q[i]), state.apply(result.moves[i])


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=played_positions(), mix=st.sampled_from([0.0, 0.25, 1.0]))
def test_the_search_blends_the_plugin_value_into_battle_leaves(text, mix):
    state = GameState.from_jfen(text)
    if state.is_terminal():
        return
    q, child = _first_child_q(text, mix)
    if child.phase == PHASE_BATTLE and not child.is_terminal():
        # The uniform evaluator says 0: the leaf's value is mix * the plugin's, for the child's mover.
        assert q == pytest.approx(-mix * ExpertEvaluator().value(child), abs=1e-12)
    elif not child.is_terminal():
        assert q == 0.0  # layout leaves keep the evaluator's value


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=played_positions(), mix=st.sampled_from([0.0, 0.25]), endgame_mix=st.sampled_from([0.0, 1.0]),
       shift=st.sampled_from([-1, 0, 98]))
def test_endgame_leaves_take_the_endgame_mix(text, mix, endgame_mix, shift):
    """``endgame_value_mix`` replaces ``value_mix`` at a battle leaf exactly when a side has at most
    ``endgame_stones`` stones there: the threshold is put just below the leaf's smaller count (``shift``
    -1: not the endgame), at it (0: the endgame) and at 98 (every battle leaf)."""
    state = GameState.from_jfen(text)
    if state.is_terminal():
        return
    _, child = _first_child_q(text, mix)
    if child.phase != PHASE_BATTLE or child.is_terminal():
        return
    fewest = int(min(child.counts))
    stones = 98 if shift == 98 else max(0, fewest + shift)
    q, same = _first_child_q(text, mix, endgame_value_mix=endgame_mix, endgame_stones=stones)
    assert same.to_jfen() == child.to_jfen()  # the mix does not change which child the second simulation visits
    used = endgame_mix if fewest <= stones else mix
    assert q == pytest.approx(-used * ExpertEvaluator().value(child), abs=1e-12)


def test_an_endgame_mix_alone_creates_the_plugin_and_bad_values_are_refused():
    """With ``value_mix`` 0 the plugin exists only when ``endgame_value_mix`` is positive; out-of-range
    values raise ``ValueError``."""
    cfg = dict(value_evaluator="eval.expert", expansion_pruner=None, capture_pruner=None)
    for endgame, made in ((None, False), (0.0, False), (0.5, True)):
        with Search(UniformEvaluator(), SearchConfig(value_mix=0.0, endgame_value_mix=endgame, **cfg)) as search:
            assert (search._value_plugin is not None) == made
    for bad in ({"endgame_value_mix": 1.5}, {"endgame_value_mix": -0.1}, {"endgame_stones": 99}, {"endgame_stones": -1}):
        with pytest.raises(ValueError):
            SearchConfig(**bad)


def test_without_a_plugin_the_mix_changes_nothing():
    text = GameState.from_jfen(
        "14/14/14/14/14/5WBWW5/4WBBBWW4/4BBWWWB4/5BBWB5/14/14/14/14/14 w layout 0 20").to_jfen()
    assert _first_child_q(text, 1.0, evaluator=None)[0] == 0.0


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=played_positions(), temperature=st.sampled_from([1.0, 10.0, 50.0]), plies=st.sampled_from([1, 2]))
def test_expert_prior_is_the_softmax_of_the_experts_scores(text, temperature, plies):
    state = GameState.from_jfen(text)
    if state.phase != PHASE_BATTLE or state.paths().m == 0:
        return
    scores, _ = ExpertAgent(plies=plies).battle_scores(state)
    p = ExpertPathPrior(temperature=temperature, plies=plies).prior(state, state.paths())
    want = [math.exp((x - max(scores)) / temperature) for x in scores]
    assert p == pytest.approx(np.array(want) / sum(want), rel=1e-5, abs=1e-7)
    assert int(np.argmax(p)) == int(np.argmax(scores))


def test_expert_prior_refuses_bad_options_and_the_layout():
    for bad in ({"temperature": 0.0}, {"temperature": math.nan}, {"plies": 3}):
        with pytest.raises(ValueError, match="prior.expert"):
            ExpertPathPrior(**bad)
    s = GameState.initial()
    with pytest.raises(ValueError, match="battle position"):
        ExpertPathPrior().prior(s, None)


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=played_positions(), mix=st.sampled_from([0.0, 0.3, 1.0]))
def test_the_search_blends_the_battle_prior_into_the_kept_children(text, mix):
    state = GameState.from_jfen(text)
    if state.phase != PHASE_BATTLE or state.is_terminal():
        return
    cfg = SearchConfig(simulations=1, threads=1, reuse_tree=False, seed=0, battle_prior="prior.expert",
                       prior_mix=mix, expansion_pruner=None, capture_pruner=None)
    with Search(UniformEvaluator(), cfg) as search:
        result = search.run(state)
    ps = state.paths()
    knowledge = ExpertPathPrior().prior(state, ps).astype(np.float64)
    # No pruner: the children are every path (by path; their order is the search's).
    index = {(ps.path(i), bool(ps.jump[i])): i for i in range(ps.m)}
    got = np.array([result.priors[j] for j in range(len(result.moves))], np.float64)
    # The uniform policy's share: equal per upper action, split among the children sharing one (a flight
    # that is also a step, rule book 7).
    actions, counts = np.unique(result.actions, return_counts=True)
    share = {int(a): 1.0 / (len(actions) * int(c)) for a, c in zip(actions, counts)}
    want = np.array([(1 - mix) * share[int(a)] + mix * knowledge[index[(m.path, m.jump)]]
                     for m, a in zip(result.moves, result.actions)])
    assert got == pytest.approx(want, rel=1e-4, abs=1e-6)


class _FixedPolicy:
    """An evaluator with a fixed random policy over the layout's 196 actions, value 0."""

    def __init__(self, seed: int):
        from nets.evaluator import Evaluation

        self._evaluation = Evaluation
        p = np.random.default_rng(seed).random(196).astype(np.float32)
        self.policy = p / p.sum()

    def evaluate(self, states):
        return [self._evaluation(self.policy, 0.0) for _ in states]


@pytest.mark.parametrize("tau", [0.5, 1.0, 2.0])
def test_policy_temperature_is_a_power_of_the_priors(tau):
    state = GameState.initial()
    ev = _FixedPolicy(seed=7)
    cfg = SearchConfig(simulations=1, threads=1, reuse_tree=False, policy_temperature=tau)
    with Search(ev, cfg) as search:
        result = search.run(state)
    legal = [m.path[0] for m in result.moves]
    want = ev.policy[legal].astype(np.float64) ** (1 / tau)
    assert np.asarray(result.priors, np.float64) == pytest.approx(want / want.sum(), rel=1e-5)


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=layout_positions(), temperature=st.sampled_from([0.1, 0.5, 3.0]))
def test_expert_layout_prior_is_the_softmax_of_the_experts_layout_scores(text, temperature):
    state = GameState.from_jfen(text)
    p = ExpertLayoutPrior(temperature=temperature).prior(state)
    legal = state.placements()
    if not legal:
        assert not p.any()
        return
    scores = ExpertAgent().layout_scores(state)
    top = max(scores[q] for q in legal)
    want = np.zeros(196)
    for q in legal:
        want[q] = math.exp((scores[q] - top) / temperature)
    assert p == pytest.approx(want / want.sum(), rel=1e-5, abs=1e-7)
    assert int(np.argmax(p)) == int(np.argmax(scores))


def test_expert_layout_prior_refuses_bad_temperatures():
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="prior.expert_layout"):
            ExpertLayoutPrior(temperature=bad)


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=layout_positions(), mix=st.sampled_from([0.0, 0.3, 1.0]),
       plugin=st.sampled_from(["prior.gaussian", "prior.expert_layout"]), tau=st.sampled_from([1.0, 10.0]))
def test_the_search_blends_the_layout_prior_into_the_placements(text, mix, plugin, tau):
    state = GameState.from_jfen(text)
    if state.phase != PHASE_LAYOUT or not state.placements():
        return
    ev = _FixedPolicy(seed=5)
    cfg = SearchConfig(simulations=1, threads=1, reuse_tree=False, seed=0, layout_prior=plugin,
                       layout_prior_mix=mix, policy_temperature=tau)
    with Search(ev, cfg) as search:
        result = search.run(state)
    points = [m.path[0] for m in result.moves]
    assert sorted(points) == sorted(state.placements())
    knowledge = (GaussianPrior() if plugin == "prior.gaussian" else ExpertLayoutPrior()).prior(state).astype(np.float64)
    net = ev.policy[points].astype(np.float64) ** (1 / tau)
    want = (1 - mix) * net / net.sum() + mix * knowledge[points] / knowledge[points].sum()
    assert np.asarray(result.priors, np.float64) == pytest.approx(want, rel=1e-4, abs=1e-6)


def reference_two_ply(state: GameState, top: int) -> float:
    """The expert's two-ply value of ``state`` for its side to move, the slow way: its ``top`` best paths
    by the one-ply score (stable order), each played with the expert's own victims, then every reply of
    the opponent played likewise and the leaf valued by :func:`reference_leaf`; a path's value is its
    worst reply (a reply taking us below ``loss_below`` is ``-W_WIN``; no reply, or the opponent below
    ``loss_below``, is ``one-ply + W_WIN``), plus 0.01 times its one-ply score; the value is the best path's."""
    from core.notation import Move

    w_win, loss_below, me = BATTLE_WEIGHTS[9], state.ruleset.loss_below, state.side
    ps = state.paths()
    one = ExpertAgent(plies=1).battle_scores(state)[0]
    chooser = ExpertAgent(victims="kernel")
    best = -math.inf
    for i in sorted(range(ps.m), key=lambda j: -one[j])[:top]:
        path, jump = ps.path(i), bool(ps.jump[i])
        after = state._play(Move(path, jump, chooser.victims(state, path, jump, int(ps.nsq[i]))))
        replies = after.paths()
        if after.counts[1 - me] < loss_below or replies.m == 0:
            best = max(best, one[i] + w_win)
            continue
        leaves = []
        for j in range(replies.m):
            rpath, rjump = replies.path(j), bool(replies.jump[j])
            leaf = after._play(Move(rpath, rjump, chooser.victims(after, rpath, rjump, int(replies.nsq[j]))))
            if leaf.counts[me] < loss_below:
                leaves = [-w_win]
                break
            leaves.append(reference_leaf(leaf.to_jfen()))
        best = max(best, min(leaves) + EVAL_WEIGHTS[3] * one[i])
    return best


def check_two_ply_value(text: str, top: int) -> bool:
    """``eval.expert:plies=2`` (every reply: no pre-score cut) against :func:`reference_two_ply`; False
    when ``text`` is no position to check (not a battle, terminal, or without a move)."""
    state = GameState.from_jfen(text)
    if state.phase != PHASE_BATTLE or state.is_terminal() or state.paths().m == 0:
        return False
    ev = ExpertEvaluator(plies=2, top=top, replies=100_000)  # every reply: no pre-score cut
    me = state.side
    want = reference_two_ply(state, top)
    assert ev.score(state, me) == pytest.approx(want)
    assert ev.score(state, 1 - me) == pytest.approx(-want)
    assert ev.value(state) == pytest.approx(math.tanh(want / ev.scale))
    return True


@pytest.mark.slow
@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=st.one_of(battle_boards(), played_positions()), top=st.integers(1, 2))
def test_two_ply_expert_value_matches_the_reference(text, top):
    """Any position. On an open board the pure-Python reference scores many replies one by one (from
    seconds to minutes an example), so this one is in the ``slow`` tier; the default run has the crowded
    boards below."""
    check_two_ply_value(text, top)


@pytest.mark.parametrize("seed", range(8))
def test_two_ply_expert_value_matches_the_reference_on_crowded_boards(seed):
    """The same check on boards of 70 to 90 stones a side (squares planted on some): 40 to 80 paths and
    as many replies each, cheap for the reference."""
    import random

    from tests.strategies import random_battle_jfen

    rng = random.Random(seed)
    text = random_battle_jfen(rng, rng.randint(70, 90), rng.randint(70, 90), seed % 3)
    assert check_two_ply_value(text, 1 + seed % 2)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=st.one_of(battle_boards(), played_positions()), top=st.integers(1, 8), replies=st.sampled_from([2, 48]))
def test_the_alpha_cut_keeps_the_best_score_and_its_paths(text, top, replies):
    """``search_scores`` with the alpha cut (margin 0, and the expert's own 2e-6) against the full
    two-ply scores: the same maximum reached by the same paths, every score within the margin of it
    exact, every other one an upper bound of the exact one, below the maximum less the margin."""
    state = GameState.from_jfen(text)
    if state.phase != PHASE_BATTLE or state.is_terminal() or state.paths().m == 0:
        return
    expert = ExpertAgent(plies=2, top=top, replies=replies)
    full = expert.battle_scores(state)[0]
    assert expert.best_score(state) == full.max()
    for margin in (0.0, 2e-6):
        cut = expert.battle_scores(state, margin=margin)[0]
        assert cut.max() == full.max()
        assert np.array_equal(np.flatnonzero(cut == cut.max()), np.flatnonzero(full == full.max()))
        assert np.all(cut >= full)
        assert np.all((cut == full) | (cut < full.max() - margin))
        assert np.all(cut[full >= full.max() - margin] == full[full >= full.max() - margin])


def test_the_alpha_cut_refuses_a_negative_margin():
    import random

    from tests.strategies import random_battle_jfen

    state = GameState.from_jfen(random_battle_jfen(random.Random(0), 12, 12))
    for bad in (-1e-9, float("nan")):
        with pytest.raises(ValueError, match="margin"):
            ExpertAgent().battle_scores(state, margin=bad)


def test_two_ply_expert_value_refuses_bad_options():
    for bad in ({"plies": 3}, {"plies": 0}, {"top": 0}, {"top": 1001}, {"replies": 0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            ExpertEvaluator(**bad)


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=played_positions(), mix=st.sampled_from([0.25, 1.0]))
def test_a_centred_plugin_value_is_relative_to_the_roots(text, mix):
    """``value_center``: the first child's leaf value is ``mix * tanh((margin(child) - margin(root) for the
    child's side) / scale)``, the root's margin negated since the child's side is the root's opponent."""
    state = GameState.from_jfen(text)
    if state.is_terminal() or state.phase != PHASE_BATTLE:
        return
    cfg = SearchConfig(simulations=2, threads=1, reuse_tree=False, seed=0, value_evaluator="eval.expert",
                       value_mix=mix, value_center=True, expansion_pruner=None, capture_pruner=None,
                       terminal_bound=False)  # the game-end bound has its own tests (test_search)
    with Search(UniformEvaluator(), cfg) as search:
        result = search.run(state)
    i = int(np.flatnonzero(result.visits > 0)[0])
    child = state.apply(result.moves[i])
    ev = ExpertEvaluator()
    if child.is_terminal():
        if child.winner() not in (0, 1):  # a draw is worth the even position against the root's margin
            assert result.q[i] == pytest.approx(-math.tanh((0.0 + ev.margin(state)) / ev.scale), abs=1e-12)
        return
    want = mix * math.tanh((ev.margin(child) + ev.margin(state)) / ev.scale)  # for the child's side to move
    assert result.q[i] == pytest.approx(-want, abs=1e-12)  # q is for the root's side


def test_centring_needs_a_plugin_with_a_margin(monkeypatch):
    from knowledge.plugins import REGISTRY
    from knowledge.registry import Entry

    class NoMargin:
        scale = 1.0

        def value(self, state):
            return 0.0

    monkeypatch.setitem(REGISTRY._entries, "eval.no-margin", Entry("eval.no-margin", "evaluator", NoMargin, ""))
    cfg = SearchConfig(value_evaluator="eval.no-margin", value_mix=1.0, value_center=True)
    with pytest.raises(ValueError, match="margin"):
        Search(UniformEvaluator(), cfg)
    Search(UniformEvaluator(), cfg.model_copy(update={"value_center": False})).close()


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=layout_positions(), mix=st.sampled_from([0.25, 1.0]), start=st.sampled_from([0, 60, 196]))
@example(text="WWWWBWWBWWWWWB/BBBBBBBWWBWWWB/BWWWWWWBWWBWWW/WBWBWBWBBBWWBB/BBWBBWBBWBWWBW/BBBWWWBWBWBWBB/"
                "WWWBBWBWBBWWBW/BWWBBBBBBBWBWW/WWBBWWBBWBBBBW/BWBBWBBWWBBBWW/WWBWBWBWWWBBWB/WBWBWWBBWWWBBW/"
                "BBBBBWW1WBWBWW/WBBBBWWBWBWBBW b layout 0 195", mix=0.25, start=0)  # the leaf is the battle's first position
def test_the_search_blends_the_layout_plugin_value_into_layout_leaves(text, mix, start):
    """``layout_value_evaluator`` (here ``eval.shape``, cheap and exact) is blended into the leaves of a
    layout search from ply ``layout_value_from`` on; before it the leaves keep the evaluator's value."""
    state = GameState.from_jfen(text)
    if state.phase != PHASE_LAYOUT:
        return
    cfg = SearchConfig(simulations=2, threads=1, reuse_tree=False, seed=0, layout_value_evaluator="eval.shape",
                       layout_value_mix=mix, layout_value_from=start, terminal_bound=False)
    with Search(UniformEvaluator(), cfg) as search:
        result = search.run(state)
    (i,) = np.flatnonzero(result.visits > 0)
    child = state.apply(result.moves[int(i)])
    sign = -1.0 if child.side != state.side else 1.0  # the battle's first mover is the last placer
    want = sign * mix * ShapeEvaluator().value(child) if child.ply >= start else 0.0
    assert float(result.q[i]) == pytest.approx(want, abs=1e-12)


def test_a_layout_plugin_leaves_earlier_placements_to_the_policy():
    """With a layout value plugin the agent searches from ``layout_value_from`` on and plays earlier
    placements with one simulation; without one, every placement gets the agent's simulations."""
    from search.agents import SearchAgent

    state = GameState.initial()
    expert = ExpertAgent(seed=1)
    while state.ply < 100:
        state = state.apply(expert.select(state))
    for start, plugin, want in ((101, "eval.shape", 1), (100, "eval.shape", 5), (101, None, 5)):
        cfg = SearchConfig(simulations=5, threads=1, seed=0, layout_value_evaluator=plugin, layout_value_mix=0.5,
                           layout_value_from=start)
        agent = SearchAgent("t", Search(UniformEvaluator(), cfg))
        agent.select(state)
        assert agent.last_search["simulations"] == want, (start, plugin)
        agent.close()
