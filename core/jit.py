"""The one place where Numba options are set (stumpy-style).

Every rules kernel is compiled with ``nogil=True`` (so search and self-play threads run kernels in
parallel) and ``cache=True`` (so a fresh process loads machine code instead of recompiling). Set
``NUMBA_DISABLE_JIT=1`` to run the kernels as plain Python for debugging.

Numba checks a cached kernel only against its *own* source file, so a kernel whose callee changed in
another module would load stale machine code. The cache therefore lives in a directory named after a
digest of every module of the packages that hold kernels (``KERNEL_PACKAGES``: rules in ``core``,
knowledge kernels in ``knowledge``, encodings and feature planes in ``nets``, tree kernels in
``search``): any edit of one of them starts a fresh cache. The root is ``$JIU_NUMBA_CACHE``
(default ``~/.cache/jiu-numba``).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numba
from numba import njit

JIT_OPTIONS: dict[str, bool] = {"nogil": True, "cache": True}
# Packages whose modules define kernels (or constants kernels read); their sources key the cache.
KERNEL_PACKAGES = ("core", "knowledge", "nets", "search")
# Modules of those packages that define no kernel and no constant a kernel reads: editing them
# must not throw the cache away. A module is included unless listed here, so a new kernel module is
# covered without any change (leaving a pure module off this list only costs a recompile).
PURE_PYTHON_MODULES = frozenset(
    {
        "core/__init__.py", "core/atomic.py", "core/errors.py", "core/jfen.py", "core/notation.py",
        "core/perft.py", "core/state.py", "core/inputs.py", "core/options.py",
        "core/records/__init__.py",
        "core/records/record.py", "core/records/resolve.py", "core/records/json.py", "core/records/jiu.py",
        "core/records/csv.py", "core/records/files.py",
        "knowledge/__init__.py", "knowledge/agents.py", "knowledge/registry.py", "knowledge/protocols.py",
        "knowledge/expert.py", "knowledge/formation.py", "knowledge/plugins.py",
        "knowledge/evaluation.py", "knowledge/priors.py", "knowledge/pruning.py", "knowledge/rewards.py",
        "nets/__init__.py", "nets/io.py", "nets/losses.py", "nets/inference.py", "nets/evaluator.py",
        "nets/model.py", "search/__init__.py", "search/agents.py", "search/config.py", "search/mcts.py",
    }
)


def _cache_dir() -> str:
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha1()
    for package in KERNEL_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel in PURE_PYTHON_MODULES:
                continue
            digest.update(rel.encode())
            digest.update(path.read_bytes())
    base = Path(os.environ.get("JIU_NUMBA_CACHE", Path.home() / ".cache" / "jiu-numba"))
    return str(base / f"{digest.hexdigest()[:16]}-numba{numba.__version__}")


numba.config.CACHE_DIR = _cache_dir()


def kernel(fn):
    """Compile ``fn`` as a rules kernel with the project's Numba options."""
    return njit(**JIT_OPTIONS)(fn)


def inline_kernel(fn):
    """Like :func:`kernel`, inlined into its callers at the Numba IR level: for tiny helpers called
    per generated path, where a real call would cost array reference counting each time."""
    return njit(inline="always", **JIT_OPTIONS)(fn)
