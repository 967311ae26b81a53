"""Tests of the ``rollout`` layout agent and the ``eval.rollout`` evaluator (lab/rollout.py) against
naive references: fresh experts seeded as the agent seeds them, the stones counted on the board; and
``slm_rollout`` (lab/slm_rollout.py): its options and its candidates."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.board import BLACK, PHASE_LAYOUT, WHITE
from core.jfen import format_jfen
from core.notation import Move
from core.rules import Ruleset
from core.state import GameState
from knowledge.agents import ExpertAgent, make_agent, validate_agent_spec
from knowledge.plugins import REGISTRY
from knowledge.registry import SpecError

FAST = Ruleset(max_battle_plies=60)


# ============================================================================ rollout layout agent
def _naive_rollout(state: GameState, player: int, seed, battle_plies: int) -> float:
    """A fresh expert whose generator is seeded with ``seed`` (an int or a ``SeedSequence``) plays both
    sides to the end of the layout and ``battle_plies`` battle plies; the stones are counted on the board."""
    expert, s = ExpertAgent(), state
    expert.rng = np.random.default_rng(seed)
    while s.phase == PHASE_LAYOUT:
        s = s.apply(expert.select(s))
    for _ in range(battle_plies):
        if s.is_terminal():
            break
        s = s.apply(expert.select(s))
    own = int(np.sum(s.board == (1 if player == WHITE else 2)))
    return float(own - int(np.sum(s.board == (2 if player == WHITE else 1))))


@pytest.mark.parametrize("ply", [150, 191, 195])
def test_rollout_values_and_choice_match_a_naive_reference(ply):
    """``rollout``: the candidates are the expert's best placements by score, each valued by fresh
    expert rollouts (the same seeds for each), and the choice is the first maximum; before ``from_ply``
    and in the battle it plays what a lone expert with its seed plays."""
    s = GameState.initial(FAST)
    expert = ExpertAgent(seed=3)
    while s.ply < ply:
        s = s.apply(expert.select(s))
    agent = make_agent("rollout:top=3,rollouts=2,battle_plies=3", seed=9)
    seeds = [11, 12]
    points, diffs = agent.layout_rollouts(s, seeds)
    values = diffs.mean(axis=1)
    scores = ExpertAgent().layout_scores(s)
    legal = [p for p in range(196) if np.isfinite(scores[p])]
    want = sorted(legal, key=lambda p: -scores[p])[:3]
    assert points.tolist() == want
    ref = [np.mean([_naive_rollout(s.apply(Move((p,))), s.side, seed, 3) for seed in seeds]) for p in want]
    assert values.tolist() == ref
    chosen = agent.select(s).path[0]
    draws = np.random.default_rng(9).integers(0, 2**62, 2)
    drawn = agent.layout_rollouts(s, draws)[1].mean(axis=1)
    assert chosen == want[int(np.argmax(drawn))]
    assert drawn[want.index(chosen)] == max(drawn)
    early = make_agent("rollout:from_ply=196", seed=9)  # never searches: the expert's moves
    assert early.select(s) == ExpertAgent(seed=9).select(s)


@pytest.mark.parametrize("ply,seed", [(186, 4), (186, 7), (190, 4)])  # the halving round changes the pick
def test_rollout_halving_matches_a_naive_reference(ply, seed):
    """``rollout:halving_rollouts=H``: after the first round the better half of the candidates (ties to
    the higher expert score) get H more rollouts under the next seeds, and the pick is the best mean
    over all of a survivor's rollouts; ``select`` draws the seeds from the agent's generator."""
    s = GameState.initial(FAST)
    expert = ExpertAgent(seed=5)
    while s.ply < ply:
        s = s.apply(expert.select(s))
    agent = make_agent("rollout:top=3,rollouts=2,halving_rollouts=3,battle_plies=40", seed=seed)
    scores = ExpertAgent().layout_scores(s)
    want = sorted([p for p in range(196) if np.isfinite(scores[p])], key=lambda p: -scores[p])[:3]
    seeds = [int(x) for x in np.random.default_rng(seed).integers(0, 2**62, 5)]
    rolls = {p: [_naive_rollout(s.apply(Move((p,))), s.side, r, 40) for r in seeds] for p in want}
    first = {p: np.mean(rolls[p][:2]) for p in want}
    survivors = sorted(want, key=lambda p: (-first[p], want.index(p)))[:2]
    survivors.sort(key=want.index)
    total = {p: np.mean(rolls[p]) for p in survivors}
    best = max(survivors, key=lambda p: (total[p], -want.index(p)))
    assert agent.pick(s, seeds) == best
    assert agent.select(s).path[0] == best  # the same draws from the same seed
    flat = make_agent("rollout:top=3,rollouts=2,battle_plies=40", seed=seed)
    assert flat.pick(s, seeds[:2]) == max(want, key=lambda p: (first[p], -want.index(p))) != best


@pytest.mark.parametrize("ply", [160, 194])
def test_rollout_evaluator_matches_a_naive_reference(ply):
    """``eval.rollout``: the margin is the mean stone difference for the side to move over fresh expert
    rollouts seeded from ``(seed, ply, i)``, the same for every position of a ply; ``score`` is that
    margin zero-sum, ``value`` its tanh; a terminal position gives the result."""
    from lab.rollout import RolloutEvaluator

    s = GameState.initial(FAST)
    expert = ExpertAgent(seed=4)
    while s.ply < ply:
        s = s.apply(expert.select(s))
    ev = REGISTRY.create("eval.rollout:battle_plies=3,rollouts=2,scale=5,seed=7", "evaluator")
    assert isinstance(ev, RolloutEvaluator)
    want = np.mean([_naive_rollout(s, s.side, np.random.SeedSequence([7, ply, i]), 3) for i in range(2)])
    assert ev.margin(s) == want
    assert ev.score(s, s.side) == want and ev.score(s, 1 - s.side) == -want
    assert ev.value(s) == pytest.approx(math.tanh(want / 5))
    sibling = s.apply(Move((int(s.placements()[-1]),)))  # another position of the next ply: the same seeds
    want = np.mean([_naive_rollout(sibling, sibling.side, np.random.SeedSequence([7, ply + 1, i]), 3)
                    for i in range(2)])
    assert ev.margin(sibling) == want
    board = np.zeros(196, np.int8)
    board[:10], board[-3:] = 1, 2  # Black below loss_below (4): White has won
    end = GameState.from_jfen(format_jfen(board, BLACK, 1, 0, 300))
    assert end.is_terminal() and end.winner() == WHITE
    assert ev.value(end) == -1.0  # for Black, to move
    for bad in ("battle_plies=-1", "rollouts=0", "scale=0", "seed=-1"):
        with pytest.raises((SpecError, ValueError), match=bad.split("=")[0]):
            REGISTRY.create(f"eval.rollout:{bad}", "evaluator")


@pytest.mark.parametrize("ply", [160, 170])
def test_rollout_late_top_compares_more_placements_from_late_from(ply):
    """``rollout:late_from=F,late_top=K``: from layout ply F on, the expert's K best placements are the
    candidates (and the pick is one of them); before F its ``top`` best."""
    s = GameState.initial(FAST)
    expert = ExpertAgent(seed=6)
    while s.ply < ply:
        s = s.apply(expert.select(s))
    scores = ExpertAgent().layout_scores(s)
    ranked = sorted([p for p in range(196) if np.isfinite(scores[p])], key=lambda p: -scores[p])
    late = make_agent("rollout:top=2,late_from=165,late_top=5,rollouts=1,battle_plies=2", seed=3)
    want = ranked[:5] if ply >= 165 else ranked[:2]
    assert late.candidates(s).tolist() == want
    assert late.select(s).path[0] in want
    plain = make_agent("rollout:top=2,rollouts=1,battle_plies=2", seed=3)  # late_from defaults to never
    assert plain.candidates(s).tolist() == ranked[:2]


@pytest.mark.parametrize("ply,seed", [(180, 2), (188, 1), (188, 3), (194, 3), (195, 3)])
def test_rollout_lookahead_matches_a_naive_reference(ply, seed):
    """``rollout:lookahead_from=F,lookahead_top=K``: each candidate is placed, the opponent replies with
    the expert's first-best placement, and the candidate is valued by the best mean of its K follow-ups
    (our expert's K best placements there, each with the same seeds' rollouts; ties to the earlier);
    the halving round rolls out the survivors' best follow-ups further. Where the layout ends before
    our next placement the rollouts start after the reply (or after the candidate). Before ply 190
    these cases have a candidate whose best follow-up is not the expert's first, and at (188, *) the
    lookahead changes the pick; before F it is the plain agent."""
    s = GameState.initial(FAST)
    expert = ExpertAgent(seed=seed)
    while s.ply < ply:
        s = s.apply(expert.select(s))
    spec = "rollout:top=3,rollouts=2,halving_rollouts=2,battle_plies=40"
    agent = make_agent(f"{spec},lookahead_from=150,lookahead_top=3", seed=seed)
    seeds = [11, 12, 13, 14]

    def best(state, k):
        scores = ExpertAgent().layout_scores(state)
        return sorted([p for p in range(196) if np.isfinite(scores[p])], key=lambda p: -scores[p])[:k]

    leaf, first, chosen = {}, {}, []
    for p in best(s, 3):
        after = s.apply(Move((p,)))
        if after.phase == 0:
            scores = ExpertAgent().layout_scores(after)
            after = after.apply(Move((max(range(196), key=lambda q: (scores[q], -q)),)))
        follow = [after.apply(Move((d,))) for d in best(after, 3)] if after.phase == 0 else [after]
        means = [np.mean([_naive_rollout(f, s.side, r, 40) for r in seeds[:2]]) for f in follow]
        chosen.append(int(np.argmax(means)))
        leaf[p], first[p] = follow[chosen[-1]], max(means)
    assert any(chosen) == (ply < 190)
    want = best(s, 3)
    leaves, diffs = agent.lookahead_leaves(s, np.array(want), seeds[:2])
    assert [x.to_jfen() for x in leaves] == [leaf[p].to_jfen() for p in want]
    assert diffs.mean(axis=1).tolist() == [first[p] for p in want]
    survivors = sorted(sorted(want, key=lambda p: (-first[p], want.index(p)))[:2], key=want.index)
    total = {p: np.mean([_naive_rollout(leaf[p], s.side, r, 40) for r in seeds]) for p in survivors}
    pick = max(survivors, key=lambda p: (total[p], -want.index(p)))
    assert agent.pick(s, seeds) == pick
    plain = make_agent(spec, seed=seed).pick(s, seeds)
    if ply == 188:  # the lookahead changes the pick (at 194 it may too: after the forced last reply the
        assert pick != plain  # rollouts' generators start one placement later, so their moves differ)
    assert make_agent(f"{spec},lookahead_from={ply + 1}", seed=seed).pick(s, seeds) == plain


def test_rollout_options_are_checked():
    for bad in ("rollout:top=0", "rollout:from_ply=197", "rollout:rollouts=0", "rollout:battle_plies=-1",
                "rollout:late_from=197", "rollout:late_top=0", "rollout:lookahead_from=197",
                "rollout:lookahead_top=0"):
        with pytest.raises(SpecError, match=bad.split(":")[1].split("=")[0]):
            make_agent(bad)


def test_an_option_redescribed_in_a_subclass_keeps_the_parents_default_and_bounds():
    """``slm_rollout``'s ``top`` has its own description and ``rollout``'s default and bounds, written once."""
    from lab.rollout import RolloutOptions
    from lab.slm_rollout import SlmRolloutOptions

    parent, child = RolloutOptions.model_fields["top"], SlmRolloutOptions.model_fields["top"]
    assert child.description != parent.description
    assert child.default == parent.default and child.metadata == parent.metadata
    for spec in ("slm_rollout:top=0", "slm_rollout:top=197"):
        with pytest.raises(SpecError, match="option 'top': must be"):
            validate_agent_spec(spec)


def test_a_bad_layout_prior_gives_one_line():
    """Every option naming a plugin gives the message of ``search.agents.plugin_spec_or_none``."""
    with pytest.raises(SpecError) as info:
        validate_agent_spec("slm_rollout:layout_prior=eval.expert")
    assert str(info.value) == ("agent 'slm_rollout' option 'layout_prior': a plugin spec (layout prior) or none: "
                               "unknown layout prior 'eval.expert'; available: prior.expert_layout, prior.gaussian "
                               "(got eval.expert)")


def test_the_lab_evaluator_is_listed_once_imported():
    """With ``lab.rollout`` imported, ``eval.rollout`` is an evaluator the search's options accept."""
    validate_agent_spec("slm:layout_value_eval=eval.rollout")
    with pytest.raises(SpecError, match="available: eval.expert, eval.rollout, eval.shape"):
        validate_agent_spec("mcts:value_eval=nope")


