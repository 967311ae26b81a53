"""Tests of the knowledge agents (knowledge/agents.py) and the reward plugins (knowledge/rewards.py).

Positions are hand-built battle JFENs (rule book section 6), written from lists of points so the
shapes are readable: ``DALIAN_W`` is White's flat Dalian (squares c3-d4 and c5-d6 with c5 empty, the
shuttle c4-c5) plus a line of stones on row 12 that forms nothing; Black's stones sit on rows 14
and 9, out of reach.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.board import BLACK, POINT_BY_NAME, WHITE
from core.jfen import format_jfen
from core.notation import Move
from knowledge.pruning_kernels import path_levels
from core.rules import Ruleset
from core.state import GameState
from knowledge.agents import JITTER, ExpertAgent, PhasedAgent, make_agent
from knowledge.protocols import Agent, Reward
from knowledge.plugins import REGISTRY
from tests.strategies import battle_boards, layout_positions, played_positions

FAST = Ruleset(max_battle_plies=60)
SPECS = ["random", "greedy", "minimax:depth=1", "expert"]


def row(r: int, cols: str) -> list[str]:
    return [f"{c}{r}" for c in cols]


def battle_jfen(white: list[str], black: list[str], side: str = "w") -> str:
    board = np.zeros(196, np.int8)
    for p in white:
        board[POINT_BY_NAME[p]] = 1
    for p in black:
        assert board[POINT_BY_NAME[p]] == 0, p
        board[POINT_BY_NAME[p]] = 2
    return format_jfen(board, WHITE if side == "w" else BLACK, 1, 0, 196)


def battle(white, black, side="w", ruleset=Ruleset()) -> GameState:
    return GameState.from_jfen(battle_jfen(white, black, side), ruleset)


DALIAN_W = ["c3", "d3", "c4", "d4", "d5", "c6", "d6"] + row(12, "abcdefghijklm")  # 20 stones
FAR_B = row(14, "abcdefghijklmn") + row(9, "abcdef")  # 20 stones
DALIAN_B = ["j3", "k3", "j4", "k4", "k5", "j6", "k6"]  # Black's flat Dalian: shuttle j4-j5


def play_game(white, black, ruleset=FAST) -> tuple[list[Move], GameState]:
    """A whole game; every move goes through ``GameState.apply`` (full legality check)."""
    s = GameState.initial(ruleset)
    moves = []
    while not s.is_terminal():
        agent = (white, black)[s.side]
        mv = agent.select(s)
        assert agent.last_think_time >= 0.0
        moves.append(mv)
        s = s.apply(mv)
    return moves, s


def squares_formed(state: GameState, move: Move) -> int:
    return state.legal_paths()[move.path_str()]


# ============================================================================ registry and protocol
def test_registered_agents_follow_the_protocol():
    assert {"random", "greedy", "minimax", "expert"} <= set(REGISTRY.names("agent"))
    for spec in SPECS + ["expert+random"]:
        agent = make_agent(spec, seed=1)
        assert isinstance(agent, Agent)
        assert agent.name == spec.split(":")[0]
    with pytest.raises(KeyError):
        make_agent("no-such-agent")
    with pytest.raises(ValueError):
        make_agent("minimax:depth=0")
    with pytest.raises(ValueError):
        make_agent("expert:victims=all")


@pytest.mark.parametrize("spec", SPECS + ["minimax:time=0.05"])
def test_agents_play_full_legal_games(spec):
    moves, final = play_game(make_agent(spec, seed=1), make_agent("random", seed=2))
    assert final.is_terminal() and len(moves) >= 196  # a layout can leave Black without a move
    moves, final = play_game(make_agent("random", seed=3), make_agent(spec, seed=4))
    assert final.is_terminal()


@pytest.mark.parametrize("spec", SPECS)
def test_agents_are_deterministic_for_a_seed(spec):
    a, _ = play_game(make_agent(spec, seed=7), make_agent(spec, seed=8))
    b, _ = play_game(make_agent(spec, seed=7), make_agent(spec, seed=8))
    assert [str(m) for m in a] == [str(m) for m in b]


@pytest.mark.parametrize("spec", SPECS)
def test_agents_move_legally_in_the_flying_stage(spec):
    # White has 10 stones (flies), Black 20: thousands of flights for White.
    white = ["c3", "d3", "c4", "e7", "f7", "g9", "h9", "k2", "l2", "m11"]
    s = battle(white, FAR_B)
    assert s.flying(WHITE) and s.paths().m > 1000
    s.check_move(make_agent(spec, seed=0).select(s))
    # ... and Black answering a flying White.
    s = battle(white, FAR_B, side="b")
    s.check_move(make_agent(spec, seed=0).select(s))


# ============================================================================ minimax
@pytest.mark.parametrize("spec", ["minimax:depth=1", "minimax:depth=2", "minimax:time=0.2"])
def test_minimax_finds_the_winning_square(spec):
    # Black has 4 stones: any square capture leaves 3 < loss_below = 4.
    s = battle(DALIAN_W, ["k14", "l14", "m14", "n14"])
    mv = make_agent(spec).select(s)
    after = s.apply(mv)
    assert after.outcome().reason == "stones" and after.winner() == WHITE


@pytest.mark.parametrize("spec", ["minimax:depth=1", "minimax:depth=2"])
def test_minimax_finds_the_winning_jump_chain(spec):
    # Black has 5 stones (flying), so White (20) must jump at least 2 hops: f2xf4xf6 wins.
    white = ["f2"] + row(12, "abcdefghijklm") + row(10, "abcdef")
    s = battle(white, ["f3", "f5", "l14", "m14", "n14"])
    assert [p for p in s.legal_paths() if "x" in p] == ["f2xf4xf6"]
    mv = make_agent(spec).select(s)
    assert str(mv) == "f2xf4xf6"
    assert s.apply(mv).winner() == WHITE


def test_minimax_takes_the_dalian_shuttle():
    s = battle(DALIAN_W, FAR_B)
    agent = make_agent("minimax:depth=2")
    mv = agent.select(s)
    assert squares_formed(s, mv) == 1 and agent.completed_depth == 2


# ============================================================================ expert
def test_expert_prefers_the_dalian_shuttle():
    s = battle(DALIAN_W, FAR_B)
    ps = s.paths()
    levels = path_levels(s.board, s.side, 20, 20, ps.pts, ps.off, ps.nsq, ps.jump, ps.m)
    by_path = {ps.path_str(i): int(levels[i]) for i in range(ps.m)}
    # c6-c5 forms a square too, but breaks the Dalian; c4-c5 is the shuttle (JFA Table 1 level 1).
    assert by_path["c4-c5"] == 1 and by_path["c6-c5"] == 2
    for plies in (1, 2):
        mv = make_agent(f"expert:plies={plies}").select(s)
        assert mv.path_str() == "c4-c5" and len(mv.victims) == 1


def test_expert_takes_the_safe_jump():
    # e5xe7 is free; j5xj7 is answered by k7xi7.
    white = ["e5", "j5", "j4", "j3"] + row(12, "abcdefghijklm")
    black = ["e6", "j6", "k7", "l7"] + row(14, "abcdefghijklmn") + row(9, "abc")
    s = battle(white, black)
    assert sorted(p for p in s.legal_paths() if "x" in p) == ["e5xe7", "j5xj7"]
    for plies in (1, 2):
        assert str(make_agent(f"expert:plies={plies}").select(s)) == "e5xe7"


def test_expert_victims_break_the_opponents_dalian():
    s = battle(DALIAN_W, DALIAN_B + row(14, "abcdefghijklmn"))
    assert s.apply("c4-c5/a14").apply("j4-j5/a12").counts == (19, 20)  # Black's shuttle works
    for rule in ExpertAgent.VICTIM_RULES:
        mv = make_agent(f"expert:victims={rule}").select(s)
        after = s.apply(mv)
        assert mv.path_str() == "c4-c5"
        assert not any(after.legal_paths().values()), f"{rule}: {mv} leaves Black a square-forming move"


def _naive_greedy_layout_scores(state, evaluator, prior, prior_weight):
    """Placement by placement: the stone is put on a copy of the board, both sides' ``eval.shape``
    layout scores are taken from ``ShapeEvaluator.score`` on that board (the layout phase: no
    material), and the prior scaled to max 1 is added."""
    from types import SimpleNamespace

    pr = prior.prior(state).astype(np.float64)
    pr /= pr.max()
    me = state.side
    out = np.full(196, -np.inf)
    for p in state.placements():
        board = state.board.copy()
        board[p] = me + 1
        counts = [int(state.counts[0]), int(state.counts[1])]
        counts[me] += 1
        view = SimpleNamespace(board=board, counts=tuple(counts), ruleset=state.ruleset, phase=state.phase)
        out[p] = evaluator.score(view, me) - evaluator.score(view, 1 - me) + prior_weight * pr[p]
    return out


def _check_greedy_layout_scores(state, weights, prior_weight):
    from knowledge.formation import greedy_layout_scores
    from knowledge.evaluation import ShapeEvaluator
    from knowledge.priors import GaussianPrior

    evaluator, prior = ShapeEvaluator(chain=weights[0], gate=weights[1], square=weights[2]), GaussianPrior()
    fast = greedy_layout_scores(state, evaluator, prior, prior_weight)
    assert fast.dtype == np.float64 and fast.shape == (196,)
    np.testing.assert_array_equal(fast, _naive_greedy_layout_scores(state, evaluator, prior, prior_weight))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layout_positions(), st.sampled_from([(7.0, 3.0, 4.0), (1.5, -2.0, 0.25)]), st.sampled_from([0.0, 1.0, 3.0]))
def test_greedy_layout_scores_match_a_naive_reference(jfen, weights, prior_weight):
    """The kernel ``shape_layout_scores`` (greedy, minimax and expert layouts) gives, bit for bit, the
    scores of placing each stone and evaluating the board with ``ShapeEvaluator``; on random layouts."""
    _check_greedy_layout_scores(GameState.from_jfen(jfen), weights, prior_weight)


@pytest.mark.parametrize("seed", [0, 1])
def test_greedy_layout_scores_match_a_naive_reference_on_shaped_layouts(seed):
    """The same on the layouts the expert plays (squares, gates and Dalians form there, which random
    placements seldom make), from the first placement to the last."""
    expert = ExpertAgent(seed=seed, layout_noise=1.0)
    s = GameState.initial()
    while s.phase == 0:
        if s.ply % 7 == 0 or s.ply > 185:
            _check_greedy_layout_scores(s, (7.0, 3.0, 4.0), 1.0)
        s = s._play(expert.select(s))
    with pytest.raises(ValueError, match="not in the layout"):
        _check_greedy_layout_scores(s, (7.0, 3.0, 4.0), 1.0)


def test_expert_layout_starts_in_the_centre_and_stays_fast():
    agent = make_agent("expert", seed=0)
    s = GameState.initial()
    assert str(agent.select(s)) in ("g7", "h8")
    s = s.apply(agent.select(s)).apply(make_agent("random").select(s.apply(agent.select(s))))
    p = agent.select(s).origin
    assert abs(p % 14 - 6.5) <= 2.5 and abs(p // 14 - 6.5) <= 2.5


def test_expert_beats_random():
    rules = Ruleset(max_battle_plies=150)
    warm = make_agent("expert")
    warm.select(battle(DALIAN_W, FAR_B))  # load the kernels before timing
    wins, times = 0, []
    for g in range(6):
        expert, rnd = make_agent("expert", seed=g), make_agent("random", seed=100 + g)
        white, black = (expert, rnd) if g % 2 == 0 else (rnd, expert)
        s = GameState.initial(rules)
        while not s.is_terminal():
            agent = (white, black)[s.side]
            mv = agent.select(s)
            if agent is expert and s.phase == 1:
                times.append(agent.last_think_time)
            s = s._play(mv)
        wins += s.winner() == (WHITE if expert is white else BLACK)
    assert wins >= 4
    assert np.mean(times) < 0.05


def _expert_move_in_full(agent: ExpertAgent, state: GameState) -> Move:
    """The expert's battle move the slow way: every two-ply score exact, then its repetition rule and
    its seeded tie-break (``agent``'s generator advances as in ``select``)."""
    ps = state.paths()
    scores, _ = agent.battle_scores(state)
    agent.repetition_adjust(state, ps, scores)
    i = agent._argmax(scores, agent.noise)
    path, jump = ps.path(i), bool(ps.jump[i])
    return Move(path, jump, agent.victims(state, path, jump, int(ps.nsq[i])))


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=st.one_of(battle_boards(), played_positions()), seed=st.integers(0, 2**16),
       top=st.sampled_from([2, 8]))
