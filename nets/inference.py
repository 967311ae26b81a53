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

**Precision** (``precision``, ``nets.config.PRECISIONS``): ``"float32"`` (default) runs the net as trained;
``"bfloat16"`` converts a copy of the weights to bfloat16 and casts the input planes to bfloat16 inside
the compiled module (oneDNN's bfloat16 convolutions accumulate in float32), returning float32 outputs,
so callers see the same types either way. On a CPU with native bfloat16 arithmetic (AVX-512 BF16,
AMX) a pass costs about half as much (``python -m lab.bench.inference_precision``); elsewhere it is
emulated and slower. The outputs differ from float32 by bfloat16 rounding (8 significant bits of
mantissa through the trunk; ``tests/test_nets.py`` bounds the difference).
``"auto"`` (:func:`resolve_precision`) picks bfloat16 when the CPU has it natively, else float32.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

from core.board import SIZE
from nets.config import PRECISIONS, Precision
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


def bfloat16_native() -> bool:
    """Whether this CPU runs oneDNN's bfloat16 kernels natively (AVX-512 BF16 or AMX)."""
    try:
        return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # an older or a non-oneDNN build
        return False


def resolve_precision(precision: str) -> str:
    """``"float32"`` or ``"bfloat16"`` for a ``nets.config.PRECISIONS`` value (``"auto"``: bfloat16 when
    :func:`bfloat16_native`). Raises ``ValueError`` for anything else."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if precision == "auto":
        return "bfloat16" if bfloat16_native() else "float32"
    return precision


class _Bfloat16(nn.Module):
    """``net`` with bfloat16 weights behind float32 inputs and outputs (what gets traced)."""

    def __init__(self, net: nn.Module):
        super().__init__()
        self.net = net

    def forward(self, planes: torch.Tensor, *rest: torch.Tensor):
        out = self.net(planes.to(torch.bfloat16), *rest)
        if isinstance(out, tuple):
            return tuple(o.float() for o in out)
        return out.float()


def eager_in_precision(model: nn.Module, precision: Precision = "float32") -> nn.Module:
    """``model`` itself (eval mode) for float32, or an eager bfloat16 copy behind float32 inputs and
    outputs (the uncompiled form of :func:`compile_for_inference`)."""
    import copy

    model.eval()
    if resolve_precision(precision) == "float32":
        return model
    return _Bfloat16(copy.deepcopy(model).to(torch.bfloat16)).eval()


def compile_for_inference(model: nn.Module, precision: Precision = "float32") -> torch.jit.ScriptModule:
    """A frozen, fused TorchScript copy of ``model`` for inference (module docstring), computing in
    ``precision`` (float32 inputs and outputs either way). ``model`` is put in ``eval()`` mode (batch
    norm then uses its running statistics) and otherwise left unchanged (bfloat16 converts a copy).
    Raises ``ValueError`` for an unknown precision and ``RuntimeError`` (from the tracer) for a net
    whose forward pass cannot be traced."""
    runnable = eager_in_precision(model, precision)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with torch.inference_mode():
            traced = torch.jit.trace(runnable, example_inputs(model), check_trace=False)
            return torch.jit.optimize_for_inference(torch.jit.freeze(traced.eval()))
