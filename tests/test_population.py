"""Population self-play (issue 63; papers/002 JiangJun's Populationer): the ``[population]`` config, the
Nash buffer and payoff, opponent sampling among the top-n by Nash weight, replacement of the lowest
weight, RP-ELO, Nash clustering, save and resume, and a tiny end-to-end run."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from train.learning.config import ConfigError, load_config
from train.learning.population import Population, load_population, plan_opponents
from train.matches.nash import nash_clusters

pytestmark = pytest.mark.filterwarnings("ignore:NetEvaluator has no upper net")  # unit, but for the marked ones


def _results(a: str, b: str, wins: int, losses: int, draws: int = 0) -> list[dict]:
    return [{"a": a, "b": b, "score": s} for s in [1.0] * wins + [-1.0] * losses + [0.0] * draws]


def _population(tmp_path, n: int, size: int | None = None, top_n: int = 2, buffer: int = 64) -> Population:
    """``n`` members m0..m(n-1) (iterations 0..n-1), each with a dummy net file."""
    pop = Population("upper", size or n, buffer, top_n)
    tmp_path.mkdir(parents=True, exist_ok=True)
    src = tmp_path / "net.safetensors"
    src.write_bytes(b"net")
    for i in range(n):
        pop.join(f"upper@i{i:04d}", i, src, tmp_path)
    return pop


def _rps_plus_dominated(tmp_path, top_n: int = 2) -> Population:
    """A weighted rock-paper-scissors among m0, m1, m2 (mean scores 0.2, 0.6, 0.4 round the cycle:
    Nash (1/2, 1/3, 1/6)) and m3, beaten by every other member (Nash weight 0)."""
    pop = _population(tmp_path, 4, top_n=top_n)
    m = pop.labels
    res = (_results(m[0], m[1], 3, 2) + _results(m[1], m[2], 4, 1) + _results(m[2], m[0], 7, 3)
           + _results(m[0], m[3], 2, 0) + _results(m[1], m[3], 2, 0) + _results(m[2], m[3], 2, 0))
    pop.add_results(1, res)
    pop.solve()
    return pop


# ============================================================================ config
def test_population_config_defaults_and_bounds():
    cfg = load_config()
    assert cfg.selfplay.opponents == "self"
    assert (cfg.population.size, cfg.population.buffer, cfg.population.top_n) == (8, 64, 4)
    cfg = load_config(None, ["model=upper", "selfplay.opponents=population", "population.size=3",
                             "population.top_n=3", "population.buffer=1"])
    assert cfg.selfplay.opponents == "population" and cfg.population.top_n == 3


@pytest.mark.parametrize("override, field", [
    ("selfplay.opponents=league", "selfplay.opponents"),
    ("population.size=1", "population.size"),
    ("population.size=65", "population.size"),
    ("population.buffer=0", "population.buffer"),
    ("population.top_n=0", "population.top_n"),
    ("population.top_n=9", "'population.top_n': 9 is above population.size (8)"),
    ("population.rate=3", "population.rate"),
])
def test_population_config_errors_name_the_field(override, field):
    with pytest.raises(ConfigError, match=re.escape(field)):
        load_config(None, ["model=upper", override])


@pytest.mark.parametrize("model", ["lower", "cycle"])
def test_population_needs_a_searched_net(model):
    with pytest.raises(ConfigError, match="selfplay.opponents"):
        load_config(None, [f"model={model}", "selfplay.opponents=population",
                           "selfplay.search.capture_pruner=prune.capture"])


# ============================================================================ payoff, Nash, sampling
def test_payoff_is_the_antisymmetric_mean_score_and_uniform_without_results(tmp_path):
    pop = _population(tmp_path, 3)
    assert np.allclose(pop.weights, 1 / 3)  # no results yet: uniform
    pop.add_results(1, _results(pop.labels[0], pop.labels[1], 3, 1, 1))
    m, games = pop.payoff()
    assert m[0, 1] == pytest.approx(0.4) and m[1, 0] == pytest.approx(-0.4)
    assert games[0, 1] == games[1, 0] == 5 and m[2].tolist() == [0, 0, 0]
    assert np.allclose(m, -m.T)


def test_nash_weights_of_a_weighted_cycle(tmp_path):
    pop = _rps_plus_dominated(tmp_path)
    assert pop.weights == pytest.approx([1 / 2, 1 / 3, 1 / 6, 0.0], abs=1e-4)


def test_opponent_sampling_follows_the_nash_weights_among_the_top_n(tmp_path):
    pop = _rps_plus_dominated(tmp_path, top_n=2)
    labels, p = pop.opponents()
    assert labels == pop.labels[:2] and p == pytest.approx([0.6, 0.4], abs=1e-4)
    learner = "upper@i0009"  # not a member: every game has an opponent
    plan = plan_opponents(pop, seed=5, iteration=3, games=list(range(4000)), learner=learner, root=tmp_path)
    drawn = [plan[g]["label"] for g in range(4000)]
    share = drawn.count(labels[0]) / len(drawn)
    assert abs(share - 0.6) < 0.03  # binomial sd 0.008
    assert set(drawn) == set(labels)  # m2 (weight 1/6, not in the top 2) and m3 (0) never play
    assert [plan[g]["side"] for g in range(4)] == [1, 0, 1, 0]  # colours alternate: the learner is White in even games
    again = plan_opponents(pop, seed=5, iteration=3, games=[7, 11], learner=learner, root=tmp_path)
    assert again == {7: plan[7], 11: plan[11]}  # a resumed iteration draws the same opponents


def test_the_learner_itself_drawn_means_plain_selfplay(tmp_path):
    pop = _population(tmp_path, 1, size=2, top_n=1)
    plan = plan_opponents(pop, seed=0, iteration=1, games=[0, 1], learner=pop.labels[0], root=tmp_path)
    assert plan == {0: None, 1: None}


def test_a_full_population_replaces_its_lowest_nash_weight(tmp_path):
    pop = _rps_plus_dominated(tmp_path)
    m3 = pop.labels[3]
    assert (tmp_path / "population" / "upper-i0003.safetensors").exists()
    gone = pop.join("upper@i0010", 10, tmp_path / "net.safetensors", tmp_path)
    assert gone == m3 and m3 not in pop.labels and pop.labels[-1] == "upper@i0010"
    assert not (tmp_path / "population" / "upper-i0003.safetensors").exists()
    assert all(m3 not in (r["a"], r["b"]) for r in pop.results)
    assert pop.join("upper@i0010", 10, tmp_path / "net.safetensors", tmp_path) is None  # already a member


def test_replacement_among_equal_weights_takes_the_oldest(tmp_path):
    pop = _population(tmp_path, 3)
    assert pop.join("upper@i0005", 5, tmp_path / "net.safetensors", tmp_path) == "upper@i0000"


def test_results_are_added_once_per_iteration_and_the_buffer_keeps_the_newest(tmp_path):
    pop = _population(tmp_path, 2, buffer=3)
    a, b = pop.labels
    assert pop.add_results(1, _results(a, b, 2, 0))
    assert not pop.add_results(1, _results(a, b, 2, 0))  # the same iteration again (a resumed phase)
    assert pop.add_results(2, _results(b, a, 0, 2))  # b lost twice: a's newest two wins, in b's rows
    assert len(pop.results) == 3 and pop.results_through == 2
    assert [r["iteration"] for r in pop.results] == [1, 2, 2]


def test_rp_elo_is_the_elo_above_the_members_played(tmp_path):
    pop = _population(tmp_path, 3)
    a, b, c = pop.labels
    pop.add_results(1, _results(c, a, 3, 1) + _results(c, b, 3, 1))
    rp = pop.rp_elo(c)
    assert rp["rp_elo"] == pytest.approx(1500 + 400 * math.log10(3), abs=0.5)
    assert rp["ci95"][0] < rp["rp_elo"] < rp["ci95"][1] and rp["games"] == 8 and rp["opponents"] == 2
    assert pop.rp_elo(a)["rp_elo"] < 1500
    assert _population(tmp_path / "x", 2).rp_elo("upper@i0000") is None


def test_save_and_load_give_the_same_population(tmp_path):
    pop = _rps_plus_dominated(tmp_path)
    pop.save(tmp_path)
    back = load_population(tmp_path)
    assert back.to_dict() == pop.to_dict()
    assert back.opponents()[0] == pop.opponents()[0]
    (tmp_path / "population" / "population.json").write_text("{}")
    with pytest.raises(ValueError, match="population.json"):
        load_population(tmp_path)


# ============================================================================ Nash clustering
def test_nash_clusters_of_rock_paper_scissors_and_a_dominated_strategy():
    m = np.array([[0, 1, -1, 1], [-1, 0, 1, 1], [1, -1, 0, 1], [-1, -1, -1, 0]], float)
    assert nash_clusters(m) == [[0, 1, 2], [3]]
    assert [len(c) for c in nash_clusters(m)] == [3, 1]


def test_nash_clusters_of_a_transitive_chain_are_single_strategies():
    f = np.array([0.3, 2.0, 1.0, -1.0, 0.5])
    m = np.tanh(f[:, None] - f[None, :])
    assert nash_clusters(m) == [[1], [2], [4], [0], [3]]


def test_nash_clusters_reject_a_matrix_that_is_not_antisymmetric():
    with pytest.raises(ValueError, match="antisymmetric"):
        nash_clusters(np.ones((2, 2)))


def test_population_clusters_name_the_members(tmp_path):
    pop = _rps_plus_dominated(tmp_path)
    assert pop.clusters() == [pop.labels[:3], pop.labels[3:]]


# ============================================================================ the pipeline
def _micro(*extra):
    from tests.test_train import micro_config

    return micro_config("model=upper", "gate.max_games=0", "gate.expert_games=0", "curve.every=0",
                        "pretrain.enabled=false", "selfplay.value_drift=0", "selfplay.opponents=population",
                        "population.size=2", "population.top_n=2", *extra)


@pytest.fixture(scope="module")
def whole_run(tmp_path_factory):
    """A tiny population run of two iterations, not interrupted: ``(run directory, config)``."""
    from train.learning.pipeline import run_pipeline

    cfg = _micro("iterations=2")
    run = tmp_path_factory.mktemp("population") / "whole"
    run_pipeline(cfg, run, progress=False)
    return run, cfg


@pytest.mark.integration
def test_population_selfplay_end_to_end_resumes_after_a_kill(tmp_path, monkeypatch, whole_run):
    """Two iterations with opponents from the population; a kill while the second iteration's net joins
    and a resume give the population of an uninterrupted run; records, metrics and files are there."""
    from train.jobs.rundir import read_metrics
    from train.learning.pipeline import run_pipeline

    whole, cfg = whole_run

    run = tmp_path / "killed"
    real = Population.join
    calls = {"n": 0}

    def dying_join(self, label, *args, **kwargs):
        if label == "upper@i0002" and calls["n"] == 0:
            calls["n"] += 1
            raise KeyboardInterrupt
        return real(self, label, *args, **kwargs)

    monkeypatch.setattr(Population, "join", dying_join)
    with pytest.raises(KeyboardInterrupt):
        run_pipeline(cfg, run, progress=False)
    assert load_population(run).labels == ["upper@i0000", "upper@i0001"]
    run_pipeline(cfg, run, resume=True, progress=False)

    a, b = load_population(whole).to_dict(), load_population(run).to_dict()
    assert a == b
    assert a["members"][-1]["label"] == "upper@i0002" and len(a["members"]) == 2
    assert sorted(p.name for p in (run / "population").iterdir()) == [
        "population.json", "upper-i0001.safetensors", "upper-i0002.safetensors"]
    events = read_metrics(run / "metrics.jsonl")
    pops = [e for e in events if e["event"] == "population"]
    assert [e["iteration"] for e in pops] == [1, 2]
    assert pops[-1]["learner"] == "upper@i0001" and sum(pops[-1]["weights"].values()) == pytest.approx(1)
    meta = [json.loads(p.read_text())["metadata"] for p in sorted((run / "records" / "i0002").glob("g*.json"))]
    with_opp = [m["population"] for m in meta if "population" in m]
    assert all(m["learner"] == "upper@i0001" and m["opponent"] == "upper@i0000" for m in with_opp)
    assert pops[-1]["rp_elo_games"] == len(with_opp)  # before i0002 joined and i0000 (with them) left
    assert (pops[-1]["rp_elo"] is not None) == bool(with_opp) and a["results"] == []

    from train.learning.report import collect, population_lines, render_report

    assert "population.png" in [p.name for p in render_report(run, tmp_path / "report")]
    lines = population_lines(collect(run))
    assert len(lines) == 2 and lines[1].startswith("i0002 population: upper@i0001 ")


@pytest.mark.integration
def test_population_games_give_samples_of_the_learner_only(tmp_path):
    """A game against a member records samples only for the learner's side; plain self-play both."""
    from nets.model import build
    from search.batched import run_alone
    from train.learning.selfplay import Opponent, selfplay_evaluator, sub_seeds, upper_game

    cfg = _micro()
    torch_net = build(cfg.nets.net_config("upper")).eval()
    member = build(cfg.nets.net_config("upper")).eval()
    ev, ev_member = selfplay_evaluator(cfg, upper_net=torch_net), selfplay_evaluator(cfg, upper_net=member)
    try:
        game, builder, _ = run_alone(upper_game(cfg, 3, Opponent(ev_member, 1, sub_seeds(3)[3])), ev)
        alone, builder_alone, _ = run_alone(upper_game(cfg, 3), ev)
    finally:
        ev.close()
        ev_member.close()
    searched = [s.side for s, info in zip(game.states, game.search) if info is not None]
    assert len(builder.build()) == searched.count(0) > 0 and searched.count(1) > 0  # White: the learner
    searched_alone = [info for info in alone.search if info is not None]
    assert len(builder_alone.build()) == len(searched_alone)


