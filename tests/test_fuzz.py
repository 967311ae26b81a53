"""Fuzz tests of every parser of user input: any input gives a value or the project's typed error
(``core.errors.JiuError`` and its subclasses; ``train.learning.config.ConfigError`` is one), never another
exception, in bounded time (hypothesis' deadline per example).

Each parser gets at least 500 examples, drawn half from free text and half from structured
mutations of valid input (valid tokens shuffled, cut, repeated, with junk spliced in), so that the
fuzzing reaches the deep checks and not only the first one. Agent specs are left to the agent
option parser's own tests.
"""

from __future__ import annotations

import io
import json
import re
import threading
import time
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import JiuError
from core.jfen import START_JFEN, parse_jfen
from core.notation import parse_move
from core.records import (
    GameRecord,
    jiu_to_record,
    parse_csv_line,
    record_from_json,
    record_to_dict,
    record_to_jiu,
)
from core.rules import Ruleset
from core.state import GameState
from frontends.engine import MAX_ERROR_CHARS, MAX_LINE_BYTES, Engine, command_lines
from knowledge.agents import make_agent
from tests.strategies import rulesets

FUZZ = settings(max_examples=500, deadline=timedelta(seconds=10), derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

# A short legal game (layout complete, a few battle moves) to mutate: found once by random play.
_SEED_GAME = None


def seed_game() -> GameRecord:
    global _SEED_GAME
    if _SEED_GAME is None:
        from core.playout import random_game_moves

        moves, _, _ = random_game_moves(5, Ruleset(max_battle_plies=6).vector)
        _SEED_GAME = GameRecord.from_moves(moves, Ruleset(max_battle_plies=6), white="A", black="B")
    return _SEED_GAME


def parsed_or_typed_error(fn, *args):
    """``fn(*args)``, or ``None`` when it raises the project's typed error; any other exception fails."""
    try:
        return fn(*args)
    except JiuError:
        return None


def mutated(text: str, alphabet: str):
    """Strategy: ``text`` cut into pieces at separators, then pieces dropped, repeated, swapped or
    replaced by junk from ``alphabet``."""
    import re

    pieces = re.split(r"(\s+|[/,;\[\]-])", text)
    junk = st.text(alphabet=alphabet, max_size=12)

    @st.composite
    def build(draw):
        out = list(pieces)
        for _ in range(draw(st.integers(1, 6))):
            if not out:
                break
            i = draw(st.integers(0, len(out) - 1))
            op = draw(st.sampled_from(["drop", "dup", "junk", "swap", "digits"]))
            if op == "drop":
                del out[i]
            elif op == "dup":
                out.insert(i, out[i])
            elif op == "junk":
                out[i] = draw(junk)
            elif op == "digits":
                out[i] = draw(st.sampled_from(["0", "-1", "99999999999999999999", "18446744073709551615", "1e3",
                                               "٣", "00", "196", "1000001"]))
            else:
                j = draw(st.integers(0, len(out) - 1))
                out[i], out[j] = out[j], out[i]
        return "".join(out)

    return build()


def free_or_mutated(valid: str, alphabet: str):
    return st.one_of(st.text(max_size=300), st.text(alphabet=alphabet, max_size=300), mutated(valid, alphabet))


# ----------------------------------------------------------------------------------- JFEN and moves
_MID_JFEN = "B1W1B1W1B1W1B1/W1B1W1B1W1B1W1/14/14/14/14/7W6/7B6/14/14/14/14/14/14 b battle 5 230"


@FUZZ
@given(st.one_of(free_or_mutated(START_JFEN, "WB0123456789/ wblayoutbattle-x"),
                 free_or_mutated(_MID_JFEN, "WB0123456789/ wblayoutbattle-x")))
def test_fuzz_jfen(text):
    fields = parsed_or_typed_error(parse_jfen, text)
    state = parsed_or_typed_error(GameState.from_jfen, text)
    assert (fields is None) == (state is None)
    if state is not None:
        assert 0 <= state.ply <= 1_000_000 and 0 <= state.quiet <= 1_000_000
        assert parse_jfen(state.to_jfen()).ply == state.ply  # what parses formats and parses again
        state.legal_moves()  # and reaches the kernels without error


@FUZZ
@given(free_or_mutated("i7xg7xg9/a1/b2", "abcdefghijklmn0123456789x-/ "))
def test_fuzz_notation(text):
    move = parsed_or_typed_error(parse_move, text)
    if move is not None:
        assert parse_move(str(move)) == move
        parsed_or_typed_error(GameState.from_jfen(_MID_JFEN).check_move, move)


# ----------------------------------------------------------------------------------- records
def json_values():
    return st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
        max_leaves=12,
    )


