"""The one worker pool of the project: arena games, generated records and self-play games all run here.

- :func:`make_pool` starts a ``concurrent.futures.ProcessPoolExecutor`` of ``spawn``-ed processes
  (safe with Numba's and torch's threads) whose initialiser is :func:`init_worker`: the worker ends
  within a second of its parent's death (:func:`exit_with_parent`), ignores Ctrl-C (the parent handles
  it), runs torch on one thread, registers every built-in agent and plugin (``catalog``) and the
  caller's ``imports`` (user modules that register extra agents), and loads the rules kernels once.
- :func:`run_tasks` runs ``fn(task)`` for a list of tasks with at most ``in_flight`` submitted at a time
  and calls ``on_done(result)`` in the parent as each finishes; ``should_stop()`` stops submitting (the
  running tasks finish). A dead worker raises :class:`WorkerDied`; any other exception of a task
  propagates after the queued tasks are cancelled.
- Runners (:func:`make_runner`) put the three ways side by side behind one ``run(fn, tasks, on_done,
  should_stop) -> bool`` method: :class:`InlineRunner` (``workers = 0``: in this process),
  :class:`PoolRunner` (a process pool), :class:`RayRunner` (long-lived Ray actors, on a local Ray or a
  cluster joined by address; ``ray`` is optional).
- :func:`stop_pool` terminates a pool now (Ctrl-C, a failed task).
"""

from __future__ import annotations

import contextlib
import os
import time
from concurrent.futures import FIRST_COMPLETED, Executor, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Callable, Sequence

from core.errors import JiuError


class WorkerDied(JiuError):
    """A worker process died (killed or crashed); the tasks that finished are kept."""


def exit_with_parent(interval: float = 1.0) -> None:
    """In a worker process: end it (``os._exit``) within ``interval`` seconds of its parent's death.

    A pool worker whose parent was killed otherwise plays on and may write records next to a resumed
    run's; a game cut short is simply replayed on resume (records are written atomically)."""
    import threading

    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def init_worker(imports: Sequence[str] = ()) -> None:
    """Worker process start (module docstring): :func:`prepare_worker` in a process that ends with its
    parent and ignores Ctrl-C."""
    import signal

    exit_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    prepare_worker(imports)


def prepare_worker(imports: Sequence[str] = ()) -> None:
    """What every worker (pool process or Ray actor) does once before its first task: torch on one
    thread, every built-in agent and plugin registered (``catalog``) plus the modules ``imports``, and
    the rules kernels loaded (one legal-move generation). Raises ``ModuleNotFoundError`` for a bad
    ``imports`` entry."""
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    import catalog

    catalog.import_plugins(imports)
    from core.state import GameState

    GameState.initial().legal_moves()


def make_pool(workers: int, imports: Sequence[str] = ()) -> ProcessPoolExecutor:
    """A process pool of ``workers`` (>= 1) ``spawn``-ed processes running :func:`init_worker`."""
    import multiprocessing

    if workers < 1:
        raise ValueError(f"workers: a process pool needs at least 1 worker, got {workers}")
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=init_worker, initargs=(tuple(imports),))


def pool_size(pool: Executor, default: int = 1) -> int:
    """The number of workers of ``pool`` (``default`` when it does not say)."""
    return max(1, int(getattr(pool, "_max_workers", default) or default))


