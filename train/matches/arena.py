"""Arena: a colour-balanced match between two agents given by spec strings, in parallel, resumable.

``run_arena("greedy", "random", games=100, workers=4, seed=0, out_dir="runs/g-vs-r")`` plays
``games`` games (an even number) as ``games / 2`` *pairs*. Game ``i`` belongs to pair ``k = i // 2``;
both games of a pair share one game seed, drawn from ``numpy.random.SeedSequence([seed, k])``; agent A
plays White in game ``2k`` and Black in game ``2k + 1``. From the game seed each agent gets its own
seed (:func:`game_seeds`), so a game is reproducible from ``(specs, ruleset, seed, index)`` alone,
whatever the number of workers, and two arenas with different ``seed`` share no game seed: a match
rerun with ``--seed 2`` is a second, independent sample of the one with ``--seed 1``. (Arena
directories of version 1, made before 2026-11-29, used the game seed ``seed + k``, so that ``--seed
2`` replayed all but one pair of ``--seed 1``; they resume with that seeding, and new directories
are version 2.)

Openings: agents that do not sample (``jfa``, the ``mcts`` agents at temperature 0) replay one game
per colour whatever their seeds, so that ``games`` would count copies. ``opening_plies = K`` starts
both games of pair ``k`` from the same K uniformly random layout placements (:func:`opening_moves`, drawn
from the pair's game seed; colours swapped between the two, as an opening book in a chess match), so
that every pair is a different game; the records hold the opening's moves with no ``search`` entry and
``metadata["opening_plies"]``. The summary counts the ``distinct_games`` (distinct move sequences).

Agents are built by spec in the process that plays the game (``knowledge.agents.make_agent``, which
understands ``NAME[:k=v,...]`` and ``LAYOUT+BATTLE``, with the agents of ``catalog`` registered),
fresh for every game. A player may also be a ``search.agents.AgentRecipe`` (an agent name with its
validated options, picklable: the training pipeline's gate and learning curve), built by its ``build``;
files and records then name it by its text (:func:`player_text`). ``workers >= 1`` plays in that many worker processes (the project's one pool,
``train.jobs.workers``); ``workers = 0`` plays in the calling process (debugging, tests). The run directory
is locked for the match (``train.jobs.rundir.lock_dir``): a second match into it is refused at once.

Run directory (``out_dir``), every file written atomically (temporary file + ``os.replace``)::

    arena.json          the match identity: {"format": "jiu-arena", "version": 2, "a", "b", "seed",
                        "ruleset": {...}, "opening_plies", "games": <last requested count>}
    games/0000.json     one JSON game record per finished game (core.records format), see below
    summary.json        statistics of the finished games (keys in :func:`summarize_records`)

Each game record has ``white``/``black`` = the spec strings, the result and end reason from the
engine (or ``reason="illegal-move"`` when an agent returned an illegal move: it forfeits), one
``search`` entry per move ``{"side": "w"|"b", "phase": "layout"|"battle", "time": seconds}`` (the
agent's ``last_think_time``; ``wall`` is added when the agent does not report it, plus the
agent's optional ``last_search`` dict), and ``metadata`` ``{"arena": {"a", "b", "seed"},
"game_index", "pair", "game_seed", "a_colour": "w"|"b", "seeds": {"white", "black"},
"duration_seconds"}``.

Resume: rerunning with the same ``out_dir`` checks that ``arena.json`` names the same specs, seed,
ruleset and opening plies (else ``ArenaError`` naming the field) and plays only the games without a record; a game
interrupted by a kill has no record (writes are atomic) and is played again from its seed, so no game
is duplicated. ``games`` may grow between runs (the match is extended); the summary covers the games
with index below the requested count.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import sys
import time
from collections import Counter
from concurrent.futures import Executor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from core.errors import IllegalMoveError, JiuError, NotationError
from core.rules import DEFAULT_RULESET, Ruleset
from search.batched import GAMES_IN_FLIGHT_MAX
from train.jobs.rundir import atomic_write_json, json_safe, lock_dir
from train.jobs.workers import (
    InlineRunner,
    PoolRunner,
    WorkerDied,
    cores_per_worker,
    make_pool,
    pool_size,
    stop_pool,
    worker_batches,
)
from train.matches.summary import ArenaSummary, summarize_records

ARENA_FORMAT = "jiu-arena"
SUMMARY_FORMAT = "jiu-arena-summary"
VERSION = 1  # of summary.json
ARENA_VERSION = 2  # of arena.json: its game seeding (game_seeds); version 1 directories still resume
ARENA_VERSIONS = (1, 2)
CONFIG_FILE = "arena.json"
SUMMARY_FILE = "summary.json"
GAMES_DIR = "games"
PHASES = ("layout", "battle")
OPENING_PLIES_MAX = 64
"""Upper bound of ``opening_plies``: random placements stay a small part of the 196-ply layout."""
OPENING_STREAM = 0x0BE9  # the opening's generator: SeedSequence([game_seed, OPENING_STREAM]), apart from the agents'
MAX_GAMES = 1_000_000
"""Upper bound of every game count (arena, tournament per pair, gen-records): a million games of the
fastest agents take days; larger counts are refused at once instead of running without end."""


class ArenaError(JiuError):
    """Bad arena input (agent spec, game count, run directory) or a failed run; the message names
    the field or the game and what to do."""


def check_game_count(games: object) -> None:
    """``ArenaError`` unless ``games`` is an even integer in ``2..MAX_GAMES`` (colour-balanced pairs)."""
    if not isinstance(games, int) or isinstance(games, bool) or not 2 <= games <= MAX_GAMES or games % 2:
        shown = games if not isinstance(games, int) or abs(games) < 10**12 else f"{str(games)[:12]}..."
        raise ArenaError(f"games: must be an even number in 2..{MAX_GAMES} (colour-balanced pairs), got {shown}")


# ============================================================================ files
def record_path(out_dir: str | os.PathLike, index: int) -> Path:
    """``out_dir/games/NNNN.json`` of game ``index`` (0-based, at least 4 digits)."""
    return Path(out_dir) / GAMES_DIR / f"{index:04d}.json"


# ============================================================================ agents
def player_text(player) -> str:
    """How records and ``arena.json`` name a player: a spec string itself, or the text of a
    ``search.agents.AgentRecipe`` (display only: a recipe is never rebuilt from it)."""
    return player if isinstance(player, str) else str(player)


def labelled_player(player) -> tuple[str, Any]:
    """``(label, agent)`` of a match player: ``(label, agent)`` as given, else the agent (a spec string or a
    ``search.agents.AgentRecipe``) labelled by its :func:`player_text`. Labels name players in progress
    lines, summaries and tournament results; records and ``arena.json`` keep the agent's own text."""
    if isinstance(player, tuple):
        label, agent = player
        return str(label), agent
    return player_text(player), player


