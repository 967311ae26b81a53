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
  :class:`PoolRunner` (a process pool), :class:`RayRunner` (Ray tasks; ``ray`` is optional).
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
    """Worker process start (module docstring)."""
    import signal

    exit_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
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


class RayRunner:
    """Tasks as Ray tasks (``ray`` imported lazily; a ``JiuError`` names the fix when it is missing).
    Uses a Ray instance already initialised by the caller (e.g. a cluster), else starts a local one
    (``num_cpus=workers``). A worker that dies mid-task (killed, out of memory) has its task run again,
    up to :attr:`RETRIES` times: tasks write their files atomically under their own index, so the task
    is replayed, not duplicated, and ``on_done`` sees it once. A task that fails for good raises
    :class:`WorkerDied`."""

    RETRIES = 3

    def __init__(self, workers: int):
        try:
            import ray
        except ImportError:
            raise JiuError("backend 'ray': ray is not installed (pip install ray), or use --backend process") from None
        self.ray = ray
        self.started = not ray.is_initialized()
        if self.started:
            ray.init(num_cpus=max(1, workers), include_dashboard=False, log_to_driver=False,
                     runtime_env={"env_vars": {"PYTHONPATH": str(Path(__file__).resolve().parents[2])}})
        self.workers = max(1, workers)

    def run(self, fn, tasks, on_done, should_stop=None) -> bool:
        ray = self.ray
        remote = ray.remote(num_cpus=1, max_retries=self.RETRIES)(fn)
        queue = list(tasks)
        pending: list = []
        while queue or pending:
            while queue and len(pending) < self.workers and not (should_stop and should_stop()):
                pending.append(remote.remote(queue.pop(0)))
            if not pending:
                break
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    raise WorkerDied(f"a Ray task failed after {self.RETRIES} retries ({type(exc).__name__}); the "
                                     "finished tasks are saved; rerun the same command to resume") from None
                on_done(result)
        return not queue

    def close(self, now: bool = False) -> None:
        if self.started:
            self.ray.shutdown()
            self.started = False


def make_runner(workers: int, backend: str = "process", imports: Sequence[str] = ()):
    """The runner of ``workers`` (0: :class:`InlineRunner`) on ``backend`` (``process`` or ``ray``)."""
    if workers == 0:
        return InlineRunner()
    if backend == "ray":
        return RayRunner(workers)
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
