"""Many searches, one batched evaluation: the self-play engine's scheduler (KataGo's NN server, lc0's
multi-game self-play, mctx's batched search).

A search that waits on its evaluator leaves the net one position at a time and the cores idle; here a
search is a *generator* of leaf requests instead (:func:`search_steps`), and one driver (:func:`drive`)
advances many of them, then evaluates the leaves of all of them at once:

- :func:`search_steps` is :meth:`search.mcts.Search.run` as a generator. Each step selects up to
  ``SearchConfig.threads`` simulations (WU-UCT: each one's unobserved counts are in the tree before the
  next is selected, JFA Eq. 2), yields their leaves as :class:`LeafRequest` objects, receives one
  :class:`LeafAnswer` per request, expands the leaves (:meth:`~search.mcts.Search.expand_leaf`) and backs
  the values up (Eq. 3-5). A simulation that reaches a leaf another one in flight is expanding waits
  and continues through it in the next step, as a search thread waits for the expansion; a terminal
  leaf is backed up at once. With ``threads = 1`` a step is one simulation, in the order of
  ``Search.run`` with one thread: with the same evaluator the two build the same tree
  (``tests/test_batched.py``).
- A *job* is any generator that yields lists of :class:`LeafRequest` (usually through ``yield from
  search_steps(...)``) or an :class:`Offload` (a call to run off the driver's thread, e.g. the reward's
  battle of a layout game), and returns its result: a self-play game (``train.learning.selfplay``) or an
  arena game.
- :func:`drive` keeps ``in_flight`` jobs going. Each round it sends every job its answers, collects the
  leaves of all of them, and evaluates them together: each evaluator gets **one** call with the positions
  of every leaf that asks it (``NetEvaluator`` makes one forward pass per phase of them; the searches of
  self-play share one evaluator, an arena game's two agents have one each, shared with the same agent's
  searches in the other games), while the leaves' knowledge
  (:meth:`~search.mcts.Search.knowledge_job`: the expert's two-ply value, whose Numba kernels release the
  GIL) runs in ``threads`` pool threads beside it. A job's tree depends only on its own steps and the
  answers for its own leaves, so with a deterministic evaluator a job played alone and the same job
  played among others give identical trees.

:class:`DriveStats` counts the rounds and their batch sizes and splits the time into the net, the
knowledge and the rest (the search itself, in the driver's thread).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from core.state import GameState
from search.mcts import Search, SearchResult


class LeafRequest(NamedTuple):
    """A leaf to evaluate: its position, its knowledge job (a thread-safe callable returning a float,
    ``Search.knowledge_job``) or ``None``, and the evaluator to ask (its search's; ``None``: the one
    given to :func:`drive`)."""

    state: GameState
    knowledge: Callable[[], float] | None
    evaluator: Any = None


class LeafAnswer(NamedTuple):
    """The answer to a :class:`LeafRequest`: the evaluator's ``nets.evaluator.Evaluation`` and the
    knowledge job's float (``None`` without a job)."""

    evaluation: Any
    knowledge: float | None


class Offload(NamedTuple):
    """A call a job wants run off the driver's thread (in its own pool); the job gets the call's result
    (or its exception, raised at the ``yield``) while the other jobs go on."""

    fn: Callable[[], Any]


Job = Generator[Any, Any, Any]

GAMES_IN_FLIGHT_MAX = 4096
"""Games one driver plays at once at most (``selfplay.games_in_flight``, ``arena --games-in-flight``)."""


def search_steps(search: Search, state: GameState, simulations: int | None = None,
                 seconds: float | None = None) -> Generator[list[LeafRequest], list[LeafAnswer], SearchResult]:
    """``search.run(state, simulations, seconds)`` as a generator (module docstring): yields lists of
    :class:`LeafRequest`, to be sent back a list of :class:`LeafAnswer` in the same order; returns the
    :class:`search.mcts.SearchResult`. Raises what ``Search.begin`` raises (a terminal ``state``, a bad
    ``seconds``)."""
    start_n, t0 = search.begin(state, simulations, seconds)
    tree = search.tree
    width = max(1, int(search.config.threads))
    waiting: list[list[int]] = []
    while True:
        flights: list[tuple[list[int], GameState]] = []
        carried, waiting = waiting, []
        while carried or (len(flights) + len(waiting) < width and search.claim()):
            path, ready = search.select_leaf(carried.pop(0) if carried else None)
            if not ready:
                waiting.append(path)
                continue
            leaf = search.leaf_state(tree, path[-1], path)
            if isinstance(leaf, GameState):
                flights.append((path, leaf))
            else:  # a terminal leaf: its value is known
                search.backup(path, leaf)
        if not flights:
            if not waiting:
                break
            raise RuntimeError("search_steps: simulations wait on a leaf that no simulation expands")
        answers = yield [LeafRequest(leaf, search.knowledge_job(leaf, path[-1]), search.evaluator)
                         for path, leaf in flights]
        for (path, leaf), answer in zip(flights, answers, strict=True):
            search.backup(path, search.expand_leaf(path[-1], leaf, answer.evaluation, answer.knowledge))
    return search.finish(start_n, t0)