def build_agent(spec, seed: int = 0):
    """An agent seeded with ``seed`` from a spec string (``NAME[:k=v,...]`` or ``LAYOUT+BATTLE``, through
    ``knowledge.agents.make_agent`` with every built-in agent registered, ``catalog``) or from a
    ``search.agents.AgentRecipe`` (its ``build``). Raises ``knowledge.registry.SpecError`` (one line: bad
    syntax, unknown option, value of the wrong type or out of range) or ``UnknownNameError`` (also a
    ``KeyError``, listing the available agents)."""
    import catalog  # noqa: F401 - registers the built-in agents
    from knowledge.agents import make_agent

    if not isinstance(spec, str):
        return spec.build(seed)
    return make_agent(spec, seed=seed)


def check_agent_spec(spec: str, what: str = "agent") -> None:
    """Check that ``spec`` is a playable agent spec, else raise ``ArenaError``: its names and options
    are validated first (the message of ``knowledge.registry.SpecError``, one line naming the agent and
    the option, e.g. ``agent 'mcts' option 'sims': must be >= 1 (got -5)``, or listing the available
    agents), then the agent is built once with seed 0 and closed, so that missing weights files or
    other construction errors show before any game (the message names ``what`` and the spec)."""
    import catalog  # noqa: F401 - registers the built-in agents
    from knowledge.agents import validate_agent_spec
    from knowledge.registry import SpecError

    if isinstance(spec, str):
        if not spec.strip():
            raise ArenaError(f"{what}: empty agent spec")
        try:
            validate_agent_spec(spec)
        except SpecError as exc:
            raise ArenaError(str(exc)) from None
    elif not callable(getattr(spec, "build", None)):
        raise ArenaError(f"{what}: empty agent spec" if spec is None else f"{what}: not an agent spec ({type(spec).__name__})")
    try:
        agent = build_agent(spec, seed=0)
    except (ValueError, TypeError, OSError) as exc:
        raise ArenaError(f"{what} {player_text(spec)!r}: {exc}") from None
    close = getattr(agent, "close", None)
    if callable(close):
        close()


