"""What an arena's layouts are worth: each game's finished layout played out many times by the expert.

``python -m lab.bench.layout_worth DIR [DIR ...] [--playouts R] [--ply P] [--seed S] [--workers W] [--out OUT]
[--json]`` reads the games of each arena directory (``python cli.py arena A B --out DIR``) and plays the
position where each game's layout ended (the first battle position) out ``R`` (8) times to the
game's end, the expert on both sides (the play-out of :mod:`lab.bench.battle_noise`), play-out ``i`` of
a game seeded with ``(S, crc32 of "DIR name/file name", i)``. With ``--ply P`` (below 196) each
play-out starts from the game's position after ``P`` placements and the expert finishes the layout
on both sides first: the worth of the layout up to ply ``P``, so that the worths at a few plies show
where in the layout an agent's gain over the expert's layout is made. A's mean score over those play-outs
(win 1, draw 1/2) is the game's *layout worth*: its expected score given the layout, under the
battle of an arena in which both sides battle as ``expert`` (``slm+expert``, ``rollout`` and
``slm_rollout`` against ``expert``; the command cannot see an agent's battle, so that is the
caller's to know). The mean worth over an arena's games estimates the arena's own expected score
with most of the battle's chance averaged out (``python -m lab.bench.battle_noise``: from the layout's
end the position decides about an eighth of one game's variance), so two layout agents are told
apart with a fraction of the games.

Printed per directory: the games, A's played score, the mean worth with its standard error and 95%
interval (normal, over the games), A's worth as White and as Black, and the variance ratio (the
played scores' variance over the worths': how many played games one layout's worth stands for),
and the played score minus the worth game by game with its standard error and z (the battles' luck:
zero in expectation, since the play-outs battle as the arena's agents do,
``tests/test_battle_noise.py``). With more than one directory, each one's difference from the first
with its standard error and z,
the same paired game by game (:func:`paired_difference`: an arena played with another's ``--seed``
by an agent that plays alike until some ply shares those plies' layouts, and the paired standard
error leaves out what they share; games pair by what determines them, their game seed (record
metadata) and A's colour, so arenas of other seeds do not pair, while a version-1 arena whose
``--seed`` replayed another's games pairs with those), and the distinct games of the directories
with the same two specs pooled (a game in two of them counts once), each pool also paired with the
first directory's pool (the games of its two specs in all the directories).

With ``--out OUT`` every game's play-outs go to ``OUT/worth.json`` (written atomically after each
batch, the directory locked), and a rerun with the same ``OUT`` and options (``--playouts``,
``--seed``, ``--ply``) plays only the games not there yet: a long measurement resumes after a kill.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import zlib
from pathlib import Path

import numpy as np

from core.board import NUM_POINTS

BATCH = 16  # games played out between two saves of --out
WORTH_FILE = "worth.json"


class WorthError(ValueError):
    """A directory that is not an arena's output, or an ``--out`` file made with other options; the
    message names the directory or file and the reason."""


def arena_games(directory: str | Path, ply: int = NUM_POINTS) -> dict:
    """The games of arena directory ``directory``: ``{"a", "b"`` (its specs, from ``arena.json``), ``"seed"`` (its
    ``--seed``), ``"games": [{"key"`` (``"DIR name/file name"``), ``"file"`` (the record's file name),
    ``"game_seed"`` (from the record's metadata, ``train.matches.arena.game_seeds``), ``"jfen"`` (the position after the
    layout's first ``ply`` placements, 0..196; default all 196), ``"ruleset"`` (the record's, a dict),
    ``"a_colour"`` (``"w"`` or ``"b"``), ``"played"`` (A's score in the game,
    ``train.matches.arena.a_points``)``}]}``, in game order; games that ended before the layout did, or without a
    result, are left out. The records are read and checked as the arena reads them
    (``train.matches.arena.load_records``). Raises :class:`WorthError` when ``directory`` holds no readable ``arena.json`` or no finished game, or a record cannot be read, has no game seed, belongs to
    another match or cannot be replayed, and ``ValueError`` for a ``ply`` outside 0..196."""
    from core.errors import JiuError
    from train.matches.arena import CONFIG_FILE, a_points, load_records, record_path

    if not 0 <= ply <= NUM_POINTS:
        raise ValueError(f"ply must be in 0..{NUM_POINTS}, got {ply!r}")
    d = Path(directory)
    try:
        config = json.loads((d / CONFIG_FILE).read_text())
        a, b, seed, count = config["a"], config["b"], config["seed"], int(config["games"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise WorthError(f"{d}: not an arena directory (no readable {CONFIG_FILE}: {type(e).__name__})") from None
    try:
        records = load_records(d, count, a, b, seed)
    except JiuError as e:  # ArenaError
        raise WorthError(str(e)) from None
    if not records:
        raise WorthError(f"{d}: no finished games in {record_path(d, 0).parent}")
    games = []
    for i, record in records.items():
        try:
            line = record.replay()
        except (JiuError, ValueError) as e:
            raise WorthError(f"{record_path(d, i)}: {e}") from None
        if len(line) <= NUM_POINTS or record.result is None:
            continue
        colour = record.metadata["a_colour"]
        name = record_path(d, i).name
        game_seed = record.metadata.get("game_seed")
        if not isinstance(game_seed, int):
            raise WorthError(f"{record_path(d, i)}: field 'metadata.game_seed' is {game_seed!r}, expected an integer")
        games.append({"key": f"{d.name}/{name}", "file": name, "game_seed": game_seed, "jfen": line[ply].to_jfen(),
                      "ruleset": record.ruleset.model_dump(), "a_colour": colour,
                      "played": a_points(record.result, colour)})
    return {"a": a, "b": b, "seed": int(seed), "games": games}


def worth_stats(played: np.ndarray, worth: np.ndarray, a_white: np.ndarray) -> dict:
    """Summary of one arena's ``n`` games (``played``, ``worth``: ``float64[n]``, A's scores; ``a_white``
    ``bool[n]``): ``{"games", "played", "worth", "se"`` (standard error of the mean worth, ddof 1),
    ``"ci95"`` (normal), ``"white"`` / ``"black"`` (mean worth by A's colour, ``None`` without such
    games), ``"variance_ratio"`` (played variance over worth variance; ``None`` when the worths do
    not vary), ``"luck"``: ``{"mean"`` (played minus worth, the mean over the games: the battles'
    luck, zero in expectation when the play-outs battle as the arena's agents did), ``"se"`` (its
    standard error, ddof 1), ``"z"`` (``None`` when ``se`` is 0)``}}``. Raises ``ValueError`` for
    fewer than 2 games."""
    played, worth, a_white = (np.asarray(x) for x in (played, worth, a_white))
    n = len(worth)
    if n < 2:
        raise ValueError(f"worth_stats needs at least 2 games, got {n}")
    mean, se = float(worth.mean()), float(worth.std(ddof=1) / math.sqrt(n))
    var_worth = float(worth.var(ddof=1))
    gap = played - worth
    luck_mean, luck_se = float(gap.mean()), float(gap.std(ddof=1) / math.sqrt(n))
    luck = {"mean": luck_mean, "se": luck_se, "z": luck_mean / luck_se if luck_se > 0 else None}
    return {"games": n, "played": float(played.mean()), "worth": mean, "se": se,
            "ci95": (mean - 1.96 * se, mean + 1.96 * se),
            "white": float(worth[a_white].mean()) if a_white.any() else None,
            "black": float(worth[~a_white].mean()) if (~a_white).any() else None,
            "variance_ratio": float(played.var(ddof=1)) / var_worth if var_worth > 0 else None, "luck": luck}


def paired_difference(first: dict, other: dict) -> dict | None:
    """The worth difference ``other`` minus ``first`` game by game: both map a game's key (in
    :func:`run_layout_worth`, ``(game seed, A's colour)``) to ``(A's colour, A's worth)``; the
    pairs are the keys in both with A of the same colour (an arena's game ``k``: with the same
    ``--seed`` two arenas of agents that play alike until some ply share their games up to there, and
    the pairing takes out what the layouts share). Returns
    ``{"games", "worth"`` (mean difference), ``"se"`` (its standard error, ddof 1), ``"z"`` (``None``
    when ``se`` is 0)``}``, or ``None`` with fewer than 2 pairs."""
    names = sorted(k for k in first.keys() & other.keys() if first[k][0] == other[k][0])
    if len(names) < 2:
        return None
    d = np.array([other[k][1] - first[k][1] for k in names], np.float64)
    mean, se = float(d.mean()), float(d.std(ddof=1) / math.sqrt(len(d)))
    return {"games": len(d), "worth": mean, "se": se, "z": mean / se if se > 0 else None}


def _task(game: dict, index: int, playouts: int, seed: int) -> dict:
    return {"index": index, "key": zlib.crc32(game["key"].encode()), "jfen": game["jfen"], "ruleset": game["ruleset"],
            "seed": seed, "rollouts": playouts}


def run_layout_worth(directories, playouts: int = 8, seed: int = 0, workers: int = 1, out: str | None = None,
                     progress=None, ply: int = NUM_POINTS) -> dict:
    """The measurement of the module docstring, from layout ply ``ply`` (0..196, else ``ValueError``
    from :func:`arena_games`); ``progress(done, total)`` after each game played out. Returns
    ``{"playouts", "seed", "ply", "seconds", "arenas": [{"dir", "a", "b", **worth_stats,
    "difference"`` (from the first arena: ``{"worth", "se", "z"}``, ``None`` for the first), ``"paired"``
    (:func:`paired_difference` from the first, ``None`` for the first)``}],
    "pooled": [{"a", "b", "arenas", **worth_stats, "paired"}]}``, the latter over the distinct games of
    all the arenas of one pair of specs, for each pair that has more than one, with ``"paired"`` the
    :func:`paired_difference` from the games of the first arena's pair of specs (``None`` for that
    pair itself). A game is identified, and paired, by ``(game seed, A's colour)``: one that occurs in
    several arenas of a pool (a directory given twice, or a version-1 arena's replay of another's
    games) counts once there, its worth the mean of its worths.
    Raises :class:`WorthError` (see :func:`arena_games`; also for an ``--out`` file of other options)
    and ``train.jobs.rundir.DirectoryInUse`` when another process holds ``out``."""
    from lab.bench.battle_noise import play_out
    from train.jobs.rundir import atomic_write_json, lock_dir
    from train.jobs.workers import map_indexed

    arenas = [{"dir": str(d), **arena_games(d, ply)} for d in directories]
    lock = lock_dir(out) if out is not None else None
    try:
        done: dict = {}
        path = Path(out) / WORTH_FILE if out is not None else None
        if path is not None and path.is_file():
            try:
                saved = json.loads(path.read_text())
                saved["games"] = {str(k): [float(x) for x in v] for k, v in saved["games"].items()}
            except (ValueError, TypeError, KeyError, AttributeError) as e:
                raise WorthError(f"{path}: not a {WORTH_FILE} of this command ({type(e).__name__}: {e})") from None
            made = (saved.get("playouts"), saved.get("seed"), saved.get("ply", NUM_POINTS))
            if made != (playouts, seed, ply):
                raise WorthError(f"{path}: made with --playouts {made[0]} --seed {made[1]} --ply {made[2]}; "
                                 f"use those or another --out")
            done = saved["games"]
        todo = [g for a in arenas for g in a["games"] if g["key"] not in done]
        t0 = time.perf_counter()
        for start in range(0, len(todo), BATCH):
            batch = todo[start: start + BATCH]
            tasks = [_task(g, i, playouts, seed) for i, g in enumerate(batch)]
            base = start

            def step(k: int, total: int, base: int = base) -> None:
                if progress is not None:
                    progress(base + k, len(todo))

            for g, r in zip(batch, map_indexed(play_out, tasks, workers, step)):
                done[g["key"]] = r["score"]
            if path is not None:
                atomic_write_json(path, {"playouts": playouts, "seed": seed, "ply": ply, "games": done})
    finally:
        if lock is not None:
            lock.release()
    result = {"playouts": playouts, "seed": seed, "ply": ply, "seconds": time.perf_counter() - t0, "arenas": []}
    first = first_games = None
    pools: dict[tuple, dict] = {}  # (a, b) -> {"arenas": n, "games": {key: [played, A's colour, [worths]]}}
    for a in arenas:
        games = a.pop("games")
        white = np.array([g["a_colour"] == "w" for g in games])
        worth = np.array([np.mean(done[g["key"]]) if w else 1.0 - np.mean(done[g["key"]])
                          for g, w in zip(games, white)], np.float64)
        played = np.array([g["played"] for g in games], np.float64)
        keys = [(g["game_seed"], g["a_colour"]) for g in games]
        by_game = {k: (g["a_colour"], float(w)) for k, g, w in zip(keys, games, worth)}
        pool = pools.setdefault((a["a"], a["b"]), {"arenas": 0, "games": {}})
        pool["arenas"] += 1
        for k, g, p, w in zip(keys, games, played, worth):
            pool["games"].setdefault(k, [float(p), g["a_colour"], []])[2].append(float(w))
        stats = worth_stats(played, worth, white)
        diff = paired = None
        if first is not None:
            d, se = stats["worth"] - first["worth"], math.hypot(stats["se"], first["se"])
            diff = {"worth": d, "se": se, "z": d / se if se > 0 else None}
            paired = paired_difference(first_games, by_game)
        else:
            first, first_games = stats, by_game
        result["arenas"].append({**a, **stats, "difference": diff, "paired": paired})
    first_spec = next(iter(pools))

    def pool_games(spec: tuple) -> dict:  # key -> (A's colour, worth): paired_difference's input
        return {k: (r[1], float(np.mean(r[2]))) for k, r in pools[spec]["games"].items()}

    result["pooled"] = []
    for spec, pool in pools.items():
        if pool["arenas"] < 2:
            continue
        rows = list(pool["games"].values())
        stats = worth_stats(np.array([r[0] for r in rows]), np.array([np.mean(r[2]) for r in rows]),
                            np.array([r[1] == "w" for r in rows]))
        paired = None if spec == first_spec else paired_difference(pool_games(first_spec), pool_games(spec))
        result["pooled"].append({"a": spec[0], "b": spec[1], "arenas": pool["arenas"], **stats, "paired": paired})
    return result


def main() -> None:  # pragma: no cover - command line
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dirs", nargs="+", metavar="DIR", help="arena output directories (arena --out)")
    parser.add_argument("--playouts", type=int, default=8, help="expert play-outs of each game's layout")
    parser.add_argument("--ply", type=int, default=NUM_POINTS,
                        help="play out from the position after this many placements, the expert finishing the layout")
    parser.add_argument("--seed", type=int, default=0, help="seed of the play-outs")
    parser.add_argument("--workers", type=int, default=1, help="processes")
    parser.add_argument("--out", default=None, help="directory keeping the play-outs (resumable)")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    args = parser.parse_args()
    for name, value, lo, hi in (("--playouts", args.playouts, 1, 10_000), ("--ply", args.ply, 0, NUM_POINTS),
                                ("--seed", args.seed, 0, 2**32 - 1),
                                ("--workers", args.workers, 1, 64)):
        if not lo <= value <= hi:
            parser.exit(2, f"error: {name} must be in {lo}..{hi}, got {value}\n")

    def progress(done: int, total: int) -> None:
        print(f"  {done}/{total} games", file=sys.stderr if args.json else sys.stdout, flush=True)

    from train.jobs.rundir import DirectoryInUse

    try:
        r = run_layout_worth(args.dirs, args.playouts, args.seed, args.workers, args.out, progress, args.ply)
    except WorthError as e:
        parser.exit(2, f"error: {e}\n")
    except DirectoryInUse as e:
        parser.exit(2, f"error: --out: {e}\n")
    except ValueError as e:
        parser.exit(2, f"error: DIR: {e}\n")
    if args.json:
        print(json.dumps(r))
        return

    def z_text(z: float | None) -> str:
        return "n/a" if z is None else f"{z:+.2f}"

    def paired_line(d: dict | None, what: str) -> None:
        if d is not None:
            print(f"  paired with {what} of the same game seed and colour ({d['games']} games): "
                  f"{100 * d['worth']:+.1f} points (s.e. {100 * d['se']:.1f}), z {z_text(d['z'])}")

    def luck_line(d: dict) -> None:
        print(f"  played minus worth (the battles' luck): {100 * d['mean']:+.1f} points "
              f"(s.e. {100 * d['se']:.1f}), z {z_text(d['z'])}")

    start = "finished layout" if args.ply == NUM_POINTS else f"layout up to ply {args.ply}, the expert finishing it"
    print(f"{args.playouts} expert play-outs of each game's {start} ({r['seconds']:.0f} s); A's scores")
    for a in r["arenas"]:
        lo, hi = a["ci95"]
        colours = " ".join(f"{c} {100 * a[c]:.1f}%" for c in ("white", "black") if a[c] is not None)
        ratio = "n/a" if a["variance_ratio"] is None else f"{a['variance_ratio']:.1f}"
        print(f"{a['dir']}: {a['a']} vs {a['b']}, {a['games']} games: played {100 * a['played']:.1f}%, "
              f"worth {100 * a['worth']:.1f}% (s.e. {100 * a['se']:.1f}; [{100 * lo:.1f}%, {100 * hi:.1f}%]; "
              f"{colours}); variance ratio {ratio}")
        luck_line(a["luck"])
        if a["difference"] is not None:
            d = a["difference"]
            print(f"  minus the first: {100 * d['worth']:+.1f} points (s.e. {100 * d['se']:.1f}), z {z_text(d['z'])}")
        paired_line(a["paired"], "the first's game")
    for p in r["pooled"]:
        lo, hi = p["ci95"]
        print(f"pooled, {p['a']} vs {p['b']}, {p['arenas']} arenas, {p['games']} games: "
              f"played {100 * p['played']:.1f}%, worth {100 * p['worth']:.1f}% (s.e. {100 * p['se']:.1f}; "
              f"[{100 * lo:.1f}%, {100 * hi:.1f}%])")
        luck_line(p["luck"])
        paired_line(p["paired"], "the first's pool, game")


if __name__ == "__main__":  # pragma: no cover
    main()
