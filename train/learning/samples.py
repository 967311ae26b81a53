"""Training samples: compressed numpy shards, the replay window, and augmented batches.

A **sample** is one training example of one net kind:

- ``slm`` / ``upper``: the feature planes of a position (``nets.features``), a sparse policy target over
  the kind's action space (196 layout or 48,804 upper actions) and ``z``, the value target for the side to
  move. The sparse policy lists every action the search could choose (the root's children after pruning,
  or every legal action for supervised samples) with its target probability, zeros included: those
  indices are also the **legal mask** of the loss (``nets.losses.policy_value_terms``), and the indices
  at which the learner computes logits (``nets.model`` "Training"). They are unique within a sample.
- ``lower``: the planes of the position *after* a capture (victims removed), the upper action of the
  capturing move's path and ``z``, the target Q for the player who captured; optionally ``group``, the
  capture the sample belongs to (every candidate victim set of one capture shares it; ``-1``: none), which
  the within-capture ranking loss (``learner.dqn_loss = "group"``) needs.

A :class:`Samples` holds many samples column-wise (policies in CSR form: ``pi_off``, ``pi_idx``,
``pi_val``). A **shard** is one ``.npz`` written by ``np.savez_compressed`` to a temporary file in the
target directory, fsync-ed and renamed (:func:`write_shard`), so a killed writer never leaves a partial
shard. Arrays in a shard: ``format`` (str, :data:`SHARD_FORMAT`), ``version`` (int, :data:`SHARD_VERSION`,
the layout of these arrays), ``encoding_version`` (int, ``nets.config.ENCODING_VERSION`` when written: the
feature planes and action indices), ``kind`` (str), ``planes`` (``float16 (N, 14, 14, 14)``: the planes are 0/1
except four scalar planes, whose float16 rounding is below 1e-3), ``z`` (``float32 (N,)``), ``pi_off``
(``int64 (N+1,)``), ``pi_idx`` (``int32``), ``pi_val`` (``float32``) for ``slm``/``upper``, ``action``
(``int32 (N,)``) and, when the samples are grouped by capture, ``group`` (``int32 (N,)``; an optional
array, so shards without it stay readable) for ``lower``, and ``meta`` (a JSON string).
:func:`read_shard` refuses a shard of another format, shard version or encoding version with a
one-line :class:`ShardError`.

:func:`load_window` reads the most recent shards of a directory (file names sort chronologically, e.g.
``i0003-g0001.npz``) until it has ``window`` samples and keeps exactly the newest ``window``;
:class:`ReplayWindow` gives the same result call after call, decompressing only the shards new since its
last call (the pipeline keeps one across iterations);
:func:`iteration_tail` takes the newest iteration's samples out of such a window.

:func:`make_batch` draws a batch and augments it with the board symmetries (``nets.symmetry``): each
sample gets a symmetry drawn from the allowed ones; its planes go through ``transform_planes`` and its
action indices through the action maps (``action_map(sym, 'layout'|'upper')``), so policy mass stays on
the transformed actions. A batch keeps the policies sparse: one row per sample over its listed
actions, padded to the batch's longest list (:class:`Batch`).
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

from core.atomic import atomic_write
from nets.encoding import NUM_LAYOUT_ACTIONS, NUM_UPPER_ACTIONS
from nets.features import NUM_PLANES
from nets.symmetry import action_map, transform_planes

if TYPE_CHECKING:
    from train.jobs.rundir import RunPaths

KIND_ACTIONS = {"slm": NUM_LAYOUT_ACTIONS, "upper": NUM_UPPER_ACTIONS}
KIND_POLICY = {"slm": "layout", "upper": "upper", "lower": "upper"}
PLANES_SHAPE = (NUM_PLANES, 14, 14)
SHARD_SUFFIX = ".npz"
SHARD_FORMAT = "jiu-samples"
SHARD_VERSION = 2  # 1: the unversioned shards before the format/version/encoding_version arrays


class ShardError(ValueError):
    """A shard that cannot be read or does not hold what its kind needs (message names the file)."""


@dataclass
class Samples:
    """Column-wise samples of one kind (module docstring). ``action`` is used by ``lower`` only; the
    policy columns by ``slm``/``upper`` only."""

    kind: str
    planes: np.ndarray
    z: np.ndarray
    pi_off: np.ndarray | None = None
    pi_idx: np.ndarray | None = None
    pi_val: np.ndarray | None = None
    action: np.ndarray | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    group: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("slm", "upper", "lower"):
            raise ShardError(f"unknown sample kind {self.kind!r}")
        self.planes = np.asarray(self.planes, np.float16).reshape(-1, *PLANES_SHAPE)
        self.z = np.asarray(self.z, np.float32).reshape(-1)
        n = len(self.z)
        if self.planes.shape[0] != n:
            raise ShardError(f"{self.planes.shape[0]} planes for {n} value targets")
        if self.kind == "lower":
            self.action = np.asarray(self.action if self.action is not None else np.zeros(0), np.int32).reshape(-1)
            if self.action.shape[0] != n:
                raise ShardError(f"{self.action.shape[0]} upper actions for {n} lower samples")
            if self.group is not None:
                self.group = np.asarray(self.group, np.int32).reshape(-1)
                if self.group.shape[0] != n:
                    raise ShardError(f"{self.group.shape[0]} capture groups for {n} lower samples")
                if n and self.group.min() < -1:
                    raise ShardError("capture group below -1")
        else:
            self.pi_off = np.asarray(self.pi_off if self.pi_off is not None else [0], np.int64).reshape(-1)
            self.pi_idx = np.asarray(self.pi_idx if self.pi_idx is not None else [], np.int32).reshape(-1)
            self.pi_val = np.asarray(self.pi_val if self.pi_val is not None else [], np.float32).reshape(-1)
            if self.pi_off.shape[0] != n + 1 or self.pi_off[0] != 0 or self.pi_off[-1] != len(self.pi_idx):
                raise ShardError("policy offsets do not match the samples")
            if len(self.pi_idx) != len(self.pi_val):
                raise ShardError("policy indices and values differ in length")
            if len(self.pi_idx) and (self.pi_idx.min() < 0 or self.pi_idx.max() >= KIND_ACTIONS[self.kind]):
                raise ShardError(f"policy index out of range 0..{KIND_ACTIONS[self.kind] - 1}")

    def __len__(self) -> int:
        return len(self.z)

    @classmethod
    def empty(cls, kind: str) -> "Samples":
        return cls(kind, np.zeros((0, *PLANES_SHAPE), np.float16), np.zeros(0, np.float32),
                   action=np.zeros(0, np.int32) if kind == "lower" else None)

    def tail(self, n: int) -> "Samples":
        """The last ``n`` samples (all of them if there are fewer)."""
        start = max(0, len(self) - n)
        if start == 0:
            return self
        if self.kind == "lower":
            group = self.group[start:] if self.group is not None else None
            return Samples(self.kind, self.planes[start:], self.z[start:], action=self.action[start:], meta=self.meta,
                           group=group)
        o = int(self.pi_off[start])
        return Samples(self.kind, self.planes[start:], self.z[start:], self.pi_off[start:] - o, self.pi_idx[o:],
                       self.pi_val[o:], meta=self.meta)

    def policy(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """``(indices, values)`` of sample ``i``'s policy target."""
        a, b = int(self.pi_off[i]), int(self.pi_off[i + 1])
        return self.pi_idx[a:b], self.pi_val[a:b]


