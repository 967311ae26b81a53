"""The table and plots of an experiment's result (``train.experiments.run``): ``table.md``
(:func:`markdown_table`: the table as the paper prints it, with the command, the budget and the paper's
values) and the spec's PNGs (:func:`write_plots`, drawn by ``train.matches.plots``). Both read only the
result dictionary (and the spec, for the plots): a result.json can be rendered again without a run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from train.experiments.spec import MATCH_COLUMNS, ExperimentSpec


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def _interval(ci) -> str:
    if not ci or ci[0] is None or ci[1] is None:
        return "-"
    return f"[{100 * ci[0]:.2f}%, {100 * ci[1]:.2f}%]"


def _secs(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def _cell(stats: dict[str, Any], column: str) -> str:
    v = stats.get(column)
    if column in ("win_rate",):
        return _pct(v)
    if column in ("ci95", "wilson_ci95"):
        return _interval(v)
    if column == "se":
        return "-" if v is None else f"{v:.4f}"
    if column in ("white", "black"):
        return "-" if not v or v["win_rate"] is None else f"{_pct(v['win_rate'])} ({v['wins']:g}-{v['losses']:g})"
    if column == "elo":
        return "-" if v is None else f"{v:+.0f}"
    if column.startswith("time_"):
        return _secs(v)
    if column == "plies":
        return "-" if v is None else f"{v:.0f}"
    return "-" if v is None else f"{v:g}"


def markdown_table(result: dict[str, Any]) -> str:
    """``table.md``: title, what it reproduces, the command and budget, then the table (match: one
    row per match with the spec's columns and the paper's figures; decision-time: seconds per move
    of serial MCTS and WU-UCT and the reduction factor per phase and simulation count)."""
    lines = [f"# {result['title']}", ""]
    if result.get("paper"):
        lines += [f"Reproduces: {result['paper']}", ""]
    if result.get("description"):
        lines += [result["description"].strip(), ""]
    if result.get("command"):
        lines += ["Command:", "", "```bash", result["command"], "```", ""]
    params = ", ".join(f"`{k}={v}`" for k, v in result["params"].items()) or "none"
    budget = f"seed {result['seed']}; parameters: {params}"
    if result["rules"]:
        budget += "; rules: " + ", ".join(f"`{k}={v}`" for k, v in result["rules"].items())
    if result["kind"] == "match":
        match_rows = [r for r in result["rows"] if r.get("measure", "match") == "match"]
        square_rows = [r for r in result["rows"] if r.get("measure") == "squares"]
        games = sorted({r["stats"]["games"] for r in match_rows})
        if match_rows:
            budget = f"games per row: {', '.join(str(g) for g in games)}; " + budget
        if square_rows:
            runs = sorted({r["games"] for r in square_rows})
            budget = (f"self-play runs per squares row: {', '.join(str(g) for g in runs)} of {result['steps']}"
                      f" steps; " + budget)
        lines += [f"Budget: {budget}.", ""]
        if square_rows:
            lines += _squares_table(square_rows, result["bin_steps"])
        if result.get("round_robin"):
            lines += _round_robin(result["round_robin"])
        if not match_rows:
            incomplete = [r["id"] for r in result["rows"] if not r.get("complete", True)]
            if incomplete:
                lines += [f"**Incomplete rows** (resume with --resume): {', '.join(incomplete)}."]
            return "\n".join(lines) + "\n"
        cols = result["columns"]
        paper = any(r.get("paper") for r in match_rows)
        lines.append("| row | A | B | " + " | ".join(MATCH_COLUMNS[c] for c in cols) + (" | paper |" if paper else " |"))
        lines.append("|---|---|---|" + "---:|" * len(cols) + ("---|" if paper else ""))
        for r in match_rows:
            s = r["stats"]
            cells = [_cell(s, c) for c in cols]
            lines.append(f"| {r['label']} | `{r['a']}` | `{r['b']}` | " + " | ".join(cells)
                         + (f" | {r.get('paper') or '-'} |" if paper else " |"))
        lines += ["", "Win rate = (wins + draws / 2) / games of A; standard error sqrt(p (1 - p) / n) and the normal 95%"
                  " interval as JFA Table 4 prints them (Wilson in result.json); colour rows: A's win rate"
                  " (wins-losses) in the games it played as White (places first) / as Black (moves first in the"
                  " battle); s/move: mean seconds per move."]
        incomplete = [r["id"] for r in result["rows"] if not r.get("complete", True)]
        if incomplete:
            lines += ["", f"**Incomplete rows** (resume with --resume): {', '.join(incomplete)}."]
    else:
        threads = result["threads"]
        lines += [f"Budget: {budget}; WU-UCT threads: {threads}.", ""]
        paper = any(r.get("paper") for r in result["rows"])
        lines.append(f"| phase | simulations | WU-UCT ({threads} threads) s/move | serial MCTS s/move | reduction factor |"
                     + (" paper (parallel / serial / factor) |" if paper else ""))
        lines.append("|---|---:|---:|---:|---:|" + ("---|" if paper else ""))
        for r in result["rows"]:
            s = r["stats"]
            lines.append(f"| {r['phase']} | {r['simulations']} | {s['parallel_seconds']:.3f} | {s['serial_seconds']:.3f} |"
                         f" {s['reduction']:.2f} |" + (f" {r.get('paper') or '-'} |" if paper else ""))
        lines += ["", "Decision time = mean seconds per move over the benchmark positions (bench/search.py), a fresh"
                  " tree per move; serial: one thread, the net called one position at a time; reduction factor ="
                  " serial / WU-UCT."]
    return "\n".join(lines) + "\n"


def _round_robin(rr: dict[str, Any]) -> list[str]:
    """Markdown lines of the round robin: the tournament's own tables (``train.matches.tournament``),
    its title one level down, with the directory of its games."""
    from train.matches.tournament import markdown_report

    text = markdown_report(rr["tournament"]).replace("# Round robin", "## Round robin", 1)
    note = [f"Games, payoff and gamescape plots: `{rr['dir']}/`.", ""]
    if not rr.get("complete", True):
        note.insert(0, "**The round robin is incomplete** (resume with --resume).")
    return text.splitlines() + [""] + note


def _squares_table(rows: list[dict], bin_steps: int) -> list[str]:
    """Markdown lines of the squares rows: mean squares formed per block of ``bin_steps`` steps (with
    standard errors), the mean total and its normal 95% interval, the paper's figures."""
    n_bins = max(len(r["stats"]["bins"]) for r in rows)
    heads = [f"{bin_steps * i + 1}-{bin_steps * (i + 1)}" for i in range(n_bins)]
    paper = any(r.get("paper") for r in rows)
    lines = [f"Squares formed per {bin_steps} self-play steps (mean over runs, standard error in parentheses):", "",
             "| row | agent | runs | " + " | ".join(heads) + " | total | 95% CI |" + (" paper |" if paper else ""),
             "|---|---|---:|" + "---:|" * (n_bins + 2) + ("---|" if paper else "")]
    for r in rows:
        s = r["stats"]
        cells = [("-" if m is None else f"{m:.2f}") + ("" if e is None else f" ({e:.2f})")
                 for m, e in zip(s["bins"], s["bins_se"])]
        total = "-" if s["total"] is None else f"{s['total']:.2f}"
        ci = "-" if not s["total_ci95"] else f"[{s['total_ci95'][0]:.2f}, {s['total_ci95'][1]:.2f}]"
        lines.append(f"| {r['label']} | `{r['a']}` | {s['runs']} | " + " | ".join(cells) + f" | {total} | {ci} |"
                     + (f" {r.get('paper') or '-'} |" if paper else ""))
    lines += ["", "A step is one ply of self-play (one agent playing both sides, a new game when one ends); the"
              " squares a step forms are the mover's squares present after it and not before"
              " (train/experiments/squares.py).", ""]
    return lines


