"""Search agents registered by name: ``mcts``, ``jfa``, ``slm``, ``hbm`` (JFA section 3, Fig. 1) and
``shape`` (ShapeAgent, the JFA baseline of section 4.2: :func:`make_shape`): the one
stack of every search-backed agent, for play, arena matches and the training pipeline's evaluations.

- ``mcts``: WU-UCT with the knowledge evaluator (``eval.shape`` value, uniform policy), or
  ``eval=uniform``, so that search plays without nets;
- ``jfa``: SLM-guided search in the layout and HBM search (upper net; square victims by the expert's
  one-ply value, or by the lower net) in the battle;
- ``slm``: ``jfa`` with ``battle=expert`` (the paper's SLM setup: the expert plays the battle);
- ``hbm``: ``jfa`` with ``layout=expert`` (the expert places, HBM searches the battle);
- ``shape``: a layout search valued by ``eval.shape`` with the ``prior.gaussian`` policy, the expert
  in the battle (no nets).

Options are typed (:class:`MctsOptions`, :class:`NetOptions`; ``python cli.py agents`` lists them with
types, ranges and defaults). The search options are the fields of ``search.config.SearchConfig``, not
declared here: the option models subclass it (:class:`SearchOptions`) and take their defaults from a
preset (``search.config.with_defaults``): ``mcts`` and ``shape`` the ``paper`` search (``mcts`` with 200
simulations per move), ``jfa``, ``slm`` and ``hbm`` the shipped model's ``models/default/agent.toml``
(the ``shipped`` preset), so ``search_config()`` is a plain copy of those fields. Their older names stay
accepted (``sims``, ``root``, ``value_eval``, ``layout_value_eval``, ``victim_eval``, ``victims``). The net
agents also take ``slm=PATH``, ``upper=PATH``, ``lower=PATH`` (safetensors weights; default: the shipped
model in ``models/default``) and ``layout``/``battle``: ``search`` or the spec of an agent that plays that
phase instead (``NAME[:k=v]``, one option at most since ``,`` separates the net agent's own options).

Square victims. A chooser ranks the capture pruner's ``victim_candidates`` best sets (default 8; ``0``:
all of them; ``1``: the pruner's best set, nothing to choose). In the searched battle the chooser is
``victim_evaluator=EVALUATOR`` (``victim_eval``; the shipped default ``eval.expert``, the expert's one-ply
value: the set after which the plugin's value for the opponent is lowest) unless ``lower=PATH`` is given;
``victim_eval=none`` hands the choice to the lower net (JFA Eq. 6: the highest Q; the shipped one, or
``lower=PATH``), and ``victim_eval=none,lower=none`` takes the pruner's best set. Giving both
``lower=PATH`` and an evaluator is refused. With a ``battle`` agent, ``lower=PATH`` or
``victim_eval=EVALUATOR`` is used only when given in the spec, and then chooses the victims of that agent's
square-forming moves (the lower net epsilon-greedy with ``epsilon``). ``final_victim_eval=EVALUATOR``
re-chooses the victims of the capture the searched battle plays (``SearchAgent.final_victims``), for a
chooser too slow for every tree node (``eval.expert:plies=2``); ``final_victim_eval=lower`` lets the lower
net (``lower=PATH`` or the shipped one) choose them while ``victim_eval`` chooses inside the tree: one
forward pass a capture played instead of one a capture searched. The training pipeline's evaluation agents
are :class:`AgentRecipe` objects of these (``train.learning.selfplay.net_agent``): ``slm`` with ``slm=PATH`` (SLM
search, expert battle), ``hbm`` with ``upper=PATH,lower=none`` (upper-net search, expert layout) and
``hbm`` with ``battle=expert,lower=PATH,victim_candidates=0`` (the expert's moves, victims by the lower net).

The net agents' battle search uses the expert's knowledge by default (the ``shipped`` preset,
``search.config``): the expansion pruner ``prune.expert:top=4`` (the 4 paths the expert's one-ply score
with the reply check and its repetition check ranks best; the upper net's policy ranks them), the
expert's two-ply search value ``eval.expert:plies=2`` taken relative to the root's (``value_center``) and
blended half and half with the upper net's value (``value_mix=0.5``: ``(1 - w)`` net + ``w`` plugin), a
value trained to predict the drift of that two-ply value (``selfplay.value_drift``), and ``c_puct`` 0.25
in both phases. The paper's HBM search is ``c_puct=1.5,expansion_pruner=prune.expansion,value_eval=none``
(JFA Table 1 pruning, the net's value; the ``paper`` preset); docs/knowledge-and-search.md, "The shipped agent's search and why", has the
matches that chose these defaults.

The expert's one-ply victims beat the pruner's best set inside ``jfa``'s search at no measurable cost,
while no lower net has yet (the shipped one was trained by supervision on the expert's captures only;
``python cli.py selfplay --config configs/lower-eval.toml`` trains one towards the one-ply choice):
docs/knowledge-and-search.md, "The shipped agent's search and why", for the matches.
"""

