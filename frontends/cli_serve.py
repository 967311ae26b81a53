"""Commands of the front ends: ``serve`` (browser board), ``engine`` (engine protocol), ``analyze``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from frontends import DEFAULT_AGENT
from frontends.cli_base import MAX_SEED, RuleOption, app, ruleset_from, train_errors


@app.command()
@train_errors
def serve(
    host: Annotated[str, typer.Option(help="Address to bind (default: this machine only).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port.")] = 8000,
    agent: Annotated[Optional[list[str]], typer.Option(help="An agent spec the board offers; the first is the new-game form's default (frontends.DEFAULT_AGENT when none). Repeat it to offer more; only these may name weights files (a browser may not; docs/server.md).")] = None,
    max_games: Annotated[int, typer.Option(min=1, max=1024, help="Games kept at once, and as many reviews (the least recently used goes).")] = 32,
):
    """A browser board: play against any agent, see its search, review records (FastAPI + uvicorn)."""
    from frontends.server import serve as run_server
    from train.matches.arena import check_agent_spec

    specs = agent or [DEFAULT_AGENT]
    for spec in specs:
        check_agent_spec(spec, "--agent")
    run_server(host, port, default_agent=specs[0], max_games=max_games, agents=specs[1:])


@app.command()
@train_errors
def engine(
    agent: Annotated[str, typer.Option(help="The agent that plays genmove/go (a search agent for analyze; default: the strongest measured, docs/results.md).")] = DEFAULT_AGENT,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="The agent's seed.")] = 0,
    rule: RuleOption = None,
):
    """The engine protocol on stdin/stdout (GTP-like commands, or UGI after `ugi`; docs/engine-protocol.md)."""
    from frontends.engine import run_engine
    from train.matches.arena import check_agent_spec

    check_agent_spec(agent, "--agent")
    raise typer.Exit(run_engine(sys.stdin, sys.stdout, agent, seed, ruleset_from(rule)))


@app.command()
@train_errors
def analyze(
    record: Annotated[Path, typer.Argument(help="A game record (.json, .jiu/.txt; a CSV's first game).")],
    sims: Annotated[Optional[int], typer.Option("--sims", min=1, help="Simulations per position (default: the agent's; at most search.config.SIMS_MAX).")] = None,
    seconds: Annotated[Optional[float], typer.Option("--seconds", min=0.001, help="Time limit per position in seconds (at most search.config.SECONDS_MAX).")] = None,
    out: Annotated[Path, typer.Option(help="Output directory for analysis.json and analysis.png.")] = Path("runs/analysis"),
    agent: Annotated[str, typer.Option(help="The search agent that evaluates (mcts, jfa, ...; default: the strongest measured, docs/results.md).")] = DEFAULT_AGENT,
    mistake: Annotated[float, typer.Option(min=0.0, help="Value loss (in [-1, 1] units) that marks a mistake.")] = 0.2,
    blunder: Annotated[float, typer.Option(min=0.0, help="Value loss that marks a blunder.")] = 0.4,
    format: Annotated[Optional[str], typer.Option("--format", help="json, jiu or csv (default: from the file).")] = None,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="The agent's seed.")] = 0,
):
    """Evaluate every move of a game with the search: mistakes, blunders, JSON and a PNG of the evaluation."""
    from search.config import check_budget
    from train.learning.report import analyze_record
    from train.matches.arena import check_agent_spec

    check_budget(sims, seconds, ("--sims", "--seconds"))  # one line and status 2 beyond the bounds (also inf, nan)
    check_agent_spec(agent, "--agent")
    result = analyze_record(record, out, agent, sims, seconds, seed, mistake, blunder, format)
    typer.echo(json.dumps({"moves": len(result["moves"]), "summary": result["summary"], "files": result["files"]}))
