"""The search signature (as Stockfish's ``bench`` signature): one number that pins search behaviour.

A deterministic search (one thread, fixed seed, no noise, fresh tree per position) runs a fixed
number of simulations on each position of ``bench/data/signature.jfen`` with two evaluators:

- ``uniform``: uniform policy, value 0 (``nets.evaluator.UniformEvaluator``);
- ``tiny-net``: the tiny SLM and upper nets initialised from ``torch.manual_seed(0)``, run eagerly in
  float64 on one torch thread (so the numbers do not depend on oneDNN's choice of kernels).

The root visit counts of each search, listed in the order of the root moves' notation strings,
are folded into a 64-bit FNV-1a hash, printed as a decimal number. Any change in move generation,
pruning, priors, selection, victim choice or backup that changes a single visit count changes the
signature; a refactor that should not change behaviour must leave it alone (``tests/test_signature.py``
pins it). ``python cli.py bench signature`` prints it with the per-evaluator parts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from core.state import GameState

POSITIONS_FILE = Path(__file__).with_name("data") / "signature.jfen"
SIMULATIONS = 128
_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK = (1 << 64) - 1


def positions() -> list[GameState]:
    """The fixed positions (JFEN lines of :data:`POSITIONS_FILE`; ``#`` starts a comment)."""
    out = []
    for line in POSITIONS_FILE.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(GameState.from_jfen(line))
    return out


def fold(h: int, values: Sequence[int]) -> int:
    """FNV-1a over the decimal digits of ``values`` (comma separated) starting from ``h``."""
    for byte in (",".join(str(int(v)) for v in values) + ";").encode():
        h = ((h ^ byte) * _FNV_PRIME) & _MASK
    return h


class _Float64NetEvaluator:
    """The tiny nets run eagerly in float64 (deterministic across CPUs); evaluator protocol."""

    name = "tiny-net"

    def __init__(self):
        import torch

        from nets.config import preset
        from nets.model import build

        torch.set_num_threads(1)
        torch.manual_seed(0)
        self._nets = [build(preset("slm", "tiny")).double().eval(), build(preset("upper", "tiny")).double().eval()]

    def evaluate(self, states):
        import torch

        from nets.evaluator import Evaluation
        from nets.features import batch_planes

        out = []
        for s in states:
            x = torch.from_numpy(batch_planes([s]).astype(np.float64))
            with torch.no_grad():
                logits, value = self._nets[s.phase](x)
            policy = torch.softmax(logits[0], dim=0).numpy().astype(np.float32)
            out.append(Evaluation(policy, float(value[0])))
        return out


def evaluators() -> dict:
    from nets.evaluator import UniformEvaluator

    return {"uniform": UniformEvaluator(), "tiny-net": _Float64NetEvaluator()}


def search_signature(simulations: int = SIMULATIONS) -> dict:
    """``{"signature": int, "parts": {evaluator: int}, "positions": n, "simulations": s}``."""
    from search.mcts import Search, SearchConfig

    config = SearchConfig(simulations=simulations, threads=1, seed=0, reuse_tree=False)
    states = positions()
    total = _FNV_OFFSET
    parts = {}
    for name, evaluator in evaluators().items():
        h = _FNV_OFFSET
        with Search(evaluator, config) as search:
            for state in states:
                result = search.run(state)
                order = sorted(range(len(result.moves)), key=lambda i: str(result.moves[i]))
                h = fold(h, [int(result.visits[i]) for i in order])
        parts[name] = h
        total = fold(total, [h])
    return {"signature": total, "parts": parts, "positions": len(states), "simulations": simulations}


def main() -> None:  # pragma: no cover - command line
    import json

    print(json.dumps(search_signature()))


if __name__ == "__main__":  # pragma: no cover
    main()