def check_opening_plies(plies: object) -> None:
    """``ArenaError`` unless ``plies`` is an integer in ``0..OPENING_PLIES_MAX``."""
    if not isinstance(plies, int) or isinstance(plies, bool) or not 0 <= plies <= OPENING_PLIES_MAX:
        raise ArenaError(f"opening_plies: must be an integer in 0..{OPENING_PLIES_MAX}, got {plies!r}")


# ============================================================================ one game
def opening_moves(ruleset: Ruleset, plies: int, game_seed: int) -> list[str]:
    """The random opening of the pair with game seed ``game_seed``: ``plies`` (``0..OPENING_PLIES_MAX``)
    placements from the initial position, each uniform over the legal ones, drawn from
    ``numpy.random.SeedSequence([game_seed, OPENING_STREAM])``; as notation strings. The same for both
    games of a pair and for any agents."""
    from core.state import GameState

    check_opening_plies(plies)
    rng = np.random.default_rng(np.random.SeedSequence([int(game_seed), OPENING_STREAM]))
    state, moves = GameState.initial(ruleset), []
    for _ in range(plies):
        legal = state.legal_moves()
        move = legal[int(rng.integers(len(legal)))]
        state = state.apply(move)
        moves.append(str(move))
    return moves


def game_seeds(seed: int, index: int, version: int = ARENA_VERSION) -> dict[str, Any]:
    """Seeds and colours of game ``index`` of an arena with base ``seed``: ``{"pair": k, "game_seed",
    "a_colour": "w" for even index else "b", "seed_a", "seed_b"}``. ``game_seed`` (32-bit) is drawn
    from ``numpy.random.SeedSequence([seed, k])`` for ``version`` 2 (the arena directory's, module
    docstring), so that arenas of different base seeds are independent samples, and is ``seed + k``
    for version 1. The agent seeds are drawn from ``numpy.random.SeedSequence(game_seed)`` (31-bit), A
    first, so they are the same in both games of a pair and independent of each other. Raises
    ``ValueError`` for a version outside :data:`ARENA_VERSIONS`."""
    if version not in ARENA_VERSIONS:
        raise ValueError(f"arena version must be one of {ARENA_VERSIONS}, got {version!r}")
    pair = index // 2
    game_seed = seed + pair if version == 1 else int(np.random.SeedSequence([seed, pair]).generate_state(1)[0])
    seed_a, seed_b = (int(x) for x in np.random.SeedSequence(game_seed).generate_state(2) % (2**31))
    return {"pair": pair, "game_seed": game_seed, "a_colour": "w" if index % 2 == 0 else "b",
            "seed_a": seed_a, "seed_b": seed_b}


def play_game(
    white: str,
    black: str,
    ruleset: Ruleset = DEFAULT_RULESET,
    white_seed: int = 0,
    black_seed: int = 1,
    metadata: dict[str, Any] | None = None,
    opening: Sequence[str] = (),
):
    """Play one game between the agents ``white`` and ``black`` (spec strings) and return its
    ``GameRecord`` (players = the specs; ``search`` and ``metadata`` as in the module docstring),
    from the position after the moves ``opening`` (played by neither agent, as in :func:`game_steps`).

    Python's and NumPy's global generators are also seeded (with ``white_seed``) so that agents
    drawing from them stay reproducible. An agent returning an illegal move or bad notation loses
    the game (``reason="illegal-move"``, details in ``metadata["forfeit"]``); an agent raising any
    other exception aborts the game (the exception propagates)."""
    return _unbatched(game_steps(white, black, ruleset, white_seed, black_seed, metadata, batched=False,
                                 opening=opening))


def _unbatched(job):
    """The result of a job of :func:`game_steps` with ``batched=False`` (it never yields)."""
    try:
        job.send(None)
    except StopIteration as stop:
        return stop.value
    raise RuntimeError("an unbatched arena game yielded a request")  # pragma: no cover - it never yields


