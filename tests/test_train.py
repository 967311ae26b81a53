"""The training pipeline (train/learning/config.py, samples.py, learner.py, selfplay.py, supervised.py, pipeline.py,
report.py) and its CLI commands (selfplay, pretrain, gen-records, report).

Everything runs with micro nets (1 block, 8 channels), 2 simulations per move and battles capped at 20
plies with stone adjudication, so that whole iterations take seconds. One module-scoped run of the
pipeline (``model = cycle``, three iterations in-process: slm, upper, lower) feeds several tests.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from cli import app
from core.records import read_json
from core.rules import Ruleset
from core.state import GameState
from knowledge.agents import make_agent
from nets.encoding import encode_paths, encode_upper
from nets.features import state_planes
from nets.symmetry import action_map, transform_move, transform_state
from train.learning.config import ConfigError, load_config, validate_config
from train.learning.learner import Learner, learning_rate
from train.learning.pipeline import read_metrics, run_pipeline
from train.learning.samples import Batch, SampleBuilder, iteration_tail, load_window, make_batch, read_shard, write_shard
from train.learning.selfplay import game_seed

ROOT = Path(__file__).resolve().parent.parent
MICRO = [
    "nets.blocks=1", "nets.channels=8", "nets.value_hidden=8",
    "selfplay.games=2", "selfplay.search.simulations=2", "selfplay.search.threads=1", "selfplay.temperature_plies=4",
    "pretrain.games=2", "pretrain.steps=2", "pretrain.batch_size=8",
    "learner.steps=2", "learner.batch_size=8",
    "gate.simulations=2", "gate.search_threads=1", "gate.max_games=2", "gate.batch=2",
    'curve.anchors=["random","greedy"]', "curve.anchor=greedy",
    "ruleset.max_battle_plies=20", "workers=0", "replay.window=600",
]
RULES = Ruleset(max_battle_plies=20, adjudicate="stones")
runner = CliRunner()
# SLM searches evaluate the first battle positions without an upper net (value 0 by design).
pytestmark = pytest.mark.filterwarnings("ignore:NetEvaluator has no upper net")


def micro_config(*extra: str):
    return load_config(None, [*MICRO, *extra])


def _states(n_battle: int = 30) -> list[GameState]:
    """The positions of an expert game: the whole layout and ``n_battle`` battle positions."""
    agent = make_agent("expert", seed=3)
    s = GameState.initial(RULES.model_copy(update={"max_battle_plies": 300}))
    out = []
    while not s.is_terminal() and s.ply < 196 + n_battle:
        out.append(s)
        s = s.apply(agent.select(s))
    return out


@pytest.fixture(scope="module")
def states():
    return _states()


# ============================================================================ config
def test_default_config_file_matches_the_builtin_defaults():
    from train.learning.modeldir import read_model_config

    assert load_config(ROOT / "configs" / "default.toml") == load_config()
    validate_config(read_model_config(ROOT / "models" / "default"))  # what python cli.py selfplay continues with
    cfg = load_config()
    assert cfg.ruleset.max_battle_plies == 300 and cfg.ruleset.adjudicate == "stones"
    assert cfg.nets.preset == "tiny" and cfg.model == "slm"
    for path in sorted((ROOT / "configs").glob("*.toml")):  # every shipped configuration is valid
        validate_config(load_config(path))


@pytest.mark.parametrize("override, field", [
    ("selfplay.games=0", "selfplay.games"),
    ("selfplay.gamez=3", "selfplay.gamez"),
    ("gate.max_games=3", "gate.max_games"),
    ("ruleset.adjudicate=maybe", "ruleset.adjudicate"),
    ("replay.symmetries=[0,7]", "replay.symmetries"),
    ("learner.optimizer=lion", "learner.optimizer"),
    ("model=everything", "model"),
    ("workers=-1", "workers"),
    ("learner.trainable=trunk", "learner.trainable"),
])
def test_config_errors_name_the_field(override, field):
    with pytest.raises(ConfigError, match=f"'{field}'"):
        load_config(None, [override])


def test_config_is_frozen_and_round_trips_json(tmp_path):
    cfg = micro_config("model=cycle")
    with pytest.raises(Exception):
        cfg.seed = 3  # frozen
    assert validate_config(json.loads(cfg.model_dump_json())) == cfg
    assert [cfg.kind_for(i) for i in (1, 2, 3, 4)] == ["slm", "upper", "lower", "slm"]
    p = tmp_path / "c.json"
    p.write_text(json.dumps({"selfplay": {"games": 3}}))
    assert load_config(p).selfplay.games == 3


def test_cli_bad_config_exits_2_naming_the_field(tmp_path):
    result = runner.invoke(app, ["selfplay", "--run-dir", str(tmp_path / "r"), "--set", "selfplay.search.simulations=0"])
    assert result.exit_code == 2
    assert "selfplay.search.simulations" in result.output and "Traceback" not in result.output
    result = runner.invoke(app, ["selfplay", "--run-dir", str(tmp_path / "r"), "--set", "nonsense"])
    assert result.exit_code == 2 and "KEY=VALUE" in result.output


def test_learning_rate_schedules():
    cfg = load_config().learner
    assert learning_rate(cfg, 0, 100) == pytest.approx(cfg.lr)
    assert learning_rate(cfg, 100, 100) == pytest.approx(cfg.lr_min)
    assert learning_rate(cfg, 50, 100) == pytest.approx((cfg.lr + cfg.lr_min) / 2)
    step = cfg.model_copy(update={"schedule": "step", "step_size": 10, "gamma": 0.5})
    assert learning_rate(step, 25, 100) == pytest.approx(cfg.lr / 4)


# ============================================================================ samples
def _policy_samples(kind: str, states, rng) -> SampleBuilder:
    b = SampleBuilder(kind)
    for s in states:
        if kind == "slm" and s.phase == 0 and len(s.placements()) > 1:
            pts = np.array(s.placements())
            b.add_policy(state_planes(s), pts, rng.random(len(pts)), float(rng.choice([-1, 1])))
        elif kind == "upper" and s.phase == 1:
            ps = s.paths()
            acts = encode_paths(ps.pts, ps.off, ps.jump, ps.m)
            b.add_policy(state_planes(s), acts, rng.random(len(acts)), float(rng.choice([-1, 1])))
        elif kind == "lower" and s.phase == 1:
            b.add_lower(state_planes(s), int(rng.integers(48804)), float(rng.choice([-1, 1])))
    return b


@pytest.mark.parametrize("kind", ["slm", "upper", "lower"])
def test_shard_round_trip(tmp_path, states, kind):
    samples = _policy_samples(kind, states, np.random.default_rng(1)).build({"game": 7})
    assert len(samples) > 10
    path = write_shard(tmp_path / "s" / "i0001-g0000.npz", samples)
    back = read_shard(path)
    assert back.kind == kind and back.meta == {"game": 7} and len(back) == len(samples)
    np.testing.assert_array_equal(back.planes, samples.planes)
    np.testing.assert_array_equal(back.z, samples.z)
    if kind == "lower":
        np.testing.assert_array_equal(back.action, samples.action)
    else:
        for name in ("pi_off", "pi_idx", "pi_val"):
            np.testing.assert_array_equal(getattr(back, name), getattr(samples, name))
        idx, val = back.policy(3)
        assert val.sum() == pytest.approx(1.0)
    assert not list((tmp_path / "s").glob(".*.tmp"))


def test_planes_survive_float16_storage(states):
    s = states[-1]
    exact = state_planes(s)
    b = SampleBuilder("upper")
    b.add_policy(exact, [1, 2], [1, 0])
    np.testing.assert_allclose(b.build().planes[0].astype(np.float32), exact, atol=1e-3)


def test_replay_window_keeps_the_newest_samples(tmp_path):
    d = tmp_path / "shards"
    z = 0
    for g, n in enumerate((5, 7, 4)):
        b = SampleBuilder("lower")
        for _ in range(n):
            b.add_lower(np.zeros((14, 14, 14), np.float32), z, z / 100)
            z += 1
        write_shard(d / f"i0001-g{g:04d}.npz", b.build())
    window, files = load_window(d, 10, "lower")
    assert list(window.action) == list(range(6, 16))
    assert [f.name for f in files] == ["i0001-g0001.npz", "i0001-g0002.npz"]
    everything, files = load_window(d, 100, "lower")
    assert len(everything) == 16 and len(files) == 3
    with pytest.raises(ValueError, match="expected 'slm'"):
        load_window(d, 10, "slm")


@pytest.mark.parametrize("window", [100, 9, 3])
def test_iteration_tail_is_the_iterations_own_shards(tmp_path, window):
    """The newest iteration's samples out of a window equal its shards read again (all of them when the
    window holds them, else the window's part), never an older iteration's."""
    d = tmp_path / "shards"
    z = 0
    for it, sizes in ((1, (5, 7)), (2, (4, 0, 3))):
        for g, n in enumerate(sizes):
            b = SampleBuilder("lower")
            for _ in range(n):
                b.add_lower(np.zeros((14, 14, 14), np.float32), z, z / 100)
                z += 1
            write_shard(d / f"i{it:04d}-g{g:04d}.npz", b.build())
    samples, files = load_window(d, window, "lower")
    new = iteration_tail(samples, files, 2)
    own = [int(a) for f in sorted(d.glob("i0002-*.npz")) for a in read_shard(f).action]
    assert own == list(range(12, 19))
    assert list(new.action) == own[-min(window, len(own)):]
    assert len(iteration_tail(samples, files, 3)) == 0


@pytest.mark.parametrize("phase", ["layout", "battle"])
def test_augmentation_keeps_policy_mass_on_the_transformed_actions(states, phase):
    """A one-hot policy on the played move lands on the transformed move's action, and the legal mask
    becomes exactly the legal actions of the transformed position, for all four symmetries."""
    rng = np.random.default_rng(5)
    kind = "slm" if phase == "layout" else "upper"
    picks = [s for s in states if (s.phase == 0) == (phase == "layout") and s.ply > 2][:6]
    agent = make_agent("expert", seed=1)
    b = SampleBuilder(kind)
    moves = []
    for s in picks:
        move = agent.select(s)
        moves.append(move)
        if kind == "slm":
            legal = np.array(s.placements())
            b.add_policy(state_planes(s), legal, (legal == move.origin).astype(float), 1.0)
        else:
            ps = s.paths()
            legal = encode_paths(ps.pts, ps.off, ps.jump, ps.m)
            b.add_policy(state_planes(s), legal, (legal == encode_upper(move)).astype(float), 1.0)
    samples = b.build()
    for sym in range(4):
        batch = make_batch(samples, np.arange(len(samples)), rng, symmetries=(sym,))
        for i, (s, move) in enumerate(zip(picks, moves)):
            image = transform_state(s, sym)
            tmove = transform_move(move, sym)
            want = tmove.origin if kind == "slm" else encode_upper(tmove)
            assert int(np.argmax(batch.pi[i])) == want
            assert batch.pi[i].sum() == pytest.approx(1.0)
            if kind == "slm":
                legal = set(image.placements())
            else:
                ps = image.paths()
                legal = set(encode_paths(ps.pts, ps.off, ps.jump, ps.m).tolist())
            assert set(np.flatnonzero(batch.mask[i]).tolist()) == legal
            np.testing.assert_allclose(batch.planes[i], state_planes(image), atol=1e-3)


@pytest.mark.parametrize("kind", ["slm", "upper"])
def test_batch_policy_rows_match_each_sample_mapped_by_its_symmetry(states, kind):
    """The padded sparse rows against a per-sample reference: row ``i`` lists sample ``indices[i]``'s
    actions through its symmetry's action map, in order, with their values, then padding."""
    samples = _policy_samples(kind, states, np.random.default_rng(5)).build()
    rng = np.random.default_rng(6)
    indices = rng.integers(len(samples), size=40)  # repeats included
    batch = make_batch(samples, indices, np.random.default_rng(7), symmetries=(0, 1, 2, 3))
    width = max(samples.pi_off[i + 1] - samples.pi_off[i] for i in indices)
    assert batch.pi_idx.shape == batch.pi_val.shape == batch.legal.shape == (len(indices), width)
    assert batch.pi_idx.dtype == np.int64 and batch.pi_val.dtype == np.float32 and batch.legal.dtype == bool
    policy_kind = "layout" if kind == "slm" else "upper"
    for row, i in enumerate(indices):
        lo, hi = samples.pi_off[i], samples.pi_off[i + 1]
        n = hi - lo
        want = action_map(int(batch.symmetries[row]), policy_kind)[samples.pi_idx[lo:hi]]
        np.testing.assert_array_equal(batch.pi_idx[row, :n], want)
        np.testing.assert_array_equal(batch.pi_val[row, :n], samples.pi_val[lo:hi])
        assert batch.legal[row, :n].all() and not batch.legal[row, n:].any()
        assert not batch.pi_idx[row, n:].any() and not batch.pi_val[row, n:].any()
        # the dense views: the same mass on the same actions
        assert set(np.flatnonzero(batch.mask[row]).tolist()) == set(want.tolist())
        np.testing.assert_array_equal(batch.pi[row, want], samples.pi_val[lo:hi])
        assert batch.pi[row].sum() == pytest.approx(samples.pi_val[lo:hi].sum())


@pytest.mark.parametrize("kind", ["slm", "upper"])
def test_learner_policy_loss_on_listed_actions_matches_the_dense_loss(states, kind):
    """The learner's loss over each sample's gathered logits against the dense reference (the softmax
    over all actions with the unlisted ones masked out): the same terms and the same gradients."""
    from nets.losses import policy_value_terms

    cfg = micro_config("learner.schedule=constant")
    samples = _policy_samples(kind, states, np.random.default_rng(3)).build()
    batch = make_batch(samples, np.arange(min(24, len(samples))), np.random.default_rng(4), symmetries=(0, 1, 2, 3))
    learner = Learner(cfg.nets.net_config(kind), cfg.learner, seed=0)
    learner.model.train()

    def grads(loss):
        learner.model.zero_grad(set_to_none=True)
        loss.backward()
        return [p.grad.clone() for p in learner.model.parameters() if p.grad is not None]

    torch.manual_seed(0)
    terms = learner.losses(batch)
    got = grads(terms["value"] + terms["policy"])
    torch.manual_seed(0)
    logits, v = learner.model(torch.from_numpy(batch.planes))
    ref = policy_value_terms(logits, v, torch.from_numpy(batch.pi), torch.from_numpy(batch.z),
                             torch.from_numpy(batch.mask))
    want = grads(ref.value + ref.policy)
    assert float(terms["policy"]) == pytest.approx(float(ref.policy), rel=1e-5)
    assert float(terms["value"]) == pytest.approx(float(ref.value), rel=1e-5)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-6)


