"""Experiments as commands (train/experiments/: spec.py, run.py, tables.py): spec validation, plugin-only
ablations, unknown agents, a tiny match experiment end to end with resume, and a decision-time experiment with
a stub timer. Budgets are tiny: 2 games of cheap agents with a 20-ply battle cap."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cli import app
from train.experiments.run import run_experiment
from train.experiments.spec import (
    ExperimentError,
    ExperimentSpec,
    agent_config,
    agent_problems,
    config_diff,
    load_spec,
    resolve,
)

SMALL = {"slm_sims": 2, "hbm_sims": 2, "threads": 1}

USER_SPEC = """
name = "tiny"
title = "a user's ablation"
kind = "match"
games = 2
columns = ["wins", "draws", "losses", "win_rate", "se", "ci95", "white", "black", "time_a_battle"]
plots = ["win-rates", "ablation"]
rules = {max_battle_plies = 20, adjudicate = "stones"}

[params]
capture = 5.0

[[rows]]
id = "greedy"
label = "greedy"
a = "greedy:capture={capture}"
b = "random"

[[rows]]
id = "greedy-no-capture-bonus"
label = "greedy, no capture bonus"
a = "greedy:capture=0"
b = "random"
"""


def _spec(tmp_path, text=USER_SPEC, name="tiny.toml"):
    path = tmp_path / name
    path.write_text(text)
    return load_spec(path)


def test_table5_rows_differ_only_in_the_plugins_selected():
    spec = load_spec("table5")
    rows = {r["id"]: r for r in resolve(spec, SMALL)["rows"]}
    assert len({r["b"] for r in rows.values()}) == 1
    configs = {rid: agent_config(r["a"]) for rid, r in rows.items()}
    base = configs["both"]
    assert base["battle"]["battle"]["search"]["expansion_pruner"] == "prune.expansion"
    assert base["battle"]["battle"]["search"]["capture_pruner"] == "prune.capture"
    prefix = "battle.battle.search."
    assert config_diff(base, configs["no-expansion"]) == {prefix + "expansion_pruner": ("prune.expansion", None)}
    assert config_diff(base, configs["no-capture"]) == {prefix + "capture_pruner": ("prune.capture", None)}
    assert set(config_diff(base, configs["neither"])) == {prefix + "expansion_pruner", prefix + "capture_pruner"}


def test_a_user_spec_with_one_plugin_swapped_builds_agents_differing_in_that_plugin(tmp_path):
    text = """
