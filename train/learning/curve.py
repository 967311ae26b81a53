"""The learning curve of a training run: Elo with a 95% interval against a fixed anchor pool.

Every ``curve.every`` iterations (``train.learning.pipeline``, after the gate) the **best** net of the iteration's
kind (its evaluation agent, ``train.learning.selfplay.net_agent``) plays ``curve.games`` colour-balanced games
against each anchor of ``curve.anchors`` (default ``random``, ``greedy``, ``expert``,
``minimax:time=0.05``) and against the best nets of the last ``curve.checkpoints`` earlier curve points
(of the same kind, when they differ from the current one). Each match is an arena run directory
``RUN/curve/iNNNN/<opponent>/``; the point's results go to ``RUN/curve/iNNNN/results.json``::

    {"format": "jiu-curve-point", "version": 1, "iteration", "kind", "player": "slm@i0003", "spec",
     "recipe": the player's agent (``search.agents.AgentRecipe.to_dict``, its nets inside the run
               relative to the run directory; "spec" is its text),
     "games": self-play games of the run so far, "hours": run time so far (elapsed, hours),
     "results": [{"a": player, "b": opponent label, "b_spec", "wins", "draws", "losses"}, ...]}

**Ratings are fitted jointly** (not from a pinned table): :func:`fit_curve` reads every point of the
run and fits one Bradley-Terry model (``train.matches.stats.bradley_terry``) over all players (the best nets
of every point, named ``<kind>@iNNNN`` after the iteration that made them, and the anchors), with
``curve.anchor`` (``expert`` by default) held at Elo 0; the anchors are connected only through the
nets, so their ratings are relative to it too. A point's Elo (with its 95% interval from the Fisher
information) therefore moves a little as later points add games; ``metrics.jsonl`` keeps the value
known at the time, ``python cli.py report`` refits over the whole run.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from train.jobs.rundir import atomic_write_json
from train.matches.stats import PairResult, bradley_terry

POINT_FORMAT = "jiu-curve-point"
RESULTS_FILE = "results.json"


def player_label(kind: str, iteration: int) -> str:
    """The curve name of the best ``kind`` net made in ``iteration`` (``slm@i0003``)."""
    return f"{kind}@i{iteration:04d}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._@-]", "_", text)[:80]


def read_points(curve_root: str | os.PathLike) -> list[dict[str, Any]]:
    """The curve points of a run (``RUN/curve/i*/results.json``), by iteration; unreadable files skipped."""
    out = []
    root = Path(curve_root)
    if not root.is_dir():
        return out
    for f in sorted(root.glob(f"i*/{RESULTS_FILE}")):
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(data, dict) and data.get("format") == POINT_FORMAT:
            if isinstance(data.get("recipe"), dict):
                data["recipe"] = _rebase_nets(data["recipe"], root.parent, relative=False)
            out.append(data)
    return sorted(out, key=lambda d: d["iteration"])


def _rebase_nets(recipe: dict[str, Any], run_root: Path, relative: bool) -> dict[str, Any]:
    """``recipe`` (``AgentRecipe.to_dict``) with its net files (options whose value names a
    ``.safetensors`` file) inside the run directory ``run_root`` made relative to it (``relative``: for
    writing) or absolute under it (for reading), so that a run directory can move (copied to another
    machine, restored from a snapshot: ``python cli.py snapshot``). A point written with absolute paths
    before this (2026-12-04) is found again by the file's name under ``run_root/checkpoints``."""
    root = run_root.resolve()
    options = dict(recipe.get("options") or {})
    for key, value in options.items():
        if not (isinstance(value, str) and value.endswith(".safetensors")):
            continue
        path = Path(value)
        if relative:
            try:
                options[key] = path.resolve().relative_to(root).as_posix()
            except ValueError:
                pass  # a net outside the run (e.g. models/default): kept as given
        elif not path.is_absolute():
            options[key] = str(root / path)
        elif not path.exists() and (root / "checkpoints" / path.name).exists():
            options[key] = str(root / "checkpoints" / path.name)
    return {**recipe, "options": options}


def opponents(points: list[dict[str, Any]], anchors: tuple[str, ...], kind: str, player: str,
              checkpoints: int) -> list[tuple[str, str]]:
    """``[(label, spec)]`` the curve player ``player`` plays: the anchors, then the ``checkpoints`` latest
    earlier players of ``kind`` other than ``player``."""
    out = [(a, a) for a in anchors]
    earlier: list[tuple[str, str]] = []
    for p in points:
        if p["kind"] == kind and p["player"] != player and all(p["player"] != e[0] for e in earlier):
            earlier.append((p["player"], _player(p)))
    return out + (earlier[-checkpoints:] if checkpoints else [])


def _player(point: dict[str, Any]):
    """The agent of a stored point: its recipe (``search.agents.AgentRecipe``), or the spec string of a
    point written before recipes (2026-12)."""
    if isinstance(point.get("recipe"), dict):
        from search.agents import AgentRecipe

        return AgentRecipe.from_dict(point["recipe"])
    return point["spec"]


def run_point(run_arena, curve_dir: Path, iteration: int, kind: str, player: str, spec,
              opponents_: list[tuple[str, str]], games: int, seed: int, run_games: int, hours: float,
              **arena_kwargs) -> dict[str, Any]:
    """Play the point's matches (``run_arena(spec_a, spec_b, games, seed=, out_dir=, **arena_kwargs)``,
    resumable) and write its ``results.json``; returns that dictionary."""
    results = []
    for j, (label, opp_spec) in enumerate(opponents_):
        summary = run_arena(spec, opp_spec, games, seed=seed + 1000 * j, out_dir=curve_dir / _slug(label),
                            **arena_kwargs)
        results.append({"a": player, "b": label, "b_spec": str(opp_spec), "wins": summary.wins, "draws": summary.draws,
                        "losses": summary.losses})
    data = {"format": POINT_FORMAT, "version": 1, "iteration": iteration, "kind": kind, "player": player,
            "spec": str(spec), "games": run_games, "hours": hours, "results": results}
    if not isinstance(spec, str):
        data["recipe"] = _rebase_nets(spec.to_dict(), curve_dir.parent.parent, relative=True)
    atomic_write_json(curve_dir / RESULTS_FILE, data)
    return data


