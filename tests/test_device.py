"""``--device``: the device spec (``nets.inference.resolve_device``), the evaluator, victim scorer and learner
on a given device, the config field and the CLI option (issue 64 item 2).

Everything here runs on the CPU, where ``device="cpu"`` must change nothing (bit-identical outputs, weights
and checkpoint files). The tests marked ``needs_cuda`` compare a CUDA device with the CPU; they are skipped
on a machine without CUDA.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from cli import app
from core.rules import Ruleset
from core.state import GameState
from knowledge.agents import make_agent
from nets.config import preset
from nets.encoding import NUM_LAYOUT_ACTIONS, NUM_UPPER_ACTIONS, encode_paths
from nets.evaluator import NetEvaluator, NetVictimScorer
from nets.features import batch_planes, state_planes
from nets.inference import DEVICE_CHOICES, check_device, resolve_device, resolve_precision
from nets.model import build
from train.learning.config import RESUMABLE_FIELDS, ConfigError, LearnerConfig, validate_config
from train.learning.learner import Learner, optimizer_path
from train.learning.samples import SampleBuilder, make_batch

runner = CliRunner()
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _small(kind: str, seed: int = 0) -> torch.nn.Module:
    """A one-block net of ``kind`` with non-trivial batch-norm statistics, in eval mode."""
    cfg = preset(kind, "tiny").model_copy(update={"blocks": 1, "channels": 8, "value_hidden": 8})
    torch.manual_seed(seed)
    model = build(cfg)
    model.train()
    with torch.no_grad():
        x = torch.rand(8, cfg.in_planes, 14, 14)
        model(x, torch.randint(0, NUM_UPPER_ACTIONS, (8,))) if kind == "lower" else model(x)
    return model.eval()


@pytest.fixture(scope="module")
def states() -> list[GameState]:
    """Every position of a random game capped at 24 battle plies: layout and battle states."""
    agent = make_agent("random", seed=5)
    s = GameState.initial(Ruleset(max_battle_plies=24, adjudicate="stones"))
    out = []
    while not s.is_terminal():
        out.append(s)
        s = s.apply(agent.select(s))
    assert any(x.phase == 0 for x in out) and any(x.phase == 1 for x in out)
    return out


# ------------------------------------------------------------------------------------------ resolve_device
def test_auto_is_cuda_when_available_else_cpu():
    assert resolve_device("auto") == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")
    assert DEVICE_CHOICES == ("auto", "cpu", "cuda", "cuda:N")


def test_a_missing_cuda_device_is_a_value_error_naming_device():
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    with pytest.raises(ValueError) as err:
        resolve_device(f"cuda:{count}")  # one past the last device: never there
    assert str(err.value) == (f"device: 'cuda:{count}' is not available (this machine has {count} CUDA "
                              f"device{'' if count == 1 else 's'})")
    if count == 0:
        with pytest.raises(ValueError, match=r"^device: 'cuda' is not available \(this machine has 0 CUDA devices\)$"):
            resolve_device("cuda")


@pytest.mark.parametrize("spec", ["tpu", "", "cuda:", "cuda:x", "cuda:-1", "cpu:0", "gpu", "cuda0"])
def test_garbage_is_a_value_error_listing_the_choices(spec):
    with pytest.raises(ValueError) as err:
        resolve_device(spec)
    assert str(err.value) == f"device: {spec!r} is not one of auto, cpu, cuda, cuda:N"
    with pytest.raises(ValueError) as err:  # the pydantic validator: the same reason, the field named by pydantic
        check_device(spec)
    assert str(err.value) == f"{spec!r} is not one of auto, cpu, cuda, cuda:N"
    assert check_device("cpu") == "cpu"


def test_precision_auto_depends_on_the_device_only_for_cuda(monkeypatch):
    for p in ("float32", "bfloat16", "auto"):
        assert resolve_precision(p, "cpu") == resolve_precision(p) == resolve_precision(p, torch.device("cpu"))
    assert resolve_precision("float32", "cuda") == "float32"
    assert resolve_precision("bfloat16", "cuda") == "bfloat16"
    # torch.device("cuda") can be named without a GPU; only the bfloat16 support query is faked
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert resolve_precision("auto", torch.device("cuda")) == "float16"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert resolve_precision("auto", "cuda:0") == "bfloat16"
    with pytest.raises(ValueError):
        resolve_precision("float16", "cuda")  # float16 is what "auto" may mean on CUDA, not a choice


# ------------------------------------------------------------------------------------------ evaluator
def test_evaluator_on_the_cpu_answers_exactly_as_the_default(states):
    slm, upper = _small("slm", 1), _small("upper", 2)
    with NetEvaluator(slm, upper, num_threads=1) as default, \
            NetEvaluator(slm, upper, num_threads=1, device="cpu") as cpu:
        assert cpu.device == default.device == torch.device("cpu")
        a, b = default.evaluate(states), cpu.evaluate(states)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.policy, y.policy)
        assert x.value == y.value


@pytest.mark.parametrize("compiled", [True, False])
def test_forward_batch_is_what_evaluate_answers(states, compiled):
    slm, upper = _small("slm", 1), _small("upper", 2)
    with NetEvaluator(slm, upper, num_threads=1, compiled=compiled, device="cpu") as ev:
        answers = ev.evaluate(states)
        for phase, size, net in ((0, NUM_LAYOUT_ACTIONS, slm), (1, NUM_UPPER_ACTIONS, upper)):
            part = [s for s in states if s.phase == phase]
            planes = batch_planes(part)
            policy, value = ev.forward_batch(phase, planes)
            assert policy.dtype == np.float32 and policy.shape == (len(part), size)
            assert value.dtype == np.float32 and value.shape == (len(part),)
            want = [a for a, s in zip(answers, states) if s.phase == phase]
            np.testing.assert_allclose(policy, np.stack([a.policy for a in want]), rtol=0, atol=1e-6)
            np.testing.assert_allclose(value, [a.value for a in want], rtol=0, atol=1e-6)
            # against the eager net by hand: softmax of the logits, the value clamped to [-1, 1]
            with torch.no_grad():
                logits, v = net(torch.from_numpy(planes))
            np.testing.assert_allclose(policy, torch.softmax(logits, 1).numpy(), rtol=1e-4, atol=1e-6)
            np.testing.assert_allclose(value, v.reshape(-1).clamp(-1, 1).numpy(), rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(policy.sum(axis=1), 1.0, atol=1e-5)
            empty = ev.forward_batch(phase, planes[:0])
            assert empty[0].shape == (0, size) and empty[1].shape == (0,)


def test_forward_batch_errors_and_a_missing_net(states):
    with NetEvaluator(_small("slm"), None, num_threads=1) as ev:
        planes = batch_planes(states[:3])
        with pytest.raises(ValueError, match="phase must be 0"):
            ev.forward_batch(2, planes)
        with pytest.raises(ValueError, match="planes must be"):
            ev.forward_batch(0, planes[:, :, :7])
        with pytest.warns(RuntimeWarning, match="no upper net"):
            policy, value = ev.forward_batch(1, planes)
        np.testing.assert_array_equal(policy, np.full((3, NUM_UPPER_ACTIONS), 1 / NUM_UPPER_ACTIONS, np.float32))
        np.testing.assert_array_equal(value, np.zeros(3, np.float32))


def test_victim_scorer_on_the_cpu_answers_exactly_as_the_default(states):
    lower = _small("lower", 3)
    after = [s for s in states if s.phase == 1][:12]
    actions = np.arange(len(after)) * 997 % NUM_UPPER_ACTIONS
    a = NetVictimScorer(lower).q_values(after, actions)
    b = NetVictimScorer(lower, device="cpu", max_batch=5).q_values(after, actions)
    np.testing.assert_array_equal(a, b)
    assert b.dtype == np.float32 and b.shape == (len(after),)
    with pytest.raises(ValueError, match="^device: 'cuda:99' is not available"):
        NetVictimScorer(lower, device="cuda:99")
    with pytest.raises(ValueError, match="^device: 'tpu' is not one of"):
        NetEvaluator(None, None, device="tpu")


# ------------------------------------------------------------------------------------------ learner
def _upper_batch(states):
    b = SampleBuilder("upper")
    rng = np.random.default_rng(0)
    for s in states:
        if s.phase == 1:
            ps = s.paths()
            acts = encode_paths(ps.pts, ps.off, ps.jump, ps.m)
            b.add_policy(state_planes(s), acts, rng.random(len(acts)), float(rng.choice([-1, 1])))
    samples = b.build()
    return make_batch(samples, np.arange(min(8, len(samples))))


def _learner_cfg() -> LearnerConfig:
    return LearnerConfig(grad_clip=1.0)


def _net_config():
    return preset("upper", "tiny").model_copy(update={"blocks": 1, "channels": 8, "value_hidden": 8})


def _assert_same_files(a, b) -> None:
    """Two saved nets hold bitwise equal tensors (on the CPU) and the same metadata."""
    from nets.io import read_metadata

    assert read_metadata(a) == read_metadata(b)
    ta, tb = load_file(a), load_file(b)
    assert ta.keys() == tb.keys()
    for k in ta:
        assert tb[k].device.type == "cpu" and tb[k].dtype == ta[k].dtype and torch.equal(ta[k], tb[k]), k


def test_a_learner_step_on_the_cpu_equals_the_default(tmp_path, states):
    batch = _upper_batch(states)
    default = Learner(_net_config(), _learner_cfg(), seed=4)
    cpu = Learner(_net_config(), _learner_cfg(), seed=4, device="cpu")
    assert cpu.device == default.device == torch.device("cpu") and cpu.scaler is None
    for _ in range(2):
        assert default.train_step(batch) == cpu.train_step(batch)
    for (k, p), (_, q) in zip(default.model.state_dict().items(), cpu.model.state_dict().items()):
        assert torch.equal(p, q), k
    # the checkpoints hold the same tensors and metadata
    a, b = default.save(tmp_path / "a.safetensors"), cpu.save(tmp_path / "b.safetensors")
    _assert_same_files(a, b)
    sa, sb = (torch.load(optimizer_path(p), weights_only=True) for p in (a, b))
    for i, st in sa["state"].items():
        for k, v in st.items():
            assert torch.equal(v, sb["state"][i][k])
    again = Learner.from_checkpoint(b, _learner_cfg(), device="cpu")
    assert again.step == 2 and again.device == torch.device("cpu")
    with pytest.raises(ValueError, match="^device: 'cuda:99'"):
        Learner(_net_config(), _learner_cfg(), device="cuda:99")


# ------------------------------------------------------------------------------------------ config and CLI
def test_the_config_field_is_validated_and_resumable():
    assert validate_config({}).device == "auto"
    assert validate_config({"device": "cpu"}).device == "cpu"
    assert "device" in RESUMABLE_FIELDS
    with pytest.raises(ConfigError, match=r"^config field 'device': 'tpu' is not one of auto, cpu, cuda, cuda:N$"):
        validate_config({"device": "tpu"})
    with pytest.raises(ConfigError, match=r"^config field 'device': 'cuda:99' is not available"):
        validate_config({"device": "cuda:99"})


def test_selfplay_and_pretraining_pass_the_configured_device_on(monkeypatch, tmp_path, states):
    import nets.evaluator
    import train.learning.learner
    from train.learning.selfplay import _close, selfplay_evaluator
    from train.learning.supervised import pretrain

    seen = []

    class Recording(NetEvaluator):
        def __init__(self, *args, **kwargs):
            seen.append(kwargs.get("device"))
            super().__init__(*args, **kwargs)

    class RecordingLearner(Learner):
        def __init__(self, *args, **kwargs):
            seen.append(kwargs.get("device"))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(nets.evaluator, "NetEvaluator", Recording)
    monkeypatch.setattr(train.learning.learner, "Learner", RecordingLearner)
    cfg = validate_config({"device": "cpu"})
    _close(selfplay_evaluator(cfg))
    batch_states = [s for s in states if s.phase == 1][:6]
    b = SampleBuilder("upper")
    for s in batch_states:
        ps = s.paths()
        acts = encode_paths(ps.pts, ps.off, ps.jump, ps.m)
        b.add_policy(state_planes(s), acts, np.ones(len(acts)), 1.0)
    pretrain(b.build(), _net_config(), _learner_cfg(), tmp_path / "p.safetensors", steps=1, batch_size=4,
             device="cpu")
    assert seen == ["cpu", "cpu"]


def test_a_resumed_run_may_name_another_device(tmp_path):
    import json

    from train.jobs.rundir import RunPaths
    from train.learning.config import config_to_dict
    from train.learning.modeldir import load_run_config

    paths = RunPaths(tmp_path)
    paths.config.parent.mkdir(parents=True, exist_ok=True)
    paths.config.write_text(json.dumps({**config_to_dict(validate_config({})), "device": "cuda:99"}))
    with pytest.raises(ConfigError, match="'device': 'cuda:99' is not available"):
        load_run_config(tmp_path)  # written on a machine with that GPU
    assert load_run_config(tmp_path, device="cpu").device == "cpu"


def test_the_docs_table_lists_the_field():
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "training.md").read_text(encoding="utf-8")
    assert "\n``device``  " in text and "### Devices" in text


@pytest.mark.parametrize("args", [["selfplay", "--device", "cuda:7"], ["selfplay", "--device", "tpu"],
                                  ["pretrain", "--device", "cuda:7"]])
def test_cli_bad_device_is_one_error_line_and_status_2(args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may be written (a run directory would appear under runs/)
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: device: {args[2]!r} is not "), lines
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------------------------------------ CUDA only
@needs_cuda
def test_evaluator_on_cuda_matches_the_cpu(states):
    slm, upper = _small("slm", 1), _small("upper", 2)
    with NetEvaluator(slm, upper, num_threads=1, device="cpu") as cpu, \
            NetEvaluator(slm, upper, num_threads=1, device="cuda") as gpu:
        assert all(p.device.type == "cpu" for p in upper.parameters())  # the given nets stay where they were
        for phase in (0, 1):
            planes = batch_planes([s for s in states if s.phase == phase])
            (p1, v1), (p2, v2) = cpu.forward_batch(phase, planes), gpu.forward_batch(phase, planes)
            assert p2.dtype == np.float32 and v2.dtype == np.float32
            np.testing.assert_allclose(p2, p1, rtol=1e-3, atol=1e-5)
            np.testing.assert_allclose(v2, v1, rtol=1e-3, atol=1e-4)
        a, b = cpu.evaluate(states), gpu.evaluate(states)
        for x, y in zip(a, b):
            np.testing.assert_allclose(y.policy, x.policy, rtol=1e-3, atol=1e-5)
    lower = _small("lower", 3)
    after = [s for s in states if s.phase == 1][:12]
    actions = np.arange(len(after)) * 997 % NUM_UPPER_ACTIONS
    np.testing.assert_allclose(NetVictimScorer(lower, device="cuda").q_values(after, actions),
                               NetVictimScorer(lower).q_values(after, actions), rtol=1e-3, atol=1e-4)


@needs_cuda
@pytest.mark.parametrize("precision", ["float32", "auto"])
def test_a_learner_step_on_cuda_matches_the_cpu(states, precision):
    batch = _upper_batch(states)
    cfg = LearnerConfig(grad_clip=1.0, precision=precision)
    cpu = Learner(_net_config(), LearnerConfig(grad_clip=1.0), seed=4)
    gpu = Learner(_net_config(), cfg, seed=4, device="cuda")
    assert next(gpu.model.parameters()).device.type == "cuda"
    assert (gpu.scaler is not None) == (gpu.precision == "float16")
    tol = 1e-4 if precision == "float32" else 5e-2
    a, b = cpu.train_step(batch), gpu.train_step(batch)
    for k in ("total", "value", "policy", "l2"):
        assert b[k] == pytest.approx(a[k], rel=tol, abs=tol)
    assert all(s["exp_avg"].device.type == "cuda" for s in gpu.optimizer.state.values())


@needs_cuda
def test_a_checkpoint_written_on_cuda_loads_on_the_cpu(tmp_path, states):
    batch = _upper_batch(states)
    cpu = Learner(_net_config(), _learner_cfg(), seed=4)
    gpu = Learner(_net_config(), _learner_cfg(), seed=4, device="cuda")
    # before any step both hold the seed's weights: the files hold the same tensors
    _assert_same_files(cpu.save(tmp_path / "cpu0.safetensors"), gpu.save(tmp_path / "gpu0.safetensors"))
    cpu.train_step(batch)
    gpu.train_step(batch)
    a, b = cpu.save(tmp_path / "cpu1.safetensors"), gpu.save(tmp_path / "gpu1.safetensors")
    ta, tb = load_file(a), load_file(b)
    assert ta.keys() == tb.keys()
    for k in ta:
        assert tb[k].device.type == "cpu" and tb[k].dtype == ta[k].dtype
        torch.testing.assert_close(tb[k], ta[k], rtol=1e-3, atol=1e-4)
    opt = torch.load(optimizer_path(b), weights_only=True)  # no map_location: the tensors are CPU tensors
    assert all(v.device.type == "cpu" for st in opt["state"].values() for v in st.values()
               if isinstance(v, torch.Tensor))
    back = Learner.from_checkpoint(b, _learner_cfg(), device="cpu")
    assert back.step == 1 and back.optimizer.state_dict()["state"]
    assert all(p.device.type == "cpu" for p in back.model.parameters())
    back.train_step(batch)  # and trains on