name = "swap"
title = "swap one plugin"
[[rows]]
id = "base"
label = "base"
a = "mcts:sims=4,eval=uniform"
b = "random"
[[rows]]
id = "no-capture"
label = "no capture pruner"
a = "mcts:sims=4,eval=uniform,capture_pruner=none"
b = "random"
[[rows]]
id = "more-sims"
label = "more simulations"
a = "mcts:sims=8,eval=uniform"
b = "random"
"""
    rows = resolve(_spec(tmp_path, text))["rows"]
    a, b, c = (agent_config(r["a"]) for r in rows)
    assert config_diff(a, b) == {"search.capture_pruner": ("prune.capture", None)}
    assert "search.simulations" in config_diff(a, c)  # the comparison sees other changes too


def test_unknown_agents_are_reported_by_row_not_a_crash(tmp_path):
    assert agent_problems(resolve(load_spec("table4"), SMALL)) == []  # ShapeAgent exists (agent `shape`)
    spec = _spec(tmp_path, USER_SPEC.replace('a = "greedy:capture=0"', 'a = "shapez+expert"'))
    problems = agent_problems(resolve(spec))
    assert len(problems) == 1 and "row 'greedy-no-capture-bonus'" in problems[0] and "unknown agent 'shapez'" in problems[0]
    with pytest.raises(ExperimentError, match=r"unknown agent 'shapez'.*--rows greedy$"):
        run_experiment(spec, tmp_path / "t4", games=2, workers=0, progress=False)


def test_bad_specs_and_parameters_name_the_field(tmp_path):
    with pytest.raises(ExperimentError, match=r"field 'games': .*even"):
        _spec(tmp_path, USER_SPEC.replace("games = 2", "games = 3"))
    with pytest.raises(ExperimentError, match=r"field 'columns.0'"):
        _spec(tmp_path, USER_SPEC.replace('columns = ["wins"', 'columns = ["winz"'))
    with pytest.raises(ExperimentError, match="used twice"):
        _spec(tmp_path, USER_SPEC.replace('id = "greedy-no-capture-bonus"', 'id = "greedy"'))
    with pytest.raises(ExperimentError, match="not valid TOML"):
        _spec(tmp_path, "name = ")
    spec = _spec(tmp_path)
    with pytest.raises(ExperimentError, match="--param sims: .*parameters: capture"):
        resolve(spec, {"sims": 3})
    with pytest.raises(ExperimentError, match="--rows 'x'"):
        resolve(spec, rows=["x"])
    with pytest.raises(ExperimentError, match="placeholder \\{depth\\}"):
        resolve(ExperimentSpec(name="p", title="p", rows=[{"id": "r", "label": "r", "a": "minimax:depth={depth}",
                                                           "b": "random"}]))
    assert resolve(spec, {"capture": 2.5})["rows"][0]["a"] == "greedy:capture=2.5"


def test_a_match_experiment_end_to_end_and_resume(tmp_path):
    spec = _spec(tmp_path)
    out = tmp_path / "run"
    result = run_experiment(spec, out, workers=0, seed=3, progress=False, command="python cli.py experiment x")
    assert result["complete"] and [r["id"] for r in result["rows"]] == ["greedy", "greedy-no-capture-bonus"]
    for row in result["rows"]:
        s = row["stats"]
        assert s["games"] == 2 and s["wins"] + s["draws"] + s["losses"] == 2
        assert s["white"]["games"] == 1 and s["black"]["games"] == 1  # one game with each colour
        assert s["win_rate"] == pytest.approx((s["wins"] + s["draws"] / 2) / 2)
    assert json.loads((out / "result.json").read_text())["rows"][0]["stats"]["games"] == 2
    table = (out / "table.md").read_text()
    assert "| greedy | `greedy:capture=5.0` | `random` |" in table and "python cli.py experiment x" in table
    assert (out / "win-rates.png").stat().st_size > 0 and (out / "ablation.png").stat().st_size > 0
    records = sorted((out / "rows" / "greedy" / "games").glob("*.json"))
    stamps = [p.stat().st_mtime_ns for p in records]
    with pytest.raises(ExperimentError, match="--resume"):
        run_experiment(spec, out, workers=0, seed=3, progress=False)
    with pytest.raises(ExperimentError, match="field 'seed'"):
        run_experiment(spec, out, workers=0, seed=4, progress=False, resume=True)
    again = run_experiment(spec, out, workers=0, seed=3, progress=False, resume=True)
    assert [p.stat().st_mtime_ns for p in records] == stamps  # no game played again
    assert again["rows"] == result["rows"]


def test_a_decision_time_experiment_with_a_stub_timer_resumes_by_row(tmp_path):
    calls = []

    def timer(phase, sims, threads):
        calls.append((phase, sims, threads))
        return {"phase": phase, "simulations": sims, "threads": threads, "serial_seconds": sims / 100,
                "parallel_seconds": sims / 400, "reduction": 4.0}

    spec = load_spec("table3")
    out = tmp_path / "t3"
    result = run_experiment(spec, out, params={"threads": 4}, rows=["layout-400", "layout-800"], progress=False,
                            timer=timer)
    assert calls == [("layout", 400, 4), ("layout", 800, 4)]
    assert [r["stats"]["reduction"] for r in result["rows"]] == [4.0, 4.0]
    table = (out / "table.md").read_text()
    assert "| layout | 400 | 1.000 | 4.000 | 4.00 | 0.43 / 6.17 / 14.35 |" in table
    assert (out / "decision-time-layout.png").exists()
    run_experiment(spec, out, params={"threads": 4}, progress=False, timer=timer, resume=True)
    assert calls[2:] == [("layout", s, 4) for s in (1200, 1600, 2000)]  # measured rows are kept
    with pytest.raises(ExperimentError, match="field 'threads'"):
        run_experiment(spec, out, params={"threads": 2}, progress=False, timer=timer, resume=True)


def test_cli_list_and_errors(tmp_path):
    runner = CliRunner()
    listed = runner.invoke(app, ["experiment", "--list"])
    assert listed.exit_code == 0 and "table3" in listed.output and "table5" in listed.output
    assert "backups" in listed.output and "unknown agent" not in listed.output  # every built-in agent exists
    bad = tmp_path / "bad.toml"
    bad.write_text(USER_SPEC.replace('a = "greedy:capture=0"', 'a = "shapez+expert"'))
    for args, message in ((["experiment", "table5", "-p", "nope=1"], "--param nope"),
                          (["experiment", "nosuch"], "no such built-in experiment"),
                          (["experiment"], "give an experiment NAME"),
                          (["experiment", "--spec", str(bad), "-n", "2", "--out", str(tmp_path / "x")],
                           "unknown agent 'shapez'")):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert message in result.output and "Traceback" not in result.output


SQUARES_SPEC = """
name = "sq"
title = "squares"
kind = "match"
games = 2
steps = 30
bin_steps = 10
plots = ["squares", "win-rates"]
rules = {max_battle_plies = 20, adjudicate = "stones"}

