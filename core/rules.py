"""The ``Ruleset``: every **[option]** of the rule book (``../shared/jiu-rules.md``) as a validated field.

A ruleset is frozen; kernels receive it packed as ``Ruleset.vector`` (``int64[7]``, indices
``R_*`` below) so that no Python object crosses into a hot loop.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from core.board import STONES_PER_SIDE
from core.errors import JiuError
from core.options import parse_key_values

# Indices into Ruleset.vector.
R_ALLOW_REVISIT = 0
R_FLY_JUMP_RULE = 1
R_LOSS_BELOW = 2
R_REPETITION_DRAW = 3
R_MAX_BATTLE_PLIES = 4
R_ADJUDICATE = 5
R_END_ORDER = 6

FLY_JUMP_RULES = ("strong-side-multi", "all-multi", "none")
MAX_REPETITION_DRAW = 1_000
MAX_BATTLE_PLIES = 100_000
FLY_STRONG_SIDE_MULTI, FLY_ALL_MULTI, FLY_NONE = range(3)


class Ruleset(BaseModel):
    """Rule options (rule book sections 3.2 and 3.4). Defaults are the rule book's.

    Fields:
        chain_revisit: ``"forbid"`` (a jump chain may not land on a point it already occupied during
            the move, origin included) or ``"allow"``.
        fly_jump_rule: ``"strong-side-multi"`` (if the mover has more than 14 stones and the opponent
            at most 14, jump chains need at least 2 hops), ``"all-multi"`` (if either side has at most
            14, chains need at least 2 hops; the JFA engine lineage) or ``"none"``.
        loss_below: a side with fewer stones than this at the start of a battle turn loses
            (``4`` competition rule; ``14`` the JFA lineage). Range 1..98.
        repetition_draw: the n-th occurrence of the same (board, side to move) in the battle is a draw;
            ``0`` turns the rule off. ``1`` is rejected (every position would be drawn). Range 0 or
            2..``MAX_REPETITION_DRAW`` (1,000).
        max_battle_plies: after this many battle plies the game ends. Range 1..``MAX_BATTLE_PLIES``
            (100,000: 100 times the default; kernels size per-game buffers by it).
        adjudicate: at the ply cap, ``"none"`` draws, ``"stones"`` gives the game to the side with more
            stones (equal counts draw).
        end_order: a referee's call the rule book leaves open (a capture on the last capped ply can
            both end the game by stone count and reach the ply cap): ``"decisive-first"`` (default; as
            in chess, a loss by stones or by no move counts before the cap) or ``"cap-first"`` (the
            game ends at the cap whatever else holds).

    Every integer is bounded where it enters (here), so no value outside these ranges reaches a
    kernel. Raises ``JiuError`` (via :meth:`parse`) naming the field and the reason on bad values.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    chain_revisit: Literal["forbid", "allow"] = "forbid"
    fly_jump_rule: Literal["strong-side-multi", "all-multi", "none"] = "strong-side-multi"
    loss_below: int = Field(4, ge=1, le=STONES_PER_SIDE)
    repetition_draw: int = Field(3, ge=0, le=MAX_REPETITION_DRAW)
    max_battle_plies: int = Field(1000, ge=1, le=MAX_BATTLE_PLIES)
    adjudicate: Literal["none", "stones"] = "none"
    end_order: Literal["decisive-first", "cap-first"] = "decisive-first"

    @field_validator("repetition_draw")
    @classmethod
    def _repetition(cls, v: int) -> int:
        if v == 1:
            raise ValueError("must be 0 (off) or at least 2")
        return v

    @classmethod
    def parse(cls, data: dict | None = None, **overrides) -> "Ruleset":
        """Build a ruleset from a mapping (e.g. a JSON record's ``ruleset``), raising ``JiuError``."""
        merged = {**(data or {}), **overrides}
        try:
            return cls(**merged)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(x) for x in err["loc"]) or "ruleset"
            raise JiuError(f"ruleset field {field!r}: {err['msg']}") from None

    def _key(self) -> tuple:
        return tuple(getattr(self, name) for name in type(self).model_fields)

    def __eq__(self, other: object) -> bool:
        # Fields only: pydantic's own comparison would also compare the cached ``vector`` arrays.
        if not isinstance(other, Ruleset):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    @classmethod
    def from_options(cls, items: "list[str] | tuple[str, ...]") -> "Ruleset":
        """A ruleset from ``KEY=VALUE`` strings such as ``["loss_below=14", "fly-jump-rule=none"]``
        (``-`` in a key reads as ``_``; values are parsed and bounded by the fields). Raises
        ``JiuError`` naming the option for a malformed item, a repeated or unknown key, a bad value."""
        data = parse_key_values(items, lambda reason: JiuError(f"rule {reason}"))
        return cls.parse(data)

    def model_copy(self, *, update: "dict[str, Any] | None" = None, deep: bool = False) -> "Ruleset":
        """A copy with ``update``'s fields; the packed :attr:`vector` is recomputed for it (pydantic's copy
        would carry the original's cached one over, and the kernels would play the old rules)."""
        copied = super().model_copy(update=update, deep=deep)
        copied.__dict__.pop("vector", None)
        return copied

    @cached_property
    def vector(self) -> np.ndarray:
        """The options packed for kernels: ``int64[7]`` indexed by the ``R_*`` constants."""
        v = np.array(
            [
                self.chain_revisit == "allow",
                FLY_JUMP_RULES.index(self.fly_jump_rule),
                self.loss_below,
                self.repetition_draw,
                self.max_battle_plies,
                self.adjudicate == "stones",
                self.end_order == "cap-first",
            ],
            np.int64,
        )
        v.setflags(write=False)
        return v

    def describe(self) -> str:
        """Short human-readable summary, e.g. for logs."""
        return ", ".join(f"{k}={v}" for k, v in self.model_dump().items())


DEFAULT_RULESET = Ruleset()
