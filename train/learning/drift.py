"""The drift value target of the value head (:class:`DriftTarget`, ``upper`` nets only; ``pretrain
--value-drift K``, config ``selfplay.value_drift``) replaces the game's result by what the game did next:
for a battle position ``t`` with side ``s`` to move,
``z = tanh((m(t + K) - m(t)) / scale)``, ``m`` the margin of an evaluator with one (``eval.expert:plies=2``
by default: the expert's two-ply value, the battle leaf value of ``jfa``'s search, in its units) for the
side to move and ``scale`` that evaluator's. When the game ends within those ``K`` plies the margin at
its end is infinite: ``z`` is the result for ``s`` (+1 or -1; a draw's margin is 0, so
``z = tanh(-m(t) / scale)``), or with ``ends = "drop"`` there is no target (the last ``K`` plies of a
finished game give no sample: the value then learns only the drift of positions that go on). A record
that stops before ``t + K`` without a result gives no sample for ``t``. A net whose value head learns
it predicts how the leaf value of its search will move over the next ``K`` plies of play, beyond the
evaluator's horizon; the search adds it to that leaf value with ``value_mix < 1``.

With ``mode = "value"`` the target is the evaluator's **value** ``K`` plies later instead of its
change, ``z = tanh(m(t + K) / scale)`` (``K`` even, 0..1,000): ``K = 0`` distils the evaluator's value
of the position itself (``pretrain --value-eval-target 0``: a net whose value stands in for the expert's
two-ply value at a leaf), a larger ``K`` looks further along the game, towards its outcome; within
``K`` plies of the end it is the result (a draw 0), or no target with ``ends = "drop"``.

With ``result_mix = w`` (0..1) either target is blended with the game's result for the side to move,
``z' = w r + (1 - w) z`` (``r`` +1, -1, or 0 for a draw; no target in a game without a result): the
outcome of AlphaZero's target beside the evaluator's dense signal, so that the value head does not have
to learn one bit per game (``selfplay.value_result_mix``). With ``result_stones = S`` (1..98; 0, the
default: nowhere) the target of a battle position where the side with fewer stones has at most ``S``
is the result ``r`` alone (no target in a game without a result): the flight stage, where the expert's
two-ply value predicts the result worse than saying 0 (docs/results.md, "Where the searches lose to
`expert`"; ``selfplay.value_result_stones``). ``result_from = F`` (0..S; 0, the default) narrows that
to the band where the side with fewer has ``F`` to ``S`` stones, leaving the last stones, where the
expert's value is right, to the evaluator (``selfplay.value_result_from``).

It is used by supervised pretraining (``train.learning.supervised``), self-play (``train.learning.selfplay``)
and the training configuration (``train.learning.config``), and depends on none of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, Sequence, get_args

import numpy as np

from core.board import STONES_PER_SIDE
from search.config import preset

DriftEnds = Literal["result", "drop"]  # DriftTarget.ends: the result, or no target, within K plies of the end
DRIFT_ENDS: tuple[str, ...] = get_args(DriftEnds)
DriftMode = Literal["drift", "value"]  # DriftTarget.mode: the margin's change over K plies, or the value K plies on
DRIFT_MODES: tuple[str, ...] = get_args(DriftMode)


@dataclass(frozen=True)
class DriftTarget:
    """The drift value target (module docstring): ``plies`` (``K``, even, 2..1,000); ``evaluator``, a
    spec of an ``evaluator`` plugin with a ``margin`` and a ``scale``, by default the search's battle leaf
    value of the ``shipped`` search (``search.config.preset("shipped").value_evaluator``); ``ends``, the
    target of a position whose game ends within ``K`` plies: ``"result"`` (the result, the default) or
    ``"drop"`` (no target); ``mode``: ``"drift"`` (the margin's change, the default) or ``"value"`` (the
    evaluator's value ``K`` plies on; ``K`` may be 0); ``result_mix``, the weight in 0..1 of the game's
    result blended into the target (0, the default: none); ``result_stones`` (0..98, 0 the default:
    none), the stones of the side with fewer at or below which the target is the result alone, and
    ``result_from`` (0..``result_stones``, 0 the default) the stones at or above which it is.
    :meth:`check` raises ``ValueError`` naming what is wrong."""

    plies: int
    evaluator: str = preset("shipped").value_evaluator
    ends: DriftEnds = "result"
    mode: DriftMode = "drift"
    result_mix: float = 0.0
    result_stones: int = 0
    result_from: int = 0

    def check_plies(self) -> None:
        """Raise ``ValueError`` unless ``plies`` is even and in 2..1,000 (0..1,000 for ``mode = "value"``)
        and ``ends`` and ``mode`` are known (no plugin is built)."""
        if self.mode not in DRIFT_MODES:
            raise ValueError(f"mode must be one of {', '.join(DRIFT_MODES)}, got {self.mode!r}")
        low = 0 if self.mode == "value" else 2
        if not (low <= self.plies <= 1000 and self.plies % 2 == 0):
            raise ValueError(f"plies must be even (the same side to move) and in {low}..1000, got {self.plies}")
        if self.ends not in DRIFT_ENDS:
            raise ValueError(f"ends must be one of {', '.join(DRIFT_ENDS)}, got {self.ends!r}")
        if not 0.0 <= self.result_mix <= 1.0:
            raise ValueError(f"result_mix must be in 0..1, got {self.result_mix!r}")
        if not 0 <= self.result_stones <= STONES_PER_SIDE:
            raise ValueError(f"result_stones must be in 0..{STONES_PER_SIDE}, got {self.result_stones!r}")
        if self.result_from and not 0 < self.result_from <= self.result_stones:
            raise ValueError(f"result_from must be in 0..result_stones ({self.result_stones}), "
                             f"got {self.result_from!r}")

    def check(self, kind: str = "upper") -> None:
        """Raise ``ValueError`` unless the target is usable for a ``kind`` net: an ``upper`` net (the drift
        is a battle value), :meth:`check_plies`, and an evaluator with a margin and a scale."""
        if kind != "upper":
            raise ValueError(f"the drift target is a battle value (--model upper); --model is {kind}")
        self.check_plies()
        plugin = _drift_evaluator(self.evaluator)
        if not (hasattr(plugin, "margin") and hasattr(plugin, "scale")):
            raise ValueError(f"evaluator {self.evaluator!r} has no margin and scale")

    def spec(self) -> str:
        """``MODE:K:EVALUATOR`` (``ends = "result"``) or ``MODE:K:EVALUATOR:ends=drop``, ``MODE`` ``drift`` or
        ``value``, then ``:result_mix=W`` when ``W`` > 0, ``:result_stones=S`` when ``S`` > 0 and
        ``:result_from=F`` when ``F`` > 0: a net's value-target metadata and part of a sample cache key."""
        return (f"{self.mode}:{self.plies}:{self.evaluator}" + ("" if self.ends == "result" else f":ends={self.ends}")
                + (f":result_mix={self.result_mix:g}" if self.result_mix else "")
                + (f":result_stones={self.result_stones}" if self.result_stones else "")
                + (f":result_from={self.result_from}" if self.result_from else ""))


_EVALUATORS: dict[str, Any] = {}  # per process: one evaluator plugin per spec (drift targets)


def _drift_evaluator(spec: str):
    if spec not in _EVALUATORS:
        from knowledge.plugins import REGISTRY
        from knowledge.registry import SpecError

        try:
            _EVALUATORS[spec] = REGISTRY.create(spec, "evaluator")
        except SpecError as exc:
            raise ValueError(f"evaluator: {exc}") from None
    return _EVALUATORS[spec]


def drift_values(states: Sequence, target: DriftTarget) -> np.ndarray:
    """The drift value target of every position of one game, ``states`` from its start to its last
    position (module docstring): ``float32 (len(states),)``, NaN where it is not defined (the layout, the
    final position, a later position of the other side to move, ``t + K`` past the end of a game
    without a result, at or past the end of a finished game with ``ends = "drop"``, or every position
    of a game without a result when ``result_mix`` > 0 or, with ``result_stones``, where the side with
    fewer stones has from ``result_from`` to ``result_stones``). Each needed margin is computed once."""
    from core.board import DRAW, PHASE_BATTLE

    plugin = _drift_evaluator(target.evaluator)
    k = target.plies
    last = len(states) - 1
    final = states[last] if states else None
    ended = final is not None and final.is_terminal()
    margins: dict[int, float] = {}

    def margin(i: int) -> float:
        if i not in margins:
            margins[i] = float(plugin.margin(states[i]))
        return margins[i]

    out = np.full(len(states), np.nan, np.float32)
    mix = float(target.result_mix)
    if mix and not ended:  # a blend with a result the game does not have
        return out
    winner = final.winner() if ended else None
    results = final.returns() if ended else None  # the result for each side: +1, -1, a draw 0
    for t, s in enumerate(states):
        if t == last or s.phase != PHASE_BATTLE or s.is_terminal():
            continue
        fewer = min(int(s.counts[0]), int(s.counts[1]))
        if target.result_stones and target.result_from <= fewer <= target.result_stones:
            if ended:  # the result alone
                out[t] = results[s.side]
            continue
        j = t + k
        if j < last or (j == last and not ended):
            if states[j].side == s.side:
                change = margin(j) - margin(t) if target.mode == "drift" else margin(j)
                out[t] = math.tanh(change / plugin.scale)
        elif ended and target.ends == "result":  # the game ends within K plies: an infinite margin, or 0 for a draw
            if winner == DRAW:
                out[t] = math.tanh(-margin(t) / plugin.scale) if target.mode == "drift" else 0.0
            else:
                out[t] = results[s.side]
        if mix and not math.isnan(out[t]):
            out[t] = mix * results[s.side] + (1.0 - mix) * out[t]
    return out
