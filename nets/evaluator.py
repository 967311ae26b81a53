"""The evaluator interface the search uses, and its implementations (lc0-style narrow batching).

The search sees nets only through two protocols:

- :class:`Evaluator`: ``evaluate(states) -> list[Evaluation]``; an :class:`Evaluation` is a policy over
  the phase's action space (``float32 (196,)`` in the layout, ``(48804,)`` in the battle, rule book
  section 8; probabilities summing to 1, *not* masked to the legal actions: the search masks and
  renormalises) and a value in [-1, 1] for the side to move of the evaluated state. Thread-safe; may
  block. Optionally ``evaluate_later(states) -> callable`` (:class:`NetEvaluator`): queue the states
  and return at once, the callable giving the evaluations, so the caller works while the net runs.
- :class:`VictimScorer` (the HBM lower net): ``q_values(states_after, upper_actions)`` -> ``float32
  (n,)``, one Q per candidate capture (the state after the whole move, victims removed, and the upper
  action of the move's path), higher is better for the player who captured.

Implementations:

- :class:`UniformEvaluator`: uniform policy, value 0 (pure MCTS baselines and tests).
- :class:`KnowledgeEvaluator`: uniform policy, value from a knowledge evaluator (``eval.shape``).
- :class:`NetEvaluator`: SLM for layout states, upper net for battle states, batched across threads.
  Search threads call ``evaluate_later([state])``; the caller computes the feature planes (a Numba
  kernel that releases the GIL, so this part runs in parallel), queues one request per state with a
  ``concurrent.futures.Future``, computes the leaf's knowledge and then blocks on it (``evaluate``
  blocks at once). An inference thread takes the first request,
  then keeps collecting until it has ``max_batch`` states or ``max_wait_ms`` have passed since the
  first, or (no point waiting) no other request is queued;
  runs each phase's net once on its part of the batch under ``torch.inference_mode()``, and answers
  every future. An exception in the inference thread is set on every future of that batch, so
  it is raised in the callers (and the thread goes on serving). A phase without a net gets the uniform
  policy and value 0, with a one-time ``RuntimeWarning``. ``inference_threads`` such threads share the
  queue (default 1); the compiled nets release the GIL for the whole forward pass, so two of them on
  one torch thread each use two cores (inter-op parallelism: for nets this small it beats two intra-op
  threads, which also spin).
- :class:`NetVictimScorer`: the lower net over a batch of candidates (chunks of ``max_batch``).

Threads: PyTorch's intra-op thread pool is process-wide. ``NetEvaluator`` sets it once, at construction,
to ``num_threads`` (default :func:`default_num_threads`: half the cores this process may use, at least
1, so 1 on the 2-core machines). All net work happens in the inference threads, but the search
threads are not idle: their Numba move generation and Python tree updates want the other cores. And
oversubscribed OpenMP threads spin: while other processes run, two intra-op threads can be many times
*slower* than one (``OMP_WAIT_POLICY=PASSIVE`` in the environment softens this). Training is hit the
same way: set ``torch.set_num_threads(1)`` in a learner on a shared machine. Pass ``num_threads=2`` (or
more) only on an otherwise idle machine; pass 1 when several evaluators or worker processes share a
machine. To use more cores for the nets, prefer ``inference_threads``. Give a :class:`NetVictimScorer`
the evaluator (``evaluator=``) to run its forward passes in the same inference threads instead of in
the calling search thread. Why these defaults, measured: docs/performance.md, "The nets: compiled,
threads and batches".

The evaluator puts its nets in ``eval()`` mode (batch norm uses running statistics); a learner training
the same module objects concurrently must hand the evaluator a copy.
"""

from __future__ import annotations

import os
import queue
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np
import torch
from torch import nn

from core.board import SIZE
from nets.encoding import NUM_LAYOUT_ACTIONS, NUM_UPPER_ACTIONS
from nets.features import batch_planes, state_planes
from core.state import GameState