@dataclass
class DriveStats:
    """What :func:`drive` did: ``rounds`` (evaluations), ``leaves`` (positions evaluated),
    ``batches`` (a ``Counter`` of leaves per round), ``net_seconds`` (wall seconds of the evaluator's
    calls), ``knowledge_seconds`` (seconds of the knowledge jobs, summed over the pool threads),
    ``search_seconds`` (seconds of the driver's thread outside the evaluation: selection, expansion,
    backups and the jobs' own code), ``offloads`` and ``offload_seconds`` (the jobs' :class:`Offload`
    calls), ``wall_seconds``."""

    rounds: int = 0
    leaves: int = 0
    batches: Counter = field(default_factory=Counter)
    net_seconds: float = 0.0
    knowledge_seconds: float = 0.0
    search_seconds: float = 0.0
    offloads: int = 0
    offload_seconds: float = 0.0
    wall_seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        """A JSON-ready dict: the counts, the batch-size distribution (``batch``: :func:`batch_summary`)
        and ``shares`` of the net, the knowledge and the search in their summed seconds."""
        total = self.net_seconds + self.knowledge_seconds + self.search_seconds
        share = (lambda x: round(x / total, 4)) if total > 0 else (lambda x: 0.0)
        return {"rounds": self.rounds, "leaves": self.leaves, "batch": batch_summary(self.batches),
                "seconds": {"net": round(self.net_seconds, 3), "knowledge": round(self.knowledge_seconds, 3),
                            "search": round(self.search_seconds, 3), "offload": round(self.offload_seconds, 3),
                            "wall": round(self.wall_seconds, 3)},
                "shares": {"net": share(self.net_seconds), "knowledge": share(self.knowledge_seconds),
                           "search": share(self.search_seconds)}}


