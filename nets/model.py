"""The JFA nets in PyTorch: SLM (layout), HBM upper (battle paths) and HBM lower (square victims).

All three share the trunk of JFA Fig. 3: a convolutional block (3x3 conv + batch norm + ReLU) on the
``(B, NUM_PLANES, 14, 14)`` feature planes of ``nets.features``, then ``blocks`` residual blocks of two
such blocks each (the second block's ReLU comes after the skip addition, as in AlphaZero).

Heads
-----
**Value** (SLM, upper): 1x1 conv block to 2 channels, flattened (392) and concatenated with the global
average of the trunk (``channels``), a fully connected layer of ``value_hidden`` + ReLU, one output,
``tanh``: the value in [-1, 1] for the side to move.

**SLM policy**, ``policy_head="conv"``: a 1x1 conv block (``channels``), then a 1x1 conv to one logit per
point; the logit at plane position ``(r, k)`` is layout action ``r * 14 + k`` (the point index).
``"fc"``: 1x1 conv block to 2 channels, then a fully connected layer to 196 logits.

**Upper policy**, ``policy_head="conv"``: a 1x1 conv block (``channels``), then a 1x1 conv to
``UPPER_CHANNELS = 4 + 49 + 196 = 249`` logits per point ``o``, read in the rule book's order
(section 8, ``nets.encoding``): channel ``d < 4`` at ``o`` is the step ``4*o + d``; channel ``4 + j``
(``j < 49``) is the jump ``784 + 49*o + j``; channel ``53 + e`` is the flight ``10388 + 196*o + e``
(see :func:`flatten_upper`). A 1x1 conv alone makes every flight logit a linear function of the features
at its *origin*; a flight's worth depends just as much on its destination, so the flight block also gets
a bilinear term ``<q(o), k(e)> / sqrt(FLIGHT_KEY_DIM)`` with ``q``, ``k`` two 1x1 convs of the head's
features (``FLIGHT_KEY_DIM = 16`` channels each). ``"fc"``: 1x1 conv block to 2 channels and one fully
connected layer to all 48,804 logits (19M weights: paper scale only).

**Training** needs a position's logits only at its listed actions (the loss's softmax is restricted to
them, ``nets.losses.policy_value_terms``): ``forward_listed(planes, actions (B, L))`` returns those
``(B, L)`` logits and the value, and the conv upper head computes just them (each action's channel
weights at its origin, plus a flight's bilinear term), not the 48,804 of each position.

**Lower (DQN, JFA Fig. 4)**: two inputs, the planes of the state *after* the candidate capture and the
upper action index (0..48,803). The board goes through the trunk; the action through an
``nn.Embedding(48804, action_embedding)``; the embedding is broadcast over the 14 x 14 board as
``action_embedding`` extra channels and concatenated with the trunk's output (so every point sees the
action), then one 3x3 conv block back to ``channels`` and the value-style head (1x1 conv block, flatten +
global average, fully connected ``value_hidden`` + ReLU, one output) with ``tanh``: one Q in [-1, 1] per
(state after capture, upper action) pair, for the player who made the capture (the state's side to
move is then the *opponent*; the net learns that from the planes, the targets are the capturer's).

:func:`build` makes a net from a ``NetConfig``; every net keeps it as ``net.config``.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from core.board import NUM_POINTS, SIZE
from nets.encoding import (
    FLIGHT_BASE,
    JUMP_BASE,
    JUMP_PER_ORIGIN,
    NUM_LAYOUT_ACTIONS,
    NUM_UPPER_ACTIONS,
)
from nets.config import NetConfig
from nets.tactics import NUM_TACTIC_PLANES, tactic_planes

STEP_CHANNELS = 4
JUMP_CHANNELS = JUMP_PER_ORIGIN  # 49
FLIGHT_CHANNELS = NUM_POINTS  # 196
UPPER_CHANNELS = STEP_CHANNELS + JUMP_CHANNELS + FLIGHT_CHANNELS  # 249
FLIGHT_KEY_DIM = 16

assert STEP_CHANNELS * NUM_POINTS == JUMP_BASE
assert JUMP_BASE + JUMP_CHANNELS * NUM_POINTS == FLIGHT_BASE
assert FLIGHT_BASE + FLIGHT_CHANNELS * NUM_POINTS == NUM_UPPER_ACTIONS


def flatten_upper(per_point: torch.Tensor) -> torch.Tensor:
    """``(B, 249, 14, 14)`` per-point logits -> ``(B, 48804)`` upper-action logits in the rule book's
    order: channel ``d`` at point ``o`` -> ``4*o + d``; channel ``4 + j`` -> ``784 + 49*o + j``;
    channel ``53 + e`` -> ``10388 + 196*o + e`` (point ``o = r * 14 + k`` at plane position ``(r, k)``)."""
    b = per_point.shape[0]
    pp = per_point.reshape(b, UPPER_CHANNELS, NUM_POINTS).transpose(1, 2)  # (B, o, channel)
    steps = pp[:, :, :STEP_CHANNELS].reshape(b, -1)
    jumps = pp[:, :, STEP_CHANNELS : STEP_CHANNELS + JUMP_CHANNELS].reshape(b, -1)
    flights = pp[:, :, STEP_CHANNELS + JUMP_CHANNELS :].reshape(b, -1)
    return torch.cat((steps, jumps, flights), dim=1)


class ConvBlock(nn.Sequential):
    """Conv (no bias) + batch norm + ReLU (JFA Fig. 3's convolutional block)."""

    def __init__(self, cin: int, cout: int, kernel: int = 3):
        super().__init__(
            nn.Conv2d(cin, cout, kernel, padding=kernel // 2, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(inplace=True),
        )


class ResBlock(nn.Module):
    """Two convolutional blocks with a skip connection; ReLU after the addition."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = ConvBlock(channels, channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(x + self.bn2(self.conv2(self.conv1(x))), inplace=True)


class Trunk(nn.Sequential):
    """Input convolutional block then ``blocks`` residual blocks: ``(B, in_planes, 14, 14)`` ->
    ``(B, channels, 14, 14)``. With ``tactics`` the input block also sees the
    ``nets.tactics.NUM_TACTIC_PLANES`` planes :func:`nets.tactics.tactic_planes` computes from the input."""

    def __init__(self, in_planes: int, channels: int, blocks: int, tactics: bool = False):
        extra = NUM_TACTIC_PLANES if tactics else 0
        super().__init__(ConvBlock(in_planes + extra, channels), *(ResBlock(channels) for _ in range(blocks)))
        self.tactics = tactics

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.tactics:
            x = torch.cat((x, tactic_planes(x)), dim=1)
        return super().forward(x)


class ValueHead(nn.Module):
    """1x1 conv block to 2 channels, flatten + global average of the input, FC + ReLU, FC -> tanh."""

    def __init__(self, channels: int, hidden: int):
        super().__init__()
        self.conv = ConvBlock(channels, 2, kernel=1)
        self.fc1 = nn.Linear(2 * NUM_POINTS + channels, hidden)
        self.fc2 = nn.Linear(hidden, 1)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        x = torch.cat((self.conv(h).flatten(1), h.mean(dim=(2, 3))), dim=1)
        return torch.tanh(self.fc2(F.relu(self.fc1(x), inplace=True))).squeeze(1)


class PolicyHead(nn.Module):
    """A policy head: ``forward(h (B, channels, 14, 14)) -> logits (B, A)``."""

    def listed(self, h: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """The logits at ``actions`` ``int64 (B, L)`` (indices in ``0..A-1``): ``(B, L)``, equal to
        ``self(h).gather(1, actions)`` (the training loss's softmax over each sample's listed actions)."""
        return self(h).gather(1, actions)


class FCPolicyHead(PolicyHead):
    """AlphaZero policy head: 1x1 conv block to 2 channels, then one fully connected layer."""

    def __init__(self, channels: int, actions: int):
        super().__init__()
        self.conv = ConvBlock(channels, 2, kernel=1)
        self.fc = nn.Linear(2 * NUM_POINTS, actions)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.fc(self.conv(h).flatten(1))


class SLMConvPolicyHead(PolicyHead):
    """1x1 conv block, then a 1x1 conv to one logit per point (= layout action)."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv = ConvBlock(channels, channels, kernel=1)
        self.out = nn.Conv2d(channels, 1, 1)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.out(self.conv(h)).flatten(1)


class UpperConvPolicyHead(PolicyHead):
    """1x1 conv block, 1x1 conv to 249 logits per point plus a bilinear origin/destination term on the
    flight channels; flattened by :func:`flatten_upper` (module docstring)."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv = ConvBlock(channels, channels, kernel=1)
        self.out = nn.Conv2d(channels, UPPER_CHANNELS, 1)
        self.query = nn.Conv2d(channels, FLIGHT_KEY_DIM, 1)
        self.key = nn.Conv2d(channels, FLIGHT_KEY_DIM, 1)

    def per_point(self, h: torch.Tensor) -> torch.Tensor:
        """The ``(B, 249, 14, 14)`` per-point logits before flattening."""
        f = self.conv(h)
        out = self.out(f)
        b = h.shape[0]
        q = self.query(f).reshape(b, FLIGHT_KEY_DIM, NUM_POINTS)
        k = self.key(f).reshape(b, FLIGHT_KEY_DIM, NUM_POINTS)
        # bilinear[b, e, o] = <q(o), k(e)>: channel 53 + e at point o
        bilinear = torch.einsum("bdo,bde->beo", q, k) / math.sqrt(FLIGHT_KEY_DIM)
        flights = out[:, STEP_CHANNELS + JUMP_CHANNELS :] + bilinear.reshape(b, FLIGHT_CHANNELS, SIZE, SIZE)
        return torch.cat((out[:, : STEP_CHANNELS + JUMP_CHANNELS], flights), dim=1)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return flatten_upper(self.per_point(h))

    def listed(self, h: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """:meth:`PolicyHead.listed` computing only the listed logits: each action's channel weights
        dotted with the head's features at its origin, plus its bias and, for a flight, the bilinear
        term with its destination (the index map of :func:`flatten_upper`), so the other 48,804 - L
        logits of each position cost nothing. Raises ``ValueError`` for an index outside ``0..48803``
        (a negative one would otherwise wrap around silently)."""
        a = actions
        if a.numel() and (int(a.min()) < 0 or int(a.max()) >= NUM_UPPER_ACTIONS):
            raise ValueError(f"listed: upper actions must be in 0..{NUM_UPPER_ACTIONS - 1}, "
                             f"got {int(a.min())}..{int(a.max())}")
        f = self.conv(h)
        b, c = f.shape[:2]
        step = a < JUMP_BASE
        flight = a >= FLIGHT_BASE
        jump = a - JUMP_BASE
        fl = a - FLIGHT_BASE
        origin = torch.where(step, a // STEP_CHANNELS,
                             torch.where(flight, fl // FLIGHT_CHANNELS, jump // JUMP_CHANNELS))
        dest = torch.where(flight, fl % FLIGHT_CHANNELS, torch.zeros_like(a))
        channel = torch.where(step, a % STEP_CHANNELS,
                              torch.where(flight, STEP_CHANNELS + JUMP_CHANNELS + dest,
                                          STEP_CHANNELS + jump % JUMP_CHANNELS))
        rows = torch.arange(b, device=a.device)[:, None].expand_as(a)
        feat = f.reshape(b, c, NUM_POINTS).transpose(1, 2)  # (B, o, c)
        weight = self.out.weight.reshape(UPPER_CHANNELS, c)
        logits = (feat[rows, origin] * weight[channel]).sum(-1) + self.out.bias[channel]
        q = self.query(f).reshape(b, FLIGHT_KEY_DIM, NUM_POINTS).transpose(1, 2)  # (B, o, D)
        k = self.key(f).reshape(b, FLIGHT_KEY_DIM, NUM_POINTS).transpose(1, 2)
        bilinear = (q[rows, origin] * k[rows, dest]).sum(-1) / math.sqrt(FLIGHT_KEY_DIM)
        return logits + torch.where(flight, bilinear, torch.zeros_like(bilinear))


class PolicyValueNet(nn.Module):
    """Trunk + policy head + value head: ``forward(planes) -> (logits (B, A), value (B,))``."""

    num_actions: int

    def __init__(self, config: NetConfig, policy: nn.Module):
        super().__init__()
        self.config = config
        self.trunk = Trunk(config.in_planes, config.channels, config.blocks, config.tactics)
        self.policy = policy
        self.value = ValueHead(config.channels, config.value_hidden)

    def forward(self, planes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.trunk(planes)
        return self.policy(h), self.value(h)

    def forward_listed(self, planes: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(logits (B, L), value (B,))``: :meth:`forward` with the logits at ``actions`` ``int64 (B, L)``
        only (:meth:`PolicyHead.listed`)."""
        h = self.trunk(planes)
        return self.policy.listed(h, actions), self.value(h)


class SLMNet(PolicyValueNet):
    """The layout net (JFA Fig. 3): policy logits ``(B, 196)``, value ``(B,)`` in [-1, 1]."""

    num_actions = NUM_LAYOUT_ACTIONS

    def __init__(self, config: NetConfig):
        if config.kind != "slm":
            raise ValueError(f"SLMNet needs a kind='slm' config, got {config.kind!r}")
        c = config.channels
        head = SLMConvPolicyHead(c) if config.policy_head == "conv" else FCPolicyHead(c, NUM_LAYOUT_ACTIONS)
        super().__init__(config, head)


class UpperNet(PolicyValueNet):
    """The HBM upper net: policy logits ``(B, 48804)`` (rule book section 8), value ``(B,)``."""

    num_actions = NUM_UPPER_ACTIONS

    def __init__(self, config: NetConfig):
        if config.kind != "upper":
            raise ValueError(f"UpperNet needs a kind='upper' config, got {config.kind!r}")
        c = config.channels
        head = UpperConvPolicyHead(c) if config.policy_head == "conv" else FCPolicyHead(c, NUM_UPPER_ACTIONS)
        super().__init__(config, head)


class LowerNet(nn.Module):
    """The HBM lower net (JFA Fig. 4): ``forward(planes_after, upper_action) -> q (B,)`` in [-1, 1].

    ``planes_after`` ``(B, in_planes, 14, 14)``: the state after the candidate capture;
    ``upper_action`` ``int64 (B,)``: the upper action (0..48,803) of the move's path."""

    def __init__(self, config: NetConfig):
        super().__init__()
        if config.kind != "lower":
            raise ValueError(f"LowerNet needs a kind='lower' config, got {config.kind!r}")
        self.config = config
        c, e = config.channels, config.action_embedding
        self.trunk = Trunk(config.in_planes, c, config.blocks, config.tactics)
        self.embedding = nn.Embedding(NUM_UPPER_ACTIONS, e)
        self.merge = ConvBlock(c + e, c)
        self.q = ValueHead(c, config.value_hidden)

    def forward(self, planes: torch.Tensor, upper_action: torch.Tensor) -> torch.Tensor:
        h = self.trunk(planes)
        emb = self.embedding(upper_action)  # (B, E)
        emb = emb[:, :, None, None].expand(-1, -1, SIZE, SIZE)
        return self.q(self.merge(torch.cat((h, emb), dim=1)))


class QNet(nn.Module):
    """The ``dqn`` agent's action-value net (papers/004 section 2.6, as an afterstate value):
    ``forward(planes_after) -> q (B,)`` in [-1, 1], the trunk and a value head.

    ``planes_after`` ``(B, in_planes, 14, 14)``: the position after a candidate move, encoded from the
    *mover's* view (``nets.qnet.afterstate_planes``), so one pass scores every legal move of a position."""

    def __init__(self, config: NetConfig):
        super().__init__()
        if config.kind != "q":
            raise ValueError(f"QNet needs a kind='q' config, got {config.kind!r}")
        self.config = config
        self.trunk = Trunk(config.in_planes, config.channels, config.blocks, config.tactics)
        self.q = ValueHead(config.channels, config.value_hidden)

    def forward(self, planes: torch.Tensor) -> torch.Tensor:
        return self.q(self.trunk(planes))


_CLASSES = {"slm": SLMNet, "upper": UpperNet, "lower": LowerNet, "q": QNet}


def build(config: NetConfig) -> nn.Module:
    """A freshly initialised net of ``config`` (``SLMNet``, ``UpperNet``, ``LowerNet`` or ``QNet``)."""
    return _CLASSES[config.kind](config)


def with_tactics(model: nn.Module) -> nn.Module:
    """A copy of ``model`` (any kind) whose config has ``tactics = True`` (``nets.tactics``), with the same
    weights and zero weight on the tactical planes in the input block: it computes what ``model`` does
    until training gives the planes weight. ``model`` itself if it has them already."""
    config = model.config
    if config.tactics:
        return model
    wide = build(config.model_copy(update={"tactics": True}))
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    key = "trunk.0.0.weight"
    w = state[key]
    state[key] = torch.cat((w, w.new_zeros(w.shape[0], NUM_TACTIC_PLANES, *w.shape[2:])), dim=1)
    wide.load_state_dict(state)
    return wide.to(next(model.parameters()).dtype)


def count_parameters(model: nn.Module, trainable_only: bool = False) -> int:
    """Number of parameters of ``model`` (all, or only those with ``requires_grad``)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)
