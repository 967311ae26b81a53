"""Plots of a training run: ``render_report(RUN_DIR)`` (``python cli.py report RUN_DIR``).

Reads ``RUN/metrics.jsonl`` (``train.learning.pipeline``) and writes PNGs with matplotlib's Agg backend into
``RUN/report/``:

- ``losses.png``: the mean training loss terms (total, value, policy, L2) of each iteration, one panel
  per net kind, against the iteration (iteration 0 = the pretraining's last steps), with the policy
  targets' mean entropy, the floor of the policy term, dotted, and the validation losses (value and
  policy of the net on each iteration's new samples before training on them, the ``train`` event's
  ``fresh_*``) dashed;
- ``winrate.png``: the candidate's score per game against the best net and against the expert, with the
  95% Wilson interval as error bars (the normal interval collapses to a point at 0% or 100%, common in
  short evaluations), per kind, and the gate threshold;
- ``selfplay.png``: self-play speed per iteration (games per hour, positions per second);
- ``elo.png``: the learning curve (``train.learning.curve``): the best net's Elo with its 95% band against the
  self-play games of the run and against the run's hours, refitted jointly over every curve point of the
  run, with the anchors' Elo (the expert's among them) as horizontal lines; one line per net kind, and
  its weighted least-squares trend (``train.learning.curve.curve_rate``: Elo per game, Elo per hour);

- ``population.png`` (runs with ``selfplay.opponents = "population"``, ``train.learning.population``): the
  learner's RP-ELO with its 95% interval and the members' Nash weights, per iteration;

and ``summary.json`` (one row per iteration: kind, losses, win rates, acceptance, speeds; ``curve``: the
joint fit, with ``curve.rate.hours`` / ``curve.rate.games``: the trend per kind). Events logged
twice (a phase repeated after a kill) count once: the last one wins.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from train.jobs.rundir import TrainError, atomic_write_json, read_metrics


def _last_by(events: list[dict], event: str, key) -> dict:
    out: dict = {}
    for e in events:
        if e.get("event") == event:
            out[key(e)] = e
    return out


def collect(run_dir: str | os.PathLike) -> dict[str, Any]:
    """The per-iteration series of a run (what the plots show)."""
    events = read_metrics(Path(run_dir) / "metrics.jsonl")
    train = _last_by(events, "train", lambda e: (e.get("kind"), e.get("iteration")))
    init = _last_by(events, "init", lambda e: e.get("kind"))
    evals = _last_by(events, "evaluate", lambda e: (e.get("kind"), e.get("iteration"), e.get("opponent")))
    gates = _last_by(events, "gate", lambda e: (e.get("kind"), e.get("iteration")))
    selfplay = _last_by(events, "selfplay", lambda e: (e.get("kind"), e.get("iteration")))
    kinds = sorted({k for k, _ in train} | {k for k, _, _ in evals} | set(init), key=str)
    rows = []
    for (kind, it) in sorted(set(train) | set(gates) | set(selfplay), key=lambda x: (x[1] or 0, str(x[0]))):
        t, g, s = train.get((kind, it), {}), gates.get((kind, it), {}), selfplay.get((kind, it), {})
        rows.append({
            "iteration": it, "kind": kind,
            "loss": t.get("loss"), "value_loss": t.get("value_loss"), "policy_loss": t.get("policy_loss"),
            "policy_target_entropy": t.get("policy_target_entropy"),
            "fresh_policy_loss": t.get("fresh_policy"), "fresh_value_loss": t.get("fresh_value"),
            "fresh_target_entropy": t.get("fresh_target_entropy"),
            "l2": t.get("l2"), "window": t.get("window"), "step": t.get("step"),
            "vs_best": _wr(evals.get((kind, it, "best"))), "vs_expert": _wr(evals.get((kind, it, "expert"))),
            "accepted": g.get("accepted"), "threshold": g.get("threshold"),
            "games_per_hour": s.get("games_per_hour"), "positions_per_s": s.get("positions_per_s"),
            "plies_per_s": s.get("plies_per_s"), "sims_per_s": s.get("sims_per_s"),
        })
    pre = {k: {"first_loss": v.get("first_loss"), "last_loss": v.get("last_loss"), "last_value": v.get("last_value"),
               "last_policy": v.get("last_policy"), "last_l2": v.get("last_l2"), "samples": v.get("samples")}
           for k, v in init.items()}
    from train.learning.curve import curve_rate, fit_curve, read_points

    points = read_points(Path(run_dir) / "curve")
    anchor = "expert"
    try:
        from train.learning.modeldir import load_run_config

        anchor = load_run_config(run_dir, device="cpu").curve.anchor  # any device of the run: not used here
    except Exception:  # noqa: BLE001 - a run without a readable config: the default anchor
        pass
    curve = fit_curve(points, anchor) if points else {"anchor": anchor, "ratings": {}, "points": []}
    curve["rate"] = {"hours": curve_rate(curve["points"], "hours"), "games": curve_rate(curve["points"], "games")}
    pops = _last_by(events, "population", lambda e: (e.get("kind"), e.get("iteration")))
    population = [{k: e.get(k) for k in ("iteration", "kind", "learner", "rp_elo", "rp_elo_ci95", "rp_elo_games",
                                         "weights", "opponents", "clusters", "members")}
                  for _, e in sorted(pops.items(), key=lambda x: (x[0][1] or 0, str(x[0][0])))]
    return {"kinds": kinds, "iterations": rows, "pretrain": pre, "events": len(events), "curve": curve,
            "population": population}


def population_lines(data: dict[str, Any]) -> list[str]:
    """The population's series as text (``python cli.py report`` prints it): per iteration the learner's
    RP-ELO with its 95% interval and games, the Nash clusters' sizes and the members' Nash weights."""
    lines = []
    for p in data.get("population") or []:
        rp = "no games against members" if p.get("rp_elo") is None else (
            f"RP-ELO {p['rp_elo']:.0f} [{p['rp_elo_ci95'][0]:.0f}, {p['rp_elo_ci95'][1]:.0f}] ({p['rp_elo_games']} games)")
        weights = ", ".join(f"{m} {w:.2f}" for m, w in (p.get("weights") or {}).items())
        lines.append(f"i{p['iteration']:04d} population: {p['learner']} {rp}; Nash clusters {p.get('clusters')};"
                     f" weights {weights}")
    return lines


def curve_lines(data: dict[str, Any]) -> list[str]:
    """The learning curve as text (``python cli.py report`` prints it): one line per point (iteration,
    player, self-play games, hours, Elo with its 95% interval), then the trend per kind in Elo per hour and
    per 100 games (``train.learning.curve.curve_rate``). ``data``: :func:`collect`'s result (or ``summary.json``)."""
    from train.learning.curve import rate_text

    curve = data.get("curve") or {}
    lines = []
    for p in curve.get("points", []):
        elo = "no games" if p.get("elo") is None else f"Elo {p['elo']:+.0f} [{p['ci95'][0]:+.0f}, {p['ci95'][1]:+.0f}]"
        lines.append(f"i{p['iteration']:04d} {p['player']}: {p['games']} self-play games, {p['hours']:.2f} h, {elo}"
                     f" ({curve.get('anchor')} = 0)")
    rates = curve.get("rate") or {}
    for x in ("hours", "games"):
        for kind, r in (rates.get(x) or {}).items():
            lines.append(rate_text(kind, r, x))
    return lines


