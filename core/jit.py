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

A damaged cache (an index file cut short by a full disk or a kill, which Numba would answer with an
``UnpicklingError`` traceback on every command) is repaired at import: :func:`repair_cache` removes the
index files that do not read back, the kernels they named are compiled again, and one line on stderr
says so.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
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
        "search/dqn.py",
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


def _index_reads(path: Path) -> bool:
    """Whether a Numba index file reads back as Numba reads it (a pickled version, then a pickled
    ``(stamp, overloads)`` pair)."""
    try:
        with open(path, "rb") as f:
            pickle.load(f)
            stamp, _ = pickle.loads(f.read())
    except FileNotFoundError:
        return True  # removed meanwhile (another process repairing it): nothing to do
    except Exception:  # noqa: BLE001 - any failure to read back is damage: UnpicklingError, EOFError, ...
        return False
    return True


def repair_cache(directory: str | os.PathLike) -> int:
    """Remove the Numba index files (``*.nbi``) under ``directory`` that do not read back (their kernels
    are compiled again and the index rewritten); the number removed. Data files (``*.nbc``) are left:
    Numba overwrites them."""
    removed = 0
    root = Path(directory)
    if not root.is_dir():
        return 0
    for index in root.rglob("*.nbi"):
        if not _index_reads(index):
            try:
                index.unlink()
                removed += 1
            except FileNotFoundError:
                pass
    return removed


numba.config.CACHE_DIR = _cache_dir()
try:
    _removed = repair_cache(numba.config.CACHE_DIR)
except OSError:  # an unreadable cache directory: Numba reports it itself
    _removed = 0
if _removed:
    print(f"warning: Numba cache {numba.config.CACHE_DIR}: removed {_removed} damaged index file(s); the kernels"
          " they named are compiled again", file=sys.stderr)


def kernel(fn):
    """Compile ``fn`` as a rules kernel with the project's Numba options."""
    return njit(**JIT_OPTIONS)(fn)


def inline_kernel(fn):
    """Like :func:`kernel`, inlined into its callers at the Numba IR level: for tiny helpers called
    per generated path, where a real call would cost array reference counting each time."""
    return njit(inline="always", **JIT_OPTIONS)(fn)
