"""Supervised pretraining on game records (JFA 3.6 and 4.1.1: the nets start from records before
self-play) and the starter corpus generator (``gen-records``).

Samples from a record (:func:`samples_from_record`; every move is validated by replaying the record):

- ``slm``: each layout position with at least two legal placements; policy target = the played
  placement (one-hot), legal mask = every legal placement; ``z`` = the game result for the side to move.
- ``upper``: each battle position with at least two legal paths; policy target = the played path's upper
  action (one-hot), mask = the upper actions of every legal path (no pruning); ``z`` as above.
- ``lower``: each battle move that takes square victims; input = the position after the move, the path's
  upper action; target ``z`` = the game result for the player who captured.

A record without a result (``null``: unfinished or unknown) gives ``z = 0``, like a draw.

With ``drift`` (``pretrain --value-drift K``) an ``upper`` sample's value target is the drift of an
evaluator's margin over the next ``K`` plies instead of the result (``train.learning.drift``).

:func:`pretrain` trains a net (fresh, or continuing ``init``) on such samples with ``train.learning.learner`` and the
symmetry augmentation, and saves it with ``nets.io.save``.

:func:`generate_records` plays ``games`` games of an agent against itself (or ``black``) with
``train.matches.arena.play_game`` in parallel worker processes (``train.jobs.workers``) and writes ``OUT/g00000.json``
... (JSON records, atomic). Game ``i``'s agent seeds derive from ``(seed, i)``; rerunning skips the records
that exist, so an interrupted run resumes without duplicating or losing games. ``OUT/corpus.json`` holds
the corpus identity (agents, seed, ruleset): a later run into ``OUT`` with another identity is refused
(as are records of another corpus found without it), and ``OUT`` is locked while records are generated
(``train.jobs.rundir.lock_dir``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from core.errors import JiuError
from core.rules import DEFAULT_RULESET, Ruleset
from train.learning.drift import DriftTarget, drift_values
from train.learning.samples import SampleBuilder, Samples, blend_teacher, concat

RECORD_SUFFIXES = (".json", ".jiu", ".txt", ".csv")


class SupervisedError(JiuError):
    """Bad pretraining input (no records, unreadable record, no samples); the message says which."""


# ============================================================================ records -> samples
def record_files(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """The record files named by ``paths`` (files as given; directories searched recursively for
    ``.json``, ``.jiu``, ``.txt`` and ``.csv``), sorted within each directory."""
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.suffix.lower() in RECORD_SUFFIXES and f.is_file()
                              and not f.name.startswith(".") and f.name != CORPUS_FILE))
        elif p.exists():
            out.append(p)
        else:
            raise SupervisedError(f"record path {p}: no such file or directory")
    return out


def read_records(paths: Iterable[str | os.PathLike], ruleset: Ruleset = DEFAULT_RULESET) -> list:
    """Every game in the record files of ``paths`` (``core.records.read_record``; JIU and CSV get
    ``ruleset``). Raises ``SupervisedError`` naming the file for unreadable records."""
    from core.records import read_record

    records = []
    for f in record_files(paths):
        try:
            records.extend(read_record(f, ruleset=ruleset))
        except JiuError as exc:  # named once: the record readers' messages mostly start with the file already
            message = str(exc)
            raise SupervisedError(message if message.startswith(f"{f}:") else f"{f}: {message}") from None
    return records


def _returns(result: str | None) -> tuple[float, float]:
    return {"w": (1.0, -1.0), "b": (-1.0, 1.0)}.get(result or "", (0.0, 0.0))


def _check_drift(drift: DriftTarget | None, kind: str) -> None:
    """:meth:`DriftTarget.check` as a ``SupervisedError`` (nothing for no drift target)."""
    if drift is not None:
        try:
            drift.check(kind)
        except ValueError as exc:
            raise SupervisedError(f"value drift: {exc}") from None


def samples_from_record(record, kind: str, teacher=None, teacher_mix: float = 0.5,
                        drift: DriftTarget | None = None) -> Samples:
    """The ``kind`` samples of one record (module docstring); raises ``RecordError`` on an illegal move.

    ``teacher`` (``upper`` only): a ``battle_prior`` plugin (``knowledge.protocols.PathPrior``, e.g.
    ``prior.expert``) whose prior over the legal paths is blended into the policy target, knowledge
    distillation: ``target = (1 - teacher_mix) one_hot(played) + teacher_mix teacher.prior(state)``.
    ``drift`` (``upper`` only): the drift value target instead of the result; positions without one give
    no sample."""
    _check_drift(drift, kind)
    return _record_samples(record, kind, teacher, teacher_mix, drift)


def _record_samples(record, kind: str, teacher, teacher_mix: float, drift: DriftTarget | None) -> Samples:
    """:func:`samples_from_record` after its checks (the caller has made them)."""
    from core.notation import parse_move
    from nets.encoding import encode_paths, encode_upper
    from nets.features import state_planes

    states = record.replay()
    ret = _returns(record.result)
    drifts = drift_values(states, drift) if drift is not None else None
    builder = SampleBuilder(kind)
    for i, text in enumerate(record.moves):
        s = states[i]
        if kind == "slm":
            if s.phase != 0:
                break
            pts = np.array(s.placements(), np.int64)
            if len(pts) < 2:
                continue
            move = parse_move(text)
            builder.add_policy(state_planes(s), pts, (pts == move.origin).astype(np.float64), ret[s.side])
        elif s.phase == 1:
            move = parse_move(text)
            if kind == "upper":
                ps = s.paths()
                if ps.m < 2 or (drifts is not None and np.isnan(drifts[i])):
                    continue
                acts = encode_paths(ps.pts, ps.off, ps.jump, ps.m).astype(np.int64)
                target = (acts, (acts == encode_upper(move)).astype(np.float64))
                if teacher is not None and teacher_mix > 0:
                    target = blend_teacher(*target, acts, teacher.prior(s, ps), teacher_mix)
                builder.add_policy(state_planes(s), *target, ret[s.side] if drifts is None else float(drifts[i]))
            elif move.victims:
                builder.add_lower(state_planes(states[i + 1]), encode_upper(move), ret[s.side])
    return builder.build()


def samples_from_records(records: Sequence, kind: str, progress: Callable[[int], None] | None = None,
                         teacher: str | None = None, teacher_mix: float = 0.5, workers: int = 0,
                         cache_dir: str | os.PathLike | None = None, drift: DriftTarget | None = None,
                         runner=None) -> Samples:
    """The ``kind`` samples of many records, concatenated in order.

    ``teacher``: a ``battle_prior`` plugin spec (``upper`` only; :func:`samples_from_record`), built once
    per worker; ``drift``: the drift value target (``upper`` only), its evaluator built once per worker.
    ``workers > 0`` converts records in that many processes (``train.jobs.workers``); ``runner``: a
    ``train.jobs.workers`` runner to use instead (not closed here, so one pool serves many calls).
    ``cache_dir``: one shard per record (``<key>.npz``, the key a digest of the record, the kind, the
    teacher and the value target), reused when it exists, so an interrupted or repeated conversion only
    does what is missing."""
    check_teacher(kind, teacher)
    _check_drift(drift, kind)
    tasks = [{"index": i, "record": r, "kind": kind, "teacher": teacher, "teacher_mix": float(teacher_mix),
              "drift": drift,
              "cache": None if cache_dir is None else str(Path(cache_dir) / f"{_sample_key(r, kind, teacher, teacher_mix, drift)}.npz")}
             for i, r in enumerate(records)]
    parts: list[Samples | None] = [None] * len(tasks)
    converted = 0

    def done(result: tuple[int, Samples]) -> None:
        nonlocal converted
        parts[result[0]] = result[1]
        converted += 1
        if progress is not None:
            progress(converted)

    from train.jobs.workers import make_runner

    own = runner is None
    if own:
        runner = make_runner(workers)
    try:
        runner.run(_samples_task, tasks, done)
    finally:
        if own:
            runner.close()
    return concat(parts, kind)


def check_teacher(kind: str, teacher: str | None) -> None:
    """Raise ``SupervisedError`` unless ``teacher`` is ``None`` or a valid ``battle_prior`` spec for an
    ``upper`` net."""
    if teacher is None:
        return
    if kind != "upper":
        raise SupervisedError(f"a teacher prior trains the upper net's policy; --model is {kind}")
    from knowledge.plugins import REGISTRY
    from knowledge.registry import SpecError

    try:
        REGISTRY.check(teacher, "battle_prior")
    except SpecError as exc:
        raise SupervisedError(f"teacher: {exc}") from None


def _sample_key(record, kind: str, teacher: str | None, teacher_mix: float, drift: DriftTarget | None = None) -> str:
    import hashlib
    import json

    from core.records import record_to_dict
    from nets.config import ENCODING_VERSION

    ident = {"record": record_to_dict(record), "kind": kind, "teacher": teacher,
             "teacher_mix": teacher_mix if teacher else None, "encoding": int(ENCODING_VERSION)}
    if drift is not None:  # absent for the result target, so that existing caches stay valid
        ident["value"] = drift.spec()
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:24]


_TEACHERS: dict[str, Any] = {}  # per process: one teacher plugin per spec


def _samples_task(task: dict[str, Any]) -> tuple[int, Samples]:
    from train.learning.samples import ShardError, read_shard, write_shard

    cache = task["cache"]
    if cache is not None and Path(cache).exists():
        try:
            return task["index"], read_shard(cache)
        except ShardError:
            pass  # unreadable or stale: rebuilt below
    teacher = None
    if task["teacher"] is not None:
        if task["teacher"] not in _TEACHERS:
            from knowledge.plugins import REGISTRY

            _TEACHERS[task["teacher"]] = REGISTRY.create(task["teacher"], "battle_prior")
        teacher = _TEACHERS[task["teacher"]]
    samples = _record_samples(task["record"], task["kind"], teacher, task["teacher_mix"], task["drift"])
    if cache is not None:
        write_shard(cache, samples)
    return task["index"], samples


# ============================================================================ pretraining
def pretrain(
    samples: Samples,
    net_config,
    learner_cfg,
    out: str | os.PathLike,
    steps: int,
    batch_size: int = 64,
    lr: float = 1e-3,
    seed: int = 0,
    symmetries: Sequence[int] = (0, 1, 2, 3),
    init: str | os.PathLike | None = None,
    extra: dict[str, Any] | None = None,
    callback=None,
    device: str = "cpu",
    checkpoint_every: int = 0,
) -> dict[str, Any]:
    """Train on ``samples`` for ``steps`` steps (constant ``lr``; the learner's optimiser, L2 and clip) and
    save the net to ``out`` (no optimiser state: self-play starts a fresh optimiser and schedule).
    ``init``: a net file to continue (default: a fresh net seeded with ``seed``; with
    ``net_config.tactics`` a net without the tactical planes is widened first,
    ``nets.io.load``). ``device``: where the learner trains (``train.learning.learner``; the file is
    written from CPU tensors either way). ``callback(step_index, losses)`` after each step.

    ``0 < checkpoint_every < steps``: every that many steps the net, its optimiser state and the batch
    generator's state go to :func:`checkpoint_dir` ``(out)`` (locked while training, atomic files), and a
    later call with the same samples and arguments resumes there, ending with the net an uninterrupted
    run saves; the directory is removed when ``out`` is written. Raises :class:`SupervisedError` for a
    checkpoint of other samples or arguments, ``train.jobs.rundir.DirectoryInUse`` while another process
    trains into it.

    Returns the mean losses of the first and last steps (``first_loss``, ``last_loss``, ``last_value``
    ...), ``seconds`` (this call), ``samples`` and ``resumed_from`` (the step a checkpoint gave, or 0)."""
    import contextlib
    import shutil

    import torch

    from train.jobs.rundir import atomic_write_json, lock_dir
    from train.learning.learner import Learner, optimizer_path

    kind = net_config.kind
    if samples.kind != kind:
        raise SupervisedError(f"pretrain: {samples.kind} samples for a {kind} net")
    if checkpoint_every < 0:
        raise SupervisedError(f"checkpoint_every must be at least 0, got {checkpoint_every}")
    cfg = learner_cfg.model_copy(update={"schedule": "constant", "lr": lr})
    t0 = time.perf_counter()
    ckpt = checkpoint_dir(out) if 0 < checkpoint_every < steps and len(samples) > 0 else None
    k = max(1, min(10, steps // 4 or 1))  # steps averaged into the first and last losses
    head: list[dict[str, float]] = []
    tail: list[dict[str, float]] = []
    done = 0
    with lock_dir(ckpt) if ckpt is not None else contextlib.nullcontext():
        state = ident = None
        if ckpt is not None:
            state = _read_checkpoint(ckpt)
            ident = _pretrain_identity(samples, net_config, cfg, steps, batch_size, lr, seed, symmetries, init)
        if state is not None:
            for key, value in ident.items():
                if state["identity"].get(key) != value:
                    raise SupervisedError(f"{ckpt}: a checkpoint of another run ({key} differs); remove it or "
                                          "give another --out")
            learner = Learner.from_checkpoint(ckpt / state["net"], cfg, lr=lr, kind=kind,
                                              tactics=net_config.tactics, device=device)
            rng = np.random.default_rng()
            rng.bit_generator.state = state["rng"]
            done, head, tail = int(state["done"]), state["head"], state["tail"]
        else:
            if init is not None:
                learner = Learner.from_checkpoint(init, cfg, lr=lr, kind=kind, tactics=net_config.tactics,
                                                  device=device)
            else:
                learner = Learner(net_config, cfg, seed=seed, lr=lr, device=device)
            rng = np.random.default_rng(seed)
        learner.step = 0
        torch.manual_seed(seed)
        resumed_from = done

        def cb(i, losses):
            if len(head) < k:
                head.append(losses)
            tail.append(losses)
            del tail[:-k]
            if callback is not None:
                callback(offset + i, losses)

        while done < steps and len(samples) > 0:
            offset = done
            n = steps - done if ckpt is None else min(checkpoint_every, steps - done)
            learner.train(samples, n, batch_size, rng, symmetries, callback=cb)
            done += n
            if ckpt is not None and done < steps:
                name = f"net-{done:09d}.safetensors"
                learner.save(ckpt / name, optimizer=True)
                atomic_write_json(ckpt / CHECKPOINT_STATE, {"identity": ident, "done": done, "net": name,
                                                            "rng": rng.bit_generator.state, "head": head,
                                                            "tail": tail})
                keep = {name, optimizer_path(ckpt / name).name}
                for old in ckpt.glob("net-*"):  # the checkpoints before this one
                    if old.name not in keep:
                        old.unlink(missing_ok=True)
        summary: dict[str, Any] = {"kind": kind, "samples": len(samples), "steps": steps,
                                   "resumed_from": resumed_from}
        if head:
            summary["first_loss"] = float(np.mean([h["total"] for h in head]))
            summary["last_loss"] = float(np.mean([h["total"] for h in tail]))
            for term in ("value", "policy", "l2"):
                summary[f"last_{term}"] = float(np.mean([h[term] for h in tail]))
        learner.step = 0
        learner.save(out, extra={"pretrain": {"samples": len(samples), "steps": steps, "lr": lr}, **(extra or {})},
                     optimizer=False)
    if ckpt is not None:
        shutil.rmtree(ckpt, ignore_errors=True)
    summary["seconds"] = time.perf_counter() - t0
    summary["out"] = str(out)
    return summary


CHECKPOINT_STATE = "state.json"


def checkpoint_dir(out: str | os.PathLike) -> Path:
    """Where :func:`pretrain` keeps the checkpoints of a run writing ``out``: ``<out>.ckpt/`` beside it."""
    out = Path(out)
    return out.with_name(out.name + ".ckpt")


def _read_checkpoint(ckpt: Path) -> dict[str, Any] | None:
    import json

    try:
        state = json.loads((ckpt / CHECKPOINT_STATE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise SupervisedError(f"{ckpt / CHECKPOINT_STATE}: unreadable checkpoint ({exc}); remove it") from None
    if not isinstance(state, dict) or not (ckpt / str(state.get("net", ""))).is_file():
        raise SupervisedError(f"{ckpt}: an incomplete checkpoint; remove it")
    return state


def _pretrain_identity(samples: Samples, net_config, cfg, steps: int, batch_size: int, lr: float, seed: int,
                       symmetries: Sequence[int], init) -> dict[str, Any]:
    """What a checkpoint must match to be resumed: the samples (count and a digest of their targets), the
    net, the learner settings and the arguments."""
    import hashlib

    digest = hashlib.sha256()
    for part in (samples.z, samples.pi_off, samples.pi_idx, samples.pi_val, samples.action, samples.group):
        if part is not None:
            digest.update(np.ascontiguousarray(part).tobytes())
    init_digest = None if init is None else hashlib.sha256(Path(init).read_bytes()).hexdigest()
    return {"samples": len(samples), "targets": digest.hexdigest(), "steps": int(steps),
            "batch_size": int(batch_size), "lr": float(lr), "seed": int(seed),
            "symmetries": [int(x) for x in symmetries], "init": init_digest,
            "net": net_config.model_dump(mode="json"), "learner": cfg.model_dump(mode="json")}


# ============================================================================ record generation
def record_seeds(seed: int, index: int) -> tuple[int, int]:
    """``(white_seed, black_seed)`` of generated game ``index`` (31-bit, from ``SeedSequence([seed, index])``)."""
    a, b = np.random.SeedSequence([int(seed), int(index)]).generate_state(2) % (2**31)
    return int(a), int(b)


def generated_path(out_dir: str | os.PathLike, index: int) -> Path:
    return Path(out_dir) / f"g{index:05d}.json"


def _record_task(task: dict[str, Any]) -> dict[str, Any]:
    from core.records import write_json
    from train.matches.arena import play_game

    ws, bs = record_seeds(task["seed"], task["index"])
    meta = {"gen_records": {"agent": task["white"], "black": task["black"], "seed": task["seed"],
                            "index": task["index"]}}
    t0 = time.perf_counter()
    record = play_game(task["white"], task["black"], Ruleset.parse(task["ruleset"]), ws, bs, meta)
    write_json(record, generated_path(task["out_dir"], task["index"]))
    return {"index": task["index"], "result": record.result, "reason": record.reason, "plies": len(record.moves),
            "seconds": time.perf_counter() - t0}


CORPUS_FILE = "corpus.json"
CORPUS_FORMAT = "jiu-corpus"


def _corpus_identity(agent: str, black: str, seed: int, ruleset: Ruleset) -> dict[str, Any]:
    return {"format": CORPUS_FORMAT, "version": 1, "agent": agent, "black": black, "seed": seed,
            "ruleset": ruleset.model_dump()}


def check_corpus(out: Path, identity: dict[str, Any]) -> None:
    """Raise ``SupervisedError`` naming the field when ``out`` holds another corpus (module docstring)."""
    import json

    from core.records import read_json

    path = out / CORPUS_FILE
    if path.exists():
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SupervisedError(f"{path}: unreadable corpus identity ({exc}); use another --out directory") from None
        if not isinstance(stored, dict) or stored.get("format") != CORPUS_FORMAT:
            raise SupervisedError(f"{path}: not a corpus identity (field 'format'); use another --out directory")
        for key in ("agent", "black", "seed", "ruleset"):
            if stored.get(key) != identity[key]:
                raise SupervisedError(f"{out}: field {key!r} of its corpus is {stored.get(key)!r} but this run asks "
                                      f"for {identity[key]!r}; resume with the same agents, seed and rules, or use "
                                      "another --out directory")
        return
    for f in sorted(out.glob("g*.json"))[:1]:
        try:
            meta = read_json(f).metadata.get("gen_records", {})
        except JiuError as exc:
            raise SupervisedError(f"{f}: {exc}") from None
        want = {"agent": identity["agent"], "black": identity["black"], "seed": identity["seed"]}
        have = {k: meta.get(k) for k in want}
        if have != want:
            raise SupervisedError(f"{out}: holds records of another corpus ({f.name}: {have}); use another --out"
                                  " directory")


def generate_records(agent: str, games: int, out_dir: str | os.PathLike, workers: int = 1, seed: int = 0,
                     ruleset: Ruleset = DEFAULT_RULESET, black: str | None = None, progress: Any = None,
                     executor=None, on_game: Callable[[dict], None] | None = None) -> dict[str, Any]:
    """Play (or finish) ``games`` games ``agent`` vs ``black`` (default: ``agent``) into ``out_dir``
    (module docstring). ``workers``: processes (0: in this process); ``executor``: an existing process
    pool to use. ``progress``: a rich ``Progress`` to add a task line to, or ``None``. Returns ``{"games",
    "played", "results": {...}, "seconds", "out_dir"}``. Raises ``SupervisedError`` (bad input, another
    corpus in ``out_dir``, a dead worker) and ``train.jobs.rundir.DirectoryInUse``."""
    from train.jobs.rundir import atomic_write_json, lock_dir
    from train.matches.arena import MAX_GAMES, check_agent_spec

    if not 0 <= games <= MAX_GAMES:
        raise SupervisedError(f"games: must be in 0..{MAX_GAMES}, got {games if abs(games) < 10**12 else 'a larger number'}")
    black = black or agent
    check_agent_spec(agent, "--agent")
    if black != agent:
        check_agent_spec(black, "--black")
    out = Path(out_dir)
    with lock_dir(out):
        identity = _corpus_identity(agent, black, seed, ruleset)
        check_corpus(out, identity)
        atomic_write_json(out / CORPUS_FILE, identity)
        return _generate(agent, black, games, out, workers, seed, ruleset, progress, executor, on_game)


def _generate(agent, black, games, out: Path, workers, seed, ruleset, progress, executor, on_game) -> dict[str, Any]:
    from train.jobs.workers import InlineRunner, PoolRunner, WorkerDied
    from train.learning.samples import clean_temp_files

    clean_temp_files(out)
    todo = [i for i in range(games) if not generated_path(out, i).exists()]
    base = {"white": agent, "black": black, "seed": seed, "ruleset": ruleset.model_dump(), "out_dir": str(out)}
    t0 = time.perf_counter()
    task_id = progress.add_task(f"records {agent}", total=games, completed=games - len(todo), score="") \
        if progress else None

    def done(info):
        if progress is not None:
            progress.advance(task_id)
        if on_game is not None:
            on_game(info)

    if todo:
        runner = InlineRunner() if workers == 0 and executor is None else \
            PoolRunner(min(workers, len(todo)), pool=executor)
        ok = False
        try:
            runner.run(_record_task, [{**base, "index": i} for i in todo], done)
            ok = True
        except WorkerDied as exc:
            raise SupervisedError(str(exc)) from None
        finally:
            if isinstance(runner, PoolRunner):
                runner.close(now=not ok)
    results: dict[str, int] = {}
    from core.records import read_json

    for i in range(games):
        p = generated_path(out, i)
        if p.exists():
            r = read_json(p).result or "none"
            results[r] = results.get(r, 0) + 1
    return {"games": games, "played": len(todo), "results": results, "seconds": time.perf_counter() - t0,
            "out_dir": str(out)}
