"""Server-side games and reviews of the browser board (``frontends.server``).

Every game lives here, on the server: the page only sends clicks and shows what it gets back, so a
page can neither forge a position nor decide that a move is legal. A :class:`GameSession` holds the
moves played (``frontends.terminal.Game``), the opponent agent and what its searches said; :func:`input_options`
answers "what can follow these clicks" for hop-by-hop input; :class:`ReviewSession` steps through an
uploaded record with the engine's evaluation of each move (``search.analysis``).

Thread safety: each session has a lock; the agent's move runs in a worker thread (``ai_move``) with a
stop event (time limit, closed page, undo, resign) and is dropped if the game changed meanwhile.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.board import PHASE_LAYOUT, POINT_NAMES, WHITE
from core.errors import IllegalMoveError, JiuError, NotationError
from core.notation import Move, parse_move, parse_point
from core.rules import Ruleset
from core.state import GameState
from frontends.terminal import Game, game_record
from search.agents import searching_agent, think
from search.analysis import evaluate_position, move_row, top_candidates

MAX_SECONDS = 60.0  # hard limit of one agent move, also when only simulations are given
MAX_SIMULATIONS = 100_000
MAX_MOVES = 5_000  # a record longer than this is refused (the ply cap is at most a few thousand)


class GameError(JiuError):
    """A request the game cannot take now (not your turn, game over, unknown game); the message says why."""


class NotOfferedError(JiuError):
    """An agent spec off the server's allow-list (``Sessions.check_agent``): it names a file."""


class NewGame(BaseModel):
    """The new-game form. ``agent``: spec of the opponent; ``human``: ``"w"`` (White, places first) or
    ``"b"``; strength: ``sims`` simulations and/or ``seconds`` per move (search agents; ``None``: the
    agent's own setting, at most ``MAX_SECONDS``); ``rules``: ``Ruleset`` fields; ``seed`` of the agent."""

    model_config = ConfigDict(extra="forbid")

    agent: str = Field("jfa", min_length=1, max_length=200)
    human: Literal["w", "b"] = "w"
    sims: int | None = Field(None, ge=1, le=MAX_SIMULATIONS)
    seconds: float | None = Field(None, gt=0, le=MAX_SECONDS)
    rules: dict[str, int | str] = Field(default_factory=dict, max_length=16)
    seed: int = Field(0, ge=0, le=2**31 - 1)


def validation_message(exc: ValidationError, what: str) -> str:
    """One line naming the first bad field of a pydantic error."""
    err = exc.errors()[0]
    field = ".".join(str(x) for x in err["loc"]) or what
    return f"{what} field {field!r}: {err['msg']}"


def _names(points) -> list[str]:
    return [POINT_NAMES[int(p)] for p in points]


def _point(name: Any, what: str) -> int:
    if not isinstance(name, str):
        raise NotationError(f"{what} {name!r}: not a point name")
    return parse_point(name.strip().lower(), what)


def board_view(state: GameState, last: Move | None = None) -> dict[str, Any]:
    """The position as the page draws it: ``board`` (196 ints: 0 empty, 1 White, 2 Black, index =
    (row-1)*14 + column), side to move, phase, ply, stone counts, flying sides, outcome, JFEN and the
    last move's path and captured points (names)."""
    o = state.outcome()
    view = {
        "jfen": state.to_jfen(), "board": [int(v) for v in state.board], "side": "wb"[state.side],
        "phase": "layout" if state.phase == PHASE_LAYOUT else "battle", "ply": state.ply,
        "counts": list(state.counts), "flying": [state.flying(0), state.flying(1)], "quiet": state.quiet,
        "over": o.terminal, "result": o.winner_code, "reason": o.reason if o.terminal else None, "last": None,
    }
    if last is not None:
        view["last"] = {"move": str(last), "path": _names(last.path),
                        "captured": _names(last.jumped) + _names(last.victims)}
    return view


