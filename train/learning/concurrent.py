"""The concurrent learner (``learner.mode = "concurrent"``): training beside self-play.

In ``"alternate"`` mode (the default) the pipeline plays an iteration's games, then trains (``train``
phase). In ``"concurrent"`` mode the self-play phase also runs a **learner process** (``multiprocessing``
spawn, one torch thread) from before its first game until its last one: :func:`learner_loop` watches
``RUN/shards/<kind>/`` and whenever ``learner.publish_every_samples`` new samples have arrived since its
last block of steps (counted from the shards' ``z`` arrays only), it trains ``learner.steps`` steps on the
replay window (``train.learning.samples.ReplayWindow``: only the new shards are decompressed), saves its
checkpoint ``RUN/learner/<kind>.safetensors`` (+ ``.opt.pt``; atomic) and **publishes** it: an atomic
copy over ``RUN/best/<kind>.safetensors``, the net each self-play game loads when it starts. Every
published net is played, ungated (a configuration with ``gate.max_games > 0`` is refused, naming
``learner.mode``); ``metrics.jsonl`` gets a ``learner_publish`` event per net (``iteration``, ``kind``,
``block``, ``step``, ``steps``, ``window`` (samples), ``new_samples``, ``shards``, ``loss``, ``seconds``:
the block's wall time). Both processes append to ``metrics.jsonl``: each row is one ``write`` on an
``O_APPEND`` descriptor (``train.jobs.rundir.MetricsLog``), so rows from the two processes do not
interleave.

When the games are done the pipeline sets the learner's stop event (a block in progress is dropped,
unpublished), joins it (``STOP_TIMEOUT`` seconds), then terminates it, and logs ``learner_stop``
(``exitcode``, ``terminated``, ``seconds``). The ``train`` phase then trains as in ``"alternate"`` mode,
continuing the learner's checkpoint when it was written in this iteration (:func:`train_start`), and
saves ``RUN/checkpoints/<kind>-iNNNN.safetensors``, which ``state.json`` names. A kill loses at most the
unpublished steps: a resumed self-play phase restarts the learner from its checkpoint of the iteration.
A learner process that fails logs ``learner_error`` (its message) and exits with code 1; the self-play
phase goes on, and the ``train`` phase trains as usual.

The learner's steps count in the global step of the learning-rate schedule: with the default
``learner.horizon_steps`` (iterations x ``learner.steps``) a cosine schedule reaches ``lr_min`` early,
so give ``learner.horizon_steps`` for concurrent runs.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from train.jobs.rundir import RunPaths
    from train.learning.config import TrainConfig

POLL_SECONDS = 1.0  # how often the learner looks for new shards
STOP_TIMEOUT = 60.0  # seconds the learner gets to stop before it is terminated

__all__ = ["POLL_SECONDS", "STOP_TIMEOUT", "LearnerProcess", "learner_checkpoint", "learner_loop", "learner_main",
           "start_learner", "stop_learner", "train_start"]


class StopSignal(Protocol):
    """What :func:`learner_loop` is stopped by (``threading.Event``, ``multiprocessing.Event``)."""

    def is_set(self) -> bool: ...

    def wait(self, timeout: float | None = None) -> bool: ...


class _Stopped(Exception):
    """Raised inside a block of steps when the stop signal is set (the block is dropped)."""


def learner_checkpoint(paths: RunPaths, kind: str) -> Path:
    """``RUN/learner/<kind>.safetensors``: the concurrent learner's latest net (its optimiser next to it)."""
    return paths.root / "learner" / f"{kind}.safetensors"


def _checkpoint_iteration(path: Path) -> int | None:
    """The ``iteration`` of a saved net's ``extra`` metadata (``None``: unreadable or absent)."""
    from nets.io import read_metadata

    try:
        extra = json.loads(read_metadata(path).get("extra") or "{}")
    except (OSError, ValueError):
        return None
    it = extra.get("iteration") if isinstance(extra, dict) else None
    return it if isinstance(it, int) else None