@st.composite
def record_dicts(draw):
    data = record_to_dict(seed_game())
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from([*data.keys(), "extra", "ruleset.loss_below", "ruleset.max_battle_plies",
                                    "moves[]", "players.white"]))
        value = draw(json_values() | st.sampled_from([10**30, -1, "g7", ["g7", "h8"], {"white": 1}]))
        if key == "moves[]" and data["moves"]:
            data["moves"][draw(st.integers(0, len(data["moves"]) - 1))] = value
        elif "." in key:
            section, field = key.split(".")
            if isinstance(data.get(section), dict):
                data[section][field] = value
        else:
            data[key] = value
    return json.dumps(data)


@FUZZ
@given(st.one_of(st.text(max_size=300), record_dicts(),
                 mutated(json.dumps(record_to_dict(seed_game())), '{}[],:"0123456789 gh7x/-')))
def test_fuzz_json_record(text):
    record = parsed_or_typed_error(record_from_json, text)
    if record is not None:
        parsed_or_typed_error(record.replay)


@FUZZ
@given(free_or_mutated(record_to_jiu(seed_game()), "[]JIU14zZ0123456789,;-abcdefghijklmnABCDEFGHIJKLMN ruleset=\n"))
def test_fuzz_jiu_record(text):
    record = parsed_or_typed_error(jiu_to_record, text)
    if record is not None:
        assert record.final_state() is not None


def _csv_line() -> str:
    record = seed_game()
    placements = [f"{'WB'[i % 2]}({m[0].upper()},{m[1:]})" for i, m in enumerate(record.moves[:196])]
    return "Game 1, first wins, Stage[1]: " + ", ".join(placements) + " Stage[2]: B(H,8) W(G,7)"


@FUZZ
@given(free_or_mutated(_csv_line(), "WBO(),;: TCFC0123456789ABCDEFGHIJKLMNStage[]12-"))
def test_fuzz_csv_record(text):
    parsed_or_typed_error(parse_csv_line, text)


# ----------------------------------------------------------------------------------- rules and configs
_RULE_KEYS = ["chain_revisit", "fly_jump_rule", "loss_below", "repetition_draw", "max_battle_plies", "adjudicate",
              "end_order", "loss-below", "bogus", ""]
_RULE_VALUES = st.one_of(st.text(max_size=12), st.integers(-10**25, 10**25).map(str),
                         st.sampled_from(["forbid", "allow", "none", "stones", "cap-first", "all-multi", "1", "0",
                                          "99999999999999999999", "1e9", " 7 ", "nan", "-0"]))


@FUZZ
@given(st.lists(st.one_of(st.text(max_size=30),
                          st.tuples(st.sampled_from(_RULE_KEYS), _RULE_VALUES).map(lambda kv: f"{kv[0]}={kv[1]}")),
                max_size=4))
def test_fuzz_rule_options(items):
    ruleset = parsed_or_typed_error(Ruleset.from_options, items)
    if ruleset is not None:
        assert 1 <= ruleset.max_battle_plies <= 100_000 and 0 <= ruleset.repetition_draw <= 1_000
        GameState.from_jfen(_MID_JFEN, ruleset).outcome()  # the packed vector reaches a kernel


_CONFIG_KEYS = ["model", "iterations", "workers", "seed", "backend", "minutes", "selfplay.games",
                "selfplay.search.simulations", "selfplay.temperature_plies", "nets.blocks", "nets.channels", "nets.preset",
                "learner.lr", "learner.steps", "replay.window", "ruleset.loss_below", "ruleset.max_battle_plies",
                "gate.max_games", "curve.games", "pretrain.steps", "bogus.key", "selfplay", "a..b"]


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(_CONFIG_KEYS), st.one_of(_RULE_VALUES, json_values().map(json.dumps))),
                max_size=4),
       st.one_of(st.none(), st.binary(max_size=200), json_values().map(lambda v: json.dumps(v).encode()),
                 st.text(max_size=200).map(str.encode)),
       st.booleans())
def test_fuzz_config(tmp_path_factory, overrides, file_bytes, toml):
    from train.learning.config import load_config

    path = None
    if file_bytes is not None:
        path = tmp_path_factory.getbasetemp() / ("fuzz-config.toml" if toml else "fuzz-config.json")
        path.write_bytes(file_bytes)
    cfg = parsed_or_typed_error(load_config, path, [f"{k}={v}" for k, v in overrides])
    if cfg is not None:
        assert cfg.ruleset.max_battle_plies <= 100_000


pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@settings(max_examples=50, deadline=None)
@given(a=rulesets(), b=rulesets())
def test_a_copied_ruleset_packs_its_own_rules(a, b):
    """``Ruleset.model_copy(update=...)`` after the original's kernel vector was computed gives the copy's
    own vector, the one a ruleset built from the same fields has (pydantic would carry the cached one)."""
    import numpy as np

    a.vector  # noqa: B018 - computed and cached on the original first
    copied = a.model_copy(update=b.model_dump())
    assert copied == b and np.array_equal(copied.vector, b.vector)


# ----------------------------------------------------------------------------------- engine command stream
# The engine protocol (frontends/engine.py) driven in-process with random interleavings of GTP and UGI
# commands, good and bad, including commands during a UGI search (`go infinite`, other commands, `stop`)
# and lines over the length limit or not UTF-8: every command gets one well-formed answer (GTP: one
# `=` block or one `?` line; UGI: protocol lines, errors one `info string error:` line), no answer is
# long, and the whole stream ends within STREAM_SECONDS (a hang fails the example instead of the run).
STREAM_SECONDS = 30.0
_ENGINE_AGENT = None


def engine_agent():
    """One fast search agent shared by every stream (an engine given an agent does not close it)."""
    global _ENGINE_AGENT
    if _ENGINE_AGENT is None:
        _ENGINE_AGENT = make_agent("mcts:sims=2,threads=1", seed=0)
    return _ENGINE_AGENT


_GTP_COMMANDS = ["name", "version", "protocol_version", "list_commands", "rules max_battle_plies=20", "rules bogus",
                 "position startpos", f"position jfen {_MID_JFEN}", "position startpos moves g7 h8", "play g7",
                 "play h8", "play a1", "undo", "genmove sims 2", "genmove time 0.01", "genmove time inf",
                 "genmove sims 10000000", "analyze sims 3", "analyze time 1e300", "legal", "showboard", "result",
                 "7 name", "12345678901234567890 name", "7", "# a comment", ""]
_UGI_COMMANDS = ["ugi", "isready", "uginewgame", "position startpos", f"position fen {_MID_JFEN}",
                 "position startpos moves g7 h8", "position fen 14/14 w", "setoption name sims value 3",
                 "setoption name loss_below value 5", "setoption name sims value 10000000", "setoption name bogus",
                 "go nodes 3", "go movetime 10", "go infinite", "go infinite", "go p1time 100 p2time 100",
                 "go p1time inf", "go movetime 1e30", "go nodes 10000000", "go sideways 3", "stop", "stop",
                 "query gameover", "query p1turn", "query result", "query bogus"]
_OVER_LONG = b"x" * (MAX_LINE_BYTES + 10)
_NOT_UTF8 = b"name \xff\xfe"


def _line(text: str) -> bytes:
    return text.replace("\n", " ").encode("utf-8", "replace")


def engine_items(commands: list[str]):
    """Strategy: one input item: a line (bytes, no line end) or a pause (seconds, float). Lines are
    mostly ``commands``, else mutated commands, free text, a command with a long argument (under the
    line limit, so its echo must be cut), a line over the limit or not UTF-8, or ``quit``."""
    everything = _GTP_COMMANDS + _UGI_COMMANDS
    return st.one_of(
        st.sampled_from(commands).map(str.encode),
        st.sampled_from(commands).map(str.encode),
        st.sampled_from(everything).flatmap(lambda c: mutated(c, "abcdefgh0123456789 -/x")).map(_line),
        st.text(max_size=40).map(_line),
        st.tuples(st.sampled_from(everything), st.sampled_from(["y", "9", "e5-", "\u00e9"]), st.sampled_from([300, 60_000]))
        .map(lambda t: _line(f"{t[0]} {t[1] * (t[2] // len(t[1].encode()))}")[:MAX_LINE_BYTES - 1]),
        st.sampled_from([_OVER_LONG, _NOT_UTF8, b"quit"]),
        st.sampled_from([0.0, 0.01, 0.03]),
    )


@st.composite
def ugi_streams(draw):
    """Strategy: the items after ``ugi``: UGI commands (GTP ones mixed in) and searches with commands
    arriving while they run: ``go infinite``, a few items, then usually ``stop``."""
    out: list = []
    for _ in range(draw(st.integers(0, 4))):
        if draw(st.booleans()):
            out.append(b"go infinite")
            out.extend(draw(st.lists(engine_items(_UGI_COMMANDS), max_size=4)))
            if draw(st.integers(0, 3)):
                out.append(b"stop")
        else:
            out.extend(draw(st.lists(engine_items(_UGI_COMMANDS + _GTP_COMMANDS[:8]), max_size=5)))
    return out