@pytest.mark.integration
def test_population_and_exploitability_commands(whole_run, tmp_path):
    """``python cli.py population RUN`` plays the members' round robin and prints the payoff, the Nash
    weights and clusters; ``exploitability`` trains a best response against a frozen member alone and
    reports its win rate with a Wilson interval."""
    from typer.testing import CliRunner

    from cli import app

    run, cfg = whole_run
    runner = CliRunner()
    res = runner.invoke(app, ["population", str(run), "--games", "2", "--out", str(tmp_path / "rr")])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "rr" / "tournament.json").read_text())
    assert data["agents"] == ["upper@i0001", "upper@i0002"] and sum(data["cluster_sizes"]) == 2
    assert "Nash clusters (sizes" in res.output and "upper@i0001: Nash weight" in res.output
    res = runner.invoke(app, ["exploitability", str(run), "--net", "upper@i0001", "--games", "2", "--iterations", "1",
                              "--eval-games", "2", "--out", str(tmp_path / "ex"), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output.strip().splitlines()[-1])
    assert out["wins"] + out["draws"] + out["losses"] == 2 and len(out["wilson_ci95"]) == 2
    pop = load_population(tmp_path / "ex" / "br")
    assert pop.labels == ["fixed"] and {r["b"] for r in pop.results} <= {"fixed"} and pop.results_through == 1
    # a model directory (models/default's layout: config.toml and the nets) is measured the same way
    from train.learning.modeldir import CONFIG_FILE, config_toml

    model = tmp_path / "model"
    model.mkdir()
    (model / CONFIG_FILE).write_text(config_toml(cfg))
    res = runner.invoke(app, ["exploitability", str(model), "--net", str(run / "checkpoints" / "upper-i0001.safetensors"),
                              "--games", "2", "--iterations", "1", "--eval-games", "2", "--out", str(tmp_path / "mx"),
                              "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output.strip().splitlines()[-1])["games"] == 2 and not (model / "exploitability").exists()
    res = runner.invoke(app, ["exploitability", str(tmp_path / "rr"), "--net", "upper@i0001"])
    assert res.exit_code == 2 and "no config.json" in res.output


def test_round_robin_of_hand_made_players(tmp_path):
    from core.rules import Ruleset
    from train.matches.tournament import run_tournament

    data = run_tournament([("r", "random"), ("g", "greedy")], 2, workers=0, out_dir=tmp_path, progress=False,
                          ruleset=Ruleset(max_battle_plies=10, adjudicate="stones"), plots=False).data
    assert data["agents"] == ["r", "g"] and sorted(a for c in data["clusters"] for a in c) == ["g", "r"]
    assert data["pairs"][0]["a"] == "g" and data["pairs"][0]["dir"].endswith("g__vs__r")
    assert data["payoff"][0][1] + data["payoff"][1][0] == pytest.approx(1.0)