def concat(parts: Sequence[Samples], kind: str | None = None) -> Samples:
    """One :class:`Samples` of several of the same kind (in order)."""
    parts = [p for p in parts if p is not None]
    if not parts:
        if kind is None:
            raise ShardError("concat: nothing to concatenate and no kind given")
        return Samples.empty(kind)
    kind = parts[0].kind
    if any(p.kind != kind for p in parts):
        raise ShardError(f"concat: mixed kinds {sorted({p.kind for p in parts})}")
    planes = np.concatenate([p.planes for p in parts])
    z = np.concatenate([p.z for p in parts])
    if kind == "lower":
        return Samples(kind, planes, z, action=np.concatenate([p.action for p in parts]), group=_concat_groups(parts))
    offs, base = [np.zeros(1, np.int64)], 0
    for p in parts:
        offs.append(p.pi_off[1:] + base)
        base += int(p.pi_off[-1])
    return Samples(kind, planes, z, np.concatenate(offs), np.concatenate([p.pi_idx for p in parts]),
                   np.concatenate([p.pi_val for p in parts]))


def _concat_groups(parts: Sequence[Samples]) -> np.ndarray | None:
    """The ``group`` column of lower ``parts`` concatenated, renumbered so that no two parts share a
    capture (``-1`` stays ``-1``; a part without groups gives ``-1``); ``None`` when no part has groups."""
    if all(p.group is None for p in parts):
        return None
    out, base = [], 0
    for p in parts:
        g = p.group if p.group is not None else np.full(len(p), -1, np.int32)
        out.append(np.where(g >= 0, g.astype(np.int64) + base, -1))
        if len(g) and g.max() >= 0:
            base += int(g.max()) + 1
    return np.concatenate(out).astype(np.int32)


