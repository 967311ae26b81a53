"""The engine protocol (``python cli.py engine``) driven as a separate process through whole games
against another agent, in the GTP-like dialect and in UGI mode; bad input never ends the engine, and
the bounds of docs/engine-protocol.md ("Limits") hold: search budgets, line length, commands during a
search, ``--seed``, a closed standard output. Every read has a time bound, so a hang fails the test."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from core.jfen import START_JFEN
from core.rules import Ruleset
from core.state import GameState
from knowledge.agents import make_agent

ROOT = Path(__file__).resolve().parent.parent
RULES = ["-r", "max_battle_plies=12", "-r", "adjudicate=stones"]
FAST = ["--agent", "mcts:sims=2,threads=1"]
READ_SECONDS = 60.0  # a reply that takes longer is a hang (the slowest reply here is an agent's start-up)


class Proc:
    """The engine as a subprocess, read line by line (a reader thread; each read waits at most
    ``READ_SECONDS``)."""

    def __init__(self, *args: str, stdin=subprocess.PIPE, shell_prefix: str = "") -> None:
        command = [sys.executable, "cli.py", "engine", *args]
        if shell_prefix:  # e.g. a ulimit, run by sh before it execs the engine
            command = ["sh", "-c", f'{shell_prefix} && exec "$@"', "sh", *command]
        self.p = subprocess.Popen(command, cwd=ROOT, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, bufsize=1)
        self.transcript: list[str] = []
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for text in self.p.stdout:
            self.lines.put(text)
        self.lines.put("")

    def send(self, line: str) -> None:
        self.transcript.append("> " + line[:200])
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def line(self, timeout: float = READ_SECONDS) -> str:
        try:
            text = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no reply in {timeout:g} s (a hang); transcript: {self.transcript[-6:]}") from None
        assert text, f"engine closed its output; stderr: {self.p.stderr.read()}"
        self.transcript.append("< " + text.rstrip("\n")[:200])
        return text.rstrip("\n")

    def gtp(self, line: str) -> tuple[bool, list[str]]:
        """Send a GTP-like command; return (success, response lines without the blank terminator)."""
        self.send(line)
        lines = [self.line()]
        while lines[-1] != "":
            lines.append(self.line())
        head = lines[0]
        assert head[:1] in "=?", lines
        return head.startswith("="), [head[1:].strip(), *lines[1:-1]]

    def until(self, prefix: str) -> list[str]:
        lines = [self.line()]
        while not lines[-1].startswith(prefix):
            lines.append(self.line())
        return lines

    def close(self) -> int:
        self.p.stdin.close()
        return self.p.wait(timeout=60)

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(timeout=60)


@pytest.fixture
def opponent():
    return make_agent("random", seed=3)


def test_gtp_whole_game_against_random(opponent):
    eng = Proc("--agent", "mcts:sims=8", *RULES)
    try:
        ok, (name, *_) = eng.gtp("name")
        assert ok and name == "jiu-jfa"
        assert eng.gtp("protocol_version") == (True, ["1"])
        ok, reply = eng.gtp("rules loss_below=4")
        assert ok and "max_battle_plies=12" in reply[0] and "adjudicate=stones" in reply[0]
        # bad input: one line with the reason, and the engine goes on
        assert eng.gtp("play a1") == (False, ["placement a1: the first two placements go on the centre points g7 and h8"])
        assert eng.gtp("frobnicate")[0] is False
        assert eng.gtp("genmove sims zero")[0] is False
        assert eng.gtp("position jfen 15/14 w layout 0 0")[0] is False
        state = GameState.initial(Ruleset(max_battle_plies=12, adjudicate="stones"))
        engine_side = 1  # the engine plays Black
        while not state.is_terminal():
            if state.side == engine_side:
                ok, (move,) = eng.gtp("genmove sims 8")
                assert ok, move
                state = state.apply(move)  # the engine's move is legal here
            else:
                move = str(opponent.select(state))
                assert eng.gtp(f"play {move}") == (True, [""])
                state = state.apply(move)
        assert state.phase == 1 and state.ply > 196
        ok, (res,) = eng.gtp("result")
        assert ok and res == f"{state.outcome().winner_code} {state.outcome().reason}"
        assert eng.gtp("genmove")[0] is False  # the game is over
        assert eng.gtp("undo")[0] and eng.gtp("undo")[0]
        ok, lines = eng.gtp("analyze sims 16")
        assert ok and lines[0].startswith("value ") and " best " in lines[0]
        cands = [line.split() for line in lines if line.startswith("candidate ")]
        assert 1 <= len(cands) <= 3 and all(c[4] == "N" and c[6] == "Q" and c[8] == "P" for c in cands)
        assert lines[-1].startswith("pv ")
        ok, board = eng.gtp("showboard")
        assert ok and any("battle" in line for line in board)
        assert eng.gtp("quit") == (True, [""])
        assert eng.p.wait(timeout=60) == 0
    finally:
        eng.kill()


def test_ugi_whole_game_against_random(opponent):
    eng = Proc("--agent", "mcts:sims=8", *RULES)
    try:
        eng.send("ugi")
        hello = eng.until("ugiok")
        assert hello[0].startswith("id name jiu-jfa") and any(h.startswith("option name max_battle_plies") for h in hello)
        eng.send("isready")
        assert eng.line() == "readyok"
        eng.send("uginewgame")
        eng.send("position startpos moves a1")  # illegal: refused on one line, the engine goes on
        assert eng.line().startswith("info string error: move 1 'a1': placement a1")
        state = GameState.initial(Ruleset(max_battle_plies=12, adjudicate="stones"))
        moves: list[str] = []
        engine_side = 0  # the engine plays White (p1)
        while True:
            eng.send("position startpos" + (" moves " + " ".join(moves) if moves else ""))
            eng.send("query gameover")
            over = eng.line()
            assert over == f"response {'true' if state.is_terminal() else 'false'}"
            if state.is_terminal():
                break
            eng.send("query p1turn")
            assert eng.line() == f"response {'true' if state.side == 0 else 'false'}"
            if state.side == engine_side:
                eng.send("go nodes 8" if len(moves) % 4 else "go movetime 30")
                reply = eng.until("bestmove")
                assert reply[0].startswith("info nodes ")
                move = reply[-1].split()[1]
            else:
                move = str(opponent.select(state))
            state = state.apply(move)
            moves.append(move)
        eng.send("query result")
        winner = state.outcome().winner_code
        assert eng.line() == "response " + {"w": "p1win", "b": "p2win", "draw": "draw"}[winner]
        eng.send("quit")
        assert eng.p.wait(timeout=60) == 0
    finally:
        eng.kill()


def test_ugi_infinite_search_stops_on_stop():
    eng = Proc("--agent", "mcts:sims=8")
    try:
        eng.send("ugi")
        eng.until("ugiok")
        eng.send("position startpos moves g7 h8")
        eng.send("go infinite")
        eng.send("isready")  # answered while the search runs
        assert eng.line() == "readyok"
        eng.send("stop")
        lines = eng.until("bestmove")
        nodes = int(lines[0].split()[2])
        assert nodes >= 1 and GameState.initial().apply("g7").apply("h8").parse_move(lines[-1].split()[1])
        eng.send("quit")
        assert eng.p.wait(timeout=60) == 0
    finally:
        eng.kill()


# ----------------------------------------------------------------------------------- issue 62: bounds
def test_search_budgets_out_of_bounds_are_refused_on_one_line():
    """Every search budget has an upper bound (search.config.SIMS_MAX, SECONDS_MAX), checked where it
    enters: ``genmove``/``analyze`` ``time``/``sims``, ``go movetime``/``nodes``/clocks, the ``sims``
    option. Unbounded, ``genmove time inf`` never answered."""
    eng = Proc(*FAST)
    try:
        for command in ("genmove time inf", "genmove time 1e300", "genmove time nan", "genmove sims 10000000",
                        "genmove sims 1" + "0" * 30, "genmove sims " + "9" * 5000, "analyze time 3601",
                        "analyze sims 1000001"):
            ok, (reason, *rest) = eng.gtp(command)
            assert not ok and not rest and len(reason) < 200, (command, reason)
            assert any(word in reason for word in ("at most", "finite", "digits")), reason
        assert eng.gtp("genmove sims 2")[0]  # in bounds: played
        eng.send("ugi")
        eng.until("ugiok")
        for command in ("go movetime 1e30", "go movetime inf", "go nodes 10000000", "go p1time inf",
                        "setoption name sims value 10000000"):
            eng.send(command)
            reply = eng.line()
            assert reply.startswith("info string error: ") and len(reply) < 200, (command, reply)
        eng.send("go p1time 1e300 p2time 1e300 nodes 2")  # a huge clock: the move's time is capped
        assert eng.until("bestmove")[-1].startswith("bestmove ")
        eng.send("quit")
        assert eng.p.wait(timeout=60) == 0
    finally:
        eng.kill()


def test_analyze_command_bounds_its_budgets():
    """``analyze --sims 2000000`` ran for ever; every budget option is refused beyond its bound."""
    for option in (["--sims", "2000000"], ["--seconds", "1e300"]):
        r = subprocess.run([sys.executable, "cli.py", "analyze", "missing-record.json", *option], cwd=ROOT,
                           capture_output=True, text=True, timeout=120, check=False)
        assert r.returncode == 2 and r.stdout == "", r
        assert r.stderr.count("\n") == 1 and option[0] in r.stderr and "at most" in r.stderr, r.stderr


def test_ugi_commands_during_a_search_are_handled():
    """``go infinite`` then ``position`` before ``stop`` hung for good: a command that changes the game
    ends the search first (its ``bestmove``), ``isready`` and ``query`` are answered while it runs, and
    ``quit`` during a search ends the engine."""
    eng = Proc(*FAST)
    try:
        eng.send("ugi")
        eng.until("ugiok")
        eng.send("isready")
        assert eng.line() == "readyok"  # the agent is built
        eng.send("position startpos moves g7 h8")
        eng.send("go infinite")
        eng.send("query p1turn")  # answered during the search, which goes on
        assert eng.line() == "response true"
        eng.send("position startpos")  # ends the search: its bestmove, then the new position
        assert eng.until("bestmove")[-1].split()[1] in {str(m) for m in GameState.initial().apply("g7").apply("h8").legal_moves()}
        eng.send("query p1turn")
        assert eng.line() == "response true"
        eng.send("go infinite")
        eng.send("go nodes 2")  # a new search ends the running one: two bestmoves
        eng.until("bestmove")
        eng.until("bestmove")
        eng.send("go infinite")
        eng.send("setoption name loss_below value 5")
        eng.until("bestmove")
        eng.send("go infinite")
        eng.send("stop")
        eng.until("bestmove")
        eng.send("stop")  # no search: nothing to answer
        eng.send("isready")
        assert eng.line() == "readyok"
        eng.send("go infinite")
        eng.send("quit")  # ends the search and the engine
        assert eng.p.wait(timeout=60) == 0
    finally:
        eng.kill()


def test_an_over_long_line_is_refused_with_one_short_reply():
    """A line longer than MAX_LINE_BYTES (64 KiB) is refused with one short error naming the limit and
    skipped; the engine goes on. It was echoed back in full."""
    eng = Proc(*FAST)
    try:
        ok, (reason, *rest) = eng.gtp("x" * 100_000)
        assert not ok and not rest and reason == "line 1 longer than 65536 bytes; refused"
        ok, (reason, *rest) = eng.gtp("frobnicate" + "y" * 60_000)  # under the limit: the echo is cut
        assert not ok and len(reason) < 200
        assert eng.gtp("name") == (True, ["jiu-jfa"])
        eng.send("ugi")
        eng.until("ugiok")
        eng.send("z" * 70_000)
        assert eng.line() == "info string error: line 5 longer than 65536 bytes; refused"
        eng.send("isready")
        assert eng.line() == "readyok"
        eng.send("quit")
        assert eng.p.wait(timeout=60) == 0
    finally:
        eng.kill()


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero and sh")
def test_endless_input_is_read_in_bounded_memory():
    """``engine < /dev/zero`` ended in a MemoryError traceback: the endless line is answered once and read
    in bounded memory (the address space is capped at 4 GiB so that a regression fails, not the machine)."""
    with open("/dev/zero", "rb") as zero:
        eng = Proc(stdin=zero, shell_prefix=f"ulimit -v {4 * 2**20}")  # KiB
    try:
        assert eng.line() == "? line 1 longer than 65536 bytes; refused"
        assert eng.line() == ""
        with pytest.raises(AssertionError, match="no reply"):
            eng.line(timeout=1)  # still reading zeros, quietly
        assert eng.p.poll() is None
    finally:
        eng.kill()
    assert "Traceback" not in eng.p.stderr.read()


def test_engine_seed_is_bounded_at_parse_time():
    """``engine --seed -1`` started and failed every genmove; it is refused like every other --seed."""
    r = subprocess.run([sys.executable, "cli.py", "engine", "--seed", "-1"], cwd=ROOT, input="name\nquit\n",
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.startswith("error: engine: ") and "'--seed'" in r.stderr


def test_a_closed_standard_output_ends_a_command_quietly():
    """``legal --fen START >&-`` gave an AttributeError traceback: every command started with standard
    output closed exits at once with a nonzero status and nothing on stderr."""
    for args in (["legal", "--fen", START_JFEN], ["engine", "--agent", "random"]):
        r = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "cli.py", *args], cwd=ROOT,
                           stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=120, check=False)
        assert r.returncode != 0 and r.stderr == "", (args, r.returncode, r.stderr)