def batch_summary(batches: Counter) -> dict[str, Any]:
    """The distribution of evaluation sizes ``batches`` (leaves per round -> rounds): ``rounds``, ``mean``,
    ``median``, ``max`` and ``sizes`` (the counts, keyed by the size as a string: JSON-ready)."""
    sizes = sorted(batches.elements())
    return {"rounds": len(sizes), "mean": round(sum(sizes) / len(sizes), 2) if sizes else 0.0,
            "median": sizes[len(sizes) // 2] if sizes else 0, "max": sizes[-1] if sizes else 0,
            "sizes": {str(k): v for k, v in sorted(batches.items())}}


def _timed_knowledge(jobs: list[Callable[[], float] | None]) -> tuple[list[float | None], float]:
    t0 = time.perf_counter()
    return [None if j is None else float(j()) for j in jobs], time.perf_counter() - t0


def _timed_call(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    return fn(), time.perf_counter() - t0


def drive(jobs: Iterable[tuple[Any, Job]], evaluator, in_flight: int, threads: int = 1,
          stats: DriveStats | None = None) -> Iterator[tuple[Any, Any]]:
    """Run ``jobs`` (``(key, generator)`` pairs, started lazily in order) with at most ``in_flight`` (>= 1)
    going at once, evaluating the leaves of all of them together (module docstring); yields ``(key,
    result)`` as each job returns. ``evaluator``: the ``nets.evaluator.Evaluator`` of the requests that
    name none (``LeafRequest.evaluator``), or ``None`` when all of them do; each evaluator gets one call
    per round with the positions of its leaves, in the order of the jobs; ``threads`` (>= 1): pool threads for the knowledge jobs (the cores to use).
    An exception of a job or of the evaluation propagates (the other jobs are abandoned). ``stats``
    (:class:`DriveStats`) is filled in as it goes."""
    if in_flight < 1:
        raise ValueError(f"drive: in_flight must be >= 1, got {in_flight}")
    if threads < 1:
        raise ValueError(f"drive: threads must be >= 1, got {threads}")
    stats = stats if stats is not None else DriveStats()
    source = iter(jobs)
    exhausted = False
    active: dict[Any, tuple[Job, Any]] = {}  # key -> (job, its pending request)
    parked: dict[Any, tuple[Job, Future]] = {}  # key -> (job, its running Offload)
    done: list[tuple[Any, Any]] = []
    wall0 = time.perf_counter()
    pool = ThreadPoolExecutor(threads, thread_name_prefix="drive-knowledge") if threads > 1 else None
    offload_pool = ThreadPoolExecutor(max(1, threads), thread_name_prefix="drive-offload")

    def advance(key: Any, job: Job, send: Any = None, throw: BaseException | None = None) -> None:
        try:
            request = job.throw(throw) if throw is not None else job.send(send)
        except StopIteration as stop:
            done.append((key, stop.value))
            return
        if isinstance(request, Offload):
            parked[key] = (job, offload_pool.submit(_timed_call, request.fn))
        else:
            active[key] = (job, request)

    try:
        while True:
            t_search = time.perf_counter()
            while not exhausted and len(active) + len(parked) < in_flight:
                try:
                    key, job = next(source)
                except StopIteration:
                    exhausted = True
                    break
                advance(key, job)
            for key in [k for k, (_, fut) in parked.items() if fut.done()]:
                job, fut = parked.pop(key)
                try:
                    result, seconds = fut.result()
                except Exception as exc:  # noqa: BLE001 - handed to the job that asked for the call
                    advance(key, job, throw=exc)
                else:
                    stats.offloads += 1
                    stats.offload_seconds += seconds
                    advance(key, job, result)
            stats.search_seconds += time.perf_counter() - t_search
            yield from done
            done.clear()
            if not active:
                if not parked:
                    if exhausted:
                        break
                    continue
                next(iter(parked.values()))[1].exception()  # wait for an offload (no leaves to evaluate)
                continue
            keys = list(active)
            requests = [active[k][1] for k in keys]
            flat = [r for rs in requests for r in rs]
            knowledge = [r.knowledge for r in flat]
            values: list[float | None] = [None] * len(flat)
            futures = []
            if threads > 1 and any(knowledge):  # the knowledge beside the net, in the pool's threads
                futures = [pool.submit(_timed_knowledge, knowledge[i::threads]) for i in range(threads)]
            t_net = time.perf_counter()
            evaluations = _evaluate(flat, evaluator)
            stats.net_seconds += time.perf_counter() - t_net
            if threads == 1:  # one core: the knowledge after the net, in this thread (no GIL handoffs)
                values, seconds = _timed_knowledge(knowledge)
                stats.knowledge_seconds += seconds
            for i, fut in enumerate(futures):
                vals, seconds = fut.result()
                values[i::threads] = vals
                stats.knowledge_seconds += seconds
            stats.rounds += 1
            stats.leaves += len(flat)
            stats.batches[len(flat)] += 1
            t_search = time.perf_counter()
            at = 0
            for key, rs in zip(keys, requests):
                job = active.pop(key)[0]
                answers = [LeafAnswer(e, v) for e, v in zip(evaluations[at:at + len(rs)], values[at:at + len(rs)])]
                at += len(rs)
                advance(key, job, answers)
            stats.search_seconds += time.perf_counter() - t_search
            yield from done
            done.clear()
    finally:
        for job, _ in list(active.values()) + list(parked.values()):
            job.close()
        if pool is not None:
            pool.shutdown(wait=True)
        offload_pool.shutdown(wait=True, cancel_futures=True)
        stats.wall_seconds += time.perf_counter() - wall0


def _evaluate(requests: list[LeafRequest], default) -> list[Any]:
    """The evaluations of ``requests`` in order: one ``evaluate`` call per evaluator (``default`` for the
    requests that name none)."""
    groups: dict[int, tuple[Any, list[int]]] = {}
    for i, r in enumerate(requests):
        ev = r.evaluator if r.evaluator is not None else default
        if ev is None:
            raise ValueError("drive: a leaf request names no evaluator and drive was given none")
        groups.setdefault(id(ev), (ev, []))[1].append(i)
    out: list[Any] = [None] * len(requests)
    for ev, indices in groups.values():
        for i, e in zip(indices, ev.evaluate([requests[i].state for i in indices]), strict=True):
            out[i] = e
    return out


def run_alone(job: Job, evaluator=None, threads: int = 1) -> Any:
    """Run one job (:func:`drive` with one in flight) and return its result."""
    for _, result in drive([(0, job)], evaluator, 1, threads):
        return result
    raise RuntimeError("run_alone: the job returned nothing")  # pragma: no cover - drive yields each job once
