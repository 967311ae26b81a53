"""``train.learning.concurrent``: the learner that trains and publishes nets beside self-play
(``learner.mode = "concurrent"``)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from cli import app
from nets.io import read_metadata
from train.jobs.rundir import RunPaths, read_metrics
from train.learning.concurrent import learner_checkpoint, learner_loop, train_start
from train.learning.config import ConfigError, load_config
from train.learning.learner import Learner
from train.learning.samples import SampleBuilder, write_shard

MICRO = [
    "nets.blocks=1", "nets.channels=8", "nets.value_hidden=8",
    "selfplay.games=3", "selfplay.search.simulations=2", "selfplay.search.threads=1", "selfplay.temperature_plies=4",
    "pretrain.enabled=false", "learner.steps=2", "learner.batch_size=8",
    "gate.simulations=2", "gate.search_threads=1", "gate.max_games=0", "curve.every=0",
    "ruleset.max_battle_plies=20", "workers=0", "replay.window=600",
    "learner.mode=concurrent", "learner.publish_every_samples=1",
]
pytestmark = pytest.mark.filterwarnings("ignore:NetEvaluator has no upper net")


def _extra(path: Path) -> dict:
    return json.loads(read_metadata(path)["extra"])


@pytest.mark.parametrize("override, field", [
    ("learner.mode=bogus", "learner.mode"),
    ("learner.publish_every_samples=0", "learner.publish_every_samples"),
    ("learner.publish_every_samples=1000000000", "learner.publish_every_samples"),
    ("learner.mode=concurrent", "learner.mode"),  # with gate.max_games > 0: every published net plays ungated
])
def test_concurrent_config_errors_name_the_field(override, field):
    with pytest.raises(ConfigError, match=f"'{field}'"):
        load_config(None, [override])
    cfg = load_config(None, ["learner.mode=concurrent", "gate.max_games=0"])
    assert cfg.learner.mode == "concurrent" and cfg.learner.publish_every_samples == 2000
    assert load_config().learner.mode == "alternate"


def test_the_new_fields_are_in_the_docs_field_table():
    text = (Path(__file__).resolve().parent.parent / "docs" / "training.md").read_text(encoding="utf-8")
    table = text.split("## Configuration fields", 1)[1]
    for field in ("learner.mode", "learner.publish_every_samples"):
        assert f"``{field}``" in table, field


def test_cli_bad_learner_mode_is_one_error_line_exit_2(tmp_path):
    result = CliRunner().invoke(app, ["selfplay", "--run-dir", str(tmp_path / "r"), "--set", "learner.mode=bogus"])
    assert result.exit_code == 2
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "learner.mode" in lines[0]
    assert not (tmp_path / "r").exists()


class _Arrivals:
    """A stop signal that writes a shard at each of its first waits (self-play games finishing) and is set
    once the learner has published ``blocks`` nets."""

    def __init__(self, shards: Path, sizes: list[int], metrics: Path, blocks: int):
        self.shards, self.sizes, self.metrics, self.blocks = shards, list(sizes), metrics, blocks
        self.waits = 0

    def published(self) -> int:
        return sum(e["event"] == "learner_publish" for e in read_metrics(self.metrics))

    def is_set(self) -> bool:
        return self.published() >= self.blocks or self.waits > 50

    def wait(self, timeout=None) -> bool:
        self.waits += 1
        if self.sizes:
            g = len(list(self.shards.glob("i0001-*.npz")))
            _shard(self.shards / f"i0001-g{g:04d}.npz", self.sizes.pop(0), 1000 + 100 * g)
        return self.is_set()


def _shard(path: Path, n: int, start: int) -> None:
    b = SampleBuilder("slm")
    for i in range(start, start + n):
        b.add_policy(np.zeros((14, 14, 14), np.float32), [i % 196, (i + 7) % 196], [3, 1], (i % 3) - 1)
    write_shard(path, b.build())


def test_learner_loop_publishes_a_net_per_block_of_new_samples(tmp_path):
    """In-process: the shards on disk at the start do not count; 6 + 5 new samples make one block of
    ``learner.publish_every_samples = 10``, 4 + 7 the next; each block trains ``learner.steps`` steps,
    saves the learner's checkpoint and copies it over the best net, and logs ``learner_publish``."""
    cfg = load_config(None, [*MICRO, "learner.publish_every_samples=10", "learner.steps=3"])
    run = tmp_path / "run"
    paths = RunPaths(run)
    shards = paths.shards("slm")
    _shard(shards / "i0000-g0000.npz", 20, 0)  # before the learner starts
    start = run / "checkpoints" / "slm-i0000.safetensors"
    Learner(cfg.nets.net_config("slm"), cfg.learner).save(start, extra={"iteration": 0}, optimizer=False)
    stop = _Arrivals(shards, [6, 5, 4, 7], paths.metrics, blocks=2)
    out = learner_loop(run, cfg, "slm", 1, start, stop, poll_seconds=0.0)
    assert out == {"blocks": 2, "step": 6, "samples_seen": 22}
    events = read_metrics(paths.metrics)
    assert [e["event"] for e in events] == ["learner_start", "learner_publish", "learner_publish"]
    pubs = events[1:]
    assert [(p["block"], p["step"], p["new_samples"]) for p in pubs] == [(1, 3, 11), (2, 6, 11)]
    assert [p["window"] for p in pubs] == [31, 42] and all(p["seconds"] >= 0 for p in pubs)
    own = learner_checkpoint(paths, "slm")
    assert paths.best("slm").read_bytes() == own.read_bytes()  # the published net is the learner's
    assert own.with_name("slm.opt.pt").exists()
    assert _extra(own)["iteration"] == 1 and _extra(own)["step"] == 6
    # the train phase of iteration 1 continues it; another iteration's, or alternate mode, the run's latest
    assert train_start(paths, "checkpoints/slm-i0000.safetensors", "slm", 1, "concurrent") == own
    assert train_start(paths, "checkpoints/slm-i0000.safetensors", "slm", 2, "concurrent") == start
    assert train_start(paths, "checkpoints/slm-i0000.safetensors", "slm", 1, "alternate") == start


