"""Experiments as commands: the papers' tables from one declarative spec (``python cli.py experiment``).

An *experiment spec* (:class:`ExperimentSpec`, a TOML or JSON file: the built-ins are
``experiments/*.toml`` in the repository, a user's own is passed with ``--spec FILE``) names the
agents of each row by spec strings, the games per row, the statistics (table columns) and plots. Two
kinds:

- ``match``: each row is a colour-balanced arena match ``a`` vs ``b`` (``train.matches.arena.run_arena``);
  the columns are statistics of the match from A's side (:data:`MATCH_COLUMNS`). A row with
  ``measure = "squares"`` instead has agent ``a`` play ``games`` self-play runs of ``steps`` plies
  and reports the squares formed per ``bin_steps`` steps (``train.experiments.squares``, papers/001 Table 2 and
  Fig. 5), in a second table; runs are played in this process, one after another. An ablation is a
  set of rows whose agent specs differ only in the options swapped (e.g. ``capture_pruner=none``);
  :func:`agent_config` resolves what an agent spec builds, so a test can check exactly that.
- ``decision-time``: JFA Table 3: seconds per move of serial MCTS and of WU-UCT with ``threads``
  threads at each simulation count, and the reduction factor, measured by a *timer* the caller
  passes in (``bench.search.measure_decision_time``: the CLI owns that import, ``train`` does not
  import ``bench``).

Specs may use ``{name}`` placeholders in agent specs and ``threads``; ``[params]`` gives their
defaults and ``--param name=value`` overrides them (e.g. small simulation counts to try a spec).

Run directory (``--out``, default ``runs/experiments/<name>``), every file written atomically::

    experiment.json    the resolved spec (params applied), seed, selected rows: a resumed run must match
    rows/<id>/         one arena run directory per match row (resumable game by game)
    rows/<id>.json     one measured row of a decision-time experiment (kept on resume), or the runs
                       of a squares row (resumed run by run)
    result.json        {"format": "jiu-experiment", "version": 1, "name", "title", "kind", "seed",
                        "params", "games", "rows": [{"id", "label", "a", "b", "games", ..., "stats"}],
                        "complete"}
    table.md           the table as the paper prints it, with the command, the budget and the paper's values
    *.png              the spec's plots (``train.matches.plots``)

Errors (bad spec file, unknown agent, unknown parameter, a run directory of another experiment) raise
:class:`ExperimentError` with one line naming the field.
"""

from __future__ import annotations

import json
import os
import re
import string
from pathlib import Path
from typing import Any, Callable, Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from core.errors import JiuError
from core.rules import DEFAULT_RULESET, Ruleset

EXPERIMENTS_DIR = Path(__file__).resolve().parents[2] / "experiments"
RESULT_FORMAT = "jiu-experiment"
VERSION = 1
SPEC_FILE = "experiment.json"
RESULT_FILE = "result.json"
TABLE_FILE = "table.md"
ROWS_DIR = "rows"

MATCH_COLUMNS = {
    "games": "games",
    "wins": "Win",
    "draws": "Draw",
    "losses": "Fail",
    "win_rate": "Win rate (%)",
    "se": "Standard error",
    "ci95": "95% confidence interval",
    "wilson_ci95": "Wilson 95% CI",
    "white": "Win rate as White (%)",
    "black": "Win rate as Black (%)",
    "elo": "Elo (A - B)",
    "time_a_layout": "A s/move (layout)",
    "time_a_battle": "A s/move (battle)",
    "time_b_layout": "B s/move (layout)",
    "time_b_battle": "B s/move (battle)",
    "plies": "mean plies",
}
MatchColumn = Literal["games", "wins", "draws", "losses", "win_rate", "se", "ci95", "wilson_ci95", "white", "black",
                      "elo", "time_a_layout", "time_a_battle", "time_b_layout", "time_b_battle", "plies"]
Timer = Callable[..., dict]


class ExperimentError(JiuError):
    """Bad experiment input (spec, parameter, agent, run directory); the message names the field."""