def game_steps(white, black, ruleset: Ruleset = DEFAULT_RULESET, white_seed: int = 0, black_seed: int = 1,
               metadata: dict[str, Any] | None = None, batched: bool = True, opening: Sequence[str] = ()):
    """:func:`play_game` as a job of ``search.batched`` (a generator returning the ``GameRecord``): with
    ``batched`` each move is ``search.agents.move_steps`` (a search's leaves go to the driver, to be
    evaluated with the other games' leaves), else ``agent.select`` (the job never yields). Batched, the
    global generators are seeded as well but other games draw from them too, and a move's ``time`` is
    its wall time in the driver, the other games' work included. ``opening``: moves played first, by
    neither agent (:func:`opening_moves`; their ``search`` entries are ``None``)."""
    from core.records import GameRecord
    from core.state import GameState
    from search.agents import move_steps

    random.seed(white_seed)
    np.random.seed(white_seed % (2**32))
    agents = (build_agent(white, white_seed), build_agent(black, black_seed))
    state = GameState.initial(ruleset)
    moves: list[str] = []
    search: list[dict[str, Any]] = []
    meta = dict(metadata or {})
    meta["seeds"] = {"white": white_seed, "black": black_seed}
    if opening:
        meta["opening_plies"] = len(opening)
    for text in opening:
        state = state.apply(text)
        moves.append(str(text))
        search.append(None)
    result = reason = None
    start = time.perf_counter()
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    try:
        while not state.is_terminal():
            side = state.current_player()
            agent = agents[side]
            t0 = time.perf_counter()
            move = (yield from move_steps(agent, state)) if batched else agent.select(state)
            wall = time.perf_counter() - t0
            entry: dict[str, Any] = {"side": "wb"[side], "phase": PHASES[state.phase]}
            think = getattr(agent, "last_think_time", None)
            if isinstance(think, (int, float)) and math.isfinite(think) and think >= 0:
                entry["time"] = float(think)
            else:
                entry["time"] = wall
                entry["wall"] = wall
            extra = getattr(agent, "last_search", None)
            if isinstance(extra, dict):
                entry.update({k: v for k, v in json_safe(extra).items() if k not in entry})
            try:
                state = state.apply(move)
            except (IllegalMoveError, NotationError) as exc:
                result, reason = "wb"[1 - side], "illegal-move"
                meta["forfeit"] = {"side": "wb"[side], "ply": len(moves) + 1, "move": str(move), "error": str(exc)}
                break
            moves.append(str(move))
            search.append(entry)
    finally:
        for agent in agents:  # search agents own threads and evaluators
            close = getattr(agent, "close", None)
            if callable(close):
                close()
    meta["duration_seconds"] = time.perf_counter() - start
    fields: dict[str, Any] = {"white": player_text(white), "black": player_text(black), "start_time": started_at,
                              "search": tuple(search), "metadata": meta}
    if reason is not None:
        fields.update(result=result, reason=reason)
    return GameRecord.from_moves(moves, ruleset, **fields)


def _game_job(task: dict[str, Any], batched: bool):
    """The job of arena game ``task["index"]`` (:func:`game_steps`), returning its record."""
    s = game_seeds(task["seed"], task["index"], task["version"])
    a_white = s["a_colour"] == "w"
    white, black = (task["a"], task["b"]) if a_white else (task["b"], task["a"])
    white_seed, black_seed = (s["seed_a"], s["seed_b"]) if a_white else (s["seed_b"], s["seed_a"])
    meta = {"arena": {"a": player_text(task["a"]), "b": player_text(task["b"]), "seed": task["seed"]}, "game_index": task["index"],
            "pair": s["pair"], "game_seed": s["game_seed"], "a_colour": s["a_colour"]}
    if batched:
        meta["games_in_flight"] = task["games_in_flight"]
    ruleset = Ruleset.parse(task["ruleset"])
    opening = opening_moves(ruleset, task.get("opening_plies", 0), s["game_seed"])
    return game_steps(white, black, ruleset, white_seed, black_seed, meta, batched, opening)


def _write_record(task: dict[str, Any], record) -> dict[str, Any]:
    """Write a finished game's record atomically; returns ``{"index", "result", "reason", "a_colour"}``."""
    from core.records import write_json

    write_json(record, record_path(task["out_dir"], task["index"]))
    return {"index": task["index"], "result": record.result, "reason": record.reason,
            "a_colour": record.metadata["a_colour"]}


def _game_task(task: dict[str, Any]) -> dict[str, Any]:
    """Play arena game ``task["index"]`` alone and write its record atomically; run in a worker process
    (or in-process). Returns ``{"index", "result", "reason", "a_colour"}``."""
    return _write_record(task, _unbatched(_game_job(task, batched=False)))


