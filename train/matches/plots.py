"""PNG plots of experiments and tournaments (matplotlib, Agg backend; every file written atomically
through ``core.atomic``). Each function takes plain numbers (no run directories) and returns the path.

- :func:`plot_win_rates` — JFA Figs. 5-6 style: per row, A's win rate as White, as Black and overall,
  with 95% intervals as error bars;
- :func:`plot_decision_time` — JFA Table 3 style: seconds per move of serial MCTS and WU-UCT against
  the simulation count, and the reduction factor;
- :func:`plot_ablation` — JFA Table 5 style: win rate (with 95% interval) and mean decision time per row;
- :func:`plot_squares` — papers/001 Fig. 5 style: mean squares formed per block of self-play steps, one
  line per row, with standard errors;
- :func:`plot_payoff` — a payoff matrix as a heat map (blue = row loses, red = row wins);
- :func:`plot_gamescape` — the 2-D Schur embedding of a population (``train.matches.nash.gamescape``) with
  the maximum-entropy Nash weights as marker sizes.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Sequence

import numpy as np

from core.atomic import atomic_write_bytes


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path: str | os.PathLike) -> Path:
    """Render ``fig`` as PNG (100 dpi, tight) to ``path`` atomically, close it, return the path."""
    plt = _pyplot()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return atomic_write_bytes(path, buf.getvalue())


def _err(rate: float | None, ci: Sequence[float | None] | None) -> tuple[float, float]:
    if rate is None or not ci or ci[0] is None or ci[1] is None:
        return 0.0, 0.0
    return max(0.0, rate - ci[0]), max(0.0, ci[1] - rate)


def plot_win_rates(rows: Sequence[dict], path: str | os.PathLike, title: str = "") -> Path:
    """Bars of A's score rate (``0..1``) per row: as White, as Black, overall; ``rows`` are dicts with
    ``label``, ``white``/``black``/``all`` each ``{"win_rate", "ci95"}`` (``None`` for no games)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(5.0, 2.2 * len(rows) + 1), 3.8))
    width = 0.26
    x = np.arange(len(rows))
    for j, (key, name) in enumerate((("white", "A as White"), ("black", "A as Black"), ("all", "overall"))):
        rates = [100 * (r[key]["win_rate"] or 0.0) for r in rows]
        errs = np.array([_err(r[key]["win_rate"], r[key]["ci95"]) for r in rows]).T * 100
        bars = ax.bar(x + (j - 1) * width, rates, width, yerr=errs, capsize=3, label=name)
        for b, v in zip(bars, rates):
            ax.annotate(f"{v:.0f}", (b.get_x() + b.get_width() / 2, v), ha="center", va="bottom", fontsize=8,
                        xytext=(0, 2), textcoords="offset points")
    ax.axhline(50, color="grey", lw=0.8, ls=":")
    import textwrap

    ax.set_xticks(x, [textwrap.fill(r["label"], 20) for r in rows], fontsize=8)
    ax.set_ylim(0, 125)
    ax.set_yticks(range(0, 101, 20))
    ax.set_ylabel("A's win rate (%), Wilson 95% CI")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper center", ncol=3, frameon=False)
    return save_figure(fig, path)


def plot_squares(labels: Sequence[str], bins: Sequence[Sequence[float]], errors: Sequence[Sequence[float | None]],
                 bin_steps: int, path: str | os.PathLike, title: str = "") -> Path:
    """Lines of the mean squares formed per block of ``bin_steps`` self-play steps (x: the block's last
    step), one per label, with ``errors`` (standard errors, ``None`` = none) as error bars."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.0, 3.8))
    for label, ys, es in zip(labels, bins, errors):
        x = [bin_steps * (i + 1) for i in range(len(ys))]
        ax.errorbar(x, ys, yerr=[e or 0.0 for e in es], marker="o", ms=3, capsize=3, label=label)
    ax.set_xlabel("self-play step")
    ax.set_ylabel(f"squares formed per {bin_steps} steps")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, frameon=False)
    return save_figure(fig, path)


def plot_decision_time(sims: Sequence[int], serial: Sequence[float], parallel: Sequence[float],
                       path: str | os.PathLike, title: str = "", parallel_label: str = "WU-UCT") -> Path:
    """Seconds per move of serial MCTS and WU-UCT against the simulation count, and the
    reduction factor serial / WU-UCT on a second axis."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    ax.plot(sims, serial, "o-", label="serial MCTS")
    ax.plot(sims, parallel, "s-", label=parallel_label)
    ax.set_xlabel("simulations per move")
    ax.set_ylabel("seconds per move")
    ax.set_ylim(0, max(list(serial) + list(parallel) + [0.0]) * 1.15 or 1.0)
    ax.set_xticks(list(sims))
    ax2 = ax.twinx()
    factor = [s / p if p else float("nan") for s, p in zip(serial, parallel)]
    ax2.plot(sims, factor, "^--", color="tab:green", label="reduction factor")
    ax2.set_ylabel("reduction factor (serial / parallel)")
    ax2.set_ylim(0, max([f for f in factor if np.isfinite(f)] + [1.0]) * 1.3)
    lines = ax.get_lines() + ax2.get_lines()
    ax.legend(lines, [ln.get_label() for ln in lines], fontsize=8, loc="upper left")
    ax.set_title(title, fontsize=10)
    return save_figure(fig, path)