def test_the_experts_alpha_cut_plays_the_moves_of_the_full_search(text, seed, top):
    """``ExpertAgent.select`` scores with the alpha cut (margin twice its tie-break jitter): the same
    moves as every score exact, over a game between two experts, repeated positions included."""
    state = GameState.from_jfen(text, Ruleset(max_battle_plies=60))
    if state.phase != 1:
        return
    fast, slow = ExpertAgent(seed=seed, top=top), ExpertAgent(seed=seed, top=top)
    for _ in range(30):
        if state.is_terminal():
            break
        move = fast.select(state)
        assert move == _expert_move_in_full(slow, state)
        state = state._play(move)


@pytest.mark.parametrize("behind", [True, False])
def test_the_experts_alpha_cut_keeps_its_repetition_choice(behind):
    """Where the repetition rule moves a score (a step that draws by repetition, for a side behind and
    a side ahead), ``select`` rescored in full: the move of the full search."""
    from tests.strategies import shuffle_to_a_draw

    state, _ = next(filter(None, (shuffle_to_a_draw(40, 30, seed) if behind else shuffle_to_a_draw(30, 40, seed)
                                  for seed in range(40))))
    agent, margins = ExpertAgent(seed=5), []
    scored = agent.battle_scores

    def spy(s, margin=math.inf):
        margins.append(margin)
        return scored(s, margin)

    agent.battle_scores = spy
    assert agent.select(state) == _expert_move_in_full(ExpertAgent(seed=5), state)
    assert margins == [2 * JITTER, math.inf]  # cut first, then in full once the rule moved a score


