"""The training pipeline: iterations of self-play -> training -> evaluation/gate, resumable after a kill.

``run_pipeline(config, run_dir, resume=False)`` (``python cli.py selfplay``). Iteration ``i`` (1-based)
trains the net ``config.kind_for(i)`` (``model``: ``slm``, ``upper``, ``lower`` or ``cycle``) in four
phases; ``RUN/state.json`` names the iteration and the phase, and is rewritten atomically after every
phase:

1. ``init``: if the kind has no best net yet, make one (**pretraining**): with ``pretrain.enabled``
   (default) ``pretrain.games`` games of ``pretrain.agent`` (the expert) against itself are generated into
   ``RUN/pretrain/records/`` (``train.supervised.generate_records``: parallel, resumable), read together
   with the files of ``pretrain.records``, converted to the kind's samples, and a fresh net is trained on
   them for ``pretrain.steps`` steps (``train.supervised.pretrain``). With pretraining disabled (or no
   samples) the fresh, randomly initialised net is used. The net is saved as
   ``RUN/checkpoints/<kind>-i0000.safetensors`` and copied to ``RUN/best/<kind>.safetensors``. In
   ``cycle`` mode this happens the first time each kind comes up; the records are generated once.
2. ``selfplay``: ``selfplay.games`` games with the best net (``train.selfplay``) in worker processes
   (``workers``; ``backend="ray"`` runs them as Ray tasks). Each game writes its shard
   ``RUN/shards/<kind>/iNNNN-gNNNN.npz`` and then its record ``RUN/records/iNNNN/gNNNN.json``; games whose
   record exists are not played again (game seeds depend only on (seed, iteration, game index)).
3. ``train``: the learner continues the kind's latest checkpoint (weights and optimiser) for
   ``learner.steps`` steps on the newest ``replay.window`` samples of ``RUN/shards/<kind>/`` with random
   board symmetries, and saves ``RUN/checkpoints/<kind>-iNNNN.safetensors`` (+ ``.opt.pt``). A kill during
   training repeats the phase from the previous checkpoint (batches are drawn from a generator seeded by
   (seed, iteration), so the repeat is the same computation).
4. ``evaluate``: the candidate plays ``gate.games`` arena games (``train.arena.run_arena``, colour
   balanced, resumable, ``RUN/eval/iNNNN-<kind>/best/``) against the best net; it replaces
   ``RUN/best/<kind>.safetensors`` when its score per game is at least ``gate.threshold`` (always when
   ``gate.games`` is 0). It also plays ``gate.expert_games`` games against ``gate.expert``
   (``.../expert/``); both results (win rate with its 95% interval) are logged. Evaluation agents:
   specs of the search agents ``slm`` / ``hbm`` (``train.selfplay.net_agent_spec``).

Budget: ``iterations`` is the total for the run (a resumed run continues up to it; raise it to extend a
finished run); ``minutes`` is the wall time of this invocation, after which no new phase or game starts
(the run stops at a resumable point).

Run directory (every file written atomically: temporary file + ``os.replace``)::

    config.json        the resolved TrainConfig
    state.json         iteration, phase, best/latest nets per kind, totals, elapsed time
    metrics.jsonl      one JSON object per event (run_start, init, game, selfplay, train, evaluate, gate,
                       iteration, run_end), each appended with a single write
    tb/                TensorBoard scalars (skipped with a warning when tensorboard is not installed)
    records/iNNNN/     the JSON record of every self-play game (seeds in metadata.selfplay)
    shards/<kind>/     compressed sample shards (train.samples)
    checkpoints/       <kind>-iNNNN.safetensors (+ .opt.pt), the net after iteration NNNN (0000: initial)
    best/<kind>.safetensors   the gated best net of each kind (self-play plays with it)
    eval/iNNNN-<kind>/ arena run directories (best/: candidate vs best, expert/: candidate vs expert)
    pretrain/records/  the generated starter corpus

Display: a rich ``Live`` panel (phase, games done, plies/s, simulations/s, positions/s, losses, last
evaluation) when ``progress`` is on.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.atomic import atomic_write_bytes
from core.errors import JiuError
from train.config import (
    RESUMABLE_FIELDS,
    ConfigError,
    TrainConfig,
    changed_fields,
    config_to_dict,
    dump_config,
    validate_config,
)

STATE_FORMAT = "jiu-train-run"
STATE_VERSION = 1
PHASES = ("init", "selfplay", "train", "evaluate")


class TrainError(JiuError):
    """A training run that cannot start or go on (bad run directory, dead worker, missing backend)."""


# ============================================================================ files
def atomic_write_json(path: Path, data: Any) -> None:
    atomic_write_bytes(path, (json.dumps(data, indent=1, sort_keys=True, default=_json_default) + "\n").encode())


def atomic_copy(src: Path, dst: Path) -> None:
    atomic_write_bytes(dst, Path(src).read_bytes())


def _json_default(x):
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, Path):
        return str(x)
    raise TypeError(f"not JSON-serialisable: {type(x).__name__}")


def _finite(x):
    if isinstance(x, float) and not np.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


class MetricsLog:
    """``metrics.jsonl``: one JSON object per line, each appended with one ``write`` on an ``O_APPEND``
    descriptor and fsync-ed (a kill cannot interleave or half-write lines in practice; readers skip a
    malformed last line)."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def log(self, event: str, **fields: Any) -> dict[str, Any]:
        row = {"event": event, "time": round(time.time(), 3), **fields}
        line = json.dumps(_finite(row), sort_keys=True, default=_json_default, allow_nan=False) + "\n"
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


