"""A human against an agent in the terminal (``python cli.py play``).

The board is drawn with rich: columns ``a``..``n``, rows ``1``..``14`` (row 14 at the top), White
stones ``○``, Black stones ``●``, empty points ``·`` (``+`` on the empty centre points g7 and h8);
the last move's path is highlighted (yellow background) and the points it captured are shown as a
red ``×``. A status line gives the phase, the ply, the stone counts, flying sides and who is to move.

The human types moves in the rule book's notation (``g7``, ``g7-g8``, ``g7xg9xe9``, ``e5-e6/c3``;
victims sorted by point index) or a command:

- ``moves``: list the legal moves (in the battle, when there are more than 200, the legal paths with
  the number of victims each must name);
- ``undo``: take back the human's last move and the agent's replies to it;
- ``save [FILE]``: write the JSON record of the game so far (default: the ``record`` path);
- ``help``; ``quit`` (end of input and Ctrl-C at the prompt also quit).

Ctrl-C while the agent thinks stops at once (the search runs in a daemon thread, see
:func:`select_interruptibly`): the game is left unfinished, the record is written to ``record`` if one was given, and
``KeyboardInterrupt`` propagates (``cli.py play`` then exits with status 130).

Bad notation and illegal moves are answered with the engine's reason and the prompt repeats. At the
end of the game, or on ``quit``, the JSON record is written to ``record`` if one was given (an
unfinished game has ``result`` null and ``reason`` ``"unfinished"``). Each record ``search`` entry is
``{"by": "human"|"agent", "time": seconds}`` (the human's time from prompt to accepted move).

Use :func:`play` with ``input_fn`` (a callable ``prompt -> line`` raising ``EOFError`` at the end)
and a rich ``Console`` to script it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

from core.board import CENTRES, COLUMNS, PHASE_LAYOUT, SIZE
from core.errors import IllegalMoveError, JiuError, NotationError
from core.notation import Move
from core.rules import DEFAULT_RULESET, Ruleset
from core.state import GameState
from frontends import DEFAULT_AGENT

COLOUR_WORDS = ("White", "Black")
STONE_CHARS = {0: "·", 1: "○", 2: "●"}
STONE_STYLES = {1: "bold bright_white", 2: "bold bright_cyan"}
MAX_LISTED_MOVES = 200
HELP = ("commands: a move in notation (g7, g7-g8, g7xg9, e5-e6/c3), moves, undo, save [FILE], help, quit")


def render_board(state: GameState, last: Move | None = None):
    """A rich ``Text`` of the board with coordinates, the last move highlighted (``last``: its path
    points on a yellow background, the stones it captured as a red ``×``) and a legend."""
    from rich.text import Text

    path = set(last.path) if last is not None else set()
    captured = set(last.jumped) | set(last.victims) if last is not None and not last.is_placement else set()
    header = "    " + " ".join(COLUMNS) + "\n"
    text = Text()
    text.append(header, style="dim")
    for row in range(SIZE, 0, -1):
        text.append(f"{row:>2}  ", style="dim")
        for col in range(SIZE):
            p = (row - 1) * SIZE + col
            v = int(state.board[p])
            if v:
                ch, style = STONE_CHARS[v], STONE_STYLES[v]
            elif p in captured:
                ch, style = "×", "bold red"
            else:
                ch, style = ("+" if p in CENTRES else STONE_CHARS[0]), "dim"
            if p in path:
                style = f"{style} on yellow" if v else "black on yellow"
            text.append(ch, style=style)
            if col < SIZE - 1:
                text.append(" ")
        text.append(f"  {row:<2}\n", style="dim")
    text.append(header, style="dim")
    text.append("○ White  ● Black  ", style="dim")
    if last is not None:
        text.append(f"last move: {last}", style="yellow")
    return text


def status_line(state: GameState, human: int | None = None) -> str:
    """One line: phase, ply, stone counts (flying marked), side to move (``(you)`` for the human)."""
    w, b = state.counts
    phase = "layout" if state.phase == PHASE_LAYOUT else "battle"
    fly = [COLOUR_WORDS[s] for s in (0, 1) if state.flying(s)]
    parts = [f"{phase}, ply {state.ply}", f"White {w} stones", f"Black {b} stones"]
    if state.phase != PHASE_LAYOUT:
        parts.append(f"quiet plies {state.quiet}")
    if fly:
        parts.append("flying: " + ", ".join(fly))
    if state.is_terminal():
        o = state.outcome()
        parts.append(f"game over: {'draw' if o.winner_code == 'draw' else COLOUR_WORDS[o.winner] + ' wins'}"
                     f" ({o.reason})")
    else:
        side = state.current_player()
        parts.append(f"{COLOUR_WORDS[side]} to move" + (" (you)" if side == human else ""))
    return " | ".join(parts)


def legal_moves_text(state: GameState) -> str:
    """The legal moves as text: all of them when at most 200 (or in the layout), else the legal
    paths with how many square victims each must name (append ``/point`` per victim)."""
    if state.phase == PHASE_LAYOUT:
        moves = [str(m) for m in state.legal_moves()]
        return f"{len(moves)} placements: " + " ".join(moves)
    n = state.count_moves()
    if n <= MAX_LISTED_MOVES:
        return f"{n} moves: " + " ".join(str(m) for m in state.legal_moves())
    paths = state.legal_paths()
    left = state.counts[1 - state.side]
    shown = " ".join(p + (f" (+{min(k, left)} victim{'s' if min(k, left) > 1 else ''})" if k else "")
                     for p, k in paths.items())
    return f"{n} moves on {len(paths)} paths (name victims with /point, sorted): {shown}"


@dataclass
class PlayedMove:
    move: Move
    by: str  # "human" or "agent"
    time: float  # seconds


@dataclass
class Game:
    """The game in progress: the start position and the moves played, with who played them."""

    ruleset: Ruleset
    states: list[GameState] = field(default_factory=list)
    played: list[PlayedMove] = field(default_factory=list)

    @property
    def state(self) -> GameState:
        return self.states[-1]

    def push(self, move: Move, by: str, seconds: float) -> None:
        self.states.append(self.state.apply(move))
        self.played.append(PlayedMove(move, by, seconds))

    def undo_human(self) -> list[PlayedMove]:
        """Take back the human's last move and every move after it; return the moves taken back
        (empty when the human has not moved)."""
        last = max((i for i, p in enumerate(self.played) if p.by == "human"), default=None)
        if last is None:
            return []
        removed = self.played[last:]
        del self.played[last:]
        del self.states[last + 1:]
        return removed


def select_interruptibly(agent, state: GameState, poll: float = 0.05):
    """``agent.select(state)`` run in a daemon thread while this thread waits in short steps, so that
    Ctrl-C (``KeyboardInterrupt``, delivered to the main thread only) stops the wait at once even when
    the search sits in native code. The abandoned search thread ends with the process."""
    import threading

    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["move"] = agent.select(state)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=run, name="agent-think", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(poll)
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["move"]


def game_record(game: Game, agent_spec: str, human: int, seed: int, start_time: str):
    """The JSON ``GameRecord`` of ``game`` (players ``"human"`` and the agent spec)."""
    from core.records import GameRecord

    names = ["human", agent_spec] if human == 0 else [agent_spec, "human"]
    return GameRecord.from_moves(
        [p.move for p in game.played], game.ruleset, white=names[0], black=names[1], start_time=start_time,
        search=tuple({"by": p.by, "time": p.time} for p in game.played),
        metadata={"human": "wb"[human], "agent": agent_spec, "seed": seed, "generator": "cli play"},
    )


def play(
    agent_spec: str = DEFAULT_AGENT,
    human: str = "w",
    seed: int = 0,
    ruleset: Ruleset = DEFAULT_RULESET,
    record: str | os.PathLike | None = None,
    input_fn: Callable[[str], str] | None = None,
    console=None,
    agent=None,
):
    """Play one game, the human (``"w"`` or ``"b"``) against the agent ``agent_spec`` (built with
    ``seed`` unless ``agent`` is given), reading lines from ``input_fn`` (default: the console) and
    printing to ``console`` (default: a new rich ``Console``). Returns the game's ``GameRecord``
    (also written to ``record`` at the end or on ``quit`` when given). Raises ``JiuError`` for a bad
    ``human`` value; bad agent specs raise what ``train.matches.arena.build_agent`` raises."""
    from rich.console import Console

    from core.records import write_json
    from train.matches.arena import build_agent

    if human not in ("w", "b"):
        raise JiuError(f"--human {human!r}: expected 'w' (White, places first) or 'b' (Black)")
    console = console or Console()
    read = input_fn or console.input
    side = 0 if human == "w" else 1
    bot = agent if agent is not None else build_agent(agent_spec, seed)
    game = Game(ruleset, [GameState.initial(ruleset)])
    start_time = datetime.now(timezone.utc).isoformat(timespec="seconds")

    def record_now():
        return game_record(game, agent_spec, side, seed, start_time)

    def save(path) -> None:
        write_json(record_now(), path)
        console.print(f"saved {path}")

    def show() -> None:
        console.print(render_board(game.state, game.played[-1].move if game.played else None))
        console.print(status_line(game.state, side))

    console.print(f"You play {COLOUR_WORDS[side]} against {agent_spec}. {HELP}")
    shown = False
    while not game.state.is_terminal():
        state = game.state
        if state.current_player() != side:
            t0 = time.perf_counter()
            try:
                if console.is_terminal:
                    with console.status(f"{agent_spec} is thinking... (Ctrl-C to stop)"):
                        move = select_interruptibly(bot, state)
                else:
                    move = select_interruptibly(bot, state)
            except KeyboardInterrupt:
                console.print(f"interrupted while {agent_spec} was thinking; game left unfinished")
                if record is not None:
                    save(record)
                raise
            think = getattr(bot, "last_think_time", None)
            seconds = float(think) if isinstance(think, (int, float)) else time.perf_counter() - t0
            try:
                game.push(move if isinstance(move, Move) else state.parse_move(str(move)), "agent", seconds)
            except (IllegalMoveError, NotationError) as exc:
                console.print(f"[red]the agent played an illegal move {move}: {exc}; the game stops[/red]")
                break
            console.print(f"{agent_spec} plays [bold]{move}[/bold] ({seconds:.2f} s)")
            shown = False
            continue
        if not shown:
            show()
            shown = True
        t0 = time.perf_counter()
        try:
            line = read(f"{COLOUR_WORDS[side]} move> ").strip()
        except (EOFError, KeyboardInterrupt):  # end of input or Ctrl-C: quit (the record is saved)
            console.print()
            line = "quit"
        if not line:
            continue
        word, _, arg = line.partition(" ")
        cmd = word.lower()
        if cmd in ("quit", "exit", "q"):
            console.print("game left unfinished")
            if record is not None:
                save(record)
            return record_now()
        if cmd in ("help", "?"):
            console.print(HELP)
        elif cmd == "moves":
            console.print(legal_moves_text(state))
        elif cmd == "undo":
            removed = game.undo_human()
            if removed:
                console.print("took back " + " ".join(str(p.move) for p in removed))
                shown = False
            else:
                console.print("nothing to undo: you have not moved yet")
        elif cmd == "save":
            target = arg.strip() or record
            if not target:
                console.print("save where? give a file: save FILE")
            else:
                try:
                    save(target)
                except OSError as exc:
                    console.print(f"[red]cannot save {target}: {exc.strerror or exc}[/red]")
        else:
            try:
                move = state.parse_move(line.lower() if line.isascii() else line)
            except (NotationError, IllegalMoveError) as exc:
                console.print(f"[red]illegal: {exc}[/red]")
                continue
            game.push(move, "human", time.perf_counter() - t0)
            shown = False
    show()
    final = record_now()
    console.print(f"result: {final.result} ({final.reason})")
    if record is not None:
        save(record)
    return final