@pytest.mark.integration
def test_concurrent_pipeline_publishes_mid_phase_and_resumes(tmp_path, monkeypatch):
    """A tiny run in concurrent mode: the learner process publishes a net while the games are played (the
    first batch of games waits for it, so the later batches load it), the iteration still ends with its checkpoint
    named by state.json, and the run resumes into a second iteration."""
    from train.learning import selfplay
    from train.learning.pipeline import run_pipeline

    real = selfplay.selfplay_batch
    run = tmp_path / "run"

    def first_game_waits_for_a_net(batch):
        info = real(batch)
        if any(t["index"] == 0 for t in batch["tasks"]):  # in-process (workers = 0): hold the phase until a publish
            deadline = time.time() + 120
            while time.time() < deadline and not any(e["event"] == "learner_publish"
                                                     for e in read_metrics(run / "metrics.jsonl")):
                time.sleep(0.1)
        return info

    monkeypatch.setattr(selfplay, "selfplay_batch", first_game_waits_for_a_net)
    monkeypatch.setattr("train.learning.concurrent.POLL_SECONDS", 0.1)
    cfg = load_config(None, [*MICRO, "iterations=1", "selfplay.games_in_flight=1"])  # batches of 2 games
    result = run_pipeline(cfg, run, progress=False)
    assert result["reason"] == "iterations"
    events = read_metrics(run / "metrics.jsonl")
    names = [e["event"] for e in events]
    pubs = [e for e in events if e["event"] == "learner_publish"]
    assert pubs and all(p["iteration"] == 1 and p["kind"] == "slm" and p["step"] > 0 and p["window"] > 0
                        for p in pubs)
    # published before the last game ended, i.e. while self-play ran
    last_game = max(i for i, n in enumerate(names) if n == "game")
    assert names.index("learner_publish") < last_game
    stop = next(e for e in events if e["event"] == "learner_stop")
    assert stop["exitcode"] == 0 and not stop["terminated"]
    assert "learner_error" not in names
    train = next(e for e in events if e["event"] == "train")
    assert train["start"] == "learner/slm.safetensors"
    assert train["step"] == pubs[-1]["step"] + cfg.learner.steps  # the train phase continued the learner
    state = json.loads((run / "state.json").read_text())
    assert state["latest"]["slm"] == "checkpoints/slm-i0001.safetensors" and (run / state["latest"]["slm"]).exists()
    assert state["best"]["slm"]["iteration"] == 1  # gate.max_games = 0: accepted
    assert (run / "best" / "slm.safetensors").read_bytes() == (run / "checkpoints" / "slm-i0001.safetensors").read_bytes()
    # resume for a second iteration: its learner starts from iteration 1's checkpoint
    again = run_pipeline(load_config(None, [*MICRO, "iterations=2"]), run, resume=True, progress=False)
    assert again["reason"] == "iterations" and again["state"]["completed_iterations"] == 2
    assert (run / "checkpoints" / "slm-i0002.safetensors").exists()
    starts = [e for e in read_metrics(run / "metrics.jsonl") if e["event"] == "learner_start"]
    assert [s["iteration"] for s in starts] == [1, 2] and starts[1]["start"] == "checkpoints/slm-i0001.safetensors"