_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class Row(BaseModel):
    """One row of a ``match`` experiment: ``a`` vs ``b`` (agent spec strings, ``{param}`` allowed),
    ``games`` (even; default: the experiment's), ``paper``: the paper's figures for this row, printed
    beside ours."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    label: str
    a: str
    b: str | None = None
    measure: Literal["match", "squares"] = "match"
    games: int | None = Field(None, ge=2)
    paper: str = ""

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not _ID.match(v):
            raise ValueError("letters, digits, '.', '_', '-' only (it names a directory)")
        return v

    @field_validator("games")
    @classmethod
    def _even(cls, v: int | None) -> int | None:
        if v is not None and v % 2:
            raise ValueError(f"must be even (colour-balanced pairs), got {v}")
        return v

    @model_validator(mode="after")
    def _opponent(self) -> "Row":
        if self.measure == "match" and not self.b:
            raise ValueError("a match row needs agent 'b'")
        if self.measure == "squares" and self.b is not None:
            raise ValueError("a squares row has one agent ('a', playing both sides); remove 'b'")
        return self


class ExperimentSpec(BaseModel):
    """A declarative experiment (module docstring). Fields: ``name``, ``title``, ``paper`` (what it
    reproduces), ``description``, ``kind``; ``params`` (placeholder defaults); ``rules`` (Ruleset
    options, e.g. ``{max_battle_plies = 400}``); for ``match``: ``games`` per row (even), ``columns``
    (:data:`MATCH_COLUMNS` keys), ``rows``, ``plots`` (``win-rates``: A's win rate as White / Black /
    overall per row, JFA Figs. 5-6; ``ablation``: win rate and ``ablation_time`` per row, JFA
    Table 5; ``squares``: the squares rows' squares per block of steps, papers/001 Fig. 5), ``steps``
    and ``bin_steps`` (squares rows); for ``decision-time``: ``simulations``, ``threads`` (int or ``"{param}"``), ``phases``,
    ``paper_values`` (``{simulations: text}``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    title: str
    paper: str = ""
    description: str = ""
    kind: Literal["match", "decision-time"] = "match"
    params: dict[str, int | float | str] = {}
    rules: dict[str, int | str] = {}
    games: int = Field(100, ge=2)
    columns: list[MatchColumn] = ["wins", "draws", "losses", "win_rate", "se", "ci95", "white", "black"]
    rows: list[Row] = []
    plots: list[Literal["win-rates", "ablation", "squares"]] = []
    steps: int = Field(200, ge=1)
    bin_steps: int = Field(20, ge=1)
    ablation_time: MatchColumn = "time_a_battle"
    simulations: list[int] = []
    threads: int | str = 16
    phases: list[Literal["layout", "battle"]] = ["layout"]
    paper_values: dict[int, str] = {}

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _ID.match(v):
            raise ValueError("letters, digits, '.', '_', '-' only")
        return v

    @field_validator("games")
    @classmethod
    def _even(cls, v: int) -> int:
        if v % 2:
            raise ValueError(f"must be even (colour-balanced pairs), got {v}")
        return v

    @field_validator("simulations")
    @classmethod
    def _sims(cls, v: list[int]) -> list[int]:
        if any(x < 1 for x in v):
            raise ValueError("simulation counts must be >= 1")
        return v

    @model_validator(mode="after")
    def _kind(self) -> "ExperimentSpec":
        if self.kind == "match":
            if not self.rows:
                raise ValueError("a match experiment needs at least one row ([[rows]])")
            ids = [r.id for r in self.rows]
            dup = sorted({i for i in ids if ids.count(i) > 1})
            if dup:
                raise ValueError(f"rows: id {dup[0]!r} is used twice")
        elif not self.simulations:
            raise ValueError("a decision-time experiment needs 'simulations'")
        return self

    def placeholders(self) -> set[str]:
        """Names of the ``{param}`` placeholders used by the rows and ``threads``."""
        texts = [t for r in self.rows for t in (r.a, r.b) if t is not None] + [str(self.threads)]
        return {f for t in texts for _, f, _, _ in string.Formatter().parse(t) if f}


# ============================================================================ loading
def builtin_specs() -> dict[str, Path]:
    """``{name: path}`` of the built-in experiments (``experiments/*.toml`` and ``*.json``)."""
    if not EXPERIMENTS_DIR.is_dir():
        return {}
    return {p.stem: p for p in sorted(EXPERIMENTS_DIR.iterdir()) if p.suffix in (".toml", ".json")}


def _field(loc) -> str:
    return ".".join(str(x) for x in loc) or "spec"


def load_spec(source: str | os.PathLike) -> ExperimentSpec:
    """The spec of a built-in experiment name or of a ``.toml``/``.json`` file; ``ExperimentError``
    naming the file and field otherwise."""
    path = Path(source)
    if not path.suffix and str(source) in builtin_specs():
        path = builtin_specs()[str(source)]
    elif not path.exists():
        names = ", ".join(builtin_specs()) or "(none)"
        raise ExperimentError(f"experiment {str(source)!r}: no such built-in experiment or file; built-ins: {names}")
    from train.learning.config import ConfigError, read_config_file

    try:
        data = read_config_file(path)
    except ConfigError as exc:
        raise ExperimentError(str(exc).replace("config file", "experiment spec", 1)) from None
    except UnicodeDecodeError as exc:
        raise ExperimentError(f"experiment spec {path}: not UTF-8 text ({exc})") from None
    try:
        return ExperimentSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ExperimentError(f"{path}: field {_field(err['loc'])!r}: {err['msg']}") from None


def parse_params(items: Sequence[str] | None) -> dict[str, Any]:
    """``["sims=8", "pruner=none"]`` -> ``{"sims": 8, "pruner": "none"}``: numbers are converted
    (``train.learning.config.parse_value``), anything else stays the string given."""
    from train.learning.config import parse_value

    out: dict[str, Any] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ExperimentError(f"--param {item!r}: expected NAME=VALUE")
        parsed = parse_value(value)
        number = isinstance(parsed, (int, float)) and not isinstance(parsed, bool)
        out[key.strip()] = parsed if number else value.strip()
    return out


def _fill(text: str, params: dict[str, Any], where: str) -> str:
    try:
        return text.format(**params)
    except KeyError as exc:
        raise ExperimentError(f"{where}: placeholder {{{exc.args[0]}}} has no value; add it to [params] or pass"
                              f" --param {exc.args[0]}=VALUE") from None
    except (ValueError, IndexError) as exc:
        raise ExperimentError(f"{where}: bad placeholder in {text!r} ({exc})") from None


def resolve(spec: ExperimentSpec, params: dict[str, Any] | None = None, games: int | None = None,
            rows: Sequence[str] | None = None) -> dict[str, Any]:
    """The experiment with placeholders filled: ``{"params", "rows": [{"id", "label", "a", "b",
    "games", "paper"}] | [{"id", "label", "phase", "simulations", "paper"}], "threads"}``. ``games``
    overrides every row's game count; ``rows`` selects rows by id (in the spec's order). Raises
    ``ExperimentError`` for an unknown parameter or row id, or a placeholder without a value."""
    given = dict(params or {})
    unknown = sorted(set(given) - set(spec.params) - spec.placeholders())
    if unknown:
        known = ", ".join(sorted(set(spec.params) | spec.placeholders())) or "(none)"
        raise ExperimentError(f"--param {unknown[0]}: experiment {spec.name!r} has no such parameter; parameters: {known}")
    values = {**spec.params, **given}
    if games is not None and (games < 2 or games % 2):
        raise ExperimentError(f"--games: must be an even number >= 2 (colour-balanced pairs), got {games}")
    out: dict[str, Any] = {"params": values}
    if spec.kind == "match":
        resolved = [{"id": r.id, "label": r.label, "a": _fill(r.a, values, f"row {r.id!r} field 'a'"),
                     "b": None if r.b is None else _fill(r.b, values, f"row {r.id!r} field 'b'"),
                     "measure": r.measure, "games": games or r.games or spec.games, "paper": r.paper}
                    for r in spec.rows]
    else:
        threads = _fill(str(spec.threads), values, "field 'threads'")
        try:
            out["threads"] = int(threads)
        except ValueError:
            raise ExperimentError(f"field 'threads': expected an integer, got {threads!r}") from None
        if out["threads"] < 1:
            raise ExperimentError(f"field 'threads': must be >= 1, got {out['threads']}")
        resolved = [{"id": f"{phase}-{s}", "label": f"{s}", "phase": phase, "simulations": s,
                     "paper": spec.paper_values.get(s, "") if phase == "layout" else ""}
                    for phase in spec.phases for s in spec.simulations]
    if rows:
        ids = [r["id"] for r in resolved]
        bad = [r for r in rows if r not in ids]
        if bad:
            raise ExperimentError(f"--rows {bad[0]!r}: no such row in {spec.name!r}; rows: {', '.join(ids)}")
        resolved = [r for r in resolved if r["id"] in rows]
    out["rows"] = resolved
    return out


def agent_problems(resolved: dict[str, Any]) -> list[str]:
    """One message per agent spec of the resolved rows that is not valid (``row 'x': agent B
    'shape+expert': unknown agent 'shape'; available: ...``; an unknown option or a value out of
    range, as ``knowledge.agents.validate_agent_spec`` says). Nothing is built."""
    import catalog  # noqa: F401 - registers the built-in agents
    from knowledge.agents import validate_agent_spec
    from knowledge.registry import SpecError

    problems = []
    for row in resolved["rows"]:
        for side in ("a", "b"):
            spec = row.get(side)
            if spec is None:
                continue
            try:
                validate_agent_spec(spec)
            except SpecError as exc:
                problems.append(f"row {row['id']!r}: agent {side.upper()} {spec!r}: {exc}")
    return problems


def agent_config(spec: str, seed: int = 0) -> dict[str, Any]:
    """What an agent spec builds, as a plain dictionary (the agent is built and closed): ``{"class",
    "name", ...}`` with ``"search"`` = the resolved ``SearchConfig`` fields of a search agent and its
    evaluator and victim scorer classes, ``"layout"``/``"battle"`` for a two-phase agent, and the
    public scalar attributes of other agents. Two specs of an ablation differ exactly where this
    dictionary differs."""
    import catalog  # noqa: F401 - registers the built-in agents
    from knowledge.agents import make_agent

    agent = make_agent(spec, seed=seed)
    try:
        return _describe(agent)
    finally:
        close = getattr(agent, "close", None)
        if callable(close):
            close()


def _describe(agent) -> dict[str, Any]:
    out: dict[str, Any] = {"class": type(agent).__name__, "name": getattr(agent, "name", None)}
    if hasattr(agent, "layout_agent") and hasattr(agent, "battle_agent"):
        out["layout"] = _describe(agent.layout_agent)
        out["battle"] = _describe(agent.battle_agent)
        return out
    search = getattr(agent, "search", None)
    if search is not None and hasattr(search, "config"):
        out["search"] = dict(search.config.model_dump())
        out["evaluator"] = type(search.evaluator).__name__
        out["victim_scorer"] = type(getattr(search, "victim_scorer", None)).__name__
        out["temperature"] = getattr(agent, "temperature", None)
        return out
    for key, value in sorted(vars(agent).items()):
        if not key.startswith("_") and isinstance(value, (int, float, str, bool, type(None))) and key != "last_think_time":
            out[key] = value
    return out


def config_diff(a: dict[str, Any], b: dict[str, Any], prefix: str = "") -> dict[str, tuple[Any, Any]]:
    """``{dotted.key: (value in a, value in b)}`` for every leaf where two :func:`agent_config`
    dictionaries differ."""
    out: dict[str, tuple[Any, Any]] = {}
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key), b.get(key)
        path = f"{prefix}{key}"
        if isinstance(va, dict) and isinstance(vb, dict):
            out.update(config_diff(va, vb, path + "."))
        elif va != vb:
            out[path] = (va, vb)
    return out


# ============================================================================ running
def _check_run_dir(out: Path, identity: dict[str, Any], resume: bool) -> None:
    path = out / SPEC_FILE
    if not path.exists():
        if out.exists() and any(out.iterdir()) and not resume:
            raise ExperimentError(f"--out {out}: exists and is not an experiment run directory; use another --out")
        return
    if not resume:
        raise ExperimentError(f"--out {out}: holds an experiment run already; pass --resume to continue it or use"
                              " another --out")
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ExperimentError(f"{path}: unreadable ({exc}); use another --out") from None
    for key in ("name", "kind", "seed", "rules", "threads"):
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
    seed of every row; ``params``: placeholder values; ``rows``: row ids to run (default all);
    ``resume``: continue the run in ``out_dir`` (without it an existing run is refused); ``timer``:
    the decision-time measurement (``bench.search.measure_decision_time``), required by
    ``decision-time`` experiments; ``command``: the command line, printed in ``table.md``.

    Raises ``ExperimentError`` (bad parameter, unknown agent, run directory of another experiment)
    or ``train.matches.arena.ArenaError`` (a failed game: finished games stay; rerun with ``--resume``)."""
    from core.atomic import atomic_write_text

    if workers < 0:
        raise ExperimentError(f"--workers: must be >= 0, got {workers}")
    if seed < 0:
        raise ExperimentError(f"--seed: must be >= 0, got {seed}")
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
                "params": resolved["params"], "rows": resolved["rows"], "spec": spec.model_dump()}
    _check_run_dir(out, identity, resume)
    out.mkdir(parents=True, exist_ok=True)
    _write_json(out / SPEC_FILE, identity)
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
              "complete": all(r.get("complete", True) for r in done), "command": command}
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


# ============================================================================ reporting
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
              " squares a step forms are the mover's squares present after it and not before (train/experiments/squares.py).",
              ""]
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


def list_experiments() -> list[dict[str, Any]]:
    """The built-in experiments: ``[{"name", "title", "kind", "rows", "params", "problems", "path"}]``
    (``problems``: unknown agents of the default rows, e.g. a baseline not written yet; a spec file
    that does not validate is listed with its error)."""
    out = []
    for name, path in builtin_specs().items():
        try:
            spec = load_spec(path)
        except ExperimentError as exc:
            out.append({"name": name, "title": "", "kind": "", "rows": [], "params": {}, "problems": [str(exc)],
                        "path": str(path)})
            continue
        resolved = resolve(spec)
        out.append({"name": spec.name, "title": spec.title, "kind": spec.kind,
                    "rows": [r["id"] for r in resolved["rows"]], "params": resolved["params"],
                    "problems": agent_problems(resolved) if spec.kind == "match" else [], "path": str(path)})
    return out
