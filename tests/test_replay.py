"""``train.learning.samples.ReplayWindow``: the incremental replay window equals ``load_window`` call after
call and decompresses only the shards it has not read."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import train.learning.samples as samples_mod
from train.learning.samples import ReplayWindow, SampleBuilder, Samples, ShardError, load_window, write_shard

PLANES = np.zeros((14, 14, 14), np.float32)


def _shard(path: Path, kind: str, n: int, start: int) -> None:
    """A shard of ``n`` samples numbered ``start, start + 1, ...`` (in ``z`` and the action or policy)."""
    b = SampleBuilder(kind)
    for i in range(start, start + n):
        if kind == "lower":
            b.add_lower(PLANES, i, i / 1000, group=i % 3 - 1)
        else:
            b.add_policy(PLANES, [i % 196, (i + 1) % 196], [1, i % 4], i / 1000)
    write_shard(path, b.build())


def _same(a: Samples, b: Samples) -> None:
    assert a.kind == b.kind and len(a) == len(b)
    for name in ("planes", "z", "pi_off", "pi_idx", "pi_val", "action", "group"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            np.testing.assert_array_equal(x, y, err_msg=name)


def _check(win: ReplayWindow, directory: Path, window: int, kind: str) -> None:
    got, files = win.update()
    want, want_files = load_window(directory, window, kind)
    _same(got, want)
    assert files == want_files
    biggest = max((len(samples_mod.read_shard(f)) for f in want_files), default=0)
    assert len(win) <= window + biggest  # memory: the window's shards only


@settings(max_examples=30, deadline=None)
@given(kind=st.sampled_from(["lower", "slm"]), window=st.integers(1, 40),
       iterations=st.lists(st.lists(st.integers(0, 9), min_size=1, max_size=4), min_size=1, max_size=4),
       order=st.randoms(use_true_random=False), every_shard=st.booleans())
def test_replay_window_equals_load_window_as_shards_arrive(kind, window, iterations, order, every_shard):
    """Shards of several iterations arrive (within an iteration in any order, as workers finish them); after
    each arrival (or each iteration) the window equals ``load_window`` on the directory, and a fresh window
    (a resumed run) does too."""
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "shards"
        win = ReplayWindow(d, window, kind)
        _check(win, d, window, kind)  # no directory yet: empty
        start = 0
        for it, sizes in enumerate(iterations, 1):
            games = list(enumerate(sizes))
            order.shuffle(games)
            for g, n in games:
                _shard(d / f"i{it:04d}-g{g:04d}.npz", kind, n, start + 100 * g)
                if every_shard:
                    _check(win, d, window, kind)
            start += 1000
            _check(win, d, window, kind)
        _check(ReplayWindow(d, window, kind), d, window, kind)


def _count_reads(monkeypatch) -> list[str]:
    """The names of the shards ``read_shard`` decompresses from now on, in order (monkeypatched)."""
    calls: list[str] = []
    real = samples_mod.read_shard

    def counting(path):
        calls.append(Path(path).name)
        return real(path)

    monkeypatch.setattr(samples_mod, "read_shard", counting)
    return calls


def test_second_update_decompresses_only_the_new_shards(tmp_path, monkeypatch):
    calls = _count_reads(monkeypatch)
    d = tmp_path / "shards"
    for g in range(4):
        _shard(d / f"i0001-g{g:04d}.npz", "lower", 5, 10 * g)
    win = ReplayWindow(d, 12, "lower")
    first, files = win.update()
    assert calls == ["i0001-g0003.npz", "i0001-g0002.npz", "i0001-g0001.npz"]  # 15 samples >= 12: g0000 not read
    assert win.reads == 3 and len(first) == 12
    calls.clear()
    for g in range(2):
        _shard(d / f"i0002-g{g:04d}.npz", "lower", 4, 100 + 10 * g)
    second, files = win.update()
    assert sorted(calls) == ["i0002-g0000.npz", "i0002-g0001.npz"] and sorted(win.last_read) == sorted(calls)
    assert [f.name for f in files] == ["i0001-g0003.npz", "i0002-g0000.npz", "i0002-g0001.npz"]  # g0002 let go
    _same(second, load_window(d, 12, "lower")[0])
    calls.clear()  # load_window's own reads
    win.update()
    assert calls == [] and win.last_read == []  # nothing new: nothing decompressed


def test_replay_window_errors_name_the_shard(tmp_path):
    d = tmp_path / "shards"
    _shard(d / "i0001-g0000.npz", "slm", 3, 0)
    with pytest.raises(ShardError, match="i0001-g0000.npz.*expected 'lower'"):
        ReplayWindow(d, 10, "lower").update()
    (d / "i0001-g0001.npz").write_bytes(b"not a shard")
    with pytest.raises(ShardError, match="i0001-g0001.npz"):
        ReplayWindow(d, 10, "slm").update()
    with pytest.raises(ValueError, match="at least 1"):
        ReplayWindow(d, 0, "slm")


@pytest.mark.integration
@pytest.mark.filterwarnings("ignore:NetEvaluator has no upper net")
def test_the_pipeline_decompresses_each_shard_once_across_iterations(tmp_path, monkeypatch):
    """Two iterations in one invocation: the second train phase reads only the second iteration's shards
    (its window, kept by the pipeline, already holds the first's)."""
    from train.learning.config import load_config
    from train.learning.pipeline import run_pipeline

    calls = _count_reads(monkeypatch)
    cfg = load_config(None, ["nets.blocks=1", "nets.channels=8", "nets.value_hidden=8", "selfplay.games=2",
                             "selfplay.search.simulations=2", "selfplay.search.threads=1",
                             "selfplay.temperature_plies=4", "pretrain.enabled=false", "learner.steps=1",
                             "learner.batch_size=8", "gate.max_games=0", "curve.every=0",
                             "ruleset.max_battle_plies=20", "workers=0", "replay.window=100000", "iterations=2"])
    run_pipeline(cfg, tmp_path / "run", progress=False)
    assert sorted(calls) == ["i0001-g0000.npz", "i0001-g0001.npz", "i0002-g0000.npz", "i0002-g0001.npz"]
    assert calls[2:] == ["i0002-g0001.npz", "i0002-g0000.npz"]  # newest first, as load_window reads
