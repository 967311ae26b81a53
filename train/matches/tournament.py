"""Round-robin tournament: every pair of agents plays a colour-balanced arena match; the results give
a payoff matrix, Bradley-Terry Elo ratings with 95% intervals (``train.matches.stats``), the population's
maximum-entropy Nash equilibrium and its 2-D gamescape (``train.matches.nash``, papers/002), the win rates of
each agent as White and as Black with its decision latency (the round-robin table of papers/004), and,
when a second population is given (``versus``), the relative population performance (RPP) of the first
against the second.

``run_tournament(["random", "greedy", "minimax:depth=2"], games=20, workers=2, out_dir="runs/rr")``.
Each unordered pair plays :func:`train.matches.arena.run_arena` in its own directory; the pair is put in a
canonical order (sorted spec strings) so the directory and the games do not depend on the order the
agents are listed in, and every pair uses the same base ``seed``. Rerunning with the same
``out_dir`` resumes every pair (finished games are kept, see ``train.matches.arena``). One process pool is
shared by all pairs.

Run directory (every file written atomically; locked for the run, ``train.jobs.rundir.lock_dir``)::

    tournament.json          {"format": "jiu-tournament", "version": 1, "agents": [...], "games", "seed",
                              "ruleset", "opening_plies", "pairs": [{"a", "b", "dir", "games", "wins", "draws", "losses",
                              "win_rate", "ci95", "wilson_ci95", "elo", "distinct_games"}, ...],
                              "payoff": [[score rate of row vs column, 0..1; 0.5 on the diagonal], ...],
                              "ratings": {"anchor", "prior_draws", "log_likelihood",
                                          "ratings": [{"agent", "elo", "se", "ci95", "score", "games"}, ...]},
                              "by_colour": [[{"white", "black"} score rates of row vs column as White /
                                             as Black, null on the diagonal], ...],
                              "latency": {agent: {"layout"|"battle"|"all": {"moves", "mean", "p95", "max",
                                                  "total"}}} seconds per move over all its games,
                              "nash": {"payoff": [[2 * rate - 1 ...]], "weights": {agent: probability},
                                       "method": ...},
                              "gamescape": {"points": [[x, y], ...], "strength", "explained", "spectrum"},
                              "clusters": [[agent, ...], ...] Nash clustering (papers/002 Def. 4.2), strongest
                                          layer first; "cluster_sizes": [int, ...],
                              "populations": null or {"a": [...], "b": [...], "rpp", "nash_a": {agent: p},
                                                      "nash_b": {agent: q}}}
    tournament.md            the same as Markdown tables (round robin by colour with latency, ratings with
                             Nash weights, payoff matrix, RPP, pairs)
    payoff.png, gamescape.png  the zero-sum payoff as a heat map; the 2-D gamescape with Nash weights
    pairs/<A>__vs__<B>/      one arena run directory per pair (arena.json, games/, summary.json)
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any, Sequence

from core.atomic import atomic_write_text
from core.rules import DEFAULT_RULESET, Ruleset
from train.jobs.rundir import atomic_write_json, json_safe, lock_dir
from train.matches.arena import ArenaError, check_agent_spec, check_game_count, labelled_player, run_matches
from train.matches.summary import ArenaSummary
from train.matches.stats import PairResult, bradley_terry, payoff_matrix

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
    ``train.matches.stats.Ratings`` and ``payoff`` the ``numpy`` payoff matrix (agents' order)."""

    data: dict[str, Any]
    out_dir: Path
    arenas: dict[tuple[str, str], ArenaSummary]
    ratings: Any
    payoff: Any