def input_options(state: GameState, points: list[str], jump: bool = False) -> dict[str, Any]:
    """What may follow the clicked ``points`` (names) in ``state``, from the rules engine's legal paths.

    - no points: ``{"origins"}``, the points a move can start from (placements in the layout);
    - one point (battle): ``{"steps", "hops"}``: destinations of steps/flights and first jump landings
      from that stone;
    - a path (``jump`` says whether it is a jump chain): ``{"complete", "hops", "victims", "choices"}``:
      whether the path is a legal move as it stands, the landings that extend the chain, how many
      square victims it must take and the opponent stones it may take.

    Raises ``IllegalMoveError``/``NotationError`` with the rule's reason when no legal move starts so.
    """
    if state.is_terminal():
        raise IllegalMoveError(f"the game is over ({state.outcome().reason})")
    pts = tuple(_point(p, "point") for p in points)
    if state.phase == PHASE_LAYOUT:
        if not pts:
            return {"origins": _names(state.placements())}
        state.check_move(Move(pts[:1]))
        return {"complete": True, "hops": [], "victims": 0, "choices": []}
    ps = state.paths()
    flat, off = ps.pts.tolist(), ps.off.tolist()
    paths = [(tuple(flat[off[i]:off[i + 1]]), bool(ps.jump[i]), int(ps.nsq[i])) for i in range(ps.m)]
    if not pts:
        return {"origins": _names(sorted({p[0][0] for p in paths}))}
    if len(pts) == 1:
        o = pts[0]
        mine = [p for p in paths if p[0][0] == o]
        if not mine:
            own = state.side + 1
            if state.board[o] == own:
                raise IllegalMoveError(f"the stone on {POINT_NAMES[o]} has no legal move")
            holder = "empty" if state.board[o] == 0 else "an opponent stone"
            raise IllegalMoveError(f"{POINT_NAMES[o]} is {holder}: a move starts from a stone of the side to move")
        return {"steps": _names(sorted({p[0][1] for p in mine if not p[1]})),
                "hops": _names(sorted({p[0][1] for p in mine if p[1]}))}
    n = len(pts)
    matches = [p for p in paths if p[1] == jump and p[0][:n] == pts]
    if not matches:
        state.check_move(Move(pts, jump))  # raises with the engine's reason
        raise IllegalMoveError(f"{'x' if jump else '-'}".join(_names(pts)) + ": no legal move goes this way")
    exact = [p for p in matches if len(p[0]) == n]
    need, choices = 0, []
    if exact and exact[0][2]:
        left = state.victims_left(pts, jump)
        need, choices = min(exact[0][2], len(left)), _names(left)
    return {"complete": bool(exact), "hops": _names(sorted({p[0][n] for p in matches if len(p[0]) > n})) if jump else [],
            "victims": need, "choices": choices}


def move_from_input(path: list[str], jump: bool, victims: list[str]) -> Move:
    """A ``Move`` from clicked names (victims in any order); shape errors raise ``NotationError``."""
    pts = tuple(_point(p, "path point") for p in path)
    vic = tuple(sorted(_point(v, "victim") for v in victims))
    if not pts:
        raise NotationError("move: no point given")
    if len(set(vic)) != len(vic):
        raise NotationError("move: a victim is given twice")
    text = ("x" if jump else "-").join(_names(pts)) + "".join("/" + POINT_NAMES[v] for v in vic)
    return parse_move(text)


