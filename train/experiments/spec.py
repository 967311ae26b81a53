"""Experiment specs: the papers' tables as declarative specs, loaded, validated and resolved.

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
  :func:`agent_config` resolves what an agent spec builds, so a test can check exactly that. A match
  experiment may also hold a ``round_robin`` (a list of agent specs): every pair plays
  ``round_robin_games`` games (``train.matches.tournament``: win rates by colour, decision latency,
  Bradley-Terry Elo; papers/004's round-robin table), before its rows.
- ``decision-time``: JFA Table 3: seconds per move of serial MCTS and of WU-UCT with ``threads``
  threads at each simulation count, and the reduction factor, measured by a *timer* the caller
  passes in (``bench.search.measure_decision_time``: the CLI owns that import, ``train`` does not
  import ``bench``).

Specs may use ``{name}`` placeholders in agent specs and ``threads``; ``[params]`` gives their
defaults and ``--param name=value`` overrides them (e.g. small simulation counts to try a spec). A
placeholder is replaced by its value's text, nothing more: it is not a Python format string, and
``{name:spec}``, ``{0}``, a stray ``{`` or ``}`` are refused.

Every field is bounded when the spec is loaded, before any work (:data:`LIMITS`): games per row at
most ``train.matches.arena.MAX_GAMES``, simulations at most ``search.config.SIMS_MAX``, threads at most
``search.config.THREADS_MAX``, ``steps`` at most :data:`MAX_STEPS`, texts and lists of bounded length.

:func:`list_experiments` lists the built-ins (``python cli.py experiment --list``). Running a spec is
``train.experiments.run``; its table and plots are ``train.experiments.tables``. Bad input (spec file, unknown
agent, unknown parameter) raises :class:`ExperimentError` with one line naming the field.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from core.errors import JiuError
from search.config import SIMS_MAX, THREADS_MAX
from train.matches.arena import MAX_GAMES

EXPERIMENTS_DIR = Path(__file__).resolve().parents[2] / "experiments"

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


class ExperimentError(JiuError):
    """Bad experiment input (spec, parameter, agent, run directory); the message names the field."""


_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_PARAM = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_STEPS = 100_000  # plies of one squares run
MAX_ROWS = 1_000  # rows of a match experiment, simulation counts of a decision-time one
MAX_ROUND_ROBIN = 32  # agents of a round robin (pairs grow with the square)
ROUND_ROBIN_ID = "round-robin"  # the round robin's id for --rows and its directory
MAX_PARAMS = 100  # entries of [params], [rules], paper_values
MAX_ID = 64  # characters of a name, a row id or a parameter name
MAX_TEXT = 10_000  # characters of a title, a description, a paper reference, a label
MAX_SPEC = 1_000  # characters of an agent spec or a parameter's text value
MAX_NUMBER = 10**9  # magnitude of a numeric parameter or rule value
LIMITS = {"games": MAX_GAMES, "simulations": SIMS_MAX, "threads": THREADS_MAX, "steps": MAX_STEPS, "rows": MAX_ROWS,
          "params": MAX_PARAMS, "id": MAX_ID, "text": MAX_TEXT, "spec": MAX_SPEC, "number": MAX_NUMBER}
Id = Annotated[str, Field(min_length=1, max_length=MAX_ID)]
Text = Annotated[str, Field(max_length=MAX_TEXT)]
AgentText = Annotated[str, Field(min_length=1, max_length=MAX_SPEC)]
Number = Annotated[int, Field(ge=-MAX_NUMBER, le=MAX_NUMBER)]
Finite = Annotated[float, Field(ge=-MAX_NUMBER, le=MAX_NUMBER, allow_inf_nan=False)]
ParamValue = Number | Finite | Annotated[str, Field(max_length=MAX_SPEC)]
RuleValue = Number | Annotated[str, Field(max_length=MAX_SPEC)]
Sims = Annotated[int, Field(ge=1, le=SIMS_MAX)]


class Row(BaseModel):
    """One row of a ``match`` experiment: ``id`` (at most :data:`MAX_ID` characters), ``label``;
    ``a`` vs ``b`` (agent spec strings of at most :data:`MAX_SPEC` characters, ``{param}`` allowed),
    ``games`` (even, 2..``MAX_GAMES``; default: the experiment's), ``paper``: the paper's figures for
    this row, printed beside ours."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: Id
    label: Text
    a: AgentText
    b: AgentText | None = None
    measure: Literal["match", "squares"] = "match"
    games: int | None = Field(None, ge=2, le=MAX_GAMES)
    paper: Text = ""

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
    ``paper_values`` (``{simulations: text}``); a match experiment's ``round_robin`` (agent specs, at most
    :data:`MAX_ROUND_ROBIN`, distinct), ``round_robin_games`` per pair (even; default ``games``) and
    ``round_robin_anchor`` (one of them, held at Elo 0; default: the mean is 0).

    Bounds (:data:`LIMITS`): ``games`` 2..``MAX_GAMES``; ``steps`` 1..:data:`MAX_STEPS` and
    ``bin_steps`` 1..``steps``; each of ``simulations`` 1..``SIMS_MAX``, at most :data:`MAX_ROWS` of
    them, as of ``rows``; ``threads`` 1..``THREADS_MAX`` (a ``"{param}"`` is checked once filled);
    ``params``, ``rules``, ``paper_values`` at most :data:`MAX_PARAMS` entries, numbers within
    +-:data:`MAX_NUMBER`, texts within :data:`MAX_SPEC` characters."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: Id
    title: Text
    paper: Text = ""
    description: Text = ""
    kind: Literal["match", "decision-time"] = "match"
    params: dict[Id, ParamValue] = Field({}, max_length=MAX_PARAMS)
    rules: dict[Id, RuleValue] = Field({}, max_length=MAX_PARAMS)
    games: int = Field(100, ge=2, le=MAX_GAMES)
    columns: list[MatchColumn] = Field(["wins", "draws", "losses", "win_rate", "se", "ci95", "white", "black"],
                                       max_length=len(MATCH_COLUMNS))
    rows: list[Row] = Field([], max_length=MAX_ROWS)
    plots: list[Literal["win-rates", "ablation", "squares"]] = Field([], max_length=3)
    round_robin: list[AgentText] = Field([], max_length=MAX_ROUND_ROBIN)
    round_robin_games: int | None = Field(None, ge=2, le=MAX_GAMES)
    round_robin_anchor: AgentText | None = None
    steps: int = Field(200, ge=1, le=MAX_STEPS)
    bin_steps: int = Field(20, ge=1, le=MAX_STEPS)
    ablation_time: MatchColumn = "time_a_battle"
    simulations: list[Sims] = Field([], max_length=MAX_ROWS)
    threads: Annotated[int, Field(ge=1, le=THREADS_MAX)] | Annotated[str, Field(max_length=MAX_ID + 2)] = 16
    phases: list[Literal["layout", "battle"]] = Field(["layout"], max_length=2)
    paper_values: dict[Sims, Annotated[str, Field(max_length=MAX_TEXT)]] = Field({}, max_length=MAX_PARAMS)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _ID.match(v):
            raise ValueError("letters, digits, '.', '_', '-' only")
        return v

    @field_validator("games", "round_robin_games")
    @classmethod
    def _even(cls, v: int | None) -> int | None:
        if v is not None and v % 2:
            raise ValueError(f"must be even (colour-balanced pairs), got {v}")
        return v

    @field_validator("params")
    @classmethod
    def _param_names(cls, v: dict[str, Any]) -> dict[str, Any]:
        for key in v:
            if not _PARAM.match(key):
                raise ValueError(f"parameter {key!r}: letters, digits and '_' only, not starting with a digit")
        return v

    @model_validator(mode="after")
    def _kind(self) -> "ExperimentSpec":
        if self.bin_steps > self.steps:
            raise ValueError(f"bin_steps ({self.bin_steps}) must be at most steps ({self.steps})")
        for where, text in self._texts():
            try:
                placeholder_names(text, where)
            except ExperimentError as exc:
                raise ValueError(str(exc)) from None
        if self.round_robin and self.kind != "match":
            raise ValueError("round_robin: only a match experiment plays a round robin")
        if len(set(self.round_robin)) != len(self.round_robin):
            dup = next(a for a in self.round_robin if self.round_robin.count(a) > 1)
            raise ValueError(f"round_robin: {dup!r} is listed twice")
        if self.round_robin and len(self.round_robin) < 2:
            raise ValueError("round_robin: give at least 2 agents")
        if self.round_robin_anchor is not None and self.round_robin_anchor not in self.round_robin:
            raise ValueError(f"round_robin_anchor: {self.round_robin_anchor!r} is not one of the round robin's agents")
        if self.kind == "match":
            if not self.rows and not self.round_robin:
                raise ValueError("a match experiment needs at least one row ([[rows]]) or a round_robin")
            ids = [r.id for r in self.rows]
            if self.round_robin and ROUND_ROBIN_ID in ids:
                raise ValueError(f"rows: id {ROUND_ROBIN_ID!r} names the round robin; choose another")
            dup = sorted({i for i in ids if ids.count(i) > 1})
            if dup:
                raise ValueError(f"rows: id {dup[0]!r} is used twice")
        elif not self.simulations:
            raise ValueError("a decision-time experiment needs 'simulations'")
        return self

    def _texts(self) -> list[tuple[str, str]]:
        texts = [(f"row {r.id!r} field {side!r}", t) for r in self.rows for side, t in (("a", r.a), ("b", r.b))
                 if t is not None]
        texts += [(f"round_robin agent {i}", t) for i, t in enumerate(self.round_robin, 1)]
        return texts + [("field 'threads'", str(self.threads))]

    def placeholders(self) -> set[str]:
        """Names of the ``{param}`` placeholders used by the rows and ``threads``."""
        return {name for where, text in self._texts() for name in placeholder_names(text, where)}


