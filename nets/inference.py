"""Nets compiled for inference: traced, frozen, fused TorchScript (on the CPU by default; devices below).

:func:`compile_for_inference` turns an eval-mode net of ``nets.model`` into a TorchScript module with
the weights folded in as constants, batch norm folded into the convolutions and oneDNN conv fusions
(``torch.jit.optimize_for_inference``). Why: the eager forward pass dispatches ~60 operators from
Python, and each needs the GIL; the compiled one is a single call that releases the GIL for the whole
pass, so it is faster and keeps its speed while other Python threads (the search threads) run
(docs/performance.md, "The nets: compiled, threads and batches").

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

**Devices** (``device``, :data:`DEVICE_CHOICES`, :func:`resolve_device`): ``"cpu"``, ``"cuda"``, ``"cuda:N"``
or ``"auto"`` (CUDA when ``torch.cuda.is_available()``, else the CPU). On CUDA the nets are traced and
frozen on the device (``torch.jit.freeze``; the oneDNN passes of ``optimize_for_inference`` are for the
CPU), input tensors go through pinned host memory (:func:`to_device`), and ``"auto"`` precision means
half-precision weights and activations: bfloat16 where ``torch.cuda.is_bf16_supported()``, else
float16 (:func:`resolve_precision` with a device). On the CPU everything is as described above; the
CPU path is the one the tests run (the CUDA path is written but not run on the development machine).
"""

from __future__ import annotations

import re
import threading
import warnings

import torch
from torch import nn

from core.board import SIZE
from nets.config import PRECISIONS, Precision
from nets.encoding import NUM_UPPER_ACTIONS
from nets.features import NUM_PLANES


DEVICE_CHOICES: tuple[str, ...] = ("auto", "cpu", "cuda", "cuda:N")  # the accepted spellings, for messages
_CUDA_INDEX = re.compile(r"cuda:(\d+)")
# ``warnings.catch_warnings`` swaps one process-wide filter list: two compiles in two threads could each
# restore the other's list mid-trace and let the warnings through, so compiles take turns.
_COMPILE_LOCK = threading.Lock()


def resolve_device(spec: str | torch.device) -> torch.device:
    """The ``torch.device`` of a device spec (:data:`DEVICE_CHOICES`): ``"auto"`` -> ``cuda`` when
    ``torch.cuda.is_available()`` else ``cpu``; ``"cpu"``; ``"cuda"`` or ``"cuda:N"`` -> that CUDA device.
    A ``torch.device`` of type ``cpu`` or ``cuda`` is checked the same way. Raises ``ValueError`` whose
    message starts with ``device:``, for a spec that is not one of these (``device: 'tpu' is not one of
    auto, cpu, cuda, cuda:N``) or a CUDA device this machine does not have (``device: 'cuda:1' is not
    available (this machine has 0 CUDA devices)``)."""
    if isinstance(spec, torch.device):
        spec = str(spec)
    if not isinstance(spec, str):
        # ValueError (not TypeError): the one error of a bad device, which pydantic reports as the field's
        raise ValueError(f"device: expected a string such as 'cpu' or 'cuda:0', got {type(spec).__name__}")  # noqa: TRY004
    text = spec.strip().lower()
    if text == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if text == "cpu":
        return torch.device("cpu")
    match = _CUDA_INDEX.fullmatch(text)
    if text != "cuda" and match is None:
        raise ValueError(f"device: {spec!r} is not one of {', '.join(DEVICE_CHOICES)}")
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    index = int(match.group(1)) if match is not None else 0
    if index >= count:
        plural = "device" if count == 1 else "devices"
        raise ValueError(f"device: {spec!r} is not available (this machine has {count} CUDA {plural})")
    return torch.device("cuda", index) if match is not None else torch.device("cuda")


def check_device(spec: str) -> str:
    """``spec`` unchanged if :func:`resolve_device` accepts it, for a pydantic ``field_validator``; raises
    its ``ValueError`` without the ``device:`` prefix (the config error names the field itself)."""
    try:
        resolve_device(spec)
    except ValueError as exc:
        raise ValueError(str(exc).removeprefix("device: ")) from None
    return spec


