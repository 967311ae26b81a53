"""Commands of matches and benchmarks: ``bench search|rules|selfplay``, ``agents``, ``arena``, ``tournament``,
``experiment``, ``play``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from frontends import DEFAULT_AGENT
from frontends.cli_base import (
    AGENT_HELP,
    MAX_SEED,
    MAX_WORKERS,
    ImportOption,
    RuleOption,
    agent_errors,
    app,
    bench_app,
    check_games_in_flight,
    cli_errors,
    fail,
    ruleset_from,
)


@bench_app.command("search")
@cli_errors
def bench_search(
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    simulations: Annotated[str, typer.Option(help="Comma-separated simulation counts.")] = "400,800,1600",
    threads: Annotated[str, typer.Option(help="Comma-separated WU-UCT thread counts.")] = "1,2,4,8,16",
    torch_threads: Annotated[int, typer.Option(min=1, help="Torch intra-op threads of the WU-UCT evaluators and the "
                                               "net-only figures (serial: 1); 2 only on an otherwise idle machine.")] = 1,
    inference_threads: Annotated[int, typer.Option(min=1, help="Threads serving the WU-UCT evaluators (net-only: as many "
                                                   "concurrent callers); 1 keeps the net on one core.")] = 2,
):
    """Serial MCTS vs WU-UCT (1/2/4/8/16 threads) on layout and battle positions with the tiny nets (JFA Table 3)."""
    from bench.search import run_search_benchmark

    def ints(text: str, what: str) -> tuple[int, ...]:
        try:
            values = tuple(int(x) for x in text.split(",") if x.strip())
        except ValueError:
            fail(f"--{what} {text!r}: expected comma-separated integers")
        if not values or min(values) < 1:
            fail(f"--{what} {text!r}: expected positive integers")
        return values

    result = run_search_benchmark(ints(simulations, "simulations"), ints(threads, "threads"), progress=not json_out,
                                  torch_threads=torch_threads, inference_threads=inference_threads)
    if json_out:
        typer.echo(json.dumps(result, default=float))


@bench_app.command("selfplay")
@cli_errors
def bench_selfplay(
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    device: Annotated[Optional[str], typer.Option(help="auto, cpu, cuda or cuda:N (default: the shipped configuration's).")] = None,
    games_in_flight: Annotated[Optional[int], typer.Option("--games-in-flight", help="Games each worker plays at once (default: the configuration's, else 16 on CPU).")] = None,
    workers: Annotated[Optional[int], typer.Option(help="Worker processes (0: in this process; default: the shipped configuration's, 2).")] = None,
    games: Annotated[Optional[int], typer.Option(help="Games to play (default: 2 x games in flight x workers).")] = None,
    kind: Annotated[str, typer.Option(help="upper (battle games, the shipped model's) or slm (layout games).")] = "upper",
    config: Annotated[Optional[Path], typer.Option("--config", "-c", help="A training config file whose search is measured (default: models/default/config.toml).")] = None,
    sets: Annotated[Optional[list[str]], typer.Option("--set", help="Config override SECTION.KEY=VALUE (repeatable), e.g. --set selfplay.search.value_evaluator=none.")] = None,
):
    """Self-play speed of a training configuration (default: the shipped one) with the shipped nets: searched positions/s, batch sizes, time in net/knowledge/search."""
    from bench.selfplay import run_selfplay_benchmark
    from train.learning.config import ConfigError

    try:
        result = run_selfplay_benchmark(games, games_in_flight, workers, device, kind, config=config, sets=sets,
                                        progress=None if json_out else lambda line: typer.echo(line, err=True))
    except ConfigError as exc:
        fail(str(exc))
    if json_out:
        typer.echo(json.dumps(result))
    else:
        typer.echo(f"{result['positions_per_second']:.2f} searched positions/s ({result['games']} {kind} games, "
                   f"{result['games_in_flight']} in flight x {result['workers']} workers, device {result['device']}); "
                   f"batch mean {result['batch']['mean']}, max {result['batch']['max']}; shares "
                   + ", ".join(f"{k} {v:.0%}" for k, v in result["shares"].items()))


@bench_app.command("rules")
@cli_errors
def bench_rules(
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    seconds: Annotated[float, typer.Option(min=0.2, help="Time budget per measurement (seconds).")] = 3.0,
):
    """Numba engine vs the pure-Python reference: move generations/s, random games/s, 2-thread speed-up."""
    from bench.rules import run_rules_benchmark

    result = run_rules_benchmark(seconds=seconds, progress=not json_out)
    if json_out:
        typer.echo(json.dumps(result))





@app.command()
@agent_errors
def agents(
    name: Annotated[Optional[str], typer.Argument(help="One agent (default: all).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the catalogue as one JSON list.")] = False,
    markdown: Annotated[bool, typer.Option(
        "--markdown", help="Print the catalogue as Markdown (docs/agents.md).")] = False,
    imports: ImportOption = None,
):
    """List the agents and their options (type, range, default): what agent specs NAME:key=value,... accept."""
    import catalog

    catalog.import_plugins(imports or ())
    entries = catalog.agent_catalogue(name)
    if json_out:
        typer.echo(json.dumps(entries))
        return
    if markdown:
        typer.echo(catalog.agents_markdown(entries), nl=False)
        return
    for entry in entries:
        typer.echo(f"{entry['name']}: {entry['summary']}")
        for row in entry["options"]:
            kind = f"{row['type']} {row['range']}".strip()
            typer.echo(f"  {row['name']:<17} {kind:<28} default {row['default']:<8} {row['description']}")
    if name is None:
        typer.echo("Specs: NAME[:key=value,...], e.g. mcts:sims=400,threads=2; LAYOUT+BATTLE plays the two phases "
                   "with two agents (slm+expert).")


@app.command()
@agent_errors
def arena(
    agent_a: Annotated[str, typer.Argument(metavar="A", help="Agent spec, optionally LABEL=SPEC (a short name for a long spec, e.g. new=jfa:upper=new.safetensors). " + AGENT_HELP)],
    agent_b: Annotated[str, typer.Argument(metavar="B", help="Agent spec of the opponent, optionally LABEL=SPEC.")],
    games: Annotated[int, typer.Option("--games", "-n", help="Games (even: pairs with colours swapped).")] = 20,
    workers: Annotated[int, typer.Option(min=0, max=MAX_WORKERS, help="Worker processes (0: play in this process).")] = 1,
    games_in_flight: Annotated[int, typer.Option("--games-in-flight", help="Games each worker plays at once on the batched engine (their searches' leaves evaluated together; move times then shared). 1: each game alone, the agents' own threads and times.")] = 1,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED,
                                      help="Base seed; pair k's game seed derives from (seed, k).")] = 0,
    out: Annotated[
        Optional[Path], typer.Option(help="Run directory (resumed if it exists). Default: runs/arena/A__vs__B.")
    ] = None,
    opening_plies: OpeningOption = 0,
    sprt: Annotated[Optional[str], typer.Option(metavar="ELO0,ELO1", help="Stop as soon as the pentanomial SPRT of A against B decides (e.g. 0,40); -n is the cap.")] = None,
    alpha: Annotated[float, typer.Option(min=0.0001, max=0.5, help="SPRT false-positive rate.")] = 0.05,
    beta: Annotated[float, typer.Option(min=0.0001, max=0.5, help="SPRT false-negative rate.")] = 0.05,
    json_out: Annotated[bool, typer.Option("--json", help="Print the summary as one JSON object.")] = False,
    imports: ImportOption = None,
    rule: RuleOption = None,
):
    """Colour-balanced match A vs B: win rate with SE and 95% CI, Elo, decision times; resumable;
    with --sprt it stops when the test decides. A player LABEL=SPEC is named LABEL in the lines and
    the default directory."""
    from rich.console import Console

    from train.matches.arena import labelled_player, run_arena
    from train.matches.tournament import pair_dir_name

    check_games_in_flight(games_in_flight)
    bounds = None
    if sprt is not None:
        parts = sprt.split(",")
        try:
            elo0, elo1 = (float(x) for x in parts)
        except ValueError:
            fail(f"--sprt {sprt!r}: expected ELO0,ELO1 (two numbers, e.g. 0,40)")
        if not (abs(elo0) <= 1000 and abs(elo1) <= 1000 and elo1 > elo0):
            fail(f"--sprt {sprt!r}: expected -1000 <= ELO0 < ELO1 <= 1000")
        bounds = (elo0, elo1, alpha, beta)
    ruleset = ruleset_from(rule)
    player_a, player_b = labelled(agent_a), labelled(agent_b)
    label_a, label_b = labelled_player(player_a)[0], labelled_player(player_b)[0]
    out_dir = out if out is not None else Path("runs") / "arena" / pair_dir_name(label_a, label_b)
    summary = run_arena(player_a, player_b, games, workers=workers, seed=seed, out_dir=out_dir, ruleset=ruleset,
                        progress=not json_out, imports=imports or (), sprt=bounds, games_in_flight=games_in_flight,
                        opening_plies=opening_plies)
    if json_out:
        typer.echo(json.dumps({**summary.data, "out_dir": str(out_dir)}))
    else:
        Console().print(summary_table(summary.data))
        test = summary.data.get("sprt")
        if test is not None:
            verdict = {"H1": f"H1 (A is {test['elo1']:g} Elo better)", "H0": f"H0 (A is not {test['elo0']:g} Elo better)"}
            typer.echo(f"SPRT [{test['elo0']:g}, {test['elo1']:g}] alpha {test['alpha']:g} beta {test['beta']:g}: "
                       f"LLR {test['llr']:+.2f} in [{test['lower']:.2f}, {test['upper']:.2f}] after "
                       f"{summary.games} games: {verdict.get(test['decision'], 'undecided')}")
        echo_repeats(summary.data)
        typer.echo(f"records and summary.json in {out_dir}")


OpeningOption = Annotated[int, typer.Option(
    "--opening-plies",
    help="Random layout placements (0..64) that start both games of each pair, as an opening book: agents that do "
         "not sample replay one game per colour without it.")]


def echo_repeats(data: dict[str, Any]) -> None:
    """A note when a match's games repeat (fewer ``distinct_games`` than games)."""
    distinct, games = data.get("distinct_games"), data.get("games", 0)
    if distinct is not None and distinct < games:
        name = " vs ".join(data.get("labels") or (data["a"], data["b"])) + ": " if "a" in data else ""
        typer.echo(f"note: {name}only {distinct} of the {games} games differ: the agents do not sample, so their "
                   "games repeat; --opening-plies K starts each pair from K random placements")