from __future__ import annotations

import contextvars
import os
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from core.board import PHASE_LAYOUT
from core.notation import Move
from core.state import GameState
from knowledge.agents import (AgentOptions, PhasedAgent, make_agent,
                              validate_agent_spec)
from knowledge.plugins import REGISTRY
from knowledge.registry import AGENT_SPEC, MODELS_DIR, NAMES_FILE, SpecError, register
from nets.config import Precision
from search.config import (SIMS_MAX, AgentFileError, SearchConfig, agent_field_error, model_search_config,
                           plugin_spec_or_none, preset, read_agent_file, with_defaults)
from search.mcts import Search, SearchResult


FINAL_LOWER = "lower"  # final_victim_eval: the lower net re-chooses the played capture's victims


def _is_final_lower(value: Any) -> bool:
    """Whether a ``final_victim_eval`` value as given (any case and spacing) names the lower net."""
    return isinstance(value, str) and value.strip().lower() == FINAL_LOWER


# SLM searches (and self-play's) evaluate the first battle positions, children of the last placements,
# without an upper net: value 0 there is by design (JFA trains the nets independently), so the
# evaluator's one-time warning is noise.
warnings.filterwarnings("ignore", message="NetEvaluator has no upper net", category=RuntimeWarning)


# ============================================================================ nets (cached per process)
_NETS: dict[tuple[str, int], Any] = {}


def weights_path(path: str | os.PathLike | None, kind: str) -> str:
    """``path``, or the shipped ``models/default/<kind>.safetensors``; ``FileNotFoundError`` (naming the
    file and how to get one) if it does not exist."""
    p = Path(path) if path else MODELS_DIR / "default" / f"{kind}.safetensors"
    if not p.exists():
        raise FileNotFoundError(f"{kind} weights {p} not found (train them with `python cli.py selfplay`, or pass {kind}=PATH)")
    return str(p)


def load_net(path: str | os.PathLike, kind: str):
    """The net at ``path`` (``nets.io.load``, kind checked), cached in this process by (path,
    modification time): arena workers build agents for every game."""
    from nets.io import load

    p = Path(path)
    key = (str(p.resolve()), p.stat().st_mtime_ns)
    net = _NETS.get(key)
    if net is None:
        if len(_NETS) > 8:
            _NETS.clear()
        net = load(p, expected_kind=kind)[0]
        _NETS[key] = net
    return net