def to_device(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``tensor`` (on the CPU) on ``device``: itself for the CPU; for CUDA copied through pinned host
    memory with ``non_blocking=True`` (the copy overlaps the caller's work; reading the result on the
    host, e.g. ``.cpu()``, waits for it). Shape and dtype are kept."""
    if device.type == "cpu":
        return tensor
    return tensor.pin_memory().to(device, non_blocking=True)


def example_inputs(model: nn.Module, batch_size: int = 2, device: torch.device | str = "cpu") -> tuple[torch.Tensor, ...]:
    """Inputs of the right shapes for ``model``: planes ``(B, in_planes, 14, 14) float32`` (binary,
    seeded), plus upper actions ``(B,) int64`` for a lower net; made on the CPU (the same values for
    every device), then moved to ``device``."""
    cfg = getattr(model, "config", None)
    gen = torch.Generator().manual_seed(0)
    planes = (torch.rand(batch_size, getattr(cfg, "in_planes", NUM_PLANES), SIZE, SIZE, generator=gen) < 0.5).float()
    if getattr(cfg, "kind", None) == "lower":
        out = planes, torch.randint(0, NUM_UPPER_ACTIONS, (batch_size,), generator=gen)
    else:
        out = (planes,)
    device = torch.device(device)
    return out if device.type == "cpu" else tuple(t.to(device) for t in out)


def bfloat16_native() -> bool:
    """Whether this CPU runs oneDNN's bfloat16 kernels natively (AVX-512 BF16 or AMX)."""
    try:
        return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # an older or a non-oneDNN build
        return False


def resolve_precision(precision: str, device: torch.device | str | None = None) -> str:
    """The precision a ``nets.config.PRECISIONS`` value means on ``device`` (default the CPU):
    ``"float32"`` or ``"bfloat16"`` as given; ``"auto"`` on the CPU: bfloat16 when
    :func:`bfloat16_native`, else float32; ``"auto"`` on CUDA: bfloat16 when
    ``torch.cuda.is_bf16_supported()``, else ``"float16"`` (the only way to get float16). Raises
    ``ValueError`` for anything else."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if precision == "auto":
        if device is not None and torch.device(device).type == "cuda":
            return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
        return "bfloat16" if bfloat16_native() else "float32"
    return precision


LOW_PRECISION_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}  # resolved precision -> dtype


class _LowPrecision(nn.Module):
    """``net`` with ``dtype`` (bfloat16 or float16) weights behind float32 inputs and outputs (what
    gets traced)."""

    def __init__(self, net: nn.Module, dtype: torch.dtype = torch.bfloat16):
        super().__init__()
        self.net = net
        self.dtype = dtype

    def forward(self, planes: torch.Tensor, *rest: torch.Tensor):
        out = self.net(planes.to(self.dtype), *rest)
        if isinstance(out, tuple):
            return tuple(o.float() for o in out)
        return out.float()


def eager_in_precision(model: nn.Module, precision: Precision = "float32",
                       device: torch.device | str = "cpu") -> nn.Module:
    """``model`` itself (eval mode) for float32 on the CPU, else an eager copy on ``device``, in the
    precision ``resolve_precision(precision, device)`` names, behind float32 inputs and outputs (the
    uncompiled form of :func:`compile_for_inference`). ``model`` is put in ``eval()`` mode and
    otherwise left unchanged (it stays where it is). Raises ``ValueError`` for an unknown precision."""
    import copy

    device = torch.device(device)
    model.eval()
    resolved = resolve_precision(precision, device)
    if resolved == "float32":
        return model if device.type == "cpu" else copy.deepcopy(model).to(device).eval()
    dtype = LOW_PRECISION_DTYPES[resolved]
    return _LowPrecision(copy.deepcopy(model).to(device=device, dtype=dtype), dtype).eval()


def compile_for_inference(model: nn.Module, precision: Precision = "float32",
                          device: torch.device | str = "cpu") -> torch.jit.ScriptModule:
    """A frozen, fused TorchScript copy of ``model`` for inference on ``device`` (module docstring),
    computing in ``precision`` (float32 inputs and outputs either way; the inputs must be on
    ``device``). Traced on ``device``. ``model`` is put in ``eval()`` mode (batch norm then uses its
    running statistics) and otherwise left unchanged (other precisions and devices convert a copy).
    Raises ``ValueError`` for an unknown precision and ``RuntimeError`` (from the tracer) for a net
    whose forward pass cannot be traced."""
    device = torch.device(device)
    runnable = eager_in_precision(model, precision, device)
    with _COMPILE_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        # newer torch deprecates TorchScript by FutureWarning; this module chooses it (module docstring)
        warnings.filterwarnings("ignore", message=r"`torch\.jit\.", category=FutureWarning)
        with torch.inference_mode():
            traced = torch.jit.trace(runnable, example_inputs(model, device=device), check_trace=False)
            frozen = torch.jit.freeze(traced.eval())
            return torch.jit.optimize_for_inference(frozen) if device.type == "cpu" else frozen
