"""Tests of ``lab.distill``: the teacher's targets against a direct per-sample softmax of its logits."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from core.rules import Ruleset
from lab.distill import main, teacher_targets
from nets.config import preset
from nets.model import build
from train.learning.samples import Samples, read_shard
from train.learning.supervised import samples_from_record
from train.matches.arena import play_game


@pytest.fixture(scope="module")
def record():
    return play_game("expert", "expert", ruleset=Ruleset(max_battle_plies=12), white_seed=3, black_seed=4)


@pytest.fixture(scope="module")
def teacher():
    torch.manual_seed(0)
    net = build(preset("upper", "tiny").model_copy(update={"blocks": 1, "channels": 8, "value_hidden": 8}))
    return net.eval()


@pytest.mark.parametrize("batch", [1, 7, 512])
def test_targets_are_the_teachers_softmax_over_each_samples_actions(record, teacher, batch):
    samples = samples_from_record(record, "upper")
    assert len(samples) > 0
    out = teacher_targets(teacher, samples, batch=batch)
    assert np.array_equal(out.pi_idx, samples.pi_idx) and np.array_equal(out.pi_off, samples.pi_off)
    assert np.array_equal(out.planes, samples.planes)
    for i in range(len(samples)):
        with torch.no_grad():
            logits, value = teacher(torch.tensor(samples.planes[i:i + 1], dtype=torch.float32))
        idx = samples.pi_idx[samples.pi_off[i]:samples.pi_off[i + 1]]
        x = [float(logits[0, a]) for a in idx]
        m = max(x)
        want = [math.exp(v - m) / sum(math.exp(u - m) for u in x) for v in x]
        got = out.pi_val[samples.pi_off[i]:samples.pi_off[i + 1]]
        assert got == pytest.approx(want, abs=1e-5)
        assert out.z[i] == pytest.approx(float(value[0]), abs=1e-5)


def test_bad_input(record, teacher):
    samples = samples_from_record(record, "upper")
    with pytest.raises(ValueError, match="batch"):
        teacher_targets(teacher, samples, batch=0)
    with pytest.raises(ValueError, match="upper"):
        teacher_targets(teacher, Samples.empty("slm"))
    off = samples.pi_off.copy()
    off[1] = 0  # the first sample lists no action
    bare = Samples("upper", samples.planes, samples.z, off, samples.pi_idx, samples.pi_val)
    with pytest.raises(ValueError, match="at least one listed action"):
        teacher_targets(teacher, bare)


def test_cli_writes_one_shard_per_record_and_resumes(tmp_path, record, teacher, capsys):
    from core.records import write_record
    from nets.io import save

    net_file = tmp_path / "teacher.safetensors"
    save(teacher, teacher.config, net_file)
    games = tmp_path / "games"
    games.mkdir()
    write_record(record, games / "g0.json")
    out = tmp_path / "out"
    assert main([str(net_file), str(games), "--out", str(out)]) == 0
    shards = sorted(out.glob("*.npz"))
    assert len(shards) == 1
    got = read_shard(shards[0])
    want = teacher_targets(teacher, samples_from_record(record, "upper"))
    assert np.allclose(got.pi_val, want.pi_val, atol=1e-6) and np.allclose(got.z, want.z, atol=1e-6)
    capsys.readouterr()
    assert main([str(net_file), str(games), "--out", str(out)]) == 0  # resumed: nothing left to do
    assert capsys.readouterr().out == ""
    assert main([str(net_file), str(tmp_path / "none"), "--out", str(out)]) == 2
    assert main([str(net_file), "--out", str(out)]) == 2  # no input
    assert "error: " in capsys.readouterr().err
    assert main([str(net_file), str(games), "--out", str(out), "--batch", "0"]) == 2
    assert main([str(net_file), str(games), "--out", str(out), "--chunk", "0"]) == 2
    assert main([str(net_file), str(games), "--out", str(out), "--workers", "-1"]) == 2


def test_cli_chunks_records_and_converts_them_in_workers(tmp_path, record, teacher, monkeypatch):
    import train.jobs.workers as workers
    from core.records import write_record
    from nets.io import save
    from train.learning.samples import concat

    made, closed = [], []

    def spy(n, *args, **kwargs):  # one pool for all chunks, closed at the end
        runner = real(n, *args, **kwargs)
        close = runner.close
        runner.close = lambda *a, **k: (closed.append(n), close(*a, **k))
        made.append(n)
        return runner

    real = workers.make_runner
    monkeypatch.setattr(workers, "make_runner", spy)

    net_file = tmp_path / "teacher.safetensors"
    save(teacher, teacher.config, net_file)
    games = tmp_path / "games"
    games.mkdir()
    for i in range(3):
        write_record(record, games / f"g{i}.json")
    out = tmp_path / "out"
    assert main([str(net_file), str(games), "--out", str(out), "--chunk", "2", "--workers", "2"]) == 0
    shards = sorted(out.glob("*.npz"))
    assert [f.name for f in shards] == ["00001-g0.npz", "00002-g2.npz"]  # games 0-1, then game 2
    assert made == [2] and closed == [2]
    one = teacher_targets(teacher, samples_from_record(record, "upper"))
    for f, copies in zip(shards, (2, 1)):
        got, want = read_shard(f), concat([one] * copies, kind="upper")
        assert np.array_equal(got.pi_idx, want.pi_idx) and np.array_equal(got.pi_off, want.pi_off)
        assert np.allclose(got.pi_val, want.pi_val, atol=1e-6) and np.allclose(got.z, want.z, atol=1e-6)
    assert main([str(games / "g0.json"), str(games), "--out", str(out)]) == 2


def test_cli_relabels_shards_and_skips_other_kinds(tmp_path, record, teacher):
    from nets.io import save
    from train.learning.samples import write_shard

    net_file = tmp_path / "teacher.safetensors"
    save(teacher, teacher.config, net_file)
    samples = samples_from_record(record, "upper")
    written = Samples("upper", samples.planes, np.full(len(samples), 0.5, np.float32), samples.pi_off,
                      samples.pi_idx, np.ones_like(samples.pi_val))  # targets the teacher must replace
    shards = tmp_path / "run" / "shards"
    write_shard(shards / "upper" / "i0001-g0000.npz", written)
    write_shard(shards / "lower" / "i0001-g0000.npz", samples_from_record(record, "lower"))
    out = tmp_path / "out"
    assert main([str(net_file), "--shards", str(shards), "--out", str(out)]) == 0
    got = [read_shard(f) for f in sorted(out.glob("*.npz"))]
    assert len(got) == 1
    want = teacher_targets(teacher, samples)
    assert np.array_equal(got[0].pi_idx, samples.pi_idx)
    assert np.allclose(got[0].pi_val, want.pi_val, atol=1e-6) and np.allclose(got[0].z, want.z, atol=1e-6)
    assert main([str(net_file), "--shards", str(tmp_path / "nothing-*.npz"), "--out", str(out)]) == 2