def run_tournament(
    specs: Sequence[str | tuple[str, Any]],
    games: int,
    workers: int = 1,
    seed: int = 0,
    out_dir: str | os.PathLike = "runs/tournament",
    ruleset: Ruleset = DEFAULT_RULESET,
    progress: bool = True,
    imports: Sequence[str] = (),
    anchor: str | None = None,
    versus: Sequence[str | tuple[str, Any]] = (),
    plots: bool = True,
    games_in_flight: int = 1,
    opening_plies: int = 0,
) -> TournamentResult:
    """Play a round robin of ``games`` games (even) per pair among ``specs`` (at least 2 distinct
    players) and return and save its results (module docstring). A player is an agent spec string (its own
    label) or ``(label, agent)`` with ``agent`` a spec string or a ``search.agents.AgentRecipe`` (a
    run's nets: ``python cli.py population``); the results name players by label.

    ``workers``: processes shared by all pairs (``0`` = in this process). ``anchor``: an agent whose
    Bradley-Terry rating is held at 0 (default: the mean rating is 0). ``versus``: a second
    population; the round robin then runs over both, and the result has the RPP of ``specs`` against
    ``versus`` (module docstring). ``plots``: also write ``payoff.png`` and ``gamescape.png``. Raises
    ``ArenaError`` for a bad or repeated spec (listing the available agents), a bad game count, a
    pair directory of another match, or a failed game (finished games stay on disk; rerun to resume).
    ``games_in_flight``: games each worker plays at once on the batched engine, ``opening_plies``: random
    placements starting both games of each pair of games (both as ``run_arena``'s)."""
    import catalog

    agent_of = {}
    for p in [*specs, *versus]:
        label, agent = labelled_player(p)
        if label in agent_of:
            raise ArenaError(f"agents: {label!r} is listed twice")
        agent_of[label] = agent
    population_a = [labelled_player(p)[0] for p in specs]
    population_b = [labelled_player(p)[0] for p in versus]
    specs = population_a + population_b
    if population_b and not population_a:
        raise ArenaError("agents: the first population is empty")
    if len(specs) < 2:
        raise ArenaError(f"agents: a tournament needs at least 2 agents, got {len(specs)}")
    if anchor is not None and anchor not in specs:
        raise ArenaError(f"anchor: {anchor!r} is not one of the agents {specs}")
    check_game_count(games)
    if workers < 0:
        raise ArenaError(f"workers: must be >= 0, got {workers}")
    catalog.import_plugins(imports)
    for i, label in enumerate(specs, 1):
        check_agent_spec(agent_of[label], f"agent {i}" if agent_of[label] == label else f"agent {i} ({label})")
    out = Path(out_dir)
    with lock_dir(out):
        pairs = [tuple(sorted(p)) for p in combinations(specs, 2)]
        summaries = run_matches([((a, agent_of[a]), (b, agent_of[b]), games, out / PAIRS_DIR / pair_dir_name(a, b))
                                 for a, b in pairs], workers=workers, seed=seed, ruleset=ruleset, progress=progress,
                                imports=imports, games_in_flight=games_in_flight, opening_plies=opening_plies)
        arenas: dict[tuple[str, str], ArenaSummary] = dict(zip(pairs, summaries))

        results = [PairResult(a, b, s.wins, s.draws, s.losses) for (a, b), s in arenas.items()]
        ratings = bradley_terry(results, specs, anchor=anchor)
        payoff = payoff_matrix(results, specs)
        pair_rows = []
        for (a, b), s in arenas.items():
            pair_rows.append({"a": a, "b": b, "dir": str(Path(PAIRS_DIR) / pair_dir_name(a, b)), "games": s.games,
                              "wins": s.wins, "draws": s.draws, "losses": s.losses, "win_rate": s.win_rate,
                              "ci95": s.ci95, "wilson_ci95": s.data["wilson_ci95"], "elo": s.data["elo"],
                              "distinct_games": s.data["distinct_games"]})
        data = json_safe({
            "format": TOURNAMENT_FORMAT, "version": VERSION, "agents": specs, "games": games, "seed": seed,
            "ruleset": ruleset.model_dump(), "opening_plies": opening_plies, "pairs": pair_rows, "payoff": payoff, "ratings": ratings.to_dict(),
            "by_colour": colour_matrix(arenas, specs), "latency": agent_latency(arenas, specs),
            **population_analysis(payoff, specs, population_a, population_b),
        })
        atomic_write_json(out / RESULT_FILE, data)
        atomic_write_text(out / TABLE_FILE, markdown_report(data))
        if plots:
            write_plots(data, out)
        return TournamentResult(data, out, arenas, ratings, payoff)


