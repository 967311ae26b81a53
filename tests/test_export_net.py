"""``export-net``: net files (and play settings) reach a model directory only through the export gate
(``train.learning.modeldir.export_nets``), with a lineage entry; ``search.agents.model_agent`` plays a model
directory as ``jfa`` plays ``models/default``."""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

from cli import app
from nets.config import preset
from nets.io import read_metadata, save
from nets.model import build

pytestmark = pytest.mark.integration

runner = CliRunner()


def _net(path, kind, seed, extra=None):
    torch.manual_seed(seed)
    save(build(preset(kind, "tiny")), preset(kind, "tiny"), path, extra=extra or {})
    return path


@pytest.fixture
def model_dir(tmp_path):
    """A playable model directory: tiny random nets, a one-simulation net-only search, a 2-game gate."""
    d = tmp_path / "model"
    d.mkdir()
    for kind in ("slm", "upper", "lower"):
        _net(d / f"{kind}.safetensors", kind, seed=1)
    (d / "agent.toml").write_text('[search]\npreset = "paper"\nsimulations = 1\n\n[agent]\nlayout_sims = 1\n')
    (d / "config.toml").write_text("[gate]\nexport_games = 2\n")
    return d


def test_model_agent_plays_a_directory_as_jfa_plays_the_shipped_one(model_dir):
    from search.agents import model_agent
    from search.config import AgentFileError

    recipe = model_agent(model_dir)
    o = recipe.options
    assert (recipe.name, o.simulations, o.layout_sims, o.victim_evaluator) == ("jfa", 1, 1, None)
    assert (o.upper, o.lower) == (str(model_dir.resolve() / "upper.safetensors"), str(model_dir.resolve() / "lower.safetensors"))
    assert model_agent(model_dir, simulations=3).options.simulations == 3
    (model_dir / "agent.toml").write_text('[search]\npreset = "paper"\n[agent]\nbatch = 4\n')
    with pytest.raises(AgentFileError, match=r"agent.toml: unknown field 'agent.batch'"):
        model_agent(model_dir)
    (model_dir / "agent.toml").write_text('[search]\npreset = "paper"\n[agent]\nlayout_sims = 0\n')
    with pytest.raises(AgentFileError, match=r"agent.toml: field 'agent.layout_sims'"):
        model_agent(model_dir)
    (model_dir / "agent.toml").write_text('[search]\npreset = "paper"\n[agent]\nprecision = "auto"\n')
    assert model_agent(model_dir).options.precision == "auto"
    assert model_agent(model_dir, precision="float32").options.precision == "float32"
    (model_dir / "agent.toml").write_text('[search]\npreset = "paper"\n[agent]\nprecision = "half"\n')
    with pytest.raises(AgentFileError, match=r"agent.toml: field 'agent.precision'"):
        model_agent(model_dir)


@pytest.mark.parametrize("init", [{"file": "upper-parent.safetensors", "sha256": "ab" * 32},
                                  "runs/distill/upper-parent.safetensors"])
def test_a_candidate_ships_only_through_the_export_gate(model_dir, tmp_path, init):
    """An undecided 2-game gate fails and writes nothing (status 1); with ``gate.export_games = 0`` the nets
    and the settings are written with a lineage entry naming each net's SHA-256 and its ``init`` parent
    (the CLI's ``{"file", "sha256"}`` or a library call's path)."""
    before = {p.name: p.read_bytes() for p in model_dir.iterdir()}
    cand = _net(tmp_path / "upper-new.safetensors", "upper", seed=2, extra={"init": init})
    args = ["export-net", str(cand), "--out", str(model_dir), "--set", "search.simulations=2",
            "--games-dir", str(tmp_path / "gate"), "--workers", "1", "--games-in-flight", "2"]
    r = runner.invoke(app, args)
    assert r.exit_code == 1, r.output
    assert "cap of 2 games undecided" in r.output and "not exported" in r.output
    assert {p.name: p.read_bytes() for p in model_dir.iterdir()} == before
    arena = json.loads((tmp_path / "gate" / "gate" / "arena.json").read_text())
    assert arena["games"] == 2

    (model_dir / "config.toml").write_text("[gate]\nexport_games = 0\n")
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "no gate (gate.export_games = 0)" in r.output
    assert read_metadata(model_dir / "upper.safetensors")["storage_dtype"] == "float16"
    assert (model_dir / "slm.safetensors").read_bytes() == before["slm.safetensors"]
    assert "simulations = 2" in (model_dir / "agent.toml").read_text()
    (entry,) = json.loads((model_dir / "lineage.json").read_text())
    assert entry["nets"]["upper"]["init"]["file"] == "upper-parent.safetensors"
    assert entry["settings"] == {"search": {"simulations": 2}} and entry["export_gate"][0]["passed"]
    card = (model_dir / "README.md").read_text()
    assert "trained from `upper-parent.safetensors`" in card and "[search]: simulations = 2" in card
    assert ("(sha256 abababababab)" in card) == isinstance(init, dict)


@pytest.mark.parametrize("setting, message", [
    ("search.c_puct=-1", "field 'search.c_puct'"),
    ("agent.batch=4", "unknown field 'agent.batch'"),
    ("nets.preset=tiny", "unknown agent.toml table 'nets'"),
    ("simulations=2", "TABLE.KEY=VALUE"),
])
def test_bad_settings_get_one_line(model_dir, tmp_path, setting, message):
    cand = _net(tmp_path / "upper-new.safetensors", "upper", seed=2)
    r = runner.invoke(app, ["export-net", str(cand), "--out", str(model_dir), "--set", setting,
                            "--games-dir", str(tmp_path / "gate")])
    assert r.exit_code == 2, r.output
    assert message in r.output and "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1


def test_the_lineage_command_has_no_path_of_this_machine(tmp_path, monkeypatch):
    """``export-net`` records its command in the model card: an absolute path becomes relative to the
    working directory inside it, else its file name."""
    from frontends.cli_models import _portable

    monkeypatch.chdir(tmp_path)
    assert _portable(str(tmp_path / "runs" / "u.safetensors")) == "runs/u.safetensors"
    assert _portable("/elsewhere/nets/u.safetensors") == "u.safetensors"
    assert _portable("runs/u.safetensors") == "runs/u.safetensors" and _portable("--seed") == "--seed"