def blend_teacher(actions: np.ndarray, values: np.ndarray, path_actions: np.ndarray, prior: np.ndarray,
                  mix: float) -> tuple[np.ndarray, np.ndarray]:
    """A policy target with a teacher's prior blended in (knowledge distillation): ``(1 - mix)`` times
    ``values`` over ``actions`` (normalised to sum 1; the played move one-hot, or a search's visits)
    plus ``mix`` times ``prior`` over ``path_actions`` (the upper actions of every legal path, the
    teacher's ``prior(state, paths)`` order). Returns the concatenated ``(actions int64, values
    float64)`` for :meth:`SampleBuilder.add_policy`, which merges duplicate actions."""
    values = np.asarray(values, np.float64)
    return (np.concatenate([np.asarray(actions, np.int64), np.asarray(path_actions, np.int64)]),
            np.concatenate([(1.0 - mix) * values / values.sum(), mix * np.asarray(prior, np.float64)]))


class SampleBuilder:
    """Collects samples one at a time (self-play, supervised conversion) and builds a :class:`Samples`."""

    def __init__(self, kind: str):
        self.kind = kind
        self.planes: list[np.ndarray] = []
        self.z: list[float] = []
        self.idx: list[np.ndarray] = []
        self.val: list[np.ndarray] = []
        self.action: list[int] = []
        self.group: list[int] = []

    def __len__(self) -> int:
        return len(self.planes)

    def add_policy(self, planes: np.ndarray, actions: np.ndarray, values: np.ndarray, z: float = 0.0) -> None:
        """A ``slm``/``upper`` sample; duplicate actions are merged (their values summed) and the values
        normalised to sum 1 (uniform when they are all zero, e.g. visit counts of a 1-simulation search)."""
        actions = np.asarray(actions, np.int64)
        values = np.asarray(values, np.float64)
        uniq, inv = np.unique(actions, return_inverse=True)
        merged = np.zeros(len(uniq))
        np.add.at(merged, inv, values)
        if len(uniq) == 0:
            raise ValueError("add_policy: a sample needs at least one action")
        total = merged.sum()
        merged = merged / total if total > 0 else np.full(len(uniq), 1.0 / len(uniq))  # no visits: uniform
        self.planes.append(np.asarray(planes, np.float16))
        self.idx.append(uniq.astype(np.int32))
        self.val.append(merged.astype(np.float32))
        self.z.append(float(z))

    def add_lower(self, planes_after: np.ndarray, upper_action: int, z: float = 0.0, group: int = -1) -> None:
        """A ``lower`` sample; ``group``: its capture (``0, 1, ...`` within the builder; ``-1``: none)."""
        self.planes.append(np.asarray(planes_after, np.float16))
        self.action.append(int(upper_action))
        self.z.append(float(z))
        self.group.append(int(group))

    def set_values(self, z: Iterable[float]) -> None:
        """Replace the value targets (known only when the game is over)."""
        z = [float(x) for x in z]
        if len(z) != len(self.planes):
            raise ValueError(f"set_values: {len(z)} values for {len(self.planes)} samples")
        self.z = z

    def build(self, meta: dict[str, Any] | None = None) -> Samples:
        if not self.planes:
            s = Samples.empty(self.kind)
            s.meta = dict(meta or {})
            return s
        planes = np.stack(self.planes)
        if self.kind == "lower":
            group = np.array(self.group, np.int32) if max(self.group) >= 0 else None
            return Samples(self.kind, planes, np.array(self.z, np.float32), action=np.array(self.action, np.int32),
                           meta=dict(meta or {}), group=group)
        off = np.zeros(len(self.idx) + 1, np.int64)
        np.cumsum([len(i) for i in self.idx], out=off[1:])
        return Samples(self.kind, planes, np.array(self.z, np.float32), off, np.concatenate(self.idx),
                       np.concatenate(self.val), meta=dict(meta or {}))