# ============================================================================ phased agent
def test_phased_agent_uses_the_right_agent_per_phase():
    agent = make_agent("expert+random", seed=5)
    assert isinstance(agent, PhasedAgent) and agent.name == "expert+random"
    assert agent.layout_agent.name == "expert" and agent.battle_agent.name == "random"
    s = GameState.initial(FAST)
    opponent = make_agent("random", seed=6)
    seen = {0: set(), 1: set()}
    while not s.is_terminal():
        if s.side == WHITE:
            mv = agent.select(s)
            seen[s.phase].add(agent.last_agent.name)
            assert agent.last_think_time == agent.last_agent.last_think_time
        else:
            mv = opponent.select(s)
        s = s.apply(mv)
    assert seen == {0: {"expert"}, 1: {"random"}}
    # The layout half plays exactly what a lone expert with the same seed plays.
    s = GameState.initial()
    lone, phased = make_agent("expert", seed=5), make_agent("expert+minimax:depth=1", seed=5)
    for _ in range(12):
        a, b = lone.select(s), phased.select(s)
        assert a == b
        s = s.apply(a)


# ============================================================================ rewards
def test_first_square_reward_goes_to_the_side_that_squares_first():
    reward = REGISTRY.create("reward.first_square", "reward")
    assert isinstance(reward, Reward)
    assert reward.rewards(battle(DALIAN_W, FAR_B, "w")) == (1.0, -1.0)
    # Colours swapped: Black owns the Dalian and is to move.
    assert reward.rewards(battle(FAR_B, DALIAN_W, "b")) == (-1.0, 1.0)
    # White to move but only Black can square at once: White moves, then Black squares.
    assert reward.rewards(battle(FAR_B, DALIAN_W, "w")) == (-1.0, 1.0)
    # Nobody can form a square within 2 plies.
    quiet = REGISTRY.create("reward.first_square:max_plies=2", "reward")
    assert quiet.rewards(battle(row(12, "abcdefghijklm") + row(10, "abcdef"), FAR_B)) == (0.0, 0.0)


