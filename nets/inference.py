"""Nets compiled for CPU inference: traced, frozen, fused TorchScript.

:func:`compile_for_inference` turns an eval-mode net of ``nets.model`` into a TorchScript module with
the weights folded in as constants, batch norm folded into the convolutions and oneDNN conv fusions
(``torch.jit.optimize_for_inference``). Why: the eager forward pass dispatches ~60 operators from
Python, and each needs the GIL; the compiled one is a single call that releases the GIL for the whole
pass. Measured on the 2-core machine (tiny nets, 1 intra-op thread, positions/s): upper net at batch 1
324 eager -> 566 compiled, batch 8 798 -> 963; and while another Python thread ran, the eager net fell
to 24 positions/s at batch 8 (GIL hand-offs at every operator), the compiled one kept 440. The search
threads are such Python threads.

The compiled module takes the same inputs and returns the same outputs as the eager net (equal within
float32 rounding, ``tests/test_nets.py``), for any batch size. It is a snapshot: later changes to the
eager net's weights are not seen (a learner hands the evaluator a fresh copy anyway).

TorchScript is deprecated in favour of ``torch.compile``/``torch.export``; ``torch.compile`` needs a C++
toolchain and tens of seconds per net and batch-size family, against ~0.1 s here, and the project pins
torch (``constraints-cpu.txt``), so the deprecation warnings are silenced at this one call site.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

from core.board import SIZE
from nets.encoding import NUM_UPPER_ACTIONS
from nets.features import NUM_PLANES


def example_inputs(model: nn.Module, batch_size: int = 2) -> tuple[torch.Tensor, ...]:
    """Inputs of the right shapes for ``model``: planes ``(B, in_planes, 14, 14) float32`` (binary,
    seeded), plus upper actions ``(B,) int64`` for a lower net."""
    cfg = getattr(model, "config", None)
    gen = torch.Generator().manual_seed(0)
    planes = (torch.rand(batch_size, getattr(cfg, "in_planes", NUM_PLANES), SIZE, SIZE, generator=gen) < 0.5).float()
    if getattr(cfg, "kind", None) == "lower":
        return planes, torch.randint(0, NUM_UPPER_ACTIONS, (batch_size,), generator=gen)
    return (planes,)


def compile_for_inference(model: nn.Module) -> torch.jit.ScriptModule:
    """A frozen, fused TorchScript copy of ``model`` for inference (module docstring). ``model`` is put
    in ``eval()`` mode (batch norm then uses its running statistics) and otherwise left unchanged.
    Raises ``RuntimeError`` (from the tracer) for a net whose forward pass cannot be traced."""
    model.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with torch.inference_mode():
            traced = torch.jit.trace(model, example_inputs(model), check_trace=False)
            return torch.jit.optimize_for_inference(torch.jit.freeze(traced.eval()))