def labelled(text: str) -> str | tuple[str, str]:
    """A match player from the command line: ``LABEL=SPEC`` (an ``=`` before any ``:``, which no spec has) as ``(label, spec)``,
    else the spec itself (its own label)."""
    label, eq, spec = text.partition("=")
    if not eq or ":" in label:
        return text
    if not label.strip() or not spec.strip():
        fail(f"agent {text!r}: expected LABEL=SPEC with both parts given")
    return label.strip(), spec.strip()


@app.command()
@agent_errors
def tournament(
    agents: Annotated[list[str], typer.Argument(metavar="AGENT...", help="At least two agent specs, each optionally LABEL=SPEC (a short name for a long spec, e.g. old=jfa:upper=old.safetensors). " + AGENT_HELP)],
    games: Annotated[int, typer.Option("--games", "-n", help="Games per pair (even).")] = 20,
    workers: Annotated[int, typer.Option(min=0, max=MAX_WORKERS, help="Worker processes shared by all pairs (0: in this process).")] = 1,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Base seed of every pair.")] = 0,
    out: Annotated[Path, typer.Option(help="Run directory (resumed if it exists).")] = Path("runs/tournament"),
    anchor: Annotated[Optional[str], typer.Option(help="Agent held at Elo 0 (default: mean 0).")] = None,
    versus: Annotated[Optional[list[str]], typer.Option(
        "--versus", help="An agent of a second population (repeatable): adds the relative population performance "
                         "(RPP) of AGENT... against these.")] = None,
    games_in_flight: Annotated[int, typer.Option("--games-in-flight", help="Games each worker plays at once on the batched engine (as arena's).")] = 1,
    opening_plies: OpeningOption = 0,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as one JSON object.")] = False,
    imports: ImportOption = None,
    rule: RuleOption = None,
):
    """Round robin: an arena per pair; win rates by colour with decision latency, payoff matrix, Bradley-Terry
    Elo with 95% CIs, maximum-entropy Nash weights, Nash clustering and gamescape (JSON, Markdown, PNG); RPP with --versus."""
    from rich.console import Console

    from train.matches.tournament import RESULT_FILE, TABLE_FILE, clusters_text, rich_tables, run_tournament

    check_games_in_flight(games_in_flight)
    result = run_tournament([labelled(a) for a in agents], games, workers=workers, seed=seed, out_dir=out,
                            ruleset=ruleset_from(rule), progress=not json_out, imports=imports or (), anchor=anchor,
                            versus=[labelled(a) for a in versus or ()], games_in_flight=games_in_flight,
                            opening_plies=opening_plies)
    if json_out:
        typer.echo(json.dumps(result.data))
    else:
        console = Console()
        for table in rich_tables(result.data):
            console.print(table)
        typer.echo(clusters_text(result.data))
        for pair in result.data["pairs"]:
            echo_repeats(pair)
        typer.echo(f"wrote {out / RESULT_FILE}, {out / TABLE_FILE}, {out / 'payoff.png'} and {out / 'gamescape.png'}")


