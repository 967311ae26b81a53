"""Run directories: paths, the typed run state, JSON files and metrics, the directory lock.

Every long job writing into a directory (``selfplay``, ``arena --out``, ``tournament --out``,
``gen-records --out``) holds :func:`lock_dir` on it: an exclusive ``filelock`` on ``DIR/.lock`` plus a
side file ``DIR/.lock.json`` naming the holder (``pid``, ``started``, ``command``). A second job on the
same directory is refused at once with :class:`DirectoryInUse` (``DIR is in use by pid N (started
...)``); the lock is the operating system's, so it is released when its holder dies, even by ``kill -9``.

JSON files are written by :func:`atomic_write_json` over ``core.atomic`` (temporary file, fsync,
rename, directory fsync); non-finite floats become ``null`` and numpy scalars plain numbers
(:func:`json_safe`). ``metrics.jsonl`` rows are appended by :class:`MetricsLog`.

The training run's layout is in ``train.learning.pipeline``'s docstring; :class:`RunPaths` names its files
and :class:`RunState` is ``state.json``. The state's totals (``games``, ``samples``) are derived from what is
on disk (``train.learning.samples.disk_totals``: self-play records and shards), at the start of a session
and after every phase, so that a run killed between a game's files and a state write still counts right.

Nothing here imports the rest of ``train``: run directories are the plumbing the matches and the training
pipeline stand on.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from core.atomic import atomic_write_bytes
from core.errors import JiuError

STATE_FORMAT = "jiu-train-run"
STATE_VERSION = 2
PHASES = ("init", "selfplay", "train", "evaluate")
LOCK_FILE = ".lock"
LOCK_INFO = ".lock.json"


class TrainError(JiuError):
    """A training run that cannot start or go on (bad run directory, dead worker, missing backend)."""


class DirectoryInUse(JiuError):
    """Another live process holds the directory's lock (the message names its pid and start time)."""


# ============================================================================ JSON files
def json_safe(value):
    """``value`` with every non-finite float (``inf``, ``nan``) replaced by ``None`` and numpy
    scalars/arrays turned into Python numbers/lists, recursively (for ``json.dumps(allow_nan=False)``)."""
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def json_text(data: Any, indent: int | None = 1) -> str:
    """``data`` as JSON text (``json_safe``: non-finite floats ``null``, numpy values plain; paths as
    strings), sorted keys, with a final newline when indented."""
    text = json.dumps(json_safe(data), indent=indent, sort_keys=True, ensure_ascii=False, allow_nan=False,
                      default=str)
    return text + "\n" if indent is not None else text


def atomic_write_json(path: str | os.PathLike, data: Any) -> None:
    """``data`` as indented JSON (:func:`json_text`), written atomically (``core.atomic``)."""
    atomic_write_bytes(path, json_text(data).encode("utf-8"))


def atomic_copy(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Copy a file atomically (the destination is replaced whole or not at all)."""
    atomic_write_bytes(dst, Path(src).read_bytes())


class MetricsLog:
    """``metrics.jsonl``: one JSON object per line, each appended with one ``write`` on an ``O_APPEND``
    descriptor and fsync-ed (a kill cannot interleave or half-write lines in practice; readers skip a
    malformed last line)."""

    def __init__(self, path: Path):
        self.path = path  # the directory is made by the first row: a job refused at its start leaves nothing

    def log(self, event: str, **fields: Any) -> dict[str, Any]:
        row = {"event": event, "time": round(time.time(), 3), **fields}
        line = json_text(row, indent=None) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        return row


def read_metrics(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The events of a ``metrics.jsonl`` (malformed lines skipped)."""
    out = []
    p = Path(path)
    if not p.exists():
        return out
    for line in p.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict):
            out.append(row)
    return out


