"""Run snapshots (``python cli.py snapshot``, ``train.learning.snapshot``): the copy resumes where the run
stopped, keeps the run's totals and its curve's lineage, plays the curve's nets from its new place, and
bad input is one line with exit status 2."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from cli import app
from train.jobs.rundir import lock_dir
from train.learning.config import load_config
from train.learning.curve import read_points
from train.learning.pipeline import read_metrics, run_pipeline
from train.learning.snapshot import snapshot

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:NetEvaluator has no upper net")]
runner = CliRunner()
MICRO = [
    "nets.blocks=1", "nets.channels=8", "nets.value_hidden=8", "model=upper",
    "selfplay.games=2", "selfplay.search.simulations=2", "selfplay.search.threads=1", "selfplay.temperature_plies=4",
    "pretrain.games=2", "pretrain.steps=2", "pretrain.batch_size=8",
    "learner.steps=2", "learner.batch_size=8", "gate.max_games=0",
    'curve.anchors=["random"]', "curve.anchor=random", "curve.games=2", "curve.every=1", "curve.checkpoints=1",
    "ruleset.max_battle_plies=20", "workers=0", "replay.window=600",
]


def _config(*extra: str):
    return load_config(None, [*MICRO, *extra])


@pytest.fixture(scope="module")
def two_iterations(tmp_path_factory):
    base = tmp_path_factory.mktemp("snap")
    run = base / "run"
    run_pipeline(_config("iterations=2"), run, progress=False)
    return base, run


def test_snapshot_resumes_with_totals_and_lineage(two_iterations):
    base, run = two_iterations
    state = json.loads((run / "state.json").read_text())
    assert state["games"] == 4 and state["completed_iterations"] == 2
    dest = base / "snap"
    info = snapshot(run, dest)
    assert info["games"] == 4 and info["archived_games"] == 4 and info["archived_samples"] == state["samples"] > 0
    assert not (dest / "shards").exists() and not (dest / "records").exists()
    assert not any(str(run.resolve()) in f.read_text() for f in dest.rglob("*.json*"))  # no machine paths
    assert not list((dest / "curve").glob("i*/random"))  # finished curve matches dropped, results kept
    assert sorted(p.name for p in (dest / "checkpoints").iterdir()) == [
        "upper-i0000.safetensors", "upper-i0001.safetensors", "upper-i0002.opt.pt", "upper-i0002.safetensors"]
    # the copy moves: its curve plays its own nets, wherever it lives
    moved = base / "elsewhere" / "snap"
    shutil.move(str(dest), str(moved))
    points = read_points(moved / "curve")
    assert [p["iteration"] for p in points] == [0, 1, 2]
    assert all(p["recipe"]["options"]["upper"].startswith(str(moved.resolve())) for p in points)
    result = run_pipeline(_config("iterations=3"), moved, resume=True, progress=False)
    assert result["state"]["completed_iterations"] == 3
    assert result["state"]["games"] == 6 and result["state"]["archived_games"] == 4
    last = read_points(moved / "curve")[-1]
    assert last["iteration"] == 3 and [r["b"] for r in last["results"]] == ["random", "upper@i0002"]
    starts = [e for e in read_metrics(moved / "metrics.jsonl") if e["event"] == "run_start"]
    assert starts[-1]["games"] == 4  # the totals survive the dropped records
    # a second snapshot over the first replaces it whole; with --shards the replay window is kept
    (moved / "stale.txt").write_text("x")
    info = snapshot(moved, base / "snap2", shards=True)
    assert (base / "snap2" / "shards" / "upper").is_dir() and info["archived_samples"] < info["samples"]
    (base / "snap2" / "stale.txt").write_text("x")
    snapshot(moved, base / "snap2")
    assert not (base / "snap2" / "stale.txt").exists() and not (base / "snap2" / "shards").exists()


def test_snapshot_of_a_run_stopped_before_training(two_iterations, tmp_path, monkeypatch):
    """A run stopped after an iteration's self-play resumes from its snapshot: the iteration's shards go along."""
    from train.learning.pipeline import Pipeline

    _, run = two_iterations
    shutil.copytree(run, tmp_path / "run")
    real = Pipeline.phase_train

    def stop(self, it, kind):
        raise KeyboardInterrupt("stopped before training")

    monkeypatch.setattr(Pipeline, "phase_train", stop)
    with pytest.raises(KeyboardInterrupt):
        run_pipeline(_config("iterations=3"), tmp_path / "run", resume=True, progress=False)
    assert json.loads((tmp_path / "run" / "state.json").read_text())["phase"] == "train"
    snapshot(tmp_path / "run", tmp_path / "snap")
    assert sorted(p.name for p in (tmp_path / "snap" / "shards" / "upper").iterdir()) == [
        "i0003-g0000.npz", "i0003-g0001.npz"]
    monkeypatch.setattr(Pipeline, "phase_train", real)
    result = run_pipeline(_config("iterations=3"), tmp_path / "snap", resume=True, progress=False)
    assert result["state"]["completed_iterations"] == 3 and result["state"]["games"] == 6


def test_snapshot_cli_errors_are_one_line(two_iterations, tmp_path):
    base, run = two_iterations
    (tmp_path / "not-a-run").mkdir()
    (tmp_path / "not-a-run" / "x.txt").write_text("keep me")
    res = runner.invoke(app, ["snapshot", str(run), str(tmp_path / "not-a-run")])
    assert res.exit_code == 2 and "error: dest:" in res.output and "Traceback" not in res.output
    assert (tmp_path / "not-a-run" / "x.txt").read_text() == "keep me"
    res = runner.invoke(app, ["snapshot", str(run), str(run / "inside")])
    assert res.exit_code == 2 and "inside the run directory" in res.output
    res = runner.invoke(app, ["snapshot", str(tmp_path / "not-a-run"), str(tmp_path / "out")])
    assert res.exit_code == 2 and "no state.json" in res.output and not (tmp_path / "not-a-run" / ".lock").exists()
    with lock_dir(run):
        res = runner.invoke(app, ["snapshot", str(run), str(tmp_path / "out")])
    assert res.exit_code == 2 and "in use by" in res.output and not (tmp_path / "out").exists()
    res = runner.invoke(app, ["snapshot", str(run), str(tmp_path / "out")])
    assert res.exit_code == 0 and "games archived" in res.output
    # the snapshot's lineage plays the run's: two populations of nets and their RPP
    res = runner.invoke(app, ["population", str(run), "--source", "curve", "--versus", str(tmp_path / "out"),
                              "-n", "2", "--out", str(tmp_path / "rr")])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "rr" / "tournament.json").read_text())
    assert data["agents"] == [f"{n}/upper@i000{i}" for n in ("run", "out") for i in range(3)]
    assert data["populations"]["a"] == data["agents"][:3] and "RPP of run against out:" in res.output
    assert "RP-ELO of run/upper@i0002 against out's players:" in res.output
    assert "RP-ELO of out/upper@i0002 against out's players:" in res.output
    res = runner.invoke(app, ["population", str(run), "--source", "curve", "--versus", str(run), "-n", "2"])
    assert res.exit_code == 2 and "error: --versus:" in res.output


def test_a_branch_changes_one_field_and_says_so(two_iterations, tmp_path):
    """``snapshot --set``: the copy resumes with the field changed, its metrics name the parent and the
    change, the parent is untouched; model and net changes, and bad values, are one-line errors."""
    _, run = two_iterations
    parent_config = (run / "config.json").read_text()
    res = runner.invoke(app, ["snapshot", str(run), str(tmp_path / "b"), "--shards",
                              "--set", "learner.steps=3", "--set", "selfplay.temperature_plies=6"])
    assert res.exit_code == 0, res.output
    assert "branch: learner.steps 2 -> 3" in res.output and "branch: selfplay.temperature_plies 4 -> 6" in res.output
    assert (run / "config.json").read_text() == parent_config
    stored = json.loads((tmp_path / "b" / "config.json").read_text())
    assert stored["learner"]["steps"] == 3 and stored["selfplay"]["temperature_plies"] == 6
    branch_lines, parent_lines = (tmp_path / "b" / "config.json").read_text().splitlines(), parent_config.splitlines()
    assert len(branch_lines) == len(parent_lines)  # written as the pipeline writes it: only the changes differ
    assert {b.strip().rstrip(",") for a, b in zip(parent_lines, branch_lines) if a != b} == {
        '"steps": 3', '"temperature_plies": 6'}
    assert stored["device"] == json.loads(parent_config)["device"]  # kept: validated on the CPU here
    (event,) = [e for e in read_metrics(tmp_path / "b" / "metrics.jsonl") if e["event"] == "branch"]
    assert event["parent"] == run.name and event["iteration"] == 3
    assert event["changes"] == {"learner.steps": [2, 3], "selfplay.temperature_plies": [4, 6]}
    result = run_pipeline(_config("iterations=3", "learner.steps=3", "selfplay.temperature_plies=6"),
                          tmp_path / "b", resume=True, progress=False)
    assert result["state"]["completed_iterations"] == 3
    with pytest.raises(Exception, match="learner.steps"):  # the plain resume still refuses the old config
        run_pipeline(_config("iterations=3"), tmp_path / "b", resume=True, progress=False)
    for bad, message in (("nets.channels=16", "error: --set nets.channels: a branch keeps"),
                         ("model=slm", "error: --set model: a branch keeps"),
                         ("device=cpu", "error: --set device: a branch keeps the run's device"),
                         ("learner.steps=-1", "learner.steps"), ("learner.steps", "expected KEY=VALUE")):
        res = runner.invoke(app, ["snapshot", str(run), str(tmp_path / "bad"), "--set", bad])
        assert res.exit_code == 2 and message in res.output and "Traceback" not in res.output, (bad, res.output)
        assert not (tmp_path / "bad").exists()
