"""The conformance checks of ``tests/test_plugins.py`` for the lab's agents and plugins, which that
suite does not see (they are registered only here: ``lab/tests/conftest.py``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.board import PHASE_BATTLE
from core.state import GameState
from knowledge import protocols
from knowledge.plugins import REGISTRY
from tests.strategies import battle_boards, layout_positions, played_positions
from tests.test_plugins import SETTINGS, check_evaluator, fixed_battle_states, fixed_layout_states, flip_side

# name -> (kind, a quick spec: the same checks as the defaults, fewer seconds)
LAB = {
    "eval.rollout": ("evaluator", "eval.rollout:battle_plies=4"),
    "rollout": ("agent", "rollout:rollouts=1,battle_plies=2,from_ply=190"),
    "slm_rollout": ("agent", "slm_rollout:rollouts=1,battle_plies=2,from_ply=190"),
}


def test_the_lab_registers_exactly_these():
    lab = {n: e.kind for n, e in REGISTRY._entries.items() if e.factory.__module__.startswith("lab.")}
    assert lab == {n: kind for n, (kind, _) in LAB.items()}


@SETTINGS
@given(text=st.one_of(battle_boards(), played_positions(), layout_positions()))
def test_eval_rollout(text):
    ev = REGISTRY.create(LAB["eval.rollout"][1], "evaluator")
    assert isinstance(ev, protocols.PositionScorer)
    s = GameState.from_jfen(text)
    check_evaluator(ev, s)
    if s.phase == PHASE_BATTLE:
        check_evaluator(ev, flip_side(s))


@pytest.mark.parametrize("name", [n for n, (kind, _) in LAB.items() if kind == "agent"])
def test_agent(name):
    agent = REGISTRY.create(LAB[name][1], "agent", seed=0)
    assert isinstance(agent, protocols.Agent) and agent.name == name
    layouts = fixed_layout_states()
    try:
        for s in [layouts[0], layouts[1], layouts[-1]] + fixed_battle_states():
            move = agent.select(s)
            s.check_move(move)  # raises IllegalMoveError with the reason
            assert isinstance(agent.last_think_time, float) and agent.last_think_time >= 0
    finally:
        close = getattr(agent, "close", None)
        if close is not None:
            close()
