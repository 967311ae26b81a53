"""The engine protocol on standard input and output (``python cli.py engine``), for match runners and GUIs.

Two dialects (docs/engine-protocol.md has the full reference and a transcript):

- **GTP-like** (the default): one command per line, answered by ``= RESULT`` (success) or ``? REASON``
  (failure, one line), then an empty line; an optional numeric id before the command is echoed
  (``3 genmove`` -> ``=3 e5-e6``). Commands: ``name``, ``version``, ``protocol_version``,
  ``list_commands``, ``rules [KEY=VALUE...]``, ``position startpos|jfen JFEN [moves M...]``,
  ``play MOVE``, ``undo``, ``genmove [time SECONDS | sims N]``, ``analyze [time SECONDS | sims N]``,
  ``legal``, ``showboard``, ``result``, ``quit``.
- **UGI** (the UCI generalisation of cutegames), entered with ``ugi`` (answered by ``id`` lines,
  ``option`` lines and ``ugiok``): ``isready``/``readyok``, ``uginewgame``, ``setoption name N value V``,
  ``position startpos|fen JFEN [moves M...]``, ``go [movetime MS | nodes N | p1time MS p2time MS
  [p1inc MS p2inc MS] | infinite]`` (``info`` lines then ``bestmove MOVE``; the search runs in a worker
  thread, so every command is read and answered while it runs: ``isready``, ``query`` and ``stop`` at
  once, ``quit`` ends the search and the engine; ``ugi``, ``uginewgame``, ``position``, ``setoption`` and
  ``go`` end the search first, as a ``stop`` would, its ``bestmove`` coming before their answer),
  ``stop``, ``query gameover|p1turn|result`` (``response ...``), ``quit``. Errors are
  ``info string error: REASON``.

Bounds (docs/engine-protocol.md, "Limits"): an input line is at most :data:`MAX_LINE_BYTES` bytes (a
longer one is refused with one error naming the limit, and skipped to its end); a search budget is at
most ``search.config.SIMS_MAX`` simulations and ``search.config.SECONDS_MAX`` seconds per move
(``genmove``/``analyze`` ``sims``/``time``, ``go nodes``/``movetime``, the ``sims`` option; a budget out
of bounds is refused; the time ``go p1time/p2time`` derives from a clock is capped at ``SECONDS_MAX``);
an error echoes at most a short prefix of the input (:data:`MAX_ERROR_CHARS` characters in all).

Moves are the rule book's notation (``g7``, ``e5-e6``, ``c3xc5xe5``, ``e5-e6/c3``; section 4) and
positions JFEN (section 6). The engine never exits on bad input; it exits on ``quit`` or end of input.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, TextIO

from core.board import DRAW, WHITE
from core.errors import InputError, JiuError
from core.inputs import bounded_lines
from core.jfen import START_JFEN
from core.rules import Ruleset
from core.state import GameState
from frontends import DEFAULT_AGENT
from search.agents import searching_agent, think
from search.analysis import evaluate_position
from search.config import SECONDS_MAX, SIMS_MAX, check_budget

ENGINE_NAME = "jiu-jfa"
AUTHOR = "the jiu-jfa project"
PROTOCOL_VERSION = "1"
GTP_COMMANDS = ("name", "version", "protocol_version", "list_commands", "rules", "position", "play", "undo",
                "genmove", "analyze", "legal", "showboard", "result", "quit", "ugi")
MAX_LINE_BYTES = 64 * 1024  # one input line (command), bytes: a whole game's moves fit many times over
MAX_ERROR_CHARS = 300  # one error reply, characters (the input it names is cut to a short prefix)
MAX_ID_DIGITS = 9  # a GTP command id: a longer number is not taken for an id
INFINITE_SIMULATIONS = 10_000_000  # `go infinite` (never from input): the search runs until `stop`


class ProtocolError(JiuError):
    """A command the engine cannot carry out (bad syntax, bad value, wrong moment); says why."""


def shown(text: str, limit: int = 32) -> str:
    """``repr(text)`` of at most ``limit`` characters of ``text`` (``...`` after a cut): how an error
    names the input it refuses without echoing a long line back."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + "..."


