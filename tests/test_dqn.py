"""The ``dqn`` agent and its training (issue 63): the sum tree against a slow reference, prioritized
replay, the double-DQN target by hand, afterstate planes against ``nets.features`` of the real
afterstate, legal and seeded moves, a short run that resumes exactly, the shipped model."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from core.rules import Ruleset
from core.state import GameState
from knowledge.agents import RandomAgent
from nets.config import NetConfig
from nets.features import state_planes
from nets.model import build
from nets.qnet import afterstate_planes, candidates, pack_planes, unpack_planes
from search.dqn import DEFAULT_MODEL, DqnAgent
from train.learning.dqn import DqnConfig, double_dqn_targets, potential, train
from train.learning.replay import PRIORITY_EPS, PrioritizedReplay, SumTree

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # unit unless marked (tests/conftest.py)

RULES = Ruleset(max_battle_plies=300, adjudicate="stones")
MID = "B1W1B1W1B1W1B1/W1B1W1B1W1B1W1/14/14/14/14/7W6/7B6/14/14/14/14/14/14 b battle 5 230"


# ============================================================================ sum tree
value = st.floats(0, 100, allow_nan=False).map(lambda v: 0.0 if v < 1 else v)  # intervals wider than rounding


@settings(max_examples=60, deadline=None)
@given(values=st.lists(value, min_size=1, max_size=40), updates=st.lists(st.tuples(st.integers(0, 39), value), max_size=20))
def test_sum_tree_matches_a_slow_reference(values, updates):
    tree = SumTree(len(values))
    ref = np.array(values, np.float64)
    tree.set(np.arange(len(ref)), ref)
    for i, v in updates:
        i %= len(ref)
        ref[i] = v
        tree.set([i], [v])
    assert tree.total == pytest.approx(ref.sum(), rel=1e-12, abs=1e-12)
    assert np.array_equal(tree.leaf(np.arange(len(ref))), ref)
    if ref.sum() == 0:
        return
    # the middle of every non-empty leaf's prefix-sum interval finds that leaf
    cum = np.cumsum(ref)
    nonzero = np.flatnonzero(ref > 0)
    mids = cum[nonzero] - ref[nonzero] / 2
    assert np.array_equal(tree.find(mids), nonzero)
    # a fine grid of masses lands on leaves in proportion to their values, never on an empty one
    grid = (np.arange(4000) + 0.5) * (tree.total / 4000)
    counts = np.bincount(tree.find(grid), minlength=len(ref))
    assert np.all(counts[ref == 0] == 0)
    assert np.allclose(counts / 4000, ref / ref.sum(), atol=2 / 4000)


def test_sum_tree_refuses_negative_values():
    with pytest.raises(ValueError, match=">= 0"):
        SumTree(4).set([1], [-1.0])


# ============================================================================ replay
def _packed(value: float, k: int = 1):
    planes = np.zeros((k, 14, 14, 14), np.float32)
    planes[:, 0, 0, 0] = 1.0
    planes[:, 10] = value
    return pack_planes(planes)


def test_replay_weights_priorities_and_round_trip():
    rng = np.random.default_rng(0)
    replay = PrioritizedReplay(capacity=4, next_top=3, alpha=0.5)
    for i in range(5):  # wraps around: 4 kept, the first overwritten
        nxt = _packed(i / 10, k=2)
        replay.add(tuple(a[0] for a in _packed(i / 10)), reward=float(i), done=i == 4, nxt=nxt)
    assert len(replay) == 4 and replay.reward[0] == 4.0 and replay.next_count[0] == 0 and replay.next_count[1] == 2
    replay.update(np.array([0, 1, 2, 3]), np.array([0.0, 1.0, 2.0, 3.0]))
    p = (np.array([0.0, 1.0, 2.0, 3.0]) + PRIORITY_EPS) ** 0.5
    assert np.allclose(replay.tree.leaf(np.arange(4)), p)
    idx, w, x, r, done, nxt, mask = replay.sample(64, beta=0.7, rng=rng)
    expect = (4 * p[idx] / p.sum()) ** -0.7
    assert np.allclose(w, expect / expect.max(), rtol=1e-5)
    assert np.allclose(x[:, 10, 0, 0], replay.x_scalars[idx, 0]) and np.array_equal(r, replay.reward[idx])
    assert np.array_equal(mask.sum(1), replay.next_count[idx]) and np.array_equal(done, replay.done[idx])
    counts = np.bincount(idx, minlength=4)
    assert counts[0] <= counts[3]  # the smallest priority is drawn least
    copy = PrioritizedReplay(capacity=4, next_top=3, alpha=0.5)
    assert copy.load_bytes(replay.to_bytes(episode=7)) == {"episode": 7}
    for name in PrioritizedReplay._ARRAYS:
        assert np.array_equal(getattr(copy, name), getattr(replay, name))
    assert np.array_equal(copy.tree.tree, replay.tree.tree) and copy.pos == replay.pos
    with pytest.raises(ValueError, match="capacity"):
        PrioritizedReplay(capacity=5, next_top=3).load_bytes(replay.to_bytes())


# ============================================================================ double DQN
def test_double_dqn_target_by_hand():
    q_online = torch.tensor([[0.1, 0.5, 0.9], [0.3, 0.2, 0.0], [0.0, 0.0, 0.0]])
    q_target = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    mask = torch.tensor([[True, True, False], [True, True, True], [False, False, False]])
    reward = torch.tensor([0.5, -0.25, 1.0])
    done = torch.tensor([0.0, 0.0, 1.0])
    y = double_dqn_targets(q_online, q_target, mask, reward, done, gamma=0.9)
    # row 0: the online argmax among the first two is column 1 (0.9 is masked out) -> target 2.0
    # row 1: online argmax column 0 -> target 4.0 (not the target net's own max, 6.0)
    # row 2: done -> the reward alone
    assert torch.allclose(y, torch.tensor([0.5 + 0.9 * 2.0, -0.25 + 0.9 * 4.0, 1.0]))


def test_potential_is_material_in_the_battle_only():
    battle = GameState.from_jfen(MID, RULES)
    assert potential(GameState.initial(RULES), 0, 1.0) == 0.0
    n = battle.counts
    assert potential(battle, 1, 2.0) == pytest.approx(2.0 * (n[1] - n[0]) / 98)


# ============================================================================ afterstates
def _mover_view(after: GameState, mover: int) -> np.ndarray:
    """``nets.features`` planes of ``after`` turned to ``mover``'s view."""
    ref = state_planes(after)
    if after.side == mover:
        return ref
    out = ref.copy()
    for a, b in ((0, 1), (5, 6), (11, 12)):
        out[a], out[b] = ref[b], ref[a]
    out[3] = 1.0 - ref[3]
    return out