# ============================================================================ agents
class SearchAgent:
    """An agent that plays the move chosen by a WU-UCT :class:`Search` (``Agent`` protocol).

    ``last_search`` holds the latest search's root statistics for game records: ``visits`` (root
    visit count), ``value`` (root value for the mover) and ``simulations``; ``last_result`` the whole
    :class:`SearchResult` (every root move with its visits N, value Q and prior P).
    ``final_victims``: an optional ``(scorer, limit)`` that re-chooses the square victims of the move
    the search plays (:func:`choose_victims_q` among the search's capture pruner's first ``limit``
    sets; the tree keeps its own choice), so that a chooser too slow for every tree node decides the
    one capture that is played. With a layout value plugin (``SearchConfig.layout_value_evaluator``),
    layout positions before ``layout_value_from`` get one simulation: the policy's best placement, the
    search (and its plugin's cost) kept for the placements the plugin judges.
    """

    def __init__(self, name: str, search: Search, temperature: float = 0.0, seed: int = 0, owns_evaluator: bool = False,
                 layout_simulations: int | None = None, final_victims: tuple[Any, int] | None = None):
        self.name = name
        self.search = search
        self.final_victims = final_victims
        self.layout_simulations = layout_simulations  # simulations per layout move (None: the search's)
        self.owns_evaluator = owns_evaluator  # close() also stops the evaluator (its inference thread)
        self.temperature = temperature
        self.rng = np.random.default_rng(seed)
        self.last_think_time = 0.0
        self.last_search: dict | None = None
        self.last_result: SearchResult | None = None

    def select(self, state: GameState, *, simulations: int | None = None, seconds: float | None = None,
               stop: threading.Event | None = None) -> Move:
        """The move to play in ``state``; ``simulations`` (default: the agent's), ``seconds`` and ``stop``
        bound the search as in :meth:`Search.run`."""
        t0 = time.perf_counter()
        result = self.search.run(state, self._simulations(state, simulations), seconds, stop)
        return self._play(state, result, t0)

    def select_steps(self, state: GameState, simulations: int | None = None, seconds: float | None = None):
        """:meth:`select` as a job of ``search.batched`` (its search's leaves yielded to the driver,
        ``search.batched.search_steps``); returns the move. With a deterministic evaluator it plays what
        :meth:`select` plays with one search thread. ``last_think_time`` is the move's wall time, other
        jobs' work in the same driver included."""
        from search.batched import search_steps

        t0 = time.perf_counter()
        result = yield from search_steps(self.search, state, self._simulations(state, simulations), seconds)
        return self._play(state, result, t0)

    def _simulations(self, state: GameState, simulations: int | None) -> int | None:
        """The simulations of the search in ``state``: ``simulations``, else the layout's own count (one
        simulation before ``layout_value_from`` with a layout value plugin; ``layout_simulations``), else
        ``None`` (the search's)."""
        if simulations is None and state.phase == PHASE_LAYOUT:
            if self.search.layout_value_plugin is not None and state.ply < self.search.config.layout_value_from:
                return 1
            return self.layout_simulations
        return simulations

    def _play(self, state: GameState, result: SearchResult, t0: float) -> Move:
        """The move drawn from the search ``result`` (the final victims re-chosen), with the statistics."""
        move = result.sample(self.temperature, self.rng)
        if self.final_victims is not None and state.phase != PHASE_LAYOUT and move.victims:
            scorer, limit = self.final_victims
            choice, _ = choose_victims_q(state, move, self.search.capture_pruner, scorer, limit=limit)
            move = Move(move.path, move.jump, choice.victims)
        self.last_think_time = time.perf_counter() - t0
        self.last_result = result
        self.last_search = {"visits": int(result.visits.sum()), "value": round(result.value, 4),
                          "simulations": result.simulations}
        return move

    def close(self) -> None:
        self.search.close()
        if self.owns_evaluator:
            self.search.evaluator.close()


def choose_victims_q(state: GameState, move: Move, pruner, scorer, rng=None, epsilon: float = 0.0, limit: int = 0):
    """The lower net's choice of square victims for the square-forming ``move`` (its path; its
    victims give only their number): ``search.victims.choose_victims`` among the capture pruner's
    candidates (the first ``limit``; 0 = all), a uniformly random one with probability ``epsilon``
    (``rng``), else the highest Q. Returns ``(choice, upper_action)``: the
    ``search.victims.VictimChoice`` (its ``afters`` are every candidate's position after the move) and the
    path's upper action (``nets.encoding.encode_upper``)."""
    from nets.encoding import encode_upper
    from search.victims import after_path, choose_victims

    k = len(move.victims)
    choice = choose_victims(after_path(state, move.path, move.jump, k), move.path, move.jump, k, pruner, scorer,
                            limit, rng, epsilon)
    return choice, encode_upper(move.path, move.jump)


class LowerVictimsAgent:
    """A battle agent's moves with the square victims chosen by the lower net (:func:`choose_victims_q`
    among the capture pruner's first ``limit`` candidates, epsilon-greedy): HBM's lower half on its own,
    for evaluating a lower net (``hbm:battle=expert,lower=PATH``)."""

    def __init__(self, base, scorer, pruner, limit: int = 0, epsilon: float = 0.0, seed: int = 0):
        self.base, self.scorer, self.pruner = base, scorer, pruner
        self.limit, self.epsilon = int(limit), float(epsilon)
        self.name = f"{base.name}/lower"
        self.rng = np.random.default_rng(seed)
        self.last_think_time = 0.0

    def select(self, state: GameState) -> Move:
        t0 = time.perf_counter()
        move = self.base.select(state)
        if state.phase != PHASE_LAYOUT and move.victims:
            choice, _ = choose_victims_q(state, move, self.pruner, self.scorer, self.rng, self.epsilon, self.limit)
            move = Move(move.path, move.jump, choice.victims)
        self.last_think_time = time.perf_counter() - t0
        return move

    def close(self) -> None:
        close = getattr(self.base, "close", None)
        if callable(close):
            close()