def worker_batches(tasks: Sequence, workers: int, most: int) -> list[list]:
    """``tasks`` shared out round-robin into batches for ``workers`` workers (``0`` counts as one): as many
    batches as workers when each then holds at most ``most`` (>= 1) tasks, else more batches of at most
    ``most``; ``[]`` for no tasks. The batched engine's workers (self-play, arena) each play a batch."""
    if not tasks:
        return []
    per_batch = max(1, min(-(-len(tasks) // max(1, workers)), most))
    n = -(-len(tasks) // per_batch)
    return [list(tasks[i::n]) for i in range(n)]


def cores_per_worker(workers: int) -> int:
    """The cores this process may use divided among ``workers`` workers (``0`` counts as one), at least 1."""
    from nets.evaluator import available_cores

    return max(1, available_cores() // max(1, workers))


def stop_pool(pool: Executor) -> None:
    """Shut a pool down now: cancel queued tasks and terminate the workers."""
    processes = list(getattr(pool, "_processes", {}).values()) if isinstance(pool, ProcessPoolExecutor) else []
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        with contextlib.suppress(Exception):
            if p.is_alive():
                p.terminate()
    for p in processes:
        with contextlib.suppress(Exception):
            p.join(timeout=5)


def run_tasks(pool: Executor, fn: Callable[[dict], Any], tasks: Sequence[dict], on_done: Callable[[Any], None],
              in_flight: int, should_stop: Callable[[], bool] | None = None) -> bool:
    """Run ``fn(task)`` on ``pool`` (module docstring). Returns ``True`` if every task ran."""
    queue = list(tasks)
    pending: set = set()
    try:
        while queue or pending:
            while queue and len(pending) < in_flight and not (should_stop and should_stop()):
                pending.add(pool.submit(fn, queue.pop(0)))
            if not pending:
                break
            ready, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in ready:
                try:
                    result = fut.result()
                except BrokenProcessPool:
                    raise WorkerDied("a worker process died (killed or crashed); the finished tasks are saved; rerun"
                                     " the same command to resume") from None
                on_done(result)
    finally:
        for fut in pending:
            fut.cancel()
    return not queue


# ============================================================================ runners
class InlineRunner:
    """Tasks one after the other in this process."""

    def run(self, fn, tasks, on_done, should_stop=None) -> bool:
        for t in tasks:
            if should_stop is not None and should_stop():
                return False
            on_done(fn(t))
        return True

    def close(self, now: bool = False) -> None:
        pass


class PoolRunner:
    """Tasks on a process pool (started lazily with ``workers`` processes, or the given ``pool``)."""

    def __init__(self, workers: int, pool: Executor | None = None, imports: Sequence[str] = ()):
        self.workers, self.imports = workers, tuple(imports)
        self._pool, self._own = pool, pool is None

    @property
    def pool(self) -> Executor:
        if self._pool is None:
            self._pool = make_pool(self.workers, self.imports)
        return self._pool

    def run(self, fn, tasks, on_done, should_stop=None) -> bool:
        return run_tasks(self.pool, fn, tasks, on_done, pool_size(self.pool, self.workers), should_stop)

    def close(self, now: bool = False) -> None:
        if self._pool is not None and self._own:
            if now:
                stop_pool(self._pool)
            else:
                self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


RAY_CONNECT_TIMEOUT = 5.0  # seconds a Ray head node's address gets to accept a TCP connection


def parse_ray_address(address: str) -> tuple[str, int]:
    """``(host, port)`` of a Ray head node's ``HOST:PORT`` (``[IPv6]:PORT`` too; port 1..65535).
    Raises ``ValueError`` naming what is wrong (for ``config.ray_address`` and ``--ray-address``)."""
    host, sep, port = address.strip().rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or any(c.isspace() for c in host) or "/" in host or not port.isdigit() \
            or not 1 <= int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT of a Ray head node (e.g. 10.0.0.5:6379), got {address!r}")
    return host, int(port)


def check_ray_address(address: str, timeout: float = RAY_CONNECT_TIMEOUT) -> None:
    """Whether a Ray head node answers at ``address`` (``HOST:PORT``): one plain TCP connection, given
    ``timeout`` seconds, before ``ray.init`` (which waits and retries a long time on an address where
    nothing listens). Raises :class:`~core.errors.JiuError` ``ray_address: HOST:PORT does not answer
    (reason)``, or naming the field for a malformed address. An open port that is not a Ray head passes."""
    import socket

    try:
        host, port = parse_ray_address(address)
    except ValueError as exc:
        raise JiuError(f"ray_address: {exc}") from None
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except TimeoutError:
        raise JiuError(f"ray_address: {address} does not answer (no connection within {timeout:g} s)") from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise JiuError(f"ray_address: {address} does not answer ({reason.lower()})") from None


class RayWorker:
    """The Ray actor class of :class:`RayRunner` (wrapped by ``ray.remote`` there, so that this module
    does not import ``ray``): :func:`prepare_worker` once, then ``run(fn, task) -> fn(task)`` for each
    task it is given, one at a time."""

    def __init__(self, imports: Sequence[str] = ()):
        prepare_worker(imports)

    def run(self, fn: Callable[[Any], Any], task: Any) -> Any:
        return fn(task)

    def pid(self) -> int:
        """The actor's process id (tests)."""
        return os.getpid()


class RayRunner:
    """Tasks on ``workers`` long-lived Ray actors (:class:`RayWorker`, one CPU each), each task on an
    idle actor, the results to ``on_done`` in completion order. ``ray`` is imported here (a
    ``JiuError`` names the fix when it is missing).

    Ray: the one already initialised in this process (a test's, a caller's), else with ``address``
    (``HOST:PORT`` of a running cluster's head node, checked first by :func:`check_ray_address`) the
    cluster joined with ``ray.init(address=...)``, else a local Ray of ``workers`` CPUs started here.
    The runtime environment puts this checkout on the workers' ``PYTHONPATH``, which imports the
    project only where every node has it at the same path (a shared filesystem); a cluster without
    one needs Ray's ``working_dir`` runtime environment instead (docs/training.md, "Ray clusters").
    A cluster with fewer CPUs than ``workers`` is a ``JiuError`` (the actors would wait for ever).

    An actor that dies (``RayActorError``: killed, out of memory, its node lost) is replaced by a new
    one and its task is submitted again, up to :attr:`RETRIES` times per task, then
    :class:`WorkerDied`; an actor that cannot start (an import error on a node) is ``WorkerDied`` at
    once, and so is any other Ray failure; joining a cluster that ``ray.init`` refuses is a ``JiuError``
    naming ``ray_address``. Tasks must be idempotent (the self-play and record tasks write each game's files atomically
    and skip a game whose record exists), so a resubmitted task replays only what was unfinished;
    ``on_done`` sees each task once. Any other exception of a task propagates (the original
    exception, not Ray's wrapper). ``actors`` lists the live actor handles (tests kill one)."""

    RETRIES = 3

    def __init__(self, workers: int, address: str | None = None, imports: Sequence[str] = ()):
        try:
            import ray
        except ImportError:
            raise JiuError("backend 'ray': ray is not installed (pip install ray), or use --backend process") from None
        self.ray, self.workers, self.address, self.imports = ray, max(1, workers), address, tuple(imports)
        self.started = not ray.is_initialized()
        if self.started:
            env = {"env_vars": {"PYTHONPATH": str(Path(__file__).resolve().parents[2])}}
            if address is not None:
                check_ray_address(address)
                try:
                    ray.init(address=address, runtime_env=env, log_to_driver=False)
                except Exception as exc:  # an open port that is not a Ray head, another Ray version
                    self.started = False
                    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
                    raise JiuError(f"ray_address: {address}: cannot join the Ray cluster ({type(exc).__name__}"
                                   f"{': ' + first if first else ''})") from None
            else:
                ray.init(num_cpus=self.workers, include_dashboard=False, log_to_driver=False, runtime_env=env)
        cpus = ray.cluster_resources().get("CPU", 0)
        if cpus < self.workers:
            self.close()
            raise JiuError(f"workers: {self.workers} Ray actors need {self.workers} CPUs; the Ray cluster has {cpus:g}"
                           " (lower --workers or add nodes)")
        self._actor_class = ray.remote(num_cpus=1, max_restarts=0)(RayWorker)
        self.actors: list = [self._new_actor() for _ in range(self.workers)]

    def _new_actor(self):
        return self._actor_class.remote(self.imports)

    def _replace(self, actor):
        """A new actor in ``actor``'s place in :attr:`actors` (the old one killed, if it still runs)."""
        with contextlib.suppress(Exception):
            self.ray.kill(actor)
        fresh = self._new_actor()
        self.actors = [fresh if a is actor else a for a in self.actors]
        return fresh

    def run(self, fn, tasks, on_done, should_stop=None) -> bool:
        ray = self.ray
        queue = [(task, 0) for task in tasks]  # (task, actor deaths so far), the next task first
        idle = list(self.actors)
        pending: dict = {}  # ObjectRef -> (actor, task, deaths)
        while queue or pending:
            while queue and idle and not (should_stop and should_stop()):
                actor = idle.pop()
                task, deaths = queue.pop(0)
                pending[actor.run.remote(fn, task)] = (actor, task, deaths)
            if not pending:
                break
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                actor, task, deaths = pending.pop(ref)
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayActorError as exc:
                    if getattr(exc, "actor_init_failed", False):
                        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
                        raise WorkerDied(f"a Ray actor could not start ({lines[-1] if lines else type(exc).__name__});"
                                         " the finished tasks are saved; rerun the same command to resume") from None
                    idle.append(self._replace(actor))
                    if deaths >= self.RETRIES:
                        raise WorkerDied(f"a Ray task failed after {self.RETRIES} retries ({type(exc).__name__}); the "
                                         "finished tasks are saved; rerun the same command to resume") from None
                    queue.insert(0, (task, deaths + 1))
                    continue
                except ray.exceptions.RayTaskError as exc:
                    cause = getattr(exc, "cause", None)
                    if isinstance(cause, Exception):
                        raise cause from None
                    raise
                except ray.exceptions.RayError as exc:  # an object lost with its node, ...
                    raise WorkerDied(f"Ray failed ({type(exc).__name__}); the finished tasks are saved; rerun the "
                                     "same command to resume") from None
                idle.append(actor)
                on_done(result)
        return not queue

    def close(self, now: bool = False) -> None:
        """Kill the actors (a running task is cut short: it is replayed on resume) and, if this runner
        started or joined Ray, disconnect."""
        for actor in getattr(self, "actors", []):
            with contextlib.suppress(Exception):
                self.ray.kill(actor)
        self.actors = []
        if self.started:
            self.ray.shutdown()
            self.started = False


def make_runner(workers: int, backend: str = "process", imports: Sequence[str] = (), address: str | None = None):
    """The runner of ``workers`` (0: :class:`InlineRunner`) on ``backend`` (``process`` or ``ray``;
    ``address``: the ``HOST:PORT`` of a Ray cluster to join, ``None`` for a local Ray)."""
    if workers == 0:
        return InlineRunner()
    if backend == "ray":
        return RayRunner(workers, address, imports)
    return PoolRunner(workers, imports=imports)


def map_indexed(fn: Callable[[dict], dict], tasks: Sequence[dict], workers: int = 1,
                progress: Callable[[int, int], None] | None = None) -> list[dict]:
    """``fn`` over ``tasks`` on ``workers`` processes (1 or fewer: in this process), the results sorted by
    their ``"index"`` (each task's result carries one; a benchmark's positions in sample order);
    ``progress(done, total)`` after each result. The pool is stopped when done or on an error."""
    results: list[dict] = []

    def done(r: dict) -> None:
        results.append(r)
        if progress is not None:
            progress(len(results), len(tasks))

    runner = make_runner(workers if workers > 1 else 0)
    try:
        runner.run(fn, tasks, done)
    finally:
        runner.close(now=True)
    return sorted(results, key=lambda r: r["index"])
