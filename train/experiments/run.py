"""Running an experiment (``python cli.py experiment``): :func:`run_experiment` resolves a spec
(``train.experiments.spec``), plays or measures its rows, resumably, and writes the result, the table and
the plots (``train.experiments.tables``).

Match rows are colour-balanced arena matches sharing one pool of workers
(``train.matches.arena.run_matches``); squares rows are self-play runs played in this process, one after
another (``train.experiments.squares``); decision-time rows are measured by the *timer* the caller passes in
(``bench.search.measure_decision_time``: the CLI owns that import, ``train`` does not import ``bench``).

Run directory (``--out``, default ``runs/experiments/<name>``), every file written atomically::

    experiment.json    the resolved spec (params applied), seed, selected rows: a resumed run must match
    rows/<id>/         one arena run directory per match row (resumable game by game)
    rows/<id>.json     one measured row of a decision-time experiment (kept on resume), or the runs
                       of a squares row (resumed run by run)
    round-robin/       the spec's round robin: a tournament run directory (``train.matches.tournament``:
                       tournament.json, tournament.md, payoff.png, gamescape.png, pairs/)
    result.json        {"format": "jiu-experiment", "version": 1, "name", "title", "kind", "seed",
                        "params", "games", "rows": [{"id", "label", "a", "b", "games", ..., "stats"}],
                        "complete"}
    table.md           the table as the paper prints it, with the command, the budget and the paper's values
    *.png              the spec's plots (``train.matches.plots``)

The run directory is locked while the experiment runs (``train.jobs.rundir.lock_dir``, as ``arena
--out``): a second experiment on it is refused at once, before it reads or writes anything there, so
``experiment.json`` and ``result.json`` always come from one run.

Errors (bad spec file, unknown agent, unknown parameter, a run directory of another experiment) raise
:class:`ExperimentError` with one line naming the field.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from core.errors import JiuError
from core.rules import DEFAULT_RULESET, Ruleset
from train.experiments.spec import ExperimentError, ExperimentSpec, agent_problems, resolve
from train.experiments.tables import markdown_table, write_plots

RESULT_FORMAT = "jiu-experiment"
VERSION = 1
SPEC_FILE = "experiment.json"
RESULT_FILE = "result.json"
TABLE_FILE = "table.md"
ROWS_DIR = "rows"
Timer = Callable[..., dict]


def _check_run_dir(out: Path, identity: dict[str, Any], resume: bool) -> None:
    from train.jobs.rundir import LOCK_FILE, LOCK_INFO

    path = out / SPEC_FILE
    if not path.exists():
        if out.exists() and any(p.name not in (LOCK_FILE, LOCK_INFO) for p in out.iterdir()) and not resume:
            raise ExperimentError(f"--out {out}: exists and is not an experiment run directory; use another --out")
        return
    if not resume:
        raise ExperimentError(f"--out {out}: holds an experiment run already; pass --resume to continue it or use"
                              " another --out")
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ExperimentError(f"{path}: unreadable ({exc}); use another --out") from None
    for key in ("name", "kind", "seed", "rules", "threads", "round_robin"):
        if stored.get(key) != identity.get(key):
            raise ExperimentError(f"{path}: field {key!r} is {stored.get(key)!r} but this run asks for"
                                  f" {identity.get(key)!r}; resume with the same settings or use another --out")
    old = {r["id"]: r for r in stored.get("rows", [])}
    for row in identity["rows"]:
        prev = old.get(row["id"])
        if prev is None:
            continue
        for key in ("a", "b", "measure", "phase", "simulations"):
            if prev.get(key) != row.get(key):
                raise ExperimentError(f"{path}: row {row['id']!r} field {key!r} is {prev.get(key)!r} but this run"
                                      f" asks for {row.get(key)!r}; use another --out")


def run_experiment(
    spec: ExperimentSpec,
    out_dir: str | os.PathLike | None = None,
    games: int | None = None,
    workers: int = 1,
    seed: int = 0,
    params: dict[str, Any] | None = None,
    rows: Sequence[str] | None = None,
    resume: bool = False,
    progress: bool = True,
    timer: Timer | None = None,
    command: str = "",
) -> dict[str, Any]:
    """Run (or resume) an experiment and return its result dictionary (also ``result.json``;
    ``table.md`` and the plots beside it). ``games``: games per match row (even; default: the
    spec's); ``workers``: processes shared by all rows (``0``: in this process); ``seed``: the base
    seed of every row, in ``0..core.playout.MAX_SEED`` (2**32 - 1); ``params``: placeholder values;
    ``rows``: row ids to run (default all);
    ``resume``: continue the run in ``out_dir`` (without it an existing run is refused; the directory
    is locked for the run, another experiment on it is refused with ``DirectoryInUse``); ``timer``:
    the decision-time measurement (``bench.search.measure_decision_time``), required by
    ``decision-time`` experiments; ``command``: the command line, printed in ``table.md``.

    Raises ``ExperimentError`` (bad parameter, unknown agent, run directory of another experiment)
    or ``train.matches.arena.ArenaError`` (a failed game: finished games stay; rerun with ``--resume``)."""
    from core.playout import MAX_SEED
    from train.jobs.rundir import lock_dir

    if workers < 0:
        raise ExperimentError(f"--workers: must be >= 0, got {workers}")
    if not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        shown = seed if not isinstance(seed, int) or abs(seed) < 10**12 else f"{str(seed)[:12]}..."
        raise ExperimentError(f"--seed: must be an integer in 0..{MAX_SEED}, got {shown}")
    resolved = resolve(spec, params, games, rows)
    problems = agent_problems(resolved)
    if problems:
        others = [r["id"] for r in resolved["rows"] if not any(f"row {r['id']!r}" in p for p in problems)]
        hint = f"; run the other rows with --rows {','.join(others)}" if others else ""
        raise ExperimentError(problems[0] + hint)
    try:
        ruleset = Ruleset.parse(dict(spec.rules)) if spec.rules else DEFAULT_RULESET
    except JiuError as exc:
        raise ExperimentError(f"field 'rules': {exc}") from None
    if spec.kind == "decision-time" and timer is None:
        raise ExperimentError(f"experiment {spec.name!r}: a decision-time experiment needs a timer"
                              " (bench.search.measure_decision_time; run it with python cli.py experiment)")
    out = Path(out_dir) if out_dir is not None else Path("runs") / "experiments" / spec.name
    identity = {"format": RESULT_FORMAT + "-spec", "version": VERSION, "name": spec.name, "kind": spec.kind,
                "seed": seed, "rules": ruleset.model_dump(), "threads": resolved.get("threads"),
                "round_robin": resolved.get("round_robin"),
                "params": resolved["params"], "rows": resolved["rows"], "spec": spec.model_dump()}
    if out.exists() and not out.is_dir():
        raise ExperimentError(f"--out {out}: exists and is not a directory; use another --out")
    with lock_dir(out):  # checked under the lock: a second experiment on `out` can neither pass nor race it
        _check_run_dir(out, identity, resume)
        return _run_locked(spec, resolved, identity, out, workers, seed, ruleset, progress, timer, command)


def _run_locked(spec: ExperimentSpec, resolved: dict[str, Any], identity: dict[str, Any], out: Path, workers: int,
                seed: int, ruleset: Ruleset, progress: bool, timer: Timer | None, command: str) -> dict[str, Any]:
    from core.atomic import atomic_write_text

    _write_json(out / SPEC_FILE, identity)
    round_robin = None
    if resolved.get("round_robin"):
        round_robin = _run_round_robin(resolved["round_robin"], out, workers, seed, ruleset, progress)
    if spec.kind == "match":
        matches = _run_matches([r for r in resolved["rows"] if r["measure"] == "match"], out, workers, seed, ruleset,
                               progress)
        squares = _run_squares([r for r in resolved["rows"] if r["measure"] == "squares"], out, seed, ruleset,
                               spec.steps, spec.bin_steps, progress)
        by_id = {r["id"]: r for r in matches + squares}
        done = [by_id[r["id"]] for r in resolved["rows"]]
    else:
        done = _run_timings(resolved["rows"], out, resolved["threads"], timer, progress)
    result = {"format": RESULT_FORMAT, "version": VERSION, "name": spec.name, "title": spec.title,
              "paper": spec.paper, "description": spec.description, "kind": spec.kind, "seed": seed,
              "params": resolved["params"], "rules": spec.rules, "threads": resolved.get("threads"),
              "steps": spec.steps, "bin_steps": spec.bin_steps,
              "columns": list(spec.columns) if spec.kind == "match" else None, "rows": done,
              "round_robin": round_robin,
              "complete": all(r.get("complete", True) for r in done) and (round_robin or {}).get("complete", True),
              "command": command}
    _write_json(out / RESULT_FILE, result)
    atomic_write_text(out / TABLE_FILE, markdown_table(result))
    result["plots"] = [str(p) for p in write_plots(spec, result, out)]
    return result


def _write_json(path: Path, data: Any) -> None:
    from train.jobs.rundir import atomic_write_json

    atomic_write_json(path, data)


def _match_stats(d: dict[str, Any]) -> dict[str, Any]:
    """The numbers a match row reports (from an arena ``summary.json`` dictionary)."""
    wc = d["by_colour"]
    t = d["time"]
    return {
        "games": d["games"], "wins": d["wins"], "draws": d["draws"], "losses": d["losses"],
        "win_rate": d["win_rate"], "se": d["se"], "ci95": d["ci95"], "wilson_ci95": d["wilson_ci95"],
        "elo": d["elo"],
        "white": {k: wc["a_white"][k] for k in ("games", "wins", "draws", "losses", "win_rate", "se", "ci95",
                                                "wilson_ci95")},
        "black": {k: wc["a_black"][k] for k in ("games", "wins", "draws", "losses", "win_rate", "se", "ci95",
                                                "wilson_ci95")},
        "time_a_layout": t["a"]["layout"]["mean"], "time_a_battle": t["a"]["battle"]["mean"],
        "time_b_layout": t["b"]["layout"]["mean"], "time_b_battle": t["b"]["battle"]["mean"],
        "time": t, "plies": d["mean_game_length"], "reasons": d["reasons"],
    }


def _run_matches(rows: list[dict], out: Path, workers: int, seed: int, ruleset: Ruleset, progress: bool) -> list[dict]:
    from train.matches.arena import run_matches

    if not rows:
        return []
    summaries = run_matches([(r["a"], r["b"], r["games"], out / ROWS_DIR / r["id"]) for r in rows], workers=workers,
                            seed=seed, ruleset=ruleset, progress=progress)
    return [{**row, "dir": str(Path(ROWS_DIR) / row["id"]), "complete": s.data["complete"],
             "stats": _match_stats(s.data)} for row, s in zip(rows, summaries)]


def _run_round_robin(rr: dict[str, Any], out: Path, workers: int, seed: int, ruleset: Ruleset,
                     progress: bool) -> dict[str, Any]:
    """The spec's round robin as a tournament in ``out/round-robin`` (resumed pair by pair); returns
    ``{"agents", "games", "anchor", "dir", "complete", "tournament"}`` (``tournament``: its
    ``tournament.json`` dictionary: ratings, win rates by colour, latency, payoff, Nash)."""
    from train.experiments.spec import ROUND_ROBIN_ID
    from train.matches.tournament import run_tournament

    result = run_tournament(rr["agents"], rr["games"], workers=workers, seed=seed, out_dir=out / ROUND_ROBIN_ID,
                            ruleset=ruleset, progress=progress, anchor=rr["anchor"])
    complete = all(s.data["complete"] for s in result.arenas.values())
    return {**rr, "dir": ROUND_ROBIN_ID, "complete": complete, "tournament": result.data}


def _run_squares(rows: list[dict], out: Path, seed: int, ruleset: Ruleset, steps: int, bin_steps: int,
                 progress: bool) -> list[dict]:
    """Each squares row's ``games`` self-play runs (``train.experiments.squares.selfplay_squares``, run ``k`` seeded
    ``seed + k``), saved to ``rows/<id>.json`` after every run so that ``--resume`` continues."""
    from rich.console import Console

    from train.experiments.squares import selfplay_squares, squares_stats

    console = Console(stderr=True, quiet=not progress)
    done: list[dict] = []
    for row in rows:
        path = out / ROWS_DIR / f"{row['id']}.json"
        runs: list[dict] = []
        if path.exists():
            try:
                stored = json.loads(path.read_text(encoding="utf-8"))
                if stored.get("steps") == steps and stored.get("bin_steps") == bin_steps:
                    runs = stored["runs"][: row["games"]]
            except (OSError, json.JSONDecodeError, KeyError, TypeError):
                runs = []  # a damaged row is measured again
        for k in range(len(runs), row["games"]):
            with console.status(f"{row['id']}: self-play run {k + 1}/{row['games']} ({steps} steps)"):
                runs.append(selfplay_squares(row["a"], steps, bin_steps, seed + k, ruleset))
            _write_json(path, {"steps": steps, "bin_steps": bin_steps, "runs": runs})
        done.append({**row, "complete": len(runs) == row["games"], "stats": squares_stats(runs)})
    return done


def _run_timings(rows: list[dict], out: Path, threads: int, timer: Timer, progress: bool) -> list[dict]:
    from rich.console import Console

    console = Console(stderr=True, quiet=not progress)
    done: list[dict] = []
    for row in rows:
        path = out / ROWS_DIR / f"{row['id']}.json"
        stats = None
        if path.exists():
            try:
                stats = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                stats = None  # a damaged row is measured again
        if stats is None:
            with console.status(f"{row['phase']}: serial MCTS and WU-UCT ({threads} threads), {row['simulations']}"
                                " simulations"):
                stats = timer(row["phase"], row["simulations"], threads)
            _write_json(path, stats)
        done.append({**row, "threads": threads, "stats": stats})
    return done