def test_augmentation_maps_lower_actions(states):
    s = states[-1]
    b = SampleBuilder("lower")
    b.add_lower(state_planes(s), 900, 1.0)
    samples = b.build()
    for sym in range(4):
        batch = make_batch(samples, np.array([0]), np.random.default_rng(0), symmetries=(sym,))
        assert batch.action[0] == action_map(sym, "upper")[900]
        np.testing.assert_allclose(batch.planes[0], state_planes(transform_state(s, sym)), atol=1e-3)


# ============================================================================ learner
@pytest.mark.parametrize("kind", ["slm", "upper", "lower"])
def test_one_learner_step_reduces_the_loss_on_a_fixed_batch(tmp_path, states, kind):
    cfg = micro_config("learner.schedule=constant")
    samples = _policy_samples(kind, states, np.random.default_rng(2)).build()
    batch = make_batch(samples, np.arange(min(24, len(samples))))
    learner = Learner(cfg.nets.net_config(kind), cfg.learner, seed=0)
    learner.model.train()
    with torch.no_grad():
        before = float(learner.losses(batch)["total"])
    out = learner.train_step(batch)
    with torch.no_grad():
        after = float(learner.losses(batch)["total"])
    assert out["total"] == pytest.approx(before, rel=1e-4)
    assert after < before
    assert learner.step == 1
    # the targets' entropy, the floor of the policy term: by hand over each row's positive entries
    rows = [] if kind == "lower" else [r[r > 0] for r in batch.pi]
    want = float(np.mean([-(r * np.log(r)).sum() for r in rows])) if rows else 0.0
    assert out["target_entropy"] == pytest.approx(want, rel=1e-5, abs=1e-7)
    assert kind == "lower" or out["policy"] >= out["target_entropy"] - 1e-6
    # checkpoint round trip: weights, step and optimiser state
    path = learner.save(tmp_path / f"{kind}.safetensors", extra={"iteration": 1})
    again = Learner.from_checkpoint(path, cfg.learner)
    assert again.step == 1 and again.optimizer.state_dict()["state"]
    for p, q in zip(learner.model.parameters(), again.model.parameters()):
        torch.testing.assert_close(p, q)
    # reloaded with the tactical planes: the widened net (the same outputs), and the saved optimiser
    # state, whose first-layer moments no longer fit, is left out (a fresh optimiser that can step)
    wide = Learner.from_checkpoint(path, cfg.learner, tactics=True)
    assert wide.net_config.tactics and not again.net_config.tactics
    assert not wide.optimizer.state_dict()["state"]
    with torch.no_grad():
        x = torch.from_numpy(batch.planes)
        args = (x, torch.from_numpy(batch.action)) if kind == "lower" else (x,)
        outs = [m.eval()(*args) for m in (again.model, wide.model)]
    for a, b in zip(*[o if isinstance(o, tuple) else (o,) for o in outs], strict=True):
        torch.testing.assert_close(a, b)
    wide.train_step(batch)


@pytest.mark.parametrize("kind", ["slm", "upper", "lower"])
def test_learner_validate_is_the_per_sample_mean_of_its_losses(states, kind):
    """``validate`` over all samples in batches of 5 (lower: whole captures of 3) equals the per-sample
    mean of ``evaluate`` on each sample alone (or each capture), and takes no step."""
    cfg = micro_config()
    b = _policy_samples(kind, states, np.random.default_rng(3))
    if kind == "lower":  # captures of 3 sets each
        b.group = [i // 3 for i in range(len(b))]
        cfg = micro_config("learner.dqn_loss=group")
    samples = b.build()
    learner = Learner(cfg.nets.net_config(kind), cfg.learner, seed=0)
    out = learner.validate(samples, batch_size=5)
    unit = 3 if kind == "lower" else 1
    parts = [np.arange(a, min(len(samples), a + unit)) for a in range(0, len(samples), unit)]
    want = {k: sum(learner.evaluate(make_batch(samples, idx))[k] * len(idx) for idx in parts) / len(samples)
            for k in ("value", "policy", "target_entropy")}
    for k in want:
        assert out[k] == pytest.approx(want[k], rel=1e-4, abs=1e-6), k
    assert learner.step == 0 and learner.validate(samples.tail(0)) == {}
    if kind == "lower":  # under the group loss only the samples of a capture count
        samples.group[:3] = -1
        part = learner.validate(samples, batch_size=5)
        want = sum(learner.evaluate(make_batch(samples, idx))["value"] * len(idx) for idx in parts[1:]) / (len(samples) - 3)
        assert part["value"] == pytest.approx(want, rel=1e-4, abs=1e-6)
        samples.group = None
        assert learner.validate(samples) == {}


@pytest.mark.parametrize("kind", ["upper", "lower"])
def test_bfloat16_learner_step_trains_in_bfloat16_and_keeps_float32_weights(states, kind):
    cfg = micro_config("learner.schedule=constant", "learner.precision=bfloat16")
    samples = _policy_samples(kind, states, np.random.default_rng(2)).build()
    batch = make_batch(samples, np.arange(min(24, len(samples))))
    learner = Learner(cfg.nets.net_config(kind), cfg.learner, seed=0)
    seen = []
    hook = next(m for m in learner.model.modules() if isinstance(m, torch.nn.Conv2d)).register_forward_hook(
        lambda module, args, output: seen.append(output.dtype))
    before = [p.detach().clone() for p in learner.model.parameters()]
    learner.model.train()
    with torch.no_grad():
        loss_before = float(learner.losses(batch)["total"])
    seen.clear()
    out = learner.train_step(batch)
    hook.remove()
    assert seen == [torch.bfloat16]  # the convolution ran under autocast
    assert np.isfinite(out["total"])
    assert all(p.dtype == torch.float32 for p in learner.model.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, learner.model.parameters()))
    with torch.no_grad():
        assert float(learner.losses(batch)["total"]) < loss_before


@pytest.mark.parametrize("precision", ["float32", "auto"])
def test_learner_precision_auto_trains_in_bfloat16_only_where_the_cpu_has_it(states, precision):
    from nets.inference import bfloat16_native

    cfg = micro_config("learner.schedule=constant", f"learner.precision={precision}")
    samples = _policy_samples("upper", states, np.random.default_rng(2)).build()
    learner = Learner(cfg.nets.net_config("upper"), cfg.learner, seed=0)
    seen = []
    hook = next(m for m in learner.model.modules() if isinstance(m, torch.nn.Conv2d)).register_forward_hook(
        lambda module, args, output: seen.append(output.dtype))
    learner.train_step(make_batch(samples, np.arange(min(8, len(samples)))))
    hook.remove()
    native = precision == "auto" and bfloat16_native()
    assert seen == [torch.bfloat16 if native else torch.float32]
    with pytest.raises(ConfigError, match="learner.precision"):
        micro_config("learner.precision=float16")


# ============================================================================ the pipeline
EXPECTED_EVENTS = {"run_start", "init", "game", "selfplay", "train", "evaluate", "gate", "iteration", "run_end"}


@pytest.fixture(scope="module")
def cycle_run(tmp_path_factory):
    """Three in-process iterations of ``model = cycle`` (slm, upper, lower)."""
    base = tmp_path_factory.mktemp("cycle")
    run = base / "run"
    cfg = micro_config("model=cycle", "iterations=3", "seed=11", f"export_dir={base / 'export'}", "gate.expert_games=2")
    t0 = time.perf_counter()
    result = run_pipeline(cfg, run, progress=False)
    return run, cfg, result, time.perf_counter() - t0


def test_pipeline_iterations_write_every_artefact(cycle_run):
    run, cfg, result, seconds = cycle_run
    assert result["reason"] == "iterations"
    state = json.loads((run / "state.json").read_text())
    assert state["iteration"] == 4 and state["phase"] == "init" and state["completed_iterations"] == 3
    assert json.loads((run / "config.json").read_text()) == json.loads(cfg.model_dump_json())
    events = read_metrics(run / "metrics.jsonl")
    assert EXPECTED_EVENTS <= {e["event"] for e in events}
    assert [e["kind"] for e in events if e["event"] == "train"] == ["slm", "upper", "lower"]
    floors = {e["kind"]: e["policy_target_entropy"] for e in events if e["event"] == "train"}
    assert floors["lower"] == 0.0 and floors["slm"] >= 0.0 and floors["upper"] >= 0.0
    for e in (e for e in events if e["event"] == "train"):  # the validation loss on the iteration's new samples
        new = sum(len(read_shard(f)) for f in (run / "shards" / e["kind"]).glob(f"i{e['iteration']:04d}-*.npz"))
        assert e["fresh_samples"] == new > 0
        assert e["kind"] == "lower" or e["fresh_policy"] >= e["fresh_target_entropy"] - 1e-6
    assert list((run / "tb").glob("events.out.tfevents.*"))
    assert len(list((run / "pretrain" / "records").glob("g*.json"))) == 2
    for it, kind in ((1, "slm"), (2, "upper"), (3, "lower")):
        for g in range(2):
            rec = read_json(run / "records" / f"i{it:04d}" / f"g{g:04d}.json")
            meta = rec.metadata["selfplay"]
            assert (meta["kind"], meta["iteration"], meta["game"]) == (kind, it, g)
            assert meta["game_seed"] == game_seed(11, it, g) and meta["run_seed"] == 11
            assert rec.final_state().is_terminal()
            assert read_shard(run / "shards" / kind / f"i{it:04d}-g{g:04d}.npz").kind == kind
        for f in (f"checkpoints/{kind}-i0000.safetensors", f"checkpoints/{kind}-i{it:04d}.safetensors",
                  f"checkpoints/{kind}-i{it:04d}.opt.pt", f"best/{kind}.safetensors",
                  f"eval/i{it:04d}-{kind}/best/summary.json", f"eval/i{it:04d}-{kind}/expert/summary.json"):
            assert (run / f).exists(), f
        assert (Path(cfg.export_dir) / f"{kind}.safetensors").read_bytes() == (run / "best" / f"{kind}.safetensors").read_bytes()
    ev = [e for e in events if e["event"] == "evaluate"]
    assert {e["opponent"] for e in ev} == {"best", "expert"}
    assert all(e["games"] == 2 and len(e["ci95"]) == 2 for e in ev)
    # resuming a finished run does nothing
    again = run_pipeline(cfg, run, resume=True, progress=False)
    assert again["state"]["iteration"] == 4 and again["reason"] == "iterations"


def test_resume_refuses_a_changed_config(cycle_run, tmp_path):
    run, cfg, _, _ = cycle_run
    changed = cfg.model_copy(update={"seed": 5})
    with pytest.raises(ConfigError, match="'seed'"):
        run_pipeline(changed, run, resume=True, progress=False)
    with pytest.raises(Exception, match="not empty"):
        run_pipeline(cfg, run, resume=False, progress=False)


def test_cli_selfplay_resume_extends_a_finished_run(tmp_path):
    run = tmp_path / "run"
    args = ["selfplay", "--run-dir", str(run), "--no-progress", "--model", "lower", "--iterations", "1",
            *sum((["--set", s] for s in MICRO), []), "--set", "pretrain.enabled=false"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert f"run directory: {run}" in result.output
    assert json.loads((run / "state.json").read_text())["completed_iterations"] == 1
    result = runner.invoke(app, ["selfplay", "--resume", str(run), "--set", "selfplay.games=5", "--no-progress"])
    assert result.exit_code == 2 and "selfplay.games" in result.output
    result = runner.invoke(app, ["selfplay", "--resume", str(run), "--iterations", "2", "--workers", "0", "--json"])
    assert result.exit_code == 0, result.output
    state = json.loads(result.output.strip().splitlines()[-1])["state"]
    assert state["completed_iterations"] == 2 and state["iteration"] == 3 and state["sessions"] == 2
    assert (run / "checkpoints" / "lower-i0002.safetensors").exists()


def test_a_resumed_run_without_a_baseline_plays_it_first(tmp_path):
    from train.learning.curve import read_points

    run = tmp_path / "run"
    cfg = micro_config("model=lower", "iterations=1", "pretrain.enabled=false", "gate.max_games=0",
                       "curve.baseline=false")
    run_pipeline(cfg, run, progress=False)
    assert [p["iteration"] for p in read_points(run / "curve")] == [1]
    cfg2 = micro_config("model=lower", "iterations=2", "pretrain.enabled=false", "gate.max_games=0")
    run_pipeline(cfg2, run, resume=True, progress=False)
    points = read_points(run / "curve")
    assert [p["iteration"] for p in points] == [0, 1, 2]
    assert points[0]["player"] == "lower@i0000" and (points[0]["games"], points[0]["hours"]) == (0, 0.0)
    assert points[1]["hours"] < points[2]["hours"] and points[2]["games"] == 4
    events = read_metrics(run / "metrics.jsonl")
    order = [(e["event"], e.get("iteration")) for e in events if e["event"] in ("run_start", "curve", "game")]
    second = [i for i, e in enumerate(order) if e[0] == "run_start"][1]
    assert order[second + 1] == ("curve", 0)  # before the resumed run's first self-play game
    state = json.loads((run / "state.json").read_text())
    assert state["last_curve"]["iteration"] == 2


def test_minutes_budget_stops_at_a_resumable_point(tmp_path):
    run = tmp_path / "run"
    cfg = micro_config("model=lower", "iterations=1", "pretrain.enabled=false", "minutes=0.00001", "gate.max_games=0",
                       "gate.expert_games=0", "curve.every=0")
    result = run_pipeline(cfg, run, progress=False)
    assert result["reason"] == "minutes" and result["state"]["completed_iterations"] == 0
    result = run_pipeline(cfg.model_copy(update={"minutes": None}), run, resume=True, progress=False)
    assert result["reason"] == "iterations" and result["state"]["completed_iterations"] == 1
    assert result["state"]["best"]["lower"]["iteration"] == 1  # no gate games: the candidate is accepted
    assert not (run / "eval").exists()
    ends = [e for e in read_metrics(run / "metrics.jsonl") if e["event"] == "run_end"]
    assert [e["reason"] for e in ends] == ["minutes", "iterations"]


@pytest.mark.parametrize("kind", ["slm", "upper", "lower"])
def test_trained_checkpoint_plays_a_legal_full_game(cycle_run, kind):
    from train.learning.selfplay import net_agent
    from train.matches.arena import play_game

    run, cfg, _, _ = cycle_run
    it = {"slm": 1, "upper": 2, "lower": 3}[kind]
    spec = net_agent(kind, run / "checkpoints" / f"{kind}-i{it:04d}.safetensors", cfg)
    record = play_game(spec, "random", RULES, 1, 2)
    assert record.reason != "illegal-move"
    final = record.final_state()  # replays and validates every move
    assert final.is_terminal() and record.result in ("w", "b", "draw")


def test_shipped_model_loads_and_plays_a_legal_full_game():
    """models/default: the three tiny nets (tactical planes allowed) load with their kinds and carry a
    training summary (a supervised start's steps or a self-play run's), and the default ``jfa`` agent
    (which loads them) plays a whole game without an illegal move."""
    from nets.config import preset
    from nets.io import load
    from search.agents import MODELS_DIR
    from train.matches.arena import play_game

    for kind in ("slm", "upper", "lower"):
        _, config, extra = load(MODELS_DIR / "default" / f"{kind}.safetensors", expected_kind=kind)
        steps = extra["pretrain"]["steps"] if "pretrain" in extra else extra["step"]  # supervised start or self-play
        # the tiny preset, with or without the tactical input planes (the lower net has them since 2026-11-27)
        assert config.model_copy(update={"tactics": False}) == preset(kind, "tiny"), f"{kind}: {config}"
        assert steps > 0, f"{kind}: no training in its summary {extra}"
    record = play_game("jfa:sims=4,threads=1", "random", RULES, 3, 4)
    assert record.reason != "illegal-move"
    assert record.final_state().is_terminal() and record.result in ("w", "b", "draw")


def test_report_writes_pngs(cycle_run):
    run = cycle_run[0]
    result = runner.invoke(app, ["report", str(run)])
    assert result.exit_code == 0, result.output
    for name in ("losses.png", "winrate.png", "selfplay.png", "elo.png"):
        data = (run / "report" / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000
    summary = json.loads((run / "report" / "summary.json").read_text())
    assert [r["kind"] for r in summary["iterations"]] == ["slm", "upper", "lower"]
    train = {e["kind"]: e for e in read_metrics(run / "metrics.jsonl") if e["event"] == "train"}
    for r in summary["iterations"]:  # the validation losses reach the report (plotted dashed)
        assert r["fresh_value_loss"] == train[r["kind"]]["fresh_value"]
        assert r["fresh_policy_loss"] == train[r["kind"]]["fresh_policy"]
    # the printed curve: one line per point, then the slm trend (two slm points: the baseline and i0001)
    lines = result.output.splitlines()
    assert sum(line.startswith("i000") for line in lines) == len(summary["curve"]["points"]) == 4
    slm = summary["curve"]["rate"]["hours"]["slm"]
    assert slm["points"] == 2 and f"slm: {slm['slope']:+.0f} Elo per hour" in result.output
    assert "Elo per 100 games" in result.output
    assert runner.invoke(app, ["report", str(run / "nope")]).exit_code == 2


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 10), st.floats(-800, 800), st.floats(5, 300)), min_size=2, max_size=8))
def test_curve_rate_is_the_weighted_least_squares_line(pts):
    """Against numpy's weighted polynomial fit (weights 1/se on the residuals) and its unscaled covariance."""
    from train.learning.curve import curve_rate

    assume(max(x for x, _, _ in pts) - min(x for x, _, _ in pts) > 1e-3)
    rows = [{"kind": "upper", "hours": x, "elo": y, "se": se} for x, y, se in pts]
    rows.append({"kind": "upper", "hours": 5.0, "elo": None, "se": None})  # unrated: left out
    rate = curve_rate(rows)["upper"]
    xs, ys, se = (np.array(v) for v in zip(*pts))
    coef, cov = np.polyfit(xs, ys, 1, w=1 / se, cov="unscaled")
    assert rate["points"] == len(pts)
    assert rate["slope"] == pytest.approx(coef[0], rel=1e-6, abs=1e-6)
    assert rate["se"] == pytest.approx(np.sqrt(cov[0, 0]), rel=1e-6)
    xm, ym = rate["center"]  # the plotted line: through the weighted means, on numpy's line
    assert ym == pytest.approx(coef[0] * xm + coef[1], rel=1e-6, abs=1e-5)
    assert rate["ci95"][0] < rate["slope"] < rate["ci95"][1]


