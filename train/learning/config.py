"""The one configuration of the training pipeline: ``TrainConfig`` (frozen, validated, no unknown keys).

A configuration comes from a file (TOML or JSON, e.g. ``configs/default.toml``) or the defaults below,
plus overrides ``section.key=value`` (the CLI's ``--set``; values are parsed as JSON when they parse, else
kept as strings: ``--set selfplay.games=8 --set model=upper --set replay.symmetries=[0,1]``). The resolved
configuration is written to ``RUN/config.json``; ``--resume`` reads it back.

Every validation error becomes a :class:`ConfigError` whose message names the field with its dotted path
(``config field 'selfplay.games': Input should be greater than or equal to 1``).

Fields, defaults and meanings: ``docs/training.md``, "Configuration fields" (the defaults make
``python cli.py selfplay`` one short, useful iteration on two CPU cores with the tiny nets;
``configs/default.toml`` lists the same values).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from core.board import STONES_PER_SIDE
from core.errors import JiuError
from core.rules import Ruleset
from nets.config import Precision
from search.batched import GAMES_IN_FLIGHT_MAX
from search.config import SearchConfig, merged_table, preset
from train.learning.drift import DriftEnds, DriftMode, DriftTarget

KINDS: tuple[str, ...] = ("slm", "upper", "lower")
DqnLoss = Literal["huber", "mse", "group", "choice"]
# The lower net's losses over whole captures (every candidate victim set a sample, grouped by capture).
GROUP_DQN_LOSSES: tuple[str, ...] = ("group", "choice")
MODELS: tuple[str, ...] = (*KINDS, "cycle")
# Fields a resumed run may change (they do not change what the run computes, only how far/fast).
RESUMABLE_FIELDS: tuple[str, ...] = ("iterations", "minutes", "workers", "backend", "device", "ray_address",
                                     "curve", "export_dir", "gate.export_games", "gate.export_opening_plies",
                                     "selfplay.games_in_flight", "selfplay.max_batch")

TRAIN_RULESET = Ruleset(max_battle_plies=300, adjudicate="stones")


class ConfigError(JiuError):
    """A bad training configuration; the message names the field (dotted path) and the reason."""


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _spec(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise ValueError("must be a non-empty spec string")
    return value


def _agent_spec(value: str) -> str:
    """An agent spec resolved now (names, option types and ranges), not when the first game starts."""
    import catalog  # noqa: F401 - registers every built-in agent
    from knowledge.agents import validate_agent_spec

    _spec(value)
    validate_agent_spec(value)  # SpecError is a ValueError: pydantic reports it for this field
    return value


class NetsConfig(_Section):
    preset: Literal["tiny", "paper"] = "tiny"
    blocks: int | None = Field(None, ge=1)
    channels: int | None = Field(None, ge=1)
    value_hidden: int | None = Field(None, ge=1)
    tactics: bool = False

    def net_config(self, kind: str):
        """The ``nets.config.NetConfig`` of ``kind``: the preset with the overrides applied."""
        from nets.config import preset

        base = preset(kind, self.preset)
        updates = {k: v for k, v in (("blocks", self.blocks), ("channels", self.channels),
                                     ("value_hidden", self.value_hidden)) if v is not None}
        if self.tactics:
            updates["tactics"] = True
        return base.model_copy(update=updates) if updates else base


# The self-play search: the shipped model's (search.config preset ``shipped``) with self-play's own
# budget and exploration: 32 simulations on 4 threads, root Dirichlet noise 0.25 (PUCT root) or Gumbel
# noise of scale 1 (Gumbel root), as before the search was nested (issue 61).
SELFPLAY_SEARCH = preset("shipped").model_copy(update={"simulations": 32, "threads": 4, "dirichlet_epsilon": 0.25,
                                                       "gumbel_scale": 1.0})
MAX_BATCH = 4096  # selfplay.max_batch: positions of one forward pass at most
# Keys of SelfPlayConfig that moved into its ``search`` table (old flat key -> SearchConfig field).
MOVED_TO_SEARCH = {"simulations": "simulations", "search_threads": "threads", "c_puct": "c_puct",
                   "dirichlet_alpha": "dirichlet_alpha", "dirichlet_epsilon": "dirichlet_epsilon",
                   "capture_pruner": "capture_pruner", "victim_eval": "victim_evaluator",
                   "expansion_pruner": "expansion_pruner", "value_eval": "value_evaluator", "value_mix": "value_mix",
                   "value_center": "value_center", "root_selection": "root_selection", "gumbel_m": "gumbel_m"}


class SelfPlayConfig(_Section):
    """Self-play: ``search`` (a ``search.config.SearchConfig``, the ``[selfplay.search]`` table; a table
    given is applied over :data:`SELFPLAY_SEARCH`, or over ``preset = "NAME"``'s fields) and the settings
    of self-play alone (module docstring)."""

    games: int = Field(4, ge=1)
    search: SearchConfig = SELFPLAY_SEARCH
    full_simulations: int | None = Field(None, ge=1)
    full_fraction: float = Field(0.25, gt=0, le=1)
    max_batch: int = Field(256, ge=1, le=MAX_BATCH)
    games_in_flight: int | None = Field(None, ge=1, le=GAMES_IN_FLIGHT_MAX)
    precision: Precision = "auto"
    temperature: float = Field(1.0, ge=0)
    temperature_plies: int = Field(30, ge=0)
    aux_agent: str = "expert"
    reward: str = "reward.first_square"
    lower_epsilon: float = Field(0.1, ge=0, le=1)
    lower_eval: str | None = None
    lower_eval_scale: float = Field(0.1, gt=0, le=10)
    value_drift: int = Field(8, ge=0, le=1000)
    value_drift_ends: DriftEnds = "result"
    value_drift_mode: DriftMode = "drift"
    value_drift_evaluator: str | None = None
    value_result_mix: float = Field(0.0, ge=0, le=1)
    value_result_stones: int = Field(0, ge=0, le=STONES_PER_SIDE)
    value_result_from: int = Field(0, ge=0, le=STONES_PER_SIDE)
    teacher: str | None = None
    teacher_mix: float = Field(0.5, ge=0, le=1)
    opponents: Literal["self", "population"] = "self"

    _specs = field_validator("reward", "teacher", "lower_eval", "value_drift_evaluator")(_spec)
    _agents = field_validator("aux_agent")(_agent_spec)

    @model_validator(mode="before")
    @classmethod
    def _search_table(cls, data: Any) -> Any:
        """A moved flat key is an error naming its new place; a ``search`` table is merged over the
        self-play search (:data:`SELFPLAY_SEARCH`) or its ``preset``."""
        if not isinstance(data, dict):
            return data
        for key in data:
            moved = MOVED_TO_SEARCH.get(str(key).replace("-", "_"))
            if moved is not None:
                raise ValueError(f"selfplay.{key} is now selfplay.search.{moved} (the [selfplay.search] table)")
        table = data.get("search")
        if isinstance(table, dict):
            try:
                data = {**data, "search": merged_table(table, SELFPLAY_SEARCH)}
            except ValueError as exc:
                raise ValueError(f"search.preset: {exc}") from None
        return data

    def value_target(self) -> DriftTarget | None:
        """The ``upper`` value target as a ``train.learning.drift.DriftTarget`` (``value_drift`` plies of
        the margin of ``value_drift_evaluator``, by default ``search.value_evaluator``; its change or, with
        ``value_drift_mode = "value"``, its value; ``value_drift_ends`` near a game's end;
        ``value_result_mix`` of the result blended in; the result alone where the side with fewer stones
        has from ``value_result_from`` to ``value_result_stones``) when ``value_drift`` > 0 or the mode
        is ``"value"``, else ``None`` (the game's result alone)."""
        if not self.value_drift and self.value_drift_mode != "value":
            return None
        evaluator = self.value_drift_evaluator if self.value_drift_evaluator is not None else self.search.value_evaluator
        return DriftTarget(self.value_drift, evaluator, self.value_drift_ends, self.value_drift_mode,
                           self.value_result_mix, self.value_result_stones, self.value_result_from)

    @model_validator(mode="after")
    def _drift(self) -> "SelfPlayConfig":
        """The value target: ``value_drift`` even (0 allowed with ``value_drift_mode = "value"``), with an
        evaluator (``value_drift_evaluator`` or ``search.value_evaluator``; its margin is checked by
        :func:`resolve_names`), and ``value_result_mix`` only beside such a target."""
        if self.value_result_from > self.value_result_stones:
            raise ValueError(f"value_result_from = {self.value_result_from} is above value_result_stones = "
                             f"{self.value_result_stones}: the result replaces the target from the one to the other")
        target = self.value_target()
        if target is None:
            if self.value_result_mix:
                raise ValueError(f"value_result_mix = {self.value_result_mix:g} blends the result into an evaluator's "
                                 "target: set value_drift > 0 or value_drift_mode = 'value' (or value_result_mix = 0)")
            if self.value_result_stones:
                raise ValueError(f"value_result_stones = {self.value_result_stones} puts the result in place of an "
                                 "evaluator's target: set value_drift > 0 or value_drift_mode = 'value' "
                                 "(or value_result_stones = 0)")
            return self
        if target.evaluator is None:
            raise ValueError(f"value_drift = {self.value_drift} (mode {self.value_drift_mode}) follows an evaluator's "
                             "margin: give selfplay.value_drift_evaluator or selfplay.search.value_evaluator, or "
                             "value_drift = 0 with value_drift_mode = 'drift' (the result)")
        try:
            target.check_plies()
        except ValueError as exc:
            raise ValueError(f"value_drift: {exc}") from None
        return self

    @model_validator(mode="after")
    def _full_search(self) -> "SelfPlayConfig":
        if self.full_simulations is not None and self.full_simulations < self.search.simulations:
            raise ValueError(f"full_simulations ({self.full_simulations}) is below search.simulations "
                             f"({self.search.simulations}): a full search is the longer one")
        return self

    @field_validator("teacher", "lower_eval", mode="before")
    @classmethod
    def _none_word(cls, value):
        """``"none"`` (a TOML file has no null) means no plugin."""
        return None if isinstance(value, str) and value.strip().lower() == "none" else value


class ReplayConfig(_Section):
    window: int = Field(20_000, ge=1)
    symmetries: tuple[int, ...] = (0, 1, 2, 3)

    @field_validator("symmetries")
    @classmethod
    def _syms(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if not v:
            raise ValueError("give at least one symmetry ([0] = no augmentation)")
        bad = [s for s in v if not 0 <= s <= 3]
        if bad:
            raise ValueError(f"symmetries are 0..3 (identity, rotate180, diagonal, antidiagonal), got {bad}")
        return tuple(sorted(set(v)))


def check_trainable(kind: str, trainable: str) -> None:
    """Raise ``ValueError`` unless a ``kind`` net can train ``trainable`` (``learner.trainable``): the lower
    net (a Q-net) has no value or policy head to train alone."""
    if trainable in ("value", "policy") and kind == "lower":
        raise ValueError(f"learner.trainable = '{trainable}' trains one head of a policy/value net; the lower net has none")


class LearnerConfig(_Section):
    optimizer: Literal["adam", "sgd"] = "adam"
    lr: float = Field(1e-3, gt=0)
    lr_min: float = Field(1e-5, ge=0)
    schedule: Literal["constant", "cosine", "step"] = "cosine"
    horizon_steps: int | None = Field(None, ge=1)
    step_size: int = Field(1000, ge=1)
    gamma: float = Field(0.5, gt=0, le=1)
    momentum: float = Field(0.9, ge=0, lt=1)
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    l2_penalty: float = Field(1e-4, ge=0, validation_alias=AliasChoices("l2_penalty", "l2"))
    batch_size: int = Field(64, ge=1)
    steps: int = Field(40, ge=1)
    grad_clip: float | None = Field(5.0, gt=0)
    dqn_loss: DqnLoss = "huber"
    group_unit: float = Field(0.0, ge=0, le=10)
    choice_temperature: float = Field(0.1, gt=0, le=10)
    precision: Precision = "float32"
    trainable: Literal["all", "value", "policy"] = "all"
    mode: Literal["alternate", "concurrent"] = "alternate"
    publish_every_samples: int = Field(2000, ge=1, le=10_000_000)


def _even_or_zero(v: int) -> int:
    if v % 2:
        raise ValueError(f"must be even (colour-balanced pairs) or 0, got {v}")
    return v


class GateConfig(_Section):
    max_games: int = Field(4, ge=0, le=100_000)
    batch: int = Field(4, ge=2, le=10_000)
    elo0: float = Field(0.0, ge=-1000, le=1000)
    elo1: float = Field(50.0, ge=-1000, le=1000)
    alpha: float = Field(0.05, gt=0, lt=0.5)
    beta: float = Field(0.05, gt=0, lt=0.5)
    threshold: float = Field(0.5, ge=0, le=1)
    expert_games: int = Field(0, ge=0, le=100_000)
    export_games: int = Field(200, ge=0, le=100_000)
    export_at_cap: Literal["fail", "threshold"] = "fail"
    export_opening_plies: int = Field(8, ge=0, le=64)
    simulations: int | None = Field(None, ge=1, le=1_000_000)
    search_threads: int | None = Field(None, ge=1, le=64)
    expert: str = "expert"

    _agents = field_validator("expert")(_agent_spec)
    _even = field_validator("max_games", "batch", "expert_games", "export_games")(_even_or_zero)

    @model_validator(mode="after")
    def _bounds(self) -> "GateConfig":
        if not self.elo1 > self.elo0:
            raise ValueError(f"elo1 ({self.elo1:g}) must be greater than elo0 ({self.elo0:g})")
        return self


DEFAULT_ANCHORS: tuple[str, ...] = ("random", "greedy", "expert", "minimax:time=0.05")


class CurveConfig(_Section):
    every: int = Field(1, ge=0, le=1_000_000)
    games: int = Field(2, ge=2, le=100_000)
    anchors: tuple[str, ...] = DEFAULT_ANCHORS
    checkpoints: int = Field(2, ge=0, le=100)
    anchor: str = "expert"
    baseline: bool = True

    _even = field_validator("games")(_even_or_zero)

    @field_validator("anchors")
    @classmethod
    def _anchors(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for a in v:
            _agent_spec(a)
        return v

    @model_validator(mode="after")
    def _anchor(self) -> "CurveConfig":
        if self.every and not self.anchors:
            raise ValueError("anchors: give at least one anchor agent (or set curve.every = 0)")
        if len(set(self.anchors)) != len(self.anchors):
            raise ValueError("anchors: an agent is listed twice")
        if self.anchors and self.anchor not in self.anchors:
            raise ValueError(f"anchor: {self.anchor!r} is not one of the anchors {list(self.anchors)}")
        return self


POPULATION_MAX = 64  # population.size: members kept at most (each a net file, loaded by every self-play batch)


class PopulationConfig(_Section):
    """JiangJun's Populationer (papers/002 Alg. 2; ``train.learning.population``): used with
    ``selfplay.opponents = "population"``. ``size`` members kept, ``buffer`` game results kept per pair
    of members (the payoff matrix's), opponents sampled among the ``top_n`` members by Nash weight;
    ``fixed``: a net file that is the whole population, admitting no member (the approximate best
    response's training, ``python cli.py exploitability``)."""

    size: int = Field(8, ge=2, le=POPULATION_MAX)
    buffer: int = Field(64, ge=1, le=100_000)
    top_n: int = Field(4, ge=1, le=POPULATION_MAX)
    fixed: str | None = None

    _fixed = field_validator("fixed")(_spec)

    @field_validator("top_n")
    @classmethod
    def _top(cls, value: int, info: ValidationInfo) -> int:
        size = info.data.get("size")
        if size is not None and value > size:
            raise ValueError(f"{value} is above population.size ({size}): opponents come from the members")
        return value


class PretrainConfig(_Section):
    enabled: bool = True
    games: int = Field(8, ge=0)
    agent: str = "expert"
    records: tuple[str, ...] = ()
    steps: int = Field(150, ge=0)
    batch_size: int = Field(64, ge=1)
    lr: float = Field(1e-3, gt=0)

    _agents = field_validator("agent")(_agent_spec)


class TrainConfig(BaseModel):
    """The training pipeline's configuration (module docstring lists every field)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: Literal["slm", "upper", "lower", "cycle"] = "slm"
    seed: int = Field(0, ge=0)
    iterations: int | None = Field(2, ge=1)
    minutes: float | None = Field(None, gt=0)
    workers: int = Field(2, ge=0, le=256)
    backend: Literal["process", "ray"] = "process"
    device: str = "auto"
    ray_address: str | None = None
    ruleset: Ruleset = TRAIN_RULESET
    nets: NetsConfig = NetsConfig()
    selfplay: SelfPlayConfig = SelfPlayConfig()
    replay: ReplayConfig = ReplayConfig()
    learner: LearnerConfig = LearnerConfig()
    gate: GateConfig = GateConfig()
    curve: CurveConfig = CurveConfig()
    pretrain: PretrainConfig = PretrainConfig()
    population: PopulationConfig = PopulationConfig()
    export_dir: str | None = None
    init_dir: str | None = None

    @field_validator("device")
    @classmethod
    def _device(cls, value: str) -> str:
        from nets.inference import check_device  # torch only when a config is validated, not on import

        return check_device(value)

    @field_validator("ray_address")
    @classmethod
    def _ray_address(cls, value: str | None, info: ValidationInfo) -> str | None:
        """``HOST:PORT`` (``train.jobs.workers.parse_ray_address``), and only with ``backend = "ray"``."""
        if value is not None:
            from train.jobs.workers import parse_ray_address

            parse_ray_address(value)
            backend = info.data.get("backend")
            if backend is not None and backend != "ray":
                raise ValueError(f"joins a Ray cluster: it needs backend = 'ray' (--backend ray), not {backend!r}")
        return value

    @model_validator(mode="after")
    def _budget(self) -> "TrainConfig":
        if self.iterations is None and self.minutes is None:
            raise ValueError("fields 'iterations' and 'minutes' are both null; give a budget (one or both)")
        lower = self.model in ("lower", "cycle")
        if lower and self.selfplay.search.capture_pruner is None:
            raise ValueError("model = 'lower' chooses among the capture pruner's victim sets: give "
                             "selfplay.search.capture_pruner (e.g. prune.capture)")
        if self.learner.dqn_loss in GROUP_DQN_LOSSES and lower and not self.selfplay.lower_eval:
            raise ValueError(f"learner.dqn_loss = {self.learner.dqn_loss!r} compares a capture's victim sets: it needs "
                             "selfplay.lower_eval (every candidate set a sample)")
        for kind in KINDS if self.model == "cycle" else (self.model,):
            check_trainable(kind, self.learner.trainable)
        if self.selfplay.opponents == "population" and self.model not in ("slm", "upper"):
            raise ValueError(f"field 'selfplay.opponents' = 'population' plays searched games of one net against "
                             f"another: model must be slm or upper, not {self.model!r}")
        if self.population.fixed is not None and self.selfplay.opponents != "population":
            raise ValueError("field 'population.fixed' is the opponent of population self-play: it needs "
                             "selfplay.opponents = 'population'")
        if self.selfplay.opponents == "population" and self.learner.mode == "concurrent":
            raise ValueError("field 'selfplay.opponents' = 'population' admits each best net to the population: "
                             "it needs learner.mode = 'alternate'")
        if self.learner.mode == "concurrent" and self.gate.max_games > 0:
            raise ValueError("field 'learner.mode' = 'concurrent' plays every net the learner publishes, ungated: "
                             "set gate.max_games = 0 (or learner.mode = 'alternate')")
        return self

    def drift_target(self, kind: str):
        """The value target of a ``kind`` net's samples, self-play's and the pretrain phase's:
        ``selfplay.value_target()`` (a ``train.learning.drift.DriftTarget``) for ``upper``, else ``None``
        (the result)."""
        return self.selfplay.value_target() if kind == "upper" else None

    def kind_for(self, iteration: int) -> str:
        """The net trained in ``iteration`` (1-based)."""
        if self.model == "cycle":
            return KINDS[(iteration - 1) % len(KINDS)]
        return self.model

    def horizon(self) -> int:
        """Steps of the cosine schedule (``learner.horizon_steps`` or its default)."""
        if self.learner.horizon_steps is not None:
            return self.learner.horizon_steps
        if self.iterations is not None:
            return max(1, self.iterations * self.learner.steps)
        return 10_000


# ============================================================================ loading and overrides
def _field_path(loc) -> str:
    return ".".join(str(x) for x in loc) or "config"


def _origin(field: str, origins: dict[str, str]) -> str | None:
    """Where the value of ``field`` (dotted) came from: the origin of the field or of a section holding it."""
    parts = field.split(".")
    for n in range(len(parts), 0, -1):
        key = ".".join(parts[:n])
        if key in origins:
            return origins[key]
    return None


def _where(field: str, origins: dict[str, str] | None) -> str:
    """``config field 'a.b'``, or the origin of its value (:func:`_origin`)."""
    return _origin(field, origins or {}) or f"config field {field!r}"


def override_origins(sets: list[str] | None, options: dict[str, str] | None = None) -> dict[str, str]:
    """``{dotted field: origin}`` for :func:`validate_config`: each ``--set KEY=VALUE`` item names
    ``--set KEY``; ``options`` maps fields set by a command's own options to the option's name
    (``{"selfplay.reward": "--reward"}``), and win over ``--set``, as they are applied after it."""
    out = {}
    for item in sets or []:
        key = item.partition("=")[0].strip()
        if key:
            out[".".join(p.strip().replace("-", "_") for p in key.split("."))] = f"--set {key}"
    return {**out, **(options or {})}


def validate_config(data: Any, source: str = "config", origins: dict[str, str] | None = None) -> TrainConfig:
    """A ``TrainConfig`` from a mapping; raises :class:`ConfigError` naming the first bad field.
    ``source`` names where the mapping came from (a file); ``origins`` maps a dotted field to where its
    value came from instead (``{"gate.expert": "--set gate.expert"}``): an error in such a field (or
    inside it) names that origin, not ``source``."""
    if isinstance(data, TrainConfig):
        return data
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of fields, got {type(data).__name__}")
    try:
        return TrainConfig.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        prefix = f"{source}: " if source != "config" else ""
        where = f"config field {_field_path(first['loc'])!r}" if first["loc"] else "config"
        origin = _origin(_field_path(first["loc"]), origins or {}) if first["loc"] else None
        if origin is not None:
            prefix, where = "", origin
        reason = str(first["ctx"]["error"]) if first["type"] == "value_error" else first["msg"]
        raise ConfigError(f"{prefix}{where}: {reason}{more}") from None


def parse_value(text: str) -> Any:
    """An override value: JSON when it parses (numbers, ``true``, ``null``, lists), else the string."""
    low = text.strip()
    if low.lower() in ("none", "null"):
        return None
    if low.lower() in ("true", "false"):
        return low.lower() == "true"
    try:
        return json.loads(low)
    except json.JSONDecodeError:
        return low


def apply_overrides(data: dict[str, Any], overrides: list[str] | dict[str, Any] | None) -> dict[str, Any]:
    """A copy of ``data`` with dotted overrides applied (``["selfplay.games=8"]`` or ``{"selfplay.games": 8}``).
    Raises :class:`ConfigError` for a malformed item or a ``data`` that is not a mapping."""
    if not isinstance(data, dict):
        raise ConfigError(f"config: expected a mapping of config sections, got {type(data).__name__}")
    out = json.loads(json.dumps(data))
    items: list[tuple[str, Any]] = []
    if isinstance(overrides, dict):
        items = list(overrides.items())
    else:
        for item in overrides or []:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise ConfigError(f"--set {item!r}: expected KEY=VALUE, e.g. selfplay.games=8")
            items.append((key.strip(), parse_value(value)))
    for key, value in items:
        parts = [p.strip().replace("-", "_") for p in key.split(".")]
        if not all(parts):
            raise ConfigError(f"--set {key!r}: empty field name")
        node = out
        for p in parts[:-1]:
            nxt = node.get(p)
            if nxt is None:
                nxt = node[p] = {}
            if not isinstance(nxt, dict):
                raise ConfigError(f"config field {'.'.join(parts[:-1])!r} is not a section")
            node = nxt
        node[parts[-1]] = value
    return out


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The mapping in a TOML (``.toml``) or JSON file (at most ``core.inputs.MAX_CONFIG_BYTES``);
    :class:`ConfigError` naming the file if it is unreadable, too large, not UTF-8 text or not valid."""
    from core.inputs import MAX_CONFIG_BYTES, read_text

    path = Path(path)
    try:
        text = read_text(path, MAX_CONFIG_BYTES, "file")
    except OSError as exc:
        raise ConfigError(f"config file {path}: {exc.strerror or exc}") from None
    except JiuError as exc:  # too large, or not UTF-8 text (a binary file)
        raise ConfigError(f"config file {exc}") from None
    try:
        data = tomllib.loads(text) if path.suffix.lower() == ".toml" else json.loads(text)
    except RecursionError:
        raise ConfigError(f"config file {path}: nested too deeply") from None
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"config file {path}: not valid {'TOML' if path.suffix.lower() == '.toml' else 'JSON'} ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path}: expected an object of config sections, got {type(data).__name__}")
    return data


def load_config(path: str | Path | None = None, overrides: list[str] | dict[str, Any] | None = None) -> TrainConfig:
    """The defaults, or the file at ``path``, with ``overrides`` applied, validated."""
    data = read_config_file(path) if path is not None else {}
    data = apply_overrides(data, overrides)
    return validate_config(data, str(path) if path is not None else "config")


def config_to_dict(config: TrainConfig) -> dict[str, Any]:
    return json.loads(config.model_dump_json())


def dump_config(config: TrainConfig) -> str:
    """The resolved configuration as indented JSON (what ``RUN/config.json`` holds)."""
    return json.dumps(config_to_dict(config), indent=1) + "\n"


def changed_fields(old: TrainConfig, new: TrainConfig) -> list[str]:
    """Dotted names of the fields that differ between two configurations."""
    out: list[str] = []

    def walk(a, b, prefix):
        if isinstance(a, dict) and isinstance(b, dict):
            for k in sorted(set(a) | set(b)):
                walk(a.get(k), b.get(k), f"{prefix}{k}.")
        elif a != b:
            out.append(prefix[:-1])

    walk(config_to_dict(old), config_to_dict(new), "")
    return out


def resolve_names(config: TrainConfig, origins: dict[str, str] | None = None) -> None:
    """Build every plugin of ``config`` once before any work starts (``selfplay.reward``, the pruners), so
    that a bad name or option fails at once; the agent specs (``selfplay.aux_agent``, ``gate.expert``,
    ``pretrain.agent``, ``curve.anchors``) are resolved when the configuration is validated. With
    ``pretrain.enabled``, every path of ``pretrain.records`` must exist (it is read only after the
    pretraining games are played). With ``backend = "ray"`` and a ``ray_address``, the address must
    accept a TCP connection within ``train.jobs.workers.RAY_CONNECT_TIMEOUT`` seconds
    (``check_ray_address``), so that a dead address fails before the run directory is made. Raises
    :class:`ConfigError` naming the field, the spec and the reason (e.g. the available names); ``origins``
    as :func:`validate_config`'s."""
    import catalog  # noqa: F401 - registers every built-in agent and plugin
    from knowledge.plugins import REGISTRY

    search = config.selfplay.search
    plugins = [("selfplay.reward", config.selfplay.reward, "reward"),
               ("selfplay.search.capture_pruner", search.capture_pruner, "capture_pruner"),
               ("selfplay.search.expansion_pruner", search.expansion_pruner, "expansion_pruner"),
               ("selfplay.search.value_evaluator", search.value_evaluator, "evaluator"),
               ("selfplay.search.victim_evaluator", search.victim_evaluator, "evaluator"),
               ("selfplay.teacher", config.selfplay.teacher, "battle_prior"),
               ("selfplay.lower_eval", config.selfplay.lower_eval, "evaluator"),
               ("selfplay.value_drift_evaluator", config.selfplay.value_drift_evaluator, "evaluator")]
    for field, spec, kind in plugins:
        if spec is None:
            continue
        try:
            REGISTRY.create(spec, kind)
        except KeyError as exc:
            raise ConfigError(f"{_where(field, origins)}: {exc.args[0] if exc.args else exc}") from None
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"{_where(field, origins)}: {spec!r}: {exc}") from None
    if config.pretrain.enabled:
        for i, path in enumerate(config.pretrain.records):
            if not Path(path).exists():
                raise ConfigError(f"{_where(f'pretrain.records.{i}', origins)}: {path}: no such file or directory")
    if config.ray_address is not None and config.backend == "ray" and config.workers > 0:
        from train.jobs.workers import check_ray_address

        try:
            check_ray_address(config.ray_address)
        except JiuError as exc:  # "ray_address: HOST:PORT does not answer (...)"
            raise ConfigError(str(exc)) from None
    target = config.drift_target("upper")
    if target is not None:
        try:
            target.check()
        except ValueError as exc:
            own = config.selfplay.value_drift_evaluator is not None
            field = "selfplay.value_drift_evaluator" if own else "selfplay.value_drift"
            raise ConfigError(f"{_where(field, origins)}: {exc}") from None