# ============================================================================ options
class SearchOptions(SearchConfig, AgentOptions):
    """Options of every search agent: every ``search.config.SearchConfig`` field (the agent's spec sets
    them by name or by their old aliases, ``sims``, ``root``, ``value_eval``...), plus the agent's own
    ``temperature`` and ``prune``. Each agent's defaults are its preset's (``search.config.with_defaults``:
    ``paper`` for ``mcts`` and ``shape``, the shipped model's ``agent.toml`` for ``jfa``/``slm``/``hbm``)."""

    temperature: float = Field(0.0, ge=0, le=100, description="move sampling temperature (0: the most visited move)")
    prune: bool = Field(True, description="knowledge pruners in the search (false: neither, whatever expansion_pruner and capture_pruner say)")

    def search_config(self) -> SearchConfig:
        """The search's ``SearchConfig``: these options' fields of it (no pruners with ``prune=false``)."""
        fields = {name: getattr(self, name) for name in SearchConfig.model_fields}
        if not self.prune:
            fields.update(expansion_pruner=None, capture_pruner=None)
        return SearchConfig.model_validate(fields)


class _MctsOptions(SearchOptions):
    """Options of ``mcts``: the ``paper`` search (200 simulations per move)."""

    eval: Literal["knowledge", "uniform"] = Field("knowledge", description="evaluator: eval.shape value or uniform (value 0)")


MctsOptions = with_defaults(_MctsOptions, preset("paper").model_copy(update={"simulations": 200}), "MctsOptions")


def _path_option(value: str | None, kind: str, none_ok: bool = False) -> str | None:
    if value is None:
        return None
    if value.lower() == "none":
        if none_ok:
            return "none"
        raise ValueError("must be a weights file (.safetensors)")
    if not value:
        raise ValueError("must be a weights file (.safetensors)" + (" or none" if none_ok else ""))
    return value