# ============================================================================ placeholders
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def placeholder_names(text: str, where: str = "spec") -> list[str]:
    """The ``{name}`` placeholders of ``text`` in order; ``ExperimentError`` (naming ``where``, the
    offending placeholder cut to 40 characters) for anything else in braces (a format spec
    ``{x:>9}``, a conversion ``{x!r}``, ``{0}``, ``{}``) or a stray ``{`` or ``}``."""
    names = []
    for m in _PLACEHOLDER.finditer(text):
        if not _PARAM.match(m.group(1)):
            raise ExperimentError(f"{where}: bad placeholder {_short(m.group(0))!r}: a placeholder is {{name}}"
                                  " (letters, digits, '_'), replaced by the value as given; no format specs")
        names.append(m.group(1))
    rest = _PLACEHOLDER.sub("", text)
    if "{" in rest or "}" in rest:
        raise ExperimentError(f"{where}: unmatched '{{' or '}}' in {_short(text)!r}")
    return names


def substitute(text: str, params: dict[str, Any], where: str) -> str:
    """``text`` with each ``{name}`` replaced by ``str(params[name])`` (no formatting); ``ExperimentError``
    for a placeholder without a value or a malformed one (:func:`placeholder_names`)."""
    for name in placeholder_names(text, where):
        if name not in params:
            raise ExperimentError(f"{where}: placeholder {{{name}}} has no value; add it to [params] or pass"
                                  f" --param {name}=VALUE")
    return _PLACEHOLDER.sub(lambda m: str(params[m.group(1)]), text)


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
        reason = str(err["ctx"]["error"]) if err["type"] == "value_error" else err["msg"]
        where = f"field {_field(err['loc'])!r}: " if err["loc"] else ""
        raise ExperimentError(f"{path}: {where}{_short(reason, 300)}") from None


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
    filled = substitute(text, params, where)
    if len(filled) > MAX_SPEC:
        raise ExperimentError(f"{where}: {len(filled)} characters once filled; at most {MAX_SPEC}")
    return filled


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
    if games is not None and not (2 <= games <= MAX_GAMES and games % 2 == 0):
        raise ExperimentError(f"--games: must be an even number in 2..{MAX_GAMES} (colour-balanced pairs),"
                              f" got {_short(str(games), 20)}")
    out: dict[str, Any] = {"params": values}
    if spec.kind == "match":
        resolved = [{"id": r.id, "label": r.label, "a": _fill(r.a, values, f"row {r.id!r} field 'a'"),
                     "b": None if r.b is None else _fill(r.b, values, f"row {r.id!r} field 'b'"),
                     "measure": r.measure, "games": games or r.games or spec.games, "paper": r.paper}
                    for r in spec.rows]
    else:
        threads = _fill(str(spec.threads), values, "field 'threads'")
        if not re.fullmatch(r"[0-9]{1,4}", threads.strip()):
            raise ExperimentError(f"field 'threads': expected an integer in 1..{THREADS_MAX}, got {_short(threads)!r}")
        out["threads"] = int(threads)
        if not 1 <= out["threads"] <= THREADS_MAX:
            raise ExperimentError(f"field 'threads': must be in 1..{THREADS_MAX}, got {out['threads']}")
        resolved = [{"id": f"{phase}-{s}", "label": f"{s}", "phase": phase, "simulations": s,
                     "paper": spec.paper_values.get(s, "") if phase == "layout" else ""}
                    for phase in spec.phases for s in spec.simulations]
    out["round_robin"] = None
    if spec.round_robin:
        agents = [_fill(a, values, f"round_robin agent {i}") for i, a in enumerate(spec.round_robin, 1)]
        anchor = None
        if spec.round_robin_anchor is not None:
            anchor = agents[spec.round_robin.index(spec.round_robin_anchor)]
        out["round_robin"] = {"agents": agents, "games": games or spec.round_robin_games or spec.games,
                              "anchor": anchor}
    if rows:
        ids = [r["id"] for r in resolved] + ([ROUND_ROBIN_ID] if spec.round_robin else [])
        bad = [r for r in rows if r not in ids]
        if bad:
            raise ExperimentError(f"--rows {bad[0]!r}: no such row in {spec.name!r}; rows: {', '.join(ids)}")
        resolved = [r for r in resolved if r["id"] in rows]
        if ROUND_ROBIN_ID not in rows:
            out["round_robin"] = None
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
    for i, spec in enumerate((resolved.get("round_robin") or {}).get("agents", ()), 1):
        try:
            validate_agent_spec(spec)
        except SpecError as exc:
            problems.append(f"row {ROUND_ROBIN_ID!r}: agent {i} {spec!r}: {exc}")
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
                    "rows": [r["id"] for r in resolved["rows"]] + ([ROUND_ROBIN_ID] if resolved["round_robin"] else []),
                    "params": resolved["params"],
                    "problems": agent_problems(resolved) if spec.kind == "match" else [], "path": str(path)})
    return out