# ============================================================================ shards on disk
def write_shard(path: str | os.PathLike, samples: Samples) -> Path:
    """Write ``samples`` as a compressed ``.npz`` atomically (temporary file, fsync, rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    from nets.config import ENCODING_VERSION

    arrays: dict[str, np.ndarray] = {
        "format": np.array(SHARD_FORMAT),
        "version": np.array(SHARD_VERSION, np.int64),
        "encoding_version": np.array(int(ENCODING_VERSION), np.int64),
        "kind": np.array(samples.kind),
        "planes": samples.planes,
        "z": samples.z,
        "meta": np.array(json.dumps(samples.meta, sort_keys=True)),
    }
    if samples.kind == "lower":
        arrays["action"] = samples.action
        if samples.group is not None:
            arrays["group"] = samples.group
    else:
        arrays.update(pi_off=samples.pi_off, pi_idx=samples.pi_idx, pi_val=samples.pi_val)
    atomic_write(path, lambda f: np.savez_compressed(f, **arrays))
    return path


def _check_version(path: Path, data) -> None:
    from nets.config import ENCODING_VERSION

    if "format" not in data or str(data["format"]) != SHARD_FORMAT:
        raise ShardError(f"shard {path}: not a {SHARD_FORMAT} shard of version {SHARD_VERSION} (field 'format' "
                         "missing or different: written by an older version?); delete it or regenerate its samples")
    version = int(data["version"]) if "version" in data else None
    if version != SHARD_VERSION:
        raise ShardError(f"shard {path}: field 'version' is {version}, this code reads version {SHARD_VERSION};"
                         " regenerate its samples")
    enc = int(data["encoding_version"]) if "encoding_version" in data else None
    if enc != int(ENCODING_VERSION):
        raise ShardError(f"shard {path}: field 'encoding_version' is {enc}, the current ENCODING_VERSION is "
                         f"{ENCODING_VERSION} (planes or action indices changed); regenerate its samples")


def read_shard(path: str | os.PathLike) -> Samples:
    """The :class:`Samples` of a shard; :class:`ShardError` naming the file if it is unreadable or of another
    format, shard version or encoding version (module docstring)."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            _check_version(path, data)
            kind = str(data["kind"])
            meta = json.loads(str(data["meta"])) if "meta" in data else {}
            if kind == "lower":
                return Samples(kind, data["planes"], data["z"], action=data["action"], meta=meta,
                               group=data["group"] if "group" in data else None)
            return Samples(kind, data["planes"], data["z"], data["pi_off"], data["pi_idx"], data["pi_val"], meta=meta)
    except ShardError as exc:
        msg = str(exc)
        raise ShardError(msg if msg.startswith("shard ") else f"shard {path}: {msg}") from None
    except (OSError, KeyError, ValueError, EOFError) as exc:
        raise ShardError(f"shard {path}: unreadable ({exc}); delete it (its game is replayed on resume)") from None


