"""Commands on trained runs and models: ``report``, ``snapshot``, ``population``, ``exploitability``,
``diagnose``, ``export-net`` (training itself is ``frontends.cli_train``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from frontends.cli_base import (
    MAX_SEED,
    MAX_WORKERS,
    DriftEndsOption,
    RuleOption,
    app,
    check_games_in_flight,
    drift_target,
    fail,
    ruleset_from,
    train_errors,
)


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

    drift = drift_target(value_drift, value_eval, drift_ends, "upper", value_eval_target)
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


def _portable(arg: str) -> str:
    """A command-line argument as a model card records it: an absolute path relative to the working
    directory when it lies inside it, else its file name (no path of this machine goes into the card);
    anything else as given."""
    path = Path(arg)
    if not path.is_absolute():
        return arg
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return path.name


@app.command("export-net")
@train_errors
def export_net(
    nets: Annotated[list[Path], typer.Argument(help="Net files (.safetensors) to export.")],
    out: Annotated[Path, typer.Option(help="Model directory; each net is written as <kind>.safetensors.")] = Path("models/default"),
    half: Annotated[bool, typer.Option("--half/--float32", help="Store weights as float16 (half the size).")] = True,
    settings: Annotated[Optional[list[str]], typer.Option("--set", metavar="TABLE.KEY=VALUE", help="A play setting of the candidate over OUT/agent.toml (repeatable): search.FIELD=VALUE (a search.config.SearchConfig field) or agent.FIELD=VALUE (final_victim_eval, layout_sims, precision).")] = None,
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
    row, written = export_nets(nets, out, games_dir, table, command="python cli.py " + shlex.join(map(_portable, sys.argv[1:])),
                               workers=workers, games_in_flight=games_in_flight, seed=seed, progress=True, half=half)
    typer.echo(f"export gate vs {out}: {export_gate_text(row)}", err=True)
    for path in written:
        typer.echo(f"wrote {path}")
    if not row["passed"]:
        typer.echo(f"not exported: the candidate did not pass the export gate against {out} (games in {games_dir})")
        raise typer.Exit(1)
