"""A match experiment's round robin (``round_robin`` in a spec; train/experiments/): validation, resolution,
a tiny end-to-end run with resume, and the built-in ``alphadou`` spec's ablation rows (each differs from its
opponent in the one weight it ablates). Budgets are tiny: 2 games per pair of cheap agents, a 20-ply battle cap."""

from __future__ import annotations

import json

import pytest

from train.experiments.run import run_experiment
from train.experiments.spec import ExperimentError, ExperimentSpec, agent_config, config_diff, load_spec, resolve

pytestmark = pytest.mark.integration

RR_SPEC = """
name = "rr"
title = "a small zoo"
kind = "match"
games = 2
rules = {max_battle_plies = 20, adjudicate = "stones"}
round_robin = ["random", "greedy", "minimax:depth=1"]
round_robin_anchor = "greedy"

[[rows]]
id = "greedy-capture-0"
label = "greedy, no capture weight"
a = "greedy:capture=0"
b = "greedy"
"""


def _spec(tmp_path, text=RR_SPEC):
    path = tmp_path / "rr.toml"
    path.write_text(text)
    return load_spec(path)


def test_a_round_robin_is_resolved_with_its_games_and_anchor(tmp_path):
    spec = _spec(tmp_path)
    rr = resolve(spec)["round_robin"]
    assert rr == {"agents": ["random", "greedy", "minimax:depth=1"], "games": 2, "anchor": "greedy"}
    assert resolve(spec, games=6)["round_robin"]["games"] == 6  # --games sets every match's game count
    only = resolve(spec, rows=["round-robin"])
    assert only["rows"] == [] and only["round_robin"]["agents"][0] == "random"
    assert resolve(spec, rows=["greedy-capture-0"])["round_robin"] is None
    with pytest.raises(ExperimentError, match="rows: greedy-capture-0, round-robin"):
        resolve(spec, rows=["nope"])


@pytest.mark.parametrize("change, message", [
    (('round_robin = ["random", "greedy", "minimax:depth=1"]', 'round_robin = ["random", "random"]'), "listed twice"),
    (('round_robin = ["random", "greedy", "minimax:depth=1"]', 'round_robin = ["random"]'), "at least 2 agents"),
    (('round_robin_anchor = "greedy"', 'round_robin_anchor = "expert"'), "round_robin_anchor: 'expert'"),
    (('id = "greedy-capture-0"', 'id = "round-robin"'), "names the round robin"),
    (("games = 2", "games = 2\nround_robin_games = 3"), "field 'round_robin_games': .*even"),
    (('kind = "match"', 'kind = "decision-time"\nsimulations = [4]'), "only a match experiment"),
])
def test_bad_round_robins_name_the_field(tmp_path, change, message):
    with pytest.raises(ExperimentError, match=message):
        _spec(tmp_path, RR_SPEC.replace(*change))


def test_a_round_robin_without_rows_is_a_valid_experiment():
    spec = ExperimentSpec(name="zoo", title="zoo", round_robin=["random", "greedy"])
    assert resolve(spec)["rows"] == [] and resolve(spec)["round_robin"]["games"] == spec.games
    with pytest.raises(ValueError, match="at least one row"):
        ExperimentSpec(name="zoo", title="zoo")


def test_a_round_robin_experiment_end_to_end_and_resume(tmp_path):
    spec = _spec(tmp_path)
    out = tmp_path / "run"
    result = run_experiment(spec, out, workers=0, seed=5, progress=False, command="python cli.py experiment rr")
    rr = result["round_robin"]
    assert result["complete"] and rr["complete"] and rr["dir"] == "round-robin"
    t = rr["tournament"]
    assert t["agents"] == ["random", "greedy", "minimax:depth=1"] and len(t["pairs"]) == 3
    assert all(p["games"] == 2 for p in t["pairs"])
    rated = {r["agent"]: r for r in t["ratings"]["ratings"]}
    assert rated["greedy"]["elo"] == 0 and all(r["games"] == 4 for r in rated.values())  # the anchor at 0
    assert (out / "round-robin" / "tournament.json").exists() and (out / "round-robin" / "payoff.png").exists()
    table = (out / "table.md").read_text()
    assert "## Round robin: 3 agents, 2 games per pair" in table and "| `minimax:depth=1` |" in table
    assert "| greedy, no capture weight | `greedy:capture=0` | `greedy` |" in table
    records = sorted((out / "round-robin" / "pairs").glob("*/games/*.json"))
    assert len(records) == 6
    stamps = [p.stat().st_mtime_ns for p in records]
    with pytest.raises(ExperimentError, match="field 'round_robin'"):
        run_experiment(_spec(tmp_path, RR_SPEC.replace('"minimax:depth=1"]', '"minimax:depth=2"]')), out, workers=0,
                       seed=5, progress=False, resume=True)
    again = run_experiment(spec, out, workers=0, seed=5, progress=False, resume=True)
    assert [p.stat().st_mtime_ns for p in records] == stamps  # no game played again
    assert again["round_robin"]["tournament"]["pairs"] == t["pairs"]
    assert json.loads((out / "result.json").read_text())["round_robin"]["agents"] == rr["agents"]


def test_alphadou_heuristic_weight_rows_differ_only_in_the_weight_they_ablate():
    spec = load_spec("alphadou")
    assert spec.round_robin[:3] == ["random", "greedy", "minimax:depth=2"] and "jfa" in spec.round_robin
    rows = {r["id"]: r for r in resolve(spec)["rows"]}
    expected = {"greedy-capture-0": {"capture": (0.0, 5.0)}, "greedy-capture-20": {"capture": (20.0, 5.0)},
                "greedy-prior-0": {"prior_weight": (0.0, 1.0)}, "minimax-material-1": {"material": (1.0, 4.0)}}
    for rid, diff in expected.items():
        row = rows[rid]
        assert config_diff(agent_config(row["a"]), agent_config(row["b"])) == diff, rid
