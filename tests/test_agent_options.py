"""Typed agent options (knowledge/registry.py, knowledge/agents.py, search/agents.py, catalog.py).

- a table of bad specs: each gives one ``SpecError`` line naming the agent, the option and the reason;
- the same specs through every command that takes one (arena, tournament, play, gen-records, the
  selfplay config fields): exit status 2 and exactly one ``error:`` line on stderr;
- every registered agent has an options model with every number bounded, and the search defaults come
  from ``SearchConfig``;
- the net agents' phase options (``layout``/``battle``/``lower``) build the agents the training
  pipeline evaluates with;
- a hypothesis fuzz test of spec validation: any text gives options or a ``SpecError``.
"""

from __future__ import annotations

import json
import typing

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import catalog
from cli import app
from knowledge.agents import ExpertAgent, PhasedAgent, validate_agent_spec, make_agent
from knowledge.plugins import REGISTRY
from knowledge.registry import SpecError, UnknownNameError, parse_spec
from search.agents import MODELS_DIR, LowerVictimsAgent, SearchAgent
from search.config import SearchConfig, model_search_config, preset

# spec -> the message (exactly)
BAD_SPECS = {
    "mcts:sims=-5": "agent 'mcts' option 'sims': must be >= 1 (got -5)",
    "jfa:victims=-1": "agent 'jfa' option 'victims': must be >= 0 (got -1)",
    "expert:top=-1": "agent 'expert' option 'top': must be >= 1 (got -1)",
    "expert:noise=nan": "agent 'expert' option 'noise': must be a finite number (got nan)",
    "expert:layout_noise=-inf": "agent 'expert' option 'layout_noise': must be a finite number (got -inf)",
    "greedy:seed=abc": "agent 'greedy' option 'seed': must be an integer (got abc)",
    "random:seed=1.5": "agent 'random' option 'seed': must be an integer (got 1.5)",
    "random:seed=-1": "agent 'random' option 'seed': must be >= 0 (got -1)",
    "mcts:temperature=-1": "agent 'mcts' option 'temperature': must be >= 0 (got -1)",
    "mcts:sims=99999999999999999999": "agent 'mcts' option 'sims': must be <= 1000000 (got 99999999999999999999)",
    "mcts:c_puct=0": "agent 'mcts' option 'c_puct': must be > 0 (got 0)",
    "mcts:prune=maybe": "agent 'mcts' option 'prune': must be true or false (got maybe)",
    "mcts:formula=new": "agent 'mcts' option 'formula': must be 'puct' or 'printed' (got new)",
    "minimax:time=0": "agent 'minimax' option 'time': must be > 0 (got 0)",
    "minimax:depth=0": "agent 'minimax' option 'depth': must be >= 1 (got 0)",
    "expert:plies=3": "agent 'expert' option 'plies': must be <= 2 (got 3)",
    "expert:victims=all": "agent 'expert' option 'victims': must be 'threat', 'eq9' or 'kernel' (got all)",
    "hbm:upper=none": "agent 'hbm' option 'upper': must be a weights file (.safetensors) (got none)",
    "jfa:epsilon=2": "agent 'jfa' option 'epsilon': must be <= 1 (got 2)",
    "slm:battle=expert:top=0": "agent 'slm' option 'battle': 'search' or an agent spec: agent 'expert' option "
                               "'top': must be >= 1 (got 0)",
    # every option naming a plugin (or none) gives the same message: search.agents.plugin_spec_or_none
    "mcts:value_eval=prior.gaussian": "agent 'mcts' option 'value_eval': a plugin spec (evaluator) or none: unknown "
                                      "evaluator 'prior.gaussian'; available: eval.expert, eval.shape "
                                      "(got prior.gaussian)",
    "jfa:final_victim_eval=nope": "agent 'jfa' option 'final_victim_eval': a plugin spec (evaluator) or none: "
                                  "unknown evaluator 'nope'; available: eval.expert, eval.shape "
                                  "(got nope)",
    "mcts:sims": "spec 'mcts:sims': option 'sims' is not key=value",
    "mcts:sims=1,sims=2": "spec 'mcts:sims=1,sims=2': option 'sims' is given twice",
    ":sims=1": "spec ':sims=1': missing name",
    "expert+": "agent spec 'expert+': expected NAME[:k=v,...] or LAYOUT+BATTLE",
    "random+random+random": "agent spec 'random+random+random': expected NAME[:k=v,...] or LAYOUT+BATTLE",
}
UNKNOWN = {  # spec -> the start of the message
    "mcts:bogus=1": "agent 'mcts': unknown option 'bogus' (options: seed, simulations, threads,",
    "nope": "unknown agent 'nope'; available: ",
    "slm:battle=nope": "agent 'slm' option 'battle': 'search' or an agent spec: unknown agent 'nope'; available:",
}