def test_slm_rollout_proposes_the_searchs_blended_priors():
    """``slm_rollout``'s candidates are the ``top`` highest of the search's layout priors (the SLM's
    policy at ``policy_temperature``, blended with the expert's layout prior), worked out here from
    the net and the plugin, the ``late_top`` highest from ``late_from`` on (``count`` of them when
    asked, as the lookahead asks); before ``from_ply`` it plays the highest, from it on one of them."""
    from knowledge.priors import ExpertLayoutPrior
    from nets.evaluator import NetEvaluator

    rng = np.random.default_rng(4)
    states, s = [], GameState.initial()
    while s.phase == PHASE_LAYOUT:
        if s.ply in (10, 150, 193):
            states.append(s)
        s = s._play(s.legal_moves()[int(rng.integers(len(s.legal_moves())))])
    agent = make_agent("slm_rollout:top=3,rollouts=1,battle_plies=2,from_ply=150,policy_temperature=2,"
                       "layout_prior_mix=0.4,late_from=150,late_top=4", seed=0)
    net = NetEvaluator.from_files(slm="models/default/slm.safetensors")
    try:
        for state in states:
            points = state.placements()
            policy = np.asarray(net.evaluate([state])[0].policy, np.float64)[points] ** 0.5
            knowledge = ExpertLayoutPrior().prior(state).astype(np.float64)[points]
            want = 0.6 * policy / policy.sum() + 0.4 * knowledge / knowledge.sum()
            top = [points[i] for i in np.argsort(-want, kind="stable")[: 4 if state.ply >= 150 else 3]]
            assert [int(p) for p in agent.candidates(state)] == top
            ranked = [points[i] for i in np.argsort(-want, kind="stable")]  # count: the lookahead's follow-ups
            assert [int(p) for p in agent.candidates(state, 2)] == ranked[:2]
            assert [int(p) for p in agent.candidates(state, 6)] == ranked[:6]
            move = agent.select(state).path[0]
            assert move == top[0] if state.ply < 150 else move in top
    finally:
        agent.close()
        net.close()