def _batch_task(batch: dict[str, Any]) -> list[dict[str, Any]]:
    """Play the arena games ``batch["tasks"]`` together (``search.batched.drive``: ``games_in_flight`` at
    once, ``threads`` knowledge threads; each agent's net evaluator shared by its games,
    ``search.agents.SharedEvaluators``) and write each record as its game ends; a game whose record
    exists is skipped (a batch run again after a killed worker). Returns the games' ``_game_task``
    dicts in the order they ended."""
    import torch

    from search.agents import SharedEvaluators
    from search.batched import drive

    tasks = {t["index"]: t for t in batch["tasks"] if not record_path(t["out_dir"], t["index"]).exists()}
    torch.set_num_threads(1)
    with SharedEvaluators():
        jobs = ((i, _game_job(t, batched=True)) for i, t in tasks.items())
        return [_write_record(tasks[i], record)
                for i, record in drive(jobs, None, int(batch["games_in_flight"]), int(batch["threads"]))]


def plan_arena_batches(tasks: list[dict[str, Any]], games_in_flight: int, workers: int) -> list[dict[str, Any]]:
    """The :func:`_batch_task` batches of the game ``tasks``: shared out round-robin over the workers
    (``0``: one, in this process), at most ``games_in_flight`` games a batch (so that an SPRT stops the
    match within a batch of its decision), each with ``threads``: the cores divided among the workers."""
    threads = cores_per_worker(workers)
    return [{"tasks": [{**t, "games_in_flight": games_in_flight} for t in batch],
             "games_in_flight": min(games_in_flight, len(batch)), "threads": threads}
            for batch in worker_batches(tasks, workers, games_in_flight)]


# ============================================================================ run directory
def _config(a: str, b: str, seed: int, ruleset: Ruleset, games: int, version: int = ARENA_VERSION,
            opening_plies: int = 0) -> dict[str, Any]:
    return {"format": ARENA_FORMAT, "version": version, "a": a, "b": b, "seed": seed,
            "ruleset": ruleset.model_dump(), "opening_plies": opening_plies, "games": games}


def check_run_dir(out_dir: Path, a: str, b: str, seed: int, ruleset: Ruleset, opening_plies: int = 0) -> int:
    """The arena version (its game seeding, :func:`game_seeds`) of the match in ``out_dir``:
    ``out_dir/arena.json``'s, or :data:`ARENA_VERSION` for a new directory. Raise ``ArenaError`` naming
    the field if ``arena.json`` describes another match (other specs, seed, ruleset or opening plies; a
    file without ``opening_plies`` had none), has a version this code does not know, or is unreadable."""
    path = out_dir / CONFIG_FILE
    if not path.exists():
        if (out_dir / GAMES_DIR).exists() and any((out_dir / GAMES_DIR).glob("*.json")):
            raise ArenaError(f"{out_dir}: holds game records but no {CONFIG_FILE}; use another --out directory")
        return ARENA_VERSION
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ArenaError(f"{path}: unreadable arena configuration ({exc}); use another --out directory") from None
    if not isinstance(stored, dict) or stored.get("format") != ARENA_FORMAT:
        raise ArenaError(f"{path}: not an arena configuration (field 'format' is not {ARENA_FORMAT!r})")
    stored = {"opening_plies": 0, **stored}  # a file written before openings had none
    want = _config(a, b, seed, ruleset, 0, opening_plies=opening_plies)
    for key in ("a", "b", "seed", "ruleset", "opening_plies"):
        if stored.get(key) != want[key]:
            raise ArenaError(
                f"{path}: field {key!r} is {stored.get(key)!r} but this run asks for {want[key]!r};"
                " resume with the same agents, seed, rules and opening plies, or use another --out directory"
            )
    version = stored.get("version")
    if version not in ARENA_VERSIONS:
        raise ArenaError(f"{path}: field 'version' is {version!r}, this code reads {ARENA_VERSIONS}; use another --out"
                         " directory")
    return version


def _clean_temp_files(games_dir: Path) -> None:
    """Remove temporary files left by atomic writes interrupted by a kill (``.NNNN.json.*.tmp``)."""
    if games_dir.is_dir():
        for tmp in games_dir.glob(".*.json.*.tmp"):
            with contextlib.suppress(OSError):
                tmp.unlink()