@pytest.mark.parametrize("spec", list(BAD_SPECS))
def test_bad_specs_give_one_line_naming_agent_option_and_reason(spec):
    with pytest.raises(SpecError) as info:
        validate_agent_spec(spec)
    assert str(info.value) == BAD_SPECS[spec]
    with pytest.raises(SpecError):
        make_agent(spec, seed=3)  # the spec's own values are checked even where the seed overrides


@pytest.mark.parametrize("spec", list(UNKNOWN))
def test_unknown_options_and_names_list_the_choices(spec):
    with pytest.raises(SpecError) as info:
        validate_agent_spec(spec)
    message = str(info.value)
    assert message.startswith(UNKNOWN[spec]) and "\n" not in message
    if spec == "nope":
        assert isinstance(info.value, KeyError) and isinstance(info.value, UnknownNameError)
        assert "expert" in message and "jfa" in message


def test_good_specs_parse_to_typed_options():
    _, opts = REGISTRY.check("mcts:sims=64,threads=2,c-puct=2.5,prune=false,temperature=0.5", "agent")
    assert (opts.simulations, opts.threads, opts.c_puct, opts.prune, opts.temperature) == (64, 2, 2.5, False, 0.5)
    assert parse_spec("minimax:depth=3,time=0.5") == ("minimax", {"depth": "3", "time": "0.5"})
    agent = make_agent("expert:top=4,noise=0.5,victims=eq9", seed=9)
    assert isinstance(agent, ExpertAgent)
    assert (agent.top, agent.noise, agent.victim_rule, agent.seed) == (4, 0.5, "eq9", 9)


# ----------------------------------------------------------------------------- every agent, bounded
def _numeric(annotation) -> bool:
    args = typing.get_args(annotation) or (annotation,)
    return any(a in (int, float) for a in args)


def test_every_agent_has_options_with_every_number_bounded():
    names = REGISTRY.names("agent")
    assert {"random", "greedy", "minimax", "expert", "mcts", "jfa", "slm", "hbm"} <= set(names)
    for name in names:
        entry = REGISTRY.entry(name, "agent")
        assert entry.options is not None, name
        assert entry.options.model_config.get("frozen") and entry.options.model_config.get("extra") == "forbid"
        for field, info in entry.options.model_fields.items():
            assert info.description, f"{name}.{field} has no description"
            if _numeric(info.annotation):
                kinds = {attr for m in info.metadata for attr in ("ge", "gt", "le", "lt")
                         if getattr(m, attr, None) is not None}
                assert kinds & {"ge", "gt"} and kinds & {"le", "lt"}, f"{name}.{field} is not bounded: {kinds}"


