"""A training run's resumable core, small enough to keep in version control between machines.

``python cli.py snapshot RUN DEST`` writes ``DEST``, a run directory that ``python cli.py selfplay --resume
DEST`` continues where ``RUN`` stopped, without the bulk that a finished phase no longer needs:

- kept: ``config.json``, ``state.json``, ``metrics.jsonl``, ``tb/``, ``best/``; the checkpoints the state
  names (latest and best of each kind, with the latest's optimiser ``.opt.pt``) and every learning-curve
  player's net (the lineage that ``python cli.py population --source curve`` plays); each curve point's
  ``results.json`` (a point without one, unfinished, is kept whole to resume); ``population/``; the
  current iteration's self-play records, sample shards and evaluation matches (a phase in progress
  resumes: its training needs its games' samples);
  ``pretrain/`` while no net has been made.
- dropped: the records and evaluation matches of finished iterations and finished curve matches (their
  results are in ``metrics.jsonl`` and the points' ``results.json``), older checkpoints, and the sample
  shards unless ``shards`` (then the shards holding the newest ``replay.window`` samples of each kind are
  kept: without them the first iteration after the resume trains on its own games only, as a fresh
  run's first iteration does).

The run's totals survive: ``state.json`` gains ``archived_games`` and ``archived_samples``, the self-play
games and samples the snapshot dropped, which ``train.learning.pipeline`` adds to what is on disk.
``RUN`` is locked while it is read (a running ``selfplay`` on it is refused, naming its pid); ``DEST`` is
written next to itself and renamed into place, replacing an earlier snapshot there whole or not at all.
A snapshot with ``changes`` (``--set SECTION.KEY=VALUE``, as for ``selfplay``) is a **branch**: the copy's
``config.json`` has those fields changed (validated; ``model`` and the net architecture ``nets.*`` stay,
since the copied checkpoints must load), and its ``metrics.jsonl`` gains a ``branch`` event naming the
parent run, its iteration and each change ``[old, new]``. Resuming the branch continues the run with
that one change (JFA-style ablations; issue 65: a change shown by SPRT against the run's best), where a
plain resume may change only how far or how fast a run goes.
Nets of a learning-curve point are stored relative to the run directory (``train.learning.curve``), so
the copy plays them from wherever it lives; the run's own absolute directory in the copied JSON files
(metrics, records, curve specs) is rewritten relative to it, so the copy names no directory of the
machine it came from.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Sequence

from core.atomic import atomic_write_bytes
from train.jobs.rundir import MetricsLog, RunPaths, TrainError, atomic_write_json, lock_dir, read_state

__all__ = ["snapshot"]


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".lock", ".lock.json", ".*.tmp*"))
    elif src.exists():
        shutil.copy2(src, dst)


def _branch_config(stored: dict[str, Any], cfg, changes: Sequence[str]) -> tuple[Any, dict[str, list[Any]]]:
    """The branch's configuration (``cfg``, the run's as validated on the CPU, with ``changes`` applied
    and validated, and the ``device`` of the run's ``stored`` config.json object kept) and the changed
    fields ``{dotted name: [old, new]}``; ``ConfigError`` for a bad change or one to ``model``,
    ``nets.*`` or ``device``."""
    from train.learning.config import ConfigError, apply_overrides, changed_fields, config_to_dict, validate_config

    old_values = config_to_dict(cfg)
    data = apply_overrides(old_values, list(changes))
    if any(c.partition("=")[0].strip() == "device" for c in changes):
        raise ConfigError("--set device: a branch keeps the run's device; a resume chooses one "
                          "(python cli.py selfplay --resume DEST --device D)")
    new = validate_config(data, "--set")
    fields = changed_fields(cfg, new)
    frozen = [f for f in fields if f == "model" or f.startswith("nets.")]
    if frozen:
        raise ConfigError(f"--set {frozen[0]}: a branch keeps the run's model and net architecture (its "
                          "checkpoints must load); start a new run instead")
    new_values = config_to_dict(new)

    def at(values: dict[str, Any], field: str) -> Any:
        for part in field.split("."):
            values = values[part]
        return values

    # ``cfg`` was validated on the CPU (the stored device may not exist on this machine): keep the stored one
    return (new.model_copy(update={"device": stored.get("device", new.device)}),
            {f: [at(old_values, f), at(new_values, f)] for f in fields})


def _window_shards(directory: Path, window: int) -> list[Path]:
    """The newest shards of ``directory`` holding at least ``window`` samples (all when fewer)."""
    from train.learning.samples import ShardError, shard_files, shard_length

    kept, total = [], 0
    for f in reversed(shard_files(directory)):
        if total >= window:
            break
        try:
            total += shard_length(f)
        except ShardError:
            continue
        kept.append(f)
    return kept


def _relative_text(root: Path, src_root: Path) -> None:
    """Rewrite the run's own absolute directory (``src_root``) in the copied JSON files under ``root`` as
    paths relative to the run directory (``RUN/x`` -> ``x``, ``RUN`` -> ``.``), so that a snapshot names no
    directory of the machine it was taken on (records' and metrics' net paths, curve specs)."""
    prefix = str(src_root)
    for f in root.rglob("*"):
        if f.suffix in (".json", ".jsonl") and f.is_file():
            text = f.read_text(encoding="utf-8")
            if prefix in text:
                f.write_text(text.replace(prefix + "/", "").replace(prefix, "."), encoding="utf-8")


def snapshot(run_dir: str | os.PathLike, dest: str | os.PathLike, shards: bool = False,
             changes: Sequence[str] = ()) -> dict[str, Any]:
    """Write the resumable core of the training run ``run_dir`` to ``dest`` (module docstring) and return
    ``{"dest", "files", "bytes", "games", "samples", "archived_games", "archived_samples", "changes"}``;
    ``changes``: ``SECTION.KEY=VALUE`` items that make the copy a branch (module docstring), and the
    returned ``changes`` maps each changed field to ``[old, new]``.

    Raises ``TrainError`` (one line) when ``run_dir`` is not a training run, ``dest`` is inside it or is
    a directory that is not a run (nothing is replaced), ``ConfigError`` for a change that is malformed,
    invalid or to ``model`` or ``nets.*``, and ``DirectoryInUse`` while a job holds ``run_dir``."""
    from train.learning.config import dump_config
    from train.learning.curve import RESULTS_FILE, read_points
    from train.learning.learner import optimizer_path
    from train.learning.modeldir import load_run_config, read_run_config
    from train.learning.population import POPULATION_DIR
    from train.learning.samples import disk_totals, shard_files, shard_prefix

    src = RunPaths(Path(run_dir))
    out = Path(dest)
    read_state(src)  # a training run, before anything is locked or written
    if out.resolve() == src.root.resolve() or src.root.resolve() in out.resolve().parents:
        raise TrainError(f"dest: {out} is inside the run directory {src.root}")
    if out.exists() and not (out / "state.json").exists():
        raise TrainError(f"dest: {out} exists and is not a run directory; choose a new directory")
    with lock_dir(src.root):
        state = read_state(src)
        data = read_run_config(src.root)
        cfg = load_run_config(src.root, device="cpu", data=data)  # ConfigError unless ``data`` is a valid object
        branch = _branch_config(data, cfg, changes) if changes else None
        tmp = out.with_name(f".{out.name}.snapshot-tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        dst = RunPaths(tmp)
        try:
            for name in ("config.json", "metrics.jsonl", "tb", "best", POPULATION_DIR):
                _copy(src.root / name, tmp / name)
            nets = {c.checkpoint for c in state.best.values()} | set(state.latest.values())
            root = src.root.resolve()
            for point in read_points(src.curve_root):  # the lineage: nets inside the run (read back absolute)
                for value in (point.get("recipe") or {}).get("options", {}).values():
                    if isinstance(value, str) and value.endswith(".safetensors") and Path(value).resolve().is_relative_to(root):
                        nets.add(Path(value).resolve().relative_to(root).as_posix())
            for rel in sorted(n for n in nets if not Path(n).is_absolute()):
                _copy(src.root / rel, tmp / rel)
            for rel in state.latest.values():
                _copy(optimizer_path(src.root / rel), optimizer_path(tmp / rel))
            for point_dir in sorted(src.curve_root.glob("i*")) if src.curve_root.is_dir() else ():
                done = (point_dir / RESULTS_FILE).exists()
                _copy(point_dir / RESULTS_FILE if done else point_dir,
                      dst.curve_root / point_dir.name / (RESULTS_FILE if done else ""))
            in_progress = state.phase != "init"
            if in_progress:  # the iteration in progress: its games and matches resume (its shards below)
                it = state.iteration
                _copy(src.records / f"i{it:04d}", dst.records / f"i{it:04d}")
                _copy(src.eval_dir(it, state.kind, ""), dst.eval_dir(it, state.kind, ""))
            if not state.best:
                _copy(src.root / "pretrain", tmp / "pretrain")
            for kind_dir in sorted(src.shards_root.iterdir()) if src.shards_root.is_dir() else ():
                keep = set(_window_shards(kind_dir, cfg.replay.window)) if shards else set()
                if in_progress:  # the iteration's own samples: its train phase learns from them
                    keep.update(f for f in shard_files(kind_dir) if f.name.startswith(shard_prefix(state.iteration)))
                for f in sorted(keep):
                    _copy(f, dst.shards(kind_dir.name) / f.name)
            _relative_text(tmp, src.root.resolve())
            games, samples = disk_totals(src)
            games += state.archived_games
            samples += state.archived_samples
            kept_games, kept_samples = disk_totals(dst)
            state.archived_games, state.archived_samples = games - kept_games, samples - kept_samples
            state.games, state.samples = games, samples
            atomic_write_json(dst.state, state.model_dump(mode="json"))
            if branch is not None:
                atomic_write_bytes(dst.config, dump_config(branch[0]).encode())
                MetricsLog(dst.metrics).log("branch", parent=src.root.resolve().name, iteration=state.iteration,
                                            changes=branch[1])
            if out.exists():
                old = out.with_name(f".{out.name}.snapshot-old")
                shutil.rmtree(old, ignore_errors=True)
                os.replace(out, old)
                os.replace(tmp, out)
                shutil.rmtree(old, ignore_errors=True)
            else:
                out.parent.mkdir(parents=True, exist_ok=True)
                os.replace(tmp, out)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    files = [p for p in out.rglob("*") if p.is_file()]
    return {"dest": str(out), "files": len(files), "bytes": sum(p.stat().st_size for p in files), "games": games,
            "samples": samples, "archived_games": state.archived_games, "archived_samples": state.archived_samples,
            "changes": branch[1] if branch is not None else {}}