def _wr(e: dict | None) -> dict | None:
    if not e:
        return None
    return {"win_rate": e.get("win_rate"), "ci95": e.get("ci95"), "wilson_ci95": e.get("wilson_ci95"),
            "games": e.get("games"), "wins": e.get("wins"),
            "draws": e.get("draws"), "losses": e.get("losses")}


def _legend_or_note(ax, note: str) -> None:
    """A legend when the axes have data (lines or bars), else ``note`` in the middle."""
    if ax.lines or ax.containers:
        ax.legend()
    else:
        ax.text(0.5, 0.5, note, ha="center", va="center", transform=ax.transAxes)


def render_report(run_dir: str | os.PathLike, out_dir: str | os.PathLike | None = None) -> list[Path]:
    """Write the report PNGs and ``summary.json`` (module docstring); returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    run = Path(run_dir)
    if not (run / "metrics.jsonl").exists():
        raise TrainError(f"{run}: no metrics.jsonl; not a training run directory")
    out = Path(out_dir) if out_dir is not None else run / "report"
    out.mkdir(parents=True, exist_ok=True)
    data = collect(run)
    rows = data["iterations"]
    kinds = data["kinds"] or ["slm"]
    written: list[Path] = []

    from train.matches.plots import save_figure

    def save(fig, name, integer_x=True):
        for ax in fig.axes if integer_x else ():
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        written.append(save_figure(fig, out / name))

    # losses
    fig, axes = plt.subplots(1, len(kinds), figsize=(5 * len(kinds), 3.6), squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        rs = [r for r in rows if r["kind"] == kind and r["loss"] is not None]
        pre = data["pretrain"].get(kind, {})
        for key, label in (("loss", "total"), ("value_loss", "value"), ("policy_loss", "policy"), ("l2", "L2")):
            xs = [r["iteration"] for r in rs]
            ys = [r[key] for r in rs]
            pkey = {"loss": "last_loss", "value_loss": "last_value", "policy_loss": "last_policy", "l2": "last_l2"}[key]
            if pre.get(pkey) is not None:
                xs, ys = [0, *xs], [pre[pkey], *ys]
            if xs:
                ax.plot(xs, ys, marker="o", label=label)
        floor = [(r["iteration"], r["policy_target_entropy"]) for r in rs if r.get("policy_target_entropy") is not None]
        if floor and kind != "lower":
            ax.plot(*zip(*floor), linestyle=":", color="grey", label="policy target entropy (floor)")
        for key, label in (("fresh_value_loss", "value, new samples"), ("fresh_policy_loss", "policy, new samples")):
            pts = [(r["iteration"], r[key]) for r in rs if r.get(key) is not None]
            if pts and (key == "fresh_value_loss" or kind != "lower"):
                ax.plot(*zip(*pts), linestyle="--", marker="x", label=f"{label} (before training)")
        ax.set_title(f"{kind}: training loss")
        ax.set_xlabel("iteration (0 = pretraining)")
        ax.set_ylabel("mean loss per step")
        _legend_or_note(ax, "no training yet")
    save(fig, "losses.png")

    # win rates
    fig, axes = plt.subplots(1, len(kinds), figsize=(5 * len(kinds), 3.6), squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        rs = [r for r in rows if r["kind"] == kind]
        for key, label, fmt in (("vs_best", "vs best", "o-"), ("vs_expert", "vs expert", "s--")):
            pts = [(r["iteration"], r[key]) for r in rs if r[key] and r[key]["win_rate"] is not None]
            if not pts:
                continue
            xs = [p[0] for p in pts]
            ys = [p[1]["win_rate"] for p in pts]
            lo = [max(0.0, y - (p[1]["wilson_ci95"] or [y, y])[0]) for y, p in zip(ys, pts)]
            hi = [max(0.0, (p[1]["wilson_ci95"] or [y, y])[1] - y) for y, p in zip(ys, pts)]
            ax.errorbar(xs, ys, yerr=[lo, hi], fmt=fmt, capsize=3, label=label)
        thr = next((r["threshold"] for r in rs if r["threshold"] is not None), None)
        if thr is not None:
            ax.axhline(thr, color="grey", lw=0.8, ls=":", label=f"gate {thr:g}")
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(f"{kind}: candidate score (95% Wilson CI)")
        ax.set_xlabel("iteration")
        ax.set_ylabel("score per game")
        _legend_or_note(ax, "no evaluation yet")
    save(fig, "winrate.png")

    # self-play speed
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.6))
    for kind in kinds:
        rs = [r for r in rows if r["kind"] == kind and r["games_per_hour"] is not None]
        if rs:
            a1.plot([r["iteration"] for r in rs], [r["games_per_hour"] for r in rs], marker="o", label=kind)
            a2.plot([r["iteration"] for r in rs], [r["positions_per_s"] for r in rs], marker="o", label=kind)
    a1.set_title("self-play games per hour")
    a2.set_title("self-play positions (samples) per second")
    for ax in (a1, a2):
        ax.set_xlabel("iteration")
        _legend_or_note(ax, "no self-play yet")
    save(fig, "selfplay.png")

    # learning curve
    curve = data["curve"]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    for kind in sorted({p["kind"] for p in curve["points"]}):
        pts = [p for p in curve["points"] if p["kind"] == kind and p["elo"] is not None]
        if not pts:
            continue
        for ax, key in ((a1, "games"), (a2, "hours")):
            xs = [p[key] for p in pts]
            ys = [p["elo"] for p in pts]
            err = [[y - p["ci95"][0] for y, p in zip(ys, pts)], [p["ci95"][1] - y for y, p in zip(ys, pts)]]
            ax.errorbar(xs, ys, yerr=err, fmt="o-", capsize=3, label=f"{kind} (best net)")
            ax.fill_between(xs, [p["ci95"][0] for p in pts], [p["ci95"][1] for p in pts], alpha=0.2)
            rate = curve["rate"][key].get(kind)
            if rate is not None:  # the weighted least-squares line (train.learning.curve.curve_rate)
                (xm, ym), (x0, x1) = rate["center"], rate["span"]
                scale, per = (1, "hour") if key == "hours" else (100, "100 games")
                ax.plot([x0, x1], [ym + rate["slope"] * (v - xm) for v in (x0, x1)], ":",
                        color="black", lw=1, label=f"{kind}: {scale * rate['slope']:+.0f} Elo per {per}")
    for name, r in curve["ratings"].items():
        if "@" in name or r.get("elo") is None:
            continue
        style = {"color": "red", "lw": 1.5} if name.split(":")[0] == "expert" else {"color": "grey", "lw": 0.8}
        for ax in (a1, a2):
            ax.axhline(r["elo"], ls="--", **style)
            ax.annotate(name, (0.01, r["elo"]), xycoords=("axes fraction", "data"), fontsize=7,
                        color=style["color"], va="bottom")
    a1.set_xlabel("self-play games")
    a2.set_xlabel("hours (run time)")
    for ax in (a1, a2):
        ax.set_ylabel(f"Elo ({curve['anchor']} = 0), 95% band")
        _legend_or_note(ax, "no learning-curve point yet")
    fig.suptitle("learning curve: the best net against the anchor pool (joint Bradley-Terry fit)")
    save(fig, "elo.png", integer_x=False)

    if data["population"]:
        _plot_population(plt, data["population"], save)

    summary = out / "summary.json"
    atomic_write_json(summary, data)
    written.append(summary)
    return written


def _plot_population(plt, rows: list[dict[str, Any]], save) -> None:
    """``population.png``: the learner's RP-ELO (95% interval) and the members' Nash weights per iteration."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    pts = [r for r in rows if r.get("rp_elo") is not None]
    if pts:
        xs, ys = [r["iteration"] for r in pts], [r["rp_elo"] for r in pts]
        err = [[y - r["rp_elo_ci95"][0] for y, r in zip(ys, pts)], [r["rp_elo_ci95"][1] - y for y, r in zip(ys, pts)]]
        a1.errorbar(xs, ys, yerr=err, fmt="o-", capsize=3, label="learner vs the members it played")
        a1.axhline(1500, color="grey", lw=0.8, ls=":")
    members = list(dict.fromkeys(m for r in rows for m in (r.get("weights") or {})))
    for m in members:
        series = [(r["iteration"], r["weights"][m]) for r in rows if m in (r.get("weights") or {})]
        a2.plot(*zip(*series), marker=".", label=m)
    a1.set_title("RP-ELO (1500 = the members' mean), 95% CI")
    a2.set_title("Nash weights of the members")
    for ax in (a1, a2):
        ax.set_xlabel("iteration")
        _legend_or_note(ax, "no population games yet")
    save(fig, "population.png")