def test_search_defaults_live_in_search_config():
    """``mcts`` searches with the ``paper`` preset (``SearchConfig``'s defaults); the net agents with the
    shipped model's ``agent.toml`` (the ``shipped`` preset and its own fields) and self-play with that
    preset, each written once;
    the option models declare none of these fields again."""
    from search import agents
    from train.learning.config import SelfPlayConfig

    paper, shipped = preset("paper"), model_search_config(MODELS_DIR / "default")
    assert paper == SearchConfig() and shipped.c_puct == preset("shipped").c_puct
    assert shipped.c_puct != paper.c_puct and shipped.root_selection != paper.root_selection
    for name, config in (("mcts", paper), ("jfa", shipped), ("slm", shipped), ("hbm", shipped)):
        _, opts = REGISTRY.check(name, "agent")
        played = opts.search_config()
        assert isinstance(played, SearchConfig) and type(played) is SearchConfig
        for field in SearchConfig.model_fields:
            if field not in ("simulations", "seed"):
                assert getattr(played, field) == getattr(config, field), (name, field)
    assert REGISTRY.check("mcts", "agent")[1].simulations == 200 and REGISTRY.check("jfa", "agent")[1].simulations == 16
    for model in (agents.SearchOptions, agents._MctsOptions, agents._ShapeOptions, agents._NetOptions,
                  agents.SlmOptions, agents.HbmOptions):  # declared once: the option models inherit the fields
        assert not set(vars(model).get("__annotations__", {})) & set(SearchConfig.model_fields), model
    search = SelfPlayConfig().search
    assert (search.c_puct, search.root_selection, search.value_evaluator) == (shipped.c_puct, shipped.root_selection,
                                                                             shipped.value_evaluator)
    assert (search.simulations, search.threads, search.dirichlet_epsilon) == (32, 4, 0.25)
    agent = make_agent("mcts:sims=2")
    assert agent.search.config.c_puct == paper.c_puct
    agent.close()


def test_old_option_names_are_aliases_of_the_search_fields():
    """Every spec written before the one ``SearchConfig`` keeps its meaning."""
    _, old = REGISTRY.check("jfa:sims=8,root=puct,value_eval=none,layout_value_eval=eval.shape,victim_eval=none,victims=3",
                            "agent")
    _, new = REGISTRY.check("jfa:simulations=8,root_selection=puct,value_evaluator=none,layout_value_evaluator=eval.shape,"
                            "victim_evaluator=none,victim_candidates=3", "agent")
    assert old == new and old.search_config() == new.search_config()
    assert (old.simulations, old.root_selection, old.value_evaluator, old.victim_candidates) == (8, "puct", None, 3)
    assert old.layout_value_evaluator == "eval.shape"
    assert REGISTRY.check("mcts:expansion_pruner=NONE", "agent")[1].expansion_pruner is None


def test_agent_toml_errors_name_the_file_and_field(tmp_path):
    from search.config import AgentFileError

    with pytest.raises(AgentFileError, match="agent.toml"):
        model_search_config(tmp_path)
    (tmp_path / "agent.toml").write_text('[search]\npreset = "shipped"\nc_puct = -1\n')
    with pytest.raises(AgentFileError, match=r"agent.toml: field 'search.c_puct'"):
        model_search_config(tmp_path)
    (tmp_path / "agent.toml").write_text('[search]\npreset = "fast"\n')
    with pytest.raises(AgentFileError, match=r"field 'search.preset': unknown search preset 'fast'"):
        model_search_config(tmp_path)
    (tmp_path / "agent.toml").write_text('[search]\npreset = "shipped"\nsims = 32\n')
    assert model_search_config(tmp_path) == preset("shipped").model_copy(update={"simulations": 32})


def test_catalogue_lists_every_agent_with_its_options():
    entries = catalog.agent_catalogue()
    assert [e["name"] for e in entries] == REGISTRY.names("agent")
    top = next(r for r in catalog.agent_catalogue("expert")[0]["options"] if r["name"] == "top")
    assert top == {"name": "top", "type": "int", "range": "[1, 1000]", "default": "8",
                   "description": top["description"]}
    c_puct = next(r for r in catalog.agent_catalogue("mcts")[0]["options"] if r["name"] == "c_puct")
    assert c_puct["range"] == "(0, 1000]" and c_puct["default"] == "1.5"
    with pytest.raises(UnknownNameError):
        catalog.agent_catalogue("nope")