class TensorBoard:
    """``torch.utils.tensorboard.SummaryWriter`` in ``RUN/tb``, or nothing (one warning) without tensorboard."""

    def __init__(self, directory: Path):
        self.writer = None
        try:
            from torch.utils.tensorboard import SummaryWriter
        except Exception as exc:  # noqa: BLE001 - ImportError or a broken tensorboard install
            warnings.warn(f"TensorBoard logging skipped: {exc} (pip install tensorboard)", RuntimeWarning, stacklevel=2)
            return
        self.writer = SummaryWriter(str(directory))

    def scalars(self, step: int, **values: Any) -> None:
        if self.writer is None:
            return
        for k, v in values.items():
            if isinstance(v, (int, float)) and v is not None and np.isfinite(v):
                self.writer.add_scalar(k, float(v), step)

    def flush(self) -> None:
        if self.writer is not None:
            self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


@dataclass(frozen=True)
class RunPaths:
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

    def shards(self, kind: str) -> Path:
        return self.root / "shards" / kind

    def checkpoint(self, kind: str, iteration: int) -> Path:
        return self.root / "checkpoints" / f"{kind}-i{iteration:04d}.safetensors"

    def best(self, kind: str) -> Path:
        return self.root / "best" / f"{kind}.safetensors"

    def eval_dir(self, iteration: int, kind: str, what: str) -> Path:
        return self.root / "eval" / f"i{iteration:04d}-{kind}" / what

    def record(self, iteration: int, index: int) -> Path:
        from train.selfplay import record_name

        return self.records / record_name(iteration, index)

    @property
    def pretrain_records(self) -> Path:
        return self.root / "pretrain" / "records"

    def rel(self, p: Path) -> str:
        try:
            return str(Path(p).relative_to(self.root))
        except ValueError:
            return str(p)