def test_first_square_reward_from_a_layout_end_is_deterministic():
    rules = Ruleset(max_battle_plies=200)
    s = GameState.initial(rules)
    rnd = make_agent("random", seed=11)
    while s.phase == 0:
        s = s._play(rnd.select(s))
    reward = REGISTRY.create("reward.first_square:max_plies=50", "reward")
    r = reward.rewards(s, seed=3)
    assert r in ((1.0, -1.0), (-1.0, 1.0), (0.0, 0.0))
    assert reward.rewards(s, seed=3) == r


def test_outcome_reward():
    reward = REGISTRY.create("reward.outcome", "reward")
    # Terminal: Black has 3 stones < loss_below.
    done = battle(DALIAN_W, ["l14", "m14", "n14"], "b")
    assert done.is_terminal() and reward.rewards(done) == (1.0, -1.0)
    # Played out by the expert for both sides: the shuttle takes Black (4 stones) to 3 at once.
    s = battle(DALIAN_W, ["a14", "e14", "h14", "l14"], "w", Ruleset(max_battle_plies=30))
    assert reward.rewards(s, seed=0) == (1.0, -1.0)  # the shuttle takes Black to 3 stones at once
    assert reward.last_state.is_terminal() and reward.last_state.ply == 197
    # Any position: the reward is the result of the finished game.
    s = battle(FAR_B, DALIAN_W, "w", Ruleset(max_battle_plies=30))
    r = reward.rewards(s, seed=0)
    assert reward.last_state.is_terminal() and r == reward.last_state.returns()