class _NetOptions(SearchOptions):
    """Options of the net agents ``jfa``, ``slm`` and ``hbm`` (module docstring): the search's defaults
    are the shipped model's (``models/default/agent.toml``)."""

    layout_sims: int | None = Field(None, ge=1, le=SIMS_MAX, description="simulations per layout move (default: simulations; 1 plays the SLM policy's best placement)")
    batch: int = Field(8, ge=1, le=4096, description="evaluator batch size (positions per forward pass)")
    inference_threads: int = Field(2, ge=1, le=64, description="threads running the nets (nets.evaluator)")
    torch_threads: int | None = Field(None, ge=1, le=256, description="torch intra-op threads (default: nets.evaluator.default_num_threads)")
    precision: Precision = Field("float32", description="net arithmetic: float32, bfloat16 (faster on a CPU with native bfloat16) or auto (bfloat16 where native; nets.inference)")
    slm: str | None = Field(None, json_schema_extra=NAMES_FILE, description="SLM weights file (default: models/default/slm.safetensors)")
    upper: str | None = Field(None, json_schema_extra=NAMES_FILE, description="HBM upper weights file (default: models/default/upper.safetensors)")
    lower: str | None = Field(None, json_schema_extra=NAMES_FILE, description="HBM lower weights file, or none (default: the shipped one for the searched battle when victim_evaluator is none, none for a battle agent); giving it makes the lower net choose the searched battle's victims (victim_evaluator none)")
    layout: str = Field("search", json_schema_extra=AGENT_SPEC, description="'search' (SLM search) or the spec of an agent playing the layout")
    battle: str = Field("search", json_schema_extra=AGENT_SPEC, description="'search' (HBM search) or the spec of an agent playing the battle")
    epsilon: float = Field(0.0, ge=0, le=1, description="battle agent with lower=PATH: chance of a random victim candidate")
    final_victim_eval: str | None = Field(None, description="an evaluator plugin that re-chooses the square victims of the move the battle search plays (not those inside the tree), among the pruner's best victim_candidates sets: for a chooser too slow for every tree node (e.g. eval.expert:plies=2); lower: the lower net (lower=PATH or the shipped one), the tree's victims staying victim_eval's; or none")

    @model_validator(mode="before")
    @classmethod
    def _lower_chooses(cls, data: Any) -> Any:
        """``lower=PATH`` without a victim evaluator given: the lower net chooses the searched battle's victims."""
        if isinstance(data, dict):
            lower = data.get("lower")
            given = {"victim_evaluator", "victim_eval"} & set(data)
            final_lower = _is_final_lower(data.get("final_victim_eval"))
            if isinstance(lower, str) and lower.strip().lower() != "none" and not given and not final_lower:
                data = {**data, "victim_evaluator": None}
            if isinstance(lower, str) and lower.strip().lower() == "none" and "final_victim_eval" not in data:
                data = {**data, "final_victim_eval": "none"}  # no lower net: no default final chooser of it
        return data

    @field_validator("slm", "upper")
    @classmethod
    def _weights(cls, value: str | None) -> str | None:
        return _path_option(value, "weights")

    @field_validator("lower")
    @classmethod
    def _lower(cls, value: str | None) -> str | None:
        return _path_option(value, "lower", none_ok=True)

    @field_validator("final_victim_eval")
    @classmethod
    def _final_victim_eval(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if _is_final_lower(value):
            return FINAL_LOWER
        value = plugin_spec_or_none(value, "evaluator")
        return None if value == "none" else value

    @model_validator(mode="after")
    def _one_victim_chooser(self):
        if self.final_victim_eval == FINAL_LOWER and self.lower == "none":
            raise ValueError("final_victim_eval=lower needs the lower net: give lower=PATH or leave lower unset")
        lower_given = self.lower not in (None, "none")
        if self.victim_evaluator is not None and lower_given and self.final_victim_eval != FINAL_LOWER:
            raise ValueError("give lower=PATH or victim_eval, not both: one of them chooses the square victims")
        return self

    def agent_victim_eval(self) -> str | None:
        """The evaluator spec choosing a ``battle=AGENT``'s square victims: only a ``victim_eval`` given in
        the spec (the default chooses the searched battle's only)."""
        return self.victim_evaluator if "victim_evaluator" in self.model_fields_set else None

    @field_validator("layout", "battle")
    @classmethod
    def _phase_agent(cls, value: str) -> str:
        if value == "search":
            return value
        try:
            validate_agent_spec(value)
        except SpecError as exc:
            raise ValueError(f"'search' or an agent spec: {exc}") from None
        return value


MODEL_AGENT_FIELDS = ("final_victim_eval", "layout_sims", "precision")
"""The net agents' own options a model directory's ``agent.toml`` may set in its ``[agent]`` table
(``search.config``): how its nets are played beyond the search."""


def model_agent_options(model_dir: str | os.PathLike) -> dict[str, Any]:
    """The ``[agent]`` table of ``MODEL_DIR/agent.toml``, validated as :class:`_NetOptions` fields
    (:data:`MODEL_AGENT_FIELDS`); ``{}`` without one. Raises ``search.config.AgentFileError`` naming the file
    and the field."""
    from pydantic import ValidationError

    path, data = read_agent_file(model_dir)
    table = data.get("agent", {})
    for key in table:
        if key not in MODEL_AGENT_FIELDS:
            raise AgentFileError(f"{path}: unknown field 'agent.{key}' (fields: {', '.join(MODEL_AGENT_FIELDS)})")
    try:
        options = _NetOptions.model_validate(table)
    except ValidationError as exc:
        raise agent_field_error(path, "agent", exc, fallback=next(iter(table), "")) from None
    return {key: getattr(options, key) for key in table}


NetOptions = with_defaults(_NetOptions, model_search_config(MODELS_DIR / "default"), "NetOptions",
                           extra=model_agent_options(MODELS_DIR / "default"))


class SlmOptions(NetOptions):
    battle: str = Field("expert", json_schema_extra=AGENT_SPEC, description="'search' (HBM search) or the spec of an agent playing the battle")


class HbmOptions(NetOptions):
    layout: str = Field("expert", json_schema_extra=AGENT_SPEC, description="'search' (SLM search) or the spec of an agent playing the layout")


# ============================================================================ factories
@register("mcts", "agent", "WU-UCT search with the knowledge (eval.shape) or uniform evaluator, no nets", options=MctsOptions)
def make_mcts(o: MctsOptions) -> SearchAgent:
    from nets.evaluator import KnowledgeEvaluator, UniformEvaluator

    evaluator = KnowledgeEvaluator() if o.eval == "knowledge" else UniformEvaluator()
    search = Search(evaluator, o.search_config(), victim_scorer=_victim_eval_scorer(o.victim_evaluator))
    return SearchAgent(f"mcts:sims={o.simulations}", search, o.temperature, o.seed)


class _ShapeOptions(SearchOptions):
    """Options of ``shape`` (ShapeAgent, JFA section 4.2): the ``paper`` search (400 simulations per
    layout move, JFA Fig. 5)."""

    prior: str = Field("prior.gaussian", description="layout prior plugin (papers/001 Eq. 10) as the search's policy, or none (uniform)")
    battle: str = Field("expert", json_schema_extra=AGENT_SPEC, description="the spec of the agent playing the battle")
    net: str | None = Field(None, json_schema_extra=NAMES_FILE, description="SLM-kind weights trained with reward.shape (selfplay --model slm --reward reward.shape); default: no net")

    @field_validator("net")
    @classmethod
    def _net(cls, value: str | None) -> str | None:
        return _path_option(value, "weights")

    @field_validator("prior")
    @classmethod
    def _prior(cls, value: str) -> str:
        if value.strip().lower() == "none":
            return "none"
        try:
            REGISTRY.entry(value, "layout_prior")
        except SpecError as exc:
            raise ValueError(f"a layout_prior plugin name or none: {exc}") from None
        return value

    @field_validator("battle")
    @classmethod
    def _battle(cls, value: str) -> str:
        try:
            validate_agent_spec(value)
        except SpecError as exc:
            raise ValueError(f"an agent spec: {exc}") from None
        return value


ShapeOptions = with_defaults(_ShapeOptions, preset("paper"), "ShapeOptions")


@register("shape", "agent", "ShapeAgent: layout search valued by the shape evaluation (Eq. 9), Gaussian prior (Eq. 10); expert battle",
          options=ShapeOptions)
def make_shape(o: ShapeOptions) -> PhasedAgent:
    """ShapeAgent (JFA section 4.2, after papers/001 and 003): an AlphaZero-style search of the layout
    whose leaves, in particular the positions at the end of the layout, are valued by the formation
    evaluation ``eval.shape`` (Eq. 9: Dalians, gates, squares) and whose policy is the layout prior
    ``prior`` (Eq. 10), so it plays without a trained net; the ``battle`` agent (default the expert)
    plays the battle (``PhasedAgent``). With ``net=PATH`` (an SLM-kind net trained by self-play with
    ``reward.shape``, the formation evaluation at the end of the layout, as JFA's ShapeAgent) the net
    gives the policy and the value instead."""
    from nets.evaluator import KnowledgeEvaluator, NetEvaluator

    if o.net is None:
        evaluator = KnowledgeEvaluator("eval.shape", None if o.prior == "none" else o.prior)
    else:
        evaluator = NetEvaluator(load_net(weights_path(o.net, "slm"), "slm"), None, clients=o.threads)
    search = Search(evaluator, o.search_config(), victim_scorer=_victim_eval_scorer(o.victim_evaluator))
    layout = SearchAgent(f"shape:sims={o.simulations}", search, o.temperature, o.seed,
                         owns_evaluator=o.net is not None)
    return PhasedAgent(layout, make_agent(o.battle, seed=o.seed))


def _victim_eval_scorer(spec: str | None):
    """The evaluator plugin ``spec`` as a victim scorer (``knowledge.evaluation.EvaluatorVictimScorer``), or
    ``None`` for ``None``."""
    if spec is None:
        return None
    from knowledge.evaluation import EvaluatorVictimScorer

    return EvaluatorVictimScorer.from_spec(spec)


def _battle_agent(o: NetOptions, agent=None):
    """The ``battle=AGENT`` agent (or ``agent``), its victims chosen by the lower net when ``lower=PATH``
    is given, or by a given ``victim_eval`` plugin (``NetOptions.agent_victim_eval``)."""
    agent = agent if agent is not None else make_agent(o.battle, seed=o.seed)
    scorer = _victim_eval_scorer(o.agent_victim_eval())
    if scorer is None:
        if o.lower is None or o.lower == "none":
            return agent
        from nets.evaluator import NetVictimScorer

        scorer = NetVictimScorer(load_net(weights_path(o.lower, "lower"), "lower"), precision=o.precision)
    return LowerVictimsAgent(agent, scorer, REGISTRY.create("prune.capture", "capture_pruner"), o.victim_candidates,
                             o.epsilon, o.seed)


class SharedEvaluators:
    """The net evaluators of the agents built while it is active (``with SharedEvaluators():``, in this
    thread's context): the net agents built then with the same nets, ``batch`` and ``precision`` share one
    ``nets.evaluator.NetEvaluator`` that runs its nets in the thread that calls it (``inference_threads=0``),
    so that the searches of many games in one ``search.batched.drive`` send their leaves in one batch
    per agent (the arena's games in flight). The agents do not close it; leaving the block does."""

    def __init__(self) -> None:
        self._evaluators: dict[tuple, Any] = {}
        self._token = None

    def evaluator(self, slm, upper, batch: int, precision: str):
        """The shared evaluator of these nets (modules, as ``load_net`` caches them) and settings."""
        from nets.evaluator import NetEvaluator

        key = (id(slm), id(upper), int(batch), str(precision))
        if key not in self._evaluators:
            self._evaluators[key] = NetEvaluator(slm, upper, max_batch=batch, num_threads=1, inference_threads=0,
                                                 precision=precision)
        return self._evaluators[key]

    def __len__(self) -> int:
        return len(self._evaluators)

    def __enter__(self) -> "SharedEvaluators":
        self._token = _SHARED.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _SHARED.reset(self._token)
        for evaluator in self._evaluators.values():
            evaluator.close()
        self._evaluators.clear()


_SHARED: contextvars.ContextVar[SharedEvaluators | None] = contextvars.ContextVar("shared_evaluators", default=None)


def make_net_agent(name: str, o: NetOptions):
    """The net agent ``name`` from its options: one WU-UCT search over the searched phases (an
    evaluator holding the SLM and/or upper net, the lower net scoring victims on its inference
    threads; inside ``with SharedEvaluators():`` that block's evaluator of these nets), combined by
    ``PhasedAgent`` with the agent of a phase that is not searched."""
    from nets.evaluator import NetEvaluator, NetVictimScorer

    layout_search, battle_search = o.layout == "search", o.battle == "search"
    victim_eval = o.victim_evaluator
    searcher = None
    if layout_search or battle_search:
        slm = load_net(weights_path(o.slm, "slm"), "slm") if layout_search else None
        upper = load_net(weights_path(o.upper, "upper"), "upper") if battle_search else None
        final_lower = o.final_victim_eval == FINAL_LOWER
        lower = (load_net(weights_path(o.lower, "lower"), "lower")
                 if battle_search and o.lower != "none" and (victim_eval is None or final_lower) else None)
        shared = _SHARED.get()
        if shared is not None:
            evaluator = shared.evaluator(slm, upper, o.batch, o.precision)
        else:
            evaluator = NetEvaluator(slm, upper, max_batch=o.batch, num_threads=o.torch_threads, clients=o.threads,
                                     inference_threads=o.inference_threads, precision=o.precision)
        # The lower net runs on the evaluator's inference threads, not in the search threads.
        lower_scorer = NetVictimScorer(lower, evaluator=evaluator) if lower is not None else None
        scorer = lower_scorer if victim_eval is None else _victim_eval_scorer(victim_eval)
        search = Search(evaluator, o.search_config(), victim_scorer=scorer)
        final = None
        if battle_search:
            final = lower_scorer if final_lower else _victim_eval_scorer(o.final_victim_eval)
        searcher = SearchAgent(f"{name}:sims={o.simulations}", search, o.temperature, o.seed,
                               owns_evaluator=shared is None,
                               layout_simulations=o.layout_sims,
                               final_victims=None if final is None else (final, o.victim_candidates))
    if layout_search and battle_search:
        return searcher
    if not layout_search and o.layout == o.battle:  # one agent plays both phases (one generator)
        return _battle_agent(o, make_agent(o.layout, seed=o.seed))
    layout = searcher if layout_search else make_agent(o.layout, seed=o.seed)
    battle = searcher if battle_search else _battle_agent(o)
    return PhasedAgent(layout, battle)


@register("jfa", "agent", "SLM search in the layout, HBM search in the battle (upper net; square victims by the expert's one-ply value, or the lower net)", options=NetOptions)
def make_jfa(o: NetOptions):
    return make_net_agent("jfa", o)


@register("slm", "agent", "SLM search in the layout, the expert (battle=AGENT) in the battle", options=SlmOptions)
def make_slm(o: SlmOptions):
    return make_net_agent("slm", o)


@register("hbm", "agent", "the expert (layout=AGENT) in the layout, HBM search in the battle", options=HbmOptions)
def make_hbm(o: HbmOptions):
    return make_net_agent("hbm", o)


# ============================================================================ recipes
@dataclass(frozen=True)
class AgentRecipe:
    """A registered agent and its validated options, built in any process (picklable): what the training
    pipeline's gate and learning curve hand to the arena instead of a spec string. ``str(recipe)`` is a
    spec-like text of the options given that differ from the agent's defaults (for records and progress
    lines only; never parsed back: files keep :meth:`to_dict`)."""

    name: str
    options: AgentOptions

    @classmethod
    def of(cls, name: str, **options: Any) -> "AgentRecipe":
        """The recipe of agent ``name`` with ``options`` (field names or aliases, typed values), validated
        now: ``SpecError`` naming the agent and the option."""
        from pydantic import ValidationError

        from knowledge.registry import option_error

        entry = REGISTRY.entry(name, "agent")
        try:
            return cls(name, entry.options.model_validate(options))
        except ValidationError as exc:
            raise SpecError(option_error(entry.what, entry.options, exc)) from None

    def to_dict(self) -> dict[str, Any]:
        """``{"agent": name, "options": the options given}`` (JSON types) for files: :meth:`from_dict`."""
        return {"agent": self.name, "options": self.options.model_dump(mode="json", exclude_unset=True,
                                                                       exclude={"seed"})}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "AgentRecipe":
        """The recipe :meth:`to_dict` wrote (validated again)."""
        return cls.of(data["agent"], **data["options"])

    def build(self, seed: int = 0):
        """The agent, seeded with ``seed``."""
        return REGISTRY.entry(self.name, "agent").build(self.options.model_copy(update={"seed": int(seed)}))

    def __str__(self) -> str:
        fields = type(self.options).model_fields
        given = [k for k in fields if k in self.options.model_fields_set and k != "seed"
                 and getattr(self.options, k) != fields[k].default]  # the options that differ from the agent's defaults
        return f"{self.name}:" + ",".join(f"{k}={option_text(getattr(self.options, k))}" for k in given)


def model_agent(model_dir: str | os.PathLike, name: str = "jfa", **options: Any) -> AgentRecipe:
    """Agent ``name`` (``jfa``, ``slm`` or ``hbm``) playing the model directory ``model_dir`` as it plays
    ``models/default`` by default: its nets (``MODEL_DIR/<kind>.safetensors``; the lower net only where it
    chooses victims), the search of its ``agent.toml`` and its ``[agent]`` options, with ``options`` on top.
    Raises ``search.config.AgentFileError``, ``FileNotFoundError`` (a missing net) or ``SpecError``."""
    d = Path(model_dir).resolve()
    given: dict[str, Any] = {**model_search_config(d).model_dump(exclude={"seed"}), **model_agent_options(d)}
    given.update(slm=weights_path(d / "slm.safetensors", "slm"), upper=weights_path(d / "upper.safetensors", "upper"))
    if given["victim_evaluator"] is None or given.get("final_victim_eval") == FINAL_LOWER:
        given["lower"] = weights_path(d / "lower.safetensors", "lower")
    return AgentRecipe.of(name, **{**given, **options})


def option_text(value: Any) -> str:
    """An option value as a spec writes it: ``none`` for ``None``, ``true``/``false`` for a bool, else
    ``str(value)``."""
    return "none" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def searching_agent(agent, state: GameState) -> SearchAgent | None:
    """The :class:`SearchAgent` that would choose ``agent``'s move in ``state`` (``agent`` itself, or the
    phase's part of a ``LAYOUT+BATTLE`` agent), or ``None`` when that agent does not search."""
    if isinstance(agent, PhasedAgent):
        agent = agent.layout_agent if state.phase == PHASE_LAYOUT else agent.battle_agent
    return agent if isinstance(agent, SearchAgent) else None


def move_steps(agent, state: GameState):
    """``agent``'s move in the non-terminal ``state`` as a job of ``search.batched`` (a generator returning
    the move): the searching agent's :meth:`SearchAgent.select_steps` (a ``LAYOUT+BATTLE`` agent's
    searching part, its ``last_agent`` and ``last_think_time`` updated as its ``select`` does), else one
    ``search.batched.Offload`` of ``agent.select(state)``."""
    from search.batched import Offload

    searcher = searching_agent(agent, state)
    if searcher is None:
        return (yield Offload(lambda: agent.select(state)))
    move = yield from searcher.select_steps(state)
    if isinstance(agent, PhasedAgent):
        agent.last_agent, agent.last_think_time = searcher, searcher.last_think_time
    return move


def think(agent, state: GameState, simulations: int | None = None, seconds: float | None = None,
          stop: threading.Event | None = None) -> tuple[Move, SearchResult | None]:
    """``agent``'s move in the non-terminal ``state`` and, when a search chose it, that search's root
    statistics. ``simulations``, ``seconds`` and ``stop`` bound a search (see :meth:`Search.run`);
    agents that do not search ignore them and answer from ``select(state)``."""
    searcher = searching_agent(agent, state)
    if searcher is None:
        return agent.select(state), None
    move = searcher.select(state, simulations=simulations, seconds=seconds, stop=stop)
    return move, searcher.last_result
