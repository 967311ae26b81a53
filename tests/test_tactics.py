"""``nets.tactics.tactic_planes`` against a point-by-point reference over the board, and its use in a
net (``NetConfig.tactics``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from core.board import SIZE
from nets.tactics import NUM_TACTIC_PLANES, tactic_planes

OWN, OPP, EMPTY = 1, 2, 0


def _on(r: int, k: int) -> bool:
    return 0 <= r < SIZE and 0 <= k < SIZE


def _cells(r: int, k: int):
    """The cells containing point (r, k), each as its three other corners."""
    for dr in (-1, 1):
        for dk in (-1, 1):
            corners = [(r + dr, k), (r, k + dk), (r + dr, k + dk)]
            if all(_on(a, b) for a, b in corners):
                yield corners


def _reference(board: np.ndarray, own_fly: bool, opp_fly: bool) -> np.ndarray:
    """The module docstring's planes, point by point: ``board`` ``(14, 14)`` of OWN / OPP / EMPTY."""
    out = np.zeros((NUM_TACTIC_PLANES, SIZE, SIZE))
    for r in range(SIZE):
        for k in range(SIZE):
            for side, fly, formed_plane, gate_plane in ((OWN, own_fly, 0, 4), (OPP, opp_fly, 1, 5)):
                if board[r, k] != EMPTY:
                    continue
                complete = [c for c in _cells(r, k) if all(board[a, b] == side for a, b in c)]
                out[gate_plane, r, k] = len(complete) / 4
                if fly:
                    out[formed_plane, r, k] = len(complete) / 4
                    continue
                best = 0
                for o in ((r + 1, k), (r - 1, k), (r, k + 1), (r, k - 1)):
                    if _on(*o) and board[o] == side:
                        best = max(best, sum(o not in c for c in complete))
                out[formed_plane, r, k] = best / 2
            for victim, taker, plane in ((OWN, OPP, 2), (OPP, OWN, 3)):
                if board[r, k] != victim:
                    continue
                for dr, dk in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                    a, b = (r - dr, k - dk), (r + dr, k + dk)
                    if _on(*a) and _on(*b) and board[a] == taker and board[b] == EMPTY:
                        out[plane, r, k] = 1
    return out


def _planes(board: np.ndarray, own_fly: bool, opp_fly: bool) -> torch.Tensor:
    planes = np.zeros((1, 14, SIZE, SIZE), np.float32)
    planes[0, 0], planes[0, 1], planes[0, 2] = board == OWN, board == OPP, board == EMPTY
    planes[0, 5], planes[0, 6] = float(own_fly), float(opp_fly)
    return torch.from_numpy(planes)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(0.05, 0.6), st.booleans(), st.booleans())
def test_tactic_planes_match_the_reference(seed, p_empty, own_fly, opp_fly):
    rng = np.random.default_rng(seed)
    board = rng.choice([EMPTY, OWN, OPP], size=(SIZE, SIZE), p=[p_empty, (1 - p_empty) / 2, (1 - p_empty) / 2])
    got = tactic_planes(_planes(board, own_fly, opp_fly))[0].numpy()
    np.testing.assert_allclose(got, _reference(board, own_fly, opp_fly), atol=1e-6)


def test_a_step_into_a_gate_forms_its_square_and_a_stone_beside_an_empty_point_can_be_jumped():
    """A hand-made case: own stones on three corners of a cell and one beside the fourth (outside the
    cell) make 1 square by a step there; an opponent stone between an own stone and an empty point
    can be jumped; the same pattern after a horizontal flip gives the flipped planes."""
    board = np.zeros((SIZE, SIZE), np.int64) + OPP
    board[5, 5] = EMPTY                        # the gate's missing corner
    board[6, 5] = board[5, 6] = board[6, 6] = OWN
    board[4, 5] = OWN                          # the mover, below the gate
    board[9, 9], board[9, 10], board[9, 11] = OWN, OPP, EMPTY
    planes = tactic_planes(_planes(board, False, False))[0]
    assert float(planes[0, 5, 5]) == 0.5 and float(planes[4, 5, 5]) == 0.25
    assert float(planes[3, 9, 10]) == 1.0 and float(planes[2, 9, 9]) == 0.0
    assert float(planes[0].sum()) == 0.5       # nothing else is formed
    flipped = tactic_planes(torch.flip(_planes(board, False, False), dims=(-1,)))[0]
    torch.testing.assert_close(flipped, torch.flip(planes, dims=(-1,)))


def test_a_tactics_net_loads_and_sees_the_planes(tmp_path):
    """``NetConfig.tactics`` widens the input block by the tactical planes and round-trips through a
    net file; an old net file (no ``tactics`` field) loads without them; too few input planes are
    refused."""
    from nets.config import NetConfig
    from nets.io import load, save
    from nets.model import build

    config = NetConfig(kind="lower", blocks=1, channels=8, value_hidden=8, action_embedding=4, tactics=True)
    net = build(config)
    assert net.trunk[0][0].in_channels == config.in_planes + NUM_TACTIC_PLANES
    save(net, config, tmp_path / "lower.safetensors")
    back, back_config, _ = load(tmp_path / "lower.safetensors")
    assert back_config.tactics and back_config == config
    x = torch.rand(2, 14, SIZE, SIZE).round()
    net.eval()
    back.eval()
    torch.testing.assert_close(net(x, torch.tensor([3, 4])), back(x, torch.tensor([3, 4])))
    plain = NetConfig(kind="lower", blocks=1, channels=8, value_hidden=8, action_embedding=4)
    assert not plain.tactics and build(plain).trunk[0][0].in_channels == plain.in_planes
    with pytest.raises(ValueError, match="in_planes"):
        NetConfig(kind="lower", blocks=1, channels=8, value_hidden=8, action_embedding=4, in_planes=4, tactics=True)


@pytest.mark.parametrize("kind", ["upper", "lower"])
def test_with_tactics_computes_what_the_net_did(kind):
    """``nets.model.with_tactics`` gives the tactical planes zero weight: the widened net's outputs are the
    original's on any input, and a net that has the planes is returned as it is."""
    from nets.config import NetConfig
    from nets.model import build, with_tactics

    torch.manual_seed(5)
    config = NetConfig(kind=kind, blocks=1, channels=8, value_hidden=8, action_embedding=4 if kind == "lower" else 0)
    net = build(config).eval()
    wide = with_tactics(net).eval()
    assert wide.config.tactics and not net.config.tactics
    x = torch.rand(3, 14, SIZE, SIZE).round()
    args = (x, torch.tensor([1, 2, 3])) if kind == "lower" else (x,)
    with torch.no_grad():
        before, after = net(*args), wide(*args)
    if kind == "lower":  # Q; the others give (policy logits, value)
        before, after = (before,), (after,)
    for a, b in zip(before, after, strict=True):
        torch.testing.assert_close(a, b)
    assert with_tactics(wide) is wide
