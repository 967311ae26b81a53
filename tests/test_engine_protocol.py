"""The engine protocol (``python cli.py engine``) driven as a separate process through whole games
against another agent, in the GTP-like dialect and in UGI mode; bad input never ends the engine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from core.rules import Ruleset
from core.state import GameState
from knowledge.agents import make_agent

ROOT = Path(__file__).resolve().parent.parent
RULES = ["-r", "max_battle_plies=12", "-r", "adjudicate=stones"]


class Proc:
    """The engine as a subprocess, read line by line."""

    def __init__(self, *args: str) -> None:
        self.p = subprocess.Popen([sys.executable, "cli.py", "engine", *args], cwd=ROOT, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self.transcript: list[str] = []

    def send(self, line: str) -> None:
        self.transcript.append("> " + line)
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def line(self) -> str:
        text = self.p.stdout.readline()
        assert text, f"engine closed its output; stderr: {self.p.stderr.read()}"
        self.transcript.append("< " + text.rstrip("\n"))
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
        if eng.p.poll() is None:
            eng.p.kill()


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
        if eng.p.poll() is None:
            eng.p.kill()


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
        if eng.p.poll() is None:
            eng.p.kill()
