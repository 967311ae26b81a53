"""Commands of training: ``selfplay``, ``pretrain``, ``gen-records``, ``report``, ``population``,
``exploitability``, ``diagnose``, ``export-net``, ``train-approxq``, ``train-dqn``."""

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
    RuleOption,
    app,
    check_games_in_flight,
    fail,
    ruleset_from,
    train_errors,
)

SetOption = Annotated[
    Optional[list[str]],
    typer.Option("--set", help="Config override SECTION.KEY=VALUE (repeatable), e.g. --set selfplay.games=8."),
]
DriftEndsOption = Annotated[Optional[str], typer.Option(help="The --value-drift target of a position whose game ends "
                                                        "within K plies: 'result' (the game's result) or 'drop' "
                                                        "(no target); default: 'result' (train.learning.supervised.DriftTarget).")]


def _drift_target(value_drift: int, value_eval: str | None, drift_ends: str | None, model: str,
                  value_eval_target: int | None = None):
    """``--value-drift K`` (or ``--value-eval-target K``: ``mode = "value"``), ``--value-eval`` and
    ``--drift-ends`` as a checked ``train.learning.drift.DriftTarget`` for a ``model`` net, ``None`` for
    neither (the result); a one-line error naming the options otherwise."""
    if value_eval_target is not None and value_drift:
        fail("--value-eval-target: not with --value-drift (one value target)")
    if not value_drift and value_eval_target is None:
        return None
    from train.learning.drift import DriftTarget

    options = {k: v for k, v in (("evaluator", value_eval), ("ends", drift_ends)) if v is not None}
    if value_eval_target is not None:
        drift = DriftTarget(value_eval_target, mode="value", **options)
    else:
        drift = DriftTarget(value_drift, **options)  # DriftTarget's defaults for what is not given
    try:
        drift.check(model)
    except ValueError as exc:
        flag = "--value-eval-target" if value_eval_target is not None else "--value-drift"
        fail(f"{flag}/--value-eval/--drift-ends: {exc}")
    return drift


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
    value_drift: Annotated[int, typer.Option(min=0, max=1000, help="Upper net: value target = the drift of --value-eval's margin over this many plies of the record (even; 0: the result).")] = 0,
    value_eval: Annotated[Optional[str], typer.Option(help="Evaluator (with a margin) of the --value-drift target "
                                                      "(default: the search's battle leaf value).")] = None,
    drift_ends: DriftEndsOption = None,
    value_eval_target: Annotated[Optional[int], typer.Option(min=0, max=1000, help="Upper net: value target = --value-eval's value K plies later in the record (even; 0: the position's own value, distilling the expert's two-ply value); not with --value-drift.")] = None,
    device: DeviceOption = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the summary as one JSON object.")] = False,
    rule: RuleOption = None,
):
    """Supervised pretraining on records: policy target = the played move (one-hot, blended with a
    --teacher prior if given), value target = the result, or with --value-drift K the change of the
    expert's two-ply value over the next K plies, or with --value-eval-target K that value K plies on
    (with --set learner.trainable=value only the value head learns)."""
    from train.learning.config import KINDS, check_trainable, load_config
    from train.learning.supervised import check_teacher, read_records, samples_from_records
    from train.learning.supervised import pretrain as run_pretrain

    _check_device(device)
    if model not in KINDS:
        fail(f"--model {model!r}: expected one of {', '.join(KINDS)}")
    check_teacher(model, teacher)
    drift = _drift_target(value_drift, value_eval, drift_ends, model, value_eval_target)
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
        fail("no records found in " + ", ".join(str(r) for r in records))
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
                               device=device if device is not None else cfg.device,
                               extra={"records": len(games), "shards": [str(p) for p in shards or []],
                                      "teacher": teacher, "teacher_mix": teacher_mix if teacher else None,
                                      "value_target": drift.spec() if drift is not None else "result",
                                      "trainable": cfg.learner.trainable, "init": _net_identity(init)})
    summary["records"] = len(games)
    if json_out:
        typer.echo(json.dumps(summary))
    else:
        source = f"{len(games)} records" + (f" and {len(shards)} shard path(s)" if shards else "")
        typer.echo(f"{model}: {source}, {summary['samples']} samples, {steps} steps in {summary['seconds']:.1f} s;"
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


@app.command()
@train_errors
def report(
    run_dir: Annotated[Path, typer.Argument(help="A training run directory (python cli.py selfplay).")],
    out: Annotated[Optional[Path], typer.Option(help="Output directory (default RUN_DIR/report).")] = None,
):
    """Plot losses, win rates, self-play speed and the learning curve (Elo vs games and hours) into PNG files;
    with population self-play also the RP-ELO and the Nash weights."""
    from train.learning.report import curve_lines, population_lines, render_report

    written = render_report(run_dir, out)
    for path in written:
        typer.echo(str(path))
    summary = next(p for p in written if p.name == "summary.json")
    data = json.loads(summary.read_text(encoding="utf-8"))
    for line in curve_lines(data) + population_lines(data):
        typer.echo(line)


@app.command()
@train_errors
def snapshot(
    run_dir: Annotated[Path, typer.Argument(help="A training run directory (python cli.py selfplay), not running.")],
    dest: Annotated[Path, typer.Argument(help="The snapshot's run directory (an earlier snapshot there is replaced).")],
    shards: Annotated[bool, typer.Option("--shards/--no-shards", help="Keep the replay window's sample shards.")] = False,
    changes: Annotated[Optional[list[str]], typer.Option(
        "--set", metavar="SECTION.KEY=VALUE",
        help="Make DEST a branch: this config field changed (repeatable; not model or nets.*), logged in its "
             "metrics.jsonl. With --shards the branch's next iteration trains on the run's replay window.")] = None,
):
    """Copy a run's resumable core (state, config, metrics, best and latest nets, the curve's lineage and
    results, population) to DEST, dropping finished games and matches: selfplay --resume DEST continues it.
    With --set, DEST is a branch of the run with those config fields changed."""
    from train.learning.snapshot import snapshot as take_snapshot

    info = take_snapshot(run_dir, dest, shards=shards, changes=changes or ())
    typer.echo(f"wrote {info['dest']}: {info['files']} files, {info['bytes'] / 1e6:.1f} MB; run totals "
               f"{info['games']} games, {info['samples']} samples ({info['archived_games']} games archived)")
    for field, (old, new) in info["changes"].items():
        typer.echo(f"branch: {field} {json.dumps(old)} -> {json.dumps(new)}")


@app.command()
@train_errors
def population(
    run_dir: Annotated[Path, typer.Argument(help="A training run directory (python cli.py selfplay).")],
    source: Annotated[str, typer.Option(help="The players: population (the run's population members, "
                                        "selfplay.opponents = population) or curve (the learning curve's best nets: the lineage).")] = "population",
    games: Annotated[int, typer.Option("--games", "-n", min=2, max=100_000, help="Games per pair (even, colour-balanced).")] = 2,
    workers: Annotated[int, typer.Option(min=0, max=MAX_WORKERS, help="Worker processes (0: in this process).")] = 0,
    games_in_flight: Annotated[int, typer.Option("--games-in-flight", help="Games each worker plays at once on the batched engine.")] = 16,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Base seed of the matches.")] = 0,
    out: Annotated[Optional[Path], typer.Option(help="Output directory (default RUN_DIR/population/round-robin-SOURCE; resumable).")] = None,
    versus: Annotated[Optional[Path], typer.Option(help="A second run whose players (the same --source) join as a second population: adds the relative population performance (RPP, papers/002 Def. 5.1) of RUN_DIR's against it; labels get the runs' names.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as one JSON object.")] = False,
):
    """Round robin of a run's population (or curve) nets: payoff matrix, Elo, maximum-entropy Nash weights and Nash clustering (papers/002); with --versus, two runs' and their RPP."""
    from train.learning.modeldir import load_run_config
    from train.learning.population import lineage_players, results_of, rp_elo
    from train.matches.tournament import clusters_text, run_tournament

    if games % 2:
        fail(f"--games: must be even (colour-balanced pairs), got {games}")
    check_games_in_flight(games_in_flight)
    players = lineage_players(run_dir, source)
    others = lineage_players(versus, source) if versus is not None else []
    if versus is not None:
        a_name, b_name = run_dir.resolve().name, versus.resolve().name
        if a_name == b_name:
            fail(f"--versus: {versus} has the same name as {run_dir}; the labels need different run names")
        players = [(f"{a_name}/{label}", agent) for label, agent in players]
        others = [(f"{b_name}/{label}", agent) for label, agent in others]
    if len(players) + len(others) < 2:
        fail(f"--source {source}: {run_dir} has {len(players)} player(s); a round robin needs 2")
    cfg = load_run_config(run_dir, device="cpu")
    default_out = run_dir / "population" / (f"round-robin-{source}" + (f"-vs-{versus.resolve().name}" if versus else ""))
    data = run_tournament(players, games, workers=workers, seed=seed, ruleset=cfg.ruleset, progress=not json_out,
                          out_dir=out or default_out, games_in_flight=games_in_flight, versus=others).data
    if others:  # each run's newest player against its own lineage and against the other run's (RP-ELO)
        data["rp_elo"] = [{**(rp_elo(newest, results_of(data["pairs"], newest, [a for a, _ in pop if a != newest])) or {}),
                           "player": newest, "against": name}
                          for newest in (players[-1][0], others[-1][0])
                          for name, pop in ((a_name, players), (b_name, others))]
    if json_out:
        typer.echo(json.dumps(data))
        return
    agents = data["agents"]
    typer.echo("payoff (row's score rate against column):")
    width = max(len(a) for a in agents)
    typer.echo("  ".join([" " * width, *(f"{a[-5:]:>6}" for a in agents)]))
    for a, row in zip(agents, data["payoff"]):
        typer.echo("  ".join([f"{a:>{width}}", *("     -" if x is None else f"{x:6.2f}" for x in row)]))
    elo = {r["agent"]: r for r in data["ratings"]["ratings"]}
    for a in agents:
        typer.echo(f"{a}: Nash weight {data['nash']['weights'][a]:.3f}, Elo {elo[a]['elo']:+.0f} "
                   f"[{elo[a]['ci95'][0]:+.0f}, {elo[a]['ci95'][1]:+.0f}]")
    typer.echo(clusters_text(data))
    for row in data.get("rp_elo", []):
        if row.get("rp_elo") is not None:
            typer.echo(f"RP-ELO of {row['player']} against {row['against']}'s players: {row['rp_elo']:.0f} "
                       f"[{row['ci95'][0]:.0f}, {row['ci95'][1]:.0f}] over {row['games']} games")
    if data.get("populations"):
        typer.echo(f"RPP of {run_dir.resolve().name} against {versus.resolve().name}: {data['populations']['rpp']:+.3f}"
                   " (expected score per game in [-1, 1] of the first population's Nash mixture against the second's)")


@app.command()
@train_errors
def exploitability(
    run_dir: Annotated[Path, typer.Argument(help="A training run directory (python cli.py selfplay) or a model directory with a config.toml (models/default): its training configuration is the best response's.")],
    net: Annotated[str, typer.Option(help="The frozen policy: a label KIND@iNNNN of the run (its checkpoint) or a net file.")],
    games: Annotated[int, typer.Option(min=1, max=100_000, help="Self-play games per iteration of the best response.")] = 16,
    iterations: Annotated[int, typer.Option(min=1, max=100_000, help="Iterations of the best response's training.")] = 4,
    eval_games: Annotated[int, typer.Option("--eval-games", min=2, max=100_000, help="Games of the best response against the frozen policy (even).")] = 20,
    workers: Annotated[int, typer.Option(min=0, max=MAX_WORKERS, help="Worker processes (0: in this process).")] = 0,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Base seed of the evaluation match.")] = 0,
    out: Annotated[Optional[Path], typer.Option(help="Output directory (default RUN_DIR/exploitability/NET, for a model directory runs/exploitability/NET; resumable).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as one JSON object.")] = False,
):
    """Approximate exploitability (papers/002): a fresh copy of a frozen net trains against it alone, then its win rate against it (95% Wilson CI)."""
    from train.learning.exploitability import default_out_dir
    from train.learning.exploitability import exploitability as measure

    if eval_games % 2:
        fail(f"--eval-games: must be even (colour-balanced pairs), got {eval_games}")
    target = out or default_out_dir(run_dir, net)
    data = measure(run_dir, net, target, games, iterations, eval_games, workers=workers, seed=seed,
                   progress=not json_out)
    if json_out:
        typer.echo(json.dumps(data))
        return
    lo, hi = data["wilson_ci95"]
    typer.echo(f"best response to {net} ({iterations} iterations x {games} games): +{data['wins']} ={data['draws']} "
               f"-{data['losses']}, win rate {data['win_rate']:.3f} [{lo:.3f}, {hi:.3f}] (95% Wilson) in {target}")


@app.command()
@train_errors
def diagnose(
    model_dir: Annotated[Path, typer.Argument(help="A model directory holding slm/upper/lower .safetensors, or one "
                                              "net file (a run's checkpoint).")],
    records: Annotated[Optional[list[Path]], typer.Option("--records", help="Held-out record files or directories "
                                                          "(games the nets were not trained on; default without "
                                                          "--shards: the shipped corpus data/heldout-expert).")] = None,
    shards: Annotated[Optional[list[Path]], typer.Option("--shards", help="Sample shards (.npz), directories or quoted "
                                                         "glob patterns of them (repeatable), e.g. "
                                                         "'RUN/shards/upper/i0005-*.npz', shards written after the "
                                                         "net's checkpoint: how well the nets predict those search "
                                                         "targets (alone unless --records is given).")] = None,
    max_records: Annotated[int, typer.Option(min=1, max=100_000, help="Use at most this many games (the last).")] = 200,
    positions: Annotated[int, typer.Option(min=1, max=1_000_000, help="Positions per net, drawn uniformly.")] = 4000,
    victims: Annotated[int, typer.Option(min=0, max=1000, help="Capture-pruner sets the lower net ranks (0: all).")] = 8,
    victim_reference: Annotated[Optional[str], typer.Option(help="Evaluator plugin spec whose best victim set the "
                                                        "lower net and the pruner are scored against (default: "
                                                        "the expert's two-ply value, eval.expert:plies=2; 'none': "
                                                        "no reference).")] = None,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Seed of the position sample.")] = 0,
    value_drift: Annotated[int, typer.Option(min=0, max=1000, help="Also score the upper value against the drift of "
                                             "--value-eval's margin over this many plies of the records (even; 0: off).")] = 0,
    value_eval: Annotated[Optional[str], typer.Option(help="Evaluator (with a margin) of the --value-drift target "
                                                      "(default: the search's battle leaf value).")] = None,
    drift_ends: DriftEndsOption = None,
    value_eval_target: Annotated[Optional[int], typer.Option(min=0, max=1000, help="Also score the upper value against --value-eval's value this many plies on (even; 0: the position's own); not with --value-drift.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as one JSON object.")] = False,
    rule: RuleOption = None,
):
    """Where strength is lost: policy top-1/top-3 agreement with the records' moves, value calibration
    (sign accuracy, Brier score), and the lower net's victim choice against the capture pruner's and
    against the expert's two-ply value of the position after each set; with an SLM, who formed the
    first square, what the knowledge evaluations say at the layout's end and how well they and the
    stone difference early in the battle predict the result; with --shards, the policy's
    cross-entropy and KL divergence to unseen self-play targets; with --value-drift K (or
    --value-eval-target K), how well the upper value predicts that target (train.learning.diagnose)."""
    import json

    from train.learning.diagnose import HELDOUT_RECORDS, VICTIM_REFERENCE, format_report
    from train.learning.diagnose import diagnose as run_diagnose

    drift = _drift_target(value_drift, value_eval, drift_ends, "upper", value_eval_target)
    reference = VICTIM_REFERENCE if victim_reference is None else victim_reference
    if reference.strip().lower() == "none":
        reference = None
    else:
        from knowledge.plugins import REGISTRY
        from knowledge.registry import SpecError

        try:
            REGISTRY.create(reference, "evaluator")
        except (SpecError, ValueError) as exc:
            fail(f"--victim-reference: {exc}")
    record_paths = records or ([] if shards else [HELDOUT_RECORDS])
    report = run_diagnose(model_dir, record_paths, max_records=max_records, max_positions=positions, victims=victims,
                          seed=seed, ruleset=ruleset_from(rule), victim_reference=reference, shard_paths=shards or [],
                          drift=drift)
    typer.echo(json.dumps(report) if json_out else format_report(report))


@app.command("export-net")
@train_errors
def export_net(
    nets: Annotated[list[Path], typer.Argument(help="Net files (.safetensors) to export.")],
    out: Annotated[Path, typer.Option(help="Model directory; each net is written as <kind>.safetensors.")] = Path("models/default"),
    half: Annotated[bool, typer.Option("--half/--float32", help="Store weights as float16 (half the size).")] = True,
    settings: Annotated[Optional[list[str]], typer.Option("--set", metavar="TABLE.KEY=VALUE", help="A play setting of the candidate over OUT/agent.toml (repeatable): search.FIELD=VALUE (a search.config.SearchConfig field) or agent.FIELD=VALUE (final_victim_eval, layout_sims).")] = None,
    games_dir: Annotated[Optional[Path], typer.Option(help="Where the candidate and the export gate's games go (default: runs/export-<OUT name>-<hash of the nets and settings>; the same command resumes them).")] = None,
    workers: Annotated[int, typer.Option(min=1, max=MAX_WORKERS, help="Worker processes of the export gate.")] = 2,
    games_in_flight: Annotated[int, typer.Option(help="Games each worker plays at once in the export gate.")] = 8,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Seed of the export gate's games.")] = 1,
):
    """Ship trained nets (and play settings) into a model directory through the export gate: the
    candidate (OUT with these nets and --set settings) plays OUT as it stands, both as jfa, in an SPRT
    (OUT/config.toml's [gate]: elo0, elo1, alpha, beta, at most export_games games); only a candidate that
    passes is written, with a lineage entry in OUT's model card and lineage.json. A directory without a
    playable model takes the nets without a gate. Exit status 1 when the gate fails."""
    import shlex

    from train.learning.config import ConfigError, apply_overrides
    from train.learning.modeldir import export_gate_text, export_nets, export_work_dir

    check_games_in_flight(games_in_flight)
    try:
        table = apply_overrides({}, settings or [])
    except ConfigError as exc:
        fail(str(exc))
    if any(not isinstance(v, dict) for v in table.values()):
        fail("--set: expected TABLE.KEY=VALUE with TABLE search or agent, e.g. --set search.simulations=32")
    games_dir = games_dir or export_work_dir(nets, out, table)
    row, written = export_nets(nets, out, games_dir, table, command="python cli.py " + shlex.join(sys.argv[1:]),
                               workers=workers, games_in_flight=games_in_flight, seed=seed, progress=True, half=half)
    typer.echo(f"export gate vs {out}: {export_gate_text(row)}", err=True)
    for path in written:
        typer.echo(f"wrote {path}")
    if not row["passed"]:
        typer.echo(f"not exported: the candidate did not pass the export gate against {out} (games in {games_dir})")
        raise typer.Exit(1)


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
