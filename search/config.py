"""The one search configuration: :class:`SearchConfig`, its named presets and the model directory's
``agent.toml`` (lc0's SearchParams, KataGo's one ``.cfg`` for play and self-play).

Every search setting is declared once, here, with its type, bounds, default and description:

- ``search.mcts.Search`` runs with a :class:`SearchConfig`;
- the search agents' options (``search.agents``: ``mcts``, ``shape``, ``jfa``, ``slm``, ``hbm``) are these
  fields (the option models subclass :class:`SearchConfig`, :func:`with_defaults` gives each agent its
  defaults), so an agent spec's ``key=value`` are :class:`SearchConfig` fields and ``search_config()`` a
  plain copy;
- self-play nests one (``train.learning.config.SelfPlayConfig.search``, the ``[selfplay.search]`` table of a config
  file), and the gate and learning-curve agents search with it.

Field names are :class:`SearchConfig`'s; the agent options' older names stay accepted as input aliases
(``sims`` for ``simulations``, ``root`` for ``root_selection``, ``value_eval`` for ``value_evaluator``,
``layout_value_eval`` for ``layout_value_evaluator``, ``victim_eval`` for ``victim_evaluator``, ``victims``
for ``victim_candidates``), and a plugin field that may be empty takes ``"none"`` (any case) for ``None``
(a TOML file and a spec string have no null).

Presets (:data:`PRESETS`, :func:`preset`):

- ``paper``: JFA's own search, :class:`SearchConfig`'s defaults: ``prune.expansion`` (JFA Table 1), the
  evaluator's value alone, ``c_puct`` 1.5, PUCT root selection, 400 simulations, one thread;
- ``shipped``: how the shipped nets are played (docs/knowledge-and-search.md, "The shipped agent's search and why", for the matches that chose
  it): the expert's 4 best paths per battle node (``prune.expert:top=4``), every battle leaf's value half
  the upper net's and half the expert's two-ply search value (``eval.expert:plies=2``, ``value_mix`` 0.5)
  taken relative to the root's (``value_center``), ``c_puct`` 0.25 (so that at 16 simulations those
  values, not the priors, decide the visits), the Gumbel root search (which visits every kept path at the
  root), 16 simulations on 2 threads, and square victims chosen by the expert's one-ply value
  (``eval.expert``) among the capture pruner's 8 best sets. ``models/default/agent.toml`` adds the fields its
  export gates shipped beside it (``python cli.py agents jfa`` lists the resulting defaults).

``agent.toml`` (:func:`model_search_config`): a model directory says how its nets are played with a
``[search]`` table, ``preset = "NAME"`` (default ``paper``) plus any :class:`SearchConfig` field::

    [search]
    preset = "shipped"
    simulations = 32        # an explicit value wins over the preset's

    [agent]                 # optional: the net agents' own options (search.agents.MODEL_AGENT_FIELDS)
    final_victim_eval = "lower"

``models/default/agent.toml`` gives the defaults of ``jfa``, ``slm`` and ``hbm``; ``search.agents.model_agent``
plays any model directory as ``jfa`` plays that one.
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator

from core.board import NUM_POINTS, STONES_PER_SIDE
from core.errors import JiuError
from knowledge.registry import SEED_MAX, SpecError

SIMS_MAX = 1_000_000  # simulations per move a configuration accepts (a search keeps at most max_nodes nodes)
SECONDS_MAX = 3600.0  # seconds (wall time) per move a search accepts: the time budget's bound, as SIMS_MAX is the simulations'
THREADS_MAX = 256  # WU-UCT search threads a configuration accepts
MAX_NODES = 50_000_000  # tree capacity a configuration accepts (search.tree allocates it up front)
TD_LAYOUT_PRIOR = "prior.gaussian"  # the Eq. 10 feedback of TD backups when layout_prior is None (papers/001)
AGENT_FILE = "agent.toml"  # a model directory's play settings (model_search_config)

# Fields naming a plugin, and the plugin kind each names (checked by the registry when validated).
PLUGIN_KINDS = {"expansion_pruner": "expansion_pruner", "capture_pruner": "capture_pruner",
                "feedback_evaluator": "evaluator", "layout_prior": "layout_prior",
                "value_evaluator": "evaluator", "layout_value_evaluator": "evaluator",
                "victim_evaluator": "evaluator", "battle_prior": "battle_prior"}


class AgentFileError(JiuError):
    """A bad ``agent.toml`` (:func:`model_search_config`); the message names the file and the field."""


class BudgetError(JiuError):
    """A search budget out of its bounds (:func:`check_budget`); the message names the budget and the bound."""


def check_budget(simulations: int | None = None, seconds: float | None = None,
                 what: tuple[str, str] = ("simulations", "seconds")) -> tuple[int | None, float | None]:
    """``(simulations, seconds)`` unchanged when each is ``None`` or within its bound: simulations per
    move an integer in ``[1, SIMS_MAX]``, seconds per move (wall time) a finite number in
    ``(0, SECONDS_MAX]``. Every search budget that comes from outside (the engine protocol's
    ``genmove``/``analyze``/``go``, the ``analyze`` command's options) is checked here, where it enters;
    ``what`` names the two budgets in the message (e.g. ``("nodes", "movetime")``). Raises
    :class:`BudgetError` (one line naming the budget, the value and the bound) otherwise."""
    if simulations is not None and (isinstance(simulations, bool) or not isinstance(simulations, int)
                                    or not 1 <= simulations <= SIMS_MAX):
        raise BudgetError(f"{what[0]} {_short(simulations)}: expected an integer at least 1 and at most {SIMS_MAX}")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))
                                or not 0 < seconds <= SECONDS_MAX):
        raise BudgetError(f"{what[1]} {_short(seconds)}: expected a number of seconds greater than 0 and at most "
                          f"{SECONDS_MAX:g}")
    return simulations, seconds


def _short(value: Any, limit: int = 24) -> str:
    """``value`` as text of at most ``limit`` characters (and ``...``): an error never echoes a long input."""
    if isinstance(value, int) and value.bit_length() > 10_000:  # str() refuses more than 4300 digits
        return f"(a {value.bit_length()}-bit integer)"
    text = str(value) if isinstance(value, int) else repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _alias(name: str, *old: str) -> AliasChoices:
    return AliasChoices(name, *old)


def plugin_spec_or_none(value: str, kind: str) -> str:
    """A spec naming a plugin of ``kind``: ``"none"`` (any case), or the spec unchanged if the registry
    accepts it (a name, or ``NAME:k=v`` with the plugin's own options). Raises ``ValueError`` (pydantic
    reports it as the field's error) naming the kind and the registry's reason."""
    from knowledge.plugins import REGISTRY

    if value.strip().lower() == "none":
        return "none"
    try:
        REGISTRY.check(value, kind)
    except SpecError as exc:
        raise ValueError(f"a plugin spec ({kind.replace('_', ' ')}) or none: {exc}") from None
    return value


class SearchConfig(BaseModel):
    """Search settings (validated, frozen).

    ``simulations`` per move; ``threads`` workers; ``c_puct`` exploration constant; ``formula``
    ``"puct"`` (default, standard PUCT with unobserved counts) or ``"printed"`` (JFA Eq. 1 as printed);
    ``fpu_reduction`` (an unvisited child's Q is the parent's mean value minus this; ``None`` means 0.2
    for ``puct`` and 0 for ``printed``: the printed form multiplies Q by the decaying exploration factor,
    so an unvisited child with a negative Q would score below every visited one and never be tried);
    root Dirichlet noise ``dirichlet_alpha``/``dirichlet_epsilon`` (0 = off; self-play
    uses 0.25); ``expansion_pruner``/``capture_pruner`` plugin names or ``None``; ``victim_candidates``: the
    lower net scores at most this many of the capture pruner's victim sets, best first by the pruner's
    JFA Eq. 9 score (0: all of them; each set is one position of a lower-net forward pass, and resolving
    victims dominated battle search time with all of a capture's sets); ``max_nodes`` tree
    capacity; ``reuse_tree`` between moves; ``seed`` for noise and move sampling.

    ``backup`` (papers/001 and 003, Eq. 2-8): ``"mean"`` (default: ``W += v``, Q = W / N, JFA Eq. 3-5),
    ``"sarsa"`` (SARSA(lambda) with the knowledge feedback of Eq. 9-10 as reward), ``"q"`` (Q-learning:
    each node's Q moves towards the best child's Q) or ``"hybrid"`` (SARSA(lambda), then Q-learning in
    the same backup). ``sarsa_rate`` c1 and ``q_rate`` c2 are the papers' Table 1 learning rates
    (0.372, 0.628); the papers leave undefined the trace decay ``trace_decay`` (lambda, 0.9), the
    discount ``discount`` (gamma of Eq. 2, 1.0) and the reward scale ``reward_scale`` (0.1: the
    feedback is in [0, 1] in the layout and [-1, 1] in the battle before scaling, so that it shapes but
    does not swamp game values in [-1, 1]); ``feedback_evaluator`` and ``layout_prior`` name the
    plugins giving the feedback (Eq. 9 and Eq. 10). Details: :meth:`Search._backup_td`.

    ``value_evaluator`` (an ``evaluator`` plugin name such as ``eval.expert``, or ``None``) and
    ``value_mix`` (``lambda`` in ``[0, 1]``) blend a static evaluation into the value of every expanded
    battle leaf: ``v = (1 - lambda) v_evaluator + lambda v_plugin`` (AlphaGo's mix of value net and
    rollout, here with human knowledge; layout leaves keep the evaluator's value). Off by default.
    ``endgame_value_mix`` (``None``: ``value_mix``) is ``lambda`` instead at the battle leaves where a
    side has ``endgame_stones`` (default 9) or fewer stones, where the expert's value predicts the result
    better than a net's (docs/results.md, "Where the searches lose to `expert`"); a leaf whose
    ``lambda`` is 0 does not call the plugin.
    ``layout_value_evaluator`` and ``layout_value_mix`` do the same for the leaves of a layout search
    (a search whose root is a layout position: its layout leaves and the first battle positions) whose
    ply is at least ``layout_value_from``; with ``eval.rollout`` (expert rollouts into the battle,
    ``knowledge.agents.RolloutEvaluator``) this is AlphaGo's mix of value net and rollouts, with the
    expert as the rollout policy (``SearchAgent`` plays earlier placements with one simulation). Off by
    default.
    ``battle_prior`` (a ``battle_prior`` plugin name such as ``prior.expert``, or ``None``) and
    ``prior_mix`` (``beta``) blend a knowledge prior into the priors of a battle node's kept children:
    ``P = (1 - beta) P_evaluator + beta P_plugin``, each renormalised over the kept paths first (before
    root noise). Off by default. ``layout_prior_mix`` does the same for a layout node's children with
    the ``layout_prior`` plugin (``prior.gaussian``, papers/001 Eq. 10, or the expert's
    ``prior.expert_layout``): ``P = (1 - beta) P_evaluator + beta P_plugin`` over the legal
    placements (0, the default: the evaluator's priors alone). ``policy_temperature`` (``tau``)
    sharpens (``< 1``) or flattens (``> 1``) the evaluator's priors over a node's children:
    ``P_i ∝ P_i ** (1 / tau)``, the same as ``softmax(logits / tau)`` restricted to the children
    (Leela's policy softmax temperature); 1 leaves them as they are.

    ``value_center`` takes the value plugin's evaluation relative to the root's: a battle leaf's plugin
    value is ``tanh((margin(leaf) - margin(root)) / scale)`` for the leaf's side to move (``margin`` and
    ``scale`` of the plugin, ``knowledge.evaluation``; the root's margin negated for the other side),
    and a drawn battle leaf is worth ``tanh((0 - margin(root)) / scale)`` (the plugin's even position
    against the root's); wins and losses stay +1 and -1. Without it a search far ahead or behind sees
    every leaf near +1 or -1 (``tanh`` saturates: a lead of 12 stones is 0.995 with ``eval.expert``), so
    it cannot tell moves apart nor see a draw by repetition as the loss of a won game (KataGo's score
    utility is centred on the root's expected score for the same reason). Values stored in a tree kept
    for the next move keep the old root's centre. Off by default; needs a plugin with ``margin``.

    ``terminal_bound`` (on by default): an expanded battle leaf's value is at least the best result its
    side to move reaches with one move among its kept children that ends the game (a win on stones or by
    adjudication: +1; a draw by repetition or at the ply cap: 0, or the centred draw value above), found
    with the rule book's terminal test on the children (``search.tree.children_status``), and those
    children are marked terminal with their result, which selection uses as an unvisited child's Q in
    place of first-play urgency. A static or net value cannot see that the side behind may repeat the
    position at once, and at a few simulations the search rarely visits that reply when its prior is
    low, so the move allowing it looked as good as any (docs/knowledge-and-search.md, "The shipped agent's search and why").

    ``twofold_draw`` (off by default; acts through ``terminal_bound``): the search's terminal test scores
    a battle position's *second* occurrence (in the game's history and along the tree's path) as a draw,
    where the rule book waits for its ``repetition_draw``-th (chess engines score any repetition inside
    the search as a draw for the same reason). A side far ahead whose values are all near +1 cannot
    tell a move that makes progress from one that shuffles a stone back and forth, and a side behind
    then completes the repetition; scoring the first return as a draw makes every shuffle worth 0 to it.
    An expansion pruner keeps these returning moves too (``search.tree.returning_paths``): JFA Table 1
    keeps only the best level of paths, and a flying side's quiet move back is rarely in it, so the
    draw the side behind can force would stay out of the tree.

    ``root_selection`` ``"gumbel"``: Gumbel root search (Danihelka et al. 2022, "Policy improvement by
    planning with Gumbel", sections 3-4; mctx's ``gumbel_muzero_policy``). The root's ``gumbel_m`` best
    children by ``g + logits`` (``logits = log P``; ``g`` Gumbel(0, 1) noise times ``gumbel_scale``, drawn
    once per search: 0 for play, 1 for self-play exploration) share the simulations by sequential
    halving: ``ceil(log2 m)`` phases, each giving every remaining child ``max(1, n / (phases * remaining))``
    more visits of this search's ``n``, then keeping the better half by ``g + logits + sigma(q)``; the
    move played is the survivor (when the search stops early: the best of the most visited remaining ones).
    ``sigma(q) = (gumbel_c_visit + max_b N(b)) * gumbel_c_scale * q`` (50 and 0.1, mctx's defaults), ``q``
    the *completed* Q (a visited
    child's mean value, an unvisited one's the root's mean value: the paper's ``v_mix`` with the root's
    mean in place of the net's value) rescaled to [0, 1] over the root's children. Below the root,
    selection stays Eq. 1. The result also carries the improved policy
    ``softmax(logits + sigma(completed q))`` over every root child, the paper's policy-training target
    (``SearchResult.target``). Root Dirichlet noise is not used with it (the Gumbel noise explores).

    Fields not read by ``Search`` itself but part of the searched play: ``victim_evaluator`` (an
    ``evaluator`` plugin that chooses a square-forming path's victims inside the tree, among the capture
    pruner's best ``victim_candidates`` sets: the set after which its value for the opponent is lowest,
    ``knowledge.evaluation.EvaluatorVictimScorer``; the agents and self-play build that scorer and give it
    to the search; ``None``: a lower net, or the pruner's best set). ``layout_prior`` ``None``: no layout
    prior blend (the TD backups' Eq. 10 feedback then uses ``prior.gaussian``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    simulations: int = Field(400, ge=1, le=SIMS_MAX, validation_alias=_alias("simulations", "sims"),
                             description="simulations per move (old name: sims)")
    threads: int = Field(1, ge=1, le=THREADS_MAX, description="WU-UCT search threads")
    c_puct: float = Field(1.5, gt=0, le=1000, description="exploration constant of Eq. 1")
    formula: Literal["puct", "printed"] = Field("puct", description="Eq. 1: standard PUCT or as printed in JFA")
    fpu_reduction: float | None = Field(None, ge=-2, le=2, description="an unvisited child's Q is the parent's mean value minus this (none: 0.2 for puct, 0 for printed)")
    dirichlet_alpha: float = Field(0.3, gt=0, le=100, description="root Dirichlet noise concentration (AlphaZero)")
    dirichlet_epsilon: float = Field(0.0, ge=0, le=1, description="weight of the root Dirichlet noise (0: off; not with root_selection=gumbel)")
    expansion_pruner: str | None = Field("prune.expansion", description="expansion pruner plugin of the battle search (prune.expansion: JFA Table 1; prune.expert:top=N: the expert's N best paths), or none")
    capture_pruner: str | None = Field("prune.capture", description="capture pruner plugin giving the candidate victim sets (JFA Eq. 7-9), or none")
    victim_candidates: int = Field(8, ge=0, le=100_000, validation_alias=_alias("victim_candidates", "victims"),
                                   description="the victim chooser (victim_evaluator or the lower net) ranks the capture pruner's best N victim sets (0: all; 1: the pruner's best set; old name: victims)")
    victim_evaluator: str | None = Field(None, validation_alias=_alias("victim_evaluator", "victim_eval"),
                                         description="evaluator plugin choosing the searched battle's square victims: among the pruner's best victim_candidates sets, the one after which its value for the opponent is lowest (e.g. eval.expert); none: the lower net, or the pruner's best set (old name: victim_eval)")
    max_nodes: int = Field(300_000, ge=16, le=MAX_NODES, description="tree capacity (nodes)")
    reuse_tree: bool = Field(True, description="keep the subtree of the move played for the next search")
    seed: int = Field(0, ge=0, le=SEED_MAX, description="seed of the search's noise and move sampling (same seed and positions, same moves)")
    backup: Literal["mean", "sarsa", "q", "hybrid"] = Field("mean", description="value backup: mean (JFA Eq. 3-5), sarsa, q or hybrid (papers/001 Eq. 2-5)")
    sarsa_rate: float = Field(0.372, gt=0, le=1, description="SARSA(lambda) learning rate c1 (papers/001 Table 1)")
    q_rate: float = Field(0.628, gt=0, le=1, description="Q-learning learning rate c2 (papers/001 Table 1)")
    trace_decay: float = Field(0.9, ge=0, le=1, description="SARSA(lambda) trace decay lambda (not given by the paper)")
    discount: float = Field(1.0, ge=0, le=1, description="discount gamma of papers/001 Eq. 2 (not given by the paper)")
    reward_scale: float = Field(0.1, ge=0, le=10, description="weight of the Eq. 9-10 knowledge feedback in TD backups")
    feedback_evaluator: str = Field("eval.shape", description="evaluator plugin giving the TD backups' Eq. 9 feedback")
    layout_prior: str | None = Field("prior.gaussian", description="layout_prior plugin blended into the layout priors by layout_prior_mix (prior.gaussian: papers/001 Eq. 10; prior.expert_layout: the expert's layout scores), and the TD backups' Eq. 10 feedback; none: no blend")
    value_evaluator: str | None = Field(None, validation_alias=_alias("value_evaluator", "value_eval"),
                                        description="evaluator plugin blended into battle leaf values (e.g. eval.expert:plies=2), or none (old name: value_eval)")
    value_mix: float = Field(0.5, ge=0, le=1, description="weight of value_evaluator in a battle leaf's value: (1 - w) evaluator + w plugin")
    endgame_value_mix: float | None = Field(None, ge=0, le=1, description="value_mix of the battle leaves where a side has endgame_stones or fewer (none: value_mix)")
    endgame_stones: int = Field(9, ge=0, le=STONES_PER_SIDE, description="a battle leaf is in the endgame (endgame_value_mix) when a side has this many stones or fewer")
    layout_value_evaluator: str | None = Field(None, validation_alias=_alias("layout_value_evaluator", "layout_value_eval"),
                                               description="evaluator plugin blended into a layout search's leaf values from ply layout_value_from on (e.g. eval.rollout: AlphaGo's rollouts, the expert as rollout policy), or none (old name: layout_value_eval)")
    layout_value_mix: float = Field(0.5, ge=0, le=1, description="weight of layout_value_evaluator in a layout leaf's value: (1 - w) evaluator + w plugin")
    layout_value_from: int = Field(0, ge=0, le=NUM_POINTS, description="layout ply (placements made) from which layout moves are searched with layout_value_evaluator; earlier ones get one simulation (the policy's best placement)")
    battle_prior: str | None = Field(None, description="battle_prior plugin blended into the battle priors (e.g. prior.expert), or none")
    prior_mix: float = Field(0.5, ge=0, le=1, description="weight of battle_prior in a battle child's prior: (1 - w) policy + w plugin")
    layout_prior_mix: float = Field(0.0, ge=0, le=1, description="weight of layout_prior in a layout child's prior: (1 - w) policy + w plugin (0: the policy alone)")
    policy_temperature: float = Field(1.0, ge=0.05, le=10, description="softmax temperature of the priors (< 1 sharpens, > 1 flattens)")
    value_center: bool = Field(False, description="value_evaluator relative to the root's, so that a search far ahead still tells moves apart")
    terminal_bound: bool = Field(True, description="a battle leaf is worth at least its side's best move that ends the game, e.g. a draw by repetition")
    twofold_draw: bool = Field(False, description="with terminal_bound: the search scores a battle position's second occurrence as a draw, so that a side ahead does not shuffle into the rule book's repetition draw")
    root_selection: Literal["puct", "gumbel"] = Field("puct", validation_alias=_alias("root_selection", "root"),
                                                      description="root selection: Eq. 1 (puct) or Gumbel top-m with sequential halving (gumbel) (old name: root)")
    gumbel_m: int = Field(16, ge=1, le=4096, description="root_selection=gumbel: children considered at the root")
    gumbel_scale: float = Field(0.0, ge=0, le=10, description="root_selection=gumbel: Gumbel noise scale (0: deterministic play; 1: self-play exploration)")
    gumbel_c_visit: float = Field(50.0, ge=0, le=1e6, description="root_selection=gumbel: c_visit of sigma(q) (mctx's 50)")
    gumbel_c_scale: float = Field(0.1, gt=0, le=1e3, description="root_selection=gumbel: c_scale of sigma(q) (mctx's 0.1)")

    @field_validator(*PLUGIN_KINDS, mode="before")
    @classmethod
    def _plugin(cls, value: Any, info) -> Any:
        """A plugin spec checked by the registry; ``"none"`` (any case) is ``None`` where allowed."""
        if not isinstance(value, str):
            return value
        spec = plugin_spec_or_none(value, PLUGIN_KINDS[info.field_name])
        if spec == "none":
            if info.field_name == "feedback_evaluator":
                raise ValueError("a plugin spec (evaluator): the TD backups need one")
            return None
        return spec

    @field_validator("fpu_reduction", mode="before")
    @classmethod
    def _none_number(cls, value: Any) -> Any:
        return None if isinstance(value, str) and value.strip().lower() == "none" else value

    def battle_value_mix(self, counts) -> float:
        """The value plugin's weight in a battle leaf's value where the sides have ``counts`` stones
        (White, Black): ``endgame_value_mix`` when given and a side has ``endgame_stones`` or fewer,
        else ``value_mix``."""
        if self.endgame_value_mix is not None and min(int(counts[0]), int(counts[1])) <= self.endgame_stones:
            return self.endgame_value_mix
        return self.value_mix

    def uses_value_plugin(self) -> bool:
        """Whether some battle leaf takes a part of its value from ``value_evaluator``."""
        return self.value_evaluator is not None and max(self.value_mix, self.endgame_value_mix or 0.0) > 0


# ============================================================================ presets
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {},
    "shipped": {"simulations": 16, "threads": 2, "c_puct": 0.25, "expansion_pruner": "prune.expert:top=4",
                "value_evaluator": "eval.expert:plies=2", "value_mix": 0.5, "value_center": True,
                "root_selection": "gumbel", "gumbel_m": 16, "victim_evaluator": "eval.expert",
                "victim_candidates": 8},
}


@lru_cache(maxsize=None)
def preset(name: str) -> SearchConfig:
    """The :class:`SearchConfig` of preset ``name`` (:data:`PRESETS`; module docstring); ``KeyError``
    naming the presets for an unknown one."""
    if name not in PRESETS:
        raise KeyError(f"unknown search preset {name!r} (presets: {', '.join(PRESETS)})")
    return SearchConfig(**PRESETS[name])


def canonical_keys(table: Mapping[str, Any]) -> dict[str, Any]:
    """``table`` with every :class:`SearchConfig` alias key (``sims``, ``root``...) and ``-`` spelling
    replaced by the field's name; other keys unchanged (validation reports them)."""
    names: dict[str, str] = {}
    for name, info in SearchConfig.model_fields.items():
        names[name] = name
        alias = info.validation_alias
        for choice in getattr(alias, "choices", ()):
            names[str(choice)] = name
    return {names.get(str(k).replace("-", "_"), k): v for k, v in table.items()}


def merged_table(table: Mapping[str, Any], base: SearchConfig) -> dict[str, Any]:
    """The mapping a :class:`SearchConfig` validates from: ``base``'s fields, replaced by preset
    ``table["preset"]``'s when given, with ``table``'s other keys (canonical or alias names) on top.
    Raises ``ValueError`` for an unknown preset."""
    table = dict(table)
    name = table.pop("preset", None)
    if name is not None:
        if not isinstance(name, str) or name not in PRESETS:
            raise ValueError(f"unknown search preset {name!r} (presets: {', '.join(PRESETS)})")
        base = preset(name)
    return {**base.model_dump(), **canonical_keys(table)}


def read_agent_file(model_dir: str | Path) -> tuple[Path, dict[str, Any]]:
    """``MODEL_DIR/agent.toml`` parsed: ``(path, tables)``, the ``[search]`` table required and an
    ``[agent]`` table allowed (module docstring). Raises :class:`AgentFileError` naming the file (missing,
    not TOML, no ``[search]`` table, another table or key)."""
    path = Path(model_dir) / AGENT_FILE
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AgentFileError(f"{path}: {exc.strerror or exc} (a model directory's {AGENT_FILE} says how its nets are played)") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise AgentFileError(f"{path}: not valid TOML ({exc})") from None
    unknown = [k for k in data if k not in ("search", "agent")]
    if unknown:
        raise AgentFileError(f"{path}: unknown table or key {unknown[0]!r} (expected a [search] table and an optional [agent] table)")
    if not isinstance(data.get("search"), dict):
        raise AgentFileError(f"{path}: missing [search] table")
    if not isinstance(data.get("agent", {}), dict):
        raise AgentFileError(f"{path}: 'agent' must be a table")
    return path, data


def agent_field_error(path: Path, table: str, exc: ValidationError, fallback: str = "") -> AgentFileError:
    """The one-line :class:`AgentFileError` of ``agent.toml``'s first invalid field of ``[table]``
    (``path: field 'table.name': reason (got value)``); ``fallback`` names the field when pydantic's error
    has no location (a model-level check)."""
    err = exc.errors()[0]
    field = ".".join(str(x) for x in err["loc"]) or fallback
    reason = str(err["ctx"]["error"]) if err["type"] == "value_error" else err["msg"]
    return AgentFileError(f"{path}: field '{table}.{field}': {reason} (got {err.get('input')!r})")


def model_search_config(model_dir: str | Path) -> SearchConfig:
    """How the nets of ``model_dir`` are searched: the ``[search]`` table of its ``agent.toml`` (module
    docstring; ``preset`` default ``paper``). Raises :class:`AgentFileError` naming the file and the field
    (missing file, not TOML, no ``[search]`` table, unknown preset, a bad or unknown field)."""
    path, data = read_agent_file(model_dir)
    try:
        return SearchConfig.model_validate(merged_table(data["search"], preset("paper")))
    except ValidationError as exc:
        raise agent_field_error(path, "search", exc) from None
    except ValueError as exc:
        raise AgentFileError(f"{path}: field 'search.preset': {exc}") from None


# ============================================================================ option models
M = TypeVar("M", bound=BaseModel)


def with_defaults(model: type[M], defaults: SearchConfig, name: str | None = None, doc: str | None = None,
                  extra: Mapping[str, Any] | None = None) -> type[M]:
    """A subclass of ``model`` (a subclass of :class:`SearchConfig`) whose :class:`SearchConfig` fields
    default to ``defaults``' values (types, bounds, aliases and descriptions unchanged), other than
    ``seed``: how each search agent gets its preset's defaults without declaring a field again.
    ``extra``: defaults of ``model``'s own (non-search) fields, already validated."""
    fields: dict[str, Any] = {}
    for field in SearchConfig.model_fields:
        if field == "seed":
            continue
        info = copy.copy(model.model_fields[field])
        info.default = getattr(defaults, field)
        fields[field] = (info.annotation, info)
    for field, value in (extra or {}).items():
        info = copy.copy(model.model_fields[field])
        info.default = value
        fields[field] = (info.annotation, info)
    out = create_model(name or model.__name__, __base__=model, __module__=model.__module__, **fields)
    out.__doc__ = doc or model.__doc__
    return out