def colour_matrix(arenas: dict[tuple[str, str], ArenaSummary], agents: Sequence[str]) -> list[list[dict | None]]:
    """``[i][j]``: ``{"white", "black"}``, agent ``i``'s score rate against ``j`` in the games it played
    as White and as Black (``None`` on the diagonal or without such games): papers/004's round-robin
    table, split by colour."""
    idx = {a: i for i, a in enumerate(agents)}
    out: list[list[dict | None]] = [[None] * len(agents) for _ in agents]
    for (a, b), s in arenas.items():
        aw, ab = s.data["by_colour"]["a_white"], s.data["by_colour"]["a_black"]

        def flip(x):
            return None if x is None else 1.0 - x

        out[idx[a]][idx[b]] = {"white": aw["win_rate"], "black": ab["win_rate"]}
        out[idx[b]][idx[a]] = {"white": flip(ab["win_rate"]), "black": flip(aw["win_rate"])}
    return out


def agent_latency(arenas: dict[tuple[str, str], ArenaSummary], agents: Sequence[str]) -> dict[str, dict]:
    """Decision time per move of each agent over all its tournament games: ``{agent: {"layout" |
    "battle" | "all": {"moves", "mean", "p95", "max", "total"}}}`` in seconds (from the game records'
    ``search`` entries)."""
    from train.matches.arena import PHASES
    from train.matches.summary import time_stats

    times = {a: {"all": [], **{p: [] for p in PHASES}} for a in agents}
    for (a, b), s in arenas.items():
        for r in s.records:
            colour = r.metadata["a_colour"]
            for entry in r.search or ():
                if entry:
                    who = a if entry["side"] == colour else b
                    times[who]["all"].append(entry["time"])
                    times[who][entry["phase"]].append(entry["time"])
    return {a: {k: time_stats(v) for k, v in d.items()} for a, d in times.items()}


def population_analysis(payoff, agents: Sequence[str], population_a: Sequence[str],
                        population_b: Sequence[str]) -> dict[str, Any]:
    """``{"nash", "gamescape", "clusters", "cluster_sizes", "populations"}`` of a tournament (module
    docstring) from its score-rate payoff matrix (``float[n, n]``, agents' order)."""
    import numpy as np

    from train.matches.nash import (
        gamescape,
        max_entropy_nash,
        nash_clusters,
        relative_population_performance,
        zero_sum_payoff,
    )

    m = zero_sum_payoff(payoff)
    weights = max_entropy_nash(m)
    scape = gamescape(m)
    clusters = [[agents[i] for i in c] for c in nash_clusters(m)]
    out: dict[str, Any] = {
        "nash": {"payoff": m, "weights": dict(zip(agents, weights)),
                 "method": "maximum-entropy Nash of the zero-sum payoff 2 * rate - 1 (train.matches.nash: scipy LP"
                           " for the value, then SLSQP entropy maximisation over the optimal set)"},
        "gamescape": {"points": scape.points, "strength": scape.strength, "explained": scape.explained,
                      "spectrum": scape.spectrum},
        "clusters": clusters,
        "cluster_sizes": [len(c) for c in clusters],
        "populations": None,
    }
    if population_b:
        idx = {a: i for i, a in enumerate(agents)}
        rows, cols = [idx[a] for a in population_a], [idx[b] for b in population_b]
        sol = relative_population_performance(m[np.ix_(rows, cols)])
        out["populations"] = {"a": list(population_a), "b": list(population_b), "rpp": sol.value,
                              "nash_a": dict(zip(population_a, sol.row)), "nash_b": dict(zip(population_b, sol.col))}
    return out


def write_plots(data: dict[str, Any], out: Path) -> list[Path]:
    """``payoff.png`` and ``gamescape.png`` of a tournament result dictionary into ``out``."""
    import numpy as np

    from train.matches.plots import plot_gamescape, plot_payoff

    agents = data["agents"]
    nash = data["nash"]
    title = f"{len(agents)} agents, {data['games']} games per pair"
    return [
        plot_payoff(np.array(nash["payoff"], float), agents, out / "payoff.png", f"payoff (2 x score rate - 1): {title}"),
        plot_gamescape(np.array(data["gamescape"]["points"], float), agents, [nash["weights"][a] for a in agents],
                       out / "gamescape.png", f"gamescape: {title}", explained=data["gamescape"]["explained"]),
    ]