class _Out:
    """The engine's output (``Engine.send`` writes under its own lock)."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> None:
        self.parts.append(text)

    def flush(self) -> None:
        pass

    def lines(self) -> list[str]:
        return "".join(self.parts).split("\n")[:-1]


def _decoded(item) -> str | None:
    """The text the engine reads from one item's line (``None`` for a pause or a refused line)."""
    if isinstance(item, float) or len(item) > MAX_LINE_BYTES:
        return None
    try:
        return item.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None


def _predicted(items) -> tuple[int, int | None, int]:
    """What the engine owes ``items``: the number of GTP answers before ``ugi`` or ``quit`` (one per
    line that is not empty or a comment, a refused line included), the index of the item that switches
    to UGI (``None``: no switch), and the number of ``readyok`` after it (one per ``isready`` before a
    ``quit``)."""
    answers, switch = 0, None
    for i, item in enumerate(items):
        if isinstance(item, float):
            continue
        text = _decoded(item)
        if text is None:
            answers += 1
            continue
        if not text or text.startswith("#"):
            continue
        words = text.split()
        if words[0].isascii() and words[0].isdigit() and len(words[0]) <= 9:
            words = words[1:]
        if words and words[0].lower() == "ugi":
            switch = i
            break
        answers += 1
        if words and words[0].lower() == "quit":
            return answers, None, 0
    ready = 0
    for item in items[switch + 1:] if switch is not None else ():
        text = _decoded(item)
        if not text or text.startswith("#"):
            continue
        word = text.split()[0].lower()
        if word == "quit":
            break
        ready += word == "isready"
    return answers, switch, ready


_UGI_LINE = re.compile(r"(id (name|author) .+|option name \S+ type .+|ugiok|readyok|bestmove \S+|response \S+"
                       r"|info nodes \d+ score cp -?\d+ pv[ \S]*|info string error: .+)")


def check_engine_stream(items) -> None:
    """Drive a fresh engine with ``items`` (engine_items) in a thread, then check its whole output."""
    out = _Out()
    eng = Engine(out, agent=engine_agent())

    def feed():
        for item in items:
            if isinstance(item, float):
                time.sleep(item)
            else:
                yield from command_lines(io.BytesIO(item + b"\n"))

    runner = threading.Thread(target=eng.run, args=(feed(),), daemon=True)
    runner.start()
    runner.join(STREAM_SECONDS)
    assert not runner.is_alive(), f"the engine hung on {items!r}"
    assert not eng.searching
    lines = out.lines()
    answers, switch, ready = _predicted(items)
    k = blocks = 0
    while k < len(lines) and not lines[k].startswith("id name "):
        head = lines[k]
        assert re.fullmatch(r"[=?]\d{0,9}( .*)?", head), (head, items)
        end = lines.index("", k)
        if head.startswith("?"):
            assert end == k + 1 and len(head) <= MAX_ERROR_CHARS + 12, (head, items)  # one `?` line
        blocks, k = blocks + 1, end + 1
    assert blocks == answers, (blocks, answers, lines, items)
    assert (switch is not None) == (k < len(lines)), (lines, items)
    ugi = lines[k:]
    for line in ugi:
        assert _UGI_LINE.fullmatch(line), (line, items)
        assert not line.startswith("info string error: ") or len(line) <= MAX_ERROR_CHARS + 20, line
    assert sum(line == "readyok" for line in ugi) == ready, (ugi, items)
    gos = sum(1 for item in items if (_decoded(item) or "").startswith("go"))
    assert sum(line.startswith("bestmove ") for line in ugi) <= gos, (ugi, items)


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(engine_items(_GTP_COMMANDS), max_size=10), ugi_streams())
def test_fuzz_engine_command_stream(gtp_items, ugi_items):
    """GTP commands (a ``ugi`` among them switches early, a ``quit`` ends the stream), then ``ugi`` and
    UGI commands with searches interrupted (the section's comment says what is checked)."""
    check_engine_stream([*gtp_items, b"ugi", *ugi_items])


def test_engine_soak():
    """A bounded soak: random command streams (both dialects, searches stopped and interrupted, pauses)
    for about 1.5 seconds, each stream checked as in the fuzz test."""
    import random

    rng = random.Random(62)
    vocabulary = [c.encode() for c in _GTP_COMMANDS + _UGI_COMMANDS] + [_OVER_LONG, _NOT_UTF8, 0.0, 0.005]
    engine_agent()
    end = time.perf_counter() + 1.5
    streams = 0
    while time.perf_counter() < end:
        items = [rng.choice(vocabulary) for _ in range(rng.randint(1, 30))]
        check_engine_stream(items)
        streams += 1
    assert streams >= 3