def plot_ablation(labels: Sequence[str], rates: Sequence[float | None], cis: Sequence, times: Sequence[float | None],
                  path: str | os.PathLike, title: str = "", time_label: str = "mean decision time (s)") -> Path:
    """Two panels: A's win rate per row (with 95% interval) and a mean decision time per row."""
    plt = _pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(max(8.0, 2.4 * len(labels) + 3), 3.8))
    x = np.arange(len(labels))
    errs = np.array([_err(r, c) for r, c in zip(rates, cis)]).T * 100
    bars = a1.bar(x, [100 * (r or 0.0) for r in rates], yerr=errs, capsize=3, color="tab:blue")
    for b, r in zip(bars, rates):
        a1.annotate("-" if r is None else f"{100 * r:.0f}%", (b.get_x() + b.get_width() / 2, 0), ha="center",
                    va="bottom", fontsize=8, xytext=(0, 2), textcoords="offset points")
    a1.set_ylim(0, 105)
    a1.set_ylabel("win rate (%), Wilson 95% CI")
    a2.bar(x, [t or 0.0 for t in times], color="tab:orange")
    a2.set_ylabel(time_label)
    import textwrap

    for ax in (a1, a2):
        ax.set_xticks(x, [textwrap.fill(label, 16) for label in labels], fontsize=7)
    fig.suptitle(title, fontsize=10)
    return save_figure(fig, path)


def plot_payoff(m: np.ndarray, names: Sequence[str], path: str | os.PathLike, title: str = "",
                cols: Sequence[str] | None = None) -> Path:
    """Heat map of a payoff matrix in ``[-1, 1]`` (row's expected score against the column)."""
    plt = _pyplot()
    m = np.asarray(m, float)
    cols = list(names) if cols is None else list(cols)
    fig, ax = plt.subplots(figsize=(1.0 + 0.7 * len(cols) + 2, 1.0 + 0.6 * len(names)))
    im = ax.imshow(m, cmap="coolwarm", vmin=-1, vmax=1)
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            if np.isfinite(m[i, j]):
                ax.text(j, i, f"{m[i, j]:+.2f}", ha="center", va="center", fontsize=7)
    ax.set_xticks(range(len(cols)), cols, rotation=45, ha="right", fontsize=7)
    ax.set_yticks(range(len(names)), names, fontsize=7)
    fig.colorbar(im, ax=ax, label="row's expected score")
    ax.set_title(title, fontsize=10)
    return save_figure(fig, path)


def plot_gamescape(points: np.ndarray, names: Sequence[str], nash: Sequence[float], path: str | os.PathLike,
                   title: str = "", explained: float | None = None) -> Path:
    """The agents as points of the 2-D gamescape (``train.matches.nash.gamescape``), their convex hull, and
    marker areas proportional to the maximum-entropy Nash weights (a ring marks weight 0)."""
    plt = _pyplot()
    pts = np.asarray(points, float)
    fig, ax = plt.subplots(figsize=(5.0, 4.6))
    if len(pts) >= 3:
        try:
            from scipy.spatial import ConvexHull

            hull = ConvexHull(pts)
            cyc = list(hull.vertices) + [hull.vertices[0]]
            ax.plot(pts[cyc, 0], pts[cyc, 1], color="grey", lw=0.8, ls="--")
        except Exception:  # collinear points (a transitive population) have no 2-D hull
            pass
    nash = np.asarray(nash, float)
    sizes = 40 + 600 * nash
    ax.scatter(pts[:, 0], pts[:, 1], s=sizes, c=["tab:red" if w > 1e-6 else "white" for w in nash],
               edgecolors="black", zorder=3)
    for (x, y), name, w in zip(pts, names, nash):
        ax.annotate(f"{name} ({w:.2f})", (x, y), xytext=(5, 5), textcoords="offset points", fontsize=7)
    ax.axhline(0, color="lightgrey", lw=0.6)
    ax.axvline(0, color="lightgrey", lw=0.6)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("Schur dimension 1")
    ax.set_ylabel("Schur dimension 2")
    note = f"; rank-2 share of the payoff {explained:.0%}" if explained is not None else ""
    ax.set_title((title + "\n" if title else "") + f"(label: Nash weight{note})", fontsize=9)
    return save_figure(fig, path)