def _ranked(data: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(data["ratings"]["ratings"], key=lambda r: -(r["elo"] if r["elo"] is not None else float("inf")))


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _ci(ci, fmt) -> str:
    return "-" if not ci else "[" + ", ".join("inf" if v is None else fmt(v) for v in ci) + "]"


def _s(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def _cell(c) -> str:
    return "-" if c is None else f"{_pct(c['white'])} / {_pct(c['black'])}"


def clusters_text(data: dict[str, Any]) -> str:
    """The Nash clustering of a tournament result dictionary as one line of text (the CLI's)."""
    return (f"Nash clusters (sizes {data['cluster_sizes']}): "
            + " > ".join("{" + ", ".join(c) + "}" for c in data["clusters"]))


def markdown_report(data: dict[str, Any]) -> str:
    """Markdown tables of a tournament result dictionary: the round robin (papers/004: score rate of
    the row agent against each column as White / as Black, its overall score rate and its mean
    seconds per move in the layout and the battle), the ratings (rank, agent, Elo, 95% interval,
    score, games, maximum-entropy Nash weight), the payoff matrix, the relative population
    performance when there are two populations, and the pairs (games, A wins/draws/losses, A's score
    rate with its normal and Wilson 95% intervals)."""
    agents = data["agents"]
    r = data["ratings"]
    weights = (data.get("nash") or {}).get("weights") or {}
    lines = [f"# Round robin: {len(agents)} agents, {data['games']} games per pair, seed {data['seed']}", ""]
    if data.get("by_colour") is not None:
        rated = {row["agent"]: row for row in r["ratings"]}
        lines += ["Score rate of the row agent against each column as White / as Black (White places first,"
                  " Black moves first in the battle; draws count half), and the row agent's mean (p95) seconds"
                  " per move over all its games.", "",
                  "| agent | " + " | ".join(f"vs `{a}`" for a in agents) + " | score | s/move layout | s/move battle (p95) |",
                  "|---|" + "---:|" * (len(agents) + 3)]
        for i, a in enumerate(agents):
            lat = data["latency"][a]
            rate = rated[a]["score"] / rated[a]["games"] if rated[a]["games"] else None
            lines.append(f"| `{a}` | " + " | ".join(_cell(c) for c in data["by_colour"][i]) + f" | {_pct(rate)} |"
                         f" {_s(lat['layout']['mean'])} | {_s(lat['battle']['mean'])} ({_s(lat['battle']['p95'])}) |")
        lines.append("")
    lines += [
        f"Bradley-Terry Elo (anchor: {r['anchor']}; prior draws per pair: {r['prior_draws']:g}), 95% intervals"
        " from the Fisher information; Nash: the population's maximum-entropy Nash equilibrium (weights).",
        "",
        "| rank | agent | Elo | 95% CI | score | games | Nash |",
        "|---:|---|---:|---|---:|---:|---:|",
    ]
    for rank, row in enumerate(_ranked(data), 1):
        w = weights.get(row["agent"])
        lines.append(f"| {rank} | `{row['agent']}` | {row['elo']:+.0f} | {_ci(row['ci95'], lambda v: f'{v:+.0f}')} |"
                     f" {row['score']:g} | {row['games']:g} | {'-' if w is None else f'{w:.3f}'} |")
    lines += ["", "Payoff matrix: score rate of the row agent against the column agent (draws count half).", "",
              "| | " + " | ".join(f"`{a}`" for a in agents) + " |",
              "|---|" + "---:|" * len(agents)]
    for i, a in enumerate(agents):
        lines.append(f"| `{a}` | " + " | ".join("-" if i == j else _pct(data["payoff"][i][j])
                                                 for j in range(len(agents))) + " |")
    pops = data.get("populations")
    if pops:
        lines += ["", f"Relative population performance (papers/002 Def. 5.1) of A = {{{', '.join(pops['a'])}}} against"
                  f" B = {{{', '.join(pops['b'])}}}: **RPP = {pops['rpp']:+.3f}** (expected score per game in [-1, 1] of"
                  " A's Nash mixture against B's; > 0: A is the stronger population).", "",
                  "| population | agent | Nash weight in the A-vs-B game |", "|---|---|---:|"]
        lines += [f"| A | `{a}` | {w:.3f} |" for a, w in pops["nash_a"].items()]
        lines += [f"| B | `{b}` | {w:.3f} |" for b, w in pops["nash_b"].items()]
    if data.get("clusters"):
        lines += ["", f"Nash clustering (papers/002 Def. 4.2; strongest layer first; sizes {data['cluster_sizes']}): "
                  + " > ".join("{" + ", ".join(f"`{a}`" for a in c) + "}" for c in data["clusters"]) + "."]
    if data.get("gamescape"):
        g = data["gamescape"]
        lines += ["", f"Gamescape (`gamescape.png`): the largest Schur block carries {_pct(g['explained'])} of the"
                  " payoff's squared norm (points on a line: transitive; around the origin: cyclic)."]
    lines += ["", "Pairs (A and B in canonical order; normal and Wilson 95% intervals of A's score rate).", "",
              "| A | B | games | A +/=/- | A score | 95% CI (normal) | 95% CI (Wilson) |",
              "|---|---|---:|---:|---:|---|---|"]
    for p in data["pairs"]:
        lines.append(f"| `{p['a']}` | `{p['b']}` | {p['games']} | {p['wins']}/{p['draws']}/{p['losses']} |"
                     f" {_pct(p['win_rate'])} | {_ci(p['ci95'], _pct)} | {_ci(p['wilson_ci95'], _pct)} |")
    return "\n".join(lines) + "\n"


def rich_tables(data: dict[str, Any]) -> list:
    """Rich tables of a tournament result dictionary, for the CLI: the round robin by colour with
    latency, the ratings with Nash weights, the payoff matrix, and the RPP when there are two
    populations."""
    from rich.table import Table

    agents = data["agents"]
    r = data["ratings"]
    weights = (data.get("nash") or {}).get("weights") or {}
    tables = []
    if data.get("by_colour") is not None:
        rr = Table(title="Round robin: score rate of row vs column as White / as Black; seconds per move")
        rr.add_column("agent")
        for a in agents:
            rr.add_column(f"vs {a}", justify="right")
        for col in ("s/move layout", "s/move battle", "p95 battle"):
            rr.add_column(col, justify="right")
        for i, a in enumerate(agents):
            lat = data["latency"][a]
            rr.add_row(a, *(_cell(c) for c in data["by_colour"][i]), _s(lat["layout"]["mean"]),
                       _s(lat["battle"]["mean"]), _s(lat["battle"]["p95"]))
        tables.append(rr)
    ratings = Table(title=f"Bradley-Terry Elo ({data['games']} games per pair; anchor {r['anchor']},"
                          f" prior draws {r['prior_draws']:g}); maximum-entropy Nash weights")
    for col, justify in (("rank", "right"), ("agent", "left"), ("Elo", "right"), ("95% CI", "right"),
                         ("score", "right"), ("games", "right"), ("Nash", "right")):
        ratings.add_column(col, justify=justify)
    for rank, row in enumerate(_ranked(data), 1):
        w = weights.get(row["agent"])
        ratings.add_row(str(rank), row["agent"], f"{row['elo']:+.0f}", _ci(row["ci95"], lambda v: f"{v:+.0f}"),
                        f"{row['score']:g}", f"{row['games']:g}", "-" if w is None else f"{w:.3f}")
    payoff = Table(title="Payoff: score rate of row vs column")
    payoff.add_column("")
    for a in agents:
        payoff.add_column(a, justify="right")
    for i, a in enumerate(agents):
        payoff.add_row(a, *("-" if i == j else _pct(data["payoff"][i][j]) for j in range(len(agents))))
    tables += [ratings, payoff]
    pops = data.get("populations")
    if pops:
        rpp = Table(title=f"Relative population performance of A against B: RPP = {pops['rpp']:+.3f}")
        for col in ("population", "agent", "Nash weight"):
            rpp.add_column(col)
        for name, key in (("A", "nash_a"), ("B", "nash_b")):
            for agent, w in pops[key].items():
                rpp.add_row(name, agent, f"{w:.3f}")
        tables.append(rpp)
    return tables