def write_plots(spec: ExperimentSpec, result: dict[str, Any], out: Path) -> list[Path]:
    """The spec's PNGs into ``out``: ``win-rates.png`` (JFA Figs. 5-6), ``ablation.png`` (Table 5) or
    ``decision-time-<phase>.png`` (Table 3). Error bars are Wilson 95% intervals (the normal interval
    of the tables collapses to a point at 0% and 100%)."""
    from train.matches import plots

    written: list[Path] = []
    rows = result["rows"]
    if spec.kind == "decision-time":
        for phase in dict.fromkeys(r["phase"] for r in rows):
            rs = [r for r in rows if r["phase"] == phase]
            written.append(plots.plot_decision_time(
                [r["simulations"] for r in rs], [r["stats"]["serial_seconds"] for r in rs],
                [r["stats"]["parallel_seconds"] for r in rs], out / f"decision-time-{phase}.png",
                f"{spec.title} ({phase})", f"WU-UCT, {result['threads']} threads"))
        return written
    match_rows = [r for r in rows if r.get("measure", "match") == "match"]
    square_rows = [r for r in rows if r.get("measure") == "squares"]
    if "squares" in spec.plots and square_rows:
        written.append(plots.plot_squares([r["label"] for r in square_rows], [r["stats"]["bins"] for r in square_rows],
                                          [r["stats"]["bins_se"] for r in square_rows], result["bin_steps"],
                                          out / "squares.png", spec.title))
    rows = match_rows
    if "win-rates" in spec.plots and rows:
        def bar(d):
            return {"win_rate": d["win_rate"], "ci95": d["wilson_ci95"]}

        bars = [{"label": r["label"], "white": bar(r["stats"]["white"]), "black": bar(r["stats"]["black"]),
                 "all": bar(r["stats"])} for r in rows]
        written.append(plots.plot_win_rates(bars, out / "win-rates.png", spec.title))
    if "ablation" in spec.plots and rows:
        written.append(plots.plot_ablation(
            [r["label"] for r in rows], [r["stats"]["win_rate"] for r in rows], [r["stats"]["wilson_ci95"] for r in rows],
            [r["stats"][spec.ablation_time] for r in rows], out / "ablation.png", spec.title,
            MATCH_COLUMNS[spec.ablation_time]))
    return written
