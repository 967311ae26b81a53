"""Bad input to every command gives exactly one ``error: ...`` line on stderr and exit status 2: a table
by class of fault (issue 12): integers out of range (A), unbounded or undecodable input (B), rules lost
in conversion (E), counts that would never finish (G), usage errors and multi-line library errors (I),
errors that must name their file or cause (J), crafted net files (O, issue 62).

Most rows run in-process through the command group (``OneLineErrors`` replaces Typer's usage box for
``CliRunner`` too); a few run ``python cli.py`` in a subprocess to check the real entry point.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from core.jfen import START_JFEN

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()
BIG = "99999999999999999999"
MID = "B1W1B1W1B1W1B1/W1B1W1B1W1B1W1/14/14/14/14/7W6/7B6/14/14/14/14/14/14 b battle 5 230"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Bad input files: random bytes, /dev/zero under record names, a deeply nested JSON record, a binary
    config, a net file whose config is invalid, a record played under other rules (JSON and JIU)."""
    import random

    from core.playout import random_game_moves
    from core.records import GameRecord, write_json
    from core.rules import Ruleset

    d = tmp_path_factory.mktemp("bad")
    (d / "random.bin").write_bytes(random.Random(1).randbytes(4000))
    for name in ("zero.json", "zero.jiu", "zero.csv", "zero.toml"):
        (d / name).symlink_to("/dev/zero")
    (d / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (d / "config.json").write_bytes(b"\x00\xff\xfe binary \x81")
    rules = Ruleset(fly_jump_rule="none", max_battle_plies=50)
    moves, _, _ = random_game_moves(3, rules.vector)
    (d / "recs").mkdir()
    (d / "run" / "shards" / "upper").mkdir(parents=True)  # a run's shards, two levels down from d
    (d / "run" / "shards" / "upper" / "i0001-g0000.npz").write_bytes(b"")
    write_json(GameRecord.from_moves(moves, rules), d / "recs" / "game.json")
    _bad_config_net(d / "badconfig.safetensors")
    _bad_config_net(d / "huge.safetensors", {"kind": "upper", "blocks": 6, "channels": 10**6, "value_hidden": 64})
    _bad_config_net(d / "shapes.safetensors", {"kind": "upper", "blocks": 64, "channels": 512, "value_hidden": 4096})
    return d


def _bad_config_net(path: Path, config: dict | None = None) -> None:
    """A net file in the project's format whose stored config fails validation (default channels = -3),
    or whose one tensor does not match the ``config`` given (issue 62, O: a header asking for 160 GB)."""
    import torch
    from safetensors.torch import save_file

    from nets.config import ENCODING_VERSION
    from nets.io import FORMAT, FORMAT_VERSION

    config = config or {"kind": "slm", "blocks": 1, "channels": -3}
    save_file({"w": torch.zeros(1)}, str(path), metadata={
        "format": FORMAT, "format_version": str(FORMAT_VERSION), "encoding_version": str(ENCODING_VERSION),
        "config": json.dumps(config), "extra": "{}"})


def fen_with(ply: str = "230", quiet: str = "5") -> str:
    return MID.rsplit(" ", 2)[0] + f" {quiet} {ply}"


CASES = [
    # A. integers beyond their range
    ("A", ["legal", "--fen", fen_with(ply=BIG)], "JFEN ply"),
    ("A", ["apply", fen_with(ply="18446744073709551615"), "b14-b13"], "JFEN ply"),
    ("A", ["perft", fen_with(quiet=BIG), "1"], "JFEN quiet plies"),
    ("A", ["legal", "--fen", START_JFEN, "-r", f"max_battle_plies={BIG}"], "max_battle_plies"),
    ("A", ["legal", "--fen", START_JFEN, "-r", f"repetition_draw={BIG}"], "repetition_draw"),
    ("A", ["arena", "random", "random", "-r", f"max_battle_plies={BIG}"], "max_battle_plies"),
    ("A", ["random-game", "--seed", BIG], "--seed"),
    ("A", ["random-game", "--seed", "-1"], "--seed"),
    # B. tracebacks and unbounded reads
    ("B", ["perft", START_JFEN, "600"], "perft depth 600"),
    ("B", ["replay", "{d}/deep.json"], "nested too deeply"),
    ("B", ["legal", "--fen-file", "{d}/random.bin"], "random.bin: line 1: not utf-8"),
    ("B", ["legal", "--fen-file", "/dev/zero"], "/dev/zero: line 1 longer than"),
    ("B", ["replay", "{d}/zero.json"], "zero.json: record file larger than"),
    ("B", ["replay", "{d}/zero.csv"], "zero.csv: record file larger than"),
    ("B", ["convert", "{d}/zero.jiu", "{d}/out.json"], "zero.jiu: record file larger than"),
    ("B", ["replay", "{d}/random.bin", "--format", "jiu"], "random.bin: not utf-8 or gb18030"),
    # E. rules lost in conversion
    ("E", ["convert", "{d}/recs/game.json", "{d}/out.csv"], "import only"),
    ("E", ["replay", "{d}/recs/game.json", "-r", "fly_jump_rule=all-multi"], "fly_jump_rule=none, but the given"),
    # G. counts that would never finish
    ("G", ["arena", "random", "random", "--games", "1" + "0" * 30], "games: must be an even number in 2..1000000"),
    ("G", ["tournament", "random", "greedy", "--games", "1" + "0" * 30], "games: must be an even number"),
    ("G", ["gen-records", "--games", "1" + "0" * 30, "--out", "{d}/gen"], "games: must be in 0..1000000"),
    ("G", ["arena", "random", "random", "--workers", "100000"], "--workers"),
    # I. usage errors and multi-line library errors
    ("I", ["perft", START_JFEN, "-1"], "No such option: -1"),
    ("I", ["arena", "random", "random", "--workers", "-1"], "--workers"),
    ("I", ["frobnicate"], "No such command 'frobnicate'"),
    ("I", ["apply", "-" + START_JFEN, "g7"], "goes after '--'"),
    ("I", ["perft"], "Missing argument"),
    ("I", ["export-net", "{d}/badconfig.safetensors", "--out", "{d}/exported"], "invalid net config: field 'channels'"),
    ("O", ["export-net", "{d}/huge.safetensors", "--out", "{d}/exported"], "huge.safetensors: invalid net config: field 'channels': Input should be less than or equal to 512"),
    ("O", ["export-net", "{d}/shapes.safetensors", "--out", "{d}/exported"], "shapes.safetensors: tensors do not match the upper config"),
    ("I", ["legal", "--fen", START_JFEN, "-r", "loss_below=4", "-r", "loss-below=5"], "given twice"),
    # J. errors that say what
    ("J", ["selfplay", "--config", "{d}/config.json"], "config file {d}/config.json: not utf-8"),
    ("J", ["pretrain", "{d}/recs", "--config", "{d}/zero.toml"], "zero.toml: file larger than"),
    ("J", ["pretrain", "{d}/recs", "--model", "upper", "--init", str(ROOT / "models/default/slm.safetensors"),
           "--steps", "1", "--out", "{d}/u.safetensors"], "wrong kind: a 'slm' net, expected a 'upper' net"),
    ("J", ["pretrain", "--model", "lower"], "nothing to train on: give RECORDS or --shards"),
    ("J", ["pretrain", "--model", "lower", "--shards", "{d}/config.json"], "shards: {d}/config.json is neither a shard"),
    ("J", ["pretrain", "--model", "lower", "--shards", "{d}/nothing-*.npz"], "shards: no file matches"),
    ("J", ["pretrain", "--model", "upper", "{d}/run/shards/upper"],
     "{d}/run/shards/upper holds sample shards: give each with its own --shards"),
    ("J", ["random-game", "--record", "/proc/no/such/dir/g.json"], "/proc/no"),
    ("J", ["diagnose", "models/default", "--victim-reference", "eval.nope"], "--victim-reference: unknown evaluator"),
    ("J", ["diagnose", "models/default", "--victim-reference", "eval.expert:plies=9"], "--victim-reference: eval.expert: plies"),
    ("J", ["diagnose", "models/default", "--shards", "{d}/config.json"], "shards: {d}/config.json is neither a shard"),
    ("J", ["diagnose", "{d}/config.json", "--shards", "{d}"], "config.json: not a readable safetensors file"),
    ("J", ["diagnose", "models/default", "--value-drift", "5"], "--value-drift/--value-eval/--drift-ends: plies must be even"),
    ("J", ["diagnose", "models/default", "--value-drift", "4", "--drift-ends", "end"], "--drift-ends: ends must be one of result, drop"),
    ("J", ["diagnose", "models/default", "--value-drift", "4", "--value-eval", "eval.nope"], "evaluator: unknown evaluator"),
    ("J", ["diagnose", "models/default", "--value-drift", "4", "--shards", "{d}"], "the drift value is scored on records"),
    # issue 62 Q: the experiment's options have the other commands' bounds
    ("Q", ["experiment", "table5", "--workers", "1000", "--out", "{d}/exp"], "--workers"),
    ("Q", ["experiment", "table5", "--seed", str(2**70), "--out", "{d}/exp"], "--seed"),
    # issue 62 V: messages name the right thing, once
    ("V", ["export-net", "{d}", "--out", "{d}/x.safetensors"], "net file {d}: is a directory, not a regular file"),
    ("V", ["export-net", "/dev/zero", "--out", "{d}/x.safetensors"], "/dev/zero: is a device, not a regular file"),
    ("V", ["selfplay", "--set", "gate.expert=bogus", "--run-dir", "{d}/sp"], "error: --set gate.expert: unknown agent"),
    ("V", ["selfplay", "--reward", "bogus", "--run-dir", "{d}/sp"], "error: --reward: unknown reward 'bogus'"),
    ("V", ["selfplay", "-r", "max_battle_plies=0", "--run-dir", "{d}/sp"], "error: --rule max_battle_plies: "),
    ("V", ["diagnose", "models/default", "--records", "{d}/config.json"], "error: {d}/config.json: not utf-8 text"),
    # issue 64: the batched engine's settings
    ("E", ["selfplay", "--set", "selfplay.games_in_flight=0", "--run-dir", "{d}/sp"],
     "error: --set selfplay.games_in_flight: Input should be greater than or equal to 1"),
    ("E", ["selfplay", "--set", "selfplay.games_in_flight=5000", "--run-dir", "{d}/sp"], "selfplay.games_in_flight"),
    ("E", ["bench", "selfplay", "--games-in-flight", "0"], "error: --games-in-flight: "),
    ("E", ["tournament", "random", "greedy", "--games-in-flight", "0", "--out", "{d}/t"], "error: --games-in-flight: "),
    ("E", ["arena", "random", "random", "--games-in-flight", "0", "--out", "{d}/ar"], "error: --games-in-flight: "),
    ("E", ["pretrain", "{d}/recs", "--model", "upper", "--value-eval-target", "3", "--out", "{d}/v.safetensors"],
     "error: --value-eval-target/--value-eval/--drift-ends: plies must be even"),
    ("E", ["pretrain", "{d}/recs", "--model", "upper", "--value-eval-target", "0", "--value-drift", "2", "--out",
           "{d}/v.safetensors"], "error: --value-eval-target: not with --value-drift"),
    ("E", ["arena", "random", "random", "--games-in-flight", "5000", "--out", "{d}/ar"], "error: --games-in-flight: "),
    ("E", ["bench", "selfplay", "--device", "cuda:9"], "error: --device: 'cuda:9' is not available"),
    ("E", ["bench", "selfplay", "--kind", "lower"], "kind: expected upper or slm"),
    ("E", ["bench", "selfplay", "--set", "selfplay.search.simulations=0"], "error: --set selfplay.search.simulations: "),
    ("E", ["bench", "selfplay", "--config", "no-such.toml"], "error: "),
    # issue 63: train-approxq's options
    ("G", ["train-approxq", "--out", "{d}/aq", "--episodes", "0"], "error: --episodes: Input should be greater than or equal to 1"),
    ("G", ["train-approxq", "--out", "{d}/aq", "--episodes", "1" + "0" * 30], "error: --episodes: "),
    ("E", ["train-approxq", "--out", "{d}/aq", "--gamma", "1.5"], "error: --gamma: expected 'dynamic' or a number in [0, 1]"),
    ("E", ["train-approxq", "--out", "{d}/aq", "--gamma", "often"], "error: --gamma: expected 'dynamic'"),
    ("E", ["train-approxq", "--out", "{d}/aq", "--opponents", "random,bogus"], "error: --opponents: unknown agent 'bogus'"),
    ("E", ["train-approxq", "--out", "{d}/aq", "--opponents", "random,,self"], "error: --opponents: expected"),
    ("E", ["train-approxq", "--out", "{d}/aq", "--alpha", "0"], "error: --alpha: Input should be greater than 0"),
    ("E", ["train-approxq", "--out", "{d}/aq", "--epsilon", "2"], "error: --epsilon: "),
    ("E", ["train-approxq", "--out", "{d}/aq", "--checkpoint-every", "0"], "error: --checkpoint-every: "),
    ("E", ["train-approxq", "--out", "{d}/aq", "--seed", "-1"], "--seed"),
    ("E", ["train-approxq", "--out", "{d}/aq", "-r", "loss_below=x"], "error: --rule: "),
    ("E", ["train-approxq", "--out", "{d}/aq", "--resume"], "error: --resume: "),
    ("J", ["arena", "approxq:weights={d}/config.json", "random"], "{d}/config.json: not utf-8 text"),
    ("J", ["arena", "approxq:weights={d}/recs/game.json", "random"], "approxq weights {d}/recs/game.json: field 'format'"),
    ("J", ["arena", "approxq:weights={d}/missing.json", "random"], "missing.json"),
    # issue 63: population self-play
    ("E", ["selfplay", "--set", "selfplay.opponents=league", "--run-dir", "{d}/sp"],
     "error: --set selfplay.opponents: Input should be 'self' or 'population'"),
    ("E", ["selfplay", "--set", "population.size=1", "--run-dir", "{d}/sp"],
     "error: --set population.size: Input should be greater than or equal to 2"),
    ("E", ["selfplay", "--set", "population.size=100", "--run-dir", "{d}/sp"], "error: --set population.size: "),
    ("E", ["selfplay", "--set", "population.buffer=0", "--run-dir", "{d}/sp"], "error: --set population.buffer: "),
    ("E", ["selfplay", "--set", "population.top_n=9", "--run-dir", "{d}/sp"],
     "error: --set population.top_n: 9 is above population.size (8)"),
    ("E", ["selfplay", "--set", "model=lower", "--set", "selfplay.opponents=population", "--run-dir", "{d}/sp"],
     "field 'selfplay.opponents' = 'population' plays searched games"),
    ("E", ["population", "{d}", "--games", "3"], "error: --games: must be even"),
    ("E", ["population", "{d}", "--games", "0"], "--games"),
    ("J", ["population", "{d}/nope"], "no config.json"),
    ("E", ["exploitability", "{d}/nope", "--net", "upper@i0001", "--eval-games", "3"], "error: --eval-games: must be even"),
    ("J", ["exploitability", "{d}/nope", "--net", "upper@i0001"], "no config.json"),
    # issue 62 remnants: pretraining records are checked before the pretraining games are played
    ("V", ["selfplay", "--from-scratch", "--set", 'pretrain.records=["/nope"]', "--run-dir", "{d}/sp"],
     "error: --set pretrain.records: /nope: no such file or directory"),
    # issue 63: train-dqn's options, each out of range, and the dqn agent's weights
    *[("V", ["train-dqn", "--out", "{d}/dqn", flag, value], f"error: {flag}: ") for flag, value in (
        ("--episodes", "0"), ("--seed", BIG), ("--switch", "1.5"), ("--gamma", "0"), ("--lr", "0"), ("--batch", "0"),
        ("--replay", "0"), ("--warmup", "0"), ("--alpha", "2"), ("--beta", "-1"), ("--target-every", "0"),
        ("--train-every", "0"), ("--eps-start", "1.5"), ("--eps-phase2", "-0.1"), ("--eps-end", "2"),
        ("--next-top", "0"), ("--shaping", "-1"), ("--victim-sets", "0"), ("--checkpoint-every", "0"),
        ("--blocks", "0"), ("--channels", "0"), ("--hidden", "0"), ("--battle-plies", "0"),
        ("--opponent", "nosuch"), ("--opponent", "minimax:depth=0"))],
    ("V", ["train-dqn", "--out", "{d}/dqn", "--lr", "nan"], "--lr"),
    ("J", ["train-dqn", "--out", "{d}/dqn", "--opponent", "dqn:model={d}/nope.safetensors"],
     "dqn weights {d}/nope.safetensors not found"),
    ("J", ["arena", "dqn:model={d}/badconfig.safetensors", "random", "--games", "2", "--workers", "0"],
     "badconfig.safetensors: invalid net config"),
    ("J", ["arena", "dqn:model={d}/nope.safetensors", "random", "--games", "2", "--workers", "0"],
     "dqn weights {d}/nope.safetensors not found"),
]


@pytest.mark.parametrize("cls, args, message", CASES, ids=[f"{c}-{a[0]}-{i}" for i, (c, a, _) in enumerate(CASES)])
def test_bad_input_gives_one_error_line_and_status_2(files, cls, args, message):
    args = [a.replace("{d}", str(files)) for a in args]
    result = runner.invoke(app, args)
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert len(errors) == 1 and errors[0].startswith("error: "), result.stderr
    assert message.replace("{d}", str(files)) in errors[0]
    assert "Traceback" not in result.stdout + result.stderr


def test_a_refused_selfplay_leaves_no_run_directory(tmp_path):
    """Issue 62 V: a bad ``--reward`` is refused before the run directory is printed or made."""
    run = tmp_path / "run"
    result = runner.invoke(app, ["selfplay", "--reward", "bogus", "--run-dir", str(run)])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "run directory" not in result.stderr
    assert not run.exists()


@pytest.mark.parametrize("args", [
    ["perft", START_JFEN, "-1"],
    ["nope"],
    ["legal", "--fen", START_JFEN, "-r", f"max_battle_plies={BIG}"],
])
def test_the_real_entry_point_prints_one_line(args):
    proc = subprocess.run([sys.executable, "cli.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stdout == "" and len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith("error: ")


def test_a_closed_pipe_ends_quietly():
    """``python cli.py ... --help | head -1``: the reader closes the pipe early; no traceback follows."""
    proc = subprocess.Popen([sys.executable, "cli.py", "gen-records", "--help"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.readline()
    proc.stdout.close()  # as `head -1` does once it has its line
    stderr = proc.stderr.read()
    proc.wait(timeout=120)
    assert "Traceback" not in stderr and "Error" not in stderr, stderr


def test_a_damaged_numba_cache_is_repaired_once_with_one_line(tmp_path):
    """Issue 62 remnant: an index file cut short (a full disk, a kill) made every command end in an
    ``UnpicklingError`` traceback; ``core.jit`` removes it at import and says so once on stderr."""
    import os
    import pickle

    import numba

    from core.jit import _cache_dir

    env = {**os.environ, "JIU_NUMBA_CACHE": str(tmp_path)}
    code = "import core.jit, numba; print(numba.config.CACHE_DIR)"
    cache = Path(subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                                timeout=120).stdout.strip())
    assert cache.parent == tmp_path and cache.name == Path(_cache_dir()).name
    good = pickle.dumps(numba.__version__) + pickle.dumps((("stamp", 1), {}))
    (cache / "m").mkdir(parents=True)
    (cache / "m" / "good.py312.nbi").write_bytes(good)
    (cache / "m" / "cut.py312.nbi").write_bytes(good[: len(good) - 7])
    (cache / "m" / "empty.py312.nbi").write_bytes(b"")
    first = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=120)
    assert first.returncode == 0 and "Traceback" not in first.stderr
    assert len(first.stderr.splitlines()) == 1 and "removed 2 damaged index file(s)" in first.stderr
    assert sorted(p.name for p in (cache / "m").iterdir()) == ["good.py312.nbi"]
    again = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=120)
    assert again.returncode == 0 and again.stderr == ""