def test_agents_command_prints_options():
    result = CliRunner().invoke(app, ["agents", "expert", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [e["name"] for e in data] == ["expert"] and any(r["name"] == "noise" for r in data[0]["options"])
    text = CliRunner().invoke(app, ["agents"]).stdout
    for name in REGISTRY.names("agent"):
        assert f"{name}: " in text
    assert "sims" in text and "[1, 1000000]" in text


# ----------------------------------------------------------------------------- every command
CLI_SPECS = ["mcts:sims=-5", "jfa:victims=-1", "expert:noise=nan", "greedy:seed=abc", "mcts:bogus=1", "nope"]


def _commands(spec: str, tmp) -> list[list[str]]:
    fast = ["--games", "2", "--workers", "0"]
    return [
        ["arena", spec, "random", *fast, "--out", str(tmp / "a")],
        ["arena", "random", spec, *fast, "--out", str(tmp / "b")],
        ["tournament", "random", spec, *fast, "--out", str(tmp / "t")],
        ["play", "--agent", spec],
        ["gen-records", "--agent", spec, "--games", "1", "--workers", "0", "--out", str(tmp / "r")],
        ["gen-records", "--black", spec, "--games", "1", "--workers", "0", "--out", str(tmp / "s")],
        ["selfplay", "--set", f"selfplay.aux_agent={spec}", "--run-dir", str(tmp / "p"), "--no-progress"],
        ["selfplay", "--set", f"gate.expert={spec}", "--run-dir", str(tmp / "q"), "--no-progress"],
        ["selfplay", "--set", f"pretrain.agent={spec}", "--run-dir", str(tmp / "u"), "--no-progress"],
    ]


@pytest.mark.parametrize("spec", CLI_SPECS)
def test_every_command_taking_a_spec_gives_one_error_line(spec, tmp_path):
    expected = BAD_SPECS.get(spec) or UNKNOWN.get(spec) or {
        "expert:noise=nan": "agent 'expert' option 'noise': must be a finite number (got nan)",
        "greedy:seed=abc": "agent 'greedy' option 'seed': must be an integer (got abc)",
    }[spec]
    runner = CliRunner()
    for args in _commands(spec, tmp_path):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), (args, result.stderr)
        assert expected in lines[0], (args, lines[0])
        assert not (tmp_path / "p" / "config.json").exists()  # refused before any work


# ----------------------------------------------------------------------------- the net agents' phases
SHIPPED_LOWER = MODELS_DIR / "default" / "lower.safetensors"


def test_net_agent_phases_build_the_right_agents():
    slm = make_agent("slm:sims=2,threads=1,inference_threads=1", seed=4)
    try:
        assert isinstance(slm, PhasedAgent) and isinstance(slm.layout_agent, SearchAgent)
        assert isinstance(slm.battle_agent, ExpertAgent) and slm.battle_agent.seed == 4
        assert slm.layout_agent.search.evaluator.nets[1] is None  # no upper net loaded for an expert battle
    finally:
        slm.close()
    upper_only = make_agent("hbm:sims=2,threads=1,lower=none,victim_eval=none,battle=search", seed=4)
    try:
        assert isinstance(upper_only.layout_agent, ExpertAgent) and upper_only.battle_agent.search.victim_scorer is None
    finally:
        upper_only.close()
    assert isinstance(make_agent("jfa:layout=expert,battle=expert"), ExpertAgent)  # no nets at all
    both = make_agent(f"jfa:layout=random,battle=random,lower={SHIPPED_LOWER}")
    assert isinstance(both, LowerVictimsAgent) and both.base.name == "random"  # one agent for both phases


def test_lower_net_chooses_the_victims_of_the_battle_agents_move():
    from nets.encoding import encode_upper
    from nets.evaluator import NetVictimScorer
    from search.agents import load_net
    from tests.test_agents import DALIAN_W, FAR_B, battle

    s = battle(DALIAN_W, FAR_B)
    expert = make_agent("expert", seed=3).select(s)
    assert expert.victims  # the expert forms a square here
    agent = make_agent(f"hbm:battle=expert,lower={SHIPPED_LOWER},victims=0", seed=3)
    move = agent.select(s)  # layout=expert (hbm) and battle=expert: one expert, its victims by the lower net
    assert (move.path, move.jump) == (expert.path, expert.jump)
    sets, _ = REGISTRY.create("prune.capture", "capture_pruner").candidates(s, move.path, move.jump)
    sets = [tuple(x) for x in sets]
    assert len(sets) > 1 and move.victims in sets
    scorer = NetVictimScorer(load_net(SHIPPED_LOWER, "lower"))
    afters = [s._play(type(move)(move.path, move.jump, v)) for v in sets]
    q = scorer.q_values(afters, [encode_upper(move.path, move.jump)] * len(sets))
    assert move.victims == sets[int(np.argmax(q))]  # JFA Eq. 6: the highest Q among the candidates


def _capture_with_distinct_values(spec: str):
    """The first position of an expert game where the expert forms a square and ``spec``'s values of
    the positions after the pruner's victim sets are not all equal: ``(state, expert's move, sets)``."""
    from core.state import GameState

    expert = make_agent("expert", seed=3)
    pruner = REGISTRY.create("prune.capture", "capture_pruner")
    evaluator = REGISTRY.create(spec, "evaluator")
    s = GameState.initial()
    while not s.is_terminal():
        move = expert.select(s)
        if s.phase == 1 and move.victims:
            sets = [tuple(x) for x in pruner.candidates(s, move.path, move.jump)[0]]
            values = {evaluator.value(s._play(type(move)(move.path, move.jump, v))) for v in sets}
            if len(values) > 1:
                return s, move, sets
        s = s.apply(move)
    raise AssertionError("no capture with distinct values in the game")


@pytest.mark.parametrize("spec", ["eval.expert", "eval.expert:plies=2"])
def test_victim_eval_chooses_the_set_that_leaves_the_opponent_worst(spec):
    """``victim_eval=EVALUATOR``: the battle agent's victims are the pruner's set after which the
    plugin's value for the opponent (to move there) is lowest; the scorer's Q is minus that value."""
    from knowledge.evaluation import EvaluatorVictimScorer

    s, expert, sets = _capture_with_distinct_values(spec)
    agent = make_agent(f"hbm:battle=expert,victim_eval={spec},victims=0", seed=3)
    assert isinstance(agent, LowerVictimsAgent)
    move = agent.select(s)
    assert (move.path, move.jump) == (expert.path, expert.jump)
    evaluator = REGISTRY.create(spec, "evaluator")
    afters = [s._play(type(move)(move.path, move.jump, v)) for v in sets]
    values = np.array([evaluator.value(a) for a in afters])
    assert move.victims == sets[int(np.argmin(values))]
    scorer = EvaluatorVictimScorer(evaluator)
    assert np.allclose(scorer.q_values(afters, [0] * len(afters)), -values, atol=1e-6)
    with pytest.raises(ValueError, match="upper actions"):
        scorer.q_values(afters, [0])


def test_victim_eval_in_the_search_and_its_errors():
    """The searched battle uses the plugin as its victim scorer (no lower net is loaded); with
    ``lower=PATH`` too, or an unknown plugin, the spec is refused in one line naming the option."""
    from knowledge.evaluation import EvaluatorVictimScorer

    agent = make_agent("jfa:victim_eval=eval.expert,victims=8,sims=4")
    try:
        assert isinstance(agent.search.victim_scorer, EvaluatorVictimScorer)
    finally:
        agent.close()
    with pytest.raises(SpecError, match="not both"):
        make_agent(f"jfa:victim_eval=eval.expert,lower={SHIPPED_LOWER}")
    with pytest.raises(SpecError, match="victim_eval.*eval.nope"):
        make_agent("jfa:victim_eval=eval.nope")
    assert make_agent("hbm:battle=expert,victim_eval=none").name == "expert"  # none: the battle agent's own victims


@pytest.mark.parametrize("options, searched, chooser", [
    ("", "eval.expert", "EvaluatorVictimScorer"),                     # the default: the expert's one ply
    ("victim_eval=eval.expert:plies=2", "eval.expert:plies=2", "EvaluatorVictimScorer"),
    ("lower=none", "eval.expert", "EvaluatorVictimScorer"),           # no lower net: still the default evaluator
    ("victim_eval=none", None, "NetVictimScorer"),                    # the shipped lower net
    (f"lower={SHIPPED_LOWER}", None, "NetVictimScorer"),              # a given lower net replaces the default
    ("victim_eval=none,lower=none", None, None),                      # the pruner's best set
])
def test_the_searched_battles_victim_chooser(options, searched, chooser):
    """Who chooses the searched battle's square victims (module docstring, "Square victims"): the
    resolved spec and the scorer the search holds, among the pruner's 8 best sets by default."""
    from search.agents import NetOptions

    shipped = preset("shipped")
    spec = "jfa:sims=2,threads=1,inference_threads=1" + (f",{options}" if options else "")
    o = NetOptions.model_validate(dict(kv.split("=", 1) for kv in spec.split(":", 1)[1].split(",")))
    assert o.victim_evaluator == searched and o.victim_candidates == shipped.victim_candidates
    assert shipped.victim_evaluator == "eval.expert"
    agent = make_agent(spec)
    try:
        assert type(agent.search.victim_scorer).__name__ == (chooser or "NoneType")
        assert agent.search.config.victim_candidates == shipped.victim_candidates
    finally:
        agent.close()


def test_a_battle_agent_keeps_its_own_victims_unless_a_chooser_is_given():
    """The default evaluator chooses only the searched battle's victims: ``slm``'s expert battle plays
    its own (the paper's setup), and gets a chooser only from a given ``victim_eval`` or ``lower``."""
    slm = make_agent("slm:sims=2,threads=1,inference_threads=1")
    try:
        assert isinstance(slm.battle_agent, ExpertAgent)
    finally:
        slm.close()
    chosen = make_agent("slm:sims=2,threads=1,inference_threads=1,victim_eval=eval.expert")
    try:
        assert isinstance(chosen.battle_agent, LowerVictimsAgent)
    finally:
        chosen.close()


def test_training_evaluation_agents_are_recipes(tmp_path):
    """The gate and curve agents are ``AgentRecipe`` objects (picklable, rebuilt from their dict), with a
    text form for records only."""
    import pickle

    from search.agents import AgentRecipe
    from train.learning.config import TrainConfig
    from train.learning.selfplay import net_agent

    cfg = TrainConfig()
    for kind, name in (("slm", "slm"), ("upper", "hbm"), ("lower", "hbm")):
        recipe = net_agent(kind, tmp_path / f"{kind}.safetensors", cfg)
        assert isinstance(recipe, AgentRecipe) and recipe.name == name and str(recipe).startswith(f"{name}:")
        assert pickle.loads(pickle.dumps(recipe)) == recipe
        assert AgentRecipe.from_dict(json.loads(json.dumps(recipe.to_dict()))) == recipe
    lower = net_agent("lower", tmp_path / "lower.safetensors", cfg).options
    assert (lower.battle, lower.victim_candidates, lower.victim_evaluator) == ("expert", 0, None)


def test_upper_evaluation_agent_searches_with_the_selfplay_search(tmp_path):
    from train.learning.config import ConfigError, TrainConfig, validate_config
    from train.learning.selfplay import net_agent, search_config

    cfg = TrainConfig.model_validate({"selfplay": {"search": {"expansion_pruner": "prune.expert:top=3",
                                                              "value_eval": "eval.expert", "value_mix": 0.75,
                                                              "c_puct": 0.8}}})
    options = net_agent("upper", tmp_path / "upper.safetensors", cfg).options
    played, selfplay = options.search_config(), search_config(cfg, seed=0)
    for field in SearchConfig.model_fields:
        if field not in ("seed", "dirichlet_epsilon", "gumbel_scale"):  # the gate plays without exploration noise
            assert getattr(played, field) == getattr(selfplay, field), field
    assert played.value_evaluator == "eval.expert" and played.value_mix == 0.75 and played.c_puct == 0.8
    assert played.gumbel_scale == 0 and played.dirichlet_epsilon == 0
    assert net_agent("slm", tmp_path / "slm.safetensors", cfg).options.search_config().c_puct == 0.8
    plain = TrainConfig.model_validate({"selfplay": {"search": {"value_eval": "none"}, "value_drift": 0}})
    assert plain.selfplay.search.value_evaluator is None and search_config(plain, seed=0).value_evaluator is None
    assert net_agent("upper", tmp_path / "upper.safetensors", plain).options.search_config().value_evaluator is None
    with pytest.raises(ConfigError, match="selfplay.search.value_evaluator"):
        validate_config({"selfplay": {"search": {"value_eval": "eval.nope"}}})
    with pytest.raises(ConfigError, match=r"selfplay.c_puct is now selfplay.search.c_puct"):
        validate_config({"selfplay": {"c_puct": 0.5}})


def test_selfplay_search_table_applies_over_the_selfplay_search():
    """``[selfplay.search]``: keys (names or old aliases) over self-play's defaults or a ``preset``'s; a
    moved flat key names its new place; ``gate.simulations``/``search_threads`` override the one search."""
    from train.learning.config import SELFPLAY_SEARCH, ConfigError, load_config
    from train.learning.selfplay import evaluation_search

    cfg = load_config(None, ["selfplay.search.c_puct=0.5", "selfplay.search.sims=8"])
    assert cfg.selfplay.search == SELFPLAY_SEARCH.model_copy(update={"c_puct": 0.5, "simulations": 8})
    paper = load_config(None, ["selfplay.search.preset=paper", "selfplay.value_drift=0"])
    assert paper.selfplay.search == preset("paper")
    with pytest.raises(ConfigError, match=r"selfplay.search_threads is now selfplay.search.threads"):
        load_config(None, ["selfplay.search_threads=2"])
    with pytest.raises(ConfigError, match=r"search.preset: unknown search preset 'fast'"):
        load_config(None, ["selfplay.search.preset=fast"])
    assert (evaluation_search(cfg).simulations, evaluation_search(cfg).threads) == (8, 4)
    gated = evaluation_search(load_config(None, ["gate.simulations=3", "gate.search_threads=1"]))
    assert (gated.simulations, gated.threads, gated.dirichlet_epsilon, gated.gumbel_scale) == (3, 1, 0.0, 0.0)


# ----------------------------------------------------------------------------- fuzz
_NAMES = ["random", "greedy", "minimax", "expert", "mcts", "jfa", "slm", "hbm", "nope"]
_KEYS = ["seed", "sims", "threads", "c_puct", "temperature", "top", "noise", "depth", "time", "victims", "layout",
         "battle", "lower", "prune", "formula", "plies", "bogus"]
_VALUES = st.one_of(st.integers(-10**25, 10**25).map(str), st.floats(allow_nan=True).map(repr),
                    st.sampled_from(["true", "no", "nan", "-inf", "none", "", "search", "expert", "expert:top=0",
                                     "puct", "eq9"]),
                    st.text(max_size=8))
_STRUCTURED = st.builds(lambda name, items: name + (":" + ",".join(f"{k}={v}" for k, v in items) if items else ""),
                        st.sampled_from(_NAMES), st.lists(st.tuples(st.sampled_from(_KEYS), _VALUES), max_size=4))


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(_STRUCTURED, st.text(max_size=40), st.builds("+".join, st.lists(_STRUCTURED, min_size=2, max_size=3))))
def test_fuzz_agent_specs_give_options_or_one_spec_error_line(spec):
    try:
        validate_agent_spec(spec)
    except SpecError as exc:
        assert str(exc) and "\n" not in str(exc)