def fit_curve(points: list[dict[str, Any]], anchor: str | None = "expert") -> dict[str, Any]:
    """The joint Bradley-Terry fit of every point (module docstring): ``{"anchor", "ratings": {label:
    {"elo", "se", "ci95"}}, "points": [{"iteration", "kind", "player", "games", "hours", "elo", "ci95"}]}``.
    Ratings are ``None`` when nothing was played; ``anchor`` falls back to the mean when it never played."""
    results = [PairResult(r["a"], r["b"], r["wins"], r["draws"], r["losses"]) for p in points for r in p["results"]
               if r["wins"] + r["draws"] + r["losses"] > 0]
    agents: list[str] = []
    for r in results:
        for name in (r.a, r.b):
            if name not in agents:
                agents.append(name)
    ratings: dict[str, dict[str, Any]] = {}
    if len(agents) >= 2:
        fit = bradley_terry(results, agents, anchor=anchor if anchor in agents else None)
        for i, a in enumerate(agents):
            ratings[a] = {"elo": float(fit.elo[i]), "se": float(fit.se[i]), "ci95": list(fit.ci95[i])}
        used_anchor = fit.anchor
    else:
        used_anchor = anchor
    rows = []
    for p in points:
        r = ratings.get(p["player"], {})
        rows.append({"iteration": p["iteration"], "kind": p["kind"], "player": p["player"], "games": p["games"],
                     "hours": p["hours"], "elo": r.get("elo"), "se": r.get("se"), "ci95": r.get("ci95")})
    return {"anchor": used_anchor, "ratings": ratings, "points": rows}


def curve_rate(rows: list[dict[str, Any]], x: str = "hours") -> dict[str, dict[str, Any]]:
    """How fast the curve rises: per net kind, the weighted least-squares slope of the points' Elo against
    ``x`` (``"hours"`` or ``"games"``), each point weighted by ``1 / se**2`` of its fitted rating.

    ``rows``: :func:`fit_curve`'s ``points``. Returns ``{kind: {"slope": Elo per unit of x, "se",
    "ci95": [low, high] (normal, 95%), "points": n, "span": [first x, last x], "center": [weighted mean
    x, weighted mean Elo] (the line passes through it), "gain": last Elo - first Elo}}`` for every kind
    with at least two rated points at two different ``x``; the interval treats
    the points as independent, which the joint fit makes them only approximately (points sharing a
    player share its rating), so it is a guide, not a test. Points without a finite positive ``se``
    are left out."""
    out: dict[str, dict[str, Any]] = {}
    for kind in sorted({r["kind"] for r in rows}):
        pts = [r for r in rows if r["kind"] == kind and finite(r.get("elo")) and finite(r.get("se"))
               and r["se"] > 0 and finite(r.get(x))]
        if len(pts) < 2:
            continue
        xs = np.array([float(r[x]) for r in pts])
        ys = np.array([float(r["elo"]) for r in pts])
        w = 1.0 / np.array([float(r["se"]) for r in pts]) ** 2
        xm, ym = float(np.sum(w * xs) / np.sum(w)), float(np.sum(w * ys) / np.sum(w))
        sxx = float(np.sum(w * (xs - xm) ** 2))
        if sxx <= 0:
            continue
        slope = float(np.sum(w * (xs - xm) * (ys - ym)) / sxx)
        se = float(np.sqrt(1.0 / sxx))
        out[kind] = {"slope": slope, "se": se, "ci95": [slope - 1.96 * se, slope + 1.96 * se], "points": len(pts),
                     "span": [float(xs.min()), float(xs.max())], "center": [xm, ym],
                     "gain": float(ys[np.argmax(xs)] - ys[np.argmin(xs)])}
    return out


def rate_text(kind: str, rate: dict[str, Any], x: str = "hours") -> str:
    """One line of :func:`curve_rate`'s result for ``x`` (``"hours"``: Elo per hour; ``"games"``: Elo per
    100 self-play games): ``upper: +41 Elo per hour [+5, +77] over 5 points, 0.00-4.12 hours (...)``."""
    scale, per = (1.0, "hour") if x == "hours" else (100.0, "100 games")
    lo, hi = (scale * v for v in rate["ci95"])
    a, b = rate["span"]
    span = f"{a:.2f}-{b:.2f} hours" if x == "hours" else f"{a:.0f}-{b:.0f} games"
    return (f"{kind}: {scale * rate['slope']:+.0f} Elo per {per} [{lo:+.0f}, {hi:+.0f}] over {rate['points']} "
            f"points, {span} (last - first: {rate['gain']:+.0f} Elo)")


def curve_text(point: dict[str, Any]) -> str:
    """One line for the display: ``slm@i0003: Elo -212 [-380, -44] vs expert = 0``."""
    if point.get("elo") is None:
        return f"{point['player']}: no games yet"
    lo, hi = point["ci95"]
    return f"{point['player']}: Elo {point['elo']:+.0f} [{lo:+.0f}, {hi:+.0f}] (anchor at 0)"


def finite(x) -> bool:
    return x is not None and bool(np.isfinite(x))