@app.command()
@agent_errors
def experiment(
    name: Annotated[Optional[str], typer.Argument(metavar="NAME", help="A built-in experiment (see --list).")] = None,
    spec: Annotated[Optional[Path], typer.Option("--spec", help="Your own experiment spec file (.toml or .json) instead of NAME.")] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the built-in experiments and exit.")] = False,
    games: Annotated[Optional[int], typer.Option("--games", "-n", help="Games per match row, or self-play runs per squares row (even; default: the spec's).")] = None,
    workers: Annotated[int, typer.Option(min=0, max=MAX_WORKERS, help="Worker processes shared by all rows (0: in this process).")] = 1,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Base seed of every row.")] = 0,
    out: Annotated[Optional[Path], typer.Option(help="Run directory (default runs/experiments/NAME).")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the run in --out (finished games and rows are kept).")] = False,
    param: Annotated[Optional[list[str]], typer.Option("--param", "-p", help="Spec parameter NAME=VALUE (repeatable), e.g. -p hbm_sims=8.")] = None,
    rows: Annotated[Optional[str], typer.Option(help="Comma-separated row ids to run (default: all).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print result.json as one JSON object.")] = False,
):
    """Run one of the papers' experiments (JFA Tables 3-5, Figs. 5-6) or your own spec: result.json, table.md, PNGs."""
    import shlex

    from train.experiments.run import TABLE_FILE, run_experiment
    from train.experiments.spec import list_experiments, load_spec, parse_params

    if list_:
        for e in list_experiments():
            params = " ".join(f"{k}={v}" for k, v in e["params"].items())
            typer.echo(f"{e['name']:<8} {e['kind']:<14} {e['title']}")
            typer.echo(f"         rows: {', '.join(e['rows'])}")
            if params:
                typer.echo(f"         params: {params}")
            for problem in e["problems"]:
                typer.echo(f"         not runnable yet: {problem}")
        return
    if (name is None) == (spec is None):
        fail("give an experiment NAME or --spec FILE (python cli.py experiment --list shows the built-ins)")
    exp = load_spec(spec if spec is not None else name)
    timer = None
    if exp.kind == "decision-time":
        from bench.search import measure_decision_time as timer
    command = "python cli.py experiment " + " ".join(shlex.quote(a) for a in sys.argv[2:])
    result = run_experiment(exp, out, games=games, workers=workers, seed=seed, params=parse_params(param),
                            rows=[r.strip() for r in rows.split(",") if r.strip()] if rows else None,
                            resume=resume, progress=not json_out, timer=timer, command=command)
    out_dir = out if out is not None else Path("runs") / "experiments" / exp.name
    if json_out:
        typer.echo(json.dumps({**result, "out_dir": str(out_dir)}))
    else:
        typer.echo((out_dir / TABLE_FILE).read_text(encoding="utf-8"))
        typer.echo(f"wrote {out_dir / 'result.json'}, {out_dir / TABLE_FILE}" +
                   "".join(f", {p}" for p in result["plots"]))


@app.command()
@agent_errors
def play(
    agent: Annotated[str, typer.Option(help="The opponent's agent spec (default: the strongest measured, docs/results.md). " + AGENT_HELP)] = DEFAULT_AGENT,
    human: Annotated[str, typer.Option(help="Your colour: w (White, places first) or b.")] = "w",
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="The agent's seed.")] = 0,
    record: Annotated[Optional[Path], typer.Option(help="Write the JSON record here at the end or on quit.")] = None,
    imports: ImportOption = None,
    rule: RuleOption = None,
):
    """Play against an agent in the terminal (type moves in notation; moves, undo, save [FILE], quit)."""
    import catalog
    from frontends.terminal import play as play_game
    from train.matches.arena import check_agent_spec

    catalog.import_plugins(imports or ())
    ruleset = ruleset_from(rule)
    if human not in ("w", "b"):
        fail(f"--human {human!r}: expected w or b")
    check_agent_spec(agent, "--agent")
    try:
        play_game(agent, human, seed, ruleset, record)
    except KeyboardInterrupt:
        typer.echo("interrupted" + (f"; record written to {record}" if record is not None else ""), err=True)
        raise typer.Exit(130) from None