def one_line(message: str, limit: int = MAX_ERROR_CHARS) -> str:
    """``message`` on one line (whitespace runs become one space) of at most ``limit`` characters."""
    text = " ".join(message[:4 * limit].split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def command_lines(stream: IO, limit: int = MAX_LINE_BYTES) -> Iterator[str | InputError]:
    """The lines of ``stream`` (binary, UTF-8; or text), each read with at most ``limit + 1`` bytes
    (characters for a text stream) held in memory. A longer line gives one ``InputError`` naming the
    limit (yielded as soon as the limit is passed, before the rest of the line is read and dropped), a
    line that is not UTF-8 one naming the byte; reading goes on with the next line. So an endless
    line (``< /dev/zero``) is answered once and read in bounded memory."""
    for n, raw in bounded_lines(stream, limit):
        if raw is None:
            yield InputError(f"line {n} longer than {limit} bytes; refused")
            continue
        if isinstance(raw, str):
            yield raw
            continue
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield InputError(f"line {n}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})")


def engine_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("jiu-jfa")
    except PackageNotFoundError:
        return "0.1.0"


def _number(text: str, what: str, cast: Callable = float, zero: bool = False):
    """``cast(text)``, finite and positive (or zero too with ``zero``); ``ProtocolError`` naming
    ``what`` otherwise."""
    try:
        value = cast(text)
    except ValueError:  # also an integer of more than 4300 digits
        reason = "too many digits" if text.strip().lstrip("+-").isdigit() else "not a number"
        raise ProtocolError(f"{what} {shown(text)}: {reason}") from None
    if not ((value >= 0 if zero else value > 0) and (isinstance(value, int) or math.isfinite(value))):
        raise ProtocolError(f"{what} {shown(text)}: must be a finite number {'at least' if zero else 'greater than'} 0")
    return value


def _budget(args: list[str]) -> tuple[int | None, float | None]:
    """``time SECONDS`` / ``sims N`` (either, both or none) -> (simulations, seconds), each within
    ``search.config.check_budget``'s bounds (at most ``SIMS_MAX`` simulations, ``SECONDS_MAX``
    seconds). A time alone searches until the time is spent (or ``SIMS_MAX`` simulations are done);
    neither uses the agent's own number of simulations."""
    sims = seconds = None
    it = iter(args)
    for key in it:
        value = next(it, None)
        if value is None:
            raise ProtocolError(f"{shown(key)}: missing value")
        if key == "time":
            seconds = _number(value, "time")
        elif key == "sims":
            sims = _number(value, "sims", int)
        else:
            raise ProtocolError(f"{shown(key)}: expected 'time SECONDS' or 'sims N'")
    check_budget(sims, seconds, ("sims", "time"))
    if seconds is not None and sims is None:
        sims = SIMS_MAX
    return sims, seconds


def _rule_values(items: Iterable[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ProtocolError(f"rules {shown(item)}: expected KEY=VALUE")
        out[key.strip().replace("-", "_")] = int(value) if value.strip().lstrip("-").isdigit() else value.strip()
    return out


class Engine:
    """The protocol state: the ruleset, the game (start position and moves), the agent and, in UGI
    mode, the running search. ``handle(line)`` answers one line; ``run(lines)`` the whole input.

    ``agent``: an agent already built, to play in place of ``make_agent(agent_spec, seed)`` (an
    in-process driver shares one between engines); the caller keeps it and closes it. Otherwise the
    engine builds its agent at the first command that needs it and closes it at the end of ``run``."""

    def __init__(self, out: TextIO, agent_spec: str = DEFAULT_AGENT, seed: int = 0, ruleset: Ruleset | None = None,
                 agent=None) -> None:
        self.out = out
        self.agent_spec, self.seed = agent_spec, seed
        self.ruleset = ruleset or Ruleset()
        self.start = START_JFEN
        self.moves: list[str] = []
        self.states = [GameState.initial(self.ruleset)]
        self.agent = agent
        self._owns_agent = agent is None
        self.mode = "gtp"
        self.default_sims: int | None = None
        self._write_lock = threading.Lock()
        self._search: threading.Thread | None = None
        self._stop: threading.Event | None = None

    # ------------------------------------------------------------------ output
    def send(self, *lines: str) -> None:
        with self._write_lock:
            for line in lines:
                self.out.write(line + "\n")
            self.out.flush()

    # ------------------------------------------------------------------ game
    @property
    def state(self) -> GameState:
        return self.states[-1]

    def _agent(self):
        if self.agent is None:
            from knowledge.agents import make_agent

            self.agent = make_agent(self.agent_spec, seed=self.seed)
        return self.agent

    def set_position(self, start: str, moves: list[str], ruleset: Ruleset | None = None) -> None:
        """Replace the game: ``start`` JFEN (or ``startpos``) then ``moves``; unchanged on error."""
        rules = ruleset or self.ruleset
        jfen = START_JFEN if start == "startpos" else start
        states = [GameState.from_jfen(jfen, rules)]
        for i, text in enumerate(moves, 1):
            try:
                states.append(states[-1].apply(text))
            except JiuError as exc:
                raise ProtocolError(f"move {i} {shown(text)}: {exc}") from None
        self.start, self.moves, self.states, self.ruleset = jfen, list(moves), states, rules

    def _parse_position(self, args: list[str], fen_word: str) -> tuple[str, list[str]]:
        if not args:
            raise ProtocolError(f"position: expected 'startpos' or '{fen_word} JFEN' [moves ...]")
        if "moves" in args:
            k = args.index("moves")
            head, moves = args[:k], args[k + 1:]
        else:
            head, moves = args, []
        if head == ["startpos"]:
            return "startpos", moves
        if head and head[0] in (fen_word, "fen", "jfen") and len(head) == 6:
            return " ".join(head[1:]), moves
        raise ProtocolError(f"position: expected 'startpos' or '{fen_word} <board> <side> <phase> <quiet> <ply>'"
                            " [moves ...]")

    def _play(self, text: str) -> None:
        self.states.append(self.state.apply(text.strip()))
        self.moves.append(text.strip())

    def result_text(self) -> str:
        """``w``, ``b``, ``draw`` with the reason, or ``none`` while the game goes on."""
        o = self.state.outcome()
        return f"{o.winner_code} {o.reason}" if o.terminal else "none"

    # ------------------------------------------------------------------ lines
    def run(self, lines: Iterable[str | JiuError]) -> int:
        """Answer every line until ``quit`` or the end of input; returns the exit status 0. An error in
        place of a line (:func:`command_lines`: too long, not UTF-8) is answered as a refused command."""
        try:
            for line in lines:
                if isinstance(line, JiuError):
                    self.refuse(str(line))
                elif not self.handle(line):
                    break
        finally:
            self.stop_search()
            close = getattr(self.agent, "close", None)
            if self._owns_agent and callable(close):
                close()
        return 0

    def refuse(self, reason: str, cid: str = "") -> None:
        """The dialect's one-line error: ``?ID REASON`` and an empty line (GTP), ``info string error:
        REASON`` (UGI); the reason on one line of at most ``MAX_ERROR_CHARS`` characters."""
        if self.mode == "ugi":
            self.send("info string error: " + one_line(reason))
        else:
            self.send(f"?{cid} " + one_line(reason), "")

    def handle(self, line: str) -> bool:
        """Answer one input line; ``False`` after ``quit``."""
        text = line.strip()
        if not text or text.startswith("#"):
            return True
        if self.mode == "ugi":
            return self._ugi(text)
        words = text.split()
        cid = ""
        if words[0].isascii() and words[0].isdigit() and len(words[0]) <= MAX_ID_DIGITS:
            cid, words = words[0], words[1:]
            if not words:
                self.refuse("empty command", cid)
                return True
        try:
            reply, go_on = self._gtp(words[0].lower(), words[1:])
        except JiuError as exc:
            self.refuse(str(exc), cid)
            return True
        except Exception as exc:  # the engine never dies on a command  # noqa: BLE001
            self.refuse(f"internal error: {type(exc).__name__}: {exc}", cid)
            return True
        if reply is not None:
            head, *rest = reply.split("\n")
            self.send(f"={cid} {head}".rstrip(), *rest, "")
        return go_on

    # ------------------------------------------------------------------ GTP-like
    def _gtp(self, cmd: str, args: list[str]) -> tuple[str | None, bool]:
        if cmd == "quit":
            return "", False
        if cmd == "name":
            return ENGINE_NAME, True
        if cmd == "version":
            return engine_version(), True
        if cmd == "protocol_version":
            return PROTOCOL_VERSION, True
        if cmd == "list_commands":
            return "\n".join(GTP_COMMANDS), True
        if cmd == "ugi":
            self.mode = "ugi"
            self._ugi_hello()
            return None, True
        if cmd == "rules":
            if args:
                rules = Ruleset.parse({**self.ruleset.model_dump(), **_rule_values(args)})
                self.set_position(self.start, self.moves, rules)
            return self.ruleset.describe(), True
        if cmd == "position":
            start, moves = self._parse_position(args, "jfen")
            self.set_position(start, moves)
            return "", True
        if cmd == "play":
            if len(args) != 1:
                raise ProtocolError("play: expected one move, e.g. play e5-e6/c3")
            self._play(args[0])
            return "", True
        if cmd == "undo":
            if not self.moves:
                raise ProtocolError("undo: no move to take back")
            self.moves.pop()
            self.states.pop()
            return "", True
        if cmd == "genmove":
            sims, seconds = _budget(args)
            if self.state.is_terminal():
                raise ProtocolError(f"genmove: the game is over ({self.result_text()})")
            move, _ = think(self._agent(), self.state, sims or self.default_sims, seconds)
            self._play(str(move))
            return str(move), True
        if cmd == "analyze":
            sims, seconds = _budget(args)
            return self._analysis_text(sims, seconds), True
        if cmd == "legal":
            s = self.state
            return " ".join(str(m) for m in s.legal_moves()), True
        if cmd == "showboard":
            from frontends.terminal import render_board, status_line

            last = self.state.last_move
            return "\n" + render_board(self.state, last).plain.rstrip("\n") + "\n" + status_line(self.state), True
        if cmd == "result":
            return self.result_text(), True
        raise ProtocolError(f"unknown command {shown(cmd)}; list_commands lists them")

    def _analysis_text(self, sims: int | None, seconds: float | None) -> str:
        if self.state.is_terminal():
            raise ProtocolError(f"analyze: the game is over ({self.result_text()})")
        try:
            ev = evaluate_position(self._agent(), self.state, sims or self.default_sims, seconds, top=3, pv=8)
        except ValueError as exc:
            raise ProtocolError(str(exc)) from None
        lines = [f"value {ev['value']:.4f} winprob {(ev['value'] + 1) / 2:.4f} best {ev['best']} "
                 f"simulations {ev['simulations']}"]
        for k, c in enumerate(ev["candidates"], 1):
            q = "nan" if c["q"] is None else f"{c['q']:.4f}"
            lines.append(f"candidate {k} move {c['move']} N {c['visits']} Q {q} P {c['prior']:.4f}")
        lines.append("pv " + " ".join(ev["pv"]))
        return "\n".join(lines)

    # ------------------------------------------------------------------ UGI
    def _ugi_hello(self) -> None:
        opts = [f"option name sims type spin default 0 min 0 max {SIMS_MAX}"]
        for key, field in Ruleset.model_fields.items():
            if field.annotation is int:
                opts.append(f"option name {key} type spin default {field.default} min 0 max 100000")
            else:
                choices = " ".join(f"var {v}" for v in field.annotation.__args__)
                opts.append(f"option name {key} type combo default {field.default} {choices}")
        self.send(f"id name {ENGINE_NAME} {engine_version()}", f"id author {AUTHOR}", *opts, "ugiok")

    def _ugi(self, text: str) -> bool:
        words = text.split()
        cmd, args = words[0].lower(), words[1:]
        if cmd == "quit":
            return False  # run() stops a running search
        if cmd == "isready":
            try:
                self._agent()
            except Exception as exc:  # noqa: BLE001
                self.refuse(f"agent {shown(self.agent_spec)}: {exc}")
            self.send("readyok")
            return True
        if cmd == "stop":
            self.stop_search()
            return True
        if cmd in UGI_STOPPING:
            self.stop_search()  # as if `stop` came first: its bestmove, then this command
        try:
            self._ugi_command(cmd, args)
        except JiuError as exc:
            self.refuse(str(exc))
        except Exception as exc:  # noqa: BLE001
            self.refuse(f"internal error: {type(exc).__name__}: {exc}")
        return True

    def _ugi_command(self, cmd: str, args: list[str]) -> None:
        if cmd == "ugi":
            self._ugi_hello()
        elif cmd == "uginewgame":
            self.set_position("startpos", [])
        elif cmd == "position":
            start, moves = self._parse_position(args, "fen")
            self.set_position(start, moves)
        elif cmd == "setoption":
            self._setoption(args)
        elif cmd == "go":
            self._go(args)
        elif cmd == "query":
            self._query(args)
        else:
            raise ProtocolError(f"unknown UGI command {shown(cmd)}")

    def _setoption(self, args: list[str]) -> None:
        if len(args) < 4 or args[0] != "name" or "value" not in args:
            raise ProtocolError("setoption: expected 'setoption name NAME value VALUE'")
        k = args.index("value")
        name, value = " ".join(args[1:k]), " ".join(args[k + 1:])
        if name == "sims":
            n = int(_number(value, "sims", int, zero=True))
            self.default_sims, _ = check_budget(n or None, None, ("sims", ""))
            return
        if name not in Ruleset.model_fields:
            raise ProtocolError(f"setoption: unknown option {shown(name)}")
        rules = Ruleset.parse({**self.ruleset.model_dump(), **_rule_values([f"{name}={value}"])})
        self.set_position(self.start, self.moves, rules)

    def _query(self, args: list[str]) -> None:
        what = args[0] if args else ""
        o = self.state.outcome()
        if what == "gameover":
            self.send(f"response {'true' if o.terminal else 'false'}")
        elif what == "p1turn":
            self.send(f"response {'true' if self.state.side == WHITE else 'false'}")
        elif what == "result":
            if not o.terminal:
                self.send("response none")
            else:
                self.send("response " + ("draw" if o.winner == DRAW else "p1win" if o.winner == WHITE else "p2win"))
        else:
            raise ProtocolError(f"query {shown(what)}: expected gameover, p1turn or result")

    def _go(self, args: list[str]) -> None:
        if self.state.is_terminal():
            raise ProtocolError(f"go: the game is over ({self.result_text()})")
        opts: dict[str, str] = {}
        it = iter(args)
        for key in it:
            if key == "infinite":
                opts[key] = "1"
                continue
            value = next(it, None)
            if value is None:
                raise ProtocolError(f"go {shown(key)}: missing value")
            opts[key] = value
        unknown = set(opts) - {"nodes", "movetime", "infinite", "depth", "p1time", "p2time", "p1inc", "p2inc"}
        if unknown:
            raise ProtocolError(f"go: unknown argument {shown(min(unknown))}")
        sims, seconds = self.default_sims, None
        if "nodes" in opts:
            sims = int(_number(opts["nodes"], "nodes", int))
        if "movetime" in opts:
            seconds = _number(opts["movetime"], "movetime") / 1000
        check_budget(sims, seconds, ("nodes", "movetime (in seconds)"))
        side = "p1" if self.state.side == WHITE else "p2"
        for key in ("p1time", "p2time", "p1inc", "p2inc"):
            if key in opts:
                _number(opts[key], key, float, zero=True)  # finite, >= 0 (milliseconds)
        if f"{side}time" in opts and seconds is None:  # a clock: 1/30 of it plus most of the increment
            left = float(opts[f"{side}time"]) / 1000
            inc = float(opts.get(f"{side}inc", "0")) / 1000
            seconds = min(SECONDS_MAX, max(0.01, min(left / 30 + inc * 0.8, left / 2)))
        if seconds is not None and "nodes" not in opts:
            sims = SIMS_MAX  # a time budget alone: search until it is spent
        if "infinite" in opts:
            sims, seconds = INFINITE_SIMULATIONS, None
        self._stop = threading.Event()
        agent, state, stop = self._agent(), self.state, self._stop

        def work():
            try:
                searches = searching_agent(agent, state) is not None
                ev = evaluate_position(agent, state, sims, seconds, stop, top=1, pv=8) if searches else None
                if ev is None:
                    move, _ = think(agent, state)
                    self.send(f"bestmove {move}")
                    return
                self.send(f"info nodes {ev['simulations']} score cp {round(ev['value'] * 100)} pv {' '.join(ev['pv'])}",
                          f"bestmove {ev['best']}")
            except Exception as exc:  # noqa: BLE001
                self.send(f"info string error: {type(exc).__name__}: {exc}")

        self._search = threading.Thread(target=work, name="ugi-go", daemon=True)
        self._search.start()

    def stop_search(self) -> None:
        """End the running UGI search, if any (it sends its ``bestmove``), and wait for it: a search
        checks ``stop`` between simulations, so this takes at most one simulation's time."""
        if self._stop is not None:
            self._stop.set()
        if self._search is not None:
            self._search.join()
            self._search = None

    @property
    def searching(self) -> bool:
        """Whether a UGI search runs (its ``bestmove`` not sent yet)."""
        return self._search is not None and self._search.is_alive()


UGI_STOPPING = frozenset({"ugi", "uginewgame", "position", "setoption", "go"})  # end a running search first


def run_engine(stdin: TextIO, stdout: TextIO, agent_spec: str = DEFAULT_AGENT, seed: int = 0,
               ruleset: Ruleset | None = None) -> int:
    """``python cli.py engine``: serve the protocol on ``stdin``/``stdout`` until ``quit`` or the end of
    input; returns 0. Lines are read from ``stdin``'s bytes (when it has them) with
    :func:`command_lines`: at most ``MAX_LINE_BYTES`` bytes each."""
    return Engine(stdout, agent_spec, seed, ruleset).run(command_lines(getattr(stdin, "buffer", stdin)))
