"""The one search configuration (``search/config.py``): presets, a model directory's ``agent.toml``,
plugin fields, and ``AgentRecipe`` (an agent as an object for the gate and the curve)."""

from __future__ import annotations

import pickle

import pytest

import catalog  # noqa: F401 - every agent and plugin registered
from knowledge.registry import SpecError
from search.agents import AgentRecipe
from search.config import PRESETS, AgentFileError, SearchConfig, model_search_config, preset


def test_presets_are_configs_and_an_unknown_one_is_named():
    assert preset("paper") == SearchConfig()
    shipped = preset("shipped")
    assert (shipped.c_puct, shipped.simulations, shipped.root_selection) == (0.25, 16, "gumbel")
    with pytest.raises(KeyError, match="unknown search preset 'fast' .presets: " + ", ".join(PRESETS)):
        preset("fast")


def test_plugin_fields_take_none_except_the_td_feedback():
    assert SearchConfig(value_evaluator="None", battle_prior="NONE").value_evaluator is None
    with pytest.raises(ValueError, match="the TD backups need one"):
        SearchConfig(feedback_evaluator="none")
    with pytest.raises(ValueError, match="evaluator"):
        SearchConfig(value_evaluator="eval.bogus")


@pytest.mark.parametrize("text, message", [
    ("[search\n", "not valid TOML"),
    ('[search]\npreset = "shipped"\n[other]\nx = 1\n', "unknown table or key 'other'"),
    ('preset = "shipped"\n', "unknown table or key 'preset'"),
    ("", "missing .search. table"),
])
def test_agent_toml_errors_name_the_file(tmp_path, text, message):
    (tmp_path / "agent.toml").write_text(text)
    with pytest.raises(AgentFileError, match=message) as info:
        model_search_config(tmp_path)
    assert "agent.toml" in str(info.value)


def test_the_shipped_model_is_played_with_the_shipped_preset():
    """``models/default/agent.toml`` names the ``shipped`` preset; the fields it gives beside it (an
    export's ``--set search.*``) win, every other field is the preset's."""
    from search.agents import MODELS_DIR
    from search.config import read_agent_file

    table = dict(read_agent_file(MODELS_DIR / "default")[1]["search"])
    assert table.pop("preset") == "shipped"
    assert model_search_config(MODELS_DIR / "default") == preset("shipped").model_copy(update=table)


def test_a_recipe_round_trips_and_pickles():
    recipe = AgentRecipe.of("mcts", simulations=3, c_puct=2.0)
    assert AgentRecipe.from_dict(recipe.to_dict()) == recipe
    assert pickle.loads(pickle.dumps(recipe)) == recipe
    assert str(recipe) == "mcts:simulations=3,c_puct=2.0"
    agent = recipe.build(seed=5)
    assert agent.select is not None
    agent.close()
    with pytest.raises(SpecError, match="agent 'mcts' option 'simulations'"):
        AgentRecipe.of("mcts", simulations=0)