def test_a_plugin_option_may_ride_in_a_search_agents_plugin_spec():
    """``capture_pruner=prune.capture:pool=30``: the pruner is built with its own option; a bad plugin
    name is refused when the options are parsed."""
    import catalog  # noqa: F401
    from knowledge.agents import make_agent
    from knowledge.registry import SpecError

    agent = make_agent("mcts:sims=4,capture_pruner=prune.capture:pool=30", seed=1)
    assert agent.search.capture_pruner.pool == 30
    with pytest.raises(SpecError, match="capture_pruner"):
        make_agent("mcts:sims=4,capture_pruner=prune.nope:pool=30")


def test_layout_sims_sets_the_layout_search_only():
    """``jfa:layout_sims=1``: a layout move is the SLM policy's most probable placement after one
    simulation; battle moves keep ``sims``."""
    import catalog  # noqa: F401
    from core.state import GameState
    from knowledge.agents import make_agent

    agent = make_agent("jfa:sims=6,layout_sims=1,threads=1", seed=3)
    try:
        s = GameState.initial()
        for _ in range(6):
            move = agent.select(s)
            r = agent.last_result
            assert r.simulations == 1
            assert move == r.moves[int(np.argmax(r.priors))]
            s = s.apply(move)
        battle = GameState.from_jfen("14/14/14/14/5WW7/5WB7/5BBW6/6WB6/7B6/14/14/14/14/14 w battle 0 200")
        agent.select(battle)
        assert agent.last_result.simulations == 6
    finally:
        agent.close()