PHASE_NAMES = ("layout", "battle")
POLICY_SIZE = (NUM_LAYOUT_ACTIONS, NUM_UPPER_ACTIONS)  # by phase


class Evaluation(NamedTuple):
    """A net's answer for one state."""

    policy: np.ndarray  # float32 probabilities over the phase's action space: (196,) layout, (48804,) battle;
    #                     not masked to the legal actions; may be a shared read-only array (copy to modify)
    value: float  # in [-1, 1], for the side to move of the evaluated state


@runtime_checkable
class Evaluator(Protocol):
    def evaluate(self, states: Sequence[GameState]) -> list[Evaluation]:
        """One :class:`Evaluation` per state, in order. Thread-safe; may block."""
        ...


@runtime_checkable
class VictimScorer(Protocol):
    def q_values(self, states_after: Sequence[GameState], upper_actions: Sequence[int]) -> np.ndarray:
        """``float32 (n,)``: Q of each (state after the capture, upper action of the path), higher is
        better for the mover who captured."""
        ...


def _uniform(n: int) -> np.ndarray:
    a = np.full(n, 1.0 / n, np.float32)
    a.setflags(write=False)
    return a


UNIFORM_POLICY = (_uniform(NUM_LAYOUT_ACTIONS), _uniform(NUM_UPPER_ACTIONS))  # by phase; read-only


class UniformEvaluator:
    """Uniform policy over the phase's whole action space (read-only shared array), value 0."""

    name = "uniform"

    def evaluate(self, states: Sequence[GameState]) -> list[Evaluation]:
        return [Evaluation(UNIFORM_POLICY[s.phase], 0.0) for s in states]


class KnowledgeEvaluator:
    """Value from a knowledge evaluator of the registry (default ``eval.shape``: ``value(state)`` in
    [-1, 1] for the side to move); uniform policy, or in the layout the policy of ``layout_prior`` (a
    ``layout_prior`` plugin name such as ``prior.gaussian``, papers/001 Eq. 10: ``float32[196]`` over the
    points, the layout's action indices). ``evaluator`` and ``layout_prior`` may also be such objects."""

    name = "knowledge"

    def __init__(self, evaluator: str | Any = "eval.shape", layout_prior: str | Any | None = None):
        from knowledge.plugins import REGISTRY

        if isinstance(evaluator, str):
            evaluator = REGISTRY.create(evaluator, kind="evaluator")
        if isinstance(layout_prior, str):
            layout_prior = REGISTRY.create(layout_prior, kind="layout_prior")
        self._evaluator = evaluator
        self._layout_prior = layout_prior

    def evaluate(self, states: Sequence[GameState]) -> list[Evaluation]:
        out = []
        for s in states:
            v = float(self._evaluator.value(s))
            policy = UNIFORM_POLICY[s.phase]
            if self._layout_prior is not None and s.phase == 0:
                policy = np.asarray(self._layout_prior.prior(s), np.float32)
            out.append(Evaluation(policy, min(1.0, max(-1.0, v))))
        return out