def train_start(paths: RunPaths, latest: str, kind: str, iteration: int, mode: str) -> Path:
    """The checkpoint iteration ``iteration``'s learner continues: in ``"concurrent"`` ``mode`` the
    concurrent learner's (:func:`learner_checkpoint`) when it was saved in this iteration, else ``latest``
    (the run's latest ``kind`` checkpoint, relative to the run directory, as ``state.json`` names it)."""
    own = learner_checkpoint(paths, kind)
    if mode == "concurrent" and own.exists() and _checkpoint_iteration(own) == iteration:
        return own
    return paths.root / latest


def _new_samples(shards: Path, seen: set[str]) -> int:
    """Samples in the shards of ``shards`` not in ``seen`` (their names are added to it); only the ``z``
    arrays are read (``train.learning.samples.shard_length``)."""
    from train.learning.samples import shard_files, shard_length

    n = 0
    for f in shard_files(shards):
        if f.name not in seen:
            n += shard_length(f)
            seen.add(f.name)
    return n


def learner_loop(run_dir: str | os.PathLike, config: TrainConfig, kind: str, iteration: int,
                 start: str | os.PathLike, stop: StopSignal, poll_seconds: float = POLL_SECONDS,
                 known: Iterable[str] | None = None) -> dict[str, Any]:
    """Train ``kind``'s net beside self-play until ``stop`` is set (module docstring), in this process.

    ``run_dir``: the run directory; ``config``: its ``TrainConfig``; ``iteration``: the self-play iteration
    (1-based; it seeds the batches with ``(seed, iteration, 3, block)`` and is saved in the checkpoint's
    metadata); ``start``: the checkpoint to continue (weights, and the optimiser when its file exists);
    ``poll_seconds``: the wait between two looks at the shard directory; ``known``: names of the shards
    that do not count as new (``None``: those on disk when the net is loaded). Returns
    ``{"blocks", "step", "samples_seen"}`` (blocks published, the learner's global step, new samples
    counted). Raises ``ValueError`` for a start net of another kind, ``train.learning.samples.ShardError``
    for an unreadable shard."""
    import torch

    from train.jobs.rundir import MetricsLog, RunPaths, atomic_copy
    from train.learning.learner import Learner
    from train.learning.samples import ReplayWindow

    torch.set_num_threads(1)
    paths = RunPaths(Path(run_dir))
    cfg = config
    shards = paths.shards(kind)
    metrics = MetricsLog(paths.metrics)
    learner = Learner.from_checkpoint(start, cfg.learner, horizon=cfg.horizon(), kind=kind, device=cfg.device)
    window = ReplayWindow(shards, cfg.replay.window, kind)
    seen: set[str] = set(known) if known is not None else set()
    if known is None:
        _new_samples(shards, seen)
    metrics.log("learner_start", iteration=iteration, kind=kind, start=paths.rel(Path(start)), step=learner.step,
                pid=os.getpid(), publish_every_samples=cfg.learner.publish_every_samples)
    out = learner_checkpoint(paths, kind)
    pending = total = blocks = 0

    def check_stop(i: int, losses: dict[str, float]) -> None:
        if stop.is_set():
            raise _Stopped

    while not stop.is_set():
        n = _new_samples(shards, seen)
        pending += n
        total += n
        if pending < cfg.learner.publish_every_samples:
            stop.wait(poll_seconds)
            continue
        t0 = time.time()
        samples, files = window.update()
        rng = np.random.default_rng([cfg.seed, iteration, 3, blocks])
        try:
            summary = learner.train(samples, cfg.learner.steps, cfg.learner.batch_size, rng, cfg.replay.symmetries,
                                    check_stop)
        except _Stopped:
            break  # the block's steps are not published; the train phase continues the last published net
        blocks += 1
        learner.save(out, extra={"iteration": iteration, "block": blocks, "window": len(samples),
                                 "shards": len(files), "concurrent": True})
        atomic_copy(out, paths.best(kind))
        metrics.log("learner_publish", iteration=iteration, kind=kind, block=blocks, step=learner.step,
                    steps=cfg.learner.steps, window=len(samples), new_samples=pending, shards=len(files),
                    loss=summary["total"], seconds=round(time.time() - t0, 3))
        pending = 0
    return {"blocks": blocks, "step": learner.step, "samples_seen": total}