# ============================================================================ the directory lock
class DirLock:
    """An acquired :func:`lock_dir` (release with :meth:`release` or as a context manager)."""

    def __init__(self, directory: Path, lock):
        self.directory, self._lock = directory, lock

    def release(self) -> None:
        if self._lock is not None:
            try:
                (self.directory / LOCK_INFO).unlink(missing_ok=True)
            except OSError:
                pass
            self._lock.release()
            self._lock = None

    def __enter__(self) -> "DirLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def caused_by_interrupt(exc: BaseException | None) -> bool:
    """Whether ``exc`` is a ``KeyboardInterrupt`` (Ctrl-C, or SIGTERM in a run) or was raised with one as
    its direct cause, along the ``__cause__`` chain: an interrupt that arrives inside a C++ extension
    call (PyTorch through pybind11, e.g. tracing a net) comes back as a ``SystemError`` whose cause is
    the ``KeyboardInterrupt``, and a long job must still stop as interrupted. An exception merely
    raised while an interrupt was being handled (``__context__``) is its own error and does not count."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__
    return False


def lock_dir(directory: str | os.PathLike) -> DirLock:
    """Lock ``directory`` (created if missing) for this process (module docstring); raises
    :class:`DirectoryInUse` at once when another process holds it."""
    from filelock import FileLock, Timeout

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(d / LOCK_FILE), timeout=0, thread_local=False)
    try:
        lock.acquire()
    except Timeout:
        holder = "another process"
        try:
            info = json.loads((d / LOCK_INFO).read_text(encoding="utf-8"))
            holder = f"pid {int(info['pid'])} (started {info['started']})"
        except (OSError, ValueError, KeyError, TypeError):
            pass
        raise DirectoryInUse(f"{d} is in use by {holder}; wait for it to finish or use another directory") from None
    info = {"pid": os.getpid(), "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "command": " ".join(sys.argv)[:500]}
    atomic_write_json(d / LOCK_INFO, info)
    return DirLock(d, lock)


# ============================================================================ the training run
@dataclass(frozen=True)
class RunPaths:
    """The files of a training run directory (``train.learning.pipeline`` docstring)."""

    root: Path

    @property
    def config(self) -> Path:
        return self.root / "config.json"

    @property
    def state(self) -> Path:
        return self.root / "state.json"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics.jsonl"

    @property
    def tb(self) -> Path:
        return self.root / "tb"

    @property
    def records(self) -> Path:
        return self.root / "records"

    @property
    def shards_root(self) -> Path:
        return self.root / "shards"

    def shards(self, kind: str) -> Path:
        return self.shards_root / kind

    def checkpoint(self, kind: str, iteration: int) -> Path:
        return self.root / "checkpoints" / f"{kind}-i{iteration:04d}.safetensors"

    def best(self, kind: str) -> Path:
        return self.root / "best" / f"{kind}.safetensors"

    def eval_dir(self, iteration: int, kind: str, what: str) -> Path:
        return self.root / "eval" / f"i{iteration:04d}-{kind}" / what

    def curve_dir(self, iteration: int) -> Path:
        return self.root / "curve" / f"i{iteration:04d}"

    @property
    def curve_root(self) -> Path:
        return self.root / "curve"

    def record(self, iteration: int, index: int) -> Path:
        return self.records / f"i{iteration:04d}" / f"g{index:04d}.json"

    @property
    def pretrain_records(self) -> Path:
        return self.root / "pretrain" / "records"

    def rel(self, p: Path) -> str:
        try:
            return str(Path(p).relative_to(self.root))
        except ValueError:
            return str(p)


class BestNet(BaseModel):
    """The gated best net of a kind: the iteration that made it and its checkpoint (relative path)."""

    model_config = ConfigDict(extra="forbid")
    iteration: int
    checkpoint: str


class RunState(BaseModel):
    """``state.json``: where the run is and what it has (rewritten atomically after every phase).

    ``iteration`` (1-based) and ``phase`` (one of :data:`PHASES`) name the next thing to do; ``kind`` the
    net of that iteration; ``best``/``latest`` per kind; ``games``/``samples`` the self-play totals on
    disk (``train.learning.samples.disk_totals``); ``learner_steps`` per kind; ``elapsed_seconds`` summed
    over sessions; ``sessions`` the invocations so far; ``last_eval``/``last_losses``/``last_curve`` the latest results
    (for the display and ``--json``); ``init_from`` the model directory the run started from (``None``:
    pretraining from records); ``archived_games``/``archived_samples`` the self-play games and samples a
    snapshot dropped from disk (``train.learning.snapshot``), counted in the totals."""

    model_config = ConfigDict(extra="ignore", validate_assignment=True)

    format: Literal["jiu-train-run"] = STATE_FORMAT
    version: int = STATE_VERSION
    iteration: int = 1
    phase: Literal["init", "selfplay", "train", "evaluate"] = "init"
    kind: str = "slm"
    seed: int = 0
    best: dict[str, BestNet] = {}
    latest: dict[str, str] = {}
    completed_iterations: int = 0
    games: int = 0
    samples: int = 0
    learner_steps: dict[str, int] = {}
    elapsed_seconds: float = 0.0
    sessions: int = 0
    last_eval: dict[str, Any] | None = None
    last_losses: dict[str, Any] | None = None
    last_curve: dict[str, Any] | None = None
    init_from: str | None = None
    archived_games: int = 0
    archived_samples: int = 0


def read_state(paths: RunPaths) -> RunState:
    """The :class:`RunState` of a run directory; :class:`TrainError` (one line) if missing or bad."""
    try:
        data = json.loads(paths.state.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TrainError(f"{paths.root}: no state.json; not a training run directory (start a new run)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TrainError(f"{paths.state}: unreadable ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != STATE_FORMAT:
        raise TrainError(f"{paths.state}: not a training state (field 'format')")
    try:
        return RunState.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "state"
        raise TrainError(f"{paths.state}: field {where!r}: {first['msg']}") from None


def write_state(paths: RunPaths, state: RunState) -> None:
    atomic_write_json(paths.state, state.model_dump(mode="json"))


def eval_seed(run_seed: int, iteration: int, what: int) -> int:
    """The base seed (30-bit) of an evaluation match of a run: ``what`` 3 = the gate, 4 = the expert
    games, 5 = the learning curve, 7 = the export gate; from ``SeedSequence([run_seed, iteration, what])``."""
    return int(np.random.SeedSequence([int(run_seed), int(iteration), int(what)]).generate_state(1)[0] % (2**30))


def default_run_dir(base: str | os.PathLike = "runs") -> Path:
    """``runs/selfplay-YYYYmmdd-HHMMSS`` (a suffix is added if it exists)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    p = Path(base) / f"selfplay-{stamp}"
    k = 1
    while p.exists():
        k += 1
        p = Path(base) / f"selfplay-{stamp}-{k}"
    return p
