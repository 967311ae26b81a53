"""The statistics of an arena match: :func:`summarize_records` (``summary.json``'s numbers, from agent A's
point of view) and :class:`ArenaSummary` (what ``train.matches.arena.run_arena`` returns)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from train.jobs.rundir import json_safe
from train.matches.stats import percentile, win_rate

LAYOUT_PLIES = 196


@dataclass
class ArenaSummary:
    """The result of :func:`run_arena`: ``data`` is the summary dictionary written to
    ``summary.json`` (see :func:`summarize_records`); the most used numbers are attributes."""

    data: dict[str, Any]
    out_dir: Path
    played: int = 0  # games played by this call (the others were on disk already)
    elapsed_seconds: float = 0.0
    records: list = field(default_factory=list, repr=False)

    @property
    def games(self) -> int:
        return self.data["games"]

    @property
    def win_rate(self) -> float | None:
        return self.data["win_rate"]

    @property
    def ci95(self) -> list | None:
        return self.data["ci95"]

    @property
    def wins(self) -> int:
        return self.data["wins"]

    @property
    def draws(self) -> int:
        return self.data["draws"]

    @property
    def losses(self) -> int:
        return self.data["losses"]


def time_stats(values: list[float]) -> dict[str, Any]:
    """``{"moves", "mean", "p95", "max", "total"}`` of decision times in seconds (``None`` when empty)."""
    return {"moves": len(values), "mean": float(np.mean(values)) if values else None,
            "p95": percentile(values, 95) if values else None, "max": max(values) if values else None,
            "total": float(sum(values))}


def _wdl(records: Iterable, a_colour: str | None = None) -> dict[str, Any]:
    wins = draws = losses = 0
    for r in records:
        colour = r.metadata["a_colour"]
        if a_colour is not None and colour != a_colour:
            continue
        if r.result == "draw" or r.result is None:
            draws += 1
        elif r.result == colour:
            wins += 1
        else:
            losses += 1
    return win_rate(wins, draws, losses).to_dict()


def summarize_records(records: Sequence, a: str, b: str) -> dict[str, Any]:
    """Statistics of arena game records (each with ``metadata["a_colour"]`` and the per-move
    ``search`` entries written by :func:`play_game`), from agent A's point of view.

    Keys: ``a``, ``b``; ``games``; ``wins``/``draws``/``losses``/``score`` of A (a game without a
    result counts as a draw); ``win_rate`` (score per game), ``se`` (normal approximation),
    ``ci95`` (normal, as the JFA paper), ``wilson_ci95``, ``elo`` and ``elo_ci95`` (A minus B,
    ``null`` when infinite) — see ``train.matches.stats``; ``by_colour`` ``{"a_white", "a_black"}`` with the
    same keys for the games A played with that colour; ``colours`` ``{"white_wins", "black_wins",
    "draws", "white_score"}`` (first-move advantage); ``reasons`` (end reason -> count);
    ``mean_game_length`` (plies, placements included), ``mean_battle_plies``, ``min_plies``,
    ``max_plies``; ``distinct_games`` (distinct move sequences: agents that do not sample replay their
    games, ``train.matches.arena``'s openings); ``time`` ``{"a"|"b": {"all"|"layout"|"battle": {"moves", "mean", "p95", "max",
    "total"}}}`` decision times in seconds per move (``p95`` linear interpolation);
    ``time_unit`` = ``"seconds"``."""
    records = list(records)
    overall = _wdl(records)
    times: dict[str, dict[str, list[float]]] = {who: {"all": [], "layout": [], "battle": []} for who in "ab"}
    lengths = [len(r.moves) for r in records]
    for r in records:
        a_colour = r.metadata["a_colour"]
        for entry in r.search or ():
            if not entry:
                continue
            who = "a" if entry["side"] == a_colour else "b"
            times[who]["all"].append(entry["time"])
            times[who][entry["phase"]].append(entry["time"])
    results = Counter(r.result for r in records)
    n = len(records)
    data = {
        "a": a,
        "b": b,
        "games": n,
        **{k: overall[k] for k in ("wins", "draws", "losses", "score", "win_rate", "se", "ci95",
                                   "wilson_ci95", "elo", "elo_ci95")},
        "by_colour": {"a_white": _wdl(records, "w"), "a_black": _wdl(records, "b")},
        "colours": {"white_wins": results.get("w", 0), "black_wins": results.get("b", 0),
                    "draws": n - results.get("w", 0) - results.get("b", 0),
                    "white_score": (results.get("w", 0) + 0.5 * (n - results.get("w", 0) - results.get("b", 0))) / n
                    if n else None},
        "reasons": dict(sorted(Counter(r.reason or "unknown" for r in records).items())),
        "mean_game_length": float(np.mean(lengths)) if lengths else None,
        "mean_battle_plies": float(np.mean([max(0, x - LAYOUT_PLIES) for x in lengths])) if lengths else None,
        "min_plies": min(lengths) if lengths else None,
        "max_plies": max(lengths) if lengths else None,
        "distinct_games": len({tuple(r.moves) for r in records}),
        "time_unit": "seconds",
        "time": {who: {k: time_stats(v) for k, v in d.items()} for who, d in times.items()},
    }
    return json_safe(data)
