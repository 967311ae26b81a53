"""The command line: outputs, and bad input giving one ``error:`` line with exit status 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from core import GameState
from core.jfen import START_JFEN
from tests import reference as ref

runner = CliRunner()
ROOT = Path(__file__).resolve().parent.parent
AFTER_LAYOUT = "/".join(["WB" * 7, "BW" * 7] * 7)  # a full board: White to move in the layout is impossible


def run(*args: str, input: str | None = None):
    return runner.invoke(app, list(args), input=input)


def test_legal_start_position_lists_g7_and_h8():
    result = run("legal", "--fen", START_JFEN)
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)
    assert row == {"fen": START_JFEN, "terminal": False, "winner": None, "moves": ["g7", "h8"]}


def test_legal_reads_many_lines_from_stdin_in_order(tmp_path):
    states = [GameState.initial()]
    for move in ("g7", "h8", "a1", "b1", "c1"):
        states.append(states[-1].apply(move))
    lines = [s.to_jfen() for s in states]
    result = run("legal", "-", input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["fen"] for r in rows] == lines
    for row in rows:
        assert row["moves"] == ref.legal_moves(ref.parse_jfen(row["fen"]), ref.RefRules())
    path = tmp_path / "positions.txt"
    path.write_text("\n".join(lines))
    from_file = run("legal", "--fen-file", str(path), "--paths")
    assert [json.loads(x)["paths"] for x in from_file.stdout.splitlines()][0] == [["g7", 0], ["h8", 0]]


def test_legal_paths_and_terminal_winner():
    lone = "/".join(["W13"] + ["14"] * 13) + " b battle 0 300"
    row = json.loads(run("legal", "--fen", lone, "--paths").stdout)
    assert row == {"fen": lone, "terminal": True, "winner": "w", "paths": []}


def test_apply_and_perft():
    result = run("apply", START_JFEN, "g7", "h8")
    assert result.stdout.strip() == "14/14/14/14/14/14/7B6/6W7/14/14/14/14/14/14 w layout 0 2"
    assert run("perft", START_JFEN, "3").stdout.strip() == "388"
    divide = run("perft", START_JFEN, "2", "--divide").stdout.splitlines()
    assert divide == ["g7: 1", "h8: 1", "total: 2"]


def test_rule_options_are_validated_and_used():
    assert run("legal", "--fen", START_JFEN, "-r", "loss_below=14").exit_code == 0
    bad = run("legal", "--fen", START_JFEN, "-r", "loss_below=zero")
    assert bad.exit_code == 2 and "loss_below" in bad.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["legal", "--fen", "14/14 w layout 0 0"], "JFEN board"),
        (["legal", "--fen", START_JFEN, "--fen-file", "x"], "exactly one"),
        (["legal"], "exactly one"),
        (["legal", "--fen-file", "/nonexistent/positions.txt"], "No such file"),
        (["legal", "--fen", AFTER_LAYOUT + " w layout 0 196"], "battle position"),
        (["legal", "--fen", START_JFEN, "-r", "nonsense"], "is not key=value"),
        (["legal", "--fen", START_JFEN, "-r", "colour=red"], "colour"),
        (["apply", START_JFEN, "a1"], "move 1"),
        (["apply", START_JFEN, "g7", "g7"], "move 2"),
        (["apply", START_JFEN, "g7-g8"], "placements only"),
        (["apply", START_JFEN, "q7"], "not a point"),
        (["apply", "bad fen", "g7"], "JFEN"),
        (["perft", "bad", "1"], "JFEN"),
        (["random-game", "-r", "max_battle_plies=0"], "max_battle_plies"),
        (["replay", "/nonexistent/game.json"], "No such file"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, message):
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output, result.output
    assert "Traceback" not in result.output
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("error: ")  # Typer's usage box too is one line


def test_bad_line_in_a_stream_is_named_after_earlier_output():
    result = run("legal", "-", input=START_JFEN + "\nnot a position\n")
    assert result.exit_code == 2
    assert json.loads(result.stdout.splitlines()[0])["moves"] == ["g7", "h8"]
    assert "line 2" in result.output


def test_the_command_line_starts_without_the_engine():
    """Building the command line imports no part of ``core`` (the engine loads with the command that
    needs it), so its stone bound is written out: it must be ``core.board.STONES_PER_SIDE``."""
    from core.board import STONES_PER_SIDE
    from frontends.cli_base import STONES_MAX

    assert STONES_MAX == STONES_PER_SIDE
    code = "import sys, frontends.cli_base; print(sorted(m for m in sys.modules if m == 'core' or m.startswith('core.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parent.parent)
    assert out.stdout.strip() == "[]"


def test_subprocess_exit_status_and_no_traceback():
    proc = subprocess.run([sys.executable, "cli.py", "apply", START_JFEN, "zz"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("error:") and len(proc.stderr.strip().splitlines()) == 1


def test_export_net_writes_half_precision_copies_by_kind(tmp_path):
    import torch

    from nets.config import preset
    from nets.io import load, read_metadata, save
    from nets.model import build

    torch.manual_seed(0)
    src = tmp_path / "iter7.safetensors"
    save(build(preset("upper", "tiny")), preset("upper", "tiny"), src, extra={"step": 7})
    r = run("export-net", str(src), "--out", str(tmp_path / "model"), "--games-dir", str(tmp_path / "gate"))
    assert r.exit_code == 0, r.output
    assert "no gate (no playable model" in r.output
    target = tmp_path / "model" / "upper.safetensors"
    assert read_metadata(target)["storage_dtype"] == "float16"
    assert target.stat().st_size < 0.55 * src.stat().st_size
    _, config, extra = load(target, expected_kind="upper")
    assert config == preset("upper", "tiny") and extra == {"step": 7, "exported_from": "iter7.safetensors"}

    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"not a net")
    r = run("export-net", str(bad), "--out", str(tmp_path / "model"), "--games-dir", str(tmp_path / "gate"))
    assert r.exit_code == 2 and "bad.safetensors" in r.output and "Traceback" not in r.output


def test_the_default_agent_is_one_setting():
    """``play``, ``serve``, ``engine`` and ``analyze`` (and the engine, server and terminal functions) default
    to ``frontends.DEFAULT_AGENT``, the strongest agent measured (docs/results.md, "The default agent")."""
    import inspect

    import frontends
    from frontends import cli_match, cli_serve, engine, server, terminal

    defaults = [inspect.signature(f).parameters[p].default for f, p in (
        (cli_match.play, "agent"), (cli_serve.engine, "agent"), (cli_serve.analyze, "agent"),
        (engine.Engine, "agent_spec"), (engine.run_engine, "agent_spec"), (server.create_app, "default_agent"),
        (server.serve, "default_agent"), (terminal.play, "agent_spec"))]
    assert defaults == [frontends.DEFAULT_AGENT] * len(defaults)
    assert frontends.DEFAULT_AGENT == "jfa"