def shard_length(path: str | os.PathLike) -> int:
    """The number of samples in a shard (reads its small ``z`` array only); :class:`ShardError` if unreadable."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            return int(data["z"].shape[0])
    except (OSError, KeyError, ValueError, EOFError) as exc:
        raise ShardError(f"shard {path}: unreadable ({exc})") from None


def shard_files(directory: str | os.PathLike) -> list[Path]:
    """The shards of a directory, oldest first (by name)."""
    d = Path(directory)
    if not d.is_dir():
        return []
    return sorted(p for p in d.glob(f"*{SHARD_SUFFIX}") if not p.name.startswith("."))


def disk_totals(paths: RunPaths) -> tuple[int, int]:
    """``(games, samples)`` a training run (``paths``, its ``train.jobs.rundir.RunPaths``) holds on disk:
    self-play records (``records/i*/g*.json``) and the samples of the shards (``shards/<kind>/*.npz``,
    their length read from the ``z`` array only). Unreadable shards count 0 (the learner reports them
    when it reads them). The pipeline sets its state's totals from these."""
    games = sum(1 for d in paths.records.glob("i*") if d.is_dir() for f in d.glob("g*.json"))
    samples = 0
    if paths.shards_root.is_dir():
        for kind_dir in paths.shards_root.iterdir():
            for f in shard_files(kind_dir):
                try:
                    samples += shard_length(f)
                except ShardError:
                    pass
    return games, samples


class ShardPathError(ShardError):
    """A shard path that names no shard (missing, an unmatched pattern, not a shard) or shards without
    samples of the kinds asked for."""


def shard_paths(paths: Sequence[str | os.PathLike]) -> list[Path]:
    """The shard files named by ``paths``: shard files, directories of shards (``*.npz``, in name order,
    and those of their subdirectories) and glob patterns of them (``RUN/shards/upper/i0005-*.npz``), in
    order. Raises :class:`ShardPathError` when a path does not exist or is neither, or a pattern matches
    nothing."""
    import glob

    expanded: list[Path] = []
    for p in map(str, paths):
        if glob.has_magic(p):
            matches = sorted(glob.glob(p))
            if not matches:
                raise ShardPathError(f"shards: no file matches {p}")
            expanded += map(Path, matches)
        else:
            expanded.append(Path(p))
    files: list[Path] = []
    for p in expanded:
        if p.is_dir():
            files += shard_files(p) + [f for d in sorted(q for q in p.iterdir() if q.is_dir()) for f in shard_files(d)]
        elif p.is_file() and p.name.endswith(SHARD_SUFFIX):
            files.append(p)
        else:
            raise ShardPathError(f"shards: {p} is neither a shard ({SHARD_SUFFIX}) nor a directory")
    return files


def read_shards(paths: Sequence[str | os.PathLike],
                kinds: Sequence[str] = ("slm", "upper", "lower")) -> dict[str, Samples]:
    """The samples of ``kinds`` in the shards named by ``paths`` (:func:`shard_paths`), one
    :class:`Samples` per kind found (a capture's ``group`` stays apart from other shards' by
    :func:`concat`); shards of other kinds are skipped. Raises :class:`ShardPathError` as
    :func:`shard_paths` does or when no shard of ``kinds`` is found, :class:`ShardError` (naming the
    file) for an unreadable shard."""
    files = shard_paths(paths)
    parts: dict[str, list[Samples]] = {}
    for f in files:
        s = read_shard(f)
        if s.kind in kinds:
            parts.setdefault(s.kind, []).append(s)
    if not parts:
        raise ShardPathError(f"shards: no {' or '.join(kinds)} shard found")
    return {kind: concat(ps) for kind, ps in parts.items()}


def clean_temp_files(directory: str | os.PathLike) -> None:
    """Remove temporary files left by writes interrupted by a kill."""
    d = Path(directory)
    if d.is_dir():
        for tmp in d.glob(".*.tmp"):
            with contextlib.suppress(OSError):
                tmp.unlink()


def load_window(directory: str | os.PathLike, window: int, kind: str) -> tuple[Samples, list[Path]]:
    """The newest ``window`` samples of the shards in ``directory`` (and the shard files used)."""
    files = shard_files(directory)
    parts: list[Samples] = []
    used: list[Path] = []
    total = 0
    for path in reversed(files):
        if total >= window:
            break
        s = read_shard(path)
        if s.kind != kind:
            raise ShardError(f"shard {path}: holds {s.kind!r} samples, expected {kind!r}")
        if len(s) == 0:
            continue
        parts.append(s)
        used.append(path)
        total += len(s)
    parts.reverse()
    used.reverse()
    return concat(parts, kind).tail(window), used


class ReplayWindow:
    """The replay window of one shard directory kept between calls: :meth:`update` returns what
    ``load_window(directory, window, kind)`` returns at that moment, decompressing only the shards it has not
    read yet (a shard, written atomically, never changes once its name exists).

    ``directory``: the shards of one kind (``RUN/shards/<kind>/``); ``window``: the number of samples (>= 1);
    ``kind``: ``"slm"``, ``"upper"`` or ``"lower"``. It holds the shards of the last window (the newest
    ones summing to at least ``window`` samples, so at most ``window`` plus one shard's samples) and the
    names of the empty shards it has read; a shard older than those is read again only if newer ones
    disappear. A new instance (a resumed run) reads every shard the window needs, as :func:`load_window`.
    ``reads`` counts the shards decompressed so far, ``last_read`` names those of the last :meth:`update`."""

    def __init__(self, directory: str | os.PathLike, window: int, kind: str):
        if window < 1:
            raise ValueError(f"replay window of {window} samples: must be at least 1")
        self.directory = Path(directory)
        self.window = int(window)
        self.kind = kind
        self._held: dict[str, Samples] = {}  # file name -> samples (non-empty, of ``kind``)
        self._empty: set[str] = set()  # names of empty shards already read
        self.reads = 0
        self.last_read: list[str] = []

    def update(self) -> tuple[Samples, list[Path]]:
        """``(samples, files)`` exactly as :func:`load_window`: the newest ``window`` samples of the
        directory, oldest first, and the non-empty shard files they come from (name order). Raises
        :class:`ShardError` naming the file for an unreadable shard or one of another kind among those read."""
        held: dict[str, Samples] = {}
        parts: list[Samples] = []
        used: list[Path] = []
        total = 0
        self.last_read = []
        for path in reversed(shard_files(self.directory)):
            if total >= self.window:
                break
            name = path.name
            if name in self._empty:
                continue
            s = self._held.get(name)
            if s is None:
                s = read_shard(path)
                self.reads += 1
                self.last_read.append(name)
                if s.kind != self.kind:
                    raise ShardError(f"shard {path}: holds {s.kind!r} samples, expected {self.kind!r}")
                if len(s) == 0:
                    self._empty.add(name)
                    continue
            held[name] = s
            parts.append(s)
            used.append(path)
            total += len(s)
        self._held = held  # the shards beyond the window are let go
        parts.reverse()
        used.reverse()
        return concat(parts, self.kind).tail(self.window), used

    def __len__(self) -> int:
        """Samples held (the window's shards whole: at least ``min(window, samples on disk)``)."""
        return sum(len(s) for s in self._held.values())


def shard_prefix(iteration: int) -> str:
    """The name prefix of self-play iteration ``iteration``'s shards (``i0003-`` of ``i0003-g0001.npz``)."""
    return f"i{iteration:04d}-"


def shard_name(iteration: int, index: int) -> str:
    """The shard of game ``index`` of self-play iteration ``iteration`` (``i0003-g0001.npz``)."""
    return f"{shard_prefix(iteration)}g{index:04d}{SHARD_SUFFIX}"


def iteration_tail(window: Samples, files: Sequence[Path], iteration: int) -> Samples:
    """The samples of self-play iteration ``iteration`` in ``window`` (:func:`load_window`'s result with
    its ``files``): its shards (``iNNNN-*``) are the newest, since shard names sort by iteration, so
    they are the window's tail; only the shards' lengths are read (:func:`shard_length`). A window
    smaller than the iteration keeps only its part of them."""
    prefix = shard_prefix(iteration)
    return window.tail(sum(shard_length(f) for f in files if f.name.startswith(prefix)))


# ============================================================================ batches
@dataclass
class Batch:
    """A training batch (float32 planes ``(B, 14, 14, 14)``, ``z`` ``(B,)``). ``slm``/``upper``: the policy
    targets in padded sparse form, one row per sample over its listed actions (``L``: the batch's
    longest list): ``pi_idx`` ``int64 (B, L)`` action indices, ``pi_val`` ``float32 (B, L)`` target
    probabilities, ``legal`` ``bool (B, L)``, False on the padding (whose index is 0 and value 0);
    :attr:`pi` and :attr:`mask` are the dense ``(B, A)`` views, built on access. ``lower``: ``action``."""

    kind: str
    planes: np.ndarray
    z: np.ndarray
    pi_idx: np.ndarray | None = None
    pi_val: np.ndarray | None = None
    legal: np.ndarray | None = None
    action: np.ndarray | None = None
    symmetries: np.ndarray | None = None
    group: np.ndarray | None = None  # lower, when every sample has a capture: int64 (B,) in 0..G-1

    def _dense(self, values: np.ndarray, dtype) -> np.ndarray:
        out = np.zeros((len(self.z), KIND_ACTIONS[self.kind]), dtype)
        rows, cols = np.nonzero(self.legal)
        out[rows, self.pi_idx[rows, cols]] = values[rows, cols]
        return out

    @property
    def pi(self) -> np.ndarray:
        """The policy targets as ``float32 (B, A)`` (0 off the listed actions)."""
        return self._dense(self.pi_val, np.float32)

    @property
    def mask(self) -> np.ndarray:
        """The listed actions (the loss's legal mask) as ``bool (B, A)``."""
        return self._dense(self.legal, bool)


def make_batch(samples: Samples, indices: np.ndarray, rng: np.random.Generator | None = None,
               symmetries: Sequence[int] = (0,)) -> Batch:
    """The samples at ``indices``, each transformed by a symmetry drawn (with ``rng``) from
    ``symmetries`` (module docstring). With ``rng=None`` or ``symmetries=(0,)`` nothing is transformed.
    Lower samples that all have a capture ``group`` get the batch's capture numbers ``0..G-1`` as
    ``Batch.group`` (in the order of their ``group`` values), and one symmetry per capture."""
    indices = np.asarray(indices, np.int64)
    b = len(indices)
    group = None
    if samples.kind == "lower" and samples.group is not None and b and samples.group[indices].min() >= 0:
        _, group = np.unique(samples.group[indices], return_inverse=True)
        group = group.reshape(-1).astype(np.int64)
    syms = np.zeros(b, np.int64)
    if rng is not None and tuple(symmetries) != (0,):
        drawn = np.asarray(symmetries, np.int64)[rng.integers(len(symmetries), size=b)]
        syms = drawn if group is None else drawn[group]  # one symmetry per capture: its sets stay comparable
    planes = samples.planes[indices].astype(np.float32)
    for s in np.unique(syms):
        if s != 0:
            sel = syms == s
            planes[sel] = transform_planes(planes[sel], int(s))
    z = samples.z[indices].astype(np.float32)
    policy_kind = KIND_POLICY[samples.kind]
    if samples.kind == "lower":
        action = samples.action[indices].astype(np.int64)
        for s in np.unique(syms):
            if s != 0:
                sel = syms == s
                action[sel] = action_map(int(s), policy_kind)[action[sel]]
        return Batch(samples.kind, planes, z, action=action, symmetries=syms, group=group)
    starts = samples.pi_off[indices]
    lengths = (samples.pi_off[indices + 1] - starts).astype(np.int64)
    rows = np.repeat(np.arange(b), lengths)
    first = np.cumsum(lengths) - lengths  # each row's first entry in the batch's flat list
    col = np.arange(len(rows)) - first[rows]  # the entry's column within its row
    flat = starts[rows] + col  # the entry's position in the samples' CSR arrays
    idx = samples.pi_idx[flat].astype(np.int64)
    sym_of = syms[rows]
    for s in np.unique(sym_of):
        if s != 0:
            sel = sym_of == s
            idx[sel] = action_map(int(s), policy_kind)[idx[sel]]
    width = int(lengths.max()) if b else 0
    pi_idx = np.zeros((b, width), np.int64)
    pi_val = np.zeros((b, width), np.float32)
    legal = np.zeros((b, width), bool)
    pi_idx[rows, col] = idx
    pi_val[rows, col] = samples.pi_val[flat]
    legal[rows, col] = True
    return Batch(samples.kind, planes, z, pi_idx=pi_idx, pi_val=pi_val, legal=legal, symmetries=syms)
