"""Round-robin tournament: every pair of agents plays a colour-balanced arena match; the results give
a payoff matrix and Bradley-Terry Elo ratings with 95% intervals (``train.stats``).

``run_tournament(["random", "greedy", "minimax:depth=2"], games=20, workers=2, out_dir="runs/rr")``.
Each unordered pair plays :func:`train.arena.run_arena` in its own directory; the pair is put in a
canonical order (sorted spec strings) so the directory and the games do not depend on the order the
agents are listed in, and every pair uses the same base ``seed``. Rerunning with the same
``out_dir`` resumes every pair (finished games are kept, see ``train.arena``). One process pool is
shared by all pairs.

Run directory (every file written atomically)::

    tournament.json          {"format": "jiu-tournament", "version": 1, "agents": [...], "games", "seed",
                              "ruleset", "pairs": [{"a", "b", "dir", "games", "wins", "draws", "losses",
                              "win_rate", "ci95", "wilson_ci95", "elo"}, ...],
                              "payoff": [[score rate of row vs column, 0..1; 0.5 on the diagonal], ...],
                              "ratings": {"anchor", "prior_draws", "log_likelihood",
                                          "ratings": [{"agent", "elo", "se", "ci95", "score", "games"}, ...]}}
    tournament.md            the same as Markdown tables (ratings, payoff matrix, pairs)
    pairs/<A>__vs__<B>/      one arena run directory per pair (arena.json, games/, summary.json)
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any, Sequence

from core.rules import DEFAULT_RULESET, Ruleset
from train.arena import (
    ArenaError,
    ArenaSummary,
    atomic_write_json,
    atomic_write_text,
    check_agent_spec,
    make_executor,
    new_progress,
    run_arena,
    stop_pool,
)
from train.stats import PairResult, bradley_terry, json_safe, payoff_matrix

TOURNAMENT_FORMAT = "jiu-tournament"
VERSION = 1
RESULT_FILE = "tournament.json"
TABLE_FILE = "tournament.md"
PAIRS_DIR = "pairs"


def pair_dir_name(a: str, b: str) -> str:
    """Directory name of the pair (``a``, ``b`` in canonical order): each spec with characters other
    than letters, digits, ``.``, ``_``, ``-`` replaced by ``_``, joined by ``__vs__`` (a clash of two
    specs that map to the same name is caught by the arena's configuration check)."""

    def slug(s: str) -> str:
        return re.sub(r"[^A-Za-z0-9._-]", "_", s)

    return f"{slug(a)}__vs__{slug(b)}"


@dataclass
class TournamentResult:
    """What :func:`run_tournament` returns: ``data`` as written to ``tournament.json`` (module
    docstring), ``arenas`` the arena summaries keyed by the canonical pair, ``ratings`` the
    ``train.stats.Ratings`` and ``payoff`` the ``numpy`` payoff matrix (agents' order)."""

    data: dict[str, Any]
    out_dir: Path
    arenas: dict[tuple[str, str], ArenaSummary]
    ratings: Any
    payoff: Any


def run_tournament(
    specs: Sequence[str],
    games: int,
    workers: int = 1,
    seed: int = 0,
    out_dir: str | os.PathLike = "runs/tournament",
    ruleset: Ruleset = DEFAULT_RULESET,
    progress: bool = True,
    imports: Sequence[str] = (),
    anchor: str | None = None,
) -> TournamentResult:
    """Play a round robin of ``games`` games (even) per pair among ``specs`` (at least 2 distinct
    agent spec strings) and return and save its results (module docstring).

    ``workers``: processes shared by all pairs (``0`` = in this process). ``anchor``: an agent whose
    Bradley-Terry rating is held at 0 (default: the mean rating is 0). Raises ``ArenaError`` for a
    bad or repeated spec (listing the available agents), a bad game count, a pair directory of
    another match, or a failed game (finished games stay on disk; rerun to resume)."""
    import catalog

    specs = list(specs)
    if len(specs) < 2:
        raise ArenaError(f"agents: a tournament needs at least 2 agents, got {len(specs)}")
    if len(set(specs)) != len(specs):
        dup = next(s for s in specs if specs.count(s) > 1)
        raise ArenaError(f"agents: {dup!r} is listed twice")
    if anchor is not None and anchor not in specs:
        raise ArenaError(f"anchor: {anchor!r} is not one of the agents {specs}")
    if not isinstance(games, int) or games < 2 or games % 2:
        raise ArenaError(f"games: must be an even number >= 2 (colour-balanced pairs), got {games!r}")
    if workers < 0:
        raise ArenaError(f"workers: must be >= 0, got {workers}")
    catalog.import_plugins(imports)
    for i, spec in enumerate(specs, 1):
        check_agent_spec(spec, f"agent {i}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pairs = [tuple(sorted(p)) for p in combinations(specs, 2)]
    arenas: dict[tuple[str, str], ArenaSummary] = {}
    pool = make_executor(workers, imports) if workers > 0 else None
    bar = new_progress() if progress else None
    try:
        if bar is not None:
            bar.start()
        for a, b in pairs:
            arenas[(a, b)] = run_arena(
                a, b, games, workers=workers, seed=seed, out_dir=out / PAIRS_DIR / pair_dir_name(a, b),
                ruleset=ruleset, progress=bar if bar is not None else False, imports=imports, executor=pool,
            )
    except BaseException:
        if pool is not None:
            stop_pool(pool)
            pool = None
        raise
    finally:
        if bar is not None:
            bar.stop()
        if pool is not None:
            pool.shutdown(wait=True)

    results = [PairResult(a, b, s.wins, s.draws, s.losses) for (a, b), s in arenas.items()]
    ratings = bradley_terry(results, specs, anchor=anchor)
    payoff = payoff_matrix(results, specs)
    pair_rows = []
    for (a, b), s in arenas.items():
        pair_rows.append({"a": a, "b": b, "dir": str(Path(PAIRS_DIR) / pair_dir_name(a, b)), "games": s.games,
                          "wins": s.wins, "draws": s.draws, "losses": s.losses, "win_rate": s.win_rate,
                          "ci95": s.ci95, "wilson_ci95": s.data["wilson_ci95"], "elo": s.data["elo"]})
    data = json_safe({
        "format": TOURNAMENT_FORMAT, "version": VERSION, "agents": specs, "games": games, "seed": seed,
        "ruleset": ruleset.model_dump(), "pairs": pair_rows, "payoff": payoff, "ratings": ratings.to_dict(),
    })
    atomic_write_json(out / RESULT_FILE, data)
    atomic_write_text(out / TABLE_FILE, markdown_report(data))
    return TournamentResult(data, out, arenas, ratings, payoff)


def _ranked(data: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(data["ratings"]["ratings"], key=lambda r: -(r["elo"] if r["elo"] is not None else float("inf")))


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _ci(ci, fmt) -> str:
    return "-" if not ci else "[" + ", ".join("inf" if v is None else fmt(v) for v in ci) + "]"


def markdown_report(data: dict[str, Any]) -> str:
    """Markdown tables of a tournament result dictionary: ratings (rank, agent, Elo, 95% interval,
    score, games), the payoff matrix (score rate of the row agent against the column agent) and the
    pairs (games, A wins/draws/losses, A's score rate with its normal 95% interval)."""
    agents = data["agents"]
    r = data["ratings"]
    lines = [
        f"# Round robin: {len(agents)} agents, {data['games']} games per pair, seed {data['seed']}",
        "",
        f"Bradley-Terry Elo (anchor: {r['anchor']}; prior draws per pair: {r['prior_draws']:g}), 95% intervals"
        " from the Fisher information.",
        "",
        "| rank | agent | Elo | 95% CI | score | games |",
        "|---:|---|---:|---|---:|---:|",
    ]
    for rank, row in enumerate(_ranked(data), 1):
        lines.append(f"| {rank} | `{row['agent']}` | {row['elo']:+.0f} | {_ci(row['ci95'], lambda v: f'{v:+.0f}')} |"
                     f" {row['score']:g} | {row['games']:g} |")
    lines += ["", "Payoff matrix: score rate of the row agent against the column agent (draws count half).", "",
              "| | " + " | ".join(f"`{a}`" for a in agents) + " |",
              "|---|" + "---:|" * len(agents)]
    for i, a in enumerate(agents):
        lines.append(f"| `{a}` | " + " | ".join("-" if i == j else _pct(data["payoff"][i][j])
                                                 for j in range(len(agents))) + " |")
    lines += ["", "Pairs (A and B in canonical order; normal and Wilson 95% intervals of A's score rate).", "",
              "| A | B | games | A +/=/- | A score | 95% CI (normal) | 95% CI (Wilson) |",
              "|---|---|---:|---:|---:|---|---|"]
    for p in data["pairs"]:
        lines.append(f"| `{p['a']}` | `{p['b']}` | {p['games']} | {p['wins']}/{p['draws']}/{p['losses']} |"
                     f" {_pct(p['win_rate'])} | {_ci(p['ci95'], _pct)} | {_ci(p['wilson_ci95'], _pct)} |")
    return "\n".join(lines) + "\n"


def rich_tables(data: dict[str, Any]) -> list:
    """Rich tables (ratings, payoff matrix) of a tournament result dictionary, for the CLI."""
    from rich.table import Table

    agents = data["agents"]
    r = data["ratings"]
    ratings = Table(title=f"Bradley-Terry Elo ({data['games']} games per pair; anchor {r['anchor']},"
                          f" prior draws {r['prior_draws']:g})")
    for col, justify in (("rank", "right"), ("agent", "left"), ("Elo", "right"), ("95% CI", "right"),
                         ("score", "right"), ("games", "right")):
        ratings.add_column(col, justify=justify)
    for rank, row in enumerate(_ranked(data), 1):
        ratings.add_row(str(rank), row["agent"], f"{row['elo']:+.0f}", _ci(row["ci95"], lambda v: f"{v:+.0f}"),
                        f"{row['score']:g}", f"{row['games']:g}")
    payoff = Table(title="Payoff: score rate of row vs column")
    payoff.add_column("")
    for a in agents:
        payoff.add_column(a, justify="right")
    for i, a in enumerate(agents):
        payoff.add_row(a, *("-" if i == j else _pct(data["payoff"][i][j]) for j in range(len(agents))))
    return [ratings, payoff]