def default_run_dir(base: str | os.PathLike = "runs") -> Path:
    """``runs/selfplay-YYYYmmdd-HHMMSS`` (a suffix is added if it exists)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    p = Path(base) / f"selfplay-{stamp}"
    k = 1
    while p.exists():
        k += 1
        p = Path(base) / f"selfplay-{stamp}-{k}"
    return p


def new_state(config: TrainConfig) -> dict[str, Any]:
    return {"format": STATE_FORMAT, "version": STATE_VERSION, "iteration": 1, "phase": "init",
            "kind": config.kind_for(1), "seed": config.seed, "best": {}, "latest": {}, "completed_iterations": 0,
            "games": 0, "samples": 0, "learner_steps": {}, "elapsed_seconds": 0.0, "sessions": 0,
            "last_eval": None, "last_losses": None}


def read_state(paths: RunPaths) -> dict[str, Any]:
    try:
        state = json.loads(paths.state.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TrainError(f"{paths.root}: no state.json; not a training run directory (start a new run)") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise TrainError(f"{paths.state}: unreadable ({exc})") from None
    if state.get("format") != STATE_FORMAT or state.get("phase") not in PHASES:
        raise TrainError(f"{paths.state}: not a training state (field 'format' or 'phase')")
    return state


def load_run_config(run_dir: str | os.PathLike) -> TrainConfig:
    """The resolved configuration stored in ``RUN/config.json``."""
    p = RunPaths(Path(run_dir)).config
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TrainError(f"{run_dir}: no config.json; not a training run directory") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise TrainError(f"{p}: unreadable ({exc})") from None
    return validate_config(data, str(p))


# ============================================================================ display
class Dashboard:
    """The rich ``Live`` panel (or nothing when ``enabled`` is false)."""

    def __init__(self, enabled: bool, run_dir: Path, config: TrainConfig):
        self.enabled = enabled
        self.run_dir = run_dir
        self.config = config
        self.fields: dict[str, Any] = {}
        self.live = None
        self.progress = None
        if enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.console = Console(stderr=True)
            self.progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TextColumn("{task.fields[score]}"), TimeElapsedColumn(), console=self.console)

    def __enter__(self) -> "Dashboard":
        if self.enabled:
            from rich.live import Live

            self.live = Live(get_renderable=self._render, console=self.console, refresh_per_second=2,
                             transient=False)
            self.live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)
            self.live = None

    def update(self, **fields: Any) -> None:
        self.fields.update(fields)

    def task(self, description: str, total: int, completed: int = 0):
        if self.progress is None:
            return None
        return self.progress.add_task(description, total=total, completed=completed, score="")

    def advance(self, task_id, score: str = "") -> None:
        if self.progress is not None and task_id is not None:
            self.progress.update(task_id, advance=1, score=score)

    def finish(self, task_id) -> None:
        if self.progress is not None and task_id is not None:
            self.progress.update(task_id, visible=False)

    def hide_finished(self) -> None:
        """Hide the finished task lines (arena matches, record generation) so the panel stays short."""
        if self.progress is not None:
            for task in self.progress.tasks:
                if task.finished:
                    self.progress.update(task.id, visible=False)

    def _render(self):
        from rich.console import Group
        from rich.table import Table

        f = self.fields
        t = Table(title=f"JFA training: {self.run_dir}", show_header=False, expand=False)
        t.add_column(style="bold")
        t.add_column()
        its = self.config.iterations
        t.add_row("iteration", f"{f.get('iteration', '-')}/{its if its else '-'}  net {f.get('kind', '-')}  "
                  f"phase {f.get('phase', '-')}")
        t.add_row("self-play", f"{f.get('games_done', 0)}/{f.get('games_total', '-')} games this iteration, "
                  f"{f.get('games', 0)} in the run")
        t.add_row("speed", f"{f.get('plies_per_s', 0):.1f} plies/s  {f.get('sims_per_s', 0):.0f} simulations/s  "
                  f"{f.get('positions_per_s', 0):.2f} positions/s  {f.get('games_per_hour', 0):.0f} games/h")
        if f.get("loss") is not None:
            t.add_row("losses", f"total {f['loss']:.4f}  value {f.get('value_loss', 0):.4f}  policy "
                      f"{f.get('policy_loss', 0):.4f}  l2 {f.get('l2', 0):.4f}  lr {f.get('lr', 0):.2e}  "
                      f"step {f.get('step', 0)}")
        for key, label in (("eval_best", "vs best"), ("eval_expert", "vs expert")):
            e = f.get(key)
            if e:
                t.add_row(label, e)
        if f.get("gate"):
            t.add_row("gate", f["gate"])
        t.add_row("elapsed", f"{f.get('elapsed', 0):.0f} s")
        parts = [t]
        if self.progress is not None:
            parts.append(self.progress)
        return Group(*parts)


def _eval_text(data: dict[str, Any]) -> str:
    wr, ci = data.get("win_rate"), data.get("wilson_ci95")
    if wr is None:
        return "-"
    ci_txt = f" (95% Wilson CI {100 * ci[0]:.0f}-{100 * ci[1]:.0f}%)" if ci else ""
    return f"{100 * wr:.0f}%{ci_txt}  +{data['wins']:g} ={data['draws']:g} -{data['losses']:g} in {data['games']} games"


# ============================================================================ runners (self-play)
class _InlineRunner:
    def run(self, fn, tasks, on_done, should_stop) -> bool:
        for t in tasks:
            if should_stop():
                return False
            on_done(fn(t))
        return True

    def close(self) -> None:
        pass


class _PoolRunner:
    def __init__(self, pool, workers: int):
        self.pool, self.workers = pool, workers

    def run(self, fn, tasks, on_done, should_stop) -> bool:
        from train.supervised import SupervisedError, run_bounded

        try:
            return run_bounded(self.pool, fn, tasks, on_done, self.workers, should_stop)
        except SupervisedError:
            raise TrainError("self-play: a worker process died (killed or crashed); the finished games are saved;"
                             " continue with python cli.py selfplay --resume RUN_DIR") from None

    def close(self) -> None:
        pass


class _RayRunner:
    """Self-play games as Ray tasks (``ray`` imported lazily; ``TrainError`` if it is not installed).
    Uses a Ray instance already initialised by the caller (e.g. a cluster), else starts a local one."""

    RETRIES = 3

    def __init__(self, workers: int):
        try:
            import ray
        except ImportError:
            raise TrainError("backend 'ray': ray is not installed (pip install ray), or use --backend process") from None
        self.ray = ray
        self.started = not ray.is_initialized()
        if self.started:
            ray.init(num_cpus=max(1, workers), include_dashboard=False, log_to_driver=False,
                     runtime_env={"env_vars": {"PYTHONPATH": str(Path(__file__).resolve().parent.parent)}})
        self.workers = max(1, workers)

    def run(self, fn, tasks, on_done, should_stop) -> bool:
        ray = self.ray
        # A worker that dies mid-game (killed, out of memory) has its task run again, up to RETRIES
        # times; each game writes its shard and record atomically under its own index, so the game
        # is replayed, not duplicated, and on_done sees it once.
        remote = ray.remote(num_cpus=1, max_retries=self.RETRIES)(fn)
        queue = list(tasks)
        pending = []
        while queue or pending:
            while queue and len(pending) < self.workers and not should_stop():
                pending.append(remote.remote(queue.pop(0)))
            if not pending:
                break
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    raise TrainError(f"self-play: a Ray task failed after {self.RETRIES} retries "
                                     f"({type(exc).__name__}); the finished games are saved; continue with "
                                     "python cli.py selfplay --resume RUN_DIR") from None
                on_done(result)
        return not queue

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()


# ============================================================================ the pipeline
class Pipeline:
    """One invocation of the pipeline on a run directory (see the module docstring)."""

    def __init__(self, config: TrainConfig, run_dir: Path, progress: bool = True):
        self.config = config
        self.paths = RunPaths(Path(run_dir))
        self.progress = progress
        self.metrics = MetricsLog(self.paths.metrics)
        self.state: dict[str, Any] = {}
        self.pool = None
        self.runner = None
        self.tb: TensorBoard | None = None
        self.dash: Dashboard | None = None
        self.session_start = time.time()
        self.deadline = self.session_start + config.minutes * 60 if config.minutes else float("inf")
        self.elapsed_base = 0.0

    # ------------------------------------------------------------------ helpers
    def save_state(self) -> None:
        self.state["elapsed_seconds"] = round(self.elapsed_base + time.time() - self.session_start, 3)
        atomic_write_json(self.paths.state, self.state)

    def out_of_time(self) -> bool:
        return time.time() >= self.deadline

    def done(self) -> bool:
        its = self.config.iterations
        return its is not None and self.state["iteration"] > its

    def log(self, event: str, **fields) -> dict[str, Any]:
        return self.metrics.log(event, **fields)

    def show(self, **fields) -> None:
        if self.dash is not None:
            self.dash.update(elapsed=time.time() - self.session_start, **fields)

    def get_pool(self):
        if self.pool is None and self.config.workers > 0:
            from train.selfplay import make_pool

            self.pool = make_pool(self.config.workers)
        return self.pool

    def get_runner(self):
        if self.runner is None:
            if self.config.workers == 0:
                self.runner = _InlineRunner()
            elif self.config.backend == "ray":
                self.runner = _RayRunner(self.config.workers)
            else:
                self.runner = _PoolRunner(self.get_pool(), self.config.workers)
        return self.runner

    def close(self) -> None:
        if self.runner is not None:
            self.runner.close()
        if self.pool is not None:
            from train.arena import stop_pool

            stop_pool(self.pool)
            self.pool = None
        if self.tb is not None:
            self.tb.close()

    # ------------------------------------------------------------------ phases
    def phase_init(self, it: int, kind: str) -> None:
        """Make the first best net of ``kind`` when there is none (pretraining, module docstring)."""
        if kind in self.state["best"] and self.paths.best(kind).exists():
            return
        from train.learner import Learner
        from train.supervised import pretrain, read_records, samples_from_records

        cfg = self.config
        ckpt = self.paths.checkpoint(kind, 0)
        t0 = time.time()
        info: dict[str, Any] = {"kind": kind, "pretrained": False}
        if cfg.pretrain.enabled:
            self.show(phase="pretrain: records")
            records_dirs = []
            if cfg.pretrain.games > 0:
                self._generate_pretrain_records()
                records_dirs.append(self.paths.pretrain_records)
            records = read_records([*records_dirs, *cfg.pretrain.records], cfg.ruleset)
            self.show(phase=f"pretrain: {len(records)} records -> samples")
            samples = samples_from_records(records, kind)
            info.update(records=len(records), samples=len(samples))
            if len(samples) and cfg.pretrain.steps > 0:
                self.show(phase=f"pretrain {kind}: {len(samples)} samples, {cfg.pretrain.steps} steps")

                def cb(i, losses):
                    self.show(loss=losses["total"], value_loss=losses["value"], policy_loss=losses["policy"],
                              l2=losses["l2"], lr=losses["lr"], step=i + 1)

                summary = pretrain(samples, cfg.nets.net_config(kind), cfg.learner, ckpt, cfg.pretrain.steps,
                                   cfg.pretrain.batch_size, cfg.pretrain.lr, seed=cfg.seed,
                                   symmetries=cfg.replay.symmetries, extra={"iteration": 0}, callback=cb)
                info.update(pretrained=True, **{k: v for k, v in summary.items() if k not in ("kind", "out")})
        if not info["pretrained"]:
            import torch

            learner = Learner(cfg.nets.net_config(kind), cfg.learner, seed=cfg.seed)
            torch.manual_seed(cfg.seed)
            learner.save(ckpt, extra={"iteration": 0, "init": "random"}, optimizer=False)
        atomic_copy(ckpt, self.paths.best(kind))
        self.state["best"][kind] = {"iteration": 0, "checkpoint": self.paths.rel(ckpt)}
        self.state["latest"][kind] = self.paths.rel(ckpt)
        self._export(kind)
        info["seconds"] = round(time.time() - t0, 3)
        self.log("init", iteration=it, **info)
        if info.get("last_loss") is not None and self.tb:
            self.tb.scalars(0, **{f"pretrain/{kind}/loss_first": info["first_loss"],
                                  f"pretrain/{kind}/loss_last": info["last_loss"]})

    def _generate_pretrain_records(self) -> None:
        from train.supervised import generate_records

        cfg = self.config
        pool = self.get_pool()
        from train.supervised import SupervisedError

        try:
            generate_records(cfg.pretrain.agent, cfg.pretrain.games, self.paths.pretrain_records,
                             workers=cfg.workers, seed=cfg.seed, ruleset=cfg.ruleset,
                             progress=self.dash.progress if self.dash else None, executor=pool)
        except SupervisedError as exc:
            raise TrainError(f"pretraining records: {exc}; resume with --resume {self.paths.root}") from None
        if self.dash:
            self.dash.hide_finished()

    def phase_selfplay(self, it: int, kind: str) -> bool:
        """Play the missing self-play games of iteration ``it``; ``False`` if stopped by the time budget."""
        from train.samples import clean_temp_files
        from train.selfplay import selfplay_task

        cfg = self.config
        clean_temp_files(self.paths.shards(kind))
        clean_temp_files(self.paths.records / f"i{it:04d}")
        total = cfg.selfplay.games
        todo = [g for g in range(total) if not self.paths.record(it, g).exists()]
        done_before = total - len(todo)
        base = {"run_dir": str(self.paths.root), "config": config_to_dict(cfg), "kind": kind, "iteration": it,
                "net": str(self.paths.best(kind))}
        tasks = [{**base, "index": g} for g in todo]
        stats = {"games": 0, "plies": 0, "simulations": 0, "samples": 0, "searched": 0}
        t0 = time.time()
        task_id = self.dash.task(f"self-play i{it} ({kind})", total, done_before) if self.dash else None
        self.show(phase="self-play", games_total=total, games_done=done_before)

        def on_done(info: dict[str, Any]) -> None:
            for k in ("plies", "simulations", "samples", "searched"):
                stats[k] += info[k]
            stats["games"] += 1
            self.state["games"] += 1
            self.state["samples"] += info["samples"]
            self.log("game", **info)
            wall = max(time.time() - t0, 1e-9)
            self.show(games_done=done_before + stats["games"], games=self.state["games"],
                      plies_per_s=stats["plies"] / wall, sims_per_s=stats["simulations"] / wall,
                      positions_per_s=stats["samples"] / wall, games_per_hour=3600 * stats["games"] / wall)
            if self.dash:
                self.dash.advance(task_id, f"{info['result']} {info['plies']} plies")

        complete = self.get_runner().run(selfplay_task, tasks, on_done, self.out_of_time)
        if self.dash:
            self.dash.finish(task_id)
        wall = time.time() - t0
        if stats["games"]:
            rates = {"games_per_hour": 3600 * stats["games"] / wall, "plies_per_s": stats["plies"] / wall,
                     "positions_per_s": stats["samples"] / wall, "sims_per_s": stats["simulations"] / wall}
            self.log("selfplay", iteration=it, kind=kind, seconds=round(wall, 3), complete=complete,
                     workers=cfg.workers, **stats, **rates)
            if self.tb:
                self.tb.scalars(it, **{f"selfplay/{k}": v for k, v in rates.items()})
        return complete and all(self.paths.record(it, g).exists() for g in range(total))

    def phase_train(self, it: int, kind: str) -> None:
        import torch

        from train.learner import Learner
        from train.samples import load_window

        cfg = self.config
        self.show(phase="train")
        latest = self.paths.root / self.state["latest"][kind]
        learner = Learner.from_checkpoint(latest, cfg.learner, horizon=cfg.horizon())
        samples, files = load_window(self.paths.shards(kind), cfg.replay.window, kind)
        if len(samples) == 0:
            raise TrainError(f"iteration {it}: no {kind} samples in {self.paths.shards(kind)} to train on")
        torch.manual_seed(int(np.random.SeedSequence([cfg.seed, it, 1]).generate_state(1)[0]))
        rng = np.random.default_rng([cfg.seed, it, 2])
        t0 = time.time()
        tb_every = max(1, cfg.learner.steps // 20)

        def cb(i, losses):
            self.show(loss=losses["total"], value_loss=losses["value"], policy_loss=losses["policy"],
                      l2=losses["l2"], lr=losses["lr"], step=learner.step)
            if self.tb and (i % tb_every == 0 or i == cfg.learner.steps - 1):
                self.tb.scalars(learner.step, **{f"loss/{kind}/{k}": losses[k] for k in ("total", "value", "policy", "l2")},
                                **{f"lr/{kind}": losses["lr"]})

        summary = learner.train(samples, cfg.learner.steps, cfg.learner.batch_size, rng, cfg.replay.symmetries, cb)
        ckpt = self.paths.checkpoint(kind, it)
        learner.save(ckpt, extra={"iteration": it, "window": len(samples), "shards": len(files)})
        self.state["latest"][kind] = self.paths.rel(ckpt)
        self.state["learner_steps"][kind] = learner.step
        losses = {k: summary[k] for k in ("total", "value", "policy", "l2")}
        self.state["last_losses"] = {"kind": kind, **losses}
        self.log("train", iteration=it, kind=kind, step=learner.step, steps=cfg.learner.steps, window=len(samples),
                 shards=len(files), lr=summary["lr"], seconds=round(time.time() - t0, 3),
                 checkpoint=self.paths.rel(ckpt), loss=losses["total"], value_loss=losses["value"],
                 policy_loss=losses["policy"], l2=losses["l2"])

    def _arena(self, it: int, kind: str, what: str, spec_a: str, spec_b: str, games: int):
        from train.arena import ArenaError, run_arena

        cfg = self.config
        seed = int(np.random.SeedSequence([cfg.seed, it, 3 if what == "gate" else 4]).generate_state(1)[0] % (2**30))
        self.show(phase=f"evaluate: {what}")
        pool = self.get_pool()
        try:
            summary = run_arena(spec_a, spec_b, games, workers=cfg.workers, seed=seed,
                                out_dir=self.paths.eval_dir(it, kind, what), ruleset=cfg.ruleset,
                                progress=self.dash.progress if self.dash else False, executor=pool)
        except ArenaError as exc:
            raise TrainError(f"evaluation ({what}): {exc}; resume with --resume {self.paths.root}") from None
        if self.dash:
            self.dash.hide_finished()
        data = summary.data
        row = {k: data.get(k) for k in ("games", "wins", "draws", "losses", "win_rate", "se", "ci95", "wilson_ci95",
                                       "elo", "mean_game_length", "reasons")}
        self.log("evaluate", iteration=it, kind=kind, opponent=what, a=spec_a, b=spec_b, **row)
        if self.tb:
            self.tb.scalars(it, **{f"eval/{kind}/win_rate_vs_{what}": data.get("win_rate")})
        return data

    def phase_evaluate(self, it: int, kind: str) -> None:
        from train.selfplay import net_agent_spec

        cfg = self.config
        cand = self.paths.checkpoint(kind, it)
        best = self.paths.best(kind)
        try:
            spec_cand, spec_best = net_agent_spec(kind, cand, cfg), net_agent_spec(kind, best, cfg)
        except ValueError as exc:
            raise TrainError(str(exc)) from None
        gate_data = None
        if cfg.gate.games > 0:
            gate_data = self._arena(it, kind, "best", spec_cand, spec_best, cfg.gate.games)
            self.show(eval_best=_eval_text(gate_data))
            rate = gate_data.get("win_rate")
            accepted = rate is not None and rate >= cfg.gate.threshold
        else:
            accepted = True
        expert_data = None
        if cfg.gate.expert_games > 0:
            expert_data = self._arena(it, kind, "expert", spec_cand, cfg.gate.expert, cfg.gate.expert_games)
            self.show(eval_expert=_eval_text(expert_data))
        if accepted:
            atomic_copy(cand, best)
            self.state["best"][kind] = {"iteration": it, "checkpoint": self.paths.rel(cand)}
            self._export(kind)
        self.state["last_eval"] = {"iteration": it, "kind": kind, "accepted": accepted,
                                   "vs_best": _brief(gate_data), "vs_expert": _brief(expert_data)}
        self.log("gate", iteration=it, kind=kind, accepted=accepted, threshold=cfg.gate.threshold,
                 win_rate=gate_data.get("win_rate") if gate_data else None, best_iteration=self.state["best"][kind]["iteration"])
        self.show(gate=f"iteration {it}: candidate {'accepted' if accepted else 'rejected'}; best {kind} = iteration "
                  f"{self.state['best'][kind]['iteration']}")
        if self.tb:
            self.tb.scalars(it, **{f"gate/{kind}/accepted": 1.0 if accepted else 0.0,
                                   f"gate/{kind}/best_iteration": float(self.state["best"][kind]["iteration"])})

    def _export(self, kind: str) -> None:
        if self.config.export_dir:
            atomic_copy(self.paths.best(kind), Path(self.config.export_dir) / f"{kind}.safetensors")

    # ------------------------------------------------------------------ main loop
    def run(self, resume: bool) -> dict[str, Any]:
        cfg = self.config
        root = self.paths.root
        if resume:
            self.state = read_state(self.paths)
            stored = load_run_config(root)
            bad = [f for f in changed_fields(stored, cfg) if f.split(".")[0] not in RESUMABLE_FIELDS]
            if bad:
                raise ConfigError(f"--resume {root}: config field {bad[0]!r} differs from the run's config.json;"
                                  f" only {', '.join(RESUMABLE_FIELDS)} may change on resume")
            self.elapsed_base = float(self.state.get("elapsed_seconds", 0.0))
        else:
            if root.exists() and any(root.iterdir()):
                raise TrainError(f"run directory {root} exists and is not empty; resume it with --resume {root} or "
                                 "choose another --run-dir")
            root.mkdir(parents=True, exist_ok=True)
            self.state = new_state(cfg)
        atomic_write_bytes(self.paths.config, dump_config(cfg).encode())
        self.state["sessions"] = int(self.state.get("sessions", 0)) + 1
        self.save_state()
        if cfg.backend == "ray" and cfg.workers > 0:
            self.get_runner()  # fails now (TrainError) when ray is missing
        self.tb = TensorBoard(self.paths.tb)
        self.log("run_start", iteration=self.state["iteration"], phase=self.state["phase"], resume=resume,
                 session=self.state["sessions"], run_dir=str(root), model=cfg.model, workers=cfg.workers,
                 backend=cfg.backend)
        reason = "iterations"
        t_it = time.time()
        self.dash = Dashboard(self.progress, root, cfg)
        try:
            with self.dash:
                self.show(iteration=self.state["iteration"], kind=self.state["kind"], phase=self.state["phase"],
                          games=self.state["games"])
                while not self.done():
                    if self.out_of_time():
                        reason = "minutes"
                        break
                    it = self.state["iteration"]
                    kind = cfg.kind_for(it)
                    self.state["kind"] = kind
                    phase = self.state["phase"]
                    self.show(iteration=it, kind=kind, phase=phase)
                    if phase == "init":
                        self.phase_init(it, kind)
                        self.state["phase"] = "selfplay"
                        t_it = time.time()
                    elif phase == "selfplay":
                        if not self.phase_selfplay(it, kind):
                            reason = "minutes"
                            break
                        self.state["phase"] = "train"
                    elif phase == "train":
                        self.phase_train(it, kind)
                        self.state["phase"] = "evaluate"
                    elif phase == "evaluate":
                        self.phase_evaluate(it, kind)
                        self.state["completed_iterations"] = int(self.state.get("completed_iterations", 0)) + 1
                        self.log("iteration", iteration=it, kind=kind, seconds=round(time.time() - t_it, 3),
                                 best=self.state["best"].get(kind), games=self.state["games"],
                                 samples=self.state["samples"])
                        self.state["iteration"] = it + 1
                        self.state["phase"] = "init"
                        t_it = time.time()
                    self.save_state()
                    if self.tb:
                        self.tb.flush()
        except KeyboardInterrupt:
            reason = "interrupted"
            raise
        finally:
            try:
                self.save_state()
                self.log("run_end", reason=reason, iteration=self.state["iteration"], phase=self.state["phase"],
                         completed_iterations=self.state.get("completed_iterations", 0),
                         elapsed_seconds=self.state["elapsed_seconds"],
                         session_seconds=round(time.time() - self.session_start, 3))
            finally:
                self.close()
        return {"run_dir": str(root), "reason": reason, "state": self.state,
                "session_seconds": time.time() - self.session_start}


def _brief(data: dict[str, Any] | None) -> dict[str, Any] | None:
    if not data:
        return None
    return {k: data.get(k) for k in ("games", "wins", "draws", "losses", "win_rate", "ci95", "wilson_ci95")}


def run_pipeline(config: TrainConfig, run_dir: str | os.PathLike, resume: bool = False,
                 progress: bool = True) -> dict[str, Any]:
    """Run (or resume) the training pipeline in ``run_dir`` (module docstring). Returns ``{"run_dir",
    "reason" ("iterations", "minutes"), "state", "session_seconds"}``. Raises ``TrainError`` /
    ``ConfigError`` for a bad run directory or configuration; ``KeyboardInterrupt`` leaves the run
    resumable."""
    return Pipeline(config, Path(run_dir), progress).run(resume)