def _captures_played(agent, limit: int, sets: int = 4):
    """``(position, move, candidate sets)`` of the first ``limit`` square-forming moves ``agent`` chooses
    in the battle positions of a game the expert plays on both sides (battle plies 0..240), in order;
    the candidate sets are ``prune.capture``'s ``sets`` best victim sets of the move's path."""
    from core.state import GameState
    from search.victims import after_path

    pruner = REGISTRY.create("prune.capture", "capture_pruner")
    expert = make_agent("expert", seed=3)
    s, found = GameState.initial(), 0
    while not s.is_terminal() and found < limit and s.ply < 196 + 240:
        if s.phase == 1:
            move = agent.select(s)
            if move.victims:
                found += 1
                after = after_path(s, move.path, move.jump, len(move.victims))
                yield s, move, [tuple(x) for x in pruner.candidates_after(after, len(move.victims))[0]][:sets]
        s = s.apply(expert.select(s))


def test_final_victim_eval_rechooses_the_played_captures_victims():
    """``final_victim_eval=EVALUATOR``: the tree keeps its own victims (here the pruner's best set), but
    every square-forming move the agent plays takes, among the pruner's ``victims`` best sets of its
    path, the one after which the plugin's value for the opponent is lowest (up to ties); without the
    option the played victims are the tree's."""
    evaluator = REGISTRY.create("eval.expert", "evaluator")
    base = "jfa:sims=2,threads=1,inference_threads=1,layout=expert,victim_eval=none,lower=none,victims=4"
    plain, final = make_agent(base, seed=2), make_agent(base + ",final_victim_eval=eval.expert", seed=2)
    differs = captures = 0
    try:
        for s, move, sets in _captures_played(final, 6):
            values = np.array([evaluator.value(s._play(type(move)(move.path, move.jump, v))) for v in sets])
            assert move.victims in sets
            assert values[sets.index(move.victims)] <= values.min() + 1e-6
            tree_move = plain.select(s)
            if (tree_move.path, tree_move.jump) == (move.path, move.jump):
                assert tree_move.victims == sets[0]  # no final chooser: the tree's (pruner's best)
                differs += move.victims != tree_move.victims
            captures += 1
    finally:
        plain.close()
        final.close()
    assert captures >= 3 and differs >= 1