[[rows]]
id = "random"
label = "random self-play"
measure = "squares"
a = "random"

[[rows]]
id = "match"
label = "greedy vs random"
a = "greedy"
b = "random"
"""


def test_new_squares_counts_the_movers_new_squares():
    from core import GameState
    from tests.test_search import SQUARE_WIN
    from train.experiments.squares import new_squares

    state = GameState.from_jfen(SQUARE_WIN)
    move = next(m for m in state.legal_moves() if m.path_str() == "c2-b2")  # completes a1-b1-a2-b2
    assert new_squares(state, state.apply(move)) == 1
    quiet = next(m for m in state.legal_moves() if m.path_str() == "n14-n13")
    assert new_squares(state, state.apply(quiet)) == 0


def test_squares_stats_by_hand():
    from train.experiments.squares import squares_stats

    s = squares_stats([{"bins": [1, 3]}, {"bins": [3, 1]}])
    assert s["runs"] == 2 and s["bins"] == [2.0, 2.0] and s["total"] == 4.0
    assert s["bins_se"] == pytest.approx([1.0, 1.0])  # sd sqrt(2) / sqrt(2)
    assert s["total_se"] == 0.0 and s["total_ci95"] == [4.0, 4.0]
    assert squares_stats([{"bins": [2, 0]}])["bins_se"] == [None, None]


def test_a_squares_row_beside_a_match_row_end_to_end_and_resume(tmp_path):
    spec = _spec(tmp_path, SQUARES_SPEC)
    out = tmp_path / "sq"
    result = run_experiment(spec, out, workers=0, seed=1, progress=False)
    sq, match = result["rows"]
    assert sq["measure"] == "squares" and sq["b"] is None and match["stats"]["games"] == 2
    stored = json.loads((out / "rows" / "random.json").read_text())
    assert [len(r["bins"]) for r in stored["runs"]] == [3, 3] and [r["seed"] for r in stored["runs"]] == [1, 2]
    assert sq["stats"]["runs"] == 2
    assert sq["stats"]["total"] == pytest.approx(sum(r["total"] for r in stored["runs"]) / 2)
    table = (out / "table.md").read_text()
    assert "| random self-play | `random` | 2 | " in table and "| greedy vs random |" in table
    assert (out / "squares.png").stat().st_size > 0 and (out / "win-rates.png").stat().st_size > 0
    stamp = (out / "rows" / "random.json").stat().st_mtime_ns
    again = run_experiment(spec, out, workers=0, seed=1, progress=False, resume=True)
    assert (out / "rows" / "random.json").stat().st_mtime_ns == stamp and again["rows"] == result["rows"]
    with pytest.raises(ExperimentError, match="needs agent 'b'"):
        _spec(tmp_path, SQUARES_SPEC.replace('b = "random"', ""))
    with pytest.raises(ExperimentError, match="remove 'b'"):
        _spec(tmp_path, SQUARES_SPEC.replace('a = "random"', 'a = "random"\nb = "random"'))


def test_backups_spec_builds_agents_differing_only_in_the_backup():
    spec = load_spec("backups")
    rows = {r["id"]: r for r in resolve(spec, {"sims": 2})["rows"]}
    assert agent_problems({"rows": list(rows.values())}) == []
    for mode in ("hybrid", "q", "sarsa"):
        diff = config_diff(agent_config(rows[f"squares-{mode}"]["a"]), agent_config(rows["squares-mean"]["a"]))
        assert diff == {"search.backup": (mode, "mean")}
    diff = config_diff(agent_config(rows["hybrid-vs-mean"]["a"]), agent_config(rows["hybrid-vs-mean"]["b"]))
    assert diff == {"search.backup": ("hybrid", "mean")}


# ---------------------------------------------------------------------------- issue 62: bounds, placeholders, lock
DT_SPEC = {"name": "dt", "title": "decision time", "kind": "decision-time", "simulations": [4], "threads": 2}


@pytest.mark.parametrize("change, message", [
    ({"steps": 10**24}, "field 'steps': Input should be less than or equal to 100000"),
    ({"games": 10**24}, "field 'games': Input should be less than or equal to 1000000"),
    ({"bin_steps": 30, "steps": 20}, "bin_steps (30) must be at most steps (20)"),
    ({"rows": [{"id": "r", "label": "r", "a": "random", "b": "random", "games": 10**24}]}, "field 'rows.0.games'"),
    ({"params": {"capture": 10**30}}, "field 'params.capture"),
    ({"name": "n" * 10_000}, "field 'name': String should have at most 64 characters"),
    ({"kind": "decision-time", "rows": [], "simulations": [10**24]}, "field 'simulations.0'"),
    ({"kind": "decision-time", "rows": [], "simulations": [4], "threads": 1000}, "field 'threads"),
    ({"rows": [{"id": "r", "label": "r", "a": "greedy:capture={capture:>20000000}", "b": "random"}]},
     "bad placeholder '{capture:>20000000}': a placeholder is {name}"),
    ({"rows": [{"id": "r", "label": "r", "a": "greedy:capture={capture!r}", "b": "random"}]}, "bad placeholder"),
    ({"rows": [{"id": "r", "label": "r", "a": "greedy:capture={0}", "b": "random"}]}, "bad placeholder '{0}'"),
    ({"rows": [{"id": "r", "label": "r", "a": "greedy:capture=}", "b": "random"}]}, "unmatched"),
])
def test_every_spec_field_is_bounded_when_loaded(tmp_path, change, message):
    """Issue 62 P: out-of-range values and format-string placeholders are refused by load_spec, before any
    work, in one short line naming the field (they used to overflow, hang, fail after minutes, or print
    a 20 MB line)."""
    data = {"name": "b", "title": "bounds", "games": 2, "params": {"capture": 5},
            "rows": [{"id": "r", "label": "r", "a": "greedy:capture={capture}", "b": "random"}], **change}
    path = tmp_path / "b.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ExperimentError) as info:
        load_spec(path)
    assert message in str(info.value) and len(str(info.value)) < 400 and "\n" not in str(info.value)


def test_placeholders_substitute_values_and_filled_values_are_bounded(tmp_path):
    spec = ExperimentSpec(**{**DT_SPEC, "params": {"t": 2}, "threads": "{t}"})
    assert resolve(spec)["threads"] == 2 and resolve(spec, {"t": 256})["threads"] == 256
    for value in (1000, 0, 10**24, "x"):
        with pytest.raises(ExperimentError, match=r"^field 'threads': .*1\.\.256"):
            resolve(spec, {"t": value})
    # a value is inserted as text, never interpreted: braces or format specs in it stay literal
    row = ExperimentSpec(name="p", title="p", params={"x": "{y}"}, rows=[{"id": "r", "label": "r", "a": "a={x}",
                                                                             "b": "random"}])
    assert resolve(row)["rows"][0]["a"] == "a={y}"
    with pytest.raises(ExperimentError, match="--games: must be an even number in 2..1000000"):
        resolve(row, games=10**24)


def test_experiment_seed_and_workers_have_the_other_commands_bounds(tmp_path):
    spec = _spec(tmp_path)
    with pytest.raises(ExperimentError, match=r"--seed: must be an integer in 0\.\.4294967295"):
        run_experiment(spec, tmp_path / "s", workers=0, seed=2**70, progress=False)
    assert not (tmp_path / "s").exists()
    runner = CliRunner()
    for args, message in ((["--workers", "1000"], "--workers"), (["--seed", str(2**70)], "--seed"),
                          (["--seed", "-1"], "--seed")):
        result = runner.invoke(app, ["experiment", "--spec", str(tmp_path / "tiny.toml"), "--out",
                                     str(tmp_path / "o"), *args])
        assert result.exit_code == 2 and message in result.stderr and len(result.stderr.splitlines()) == 1
        assert not (tmp_path / "o").exists()


def test_a_second_experiment_on_a_locked_directory_is_refused_at_once(tmp_path):
    """Issue 62 R: ``experiment --out`` holds the run-directory lock, as ``arena --out`` does; a second
    experiment on the directory is refused before it writes anything there."""
    from train.jobs.rundir import DirectoryInUse, lock_dir

    spec = _spec(tmp_path)
    out = tmp_path / "run"
    with lock_dir(out):
        with pytest.raises(DirectoryInUse, match="is in use by pid"):
            run_experiment(spec, out, workers=0, seed=3, progress=False)
        result = CliRunner().invoke(app, ["experiment", "--spec", str(tmp_path / "tiny.toml"), "--out", str(out)])
        assert result.exit_code == 2 and "is in use by pid" in result.stderr
        assert len(result.stderr.splitlines()) == 1
    assert not (out / "experiment.json").exists() and not (out / "result.json").exists()
    # the lock files alone do not make the directory "another run"
    assert run_experiment(spec, out, workers=0, seed=3, progress=False, rows=["greedy"])["complete"]