def test_curve_rate_needs_two_x_values():
    from train.learning.curve import curve_rate

    one = [{"kind": "slm", "hours": 1.0, "elo": 10.0, "se": 50.0}, {"kind": "slm", "hours": 1.0, "elo": 30.0, "se": 50.0}]
    assert curve_rate(one) == {}
    assert curve_rate(one[:1]) == {}


def _wait_for(predicate, timeout: float) -> bool:
    end = time.time() + timeout
    while time.time() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_kill_9_and_resume_loses_and_duplicates_no_game(tmp_path):
    """Kill the whole process group (pipeline and its worker) with SIGKILL right after the first self-play
    record appears, resume, and check every game exists once with its deterministic seed."""
    run = tmp_path / "run"
    games = 6
    args = [sys.executable, str(ROOT / "cli.py"), "selfplay", "--run-dir", str(run), "--no-progress", "--model", "slm",
            *sum((["--set", s] for s in MICRO), []), "--set", f"selfplay.games={games}", "--set", "workers=1",
            "--set", "pretrain.enabled=false", "--set", "iterations=1", "--set", "seed=5"]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    records = run / "records" / "i0001"
    try:
        appeared = _wait_for(lambda: any(records.glob("g*.json")) or proc.poll() is not None, 120)
        assert appeared and proc.poll() is None, proc.stderr.read().decode()[-2000:] if proc.poll() is not None else ""
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in records.glob("g*.json")}
    assert 1 <= len(before) < games
    state = json.loads((run / "state.json").read_text())
    assert state["phase"] == "selfplay" and state["iteration"] == 1
    cfg = validate_config(json.loads((run / "config.json").read_text())).model_copy(update={"workers": 0})
    result = run_pipeline(cfg, run, resume=True, progress=False)
    assert result["state"]["completed_iterations"] == 1
    names = sorted(p.name for p in records.glob("g*.json"))
    assert names == [f"g{g:04d}.json" for g in range(games)]
    for name, (mtime, data) in before.items():  # games finished before the kill were not played again
        assert (records / name).stat().st_mtime_ns == mtime and (records / name).read_bytes() == data
    for g in range(games):
        meta = read_json(records / f"g{g:04d}.json").metadata["selfplay"]
        assert meta["game"] == g and meta["game_seed"] == game_seed(5, 1, g)
    shards = sorted(p.name for p in (run / "shards" / "slm").glob("*.npz"))
    assert shards == [f"i0001-g{g:04d}.npz" for g in range(games)]
    game_events = [e["index"] for e in read_metrics(run / "metrics.jsonl") if e["event"] == "game"]
    assert len(game_events) == len(set(game_events))  # no game logged (played) twice
    assert set(game_events) | {int(n[1:5]) for n in before} == set(range(games))


# ============================================================================ records and pretraining
def test_gen_records_and_pretrain(tmp_path):
    out = tmp_path / "records"
    common = ["-r", "max_battle_plies=20", "-r", "adjudicate=stones"]
    result = runner.invoke(app, ["gen-records", "--agent", "expert", "--games", "2", "--out", str(out),
                                 "--workers", "0", "--json", *common])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.strip().splitlines()[-1])["played"] == 2
    result = runner.invoke(app, ["gen-records", "--games", "3", "--out", str(out), "--workers", "0", "--json",
                                 *common])
    assert json.loads(result.output.strip().splitlines()[-1])["played"] == 1  # resumed: only game 2
    metas = [read_json(out / f"g{i:05d}.json").metadata for i in range(3)]
    assert [m["gen_records"]["index"] for m in metas] == [0, 1, 2]
    for kind in ("slm", "upper", "lower"):
        net = tmp_path / f"{kind}.safetensors"
        result = runner.invoke(app, ["pretrain", str(out), "--model", kind, "--steps", "3", "--batch-size", "8",
                                     "--out", str(net), "--json", "--set", "nets.blocks=1",
                                     "--set", "nets.channels=8", *common])
        assert result.exit_code == 0, result.output
        summary = json.loads(result.output.strip().splitlines()[-1])
        assert summary["records"] == 3 and summary["samples"] > 0
        from nets.io import load

        model, config, extra = load(net, expected_kind=kind)
        assert extra["pretrain"]["steps"] == 3
    assert runner.invoke(app, ["pretrain", str(tmp_path / "none")]).exit_code == 2
    net = tmp_path / "drift.safetensors"
    result = runner.invoke(app, ["pretrain", str(out), "--model", "upper", "--steps", "2", "--batch-size", "8",
                                 "--out", str(net), "--json", "--value-drift", "2", "--value-eval", "eval.expert",
                                 "--value-result-stones", "29", "--value-result-from", "10",
                                 "--set", "learner.trainable=value", "--init", str(tmp_path / "upper.safetensors"),
                                 *common])
    assert result.exit_code == 0, result.output
    _, _, extra = load(net, expected_kind="upper")
    assert extra["value_target"] == "drift:2:eval.expert:result_stones=29:result_from=10"
    assert extra["trainable"] == "value"
    init_bytes = (tmp_path / "upper.safetensors").read_bytes()
    assert extra["init"] == {"file": "upper.safetensors", "sha256": hashlib.sha256(init_bytes).hexdigest()}
    for args, field in ((["--model", "slm", "--value-drift", "2"], "--value-drift"),
                        (["--model", "upper", "--value-drift", "3"], "--value-drift"),
                        (["--model", "upper", "--value-drift", "2", "--value-eval", "eval.nope"], "--value-eval"),
                        (["--model", "upper", "--value-drift", "2", "--drift-ends", "end"], "--drift-ends"),
                        (["--model", "upper", "--value-result-stones", "29"], "--value-result-stones"),
                        (["--model", "upper", "--value-drift", "2", "--value-result-stones", "9",
                          "--value-result-from", "10"], "--value-result-from"),
                        (["--model", "lower", "--set", "learner.trainable=value"], "trainable")):
        result = runner.invoke(app, ["pretrain", str(out), "--steps", "1", "--out", str(tmp_path / "x.safetensors"),
                                     *args, *common])
        assert result.exit_code == 2 and result.stderr.startswith("error: ") and field in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr  # before any sample is built