def learner_main(run_dir: str, config: dict[str, Any], kind: str, iteration: int, start: str, stop: StopSignal,
                 known: list[str], poll_seconds: float = POLL_SECONDS) -> None:
    """The learner process's entry point: :func:`learner_loop` with ``config`` (a ``TrainConfig`` as a
    dict) validated. A failure is logged as ``learner_error`` (``message``) and ends the process with exit
    code 1; Ctrl-C ends it quietly."""
    import sys

    import torch

    torch.set_num_threads(1)
    try:
        from train.learning.config import validate_config

        learner_loop(run_dir, validate_config(config), kind, iteration, start, stop, poll_seconds, known)
    except KeyboardInterrupt:
        pass
    except Exception as exc:  # noqa: BLE001 - reported in metrics.jsonl; self-play goes on without the learner
        from train.jobs.rundir import MetricsLog, RunPaths

        MetricsLog(RunPaths(Path(run_dir)).metrics).log("learner_error", iteration=iteration, kind=kind,
                                                        message=f"{type(exc).__name__}: {exc}")
        sys.exit(1)


@dataclass
class LearnerProcess:
    """A running learner process (:func:`start_learner`)."""

    process: Any  # multiprocessing.Process (spawn context)
    stop: Any  # its stop event
    iteration: int
    kind: str
    started: float  # time.time() at the start


def start_learner(pipeline: Any, it: int, kind: str) -> LearnerProcess | None:
    """Start the learner process of iteration ``it`` beside self-play (the shards on disk now do not count
    as new; self-play does not wait for it to load); ``None`` (nothing started) unless ``learner.mode`` is
    ``"concurrent"`` and games of the iteration remain to be played. ``pipeline``: the
    ``train.learning.pipeline.Pipeline`` (its ``config``, ``paths`` and ``state``)."""
    from train.learning.config import config_to_dict
    from train.learning.samples import shard_files

    cfg, paths = pipeline.config, pipeline.paths
    if cfg.learner.mode != "concurrent" or all(paths.record(it, g).exists() for g in range(cfg.selfplay.games)):
        return None
    start = train_start(paths, pipeline.state.latest[kind], kind, it, cfg.learner.mode)
    ctx = mp.get_context("spawn")
    stop = ctx.Event()
    known = [f.name for f in shard_files(paths.shards(kind))]
    proc = ctx.Process(target=learner_main, name=f"learner-{kind}-i{it:04d}", daemon=True,
                       args=(str(paths.root), config_to_dict(cfg), kind, it, str(start), stop, known, POLL_SECONDS))
    proc.start()
    return LearnerProcess(proc, stop, it, kind, time.time())


def stop_learner(pipeline: Any, handle: LearnerProcess | None) -> None:
    """Stop a learner process (``None``: nothing to do): set its stop event, join it for ``STOP_TIMEOUT``
    seconds, then terminate (and kill) it; log ``learner_stop``."""
    if handle is None:
        return
    proc = handle.process
    handle.stop.set()
    proc.join(STOP_TIMEOUT)
    terminated = proc.is_alive()
    if terminated:
        proc.terminate()
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join(5)
    pipeline.log("learner_stop", iteration=handle.iteration, kind=handle.kind, exitcode=proc.exitcode,
                 terminated=terminated, seconds=round(time.time() - handle.started, 3))