# ============================================================================ game analysis
def plot_analysis(analysis: dict[str, Any], path: str | os.PathLike, title: str = "") -> Path:
    """Write a PNG of White's win probability over the game (``search.analysis.analyze_game``'s
    ``white_win`` per ply, ply 0 = the start), with mistakes (orange) and blunders (red) marked and the
    start of the battle (ply 196) as a dotted line. Written atomically; returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from core.board import NUM_POINTS
    from train.matches.plots import save_figure

    rows = analysis["moves"]
    xs = [0] + [r["ply"] for r in rows]
    ys = [analysis.get("start_white_win", 0.5)] + [r["white_win"] for r in rows]
    fig, ax = plt.subplots(figsize=(9, 3.4))
    ax.plot(xs, ys, lw=1.2, color="tab:blue", label="White's win probability")
    ax.axhline(0.5, color="grey", lw=0.6)
    if len(xs) > NUM_POINTS:
        ax.axvline(NUM_POINTS, color="grey", lw=0.8, ls=":", label="battle starts")
    for label, colour in (("mistake", "tab:orange"), ("blunder", "tab:red")):
        marked = [r for r in rows if r["label"] == label]
        if marked:
            ax.scatter([r["ply"] for r in marked], [r["white_win"] for r in marked], s=18, color=colour, zorder=3,
                       label=f"{label}s ({len(marked)})")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlim(0, max(xs[-1], 1))
    ax.set_xlabel("ply")
    ax.set_ylabel("P(White wins)")
    ax.set_title(title or "evaluation over the game")
    ax.legend(loc="best", fontsize=8)
    return save_figure(fig, path)


def analyze_record(record_path: str | os.PathLike, out_dir: str | os.PathLike, agent_spec: str = "jfa",
                   simulations: int | None = None, seconds: float | None = None, seed: int = 0,
                   mistake: float | None = None, blunder: float | None = None, fmt: str | None = None,
                   progress=None) -> dict[str, Any]:
    """``python cli.py analyze``: read the first game of ``record_path`` (validating every move), analyse
    every move with ``agent_spec``'s search (``search.analysis.analyze_game``) and write
    ``OUT/analysis.json`` and ``OUT/analysis.png`` (:func:`plot_analysis`). Returns the analysis with
    ``files`` added. Raises ``RecordError``/``OSError`` for a bad record, ``ValueError``/``KeyError`` for
    a bad agent or threshold."""
    from core.records import read_record
    from knowledge.agents import make_agent
    from search.analysis import BLUNDER, MISTAKE, analyze_game
    from train.jobs.rundir import atomic_write_json

    record = read_record(record_path, fmt)[0]
    states = record.replay()
    agent = make_agent(agent_spec, seed=seed)
    try:
        analysis = analyze_game(states, list(record.moves), agent, simulations, seconds,
                                MISTAKE if mistake is None else mistake, BLUNDER if blunder is None else blunder,
                                progress)
    finally:
        close = getattr(agent, "close", None)
        if callable(close):
            close()
    analysis = {"format": "jiu-analysis", "version": 1, "record": str(record_path), "agent": agent_spec,
                "players": {"white": record.white, "black": record.black},
                "result": record.result, "reason": record.reason, **analysis}
    out = Path(out_dir)
    json_path, png_path = out / "analysis.json", out / "analysis.png"
    atomic_write_json(json_path, analysis)
    plot_analysis(analysis, png_path, f"{record.white} (White) vs {record.black} (Black): "
                  f"{agent_spec} evaluation")
    return {**analysis, "files": [str(json_path), str(png_path)]}