def candidate_view(candidates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Search candidates with their path and victims split out for drawing."""
    out = []
    for c in candidates:
        m = parse_move(c["move"])
        out.append({**c, "path": _names(m.path), "jump": m.jump, "victims": _names(m.victims)})
    return out


class GameSession:
    """One game of a person against an agent (see the module docstring)."""

    def __init__(self, gid: str, form: NewGame, ruleset: Ruleset, agent) -> None:
        self.id = gid
        self.form = form
        self.agent = agent
        self.human = 0 if form.human == "w" else 1
        self.game = Game(ruleset, [GameState.initial(ruleset)])
        self.evals: list[dict[str, Any] | None] = []  # per move: the agent's search, None for the human's
        self.resigned: int | None = None
        self.lock = threading.RLock()
        self.agent_lock = threading.Lock()  # one search at a time: a stopped one may still be finishing
        self.generation = 0  # bumped by undo and resign: a search started before is dropped
        self.stop: threading.Event | None = None
        self.cancelled = 0  # searches stopped early (page closed, undo, resign, time limit)
        self.start_time = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.touched = time.monotonic()

    # ------------------------------------------------------------------ queries
    @property
    def state(self) -> GameState:
        return self.game.state

    @property
    def thinking(self) -> bool:
        return self.stop is not None

    def over(self) -> bool:
        return self.resigned is not None or self.state.is_terminal()

    def turn(self) -> str:
        if self.over():
            return "over"
        return "human" if self.state.side == self.human else "agent"

    def view(self) -> dict[str, Any]:
        with self.lock:
            s = self.state
            view = board_view(s, self.game.played[-1].move if self.game.played else None)
            if self.resigned is not None:
                view.update(over=True, result="wb"[1 - self.resigned], reason="resign")
            evals = [{"ply": i + 1, "white_win": e["white_win"]} for i, e in enumerate(self.evals) if e]
            last_search = next((e for e in reversed(self.evals) if e), None)
            view.update(
                id=self.id, human="wb"[self.human], agent=self.form.agent, sims=self.form.sims,
                seconds=self.form.seconds, rules=self.game.ruleset.model_dump(), turn=self.turn(),
                thinking=self.thinking, moves=[str(p.move) for p in self.game.played], evals=evals,
                search=last_search,
            )
            return view

    # ------------------------------------------------------------------ moves
    def options(self, path: list[str], jump: bool) -> dict[str, Any]:
        with self.lock:
            self._check_human_turn()
            return input_options(self.state, path, jump)

    def _check_human_turn(self) -> None:
        if self.over():
            raise GameError("the game is over")
        if self.thinking:
            raise GameError("the agent is thinking; wait for its move")
        if self.state.side != self.human:
            raise GameError("it is the agent's turn")

    def play_human(self, move: Move) -> dict[str, Any]:
        """Play the person's ``move`` after the rules engine checked it (``IllegalMoveError`` says why not)."""
        with self.lock:
            self._check_human_turn()
            t0 = self.touched
            self.game.push(self.state.check_move(move), "human", max(0.0, time.monotonic() - t0))
            self.evals.append(None)
            self.touched = time.monotonic()
        return self.view()

    def begin_agent_move(self) -> tuple[threading.Event, int]:
        """Claim the agent's turn: returns the stop event and the game's generation (``GameError`` if
        it is not the agent's turn or it is already thinking)."""
        with self.lock:
            if self.over():
                raise GameError("the game is over")
            if self.state.side == self.human:
                raise GameError("it is your turn")
            if self.thinking:
                raise GameError("the agent is already thinking")
            self.stop = threading.Event()
            return self.stop, self.generation

    def agent_move(self, stop: threading.Event, generation: int) -> dict[str, Any]:
        """Run the agent on the current position (in a worker thread), bounded by the form's
        simulations and seconds (at most ``MAX_SECONDS``) and by ``stop``; play its move unless the
        game changed meanwhile (undo, resign). Returns the view."""
        state = self.state
        seconds = self.form.seconds if self.form.seconds is not None else MAX_SECONDS
        t0 = time.perf_counter()
        try:
            with self.agent_lock:
                try:
                    move, result = think(self.agent, state, self.form.sims, seconds, stop)
                except JiuError:
                    raise
                except Exception as exc:  # an agent's failure is the game's error, not the server's
                    raise GameError(f"the agent failed: {type(exc).__name__}: {exc}") from exc
            elapsed = time.perf_counter() - t0
            info = None
            if result is not None:
                mover_value = float(result.value)
                white = mover_value if state.side == WHITE else -mover_value
                info = {"value": round(mover_value, 4), "white_win": round((white + 1) / 2, 4),
                        "candidates": candidate_view(top_candidates(result, 3)), "simulations": int(result.simulations),
                        "seconds": round(elapsed, 3), "ply": state.ply + 1, "move": str(move)}
            with self.lock:
                if stop.is_set():
                    self.cancelled += 1
                if self.generation != generation or self.state is not state:
                    return self.view()
                self.game.push(move if isinstance(move, Move) else state.parse_move(str(move)), "agent", elapsed)
                self.evals.append(info)
                self.touched = time.monotonic()
        finally:
            with self.lock:
                if self.stop is stop:
                    self.stop = None
        return self.view()

    def cancel(self) -> None:
        """Stop the running search, if any (its move is still played unless the game changed)."""
        with self.lock:
            if self.stop is not None:
                self.stop.set()

    def undo(self) -> dict[str, Any]:
        """Take back the person's last move and the agent's replies (stops a running search)."""
        with self.lock:
            if self.resigned is not None:
                raise GameError("the game was resigned")
            removed = self.game.undo_human()
            if not removed:
                raise GameError("nothing to undo: you have not moved yet")
            del self.evals[len(self.game.played):]
            self.generation += 1
            self.cancel()
            self.stop = None
        return self.view()

    def resign(self) -> dict[str, Any]:
        with self.lock:
            if self.over():
                raise GameError("the game is over")
            self.resigned = self.human
            self.generation += 1
            self.cancel()
            self.stop = None
        return self.view()

    def record(self):
        """The game's ``GameRecord`` (players: ``human`` and the agent spec; per-move search data)."""
        with self.lock:
            rec = game_record(self.game, self.form.agent, self.human, self.form.seed, self.start_time)
            if self.resigned is not None:
                rec = rec.model_copy(update={"result": "wb"[1 - self.resigned], "reason": "resign"})
            return rec

    def close(self) -> None:
        """Stop a running search and release the agent (search threads, evaluator) once it is idle."""
        self.cancel()
        close = getattr(self.agent, "close", None)
        if callable(close):
            with self.agent_lock:
                close()


class ReviewSession:
    """An uploaded record stepped through with the engine's evaluation of each move (computed on
    request, once per position, with ``agent`` bounded by ``sims``/``seconds``)."""

    def __init__(self, rid: str, record, agent, agent_spec: str, sims: int | None, seconds: float | None) -> None:
        self.id = rid
        self.record = record
        self.states = record.replay()
        self.moves = list(record.moves)
        self.agent = agent
        self.agent_spec = agent_spec
        self.sims, self.seconds = sims, seconds
        self.evals: dict[int, dict[str, Any]] = {}
        self.lock = threading.Lock()
        self.touched = time.monotonic()

    def position(self, ply: int) -> dict[str, Any]:
        """The position after ``ply`` moves (0 = the start) with its move list and the record's header."""
        if not 0 <= ply < len(self.states):
            raise GameError(f"ply {ply}: the record has plies 0..{len(self.moves)}")
        last = parse_move(self.moves[ply - 1]) if ply else None
        view = board_view(self.states[ply], last)
        view.update(id=self.id, review=True, moves=self.moves, at=ply, white=self.record.white,
                    black=self.record.black, record_result=self.record.result, record_reason=self.record.reason,
                    agent=self.agent_spec)
        return view

    def _eval(self, ply: int, stop: threading.Event | None) -> dict[str, Any]:
        if ply not in self.evals:
            self.evals[ply] = evaluate_position(self.agent, self.states[ply], self.sims, self.seconds or MAX_SECONDS,
                                                stop)
        return self.evals[ply]

    def evaluate_move(self, ply: int, stop: threading.Event | None = None) -> dict[str, Any]:
        """The analysis of move ``ply`` (1-based; ``search.analysis.move_row``), in a worker thread."""
        if not 1 <= ply <= len(self.moves):
            raise GameError(f"move {ply}: the record has moves 1..{len(self.moves)}")
        with self.lock:
            before, after = self._eval(ply - 1, stop), self._eval(ply, stop)
        row = move_row(ply, self.states[ply - 1], self.states[ply], self.moves[ply - 1], before, after)
        row["candidates"] = candidate_view(row["candidates"])
        return row

    def close(self) -> None:
        close = getattr(self.agent, "close", None)
        if callable(close):
            with self.lock:
                close()


class Sessions:
    """The live games and reviews, at most ``max_games`` of each; the least recently used is closed
    when a new one would exceed it. Ids are random tokens (``secrets.token_urlsafe``).

    Agents come from an allow-list fixed here, at start-up (:meth:`check_agent`): ``offered``, the
    specs the operator gave (``serve --agent``; they may name weights files), and every registered
    agent with any of its options except those that name a file (``knowledge.agents.file_options``).
    A client's spec that names a file gets one error, the same whatever the file system holds."""

    def __init__(self, max_games: int = 32, offered: tuple[str, ...] | list[str] = ()) -> None:
        self.max_games = max_games
        self.offered = frozenset(spec.strip() for spec in offered)
        self.games: OrderedDict[str, GameSession] = OrderedDict()
        self.reviews: OrderedDict[str, ReviewSession] = OrderedDict()
        self.lock = threading.Lock()

    def _add(self, table: OrderedDict, item) -> None:
        with self.lock:
            table[item.id] = item
            while len(table) > self.max_games:
                _, old = table.popitem(last=False)
                # closed off this lock: a game whose search is running closes when the search ends
                threading.Thread(target=old.close, name="close-game", daemon=True).start()

    def check_agent(self, spec: str) -> None:
        """Raise ``NotOfferedError`` unless ``spec`` is on the allow-list (class docstring): offered by the
        operator, or naming no file. Reads the spec only (``SpecError`` if it does not parse)."""
        from knowledge.agents import file_options

        if spec.strip() in self.offered:
            return
        named = file_options(spec)
        if named:
            agent, option = named[0].split(":", 1)
            raise NotOfferedError(f"agent {spec!r}: option {option!r} of {agent!r} names a file; this server plays its "
                                  f"registered agents without file options and the specs its operator offers (serve --agent)")

    def _make_agent(self, spec: str, seed: int):
        from knowledge.agents import make_agent

        self.check_agent(spec)
        return make_agent(spec, seed=seed)

    def new_game(self, form: NewGame) -> GameSession:
        """A new game from the form (``JiuError`` for bad rules or an agent off the allow-list,
        ``KeyError``/``ValueError``/``TypeError`` for a bad agent spec, as ``knowledge.agents.make_agent``
        raises)."""
        ruleset = Ruleset.parse(dict(form.rules))
        agent = self._make_agent(form.agent, form.seed)
        session = GameSession(secrets.token_urlsafe(12), form, ruleset, agent)
        self._add(self.games, session)
        return session

    def new_review(self, record, agent_spec: str, sims: int | None, seconds: float | None) -> ReviewSession:
        if len(record.moves) > MAX_MOVES:
            raise GameError(f"record: {len(record.moves)} moves, more than the {MAX_MOVES} a review takes")
        agent = self._make_agent(agent_spec, 0)
        probe = record.replay()[0]
        if searching_agent(agent, probe) is None:
            raise GameError(f"agent {agent_spec!r} does not search; a review needs a search agent (mcts, jfa)")
        review = ReviewSession(secrets.token_urlsafe(12), record, agent, agent_spec, sims, seconds)
        self._add(self.reviews, review)
        return review

    def _get(self, table: OrderedDict, key: str, what: str):
        with self.lock:
            item = table.get(key)
            if item is None:
                raise GameError(f"unknown {what} (it may have been closed to make room for newer ones)")
            table.move_to_end(key)
            return item

    def game(self, gid: str) -> GameSession:
        return self._get(self.games, gid, "game")

    def review(self, rid: str) -> ReviewSession:
        return self._get(self.reviews, rid, "review")

    def close(self) -> None:
        with self.lock:
            for table in (self.games, self.reviews):
                for item in table.values():
                    item.close()
                table.clear()