def test_final_victim_eval_lower_lets_the_lower_net_choose_the_played_victims():
    """``final_victim_eval=lower``: the tree's victims stay ``victim_eval``'s (the expert's one-ply value
    here), and every square-forming move the agent plays takes, among the pruner's ``victims`` best sets
    of its path, the one the lower net gives the highest Q (JFA Eq. 6, up to ties); it needs a lower net,
    and ``lower=PATH`` beside a ``victim_eval`` is then no conflict."""
    from nets.encoding import encode_upper
    from nets.evaluator import NetVictimScorer
    from search.agents import load_net, weights_path

    scorer = NetVictimScorer(load_net(weights_path(None, "lower"), "lower"))
    spec = ("jfa:sims=2,threads=1,inference_threads=1,layout=expert,victim_eval=eval.expert,victims=4,"
            "final_victim_eval=lower")
    agent = make_agent(spec, seed=2)
    captures = 0
    try:
        assert type(agent.battle_agent.search.victim_scorer).__name__ == "EvaluatorVictimScorer"
        for s, move, sets in _captures_played(agent, 4):
            afters = [s._play(type(move)(move.path, move.jump, v)) for v in sets]
            q = scorer.q_values(afters, [encode_upper(move.path, move.jump)] * len(sets))
            assert move.victims in sets and q[sets.index(move.victims)] >= q.max() - 1e-5
            captures += 1
    finally:
        agent.close()
    assert captures >= 3
    validate_agent_spec(spec + f",lower={weights_path(None, 'lower')}")  # the lower net for the final choice
    with pytest.raises(SpecError, match="final_victim_eval=lower needs the lower net"):
        validate_agent_spec(spec + ",lower=none")