def available_cores() -> int:
    """The CPU cores this process may use (its affinity mask on Linux, else ``os.cpu_count()``)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def default_num_threads() -> int:
    """Half the cores this process may use, at least 1 (module docstring: the rest run the search)."""
    return max(1, available_cores() // 2)


def _check_kind(model: nn.Module | None, kind: str, what: str) -> None:
    cfg = getattr(model, "config", None)
    if model is not None and cfg is not None and cfg.kind != kind:
        raise ValueError(f"{what}: expected a {kind!r} net, got a {cfg.kind!r} net")


POLL_SECONDS = 50e-6  # how often the inference thread looks for more requests while it gathers a batch


class _Request(NamedTuple):
    phase: int
    planes: np.ndarray
    future: Future


class _Call(NamedTuple):
    fn: Callable[[], Any]
    future: Future


_STOP = object()


def _reraise_interrupt(exc: BaseException) -> None:
    """Raise ``exc`` again when it is an interrupt (``KeyboardInterrupt``, ``SystemExit``: not an
    ``Exception``). Handing it to the futures is not enough: with ``inference_threads=0`` the interrupt
    (Ctrl-C, or SIGTERM under ``train.jobs.signals``) arrives in the calling thread, and if it lands
    after the last future of the batch was answered, no caller would ever see it."""
    if not isinstance(exc, Exception):
        raise exc


class NetEvaluator:
    """Batched net evaluator: SLM for the layout, upper net for the battle (module docstring).

    ``slm``/``upper``: ``nn.Module`` mapping planes ``(B, 14, 14, 14)`` to ``(logits (B, A), value (B,))``,
    or ``None`` (that phase falls back to uniform/0 with a one-time warning). ``max_batch`` positions per
    forward pass at most. Without ``clients`` an inference thread takes what is queued and never waits
    (a lone search thread pays no latency). ``clients``: the number of search threads sharing the
    evaluator; when given, the thread instead waits (up to ``max_wait_ms`` after the first request) until the
    batch holds ``min(ceil(clients / in_flight), max_batch)`` requests, because busy search threads
    submit a little apart. ``in_flight`` (default 2): batches the clients keep in flight, so that while
    the net runs one batch the other threads select and expand the leaves of the next (docs/performance.md,
    "The nets: compiled, threads and batches").
    ``num_threads`` (torch intra-op threads) and ``inference_threads`` (threads serving the queue, each
    running whole batches): see the module docstring; ``inference_threads=0`` starts none: ``evaluate``
    runs the nets in the calling thread, ``max_batch`` positions a pass (``search.batched.drive``, whose
    one thread waits for the answers anyway). ``compiled`` (default): run the nets compiled by
    ``nets.inference.compile_for_inference`` (same outputs; faster, and the forward pass releases the
    GIL); ``False`` runs the eager modules. ``precision``: ``"float32"`` (default), ``"bfloat16"`` or
    ``"auto"`` (``nets.inference``: bfloat16 weights and activations, float32 in and out; raises
    ``ValueError`` for another value; resolved for ``device``, so ``"auto"`` on CUDA is bfloat16 or
    float16). ``device``: ``"cpu"`` (default), ``"cuda"``, ``"cuda:N"``, ``"auto"`` or a ``torch.device``
    (``nets.inference.resolve_device``; ``ValueError`` starting ``device:`` for a bad or missing one): the
    nets run there (a copy is moved, the given modules stay where they are), the planes travel through
    pinned host memory, and the answers come back to the CPU as float32 (:meth:`forward_batch`).
    Use as a context manager or call :meth:`close`."""

    name = "net"

    def __init__(
        self,
        slm: nn.Module | None,
        upper: nn.Module | None,
        max_batch: int = 32,
        max_wait_ms: float = 1.0,
        num_threads: int | None = None,
        clients: int | None = None,
        compiled: bool = True,
        in_flight: int = 2,
        inference_threads: int = 1,
        precision: str = "float32",
        device: str | torch.device = "cpu",
    ):
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        if max_wait_ms < 0:
            raise ValueError(f"max_wait_ms must be >= 0, got {max_wait_ms}")
        _check_kind(slm, "slm", "NetEvaluator slm")
        _check_kind(upper, "upper", "NetEvaluator upper")
        self.nets: tuple[nn.Module | None, nn.Module | None] = (slm, upper)
        for net in self.nets:
            if net is not None:
                net.eval()
        # what the inference thread runs (``nets`` stay the eager modules, e.g. for their configs)
        from nets.inference import resolve_device, resolve_precision

        self.device = resolve_device(device)
        self.precision = resolve_precision(precision, self.device)
        self._forward = tuple(_runnable(net, compiled, self.precision, self.device) for net in self.nets)
        self.max_batch = int(max_batch)
        self.max_wait = float(max_wait_ms) / 1000.0
        if clients is not None and clients < 1:
            raise ValueError(f"clients must be >= 1, got {clients}")
        if in_flight < 1:
            raise ValueError(f"in_flight must be >= 1, got {in_flight}")
        if inference_threads < 0:
            raise ValueError(f"inference_threads must be >= 0, got {inference_threads}")
        self.inference_threads = int(inference_threads)
        # With ``clients`` search threads sharing the evaluator, a batch is ready when it holds a
        # request from each thread of its share (lc0 style); without it, when nothing else is queued.
        self.target_batch = min(self.max_batch, -(-int(clients) // int(in_flight))) if clients is not None else None
        self.num_threads = int(num_threads) if num_threads is not None else default_num_threads()
        if self.num_threads < 1:
            raise ValueError(f"num_threads must be >= 1, got {num_threads}")
        if torch.get_num_threads() != self.num_threads:
            torch.set_num_threads(self.num_threads)
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closed = False
        self._warned: set[int] = set()
        self._batches: Counter[int] = Counter()
        self._stats_lock = threading.Lock()
        self._running = self.inference_threads  # inference threads not yet stopped (guarded by _lock)
        self._threads = [threading.Thread(target=self._run, name=f"net-evaluator-{i}", daemon=True)
                         for i in range(self.inference_threads)]
        for t in self._threads:
            t.start()

    @classmethod
    def from_files(
        cls, slm: str | os.PathLike | None = None, upper: str | os.PathLike | None = None, **kwargs
    ) -> "NetEvaluator":
        """Load the nets with ``nets.io.load`` (kinds checked) and build an evaluator."""
        from nets.io import load

        s = load(slm, expected_kind="slm")[0] if slm is not None else None
        u = load(upper, expected_kind="upper")[0] if upper is not None else None
        return cls(s, u, **kwargs)

    # ---------------------------------------------------------------------------- client side
    def evaluate(self, states: Sequence[GameState]) -> list[Evaluation]:
        """One :class:`Evaluation` per state (in order); blocks until the inference thread answers.
        Raises whatever the inference raised, or ``RuntimeError`` after :meth:`close`."""
        return self.evaluate_later(states)()

    def evaluate_later(self, states: Sequence[GameState]) -> Callable[[], list[Evaluation]]:
        """Queue ``states`` and return at once: the returned callable blocks until the inference thread
        has answered and returns what :meth:`evaluate` would (the same errors, raised by the callable;
        ``RuntimeError`` after :meth:`close` at once). A search thread does its own work on the leaf
        (the expert's two-ply value) while the net runs (``search.mcts.Search._expand``). With
        ``inference_threads=0`` the nets run here, before this returns."""
        if not states:
            return list
        requests = [_Request(s.phase, state_planes(s), Future()) for s in states]
        with self._lock:
            if self._closed:
                raise RuntimeError("NetEvaluator is closed")
            if not self._threads:  # inference_threads=0: the nets run here, max_batch positions a pass
                for i in range(0, len(requests), self.max_batch):
                    self._answer(requests[i:i + self.max_batch])
            else:
                for r in requests:
                    self._queue.put(r)
        return lambda: [r.future.result() for r in requests]

    def submit(self, fn: Callable[[], Any]) -> Future:
        """Run ``fn()`` in the inference thread (between batches); its result or exception comes back
        through the returned ``Future``. Used by :class:`NetVictimScorer` to keep PyTorch on one thread."""
        fut: Future = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("NetEvaluator is closed")
            if not self._threads:  # inference_threads=0: run it here
                self._call(_Call(fn, fut))
            else:
                self._queue.put(_Call(fn, fut))
        return fut

    def close(self) -> None:
        """Answer every request queued so far, then stop the inference thread. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for _ in self._threads:
                self._queue.put(_STOP)
        for t in self._threads:
            if threading.current_thread() is not t:
                t.join()

    def __enter__(self) -> "NetEvaluator":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def stats(self) -> dict[str, Any]:
        """Batches run so far: ``batches``, ``positions``, ``mean_batch``, ``max_batch`` and the
        ``histogram`` {batch size: count} (a batch = the states collected for one round; each phase's
        net runs once per round on its part)."""
        with self._stats_lock:
            hist = dict(sorted(self._batches.items()))
        n = sum(hist.values())
        pos = sum(k * v for k, v in hist.items())
        return {
            "batches": n,
            "positions": pos,
            "mean_batch": pos / n if n else 0.0,
            "max_batch": max(hist) if hist else 0,
            "histogram": hist,
        }

    # ---------------------------------------------------------------------------- inference thread
    def _run(self) -> None:
        stop = False
        try:
            while not stop:
                item = self._queue.get()
                if item is _STOP:
                    break
                batch: list[_Request] = []
                calls: list[_Call] = []
                (calls if isinstance(item, _Call) else batch).append(item)
                deadline = time.perf_counter() + self.max_wait
                while len(batch) < self.max_batch:
                    if self.target_batch is not None:
                        if len(batch) >= self.target_batch and self._queue.empty():
                            break  # every client has a request in this batch
                    elif self._queue.empty():
                        break  # no other request is queued: waiting would only add latency
                    # Poll instead of a timed ``get``: a timed SimpleQueue wait was seen to block forever
                    # on this machine (a futex wait without its timeout; every client was waiting on
                    # this batch, so nothing more was ever put and the game hung).
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        if time.perf_counter() >= deadline:
                            break
                        time.sleep(POLL_SECONDS)
                        continue
                    if item is _STOP:
                        stop = True
                        break
                    (calls if isinstance(item, _Call) else batch).append(item)
                if batch:
                    self._answer(batch)
                for c in calls:
                    self._call(c)
        finally:
            self._fail_pending()

    def _call(self, c: _Call) -> None:
        if not c.future.set_running_or_notify_cancel():
            return
        try:
            c.future.set_result(c.fn())
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            if not c.future.done():
                c.future.set_exception(e)
            _reraise_interrupt(e)

    def _answer(self, batch: list[_Request]) -> None:
        with self._stats_lock:
            self._batches[len(batch)] += 1
        self._answer_phases(batch)

    def _answer_phases(self, batch: list[_Request]) -> None:
        try:
            for phase in (0, 1):
                part = [r for r in batch if r.phase == phase]
                if not part:
                    continue
                if self._forward[phase] is None:
                    self._warn_missing(phase)
                    for r in part:
                        r.future.set_result(Evaluation(UNIFORM_POLICY[phase], 0.0))
                    continue
                probs, values = self.forward_batch(phase, np.stack([r.planes for r in part]))
                for i, r in enumerate(part):
                    r.future.set_result(Evaluation(probs[i].copy(), float(values[i])))
        except BaseException as e:  # noqa: BLE001 - handed to every caller of the batch
            for r in batch:
                if not r.future.done():
                    r.future.set_exception(e)
            _reraise_interrupt(e)

    def forward_batch(self, phase: int, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The phase's net on a batch, synchronously in the calling thread (no queue, no batching):
        what the inference threads run on each phase's part of a batch.

        ``phase``: 0 (layout, the SLM) or 1 (battle, the upper net). ``planes``: ``float32 (B, 14, 14,
        14)`` feature planes (``nets.features.state_planes``/``batch_planes``; other float dtypes are
        converted), B >= 0. Returns ``(policy, value)`` on the CPU: ``policy`` ``float32 (B, A)``, each row
        the softmax of the net's logits over the phase's whole action space (A = 196 layout, 48,804
        battle; not masked to the legal actions), ``value`` ``float32 (B,)`` in [-1, 1] for the side to
        move. A phase without a net gives uniform rows and zeros (with the one-time ``RuntimeWarning``).
        On CUDA the planes are copied through pinned host memory (``nets.inference.to_device``); the call
        returns when the results are on the host. Each call uses only its own tensors, so calls from
        several threads (the inference threads included) are safe; one calling thread at a time is what a
        synchronous engine needs. Raises ``ValueError`` for a bad ``phase``, bad plane shapes or a net
        whose policy has the wrong width, and whatever the net raises."""
        from nets.inference import to_device

        if phase not in (0, 1):
            raise ValueError(f"forward_batch: phase must be 0 (layout) or 1 (battle), got {phase!r}")
        planes = np.ascontiguousarray(planes, dtype=np.float32)
        if planes.ndim != 4 or planes.shape[2:] != (SIZE, SIZE):
            raise ValueError(f"forward_batch: planes must be (B, planes, 14, 14) float32, got {planes.shape}")
        b, size = planes.shape[0], POLICY_SIZE[phase]
        net = self._forward[phase]
        if net is None or b == 0:
            if net is None:
                self._warn_missing(phase)
            return np.full((b, size), 1.0 / size, np.float32), np.zeros(b, np.float32)
        with torch.inference_mode():
            logits, value = net(to_device(torch.from_numpy(planes), self.device))
            probs = torch.softmax(logits.float(), dim=1).cpu().numpy()
            values = value.float().reshape(-1).clamp(-1.0, 1.0).cpu().numpy()
        if probs.shape != (b, size):
            raise ValueError(f"{PHASE_NAMES[phase]} net returned policy {probs.shape}, expected ({b}, {size})")
        return probs, values

    def _warn_missing(self, phase: int) -> None:
        with self._stats_lock:  # several inference threads: warn once
            first = phase not in self._warned
            self._warned.add(phase)
        if first:
            warnings.warn(
                f"NetEvaluator has no {'SLM' if phase == 0 else 'upper'} net: {PHASE_NAMES[phase]} states get "
                "a uniform policy and value 0",
                RuntimeWarning,
                stacklevel=2,
            )

    def _fail_pending(self) -> None:
        # Only the last inference thread to stop drains the queue: an earlier one would take the
        # ``_STOP`` meant for another thread, which would then wait forever.
        with self._lock:
            self._running -= 1
            if self._running > 0:
                return
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, (_Request, _Call)) and not item.future.done():
                item.future.set_exception(RuntimeError("NetEvaluator closed before answering"))

    # ---------------------------------------------------------------------------- benchmark
    def throughput(self, batch_size: int, seconds: float = 2.0, phase: int | str | None = None) -> float:
        """Positions per second of the raw net (planes in, logits and value out; no queueing, no
        softmax) at ``batch_size``, measured for about ``seconds`` in the calling thread. ``phase``:
        ``0``/``"layout"`` (SLM) or ``1``/``"battle"`` (upper); default the upper net if present."""
        if isinstance(phase, str):
            phase = PHASE_NAMES.index(phase)
        if phase is None:
            phase = 1 if self.nets[1] is not None else 0
        if self.nets[phase] is None:
            raise ValueError(f"throughput: no net for the {PHASE_NAMES[phase]} phase")
        return net_throughput(self.nets[phase], batch_size, seconds, forward=self._forward[phase],
                              device=self.device)


def _runnable(net: nn.Module | None, compiled: bool, precision: str = "float32", device: torch.device | str = "cpu"):
    """What an inference thread runs for ``net`` on ``device``: compiled (``nets.inference``) or eager, in
    ``precision`` (``float32``, ``bfloat16``, ``float16`` or ``auto``)."""
    from nets.inference import compile_for_inference, eager_in_precision

    if net is None:
        return None
    if compiled:
        return compile_for_inference(net, precision, device)
    return eager_in_precision(net, precision, device)


def net_throughput(model: nn.Module, batch_size: int, seconds: float = 2.0, forward: Callable | None = None,
                   callers: int = 1, device: torch.device | str = "cpu") -> float:
    """Positions per second of ``model``'s forward pass (eval mode, inference mode) at ``batch_size`` on
    random binary planes (a lower net also gets random upper actions), measured for about ``seconds``
    after two warm-up passes. ``forward``: what to time instead of ``model`` itself, taking the same
    inputs (e.g. ``nets.inference.compile_for_inference(model)``). ``callers``: threads running passes
    concurrently (as ``NetEvaluator``'s ``inference_threads``); the total is returned. ``device``: where
    the inputs are put (where ``forward`` runs; the CPU by default). The window lasts
    until at least one pass has finished, so the rate is never 0 for a short ``seconds`` on a busy machine."""
    from nets.inference import example_inputs

    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if callers < 1:
        raise ValueError(f"callers must be >= 1, got {callers}")
    args = example_inputs(model, batch_size, device)
    run = forward if forward is not None else model
    was_training = model.training
    model.eval()
    counts = [0] * callers
    start = threading.Barrier(callers + 1)

    def loop(i: int) -> None:
        with torch.inference_mode():
            for _ in range(2):
                run(*args)
            start.wait()
            while not done.is_set():
                run(*args)
                counts[i] += batch_size

    done = threading.Event()
    threads = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(callers)]
    try:
        for t in threads:
            t.start()
        start.wait()
        t0 = time.perf_counter()
        time.sleep(seconds)
        while sum(counts) == 0 and any(t.is_alive() for t in threads):  # at least one pass, also on a loaded machine
            time.sleep(0.001)
        n = sum(counts)  # passes finished in the window (one in progress per caller is not counted)
        elapsed = time.perf_counter() - t0
        done.set()
        for t in threads:
            t.join()
        return n / elapsed
    finally:
        model.train(was_training)


class NetVictimScorer:
    """The lower net as a :class:`VictimScorer`: one batched forward pass (chunks of ``max_batch``) over
    the candidates. ``evaluator``: a :class:`NetEvaluator` whose inference thread should run the passes
    (recommended: one thread runs PyTorch); without it the passes run in the calling thread under a
    lock. The net is put in ``eval()`` mode; ``compiled``, ``precision`` and ``device`` as for
    :class:`NetEvaluator` (the Q values come back to the CPU)."""

    name = "lower"

    def __init__(self, lower: nn.Module, max_batch: int = 256, evaluator: NetEvaluator | None = None,
                 compiled: bool = True, precision: str = "float32", device: str | torch.device = "cpu"):
        from nets.inference import resolve_device

        _check_kind(lower, "lower", "NetVictimScorer")
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self.lower = lower.eval()
        self.device = resolve_device(device)
        self._forward_net = _runnable(self.lower, compiled, precision, self.device)
        self.max_batch = int(max_batch)
        self.evaluator = evaluator
        self._lock = threading.Lock()

    def q_values(self, states_after: Sequence[GameState], upper_actions: Sequence[int]) -> np.ndarray:
        states_after = list(states_after)
        actions = np.asarray(upper_actions, dtype=np.int64).reshape(-1)
        if len(states_after) != actions.shape[0]:
            raise ValueError(f"q_values: {len(states_after)} states but {actions.shape[0]} upper actions")
        if actions.size and (actions.min() < 0 or actions.max() >= NUM_UPPER_ACTIONS):
            raise ValueError(f"q_values: upper actions must be in 0..{NUM_UPPER_ACTIONS - 1}")
        if not states_after:
            return np.zeros(0, np.float32)
        planes = batch_planes(states_after)
        if self.evaluator is not None:
            return self.evaluator.submit(lambda: self._forward(planes, actions)).result()
        with self._lock:
            return self._forward(planes, actions)

    def _forward(self, planes: np.ndarray, actions: np.ndarray) -> np.ndarray:
        from nets.inference import to_device

        out = np.empty(actions.shape[0], np.float32)
        with torch.inference_mode():
            for i in range(0, actions.shape[0], self.max_batch):
                x = to_device(torch.from_numpy(planes[i : i + self.max_batch]), self.device)
                a = to_device(torch.from_numpy(actions[i : i + self.max_batch]), self.device)
                out[i : i + self.max_batch] = self._forward_net(x, a).float().reshape(-1).cpu().numpy()
        return out