def test_afterstate_planes_are_the_features_of_the_real_afterstate():
    from knowledge.pruning import CapturePruner

    pruner = CapturePruner(top=3)
    state, agent, checked = GameState.initial(RULES), RandomAgent(3), 0
    while not state.is_terminal() and state.ply < 330:
        cands = candidates(state, pruner, 3)
        planes = afterstate_planes(state, cands)
        bits, scalars = pack_planes(planes)
        assert np.array_equal(unpack_planes(bits, scalars), planes)
        for i in range(0, cands.n, max(1, cands.n // 4)) if state.ply % 17 == 0 or state.ply >= 194 else ():
            move = state.check_move(cands.move(i))
            assert np.array_equal(planes[i], _mover_view(state._play(move), state.side)), (state.ply, move)
            checked += 1
        state = state._play(agent.select(state))
    assert checked > 40


def _tiny_agent(seed: int = 0, victim_sets: int = 3) -> DqnAgent:
    torch.manual_seed(5)
    net = build(NetConfig(kind="q", blocks=1, channels=4, value_hidden=4)).eval()
    return DqnAgent(net, victim_sets=victim_sets, seed=seed)


def test_the_agent_plays_legal_moves_and_is_seeded():
    starts = [GameState.initial(RULES), GameState.from_jfen(MID, RULES)]
    for start in starts:
        games = []
        for _ in range(2):
            agent, state, moves = _tiny_agent(seed=4), start, []
            for _ in range(12):
                if state.is_terminal():
                    break
                move = state.check_move(agent.select(state))  # raises IllegalMoveError if not legal
                moves.append(str(move))
                state = state._play(move)
            games.append(moves)
        assert games[0] == games[1] and len(games[0]) > 0


def test_square_victims_are_chosen_by_q_among_the_pruner_sets():
    from knowledge.pruning import CapturePruner

    state, agent = GameState.initial(RULES), RandomAgent(1)
    while state.phase == 0 or not state.paths().nsq[:state.paths().m].any():  # a square-forming path
        state = state._play(agent.select(state))
    ps = state.paths()
    forming = [i for i in range(ps.m) if ps.nsq[i] > 0]
    cands = candidates(state, CapturePruner(top=3), 3)
    sets = {cands.move(i).victims for i in range(cands.n) if cands.move(i).path == ps.path(forming[0])}
    expect = CapturePruner(top=3).candidates(state, ps.path(forming[0]), bool(ps.jump[forming[0]]))[0][:3]
    assert sets == set(expect) and len(sets) == min(3, len(expect))


# ============================================================================ training
def _config(**kw) -> DqnConfig:
    base = {"episodes": 2, "seed": 2, "switch": 0.5, "battle_plies": 30, "opponents": ("self",), "warmup": 40,
            "batch": 8, "replay": 2000, "train_every": 4, "target_every": 3, "checkpoint_every": 1, "next_top": 2,
            "victim_sets": 1, "blocks": 1, "channels": 4, "hidden": 4}
    return DqnConfig(**{**base, **kw})


@pytest.mark.integration
def test_a_short_run_resumes_exactly_after_an_interruption(tmp_path):
    from nets.io import load

    whole = train(_config(), tmp_path / "whole")

    def interrupt(line: str) -> None:
        if line.startswith("episode 2/"):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(_config(), tmp_path / "cut", progress=interrupt)
    assert not (tmp_path / "cut" / "replay-e000002.npz").exists()  # killed before episode 2's checkpoint
    lines: list[str] = []
    resumed = train(_config(), tmp_path / "cut", progress=lines.append)
    assert lines[0].startswith("resumed at episode 1/2")
    assert (resumed["episodes"], resumed["updates"], resumed["decisions"]) == \
        (whole["episodes"], whole["updates"], whole["decisions"])
    assert whole["updates"] > 0
    a, b = load(tmp_path / "whole" / "dqn.safetensors")[0], load(tmp_path / "cut" / "dqn.safetensors")[0]
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(x, y), name
    rows = [line for line in (tmp_path / "cut" / "metrics.jsonl").read_text().splitlines() if line]
    assert len(rows) == 2  # the episode played before the interruption is not counted twice
    with pytest.raises(Exception, match="--gamma: the run in"):
        train(_config(gamma=0.5), tmp_path / "cut")


def test_bad_options_name_the_field():
    from pydantic import ValidationError

    from train.learning.dqn import config_error

    for kw, text in (({"gamma": 0.0}, "--gamma"), ({"episodes": 0}, "--episodes"), ({"eps_end": 2.0}, "--eps-end"),
                     ({"opponents": ("nosuchagent",)}, "--opponents: unknown agent 'nosuchagent'")):
        with pytest.raises(ValidationError) as info:
            DqnConfig(**kw)
        assert config_error(info.value).startswith(text), config_error(info.value)


def test_the_shipped_model_loads_and_plays():
    import catalog  # noqa: F401  registers dqn
    from knowledge.agents import make_agent
    from nets.io import load

    assert DEFAULT_MODEL.exists() and DEFAULT_MODEL.stat().st_size < 5_000_000
    _, config, extra = load(DEFAULT_MODEL, expected_kind="q")
    assert config.kind == "q" and extra.get("trained_by") == "train-dqn"
    agent = make_agent("dqn", seed=1)
    state = GameState.initial(RULES)
    for _ in range(4):
        state = state.apply(agent.select(state))
    with pytest.raises(FileNotFoundError, match="dqn weights"):
        make_agent("dqn:model=/nonexistent/q.safetensors")