def load_records(out_dir: str | os.PathLike, games: int, a: str | None = None, b: str | None = None,
                 seed: int | None = None) -> dict[int, Any]:
    """The finished game records of a run directory with index below ``games``: ``{index:
    GameRecord}``. When ``a``/``b``/``seed`` are given each record's ``metadata["arena"]`` must match
    (else ``ArenaError`` naming the file). Unreadable records raise ``ArenaError`` (delete the file to
    play that game again)."""
    from core.records import read_json

    out: dict[int, Any] = {}
    for i in range(games):
        path = record_path(out_dir, i)
        if not path.exists():
            continue
        try:
            record = read_json(path)
        except JiuError as exc:
            raise ArenaError(f"{path}: unreadable game record ({exc}); delete it to play the game again") from None
        meta = record.metadata
        if meta.get("game_index") != i or "a_colour" not in meta:
            raise ArenaError(f"{path}: field 'metadata.game_index' is {meta.get('game_index')!r}, expected {i}")
        if a is not None and meta.get("arena") != {"a": a, "b": b, "seed": seed}:
            raise ArenaError(f"{path}: field 'metadata.arena' is {meta.get('arena')!r}; this record belongs to"
                             " another match")
        out[i] = record
    return out


# ============================================================================ the arena
def a_points(result: str | None, a_colour: str) -> float:
    """A's points in one game: 1 win, 0.5 draw (or no result), 0 loss."""
    return 0.5 if result in ("draw", None) else 1.0 if result == a_colour else 0.0


