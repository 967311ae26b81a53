"""Net configurations: one frozen, validated pydantic model per net, and named presets.

``NetConfig`` fields:

- ``kind``: ``"slm"`` (layout policy/value, 196 actions), ``"upper"`` (battle policy/value over the
  48,804 upper actions), ``"lower"`` (the HBM's DQN: one Q per (state after capture, upper action)) or
  ``"q"`` (the ``dqn`` agent's whole-move action value, papers/004 section 2.6: one Q per afterstate,
  ``nets.qnet``; trunk and value-style head, no policy).
- ``blocks``: residual blocks in the trunk (each two 3x3 conv + BN + ReLU blocks, JFA Fig. 3), 1 to
  ``MAX_BLOCKS`` (64).
- ``channels``: trunk width, 1 to ``MAX_CHANNELS`` (512).
- ``value_hidden``: width of the hidden fully connected layer of the value / Q head, 1 to
  ``MAX_VALUE_HIDDEN`` (4096).
- ``policy_head``: ``"conv"`` (1x1 convolutions, one output channel per action type per point,
  see ``nets.model``) or ``"fc"`` (AlphaZero-style: 2-channel 1x1 conv then one fully connected layer
  to every action; 19M weights for the upper net at 2 channels, so only sensible at paper scale).
  The lower net has no policy head and only accepts the default ``"conv"``.
- ``action_embedding``: dimension of the upper-action embedding of the lower net (1 to
  ``MAX_ACTION_EMBEDDING`` (512) for ``lower``; must be 0 for the other kinds).
- ``in_planes``: input feature planes, ``nets.features.NUM_PLANES`` (at most ``MAX_IN_PLANES``, 256).
- ``tactics``: the trunk adds the fixed tactical planes of ``nets.tactics`` (squares a move into a
  point forms, stones a jump can take; computed from the input planes) to its input (default off).

Presets (:func:`preset`):

=========  ======  ========  ========  ============  ==================================================
preset     kind    blocks    channels  value_hidden  other
=========  ======  ========  ========  ============  ==================================================
paper      slm     15        256       256           conv head (the paper's 15 blocks, Fig. 3)
paper      upper   20        256       256           conv head (the paper's 20 blocks)
paper      lower   20        256       256           action_embedding 64 (the paper's 20 blocks, Fig. 4)
tiny       slm     6         64        64            conv head; 485,830 parameters
tiny       upper   6         64        64            conv head; 504,030 parameters
tiny       lower   6         64        64            action_embedding 16; 1,308,613 parameters
tiny       q       2         16        32            the ``dqn`` agent's net (``nets.qnet``); 24,549 parameters
=========  ======  ========  ========  ============  ==================================================

The ``q`` kind has the ``tiny`` preset only (it is evaluated on every legal move of a position, so it is
small on purpose); ``preset("q", "paper")`` raises ``ValueError``.

The paper gives block counts only; 256 channels is the AlphaZero width, our choice. The tiny presets
train and run on two CPU cores (exact parameter counts: ``nets/__init__.py``; throughput:
docs/performance.md).

``ENCODING_VERSION`` is stored in every saved net; bump it whenever the action encodings
(``nets.encoding``) or the feature planes (``nets.features``) change, so stale nets fail to load.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from nets.features import NUM_PLANES

ENCODING_VERSION = 1

Kind = Literal["slm", "upper", "lower", "q"]
# The arithmetic nets run in at inference (``nets.inference``; "auto": bfloat16 where the CPU has it natively).
Precision = Literal["float32", "bfloat16", "auto"]
PRECISIONS: tuple[str, ...] = get_args(Precision)
KINDS: tuple[str, ...] = ("slm", "upper", "lower", "q")
PRESET_NAMES: tuple[str, ...] = ("paper", "tiny")

# Upper bounds of the size fields, well above the ``paper`` preset (20 blocks, 256 channels, 256
# hidden, embedding 64, 14 planes). They bound what a config (a net file's header, ``--set``) can ask
# for: the largest net they allow has about 3 * 10^8 weights (1.2 GB in float32), where an unbounded
# header could ask for terabytes. ``nets.io.load`` also checks a file's tensor shapes before building.
MAX_BLOCKS = 64
MAX_CHANNELS = 512
MAX_VALUE_HIDDEN = 4096
MAX_ACTION_EMBEDDING = 512
MAX_IN_PLANES = 256


class NetConfig(BaseModel):
    """Architecture of one net (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Kind
    blocks: int = Field(ge=1, le=MAX_BLOCKS)
    channels: int = Field(ge=1, le=MAX_CHANNELS)
    value_hidden: int = Field(ge=1, le=MAX_VALUE_HIDDEN)
    policy_head: Literal["conv", "fc"] = "conv"
    action_embedding: int = Field(default=0, ge=0, le=MAX_ACTION_EMBEDDING)
    in_planes: int = Field(default=NUM_PLANES, ge=1, le=MAX_IN_PLANES)
    tactics: bool = False

    @model_validator(mode="after")
    def _check_kind(self) -> "NetConfig":
        if self.tactics and self.in_planes < 7:
            raise ValueError("tactics are computed from input planes 0-6 (nets.features): in_planes must be >= 7")
        if self.kind == "lower":
            if self.action_embedding < 1:
                raise ValueError("a lower net needs action_embedding >= 1")
            if self.policy_head != "conv":
                raise ValueError("a lower net has no policy head; leave policy_head at its default 'conv'")
        elif self.kind == "q" and self.policy_head != "conv":
            raise ValueError("a q net has no policy head; leave policy_head at its default 'conv'")
        elif self.action_embedding != 0:
            raise ValueError(f"action_embedding is for the lower net only (kind={self.kind!r} needs 0)")
        return self


_PRESETS: dict[str, dict[str, NetConfig]] = {
    "paper": {
        "slm": NetConfig(kind="slm", blocks=15, channels=256, value_hidden=256),
        "upper": NetConfig(kind="upper", blocks=20, channels=256, value_hidden=256),
        "lower": NetConfig(kind="lower", blocks=20, channels=256, value_hidden=256, action_embedding=64),
    },
    "tiny": {
        "slm": NetConfig(kind="slm", blocks=6, channels=64, value_hidden=64),
        "upper": NetConfig(kind="upper", blocks=6, channels=64, value_hidden=64),
        "lower": NetConfig(kind="lower", blocks=6, channels=64, value_hidden=64, action_embedding=16),
        "q": NetConfig(kind="q", blocks=2, channels=16, value_hidden=32),
    },
}


def preset(kind: str, name: str = "tiny") -> NetConfig:
    """The ``NetConfig`` of preset ``name`` (``"paper"`` or ``"tiny"``) for ``kind``; ``ValueError``
    for unknown names."""
    if name not in _PRESETS:
        raise ValueError(f"unknown net preset {name!r}; presets: {', '.join(PRESET_NAMES)}")
    if kind not in KINDS:
        raise ValueError(f"unknown net kind {kind!r}; kinds: {', '.join(KINDS)}")
    if kind not in _PRESETS[name]:
        raise ValueError(f"net preset {name!r} has no {kind!r} net; presets with one: "
                         f"{', '.join(n for n, by_kind in _PRESETS.items() if kind in by_kind)}")
    return _PRESETS[name][kind]


def preset_name(config: NetConfig) -> str | None:
    """Name of the preset ``config`` equals, or ``None`` for a custom configuration."""
    for name, by_kind in _PRESETS.items():
        if by_kind.get(config.kind) == config:
            return name
    return None
