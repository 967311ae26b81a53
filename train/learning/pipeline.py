"""The training pipeline: iterations of self-play -> training -> evaluation/gate, resumable after a kill.

``run_pipeline(config, run_dir, resume=False)`` (``python cli.py selfplay``). Iteration ``i`` (1-based)
trains the net ``config.kind_for(i)`` (``model``: ``slm``, ``upper``, ``lower`` or ``cycle``) in four
phases; ``RUN/state.json`` names the iteration and the phase, and is rewritten atomically after every
phase:

1. ``init``: if the kind has no best net yet, make one: with ``init_dir`` (``python cli.py selfplay``
   without ``--from-scratch`` sets it to ``models/default``) the model directory's ``<kind>.safetensors``
   is the start; else (or when it has no such net) **pretraining**: with ``pretrain.enabled``
   (default) ``pretrain.games`` games of ``pretrain.agent`` (the expert) against itself are generated into
   ``RUN/pretrain/records/`` (``train.learning.supervised.generate_records``: parallel, resumable), read together
   with the files of ``pretrain.records``, converted to the kind's samples, and a fresh net is trained on
   them for ``pretrain.steps`` steps (``train.learning.supervised.pretrain``). With pretraining disabled (or no
   samples) the fresh, randomly initialised net is used. The net is saved as
   ``RUN/checkpoints/<kind>-i0000.safetensors`` and copied to ``RUN/best/<kind>.safetensors``. In
   ``cycle`` mode this happens the first time each kind comes up; the records are generated once.
2. ``selfplay``: ``selfplay.games`` games with the best net (``train.learning.selfplay``) in worker processes
   (``workers``; ``backend="ray"`` on Ray actors, ``ray_address`` joins a cluster). Each game writes its shard
   ``RUN/shards/<kind>/iNNNN-gNNNN.npz`` and then its record ``RUN/records/iNNNN/gNNNN.json``; games whose
   record exists are not played again (game seeds depend only on (seed, iteration, game index)). With
   ``learner.mode = "concurrent"`` a learner process trains and publishes nets meanwhile
   (``train.learning.concurrent``). With ``selfplay.opponents = "population"``
   one side of each game is a population member's net (``train.learning.population``).
3. ``train``: the learner continues the kind's latest checkpoint (weights and optimiser; concurrent mode:
   the learner process's of this iteration, if any) for
   ``learner.steps`` steps on the newest ``replay.window`` samples of ``RUN/shards/<kind>/`` with random
   board symmetries, and saves ``RUN/checkpoints/<kind>-iNNNN.safetensors`` (+ ``.opt.pt``). Before its
   first step it scores the net on the iteration's new samples, which it has not been trained on
   (``Learner.validate``: the ``train`` event's ``fresh_policy``, ``fresh_value``,
   ``fresh_target_entropy`` and ``fresh_samples``; TensorBoard ``fresh/<kind>/...``): a validation loss,
   which stays flat when the net stops learning what generalises, however its training loss falls. A kill during
   training repeats the phase from the previous checkpoint (batches are drawn from a generator seeded by
   (seed, iteration), so the repeat is the same computation).
4. ``evaluate``: the **SPRT gate**: the candidate plays the best net (``train.matches.arena.run_arena``, colour
   balanced, resumable, ``RUN/eval/iNNNN-<kind>/best/``) ``gate.batch`` games at a time; after each batch
   the pentanomial SPRT (``train.matches.stats.sprt``; H0 ``gate.elo0``, H1 ``gate.elo1``, ``gate.alpha``,
   ``gate.beta``) over the finished game pairs decides: H1 accepts, H0 rejects; at ``gate.max_games``
   without a decision the candidate is accepted when its score per game is above ``gate.threshold``
   (``gate.max_games = 0`` accepts every candidate). An accepted candidate replaces
   ``RUN/best/<kind>.safetensors``. With ``gate.expert_games`` it also plays ``gate.expert``
   (``.../expert/``). Then, every ``curve.every`` iterations, the best net plays the **learning
   curve**'s anchor pool (``train.learning.curve``: ``RUN/curve/iNNNN/``) and its jointly fitted Elo with a 95%
   interval goes to ``metrics.jsonl`` (event ``curve``), TensorBoard (``curve/<kind>/elo``) and the
   display; with ``curve.baseline`` the start net plays the anchors first, as iteration 0's point (0
   games, 0 hours; a resumed run that lacks it plays it before its next phase). Evaluation agents:
   the search agents ``slm`` / ``hbm`` as ``search.agents.AgentRecipe`` objects (``train.learning.selfplay.net_agent``).

Budget: ``iterations`` is the total for the run (a resumed run continues up to it; raise it to extend a
finished run); ``minutes`` is the wall time of this invocation, after which no new phase or game starts
(the run stops at a resumable point).

Before any work, every plugin and agent name of the configuration is resolved
(``train.learning.config.resolve_names``), and the run directory is locked (``train.jobs.rundir.lock_dir``: a second
``selfplay`` on it is refused at once, naming the holder's pid).

Run directory (every file written atomically: temporary file + ``os.replace``)::

    config.json        the resolved TrainConfig
    state.json         iteration, phase, best/latest nets per kind, totals (recomputed from the records
                       and shards on disk at the start and after every phase), elapsed time
                       (``train.jobs.rundir.RunState``)
    .lock, .lock.json  the directory lock and its holder (pid, start time, command)
    metrics.jsonl      one JSON object per event (run_start, init, game, selfplay, train, evaluate, gate,
                       iteration, run_end; concurrent mode: learner_start/_publish/_stop/_error), each
                       appended with a single write
    tb/                TensorBoard scalars (skipped with a warning when tensorboard is not installed)
    records/iNNNN/     the JSON record of every self-play game (seeds in metadata.selfplay)
    shards/<kind>/     compressed sample shards (train.learning.samples)
    checkpoints/       <kind>-iNNNN.safetensors (+ .opt.pt), the net after iteration NNNN (0000: initial)
    best/<kind>.safetensors   the gated best net of each kind (self-play plays with it)
    learner/<kind>.safetensors  the concurrent learner's latest published net (+ .opt.pt)
    eval/iNNNN-<kind>/ arena run directories (best/: the SPRT gate, expert/: candidate vs expert)
    curve/iNNNN/       the learning-curve matches (one arena directory per opponent) and results.json
    pretrain/records/  the generated starter corpus
    population/        selfplay.opponents = "population": population.json and the members' nets
                       (``train.learning.population``: opponents, Nash buffer, RP-ELO; events population*)

Display (``train.jobs.dashboard``): a rich ``Live`` panel (phase, games done, plies/s, simulations/s,
positions/s, losses, last gate, Elo) when stdout and stderr are terminals; otherwise a plain line per phase and at
least one a minute.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from core.atomic import atomic_write_bytes
from train.jobs.dashboard import Dashboard, TensorBoard, eval_text
from train.jobs.rundir import (
    LOCK_FILE,
    LOCK_INFO,
    PHASES,
    BestNet,
    MetricsLog,
    RunPaths,
    RunState,
    TrainError,
    atomic_copy,
    atomic_write_json,
    caused_by_interrupt,
    default_run_dir,
    eval_seed,
    lock_dir,
    read_metrics,
    read_state,
    write_state,
)
from train.jobs.signals import sigterm_as_interrupt
from train.learning import population
from train.learning.config import (
    RESUMABLE_FIELDS,
    ConfigError,
    TrainConfig,
    changed_fields,
    config_to_dict,
    dump_config,
)
from train.learning.modeldir import load_run_config
from train.learning.samples import disk_totals

__all__ = ["Pipeline", "run_pipeline", "TrainError", "ConfigError", "read_metrics", "default_run_dir",
           "load_run_config", "atomic_write_json", "PHASES"]


class Pipeline:
    """One invocation of the pipeline on a run directory (see the module docstring)."""

    def __init__(self, config: TrainConfig, run_dir: Path, progress: bool | str = True):
        self.config = config
        self.paths = RunPaths(Path(run_dir))
        self.progress = progress
        self.metrics = MetricsLog(self.paths.metrics)
        self.state = RunState()
        self.runner = None
        self.tb: TensorBoard | None = None
        self.dash: Dashboard | None = None
        self.session_start = time.time()
        self.deadline = self.session_start + config.minutes * 60 if config.minutes else float("inf")
        self.elapsed_base = 0.0

    # ------------------------------------------------------------------ helpers
    def elapsed(self) -> float:
        return self.elapsed_base + time.time() - self.session_start

    def refresh_totals(self) -> None:
        """The state's totals: what is on disk (``train.learning.samples.disk_totals``) and what a snapshot
        archived (``train.learning.snapshot``)."""
        games, samples = disk_totals(self.paths)
        self.state.games, self.state.samples = games + self.state.archived_games, samples + self.state.archived_samples

    def save_state(self) -> None:
        self.state.elapsed_seconds = round(self.elapsed(), 3)
        write_state(self.paths, self.state)

    def out_of_time(self) -> bool:
        return time.time() >= self.deadline

    def done(self) -> bool:
        its = self.config.iterations
        return its is not None and self.state.iteration > its

    def log(self, event: str, **fields) -> dict[str, Any]:
        return self.metrics.log(event, **fields)

    def show(self, **fields) -> None:
        if self.dash is not None:
            self.dash.update(elapsed=time.time() - self.session_start, **fields)

    def bar(self):
        return self.dash.progress if self.dash is not None and self.dash.progress is not None else False

    def get_runner(self):
        if self.runner is None:
            from core.errors import JiuError
            from train.jobs.workers import make_runner

            try:
                self.runner = make_runner(self.config.workers, self.config.backend, address=self.config.ray_address)
            except JiuError as exc:
                raise TrainError(str(exc)) from None
        return self.runner

    def executor(self):
        """The process pool shared by arena matches and record generation (``None``: in-process, or Ray
        for self-play only)."""
        from train.jobs.workers import PoolRunner

        if self.config.workers == 0:
            return None
        if self.config.backend == "ray":
            if getattr(self, "_arena_runner", None) is None:
                self._arena_runner = PoolRunner(self.config.workers)
            return self._arena_runner.pool
        return self.get_runner().pool

    def close(self, now: bool = False) -> None:
        if self.runner is not None:
            self.runner.close(now=now)
            self.runner = None
        extra = getattr(self, "_arena_runner", None)
        if extra is not None:
            extra.close(now=now)
            self._arena_runner = None
        if self.tb is not None:
            self.tb.close()

    # ------------------------------------------------------------------ phases
    def phase_init(self, it: int, kind: str) -> None:
        """Make the first best net of ``kind`` when there is none (module docstring)."""
        self.show(phase="init")
        if kind in self.state.best and self.paths.best(kind).exists():
            return
        from train.learning.learner import Learner
        from train.learning.supervised import pretrain, read_records, samples_from_records

        cfg = self.config
        ckpt = self.paths.checkpoint(kind, 0)
        t0 = time.time()
        info: dict[str, Any] = {"kind": kind, "pretrained": False}
        start = Path(cfg.init_dir) / f"{kind}.safetensors" if cfg.init_dir else None
        if start is not None and start.exists():
            from nets.io import load

            try:
                model, net_config, _ = load(start, expected_kind=kind)  # validates the file before the run uses it
            except Exception as exc:  # noqa: BLE001 - nets.io raises its typed error; name the file
                raise TrainError(f"init_dir net {start}: {exc}") from None
            widen = cfg.nets.tactics and not net_config.tactics
            self.show(phase=f"init: {kind} from {start}")
            if widen:  # no tactical planes yet: the same function with them, zero weight on the planes
                from nets.io import save
                from nets.model import with_tactics

                model = with_tactics(model)
                save(model, model.config, ckpt, extra={"iteration": 0, "init": f"{start} with tactics"})
            else:  # the file as it is, its metadata included
                atomic_copy(start, ckpt)
            info.update(init_from=str(start))
            self.state.init_from = str(Path(cfg.init_dir))
        elif cfg.pretrain.enabled:
            self.show(phase="pretrain: records")
            records_dirs = []
            if cfg.pretrain.games > 0:
                self._generate_pretrain_records()
                records_dirs.append(self.paths.pretrain_records)
            records = read_records([*records_dirs, *cfg.pretrain.records], cfg.ruleset)
            self.show(phase=f"pretrain: {len(records)} records -> samples")
            samples = samples_from_records(records, kind, drift=cfg.drift_target(kind))
            info.update(records=len(records), samples=len(samples))
            if len(samples) and cfg.pretrain.steps > 0:
                self.show(phase=f"pretrain {kind}: {len(samples)} samples, {cfg.pretrain.steps} steps")

                def cb(i, losses):
                    self.show(loss=losses["total"], value_loss=losses["value"], policy_loss=losses["policy"],
                              l2=losses["l2"], lr=losses["lr"], step=i + 1)

                summary = pretrain(samples, cfg.nets.net_config(kind), cfg.learner, ckpt, cfg.pretrain.steps,
                                   cfg.pretrain.batch_size, cfg.pretrain.lr, seed=cfg.seed,
                                   symmetries=cfg.replay.symmetries, extra={"iteration": 0}, callback=cb,
                                   device=cfg.device)
                info.update(pretrained=True, **{k: v for k, v in summary.items() if k not in ("kind", "out")})
        if not info["pretrained"] and "init_from" not in info:
            import torch

            learner = Learner(cfg.nets.net_config(kind), cfg.learner, seed=cfg.seed)
            torch.manual_seed(cfg.seed)
            learner.save(ckpt, extra={"iteration": 0, "init": "random"}, optimizer=False)
        atomic_copy(ckpt, self.paths.best(kind))
        self.state.best = {**self.state.best, kind: BestNet(iteration=0, checkpoint=self.paths.rel(ckpt))}
        self.state.latest = {**self.state.latest, kind: self.paths.rel(ckpt)}
        self._export(kind)
        info["seconds"] = round(time.time() - t0, 3)
        self.log("init", iteration=it, **info)
        if info.get("last_loss") is not None and self.tb:
            self.tb.scalars(0, **{f"pretrain/{kind}/loss_first": info["first_loss"],
                                  f"pretrain/{kind}/loss_last": info["last_loss"]})

    def _generate_pretrain_records(self) -> None:
        from train.learning.supervised import SupervisedError, generate_records

        cfg = self.config
        try:
            generate_records(cfg.pretrain.agent, cfg.pretrain.games, self.paths.pretrain_records,
                             workers=cfg.workers, seed=cfg.seed, ruleset=cfg.ruleset,
                             progress=self.dash.progress if self.dash else None, executor=self.executor())
        except SupervisedError as exc:
            raise TrainError(f"pretraining records: {exc}; resume with --resume {self.paths.root}") from None
        if self.dash:
            self.dash.hide_finished()

    def phase_selfplay(self, it: int, kind: str) -> bool:
        """Play the missing self-play games of iteration ``it``; ``False`` if stopped by the time budget."""
        from train.jobs.workers import WorkerDied
        from train.learning.samples import clean_temp_files
        from train.learning.selfplay import plan_batches, selfplay_batch

        cfg = self.config
        clean_temp_files(self.paths.shards(kind))
        clean_temp_files(self.paths.records / f"i{it:04d}")
        total = cfg.selfplay.games
        todo = [g for g in range(total) if not self.paths.record(it, g).exists()]
        done_before = total - len(todo)
        base = {"run_dir": str(self.paths.root), "config": config_to_dict(cfg), "kind": kind, "iteration": it,
                "net": str(self.paths.best(kind))}
        opp = population.prepare_selfplay(self, it, kind, todo) if cfg.selfplay.opponents == "population" else {}
        batches = plan_batches([{**base, "index": g, "opponent": opp.get(g)} for g in todo], cfg)
        stats = {"games": 0, "plies": 0, "simulations": 0, "samples": 0, "searched": 0}
        t0 = time.time()
        task_id = self.dash.task(f"self-play i{it} ({kind})", total, done_before) if self.dash else None
        self.show(phase="self-play", games_total=total, games_done=done_before)
        if self.dash:  # a worker reports its games when its batch ends; the records land one by one
            self.dash.count_finished_games(lambda: sum(self.paths.record(it, g).exists() for g in range(total)))

        def on_batch(results: list[dict[str, Any]]) -> None:
            for info in results:
                on_done(info)

        def on_done(info: dict[str, Any]) -> None:
            batch = info.pop("batch", None)
            if batch is not None:  # a worker's batch of games ended: its engine statistics (search.batched)
                self.log("selfplay_batch", iteration=it, kind=kind, pid=info["pid"], **batch)
            for k in ("plies", "simulations", "samples", "searched"):
                stats[k] += info[k]
            stats["games"] += 1
            self.state.games += 1
            self.state.samples += info["samples"]
            self.log("game", **info)
            wall = max(time.time() - t0, 1e-9)
            self.show(games_done=done_before + stats["games"], games=self.state.games,
                      plies_per_s=stats["plies"] / wall, sims_per_s=stats["simulations"] / wall,
                      positions_per_s=stats["samples"] / wall, games_per_hour=3600 * stats["games"] / wall)
            if self.dash:
                self.dash.advance(task_id, f"{info['result']} {info['plies']} plies")

        from train.learning.concurrent import start_learner, stop_learner

        learner = start_learner(self, it, kind)  # learner.mode = "concurrent": trains beside the games
        try:
            complete = self.get_runner().run(selfplay_batch, batches, on_batch, self.out_of_time)
        except WorkerDied:
            raise TrainError("self-play: a worker process died (killed or crashed); the finished games are saved;"
                             f" continue with python cli.py selfplay --resume {self.paths.root}") from None
        finally:
            stop_learner(self, learner)
            if self.dash:
                self.dash.count_finished_games(None)
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
        complete = complete and all(self.paths.record(it, g).exists() for g in range(total))
        if complete and cfg.selfplay.opponents == "population":
            population.after_selfplay(self, it, kind)
        return complete

    def phase_train(self, it: int, kind: str) -> None:
        import torch

        from train.learning.concurrent import train_start
        from train.learning.learner import Learner
        from train.learning.samples import ReplayWindow, iteration_tail

        cfg = self.config
        self.show(phase="train")
        latest = train_start(self.paths, self.state.latest[kind], kind, it, cfg.learner.mode)
        learner = Learner.from_checkpoint(latest, cfg.learner, horizon=cfg.horizon(), device=cfg.device)
        if getattr(self, "_replay", None) is None or self._replay.kind != kind:  # one window: the kind trained now
            self._replay = ReplayWindow(self.paths.shards(kind), cfg.replay.window, kind)
        samples, files = self._replay.update()  # decompresses only the shards new since the last iteration
        if len(samples) == 0:
            raise TrainError(f"iteration {it}: no {kind} samples in {self.paths.shards(kind)} to train on")
        # this iteration's new samples, before training on them: a validation loss (Learner.validate)
        new = iteration_tail(samples, files, it)
        fresh = {k: v for k, v in learner.validate(new).items() if k in ("value", "policy", "target_entropy")}
        if self.tb and fresh:
            self.tb.scalars(learner.step, **{f"fresh/{kind}/{k}": v for k, v in fresh.items()})
        torch.manual_seed(int(np.random.SeedSequence([cfg.seed, it, 1]).generate_state(1)[0]))
        rng = np.random.default_rng([cfg.seed, it, 2])
        t0 = time.time()
        tb_every = max(1, cfg.learner.steps // 20)

        def cb(i, losses):
            self.show(loss=losses["total"], value_loss=losses["value"], policy_loss=losses["policy"],
                      l2=losses["l2"], lr=losses["lr"], step=learner.step)
            if self.tb and (i % tb_every == 0 or i == cfg.learner.steps - 1):
                self.tb.scalars(learner.step, **{f"loss/{kind}/{k}": losses[k]
                                                 for k in ("total", "value", "policy", "l2", "target_entropy")},
                                **{f"lr/{kind}": losses["lr"]})

        summary = learner.train(samples, cfg.learner.steps, cfg.learner.batch_size, rng, cfg.replay.symmetries, cb)
        ckpt = self.paths.checkpoint(kind, it)
        learner.save(ckpt, extra={"iteration": it, "window": len(samples), "shards": len(files)})
        self.state.latest = {**self.state.latest, kind: self.paths.rel(ckpt)}
        self.state.learner_steps = {**self.state.learner_steps, kind: learner.step}
        losses = {k: summary[k] for k in ("total", "value", "policy", "l2")}
        self.state.last_losses = {"kind": kind, **losses}
        self.log("train", iteration=it, kind=kind, step=learner.step, steps=cfg.learner.steps, window=len(samples),
                 shards=len(files), lr=summary["lr"], seconds=round(time.time() - t0, 3),
                 checkpoint=self.paths.rel(ckpt), start=self.paths.rel(latest), loss=losses["total"],
                 value_loss=losses["value"], policy_loss=losses["policy"], l2=losses["l2"], policy_target_entropy=summary["target_entropy"],
                 **{f"fresh_{k}": v for k, v in fresh.items()},
                 fresh_samples=len(new))

    def _arena(self, spec_a: str, spec_b: str, games: int, out_dir: Path, seed: int):
        from train.learning.selfplay import games_in_flight
        from train.matches.arena import ArenaError, run_arena

        try:
            summary = run_arena(spec_a, spec_b, games, workers=self.config.workers, seed=seed, out_dir=out_dir,
                                ruleset=self.config.ruleset, progress=self.bar(), executor=self.executor(),
                                games_in_flight=games_in_flight(self.config))
        except ArenaError as exc:
            raise TrainError(f"evaluation ({self.paths.rel(out_dir)}): {exc}; resume with --resume "
                             f"{self.paths.root}") from None
        if self.dash:
            self.dash.hide_finished()
        return summary

    def _seed(self, it: int, what: int) -> int:
        return eval_seed(self.config.seed, it, what)

    def _log_match(self, it: int, kind: str, what: str, spec_a: str, spec_b: str, data: dict[str, Any]) -> None:
        row = {k: data.get(k) for k in ("games", "wins", "draws", "losses", "win_rate", "se", "ci95", "wilson_ci95",
                                       "elo", "mean_game_length", "reasons")}
        self.log("evaluate", iteration=it, kind=kind, opponent=what, a=str(spec_a), b=str(spec_b), **row)
        if self.tb:
            self.tb.scalars(it, **{f"eval/{kind}/win_rate_vs_{what}": data.get("win_rate")})

    def sprt_gate(self, it: int, kind: str, spec_cand: str, spec_best: str) -> tuple[bool, dict[str, Any]]:
        """The SPRT gate (module docstring): ``(accepted, info)``."""
        from train.matches.arena import a_points, sprt_of_games

        g = self.config.gate
        if g.max_games == 0:
            return True, {"games": 0, "decision": "no gate (gate.max_games = 0)"}
        out = self.paths.eval_dir(it, kind, "best")
        seed = self._seed(it, 3)
        games = 0
        self.show(phase="evaluate: SPRT gate")
        while True:
            games = min(g.max_games, games + g.batch)
            summary = self._arena(spec_cand, spec_best, games, out, seed)
            test = sprt_of_games({r.metadata["game_index"]: a_points(r.result, r.metadata["a_colour"])
                                  for r in summary.records}, g.elo0, g.elo1, g.alpha, g.beta)
            self.show(eval_best=f"LLR {test.llr:+.2f} in [{test.lower:.2f}, {test.upper:.2f}] after {games} games; "
                      + eval_text(summary.data))
            if test.decision is not None or games >= g.max_games:
                break
        if test.decision == "H1":
            accepted, how = True, "SPRT accepted H1"
        elif test.decision == "H0":
            accepted, how = False, "SPRT accepted H0"
        else:
            rate = summary.data.get("win_rate")
            accepted = rate is not None and rate > g.threshold
            how = f"cap of {g.max_games} games: score {rate if rate is None else round(rate, 3)} vs threshold {g.threshold}"
        self._log_match(it, kind, "best", spec_cand, spec_best, summary.data)
        info = {"games": games, "decision": how, "sprt": test.to_dict(), "win_rate": summary.data.get("win_rate"),
                "wins": summary.wins, "draws": summary.draws, "losses": summary.losses, "threshold": g.threshold}
        return accepted, info

    def phase_evaluate(self, it: int, kind: str) -> None:
        from train.learning.selfplay import net_agent

        cfg = self.config
        cand = self.paths.checkpoint(kind, it)
        best = self.paths.best(kind)
        try:
            spec_cand, spec_best = net_agent(kind, cand, cfg), net_agent(kind, best, cfg)
        except ValueError as exc:
            raise TrainError(str(exc)) from None
        accepted, gate = self.sprt_gate(it, kind, spec_cand, spec_best)
        expert_data = None
        if cfg.gate.expert_games > 0:
            self.show(phase="evaluate: expert")
            s = self._arena(spec_cand, cfg.gate.expert, cfg.gate.expert_games, self.paths.eval_dir(it, kind, "expert"),
                            self._seed(it, 4))
            expert_data = s.data
            self._log_match(it, kind, "expert", spec_cand, cfg.gate.expert, expert_data)
            self.show(eval_expert=eval_text(expert_data))
        if accepted:
            atomic_copy(cand, best)
            self.state.best = {**self.state.best, kind: BestNet(iteration=it, checkpoint=self.paths.rel(cand))}
            self._export(kind)
        if cfg.selfplay.opponents == "population":
            population.after_gate(self, it, kind, accepted)
        best_it = self.state.best[kind].iteration
        self.state.last_eval = {"iteration": it, "kind": kind, "accepted": accepted, "gate": gate,
                                "vs_expert": _brief(expert_data)}
        self.log("gate", iteration=it, kind=kind, accepted=accepted, best_iteration=best_it, **gate)
        self.show(gate=f"iteration {it}: candidate {'accepted' if accepted else 'rejected'} ({gate['decision']}); "
                  f"best {kind} = iteration {best_it}")
        if self.tb:
            self.tb.scalars(it, **{f"gate/{kind}/accepted": 1.0 if accepted else 0.0,
                                   f"gate/{kind}/best_iteration": float(best_it),
                                   f"gate/{kind}/llr": (gate.get("sprt") or {}).get("llr"),
                                   f"gate/{kind}/games": float(gate["games"])})
        if cfg.curve.every and it % cfg.curve.every == 0:
            self.phase_curve(it, kind)

    def baseline_pending(self) -> bool:
        """Whether the run still owes its iteration-0 curve point (``curve.baseline``): the start net of the
        first iteration's kind exists and ``RUN/curve/i0000/results.json`` does not."""
        from train.learning.curve import RESULTS_FILE

        cfg = self.config
        return bool(cfg.curve.every and cfg.curve.baseline and self.paths.checkpoint(cfg.kind_for(1), 0).exists()
                    and not (self.paths.curve_dir(0) / RESULTS_FILE).exists())

    def phase_curve(self, it: int, kind: str) -> None:
        """The learning-curve point of iteration ``it`` (``train.learning.curve``). Iteration 0 is the baseline: the
        start net (``checkpoints/<kind>-i0000``), recorded at 0 self-play games and 0 hours whenever it is
        played (a resumed run that predates it plays it first)."""
        from train.learning.curve import curve_text, fit_curve, opponents, player_label, read_points, run_point
        from train.learning.selfplay import net_agent

        cfg = self.config
        if it == 0:
            player = player_label(kind, 0)
            spec = net_agent(kind, self.paths.checkpoint(kind, 0), cfg)
            run_games, hours = 0, 0.0
        else:
            best = self.state.best[kind]
            player = player_label(kind, best.iteration)
            spec = net_agent(kind, self.paths.root / best.checkpoint, cfg)
            run_games, hours = self.state.games, round(self.elapsed() / 3600, 4)
        stored = read_points(self.paths.curve_root)
        points = [p for p in stored if p["iteration"] < it]
        later = [p for p in stored if p["iteration"] > it]  # a baseline played after a resume
        opp = opponents(points, cfg.curve.anchors, kind, player, cfg.curve.checkpoints)
        self.show(phase=f"curve: {player} vs {len(opp)} opponents")
        t0 = time.time()

        point = run_point(lambda a, b, n, seed, out_dir: self._arena(a, b, n, out_dir, seed), self.paths.curve_dir(it), it,
                          kind, player, spec, opp, cfg.curve.games, self._seed(it, 5), run_games, hours)
        fit = fit_curve([*points, point, *later], cfg.curve.anchor)
        row = fit["points"][len(points)]
        anchors = {a: fit["ratings"].get(a, {}).get("elo") for a in cfg.curve.anchors}
        if not later:
            self.state.last_curve = {**row, "anchor": fit["anchor"]}
        self.log("curve", iteration=it, kind=kind, player=player, elo=row["elo"], ci95=row["ci95"],
                 games=run_games, hours=hours, anchor=fit["anchor"], anchors=anchors,
                 results=point["results"], seconds=round(time.time() - t0, 3))
        self.show(curve=curve_text(row))
        if self.tb and row["elo"] is not None:
            self.tb.scalars(it, **{f"curve/{kind}/elo": row["elo"], f"curve/{kind}/elo_low": row["ci95"][0],
                                   f"curve/{kind}/elo_high": row["ci95"][1]})

    def _export(self, kind: str) -> None:
        if self.config.export_dir:
            atomic_copy(self.paths.best(kind), Path(self.config.export_dir) / f"{kind}.safetensors")

    # ------------------------------------------------------------------ main loop
    def run(self, resume: bool) -> dict[str, Any]:
        from train.learning.config import resolve_names

        root = self.paths.root
        if resume and not root.is_dir():
            read_state(self.paths)  # the one-line error, without creating the directory
        resolve_names(self.config)
        with lock_dir(root), sigterm_as_interrupt():
            if not resume and any(p.name not in (LOCK_FILE, LOCK_INFO) for p in root.iterdir()):
                raise TrainError(f"run directory {root} exists and is not empty; resume it with --resume {root} or "
                                 "choose another --run-dir")
            return self._run_locked(resume)

    def _run_locked(self, resume: bool) -> dict[str, Any]:
        cfg = self.config
        root = self.paths.root
        if resume:
            self.state = read_state(self.paths)
            stored = load_run_config(root, device=cfg.device)  # the device may change (and be missing here)
            bad = [f for f in changed_fields(stored, cfg)
                   if f not in RESUMABLE_FIELDS and f.split(".")[0] not in RESUMABLE_FIELDS]
            if bad:
                raise ConfigError(f"--resume {root}: config field {bad[0]!r} differs from the run's config.json;"
                                  f" only {', '.join(RESUMABLE_FIELDS)} may change on resume")
            self.elapsed_base = float(self.state.elapsed_seconds)
        else:
            self.state = RunState(kind=cfg.kind_for(1), seed=cfg.seed)
        atomic_write_bytes(self.paths.config, dump_config(cfg).encode())
        self.state.sessions += 1
        self.refresh_totals()
        self.save_state()
        if cfg.backend == "ray" and cfg.workers > 0:
            self.get_runner()  # fails now when ray is missing (a dead ray_address failed in resolve_names)
        self.tb = TensorBoard(self.paths.tb)
        self.log("run_start", iteration=self.state.iteration, phase=self.state.phase, resume=resume,
                 session=self.state.sessions, run_dir=str(root), model=cfg.model, workers=cfg.workers,
                 backend=cfg.backend, games=self.state.games, samples=self.state.samples, init_dir=cfg.init_dir)
        reason = "iterations"
        t_it = time.time()
        self.dash = Dashboard(self.progress, root, cfg)
        failed = True
        try:
            with self.dash:
                self.show(iteration=self.state.iteration, kind=self.state.kind, phase=self.state.phase,
                          games=self.state.games)
                while not self.done():
                    if self.out_of_time():
                        reason = "minutes"
                        break
                    it = self.state.iteration
                    kind = cfg.kind_for(it)
                    self.state.kind = kind
                    phase = self.state.phase
                    self.show(iteration=it, kind=kind)
                    if phase != "init" and self.baseline_pending():
                        self.phase_curve(0, cfg.kind_for(1))
                    elif phase == "init":
                        self.phase_init(it, kind)
                        self.state.phase = "selfplay"
                        t_it = time.time()
                    elif phase == "selfplay":
                        if not self.phase_selfplay(it, kind):
                            reason = "minutes"
                            break
                        self.state.phase = "train"
                    elif phase == "train":
                        self.phase_train(it, kind)
                        self.state.phase = "evaluate"
                    elif phase == "evaluate":
                        self.phase_evaluate(it, kind)
                        self.state.completed_iterations += 1
                        self.refresh_totals()
                        self.log("iteration", iteration=it, kind=kind, seconds=round(time.time() - t_it, 3),
                                 best=self.state.best[kind].model_dump(), games=self.state.games,
                                 samples=self.state.samples)
                        self.state.iteration = it + 1
                        self.state.phase = "init"
                        t_it = time.time()
                    self.refresh_totals()
                    self.save_state()
                    if self.tb:
                        self.tb.flush()
            failed = False
        except KeyboardInterrupt:
            reason = "interrupted"
            raise
        except Exception as exc:  # an interrupt wrapped by a C++ extension (train.jobs.rundir.caused_by_interrupt)
            if not caused_by_interrupt(exc):
                raise
            reason = "interrupted"
            raise KeyboardInterrupt(f"interrupted inside {type(exc).__name__}") from exc
        finally:
            try:
                self.refresh_totals()
                self.save_state()
                self.log("run_end", reason=reason if not failed or reason == "interrupted" else "error",
                         iteration=self.state.iteration, phase=self.state.phase,
                         completed_iterations=self.state.completed_iterations,
                         elapsed_seconds=self.state.elapsed_seconds, games=self.state.games,
                         samples=self.state.samples, session_seconds=round(time.time() - self.session_start, 3))
            finally:
                self.close(now=failed)
        return {"run_dir": str(root), "reason": reason, "state": self.state.model_dump(mode="json"),
                "session_seconds": time.time() - self.session_start}


def _brief(data: dict[str, Any] | None) -> dict[str, Any] | None:
    if not data:
        return None
    return {k: data.get(k) for k in ("games", "wins", "draws", "losses", "win_rate", "ci95", "wilson_ci95")}


def run_pipeline(config: TrainConfig, run_dir: str | os.PathLike, resume: bool = False,
                 progress: bool | str = True) -> dict[str, Any]:
    """Run (or resume) the training pipeline in ``run_dir`` (module docstring). ``progress``: ``True``/
    ``"auto"`` (live panel on a terminal, plain lines otherwise), ``"live"``, ``"lines"``, ``False``/
    ``"off"``. Returns ``{"run_dir", "reason" ("iterations", "minutes"), "state" (``RunState`` as a
    dict), "session_seconds"}``. Raises ``TrainError`` / ``ConfigError`` for a bad run directory or
    configuration, ``train.jobs.rundir.DirectoryInUse`` when another process runs in it; ``KeyboardInterrupt``
    (Ctrl-C, or SIGTERM while the run holds its directory) leaves the run resumable, its state saved."""
    return Pipeline(config, Path(run_dir), progress).run(resume)