def sprt_of_games(games: dict[int, float], elo0: float, elo1: float, alpha: float = 0.05, beta: float = 0.05):
    """The pentanomial SPRT (``train.matches.stats.sprt``) of A's points by game index (games ``2k`` and
    ``2k + 1`` are pair ``k``, colours swapped; pairs with one game played are left out)."""
    from train.matches.stats import pentanomial, sprt

    pairs: dict[int, list[float]] = {}
    for index, points in games.items():
        pairs.setdefault(index // 2, []).append(points)
    return sprt(pentanomial([sum(v) for v in pairs.values() if len(v) == 2]), elo0, elo1, alpha, beta)


def run_arena(
    spec_a: str | Any,
    spec_b: str | Any,
    games: int,
    workers: int = 1,
    seed: int = 0,
    out_dir: str | os.PathLike = "runs/arena",
    ruleset: Ruleset = DEFAULT_RULESET,
    progress: Any = True,
    imports: Sequence[str] = (),
    executor: Executor | None = None,
    sprt: tuple[float, float, float, float] | None = None,
    games_in_flight: int = 1,
    opening_plies: int = 0,
) -> ArenaSummary:
    """Play (or finish) a colour-balanced match of ``games`` games between ``spec_a`` and ``spec_b`` (spec
    strings, ``search.agents.AgentRecipe``, or ``(label, agent)`` pairs naming them: :func:`labelled_player`)
    and return its :class:`ArenaSummary` (also written to ``out_dir/summary.json``; its ``labels`` are
    ``[label_a, label_b]``).

    ``games``: even, 2..``MAX_GAMES``. ``workers``: processes (``0`` = play in this process). ``seed``: base
    seed (module docstring). ``progress``: ``True`` for a rich progress bar on stderr, ``False`` for
    none, or a ``rich.progress.Progress`` to add a task line to. ``imports``: modules each worker
    imports first (they may register extra agents). ``executor``: an existing pool from
    ``train.jobs.workers.make_pool`` to use instead of starting one (``workers`` is then ignored).
    ``sprt``: ``(elo0, elo1, alpha, beta)`` stops the match as soon as the pentanomial SPRT of A
    against B decides (:func:`sprt_of_games`; no new game starts, the running ones finish); the
    summary then holds ``sprt`` (the last look) and ``complete`` is false. ``games_in_flight``: games each
    worker plays at once (1..``search.batched.GAMES_IN_FLIGHT_MAX``); above 1 they run on the batched
    engine (``search.batched.drive``: the searches' leaves of every game evaluated together, each agent's
    net evaluator shared by its games) in batches of at most that many games, and the records' move
    times are wall times shared with the other games (``metadata["games_in_flight"]``); 1 plays each game
    alone with the agents' own threads, so its move times are the agents'. ``opening_plies``: random
    placements that start both games of each pair (0..``OPENING_PLIES_MAX``; module docstring).

    Raises ``ArenaError`` for a bad spec (listing the available agents), an odd or non-positive
    ``games``, a run directory of another match, or a failed game / dead worker (the records written
    so far stay; rerun the same call to resume)."""
    import catalog

    check_game_count(games)
    if workers < 0:
        raise ArenaError(f"workers: must be >= 0, got {workers}")
    if not isinstance(seed, int) or seed < 0:
        raise ArenaError(f"seed: must be an integer >= 0, got {seed!r}")
    if not isinstance(games_in_flight, int) or not 1 <= games_in_flight <= GAMES_IN_FLIGHT_MAX:
        raise ArenaError(f"games_in_flight: must be an integer in 1..{GAMES_IN_FLIGHT_MAX}, got {games_in_flight!r}")
    check_opening_plies(opening_plies)
    catalog.import_plugins(imports)
    (label_a, spec_a), (label_b, spec_b) = labelled_player(spec_a), labelled_player(spec_b)
    for side, label, agent in (("A", label_a, spec_a), ("B", label_b, spec_b)):
        check_agent_spec(agent, f"agent {side}" if label == player_text(agent) else f"agent {side} ({label})")
    out = Path(out_dir)
    if sprt is not None:
        from train.matches.stats import sprt_bounds

        elo0, elo1, alpha, beta = sprt
        if not elo1 > elo0:
            raise ArenaError(f"sprt: elo1 ({elo1}) must be greater than elo0 ({elo0})")
        try:
            sprt_bounds(alpha, beta)
        except ValueError as exc:
            raise ArenaError(f"sprt: {exc}") from None
    with lock_dir(out):
        return _run_locked(spec_a, spec_b, games, workers, seed, out, ruleset, progress, imports, executor, sprt,
                           games_in_flight, opening_plies, (label_a, label_b))


def _run_locked(player_a, player_b, games, workers, seed, out: Path, ruleset, progress, imports, executor,
                sprt, games_in_flight: int, opening_plies: int, labels: tuple[str, str]) -> ArenaSummary:
    spec_a, spec_b = player_text(player_a), player_text(player_b)  # the players' names in files and lines
    version = check_run_dir(out, spec_a, spec_b, seed, ruleset, opening_plies)
    games_dir = out / GAMES_DIR
    games_dir.mkdir(parents=True, exist_ok=True)
    _clean_temp_files(games_dir)
    atomic_write_json(out / CONFIG_FILE, _config(spec_a, spec_b, seed, ruleset, games, version, opening_plies))
    done = load_records(out, games, spec_a, spec_b, seed)
    todo = [i for i in range(games) if i not in done]
    task_base = {"a": player_a, "b": player_b, "seed": seed, "version": version, "ruleset": ruleset.model_dump(),
                 "opening_plies": opening_plies, "out_dir": str(out)}
    start = time.perf_counter()
    score = Counter({"w": 0, "d": 0, "l": 0})
    points: dict[int, float] = {}  # A's points by game index

    def tally(index: int, result: str | None, a_colour: str) -> None:
        points[index] = a_points(result, a_colour)
        score[{1.0: "w", 0.5: "d", 0.0: "l"}[points[index]]] += 1

    for i, r in done.items():
        tally(i, r.result, r.metadata["a_colour"])

    def decided() -> bool:
        return sprt is not None and sprt_of_games(points, *sprt).decision is not None

    def score_text() -> str:  # A's score and, with an SPRT, its log-likelihood ratio and bounds
        if sprt is None:
            return _score_text(score)
        look = sprt_of_games(points, *sprt)
        return f"{_score_text(score)}, LLR {look.llr:+.2f} [{look.lower:.2f}, {look.upper:.2f}]"

    with _progress_context(progress) as bar:
        label = " vs ".join(labels)
        task_id = bar.add_task(label, total=games, completed=len(done), score=score_text()) if bar else None

        def finished(info: dict[str, Any]) -> None:
            tally(info["index"], info["result"], info["a_colour"])
            if bar is not None:
                bar.update(task_id, advance=1, score=score_text())

        tasks = [{**task_base, "index": i} for i in todo]
        fn, on_done = _game_task, finished
        if games_in_flight > 1:
            fn, tasks = _batch_task, plan_arena_batches(tasks, games_in_flight,
                                                        workers if executor is None else pool_size(executor, workers))

            def on_done(infos: list[dict[str, Any]]) -> None:
                for info in infos:
                    finished(info)
        runner = None
        if todo and workers == 0 and executor is None:
            runner = InlineRunner()
        elif todo:
            runner = PoolRunner(min(workers, len(tasks)), pool=executor, imports=imports)
        ok = False
        try:
            if todo and not decided():
                runner.run(fn, tasks, on_done, should_stop=decided)
            ok = True
        except WorkerDied:
            saved = len(list((out / GAMES_DIR).glob("*.json")))
            raise ArenaError(f"a worker process died (killed or crashed); {saved} game records are saved in"
                             f" {out / GAMES_DIR}; rerun the same command to play the missing games") from None
        except JiuError:
            raise
        except Exception as exc:
            raise ArenaError(f"a game failed: {type(exc).__name__}: {exc}") from exc
        finally:
            if isinstance(runner, PoolRunner):
                runner.close(now=not ok)

    records = load_records(out, games, spec_a, spec_b, seed)
    ordered = [records[i] for i in sorted(records)]
    data = summarize_records(ordered, spec_a, spec_b)
    data = {"format": SUMMARY_FORMAT, "version": VERSION, **data, "games_requested": games,
            "complete": len(records) == games, "seed": seed, "ruleset": ruleset.model_dump(),
            "opening_plies": opening_plies, "labels": list(labels)}
    if sprt is not None:  # from the records on disk, like the rest of the summary
        look = sprt_of_games({i: a_points(r.result, r.metadata["a_colour"]) for i, r in records.items()}, *sprt)
        data["sprt"] = {"elo0": sprt[0], "elo1": sprt[1], "alpha": sprt[2], "beta": sprt[3], **look.to_dict()}
    atomic_write_json(out / SUMMARY_FILE, data)
    return ArenaSummary(data, out, played=len(todo), elapsed_seconds=time.perf_counter() - start, records=ordered)


def run_matches(
    matches: Sequence[tuple[str | Any, str | Any, int, str | os.PathLike]],
    workers: int = 1,
    seed: int = 0,
    ruleset: Ruleset = DEFAULT_RULESET,
    progress: bool = True,
    imports: Sequence[str] = (),
    games_in_flight: int = 1,
    opening_plies: int = 0,
) -> list[ArenaSummary]:
    """Play several arena matches ``(player_a, player_b, games, out_dir)`` (players as :func:`run_arena`'s) one after the other with one process pool (``workers``; ``0``: in
    this process) and one progress display shared by all, each through :func:`run_arena` (so each is
    resumable in its ``out_dir``; ``games_in_flight`` and ``opening_plies`` as there); returns their summaries in order. On an
    error or Ctrl-C the pool is stopped at once and the exception propagates."""
    pool = make_pool(workers, imports) if workers > 0 else None
    bar = new_progress() if progress else None
    out: list[ArenaSummary] = []
    try:
        if bar is not None:
            bar.start()
        for a, b, games, out_dir in matches:
            out.append(run_arena(a, b, games, workers=workers, seed=seed, out_dir=out_dir, ruleset=ruleset,
                                 progress=bar if bar is not None else False, imports=imports, executor=pool,
                                 games_in_flight=games_in_flight, opening_plies=opening_plies))
    except BaseException:
        if pool is not None:
            stop_pool(pool)
            pool = None
        raise
    finally:
        if bar is not None:
            bar.stop()
        if pool is not None:
            pool.shutdown(wait=True)
    return out


def _score_text(score: Counter) -> str:
    return f"+{score['w']} ={score['d']} -{score['l']}"


@contextlib.contextmanager
def _progress_context(progress: Any):
    """Yield a rich ``Progress`` (a new one on stderr for ``True``, the given one, or ``None``)."""
    if progress is False or progress is None:
        yield None
        return
    if progress is not True:
        yield progress
        return
    yield_bar = new_progress()
    with yield_bar:
        yield yield_bar


def new_progress(transient: bool = False):
    """A rich ``Progress`` on stderr with columns: description, bar, games done/total, score of A
    (``+wins =draws -losses``; with an SPRT also ``LLR x [lower, upper]``), elapsed and remaining time;
    ``transient``: erased when it stops. When stderr is not a terminal (a log file, a CI job), where a
    bar is not drawn, a ``train.jobs.dashboard.LineProgress`` instead: the same facts as plain lines, at least
    once a minute."""
    if not sys.stderr.isatty():
        from train.jobs.dashboard import LineProgress

        return LineProgress()
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[score]}"), TimeElapsedColumn(), TimeRemainingColumn(),
        console=Console(stderr=True), transient=transient,
    )
