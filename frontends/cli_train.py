"""Commands of training: ``selfplay``, ``pretrain``, ``gen-records``, ``train-approxq``, ``train-dqn``
(the commands on trained runs and models are ``frontends.cli_models``)."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from frontends.cli_base import (
    MAX_SEED,
    MAX_WORKERS,
    DriftEndsOption,
    ResultFromOption,
    ResultStonesOption,
    RuleOption,
    app,
    drift_target,
    fail,
    ruleset_from,
    train_errors,
)

SetOption = Annotated[
    Optional[list[str]],
    typer.Option("--set", help="Config override SECTION.KEY=VALUE (repeatable), e.g. --set selfplay.games=8."),
]
DeviceOption = Annotated[Optional[str], typer.Option(help="Where the nets run and train: auto (CUDA when available, "
                                                   "else the CPU), cpu, cuda or cuda:N (default: the config's "
                                                   "device, auto).")]


def _check_device(device: str | None) -> None:
    """``--device``: a one-line error (status 2) for a bad or missing device, before anything starts."""
    if device is not None:
        from nets.inference import resolve_device

        try:
            resolve_device(device)
        except ValueError as exc:
            fail(str(exc))


def _rule_overrides(rule: list[str] | None) -> list[str]:
    out = []
    for item in rule or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            fail(f"--rule {item!r}: expected KEY=VALUE")
        out.append(f"ruleset.{key.strip().replace('-', '_')}={value.strip()}")
    return out


@app.command()
@train_errors
def selfplay(
    config: Annotated[Optional[Path], typer.Option("--config", "-c", help="Config file (.toml or .json); default: the model directory's config.toml (with --from-scratch: the built-in defaults = configs/default.toml).")] = None,
    overrides: SetOption = None,
    model: Annotated[Optional[str], typer.Option(help="Net to train: slm, upper, lower or cycle (default: the config's model; models/default/config.toml says upper, the built-in defaults slm).")] = None,
    iterations: Annotated[Optional[int], typer.Option(help="Total iterations of the run (default: the config's iterations, 2 in models/default/config.toml and the built-in defaults).")] = None,
    minutes: Annotated[Optional[float], typer.Option(help="Wall-clock budget of this invocation, in minutes.")] = None,
    workers: Annotated[Optional[int], typer.Option(help="Worker processes (0: everything in this process; default: the config's workers, 2).")] = None,
    seed: Annotated[Optional[int], typer.Option(min=0, max=MAX_SEED, help="Run seed (default: the config's seed).")] = None,
    backend: Annotated[Optional[str], typer.Option(help="Self-play backend: process (default) or ray.")] = None,
    device: DeviceOption = None,
    ray_address: Annotated[Optional[str], typer.Option("--ray-address", help="HOST:PORT of a running Ray cluster's head node to join (with --backend ray; the run directory must be on a filesystem every node sees: docs/training.md, Ray clusters).")] = None,
    reward: Annotated[Optional[str], typer.Option(help="SLM reward plugin (default reward.first_square; or reward.outcome, or reward.shape for the shape agent).")] = None,
    run_dir: Annotated[Optional[Path], typer.Option("--run-dir", help="Directory of a new run (default runs/selfplay-<time>).")] = None,
    resume: Annotated[Optional[Path], typer.Option(help="Continue the run in this directory where it stopped (across days).")] = None,
    from_scratch: Annotated[bool, typer.Option("--from-scratch", help="Run the whole pipeline from records (pretraining) instead of continuing from the model directory.")] = False,
    model_dir: Annotated[Path, typer.Option("--model-dir", help="The model directory a new run continues from (its nets and config.toml).")] = Path("models/default"),
    export: Annotated[Optional[Path], typer.Option("--export", help="After the run, play its best nets against this model directory's (the export gate: an SPRT of up to gate.export_games games) and, if they pass, write them there with config.toml and the model card's lineage; exit status 1 if they do not. With --resume and neither --iterations nor --minutes the run is not continued: only the export.")] = None,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="No live display and no progress lines.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the final state as one JSON object.")] = False,
    rule: RuleOption = None,
):
    """Self-play training of SLM / HBM upper / HBM lower (JFA): self-play, training, SPRT gate, learning curve; resumable.

    Without arguments a new run continues from models/default (its nets and its config.toml); --from-scratch
    pretrains on expert records first (pretrain.* fields). Each iteration plays self-play games with the best
    net, trains the latest net on the replay window, gates it against the best net with an SPRT and measures
    the best net's Elo against the anchor pool (curve.* fields). A terminal gets a live panel; a log gets a
    line per phase and at least one a minute. Prints the run directory."""
    import shlex

    from train.learning.config import (
        apply_overrides,
        config_to_dict,
        override_origins,
        read_config_file,
        resolve_names,
        validate_config,
    )
    from train.learning.modeldir import load_run_config
    from train.learning.pipeline import default_run_dir, run_pipeline

    _check_device(device)
    typed = {"model": model, "iterations": iterations, "minutes": minutes, "workers": workers, "seed": seed,
             "backend": backend, "device": device, "ray_address": ray_address, "selfplay.reward": reward}
    typed = {k: v for k, v in typed.items() if v is not None}
    sets = [*(overrides or []), *_rule_overrides(rule)]
    options = {"model": "--model", "iterations": "--iterations", "minutes": "--minutes", "workers": "--workers",
               "seed": "--seed", "backend": "--backend", "device": "--device", "ray_address": "--ray-address",
               "selfplay.reward": "--reward"}
    origins = override_origins(overrides, {f"ruleset.{k.partition('=')[0].strip().replace('-', '_')}":
                                           f"--rule {k.partition('=')[0].strip()}" for k in rule or []})
    origins.update({k: v for k, v in options.items() if k in typed})
    if resume is not None:
        if run_dir is not None:
            fail("give either --resume RUN_DIR or --run-dir DIR, not both")
        if config is not None:
            fail("--config cannot be combined with --resume (the run keeps its config.json)")
        if from_scratch:
            fail("--from-scratch cannot be combined with --resume (the run keeps how it started)")
        base = config_to_dict(load_run_config(resume, device=device))
        cfg = validate_config(apply_overrides(apply_overrides(base, sets), typed), origins=origins)
        target, is_resume = resume, True
    else:
        from train.learning.modeldir import read_model_config

        source = str(config) if config else "config"
        if config is not None:
            data = read_config_file(config)
        elif not from_scratch and (model_dir / "config.toml").exists():
            data, source = read_model_config(model_dir), str(model_dir / "config.toml")
        else:
            data = {}
        if not from_scratch:
            if not any((model_dir / f"{k}.safetensors").exists() for k in ("slm", "upper", "lower")):
                fail(f"--model-dir {model_dir}: no nets (slm/upper/lower.safetensors) to continue from; "
                     "use --from-scratch")
            data = {**data, "init_dir": str(model_dir)}
        cfg = validate_config(apply_overrides(apply_overrides(data, sets), typed), source, origins)
        target, is_resume = (run_dir if run_dir is not None else default_run_dir()), False
    resolve_names(cfg, origins)  # every name and file the run will use, before anything is printed or made
    typer.echo(f"run directory: {target}", err=True)
    progress = "off" if no_progress or json_out else "auto"
    if is_resume and export is not None and iterations is None and minutes is None:
        from train.jobs.rundir import RunPaths, read_state  # export only: the run is not continued

        result = {"reason": "export only", "session_seconds": 0.0,
                  "state": read_state(RunPaths(target)).model_dump(mode="json")}
    else:
        result = run_pipeline(cfg, target, resume=is_resume, progress=progress)
    state = result["state"]
    exported, gate_rows = None, None
    if export is not None:
        from train.learning.modeldir import export_gate, export_gate_text, export_run

        gate_rows = export_gate(target, export, progress=progress == "auto", config=cfg)
        for r in gate_rows:
            typer.echo(f"export gate {r['kind']} (iteration {r['iteration']}) vs {r['against']}: "
                       f"{export_gate_text(r)}", err=True)
        if all(r["passed"] for r in gate_rows):
            exported = [str(p) for p in export_run(target, export, "python cli.py " + shlex.join(sys.argv[1:]),
                                                   export_gate=gate_rows)]
    if json_out:
        typer.echo(json.dumps({"run_dir": str(target), "reason": result["reason"],
                               "session_seconds": round(result["session_seconds"], 3), "state": state,
                               "exported": exported, "export_gate": gate_rows}))
    else:
        typer.echo(f"stopped ({result['reason']}) after {state.get('completed_iterations', 0)} completed iteration(s) in "
                   f"{result['session_seconds']:.0f} s; next: iteration {state['iteration']} phase {state['phase']}")
        if exported:
            typer.echo(f"exported the best nets, config.toml and the model card lineage into {export}")
        elif export is not None:
            typer.echo(f"not exported: the run's best net did not pass the export gate against {export}'s")
        typer.echo(f"run directory: {target}  (best nets in {Path(target) / 'best'}; "
                   f"plots: python cli.py report {target}; continue: python cli.py selfplay --resume {target} --iterations N;"
                   f" export: python cli.py selfplay --resume {target} --export models/default)")
    if export is not None and not exported:
        raise typer.Exit(1)


@app.command()
@train_errors
def pretrain(
    records: Annotated[Optional[list[Path]], typer.Argument(metavar="[RECORDS...]", help="Record files or directories (.json, .jiu/.txt, .csv).")] = None,
    model: Annotated[str, typer.Option(help="Net to train: slm, upper or lower.")] = "slm",
    shards: Annotated[Optional[list[Path]], typer.Option(help="Also train on the --model samples of these sample shards (.npz files, directories such as a run's RUN/shards/lower, or glob patterns; repeatable): a run's replay with its own targets.")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Output net file (default models/pretrained/<model>.safetensors).")] = None,
    steps: Annotated[int, typer.Option(min=0, max=10**8, help="Training steps.")] = 200,
    batch_size: Annotated[int, typer.Option(min=1, max=65536, help="Batch size.")] = 64,
    lr: Annotated[float, typer.Option(min=0.0, help="Learning rate (constant).")] = 1e-3,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Seed of the initial weights and the batches.")] = 0,
    init: Annotated[Optional[Path], typer.Option(help="Continue training this net file instead of a fresh net.")] = None,
    config: Annotated[Optional[Path], typer.Option("--config", "-c", help="Config file for nets/learner/replay settings.")] = None,
    overrides: SetOption = None,
    teacher: Annotated[Optional[str], typer.Option(help="Battle prior plugin spec blended into the upper net's policy target (distillation), e.g. prior.expert:temperature=10.")] = None,
    teacher_mix: Annotated[float, typer.Option(min=0.0, max=1.0, help="Weight of --teacher in the policy target (the played move has the rest).")] = 0.5,
    workers: Annotated[int, typer.Option(min=0, max=MAX_WORKERS, help="Processes converting records to samples (0: in this process).")] = 0,
    samples_cache: Annotated[Optional[Path], typer.Option(help="Directory of per-record sample shards, reused when present (resumable conversion).")] = None,
    checkpoint_every: Annotated[int, typer.Option(min=0, max=10**8, help="Steps between checkpoints in OUT.ckpt/ (net, optimiser, batch generator); the same command resumes there after a kill (0: none).")] = 250,
    value_drift: Annotated[int, typer.Option(min=0, max=1000, help="Upper net: value target = the drift of --value-eval's margin over this many plies of the record (even; 0: the result).")] = 0,
    value_eval: Annotated[Optional[str], typer.Option(help="Evaluator (with a margin) of the --value-drift target "
                                                      "(default: the search's battle leaf value).")] = None,
    drift_ends: DriftEndsOption = None,
    value_eval_target: Annotated[Optional[int], typer.Option(min=0, max=1000, help="Upper net: value target = --value-eval's value K plies later in the record (even; 0: the position's own value, distilling the expert's two-ply value); not with --value-drift.")] = None,
    value_result_stones: ResultStonesOption = 0,
    value_result_from: ResultFromOption = 0,
    device: DeviceOption = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the summary as one JSON object.")] = False,
    rule: RuleOption = None,
):
    """Supervised pretraining on records: policy target = the played move (one-hot, blended with a
    --teacher prior if given), value target = the result, or with --value-drift K the change of the
    expert's two-ply value over the next K plies, or with --value-eval-target K that value K plies on
    (with --set learner.trainable=value only the value head learns). A killed run resumes from its last
    checkpoint (--checkpoint-every) when the same command is given again."""
    from train.learning.config import KINDS, check_trainable, load_config
    from train.learning.supervised import check_teacher, read_records, samples_from_records
    from train.learning.supervised import pretrain as run_pretrain

    _check_device(device)
    if model not in KINDS:
        fail(f"--model {model!r}: expected one of {', '.join(KINDS)}")
    check_teacher(model, teacher)
    drift = drift_target(value_drift, value_eval, drift_ends, model, value_eval_target, value_result_stones,
                         value_result_from)
    if init is not None:  # a bad --init fails before the samples are built
        from nets.io import load

        load(init, expected_kind=model)
    cfg = load_config(config, overrides or [])
    check_trainable(model, cfg.learner.trainable)
    ruleset = ruleset_from(rule)
    if not records and not shards:
        fail("nothing to train on: give RECORDS or --shards")
    parts = []
    if shards:
        from train.learning.samples import read_shards

        parts.append(read_shards(shards, (model,))[model])
    games = read_records(records, ruleset) if records else []
    if records and not games:
        from train.learning.samples import shard_files

        held = [str(r) for r in records if shard_files(r)]
        hint = f" ({', '.join(held)} holds sample shards: give each with its own --shards)" if held else ""
        fail("no records found in " + ", ".join(str(r) for r in records) + hint)
    from train.learning.samples import concat
    from train.matches.arena import new_progress

    progress = None if json_out else new_progress(transient=True)
    with progress if progress is not None else contextlib.nullcontext():
        if games:
            update = None
            if progress is not None:
                task = progress.add_task(f"{model} samples", total=len(games), score="")
                update = lambda n: progress.update(task, completed=n)  # noqa: E731
            parts.insert(0, samples_from_records(games, model, update, teacher=teacher, teacher_mix=teacher_mix,
                                                 workers=workers, cache_dir=samples_cache, drift=drift))
        samples = concat(parts, model)
        if len(samples) == 0:
            fail(f"the {len(games)} record(s) and the shards give no {model} samples")
        target = out if out is not None else Path("models") / "pretrained" / f"{model}.safetensors"
        step_done = None
        if progress is not None:
            step_task = progress.add_task(f"{model} steps", total=steps, score="")
            step_done = lambda i, losses: progress.update(  # noqa: E731
                step_task, completed=i + 1, score=f"loss {losses['total']:.4f}")
        summary = run_pretrain(samples, cfg.nets.net_config(model), cfg.learner, target, steps, batch_size, lr,
                               seed=seed, symmetries=cfg.replay.symmetries, init=init, callback=step_done,
                               device=device if device is not None else cfg.device, checkpoint_every=checkpoint_every,
                               extra={"records": len(games), "shards": [str(p) for p in shards or []],
                                      "teacher": teacher, "teacher_mix": teacher_mix if teacher else None,
                                      "value_target": drift.spec() if drift is not None else "result",
                                      "trainable": cfg.learner.trainable, "init": _net_identity(init)})
    summary["records"] = len(games)
    if json_out:
        typer.echo(json.dumps(summary))
    else:
        source = f"{len(games)} records" + (f" and {len(shards)} shard path(s)" if shards else "")
        resumed = f" (resumed at step {summary['resumed_from']})" if summary["resumed_from"] else ""
        typer.echo(f"{model}: {source}, {summary['samples']} samples, {steps} steps{resumed} in {summary['seconds']:.1f} s;"
                   f" loss {summary.get('first_loss', float('nan')):.4f} -> {summary.get('last_loss', float('nan')):.4f}")
        typer.echo(f"wrote {target}")


def _net_identity(path: Optional[Path]) -> Optional[dict]:
    """A net file's lineage entry: its name and the SHA-256 of its bytes (no directory: a path of this
    machine does not go into a net another machine reads); ``None`` for no file."""
    if path is None:
        return None
    import hashlib

    return {"file": path.name, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


@app.command("gen-records")
@train_errors
def gen_records(
    agent: Annotated[str, typer.Option(help="Agent spec playing both sides (or White with --black).")] = "expert",
    black: Annotated[Optional[str], typer.Option(help="Agent spec of Black (default: the same as --agent).")] = None,
    games: Annotated[int, typer.Option("--games", "-n", min=1, help="Number of games.")] = 10,
    out: Annotated[Path, typer.Option(help="Output directory of the JSON records (resumed if it exists).")] = Path("runs/records"),
    workers: Annotated[int, typer.Option(min=0, max=MAX_WORKERS, help="Worker processes (0: in this process).")] = 2,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Base seed; game i's seeds derive from (seed, i).")] = 0,
    json_out: Annotated[bool, typer.Option("--json", help="Print the summary as one JSON object.")] = False,
    rule: RuleOption = None,
):
    """Generate a starter corpus of JSON records (agent vs itself), in parallel; resumable."""
    from train.learning.supervised import generate_records

    progress = None
    if not json_out:
        from train.matches.arena import new_progress

        progress = new_progress()
    ruleset = ruleset_from(rule)
    if progress is not None:
        with progress:
            summary = generate_records(agent, games, out, workers=workers, seed=seed, ruleset=ruleset, black=black,
                                       progress=progress)
    else:
        summary = generate_records(agent, games, out, workers=workers, seed=seed, ruleset=ruleset, black=black)
    if json_out:
        typer.echo(json.dumps(summary))
    else:
        typer.echo(f"{summary['games']} records in {out} ({summary['played']} played now, {summary['seconds']:.1f} s);"
                   f" results {summary['results']}")


@app.command("train-approxq")
@train_errors
def train_approxq(
    out: Annotated[Path, typer.Option(help="Run directory (created; an existing run with the same settings is resumed).")],
    episodes: Annotated[int, typer.Option(help="Episodes of the run (1..100000).")] = 300,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Base seed; episode t draws from (seed, t).")] = 0,
    gamma: Annotated[str, typer.Option(help="Discount: 'dynamic' (papers/004 2.5.3: 0.9 rising to 0.99 over 100 episodes) or a fixed number in [0, 1].")] = "dynamic",
    opponents: Annotated[str, typer.Option(help="Curriculum: comma-separated agent specs or 'self' (the learner's own weights), played in equal consecutive blocks of episodes.")] = "random,greedy,self",
    alpha: Annotated[float, typer.Option(help="Learning rate at episode 0, in (0, 1] (decays as (1 + t)^-0.25).")] = 0.01,
    epsilon: Annotated[float, typer.Option(help="Exploration rate at episode 0, in [0, 1].")] = 0.3,
    checkpoint_every: Annotated[int, typer.Option(help="Episodes between checkpoints (>= 1).")] = 10,
    resume: Annotated[bool, typer.Option("--resume", help="Require an existing run in --out and continue it.")] = False,
    rule: RuleOption = None,
):
    """Approximate Q-learning of the approxq agent's linear weights (papers/004 section 2.5), resumable;
    writes OUT/weights.json (use it with approxq:weights=OUT/weights.json)."""
    from train.learning.approxq import make_config, train, win_rate
    from train.learning.config import TRAIN_RULESET

    specs = tuple(s.strip() for s in opponents.split(","))
    if not all(specs):
        fail(f"--opponents: expected comma-separated agent specs or 'self', got {opponents!r}")
    from core.errors import JiuError
    from core.options import parse_key_values
    from core.rules import Ruleset

    try:  # the training ruleset, with the --rule options over it
        ruleset = Ruleset.parse(TRAIN_RULESET.model_dump(),
                                **parse_key_values(rule or [], lambda reason: JiuError(f"--rule: {reason}")))
    except JiuError as exc:
        fail(f"--rule: {exc}" if not str(exc).startswith("--rule") else str(exc))
    fields = {"episodes": episodes, "seed": seed, "gamma": gamma, "opponents": specs, "alpha": alpha,
              "epsilon": epsilon, "checkpoint_every": checkpoint_every,
              "rules": tuple(f"{k}={v}" for k, v in ruleset.model_dump().items())}
    try:
        config = make_config(**fields)
    except ValueError as exc:
        fail(f"--{str(exc).replace('_', '-')}")
    if resume and not (out / "state.json").exists():
        fail(f"--resume: {out} holds no approxq run (no state.json)")
    if not resume and (out / "state.json").exists():
        typer.echo(f"resuming the run in {out}", err=True)
    every = max(1, config.checkpoint_every)

    def progress(row):
        if row["done"] % every == 0 or row["done"] == row["total"]:
            typer.echo(f"episode {row['done']}/{row['total']}: opponent {row['opponent']}, score (last 20) "
                       f"{win_rate(rows_seen + [row]):.2f}, epsilon {row['epsilon']:.3f}, gamma {row['gamma']:.3f}, "
                       f"|delta| {row['mean_abs_delta']:.3f}", err=True)
        rows_seen.append(row)

    rows_seen: list = []
    state = train(out, config, progress)
    typer.echo(f"{state['episode']} episodes in {out} ({state['seconds']:.1f} s); score of the last 20: "
               f"{win_rate(state['rows']):.2f}; wrote {out / 'weights.json'}")


def _opt(help_text: str):
    """A ``train-dqn`` option (``train.learning.dqn.DqnConfig`` validates it and holds the default)."""
    return typer.Option(help=help_text + ".")


@app.command("train-dqn")
@train_errors
def train_dqn(
    out: Annotated[Path, typer.Option(help="Run directory (locked; resumed when it holds a checkpoint of a run with the same options). The net: OUT/dqn.safetensors.")],
    episodes: Annotated[Optional[int], _opt("Episodes (games) of the run (default 400)")] = None,
    seed: Annotated[Optional[int], _opt("Run seed (default 0)")] = None,
    switch: Annotated[Optional[float], _opt("Fraction of the episodes in phase 1, against random (default 0.4)")] = None,
    opponent: Annotated[Optional[list[str]], typer.Option(help="Phase 2 opponent, repeatable, played in turn: an agent spec or 'self' (a frozen copy of the net) (default: greedy and self).")] = None,
    gamma: Annotated[Optional[float], _opt("Discount per agent decision (default 0.99)")] = None,
    lr: Annotated[Optional[float], _opt("Adam learning rate (default 0.001)")] = None,
    batch: Annotated[Optional[int], _opt("Transitions per update (default 32)")] = None,
    replay: Annotated[Optional[int], _opt("Replay capacity in transitions (default 30000)")] = None,
    warmup: Annotated[Optional[int], _opt("Transitions stored before the first update (default 1000)")] = None,
    alpha: Annotated[Optional[float], _opt("Priority exponent (default 0.6)")] = None,
    beta: Annotated[Optional[float], _opt("Importance-weight exponent at the start, annealed to 1 (default 0.4)")] = None,
    target_every: Annotated[Optional[int], _opt("Updates between target-net syncs (default 250)")] = None,
    train_every: Annotated[Optional[int], _opt("Agent decisions between updates (default 8)")] = None,
    eps_start: Annotated[Optional[float], _opt("Epsilon at the start of phase 1 (default 0.9)")] = None,
    eps_phase2: Annotated[Optional[float], _opt("Epsilon at the start of phase 2 (default 0.5)")] = None,
    eps_end: Annotated[Optional[float], _opt("Epsilon at the end of each phase (default 0.02)")] = None,
    next_top: Annotated[Optional[int], _opt("Next afterstates stored per transition for the double-DQN argmax (default 4)")] = None,
    shaping: Annotated[Optional[float], _opt("Weight of the material shaping potential, 0 for results only (default 1.0)")] = None,
    victim_sets: Annotated[Optional[int], _opt("Capture-pruner victim sets scored per square-forming path (default 2)")] = None,
    checkpoint_every: Annotated[Optional[int], _opt("Episodes between checkpoints (default 10)")] = None,
    blocks: Annotated[Optional[int], _opt("Residual blocks of the q net (default 2)")] = None,
    channels: Annotated[Optional[int], _opt("Channels of the q net (default 16)")] = None,
    hidden: Annotated[Optional[int], _opt("Hidden units of the q net's head (default 32)")] = None,
    battle_plies: Annotated[Optional[int], _opt("Battle plies before a game is adjudicated by stones (default 300, the training ruleset's)")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the summary as one JSON object.")] = False,
):
    """Train the dqn agent's net (AlphaDou's DQN, papers/004 2.6): double DQN, prioritized replay, a two-phase curriculum; resumable.

    Phase 1 plays random, phase 2 the --opponent agents in turn; one progress line per episode; a checkpoint
    every --checkpoint-every episodes (a killed run resumes from it with the same command). Play the result
    with dqn:model=OUT/dqn.safetensors."""
    from pydantic import ValidationError

    from train.learning.dqn import DqnConfig, config_error, train

    given = {"episodes": episodes, "seed": seed, "switch": switch, "opponents": tuple(opponent) if opponent else None,
             "gamma": gamma, "lr": lr, "batch": batch, "replay": replay, "warmup": warmup, "alpha": alpha,
             "beta": beta, "target_every": target_every, "train_every": train_every, "eps_start": eps_start,
             "eps_phase2": eps_phase2, "eps_end": eps_end, "next_top": next_top, "shaping": shaping,
             "victim_sets": victim_sets, "checkpoint_every": checkpoint_every, "blocks": blocks,
             "channels": channels, "hidden": hidden, "battle_plies": battle_plies}
    try:
        config = DqnConfig(**{k: v for k, v in given.items() if v is not None})
    except ValidationError as exc:
        fail(config_error(exc).replace("--opponents", "--opponent"))
    summary = train(config, out, progress=None if json_out else typer.echo)
    if json_out:
        typer.echo(json.dumps(summary))
    else:
        last = summary["last50"]
        typer.echo(f"{summary['episodes']} episodes, {summary['updates']} updates in {summary['seconds']} s; "
                   f"last {sum(last.values())}: {last['wins']} wins, {last['draws']} draws, {last['losses']} losses; "
                   f"net {out / 'dqn.safetensors'}")