def test_pretrain_on_shards_keeps_captures_and_widens_the_start_net(tmp_path, states):
    """``pretrain --shards``: the samples of a run's shards (a capture's victim sets kept together for a
    grouped loss; shards of other kinds skipped) train the net; with ``nets.tactics`` the ``--init`` net
    is widened first (``nets.model.with_tactics``), so the trained net has the tactical planes; no
    shard of the kind is refused."""
    from nets.config import NetConfig
    from nets.io import load, save
    from nets.model import build
    from train.learning.samples import read_shards

    battle = [s for s in states if s.phase == 1][:16]
    rng = np.random.default_rng(0)
    for shard in range(2):
        b = SampleBuilder("lower")
        for i, s in enumerate(battle):
            b.add_lower(state_planes(s), int(rng.integers(48804)), float(rng.random()), group=i // 4)
        write_shard(tmp_path / "shards" / "lower" / f"i0001-g{shard:04d}.npz", b.build())
    up = SampleBuilder("upper")
    up.add_policy(state_planes(battle[0]), np.array([3], np.int64), np.array([1.0], np.float32), 0.5)
    write_shard(tmp_path / "shards" / "upper" / "i0001-g0000.npz", up.build())
    found = read_shards([tmp_path / "shards"], ("lower",))
    assert list(found) == ["lower"] and len(found["lower"]) == 2 * len(battle)
    assert len(set(found["lower"].group.tolist())) == 2 * len(battle) // 4  # the two shards' captures stay apart
    start = tmp_path / "start.safetensors"
    config = NetConfig(kind="lower", blocks=1, channels=8, value_hidden=8, action_embedding=4)
    save(build(config), config, start)
    out = tmp_path / "lower.safetensors"
    result = runner.invoke(app, ["pretrain", "--model", "lower", "--shards", str(tmp_path / "shards"),
                                 "--init", str(start), "--steps", "3", "--batch-size", "32", "--out", str(out), "--json",
                                 "--set", "nets.blocks=1", "--set", "nets.channels=8", "--set", "nets.value_hidden=8",
                                 "--set", "nets.tactics=true", "--set", "learner.dqn_loss=group"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert summary["samples"] == 2 * len(battle) and summary["records"] == 0
    _, trained, extra = load(out, expected_kind="lower")
    assert trained.tactics and extra["shards"] == [str(tmp_path / "shards")]
    result = runner.invoke(app, ["pretrain", "--model", "slm", "--shards", str(tmp_path / "shards"), "--steps", "1",
                                 "--out", str(tmp_path / "x.safetensors")])
    assert result.exit_code == 2 and "no slm shard found" in result.stderr


def test_pretrain_resumes_from_its_checkpoint_to_the_uninterrupted_net(tmp_path, states):
    """``pretrain(checkpoint_every=N)`` killed mid-run and called again ends with the very weights of an
    uninterrupted run (the optimiser state and the batch generator resumed); a checkpoint of other
    arguments is refused, a locked one is busy, and the checkpoint is gone once the net is written."""
    from nets.io import load
    from train.jobs.rundir import DirectoryInUse, lock_dir
    from train.learning.supervised import SupervisedError, checkpoint_dir, pretrain

    samples = _policy_samples("upper", [s for s in states if s.phase == 1][:24], np.random.default_rng(1)).build()
    cfg = load_config(None, ["nets.blocks=1", "nets.channels=8"])
    args = dict(net_config=cfg.nets.net_config("upper"), learner_cfg=cfg.learner, steps=7, batch_size=8, seed=3)
    whole = pretrain(samples, out=tmp_path / "whole.safetensors", **args)

    class Kill(Exception):
        pass

    def kill_at(step):
        def cb(i, losses):
            if i == step:
                raise Kill
        return cb

    out = tmp_path / "resumed.safetensors"
    with pytest.raises(Kill):
        pretrain(samples, out=out, checkpoint_every=3, callback=kill_at(4), **args)
    ckpt = checkpoint_dir(out)
    assert json.loads((ckpt / "state.json").read_text())["done"] == 3 and not out.exists()
    with pytest.raises(SupervisedError, match="lr differs"):
        pretrain(samples, out=out, checkpoint_every=3, **{**args, "lr": 0.01})
    with lock_dir(ckpt), pytest.raises(DirectoryInUse):
        pretrain(samples, out=out, checkpoint_every=3, **args)
    seen = []
    again = pretrain(samples, out=out, checkpoint_every=3, callback=lambda i, losses: seen.append(i), **args)
    assert again["resumed_from"] == 3 and seen == [3, 4, 5, 6] and not ckpt.exists()
    assert again["first_loss"] == whole["first_loss"] and again["last_loss"] == whole["last_loss"]
    a, b = load(tmp_path / "whole.safetensors")[0].state_dict(), load(out)[0].state_dict()
    assert all(torch.equal(a[name], b[name]) for name in a)
    changed = pretrain(samples, out=tmp_path / "other.safetensors", **{**args, "seed": 4})
    assert changed["last_loss"] != whole["last_loss"]  # the comparison above can fail


@pytest.mark.integration
def test_pretrain_killed_by_sigkill_resumes_with_the_same_command(tmp_path, states):
    """``python cli.py pretrain --checkpoint-every N`` killed with SIGKILL after its first checkpoint: the
    same command resumes at that checkpoint (not at step 0) and writes the net an uninterrupted run
    writes (to float tolerance: the subprocess and this process may split work over other threads)."""
    from nets.io import load

    battle = [s for s in states if s.phase == 1][:24]
    write_shard(tmp_path / "shards" / "s.npz", _policy_samples("upper", battle, np.random.default_rng(2)).build())
    common = ["pretrain", "--model", "upper", "--shards", str(tmp_path / "shards"), "--steps", "400",
              "--batch-size", "8", "--seed", "3", "--set", "nets.blocks=1", "--set", "nets.channels=8", "--json"]
    out = tmp_path / "killed.safetensors"
    proc = subprocess.Popen([sys.executable, str(ROOT / "cli.py"), *common, "--checkpoint-every", "10",
                             "--out", str(out)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    state = tmp_path / "killed.safetensors.ckpt" / "state.json"
    try:
        appeared = _wait_for(lambda: state.exists() or proc.poll() is not None, 120)
        assert appeared and proc.poll() is None, proc.stderr.read().decode()[-2000:] if proc.poll() is not None else ""
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert not out.exists()
    result = runner.invoke(app, [*common, "--checkpoint-every", "10", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.strip().splitlines()[-1])["resumed_from"] >= 10
    assert not state.parent.exists()
    whole = tmp_path / "whole.safetensors"
    result = runner.invoke(app, [*common, "--checkpoint-every", "0", "--out", str(whole)])
    assert result.exit_code == 0, result.output
    a, b = load(whole)[0].state_dict(), load(out)[0].state_dict()
    assert all(torch.allclose(a[name], b[name], rtol=1e-4, atol=1e-5) for name in a)


def test_supervised_targets_are_the_played_moves(tmp_path):
    from core.notation import parse_move
    from core.records import GameRecord
    from train.learning.supervised import samples_from_record

    states = _states(40)
    final = states[-1]
    # the moves actually played between the states, and one more
    moves = [str(b.last_move) for b in states[1:]] + [str(make_agent("expert", seed=9).select(final))]
    record = GameRecord.from_moves(moves, RULES.model_copy(update={"max_battle_plies": 300}), result="w")
    replay = record.replay()
    slm = samples_from_record(record, "slm")
    upper = samples_from_record(record, "upper")
    lower = samples_from_record(record, "lower")
    assert len(slm) == 196 - 2  # placements 2 (h8 after g7, or g7 after h8) and 196 are forced
    k = 0
    for i, text in enumerate(record.moves[:196]):
        if len(replay[i].placements()) < 2:
            continue
        idx, val = slm.policy(k)
        assert idx[np.argmax(val)] == parse_move(text).origin and val.max() == 1.0
        assert slm.z[k] == (1.0 if replay[i].side == 0 else -1.0)
        k += 1
    battle = [(i, t) for i, t in enumerate(record.moves) if i >= 196 and replay[i].paths().m > 1]
    assert len(upper) == len(battle)
    for k, (i, text) in enumerate(battle):
        idx, val = upper.policy(k)
        assert idx[np.argmax(val)] == encode_upper(parse_move(text))
    captures = [t for i, t in enumerate(record.moves) if i >= 196 and "/" in t]
    assert len(lower) == len(captures)


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray instance with 2 CPUs for the Ray tests (the pipeline uses it instead of starting one).
    The README's test command installs the ``ray`` extra, so CI runs these tests."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    yield ray
    ray.shutdown()


def _processes_titled(title: str) -> list[int]:
    """PIDs whose command line (Ray sets it to ``ray::<Actor>.<method>`` while an actor runs a task) starts with ``title``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if cmdline.startswith(title.encode()):
                pids.append(int(entry.name))
    return pids


def test_ray_worker_killed_mid_game_loses_nothing(tmp_path, ray_cluster):
    """kill -9 of a Ray actor while it plays a game: a new actor plays the game again (the runner
    resubmits the task), and every game is on disk and counted exactly once."""
    import signal
    import threading

    cfg = micro_config("backend=ray", "workers=2", "pretrain.enabled=false", "gate.max_games=0", "curve.every=0", "gate.expert_games=0",
                       "iterations=1", "selfplay.games=4")
    killed: list[int] = []
    done = threading.Event()

    def kill_first_game() -> None:
        while not done.is_set() and not killed:
            for pid in _processes_titled("ray::RayWorker.run"):  # an actor running a task
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                break
            time.sleep(0.02)

    killer = threading.Thread(target=kill_first_game, daemon=True)
    killer.start()
    try:
        result = run_pipeline(cfg, tmp_path / "run", progress=False)
    finally:
        done.set()
        killer.join()
    assert killed, "no Ray worker was seen running a game"
    records = sorted((tmp_path / "run" / "records" / "i0001").glob("g*.json"))
    shards = sorted((tmp_path / "run" / "shards" / "slm").glob("i0001*.npz"))
    assert len(records) == 4 and len(shards) == 4
    meta = [read_json(r).metadata["selfplay"] for r in records]
    assert sorted(m["game"] for m in meta) == [0, 1, 2, 3]
    assert killed[0] not in {m["worker_pid"] for m in meta}  # the killed attempt wrote nothing that stayed
    assert result["state"]["games"] == 4 and result["state"]["completed_iterations"] == 1


def test_ray_backend(tmp_path, ray_cluster):
    cfg = micro_config("backend=ray", "workers=1", "pretrain.enabled=false", "gate.max_games=0", "curve.every=0", "gate.expert_games=0",
                       "iterations=1")
    result = run_pipeline(cfg, tmp_path / "run", progress=False)
    assert result["state"]["completed_iterations"] == 1
    assert len(list((tmp_path / "run" / "records" / "i0001").glob("g*.json"))) == 2


def test_ray_backend_missing_is_a_clear_error(tmp_path, monkeypatch):
    import builtins
    import sys

    monkeypatch.delitem(sys.modules, "ray", raising=False)  # imported by the Ray tests above

    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    cfg = micro_config("backend=ray", "workers=1", "pretrain.enabled=false")
    from train.learning.pipeline import TrainError

    with pytest.raises(TrainError, match="ray is not installed"):
        run_pipeline(cfg, tmp_path / "run", progress=False)


def test_tensorboard_missing_is_a_warning(tmp_path, monkeypatch):
    import builtins

    from train.jobs.dashboard import TensorBoard

    real_import = builtins.__import__

    def no_tb(name, *args, **kwargs):
        if name.startswith("torch.utils.tensorboard"):
            raise ImportError("No module named 'tensorboard'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tb)
    with pytest.warns(RuntimeWarning, match="TensorBoard logging skipped"):
        tb = TensorBoard(tmp_path / "tb")
    tb.scalars(1, loss=1.0)  # a no-op
    tb.close()


def test_dashboard_renders(tmp_path):
    import io

    from rich.console import Console

    from train.jobs.dashboard import Dashboard

    dash = Dashboard("live", tmp_path, micro_config())
    dash.update(iteration=1, kind="slm", phase="self-play", games_done=1, games_total=2, plies_per_s=3.0,
                sims_per_s=40.0, positions_per_s=2.0, games_per_hour=100.0, loss=1.5, value_loss=0.5,
                policy_loss=1.0, l2=0.01, lr=1e-3, step=3, eval_best="50%", gate="accepted", elapsed=3.0)
    task = dash.task("self-play", 2)
    dash.advance(task, "w 300 plies")
    out = io.StringIO()
    Console(file=out, width=100).print(dash._render())
    text = out.getvalue()
    assert "plies/s" in text and "total 1.5000" in text and "self-play" in text


# ============================================================================ run directories, curve, export
def test_slm_record_continues_the_battle_that_gave_the_reward(cycle_run):
    """The record of an slm self-play game plays, right after the layout, exactly the moves the reward
    plugin's auxiliary agent chose when it computed the reward (seeded by the recorded reward seed)."""
    from knowledge.plugins import REGISTRY

    run, cfg, _, _ = cycle_run
    for g in range(2):
        rec = read_json(run / "records" / "i0001" / f"g{g:04d}.json")
        meta = rec.metadata
        plies = meta["reward"]["plies"]
        assert plies >= 1
        layout_end = rec.replay()[196]
        reward = REGISTRY.create(cfg.selfplay.reward, "reward")
        r = reward.rewards(layout_end, seed=meta["selfplay"]["seeds"]["reward"])
        assert (r[0], r[1]) == (meta["reward"]["white"], meta["reward"]["black"])
        assert [str(m) for m in reward.last_moves] == list(rec.moves[196:196 + plies])


def test_state_totals_are_recomputed_from_disk(cycle_run):
    from train.learning.samples import shard_length

    run, cfg, _, _ = cycle_run
    state_path = run / "state.json"
    state = json.loads(state_path.read_text())
    records = list((run / "records").glob("i*/g*.json"))
    samples = sum(shard_length(p) for p in (run / "shards").glob("*/*.npz"))
    assert state["games"] == len(records) == 6 and state["samples"] == samples > 0
    state.update(games=1, samples=7)  # a state written before the last games' files (kill -9 between them)
    state_path.write_text(json.dumps(state))
    again = run_pipeline(cfg, run, resume=True, progress=False)
    assert again["state"]["games"] == 6 and again["state"]["samples"] == samples


def test_shards_carry_their_format_and_encoding_version(tmp_path, states):
    from nets.config import ENCODING_VERSION
    from train.learning.samples import ShardError

    b = SampleBuilder("slm")
    b.add_policy(state_planes(states[0]), np.array([0, 1]), np.array([1.0, 1.0]), 0.5)
    path = write_shard(tmp_path / "a.npz", b.build())
    with np.load(path) as data:
        arrays = dict(data)
    assert str(arrays["format"]) == "jiu-samples" and int(arrays["encoding_version"]) == ENCODING_VERSION
    old = dict(arrays)
    del old["format"], old["version"], old["encoding_version"]
    np.savez(tmp_path / "old.npz", **old)
    with pytest.raises(ShardError, match=r"old\.npz.*'format'"):
        read_shard(tmp_path / "old.npz")
    np.savez(tmp_path / "enc.npz", **{**arrays, "encoding_version": np.array(ENCODING_VERSION + 1)})
    with pytest.raises(ShardError, match="'encoding_version'") as err:
        read_shard(tmp_path / "enc.npz")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("args, field", [
    (["--reward", "bogus"], "--reward: unknown reward"),  # the option that gave the value (issue 62 V)
    (["--set", "selfplay.aux_agent=nobody"], "selfplay.aux_agent"),
    (["--set", "gate.expert=expert:bogus=1"], "gate.expert"),
    (["--set", "selfplay.search.capture_pruner=prune.nothing"], "selfplay.search.capture_pruner"),
    (["--set", "selfplay.search.victim_evaluator=eval.nothing"], "selfplay.search.victim_evaluator"),
    (["--set", 'curve.anchors=["random","nope"]', "--set", "curve.anchor=random"], "curve.anchors"),
])
def test_names_are_resolved_before_any_work(tmp_path, args, field):
    run = tmp_path / "run"
    result = subprocess.run([sys.executable, str(ROOT / "cli.py"), "selfplay", "--from-scratch", "--run-dir", str(run),
                             "--no-progress", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and field in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    assert not (run / "pretrain").exists() and not (run / "state.json").exists()


def _hold_lock(directory: Path):
    """A second real process holding the directory lock (started, lock taken, then sleeping)."""
    script = ("import sys, time\nfrom train.jobs.rundir import lock_dir\nlock = lock_dir(sys.argv[1])\n"
              "print('locked', flush=True)\ntime.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", script, str(directory)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_a_second_job_on_a_locked_directory_is_refused_at_once(tmp_path):
    out = tmp_path / "records"
    holder = _hold_lock(out)
    try:
        for cmd in (["gen-records", "--agent", "random", "--games", "2", "--workers", "0", "--out", str(out)],
                    ["arena", "random", "random", "--games", "2", "--workers", "0", "--out", str(out)],
                    ["tournament", "random", "greedy", "--games", "2", "--workers", "0", "--out", str(out)],
                    ["selfplay", "--resume", str(out)]):
            t0 = time.perf_counter()
            result = subprocess.run([sys.executable, str(ROOT / "cli.py"), *cmd], cwd=ROOT, capture_output=True,
                                    text=True, timeout=120)
            assert result.returncode == 2, (cmd, result.stderr)
            if cmd[0] != "selfplay":  # a resumed run first needs its state.json, which this directory lacks
                assert f"error: {out} is in use by pid {holder.pid} (started " in result.stderr, result.stderr
                assert time.perf_counter() - t0 < 60
        assert not list(out.glob("g*.json")) and not (out / "games").exists()
    finally:
        holder.kill()
        holder.wait()
    # the lock dies with its holder (even by SIGKILL): the next run goes ahead
    result = subprocess.run([sys.executable, str(ROOT / "cli.py"), "gen-records", "--agent", "random", "--games", "2",
                             "--workers", "0", "--out", str(out), "--json", "-r", "max_battle_plies=20"],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    # the same directory with another agent is another corpus: refused
    result = subprocess.run([sys.executable, str(ROOT / "cli.py"), "gen-records", "--agent", "greedy", "--games", "2",
                             "--workers", "0", "--out", str(out), "-r", "max_battle_plies=20"],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "field 'agent'" in result.stderr and "greedy" in result.stderr


def test_two_selfplay_runs_on_one_directory(tmp_path):
    """Two real selfplay processes on one run directory: the second is refused at once naming the first."""
    run = tmp_path / "run"
    args = [sys.executable, str(ROOT / "cli.py"), "selfplay", "--no-progress",
            *sum((["--set", s] for s in MICRO), []), "--set", "pretrain.enabled=false", "--set", "iterations=1",
            "--set", "selfplay.games=50", "--set", "selfplay.games_in_flight=1"]  # batches of 2 games
    first = subprocess.Popen([*args, "--from-scratch", "--run-dir", str(run)], cwd=ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        assert _wait_for(lambda: (run / ".lock.json").exists() and (run / "state.json").exists(), 120)
        for second_args in (["--resume", str(run)], ["--from-scratch", "--run-dir", str(run)]):
            second = subprocess.run([*args, *second_args], cwd=ROOT, capture_output=True, text=True, timeout=120)
            assert second.returncode == 2
            assert f"error: {run} is in use by pid {first.pid} (started " in second.stderr, second.stderr
        assert first.poll() is None  # the first run goes on
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()


def test_sigterm_ends_a_selfplay_run_as_ctrl_c_does(tmp_path):
    """A real selfplay process stopped by SIGTERM saves its state, logs run_end (interrupted) with its
    session's seconds, exits with 130, and resumes."""
    run = tmp_path / "run"
    args = [sys.executable, str(ROOT / "cli.py"), "selfplay", "--no-progress",
            *sum((["--set", s] for s in MICRO), []), "--set", "pretrain.enabled=false", "--set", "iterations=1",
            "--set", "selfplay.games=50", "--set", "selfplay.games_in_flight=1"]  # batches of 2 games
    proc = subprocess.Popen([*args, "--from-scratch", "--run-dir", str(run)], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert _wait_for(lambda: (run / "metrics.jsonl").exists()
                         and any(e["event"] == "game" for e in read_metrics(run / "metrics.jsonl")), 120)
        proc.send_signal(signal.SIGTERM)
        # beyond the forced exit (train.jobs.signals.FORCED_EXIT_SECONDS), whose stacks then show in `err`
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    end = [e for e in read_metrics(run / "metrics.jsonl") if e["event"] == "run_end"]
    assert len(end) == 1 and end[0]["reason"] == "interrupted" and end[0]["session_seconds"] > 0
    state = json.loads((run / "state.json").read_text())
    assert state["elapsed_seconds"] >= end[0]["session_seconds"] - 1 and state["phase"] == "selfplay"
    again = subprocess.run([*args, "--resume", str(run), "--minutes", "0.01"], cwd=ROOT, capture_output=True,
                           text=True, timeout=120)
    assert again.returncode == 0, again.stderr


def test_caused_by_interrupt_follows_the_direct_cause_only():
    from train.jobs.rundir import caused_by_interrupt

    def raised(make):
        try:
            make()
        except BaseException as exc:  # noqa: BLE001 - the exception itself is the value under test
            return exc

    def wrapped():  # what pybind11 does with an interrupt raised inside a C++ call
        try:
            raise KeyboardInterrupt("signal 15")
        except KeyboardInterrupt as inner:
            raise SystemError("returned a result with an exception set") from inner

    def twice():
        try:
            wrapped()
        except SystemError as inner:
            raise RuntimeError("outer") from inner

    def during():  # an error of its own, raised while an interrupt was handled
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise ValueError("cleanup failed")

    assert caused_by_interrupt(raised(wrapped)) and caused_by_interrupt(raised(twice))
    assert caused_by_interrupt(KeyboardInterrupt())
    assert not caused_by_interrupt(raised(during)) and not caused_by_interrupt(ValueError("x"))
    assert not caused_by_interrupt(None)


def test_an_interrupt_wrapped_by_an_extension_ends_the_run_as_interrupted(tmp_path, monkeypatch):
    """SIGTERM or Ctrl-C inside a PyTorch call arrives as SystemError (cause: the KeyboardInterrupt); the
    run still logs run_end ``interrupted``, raises KeyboardInterrupt, and the CLI exits 130 without a
    traceback."""
    from train.learning import pipeline

    def interrupted_in_torch(self, it, kind):
        try:
            raise KeyboardInterrupt("signal 15")
        except KeyboardInterrupt as inner:
            raise SystemError("<built-in method> returned a result with an exception set") from inner

    monkeypatch.setattr(pipeline.Pipeline, "phase_train", interrupted_in_torch)
    run = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        run_pipeline(micro_config("iterations=1", "pretrain.enabled=false"), run, progress=False)
    end = [e for e in read_metrics(run / "metrics.jsonl") if e["event"] == "run_end"]
    assert len(end) == 1 and end[0]["reason"] == "interrupted"
    assert json.loads((run / "state.json").read_text())["phase"] == "train"
    result = runner.invoke(app, ["selfplay", "--no-progress", *sum((["--set", s] for s in MICRO), []), "--set",
                                 "pretrain.enabled=false", "--set", "iterations=1", "--from-scratch", "--run-dir",
                                 str(tmp_path / "cli")])
    assert result.exit_code == 130 and "interrupted" in result.output and "Traceback" not in result.output
    # every command (the command group's main) reads the wrapped interrupt as Ctrl-C, and only it
    import typer

    from cli import OneLineErrors

    tiny = typer.Typer(cls=OneLineErrors)

    @tiny.callback()
    def group():  # a group, as the real app is
        pass

    @tiny.command()
    def stop(other: bool = False, plain: bool = False):
        if other:
            raise SystemError("not an interrupt")
        if plain:
            raise KeyboardInterrupt  # Ctrl-C itself, which Typer would end silently
        interrupted_in_torch(None, 1, "upper")

    result = runner.invoke(tiny, ["stop"])
    assert result.exit_code == 130 and "interrupted" in result.output
    result = runner.invoke(tiny, ["stop", "--plain"])
    assert result.exit_code == 130 and result.output.strip().splitlines()[-1] == "interrupted"
    result = runner.invoke(tiny, ["stop", "--other"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemError)


def test_curve_points_and_joint_fit(cycle_run):
    from train.learning.curve import fit_curve, read_points

    run, cfg, _, _ = cycle_run
    points = read_points(run / "curve")
    assert [p["iteration"] for p in points] == [0, 1, 2, 3]
    assert [p["kind"] for p in points] == ["slm", "slm", "upper", "lower"]
    # the baseline: the start net, before any self-play game, against the anchors only
    assert points[0]["player"] == "slm@i0000" and (points[0]["games"], points[0]["hours"]) == (0, 0.0)
    assert [r["b"] for r in points[0]["results"]] == ["random", "greedy"]
    assert "checkpoints/slm-i0000.safetensors" in points[0]["spec"]
    assert points[0]["recipe"]["agent"] == "slm" and points[0]["recipe"]["options"]["slm"].endswith("slm-i0000.safetensors")
    for p in points:
        assert {r["b"] for r in p["results"]} >= {"random", "greedy"}
        assert all(r["wins"] + r["draws"] + r["losses"] == 2 for r in p["results"])
    fit = fit_curve(points, "greedy")
    assert fit["ratings"]["greedy"]["elo"] == 0.0
    events = [e for e in read_metrics(run / "metrics.jsonl") if e["event"] == "curve"]
    assert [e["iteration"] for e in events] == [0, 1, 2, 3]
    first_game = min(i for i, e in enumerate(read_metrics(run / "metrics.jsonl")) if e["event"] == "game")
    assert read_metrics(run / "metrics.jsonl").index(events[0]) < first_game
    assert all(e["elo"] is not None and e["ci95"][0] <= e["elo"] <= e["ci95"][1] for e in events)
    gates = [e for e in read_metrics(run / "metrics.jsonl") if e["event"] == "gate"]
    assert all(e["games"] == 2 and "sprt" in e and e["sprt"]["n"] == 1 for e in gates)


def test_curve_fit_of_one_player_against_one_anchor_is_its_elo():
    from train.learning.curve import fit_curve
    from train.matches.stats import elo_from_score

    points = [{"iteration": 1, "kind": "slm", "player": "slm@i0001", "spec": "x", "games": 4, "hours": 0.1,
               "results": [{"a": "slm@i0001", "b": "expert", "b_spec": "expert", "wins": 3, "draws": 0,
                            "losses": 1}]}]
    fit = fit_curve(points, "expert")
    assert fit["points"][0]["elo"] == pytest.approx(elo_from_score(0.75), abs=1e-3)
    assert fit["ratings"]["expert"]["elo"] == 0.0


def test_progress_lines_without_a_terminal(tmp_path):
    import io

    from train.jobs.dashboard import Dashboard

    out = io.StringIO()
    with Dashboard("lines", tmp_path, micro_config(), interval=0.3, stream=out) as dash:
        dash.update(iteration=1, kind="slm", phase="self-play", games_total=2, games_done=0)
        dash.update(games_done=1)  # no phase change: no line
        time.sleep(1.2)  # the timer adds a status line at least every interval
        dash.update(phase="train")
    lines = out.getvalue().splitlines()
    assert sum("phase self-play" in x for x in lines) >= 2 and "phase train" in lines[-1]


def test_progress_counts_the_games_that_landed(tmp_path):
    """A self-play worker reports its games only when its whole batch in flight ends: meanwhile the
    status counts the games finished on disk (never fewer than reported), in lines and in the live
    panel, keeps the reported number if the count fails, and stops counting when told."""
    import io

    from rich.console import Console

    from train.jobs.dashboard import Dashboard

    for mode in ("lines", "live"):
        dash = Dashboard(mode, tmp_path, micro_config(), stream=io.StringIO())
        dash.update(iteration=1, kind="upper", phase="self-play", games_total=4, games_done=1)
        landed = [3]
        dash.count_finished_games(lambda: landed[0])
        assert dash.games_done() == 3 and "self-play 3/4 " in dash.status_text()
        if mode == "live":
            out = io.StringIO()
            Console(file=out, width=120).print(dash._render())
            assert "3/4 games this iteration" in out.getvalue()
        landed[0] = 0
        assert dash.games_done() == 1

        def moved() -> int:
            raise FileNotFoundError("records moved")

        dash.count_finished_games(moved)
        assert dash.games_done() == 1
        dash.count_finished_games(None)
        dash.update(games_done=2)
        assert dash.games_done() == 2 and "self-play 2/4 " in dash.status_text()


def test_match_progress_lines_without_a_terminal():
    import io

    from train.jobs.dashboard import LineProgress
    from train.matches.arena import new_progress

    assert isinstance(new_progress(), LineProgress)  # pytest's stderr is not a terminal
    out = io.StringIO()
    with LineProgress(interval=0.3, min_gap=0.0, stream=out) as bar:
        task = bar.add_task("a vs b", total=3, completed=0, score="+0 =0 -0")
        bar.update(task, advance=1, score="+1 =0 -0")
        bar.update(task, score="+1 =0 -0")  # no count change: no line
        time.sleep(1.2)  # an unfinished task gets a status line at least every interval
        bar.update(task, advance=2, score="+2 =0 -1")
        bar.update(task, advance=0)
        quiet = bar.add_task("hidden", total=5)
        bar.update(quiet, visible=False)
        bar.update(quiet, advance=1)
    lines = out.getvalue().splitlines()
    assert lines[0].endswith("a vs b: 1/3, +1 =0 -0, elapsed 0:00:00, about 0:00:00 left")
    assert sum("a vs b: 1/3, +1 =0 -0" in x for x in lines) >= 2  # the update's line and the timer's
    assert "a vs b: 3/3, +2 =0 -1, elapsed" in lines[-1] and "left" not in lines[-1]
    assert not any("hidden" in x for x in lines)


def test_match_progress_lines_are_throttled():
    import io

    from train.jobs.dashboard import LineProgress

    out = io.StringIO()
    bar = LineProgress(interval=60.0, min_gap=60.0, stream=out)
    task = bar.add_task("records expert", total=100)
    for _ in range(100):
        bar.advance(task)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and "1/100" in lines[0] and "100/100" in lines[1]
    with pytest.raises(ValueError, match="interval"):
        LineProgress(interval=0)
    with pytest.raises(ValueError, match="min_gap"):
        LineProgress(min_gap=float("nan"))

def test_the_card_lists_gates_that_played_and_counts_the_others():
    """train.learning.modeldir.gate_lines: a gate that played games gets its line; the iterations accepted
    without a game (gate.max_games = 0) are one line, however many."""
    from train.learning.modeldir import gate_lines

    none = "no gate (gate.max_games = 0)"
    gates = [{"iteration": i, "kind": "upper", "accepted": True, "games": 0, "wins": 0, "draws": 0, "losses": 0,
              "decision": none} for i in range(1, 96)]
    assert gate_lines(gates) == [f"- 95 iteration(s) without a gate game, 95 accepted (i1-i95; {none})"]
    played = {"iteration": 7, "kind": "upper", "accepted": False, "games": 8, "wins": 2, "draws": 1, "losses": 5,
              "decision": "SPRT H0"}
    lines = gate_lines([gates[0], played, gates[1]])
    assert lines == ["- gate i7 upper: rejected (+2 =1 -5; SPRT H0)",
                     f"- 2 iteration(s) without a gate game, 2 accepted (i1-i2; {none})"]
    assert gate_lines([]) == []


def test_export_and_continue_from_a_model_directory(cycle_run, tmp_path):
    from nets.io import load
    from train.learning.modeldir import export_run, read_model_config

    run, cfg, _, _ = cycle_run
    model_dir = tmp_path / "model"
    export_run(run, model_dir, "python cli.py selfplay --export test")
    export_run(run, model_dir, "second export")
    for kind in ("slm", "upper", "lower"):
        load(model_dir / f"{kind}.safetensors", expected_kind=kind)
    lineage = json.loads((model_dir / "lineage.json").read_text())
    assert [e["command"] for e in lineage] == ["python cli.py selfplay --export test", "second export"]
    assert lineage[0]["games"] == 6 and len(lineage[0]["gates"]) == 3
    card = (model_dir / "README.md").read_text()
    assert card.count("## Lineage") == 1 and card.count("gate i2 upper") == 2
    stored = validate_config(read_model_config(model_dir))
    assert stored == cfg.model_copy(update={"export_dir": None})
    # a new run continues from the model directory (its nets, its config) without pretraining
    new = tmp_path / "run"
    result = runner.invoke(app, ["selfplay", "--model-dir", str(model_dir), "--run-dir", str(new), "--no-progress",
                                 "--model", "slm", "--iterations", "1", "--set", "curve.every=0", "--json"])
    assert result.exit_code == 0, result.output
    init = [e for e in read_metrics(new / "metrics.jsonl") if e["event"] == "init"]
    assert init[0]["init_from"] == str(model_dir / "slm.safetensors") and not (new / "pretrain").exists()
    assert json.loads(result.output.strip().splitlines()[-1])["state"]["init_from"] == str(model_dir)
    # with nets.tactics the start net is widened: the tactical planes, the same function
    wide_run = tmp_path / "run-tactics"
    result = runner.invoke(app, ["selfplay", "--model-dir", str(model_dir), "--run-dir", str(wide_run), "--no-progress",
                                 "--model", "lower", "--iterations", "1", "--set", "curve.every=0",
                                 "--set", "nets.tactics=true"])
    assert result.exit_code == 0, result.output
    start, start_config, _ = load(model_dir / "lower.safetensors", expected_kind="lower")
    wide, wide_config, _ = load(wide_run / "checkpoints" / "lower-i0000.safetensors", expected_kind="lower")
    assert wide_config.tactics and not start_config.tactics
    x = torch.rand(4, 14, 14, 14).round()
    a = torch.tensor([5, 6, 7, 8])
    with torch.no_grad():
        torch.testing.assert_close(wide.float().eval()(x, a), start.float().eval()(x, a), atol=2e-3, rtol=0)
    assert load(wide_run / "best" / "lower.safetensors")[1].tactics
    # a start net that has the planes already is copied as it is, its own metadata included
    from nets.io import read_metadata, save

    wide_dir = tmp_path / "model-tactics"
    shutil.copytree(model_dir, wide_dir)
    save(wide, wide_config, wide_dir / "lower.safetensors", extra={"exported_from": "a tactics run"})
    again = tmp_path / "run-tactics-again"
    result = runner.invoke(app, ["selfplay", "--model-dir", str(wide_dir), "--run-dir", str(again), "--no-progress",
                                 "--model", "lower", "--iterations", "1", "--set", "curve.every=0",
                                 "--set", "nets.tactics=true"])
    assert result.exit_code == 0, result.output
    first = again / "checkpoints" / "lower-i0000.safetensors"
    assert first.read_bytes() == (wide_dir / "lower.safetensors").read_bytes()
    assert json.loads(read_metadata(first)["extra"]) == {"exported_from": "a tactics run"}


def test_the_export_gate_plays_the_incumbent_and_guards_the_export(tmp_path, monkeypatch):
    """``selfplay --export DIR``: the run's best net plays DIR's net of its kind (an SPRT capped at
    ``gate.export_games``; undecided at the cap it fails, or the score decides with
    ``gate.export_at_cap = "threshold"``); a rerun resumes the same games; a directory
    without the kind's net has nothing to beat; a failed gate writes nothing and exits with status 1."""
    from train.learning import modeldir

    run = tmp_path / "run"
    cfg = micro_config("model=upper", "iterations=1", "seed=5", "gate.max_games=0", "curve.every=0",
                       "gate.export_games=2")
    run_pipeline(cfg, run, progress=False)
    incumbent = tmp_path / "incumbent"
    incumbent.mkdir()
    shutil.copyfile(run / "checkpoints" / "upper-i0000.safetensors", incumbent / "upper.safetensors")
    rows = modeldir.export_gate(run, incumbent, workers=0)
    assert [(r["kind"], r["iteration"], r["against"]) for r in rows] == [("upper", 1, str(incumbent / "upper.safetensors"))]
    (r,) = rows
    assert r["games"] == 2 and r["wins"] + r["draws"] + r["losses"] == 2
    assert r["decision"].startswith("cap of 2 games") and not r["passed"]  # 2 games never decide; undecided fails
    assert modeldir.export_gate(run, incumbent, workers=0) == rows  # resumed from the records on disk
    at_threshold = cfg.model_copy(update={"gate": cfg.gate.model_copy(update={"export_at_cap": "threshold"})})
    (by_score,) = modeldir.export_gate(run, incumbent, workers=0, config=at_threshold)
    assert by_score["games"] == 2 and by_score["passed"] == (by_score["win_rate"] > 0.5)
    assert "vs threshold 0.5" in by_score["decision"]
    (free,) = modeldir.export_gate(run, tmp_path / "empty", workers=0)
    assert free["passed"] and "games" not in free and "no upper.safetensors" in free["decision"]

    fresh = tmp_path / "fresh"
    result = runner.invoke(app, ["selfplay", "--resume", str(run), "--export", str(fresh), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output.strip().splitlines()[-1])
    assert out["export_gate"][0]["passed"] and out["reason"] == "export only"
    assert json.loads((fresh / "lineage.json").read_text())[0]["export_gate"][0]["decision"].startswith("no gate")
    assert "export gate upper i1" in (fresh / "README.md").read_text()
    # config.toml: the run's values, but the directory keeps its own run length; unchanged values are not rewritten
    assert validate_config(modeldir.read_model_config(fresh)) == cfg
    toml_path = fresh / "config.toml"
    toml_path.write_text("# a note by hand\n" + toml_path.read_text().replace("iterations = 1", "iterations = 7"))
    modeldir.export_run(run, fresh, "again")
    assert toml_path.read_text().startswith("# a note by hand")
    toml_path.write_text(toml_path.read_text().replace("seed = 5", "seed = 6").replace("workers = 0", "minutes = 30.0\nworkers = 0"))
    modeldir.export_run(run, fresh, "again")
    stored = validate_config(modeldir.read_model_config(fresh))
    assert (stored.seed, stored.iterations, stored.minutes) == (5, 7, 30.0)
    assert stored == cfg.model_copy(update={"iterations": 7, "minutes": 30.0})

    failed = {**r, "passed": False, "decision": "SPRT accepted H0 after 2 games"}
    monkeypatch.setattr(modeldir, "export_gate", lambda *a, **k: [failed])
    guarded = tmp_path / "guarded"
    result = runner.invoke(app, ["selfplay", "--resume", str(run), "--export", str(guarded)])
    assert result.exit_code == 1, result.output
    assert "failed" in result.stderr and "not exported" in result.stdout
    assert not guarded.exists() or not any(guarded.iterdir())


def test_a_teacher_prior_is_blended_into_the_upper_targets(tmp_path):
    """Distillation targets: (1 - mix) one-hot(played) + mix prior.expert over the legal paths, in the
    paths' action order; the per-record cache gives the same samples back; a teacher is refused for
    another net and a bad teacher spec names the field."""
    from core.notation import parse_move
    from core.records import GameRecord
    from knowledge.priors import ExpertPathPrior
    from nets.encoding import encode_paths
    from train.learning.supervised import SupervisedError, samples_from_record, samples_from_records

    states = _states(40)
    final = states[-1]
    moves = [str(b.last_move) for b in states[1:]] + [str(make_agent("expert", seed=9).select(final))]
    record = GameRecord.from_moves(moves, RULES.model_copy(update={"max_battle_plies": 300}), result="w")
    replay = record.replay()
    mix = 0.3
    teacher = ExpertPathPrior(temperature=10.0, plies=1)
    upper = samples_from_record(record, "upper", teacher, mix)
    battle = [(i, t) for i, t in enumerate(record.moves) if i >= 196 and replay[i].paths().m > 1]
    assert len(upper) == len(battle) > 0
    for k, (i, text) in enumerate(battle):
        s = replay[i]
        ps = s.paths()
        acts = encode_paths(ps.pts, ps.off, ps.jump, ps.m).astype(np.int64)
        want = mix * teacher.prior(s, ps).astype(np.float64) + (1 - mix) * (acts == encode_upper(parse_move(text)))
        merged = {}
        for a, v in zip(acts, want):
            merged[int(a)] = merged.get(int(a), 0.0) + v
        idx, val = upper.policy(k)
        assert dict(zip(idx.tolist(), val.tolist())) == pytest.approx(merged, abs=1e-6)
    spec = "prior.expert:plies=1"
    first = samples_from_records([record], "upper", teacher=spec, teacher_mix=mix, cache_dir=tmp_path / "cache")
    assert len(list((tmp_path / "cache").glob("*.npz"))) == 1
    again = samples_from_records([record], "upper", teacher=spec, teacher_mix=mix, cache_dir=tmp_path / "cache")
    assert np.array_equal(first.pi_val, again.pi_val) and np.array_equal(first.planes, again.planes)
    assert np.allclose(first.pi_val, upper.pi_val, atol=1e-6)
    with pytest.raises(SupervisedError, match="upper"):
        samples_from_records([record], "slm", teacher=spec)
    with pytest.raises(SupervisedError, match="teacher"):
        samples_from_records([record], "upper", teacher="prior.nope")


def test_drift_value_target_is_the_change_of_the_margin_k_plies_on(tmp_path):
    """``--value-drift K``: each upper sample's z is tanh((m(t + K) - m(t)) / scale) of the evaluator's margin
    for the side to move, computed here position by position; within K plies of a game's end it is the
    result (an infinite margin), or nothing with ``ends = "drop"``, and a record that stops without one
    gives no sample there; the policy target is still the played move; the cache keeps the value targets
    apart; bad targets are refused naming the field."""
    import math

    from core.board import DRAW
    from core.notation import parse_move
    from core.records import GameRecord
    from knowledge.evaluation import ExpertEvaluator
    from train.learning.drift import DriftTarget, drift_values
    from train.learning.supervised import SupervisedError, samples_from_record, samples_from_records

    states = _states(40)
    moves = [str(b.last_move) for b in states[1:]] + [str(make_agent("expert", seed=9).select(states[-1]))]
    k = 4
    drift = DriftTarget(k, "eval.expert")
    ev = ExpertEvaluator()

    def reference(replay, ends="result"):
        last, final = len(replay) - 1, replay[-1]
        out = []
        for t, pos in enumerate(replay):
            if t == last or pos.phase != 1:
                out.append(None)
            elif t + k < last or (t + k == last and not final.is_terminal()):
                same = replay[t + k].side == pos.side
                out.append(math.tanh((ev.margin(replay[t + k]) - ev.margin(pos)) / ev.scale) if same else None)
            elif final.is_terminal() and ends == "result":
                w = final.winner()
                out.append(math.tanh(-ev.margin(pos) / ev.scale) if w == DRAW else (1.0 if w == pos.side else -1.0))
            else:
                out.append(None)
        return out

    rules = RULES.model_copy(update={"max_battle_plies": 300})
    if GameRecord.from_moves(moves, rules).final_state().is_terminal():
        moves = moves[:-1]  # the game may end on its last move: keep the record open
    open_ended = GameRecord.from_moves(moves, rules, result="w")
    ended = GameRecord.from_moves(moves, RULES.model_copy(update={"max_battle_plies": len(moves) - 196}))
    assert not open_ended.final_state().is_terminal() and ended.final_state().is_terminal()
    for record in (open_ended, ended):
        replay = record.replay()
        want = reference(replay)
        got = drift_values(replay, drift)
        assert [None if np.isnan(g) else pytest.approx(g, abs=1e-6) for g in got] == want
        last = len(replay) - 1
        if record is open_ended:  # t + K past the last position: no target
            assert all(w is None for w in want[last - k + 1:last]) and want[last - k] is not None
        else:  # the game ends within K plies: its result (a draw's: the margin lost)
            assert all(w is not None for w in want[last - k:last])
            assert all(w in (-1.0, 1.0) for w in want[last - k:last]) or replay[-1].winner() == DRAW
        assert sum(w is not None for w in want) > 20 and any(w not in (None, 0.0, 1.0, -1.0) for w in want)
        cut = DriftTarget(k, "eval.expert", "drop")
        cut_want = reference(replay, "drop")
        got = drift_values(replay, cut)
        assert [None if np.isnan(g) else pytest.approx(g, abs=1e-6) for g in got] == cut_want
        if record is open_ended:  # no end within K plies: the same target
            assert cut_want == want
        else:  # the same away from the end, nothing within K plies of it
            assert cut_want[:last - k] == want[:last - k] and all(w is None for w in cut_want[last - k:])
        upper = samples_from_record(record, "upper", drift=drift)
        searched = [i for i in range(196, len(record.moves)) if replay[i].paths().m > 1]
        kept = [i for i in searched if want[i] is not None]
        assert 0 < len(upper) == len(kept) and (len(kept) < len(searched)) == (record is open_ended)
        for j, i in enumerate(kept):
            assert upper.z[j] == pytest.approx(want[i], abs=1e-6)
            idx, val = upper.policy(j)
            assert idx[np.argmax(val)] == encode_upper(parse_move(record.moves[i]))
    cache = tmp_path / "cache"
    upper = samples_from_record(open_ended, "upper", drift=drift)
    again = samples_from_records([open_ended], "upper", drift=drift, cache_dir=cache)
    result = samples_from_records([open_ended], "upper", cache_dir=cache)
    cut = samples_from_records([ended], "upper", drift=DriftTarget(k, "eval.expert", "drop"), cache_dir=cache)
    assert len(list(cache.glob("*.npz"))) == 3
    assert np.array_equal(again.z, upper.z) and set(np.unique(result.z)) == {-1.0, 1.0}
    assert 0 < len(cut) < len(samples_from_record(ended, "upper", drift=drift))
    with pytest.raises(SupervisedError, match="upper"):
        samples_from_records([open_ended], "slm", drift=drift)
    with pytest.raises(SupervisedError, match="even"):
        samples_from_records([open_ended], "upper", drift=DriftTarget(3))
    with pytest.raises(SupervisedError, match="evaluator"):
        samples_from_records([open_ended], "upper", drift=DriftTarget(2, "eval.nope"))
    with pytest.raises(SupervisedError, match="ends"):
        samples_from_records([open_ended], "upper", drift=DriftTarget(2, ends="end"))


def _train_one_head(states, head: str) -> tuple[Learner, Batch, list[dict[str, float]]]:
    """Five steps of a ``learner.trainable = head`` learner (``"value"`` or ``"policy"``) on one batch, with
    what both settings promise checked: only tensors of ``head`` change (its own BatchNorm statistics
    among them), the other output (policy logits for ``"value"``, value for ``"policy"``) is unchanged,
    and a lower net, alone or in a cycle, is refused. Returns the learner, the batch and the steps' terms."""
    frozen = 0 if head == "value" else 1  # the index of the output that must not move in (logits, value)
    cfg = micro_config(f"learner.trainable={head}", "learner.schedule=constant")
    samples = _policy_samples("upper", states, np.random.default_rng(4)).build()
    learner = Learner(cfg.nets.net_config("upper"), cfg.learner, seed=0)
    before = {k: v.clone() for k, v in learner.model.state_dict().items()}
    batch = make_batch(samples, np.arange(min(16, len(samples))))
    planes = torch.from_numpy(batch.planes)
    learner.model.eval()
    with torch.no_grad():
        frozen_before = learner.model(planes)[frozen]
    outs = [learner.train_step(batch) for _ in range(5)]
    after = learner.model.state_dict()
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed and all(k.startswith(f"{head}.") for k in changed)
    assert any(k.startswith(f"{head}.") and "running" in k for k in changed)  # the head's own BatchNorm learns
    learner.model.eval()
    with torch.no_grad():
        assert torch.equal(learner.model(planes)[frozen], frozen_before)
    with pytest.raises(ValueError, match="lower"):
        Learner(cfg.nets.net_config("lower"), cfg.learner, seed=0)
    for model in ("lower", "cycle"):  # a run that would train the lower net is refused before it starts
        with pytest.raises(ConfigError, match="trainable"):
            micro_config(f"model={model}", f"learner.trainable={head}")
    return learner, batch, outs


def test_a_value_only_learner_changes_the_value_head_alone(states):
    """``learner.trainable = "value"``: after training steps every trunk and policy-head tensor (BatchNorm
    statistics included) is unchanged, so the policy logits are too, and the value head has learnt; its
    steps report no policy term, and the value-only loss is the full loss's value term; a lower net is
    refused (:func:`_train_one_head`)."""
    learner, batch, outs = _train_one_head(states, "value")
    assert all(out["policy"] == 0.0 and out["value"] > 0 for out in outs)
    with torch.no_grad():
        both, value_only = learner.losses(batch), learner.losses(batch, policy=False)
    assert float(value_only["value"]) == pytest.approx(float(both["value"]), rel=1e-6) and float(both["policy"]) > 0


def test_a_policy_only_learner_changes_the_policy_head_alone(states):
    """``learner.trainable = "policy"``: after training steps every trunk and value-head tensor (BatchNorm
    statistics included) is unchanged, so the value is too, and the policy head has learnt; the value term
    is still reported; a lower net is refused (:func:`_train_one_head`)."""
    _, _, outs = _train_one_head(states, "policy")
    assert all(out["policy"] > 0 and out["value"] > 0 for out in outs)


def test_upper_selfplay_with_a_teacher_blends_its_prior_into_the_targets():
    """``selfplay.teacher``: each upper sample's target is (1 - mix) visits + mix teacher prior, so every
    legal path of the position gets at least mix times its teacher prior (the visits add the rest)."""
    from knowledge.priors import ExpertPathPrior
    from nets.encoding import encode_paths
    from nets.model import build
    from train.learning.config import resolve_names
    from train.learning.selfplay import play_upper_game

    mix = 0.4
    cfg = micro_config("selfplay.teacher=prior.expert:plies=1", f"selfplay.teacher_mix={mix}")
    net = build(cfg.nets.net_config("upper")).eval()
    game, builder, _ = play_upper_game(cfg, net, seed=4)
    samples = builder.build()
    assert len(samples) > 0
    teacher = ExpertPathPrior(plies=1)
    replay = GameState.initial(cfg.ruleset)
    k = 0
    for text, info in zip(game.moves, game.search):
        if info is not None and replay.phase == 1:  # a searched battle move gave sample k
            ps = replay.paths()
            acts = encode_paths(ps.pts, ps.off, ps.jump, ps.m)
            want = {}
            for a, p in zip(acts.tolist(), teacher.prior(replay, ps).tolist()):
                want[a] = want.get(a, 0.0) + mix * p
            idx, val = samples.policy(k)
            got = dict(zip(idx.tolist(), val.tolist()))
            assert set(want) <= set(got)
            assert all(got[a] >= w - 1e-6 for a, w in want.items())
            assert sum(got.values()) == pytest.approx(1.0, abs=1e-5)
            k += 1
        replay = replay.apply(text)
    assert k == len(samples)
    with pytest.raises(Exception, match="teacher"):
        resolve_names(micro_config("selfplay.teacher=prior.nope"))


def test_upper_selfplay_with_value_drift_targets_the_margins_change(monkeypatch):
    """``selfplay.value_drift = K``: each upper sample's z is the drift value of its position in the played
    game (``drift_values`` over the replayed record, the self-play search's own ``value_eval``), not the
    result; an odd K or a drift without a value evaluator is refused naming the field."""
    from core.records import GameRecord
    from nets.model import build
    from train.learning.config import resolve_names
    from train.learning.drift import DriftTarget, drift_values
    from train.learning.selfplay import play_upper_game

    cfg = micro_config("selfplay.value_drift=2", "selfplay.search.value_evaluator=eval.expert")
    resolve_names(cfg)
    net = build(cfg.nets.net_config("upper")).eval()
    game, builder, _ = play_upper_game(cfg, net, seed=4)
    samples = builder.build()
    replay = GameRecord.from_moves(game.moves, cfg.ruleset).replay()
    assert replay[-1].is_terminal()
    want = drift_values(replay, DriftTarget(2, "eval.expert"))
    rows = [i for i, info in enumerate(game.search) if info is not None and replay[i].phase == 1]
    assert len(rows) == len(samples) > 4
    np.testing.assert_allclose(samples.z, want[rows], atol=1e-6)
    assert len(set(np.round(samples.z, 4))) > 2  # not the result
    # value_drift_ends = "drop": the same game, no value target (NaN) within K plies of its end
    cut_cfg = micro_config("selfplay.value_drift=2", "selfplay.search.value_evaluator=eval.expert", "selfplay.value_drift_ends=drop")
    assert cut_cfg.drift_target("upper") == DriftTarget(2, "eval.expert", "drop")
    cut_game, cut_builder, _ = play_upper_game(cut_cfg, net, seed=4)
    cut = cut_builder.build()
    assert cut_game.moves == game.moves and len(cut) == len(samples)
    cut_want = drift_values(replay, DriftTarget(2, "eval.expert", "drop"))
    np.testing.assert_allclose(cut.z, cut_want[rows], atol=1e-6)  # NaN where NaN
    near_end = np.array(rows) >= len(replay) - 1 - 2
    assert np.isnan(cut.z).tolist() == near_end.tolist() and near_end.any()
    from train.learning.learner import Learner

    learner = Learner(cut_cfg.nets.net_config("upper"), cut_cfg.learner, model=net)
    step = learner.train_step(make_batch(cut, np.arange(len(cut))))  # the NaN rows train the policy only
    assert np.isfinite(step["value"]) and np.isfinite(step["total"])
    assert all(torch.isfinite(p).all() for p in net.parameters())
    with pytest.raises(ConfigError, match="value_drift_ends"):
        micro_config("selfplay.value_drift_ends=end")
    with pytest.raises(ConfigError, match="value_drift"):
        micro_config("selfplay.value_drift=3")
    with pytest.raises(ConfigError, match="value_eval"):
        micro_config("selfplay.value_drift=2", "selfplay.search.value_evaluator=none")
    from knowledge.plugins import REGISTRY
    from knowledge.registry import Entry

    class NoMargin:  # an evaluator without a margin
        scale = 1.0

        def value(self, state):
            return 0.0

    monkeypatch.setitem(REGISTRY._entries, "eval.no-margin", Entry("eval.no-margin", "evaluator", NoMargin, ""))
    with pytest.raises(ConfigError, match="selfplay.value_drift.*no margin"):
        resolve_names(micro_config("selfplay.value_drift=2", "selfplay.search.value_evaluator=eval.no-margin",
                                   "selfplay.search.value_center=false"))


def test_net_only_selfplay_learns_a_teachers_value_blended_with_the_result():
    """``value_drift_mode = "value"``, ``value_drift_evaluator`` and ``value_result_mix``: a net-only
    search (no value evaluator) gives each upper sample ``w r + (1 - w) tanh(m(t) / scale)``, the
    teacher's value of its own position blended with the result; each field's misuse is one error
    naming it."""
    from core.records import GameRecord
    from nets.model import build
    from train.learning.config import resolve_names
    from train.learning.drift import DriftTarget, drift_values
    from train.learning.selfplay import play_upper_game

    fields = ("selfplay.search.value_evaluator=none", "selfplay.value_drift=0", "selfplay.value_drift_mode=value",
              "selfplay.value_drift_evaluator=eval.expert", "selfplay.value_result_mix=0.5")
    cfg = micro_config(*fields)
    resolve_names(cfg)
    target = DriftTarget(0, "eval.expert", mode="value", result_mix=0.5)
    assert cfg.drift_target("upper") == target and cfg.drift_target("slm") is None
    net = build(cfg.nets.net_config("upper")).eval()
    game, builder, _ = play_upper_game(cfg, net, seed=4)
    samples = builder.build()
    replay = GameRecord.from_moves(game.moves, cfg.ruleset).replay()
    rows = [i for i, info in enumerate(game.search) if info is not None and replay[i].phase == 1]
    assert len(rows) == len(samples) > 4
    np.testing.assert_allclose(samples.z, drift_values(replay, target)[rows], atol=1e-6)
    outcome = drift_values(replay, DriftTarget(0, "eval.expert", mode="value", result_mix=1.0))[rows]
    assert not np.allclose(samples.z, outcome) and len(set(np.round(samples.z, 4))) > 2
    with pytest.raises(ConfigError, match="value_result_mix"):
        micro_config("selfplay.value_drift=0", "selfplay.value_result_mix=0.5")  # no evaluator target to blend
    with pytest.raises(ConfigError, match="value_result_mix"):
        micro_config(*fields[:-1], "selfplay.value_result_mix=2")
    staged = micro_config(*fields, "selfplay.value_result_stones=29")
    assert staged.drift_target("upper") == DriftTarget(0, "eval.expert", mode="value", result_mix=0.5, result_stones=29)
    with pytest.raises(ConfigError, match="value_result_stones"):
        micro_config("selfplay.value_drift=0", "selfplay.value_result_stones=29")  # no evaluator target to replace
    with pytest.raises(ConfigError, match="value_result_stones"):
        micro_config(*fields, "selfplay.value_result_stones=99")
    band = micro_config(*fields, "selfplay.value_result_stones=29", "selfplay.value_result_from=14")
    assert band.drift_target("upper") == DriftTarget(0, "eval.expert", mode="value", result_mix=0.5, result_stones=29,
                                                     result_from=14)
    with pytest.raises(ConfigError, match="value_result_from"):
        micro_config(*fields, "selfplay.value_result_stones=29", "selfplay.value_result_from=30")
    with pytest.raises(ConfigError, match="value_result_from"):
        micro_config(*fields, "selfplay.value_result_from=5")  # a band without its top
    with pytest.raises(ConfigError, match="value_drift_mode"):
        micro_config(*fields[:2], "selfplay.value_drift_mode=outcome")
    with pytest.raises(ConfigError, match="value_drift_evaluator"):
        micro_config(*fields[:3])  # a value target without an evaluator
    with pytest.raises(ConfigError, match="value_drift_evaluator"):
        resolve_names(micro_config(*fields[:3], "selfplay.value_drift_evaluator=eval.nope"))


def test_the_upper_value_target_is_the_drift_by_default_in_selfplay_and_its_pretrain(tmp_path, monkeypatch):
    """``TrainConfig.drift_target``: the upper net's value target is the drift of the net search's leaf
    value over ``selfplay.value_drift`` (8) plies by default (the value the net agents blend in), the
    result with ``value_drift = 0`` and for the other nets; the pipeline's pretrain phase trains the
    same target as self-play."""
    from search.config import preset
    from train.learning import supervised
    from train.learning.drift import DriftTarget

    shipped_value = preset("shipped").value_evaluator
    assert preset("shipped").value_mix < 1  # else the net's value would not be in the leaf value, nor worth a drift target
    cfg = micro_config()
    assert cfg.drift_target("upper") == DriftTarget(8, shipped_value)
    assert micro_config("selfplay.value_drift=6").drift_target("upper") == DriftTarget(6, shipped_value)
    assert cfg.drift_target("slm") is None and cfg.drift_target("lower") is None
    assert micro_config("selfplay.value_drift=0").drift_target("upper") is None
    with pytest.raises(ConfigError, match="value_drift = 0"):
        micro_config("selfplay.search.value_evaluator=none")
    seen = []
    real = supervised.samples_from_records

    def spy(records, kind, *args, **kwargs):
        seen.append((kind, kwargs.get("drift")))
        return real(records, kind, *args, **kwargs)

    monkeypatch.setattr(supervised, "samples_from_records", spy)
    run_pipeline(micro_config("model=upper", "iterations=1", "gate.max_games=0",
                              "gate.expert_games=0", "curve.every=0", "selfplay.value_drift=4"),
                 tmp_path / "run", progress=False)
    assert seen == [("upper", DriftTarget(4, shipped_value))]


def test_upper_selfplay_with_gumbel_targets_the_improved_policy():
    """``selfplay.search.root_selection=gumbel``: each searched battle sample's policy target is the Gumbel
    search's improved policy, positive on every root child (kept path) although two simulations visit
    one of them; the gate and curve agents search the same way (without noise)."""
    from knowledge.plugins import REGISTRY
    from nets.encoding import encode_paths
    from nets.model import build
    from train.learning.selfplay import net_agent, play_upper_game

    cfg = micro_config("selfplay.search.root_selection=gumbel", "selfplay.search.gumbel_m=8")
    net = build(cfg.nets.net_config("upper")).eval()
    game, builder, _ = play_upper_game(cfg, net, seed=4)
    samples = builder.build()
    pruner = REGISTRY.create(cfg.selfplay.search.expansion_pruner, "expansion_pruner")
    replay, k, spread = GameState.initial(cfg.ruleset), 0, 0
    for text, info in zip(game.moves, game.search):
        if info is not None and replay.phase == 1:
            ps = replay.paths()
            kept = encode_paths(ps.pts, ps.off, ps.jump, ps.m)[np.asarray(pruner.keep(replay, ps), np.int64)]
            idx, val = samples.policy(k)
            assert set(idx.tolist()) == set(kept.tolist())
            assert (val > 0).all() and val.sum() == pytest.approx(1.0, abs=1e-5)
            spread += len(idx) > 1
            k += 1
        replay = replay.apply(text)
    assert k == len(samples) and spread > 0
    options = net_agent("upper", "/tmp/upper.safetensors", cfg).options
    assert (options.root_selection, options.gumbel_m, options.gumbel_scale) == ("gumbel", 8, 0.0)


def test_upper_selfplay_with_playout_caps_samples_only_its_full_searches():
    """``selfplay.full_simulations`` (playout-cap randomization): every searched battle move runs the
    fast or the full count, both occur, and exactly the full ones gave the samples, in order, with
    their search's children; a full count below the fast one is refused."""
    from nets.model import build
    from train.learning.selfplay import play_upper_game

    cfg = micro_config("selfplay.search.simulations=2", "selfplay.full_simulations=5", "selfplay.full_fraction=0.5",
                       "ruleset.max_battle_plies=40")
    net = build(cfg.nets.net_config("upper")).eval()
    game, builder, _ = play_upper_game(cfg, net, seed=4)
    samples = builder.build()
    replay, k, counts = GameState.initial(cfg.ruleset), 0, {2: 0, 5: 0}
    for text, info in zip(game.moves, game.search):
        if info is not None and replay.phase == 1:
            counts[info["simulations"]] += 1  # a KeyError: a search of another count
            if info["simulations"] == 5:
                idx, val = samples.policy(k)
                assert len(idx) >= 1 and val.sum() == pytest.approx(1.0, abs=1e-5)
                k += 1
        replay = replay.apply(text)
    assert k == len(samples) == counts[5] and counts[2] > 0 and counts[5] > 0
    assert game.searched == counts[2] + counts[5]
    with pytest.raises(ConfigError, match="full_simulations"):
        micro_config("selfplay.search.simulations=4", "selfplay.full_simulations=3")


@pytest.mark.parametrize("victim_eval", [None, "eval.expert"])
def test_upper_selfplay_chooses_the_victims_as_the_shipped_agent(victim_eval):
    """``selfplay.search.victim_evaluator``: every square-forming move of the upper net's self-play takes, among the
    capture pruner's 8 best sets, the one after which the plugin's value for the opponent is lowest
    (``None``: the pruner's best set), searched or forced; the gate's agent spec chooses the same way."""
    from knowledge.plugins import REGISTRY
    from nets.model import build
    from search.victims import after_path
    from train.learning.selfplay import net_agent, play_upper_game

    cfg = micro_config(f"selfplay.search.victim_evaluator={victim_eval or 'none'}", "ruleset.max_battle_plies=120")
    assert cfg.selfplay.search.victim_evaluator == victim_eval
    game, _, _ = play_upper_game(cfg, build(cfg.nets.net_config("upper")).eval(), seed=5)
    pruner = REGISTRY.create(cfg.selfplay.search.capture_pruner, "capture_pruner")
    evaluator = REGISTRY.create(victim_eval, "evaluator") if victim_eval else None
    replay, captures, chosen = GameState.initial(cfg.ruleset), 0, 0
    for text in game.moves:
        move = replay.parse_move(text)
        if replay.phase == 1 and move.victims:
            after = after_path(replay, move.path, move.jump, len(move.victims))
            sets = [tuple(x) for x in pruner.candidates_after(after, len(move.victims))[0]][:8]
            if evaluator is None:
                assert move.victims == sets[0]
            else:
                values = np.array([evaluator.value(replay._play(type(move)(move.path, move.jump, v))) for v in sets])
                assert move.victims in sets
                assert values[sets.index(move.victims)] <= values.min() + 1e-6  # the lowest, up to ties
                chosen += values[sets.index(move.victims)] < values[0] - 1e-6
            captures += 1
        replay = replay.apply(text)
    assert captures > 0 and (evaluator is None or chosen > 0)  # the plugin's choice is not the pruner's first
    assert net_agent("upper", "/tmp/upper.safetensors", cfg).options.victim_evaluator == victim_eval


@pytest.mark.parametrize("target", [None, "eval.expert:plies=1"])
def test_lower_selfplay_values_every_candidate_with_lower_eval(target):
    """``selfplay.lower_eval``: every candidate victim set of every capture gives a sample (the pruner's
    order), valued by its advantage (minus the evaluator's value of the position after it, less the mean
    over the capture's sets, scaled and clipped); without it, one sample per
    capture (the chosen set) valued by the game's outcome for the capturing side."""
    from core.notation import Move, parse_move
    from knowledge.plugins import REGISTRY
    from nets.features import state_planes
    from nets.model import build
    from train.learning.selfplay import play_lower_game

    extra = ["ruleset.max_battle_plies=80", "selfplay.lower_eval_scale=0.05"] + (
        [f"selfplay.lower_eval={target}"] if target else [])
    cfg = micro_config(*extra)
    net = build(cfg.nets.net_config("lower")).eval()
    game, builder, info = play_lower_game(cfg, net, seed=5)
    samples = builder.build()
    pruner = REGISTRY.create(cfg.selfplay.search.capture_pruner, "capture_pruner")
    evaluator = REGISTRY.create(target, "evaluator") if target else None
    returns = game.state.returns()
    replay, k, captures, wider = GameState.initial(cfg.ruleset), 0, 0, 0
    for text, meta in zip(game.moves, game.search):
        move = parse_move(text)
        if meta is not None:  # a capture whose victims the lower net chose
            sets = [tuple(v) for v in pruner.candidates(replay, move.path, move.jump)[0]]
            assert meta["candidates"] == len(sets) and move.victims in sets
            chosen = replay._play(move)
            afters = [replay._play(Move(move.path, move.jump, v)) for v in sets] if target else [chosen]
            values = [-evaluator.value(a) for a in afters] if target else [returns[replay.side]]
            mean = sum(values) / len(values) if target else 0.0
            for after, value in zip(afters, values):
                assert np.array_equal(samples.planes[k], state_planes(after).astype(np.float16))
                want = np.clip((value - mean) / cfg.selfplay.lower_eval_scale, -1, 1) if target else value
                assert samples.z[k] == pytest.approx(want, abs=1e-6)
                if target:  # the capture's sets share its number
                    assert samples.group[k] == captures
                k += 1
            captures += 1
            wider += len(sets) > 1
        replay = replay.apply(text)
    assert k == len(samples) and captures == info["captures"] > 0
    assert info["lower_target"] == (target or "outcome")
    assert (samples.group is None) == (target is None)
    if target:
        assert wider > 0 and len(samples) > captures


# ============================================================================ the within-capture ranking loss
def _group_loss_reference(q, z, group, unit=0.0):
    """``nets.losses.group_ranking_loss`` written out capture by capture with numpy."""
    from nets.losses import GROUP_MIN_SD, GROUP_Q_SCALE, GROUP_Z_CLIP

    losses = []
    for g in sorted(set(group.tolist())):
        qs, zs = q[group == g].astype(np.float64), z[group == g].astype(np.float64)
        if len(qs) < 2 or zs.std() < GROUP_MIN_SD:
            continue
        if unit > 0:
            zz = (zs - zs.mean()) / unit
        else:
            zz = np.clip((zs - zs.mean()) / zs.std(), -GROUP_Z_CLIP, GROUP_Z_CLIP)
        losses.append(np.mean((GROUP_Q_SCALE * (qs - qs.mean()) - zz) ** 2) + (qs.mean() - zs.mean()) ** 2)
    return float(np.mean(losses)) if losses else 0.0


def _choice_loss_reference(q, z, group, temperature):
    """``nets.losses.group_choice_loss`` written out capture by capture with numpy."""
    from nets.losses import GROUP_MIN_SD, GROUP_Q_SCALE

    def log_softmax(x):
        x = x - x.max()
        return x - np.log(np.exp(x).sum())

    losses = []
    for g in sorted(set(group.tolist())):
        qs, zs = q[group == g].astype(np.float64), z[group == g].astype(np.float64)
        if len(qs) < 2 or zs.max() - zs.min() < GROUP_MIN_SD:
            continue
        log_p, log_q = log_softmax(zs / temperature), log_softmax(GROUP_Q_SCALE * qs / temperature)
        losses.append(np.sum(np.exp(log_p) * (log_p - log_q)) + (qs.mean() - zs.mean()) ** 2)
    return float(np.mean(losses)) if losses else 0.0


GROUPED_LOSS_CASES = [("group", 0.0), ("group", 0.05), ("group", 1.0),
                      ("choice", 0.02), ("choice", 0.1), ("choice", 1.0)]


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.floats(-1, 1), st.sampled_from([-0.5, 0.0, 0.01, 0.3, 1.0])),
                min_size=1, max_size=40), st.floats(-0.7, 0.7), st.sampled_from(GROUPED_LOSS_CASES))
def test_grouped_losses_match_their_references(rows, shift, case):
    """``group_ranking_loss`` (with its unit) and ``group_choice_loss`` (with its temperature) against
    their numpy references; one constant added to one capture's Q and targets changes neither."""
    from nets.losses import group_choice_loss, group_ranking_loss

    name, parameter = case
    function, reference = ((group_ranking_loss, _group_loss_reference) if name == "group"
                           else (group_choice_loss, _choice_loss_reference))
    group = np.array([r[0] for r in rows], np.int64)
    _, group = np.unique(group, return_inverse=True)
    q = np.array([r[1] for r in rows], np.float32)
    z = np.array([r[2] for r in rows], np.float32)

    def loss(q_, z_):
        return float(function(torch.from_numpy(q_), torch.from_numpy(z_), torch.from_numpy(group), parameter))

    got = loss(q, z)
    assert got == pytest.approx(reference(q, z, group, parameter), rel=1e-4, abs=1e-5)
    q2, z2 = q.copy(), z.copy()
    q2[group == 0] += shift
    z2[group == 0] += shift
    assert loss(q2, z2) == pytest.approx(got, rel=1e-3, abs=1e-4)


def test_group_loss_unit_weighs_captures_by_their_spread():
    """With a unit the same misranking costs more in a capture whose sets differ more; standardised,
    both captures cost the same. A negative unit is refused."""
    from nets.losses import group_ranking_loss

    q = torch.tensor([0.0, 0.01, 0.0, 0.01])  # both captures prefer their second set
    z = torch.tensor([0.02, -0.02, 0.4, -0.4])  # both targets prefer the first, the second capture by far
    g = torch.tensor([0, 0, 1, 1])

    def per_capture(unit):
        return [float(group_ranking_loss(q[g == k], z[g == k], torch.zeros(2, dtype=torch.long), unit)) for k in (0, 1)]

    small, large = per_capture(0.05)
    assert large > 10 * small
    a, b = per_capture(0.0)
    assert a == pytest.approx(b, rel=1e-6)
    with pytest.raises(ValueError, match="unit"):
        group_ranking_loss(q, z, g, -1.0)


def test_group_choice_loss_is_zero_at_the_target_and_spends_itself_on_the_best_set():
    """Q whose centred values times GROUP_Q_SCALE equal the centred targets cost nothing; a small
    temperature makes swapping the best two sets cost far more than swapping the worst two (the ranking
    loss prices both swaps alike); a temperature <= 0 is refused."""
    from nets.losses import GROUP_Q_SCALE, group_choice_loss, group_ranking_loss

    z = torch.tensor([0.9, 0.5, -0.6, -0.8])
    g = torch.zeros(4, dtype=torch.long)
    exact = z / GROUP_Q_SCALE + (z.mean() - z.mean() / GROUP_Q_SCALE)
    assert float(group_choice_loss(exact, z, g, 0.1)) == pytest.approx(0.0, abs=1e-6)
    top_swapped = exact[[1, 0, 2, 3]]
    bottom_swapped = exact[[0, 1, 3, 2]]
    assert float(group_choice_loss(top_swapped, z, g, 0.1)) > 100 * float(group_choice_loss(bottom_swapped, z, g, 0.1))
    assert float(group_ranking_loss(top_swapped, z, g, 0.1)) == pytest.approx(
        float(group_ranking_loss(bottom_swapped, z, g, 0.1)), rel=0.5)
    with pytest.raises(ValueError, match="temperature"):
        group_choice_loss(exact, z, g, 0.0)


def test_capture_groups_survive_shards_windows_and_batches(tmp_path, states):
    """``group`` round-trips through a shard, is renumbered by the replay window so that captures of
    different shards stay apart, and becomes the batch's ``0..G-1`` with one symmetry per capture."""
    from train.learning.samples import concat

    rng = np.random.default_rng(3)
    battle = [s for s in states if s.phase == 1][:12]
    for shard in range(2):
        b = SampleBuilder("lower")
        for i, s in enumerate(battle):
            b.add_lower(state_planes(s), int(rng.integers(48804)), float(rng.random()), group=i // 4)
        write_shard(tmp_path / f"i0001-g{shard:04d}.npz", b.build())
    back = read_shard(tmp_path / "i0001-g0000.npz")
    np.testing.assert_array_equal(back.group, np.arange(len(battle)) // 4)
    window, _ = load_window(tmp_path, 10_000, "lower")
    n_caps = (len(battle) + 3) // 4
    np.testing.assert_array_equal(window.group, np.arange(2 * len(battle)) // 4)
    assert window.tail(5).group.tolist() == window.group[-5:].tolist()
    plain = SampleBuilder("lower")
    plain.add_lower(state_planes(battle[0]), 7, 0.5)
    assert plain.build().group is None
    mixed = concat([plain.build(), back])
    assert mixed.group[0] == -1 and mixed.group[1:].tolist() == back.group.tolist()
    idx = np.array([0, 1, 5, 4, 9, 2 * len(battle) - 1])
    batch = make_batch(window, idx, np.random.default_rng(0), symmetries=(0, 1, 2, 3))
    assert batch.group.tolist() == np.unique(window.group[idx], return_inverse=True)[1].tolist()
    for g in set(batch.group.tolist()):
        assert len(set(batch.symmetries[batch.group == g].tolist())) == 1
    assert make_batch(mixed, np.array([0, 1]), None).group is None  # a sample without a capture: no groups
    assert n_caps * 2 == len(set(window.group.tolist()))


@pytest.mark.parametrize("loss,unit", [("group", 0.0), ("group", 0.2), ("choice", 0.0)])
def test_learner_group_loss_draws_whole_captures_and_learns_a_ranking(states, loss, unit):
    """With ``learner.dqn_loss = "group"`` (standardised targets, or ``learner.group_unit``) or ``"choice"``
    batches are whole captures, and a few steps on a capture whose ranking is fixed lower the loss;
    samples without captures are refused."""
    cfg = micro_config("model=lower", f"learner.dqn_loss={loss}", "selfplay.lower_eval=eval.expert",
                       "learner.lr=0.003", f"learner.group_unit={unit}", "learner.choice_temperature=0.3")
    from train.learning.learner import GROUP_SETS, _capture_batches

    battle = [s for s in states if s.phase == 1][:24]
    b = SampleBuilder("lower")
    for i, s in enumerate(battle):
        b.add_lower(state_planes(s), 11, float(i % 6) / 5, group=i // 6)
    samples = b.build()
    draw = _capture_batches(samples, 2 * GROUP_SETS)
    idx = draw(np.random.default_rng(0))
    assert len(set(samples.group[idx].tolist())) == 2 and len(idx) == 12
    learner = Learner(cfg.nets.net_config("lower"), cfg.learner, seed=0)  # seeded: not the tests' order
    batch = make_batch(samples, np.arange(len(samples)))
    before = learner.evaluate(batch)["value"]
    with torch.no_grad():
        q0 = learner.model(torch.from_numpy(batch.planes), torch.from_numpy(batch.action)).reshape(-1).numpy()
    reference = (_group_loss_reference(q0, batch.z, batch.group, unit) if loss == "group"
                 else _choice_loss_reference(q0, batch.z, batch.group, 0.3))
    assert before == pytest.approx(reference, rel=1e-3)  # the unit or the temperature is used
    learner.train(samples, 120, 24, np.random.default_rng(1))
    assert learner.evaluate(batch)["value"] < 0.6 * before
    plain = SampleBuilder("lower")
    plain.add_lower(state_planes(battle[0]), 7, 0.5)
    plain.add_lower(state_planes(battle[1]), 7, 0.1)
    with pytest.raises(ValueError, match="grouped by capture"):
        learner.train(plain.build(), 1, 2, np.random.default_rng(0))
    with pytest.raises(ConfigError, match="lower_eval"):
        micro_config("model=lower", f"learner.dqn_loss={loss}")


@pytest.mark.integration
def test_learner_step_bench_times_both_forms_and_refuses_bad_arguments(capsys):
    from bench.learner_step import _cli, main

    out = main(1, ((1, 8),))
    row = out["1x8"]
    assert row["listed_s"] > 0 and row["dense_s"] > 0
    assert row["dense/listed"] == pytest.approx(row["dense_s"] / row["listed_s"], rel=0.05)
    for bad in (["0"], ["3x"], ["2x0"], ["many"]):
        assert _cli(bad) == 2
    err = capsys.readouterr().err
    assert err.count("error: ") == 4 and "Traceback" not in err