def summary_table(data: dict[str, Any]):
    """A rich ``Table`` of an arena summary dictionary (``train.matches.arena.ArenaSummary.data``)."""
    from rich.table import Table

    from train.matches.arena import PHASES

    def pct(x):
        return "-" if x is None else f"{100 * x:.1f}%"

    def interval(ci, fmt):
        if ci is None:
            return "-"
        lo, hi = ci
        return f"{'-inf' if lo is None else fmt(lo)} .. {'+inf' if hi is None else fmt(hi)}"

    label_a, label_b = data.get("labels") or (data["a"], data["b"])
    t = Table(title=f"{label_a} (A) vs {label_b} (B): {data['games']} games")
    t.add_column("")
    t.add_column("games", justify="right")
    t.add_column("A +/=/-", justify="right")
    t.add_column("A score", justify="right")
    t.add_column("SE", justify="right")
    t.add_column("95% CI (normal)", justify="right")
    t.add_column("95% CI (Wilson)", justify="right")
    rows = [("all", data), ("A white", data["by_colour"]["a_white"]), ("A black", data["by_colour"]["a_black"])]
    for label, d in rows:
        t.add_row(label, f"{d['games']:g}", f"{d['wins']:g}/{d['draws']:g}/{d['losses']:g}", pct(d["win_rate"]),
                  "-" if d["se"] is None else f"{d['se']:.4f}", interval(d["ci95"], pct),
                  interval(d["wilson_ci95"], pct))
    elo = data["elo"]
    t.caption = (
        f"Elo A-B: {_fmt_elo(elo, data['win_rate'])} (95% CI {interval(data['elo_ci95'], lambda v: f'{v:+.0f}')}); "
        f"mean length {data['mean_game_length'] or 0:.0f} plies; ends: "
        + ", ".join(f"{k} {v}" for k, v in data["reasons"].items())
        + "\nmean / p95 seconds per move: "
        + "; ".join(
            f"{who.upper()} {ph} {_fmt_s(data['time'][who][ph]['mean'])} / {_fmt_s(data['time'][who][ph]['p95'])}"
            for who in "ab" for ph in PHASES
        )
    )
    return t


def _fmt_elo(elo, rate) -> str:
    if elo is None:
        return "-" if rate is None else ("+inf" if rate > 0.5 else "-inf")
    return f"{elo:+.0f}"


def _fmt_s(x):
    return "-" if x is None else f"{x:.4f}"
